//! The observed rate of a path's events (arrivals at its source queues,
//! departures from its sink queues): an exponentially weighted moving
//! average of the interval between events, the input of deadlines computed
//! from queue state (thesis §5.2.2.2). One subtraction, one shift and two
//! stores per event.

use crate::time::{Duration, Instant};

/// Weight of a new sample: 1/2^`SHIFT` (1/8, as TCP's SRTT, RFC 6298 §2).
const SHIFT: u32 = 3;

/// Moving average of the interval between events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventRate {
    last: Option<Instant>,
    /// Average interval in nanoseconds; `None` until two events were seen.
    interval_ns: Option<u64>,
}

impl EventRate {
    /// No event seen yet (what a path that never ran as realtime shows).
    pub const UNSEEN: EventRate = EventRate {
        last: None,
        interval_ns: None,
    };

    /// Records an event at `now`.
    #[inline]
    pub fn record(&mut self, now: Instant) {
        if let Some(last) = self.last {
            let sample = now.as_nanos().saturating_sub(last.as_nanos());
            self.interval_ns = Some(match self.interval_ns {
                None => sample,
                Some(avg) => avg - (avg >> SHIFT) + (sample >> SHIFT),
            });
        }
        self.last = Some(now);
    }

    /// When the last event was seen.
    pub fn last(&self) -> Option<Instant> {
        self.last
    }

    /// The average interval between events, once two were seen.
    pub fn interval(&self) -> Option<Duration> {
        self.interval_ns.map(Duration::from_nanos)
    }

    /// When the `n`th event after the last one is due at the observed rate.
    pub fn due(&self, n: u64) -> Option<Instant> {
        let (last, iv) = (self.last?, self.interval_ns?);
        Some(Instant::from_nanos(
            last.as_nanos().saturating_add(iv.saturating_mul(n)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_on_a_steady_interval() {
        let mut r = EventRate::default();
        assert_eq!(r.due(1), None);
        r.record(Instant::from_millis(0));
        assert_eq!(r.interval(), None, "one event is no rate");
        for k in 1..=50 {
            r.record(Instant::from_millis(10 * k));
        }
        assert_eq!(r.interval(), Some(Duration::from_millis(10)));
        assert_eq!(r.due(3), Some(Instant::from_millis(530)));
        // A burst (interval 0) pulls the average down by 1/8 per event.
        r.record(Instant::from_millis(500));
        assert_eq!(r.interval(), Some(Duration::from_micros(8750)));
    }
}
