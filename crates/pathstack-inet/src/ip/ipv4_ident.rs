//! The Identification field of the datagrams a host sends (RFC 791 §3.2;
//! RFC 6864 for what uniqueness is still required).

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

/// The Identification counter of one sending host (RFC 791 §3.2: unique per
/// source, destination and protocol while the datagram may be alive).
/// A single wrapping counter satisfies that for all destinations at once;
/// RFC 6864 §4.1 relaxes uniqueness for atomic (DF, unfragmented) datagrams.
///
/// Cloning shares the counter: `IP` gives each of its stages a clone when
/// the path is created, so a send takes the next value through a typed
/// handle instead of reaching into the module (no lookup, no downcast on
/// the per-message path, as [`Generation`](pathstack_core::generation)
/// does for cached answers).
#[derive(Clone, Debug, Default)]
pub struct IdentCounter {
    next: Arc<AtomicU16>,
}

impl IdentCounter {
    /// A counter starting at `seed` (use something unpredictable per boot,
    /// RFC 6864 §5 / RFC 7739 warn about predictable IDs).
    pub fn new(seed: u16) -> Self {
        IdentCounter {
            next: Arc::new(AtomicU16::new(seed)),
        }
    }
    /// The next identification value.
    #[inline]
    pub fn next_ident(&self) -> u16 {
        // A stack and all its stages run on one thread (`Stack` is `Send`,
        // not shared); the atomic only lets the module and its stages
        // share the counter without `unsafe`. A load and a store (no
        // locked read-modify-write) are enough for one thread.
        let id = self.next.load(Ordering::Relaxed);
        self.next.store(id.wrapping_add(1), Ordering::Relaxed);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_around() {
        let ids = IdentCounter::new(u16::MAX);
        assert_eq!((ids.next_ident(), ids.next_ident()), (u16::MAX, 0));
    }

    #[test]
    fn clones_share_one_sequence() {
        let module = IdentCounter::new(7);
        let stage = module.clone();
        assert_eq!(
            [module.next_ident(), stage.next_ident(), module.next_ident()],
            [7, 8, 9]
        );
    }
}
