//! A token bucket for limiting ICMP error generation (RFC 1812 §4.3.2.8
//! "Rate Limiting"; RFC 4443 §2.4 (f) describes the same token-bucket
//! scheme for ICMPv6), driven by the caller's clock.
//!
//! Tokens are kept in nano-tokens (1 token = 10⁹) so that any rate in
//! tokens per second refills exactly with integer arithmetic from
//! nanosecond time, and nothing can overflow or panic.

use pathstack_core::{Duration, Instant};

const NANO: u128 = 1_000_000_000;

/// A token bucket: `rate_per_sec` tokens accrue per second up to `burst`;
/// each sent error takes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    rate_per_sec: u32,
    burst: u32,
    /// Current tokens × 10⁹.
    nano_tokens: u128,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket. `rate_per_sec` = 0 allows only the initial burst.
    pub fn new(rate_per_sec: u32, burst: u32, now: Instant) -> Self {
        TokenBucket {
            rate_per_sec,
            burst,
            nano_tokens: u128::from(burst) * NANO,
            last: now,
        }
    }

    /// Linux's default ICMP error limit: 1,000 per second, burst 50
    /// (`net.ipv4.icmp_msgs_per_sec` / `icmp_msgs_burst`).
    pub fn icmp_default(now: Instant) -> Self {
        TokenBucket::new(1000, 50, now)
    }

    fn refill(&mut self, now: Instant) {
        let elapsed: Duration = now.saturating_since(self.last);
        // Time only moves forward for the bucket; an earlier `now` adds nothing.
        if now > self.last {
            self.last = now;
        }
        let cap = u128::from(self.burst) * NANO;
        let add = u128::from(elapsed.as_nanos()) * u128::from(self.rate_per_sec);
        self.nano_tokens = self.nano_tokens.saturating_add(add).min(cap);
    }

    /// Takes one token if available at `now`.
    pub fn try_acquire(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.nano_tokens >= NANO {
            self.nano_tokens -= NANO;
            true
        } else {
            false
        }
    }

    /// Whole tokens available at `now` (refills first).
    pub fn available(&mut self, now: Instant) -> u32 {
        self.refill(now);
        (self.nano_tokens / NANO) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn burst_then_rate() {
        let t0 = Instant::from_millis(1000);
        let mut b = TokenBucket::new(10, 3, t0);
        assert!((0..3).all(|_| b.try_acquire(t0)));
        assert!(!b.try_acquire(t0));
        // 10 per second: one token every 100 ms.
        assert!(!b.try_acquire(t0 + Duration::from_millis(99)));
        assert!(b.try_acquire(t0 + Duration::from_millis(100)));
        assert!(!b.try_acquire(t0 + Duration::from_millis(100)));
        // A long pause refills only up to the burst.
        assert_eq!(b.available(t0 + Duration::from_secs(3600)), 3);
    }

    #[test]
    fn time_going_backwards_is_harmless() {
        let mut b = TokenBucket::new(1, 1, Instant::from_millis(5000));
        assert!(b.try_acquire(Instant::from_millis(5000)));
        assert!(!b.try_acquire(Instant::from_millis(0)));
        assert!(b.try_acquire(Instant::from_millis(6000)));
    }

    proptest! {
        /// Over any schedule, sends never exceed burst + rate × elapsed.
        #[test]
        fn never_exceeds_budget(rate in 0u32..5000, burst in 0u32..100, steps in proptest::collection::vec(0u64..10_000_000, 1..300)) {
            let t0 = Instant::ZERO;
            let mut b = TokenBucket::new(rate, burst, t0);
            let mut now = t0;
            let mut sent = 0u128;
            for dt in steps {
                now = now + Duration::from_nanos(dt);
                if b.try_acquire(now) { sent += 1; }
                let budget = u128::from(burst) + u128::from(now.as_nanos()) * u128::from(rate) / NANO;
                prop_assert!(sent <= budget);
            }
        }
    }
}
