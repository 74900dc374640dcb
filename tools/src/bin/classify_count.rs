//! A fixed amount of classifier lookups, for counting instructions where
//! timings are too noisy (`cargo bench --bench classifier` times the same
//! lookups): builds the bench's classifier with `N` active TCP paths (plus
//! its ARP, ICMP and listening filters) and classifies `ITERS` packets of
//! `KIND`, rotating over the bench's 256.
//!
//! ```text
//! cargo build --release -p pathstack-tools --bin classify_count
//! valgrind --tool=callgrind --toggle-collect='classify_count::run' \
//!     target/release/classify_count 100000 active 100000
//! # "Collected" / 100000 = instructions per lookup (the hash seeds differ
//! # per process, so probe runs, hence counts, vary a little: take a median)
//! target/release/classify_count 100000 active 10000000 time
//! ```
//!
//! `KIND`: `active` (the remote endpoint of an installed path), `passive`
//! (a known host on a port no path uses: the listener), `newpeer` (a host
//! no path uses: the listener); or `churn`: `ITERS` inserts and removes of
//! fresh active paths, 1,000 at a time (the bench's insert and remove, so
//! the tree stays at `N` paths), counted by `churn` instead of `run`.
//! `static` as a further argument classifies with
//! `Classifier::classify_with` and the partial classifiers inlined.
//! `bytes` (`ITERS` ignored) prints the classifier's heap bytes per path
//! beyond the first, part by part (`Classifier::footprint`, from the
//! capacities: the growth slack a part carries is in its figure), for
//! issue 26's 64 bytes a path.

use std::hint::black_box;

use pathstack_classify::testing::inet::{self, ETH};
use pathstack_classify::testing::ops::FilterSpec;
use pathstack_classify::testing::packet::{PacketSpec, Payload};
use pathstack_classify::{Classifier, KeyMode, Level, PathId};

const LOCAL: [u8; 4] = [10, 0, 0, 1];
const LPORT: u16 = 80;
const PORTS_PER_HOST: usize = 60_000;
const ROTATE: usize = 256;

/// Remote endpoint of the i-th installed path (as in the bench).
fn remote(i: usize) -> ([u8; 4], u16) {
    remote_on(i, 0)
}

/// The same on network `10.base/16` (the bench's fresh paths use 200).
fn remote_on(i: usize, base: u8) -> ([u8; 4], u16) {
    let host = i / PORTS_PER_HOST;
    (
        [10, base, (host >> 8) as u8, host as u8],
        1024 + (i % PORTS_PER_HOST) as u16,
    )
}

fn transport(mode: KeyMode, raddr: [u8; 4], rport: u16) -> Vec<Level> {
    FilterSpec::Transport {
        mode,
        tcp: true,
        laddr: LOCAL,
        raddr,
        lport: LPORT,
        rport,
        counted: false,
    }
    .levels()
}

fn build(n: usize) -> Classifier {
    let mut c = Classifier::new();
    inet::install(&mut c);
    let arp = FilterSpec::Arp {
        mode: KeyMode::Passive,
    };
    let icmp = FilterSpec::Ip {
        mode: KeyMode::Passive,
        proto: inet::PROTO_ICMP,
        laddr: LOCAL,
        raddr: LOCAL,
    };
    let base = u32::MAX - 4;
    c.insert(PathId(base), KeyMode::Passive, &arp.levels())
        .unwrap();
    c.insert(PathId(base + 1), KeyMode::Passive, &icmp.levels())
        .unwrap();
    let listen = transport(KeyMode::Passive, LOCAL, 0);
    c.insert(PathId(base + 2), KeyMode::Passive, &listen)
        .unwrap();
    for i in 0..n {
        let (ra, rp) = remote(i);
        c.insert(
            PathId(i as u32),
            KeyMode::Active,
            &transport(KeyMode::Active, ra, rp),
        )
        .unwrap();
    }
    c
}

fn packets(n: usize, kind: &str) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..ROTATE)
        .map(|_| {
            // The bench's xorshift spread over the installed paths.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (ra, rp) = remote((x % n as u64) as usize);
            let (ra, rp) = match kind {
                "active" => (ra, rp),
                "passive" => (ra, 1000),
                "newpeer" => ([10, 250, ra[2], ra[3]], rp),
                _ => usage(),
            };
            PacketSpec {
                payload: Payload::Tcp,
                ..PacketSpec::tcp(LOCAL, LPORT, ra, rp)
            }
            .build()
        })
        .collect()
}

/// The counted lookups (callgrind's `--toggle-collect` target).
#[inline(never)]
fn run(c: &Classifier, pkts: &[Vec<u8>], iters: usize, inlined: bool) -> u64 {
    let mut found = 0;
    for i in 0..iters {
        let p = black_box(&pkts[i % ROTATE]);
        let path = if inlined {
            c.classify_with(ETH, p, inet::extract)
        } else {
            c.classify(ETH, p)
        };
        found += u64::from(black_box(path).is_some());
    }
    found
}

/// `iters` inserts and removes of fresh paths, 1,000 at a time.
#[inline(never)]
fn churn(c: &mut Classifier, iters: usize) {
    const CHUNK: usize = 1000;
    let fresh: Vec<Vec<Level>> = (0..CHUNK)
        .map(|j| {
            let (ra, rp) = remote_on(j, 200);
            transport(KeyMode::Active, ra, rp)
        })
        .collect();
    let id = |j: usize| PathId(2_000_000 + j as u32);
    let mut left = iters;
    while left > 0 {
        let k = left.min(CHUNK);
        for (j, levels) in fresh.iter().enumerate().take(k) {
            black_box(c.insert(id(j), KeyMode::Active, levels)).unwrap();
        }
        for j in 0..k {
            black_box(c.remove(id(j))).unwrap();
        }
        left -= k;
    }
}

fn usage() -> ! {
    eprintln!("usage: classify_count N active|passive|newpeer|churn|bytes ITERS [time] [static]");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(n), Some(kind), Some(iters)) = (
        args.first()
            .and_then(|a| a.parse::<usize>().ok())
            .filter(|&n| n > 0),
        args.get(1),
        args.get(2).and_then(|a| a.parse::<usize>().ok()),
    ) else {
        usage()
    };
    let time = args[3..].iter().any(|a| a == "time");
    let inlined = args[3..].iter().any(|a| a == "static");
    if kind == "bytes" {
        let one = build(1).footprint();
        let p = build(n).footprint().since(&one);
        let per = |b: usize| b as f64 / (n - 1).max(1) as f64;
        println!(
            "{n} paths: {:.1} bytes a path (nodes {:.1}, counts {:.1}, sparse {:.1}, edges {:.1}, tails {:.1}, open {:.1}, flows {:.1})",
            per(p.total()),
            per(p.nodes),
            per(p.counts),
            per(p.sparse),
            per(p.edges),
            per(p.tails),
            per(p.open),
            per(p.flows)
        );
        return;
    }
    let mut c = build(n);
    if kind == "churn" {
        churn(&mut c, iters);
        if time {
            let t = std::time::Instant::now();
            churn(&mut c, iters);
            let ns = t.elapsed().as_nanos() as f64 / iters as f64;
            println!("{n} churn: {ns:.1} ns per insert and remove");
        }
        return;
    }
    let pkts = packets(n, kind);
    let found = run(&c, &pkts, iters, inlined);
    assert_eq!(found, iters as u64, "every packet has a path");
    if time {
        let t = std::time::Instant::now();
        run(&c, &pkts, iters, inlined);
        let ns = t.elapsed().as_nanos() as f64 / iters as f64;
        println!("{n} {kind}: {ns:.1} ns/lookup");
    }
}
