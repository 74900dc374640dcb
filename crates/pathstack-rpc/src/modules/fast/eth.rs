//! The fast form of RPC paths over Ethernet: `RPC / MSELECT / VCHAN /
//! CHAN / BID / BLAST / ETH / driver`, covering CHAN, BID, BLAST and ETH
//! (see the [parent module](super) for what is fused and what declined).

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
use pathstack_inet::modules::fast::link;
use pathstack_inet::modules::EthStage;
use pathstack_inet::wire::eth;
use pathstack_inet::{InetAnno, MacAddr};

/// Header bytes of a short RPC message over Ethernet below CHAN (CHAN's
/// own follow).
const HEADERS: usize = eth::HEADER_LEN + UPPER;

/// The stages of an RPC path over Ethernet.
type Stages<Top, Driver> = (
    Top,
    MselectStage,
    VchanStage,
    ChanStage,
    BidStage,
    BlastStage,
    EthStage,
    Driver,
);

/// The fused fast form of CHAN / BID / BLAST / ETH under the RPC stack.
pub struct RpcEthFast;

impl<Top: Stage, Driver: Stage> FastForm<Stages<Top, Driver>> for RpcEthFast {
    type State = ();

    const FIRST: usize = FIRST;

    #[inline(always)]
    fn send(
        stages: &mut Stages<Top, Driver>,
        _state: &mut (),
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, _, _, chan, bid, blast, e, _) = stages;
        let a = msg.anno();
        // BID names the peer as every RPC stage does; ETH sends to the
        // link destination (the same address, set by RPC above).
        let (Some(peer), Some(dst)) = (a.rpc_peer(), a.link_dst()) else {
            return false;
        };
        let Some(upper) = upper_headers(bid, blast, peer, msg.len() + CHAN_LEN) else {
            return false;
        };
        let Some(pad) = link::room(msg, HEADERS + CHAN_LEN) else {
            return false;
        };
        // The last step that may decline: CHAN starts the call (or sends
        // the reply) here, and from now on nothing can fail.
        let Some(c) = chan.fast_send(msg, &mut cx.stage(CHAN)) else {
            return false;
        };
        let Ok(h) = msg.push(HEADERS + CHAN_LEN) else {
            return false;
        };
        // Always room: the slice is the header's length.
        let _ = e.fast_header(MacAddr(dst)).emit(&mut h[..eth::HEADER_LEN]);
        h[eth::HEADER_LEN..HEADERS].copy_from_slice(&upper);
        h[HEADERS..].copy_from_slice(&c);
        if pad > 0 {
            match msg.append(pad) {
                Ok(tail) => tail.fill(0),
                // Checked by `room`.
                Err(_) => return false,
            }
        }
        true
    }

    #[inline(always)]
    fn receive(
        stages: &mut Stages<Top, Driver>,
        _state: &mut (),
        msg: &mut Msg,
        cx: &mut FastCx,
    ) -> bool {
        let (_, _, _, chan, bid, blast, e, _) = stages;
        // A frame the classifier matched to this path.
        if !msg.anno().classified() {
            return false;
        }
        let f = msg.as_slice();
        let Some(h) = f.first_chunk::<HEADERS>() else {
            return false;
        };
        let (eh, upper) = h.split_at(eth::HEADER_LEN);
        let Ok(eh) = <&[u8; eth::HEADER_LEN]>::try_from(eh) else {
            return false;
        };
        if !e.fast_accepts(eh) {
            return false;
        }
        let mut src = [0u8; 6];
        src.copy_from_slice(&eh[6..12]);
        // The peer as BID and CHAN read it once ETH has annotated the
        // sender.
        let peer = match msg.anno().peer_ip() {
            Some(ip) => Peer::Ipv4(ip),
            None => Peer::Mac(MacAddr(src)),
        };
        let Ok(upper) = <&[u8; UPPER]>::try_from(upper) else {
            return false;
        };
        let avail = f.len() - eth::HEADER_LEN - crate::wire::blast::HEADER_LEN;
        let Some(len) = upper_accept(bid, blast, peer, upper, avail) else {
            return false;
        };
        // CHAN's message: what BLAST carries after BID's header (BLAST
        // trims the link's padding, B8).
        let Some(packet) = f.get(HEADERS..HEADERS + len - crate::wire::bid::HEADER_LEN) else {
            return false;
        };
        // The last step that may decline: CHAN takes the request (or
        // ends the call) here, and from now on nothing can fail.
        let Some((payload, slot)) =
            chan.fast_receive(packet, peer, msg.anno(), &mut cx.stage(CHAN))
        else {
            return false;
        };
        if msg.pop(HEADERS + CHAN_LEN).is_err() {
            return false;
        }
        msg.truncate(payload);
        let a = msg.anno_mut();
        // `fast_accepts` took only a unicast frame for us.
        a.set_link_broadcast(false);
        a.set_link_dst(src);
        a.set_rpc_tag(RpcTag::slot(slot));
        true
    }
}
