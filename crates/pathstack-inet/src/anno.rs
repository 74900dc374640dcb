//! The Internet family's per-message annotations: its layout of the core's
//! protocol-neutral [`Anno`] area, and readable accessors for it.
//!
//! | word | slot | set by | read by |
//! |---|---|---|---|
//! | 0 | peer IPv4 address | IP (up), the application (unconnected send) | UDP, ICMP, IP (down), sockets |
//! | 1 | local IPv4 address the datagram was sent to | IP (up) | UDP, ICMP |
//! | 2 | time to live of an outgoing datagram (holder 2) | the application (socket option) | IP (down) |
//! | 2 | IP next hop (holder 1) | IP routing (down) | ARP |
//! | 3 | peer transport port | UDP (up), the application | UDP (down), sockets |
//! | 4–5 | link-layer peer: destination (down), source (up) | ARP (down), ETH (up) | ETH (down), protocols directly over ETH |
//!
//! Flag 0: the frame arrived as a link-layer broadcast or multicast (set by
//! ETH on the way up; RFC 1122 §3.2.2 forbids ICMP errors about such frames).
//!
//! The time to live and the next hop share word 2 (the core's six words
//! keep a message within 64 bytes; see `pathstack_core::anno`): the time
//! to live is read only by IP on the way down, in the same step that
//! writes the next hop (`IpStage::send`, and the fast form's
//! `ident_ttl` before `finish`), and it is read *before* the next hop is
//! written; nothing reads it after IP. The next hop is read only by ARP,
//! below IP, after IP wrote it. So neither value is ever needed once the
//! other is written, and a key reads back only its own value (never the
//! other's bytes). RPC's procedure id is a third holder of the word (see
//! `pathstack_rpc::anno`).

use pathstack_core::anno::{AnnoFlag, AnnoKey};
use pathstack_core::Anno;
use std::net::Ipv4Addr;

const PEER_IP: AnnoKey<[u8; 4]> = AnnoKey::new(0);
const LOCAL_IP: AnnoKey<[u8; 4]> = AnnoKey::new(1);
const NEXT_HOP: AnnoKey<[u8; 4]> = AnnoKey::new(2);
const TTL: AnnoKey<u32> = AnnoKey::sharing(2, 2);
const PEER_PORT: AnnoKey<u16> = AnnoKey::new(3);
const LINK_DST: AnnoKey<[u8; 6]> = AnnoKey::new(4);
const LINK_BROADCAST: AnnoFlag = AnnoFlag::new(0);
const ICMP_ERROR: AnnoFlag = AnnoFlag::new(1);

/// Typed access to the Internet annotations of a message.
///
/// ```
/// use pathstack_core::Anno;
/// use pathstack_inet::InetAnno;
/// use std::net::Ipv4Addr;
///
/// let mut a = Anno::default();
/// a.set_peer(Ipv4Addr::new(10, 0, 0, 2), 7);
/// assert_eq!(a.peer_ip(), Some(Ipv4Addr::new(10, 0, 0, 2)));
/// assert_eq!(a.peer_port(), Some(7));
/// ```
pub trait InetAnno {
    /// The remote IPv4 address of the datagram: its source on the way up,
    /// its destination on the way down (set by the application for an
    /// unconnected send, or kept from the request for a reply).
    fn peer_ip(&self) -> Option<Ipv4Addr>;
    /// Sets [`peer_ip`](Self::peer_ip).
    fn set_peer_ip(&mut self, ip: Ipv4Addr);
    /// The remote transport port, like [`peer_ip`](Self::peer_ip).
    fn peer_port(&self) -> Option<u16>;
    /// Sets [`peer_port`](Self::peer_port).
    fn set_peer_port(&mut self, port: u16);
    /// Sets the remote address and port.
    fn set_peer(&mut self, ip: Ipv4Addr, port: u16) {
        self.set_peer_ip(ip);
        self.set_peer_port(port);
    }
    /// Our address the datagram was sent to (on the way up).
    fn local_ip(&self) -> Option<Ipv4Addr>;
    /// Sets [`local_ip`](Self::local_ip).
    fn set_local_ip(&mut self, ip: Ipv4Addr);
    /// The IP next hop, set by IP routing on the way down and read by ARP.
    fn next_hop(&self) -> Option<Ipv4Addr>;
    /// Sets [`next_hop`](Self::next_hop).
    fn set_next_hop(&mut self, ip: Ipv4Addr);
    /// The link-layer peer: the destination, set by ARP on the way down
    /// and read by the link layer; on the way up the frame's source, set
    /// by ETH (where an answer turned around on the path goes, as for
    /// [`peer_ip`](Self::peer_ip)).
    fn link_dst(&self) -> Option<[u8; 6]>;
    /// Sets [`link_dst`](Self::link_dst).
    fn set_link_dst(&mut self, mac: [u8; 6]);
    /// The time to live IP puts in an outgoing datagram's header (a
    /// socket's `IP_TTL` option); unset, IP uses its default (64).
    fn ttl(&self) -> Option<u8>;
    /// Sets [`ttl`](Self::ttl).
    fn set_ttl(&mut self, ttl: u8);
    /// Whether the frame arrived as a link-layer broadcast or multicast.
    fn link_broadcast(&self) -> bool;
    /// Sets [`link_broadcast`](Self::link_broadcast).
    fn set_link_broadcast(&mut self, on: bool);
    /// Whether the message is an ICMP error (the ICMP message itself)
    /// about a datagram of the path it travels on, handed to that path's
    /// transport by ICMP (RFC 1122 §4.1.3.3, §4.2.3.9).
    fn icmp_error(&self) -> bool;
    /// Marks the message as such an ICMP error.
    fn set_icmp_error(&mut self, on: bool);
}

impl InetAnno for Anno {
    #[inline]
    fn peer_ip(&self) -> Option<Ipv4Addr> {
        self.get(PEER_IP).map(Ipv4Addr::from)
    }
    #[inline]
    fn set_peer_ip(&mut self, ip: Ipv4Addr) {
        self.set(PEER_IP, ip.octets());
    }
    #[inline]
    fn peer_port(&self) -> Option<u16> {
        self.get(PEER_PORT)
    }
    #[inline]
    fn set_peer_port(&mut self, port: u16) {
        self.set(PEER_PORT, port);
    }
    #[inline]
    fn local_ip(&self) -> Option<Ipv4Addr> {
        self.get(LOCAL_IP).map(Ipv4Addr::from)
    }
    #[inline]
    fn set_local_ip(&mut self, ip: Ipv4Addr) {
        self.set(LOCAL_IP, ip.octets());
    }
    #[inline]
    fn next_hop(&self) -> Option<Ipv4Addr> {
        self.get(NEXT_HOP).map(Ipv4Addr::from)
    }
    #[inline]
    fn set_next_hop(&mut self, ip: Ipv4Addr) {
        self.set(NEXT_HOP, ip.octets());
    }
    #[inline]
    fn link_dst(&self) -> Option<[u8; 6]> {
        self.get(LINK_DST)
    }
    #[inline]
    fn set_link_dst(&mut self, mac: [u8; 6]) {
        self.set(LINK_DST, mac);
    }
    #[inline]
    fn ttl(&self) -> Option<u8> {
        self.get(TTL).map(|t| t as u8)
    }
    #[inline]
    fn set_ttl(&mut self, ttl: u8) {
        self.set(TTL, u32::from(ttl));
    }
    #[inline]
    fn link_broadcast(&self) -> bool {
        self.flag(LINK_BROADCAST)
    }
    #[inline]
    fn set_link_broadcast(&mut self, on: bool) {
        self.set_flag(LINK_BROADCAST, on);
    }
    #[inline]
    fn icmp_error(&self) -> bool {
        self.flag(ICMP_ERROR)
    }
    #[inline]
    fn set_icmp_error(&mut self, on: bool) {
        self.set_flag(ICMP_ERROR, on);
    }
}
