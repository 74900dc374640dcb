//! A lookup allocates nothing, traced or not, hit or miss, active or
//! passive. Allocations are counted on the test's own thread.

use pathstack_classify::testing::inet::{self, ETH};
use pathstack_classify::testing::ops::FilterSpec;
use pathstack_classify::testing::packet::PacketSpec;
use pathstack_classify::{Classifier, KeyMode, PathId, Trace};
use pathstack_testutil::counting_alloc;

// Counted on the test's own thread only: the test harness's main thread
// may allocate while the measured loop runs (it did under load, about one
// run in five on a busy machine).
#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

#[test]
fn lookups_do_not_allocate() {
    let mut c = Classifier::new();
    inet::install(&mut c);
    let local = [10, 0, 0, 1];
    let remote = [10, 0, 0, 2];
    for (p, mode, rport) in [(1, KeyMode::Passive, 0), (2, KeyMode::Active, 9)] {
        let f = FilterSpec::Transport {
            mode,
            tcp: false,
            laddr: local,
            raddr: remote,
            lport: 7,
            rport,
            counted: false,
        };
        c.insert(PathId(p), mode, &f.levels()).unwrap();
    }
    let msgs = [
        PacketSpec::udp(local, 7, remote, 9).build(),
        PacketSpec::udp(local, 7, remote, 10).build(),
        PacketSpec::udp(local, 7, [1, 1, 1, 1], 10).build(),
        PacketSpec::udp(local, 8, remote, 9).build(),
    ];
    let mut trace = Trace::new();
    counting_alloc::count_on_this_thread(true);
    counting_alloc::take_thread_allocations();
    let mut found = 0;
    for m in &msgs {
        found += usize::from(c.classify(ETH, m).is_some());
        found += usize::from(c.classify_probes(ETH, m).0.is_some());
        found += usize::from(c.classify_traced(ETH, m, &mut trace).is_some());
        found += usize::from(c.classify_with(ETH, m, inet::extract).is_some());
    }
    let allocs = counting_alloc::take_thread_allocations();
    counting_alloc::count_on_this_thread(false);
    assert_eq!(found, 12);
    assert_eq!(allocs, 0, "a lookup allocated");
}
