//! BLAST: fragmentation with selective retransmission (spec §3; x-kernel
//! `protocols/blast/`). The engine, without I/O: driven by received
//! packets, pushes from above and time.
//!
//! # Shape
//!
//! * [`BlastSession`]: one per (peer, upper protocol number); carries
//!   blasts both ways (its sending half holds fragments for
//!   retransmission, its receiving half reassembles).
//! * [`BlastInstance`]: what the BLAST module owns once and lends to every
//!   session call: the sequence counter, the bound of
//!   [`OUTSTANDING_MESSAGES`] held messages, the free list of buffers.
//! * [`BlastConfig`]: fragment size and the §3.3 timers and bounds.
//!
//! # Inputs and outputs
//!
//! A session is driven by three calls, each taking `now` (it never reads
//! a clock) and a [`BlastOutput`] to which it hands what it sends and
//! delivers, synchronously and borrowing its own buffers (so nothing is
//! copied to make an action):
//!
//! * [`BlastSession::push`] — a message from above. A message shorter
//!   than F is the fast path: it returns [`Pushed::Short`] with the header
//!   the stage pushes in place onto the message, and touches no table,
//!   timer or allocation. A longer one is copied once (the copy BLAST
//!   must keep for retransmission), its fragments go to
//!   [`BlastOutput::send`], and [`Pushed::Fragmented`] carries the
//!   [`PushReceipt`] CHAN needs.
//! * [`BlastSession::receive`] — a packet parsed by
//!   [`BlastHeader::parse`](crate::wire::blast::BlastHeader::parse).
//!   A short message is [`Received::Short`]: the stage pops the header
//!   and delivers the message in place. Fragments and NACKs are
//!   [`Received::Absorbed`]: the engine copied what it needs (a fragment
//!   into its reassembly record), sent what it must (NACK, retransmitted
//!   fragments) and delivered a completed message through
//!   [`BlastOutput::deliver`] as a slice lent for the call (the record's
//!   own buffer, joined in place; the stage copies it into a message
//!   once, and the buffer goes back to the instance's free list). A
//!   refused packet is an `Err` with its
//!   [`BlastDropReason`], for the stage to count.
//! * [`BlastSession::on_time`] at [`BlastSession::poll_at`] — HOLD
//!   expiry (sender frees a message) and the receive timer (NACK, or
//!   discard after [`NACK_LIMIT`] NACKs).
//!
//! Plus the two controls CHAN uses: [`BlastSession::free_resources`]
//! (x-kernel `FREERESOURCES`) and [`BlastSession::chan_retransmit`]
//! (`CHAN_RETRANSMIT`).
//!
//! A session that goes away must be [`BlastSession::close`]d so that the
//! instance gets its outstanding-message slots back.
//!
//! # Example
//!
//! ```
//! use pathstack_core::time::Instant;
//! use pathstack_rpc::blast::{BlastConfig, BlastInstance, BlastOutput, BlastSession, Pushed, Received};
//! use pathstack_rpc::wire::blast::BlastHeader;
//!
//! #[derive(Default)]
//! struct Link { frames: Vec<Vec<u8>>, delivered: Vec<Vec<u8>> }
//! impl BlastOutput for Link {
//!     fn send(&mut self, header: &BlastHeader, payload: &[u8]) {
//!         let mut f = header.to_bytes().to_vec();
//!         f.extend_from_slice(payload);
//!         self.frames.push(f);
//!     }
//!     fn deliver(&mut self, _prot_id: u32, message: &[u8]) {
//!         self.delivered.push(message.to_vec());
//!     }
//! }
//!
//! let (mut inst_a, mut inst_b) = (BlastInstance::new(), BlastInstance::new());
//! let mut a = BlastSession::new(21, BlastConfig::over_eth());
//! let mut b = BlastSession::new(21, BlastConfig::over_eth());
//! let (mut out_a, mut out_b) = (Link::default(), Link::default());
//! let now = Instant::ZERO;
//!
//! // 4000 bytes: three fragments of at most 1480 bytes.
//! let msg: Vec<u8> = (0..4000).map(|i| i as u8).collect();
//! let pushed = a.push(&mut inst_a, now, &msg, &mut out_a).unwrap();
//! assert!(matches!(pushed, Pushed::Fragmented(r) if r.expensive));
//! for frame in out_a.frames.drain(..) {
//!     let (h, payload) = BlastHeader::parse(&frame).unwrap();
//!     assert_eq!(b.receive(&mut inst_b, now, &h, payload, &mut out_b), Ok(Received::Absorbed));
//! }
//! assert_eq!(out_b.delivered, vec![msg]);
//! ```

mod config;
mod error;
mod instance;
mod receiver;
mod sender;
mod session;

#[cfg(test)]
mod tests;

pub use crate::wire::blast::BlastDropReason;
use crate::wire::blast::{BlastHeader, BlastOp};
pub use config::{
    BlastConfig, ETH_FRAGMENT_LEN, FREE_LIST, HOLD, MAX_PER_PACKET, MAX_REASSEMBLIES, MAX_WAIT,
    NACK_LIMIT, OUTSTANDING_MESSAGES, PER_PACKET,
};
pub use error::BlastPushError;
pub use instance::BlastInstance;
pub use session::BlastSession;

/// Where a session's packets and messages go: implemented by the stage
/// that wraps the engine (and by tests). Called synchronously from within
/// the session's methods; the slices borrow the engine's buffers.
pub trait BlastOutput {
    /// Send one packet down the session's lower path: the header (to be
    /// emitted with [`BlastHeader::emit`]) followed by `payload` (empty
    /// for a NACK).
    fn send(&mut self, header: &BlastHeader, payload: &[u8]);
    /// Deliver a reassembled message to the upper protocol `prot_id`.
    /// `message` is the joined bytes in the reassembly record's buffer,
    /// lent for the call: copy what is needed (once, into a message);
    /// the buffer is reused for a later message.
    fn deliver(&mut self, prot_id: u32, message: &[u8]);
}

/// The "push receipt" side channel to CHAN (spec §2; x-kernel's record
/// `{transport, ticket, reliable, expensive, timeout}` that BLAST fills
/// during the push of a fragmented message). CHAN passes `ticket` back
/// to [`BlastSession::free_resources`] and
/// [`BlastSession::chan_retransmit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PushReceipt {
    /// The message's BLAST sequence number.
    pub ticket: u32,
    /// Resending the message is expensive (always `true` for a fragmented
    /// message: BLAST is not reliable, but repairs by NACK).
    pub expensive: bool,
}

/// What [`BlastSession::push`] did with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pushed {
    /// Shorter than F: push this header in place onto the message and send
    /// it as one packet. No state was kept and no receipt exists (CHAN
    /// sees "not expensive").
    Short(BlastHeader),
    /// Fragmented: the fragments went to [`BlastOutput::send`] and a copy
    /// is held until HOLD expiry or `free_resources`. The original message
    /// is no longer needed.
    Fragmented(PushReceipt),
}

/// What [`BlastSession::receive`] did with an accepted packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Received {
    /// A short message: pop the header, keep `len` bytes (trimming link
    /// padding) and deliver the message upward in place.
    Short {
        /// The message length.
        len: usize,
    },
    /// A fragment or NACK: the engine took what it needs; the packet can
    /// be freed. Anything to send or deliver went to the [`BlastOutput`].
    Absorbed,
}

/// Whether a packet for which no session exists may create one (spec
/// §3.5: only a SEND, and only where an upper protocol is enabled for its
/// `prot_id`, which the stage knows). Any other op is refused with
/// [`BlastDropReason::NoSession`] and creates no state (§11.2 B6).
pub fn may_open_session(header: &BlastHeader) -> Result<(), BlastDropReason> {
    match header.op {
        BlastOp::Send => Ok(()),
        BlastOp::Nack | BlastOp::Retransmit => Err(BlastDropReason::NoSession),
    }
}

/// Counters of one session's work (not drops: refused packets are the
/// stage's to count by [`BlastDropReason`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlastStats {
    /// Fragmented messages pushed.
    pub messages_fragmented: u64,
    /// Fragments sent for the first time.
    pub fragments_sent: u64,
    /// Fragments resent after a NACK.
    pub fragments_retransmitted: u64,
    /// NACKs received by the sending half.
    pub nacks_received: u64,
    /// Fragments accepted by the receiving half (duplicates included).
    pub fragments_received: u64,
    /// NACKs sent by the receiving half.
    pub nacks_sent: u64,
    /// Fragmented messages reassembled and delivered.
    pub messages_reassembled: u64,
    /// Partial messages discarded after [`NACK_LIMIT`] NACKs.
    pub messages_discarded: u64,
}
