//! The fast form of RPC paths over IP: `RPC / MSELECT / VCHAN / CHAN /
//! BID / BLAST / IP / ARP / ETH / driver`, every stage between the
//! application and the driver (see the [parent module](super) for what
//! is fused and what declined). The IP and Ethernet headers come from
//! the template of the peer the UDP and TCP fast forms use, its hop
//! looked up as `IP` and `ARP` look it up and kept while their tables do
//! not change.

use super::{Above, ABOVE};
use crate::anno::RpcAnno;
use crate::modules::bid::BidStage;
use crate::modules::blast::BlastStage;
use crate::modules::chan::ChanStage;
use crate::modules::mselect::MselectStage;
use crate::modules::vchan::VchanStage;
use crate::Peer;
use pathstack_core::fused::{FastCx, FastForm};
use pathstack_core::{Msg, Stage};
use pathstack_inet::modules::fast::link::{self, LinkPositions, LinkTemplate, LINK_HEADERS};
use pathstack_inet::modules::{ArpStage, EthStage, IpStage};
use pathstack_inet::wire::ipv4::MIN_HEADER_LEN;

/// Header bytes of a short RPC message over IP.
const HEADERS: usize = LINK_HEADERS + ABOVE;

/// Path positions of IP and ARP (0 is RPC, 9 the driver).
const AT: LinkPositions = LinkPositions { ip: 6, arp: 7 };

/// The stages of an RPC path over IP (also the inlining rule's).
pub(crate) type Stages<Top, Driver> = (
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

/// The fused fast form of MSELECT / VCHAN / CHAN / BID / BLAST / IP /
/// ARP / ETH.
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

    #[inline(always)]
    fn send(
        stages: &mut Stages<Top, Driver>,
        state: &mut RpcIpFastState,
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, mselect, vchan, chan, bid, blast, ip, arp, eth, _) = stages;
        let mut above = Above::of(mselect, vchan, chan, bid, blast);
        // The RPC stages name the peer by its address over IP, which IP
        // sends to (no remote fixed on IP's path: RPC's paths serve
        // every peer).
        let Some(dst) = ip.fast_dst(msg.anno()) else {
            return false;
        };
        let peer = Peer::ipv4(dst);
        if msg.anno().rpc_peer() != Some(peer) {
            return false;
        }
        let Some(d) = above.prepare(msg, peer) else {
            return false;
        };
        let datagram = msg.len() + ABOVE;
        let kept = state.link.as_ref().map(|t| t.hop());
        let Some(hop) = link::hop((ip, arp), dst, datagram, msg, cx, AT, kept) else {
            return false;
        };
        let Some(pad) = link::room(msg, HEADERS) else {
            return false;
        };
        if !state.link.as_mut().is_some_and(|t| t.confirm(&hop)) {
            state.link = LinkTemplate::new(ip, eth, hop);
        }
        if state.link.is_none() {
            return false;
        }
        // The last step that may decline; then IP's identification is
        // taken (its module is on every path through IP), and nothing
        // else can fail.
        let Some(chan_h) = above.commit(&d, msg, peer, cx) else {
            return false;
        };
        let Some(t) = state.link.as_ref() else {
            return false;
        };
        let (ident, ttl) = link::ident_ttl(ip, msg);
        let Ok(h) = msg.push(HEADERS) else {
            return false;
        };
        t.write(h, datagram + MIN_HEADER_LEN, ident, ttl);
        let Ok(above_link) = (&mut h[LINK_HEADERS..]).try_into() else {
            return false;
        };
        d.write(&chan_h, above_link);
        link::finish(msg, &hop, pad)
    }

    #[inline(always)]
    fn receive(
        stages: &mut Stages<Top, Driver>,
        _state: &mut RpcIpFastState,
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, mselect, vchan, chan, bid, blast, ip, _, eth, _) = stages;
        let mut above = Above::of(mselect, vchan, chan, bid, blast);
        // A frame the classifier matched to this path.
        if !msg.anno().classified() {
            return false;
        }
        let f = msg.as_slice();
        let Some(a) = link::arrived(eth, ip, f) else {
            return false;
        };
        // The datagram, without the link's padding.
        let Some(upper_on) = f.get(LINK_HEADERS..link::IP_AT + a.total) else {
            return false;
        };
        let peer = Peer::ipv4(a.src);
        // The peer's annotations are IP's, written below: CHAN reads
        // only the tag.
        let Some((keep, tag, m)) = above.receive(upper_on, peer, msg.anno(), cx) else {
            return false;
        };
        if !link::strip(msg, &a, HEADERS, keep) {
            return false;
        }
        above.annotate(tag, &m, msg.anno_mut());
        true
    }
}
