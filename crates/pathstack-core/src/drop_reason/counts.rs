//! Drop counters: per reason enum in a fixed array, and per carrier in a
//! path's or module's table.

use super::{DropReason, Reason, MAX_REASONS};
use std::fmt;
use std::marker::PhantomData;

/// Per-reason drop counters of one reason enum, in a fixed array (no
/// allocation, no hashing): for a layer's own bookkeeping, such as the
/// reassembler's or the ARP cache's.
#[derive(Clone)]
pub struct DropCounts<R: Reason> {
    counts: [u64; MAX_REASONS],
    _reason: PhantomData<R>,
}

impl<R: Reason> Default for DropCounts<R> {
    fn default() -> Self {
        DropCounts {
            counts: [0; MAX_REASONS],
            _reason: PhantomData,
        }
    }
}

impl<R: Reason> DropCounts<R> {
    /// All counters at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one drop for `reason`.
    #[inline]
    pub fn count(&mut self, reason: R) {
        self.add(reason, 1);
    }

    /// Counts `n` drops for `reason`.
    #[inline]
    pub fn add(&mut self, reason: R, n: u64) {
        // `drop_reasons!` checks at compile time that every index fits;
        // saturate into the last slot rather than panic all the same.
        let i = reason.index().min(MAX_REASONS - 1);
        self.counts[i] = self.counts[i].saturating_add(n);
    }

    /// Drops counted for `reason`.
    pub fn get(&self, reason: R) -> u64 {
        self.counts[reason.index().min(MAX_REASONS - 1)]
    }

    /// Sum over all reasons.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// `(short name, count)` for every reason, zero counts included, in
    /// index order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        R::ALL.iter().map(move |r| (r.as_str(), self.get(*r)))
    }
}

impl<R: Reason> fmt::Debug for DropCounts<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().filter(|(_, n)| *n > 0))
            .finish()
    }
}

/// A path's or module's drops by [`DropReason`], in first-seen order. Small
/// and linear: one path sees few reasons, of any layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DropTally {
    counts: Vec<(DropReason, u64)>,
}

impl DropTally {
    /// Adds one drop for `reason`.
    pub fn add(&mut self, reason: impl Into<DropReason>) {
        let reason = reason.into();
        match self.counts.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((reason, 1)),
        }
    }
    /// Drops counted for `reason`.
    pub fn get(&self, reason: impl Into<DropReason>) -> u64 {
        let reason = reason.into();
        self.counts
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, n)| *n)
    }
    /// Total over all reasons.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }
    /// (reason, count) pairs in first-seen order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        self.counts.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::drop_reasons! {
        /// Reasons of a test layer.
        enum FrameDropReason in "frame" {
            /// First.
            Truncated => "truncated",
            /// Second.
            NotForUs => "not_for_us",
        }
    }

    #[test]
    fn counts_by_reason() {
        let mut c = DropCounts::<FrameDropReason>::new();
        c.count(FrameDropReason::NotForUs);
        c.add(FrameDropReason::Truncated, 3);
        assert_eq!(c.get(FrameDropReason::NotForUs), 1);
        assert_eq!(c.get(FrameDropReason::Truncated), 3);
        assert_eq!(c.total(), 4);
        let named: Vec<_> = c.iter().filter(|(_, n)| *n > 0).collect();
        assert_eq!(named, vec![("truncated", 3), ("not_for_us", 1)]);
    }

    #[test]
    fn tally_keeps_first_seen_order() {
        let mut t = DropTally::default();
        t.add(FrameDropReason::NotForUs);
        t.add(FrameDropReason::Truncated);
        t.add(FrameDropReason::NotForUs);
        assert_eq!(t.get(FrameDropReason::NotForUs), 2);
        assert_eq!(t.get(FrameDropReason::Truncated), 1);
        assert_eq!(t.total(), 3);
        let names: Vec<_> = t.iter().map(|(r, n)| (r.as_str(), n)).collect();
        assert_eq!(names, vec![("frame.not_for_us", 2), ("frame.truncated", 1)]);
    }
}
