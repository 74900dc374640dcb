//! A million TCP connections in one process (issue 28 item 4): two hosts
//! on the in-memory wire, host A connecting N times to host B, every
//! connection established, accepted and then left idle; what one
//! connection end costs, how fast they open, and what a busy connection
//! among them keeps of the throughput it has alone.
//!
//! ```text
//! tcp_million [--conns N] [--batch B] [--busy-mb M] [--buffer BYTES]
//! ```
//!
//! Host B listens on one port per 16,000 connections (A's ephemeral ports,
//! RFC 6335 §6's 16,384, are per peer port: one address each way is
//! enough). First a busy connection moves `--busy-mb` MiB A → B alone;
//! then the N connections open, `--batch` at a time (their SYNs fit the
//! wire's 1,024-frame queue and the listener's backlog); then the busy
//! connection moves the same again among them. (A batch whose handshakes
//! lost a segment waits for its retransmission, counted in
//! `slow_batches`.) Both hosts run on a
//! simulated clock (`Stack::poll(now)`, 10 µs a step while opening, 20 µs
//! while moving data); the rates are given per second of wall-clock time
//! and per second of the thread's CPU time (on a shared machine the
//! second is the steadier: the wall clock also counts the time other
//! processes had the CPU).
//!
//! Memory: the live heap (a counting global allocator, `stats_alloc`) and
//! the resident set (`/proc/self/smaps_rollup`), each before and after the
//! N connections, the difference divided by 2N: one connection end, both
//! hosts' share of everything a connection holds — the control block and
//! its rings, the path and its stages, the classifier's entry, the TCP
//! module's tuple table, the socket table, the application's handle
//! (a `TcpStream`, 8 octets, in a vector reserved beforehand), and the
//! path table's slots: the table grows by doubling as paths come
//! (`StackConfig::max_paths` bounds it, allocates nothing), so its slot
//! per path and the doubling's slack are in both figures. What is made
//! before the connections (the timer wheel, the buffer pools) is not.
//!
//! Prints one JSON line: `{"conns", "opens_per_s", "open_s",
//! "heap_bytes_per_end", "rss_bytes_per_end", "tcb_bytes",
//! "busy_alone_gbps", "busy_among_gbps", "busy_ratio", and the same per
//! CPU second: "opens_per_cpu_s", "busy_cpu_ratio", the heap allocations
//! per open (both ends), "allocs_per_open", and the timers held
//! right after the last open, "timers_after_open", ...}`.
#![forbid(unsafe_code)]

use clap::Parser;
use pathstack::core::stack::StackConfig;
use pathstack::core::{Duration, Instant};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::tcp::TcpModule;
use pathstack::inet::tcp::{Tcb, TcpConfig};
use pathstack::socket::ready;
use pathstack::socket::{TcpListener, TcpStream};
use pathstack::{memory_pair, MemoryConfig};
use serde_json::json;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

type BoxError = Box<dyn std::error::Error>;

/// Connections per listener port: under the 16,384 ephemeral ports A has
/// towards each of B's ports.
const PER_PORT: usize = 16_000;
/// B's first listener port.
const FIRST_PORT: u16 = 20_000;
/// The busy connection's port.
const BUSY_PORT: u16 = 7;

#[derive(Parser)]
#[command(about = "N idle TCP connections between two in-memory hosts, with a busy one among them")]
struct Args {
    /// Idle connections to open.
    #[arg(long, default_value_t = 1_000_000)]
    conns: usize,
    /// Connections opened at a time (their SYNs in flight together).
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// MiB the busy connection moves, alone and among the idle ones.
    #[arg(long, default_value_t = 256)]
    busy_mb: usize,
    /// Send and receive buffer octets of every connection (default:
    /// pathstack's, 256 KiB each, grown on demand).
    #[arg(long)]
    buffer: Option<usize>,
}

/// The live heap: allocated and not freed (`stats_alloc` counts a
/// realloc's growth in `bytes_allocated` already).
fn heap_bytes() -> i64 {
    let s = GLOBAL.stats();
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// Heap allocations and reallocations made so far.
fn allocations() -> u64 {
    let s = GLOBAL.stats();
    (s.allocations + s.reallocations) as u64
}

/// The resident set size (`/proc/self/smaps_rollup`'s `Rss`, else
/// `/proc/self/statm`'s resident pages of 4 KiB).
fn rss_bytes() -> Result<i64, BoxError> {
    if let Ok(s) = std::fs::read_to_string("/proc/self/smaps_rollup") {
        if let Some(kb) = s
            .lines()
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<i64>().ok())
        {
            return Ok(kb * 1024);
        }
    }
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: i64 = statm
        .split_whitespace()
        .nth(1)
        .ok_or("/proc/self/statm: no resident field")?
        .parse()?;
    Ok(pages * 4096)
}

/// Nanoseconds this thread has run on a CPU (`/proc/thread-self/schedstat`'s
/// first field): the rates are given per second of CPU as well as of wall
/// time, because on a shared machine the wall clock also counts the time
/// other processes had the CPU.
fn cpu_ns() -> Result<u64, BoxError> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat")?;
    Ok(s.split_whitespace()
        .next()
        .ok_or("/proc/thread-self/schedstat: empty")?
        .parse()?)
}

/// A wall-clock and a CPU-time stopwatch.
struct Clocks {
    wall: std::time::Instant,
    cpu: u64,
}

impl Clocks {
    fn start() -> Result<Clocks, BoxError> {
        Ok(Clocks {
            wall: std::time::Instant::now(),
            cpu: cpu_ns()?,
        })
    }

    /// Seconds of wall time and of CPU time since [`start`](Self::start).
    fn elapsed(&self) -> Result<(f64, f64), BoxError> {
        Ok((
            self.wall.elapsed().as_secs_f64(),
            (cpu_ns()? - self.cpu) as f64 / 1e9,
        ))
    }
}

/// The two hosts on a simulated clock.
struct Pair {
    a: Host,
    b: Host,
    now: Instant,
}

/// What a host's stack and TCP module counted, for a failure's message.
trait Describe {
    fn describe(&self) -> String;
}

impl Describe for Host {
    fn describe(&self) -> String {
        let tcp = self
            .stack()
            .module_id("tcp")
            .and_then(|m| self.stack().module::<TcpModule>(m))
            .map(|t| format!("{:?}", t.counters()));
        format!("{:?} {tcp:?}", self.stack().stats())
    }
}

impl Pair {
    fn step(&mut self, by: Duration) {
        self.a.stack_mut().poll(self.now);
        self.b.stack_mut().poll(self.now);
        self.now = self.now + by;
        // The socket calls between steps (connect, accept) read the
        // host's clock and set the stack's to it: the simulated one too,
        // not the wall clock since the host was made, or the stacks'
        // time jumps between the two (issue 28 item 4's stalled runs).
        self.a.set_manual_clock(self.now);
        self.b.set_manual_clock(self.now);
    }
}

/// Moves `bytes` from `c` (on A) to `s` (on B); returns Gbit/s of wall
/// time and of CPU time.
fn bulk(p: &mut Pair, c: &TcpStream, s: &TcpStream, bytes: usize) -> Result<(f64, f64), BoxError> {
    let chunk = vec![0x5au8; 64 * 1024];
    let mut buf = vec![0u8; 64 * 1024];
    let (mut sent, mut got) = (0, 0);
    let t0 = Clocks::start()?;
    while got < bytes {
        if sent < bytes {
            let k = (bytes - sent).min(chunk.len());
            if let Some(n) = ready(c.write(&mut p.a, &chunk[..k]))? {
                sent += n;
            }
        }
        while let Some(n) = ready(s.read(&mut p.b, &mut buf))? {
            if n == 0 {
                return Err("the busy connection closed".into());
            }
            got += n;
        }
        p.step(Duration::from_micros(20));
    }
    let (wall, cpu) = t0.elapsed()?;
    let gbps = |s: f64| bytes as f64 * 8.0 / s / 1e9;
    Ok((gbps(wall), gbps(cpu)))
}

fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    let n = args.conns;
    let listeners = n.div_ceil(PER_PORT);
    let cfg = |cidr: &str| -> Result<HostConfig, BoxError> {
        let mut c = HostConfig::parse(cidr)?;
        c.tcp_max_connections = Some(n + listeners + 64);
        if let Some(b) = args.buffer {
            c.tcp_config = Some(TcpConfig {
                send_buffer: b,
                recv_buffer: b,
                ..TcpConfig::default()
            });
        }
        Ok(c)
    };
    // Room for every connection path. Timers: an
    // idle established connection holds none (no keepalive by default;
    // the stage timer armed for the SYN's retransmission is cancelled at
    // the handshake's end, `modules/tcp/conn.rs`), so only the
    // handshakes under way (`--batch` at a time) hold one.
    //
    // `max_timers` stays sized to N all the same: a run of a million
    // with the default 65,536 stopped at 436,736 (a batch's SYNs not
    // answered, no timer exhausted on either host; not understood yet).
    let stack = || StackConfig {
        max_paths: (n + listeners + 1024).max(StackConfig::default().max_paths),
        max_timers: (n + 4096).max(StackConfig::default().max_timers),
        ..StackConfig::default()
    };
    let (wa, wb) = memory_pair(MemoryConfig::default());
    let mut p = Pair {
        a: Host::with_stack_config(cfg("10.0.0.1/8")?, wa, stack())?,
        b: Host::with_stack_config(cfg("10.0.0.2/8")?, wb, stack())?,
        now: Instant::ZERO + Duration::from_millis(1),
    };
    let backlog = (args.batch * 2) as u32;

    // The busy connection, alone.
    let busy_l = p.b.tcp().listen(("0.0.0.0", BUSY_PORT), 4)?;
    let busy_c = p.a.tcp().connect(("10.0.0.2", BUSY_PORT))?;
    let busy_s = loop {
        p.step(Duration::from_micros(10));
        if let Some((s, _)) = ready(busy_l.accept(&mut p.b))? {
            break s;
        }
    };
    let busy_bytes = args.busy_mb << 20;
    // A first run grows the busy connection's rings and scoreboard to its
    // flight (what a connection carrying data holds), the second is timed.
    bulk(&mut p, &busy_c, &busy_s, busy_bytes / 4)?;
    let alone = bulk(&mut p, &busy_c, &busy_s, busy_bytes)?;
    eprintln!(
        "tcp_million: busy connection alone {:.2} Gbit/s ({:.2} per CPU second)",
        alone.0, alone.1
    );

    let ls: Vec<TcpListener> = (0..listeners)
        .map(|i| {
            p.b.tcp()
                .listen(("0.0.0.0", FIRST_PORT + i as u16), backlog)
        })
        .collect::<Result<_, _>>()?;
    let mut clients: Vec<TcpStream> = Vec::with_capacity(n);
    let mut servers: Vec<TcpStream> = Vec::with_capacity(n);
    let (heap0, rss0) = (heap_bytes(), rss_bytes()?);
    let allocs0 = allocations();

    let t0 = Clocks::start()?;
    let mut report = std::time::Instant::now();
    let mut slow_batches = 0u32;
    while servers.len() < n {
        let start = clients.len();
        let end = (start + args.batch).min(n);
        for i in start..end {
            let port = FIRST_PORT + (i / PER_PORT) as u16;
            clients.push(p.a.tcp().connect(("10.0.0.2", port))?);
        }
        let mut steps = 0u32;
        while servers.len() < end {
            // 10 µs steps; a batch still incomplete after 10 ms of them
            // (a handshake segment lost: the wire's queue was full) goes
            // on in 1 ms steps to its retransmission, for at most 10 s.
            let step = if steps < 1000 { 10 } else { 1000 };
            p.step(Duration::from_micros(step));
            for l in &ls[start / PER_PORT..=(end - 1) / PER_PORT] {
                while let Some((s, _)) = ready(l.accept(&mut p.b))? {
                    servers.push(s);
                }
            }
            steps += 1;
            if steps == 1000 {
                slow_batches += 1;
            }
            if steps > 11_000 {
                // The paths of each host that dropped anything, with why:
                // a segment a path drops (a listener's SYN, a frame the
                // wire refused) is counted on its path, not in
                // `rx_drops` — for the open question of a batch whose
                // handshakes do not complete (docs/design.md).
                let drops = |h: &Host| -> Vec<String> {
                    let s = h.stack();
                    let mut tally = std::collections::BTreeMap::<String, u64>::new();
                    for id in s.path_ids() {
                        if let Some(path) = s.path(id) {
                            for (r, n) in path.stats().drops.iter() {
                                *tally.entry(format!("{r:?}")).or_default() += n;
                            }
                        }
                    }
                    tally
                        .into_iter()
                        .map(|(r, n)| format!("{r}: {n}"))
                        .collect()
                };
                return Err(format!(
                    "connections {start}..{end} did not come up ({} accepted); A: {}; B: {}; drops on A's paths {:?}, on B's {:?}",
                    servers.len(),
                    p.a.describe(),
                    p.b.describe(),
                    drops(&p.a),
                    drops(&p.b)
                )
                .into());
            }
        }
        if report.elapsed().as_secs() >= 5 {
            report = std::time::Instant::now();
            eprintln!(
                "tcp_million: {} open, {:.0}/s, heap {:.0} B per end, timers {} + {}",
                servers.len(),
                servers.len() as f64 / t0.elapsed()?.0,
                (heap_bytes() - heap0) as f64 / (2 * servers.len()) as f64,
                p.a.stack().stats().timers,
                p.b.stack().stats().timers
            );
        }
    }
    // Every client end too (its handshake completed with the ACK that
    // made the server end acceptable, sent before).
    for c in clients.iter().step_by((n / 1000).max(1)) {
        if !p.a.tcp().is_connected(c)? {
            return Err("a client end is not established".into());
        }
    }
    let (open_s, open_cpu_s) = t0.elapsed()?;
    // Heap allocations (and reallocations) per connection opened, both
    // ends, the tool's own pushes included (amortized: its vectors are
    // preallocated) — where an open's malloc time comes from.
    let allocs_per_open = (allocations() - allocs0) as f64 / n as f64;
    // The timers held right after the last open (before any could fire):
    // the handshakes' alone, however many connections are up.
    let timers_open = p.a.stack().stats().timers + p.b.stack().stats().timers;
    // Two quiet seconds (simulated, in 1 ms steps): delayed ACKs leave,
    // whatever timer is left fires — the connections are idle, as they
    // would be a few seconds after opening.
    for _ in 0..2000 {
        p.step(Duration::from_millis(1));
    }
    let (heap1, rss1) = (heap_bytes(), rss_bytes()?);
    let per_end = |d: i64| d as f64 / (2 * n) as f64;
    eprintln!(
        "tcp_million: {n} connections in {open_s:.2} s ({:.0}/s; {:.0} per CPU second); per end: heap {:.0} B, RSS {:.0} B",
        n as f64 / open_s,
        n as f64 / open_cpu_s,
        per_end(heap1 - heap0),
        per_end(rss1 - rss0)
    );

    let among = bulk(&mut p, &busy_c, &busy_s, busy_bytes)?;
    eprintln!(
        "tcp_million: busy connection among {n} idle {:.2} Gbit/s ({:.3} of alone; per CPU second {:.2}, {:.3} of alone)",
        among.0,
        among.0 / alone.0,
        among.1,
        among.1 / alone.1
    );
    println!(
        "{}",
        json!({
            "conns": n,
            "listeners": listeners,
            "open_s": open_s,
            "opens_per_s": n as f64 / open_s,
            "open_cpu_s": open_cpu_s,
            "opens_per_cpu_s": n as f64 / open_cpu_s,
            "allocs_per_open": allocs_per_open,
            "heap_bytes_per_end": per_end(heap1 - heap0),
            "rss_bytes_per_end": per_end(rss1 - rss0),
            "heap_bytes_total": heap1 - heap0,
            "rss_bytes_total": rss1 - rss0,
            "rss_bytes": rss1,
            "tcb_bytes": std::mem::size_of::<Tcb>(),
            "buffer": args.buffer,
            "busy_mb": args.busy_mb,
            "busy_alone_gbps": alone.0,
            "busy_among_gbps": among.0,
            "busy_ratio": among.0 / alone.0,
            "busy_alone_cpu_gbps": alone.1,
            "busy_among_cpu_gbps": among.1,
            "busy_cpu_ratio": among.1 / alone.1,
            "slow_batches": slow_batches,
            "timers_after_open": timers_open,
        })
    );
    Ok(())
}
