//! `cargo bench -p pathstack --bench path_lifecycle`: what one connected UDP
//! path costs to make and to keep — create, establish and register in the
//! demux (`Host::udp_connect` from an ephemeral port, i.e. `path_create`
//! at `UDP` with `PARTICIPANTS` local port 0 and a remote address and
//! port), then delete (`Host::udp_close`, i.e. `path_delete`) — with 0 and
//! with 100,000 other connected UDP paths present.
//!
//! The other paths are connected sockets to distinct remote endpoints (two
//! peer addresses, 50,000 remote ports each) from fixed local ports below
//! the ephemeral range, so that the ephemeral ports stay free for the
//! measured path: 100,000 sockets with ephemeral ports cannot exist
//! (RFC 6335 §6 leaves 16,384).
//!
//! Measured, for each number of other paths:
//! * `lifecycle`: ns per create + delete, back to back (criterion);
//! * `create`, `delete`: the same split, timed over chunks of 100 creates
//!   then 100 deletes;
//! * heap bytes held per live path: the net heap growth (bytes allocated
//!   and not freed, by a counting global allocator) of opening 10,000 more
//!   connected sockets, divided by 10,000, so table growth is amortised
//!   over the paths that cause it; and the same for the 100,000 others;
//! * heap bytes allocated (and allocations made) per create + delete
//!   cycle, which the allocator has to serve even though they are freed.
//!
//! The counting allocator adds a few atomic additions to every
//! allocation, in the timed runs too.
//!
//! Writes `target/pathstack-bench/path_lifecycle.json` and checks the goals
//! of a path's cost: at most 2 µs and 1 KB per UDP path, flat from 0 to
//! 100,000 other paths (here: at 100,000 at most 1.25× the time and bytes
//! at 0).

use std::alloc::System;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use pathstack::core::device::wire::{wire_pair, WireConfig, WireEnd};
use pathstack::host::{Host, HostConfig};
use pathstack::socket::UdpSocket;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// The numbers of other paths measured.
const OTHERS: [usize; 2] = [0, 100_000];
/// The measured path's peer.
const PEER: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 7);
/// Paths opened to measure the heap bytes a live path holds.
const HELD: usize = 10_000;
/// Create + delete cycles counted for the bytes allocated per cycle.
const CYCLES: usize = 1_000;
/// Creates (then deletes) timed together for the create/delete split.
const CHUNK: usize = 100;
/// The goals: ns and heap bytes per path, and how much more either may be
/// at 100,000 other paths than at 0 and still count as flat.
const GOAL_NS: f64 = 2_000.0;
const GOAL_BYTES: f64 = 1_024.0;
const FLAT: f64 = 1.25;

/// Per-sample mean ns of each (measure, others), filled by the timing closures.
static SAMPLES: Mutex<BTreeMap<(&'static str, usize), Vec<f64>>> = Mutex::new(BTreeMap::new());

fn record(what: &'static str, others: usize, total: Duration, n: u64) {
    let ns = total.as_nanos() as f64 / n.max(1) as f64;
    SAMPLES
        .lock()
        .unwrap()
        .entry((what, others))
        .or_default()
        .push(ns);
}

/// A host on the in-memory wire (the other end is kept, unused: nothing is
/// sent).
fn host() -> (Host, WireEnd) {
    let (a, b) = wire_pair(WireConfig::default());
    let h = Host::new(HostConfig::parse("10.0.0.1/24").expect("address"), a).expect("host");
    (h, b)
}

/// The i-th other path: a connected socket to a distinct remote endpoint.
fn open_other(h: &mut Host, i: usize) -> UdpSocket {
    let local = 1024 + (i % 40_000) as u16;
    let peer = SocketAddrV4::new(
        Ipv4Addr::new(10, 0, 0, 3 + (i / 50_000) as u8),
        1024 + (i % 50_000) as u16,
    );
    h.udp()
        .bind_connected((Ipv4Addr::UNSPECIFIED, local), peer)
        .expect("other path")
}

/// Live heap bytes (allocated and not yet freed) since `region` began.
fn live(region: &Region<'_, System>) -> f64 {
    let s = region.change();
    // stats_alloc already counts realloc growth in `bytes_allocated`.
    s.bytes_allocated as f64 - s.bytes_deallocated as f64
}

/// Heap figures at one number of other paths.
struct Heap {
    held_per_path: f64,
    allocated_per_cycle: f64,
    allocations_per_cycle: f64,
}

fn heap(h: &mut Host) -> Heap {
    // A first cycle so that lazily made tables are not charged to the
    // measured paths.
    let s = h
        .udp()
        .bind_connected((Ipv4Addr::UNSPECIFIED, 0), PEER)
        .expect("path");
    h.udp().close(s).expect("close");

    let region = Region::new(GLOBAL);
    let socks: Vec<UdpSocket> = (0..HELD)
        .map(|i| {
            let peer = SocketAddrV4::new(*PEER.ip(), 20_000 + i as u16);
            h.udp()
                .bind_connected((Ipv4Addr::UNSPECIFIED, 0), peer)
                .expect("held path")
        })
        .collect();
    // The handles' own Vec is the benchmark's, not the stack's.
    let vec_bytes = (socks.capacity() * std::mem::size_of::<UdpSocket>()) as f64;
    let held_per_path = (live(&region) - vec_bytes) / HELD as f64;
    for s in socks {
        h.udp().close(s).expect("close");
    }

    let region = Region::new(GLOBAL);
    for _ in 0..CYCLES {
        let s = h
            .udp()
            .bind_connected((Ipv4Addr::UNSPECIFIED, 0), PEER)
            .expect("path");
        h.udp().close(s).expect("close");
    }
    let c = region.change();
    Heap {
        held_per_path,
        allocated_per_cycle: c.bytes_allocated as f64 / CYCLES as f64,
        allocations_per_cycle: (c.allocations + c.reallocations) as f64 / CYCLES as f64,
    }
}

fn bench(c: &mut Criterion, h: &mut Host, others: usize) {
    let mut g = c.benchmark_group("path_lifecycle");
    g.warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    g.bench_with_input(BenchmarkId::new("lifecycle", others), &others, |b, _| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for _ in 0..iters {
                let s = h
                    .udp()
                    .bind_connected((Ipv4Addr::UNSPECIFIED, 0), black_box(PEER))
                    .expect("path");
                h.udp().close(black_box(s)).expect("close");
            }
            let e = t.elapsed();
            record("lifecycle", others, e, iters);
            e
        })
    });
    g.bench_with_input(
        BenchmarkId::new("create_delete", others),
        &others,
        |b, _| {
            let mut socks = Vec::with_capacity(CHUNK);
            b.iter_custom(|iters| {
                let (mut create, mut delete) = (Duration::ZERO, Duration::ZERO);
                let mut left = iters as usize;
                while left > 0 {
                    let k = left.min(CHUNK);
                    let t = Instant::now();
                    for j in 0..k {
                        let peer = SocketAddrV4::new(*PEER.ip(), 20_000 + j as u16);
                        socks.push(
                            h.udp()
                                .bind_connected((Ipv4Addr::UNSPECIFIED, 0), black_box(peer))
                                .expect("path"),
                        );
                    }
                    create += t.elapsed();
                    let t = Instant::now();
                    for s in socks.drain(..) {
                        h.udp().close(black_box(s)).expect("close");
                    }
                    delete += t.elapsed();
                    left -= k;
                }
                record("create", others, create, iters);
                record("delete", others, delete, iters);
                create + delete
            })
        },
    );
    g.finish();
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("pathstack-bench")
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let mut heaps = Vec::new();
    let mut build_per_other = None;
    for others in OTHERS {
        let (mut h, _wire) = host();
        let region = Region::new(GLOBAL);
        let t = Instant::now();
        let socks: Vec<UdpSocket> = (0..others).map(|i| open_other(&mut h, i)).collect();
        let build_ns = t.elapsed().as_nanos() as f64;
        if others > 0 {
            let vec_bytes = (socks.capacity() * std::mem::size_of::<UdpSocket>()) as f64;
            build_per_other = Some((
                (live(&region) - vec_bytes) / others as f64,
                build_ns / others as f64,
            ));
        }
        bench(&mut c, &mut h, others);
        heaps.push((others, heap(&mut h)));
    }
    c.final_summary();

    let mut samples = SAMPLES.lock().unwrap();
    if samples.is_empty() {
        return; // `--test`, `--list` or a filter that matched nothing.
    }
    let mut ns = BTreeMap::new();
    for ((what, others), v) in samples.iter_mut() {
        ns.insert((*what, *others), median(v));
    }
    let get = |what: &str, others: usize| ns.get(&(what, others)).copied();
    let mut results = Vec::new();
    println!(
        "\n{:>12} {:>14} {:>10} {:>10} {:>16} {:>18} {:>14}",
        "other paths",
        "ns/lifecycle",
        "create ns",
        "delete ns",
        "heap B held/path",
        "heap B alloc/cycle",
        "allocs/cycle"
    );
    for (others, hp) in &heaps {
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.0}"));
        println!(
            "{:>12} {:>14} {:>10} {:>10} {:>16.1} {:>18.1} {:>14.1}",
            others,
            opt(get("lifecycle", *others)),
            opt(get("create", *others)),
            opt(get("delete", *others)),
            hp.held_per_path,
            hp.allocated_per_cycle,
            hp.allocations_per_cycle
        );
        results.push(serde_json::json!({
            "other_paths": others,
            "ns_per_lifecycle": get("lifecycle", *others).map(round1),
            "create_ns": get("create", *others).map(round1),
            "delete_ns": get("delete", *others).map(round1),
            "heap_bytes_held_per_path": round1(hp.held_per_path),
            "heap_bytes_allocated_per_cycle": round1(hp.allocated_per_cycle),
            "allocations_per_cycle": round1(hp.allocations_per_cycle),
        }));
    }
    if let Some((bytes, ns)) = build_per_other {
        println!(
            "the {} other paths: {bytes:.1} heap bytes and {ns:.0} ns each to open",
            OTHERS[1]
        );
    }

    // Goals: each figure within its bound at every N, and flat.
    let lc: Vec<Option<f64>> = OTHERS.iter().map(|&n| get("lifecycle", n)).collect();
    let held: Vec<f64> = heaps.iter().map(|(_, h)| h.held_per_path).collect();
    let within = |v: &[Option<f64>], bound: f64| -> Option<bool> {
        v.iter()
            .map(|x| x.map(|x| x <= bound))
            .collect::<Option<Vec<bool>>>()
            .map(|b| b.iter().all(|&x| x))
    };
    let flat = |v: &[Option<f64>]| match (v.first().copied().flatten(), v.last().copied().flatten())
    {
        (Some(a), Some(b)) => Some(b <= FLAT * a),
        _ => None,
    };
    let held_opt: Vec<Option<f64>> = held.iter().map(|&x| Some(x)).collect();
    let goals = [
        (
            format!("ns per lifecycle <= {GOAL_NS}"),
            within(&lc, GOAL_NS),
        ),
        (
            format!("heap bytes held per path <= {GOAL_BYTES}"),
            within(&held_opt, GOAL_BYTES),
        ),
        (
            format!("ns flat: at {} others <= {FLAT} x at 0", OTHERS[1]),
            flat(&lc),
        ),
        (
            format!("bytes flat: at {} others <= {FLAT} x at 0", OTHERS[1]),
            flat(&held_opt),
        ),
    ];
    println!("\ngoals:");
    for (g, met) in &goals {
        let v = match met {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "not measured",
        };
        println!("  {g:<48} {v}");
    }

    let doc = serde_json::json!({
        "what": "connected UDP path: Host::udp_connect((0.0.0.0, 0), peer) + Host::udp_close, \
                 in-memory wire, others = connected UDP paths to distinct remote endpoints",
        "results": results,
        "others_open": build_per_other.map(|(bytes, ns)| serde_json::json!({
            "other_paths": OTHERS[1],
            "heap_bytes_per_path": round1(bytes),
            "ns_per_path": round1(ns),
        })),
        "goals": goals.iter().map(|(g, met)| serde_json::json!({"goal": g, "met": met})).collect::<Vec<_>>(),
    });
    let dir = out_dir();
    std::fs::create_dir_all(&dir).expect("create bench output dir");
    let json = dir.join("path_lifecycle.json");
    std::fs::write(&json, serde_json::to_string_pretty(&doc).unwrap() + "\n").expect("write json");
    println!("wrote {}", json.display());
}
