//! Steady-state packet processing allocates nothing (Scout's buffer
//! refresh): after warm-up, an echo loop over the in-memory wire makes zero
//! heap allocations per message, under both schedulers and both executors.

use pathstack_core::synthetic::EchoPair;
use pathstack_core::SchedKind;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// A counting allocator needs `unsafe impl`; it lives in this test crate,
// not in the library (which forbids unsafe code), and only forwards.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` above with layout `l`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn echo_loop_makes_no_heap_allocations_after_warm_up() {
    for (sched, inline, burst) in [
        (SchedKind::PerMessage, false, 1),
        (SchedKind::PerMessage, true, 1),
        (SchedKind::Ldlp { batch: 8 }, false, 8),
        (SchedKind::Ldlp { batch: 8 }, true, 8),
    ] {
        let mut pair = EchoPair::new(sched, inline).unwrap();
        let payload = [0x5a; 64];
        let mut bytes = 0usize;
        for _ in 0..1_000 {
            pair.round_trip(&payload, burst, |r| bytes += r.len());
        }
        let before = ALLOCS.load(Ordering::Relaxed);
        let rounds = 5_000;
        let mut replies = 0;
        for _ in 0..rounds {
            replies += pair.round_trip(&payload, burst, |r| bytes += r.len());
        }
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        assert_eq!(replies, rounds * burst, "{sched} inline={inline}");
        assert_eq!(
            allocs, 0,
            "{sched} inline={inline}: {allocs} allocations over {replies} round trips"
        );
        assert!(bytes > 0);
    }
}
