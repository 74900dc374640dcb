//! A pathstack TCP echo server (RFC 862) on a TAP for the latency,
//! connection-rate, idle-connection and SYN-flood rows of
//! `scripts/bench-tcp.sh`, with its heap and RSS on request.
//!
//! ```text
//! tcp_echo --tap NAME [--netns NS] --ip A/24 [--gateway G] --port P [--backlog B]
//!          [--buffer BYTES] [--idle-port Q [--idle-buffer BYTES]] [--busy-poll]
//! ```
//!
//! Connections to `--port` have pathstack's default options (256 KB
//! buffers each way, or `--buffer`) with `TCP_NODELAY`, and are echoed: every octet read
//! is written back; a connection whose peer has closed and whose echo is
//! out is closed. Connections to `--idle-port` get `--idle-buffer` octets
//! of send and receive buffer each and are accepted and held but never
//! read: they are the idle connections of the idle-connection row, and an
//! event-driven application would not touch a connection with nothing to
//! read (pathstack's non-blocking API has no readiness list, so visiting
//! each on every loop would measure this example, not the stack).
//!
//! Prints `ready` once listening. On SIGUSR1 it prints a snapshot as one
//! JSON line, and on SIGTERM/SIGINT a last one and exits:
//! `{"conns", "idle_conns", "heap_bytes", "rss_bytes", "echoed",
//! "accepted", "syn_queue", "cookies_sent", "cookies_accepted",
//! "overflows", "idle_buffer"}`. `heap_bytes` is the live heap of the
//! process (allocated and not freed, counted by a counting global
//! allocator, `stats_alloc`), `rss_bytes` the resident set of
//! `/proc/self/statm`; the listener counters are those of `--port`'s
//! listener (`TcpModule::listener`). The script takes the difference of
//! two snapshots, before and with the idle connections, for the memory
//! per idle connection.
#![forbid(unsafe_code)]

use clap::Parser;
use pathstack::devices::{TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::tcp::TcpModule;
use pathstack::inet::tcp::{Shutdown, TcpConfig};
use pathstack::inet::MacAddr;
use pathstack::socket::ready;
use pathstack::socket::{TcpListener, TcpStream};
use serde_json::json;
use stats_alloc::{StatsAlloc, INSTRUMENTED_SYSTEM};
use std::alloc::System;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[derive(Parser)]
#[command(about = "pathstack TCP echo server on a TAP, with memory snapshots")]
struct Args {
    /// The TAP interface (created if absent).
    #[arg(long)]
    tap: String,
    /// Open the TAP inside this network namespace (`ip netns` name).
    #[arg(long)]
    netns: Option<String>,
    /// This host's address and prefix, e.g. 10.77.1.1/24.
    #[arg(long)]
    ip: String,
    /// Default gateway (the SYN-flood row points it at the kernel of the
    /// TAP's namespace, so that SYN-ACKs to forged off-link sources have
    /// a route; that kernel drops them, not forwarding).
    #[arg(long)]
    gateway: Option<std::net::Ipv4Addr>,
    /// The echo port.
    #[arg(long, default_value_t = 7)]
    port: u16,
    /// The listen backlog of each listener (SYN queue and accept queue;
    /// beyond a full SYN queue SYN cookies answer).
    #[arg(long, default_value_t = 128)]
    backlog: u32,
    /// Send and receive buffer octets of each echo connection (default:
    /// pathstack's, 256 KB).
    #[arg(long)]
    buffer: Option<usize>,
    /// A port whose connections are accepted and held idle.
    #[arg(long)]
    idle_port: Option<u16>,
    /// Send and receive buffer octets of each idle connection.
    #[arg(long, default_value_t = 4096)]
    idle_buffer: usize,
    /// Poll and yield instead of sleeping in epoll.
    #[arg(long)]
    busy_poll: bool,
}

type BoxError = Box<dyn std::error::Error>;

/// Octets one echo connection holds while its peer does not read.
const ECHO_HOLD: usize = 256 * 1024;

struct Conn {
    s: TcpStream,
    pending: Vec<u8>,
    eof: bool,
}

/// What the server did.
#[derive(Default)]
struct Counts {
    accepted: u64,
    echoed: u64,
    failed: u64,
}

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tcp_echo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn open(args: &Args) -> Result<Host, BoxError> {
    let mut opts = TapOptions::new();
    if let Some(ns) = &args.netns {
        opts = opts.netns(ns.clone());
    }
    let tap = TapDevice::open(&args.tap, opts)?;
    let waiter = tap.waiter()?;
    let mut cfg = HostConfig::parse(&args.ip)?;
    cfg.mac = Some(MacAddr(tap.mac()));
    cfg.gateway = args.gateway;
    let mode = if args.busy_poll {
        WaitMode::BusyPoll
    } else {
        WaitMode::Blocking
    };
    Ok(Host::new(cfg, tap)?.with_waiter(waiter, mode))
}

fn run(args: Args) -> Result<(), BoxError> {
    let usr1 = Arc::new(AtomicBool::new(false));
    let term = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGUSR1, Arc::clone(&usr1))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&term))?;
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&term))?;

    let mut host = open(&args)?;
    let defaults = TcpConfig {
        nodelay: true,
        ..TcpConfig::default()
    };
    let echo_cfg = match args.buffer {
        Some(b) => TcpConfig {
            send_buffer: b,
            recv_buffer: b,
            max_ooo_bytes: b,
            ..defaults
        },
        None => defaults,
    };
    let echo = host
        .tcp()
        .listen_with(("0.0.0.0", args.port), args.backlog, echo_cfg)?;
    let idle = match args.idle_port {
        Some(p) => {
            let small = TcpConfig {
                send_buffer: args.idle_buffer,
                recv_buffer: args.idle_buffer,
                max_ooo_bytes: args.idle_buffer,
                ..defaults
            };
            Some(
                host.tcp()
                    .listen_with(("0.0.0.0", p), args.backlog, small)?,
            )
        }
        None => None,
    };
    println!(
        "tcp_echo: ready on {} port {}{}",
        args.ip,
        args.port,
        args.idle_port
            .map(|p| format!(", idle connections on port {p}"))
            .unwrap_or_default()
    );
    let mut conns: Vec<Conn> = Vec::new();
    let mut held: Vec<TcpStream> = Vec::new();
    let mut counts = Counts::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        host.poll();
        let mut busy = accept(
            &mut host,
            &echo,
            idle.as_ref(),
            &mut conns,
            &mut held,
            &mut counts,
        )?;
        conns.retain_mut(|c| match serve(&mut host, c, &mut buf, &mut counts) {
            Ok((moved, keep)) => {
                busy |= moved;
                if !keep {
                    let _ = host.tcp().close(c.s);
                }
                keep
            }
            Err(e) => {
                eprintln!("tcp_echo: a connection failed: {e}");
                counts.failed += 1;
                let _ = host.tcp().abort(c.s);
                false
            }
        });
        if usr1.swap(false, Ordering::Relaxed) {
            snapshot(&host, &args, &conns, &held, &counts)?;
        }
        if term.load(Ordering::Relaxed) {
            snapshot(&host, &args, &conns, &held, &counts)?;
            return Ok(());
        }
        if !busy {
            host.wait(Duration::from_millis(10))?;
        }
    }
}

/// Takes what waits in the accept queues; whether anything came.
fn accept(
    host: &mut Host,
    echo: &TcpListener,
    idle: Option<&TcpListener>,
    conns: &mut Vec<Conn>,
    held: &mut Vec<TcpStream>,
    counts: &mut Counts,
) -> Result<bool, BoxError> {
    let mut any = false;
    while let Some((s, _)) = ready(echo.accept(host))? {
        counts.accepted += 1;
        conns.push(Conn {
            s,
            pending: Vec::new(),
            eof: false,
        });
        any = true;
    }
    if let Some(l) = idle {
        while let Some((s, _)) = ready(l.accept(host))? {
            counts.accepted += 1;
            held.push(s);
            any = true;
        }
    }
    Ok(any)
}

/// One echo connection's work: `(anything moved, keep it open)`.
fn serve(
    host: &mut Host,
    c: &mut Conn,
    buf: &mut [u8],
    counts: &mut Counts,
) -> Result<(bool, bool), BoxError> {
    let mut moved = false;
    while !c.eof {
        let room = ECHO_HOLD.saturating_sub(c.pending.len()).min(buf.len());
        if room == 0 {
            break;
        }
        match ready(c.s.read(host, &mut buf[..room]))? {
            Some(0) => c.eof = true,
            Some(n) => {
                moved = true;
                c.pending.extend_from_slice(&buf[..n]);
            }
            None => break,
        }
    }
    while !c.pending.is_empty() {
        match ready(c.s.write(host, &c.pending))? {
            Some(n) if n > 0 => {
                c.pending.drain(..n);
                counts.echoed += n as u64;
                moved = true;
            }
            _ => break,
        }
    }
    if c.eof && c.pending.is_empty() {
        host.tcp().shutdown(&c.s, Shutdown::Write)?;
        return Ok((moved, false));
    }
    Ok((moved, true))
}

/// The resident set size from `/proc/self/statm` (pages × page size; the
/// page size is 4 KiB on the machines this runs on, checked against
/// `/proc/self/smaps_rollup` when it exists).
fn rss_bytes() -> Result<u64, BoxError> {
    if let Ok(s) = std::fs::read_to_string("/proc/self/smaps_rollup") {
        if let Some(kb) = s
            .lines()
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            return Ok(kb * 1024);
        }
    }
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .ok_or("/proc/self/statm: no resident field")?
        .parse()?;
    Ok(pages * 4096)
}

fn snapshot(
    host: &Host,
    args: &Args,
    conns: &[Conn],
    held: &[TcpStream],
    counts: &Counts,
) -> Result<(), BoxError> {
    let stats = GLOBAL.stats();
    // stats_alloc counts a realloc's growth in `bytes_allocated` already.
    let heap = stats.bytes_allocated as i64 - stats.bytes_deallocated as i64;
    let tcp = host
        .stack()
        .module_id("tcp")
        .and_then(|m| host.stack().module::<TcpModule>(m))
        .ok_or("the host has no tcp module")?;
    let l = tcp.listener(args.port).ok_or("the echo listener is gone")?;
    println!(
        "{}",
        json!({
            "conns": conns.len(),
            "idle_conns": held.len(),
            "heap_bytes": heap,
            "rss_bytes": rss_bytes()?,
            "accepted": counts.accepted,
            "echoed": counts.echoed,
            "failed": counts.failed,
            "tcp_connections": tcp.paths_in_use(),
            "syn_queue": l.syn_queue,
            "cookies_sent": l.cookies_sent,
            "cookies_accepted": l.cookies_accepted,
            "overflows": l.overflows,
            "idle_buffer": args.idle_buffer,
        })
    );
    use std::io::Write;
    std::io::stdout().flush()?;
    Ok(())
}
