//! The deadlines of one connection's timers (RFC 9293 §3.10.8 and the
//! extensions': RFC 6298's retransmission timer, RFC 8985's reordering
//! timer and tail loss probe, the delayed ACK, persist, keepalive and
//! TIME-WAIT), with a lower bound on the earliest of them for the stage's
//! one timer.
//!
//! A deadline is a field, and setting, moving or stopping it touches that
//! field: a request/response exchange moves the retransmission, probe
//! and delayed-ACK deadlines about seven times per side per round trip
//! (a send restarts the first two, the ACK of everything stops them, data
//! sets the delayed ACK, the answer stops it). What the stage arms its
//! timer for is [`wake_at`](Timers::wake_at), a bound that a change only
//! ever lowers: a deadline moved later or stopped leaves it where it was,
//! and the timer then fires early, finds nothing due, and the bound is
//! found again ([`settle`](Timers::settle), from `Tcb::on_tick`) — Linux
//! keeps its retransmission timer so (`icsk_timeout` moves, the timer
//! entry fires early and is re-armed), and BSD's callouts before it. The
//! seed's point (TR 95-02, §2.6): do the work where it is rare (a timer
//! firing), not on the common path (every segment). The exact earliest
//! deadline ([`earliest`](Timers::earliest)) is a walk, for those that
//! need it (tests, and the control block's `poll_at`).

use pathstack_core::time::Instant;

/// One of a connection's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Retransmission (RFC 6298).
    Rtx,
    /// Tail loss probe (RFC 8985 §7).
    Tlp,
    /// RACK's reordering timer (RFC 8985 §6.3).
    Reo,
    /// Delayed ACK (RFC 9293 §3.8.6.3).
    Delack,
    /// Persist: window probes (RFC 9293 §3.8.6.1).
    Persist,
    /// Keepalive (RFC 9293 §3.8.4).
    Keepalive,
    /// TIME-WAIT's 2·MSL (RFC 9293 §3.4.2).
    TimeWait,
}

/// Number of [`Timer`]s.
const TIMERS: usize = 7;

/// "Off", as a deadline in nanoseconds: never earliest unless all are.
const OFF: u64 = u64::MAX;

/// The deadlines of a connection's timers and a lower bound on the
/// earliest.
#[derive(Clone)]
pub(crate) struct Timers {
    /// Each timer's deadline in nanoseconds, [`OFF`] when not set.
    at: [u64; TIMERS],
    /// Which timers are set (bit per [`Timer`]): a deadline at the very
    /// end of time is set, yet reads as [`OFF`].
    set: u8,
    /// At most the least of `at` while any is set (the invariant every
    /// change keeps: a change only lowers it), [`OFF`] when none is; the
    /// least itself after [`settle`](Self::settle).
    bound: u64,
}

impl Default for Timers {
    fn default() -> Self {
        Timers {
            at: [OFF; TIMERS],
            set: 0,
            bound: OFF,
        }
    }
}

/// The deadlines, without the bound: two control blocks whose timers
/// were changed along different ways to the same deadlines are in the
/// same state (the differential tests compare their `Debug`).
impl PartialEq for Timers {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.set == other.set
    }
}

impl Eq for Timers {}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers")
            .field("at", &self.at)
            .field("set", &self.set)
            .finish()
    }
}

impl Timers {
    /// Timer `t`'s deadline.
    #[inline]
    pub(crate) fn get(&self, t: Timer) -> Option<Instant> {
        let i = t as usize;
        (self.set & (1 << i) != 0).then(|| Instant::from_nanos(self.at[i]))
    }

    /// Sets (or with `None`, stops) timer `t`: its field, and the bound
    /// when the deadline is below it.
    #[inline(always)]
    pub(crate) fn set(&mut self, t: Timer, at: Option<Instant>) {
        let i = t as usize;
        let bit = 1u8 << i;
        match at {
            Some(at) => {
                let new = at.as_nanos();
                self.set |= bit;
                self.at[i] = new;
                self.bound = self.bound.min(new);
            }
            None => self.stop(&[t]),
        }
    }

    /// Stops each of `timers`. The bound stays (the timer fires early and
    /// finds nothing due), unless nothing is left set: then there is
    /// nothing to wake for.
    #[inline(always)]
    pub(crate) fn stop(&mut self, timers: &[Timer]) {
        for &t in timers {
            let i = t as usize;
            self.set &= !(1u8 << i);
            self.at[i] = OFF;
        }
        if self.set == 0 {
            self.bound = OFF;
        }
    }

    /// Stops every timer (CLOSED).
    pub(crate) fn stop_all(&mut self) {
        *self = Timers::default();
    }

    /// The least deadline, the long way.
    #[inline]
    fn least(&self) -> u64 {
        let a = &self.at;
        a[0].min(a[1])
            .min(a[2])
            .min(a[3])
            .min(a[4])
            .min(a[5])
            .min(a[6])
    }

    /// The bound found again: the least deadline (after the timers ran,
    /// so that a timer that fired early wakes next at a real deadline).
    #[inline]
    pub(crate) fn settle(&mut self) {
        self.bound = self.least();
    }

    /// The earliest deadline set (the walk).
    #[inline]
    pub(crate) fn earliest(&self) -> Option<Instant> {
        (self.set != 0).then(|| Instant::from_nanos(self.least()))
    }

    /// When to wake at the latest: at or before the earliest deadline set
    /// (it, after [`settle`](Self::settle) and until one moves later or
    /// stops), `None` when none is.
    #[inline]
    pub(crate) fn wake_at(&self) -> Option<Instant> {
        (self.set != 0).then(|| Instant::from_nanos(self.bound))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ALL: [Timer; TIMERS] = [
        Timer::Rtx,
        Timer::Tlp,
        Timer::Reo,
        Timer::Delack,
        Timer::Persist,
        Timer::Keepalive,
        Timer::TimeWait,
    ];

    proptest! {
        /// After any sequence of changes, each timer reads what was last
        /// set, the earliest is the least of those set (a deadline at
        /// the end of time included), the wake-up is at or before it and
        /// exactly it once settled, and no wake-up is asked for with
        /// nothing set.
        #[test]
        fn earliest_is_the_least_deadline_set(
            changes in proptest::collection::vec(
                (0..TIMERS, proptest::option::of(prop_oneof![
                    any::<u64>(),
                    Just(u64::MAX),
                    Just(0u64),
                    0u64..100,
                ]), any::<bool>()),
                0..40,
            ),
        ) {
            let mut timers = Timers::default();
            let mut model: [Option<Instant>; TIMERS] = [None; TIMERS];
            for (i, at, settle) in changes {
                let at = at.map(Instant::from_nanos);
                timers.set(ALL[i], at);
                model[i] = at;
                if settle {
                    timers.settle();
                }
                for (j, t) in ALL.into_iter().enumerate() {
                    prop_assert_eq!(timers.get(t), model[j]);
                }
                let least = model.into_iter().flatten().min();
                prop_assert_eq!(timers.earliest(), least);
                match (timers.wake_at(), least) {
                    (Some(w), Some(l)) => {
                        prop_assert!(w <= l);
                        if settle {
                            prop_assert_eq!(w, l);
                        }
                    }
                    (w, l) => prop_assert_eq!(w, l),
                }
            }
            timers.stop(&[ALL[0], ALL[1], ALL[2]]);
            for m in model.iter_mut().take(3) {
                *m = None;
            }
            for (j, t) in ALL.into_iter().enumerate() {
                prop_assert_eq!(timers.get(t), model[j]);
            }
            let least = model.into_iter().flatten().min();
            prop_assert_eq!(timers.earliest(), least);
            prop_assert!(timers.wake_at().is_some() == least.is_some());
            timers.settle();
            prop_assert_eq!(timers.wake_at(), least);
            timers.stop_all();
            prop_assert_eq!(timers.earliest(), None);
            prop_assert_eq!(timers.wake_at(), None);
        }
    }
}
