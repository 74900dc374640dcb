//! Heap bytes per path, part by part, without the bench's timings:
//! builds the bench's classifier (`benches/classifier.rs`: ARP, ICMP and
//! a TCP listener, then active TCP/IPv4 connections) with one connection,
//! adds `M` more, and prints what the `M` added per path in each part
//! ([`Classifier::footprint`]) beside the counting allocator's figure.
//!
//! ```text
//! cargo run --release -p pathstack-classify --example footprint -- 100000 1000000
//! ```

use std::alloc::System;

use pathstack_classify::testing::inet;
use pathstack_classify::testing::ops::FilterSpec;
use pathstack_classify::{Classifier, Footprint, KeyMode, Level, PathId};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const LOCAL: [u8; 4] = [10, 0, 0, 1];
const LPORT: u16 = 80;
const PORTS_PER_HOST: usize = 60_000;

/// The bench's i-th remote endpoint.
fn remote(i: usize) -> ([u8; 4], u16) {
    let host = i / PORTS_PER_HOST;
    (
        [10, 0, (host >> 8) as u8, host as u8],
        1024 + (i % PORTS_PER_HOST) as u16,
    )
}

fn transport(mode: KeyMode, raddr: [u8; 4], lport: u16, rport: u16) -> Vec<Level> {
    FilterSpec::Transport {
        mode,
        tcp: true,
        laddr: LOCAL,
        raddr,
        lport,
        rport,
        counted: false,
    }
    .levels()
}

/// The bench's classifier with one active path.
fn base() -> Classifier {
    let mut c = Classifier::new();
    inet::install(&mut c);
    let first = u32::MAX - 4;
    let arp = FilterSpec::Arp {
        mode: KeyMode::Passive,
    };
    let icmp = FilterSpec::Ip {
        mode: KeyMode::Passive,
        proto: inet::PROTO_ICMP,
        laddr: LOCAL,
        raddr: LOCAL,
    };
    c.insert(PathId(first), KeyMode::Passive, &arp.levels())
        .unwrap();
    c.insert(PathId(first + 1), KeyMode::Passive, &icmp.levels())
        .unwrap();
    let listen = transport(KeyMode::Passive, LOCAL, LPORT, 0);
    c.insert(PathId(first + 2), KeyMode::Passive, &listen)
        .unwrap();
    let (ra, rp) = remote(0);
    c.insert(
        PathId(0),
        KeyMode::Active,
        &transport(KeyMode::Active, ra, LPORT, rp),
    )
    .unwrap();
    c
}

fn main() {
    let ms: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ms = if ms.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        ms
    };
    println!(
        "{:>9} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>9}",
        "paths",
        "nodes",
        "counts",
        "sparse",
        "edges",
        "tails",
        "open",
        "flows",
        "total",
        "allocator"
    );
    for m in ms {
        let region = Region::new(GLOBAL);
        let mut c = base();
        let before: Footprint = c.footprint();
        let live = |r: &Region<'_, System>| {
            let s = r.change();
            s.bytes_allocated as f64 - s.bytes_deallocated as f64
        };
        let heap_before = live(&region);
        for i in 1..=m {
            let (ra, rp) = remote(i);
            let levels = transport(KeyMode::Active, ra, LPORT, rp);
            c.insert(PathId(i as u32), KeyMode::Active, &levels)
                .unwrap();
        }
        let allocator = (live(&region) - heap_before) / m as f64;
        let d = c.footprint().since(&before);
        let per = |b: usize| b as f64 / m as f64;
        println!(
            "{m:>9} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {allocator:>9.1}",
            per(d.nodes),
            per(d.counts),
            per(d.sparse),
            per(d.edges),
            per(d.tails),
            per(d.open),
            per(d.flows),
            per(d.total()),
        );
    }
}
