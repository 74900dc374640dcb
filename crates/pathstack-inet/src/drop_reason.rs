//! Typed drop reasons and their counters.
//!
//! Every protocol in this crate has its own reason enum (`EthDropReason`,
//! `ArpDropReason`, `Ipv4DropReason`, ...). They all implement [`DropReason`],
//! which gives each variant a stable short name (`as_str`) for statistics and
//! a dense index, so that [`DropCounts`] can count them in a fixed array
//! without allocating: the design rule is that nothing from the wire panics,
//! and every packet that is not delivered is counted with a reason.

use std::fmt;
use std::marker::PhantomData;

/// Most variants any reason enum of this crate may have (the size of the
/// counter array in [`DropCounts`]). Checked by a unit test for every enum.
pub const MAX_REASONS: usize = 32;

/// A reason for dropping a packet, with a stable name for counters.
pub trait DropReason: Copy + fmt::Debug + 'static {
    /// Every variant, in index order.
    const ALL: &'static [Self];
    /// A stable short name (`snake_case`), used as a counter label. Never
    /// changes once published: dashboards and tests key on it.
    fn as_str(self) -> &'static str;
    /// The position of this variant in [`DropReason::ALL`].
    fn index(self) -> usize;
}

/// Per-reason drop counters in a fixed array (no allocation, no hashing).
#[derive(Clone)]
pub struct DropCounts<R: DropReason> {
    counts: [u64; MAX_REASONS],
    _reason: PhantomData<R>,
}

impl<R: DropReason> Default for DropCounts<R> {
    fn default() -> Self {
        DropCounts {
            counts: [0; MAX_REASONS],
            _reason: PhantomData,
        }
    }
}

impl<R: DropReason> DropCounts<R> {
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
        // An index past the array would be a bug in a reason enum (caught by
        // the unit tests); saturate into the last slot rather than panic.
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

    /// `(name, count)` for every reason, zero counts included, in index order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        R::ALL.iter().map(move |r| (r.as_str(), self.get(*r)))
    }
}

impl<R: DropReason> fmt::Debug for DropCounts<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().filter(|(_, n)| *n > 0))
            .finish()
    }
}

/// Implements [`DropReason`] for a fieldless enum: `ALL`, `as_str` and `index`
/// from one list of `Variant => "name"` pairs, so the three cannot disagree.
macro_rules! drop_reasons {
    ($ty:ident, $prefix:literal { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $crate::drop_reason::DropReason for $ty {
            const ALL: &'static [Self] = &[$($ty::$variant),+];
            fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }
            fn index(self) -> usize {
                self as usize
            }
        }
        impl $ty {
            /// The stable short name of this reason, for counters.
            pub fn as_str(self) -> &'static str {
                <Self as $crate::drop_reason::DropReason>::as_str(self)
            }
            /// The reason as the path core counts it, qualified by the
            /// protocol (`"<protocol>.<name>"`), so that per-path and
            /// per-module drop tables say which layer dropped.
            pub const fn qualified(self) -> pathstack_core::ids::DropReason {
                match self {
                    $($ty::$variant => pathstack_core::ids::DropReason::new(concat!($prefix, ".", $name))),+
                }
            }
        }
    };
}
pub(crate) use drop_reasons;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Checks the invariants every reason enum must hold: dense indices, fits
    /// the counter array, unique snake_case names.
    pub(crate) fn check_reason_enum<R: DropReason>() {
        assert!(R::ALL.len() <= MAX_REASONS, "{:?}", R::ALL);
        let mut names = std::collections::HashSet::new();
        for (i, r) in R::ALL.iter().enumerate() {
            assert_eq!(r.index(), i, "{r:?}");
            let name = r.as_str();
            assert!(names.insert(name), "duplicate name {name}");
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
        }
    }

    #[test]
    fn every_reason_enum_is_well_formed() {
        check_reason_enum::<crate::wire::eth::EthDropReason>();
        check_reason_enum::<crate::wire::arp::ArpDropReason>();
        check_reason_enum::<crate::wire::ipv4::Ipv4DropReason>();
        check_reason_enum::<crate::reassembly::ReassemblyDropReason>();
        check_reason_enum::<crate::wire::icmp::IcmpDropReason>();
        check_reason_enum::<crate::icmp_suppression::ErrorSuppressed>();
        check_reason_enum::<crate::wire::udp::UdpDropReason>();
    }

    #[test]
    fn counts_by_reason() {
        use crate::wire::eth::EthDropReason;
        let mut c = DropCounts::<EthDropReason>::new();
        c.count(EthDropReason::NotForUs);
        c.add(EthDropReason::Truncated, 3);
        assert_eq!(c.get(EthDropReason::NotForUs), 1);
        assert_eq!(c.get(EthDropReason::Truncated), 3);
        assert_eq!(c.total(), 4);
        let named: Vec<_> = c.iter().filter(|(_, n)| *n > 0).collect();
        assert_eq!(named, vec![("truncated", 3), ("not_for_us", 1)]);
    }
}
