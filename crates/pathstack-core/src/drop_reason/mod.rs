//! Why messages are dropped: typed reasons and their counters.
//!
//! The design rule is that nothing from the wire panics and every message
//! that is not delivered is counted with a reason. Every layer declares its
//! reasons as a fieldless enum with [`drop_reasons!`](crate::drop_reasons)
//! (`CoreDropReason`, `HdrDropReason`, `Ipv4DropReason`, `LanceDropReason`
//! …), which implements [`Reason`]: each variant gets a stable short name
//! (`"bad_checksum"`), a layer-qualified name (`"ipv4.bad_checksum"`) and a
//! dense index.
//!
//! A stage that drops hands the stack a [`DropReason`], the runtime carrier
//! that every layer's reason converts into (`Verdict::Drop(r.into())`). It
//! can only be made from a typed reason, so every drop counter names a
//! variant some layer declared; paths and modules count carriers in a
//! [`DropTally`]. Inside a layer, [`DropCounts`] counts one enum's reasons
//! in a fixed array, without allocating.

use std::fmt;

mod core_reason;
mod counts;

pub use core_reason::CoreDropReason;
pub use counts::{DropCounts, DropTally};

/// Most variants a reason enum may have (the size of the counter array in
/// [`DropCounts`]). [`drop_reasons!`](crate::drop_reasons) checks it at
/// compile time.
pub const MAX_REASONS: usize = 32;

/// A reason for dropping a message, with stable names for counters.
/// Implemented by [`drop_reasons!`](crate::drop_reasons), which keeps
/// `ALL`, the names and the indices from disagreeing.
pub trait Reason: Copy + fmt::Debug + 'static {
    /// Every variant, in index order.
    const ALL: &'static [Self];
    /// A stable short name (`snake_case`), unique within the enum. Never
    /// changes once published: dashboards and tests key on it.
    fn as_str(self) -> &'static str;
    /// The name qualified by the layer (`"ipv4.no_route"`), unique across
    /// layers: the name the stack's drop tables count under.
    fn qualified_name(self) -> &'static str;
    /// The qualified name behind one more reference: a thin pointer, which
    /// keeps [`DropReason`] one word wide.
    fn qualified_ref(self) -> &'static &'static str;
    /// The position of this variant in [`Reason::ALL`].
    fn index(self) -> usize;
}

/// Why the stack dropped a message, as the path core carries and counts it:
/// a [`Reason`] of some layer, known by its qualified name
/// (`"ipv4.bad_checksum"`, `"path.sink_full"`). Made only from a typed
/// reason (`From<R: Reason>`); compare it with one directly
/// (`reason == Ipv4DropReason::NoRoute`).
///
/// It is one word (a thin pointer to the name), so a stage's
/// [`Verdict`](crate::stage::Verdict) fits in two registers and is returned
/// in them rather than through memory, on every stage call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DropReason(&'static &'static str);

impl DropReason {
    /// The reason's qualified name, the counter key.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
}

impl<R: Reason> From<R> for DropReason {
    #[inline]
    fn from(reason: R) -> Self {
        DropReason(reason.qualified_ref())
    }
}

impl<R: Reason> PartialEq<R> for DropReason {
    fn eq(&self, reason: &R) -> bool {
        *self.0 == reason.qualified_name()
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Checks the short names of a reason enum at compile time (called by
/// [`drop_reasons!`](crate::drop_reasons) in a `const`): each non-empty,
/// `snake_case`, and unique within the enum. Panics otherwise, which in a
/// `const` is a compile error.
#[doc(hidden)]
pub const fn check_names(names: &[&str]) {
    let mut i = 0;
    while i < names.len() {
        let name = names[i].as_bytes();
        assert!(!name.is_empty(), "a drop reason name is empty");
        let mut k = 0;
        while k < name.len() {
            let b = name[k];
            assert!(
                b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_',
                "a drop reason name is not snake_case"
            );
            k += 1;
        }
        let mut j = 0;
        while j < i {
            assert!(
                !same_bytes(names[j].as_bytes(), name),
                "two drop reasons of one enum share a name"
            );
            j += 1;
        }
        i += 1;
    }
}

const fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Declares a reason enum and implements [`Reason`] for it from one list
/// of `Variant => "name"` pairs, so that `ALL`, the names and the indices
/// cannot disagree. The enum derives `Clone, Copy, Debug, PartialEq, Eq,
/// Hash`; further attributes (docs, `#[derive(thiserror::Error)]`, per
/// variant `#[error(..)]`) pass through. The names are checked at compile
/// time (`snake_case`, unique), and so is the variant count
/// ([`MAX_REASONS`]).
///
/// Most enums belong to one layer, named after `in`; every qualified name
/// is then `"<layer>.<name>"`:
///
/// ```
/// pathstack_core::drop_reasons! {
///     /// Why a frame of the toy protocol was dropped.
///     pub enum ToyDropReason in "toy" {
///         /// Shorter than its header.
///         Short => "short",
///     }
/// }
/// use pathstack_core::drop_reason::Reason;
/// assert_eq!(ToyDropReason::Short.qualified_name(), "toy.short");
/// assert_eq!(pathstack_core::DropReason::from(ToyDropReason::Short), ToyDropReason::Short);
/// ```
///
/// An enum whose reasons belong to several layers gives each variant its
/// own: `Variant => "layer" . "name"`.
#[macro_export]
macro_rules! drop_reasons {
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident in $layer:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $name:literal ),+ $(,)?
        }
    ) => {
        $crate::drop_reasons! {
            $(#[$meta])*
            $vis enum $ty {
                $( $(#[$vmeta])* $variant => $layer . $name ),+
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $ty:ident {
            $( $(#[$vmeta:meta])* $variant:ident => $layer:literal . $name:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $ty {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $crate::drop_reason::Reason for $ty {
            const ALL: &'static [Self] = &[$($ty::$variant),+];
            fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }
            fn qualified_name(self) -> &'static str {
                self.qualified_ref()
            }
            #[inline]
            fn qualified_ref(self) -> &'static &'static str {
                match self { $($ty::$variant => &concat!($layer, ".", $name)),+ }
            }
            fn index(self) -> usize {
                self as usize
            }
        }

        impl $ty {
            /// The stable short name of this reason, for counters.
            // A convenience without the trait in scope; a private enum
            // (in a test) may never call it.
            #[allow(dead_code)]
            pub fn as_str(self) -> &'static str {
                <Self as $crate::drop_reason::Reason>::as_str(self)
            }
        }

        const _: () = {
            assert!(
                <$ty as $crate::drop_reason::Reason>::ALL.len() <= $crate::drop_reason::MAX_REASONS,
                "more drop reasons than DropCounts can count"
            );
            $crate::drop_reason::check_names(&[$($name),+]);
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::drop_reasons! {
        /// Reasons of a test layer.
        enum TestDropReason in "test" {
            /// First.
            Short => "short",
            /// Second.
            BadSum => "bad_sum",
        }
    }

    #[test]
    fn the_carrier_is_the_qualified_name() {
        let r = DropReason::from(TestDropReason::BadSum);
        assert_eq!(r.as_str(), "test.bad_sum");
        assert_eq!(r.to_string(), "test.bad_sum");
        assert_eq!(r, TestDropReason::BadSum);
        assert_ne!(r, TestDropReason::Short);
        assert_eq!(TestDropReason::BadSum.as_str(), "bad_sum");
    }

    #[test]
    fn indices_follow_the_declaration() {
        assert_eq!(
            TestDropReason::ALL,
            &[TestDropReason::Short, TestDropReason::BadSum]
        );
        for (i, r) in TestDropReason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
    }

    #[test]
    fn good_names_pass() {
        check_names(&["truncated", "bad_checksum", "ttl0"]);
    }

    #[test]
    #[should_panic(expected = "share a name")]
    fn duplicate_names_are_refused() {
        check_names(&["truncated", "bad_checksum", "truncated"]);
    }

    #[test]
    #[should_panic(expected = "snake_case")]
    fn names_must_be_snake_case() {
        check_names(&["BadChecksum"]);
    }

    #[test]
    #[should_panic(expected = "empty")]
    fn names_must_not_be_empty() {
        check_names(&[""]);
    }
}

#[cfg(test)]
mod size {
    #[test]
    fn a_verdict_fits_in_two_registers() {
        // Returned by every stage call: two words are returned in
        // registers, three would go through memory.
        assert_eq!(std::mem::size_of::<super::DropReason>(), 8);
        assert!(std::mem::size_of::<crate::stage::Verdict>() <= 16);
    }
}
