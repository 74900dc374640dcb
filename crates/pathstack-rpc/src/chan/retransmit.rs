//! What CHAN sends again, and when: the doubling retransmission timer and
//! the content rules of X32 `chanResend` as revised by OSF (spec §6.6,
//! §12 item 10).

use super::{ChannelKey, Payload, TransportQuery, TransportReceipt};
use crate::wire::chan::{flags, ChanHeader};
use pathstack_core::time::{Duration, Instant};

/// A retransmission timer with doubling back-off and a cap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Backoff {
    /// Interval of the next arming.
    pub wait: Duration,
    /// When the timer fires; `None` when not armed.
    pub at: Option<Instant>,
}

impl Backoff {
    pub const fn idle() -> Self {
        Backoff {
            wait: Duration::ZERO,
            at: None,
        }
    }

    /// Arms the timer for a new message with the initial interval.
    pub fn start(&mut self, now: Instant, initial: Duration) {
        self.wait = initial;
        self.at = Some(now + initial);
    }

    /// After an expiry: wait := min(2·wait, max), re-armed from `now`.
    pub fn back_off(&mut self, now: Instant, max: Duration) {
        self.wait = Duration::from_nanos(self.wait.as_nanos().saturating_mul(2)).min(max);
        self.at = Some(now + self.wait);
    }

    /// Re-arms with the current interval (after a forced resend).
    pub fn rearm(&mut self, now: Instant) {
        self.at = Some(now + self.wait);
    }

    pub fn cancel(&mut self) {
        self.at = None;
    }

    pub fn due(&self, now: Instant) -> bool {
        self.at.is_some_and(|t| t <= now)
    }
}

/// The packet that resends a saved message with base flags `f` (spec §6.6):
/// header-only when the transport is reliable (unless forced), when BLAST
/// fragmented the message (unless forced and BLAST says it is not still
/// repairing it), or (OSF) when the copy exceeds the optimal packet on an
/// unforced resend; otherwise the whole copy, with `USER_MSG` added, as a
/// new transport message.
#[allow(clippy::too_many_arguments)]
pub(crate) fn resend(
    key: ChannelKey,
    seq: u32,
    f: u8,
    copy_len: usize,
    receipt: TransportReceipt,
    force: bool,
    opt_packet: Option<usize>,
    query: Option<&mut dyn TransportQuery>,
) -> (ChanHeader, Payload) {
    let header_only = |fl: u8| (control(key, fl, seq), Payload::None);
    if receipt.reliable && !force {
        return header_only(f);
    }
    if receipt.expensive {
        if !force {
            return header_only(f);
        }
        // X32 asks with no ticket (§12 item 10); OSF passes it. An
        // unknown ticket answers "yes" (spec §3.4 item 6).
        let yes = match (receipt.ticket, query) {
            (Some(t), Some(q)) => q.chan_retransmit(t),
            _ => true,
        };
        if !yes {
            return header_only(f);
        }
    }
    if !force && opt_packet.is_some_and(|opt| copy_len > opt) {
        return header_only(f);
    }
    (
        ChanHeader {
            chan: key.chan,
            flags: f | flags::USER_MSG,
            prot_id: key.prot_id,
            seq,
            // Copies are bounded by max_request / the reply API, far
            // below 4 GiB; saturate rather than wrap if not.
            len: u32::try_from(copy_len).unwrap_or(u32::MAX),
        },
        Payload::SavedCopy,
    )
}

/// A header-only control packet on `key`'s channel: an ACK, a probe, a
/// `NEGATIVE_ACK`, or a resend that carries no data (spec §6.2, §6.6).
pub(crate) fn control(key: ChannelKey, f: u8, seq: u32) -> ChanHeader {
    ChanHeader {
        chan: key.chan,
        flags: f,
        prot_id: key.prot_id,
        seq,
        len: 0,
    }
}
