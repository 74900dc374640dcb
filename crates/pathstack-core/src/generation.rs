//! Generations: how a stage keeps what its module decided for it, and
//! learns cheaply when that decision may have changed.
//!
//! Scout fixes at path creation what can be fixed then (thesis §2.2); what
//! a module may still change afterwards — a neighbour's link address, a
//! route — a stage can still cache if the module counts its changes. The
//! module bumps its [`Generation`] whenever its table changes; a stage that
//! holds a clone compares the number it saw with the current one, without
//! reaching into the module (no lookup, no downcast): equal means every
//! answer the module gave since is still the answer it would give.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A change counter shared between a module and the stages that cache its
/// answers. Cloning shares the counter.
#[derive(Clone, Debug, Default)]
pub struct Generation(Arc<AtomicU64>);

impl Generation {
    /// A new counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The current generation.
    #[inline]
    pub fn current(&self) -> u64 {
        // A stack runs on one thread; the atomic only makes the counter
        // shareable (`Send`) without `unsafe`, so no ordering is needed.
        self.0.load(Ordering::Relaxed)
    }

    /// Records a change: every cached answer from before is stale.
    #[inline]
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_count() {
        let g = Generation::new();
        let held = g.clone();
        let seen = held.current();
        g.bump();
        assert_ne!(held.current(), seen);
        assert_eq!(held.current(), g.current());
    }
}
