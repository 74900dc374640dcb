//! TCP sequence numbers and their modular arithmetic (RFC 9293 §3.4).
//!
//! Sequence numbers live in a space of 2^32 that wraps, so "less than"
//! means "less than by fewer than 2^31": `a < b` iff the signed 32-bit
//! distance `b - a` is positive (the comparison of RFC 1982 §3.2 serial
//! number arithmetic, which RFC 9293 §3.4 uses implicitly). Two numbers
//! exactly 2^31 apart are unordered; each comparison then answers false
//! (except `!=`), as RFC 1982 leaves the case undefined.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A TCP sequence (or acknowledgment) number: a point in the wrapping
/// 32-bit sequence space of RFC 9293 §3.4.
///
/// Deliberately not `PartialOrd`: the order is not total (it is not
/// transitive across more than half the space), so it is spelled out by
/// [`lt`](Self::lt) and friends rather than by `<`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// The signed distance from `other` to `self`, `self - other`, in
    /// (-2^31, 2^31]; -2^31 (the unordered case) comes back as `i32::MIN`.
    #[inline]
    pub fn signed_diff(self, other: SeqNumber) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }

    /// `self < other` in sequence space (RFC 9293 §3.4 "=<" family).
    #[inline]
    pub fn lt(self, other: SeqNumber) -> bool {
        let d = other.signed_diff(self);
        d > 0
    }

    /// `self <= other` in sequence space.
    #[inline]
    pub fn le(self, other: SeqNumber) -> bool {
        self == other || self.lt(other)
    }

    /// `self > other` in sequence space.
    #[inline]
    pub fn gt(self, other: SeqNumber) -> bool {
        other.lt(self)
    }

    /// `self >= other` in sequence space.
    #[inline]
    pub fn ge(self, other: SeqNumber) -> bool {
        other.le(self)
    }

    /// Whether `self` lies in the window `[start, start + len)`
    /// (RFC 9293 §3.4: "RCV.NXT =< SEG.SEQ < RCV.NXT+RCV.WND"). A zero-length
    /// window contains nothing. `len` may be up to 2^32 - 1 (the unordered
    /// half-space is not a problem here: the test is a single unsigned
    /// offset comparison, exact for every `len`).
    #[inline]
    pub fn in_window(self, start: SeqNumber, len: u32) -> bool {
        self.0.wrapping_sub(start.0) < len
    }

    /// The later of two sequence numbers (`self` if they are unordered).
    #[inline]
    pub fn max(self, other: SeqNumber) -> SeqNumber {
        if other.gt(self) {
            other
        } else {
            self
        }
    }

    /// The earlier of two sequence numbers (`self` if they are unordered).
    #[inline]
    pub fn min(self, other: SeqNumber) -> SeqNumber {
        if other.lt(self) {
            other
        } else {
            self
        }
    }
}

impl Add<u32> for SeqNumber {
    type Output = SeqNumber;
    /// Advances by `n` octets, wrapping modulo 2^32.
    #[inline]
    fn add(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(n))
    }
}

impl AddAssign<u32> for SeqNumber {
    #[inline]
    fn add_assign(&mut self, n: u32) {
        *self = *self + n;
    }
}

impl Sub for SeqNumber {
    type Output = u32;
    /// The forward distance from `rhs` to `self` modulo 2^32: the number of
    /// octets `n` such that `rhs + n == self`. Meaningful when
    /// `rhs.le(self)`; otherwise it is the long way round.
    #[inline]
    fn sub(self, rhs: SeqNumber) -> u32 {
        self.0.wrapping_sub(rhs.0)
    }
}

impl Sub<u32> for SeqNumber {
    type Output = SeqNumber;
    /// `n` octets earlier, modulo 2^32.
    #[inline]
    fn sub(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_sub(n))
    }
}

impl From<u32> for SeqNumber {
    fn from(v: u32) -> Self {
        SeqNumber(v)
    }
}

impl From<SeqNumber> for u32 {
    fn from(s: SeqNumber) -> Self {
        s.0
    }
}

impl fmt::Display for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const HALF: u32 = 1 << 31;

    #[test]
    fn ordering_across_the_wrap() {
        let a = SeqNumber(u32::MAX - 5);
        let b = a + 10;
        assert_eq!(b, SeqNumber(4));
        assert!(a.lt(b) && a.le(b) && b.gt(a) && b.ge(a));
        assert!(!b.lt(a) && !a.gt(b));
        assert_eq!(b - a, 10);
        assert_eq!(a.max(b), b);
        assert_eq!(a.min(b), a);
    }

    #[test]
    fn equal_is_le_and_ge_not_lt() {
        let a = SeqNumber(7);
        assert!(a.le(a) && a.ge(a) && !a.lt(a) && !a.gt(a));
    }

    #[test]
    fn half_space_apart_is_unordered() {
        let a = SeqNumber(0);
        let b = a + HALF;
        assert!(!a.lt(b) && !b.lt(a) && !a.le(b) && !a.gt(b));
        assert_ne!(a, b);
    }

    #[test]
    fn window_edges() {
        let start = SeqNumber(u32::MAX - 1);
        assert!(start.in_window(start, 1));
        assert!(!start.in_window(start, 0));
        assert!((start + 3).in_window(start, 4));
        assert!(!(start + 4).in_window(start, 4));
        assert!(!(start + u32::MAX).in_window(start, 4)); // start - 1
        assert!((start + (u32::MAX - 1)).in_window(start, u32::MAX));
    }

    #[test]
    fn add_assign_and_conversions() {
        let mut s = SeqNumber::from(u32::MAX);
        s += 2;
        assert_eq!(u32::from(s), 1);
        assert_eq!(s.to_string(), "1");
    }

    proptest! {
        /// Antisymmetry and totality within 2^31: for a distance d in
        /// (0, 2^31), exactly one of a<b, b<a holds, and it is a<b.
        #[test]
        fn antisymmetric_within_half(a: u32, d in 1u32..HALF) {
            let (a, b) = (SeqNumber(a), SeqNumber(a) + d);
            prop_assert!(a.lt(b));
            prop_assert!(!b.lt(a));
            prop_assert!(b.gt(a) && b.ge(a) && a.le(b));
            prop_assert_eq!(b - a, d);
            prop_assert_eq!(b.signed_diff(a), d as i32);
        }

        /// Translation invariance: adding the same offset (across the wrap)
        /// to both sides changes no comparison and no distance.
        #[test]
        fn translation_invariant(a: u32, b: u32, t: u32) {
            let (a, b) = (SeqNumber(a), SeqNumber(b));
            let (a2, b2) = (a + t, b + t);
            prop_assert_eq!(a.lt(b), a2.lt(b2));
            prop_assert_eq!(a.le(b), a2.le(b2));
            prop_assert_eq!(a.gt(b), a2.gt(b2));
            prop_assert_eq!(a.ge(b), a2.ge(b2));
            prop_assert_eq!(b - a, b2 - a2);
        }

        /// lt/gt and le/ge are mirror images, and le is lt or equal.
        #[test]
        fn duals(a: u32, b: u32) {
            let (a, b) = (SeqNumber(a), SeqNumber(b));
            prop_assert_eq!(a.lt(b), b.gt(a));
            prop_assert_eq!(a.le(b), b.ge(a));
            prop_assert_eq!(a.le(b), a.lt(b) || a == b);
            prop_assert!(!(a.lt(b) && b.lt(a)));
        }

        /// `in_window` agrees with the RFC's two comparisons
        /// start =< s < start+len for windows shorter than 2^31.
        #[test]
        fn window_matches_comparisons(s: u32, start: u32, len in 0u32..HALF) {
            let (s, start) = (SeqNumber(s), SeqNumber(start));
            let rfc = start.le(s) && s.lt(start + len);
            prop_assert_eq!(s.in_window(start, len), rfc);
        }

        /// Add then Sub round-trips for every offset.
        #[test]
        fn add_sub_roundtrip(a: u32, n: u32) {
            prop_assert_eq!((SeqNumber(a) + n) - SeqNumber(a), n);
        }
    }
}
