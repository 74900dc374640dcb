//! Steady-state packet processing allocates nothing (Scout's buffer
//! refresh): after warm-up, an echo loop over the in-memory wire makes zero
//! heap allocations per message, under both schedulers and both executors.

use pathstack_core::synthetic::EchoPair;
use pathstack_core::SchedKind;

use pathstack_testutil::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

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
        let before = counting_alloc::allocations();
        let rounds = 5_000;
        let mut replies = 0;
        for _ in 0..rounds {
            replies += pair.round_trip(&payload, burst, |r| bytes += r.len());
        }
        let allocs = counting_alloc::allocations() - before;
        assert_eq!(replies, rounds * burst, "{sched} inline={inline}");
        assert_eq!(
            allocs, 0,
            "{sched} inline={inline}: {allocs} allocations over {replies} round trips"
        );
        assert!(bytes > 0);
    }
}
