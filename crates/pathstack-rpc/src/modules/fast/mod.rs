//! The fused fast forms of the RPC paths (issue 26, item 1; thesis
//! §3.3.8, §4.2): `RPC / MSELECT / VCHAN / CHAN / BID / BLAST` over `ETH`
//! ([`eth`]) or over `IP / ARP / ETH` ([`ip`]), installed by the
//! specialization rules of [`super::inline`].
//!
//! **What is fused: BID, BLAST and the link, not CHAN and VCHAN.** The
//! fast form covers the stages from BID down ([`FIRST`], through
//! `FastForm::FIRST`); RPC, MSELECT, VCHAN and CHAN run inlined above it
//! as they do on the inlined path, each with its own verdict. Those four
//! hold the call's state — CHAN's channel state machine with its
//! retransmission copy and timers, VCHAN's channel pool and waiting
//! line — and their established case is already reached by handle
//! without a lookup (`handle_table`); fusing them would mean a second
//! copy of CHAN's at-most-once rules. Below CHAN the established case is
//! pure header work, which is what a fast form does best:
//!
//! * down, a short message (every message shorter than one BLAST
//!   fragment: every zero-byte call and reply) gets its BID, BLAST and
//!   link headers written at once — BID's from the boot ids the path
//!   holds (`BidStage` keeps them for BIDCTL's generation), BLAST's
//!   short header with the message's length filled in, and the
//!   Ethernet header (over IP, the IP and Ethernet headers from the
//!   template of the peer that the UDP and TCP fast forms use,
//!   `pathstack_inet::modules::fast::link`);
//! * up, a frame is accepted in one pass over its headers: unicast to us
//!   (over IP: IPv4 without options, whole, our address, the header
//!   checksum), a short BLAST SEND of this path's protocol whose length
//!   is within the frame, and BID boot ids that are the ones the path
//!   holds for the sender; all headers are stripped at once and the
//!   message goes to CHAN with the annotations ETH (and IP) would have
//!   written.
//!
//! Everything else is declined before anything changes and runs through
//! the stages: a message BLAST fragments, any fragment, NACK or
//! retransmission (they are not classified onto these paths anyway), a
//! boot id the path does not hold (the first message to or from a peer,
//! and every message after BIDCTL learnt something, until BID has read
//! the boot ids again), a boot-id mismatch (BID answers or asks BIDCTL),
//! broadcasts, IP options and fragments, an unresolved neighbour.

pub mod eth;
pub mod ip;

use super::bid::BidStage;
use super::blast::BlastStage;
use super::chan::{ChanModule, ChanStage};
use super::mselect::MselectStage;
use super::vchan::{VchanModule, VchanStage};
use crate::anno::{RpcAnno, RpcTag};
use crate::wire::chan::ChanHeader;
use crate::wire::mselect::MselectHeader;
use crate::wire::{bid, blast, chan, mselect};
use crate::Peer;
use pathstack_core::fused::FastCx;
use pathstack_core::stage::Cx;
use pathstack_core::Msg;

/// The first stage the fast forms cover: MSELECT (0 is RPC), so every
/// stage between the application and the driver.
pub const FIRST: usize = 1;

/// CHAN's position (VCHAN's is the one above).
const CHAN: usize = 3;
/// VCHAN's service that connects it to CHAN.
const VCHAN_DOWN: usize = 1;

/// Bytes of the BLAST and BID headers of a short message.
const UPPER: usize = blast::HEADER_LEN + bid::HEADER_LEN;
/// Bytes of every header above the link: BLAST, BID, CHAN, MSELECT (60).
const ABOVE: usize = UPPER + chan::HEADER_LEN + mselect::HEADER_LEN;

/// The stages above the link, as a fast form reaches them.
struct Above<'a> {
    mselect: &'a MselectStage,
    vchan: &'a mut VchanStage,
    chan: &'a mut ChanStage,
    bid: &'a BidStage,
    blast: &'a BlastStage,
}

/// A message going down, checked against every stage above the link
/// that holds no state, nothing changed yet ([`Above::prepare`]).
struct Down {
    /// MSELECT's header.
    mselect: [u8; mselect::HEADER_LEN],
    /// BLAST's and BID's headers.
    upper: [u8; UPPER],
    /// The call's slot (client) or the request's channel (server).
    slot: u16,
}

/// CHAN's module and, on the client path, VCHAN's, reached at once
/// (VCHAN's stage's `down` connection names CHAN).
fn modules<'c>(
    cx: &'c mut Cx<'_, '_>,
    client: bool,
) -> Option<(Option<&'c mut VchanModule>, &'c mut ChanModule)> {
    if client {
        let (v, m) = cx.module_and_linked::<VchanModule, ChanModule>(VCHAN_DOWN, 0)?;
        Some((Some(v), m))
    } else {
        Some((None, cx.module::<ChanModule>()?))
    }
}

impl Above<'_> {
    /// Checks a message the application passed down to `peer` against
    /// MSELECT, BLAST and BID, as their `process` would take it (`None`,
    /// decline, otherwise); VCHAN's and CHAN's checks are part of
    /// [`Above::commit`].
    #[inline(always)]
    fn prepare(&self, msg: &Msg, peer: Peer) -> Option<Down> {
        let a = msg.anno();
        let mselect = self.mselect.fast_header(a)?;
        let slot = a.rpc_tag()?.slot;
        let len = msg.len() + mselect::HEADER_LEN + chan::HEADER_LEN;
        let b = self.bid.fast_header(peer)?;
        let s = self.blast.fast_header(len + bid::HEADER_LEN)?;
        let mut upper = [0u8; UPPER];
        upper[..blast::HEADER_LEN].copy_from_slice(&s);
        upper[blast::HEADER_LEN..].copy_from_slice(&b);
        Some(Down {
            mselect,
            upper,
            slot,
        })
    }

    /// The last step that may decline: VCHAN finds an idle channel of the
    /// held pool, CHAN starts the call on it (or sends the reply on the
    /// request's channel), VCHAN lends it, and the annotations are
    /// MSELECT's and VCHAN's; returns every header above the link. From
    /// here on nothing may fail.
    #[inline(always)]
    fn commit(
        &mut self,
        d: &Down,
        msg: &mut Msg,
        peer: Peer,
        cx: &mut FastCx,
    ) -> Option<[u8; ABOVE]> {
        let client = !self.chan.is_server();
        let now = cx.now();
        let mut c = cx.stage(CHAN - usize::from(client));
        let (v, m) = modules(&mut c, client)?;
        let parts = [&d.mselect[..], msg.as_slice()];
        let (header, chan) = match v {
            Some(v) => self.vchan.fast_call(v, peer, d.slot, |chan| {
                self.chan.fast_send(m, now, parts, peer, chan)
            })?,
            // VCHAN passes on the server: the reply goes on the
            // request's channel.
            None => (self.chan.fast_send(m, now, parts, peer, d.slot)?, d.slot),
        };
        let a = msg.anno_mut();
        // The word is IP's time to live below (MSELECT).
        a.clear_procedure();
        if client {
            a.set_rpc_tag(RpcTag::slot(chan));
        }
        let mut h = [0u8; ABOVE];
        h[..UPPER].copy_from_slice(&d.upper);
        h[UPPER..UPPER + chan::HEADER_LEN].copy_from_slice(&header);
        h[UPPER + chan::HEADER_LEN..].copy_from_slice(&d.mselect);
        Some(h)
    }

    /// Checks the BLAST and BID headers `h` of a frame from `peer`,
    /// `avail` bytes following BLAST's header, as `BlastStage` and
    /// `BidStage` would pass it up; returns the length of the message BID
    /// passes to CHAN (`None`, decline, otherwise).
    #[inline(always)]
    fn accept_upper(&self, peer: Peer, h: &[u8; UPPER], avail: usize) -> Option<usize> {
        let (s, b) = h.split_at(blast::HEADER_LEN);
        let len = self.blast.fast_accept(s.try_into().ok()?, avail)?;
        // BID needs its whole header inside BLAST's payload.
        let ok = len >= bid::HEADER_LEN && self.bid.fast_accepts(peer, b.try_into().ok()?);
        ok.then_some(len - bid::HEADER_LEN)
    }

    /// CHAN's message `packet` from `peer` (annotated `anno`), taken up
    /// through CHAN, VCHAN and MSELECT when it is the next request on an
    /// established server channel or the reply to a client channel's
    /// call, whose outcome goes back to its caller; returns the
    /// application's bytes' length, its tag and MSELECT's header for
    /// [`Above::annotate`]. `None`, nothing changed, for anything else.
    #[inline(always)]
    fn receive(
        &mut self,
        packet: &[u8],
        peer: Peer,
        anno: &pathstack_core::Anno,
        cx: &mut FastCx,
    ) -> Option<(usize, RpcTag, MselectHeader)> {
        let (h, payload) = ChanHeader::parse(packet).ok()?;
        let mh = self.mselect.fast_accept(payload)?;
        let client = !self.chan.is_server();
        let mut c = cx.stage(CHAN - usize::from(client));
        let (v, m) = modules(&mut c, client)?;
        // The last step that may decline.
        let slot = match v {
            Some(v) => self.vchan.fast_outcome(v, peer, h.chan, || {
                self.chan.fast_receive(m, &h, peer, anno)
            })?,
            None if self.chan.fast_receive(m, &h, peer, anno) => h.chan,
            None => return None,
        };
        Some((payload.len() - mselect::HEADER_LEN, RpcTag::slot(slot), mh))
    }

    /// The annotations CHAN, VCHAN and MSELECT write on a message
    /// [`Above::receive`] took.
    #[inline(always)]
    fn annotate(&self, tag: RpcTag, m: &MselectHeader, a: &mut pathstack_core::Anno) {
        a.set_rpc_tag(tag);
        self.mselect.fast_annotate(m, tag, a);
    }
}
