//! The fast form of `top / UDP / IP / ARP / ETH / driver` paths.
//!
//! Down, a datagram's three headers are written at once from a template
//! made for the path's current peer (the Ethernet addresses, the IP header
//! with its checksum sum, the UDP ports and the pseudo header's sum): per
//! datagram only the lengths, the identification, the TTL and the two
//! checksums are filled in. The template stays valid while the peer and
//! its link address are the same; the next hop and the link address are
//! looked up as the modular stages look them up, so a route or neighbour
//! change takes effect on the next datagram.
//!
//! Up, a frame the classifier matched to this path is accepted in one
//! pass over its 42 header bytes: unicast to us, IPv4 without options,
//! whole, our address, both checksums (the UDP one skipped where the
//! device vouched for it). What the match proved — the EtherType, the
//! protocol, the ports (and a connected path's peer address) — is not
//! compared again, as the modular stages do not compare it for a
//! classified frame (parse once). Anything else — broadcasts, options,
//! fragments, a datagram without a UDP checksum, a bad checksum, a frame
//! the classifier did not match — goes to the modular stages.

use super::link::{self, LinkPositions, LinkTemplate, Next, LINK_HEADERS};
use crate::anno::InetAnno;
use crate::modules::udp::UdpEnds;
use crate::modules::{ArpStage, EthStage, IpStage, UdpStage};
use crate::wire::checksum;
use crate::wire::ipv4;
use crate::wire::udp;
use pathstack_core::fused::{FastCx, FastForm};
use pathstack_core::{Msg, Stage};

/// Header bytes of a UDP datagram over IPv4 over Ethernet.
const HEADERS: usize = LINK_HEADERS + udp::HEADER_LEN;
/// Where the UDP header starts.
const UDP_AT: usize = LINK_HEADERS;

/// Path positions of the covered stages (0 is the top, 5 the driver).
const UDP_POS: usize = 1;
const AT: LinkPositions = LinkPositions { ip: 2, arp: 3 };

/// The fused fast form of UDP over IPv4 over Ethernet.
pub struct UdpFast;

/// What [`UdpFast`] keeps per path: the template for the last peer.
#[derive(Default)]
pub struct UdpFastState {
    peer: Option<PeerTemplate>,
}

/// The headers of datagrams to one peer, made once.
struct PeerTemplate {
    link: LinkTemplate,
    /// The UDP header's ports, as they go on the wire.
    ports: [u8; 4],
    /// Sum of the UDP pseudo header without its length, and of the ports.
    udp_sum: u64,
}

impl PeerTemplate {
    fn new(link: LinkTemplate, ends: &UdpEnds) -> Self {
        let mut ports = [0u8; 4];
        ports[..2].copy_from_slice(&ends.src_port.to_be_bytes());
        ports[2..].copy_from_slice(&ends.dst_port.to_be_bytes());
        let pseudo = checksum::pseudo_header_v4(ends.src, ends.dst, ipv4::protocol::UDP, 0);
        PeerTemplate {
            link,
            ports,
            udp_sum: checksum::partial(&pseudo) + checksum::partial(&ports),
        }
    }

    /// The destination port the template was made for.
    fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.ports[2], self.ports[3]])
    }
}

impl<Top: Stage, Driver: Stage> FastForm<(Top, UdpStage, IpStage, ArpStage, EthStage, Driver)>
    for UdpFast
{
    type State = UdpFastState;

    #[inline(always)]
    fn send(
        stages: &mut (Top, UdpStage, IpStage, ArpStage, EthStage, Driver),
        state: &mut UdpFastState,
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, udp, ip, arp, eth, _) = stages;
        let Some((dst, dst_port)) = udp.fast_peer(msg.anno()) else {
            return false;
        };
        let datagram = msg.len() + udp::HEADER_LEN;
        // The template for this peer, if it is the one kept.
        let mut peer = state.peer.as_mut().filter(|t| t.dst_port() == dst_port);
        let kept = peer.as_deref().map(|t| t.link.hop());
        let Some(next) = link::next((ip, arp), dst, datagram, msg, cx, AT, kept) else {
            return false;
        };
        let Some(pad) = link::room(msg, HEADERS) else {
            return false;
        };
        if let Next::Found(hop) = next {
            if !peer.as_mut().is_some_and(|t| t.link.confirm(&hop)) {
                // A new template: our address too (learnt on the path's
                // first datagram, as `process` learns it). A kept one was
                // made with it, and the path's address does not change.
                let Some(ends) = udp.fast_ends(msg.anno(), &cx.stage(UDP_POS)) else {
                    return false;
                };
                let Some(link) = LinkTemplate::new(ip, eth, hop) else {
                    return false;
                };
                state.peer = Some(PeerTemplate::new(link, &ends));
            }
        }
        let Some(t) = state.peer.as_ref() else {
            return false;
        };
        let (ident, ttl) = link::ident_ttl(ip, msg);
        // The payload's sum, before the headers go in front of it (its
        // first byte stays at an even offset from the UDP header).
        let payload_sum = checksum::partial(msg.as_slice());
        let Ok(h) = msg.push(HEADERS) else {
            return false;
        };
        t.link.write(h, datagram + ipv4::MIN_HEADER_LEN, ident, ttl);
        let u = &mut h[UDP_AT..];
        let len = (datagram as u16).to_be_bytes();
        u[..4].copy_from_slice(&t.ports);
        u[4..6].copy_from_slice(&len);
        // RFC 768: the length is in the pseudo header and the header.
        let len_word = u64::from(u16::from_ne_bytes(len));
        let c = checksum::finish(t.udp_sum + 2 * len_word + payload_sum);
        // RFC 768: a computed zero is sent as all ones (zero means "none").
        let c = if c == [0, 0] { [0xff, 0xff] } else { c };
        u[6..8].copy_from_slice(&c);
        link::finish(msg, t.link.hop(), pad)
    }

    #[inline(always)]
    fn receive(
        stages: &mut (Top, UdpStage, IpStage, ArpStage, EthStage, Driver),
        _state: &mut UdpFastState,
        msg: &mut Msg,
        _cx: &mut FastCx,
    ) -> bool {
        let (_, udp, ip, _, eth, _) = stages;
        // A frame the classifier matched to this path: its keys are ours.
        if !msg.anno().classified() {
            return false;
        }
        let verified = msg.anno().offload().rx_csum_verified;
        let f = msg.as_slice();
        let Some(a) = link::arrived(eth, ip, f) else {
            return false;
        };
        let datagram = &f[UDP_AT..link::IP_AT + a.total];
        let Some((sport, ulen)) = udp.fast_accept(datagram, a.addr_sum, verified) else {
            return false;
        };
        if !link::strip(msg, &a, HEADERS, ulen - udp::HEADER_LEN) {
            return false;
        }
        msg.anno_mut().set_peer_port(sport);
        true
    }
}
