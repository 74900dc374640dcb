//! The fast form of RPC paths over IP: `RPC / MSELECT / VCHAN / CHAN /
//! BID / BLAST / IP / ARP / ETH / driver`, covering CHAN, BID, BLAST, IP,
//! ARP and ETH (see the [parent module](super) for what is fused and what
//! declined). The IP and Ethernet headers come from the template of the
//! peer the UDP and TCP fast forms use, its hop looked up as `IP` and
//! `ARP` look it up and kept while their tables do not change.

use super::{upper_accept, upper_headers, CHAN, FIRST, UPPER};
use crate::anno::{RpcAnno, RpcTag};
use crate::modules::bid::BidStage;
use crate::modules::blast::BlastStage;
use crate::modules::chan::ChanStage;
use crate::modules::mselect::MselectStage;
use crate::modules::vchan::VchanStage;
use crate::wire::chan::HEADER_LEN as CHAN_LEN;
use crate::Peer;
use pathstack_core::fused::{FastCx, FastForm};
use pathstack_core::{Msg, Stage};
use pathstack_inet::modules::fast::link::{self, LinkPositions, LinkTemplate, LINK_HEADERS};
use pathstack_inet::modules::{ArpStage, EthStage, IpStage};
use pathstack_inet::wire::ipv4::MIN_HEADER_LEN;

/// Header bytes of a short RPC message over IP below CHAN (CHAN's own
/// follow).
const HEADERS: usize = LINK_HEADERS + UPPER;

/// Path positions of IP and ARP (0 is RPC, 9 the driver).
const AT: LinkPositions = LinkPositions { ip: 6, arp: 7 };

/// The stages of an RPC path over IP.
type Stages<Top, Driver> = (
    Top,
    MselectStage,
    VchanStage,
    ChanStage,
    BidStage,
    BlastStage,
    IpStage,
    ArpStage,
    EthStage,
    Driver,
);

/// The fused fast form of CHAN / BID / BLAST / IP / ARP / ETH under the
/// RPC stack.
pub struct RpcIpFast;

/// What [`RpcIpFast`] keeps per path: the link template of the last
/// peer (RPC paths serve every peer; a call to another one makes a new
/// template).
#[derive(Default)]
pub struct RpcIpFastState {
    link: Option<LinkTemplate>,
}

impl<Top: Stage, Driver: Stage> FastForm<Stages<Top, Driver>> for RpcIpFast {
    type State = RpcIpFastState;

    const FIRST: usize = FIRST;

    #[inline(always)]
    fn send(
        stages: &mut Stages<Top, Driver>,
        state: &mut RpcIpFastState,
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, _, _, chan, bid, blast, ip, arp, eth, _) = stages;
        // BID and CHAN name the peer by its address over IP, which IP
        // sends to (no remote fixed on IP's path: RPC's paths serve every
        // peer).
        let Some(dst) = ip.fast_dst(msg.anno()) else {
            return false;
        };
        if msg.anno().rpc_peer() != Some(Peer::Ipv4(dst)) {
            return false;
        }
        let chan_msg = msg.len() + CHAN_LEN;
        let Some(upper) = upper_headers(bid, blast, Peer::Ipv4(dst), chan_msg) else {
            return false;
        };
        let datagram = chan_msg + UPPER;
        let kept = state.link.as_ref().map(|t| t.hop());
        let Some(hop) = link::hop((ip, arp), dst, datagram, msg, cx, AT, kept) else {
            return false;
        };
        let Some(pad) = link::room(msg, HEADERS + CHAN_LEN) else {
            return false;
        };
        if !state.link.as_mut().is_some_and(|t| t.confirm(&hop)) {
            state.link = LinkTemplate::new(ip, eth, hop);
        }
        if state.link.is_none() {
            return false;
        }
        // The last step that may decline: CHAN starts the call (or sends
        // the reply) here; then IP's identification is taken (its module
        // is on every path through IP), and nothing else can fail.
        let Some(c) = chan.fast_send(msg, &mut cx.stage(CHAN)) else {
            return false;
        };
        let (Some(t), Some((ident, ttl))) = (state.link.as_ref(), link::ident_ttl(ip, msg, cx, AT))
        else {
            return false;
        };
        let Ok(h) = msg.push(HEADERS + CHAN_LEN) else {
            return false;
        };
        t.write(h, datagram + MIN_HEADER_LEN, ident, ttl);
        h[LINK_HEADERS..HEADERS].copy_from_slice(&upper);
        h[HEADERS..].copy_from_slice(&c);
        link::finish(msg, &hop, pad)
    }

    #[inline(always)]
    fn receive(
        stages: &mut Stages<Top, Driver>,
        _state: &mut RpcIpFastState,
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, _, _, chan, bid, blast, ip, _, eth, _) = stages;
        // A frame the classifier matched to this path.
        if !msg.anno().classified() {
            return false;
        }
        let f = msg.as_slice();
        let Some(a) = link::arrived(eth, ip, f) else {
            return false;
        };
        let Some(upper) = f.get(LINK_HEADERS..).and_then(|u| u.first_chunk::<UPPER>()) else {
            return false;
        };
        // BLAST's payload ends where IP's datagram does.
        let Some(avail) = a
            .total
            .checked_sub(MIN_HEADER_LEN + crate::wire::blast::HEADER_LEN)
        else {
            return false;
        };
        let peer = Peer::Ipv4(a.src);
        let Some(len) = upper_accept(bid, blast, peer, upper, avail) else {
            return false;
        };
        // CHAN's message: what BLAST carries after BID's header.
        let Some(packet) = f.get(HEADERS..HEADERS + len - crate::wire::bid::HEADER_LEN) else {
            return false;
        };
        // The last step that may decline (see `send`). The peer's
        // annotations are IP's, written below: CHAN reads only its tag.
        let Some((payload, slot)) =
            chan.fast_receive(packet, peer, msg.anno(), &mut cx.stage(CHAN))
        else {
            return false;
        };
        if !link::strip(msg, &a, HEADERS + CHAN_LEN, payload) {
            return false;
        }
        msg.anno_mut().set_rpc_tag(RpcTag::slot(slot));
        true
    }
}
