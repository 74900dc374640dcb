//! `cargo bench --bench classifier`: the demux-tree classifier against the
//! goals of issue 3 and thesis Table 3.2 / Figure 3.12.
//!
//! * lookup of an active TCP/IPv4 path (one probe of the flow table);
//!   lookup of a passive path (the listener's): a known host on a port no
//!   active path uses (`lookup_passive`), and a host with no active path
//!   (`lookup_passive_new_peer`): the active flows' probe misses, the
//!   listener's passive flow answers, 2 probes (before passive flows were
//!   kept beside active ones, the walks: 1 + 3 + 2 and 1 + 4);
//!   a traced active lookup (`lookup_active_traced`);
//!   insert and remove of an active TCP/IPv4 path, for N installed paths
//!   (N = 1 … 1M, plus the ARP, ICMP and listening-TCP filters of §3.4.4);
//! * the same lookup by a linear scan over N sockets, the way smoltcp's
//!   `Interface` dispatches (`for socket in sockets { if socket.accepts(..) }`),
//!   modelled here without smoltcp's per-socket buffers so 1M sockets fit;
//! * heap bytes per added path, by a counting global allocator: the
//!   classifier alone; with what core's `Demux` keeps beside it per path,
//!   `cargo test --release -p pathstack-core --lib path_bytes -- --ignored
//!   --nocapture` (`pathstack-core/src/demux/path_bytes.rs`).
//!
//! Lookups rotate over 256 packets of distinct installed paths (warm caches,
//! like the thesis's measurements, but not one hot key). Writes
//! `target/pathstack-bench/classifier.json` and `classifier.svg`.

use std::alloc::System;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use pathstack_classify::testing::inet::{self, ETH};
use pathstack_classify::testing::ops::FilterSpec;
use pathstack_classify::testing::packet::{PacketSpec, Payload};
use pathstack_classify::{Classifier, Footprint, KeyMode, Level, PathId, Trace};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const NS: [usize; 7] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000];
const LOCAL: [u8; 4] = [10, 0, 0, 1];
const LPORT: u16 = 80;
const PORTS_PER_HOST: usize = 60_000;
const ROTATE: usize = 256;

/// Per-sample mean ns of each (op, N), filled by the timing closures.
static SAMPLES: Mutex<BTreeMap<(&'static str, usize), Vec<f64>>> = Mutex::new(BTreeMap::new());

fn record(op: &'static str, n: usize, total: Duration, iters: u64) {
    let ns = total.as_nanos() as f64 / iters.max(1) as f64;
    SAMPLES.lock().unwrap().entry((op, n)).or_default().push(ns);
}

/// Remote endpoint of the i-th installed active path.
fn remote(i: usize, base: u8) -> ([u8; 4], u16) {
    let host = i / PORTS_PER_HOST;
    (
        [10, base, (host >> 8) as u8, host as u8],
        1024 + (i % PORTS_PER_HOST) as u16,
    )
}

fn active_tcp(raddr: [u8; 4], rport: u16) -> Vec<Level> {
    FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: true,
        laddr: LOCAL,
        raddr,
        lport: LPORT,
        rport,
        counted: false,
    }
    .levels()
}

/// The three filters of thesis §3.4.4 besides the measured ones: ARP, ICMP,
/// and a listening TCP socket on the measured port.
fn base_filters(c: &mut Classifier, first_id: u32) {
    c.insert(
        PathId(first_id),
        KeyMode::Passive,
        &FilterSpec::Arp {
            mode: KeyMode::Passive,
        }
        .levels(),
    )
    .unwrap();
    let icmp = FilterSpec::Ip {
        mode: KeyMode::Passive,
        proto: inet::PROTO_ICMP,
        laddr: LOCAL,
        raddr: LOCAL,
    };
    c.insert(PathId(first_id + 1), KeyMode::Passive, &icmp.levels())
        .unwrap();
    let listen = FilterSpec::Transport {
        mode: KeyMode::Passive,
        tcp: true,
        laddr: LOCAL,
        raddr: LOCAL,
        lport: LPORT,
        rport: 0,
        counted: false,
    };
    c.insert(PathId(first_id + 2), KeyMode::Passive, &listen.levels())
        .unwrap();
}

fn build(n: usize) -> Classifier {
    let mut c = Classifier::new();
    inet::install(&mut c);
    base_filters(&mut c, u32::MAX - 4);
    for i in 0..n {
        let (ra, rp) = remote(i, 0);
        c.insert(PathId(i as u32), KeyMode::Active, &active_tcp(ra, rp))
            .unwrap();
    }
    c
}

/// One socket in the linear-scan baseline (smoltcp's `tcp::Socket::accepts`:
/// local endpoint must match, remote too unless listening).
struct Socket {
    laddr: [u8; 4],
    lport: u16,
    raddr: [u8; 4],
    rport: u16,
    listening: bool,
    id: u32,
}

/// Parses the frame once (as smoltcp does before dispatch), then scans.
fn linear_scan(sockets: &[Socket], frame: &[u8]) -> Option<u32> {
    let (_, eth) = inet::extract(ETH, frame, KeyMode::Active)?;
    let ip = frame.get(eth..)?;
    let (ipk, ihl) = inet::extract(inet::IPV4, ip, KeyMode::Active)?;
    let k = ipk.as_bytes();
    if k[0] != inet::PROTO_TCP {
        return None;
    }
    let (dst, src) = ([k[1], k[2], k[3], k[4]], [k[5], k[6], k[7], k[8]]);
    let (tk, _) = inet::extract(inet::TCP, ip.get(ihl..)?, KeyMode::Active)?;
    let t = tk.as_bytes();
    let (dport, sport) = (
        u16::from_be_bytes([t[0], t[1]]),
        u16::from_be_bytes([t[2], t[3]]),
    );
    sockets
        .iter()
        .find(|s| {
            s.laddr == dst
                && s.lport == dport
                && (s.listening || (s.raddr == src && s.rport == sport))
        })
        .map(|s| s.id)
}

/// What the rotated packets are addressed from.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// The remote endpoint of an installed active path.
    Active,
    /// A known host, but a port no active path uses.
    PassiveKnownHost,
    /// A host no active path uses.
    PassiveNewPeer,
}

fn packets(n: usize, kind: Kind) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..ROTATE)
        .map(|_| {
            // xorshift: a fixed pseudo-random spread over the installed paths.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (ra, rp) = remote((x % n as u64) as usize, 0);
            let (ra, rp) = match kind {
                Kind::Active => (ra, rp),
                Kind::PassiveKnownHost => (ra, 1000),
                Kind::PassiveNewPeer => ([10, 250, ra[2], ra[3]], rp),
            };
            PacketSpec {
                payload: Payload::Tcp,
                ..PacketSpec::tcp(LOCAL, LPORT, ra, rp)
            }
            .build()
        })
        .collect()
}

fn bench_lookups(c: &mut Criterion, n: usize, cls: &Classifier) {
    let active = packets(n, Kind::Active);
    let passive = packets(n, Kind::PassiveKnownHost);
    let new_peer = packets(n, Kind::PassiveNewPeer);
    for (i, p) in active.iter().enumerate().take(4) {
        let want = cls.classify(ETH, p);
        assert!(
            want.is_some_and(|id| id.0 < n as u32),
            "active packet {i} misclassified"
        );
    }
    let listen = Some(PathId(u32::MAX - 2));
    // An active path's frame: one probe of the flow table. A listener's:
    // the active flows' probe that misses, then the passive flows'.
    assert_eq!(cls.classify_probes(ETH, &active[0]).1, 1);
    assert_eq!(cls.classify_probes(ETH, &passive[0]), (listen, 2));
    assert_eq!(cls.classify_probes(ETH, &new_peer[0]), (listen, 2));
    let mut trace = Trace::new();
    assert!(cls.classify_traced(ETH, &active[0], &mut trace).is_some());
    assert_eq!(trace.levels().len(), 3);
    let mut g = c.benchmark_group("classifier");
    g.warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    // Same lookup with the partial classifiers statically dispatched
    // (`classify_with`), as a core that compiles its module set in could do.
    g.bench_with_input(BenchmarkId::new("lookup_active_static", n), &n, |b, _| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for i in 0..iters as usize {
                black_box(cls.classify_with(ETH, black_box(&active[i % ROTATE]), inet::extract));
            }
            let e = t.elapsed();
            record("lookup_active_static", n, e, iters);
            e
        })
    });
    g.bench_with_input(BenchmarkId::new("lookup_active_traced", n), &n, |b, _| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for i in 0..iters as usize {
                black_box(cls.classify_traced(ETH, black_box(&active[i % ROTATE]), &mut trace));
            }
            let e = t.elapsed();
            record("lookup_active_traced", n, e, iters);
            e
        })
    });
    for (op, pkts) in [
        ("lookup_active", &active),
        ("lookup_passive", &passive),
        ("lookup_passive_new_peer", &new_peer),
    ] {
        g.bench_with_input(BenchmarkId::new(op, n), &n, |b, _| {
            b.iter_custom(|iters| {
                let t = Instant::now();
                for i in 0..iters as usize {
                    black_box(cls.classify(ETH, black_box(&pkts[i % ROTATE])));
                }
                let e = t.elapsed();
                record(op, n, e, iters);
                e
            })
        });
    }
    g.finish();
}

fn bench_linear(c: &mut Criterion, n: usize) {
    let mut sockets: Vec<Socket> = (0..n)
        .map(|i| {
            let (raddr, rport) = remote(i, 0);
            Socket {
                laddr: LOCAL,
                lport: LPORT,
                raddr,
                rport,
                listening: false,
                id: i as u32,
            }
        })
        .collect();
    sockets.push(Socket {
        laddr: LOCAL,
        lport: LPORT,
        raddr: [0; 4],
        rport: 0,
        listening: true,
        id: u32::MAX,
    });
    let pkts = packets(n, Kind::Active);
    assert!(linear_scan(&sockets, &pkts[0]).is_some_and(|id| (id as usize) < n));
    let mut g = c.benchmark_group("classifier");
    g.warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1))
        .sample_size(10);
    g.bench_with_input(BenchmarkId::new("linear_scan", n), &n, |b, _| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            for i in 0..iters as usize {
                black_box(linear_scan(&sockets, black_box(&pkts[i % ROTATE])));
            }
            let e = t.elapsed();
            record("linear_scan", n, e, iters);
            e
        })
    });
    g.finish();
}

/// Insert and remove of fresh active TCP paths, in chunks so the table
/// stays at N (+ at most one chunk) paths whatever iteration count
/// criterion asks for.
fn bench_update(c: &mut Criterion, n: usize, cls: &mut Classifier) {
    const CHUNK: usize = 1000;
    let fresh: Vec<Vec<Level>> = (0..CHUNK)
        .map(|j| {
            let (ra, rp) = remote(j, 200);
            active_tcp(ra, rp)
        })
        .collect();
    let id = |j: usize| PathId(2_000_000 + j as u32);
    let mut g = c.benchmark_group("classifier");
    g.warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
    for op in ["insert", "remove"] {
        g.bench_with_input(BenchmarkId::new(op, n), &n, |b, _| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                let mut left = iters as usize;
                while left > 0 {
                    let k = left.min(CHUNK);
                    let t = Instant::now();
                    for (j, lv) in fresh.iter().enumerate().take(k) {
                        black_box(cls.insert(id(j), KeyMode::Active, lv)).unwrap();
                    }
                    let ins = t.elapsed();
                    let t = Instant::now();
                    for j in 0..k {
                        black_box(cls.remove(id(j))).unwrap();
                    }
                    let rem = t.elapsed();
                    total += if op == "insert" { ins } else { rem };
                    left -= k;
                }
                record(op, n, total, iters);
                total
            })
        });
    }
    g.finish();
}

/// Live heap bytes of the classifier per added path, once the upper
/// (ETH, IP) nodes exist: heap(1 + m paths) − heap(1 path), divided by m;
/// with [`Classifier::footprint`]'s estimate, whose parts say where they
/// go.
fn bytes_per_path(m: usize) -> (f64, f64, Footprint) {
    let region = Region::new(GLOBAL);
    let mut c = build(1);
    let fp_before = c.footprint();
    let est_before = c.heap_bytes() as f64;
    let live = |r: &Region<'_, System>| {
        let s = r.change();
        // stats_alloc already adds realloc growth to `bytes_allocated`.
        s.bytes_allocated as f64 - s.bytes_deallocated as f64
    };
    let before = live(&region);
    for i in 1..=m {
        let (ra, rp) = remote(i, 0);
        c.insert(PathId(i as u32), KeyMode::Active, &active_tcp(ra, rp))
            .unwrap();
    }
    let after = live(&region);
    let est = (c.heap_bytes() as f64 - est_before) / m as f64;
    let parts = c.footprint().since(&fp_before);
    drop(c);
    ((after - before) / m as f64, est, parts)
}

fn out_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("pathstack-bench")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Log-log plot of lookup ns against N, like thesis Figure 3.12.
/// One plotted line: name, colour, (N, ns) points.
type Series<'a> = (&'a str, &'a str, Vec<(usize, f64)>);

fn svg(series: &[Series<'_>]) -> String {
    let (w, h, l, r, t, b) = (720.0, 440.0, 70.0, 170.0, 30.0, 50.0);
    let ys: Vec<f64> = series
        .iter()
        .flat_map(|s| s.2.iter().map(|p| p.1))
        .collect();
    let ymin = ys
        .iter()
        .cloned()
        .fold(f64::MAX, f64::min)
        .max(0.1)
        .log10()
        .floor();
    let ymax = ys
        .iter()
        .cloned()
        .fold(1.0, f64::max)
        .log10()
        .ceil()
        .max(ymin + 1.0);
    let x = |n: usize| l + (n as f64).log10() / 6.0 * (w - l - r);
    let y = |v: f64| t + (ymax - v.max(0.1).log10()) / (ymax - ymin) * (h - t - b);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"14\">Classification time vs. installed paths (cf. thesis Fig. 3.12)</text>\n",
        (w - r + l) / 2.0
    );
    for d in 0..=6 {
        let xv = x(10usize.pow(d));
        s += &format!(
            "<line x1=\"{xv}\" y1=\"{t}\" x2=\"{xv}\" y2=\"{}\" stroke=\"#ddd\"/>\n",
            h - b
        );
        s += &format!(
            "<text x=\"{xv}\" y=\"{}\" text-anchor=\"middle\">1e{d}</text>\n",
            h - b + 16.0
        );
    }
    let mut e = ymin;
    while e <= ymax {
        let yv = y(10f64.powf(e));
        s += &format!(
            "<line x1=\"{l}\" y1=\"{yv}\" x2=\"{}\" y2=\"{yv}\" stroke=\"#ddd\"/>\n",
            w - r
        );
        s += &format!(
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n",
            l - 6.0,
            yv + 4.0,
            10f64.powf(e)
        );
        e += 1.0;
    }
    s += &format!(
        "<rect x=\"{l}\" y=\"{t}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">installed paths N (log)</text>\n\
         <text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">ns per lookup (log)</text>\n",
        w - l - r,
        h - t - b,
        (w - r + l) / 2.0,
        h - 12.0,
        (h - b + t) / 2.0,
        (h - b + t) / 2.0
    );
    for (i, (name, color, pts)) in series.iter().enumerate() {
        let line: Vec<String> = pts
            .iter()
            .map(|&(n, v)| format!("{:.1},{:.1}", x(n), y(v)))
            .collect();
        s += &format!(
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>\n",
            line.join(" ")
        );
        for &(n, v) in pts {
            s += &format!(
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{color}\"/>\n",
                x(n),
                y(v)
            );
        }
        let ly = t + 20.0 + 20.0 * i as f64;
        s += &format!(
            "<line x1=\"{}\" y1=\"{ly}\" x2=\"{}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/><text x=\"{}\" y=\"{}\">{name}</text>\n",
            w - r + 10.0,
            w - r + 30.0,
            w - r + 36.0,
            ly + 4.0
        );
    }
    s + "</svg>\n"
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    for n in NS {
        let mut cls = build(n);
        bench_lookups(&mut c, n, &cls);
        bench_update(&mut c, n, &mut cls);
        drop(cls);
        bench_linear(&mut c, n);
    }
    let (bytes_100k, est_100k, parts_100k) = bytes_per_path(100_000);
    let (bytes_1m, est_1m, parts_1m) = bytes_per_path(1_000_000);
    c.final_summary();

    let mut samples = SAMPLES.lock().unwrap();
    if samples.is_empty() {
        return; // `--test`, `--list` or a filter that matched nothing.
    }
    let mut rows = Vec::new();
    let mut by_op: BTreeMap<&str, Vec<(usize, f64)>> = BTreeMap::new();
    for ((op, n), v) in samples.iter_mut() {
        let ns = median(v);
        if *op == "lookup_active_static" {
            println!("lookup_active_static N={n}: {ns:.1} ns (not in the JSON)");
            continue;
        }
        rows.push(serde_json::json!({"op": op, "n_paths": n, "ns": (ns * 100.0).round() / 100.0}));
        by_op.entry(op).or_default().push((*n, ns));
    }
    for (n, b) in [(100_000, bytes_100k), (1_000_000, bytes_1m)] {
        rows.push(serde_json::json!({"op": "bytes_per_path", "n_paths": n, "bytes": (b * 10.0).round() / 10.0}));
    }
    let dir = out_dir();
    std::fs::create_dir_all(&dir).expect("create bench output dir");
    let json = dir.join("classifier.json");
    std::fs::write(&json, serde_json::to_string_pretty(&rows).unwrap()).expect("write json");
    let plot = svg(&[
        (
            "active lookup",
            "#1f77b4",
            by_op.remove("lookup_active").unwrap_or_default(),
        ),
        (
            "passive lookup",
            "#ff7f0e",
            by_op.remove("lookup_passive").unwrap_or_default(),
        ),
        (
            "linear scan",
            "#2ca02c",
            by_op.remove("linear_scan").unwrap_or_default(),
        ),
    ]);
    std::fs::write(dir.join("classifier.svg"), plot).expect("write svg");

    println!("\n{:<24} {:>9} {:>12}", "op", "N", "ns (median)");
    for r in &rows {
        println!(
            "{:<24} {:>9} {:>12}",
            r["op"].as_str().unwrap(),
            r["n_paths"],
            r.get("ns").or(r.get("bytes")).unwrap()
        );
    }
    println!(
        "heap bytes per added path (counting allocator): {bytes_100k:.1} at 100k, {bytes_1m:.1} at 1M \
         (Classifier::heap_bytes estimate: {est_100k:.1}, {est_1m:.1})"
    );
    for (m, p) in [(100_000, parts_100k), (1_000_000, parts_1m)] {
        let per = |b: usize| b as f64 / m as f64;
        println!(
            "per path at {m}: nodes {:.1}, counts {:.1}, sparse {:.1}, edges {:.1}, tails {:.1}, \
             open {:.1}, flows {:.1}",
            per(p.nodes),
            per(p.counts),
            per(p.sparse),
            per(p.edges),
            per(p.tails),
            per(p.open),
            per(p.flows)
        );
    }
    println!("wrote {} and classifier.svg", json.display());
}
