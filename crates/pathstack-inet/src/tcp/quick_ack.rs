//! Quick-ACK mode: when a receiver acknowledges data at once instead of
//! delaying the ACK, as Linux decides it (`tcp_incr_quickack`,
//! `tcp_enter_quickack_mode`, `tcp_in_quickack_mode`, the "ping-pong"
//! interactive mode of `inet_connection_sock`).
//!
//! RFC 9293 §3.8.6.3 and RFC 5681 §4.2 let a receiver delay an ACK (by
//! less than 0.5 s, and for no more than every second full-sized
//! segment); neither asks it to, and RFC 5681 §4.2 says "an ACK SHOULD be
//! generated for at least every second full-sized segment" — ACKing
//! sooner is always allowed. What is implemented, Linux's rules:
//!
//! - The first data of a connection, and data after a gap longer than the
//!   RTO (the sender then restarts from a small window, RFC 5681 §4.1),
//!   grant up to min(16, receive buffer / (2·MSS)) quick ACKs: each
//!   in-order segment is ACKed at once while any are left, so a sender in
//!   slow start is not held for the delayed-ACK timer with a window of one
//!   or two segments (Linux `TCP_MAX_QUICKACKS`; Linux divides its current
//!   window, pathstack its buffer, the most the window may grow to).
//! - Duplicate or out-of-window data enters quick-ACK mode again (those
//!   are ACKed at once anyway; the grant covers the segments after them).
//! - Interactive ("ping-pong") mode: when the application sends data less
//!   than the delayed-ACK time after data arrived, the ACK can ride on the
//!   answer, so quick ACKs stop (Linux `tcp_event_data_sent`). The mode
//!   ends when the delayed-ACK timer fires anyway (the answer did not come
//!   in time; Linux's `tcp_delack_timer_handler`).
//!
//! Every ACK sent for pending data uses up one quick ACK
//! (`tcp_dec_quickack_mode`).

use pathstack_core::{Duration, Instant};

/// How long after the data a quick ACK is due: just after the instant it
/// arrived, so that it does not go out with the poll that received the
/// data but with the host's next poll, after the application has had its
/// turn. An answer written in that turn carries the ACK (a request's
/// echo leaves as one segment, not a bare ACK and then the answer: one
/// TAP write fewer per connection of issue 28's connection-rate row,
/// where each costs the server ~20 µs of kernel forwarding); with no
/// answer the ACK goes at the next poll, microseconds later in real time
/// (one step of a simulated clock). Linux sends it from the softirq,
/// before the application runs; RFC 9293 §3.8.6.3 and RFC 5681 §4.2
/// allow any delay under 500 ms.
pub const ANSWER_GRACE: Duration = Duration::from_nanos(1);

/// Linux's `TCP_MAX_QUICKACKS`: the most quick ACKs one grant gives.
pub const MAX_QUICK_ACKS: u8 = 16;

/// A connection's quick-ACK state (module docs).
#[derive(Debug, Clone, Copy)]
pub struct QuickAck {
    /// Quick ACKs left.
    left: u8,
    /// Interactive mode: the ACK waits for the application's answer.
    pingpong: bool,
    /// Whether any data has arrived (Linux's `ato != 0`).
    data_seen: bool,
    /// When in-order data last arrived (Linux's `lrcvtime`).
    last_data_in: Instant,
}

impl QuickAck {
    /// A new connection's state: no data yet.
    pub fn new(now: Instant) -> Self {
        QuickAck {
            left: 0,
            pingpong: false,
            data_seen: false,
            last_data_in: now,
        }
    }

    /// In-order data arrived at `now`: the first data, or the first after
    /// a gap longer than `rto` with no quick ACK left, grants `grant`
    /// quick ACKs. True when the ACK for it goes at once. (`rto` and
    /// `grant` are asked only when needed: an interactive connection's
    /// steady state asks neither.)
    #[inline]
    pub fn on_data(
        &mut self,
        now: Instant,
        rto: impl FnOnce() -> Duration,
        grant: impl FnOnce() -> u8,
    ) -> bool {
        let last = core::mem::replace(&mut self.last_data_in, now);
        if self.pingpong {
            // Interactive: no quick ACK, whatever the grant (an
            // interactive connection's steady state ends here). Linux
            // also renews the grant after a long gap while interactive,
            // to be used once the mode ends; pathstack renews it only
            // outside the mode.
            return false;
        }
        if !self.data_seen {
            self.data_seen = true;
            self.incr(grant());
        } else if self.left == 0 && now.saturating_since(last) > rto() {
            self.incr(grant());
        }
        self.left > 0
    }

    /// Duplicate or out-of-window data (Linux `tcp_enter_quickack_mode`):
    /// a new grant, and interactive mode ends.
    pub fn enter(&mut self, grant: u8) {
        self.incr(grant);
        self.pingpong = false;
    }

    /// An ACK went out; `pending()` when it acknowledged data that was
    /// waiting for one (asked only while quick ACKs are left).
    #[inline]
    pub fn on_ack_sent(&mut self, pending: impl FnOnce() -> bool) {
        if self.left > 0 && pending() {
            self.left -= 1;
        }
    }

    /// Data was sent at `now`: within `ato` of the last data received it
    /// answers it, and the connection is interactive.
    #[inline]
    pub fn on_data_sent(&mut self, now: Instant, ato: Duration) {
        if !self.pingpong && self.data_seen && now.saturating_since(self.last_data_in) < ato {
            self.pingpong = true;
        }
    }

    /// The delayed-ACK timer fired: the answer did not come in time, so
    /// the connection is not interactive.
    pub fn on_delack_fired(&mut self) {
        self.pingpong = false;
    }

    /// The peer's FIN arrived in ESTABLISHED (Linux `tcp_fin` enters
    /// interactive mode: the application's close usually answers with a
    /// FIN the ACK rides on). True when the FIN's ACK may wait: some data
    /// arrived before (with none, Linux's ACK timeout is 0).
    pub fn on_fin(&mut self) -> bool {
        if self.data_seen {
            self.pingpong = true;
        }
        self.data_seen
    }

    /// Whether the connection is in interactive mode.
    pub fn pingpong(&self) -> bool {
        self.pingpong
    }

    /// Quick ACKs left.
    pub fn left(&self) -> u8 {
        self.left
    }

    fn incr(&mut self, grant: u8) {
        let grant = grant.min(MAX_QUICK_ACKS);
        if grant > self.left {
            self.left = grant;
        }
    }
}

/// The quick ACKs a grant gives for a receive buffer of `buffer` octets
/// and segments of `mss`: min(16, buffer / (2·MSS)) (Linux
/// `tcp_incr_quickack`, with the window it may grow to).
pub fn grant(buffer: usize, mss: u32) -> u8 {
    let segs = buffer / (2 * mss.max(1) as usize);
    segs.min(usize::from(MAX_QUICK_ACKS)) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    const RTO: Duration = Duration::from_millis(200);
    const ATO: Duration = Duration::from_millis(40);

    #[test]
    fn first_data_grants_quick_acks_until_used() {
        let t0 = Instant::from_nanos(0);
        let mut q = QuickAck::new(t0);
        assert!(q.on_data(t0, || RTO, || 2));
        q.on_ack_sent(|| true);
        assert!(q.on_data(t0, || RTO, || 2));
        q.on_ack_sent(|| true);
        assert!(!q.on_data(t0, || RTO, || 2), "the grant is used up");
    }

    #[test]
    fn an_answer_within_the_ack_delay_makes_the_connection_interactive() {
        let t0 = Instant::from_nanos(0);
        let mut q = QuickAck::new(t0);
        assert!(q.on_data(t0, || RTO, || 16));
        q.on_data_sent(t0 + Duration::from_millis(1), ATO);
        assert!(q.pingpong());
        assert!(!q.on_data(t0 + Duration::from_millis(2), || RTO, || 16));
        q.on_delack_fired();
        assert!(q.on_data(t0 + Duration::from_millis(50), || RTO, || 16));
    }

    #[test]
    fn a_late_answer_is_not_interactive_and_a_long_gap_grants_again() {
        let t0 = Instant::from_nanos(0);
        let mut q = QuickAck::new(t0);
        assert!(q.on_data(t0, || RTO, || 1));
        q.on_ack_sent(|| true);
        q.on_data_sent(t0 + Duration::from_millis(41), ATO);
        assert!(!q.pingpong());
        assert!(!q.on_data(t0 + Duration::from_millis(100), || RTO, || 1));
        assert!(q.on_data(t0 + Duration::from_millis(400), || RTO, || 1));
    }

    #[test]
    fn grant_is_half_the_buffer_in_segments_at_most_sixteen() {
        assert_eq!(grant(15 << 20, 1000), 16);
        assert_eq!(grant(8000, 1000), 4);
        assert_eq!(grant(100, 1000), 0);
    }
}
