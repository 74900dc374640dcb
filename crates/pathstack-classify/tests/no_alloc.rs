//! A lookup allocates nothing, traced or not, hit or miss, active or
//! passive. One test in this binary: the allocation counter is process-wide.

use std::alloc::System;

use pathstack_classify::testing::inet::{self, ETH};
use pathstack_classify::testing::ops::FilterSpec;
use pathstack_classify::testing::packet::PacketSpec;
use pathstack_classify::{Classifier, KeyMode, PathId, Trace};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

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
    let region = Region::new(GLOBAL);
    let mut found = 0;
    for m in &msgs {
        found += usize::from(c.classify(ETH, m).is_some());
        found += usize::from(c.classify_probes(ETH, m).0.is_some());
        found += usize::from(c.classify_traced(ETH, m, &mut trace).is_some());
        found += usize::from(c.classify_with(ETH, m, inet::extract).is_some());
    }
    let stats = region.change();
    assert_eq!(found, 12);
    assert_eq!((stats.allocations, stats.reallocations), (0, 0));
}
