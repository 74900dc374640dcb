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
use crate::wire::{bid, blast};
use crate::Peer;

/// The first stage the fast forms cover: CHAN (0 is RPC, 1 MSELECT, 2
/// VCHAN).
pub const FIRST: usize = 3;

/// CHAN's position on the RPC paths.
const CHAN: usize = 3;

/// Bytes of the BLAST and BID headers of a short message.
const UPPER: usize = blast::HEADER_LEN + bid::HEADER_LEN;

/// The BLAST and BID headers `BlastStage` and `BidStage` would push on
/// the `len` bytes CHAN passed down to `peer`: `None` (decline) where
/// BLAST would fragment the message or BID would ask BIDCTL or drop it.
#[inline(always)]
fn upper_headers(
    bid: &BidStage,
    blast: &BlastStage,
    peer: Peer,
    len: usize,
) -> Option<[u8; UPPER]> {
    let b = bid.fast_header(peer)?;
    let s = blast.fast_header(len + bid::HEADER_LEN)?;
    let mut h = [0u8; UPPER];
    h[..blast::HEADER_LEN].copy_from_slice(&s);
    h[blast::HEADER_LEN..].copy_from_slice(&b);
    Some(h)
}

/// The BID message's length (the BLAST payload) in the BLAST and BID
/// headers `h` of a frame from `peer`, `avail` bytes following the BLAST
/// header, when `BlastStage` and `BidStage` would pass it up whole;
/// `None` (decline) otherwise.
#[inline(always)]
fn upper_accept(
    bid: &BidStage,
    blast: &BlastStage,
    peer: Peer,
    h: &[u8; UPPER],
    avail: usize,
) -> Option<usize> {
    let (s, b) = h.split_at(blast::HEADER_LEN);
    let len = blast.fast_accept(s.try_into().ok()?, avail)?;
    // BID needs its whole header inside BLAST's payload.
    (len >= bid::HEADER_LEN && bid.fast_accepts(peer, b.try_into().ok()?)).then_some(len)
}
