//! A fixed amount of classifier lookups, for counting instructions where
//! timings are too noisy (`cargo bench --bench classifier` times the same
//! lookups): builds the bench's classifier with `N` active TCP paths (plus
//! its ARP, ICMP and listening filters) and classifies `ITERS` packets of
//! `KIND`.
//!
//! ```text
//! cargo build --release -p pathstack-tools --bin classify_count
//! valgrind --tool=callgrind --toggle-collect='classify_count::run' \
//!     target/release/classify_count 100000 active 100000
//! # "Collected" / 100000 = instructions per lookup (the hash seeds differ
//! # per process, so probe runs, hence counts, vary a little: take the
//! # median of several processes)
//! target/release/classify_count 100000 active 10000000 time
//! target/release/classify_count 1000000 active 10000000 time burst
//! ```
//!
//! The packets are a pool of `min(N, 262,144)` distinct flows in random
//! order, packed 64 bytes apart in one buffer (issue 26: with the 256
//! packets it rotated over before, the 1,000,000-path case looked up the
//! same 256 flows, whose slots stayed in the L1/L2 cache, and every
//! passive packet below 60,000 paths was the same packet, so a passive
//! figure was one probe's hash). At 1,000,000 paths the pool's slots and
//! packets (16 MB each) exceed the 16 MB L3: most lookups miss the caches
//! and the TLB, as on a busy server. `hot` as a further argument takes
//! the old 256 packets instead.
//!
//! `KIND`: `active` (the remote endpoint of an installed path), `passive`
//! (a known host on a port no path uses, varied per packet: the
//! listener), `newpeer` (a host no path uses: the listener); or `churn`:
//! `ITERS` inserts and removes of fresh active paths, 1,000 at a time (the
//! bench's insert and remove, so the tree stays at `N` paths), counted by
//! `churn` instead of `run`.
//! `static` as a further argument classifies with
//! `Classifier::classify_with` and the partial classifiers inlined;
//! `burst` with `Classifier::classify_burst`, 32 packets a call (a
//! driver's receive burst: the flow slots prefetched before the lookups),
//! the figure per packet.
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
/// Packets of the old, cache-hot rotation (`hot`).
const HOT: usize = 256;
/// Most packets of the pool: distinct flows, so that a large table is
/// looked up all over (see the module docs).
const POOL: usize = 1 << 18;
/// Bytes a packet takes in the pool (an Ethernet/IPv4/TCP header is 54).
const STRIDE: usize = 64;
/// Packets per `classify_burst` call (DPDK's usual rx burst).
const BURST: usize = 32;

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

/// The pool: `count` packets of `kind`, each padded to [`STRIDE`] bytes in
/// one buffer, and each packet's length.
struct Pool {
    bytes: Vec<u8>,
    lens: Vec<usize>,
}

impl Pool {
    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[i * STRIDE..i * STRIDE + self.lens[i]]
    }
}

/// An xorshift step (Marsaglia 2003): the bench's spread.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn packets(n: usize, kind: &str, hot: bool) -> Pool {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let count = if hot { HOT } else { n.min(POOL) };
    // Distinct installed paths in random order: a Fisher–Yates shuffle of
    // 0..n, cut to `count` (for `hot`, the old draws with replacement).
    let chosen: Vec<usize> = if hot {
        (0..count)
            .map(|_| (next(&mut x) % n as u64) as usize)
            .collect()
    } else {
        let mut all: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            all.swap(i, (next(&mut x) % (i as u64 + 1)) as usize);
        }
        all.truncate(count);
        all
    };
    let mut pool = Pool {
        bytes: vec![0; count * STRIDE],
        lens: Vec::with_capacity(count),
    };
    for (k, &i) in chosen.iter().enumerate() {
        let (ra, rp) = remote(i);
        let (ra, rp) = match kind {
            "active" => (ra, rp),
            // A port below the installed paths' 1024..61,024, varied per
            // packet, so that passive packets are distinct flows (the old
            // tool's were all one below 60,000 paths).
            "passive" if hot => (ra, 1000),
            "passive" => (ra, 1 + (next(&mut x) >> 32) as u16 % 1023),
            "newpeer" => ([10, 250, ra[2], ra[3]], rp),
            _ => usage(),
        };
        let p = PacketSpec {
            payload: Payload::Tcp,
            ..PacketSpec::tcp(LOCAL, LPORT, ra, rp)
        }
        .build();
        let len = p.len().min(STRIDE);
        pool.bytes[k * STRIDE..k * STRIDE + len].copy_from_slice(&p[..len]);
        pool.lens.push(len);
    }
    pool
}

/// The counted lookups (callgrind's `--toggle-collect` target).
#[inline(never)]
fn run(c: &Classifier, pool: &Pool, iters: usize, how: How) -> u64 {
    let count = pool.lens.len();
    let mut found = 0;
    if how == How::Burst {
        let mut out = [None; BURST];
        let mut i = 0;
        while i < iters {
            let k = BURST.min(iters - i);
            let mut msgs: [&[u8]; BURST] = [&[]; BURST];
            for (j, m) in msgs.iter_mut().enumerate().take(k) {
                *m = pool.get((i + j) % count);
            }
            c.classify_burst(ETH, black_box(&msgs[..k]), &mut out[..k]);
            found += black_box(&out[..k]).iter().filter(|p| p.is_some()).count() as u64;
            i += k;
        }
        return found;
    }
    for i in 0..iters {
        let p = black_box(pool.get(i % count));
        let path = if how == How::Static {
            c.classify_with(ETH, p, inet::extract)
        } else {
            c.classify(ETH, p)
        };
        found += u64::from(black_box(path).is_some());
    }
    found
}

/// Which lookup `run` makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// `Classifier::classify`, one packet a call.
    Single,
    /// `Classifier::classify_with`, the partial classifiers inlined.
    Static,
    /// `Classifier::classify_burst`, [`BURST`] packets a call.
    Burst,
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
    eprintln!("usage: classify_count N active|passive|newpeer|churn|bytes ITERS [time] [static|burst] [hot]");
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
    let flag = |f: &str| args[3..].iter().any(|a| a == f);
    let how = if flag("static") {
        How::Static
    } else if flag("burst") {
        How::Burst
    } else {
        How::Single
    };
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
    let pool = packets(n, kind, flag("hot"));
    let found = run(&c, &pool, iters, how);
    assert_eq!(found, iters as u64, "every packet has a path");
    if time {
        let t = std::time::Instant::now();
        run(&c, &pool, iters, how);
        let ns = t.elapsed().as_nanos() as f64 / iters as f64;
        println!("{n} {kind}: {ns:.1} ns/lookup");
    }
}
