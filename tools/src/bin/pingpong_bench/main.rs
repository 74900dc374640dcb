//! The main job: 1-byte UDP ping-pong between two pathstack hosts (and
//! with `--transport tcp` the same over one TCP connection; with
//! `--transport rpc` the seeds' second workload, XRPCTEST calls over the
//! RPC stack). The measurement tool behind the short teaching example
//! `examples/pingpong/main.rs` (`cargo run --release --example pingpong`).
//!
//! With no arguments: two stacks in one process joined by the in-memory
//! wire; for each scheduler (per-message, LDLP) and path form (modular
//! STD, path-inlined PIN) it runs `--rounds` round trips and prints RTT
//! median, p99, p99.9 and round trips per second.
//!
//! The heading (wire, and the adapter under ETH) comes first, then one row
//! per configuration as soon as it is measured; a configuration that runs
//! longer than a second reports its progress on stderr about once a
//! second. `--count-only` prints `CONFIG N round trips counted, L lost`
//! rows instead (`scripts/instr.sh` runs it under cachegrind).
//!
//! With `--wire tap`: the same two hosts on the topology of
//! `scripts/netns.sh` — the server on TAP_A in namespace NS_A at PS_A_IP,
//! the client on TAP_B in NS_B at PS_B_IP, bridged across a veth — each on
//! its own thread pinned to its CPU (`--server-cpu`, `--client-cpu`). If
//! NS_A, NS_B, TAP_A, TAP_B, PS_A_IP, PS_B_IP and PREFIX_LEN are in the
//! environment (as `eval "$(scripts/netns.sh up)"` or
//! `scripts/bench-veth.sh` leave them) that topology is used; otherwise a
//! private one (`netns.sh up --id pp<pid>`) is made and torn down at exit.
//! Blocking mode sleeps in `epoll_wait` on the TAP between polls;
//! `--busy-poll` spins, yielding the CPU between empty polls. The client
//! resolves the server's MAC (ARP) during the warm-up, then times each
//! round trip; a round whose echo has not come within 200 ms counts as
//! lost. Needs root (namespaces and TAP devices). Over TAP only
//! per-message/std runs unless `--sched`/`--form` ask otherwise (the
//! kernel's forwarding dominates there; one configuration keeps
//! `scripts/bench-veth.sh` quick).
//!
//! Each side's path is `ECHO / UDP / IP / ARP / ETH / DRIVER`: the server's
//! ECHO turns the datagram around inside the path (the thesis' TCPTEST
//! role: an application module at the top of the path), the client's ECHO
//! leaves the reply in the path's sink. With `--nic lance:copy` or
//! `lance:direct` the bottom stage is the emulated LANCE adapter's driver
//! instead of `DRIVER` (Mosberger, Peterson and O'Malley, *Protocol Latency: MIPS and Reality*, 1995, §2.6), on both hosts and on either wire;
//! PIN then uses the sequence ending in `LANCE`. PIN is the specialized
//! path (`inline::udp_fast_rule`): the stages path-inlined and the common
//! case in the fused fast form of UDP/IP/ARP/ETH
//! (`pathstack_core::fused`), the rest through the inlined stages.
//!
//! ```text
//! cargo run --release -p pathstack-tools --bin pingpong_bench -- [--wire memory|tap] [--transport udp|tcp|rpc]
//!     [--size N] [--rpc-net eth|ip]
//!     [--rounds N] [--warmup W] [--sched per-message|ldlp] [--form std|pin|both]
//!     [--nic tap|lance:copy|lance:direct] [--busy-poll]
//!     [--server-cpu S] [--client-cpu C] [--json FILE]
//! ```
//!
//! With `--transport tcp` the client connects to a listener of the server
//! on port 7, both ends with `TCP_NODELAY` (pathstack's defaults
//! otherwise), and each round sends one octet that the server's
//! application reads and writes back (an application above the socket
//! API, not an in-path echo). PIN specializes both connection paths
//! (`TCP/IP/ARP/ETH/DRIVER`, `pathstack::inet::modules::inline::tcp_fast_rule`:
//! inlined, the links under TCP in the fused fast form) once the
//! handshake is done, in memory with the device under ETH (`--nic
//! tap`); over TAP only the standard form runs. Over TAP a round whose
//! echo has not come within 5 s fails the run (TCP retransmits; nothing is
//! counted as lost). With
//! `--count-only` the handshake runs on the real clock, the rest on the
//! 1 µs-per-poll clock, and a counted run that did not send exactly one
//! segment each way per round (a timer's retransmission or probe, a pure
//! ACK) fails rather than count that work.
//!
//! With `--transport rpc` both hosts run the RPC stack (RPC / MSELECT /
//! VCHAN / CHAN / BID / BLAST over ETH, or over IP / ARP / ETH with
//! `--rpc-net ip`) and the client calls the echo procedure the server
//! registered under the XRPCTEST id (1002), one call at a time: zero-byte
//! requests, or `--size N` bytes. Every reply is checked (its call, its
//! status, its length and bytes). The warm-up's first call waits for the
//! boot-id handshake (BIDCTL). PIN specializes the `RPC` client and
//! server paths of both hosts (`pathstack_rpc::modules::inline::fast_rules`:
//! inlined, an established channel's short calls and replies through
//! every stage between RPC and the driver in the fused fast form,
//! `pathstack_rpc::modules::fast`); a per-message PIN run
//! fails unless the fast form handled every measured call and reply. CHAN
//! retransmits, so over TAP no call is counted as lost; one that takes
//! over 5 s fails the run. A request of 1,444 bytes or more (1,424 over
//! IP) is fragmented by BLAST; up to the largest the stack carries
//! (`host.rpc().max_request()`).
//!
//! The JSON is `{"transport": "udp|tcp|rpc", "wire": "memory|tap", "nic": "…",
//! "results": [{"config": "<sched>/<std|pin>", "rounds": N, "rtt_ns":
//! {"p50", "p99", "p999"}, "round_trips_per_s": X}]}` (over TAP also
//! `"lost"` per result, and the mode and CPUs; with `--transport rpc`
//! also `"size"` and `"rpc_net"`).

use clap::Parser;
use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::rules::Rule;
use pathstack::core::synthetic::{EchoStage, ECHO_SPEC};
use pathstack::core::{Dir, PathId, SchedKind};
use pathstack::devices::lance::{LanceStage, LANCE_SPEC};
use pathstack::devices::{TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::inline;
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// Errors cross the hosts' threads.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

use pathstack_tools::rtt;
use rtt::{RttRecorder, LOSS_TIMEOUT};

mod tcp_pingpong;
use tcp_pingpong::{TcpEchoServer, TcpPinger};

mod rpc_pingpong;

#[derive(Parser, Debug)]
#[command(about = "1-byte UDP or TCP, or XRPCTEST RPC, ping-pong between two pathstack hosts")]
struct Args {
    /// `memory` (two stacks in one process) or `tap` (two TAPs bridged
    /// across a veth, scripts/netns.sh; needs root).
    #[arg(long, default_value = "memory")]
    wire: String,
    /// Transport: `udp` (in-path echo), `tcp` (one connection, nodelay,
    /// the server's application echoes) or `rpc` (XRPCTEST calls of the
    /// echo procedure over the RPC stack).
    #[arg(long, default_value = "udp")]
    transport: String,
    /// With `--transport rpc`: the bytes of each request (and reply);
    /// default 0, the thesis' zero-byte calls.
    #[arg(long)]
    size: Option<usize>,
    /// With `--transport rpc`: the network under BLAST and BIDCTL, `eth`
    /// (EtherTypes 0x3001/0x3006, the default) or `ip` (protocols
    /// 101/205).
    #[arg(long)]
    rpc_net: Option<String>,
    /// Measured round trips per configuration.
    #[arg(long, default_value_t = 50_000)]
    rounds: u64,
    /// Unmeasured round trips first (over TAP they also resolve ARP).
    #[arg(long, default_value_t = 1_000)]
    warmup: u64,
    /// Only this scheduler (`per-message`, `ldlp`); default both in
    /// memory, per-message over TAP.
    #[arg(long)]
    sched: Option<SchedKind>,
    /// Only this path form (`std`, `pin`), or `both`; default both in
    /// memory, std over TAP.
    #[arg(long)]
    form: Option<String>,
    /// The adapter under ETH on both hosts: `tap` (the device itself,
    /// through DRIVER), `lance:copy` or `lance:direct` (the emulated LANCE).
    #[arg(long, default_value = "tap")]
    nic: Nic,
    /// Over TAP: never sleep, spin on the device (yielding between empty
    /// polls) instead of sleeping in epoll.
    #[arg(long)]
    busy_poll: bool,
    /// Over TAP: the CPU of the server's thread.
    #[arg(long, default_value_t = 0)]
    server_cpu: usize,
    /// Over TAP: the CPU of the client's thread.
    #[arg(long, default_value_t = 1)]
    client_cpu: usize,
    /// Frames the driver takes from the device per poll (default: the
    /// driver's, 64; see `HostConfig::rx_burst`).
    #[arg(long)]
    rx_burst: Option<usize>,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// In memory: only count round trips, for instruction counting. The
    /// rounds are not timed and the hosts are given a clock that advances
    /// 1 us per poll instead of reading the OS clock, as `smoltcp_peer
    /// memory --count-only` does, so both run the same work.
    #[arg(long)]
    count_only: bool,
}

const PORT: u16 = 7;

fn config(
    addr: &str,
    mac: Option<MacAddr>,
    sched: SchedKind,
    nic: Nic,
    rx_burst: Option<usize>,
    mode: &str,
) -> Result<HostConfig, BoxError> {
    let mut c = HostConfig::parse(addr)?;
    // `--form` chooses the form of the measured paths, so the host leaves
    // its own paths modular.
    c.specialize = false;
    c.mac = mac;
    c.sched = sched;
    c.nic = nic;
    c.rx_burst = rx_burst;
    c.upper = vec![pathstack::host::UpperModule::new("app", "ECHO")
        .param("mode", mode)
        .over("down", pathstack::host::Below::Udp)];
    Ok(c)
}

/// The specialization rule for the ping-pong path over `nic` (PIN: the
/// stages path-inlined, the common case in the fused fast form): the
/// module sequence ends in the driver stage the NIC puts under ETH.
fn inline_rule(nic: Nic) -> Rule {
    match nic {
        Nic::Device => {
            inline::udp_fast_rule::<EchoStage, DriverStage>(ECHO_SPEC.name, DRIVER_SPEC.name)
        }
        Nic::Lance(_) => {
            inline::udp_fast_rule::<EchoStage, LanceStage>(ECHO_SPEC.name, LANCE_SPEC.name)
        }
    }
}

/// Path-inlines `path` of `h` (PIN), or says why it could not.
fn inline(h: &mut Host, path: PathId, nic: Nic) -> Result<(), BoxError> {
    inline_with(h, path, inline_rule(nic), &format!("for --nic {nic}"))
}

/// Path-inlines `path` of `h` with `rule` (named `what` in the error).
fn inline_with(h: &mut Host, path: PathId, rule: Rule, what: &str) -> Result<(), BoxError> {
    h.stack_mut().add_rule(rule);
    let applied = h.stack_mut().path_optimize(path)?;
    if applied.is_empty() {
        return Err(format!(
            "--form pin: the inlining rule {what} did not apply to the path {} \
             (its stage types do not match the rule's sequence)",
            path_names(h, path)
        )
        .into());
    }
    Ok(())
}

/// The modules of `path` of `h`, top first, as `A/B/C`.
fn path_names(h: &Host, path: PathId) -> String {
    let names: Vec<&str> = h
        .stack()
        .path(path)
        .map(|p| {
            p.modules()
                .iter()
                .filter_map(|&m| h.stack().module_name(m))
                .collect()
        })
        .unwrap_or_default();
    names.join("/")
}

/// The server's passive path: ECHO on UDP port [`PORT`].
fn server_path(h: &mut Host) -> Result<PathId, BoxError> {
    let app = h.stack().module_id("app").ok_or("no app module")?;
    Ok(h.stack_mut().path_create(
        app,
        Attrs::new().with(&PASSIVE_OPEN, true).with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(PORT)],
                remote: vec![],
            },
        ),
    )?)
}

/// The client's active path to `peer`:[`PORT`].
fn client_path(h: &mut Host, peer: Ipv4Addr) -> Result<PathId, BoxError> {
    let app = h.stack().module_id("app").ok_or("no app module")?;
    Ok(h.stack_mut().path_create(
        app,
        Attrs::new().with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(0)],
                remote: vec![AddrPart::Ipv4(peer.octets()), AddrPart::Port(PORT)],
            },
        ),
    )?)
}

/// Two hosts in this process on the in-memory wire, polled in turn the
/// same way whatever the transport.
struct Hosts {
    client: Host,
    server: Host,
    /// The clock given to both hosts with --count-only (else they read
    /// the OS clock in every poll).
    fake_now: Option<pathstack::core::Instant>,
}

impl Hosts {
    fn new(client: Host, server: Host) -> Hosts {
        Hosts {
            client,
            server,
            fake_now: None,
        }
    }

    /// From now on (`--count-only`) both hosts run on a clock that
    /// advances 1 us per poll, from the later of their clocks.
    fn fake_clock(&mut self) {
        self.fake_now = Some(self.client.now().max(self.server.now()));
    }

    /// Polls the client (`client`) or the server.
    fn poll(&mut self, client: bool) {
        let host = if client {
            &mut self.client
        } else {
            &mut self.server
        };
        match &mut self.fake_now {
            Some(now) => {
                *now = *now + pathstack::core::Duration::from_micros(1);
                // The host's own clock too: the socket calls (TCP's
                // `write`, `read`) stamp their work with it, and a
                // wall-clock stamp there would make TCP's RTT samples and
                // timers depend on how fast the run goes.
                host.set_manual_clock(*now);
                host.stack_mut().poll(*now);
            }
            None => {
                host.poll();
            }
        }
    }

    /// The rest of a round trip once the client has sent its request:
    /// polls both hosts until `answered` finds the answer on the client
    /// (`Ok(true)`), or 8 polls of each have passed (`Ok(false)`).
    fn exchange<E>(
        &mut self,
        answered: impl FnMut(&mut Host) -> Result<bool, E>,
    ) -> Result<bool, E> {
        self.exchange_served(|_| Ok(()), answered)
    }

    /// [`Hosts::exchange`] with an application on the server: `serve`
    /// runs on the server after each of its polls (TCP's echo reads and
    /// writes through the socket API, above the path).
    fn exchange_served<E>(
        &mut self,
        mut serve: impl FnMut(&mut Host) -> Result<(), E>,
        mut answered: impl FnMut(&mut Host) -> Result<bool, E>,
    ) -> Result<bool, E> {
        // A lone send has run to the client's device already, under either
        // scheduler (LDLP runs a lone message straight through). Whatever
        // the send left queued, such as an LDLP batch behind other work,
        // runs here; when nothing is queued this is one comparison.
        self.client.stack_mut().run_pending();
        // The server answers in its poll, the client takes the answer in its.
        for _ in 0..8 {
            self.poll(false);
            serve(&mut self.server)?;
            self.poll(true);
            if answered(&mut self.client)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The UDP ping-pong's hosts and the client's path.
struct Pair {
    hosts: Hosts,
    cpath: PathId,
}

fn pair(sched: SchedKind, pin: bool, nic: Nic, rx_burst: Option<usize>) -> Result<Pair, BoxError> {
    let (a, b) = memory_pair(MemoryConfig::default());
    let mac = |n| Some(MacAddr([0x02, 0, 0, 0, 0, n]));
    let mut client = Host::new(
        config("10.0.0.1/24", mac(1), sched, nic, rx_burst, "sink")?,
        a,
    )?;
    let mut server = Host::new(
        config("10.0.0.2/24", mac(2), sched, nic, rx_burst, "echo")?,
        b,
    )?;
    let spath = server_path(&mut server)?;
    let cpath = client_path(&mut client, Ipv4Addr::new(10, 0, 0, 2))?;
    if pin {
        inline(&mut client, cpath, nic)?;
        inline(&mut server, spath, nic)?;
    }
    Ok(Pair {
        hosts: Hosts::new(client, server),
        cpath,
    })
}

impl Pair {
    /// One round trip; `false` if the reply did not come back.
    fn round_trip(&mut self) -> bool {
        let client = &mut self.hosts.client;
        let Ok(m) = client.stack().pool().alloc_copy(b"x") else {
            return false;
        };
        if client.stack_mut().send(self.cpath, Dir::Down, m).is_err() {
            return false;
        }
        let cpath = self.cpath;
        let Ok(echoed) = self.hosts.exchange(|client| {
            Ok::<_, Infallible>(client.stack_mut().recv(cpath, Dir::Up).is_some())
        });
        echoed
    }
}

/// One measured configuration.
struct Result1 {
    config: String,
    /// Round trips asked for (measured or lost).
    rounds: u64,
    rec: RttRecorder,
}

fn sched_name(sched: SchedKind) -> &'static str {
    match sched {
        SchedKind::PerMessage => "per-message",
        SchedKind::Ldlp { .. } => "ldlp",
    }
}

fn config_name(sched: SchedKind, pin: bool) -> String {
    format!("{}/{}", sched_name(sched), if pin { "pin" } else { "std" })
}

/// The configurations to run: (scheduler, pin).
fn configs(args: &Args, tap: bool) -> Result<Vec<(SchedKind, bool)>, BoxError> {
    let scheds = match args.sched {
        Some(s) => vec![s],
        None if tap => vec![SchedKind::PerMessage],
        None => vec![SchedKind::PerMessage, SchedKind::Ldlp { batch: 32 }],
    };
    let forms: Vec<bool> = match args.form.as_deref() {
        Some("std") => vec![false],
        Some("pin") => vec![true],
        Some("both") => vec![false, true],
        None if tap => vec![false],
        None => vec![false, true],
        Some(f) => return Err(format!("form `{f}`: expected std, pin or both").into()),
    };
    Ok(scheds
        .iter()
        .flat_map(|&s| forms.iter().map(move |&p| (s, p)))
        .collect())
}

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pingpong: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), BoxError> {
    let (tcp, rpc) = match args.transport.as_str() {
        "udp" => (false, false),
        "tcp" => (true, false),
        "rpc" => (false, true),
        t => return Err(format!("transport `{t}`: expected `udp`, `tcp` or `rpc`").into()),
    };
    if !rpc && (args.size.is_some() || args.rpc_net.is_some()) {
        return Err("--size and --rpc-net are for --transport rpc".into());
    }
    if tcp
        && matches!(args.form.as_deref(), Some("pin" | "both"))
        && (args.wire != "memory" || !matches!(args.nic, Nic::Device))
    {
        return Err(
            "--transport tcp: --form pin runs in memory with --nic tap only (the TCP \
             inlining rule is made for the DRIVER module)"
                .into(),
        );
    }
    if args.count_only && args.wire != "memory" {
        return Err("--count-only is for --wire memory".into());
    }
    let count_only = args.count_only;
    // Each configuration's row is printed as soon as it is measured.
    let mut row = |r: &Result1| print_row(r, count_only);
    let workload = if rpc {
        rpc_pingpong::RpcArgs::of(&args)?.workload()
    } else {
        format!("1-byte {} ping-pong", args.transport.to_uppercase())
    };
    let results = match args.wire.as_str() {
        "memory" => {
            println!(
                "{workload} over the in-memory wire (two stacks in one process); {}",
                args.nic.description()
            );
            print_columns(count_only);
            if rpc {
                rpc_pingpong::run_memory(&args, &mut row)?
            } else if tcp {
                run_memory_tcp(&args, &mut row)?
            } else {
                run_memory(&args, &mut row)?
            }
        }
        "tap" if rpc => run_tap(
            &args,
            rpc_pingpong::RpcArgs::of(&args)?,
            &workload,
            &mut row,
        )?,
        "tap" => {
            let inet = InetTap {
                nic: args.nic,
                rx_burst: args.rx_burst,
                tcp,
            };
            run_tap(&args, inet, &workload, &mut row)?
        }
        w => return Err(format!("wire `{w}`: expected `memory` or `tap`").into()),
    };
    if count_only {
        return Ok(());
    }
    if let Some(file) = &args.json {
        let tap = args.wire == "tap";
        let mut json = serde_json::json!({
            "transport": args.transport,
            "wire": args.wire,
            "nic": args.nic.name(),
            "results": results.iter().map(|r| {
                let mut o = serde_json::json!({
                    "config": r.config,
                    "rounds": r.rec.rounds(),
                    "rtt_ns": {
                        "p50": r.rec.quantile_ns(0.5),
                        "p99": r.rec.quantile_ns(0.99),
                        "p999": r.rec.quantile_ns(0.999),
                    },
                    "round_trips_per_s": r.rec.round_trips_per_s(),
                });
                if tap {
                    o["lost"] = r.rec.lost_count().into();
                }
                o
            }).collect::<Vec<_>>(),
        });
        if tap {
            json["mode"] = if args.busy_poll {
                "busy-poll"
            } else {
                "blocking"
            }
            .into();
            json["server_cpu"] = args.server_cpu.into();
            json["client_cpu"] = args.client_cpu.into();
        }
        if rpc {
            let r = rpc_pingpong::RpcArgs::of(&args)?;
            json["size"] = r.size.into();
            json["rpc_net"] = r.net_name().into();
        }
        std::fs::write(file, serde_json::to_string_pretty(&json)?)?;
        println!("wrote {}", file.display());
    }
    Ok(())
}

/// The column heads of the result rows (none with --count-only).
fn print_columns(count_only: bool) {
    if !count_only {
        println!(
            "{:<18} {:>8} {:>10} {:>10} {:>10} {:>12}",
            "config", "rounds", "p50 ns", "p99 ns", "p99.9 ns", "RT/s"
        );
    }
}

/// One configuration's result row.
fn print_row(r: &Result1, count_only: bool) {
    if count_only {
        println!(
            "{:<18} {} round trips counted, {} lost",
            r.config,
            r.rounds,
            r.rec.lost_count()
        );
        return;
    }
    println!(
        "{:<18} {:>8} {:>10} {:>10} {:>10} {:>12.0}{}",
        r.config,
        r.rec.rounds(),
        r.rec.quantile_ns(0.5),
        r.rec.quantile_ns(0.99),
        r.rec.quantile_ns(0.999),
        r.rec.round_trips_per_s(),
        if r.rec.lost_count() > 0 {
            format!("  ({} lost)", r.rec.lost_count())
        } else {
            String::new()
        }
    );
}

/// A progress line on stderr for a configuration that runs longer than a
/// second, updated about once a second (in place on a terminal).
struct Progress<'a> {
    config: &'a str,
    rounds: u64,
    started: Instant,
    next: Instant,
    shown: bool,
    tty: bool,
}

impl<'a> Progress<'a> {
    /// Rounds between looks at the clock: rare enough that the look costs
    /// nothing measurable, even in `--count-only` instruction counts.
    const EVERY: u64 = 4096;

    fn new(config: &'a str, rounds: u64) -> Self {
        let now = Instant::now();
        Progress {
            config,
            rounds,
            started: now,
            next: now + Duration::from_secs(1),
            shown: false,
            tty: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }

    /// After round `i` (0-based).
    #[inline]
    fn tick(&mut self, i: u64) {
        if i % Self::EVERY != Self::EVERY - 1 {
            return;
        }
        let now = Instant::now();
        if now < self.next {
            return;
        }
        self.next = now + Duration::from_secs(1);
        self.shown = true;
        let done = i + 1;
        let line = format!(
            "pingpong: {}: {done}/{} round trips ({:.0}%, {:.0} s)",
            self.config,
            self.rounds,
            100.0 * done as f64 / self.rounds.max(1) as f64,
            (now - self.started).as_secs_f64()
        );
        if self.tty {
            eprint!("\r{line}\x1b[K");
        } else {
            eprintln!("{line}");
        }
    }
}

impl Drop for Progress<'_> {
    /// Clears an in-place progress line before the result row.
    fn drop(&mut self) {
        if self.shown && self.tty {
            eprint!("\r\x1b[K");
        }
    }
}

/// Times `rounds` round trips of configuration `config` (`round_trip`
/// says whether the answer came back) with the comparison peers' recorder.
fn measure(
    config: String,
    rounds: u64,
    mut round_trip: impl FnMut() -> Result<bool, BoxError>,
) -> Result<Result1, BoxError> {
    let mut rec = RttRecorder::new(&config);
    let mut progress = Progress::new(&config, rounds);
    let t0 = Instant::now();
    for i in 0..rounds {
        let t = Instant::now();
        let echoed = round_trip()?;
        rec.round(echoed, t.elapsed());
        progress.tick(i);
    }
    rec.set_elapsed(t0.elapsed());
    drop(progress);
    if rec.lost_count() > 0 {
        eprintln!("pingpong: {config}: {} round trips lost", rec.lost_count());
    }
    Ok(Result1 {
        config,
        rounds,
        rec,
    })
}

/// Runs `rounds` round trips of `config` untimed (--count-only): only
/// lost rounds are recorded.
fn count(config: String, rounds: u64, mut round_trip: impl FnMut() -> bool) -> Result1 {
    let mut rec = RttRecorder::new(&config);
    let mut progress = Progress::new(&config, rounds);
    for i in 0..rounds {
        if !round_trip() {
            rec.lost();
        }
        progress.tick(i);
    }
    drop(progress);
    if rec.lost_count() > 0 {
        eprintln!("pingpong: {config}: {} round trips lost", rec.lost_count());
    }
    Result1 {
        config,
        rounds,
        rec,
    }
}

/// Both hosts in this process, on the in-memory wire; `row` gets each
/// configuration's result as it is done.
fn run_memory(args: &Args, row: &mut dyn FnMut(&Result1)) -> Result<Vec<Result1>, BoxError> {
    let mut results = Vec::new();
    for (sched, pin) in configs(args, false)? {
        let mut p = match pair(sched, pin, args.nic, args.rx_burst) {
            Ok(p) => p,
            // The default run skips a form the NIC cannot take rather
            // than fail; an explicit --form pin reports the error.
            Err(e) if pin && args.form.is_none() => {
                eprintln!("note: skipping {}: {e}", config_name(sched, pin));
                continue;
            }
            Err(e) => return Err(e),
        };
        if args.count_only {
            p.hosts.fake_clock();
        }
        for _ in 0..args.warmup {
            if !p.round_trip() {
                return Err("warm-up round trip lost".into());
            }
        }
        let config = config_name(sched, pin);
        let r = if args.count_only {
            count(config, args.rounds, || p.round_trip())
        } else {
            measure(config, args.rounds, || Ok(p.round_trip()))?
        };
        row(&r);
        results.push(r);
    }
    Ok(results)
}

/// The TCP ping-pong's hosts: the server's application and the client's
/// end of the connection.
struct TcpPair {
    hosts: Hosts,
    srv: TcpEchoServer,
    ping: TcpPinger,
}

impl TcpPair {
    /// Two hosts on the in-memory wire, connected (handshake on the real
    /// clock: the connection's first RTT sample is then of the same kind
    /// whether or not the rounds are counted).
    fn connect(sched: SchedKind, pin: bool, args: &Args) -> Result<TcpPair, BoxError> {
        let (a, b) = memory_pair(MemoryConfig::default());
        let mac = |n| Some(MacAddr([0x02, 0, 0, 0, 0, n]));
        let nic = args.nic;
        let mut client = Host::new(
            config("10.0.0.1/24", mac(1), sched, nic, args.rx_burst, "sink")?,
            a,
        )?;
        let mut server = Host::new(
            config("10.0.0.2/24", mac(2), sched, nic, args.rx_burst, "echo")?,
            b,
        )?;
        let mut srv = TcpEchoServer::listen(&mut server, PORT)?;
        let ping = TcpPinger::connect(&mut client, Ipv4Addr::new(10, 0, 0, 2), PORT)?;
        let mut hosts = Hosts::new(client, server);
        let mut handshake = 0;
        // Until both ends have the connection (the server's accept too).
        while !hosts.client.tcp().is_connected(&ping.s)? || srv.conn().is_none() {
            hosts.poll(true);
            hosts.poll(false);
            srv.serve(&mut hosts.server)?;
            handshake += 1;
            if handshake > 1000 {
                return Err("the TCP handshake over the in-memory wire did not complete".into());
            }
        }
        if pin {
            let conn = srv.conn().ok_or("the server has no connection")?;
            let paths = [(&mut hosts.client, ping.s), (&mut hosts.server, conn)];
            for (host, s) in paths {
                let path = host.tcp().path_id(&s)?;
                let rule = inline::tcp_fast_rule::<DriverStage>(DRIVER_SPEC.name);
                inline_with(host, path, rule, "for TCP")?;
            }
        }
        Ok(TcpPair { hosts, srv, ping })
    }

    /// What both ends have sent so far: (segments, of them sent because a
    /// timer fired or loss was suspected — retransmissions, RFC 6298 and
    /// RFC 8985, tail-loss, window and keepalive probes).
    fn segments(&self) -> Result<(u64, u64), BoxError> {
        let (mut all, mut timed) = (0, 0);
        let ends = [
            (&self.hosts.client, Some(self.ping.s)),
            (&self.hosts.server, self.srv.conn()),
        ];
        for (host, s) in ends {
            let s = s.ok_or("the server has no connection")?;
            let st = pathstack::socket::Tcp::of(host).stats(&s)?;
            all += st.segs_out;
            timed += st.retrans_segs + st.tlp_probes + st.window_probes + st.keepalive_probes;
        }
        Ok((all, timed))
    }

    /// One round trip: the client writes its octet, the server's
    /// application echoes it after the server's poll; `Ok(false)` if the
    /// echo was not read within 8 polls of each host.
    fn round_trip(&mut self) -> Result<bool, BoxError> {
        let TcpPair { hosts, srv, ping } = self;
        ping.send(&mut hosts.client)?;
        hosts.exchange_served(
            |server| srv.serve(server).map(drop),
            |client| ping.echoed(client),
        )
    }
}

/// The TCP ping-pong of two hosts in this process, on the in-memory wire.
/// With `--count-only` the hosts run on the 1 µs-per-poll clock after
/// the handshake: the rounds take a few µs of it each, far below every
/// TCP timer (RTO at least 200 ms, RFC 6298 §2.4 as Linux; delayed ACK
/// 40 ms; the tail-loss probe 2·SRTT plus the peer's ACK delay, RFC 8985
/// §7.2), and each round's echo acknowledges its octet and the next
/// octet acknowledges the echo, so no timer fires and no segment is
/// retransmitted: the counted work is the same in every round.
fn run_memory_tcp(args: &Args, row: &mut dyn FnMut(&Result1)) -> Result<Vec<Result1>, BoxError> {
    let mut results = Vec::new();
    // The TCP inlining rule is made for the DRIVER module (checked above
    // when --form asks for pin).
    let device = matches!(args.nic, Nic::Device);
    for (sched, pin) in configs(args, false)?
        .into_iter()
        .filter(|&(_, pin)| device || !pin)
    {
        let mut p = TcpPair::connect(sched, pin, args)?;
        if args.count_only {
            p.hosts.fake_clock();
        }
        for _ in 0..args.warmup {
            if !p.round_trip()? {
                return Err("warm-up round trip did not complete in 8 polls".into());
            }
        }
        let before = p.segments()?;
        let config = config_name(sched, pin);
        let r = if args.count_only {
            let mut error = None;
            let r = count(config, args.rounds, || match p.round_trip() {
                Ok(ok) => ok,
                Err(e) => {
                    error.get_or_insert(e);
                    false
                }
            });
            if let Some(e) = error {
                return Err(e);
            }
            r
        } else {
            measure(config, args.rounds, || p.round_trip())?
        };
        if r.rec.lost_count() > 0 {
            return Err(format!(
                "{} TCP round trips did not complete in 8 polls",
                r.rec.lost_count()
            )
            .into());
        }
        let after = p.segments()?;
        let (sent, timed) = (after.0 - before.0, after.1 - before.1);
        // Counted work must be the ping-pong alone: one segment each way
        // per round (the echo carries the ACK of its octet, the next octet
        // the ACK of the echo), none from a timer, no pure ACK.
        if args.count_only && (timed > 0 || sent != 2 * args.rounds) {
            return Err(format!(
                "{sent} TCP segments ({timed} from timers: retransmissions, probes) in \
                 {} counted round trips, not one each way per round: the counts would not \
                 be of the ping-pong alone",
                args.rounds
            )
            .into());
        }
        row(&r);
        results.push(r);
    }
    Ok(results)
}

// ---------------------------------------------------------------------------
// Over TAP/veth.

/// The netns.sh topology variables this tool needs.
const TOPOLOGY_VARS: [&str; 7] = [
    "NS_A",
    "NS_B",
    "TAP_A",
    "TAP_B",
    "PS_A_IP",
    "PS_B_IP",
    "PREFIX_LEN",
];

/// The `scripts/netns.sh` of this source tree.
const NETNS_SH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/netns.sh");

/// The two-namespace topology of `scripts/netns.sh`; tears it down when
/// dropped if this process made it (also on error and panic unwinding).
struct Topology {
    vars: HashMap<String, String>,
    own_id: Option<String>,
}

impl Topology {
    /// The topology named by the environment, or else a private one.
    fn get() -> Result<Topology, BoxError> {
        let present: Vec<&str> = TOPOLOGY_VARS
            .iter()
            .copied()
            .filter(|v| std::env::var_os(v).is_some())
            .collect();
        if present.len() == TOPOLOGY_VARS.len() {
            let vars = TOPOLOGY_VARS
                .iter()
                .map(|&v| (v.to_string(), std::env::var(v).unwrap_or_default()))
                .collect();
            return Ok(Topology { vars, own_id: None });
        }
        if !present.is_empty() {
            let missing: Vec<&str> = TOPOLOGY_VARS
                .iter()
                .copied()
                .filter(|v| !present.contains(v))
                .collect();
            return Err(format!(
                "--wire tap: the environment has part of a netns.sh topology ({}) but not {}; \
                 set all of them (eval \"$(scripts/netns.sh up)\") or none (a private topology is made)",
                present.join(", "),
                missing.join(", ")
            )
            .into());
        }
        let id = format!("pp{}", std::process::id());
        let out = std::process::Command::new(NETNS_SH)
            .args(["up", "--id", &id])
            .output()
            .map_err(|e| format!("running {NETNS_SH}: {e}"))?;
        // From here on the guard removes whatever part `up` made.
        let mut topo = Topology {
            vars: HashMap::new(),
            own_id: Some(id),
        };
        if !out.status.success() {
            return Err(format!(
                "{NETNS_SH} up failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
            .into());
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((k, v)) = line.split_once('=') {
                let v = v.trim().trim_matches(['\'', '"']);
                topo.vars.insert(k.trim().to_string(), v.to_string());
            }
        }
        if let Some(v) = TOPOLOGY_VARS.iter().find(|v| !topo.vars.contains_key(**v)) {
            return Err(format!("{NETNS_SH} up did not print {v}").into());
        }
        Ok(topo)
    }

    fn var(&self, name: &str) -> &str {
        self.vars.get(name).map_or("", String::as_str)
    }

    fn ip(&self, name: &str) -> Result<Ipv4Addr, BoxError> {
        self.var(name)
            .parse()
            .map_err(|e| format!("{name}={:?}: {e}", self.var(name)).into())
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if let Some(id) = &self.own_id {
            let status = std::process::Command::new(NETNS_SH)
                .args(["down", "--id", id])
                .status();
            if !matches!(status, Ok(s) if s.success()) {
                eprintln!("pingpong: warning: `{NETNS_SH} down --id {id}` failed: {status:?}");
            }
        }
    }
}

/// Whether this process may make namespaces and open TAPs: it needs
/// CAP_NET_ADMIN (TUNSETIFF, `ip link`) and CAP_SYS_ADMIN (setns).
fn check_privileges() -> Result<(), BoxError> {
    const CAP_NET_ADMIN: u32 = 12;
    const CAP_SYS_ADMIN: u32 = 21;
    let status = std::fs::read_to_string("/proc/self/status")?;
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let has = |cap: u32| eff & (1u64 << cap) != 0;
    if has(CAP_NET_ADMIN) && has(CAP_SYS_ADMIN) {
        Ok(())
    } else {
        Err(
            "--wire tap needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN: it opens TAP devices inside \
             network namespaces, and makes them with scripts/netns.sh unless the environment \
             names them); run it with sudo, or use --wire memory"
                .into(),
        )
    }
}

/// Pins the calling thread to `cpu`.
fn pin_to(cpu: usize, who: &str) -> Result<(), BoxError> {
    let n = core_affinity::get_core_ids().map_or(0, |v| v.len());
    if cpu >= n {
        return Err(format!(
            "--{who}-cpu {cpu}: this machine has {n} CPUs (0 to {})",
            n.saturating_sub(1)
        )
        .into());
    }
    if core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        Ok(())
    } else {
        Err(format!("cannot pin the {who} thread to CPU {cpu}").into())
    }
}

/// One end over TAP: where its device is and how its host runs; what the
/// transport puts on the host is the transport's ([`TapPingPong`]).
#[derive(Clone)]
struct End {
    netns: String,
    tap: String,
    ip: Ipv4Addr,
    prefix: String,
    cpu: usize,
    sched: SchedKind,
    pin: bool,
    mode: WaitMode,
}

impl End {
    /// The end's address with its prefix length, as `HostConfig::parse`
    /// takes it.
    fn cidr(&self) -> String {
        format!("{}/{}", self.ip, self.prefix)
    }

    /// Pins this thread, opens the TAP in its namespace and builds the
    /// host with the configuration `config` makes for the TAP's MAC.
    fn host(
        &self,
        who: &str,
        config: impl FnOnce(MacAddr) -> Result<HostConfig, BoxError>,
    ) -> Result<Host, BoxError> {
        pin_to(self.cpu, who)?;
        let tap = TapDevice::open(&self.tap, TapOptions::new().netns(self.netns.clone()))
            .map_err(|e| format!("{who}: opening TAP {} in {}: {e}", self.tap, self.netns))?;
        let waiter = tap.waiter()?;
        let cfg = config(MacAddr(tap.mac()))?;
        Ok(Host::new(cfg, tap)?.with_waiter(waiter, self.mode))
    }
}

/// What a transport plugs into [`run_tap`]: the server's and the client's
/// threads. The runner does the rest (topology, heading, threads, rows).
trait TapPingPong: Clone + Send + 'static {
    /// How the server names itself to the client once it is ready.
    type Peer: Send + 'static;

    /// The server's thread: builds its host on `end`, sends `ready` how
    /// it is named, and answers until `stop`; returns the host's report.
    fn serve(
        self,
        end: End,
        ready: mpsc::Sender<Self::Peer>,
        stop: Arc<AtomicBool>,
    ) -> Result<String, BoxError>;

    /// The client's thread: builds its host on `end`, warms up against
    /// `peer`, then measures `rounds` round trips; returns them and the
    /// host's report.
    fn client(
        self,
        end: End,
        peer: Self::Peer,
        warmup: u64,
        rounds: u64,
        interrupted: Arc<AtomicBool>,
    ) -> Result<(Result1, String), BoxError>;
}

/// A server whose answers happen inside its paths: polls `host` until
/// `stop`, and returns its report.
fn poll_until(host: &mut Host, stop: &AtomicBool) -> Result<String, BoxError> {
    while !stop.load(Ordering::Relaxed) {
        host.poll();
        // Bounded, so that `stop` is seen promptly while idle.
        host.wait(Duration::from_millis(20))?;
    }
    Ok(host.report())
}

/// The UDP and TCP ping-pong over TAP.
#[derive(Clone, Copy)]
struct InetTap {
    nic: Nic,
    rx_burst: Option<usize>,
    /// TCP ping-pong instead of UDP.
    tcp: bool,
}

impl InetTap {
    /// Builds the host of `end` with the ECHO module in `app_mode`.
    fn host(&self, end: &End, who: &str, app_mode: &str) -> Result<Host, BoxError> {
        end.host(who, |mac| {
            config(
                &end.cidr(),
                Some(mac),
                end.sched,
                self.nic,
                self.rx_burst,
                app_mode,
            )
        })
    }
}

impl TapPingPong for InetTap {
    type Peer = Ipv4Addr;

    /// Echoes until `stop`.
    fn serve(
        self,
        end: End,
        ready: mpsc::Sender<Ipv4Addr>,
        stop: Arc<AtomicBool>,
    ) -> Result<String, BoxError> {
        let mut host = self.host(&end, "server", "echo")?;
        if self.tcp {
            let mut srv = TcpEchoServer::listen(&mut host, PORT)?;
            let _ = ready.send(end.ip);
            while !stop.load(Ordering::Relaxed) {
                host.poll();
                if !srv.serve(&mut host)? {
                    host.wait(Duration::from_millis(20))?;
                }
            }
            return Ok(host.report());
        }
        let path = server_path(&mut host)?;
        if end.pin {
            inline(&mut host, path, self.nic)?;
        }
        let _ = ready.send(end.ip);
        poll_until(&mut host, &stop)
    }

    /// Warm-up (ARP), then the measured rounds.
    fn client(
        self,
        end: End,
        peer: Ipv4Addr,
        warmup: u64,
        rounds: u64,
        interrupted: Arc<AtomicBool>,
    ) -> Result<(Result1, String), BoxError> {
        let host = self.host(&end, "client", "sink")?;
        if self.tcp {
            return tcp_client(host, &end, peer, warmup, rounds, interrupted);
        }
        udp_client(host, &end, self.nic, peer, warmup, rounds, interrupted)
    }
}

/// The client side over TAP.
struct TapClient {
    host: Host,
    path: PathId,
    seq: u8,
}

impl TapClient {
    /// One round trip: `Ok(false)` if the echo did not come within
    /// [`LOSS_TIMEOUT`]. The payload byte is the round number (mod 256),
    /// so that a late echo of a lost round is not taken for this one's.
    fn round_trip(&mut self) -> Result<bool, BoxError> {
        self.seq = self.seq.wrapping_add(1);
        let t0 = Instant::now();
        let m = self
            .host
            .stack()
            .pool()
            .alloc_copy(&[self.seq])
            .map_err(|e| format!("allocating a message: {e:?}"))?;
        self.host
            .stack_mut()
            .send(self.path, Dir::Down, m)
            .map_err(|_| "the client path's source queue is full")?;
        // Run the path (transmit) without a full poll: the echo cannot be
        // there yet, so reading the device now would be a wasted syscall.
        self.host.stack_mut().run_pending();
        loop {
            let left = LOSS_TIMEOUT.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Ok(false);
            }
            self.host.wait(left)?;
            self.host.poll();
            while let Some(r) = self.host.stack_mut().recv(self.path, Dir::Up) {
                if r.as_slice() == [self.seq] {
                    return Ok(true);
                }
            }
        }
    }
}

/// The client's thread with `--transport udp`: warm-up (ARP), then the
/// measured rounds.
fn udp_client(
    mut host: Host,
    end: &End,
    nic: Nic,
    peer: Ipv4Addr,
    warmup: u64,
    rounds: u64,
    interrupted: Arc<AtomicBool>,
) -> Result<(Result1, String), BoxError> {
    let path = client_path(&mut host, peer)?;
    if end.pin {
        inline(&mut host, path, nic)?;
    }
    let mut c = TapClient { host, path, seq: 0 };
    // The first echo needs ARP (RFC 826) to resolve the server; allow a
    // few seconds for it and for the bridges to settle.
    let mut first = false;
    for _ in 0..25 {
        if c.round_trip()? {
            first = true;
            break;
        }
    }
    if !first {
        return Err(format!(
            "no echo from the server at {peer}:{PORT} within 5 s (ARP or topology?)\n{}",
            c.host.report()
        )
        .into());
    }
    let mut warm_lost = 0u64;
    for _ in 0..warmup {
        if !c.round_trip()? {
            warm_lost += 1;
        }
    }
    if warm_lost > 0 {
        eprintln!("pingpong: {warm_lost} warm-up round trips lost");
    }
    let r = measure(config_name(end.sched, end.pin), rounds, || {
        if interrupted.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        c.round_trip()
    })?;
    Ok((r, c.host.report()))
}

/// How long a TCP round may take over TAP before the run fails.
const TCP_ROUND_TIMEOUT: Duration = Duration::from_secs(5);

/// The client's thread with `--transport tcp`: connect (ARP, handshake),
/// warm-up, then the measured rounds.
fn tcp_client(
    mut host: Host,
    end: &End,
    peer: Ipv4Addr,
    warmup: u64,
    rounds: u64,
    interrupted: Arc<AtomicBool>,
) -> Result<(Result1, String), BoxError> {
    let mut ping = TcpPinger::connect(&mut host, peer, PORT)?;
    let by = Instant::now() + Duration::from_secs(5);
    while !host.tcp().is_connected(&ping.s)? {
        if Instant::now() > by {
            return Err(format!(
                "no TCP connection to {peer}:{PORT} within 5 s (ARP or topology?)\n{}",
                host.report()
            )
            .into());
        }
        host.poll();
        host.wait(Duration::from_millis(10))?;
    }
    let mut round_trip = |host: &mut Host| -> Result<bool, BoxError> {
        let t0 = Instant::now();
        ping.send(host)?;
        loop {
            host.poll();
            if ping.echoed(host)? {
                return Ok(true);
            }
            let left = TCP_ROUND_TIMEOUT.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Err(format!("no TCP echo within {TCP_ROUND_TIMEOUT:?}").into());
            }
            host.wait(left.min(Duration::from_millis(20)))?;
        }
    };
    for _ in 0..warmup {
        round_trip(&mut host)?;
    }
    let r = measure(config_name(end.sched, false), rounds, || {
        if interrupted.load(Ordering::Relaxed) {
            return Err("interrupted".into());
        }
        round_trip(&mut host)
    })?;
    Ok((r, host.report()))
}

/// Turns a thread's panic into an error.
fn joined<T>(h: std::thread::JoinHandle<Result<T, BoxError>>, who: &str) -> Result<T, BoxError> {
    h.join()
        .unwrap_or_else(|_| Err(format!("the {who} thread panicked").into()))
}

/// The two hosts on TAPs bridged across a veth (scripts/netns.sh), each
/// on its thread running `transport`'s side; `workload` heads the output.
fn run_tap<T: TapPingPong>(
    args: &Args,
    transport: T,
    workload: &str,
    row: &mut dyn FnMut(&Result1),
) -> Result<Vec<Result1>, BoxError> {
    check_privileges()?;
    let configs = configs(args, true)?;
    // SIGINT/SIGTERM (e.g. from `timeout`) end the run through the normal
    // path, so that a private topology is torn down.
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&interrupted))?;
    let topo = Topology::get()?;
    let prefix = topo.var("PREFIX_LEN");
    let server_ip = topo.ip("PS_A_IP")?;
    let client_ip = topo.ip("PS_B_IP")?;
    let mode = if args.busy_poll {
        WaitMode::BusyPoll
    } else {
        WaitMode::Blocking
    };
    println!(
        "{workload} over TAP/veth ({} {} ↔ {} {}); {}; {}, server CPU {}, client CPU {}",
        topo.var("TAP_B"),
        client_ip,
        topo.var("TAP_A"),
        server_ip,
        args.nic.description(),
        if args.busy_poll {
            "busy-poll"
        } else {
            "blocking"
        },
        args.server_cpu,
        args.client_cpu,
    );
    print_columns(false);
    let mut results = Vec::new();
    for (sched, pin) in configs {
        let server = End {
            netns: topo.var("NS_A").into(),
            tap: topo.var("TAP_A").into(),
            ip: server_ip,
            prefix: prefix.into(),
            cpu: args.server_cpu,
            sched,
            pin,
            mode,
        };
        let client_end = End {
            netns: topo.var("NS_B").into(),
            tap: topo.var("TAP_B").into(),
            ip: client_ip,
            cpu: args.client_cpu,
            ..server.clone()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        // The server runs until the client is done (an interruption ends
        // the client, which ends the server).
        let server_thread = {
            let stop = Arc::clone(&stop);
            let transport = transport.clone();
            std::thread::Builder::new()
                .name("pingpong-server".into())
                .spawn(move || transport.serve(server, ready_tx, stop))?
        };
        let stop_server = |stop: &AtomicBool| stop.store(true, Ordering::Relaxed);
        let peer = match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(p) => p,
            Err(_) => {
                stop_server(&stop);
                return Err(match joined(server_thread, "server") {
                    Err(e) => format!("server: {e}").into(),
                    Ok(_) => "the server did not get ready within 10 s".into(),
                });
            }
        };
        let (warmup, rounds) = (args.warmup, args.rounds);
        let client_thread = {
            let interrupted = Arc::clone(&interrupted);
            let transport = transport.clone();
            std::thread::Builder::new()
                .name("pingpong-client".into())
                .spawn(move || transport.client(client_end, peer, warmup, rounds, interrupted))?
        };
        let measured = joined(client_thread, "client");
        stop_server(&stop);
        let server_report = joined(server_thread, "server");
        let (r, client_report) = measured?;
        let server_report = server_report?;
        if r.rec.lost_count() > 0 {
            // `measure` said how many; the reports say where they went.
            eprintln!("pingpong: client:\n{client_report}server:\n{server_report}");
        }
        row(&r);
        results.push(r);
    }
    Ok(results)
}
