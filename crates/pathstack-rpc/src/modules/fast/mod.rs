//! The fused fast forms of the RPC paths (issue 26, item 1; thesis
//! §3.3.8, §4.2): `RPC / MSELECT / VCHAN / CHAN / BID / BLAST` over `ETH`
//! ([`eth`]) or over `IP / ARP / ETH` ([`ip`]), installed by the
//! specialization rules of [`super::inline`]. The top stage (the client's
//! or the server's `RPC`, the application's end) and the driver run as
//! on the inlined path; the fast form covers every stage between them.
//!
//! **Down**, a short message (shorter than one BLAST fragment: every
//! zero-byte call and reply) gets all its headers at once: MSELECT's
//! from the procedure id; on the client VCHAN's choice of an idle
//! channel of the pool the path holds by handle; CHAN's from the
//! channel's engine, which starts the call (seq + 1, the request kept
//! for retransmission, the timer armed) or sends the reply exactly as
//! the stage would (`ClientTable::fast_call`, `ServerTable::fast_reply`);
//! BID's from the boot ids the path holds for BIDCTL's generation;
//! BLAST's short header with the length filled in; and the link's —
//! Ethernet's, or over IP the IP and Ethernet headers from the template
//! of the peer the UDP and TCP fast forms use
//! (`pathstack_inet::modules::fast::link`).
//!
//! **Up**, a frame is accepted in one pass over its headers: unicast to
//! us (over IP: IPv4 without options, whole, our address, the header
//! checksum), a short BLAST SEND of this path's protocol whose length
//! is within the frame, BID boot ids that are the ones the path holds for
//! the sender, a CHAN message that is the next request on a server
//! channel or the reply to the call outstanding on a client channel —
//! both held by handle, with nothing else to do (no explicit ACK asked
//! for, no fragmented message to free) — and an MSELECT header with a
//! valid status. The engines take it as the stage would
//! (`ServerTable::fast_request`, `ClientTable::fast_reply`), VCHAN gives
//! the channel back, all headers are stripped at once, and the message
//! goes to `RPC` with the annotations ETH (IP), CHAN, VCHAN and MSELECT
//! would have written.
//!
//! **Declined**, before anything changes, and run through the stages:
//! a message BLAST fragments, any fragment, NACK or retransmission; a
//! boot id the path does not hold (the first message to or from a peer,
//! and the first after BIDCTL learnt anything) or one that does not
//! match; a channel or pool not held, no idle channel (the call waits in
//! the pool), a call waiting for a channel when one is given back; ACKs,
//! NACKs, probes, duplicates, old or future seqs, messages that ask for
//! an explicit ACK; BIDCTL's notices; the first call to a new peer
//! (BIDCTL registration); broadcasts, IP options and fragments, an
//! unresolved neighbour.
//!
//! **One step that may decline changes state.** CHAN's and VCHAN's
//! engines are the only covered stages whose work changes state (CHAN's
//! client channels in its module, the server channels the server path's
//! CHAN stage holds, the client path's own VCHAN pools),
//! and each fast piece checks everything and then commits (the engine's
//! `fast_*` share their state change with the stage's general code). So
//! the fast form checks every stateless stage and the link first
//! (`Above::prepare`, `link::hop`, `link::room`), then runs the one
//! step that may still decline — VCHAN's check, CHAN's check and
//! commit, VCHAN's commit, with CHAN's module reached by the handle its
//! stage holds on the client path (the only module a fast message
//! reaches; the server path's reaches none) — and then
//! writes the headers, which cannot fail. Over IP the identification is
//! taken after that step, as IP takes it last. The differential test
//! `tests/fused_rpc.rs` holds all of it to the modular stages.

pub mod eth;
pub mod ip;

use super::bid::BidStage;
use super::blast::BlastStage;
use super::chan::{ChanModule, ChanStage};
use super::mselect::MselectStage;
use super::vchan::VchanStage;
use crate::anno::{RpcAnno, RpcTag};
use crate::wire::chan::ChanHeader;
use crate::wire::mselect::MselectHeader;
use crate::wire::{bid, blast, chan, mselect};
use crate::Peer;
use pathstack_core::fused::FastCx;
use pathstack_core::stage::Cx;
use pathstack_core::Msg;

/// CHAN's position (VCHAN's is the one above).
const CHAN: usize = 3;

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

/// CHAN's module, as the client path reaches it (its client channels;
/// the server path's stage holds its own), by the handle its stage
/// resolved when the path was made (one index, no walk of the path or
/// the graph; VCHAN's pools are the client path's own, in its stage),
/// without marking it touched: a call or reply in the established case
/// gives CHAN no work due sooner than it had, except when the call it sends arms the
/// earliest timer, and then [`touch_chan`] marks it (who makes work marks
/// it), so the stack's poll stays one check (issue 26 item 5).
#[inline(always)]
fn chan_module<'c>(cx: &'c mut Cx<'_, '_>, chan: &ChanStage) -> Option<&'c mut ChanModule> {
    cx.module_by_quiet(chan.module())
}

/// Marks CHAN's module, reached by [`chan_module`], touched: its
/// deadline moved earlier (out of line: once per timeout, not per
/// message).
#[inline(never)]
fn touch_chan(cx: &mut Cx<'_, '_>, chan: &ChanStage) {
    cx.touch_by(chan.module());
}

impl Down {
    /// Writes every header above the link — BLAST's and BID's, CHAN's
    /// `chan` (from [`Above::commit`]), MSELECT's — into `to`, the
    /// frame's bytes after the link's headers, in place (no copy through
    /// a buffer of its own).
    #[inline(always)]
    fn write(&self, chan: &[u8; chan::HEADER_LEN], to: &mut [u8; ABOVE]) {
        let (upper, rest) = to.split_at_mut(UPPER);
        let (c, m) = rest.split_at_mut(chan::HEADER_LEN);
        upper.copy_from_slice(&self.upper);
        c.copy_from_slice(chan);
        m.copy_from_slice(&self.mselect);
    }
}

impl<'a> Above<'a> {
    /// The stages above the link of an RPC path, as its fast form's
    /// `send` and `receive` borrow them.
    #[inline(always)]
    fn of(
        mselect: &'a MselectStage,
        vchan: &'a mut VchanStage,
        chan: &'a mut ChanStage,
        bid: &'a BidStage,
        blast: &'a BlastStage,
    ) -> Self {
        Above {
            mselect,
            vchan,
            chan,
            bid,
            blast,
        }
    }

    /// Checks a message the application passed down to `peer` against
    /// MSELECT, BLAST and BID, as their `process` would take it (`None`,
    /// decline, otherwise); VCHAN's and CHAN's checks are part of
    /// [`Above::commit`].
    #[inline(always)]
    fn prepare(&self, msg: &Msg, peer: Peer) -> Option<Down> {
        let a = msg.anno();
        // The slot and whether the status is `Ok`: all MSELECT and VCHAN
        // read of the tag here (a message with no tag declines).
        let (slot, ok) = a.rpc_slot_ok()?;
        let mselect = self.mselect.fast_header(a.procedure()?, ok);
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
    /// MSELECT's and VCHAN's; returns CHAN's header, which
    /// [`Down::write`] puts between the others. From here on nothing may
    /// fail.
    #[inline(always)]
    fn commit(
        &mut self,
        d: &Down,
        msg: &mut Msg,
        peer: Peer,
        cx: &mut FastCx,
    ) -> Option<[u8; chan::HEADER_LEN]> {
        let client = !self.chan.is_server();
        let now = cx.now();
        let mut c = cx.stage(CHAN);
        let parts = [&d.mselect[..], msg.as_slice()];
        let (header, chan) = if client {
            let m = chan_module(&mut c, self.chan)?;
            let ((header, earlier), chan) = self.vchan.fast_call(peer, d.slot, |chan| {
                self.chan.fast_call(m, now, parts, peer, chan)
            })?;
            if earlier {
                touch_chan(&mut c, self.chan);
            }
            (header, chan)
        } else {
            // VCHAN passes on the server: the reply goes on the
            // request's channel, which CHAN's stage holds (no module
            // reached).
            let header = self.chan.fast_reply(&mut c, now, parts, peer, d.slot)?;
            (header, d.slot)
        };
        let a = msg.anno_mut();
        // The word is IP's time to live below (MSELECT).
        a.clear_procedure();
        if client {
            a.set_rpc_tag(RpcTag::slot(chan));
        }
        Some(header)
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
        // (Subtracted only once checked: a short frame must not underflow.)
        let ok = len >= bid::HEADER_LEN && self.bid.fast_accepts(peer, b.try_into().ok()?);
        ok.then(|| len - bid::HEADER_LEN)
    }

    /// The frame's bytes from BLAST's header on, `upper_on` (over IP
    /// without the link's padding), from `peer` (annotated `anno`):
    /// checked by BLAST and BID ([`Above::accept_upper`]), then CHAN's
    /// message taken up through CHAN, VCHAN and MSELECT when it is the
    /// next request on an established server channel or the reply to a
    /// client channel's call, whose outcome goes back to its caller; the
    /// over-Ethernet and over-IP forms share all of it. Returns the
    /// application's bytes' length, its tag and MSELECT's header for
    /// [`Above::annotate`]. `None`, nothing changed, for anything else.
    #[inline(always)]
    fn receive(
        &mut self,
        upper_on: &[u8],
        peer: Peer,
        anno: &pathstack_core::Anno,
        cx: &mut FastCx,
    ) -> Option<(usize, RpcTag, MselectHeader)> {
        let (upper, after) = upper_on.split_first_chunk::<UPPER>()?;
        let avail = after.len() + bid::HEADER_LEN;
        let len = self.accept_upper(peer, upper, avail)?;
        // CHAN's message: what BLAST carries after BID's header (BLAST
        // trims the link's padding, B8).
        let packet = after.get(..len)?;
        let (h, payload) = ChanHeader::parse(packet).ok()?;
        let mh = self.mselect.fast_accept(payload)?;
        // The last step that may decline.
        let slot = if !self.chan.is_server() {
            let mut c = cx.stage(CHAN);
            let m = chan_module(&mut c, self.chan)?;
            self.vchan
                .fast_outcome(peer, h.chan, || self.chan.fast_receive(m, &h, peer, anno))?
        } else if self.chan.fast_request(&h, peer, anno) {
            h.chan
        } else {
            return None;
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
