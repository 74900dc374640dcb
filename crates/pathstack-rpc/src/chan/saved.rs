//! The message a CHAN channel keeps until its peer acknowledges it: the
//! half the two sides share. A client channel in WAIT keeps its request
//! (spec §6.4), a server channel in WAIT its reply (§6.5); each keeps
//! with it what the transport said when it was pushed (reliable?
//! fragmented, under which ticket?) and the retransmission timer that
//! resends it (§6.6). Both sides keep, resend and release it by the same
//! rules; only the flags they resend with differ (`FROM_CLIENT` or not).

use super::retransmit::{resend, Backoff};
use super::{ChanAction, ChannelKey, TransportQuery, TransportReceipt};
use pathstack_core::time::{Duration, Instant};

/// A channel's unacknowledged message, its transport receipt and its
/// retransmission timer.
#[derive(Debug)]
pub(crate) struct SavedMessage {
    /// The message, kept for retransmission; cleared (capacity kept)
    /// when it is acknowledged, so a channel in steady state does not
    /// allocate.
    copy: Vec<u8>,
    receipt: TransportReceipt,
    pub(super) timer: Backoff,
}

impl SavedMessage {
    /// Nothing kept, the timer idle.
    pub(super) const fn new() -> Self {
        SavedMessage {
            copy: Vec::new(),
            receipt: TransportReceipt {
                reliable: false,
                expensive: false,
                ticket: None,
            },
            timer: Backoff::idle(),
        }
    }

    /// Keeps the message just pushed (its two parts, one after the
    /// other) and arms the timer with `initial`; the transport's receipt
    /// comes with [`SavedMessage::record`].
    #[inline(always)]
    pub(super) fn keep(&mut self, now: Instant, initial: Duration, parts: [&[u8]; 2]) {
        self.copy.clear();
        // The upper header, then the payload only if there is one (a
        // zero-byte call's is empty: one copy, not a loop).
        self.copy.extend_from_slice(parts[0]);
        if !parts[1].is_empty() {
            self.copy.extend_from_slice(parts[1]);
        }
        self.receipt = TransportReceipt::default();
        self.timer.start(now, initial);
    }

    /// The peer has the message (acknowledged, answered, or given up
    /// on): the timer cancelled, the copy dropped, the transport told it
    /// may free a fragmented message.
    #[inline(always)]
    pub(super) fn release(&mut self, out: &mut Vec<ChanAction>) {
        self.timer.cancel();
        self.copy.clear();
        if let Some(ticket) = self.receipt.ticket {
            out.push(ChanAction::FreeResources { ticket });
        }
        self.receipt = TransportReceipt::default();
    }

    /// Records what the transport said about the message (or a whole
    /// resend of it); a reliable transport makes the timer needless
    /// (spec §6.6 rule 1).
    pub(super) fn record(&mut self, receipt: TransportReceipt) {
        self.receipt = receipt;
        if receipt.reliable {
            self.timer.cancel();
        }
    }

    /// The kept message, for a [`Payload::SavedCopy`](super::Payload)
    /// resend.
    pub(super) fn copy(&self) -> &[u8] {
        &self.copy
    }

    /// Whether the transport fragmented the message (it then holds it
    /// under a ticket until told to free it).
    #[inline(always)]
    pub(super) fn fragmented(&self) -> bool {
        self.receipt.ticket.is_some()
    }

    /// Gives the copy's memory back (a channel disabled for good).
    pub(super) fn forget(&mut self) {
        self.copy = Vec::new();
    }

    /// The packet that resends the message on `key` at `seq` with base
    /// flags `f` (spec §6.6); `force` for an answer to `NEGATIVE_ACK`.
    pub(super) fn resend(
        &self,
        key: ChannelKey,
        seq: u32,
        f: u8,
        force: bool,
        opt_packet: Option<usize>,
        query: Option<&mut dyn TransportQuery>,
    ) -> ChanAction {
        let (header, payload) = resend(
            key,
            seq,
            f,
            self.copy.len(),
            self.receipt,
            force,
            opt_packet,
            query,
        );
        ChanAction::Send {
            key,
            header,
            payload,
        }
    }
}
