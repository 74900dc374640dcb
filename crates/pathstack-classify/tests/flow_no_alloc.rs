//! Filing a flow and taking it out again allocates nothing once the flow
//! table has room, active or passive beside active ones: the plan is
//! built on the stack, freed entries are reused. Allocations are counted
//! on the test's own thread.

use pathstack_classify::testing::inet;
use pathstack_classify::testing::ops::FilterSpec;
use pathstack_classify::{Classifier, KeyMode, PathId};
use pathstack_testutil::counting_alloc;

// Counted on the test's own thread only: the test harness's main thread
// may allocate while the measured loop runs (it did under load, about one
// run in five on a busy machine).
#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

#[test]
fn flow_churn_does_not_allocate() {
    let mut c = Classifier::new();
    inet::install(&mut c);
    let conn = |rport: u16| FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: true,
        laddr: [10, 0, 0, 1],
        raddr: [10, 0, 0, 2],
        lport: 80,
        rport,
        counted: false,
    };
    // A bound UDP socket beside them, filed as a passive flow the
    // connections shadow.
    let listening = |tcp: bool, lport: u16| FilterSpec::Transport {
        mode: KeyMode::Passive,
        tcp,
        laddr: [10, 0, 0, 1],
        raddr: [0; 4],
        lport,
        rport: 0,
        counted: false,
    };
    // A standing connection and listener keep the shared nodes; a second
    // connection and a bound socket come and go, first to warm the tables
    // up.
    c.insert(PathId(1), KeyMode::Active, &conn(1000).levels())
        .unwrap();
    c.insert(PathId(3), KeyMode::Passive, &listening(true, 80).levels())
        .unwrap();
    let levels: Vec<_> = (0..100).map(|i| conn(2000 + i).levels()).collect();
    let sockets: Vec<_> = (0..100)
        .map(|i| listening(false, 5000 + i).levels())
        .collect();
    for (l, b) in levels.iter().zip(&sockets) {
        c.insert(PathId(2), KeyMode::Active, l).unwrap();
        c.insert(PathId(4), KeyMode::Passive, b).unwrap();
        c.remove(PathId(2)).unwrap();
        c.remove(PathId(4)).unwrap();
    }
    counting_alloc::count_on_this_thread(true);
    counting_alloc::take_thread_allocations();
    for (l, b) in levels.iter().zip(&sockets) {
        c.insert(PathId(2), KeyMode::Active, l).unwrap();
        c.insert(PathId(4), KeyMode::Passive, b).unwrap();
        assert_eq!(c.flow_count(), 4);
        assert_eq!(c.passive_flow_count(), 2);
        c.remove(PathId(2)).unwrap();
        c.remove(PathId(4)).unwrap();
    }
    let allocs = counting_alloc::take_thread_allocations();
    counting_alloc::count_on_this_thread(false);
    assert_eq!(
        allocs, 0,
        "registering and removing a connection and a bound socket allocated"
    );
}
