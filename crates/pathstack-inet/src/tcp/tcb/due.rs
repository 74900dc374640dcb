//! The control segments a connection owes, apart from data: a reset, its
//! SYN (or SYN-ACK), an ACK, a tail loss probe, a window probe, a
//! keepalive probe, the sender's silly-window override — one bit each in
//! one word.
//!
//! They are asked together far more often than any one changes: the
//! check half of output (`Tcb::poll_quiet`, after every segment and most
//! application calls) wants to know that none of the four it cannot
//! answer with "nothing to send" is due, and `Tcb::wants_output` (after
//! every read, and after a write while the socket says a read would
//! block) that none at all is. Kept as separate flags, each ask was a
//! load and a branch per flag; in one word it is one test (the seed's
//! point, TR 95-02 §2.6: the common path asks once). The word is the only
//! record of what is due (no cached copy of other state), so there is
//! nothing to keep in step.

/// The bits of what is due (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Due(u8);

impl Due {
    /// A reset (its header is `Tcb::rst_out`).
    pub(super) const RST: u8 = 1 << 0;
    /// The SYN or SYN-ACK (RFC 9293 §3.5).
    pub(super) const SYN: u8 = 1 << 1;
    /// An ACK now (RFC 9293 §3.8.6.3, RFC 1122 §4.2.3.2).
    pub(super) const ACK: u8 = 1 << 2;
    /// A tail loss probe (RFC 8985 §7.3).
    pub(super) const TLP: u8 = 1 << 3;
    /// A window probe (RFC 9293 §3.8.6.1).
    pub(super) const WINDOW_PROBE: u8 = 1 << 4;
    /// A keepalive probe (RFC 9293 §3.8.4).
    pub(super) const KEEPALIVE: u8 = 1 << 5;
    /// The sender's SWS override timeout has run out (RFC 9293
    /// §3.8.6.2.1 case (4)): the next output sends what the small window
    /// takes. Not a segment of its own: with it set, new data is there
    /// to send.
    pub(super) const SWS_OVERRIDE: u8 = 1 << 6;
    /// What `poll_quiet` cannot settle without the send: a segment of its
    /// own due. (The SYN is not asked there: its states send no data and
    /// never take the quiet answer.)
    pub(super) const SEGMENT: u8 =
        Self::RST | Self::ACK | Self::TLP | Self::WINDOW_PROBE | Self::KEEPALIVE;

    /// Whether `bit` is due.
    #[inline(always)]
    pub(super) fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// Whether any of `mask` is due.
    #[inline(always)]
    pub(super) fn any_of(self, mask: u8) -> bool {
        self.0 & mask != 0
    }

    /// Whether anything at all is due.
    #[inline(always)]
    pub(super) fn any(self) -> bool {
        self.0 != 0
    }

    /// `bit` is due.
    #[inline(always)]
    pub(super) fn set(&mut self, bit: u8) {
        self.0 |= bit;
    }

    /// `bit` is no longer due.
    #[inline(always)]
    pub(super) fn clear(&mut self, bit: u8) {
        self.0 &= !bit;
    }
}
