//! The fast form of paths whose top is a transport that writes its own
//! header: TCP connection paths `TCP / IP / ARP / ETH / driver` and UDP
//! socket paths `UDP / IP / ARP / ETH / driver`.
//!
//! Such a transport is the top of its paths: TCP's control block writes
//! its header from its template (`TcpTemplate`) and predicts the next
//! segment (Jacobson's header prediction, `tcp::tcb::predict`); a socket's
//! UDP stage writes and checks its eight bytes. What is left to fuse is
//! below it. Down, a message's IP and Ethernet headers are written at once
//! from a template of the peer; up, a frame's two headers are checked in
//! one pass (unicast to us, IPv4 without options, whole, our address,
//! the header checksum; the EtherType and protocol are the path's keys,
//! which the classifier's match proved) and stripped, and the
//! transport's stage takes the rest as it would from IP. Anything else —
//! offloaded segments, broadcasts, options, fragments, an unresolved
//! neighbour — runs through the stages.

use super::link::{self, LinkPositions, LinkTemplate, LINK_HEADERS};
use crate::modules::{ArpStage, EthStage, IpStage};
use crate::wire::ipv4::MIN_HEADER_LEN;
use pathstack_core::fused::{FastCx, FastForm};
use pathstack_core::{Msg, Stage};

/// Path positions of the covered stages (0 is the transport, 4 the driver).
const AT: LinkPositions = LinkPositions { ip: 1, arp: 2 };

/// The fused fast form of the links under a transport that writes its own
/// header (a TCP connection, a UDP socket).
pub struct TransportFast;

/// What [`TransportFast`] keeps per path: the link template for the peer.
#[derive(Default)]
pub struct TransportFastState {
    link: Option<LinkTemplate>,
}

impl<Top: Stage, Driver: Stage> FastForm<(Top, IpStage, ArpStage, EthStage, Driver)>
    for TransportFast
{
    type State = TransportFastState;

    #[inline(always)]
    fn send(
        stages: &mut (Top, IpStage, ArpStage, EthStage, Driver),
        state: &mut TransportFastState,
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, ip, arp, eth, _) = stages;
        let Some(dst) = ip.fast_dst(msg.anno()) else {
            return false;
        };
        let segment = msg.len();
        let kept = state.link.as_ref().map(|t| t.hop());
        let Some(hop) = link::hop((ip, arp), dst, segment, msg, cx, AT, kept) else {
            return false;
        };
        let Some(pad) = link::room(msg, LINK_HEADERS) else {
            return false;
        };
        if !state.link.as_mut().is_some_and(|t| t.confirm(&hop)) {
            state.link = LinkTemplate::new(ip, eth, hop);
        }
        let Some(t) = state.link.as_ref() else {
            return false;
        };
        let (ident, ttl) = link::ident_ttl(ip, msg);
        let Ok(h) = msg.push(LINK_HEADERS) else {
            return false;
        };
        t.write(h, segment + MIN_HEADER_LEN, ident, ttl);
        link::finish(msg, &hop, pad)
    }

    #[inline(always)]
    fn receive(
        stages: &mut (Top, IpStage, ArpStage, EthStage, Driver),
        _state: &mut TransportFastState,
        msg: &mut Msg,
        _cx: &mut FastCx,
    ) -> bool {
        let (_, ip, _, eth, _) = stages;
        // A frame the classifier matched to this path.
        if !msg.anno().classified() {
            return false;
        }
        let Some(a) = link::arrived(eth, ip, msg.as_slice()) else {
            return false;
        };
        link::strip(msg, &a, LINK_HEADERS, a.total - MIN_HEADER_LEN)
    }
}
