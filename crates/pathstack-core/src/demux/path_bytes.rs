//! What a path costs in the stack's classifier, classifier and `Demux`
//! together (issue 26: at most 64 heap bytes a path).
//!
//! The classify crate's bench (`cargo bench --bench classifier`,
//! `bytes_per_path`) counts the classifier alone; `Demux` keeps, beside
//! it, what it needs per path to re-classify below a module
//! (`classify_from`, `classify_below`). This counts both, with a counting
//! allocator, for TCP connections registered as the core registers them:
//! ETH, IPv4 and TCP keys and a keyless level above (the socket's stage).
//!
//! The allocator is this test binary's: `#[ignore]`d, run alone so no
//! other test allocates meanwhile, in release for the millions:
//! `cargo test --release -p pathstack-core --lib path_bytes -- --ignored
//! --nocapture`.

use super::*;
use pathstack_classify::testing::inet::{self, ETH, IPV4, TCP};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The socket's stage above TCP: no partial classifier, no key.
const SOCKET: ModuleId = ModuleId(100);

/// The levels of the `i`-th connection to port 80 of 10.0.0.1: 60,000
/// ports of one peer before the next, as the classify crate's bench.
fn connection(i: u32) -> [(ModuleId, Option<Key>); 4] {
    let r = (i / 60_000).to_be_bytes();
    let rport = 1024 + (i % 60_000) as u16;
    let key = |b: &[u8]| Key::new(b);
    [
        (ModuleId(ETH.0), key(&0x0800u16.to_be_bytes())),
        (
            ModuleId(IPV4.0),
            key(&[6, 10, 0, 0, 1, 10, r[1], r[2], r[3]]),
        ),
        (
            ModuleId(TCP.0),
            key(&[0, 80, (rport >> 8) as u8, rport as u8]),
        ),
        (SOCKET, None),
    ]
}

fn demux() -> Demux {
    let mut d = Demux::new();
    inet::install(&mut d.tree);
    d
}

fn register(d: &mut Demux, i: u32) {
    let id = PathId {
        index: i,
        generation: 1,
    };
    assert!(matches!(
        d.register(id, KeyMode::Active, &connection(i)),
        Ok(true)
    ));
}

/// Heap bytes per added path, once the first path made the ETH and IP
/// nodes: `(Demux counted, classifier alone by its footprint)`.
fn bytes_per_path(m: u32) -> (f64, f64) {
    let region = Region::new(GLOBAL);
    let live = |r: &Region<'_, System>| {
        let s = r.change();
        s.bytes_allocated as f64 - s.bytes_deallocated as f64
    };
    let mut d = demux();
    register(&mut d, 0);
    let (before, tree_before) = (live(&region), d.tree.heap_bytes() as f64);
    for i in 1..=m {
        register(&mut d, i);
    }
    let all = (live(&region) - before) / f64::from(m);
    let tree = (d.tree.heap_bytes() as f64 - tree_before) / f64::from(m);
    (all, tree)
}

#[test]
#[ignore = "measurement: run alone, in release (see the module doc)"]
fn path_bytes() {
    for m in [1_000, 100_000, 1_000_000] {
        let (all, tree) = bytes_per_path(m);
        println!(
            "{m} paths: {all:.1} bytes a path with Demux, classifier {tree:.1}, Demux's own {:.1}",
            all - tree
        );
    }
}
