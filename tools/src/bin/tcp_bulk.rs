//! TCP bulk throughput of a pathstack host on a TAP: the "pathstack" rows
//! of `scripts/bench-tcp.sh`.
//!
//! ```text
//! tcp_bulk sink   --tap NAME [--netns NS] --ip A/24 --port P [--busy-poll]
//!                 [--offload on|off]
//!                 [--stacks N [--conns K] [--cpus C,C..] [--neighbor IP=MAC]]
//! tcp_bulk source --tap NAME [--netns NS] --ip A/24 --peer ADDR:PORT
//!                 [--seconds S] [--busy-poll] [--offload on|off]
//! ```
//!
//! `sink` accepts one connection and reads until the end of the stream;
//! `source` connects, sends for S seconds, shuts its writing side down and
//! waits for the peer's FIN (so that every octet sent was acknowledged).
//! Both print one JSON line on stdout:
//! `{"bytes":..,"seconds":..,"gbps":..,"retrans_segs":..,...}`, the time
//! running from the first octet (sink) or the connect (source) to the end
//! of the stream. The connection has pathstack's default options
//! (256 KB send and receive buffers, window scaling, timestamps, SACK,
//! RACK-TLP, CUBIC). `--busy-poll` polls without sleeping, yielding the
//! CPU between polls; otherwise the host sleeps in epoll on the TAP.
//!
//! `sink --stacks N` runs N hosts, one thread each, on N queues of a
//! multi-queue TAP (`IFF_MULTI_QUEUE`; the TAP must be multi-queue, e.g.
//! `ip tuntap add NAME mode tap multi_queue`). Every host has the same
//! address and MAC and listens on the same port; the kernel spreads the
//! connections over the queues by flow hash, and each stays on the queue
//! that answered it. Thread i is pinned to the i-th CPU of `--cpus`. The
//! sink takes any number of connections and ends after `--conns K` of
//! them reached EOF (without `--conns`: when every connection accepted
//! reached EOF and none came for half a second). `--neighbor IP=MAC` is
//! the peer's address, entered as a static ARP entry in every host: the
//! kernel steers an ARP reply to one queue, not necessarily that of the
//! host that asked. Its JSON line has the total and, under "per_stack",
//! each host's connections and octets.
//!
//! `memory` runs a source and a sink host in this one thread, joined by
//! the in-memory wire (pathstack ↔ pathstack with no kernel in the way:
//! the stack's own cost per byte), and prints the sink's line.
//! `--offload on` opens the TAP with offloads (partial checksums, 64 KB
//! TCP super-segments both ways, as far as the kernel accepts them; the
//! JSON line says what was negotiated); off by default.
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::devices::{TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::tcp::{Shutdown, TcpStats};
use pathstack::inet::MacAddr;
use pathstack::socket::ready;
use pathstack::socket::TcpStream;
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "pathstack TCP bulk throughput on a TAP")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(clap::Args)]
struct TapArgs {
    /// The TAP interface (created if absent).
    #[arg(long)]
    tap: String,
    /// Open the TAP inside this network namespace (`ip netns` name).
    #[arg(long)]
    netns: Option<String>,
    /// This host's address and prefix, e.g. 10.77.1.1/24.
    #[arg(long)]
    ip: String,
    /// Poll and yield instead of sleeping in epoll.
    #[arg(long)]
    busy_poll: bool,
    /// TAP offloads: checksum and TCP segmentation offload both ways.
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = on_off, action = clap::ArgAction::Set)]
    offload: bool,
}

/// `on` or `off`.
fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{s}`: expected on or off")),
    }
}

/// `IP=MAC`.
fn neighbor(s: &str) -> Result<(Ipv4Addr, MacAddr), String> {
    let (ip, mac) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected IP=MAC"))?;
    let ip = ip.parse().map_err(|e| format!("`{ip}`: {e}"))?;
    let mac = mac.parse::<MacAddr>().map_err(|e| e.to_string())?;
    Ok((ip, mac))
}

#[derive(Subcommand)]
enum Mode {
    /// Accept one connection, read until EOF.
    Sink {
        #[command(flatten)]
        tap: TapArgs,
        /// The port to listen on.
        #[arg(long)]
        port: u16,
        /// Hosts, one thread each, on as many queues of a multi-queue TAP.
        #[arg(long)]
        stacks: Option<usize>,
        /// With --stacks: end after this many connections reached EOF.
        #[arg(long, requires = "stacks")]
        conns: Option<u64>,
        /// With --stacks: the CPUs to pin the hosts' threads to, in order.
        #[arg(long, requires = "stacks", value_delimiter = ',')]
        cpus: Vec<usize>,
        /// With --stacks: the peer, as a static ARP entry (IP=MAC).
        #[arg(long, requires = "stacks", value_parser = neighbor)]
        neighbor: Option<(Ipv4Addr, MacAddr)>,
    },
    /// Connect, send for --seconds, shut down.
    Source {
        #[command(flatten)]
        tap: TapArgs,
        /// The sink's address.
        #[arg(long)]
        peer: SocketAddr,
        /// How long to send.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// A source and a sink host in this thread over the in-memory wire.
    Memory {
        /// How long to send.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
}

type BoxError = Box<dyn std::error::Error>;

fn open(args: &TapArgs) -> Result<Host, BoxError> {
    open_queue(args, false)
}

/// A host on the TAP, or on one more queue of it with `multi_queue`.
fn open_queue(args: &TapArgs, multi_queue: bool) -> Result<Host, BoxError> {
    let mut opts = TapOptions::new()
        .offload(args.offload)
        .multi_queue(multi_queue);
    if let Some(ns) = &args.netns {
        opts = opts.netns(ns.clone());
    }
    let tap = TapDevice::open(&args.tap, opts)?;
    if args.offload {
        eprintln!("tcp_bulk: offloads {:?}", tap.offloads());
    }
    let waiter = tap.waiter()?;
    let mut cfg = HostConfig::parse(&args.ip)?;
    cfg.mac = Some(MacAddr(tap.mac()));
    let mode = if args.busy_poll {
        WaitMode::BusyPoll
    } else {
        WaitMode::Blocking
    };
    Ok(Host::new(cfg, tap)?.with_waiter(waiter, mode))
}

/// Polls and waits once.
fn step(host: &mut Host) -> Result<(), BoxError> {
    host.poll();
    host.wait(Duration::from_millis(10))?;
    Ok(())
}

fn report(bytes: u64, secs: f64, stats: Option<TcpStats>) {
    let mut j = json!({
        "bytes": bytes,
        "seconds": secs,
        "gbps": bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
    });
    if let Some(s) = stats {
        j["retrans_segs"] = json!(s.retrans_segs);
        j["timeouts"] = json!(s.timeouts);
        j["recoveries"] = json!(s.recoveries);
        j["tlp_probes"] = json!(s.tlp_probes);
        j["segs_in"] = json!(s.segs_in);
        j["segs_out"] = json!(s.segs_out);
        j["data_segs_out"] = json!(s.data_segs_out);
        j["dup_acks_in"] = json!(s.dup_acks_in);
        // Where the time goes under loss (issue 28, docs/design.md
        // "Under loss: where the time goes").
        j["timeout_retrans_segs"] = json!(s.timeout_retrans_segs);
        j["rack_lost_segs"] = json!(s.rack_lost_segs);
        j["lost_retransmits"] = json!(s.lost_retransmits);
        j["tlp_loss_repaired"] = json!(s.tlp_loss_repaired);
        j["dsack_undos"] = json!(s.dsack_undos);
        j["timeout_idle_ms"] = json!(s.timeout_idle_ns as f64 / 1e6);
    }
    println!("{j}");
}

fn sink(args: &TapArgs, port: u16) -> Result<(), BoxError> {
    let mut host = open(args)?;
    let l = host.tcp().listen(("0.0.0.0", port), 4)?;
    println!("tcp_bulk sink: ready on {} port {port}", args.ip);
    let s: TcpStream = loop {
        if let Some((s, _)) = ready(l.accept(&mut host))? {
            break s;
        }
        step(&mut host)?;
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0u64;
    let mut start = None;
    loop {
        host.poll();
        let mut eof = false;
        loop {
            match ready(s.read(&mut host, &mut buf))? {
                Some(0) => {
                    eof = true;
                    break;
                }
                Some(n) => {
                    start.get_or_insert_with(Instant::now);
                    bytes += n as u64;
                }
                None => break,
            }
        }
        if eof {
            break;
        }
        host.wait(Duration::from_millis(10))?;
    }
    let secs = start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    let stats = host.tcp().stats(&s).ok();
    let _ = host.tcp().close(s);
    // Let the FIN out.
    for _ in 0..20 {
        step(&mut host)?;
    }
    report(bytes, secs, stats);
    Ok(())
}

/// What the hosts of a multi-stack sink share: how many connections were
/// accepted and reached EOF over all of them, and the last time a
/// connection was accepted or ended (nanoseconds since `epoch`).
struct SinkTally {
    epoch: Instant,
    accepted: AtomicU64,
    eofs: AtomicU64,
    last_change: AtomicU64,
}

impl SinkTally {
    fn touch(&self) {
        let ns = self.epoch.elapsed().as_nanos() as u64;
        self.last_change.fetch_max(ns, Ordering::Relaxed);
    }

    /// Whether the sink is done: `conns` EOFs, or without a target every
    /// accepted connection ended and nothing changed for half a second.
    fn done(&self, conns: Option<u64>) -> bool {
        let eofs = self.eofs.load(Ordering::Relaxed);
        match conns {
            Some(k) => eofs >= k,
            None => {
                let quiet = self.epoch.elapsed().as_nanos() as u64
                    > self.last_change.load(Ordering::Relaxed) + 500_000_000;
                eofs > 0 && eofs == self.accepted.load(Ordering::Relaxed) && quiet
            }
        }
    }
}

/// What one host of a multi-stack sink did.
struct StackTally {
    conns: u64,
    bytes: u64,
    first_octet: Option<Instant>,
    last_eof: Option<Instant>,
    cpu: Option<usize>,
}

/// One host of `sink --stacks`: its own queue, listener and connections.
fn sink_stack(
    mut host: Host,
    port: u16,
    conns: Option<u64>,
    tally: &SinkTally,
    start: &Barrier,
    cpu: Option<usize>,
) -> Result<StackTally, BoxError> {
    if let Some(id) = cpu {
        if !core_affinity::set_for_current(core_affinity::CoreId { id }) {
            return Err(format!("cannot pin a sink thread to CPU {id}").into());
        }
    }
    let l = host.tcp().listen(("0.0.0.0", port), 64)?;
    start.wait();
    let mut open: Vec<TcpStream> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut t = StackTally {
        conns: 0,
        bytes: 0,
        first_octet: None,
        last_eof: None,
        cpu,
    };
    while !tally.done(conns) {
        host.poll();
        while let Some((s, _)) = ready(l.accept(&mut host))? {
            open.push(s);
            t.conns += 1;
            tally.accepted.fetch_add(1, Ordering::Relaxed);
            tally.touch();
        }
        let mut i = 0;
        while i < open.len() {
            let mut eof = false;
            while let Some(n) = ready(open[i].read(&mut host, &mut buf))? {
                if n == 0 {
                    eof = true;
                    break;
                }
                t.first_octet.get_or_insert_with(Instant::now);
                t.bytes += n as u64;
            }
            if eof {
                t.last_eof = Some(Instant::now());
                // Close at once: the kernel sender waits for our FIN.
                let _ = host.tcp().close(open.swap_remove(i));
                tally.eofs.fetch_add(1, Ordering::Relaxed);
                tally.touch();
            } else {
                i += 1;
            }
        }
        host.wait(Duration::from_millis(10))?;
    }
    for s in open {
        let _ = host.tcp().close(s);
    }
    // Let the FINs out.
    for _ in 0..20 {
        step(&mut host)?;
    }
    Ok(t)
}

/// `sink --stacks N`: N hosts on N queues of a multi-queue TAP.
fn multi_sink(
    args: &TapArgs,
    port: u16,
    stacks: usize,
    conns: Option<u64>,
    cpus: &[usize],
    neighbor: Option<(Ipv4Addr, MacAddr)>,
) -> Result<(), BoxError> {
    if stacks == 0 {
        return Err("--stacks must be at least 1".into());
    }
    // Every queue is attached before the first connection comes, so the
    // kernel spreads the connections over all of them.
    let mut hosts = Vec::with_capacity(stacks);
    for _ in 0..stacks {
        let mut host = open_queue(args, true)?;
        if let Some((ip, mac)) = neighbor {
            host.add_neighbor(ip, mac)?;
        }
        hosts.push(host);
    }
    let tally = SinkTally {
        epoch: Instant::now(),
        accepted: AtomicU64::new(0),
        eofs: AtomicU64::new(0),
        last_change: AtomicU64::new(0),
    };
    let start = Arc::new(Barrier::new(stacks + 1));
    let results = std::thread::scope(|scope| {
        let threads: Vec<_> = hosts
            .into_iter()
            .enumerate()
            .map(|(i, host)| {
                let cpu = (!cpus.is_empty()).then(|| cpus[i % cpus.len()]);
                let (tally, start) = (&tally, Arc::clone(&start));
                scope.spawn(move || {
                    let r = sink_stack(host, port, conns, tally, &start, cpu);
                    r.map_err(|e| e.to_string())
                })
            })
            .collect();
        start.wait();
        println!(
            "tcp_bulk sink: ready on {} port {port}, {stacks} stacks",
            args.ip
        );
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err("sink thread panicked".into()))
            })
            .collect::<Vec<_>>()
    });
    let mut per_stack = Vec::new();
    let (mut bytes, mut first, mut last) = (0u64, None::<Instant>, None::<Instant>);
    for r in results {
        let t = r?;
        bytes += t.bytes;
        first = match (first, t.first_octet) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        last = last.max(t.last_eof);
        per_stack.push(json!({"conns": t.conns, "bytes": t.bytes, "cpu": t.cpu}));
    }
    let secs = match (first, last) {
        (Some(f), Some(l)) => l.saturating_duration_since(f).as_secs_f64(),
        _ => 0.0,
    };
    println!(
        "{}",
        json!({
            "bytes": bytes,
            "seconds": secs,
            "gbps": bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
            "stacks": stacks,
            "conns": tally.eofs.load(Ordering::Relaxed),
            "per_stack": per_stack,
        })
    );
    Ok(())
}

fn source(args: &TapArgs, peer: SocketAddr, seconds: f64) -> Result<(), BoxError> {
    let mut host = open(args)?;
    let s = host.tcp().connect(peer)?;
    let connect_by = Instant::now() + Duration::from_secs(10);
    while !host.tcp().is_connected(&s)? {
        if Instant::now() > connect_by {
            return Err("connect timed out".into());
        }
        step(&mut host)?;
    }
    let data = vec![0x5au8; 64 * 1024];
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut bytes = 0u64;
    while Instant::now() < end {
        host.poll();
        let mut wrote = false;
        while let Some(n) = ready(s.write(&mut host, &data))? {
            bytes += n as u64;
            wrote = true;
            if n < data.len() {
                break;
            }
        }
        if !wrote {
            host.wait(Duration::from_millis(10))?;
        }
    }
    host.tcp().shutdown(&s, Shutdown::Write)?;
    // Until the peer's FIN: everything sent was acknowledged by then.
    let mut buf = [0u8; 2048];
    let close_by = Instant::now() + Duration::from_secs(30);
    loop {
        host.poll();
        match ready(s.read(&mut host, &mut buf))? {
            Some(0) => break,
            Some(_) => {}
            None => {
                if Instant::now() > close_by {
                    return Err("the peer did not close".into());
                }
                host.wait(Duration::from_millis(10))?;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let stats = host.tcp().stats(&s).ok();
    let _ = host.tcp().close(s);
    for _ in 0..20 {
        step(&mut host)?;
    }
    report(bytes, secs, stats);
    Ok(())
}

/// Source and sink over the in-memory wire, polled in turn: the source
/// sends for `seconds`, shuts down, and the sink reads to the end.
fn memory(seconds: f64) -> Result<(), BoxError> {
    let (a, b) = memory_pair(MemoryConfig::default());
    let mut src = Host::new(HostConfig::parse("10.0.0.1/24")?, a)?;
    let mut dst = Host::new(HostConfig::parse("10.0.0.2/24")?, b)?;
    let l = dst.tcp().listen("0.0.0.0:5001", 4)?;
    let c = src.tcp().connect("10.0.0.2:5001")?;
    let connect_by = Instant::now() + Duration::from_secs(10);
    let s = loop {
        src.poll();
        dst.poll();
        if let Some((s, _)) = ready(l.accept(&mut dst))? {
            break s;
        }
        if Instant::now() > connect_by {
            return Err("connect timed out".into());
        }
    };
    let data = vec![0x5au8; 64 * 1024];
    let mut buf = vec![0u8; 64 * 1024];
    let (mut sent, mut got, mut shut) = (0u64, 0u64, false);
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let give_up = end + Duration::from_secs(30);
    loop {
        if !shut {
            if Instant::now() < end {
                while let Some(n) = ready(c.write(&mut src, &data))? {
                    sent += n as u64;
                    if n < data.len() {
                        break;
                    }
                }
            } else {
                src.tcp().shutdown(&c, Shutdown::Write)?;
                shut = true;
            }
        }
        src.poll();
        dst.poll();
        let mut eof = false;
        while let Some(n) = ready(s.read(&mut dst, &mut buf))? {
            if n == 0 {
                eof = true;
                break;
            }
            got += n as u64;
        }
        if eof {
            break;
        }
        if Instant::now() > give_up {
            return Err("the transfer did not end".into());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    if got != sent {
        return Err(format!("sent {sent} octets, the sink read {got}").into());
    }
    report(got, secs, dst.tcp().stats(&s).ok());
    Ok(())
}

fn main() -> Result<(), BoxError> {
    match Cli::parse().mode {
        Mode::Sink {
            tap,
            port,
            stacks: Some(n),
            conns,
            cpus,
            neighbor,
        } => multi_sink(&tap, port, n, conns, &cpus, neighbor),
        Mode::Sink { tap, port, .. } => sink(&tap, port),
        Mode::Source { tap, peer, seconds } => source(&tap, peer, seconds),
        Mode::Memory { seconds } => memory(seconds),
    }
}
