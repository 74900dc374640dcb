//! The deadlines of one connection's timers (RFC 9293 §3.10.8 and the
//! extensions': RFC 6298's retransmission timer, RFC 8985's reordering
//! timer and tail loss probe, the delayed ACK, persist, keepalive and
//! TIME-WAIT), with the earliest of them kept.
//!
//! The stage asks for the earliest deadline after every segment and every
//! application call (to arm its one timer), far more often than a
//! deadline changes: in a request/response exchange about seven asks per
//! round trip against three or four changes. Walking the seven deadlines
//! on each ask was about 170 instructions per round trip (issue 26); here
//! a change keeps the earliest up to date, and the ask is one load. The
//! seed's point (TR 95-02, §2.6) — do the work where it is rare, not on
//! the common path — applied to BSD's callout-per-timer layout.

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

/// The deadlines of a connection's timers and the earliest of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Timers {
    /// Each timer's deadline in nanoseconds, [`OFF`] when not set.
    at: [u64; TIMERS],
    /// Which timers are set (bit per [`Timer`]): a deadline at the very
    /// end of time is set, yet reads as [`OFF`].
    set: u8,
    /// The least of `at`: the invariant every change keeps.
    earliest: u64,
}

impl Default for Timers {
    fn default() -> Self {
        Timers {
            at: [OFF; TIMERS],
            set: 0,
            earliest: OFF,
        }
    }
}

impl Timers {
    /// Timer `t`'s deadline.
    #[inline]
    pub(crate) fn get(&self, t: Timer) -> Option<Instant> {
        let i = t as usize;
        (self.set & (1 << i) != 0).then(|| Instant::from_nanos(self.at[i]))
    }

    /// Sets (or with `None`, stops) timer `t`. Called for several timers
    /// on every ACK, most often to stop one that is off already: a few
    /// instructions then, the walk only when the earliest moves later.
    #[inline(always)]
    pub(crate) fn set(&mut self, t: Timer, at: Option<Instant>) {
        let i = t as usize;
        let bit = 1u8 << i;
        let new = match at {
            Some(t) => t.as_nanos(),
            None => OFF,
        };
        self.set = (self.set & !bit) | if at.is_some() { bit } else { 0 };
        let old = std::mem::replace(&mut self.at[i], new);
        if new <= self.earliest {
            self.earliest = new;
        } else if old == self.earliest {
            self.earliest = self.least();
        }
    }

    /// The least deadline, the long way (the earliest one moved later or
    /// stopped).
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

    /// Stops each of `timers` at once: what [`set`](Self::set) to `None`
    /// of each does, with the earliest deadline found again at most once
    /// (an ACK that leaves nothing in flight stops the retransmission,
    /// reordering and probe timers together).
    #[inline(always)]
    pub(crate) fn stop(&mut self, timers: &[Timer]) {
        let mut held_earliest = false;
        for &t in timers {
            let i = t as usize;
            self.set &= !(1u8 << i);
            held_earliest |= self.at[i] == self.earliest;
            self.at[i] = OFF;
        }
        if held_earliest {
            self.earliest = self.least();
        }
    }

    /// Stops every timer (CLOSED).
    pub(crate) fn stop_all(&mut self) {
        *self = Timers::default();
    }

    /// The earliest deadline set.
    #[inline]
    pub(crate) fn earliest(&self) -> Option<Instant> {
        (self.set != 0).then(|| Instant::from_nanos(self.earliest))
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
        /// set and the earliest is the least of those set (a deadline at
        /// the end of time included).
        #[test]
        fn earliest_is_the_least_deadline_set(
            changes in proptest::collection::vec(
                (0..TIMERS, proptest::option::of(prop_oneof![
                    any::<u64>(),
                    Just(u64::MAX),
                    Just(0u64),
                    0u64..100,
                ])),
                0..40,
            ),
        ) {
            let mut timers = Timers::default();
            let mut model: [Option<Instant>; TIMERS] = [None; TIMERS];
            for (i, at) in changes {
                let at = at.map(Instant::from_nanos);
                timers.set(ALL[i], at);
                model[i] = at;
                for (j, t) in ALL.into_iter().enumerate() {
                    prop_assert_eq!(timers.get(t), model[j]);
                }
                prop_assert_eq!(timers.earliest(), model.into_iter().flatten().min());
            }
            timers.stop(&[ALL[0], ALL[1], ALL[2]]);
            for m in model.iter_mut().take(3) {
                *m = None;
            }
            for (j, t) in ALL.into_iter().enumerate() {
                prop_assert_eq!(timers.get(t), model[j]);
            }
            prop_assert_eq!(timers.earliest(), model.into_iter().flatten().min());
            timers.stop_all();
            prop_assert_eq!(timers.earliest(), None);
        }
    }
}
