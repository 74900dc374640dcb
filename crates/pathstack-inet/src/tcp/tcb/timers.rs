//! TIMEOUTS (RFC 9293 §3.10.8) and the timers of the extensions: the
//! retransmission timer (RFC 6298, with RFC 6675 §5.1 on expiry), RACK's
//! reordering timer and the tail loss probe (RFC 8985 §6.3, §7), the
//! delayed ACK, the persist timer (§3.8.6.1), keepalive (§3.8.4) and
//! TIME-WAIT (§3.4.2).

use super::due::Due;
use super::Tcb;
use crate::tcp::error::TcpError;
use crate::tcp::state::State;
use crate::tcp::timers::Timer;
use pathstack_core::time::{Duration, Instant};

/// The longest wait between window probes (Linux `TCP_RTO_MAX`).
const PERSIST_MAX: Duration = Duration::from_secs(120);

fn due(t: Option<Instant>, now: Instant) -> bool {
    t.is_some_and(|t| t <= now)
}

impl Tcb {
    /// When [`on_tick`](Self::on_tick) has work: the earliest of the
    /// connection's timers (found by a walk over them).
    #[inline]
    pub fn poll_at(&self) -> Option<Instant> {
        self.timers.earliest()
    }

    /// When to call [`on_tick`](Self::on_tick) at the latest: at or
    /// before [`poll_at`](Self::poll_at), a bound that moving a deadline
    /// later or stopping it leaves in place (`tcp::timers::Timers`), so
    /// that the usual segment touches only its timers' fields. A tick
    /// before any deadline runs nothing and finds the bound again; what
    /// arms one timer for the connection (the stage) asks this after
    /// every segment and call, and is woken early at most once per
    /// deadline that moved.
    #[inline]
    pub fn wake_at(&self) -> Option<Instant> {
        self.timers.wake_at()
    }

    /// Whether [`poll_output`](Self::poll_output) has something to send
    /// regardless of the timers.
    pub fn wants_output(&self) -> bool {
        // (Reset, SYN, ACK, probes: one word, `due.rs`.)
        self.due.any()
    }

    /// Runs the timers that are due at `now`; what they send comes from
    /// the next [`poll_output`](Self::poll_output). Then
    /// [`wake_at`](Self::wake_at) is [`poll_at`](Self::poll_at) again.
    pub fn on_tick(&mut self, now: Instant) {
        self.run_due(now);
        self.timers.settle();
    }

    /// [`on_tick`](Self::on_tick)'s timers.
    fn run_due(&mut self, now: Instant) {
        if due(self.timers.get(Timer::TimeWait), now) {
            // 2·MSL is over: the connection is gone (RFC 9293 §3.10.8).
            self.enter_closed(None);
            return;
        }
        if due(self.timers.get(Timer::Delack), now) {
            self.timers.set(Timer::Delack, None);
            // The delayed ACK, not the due-now one of two full segments
            // or a quick ACK (`schedule_ack_for`): the application did
            // not answer in time, interactive mode ends (`quick_ack.rs`).
            if self.unacked_bytes < 2 * self.smss {
                self.quick_ack.on_delack_fired();
            }
            self.due.set(Due::ACK);
        }
        // The probe timeout is armed in place of the RTO (RFC 8985 §7.2,
        // Linux's ICSK_TIME_LOSS_PROBE shares the retransmission timer):
        // PTO = min(PTO, time left on the RTO), so with one segment in
        // flight (2·SRTT + 200 ms) the two tie, and the probe goes then,
        // not the timeout with its loss window; the RTO is re-armed after
        // the probe (§7.3). A probe may not go with one already out: then
        // the RTO runs as usual. It may go in recovery once the ACK clock
        // has stopped (`Tlp::may_arm`, issue 28).
        let tlp_at = self.timers.get(Timer::Tlp);
        if due(tlp_at, now)
            && self
                .timers
                .get(Timer::Rtx)
                .is_none_or(|r| tlp_at.is_some_and(|t| t <= r))
            && self.tlp.may_arm(&self.sb, self.recovery.in_recovery())
        {
            self.timers.set(Timer::Tlp, None);
            self.due.set(Due::TLP);
            self.timers.set(Timer::Rtx, Some(now + self.rto.rto()));
        }
        if due(self.timers.get(Timer::Rtx), now) {
            self.timers.set(Timer::Rtx, None);
            self.on_rto(now);
            if self.state == State::Closed {
                return;
            }
        }
        if due(self.timers.get(Timer::Reo), now) {
            self.timers.set(Timer::Reo, None);
            self.rack_detect(now);
        }
        if due(self.timers.get(Timer::Tlp), now) {
            self.timers.set(Timer::Tlp, None);
            if self.tlp.may_arm(&self.sb, self.recovery.in_recovery()) {
                self.due.set(Due::TLP);
            }
        }
        if due(self.timers.get(Timer::Persist), now) {
            self.timers.set(Timer::Persist, None);
            if self.snd_wnd == 0 {
                self.due.set(Due::WINDOW_PROBE);
                self.persist_backoff = self.persist_backoff.saturating_add(1);
                self.timers
                    .set(Timer::Persist, Some(now + self.persist_interval()));
            } else if self.window_holds_data() {
                // A window too small for silly-window avoidance has not
                // grown: the override timeout (RFC 9293 §3.8.6.2.1 (4))
                // sends what it takes.
                self.due.set(Due::SWS_OVERRIDE);
            }
        }
        if due(self.timers.get(Timer::Keepalive), now) {
            self.timers.set(Timer::Keepalive, None);
            if let Some(k) = self.cfg.keepalive {
                if self.keepalive_sent >= k.probes {
                    self.enter_closed(Some(TcpError::TimedOut));
                    return;
                }
                self.keepalive_sent += 1;
                self.due.set(Due::KEEPALIVE);
                self.timers
                    .set(Timer::Keepalive, Some(now + k.interval.into()));
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
        self.stats.rare().timeouts += 1;
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
                self.due.set(Due::SYN);
                self.syn_retransmitted = true;
                self.timers.set(Timer::Rtx, Some(now + self.rto.rto()));
            }
            _ if !self.sb.is_empty() => {
                if self.rtx_count > self.cfg.retries {
                    self.enter_closed(Some(TcpError::TimedOut));
                    return;
                }
                self.stats.rare().timeout_idle_ns +=
                    now.saturating_since(self.xmit_stamp).as_nanos();
                self.rto.on_timeout();
                self.recovery.on_rto(&mut self.sb, &mut self.cc, now);
                if self.ts_ok && self.rtx_count == 1 {
                    // The retransmission goes now, stamped now (RFC 3522).
                    self.recovery.arm_eifel(self.ts_now(now));
                }
                self.tlp = crate::tcp::rack::Tlp::new();
                self.timers.set(Timer::Tlp, None);
                self.timers.set(Timer::Reo, None);
                self.timers.set(Timer::Rtx, Some(now + self.rto.rto()));
            }
            _ => self.rtx_count = 0,
        }
    }
}
