//! TIMEOUTS (RFC 9293 §3.10.8) and the timers of the extensions: the
//! retransmission timer (RFC 6298, with RFC 6675 §5.1 on expiry), RACK's
//! reordering timer and the tail loss probe (RFC 8985 §6.3, §7), the
//! delayed ACK, the persist timer (§3.8.6.1), keepalive (§3.8.4) and
//! TIME-WAIT (§3.4.2).

use super::Tcb;
use crate::tcp::error::TcpError;
use crate::tcp::state::State;
use pathstack_core::time::{Duration, Instant};

/// The longest wait between window probes (Linux `TCP_RTO_MAX`).
const PERSIST_MAX: Duration = Duration::from_secs(120);

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if x <= y { x } else { y }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// A deadline as nanoseconds, "off" as the largest value.
#[inline]
fn key(t: Option<Instant>) -> u64 {
    match t {
        Some(t) => t.as_nanos(),
        None => u64::MAX,
    }
}

fn due(t: Option<Instant>, now: Instant) -> bool {
    t.is_some_and(|t| t <= now)
}

impl Tcb {
    /// When [`on_tick`](Self::on_tick) has work, or output is waiting
    /// (`now` then): the earliest of the connection's timers.
    #[inline]
    pub fn poll_at(&self) -> Option<Instant> {
        // Asked after every segment and every application call: a chain
        // of minimums over nanoseconds rather than of matches. Only when
        // that is the largest value (all off, or a deadline at the very
        // end of time) do the options decide.
        let least = key(self.rtx_at)
            .min(key(self.tlp_at))
            .min(key(self.reo_at))
            .min(key(self.delack_at))
            .min(key(self.persist_at))
            .min(key(self.keepalive_at))
            .min(key(self.time_wait_at));
        if least != u64::MAX {
            return Some(Instant::from_nanos(least));
        }
        self.poll_at_slow()
    }

    /// [`poll_at`](Self::poll_at) the long way: the earliest deadline set.
    #[cold]
    fn poll_at_slow(&self) -> Option<Instant> {
        let mut t = earliest(self.rtx_at, self.tlp_at);
        t = earliest(t, self.reo_at);
        t = earliest(t, self.delack_at);
        t = earliest(t, self.persist_at);
        t = earliest(t, self.keepalive_at);
        earliest(t, self.time_wait_at)
    }

    /// Whether [`poll_output`](Self::poll_output) has something to send
    /// regardless of the timers.
    pub fn wants_output(&self) -> bool {
        self.rst_out.is_some()
            || self.syn_due
            || self.ack_due
            || self.tlp_due
            || self.window_probe_due
            || self.keepalive_due
    }

    /// Runs the timers that are due at `now`; what they send comes from
    /// the next [`poll_output`](Self::poll_output).
    pub fn on_tick(&mut self, now: Instant) {
        if due(self.time_wait_at, now) {
            // 2·MSL is over: the connection is gone (RFC 9293 §3.10.8).
            self.enter_closed(None);
            return;
        }
        if due(self.delack_at, now) {
            self.delack_at = None;
            self.ack_due = true;
        }
        if due(self.rtx_at, now) {
            self.rtx_at = None;
            self.on_rto(now);
            if self.state == State::Closed {
                return;
            }
        }
        if due(self.reo_at, now) {
            self.reo_at = None;
            self.rack_detect(now);
        }
        if due(self.tlp_at, now) {
            self.tlp_at = None;
            if self.tlp.may_arm(&self.sb, self.recovery.in_recovery()) {
                self.tlp_due = true;
            }
        }
        if due(self.persist_at, now) {
            self.persist_at = None;
            if self.snd_wnd == 0 {
                self.window_probe_due = true;
                self.persist_backoff = self.persist_backoff.saturating_add(1);
                self.persist_at = Some(now + self.persist_interval());
            }
        }
        if due(self.keepalive_at, now) {
            self.keepalive_at = None;
            if let Some(k) = self.cfg.keepalive {
                if self.keepalive_sent >= k.probes {
                    self.enter_closed(Some(TcpError::TimedOut));
                    return;
                }
                self.keepalive_sent += 1;
                self.keepalive_due = true;
                self.keepalive_at = Some(now + k.interval);
            }
        }
    }

    /// The persist interval: the RTO, doubled per unanswered probe, at
    /// most [`PERSIST_MAX`].
    pub(super) fn persist_interval(&self) -> Duration {
        let base = self.rto.rto().as_nanos();
        let shifted = base.saturating_mul(1u64 << self.persist_backoff.min(16));
        Duration::from_nanos(shifted.min(PERSIST_MAX.as_nanos()))
    }

    /// The retransmission timer expired (RFC 6298 §5.4–5.6; RFC 6675
    /// §5.1; RFC 9293 §3.8.3 R2 gives up after `retries`).
    fn on_rto(&mut self, now: Instant) {
        self.rtx_count += 1;
        self.stats.timeouts += 1;
        match self.state {
            State::SynSent | State::SynReceived => {
                if self.rtx_count > self.cfg.syn_retries {
                    let e = if self.passive {
                        None
                    } else {
                        Some(TcpError::TimedOut)
                    };
                    self.enter_closed(e);
                    return;
                }
                self.rto.on_timeout();
                self.syn_due = true;
                self.syn_retransmitted = true;
                self.rtx_at = Some(now + self.rto.rto());
            }
            _ if !self.sb.is_empty() => {
                if self.rtx_count > self.cfg.retries {
                    self.enter_closed(Some(TcpError::TimedOut));
                    return;
                }
                self.rto.on_timeout();
                self.recovery.on_rto(&mut self.sb, &mut self.cc, now);
                self.tlp = crate::tcp::rack::Tlp::new();
                self.tlp_at = None;
                self.reo_at = None;
                self.rtx_at = Some(now + self.rto.rto());
            }
            _ => self.rtx_count = 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::config::TcpConfig;
    use crate::tcp::seq::SeqNumber;
    use proptest::prelude::*;

    proptest! {
        /// The chain of minimums is the earliest deadline set.
        #[test]
        fn poll_at_is_the_earliest_deadline(
            d in proptest::array::uniform7(proptest::option::of(prop_oneof![
                any::<u64>(),
                Just(u64::MAX),
                Just(0u64),
            ])),
        ) {
            let d = d.map(|t| t.map(Instant::from_nanos));
            let mut t = Tcb::connect(TcpConfig::default(), 1, 2, SeqNumber(3), 4, Instant::ZERO);
            t.rtx_at = d[0];
            t.tlp_at = d[1];
            t.reo_at = d[2];
            t.delack_at = d[3];
            t.persist_at = d[4];
            t.keepalive_at = d[5];
            t.time_wait_at = d[6];
            prop_assert_eq!(t.poll_at(), d.into_iter().fold(None, earliest));
            prop_assert_eq!(t.poll_at(), t.poll_at_slow());
        }
    }
}
