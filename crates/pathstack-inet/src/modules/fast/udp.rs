//! The fast form of `top / UDP / IP / ARP / ETH / driver` paths.
//!
//! Down, a datagram's three headers are written at once from a template
//! made for the path's current peer (the Ethernet addresses, the IP header
//! with its checksum sum, the UDP ports and the pseudo header's sum): per
//! datagram only the lengths, the identification, the TTL and the two
//! checksums are filled in. The template stays valid while the peer, its
//! next hop and that hop's link address are the same; the next hop and
//! the link address are looked up as the modular stages look them up, so
//! a route or neighbour change takes effect on the next datagram.
//!
//! Up, a frame is accepted in one pass over its 42 header bytes: unicast
//! to us, IPv4 without options, whole, this path's protocol and our
//! address, both checksums (the UDP one skipped where the device vouched
//! for it), this path's ports. Anything else — broadcasts, options,
//! fragments, a datagram without a UDP checksum, a bad checksum, a frame
//! the classifier did not match — goes to the modular stages.

use crate::anno::InetAnno;
use crate::modules::{ArpStage, EthStage, IpStage, UdpStage};
use crate::wire::checksum;
use crate::wire::eth::{self, MacAddr, MIN_FRAME_LEN};
use crate::wire::ipv4::{self, Ipv4Template, MIN_HEADER_LEN};
use crate::wire::udp;
use pathstack_core::fused::{FastCx, FastForm};
use pathstack_core::{Msg, Stage};
use std::net::Ipv4Addr;

/// Header bytes of a UDP datagram over IPv4 over Ethernet.
const HEADERS: usize = eth::HEADER_LEN + MIN_HEADER_LEN + udp::HEADER_LEN;
/// Where the IP header starts.
const IP_AT: usize = eth::HEADER_LEN;
/// Where the UDP header starts.
const UDP_AT: usize = IP_AT + MIN_HEADER_LEN;

/// Path positions of the covered stages (0 is the top, 5 the driver).
const UDP_POS: usize = 1;
const IP_POS: usize = 2;
const ARP_POS: usize = 3;

/// The fused fast form of UDP over IPv4 over Ethernet.
pub struct UdpFast;

/// What [`UdpFast`] keeps per path: the template for the last peer.
#[derive(Default)]
pub struct UdpFastState {
    peer: Option<PeerTemplate>,
}

/// The headers of datagrams to one peer, made once.
struct PeerTemplate {
    dst: Ipv4Addr,
    dst_port: u16,
    mac: MacAddr,
    /// The Ethernet header and the UDP ports (lengths, checksums and the
    /// IP header are filled per datagram).
    frame: [u8; HEADERS],
    ip: Ipv4Template,
    /// Sum of the UDP pseudo header without its length, and of the ports.
    udp_sum: u64,
}

impl PeerTemplate {
    fn new(
        eth: &EthStage,
        ip: Ipv4Template,
        ends: &crate::modules::udp::UdpEnds,
        mac: MacAddr,
    ) -> Self {
        let mut frame = [0u8; HEADERS];
        // Always room: the array holds the Ethernet header.
        let _ = eth.fast_header(mac).emit(&mut frame);
        frame[UDP_AT..UDP_AT + 2].copy_from_slice(&ends.src_port.to_be_bytes());
        frame[UDP_AT + 2..UDP_AT + 4].copy_from_slice(&ends.dst_port.to_be_bytes());
        let pseudo = checksum::pseudo_header_v4(ends.src, ends.dst, ipv4::protocol::UDP, 0);
        let udp_sum = checksum::partial(&pseudo) + checksum::partial(&frame[UDP_AT..UDP_AT + 4]);
        PeerTemplate {
            dst: ends.dst,
            dst_port: ends.dst_port,
            mac,
            frame,
            ip,
            udp_sum,
        }
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
        let Some(ends) = udp.fast_ends(msg.anno(), &cx.stage(UDP_POS)) else {
            return false;
        };
        let payload = msg.len();
        let datagram = payload + udp::HEADER_LEN;
        let Some(next_hop) =
            ip.fast_next_hop(ends.dst, datagram, msg.anno(), &mut cx.stage(IP_POS))
        else {
            return false;
        };
        let Some(mac) = arp.fast_resolve(next_hop, &mut cx.stage(ARP_POS)) else {
            return false;
        };
        // Room for the headers and the minimum-frame padding, checked
        // before anything is taken (the identification) or written.
        let pad = MIN_FRAME_LEN.saturating_sub(payload + HEADERS);
        if msg.headroom() < HEADERS || msg.tailroom() < pad {
            return false;
        }
        let fresh = state
            .peer
            .as_ref()
            .is_some_and(|t| t.dst == ends.dst && t.dst_port == ends.dst_port && t.mac == mac);
        if !fresh {
            let Some(t) = ip.fast_template(ends.dst) else {
                return false;
            };
            state.peer = Some(PeerTemplate::new(eth, t, &ends, mac));
        }
        let Some(t) = state.peer.as_ref() else {
            return false;
        };
        let Some(ident) = ip.fast_ident(&mut cx.stage(IP_POS)) else {
            return false;
        };
        let ttl = msg.anno().ttl().unwrap_or(ipv4::DEFAULT_TTL);
        // The payload's sum, before the headers go in front of it (its
        // first byte stays at an even offset from the UDP header).
        let payload_sum = checksum::partial(msg.as_slice());
        let Ok(h) = msg.push(HEADERS) else {
            return false;
        };
        h.copy_from_slice(&t.frame);
        t.ip.write(
            &mut h[IP_AT..UDP_AT],
            (datagram + MIN_HEADER_LEN) as u16,
            ident,
            ttl,
        );
        let len = (datagram as u16).to_be_bytes();
        h[UDP_AT + 4..UDP_AT + 6].copy_from_slice(&len);
        // RFC 768: the length is in the pseudo header and the header.
        let len_word = u64::from(u16::from_ne_bytes(len));
        let c = checksum::finish(t.udp_sum + 2 * len_word + payload_sum);
        // RFC 768: a computed zero is sent as all ones (zero means "none").
        let c = if c == [0, 0] { [0xff, 0xff] } else { c };
        h[UDP_AT + 6..UDP_AT + 8].copy_from_slice(&c);
        if pad > 0 {
            match msg.append(pad) {
                Ok(tail) => tail.fill(0),
                // Checked above.
                Err(_) => return false,
            }
        }
        let a = msg.anno_mut();
        a.set_next_hop(next_hop);
        a.set_link_dst(mac.0);
        true
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
        let verified = msg.anno().offload.rx_csum_verified;
        let f = msg.as_slice();
        let Some(e) = f.first_chunk::<{ eth::HEADER_LEN }>() else {
            return false;
        };
        if !eth.fast_accepts(e) {
            return false;
        }
        let Some((src, dst, total)) = ip.fast_accept(&f[IP_AT..]) else {
            return false;
        };
        let Some((sport, ulen)) = udp.fast_accept(&f[UDP_AT..IP_AT + total], src, dst, verified)
        else {
            return false;
        };
        let mut link_src = [0u8; 6];
        link_src.copy_from_slice(&f[6..12]);
        if msg.pop(HEADERS).is_err() {
            return false;
        }
        msg.truncate(ulen - udp::HEADER_LEN);
        let a = msg.anno_mut();
        a.set_link_broadcast(false);
        a.set_link_dst(link_src);
        a.set_peer_ip(src);
        a.set_local_ip(dst);
        a.set_peer_port(sport);
        true
    }
}
