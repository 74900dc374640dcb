//! The fast form of RPC paths over Ethernet: `RPC / MSELECT / VCHAN /
//! CHAN / BID / BLAST / ETH / driver`, every stage between the
//! application and the driver (see the [parent module](super) for what
//! is fused and what declined).

use super::{Above, ABOVE};
use crate::modules::bid::BidStage;
use crate::modules::blast::BlastStage;
use crate::modules::chan::ChanStage;
use crate::modules::mselect::MselectStage;
use crate::modules::vchan::VchanStage;
use crate::Peer;
use pathstack_core::fused::{FastCx, FastForm};
use pathstack_core::{Msg, Stage};
use pathstack_inet::modules::fast::link;
use pathstack_inet::modules::EthStage;
use pathstack_inet::wire::eth;
use pathstack_inet::{InetAnno, MacAddr};

/// Header bytes of a short RPC message over Ethernet.
const HEADERS: usize = eth::HEADER_LEN + ABOVE;

/// The stages of an RPC path over Ethernet (also the inlining rule's).
pub(crate) type Stages<Top, Driver> = (
    Top,
    MselectStage,
    VchanStage,
    ChanStage,
    BidStage,
    BlastStage,
    EthStage,
    Driver,
);

/// The fused fast form of MSELECT / VCHAN / CHAN / BID / BLAST / ETH.
pub struct RpcEthFast;

impl<Top: Stage, Driver: Stage> FastForm<Stages<Top, Driver>> for RpcEthFast {
    type State = ();

    #[inline(always)]
    fn send(
        stages: &mut Stages<Top, Driver>,
        _state: &mut (),
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, mselect, vchan, chan, bid, blast, e, _) = stages;
        let mut above = Above::of(mselect, vchan, chan, bid, blast);
        let a = msg.anno();
        // The RPC stages name the peer by its MAC address; ETH sends to
        // the link destination (the same address, set by RPC): read once,
        // the peer made from it as `rpc_peer` would.
        let Some(dst) = a.link_dst() else {
            return false;
        };
        let peer = match a.peer_ip() {
            Some(ip) => Peer::ipv4(ip),
            None => Peer::mac(MacAddr(dst)),
        };
        let Some(d) = above.prepare(msg, peer) else {
            return false;
        };
        let Some(pad) = link::room(msg, HEADERS) else {
            return false;
        };
        let Some(chan_h) = above.commit(&d, msg, peer, cx) else {
            return false;
        };
        let Ok(h) = msg.push(HEADERS) else {
            return false;
        };
        // ETH's header as `EthHeader::emit` writes it, here where it
        // inlines (the call into inet's out-of-line `emit` cost as much
        // as the fourteen bytes it writes).
        let eh = e.fast_header(MacAddr(dst));
        h[..6].copy_from_slice(&eh.dst.0);
        h[6..12].copy_from_slice(&eh.src.0);
        h[12..eth::HEADER_LEN].copy_from_slice(&eh.ethertype.0.to_be_bytes());
        let Ok(above_link) = (&mut h[eth::HEADER_LEN..]).try_into() else {
            return false;
        };
        d.write(&chan_h, above_link);
        link::pad_frame(msg, pad)
    }

    #[inline(always)]
    fn receive(
        stages: &mut Stages<Top, Driver>,
        _state: &mut (),
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, mselect, vchan, chan, bid, blast, e, _) = stages;
        let mut above = Above::of(mselect, vchan, chan, bid, blast);
        // A frame the classifier matched to this path.
        if !msg.anno().classified() {
            return false;
        }
        let f = msg.as_slice();
        let Some((eh, rest)) = f.split_first_chunk::<{ eth::HEADER_LEN }>() else {
            return false;
        };
        if !e.fast_accepts_matched(eh) {
            return false;
        }
        let mut src = [0u8; 6];
        src.copy_from_slice(&eh[6..12]);
        // The peer as the RPC stages read it once ETH has annotated the
        // sender.
        let peer = match msg.anno().peer_ip() {
            Some(ip) => Peer::ipv4(ip),
            None => Peer::mac(MacAddr(src)),
        };
        let Some((keep, tag, m)) = above.receive(rest, peer, msg.anno(), cx) else {
            return false;
        };
        if msg.pop(HEADERS).is_err() {
            return false;
        }
        msg.truncate(keep);
        let a = msg.anno_mut();
        // `fast_accepts_matched` took only a unicast frame for us.
        a.set_link_broadcast(false);
        a.set_link_dst(src);
        above.annotate(tag, &m, a);
        true
    }
}
