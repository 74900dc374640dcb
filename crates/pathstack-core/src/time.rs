//! Stack time: a monotonic nanosecond clock that tests can drive by hand.
//!
//! The stack never reads the wall clock itself. The caller passes `now` into
//! [`crate::Stack::poll`], as smoltcp does, so tests run on virtual time and
//! the same inputs always produce the same outputs.

use std::fmt;
use std::ops::{Add, Sub};

/// A point in stack time, in nanoseconds since an arbitrary origin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

/// A span of stack time, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

impl Instant {
    /// The origin of stack time.
    pub const ZERO: Instant = Instant(0);

    /// An instant `ns` nanoseconds after the origin.
    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    /// An instant `ms` milliseconds after the origin.
    pub const fn from_millis(ms: u64) -> Self {
        Instant(ms * 1_000_000)
    }
    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// The current time of a process-wide monotonic clock (for real devices).
    pub fn now() -> Self {
        use std::sync::OnceLock;
        static ORIGIN: OnceLock<std::time::Instant> = OnceLock::new();
        let origin = *ORIGIN.get_or_init(std::time::Instant::now);
        Instant(origin.elapsed().as_nanos() as u64)
    }
    /// Time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration(0);
    /// A span of `ns` nanoseconds.
    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    /// A span of `us` microseconds.
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    /// A span of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    /// A span of `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// The span in nanoseconds.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, other: Instant) -> Duration {
        self.saturating_since(other)
    }
}

impl From<std::time::Duration> for Duration {
    /// Saturates at `u64::MAX` nanoseconds (about 584 years).
    fn from(d: std::time::Duration) -> Self {
        // In 64-bit steps, not through `as_nanos`' `u128`: TCP converts its
        // configured delays each time it arms a timer.
        Duration(
            d.as_secs()
                .checked_mul(1_000_000_000)
                .and_then(|n| n.checked_add(u64::from(d.subsec_nanos())))
                .unwrap_or(u64::MAX),
        )
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        std::time::Duration::from_nanos(d.0)
    }
}

/// An instant given as the time since the clock's zero (a host's start),
/// so that std code can set a simulated clock with the std type.
impl From<std::time::Duration> for Instant {
    /// Saturates like `Duration`'s conversion.
    fn from(d: std::time::Duration) -> Self {
        Instant(Duration::from(d).0)
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000 {
            write!(
                f,
                "{}.{:03}ms",
                self.0 / 1_000_000,
                (self.0 / 1_000) % 1_000
            )
        } else {
            write!(f, "{}.{:03}us", self.0 / 1_000, self.0 % 1_000)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Duration;

    #[test]
    fn std_durations_convert_exactly_and_saturate() {
        for d in [
            std::time::Duration::ZERO,
            std::time::Duration::from_nanos(1),
            std::time::Duration::new(1, 500_000_000),
            std::time::Duration::new(18_446_744_073, 709_551_615),
        ] {
            assert_eq!(Duration::from(d).0 as u128, d.as_nanos());
        }
        assert_eq!(
            Duration::from(std::time::Duration::new(18_446_744_073, 709_551_616)).0,
            u64::MAX
        );
        assert_eq!(Duration::from(std::time::Duration::MAX).0, u64::MAX);
    }
}
