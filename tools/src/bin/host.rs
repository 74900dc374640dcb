//! An Internet host on a TAP device: answers ARP and ping (any size up to
//! the reassembly limit), runs the UDP echo (port 7, RFC 862) and discard
//! (port 9, RFC 863) services and the TCP echo (7), discard (9) and
//! chargen (19, RFC 864) services for many connections at once,
//! optionally pings a peer or echoes a file through a peer's TCP echo
//! service (`--tcp-client ADDR:PORT --file FILE`), and prints
//! per-module and per-path statistics at the end (on SIGINT/SIGTERM, after
//! `--seconds`, or once the pings are done) and, with `--stats SECS`,
//! the per-path ones every SECS seconds while it runs.
//!
//! ```text
//! cargo run --release -p pathstack-tools --bin host -- (--netns | --tap NAME --ip ADDR/PREFIX [--netns NS]) \
//!     [--nic tap|lance:copy|lance:direct] [--no-udp-services] [--no-tcp-services] \
//!     [--tcp-client ADDR:PORT [--file FILE]] [--rpc eth|ip] \
//!     [--gateway ADDR] [--mac MAC] [--pcap FILE] [--busy-poll] [--offload on|off] [--json FILE] \
//!     [--stats SECS] [--ping [ADDR] [--count N] [--size BYTES] [--interval-ms MS]] [--seconds S]
//! ```
//!
//! Needs root (it opens a TAP device). Three ways to give it one:
//!
//! * `--netns` alone: a private network namespace `ps-host-<pid>` with the
//!   TAP `pshost<pid>` in it, the Linux side of the TAP at the first other
//!   address of the host's network (10.77.0.2/24 with the default
//!   `--ip 10.77.0.1/24`); all of it is removed when the host exits,
//!   Ctrl-C and errors included. `--ping` with no address pings that
//!   kernel side; the host prints the command that pings it back.
//! * `--tap NAME --netns NS`: the TAP `NAME` inside the existing namespace
//!   `NS` (e.g. from `scripts/netns.sh`), created if absent.
//! * `--tap NAME`: the TAP in this namespace, created if absent. The Linux
//!   side then needs an address on the host's network before it can reach
//!   the host: `sudo ip addr add 10.0.0.2/24 dev NAME` while the host runs.
//!
//! `--nic` chooses what stands between ETH and the TAP: the TAP itself
//! (`tap`, the generic `WIRE` driver) or the emulated Am7990 LANCE with
//! DEC 3000 sparse memory (Mosberger, Peterson and O'Malley, *Protocol
//! Latency: MIPS and Reality*, 1995, §2.6), its descriptors copied to
//! dense memory (`lance:copy`) or accessed in place (`lance:direct`).
//!
//! `--ping` prints a line per reply and ping(8)'s summary (transmitted,
//! received, loss, min/avg/max/mdev of the round-trip times), and says so
//! when the peer never answered ARP. Exit status 2 if a request went
//! unanswered.
//!
//! The statistics: per module its counters and drops by reason; per path
//! its module sequence and the messages that entered and left it in each
//! direction (down: towards the device; up: towards the application),
//! those a stage kept, and drops by reason; then its resources: its
//! admission class, the bytes that entered and left it each way, the
//! processing time charged to it (0 unless the host accounts CPU time,
//! `HostConfig::account_cpu`, which `--stats` turns on: it costs a clock
//! read per scheduler turn and two per direct run of a path) and the
//! buffer bytes held in its queues, now and at most. `--json FILE` (`-`
//! for stdout) writes them, and the ping summary, as one JSON object
//! instead of text.
//!
//! `--stats SECS` prints the per-path tables (messages, drops, bytes, CPU
//! time, buffers held; totals since the start) every SECS seconds under
//! `--- path statistics at T s ---`, and everything at the end as
//! without it. With `--json FILE` as well, the JSON output becomes JSON
//! Lines, so that it can be followed while the host runs
//! (`tail -f FILE | jq .`): one compact object per line, written and
//! flushed as it is taken — `{"elapsed_s": T, "paths": [...]}` every SECS
//! seconds, then the full report of the end with `"final": true` and
//! `"elapsed_s"` added as the last line. `--json -` writes these lines to
//! stdout, among the host's other (non-JSON) lines; each JSON line begins
//! with `{`.
//!
//! ```text
//! sudo target/release/host --netns --ping --count 20 --stats 1 --json stats.jsonl
//! jq -c '.paths[] | {id, cpu_ns, held_bytes}' stats.jsonl
//! ```
//!
//! The echo service is the thesis' in-path echo: an `ECHO mode=echo`
//! module at the top of a passive UDP path bound to port 7 turns each
//! datagram around inside the path, so the reply never leaves the stack's
//! packet loop. Discard is a passive UDP path bound to port 9 whose sink
//! the main loop empties and counts. Try them from the kernel side:
//!
//! ```text
//! echo hello | socat -t1 - UDP:10.77.0.1:7     # prints hello
//! echo hello | socat -t1 - UDP:10.77.0.1:9     # prints nothing; counted
//! echo hello | socat - TCP:10.77.0.1:7         # prints hello (TCP echo)
//! socat -u TCP:10.77.0.1:19 - | head -2        # chargen's first lines
//! ```
//!
//! `--tcp-client ADDR:PORT` connects to a TCP echo service, sends the
//! file (`--file`, default 1 MB of generated bytes), reads the echo back,
//! compares, and exits (status 3 if the echo differed).
//!
//! `--rpc eth|ip` adds the x-kernel RPC stack (BLAST and BIDCTL directly
//! on Ethernet, or on IP) and serves the echo procedure under the
//! XRPCTEST id, 1002, to any RPC peer, at most once per call; the peer
//! names this host by its MAC address over ETH, by its IPv4 address over
//! IP (`pingpong_bench --transport rpc` is such a client).

use pathstack_tools::tcp_services;

use clap::Parser;
use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::device::{WireStage, WIRE_SPEC};
use pathstack::core::synthetic::{EchoStage, ECHO_SPEC};
use pathstack::core::{Dir, PathId, Stack};
use pathstack::devices::lance::{LanceStage, LANCE_SPEC};
use pathstack::devices::{PcapCapture, TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::inline;
use pathstack::inet::modules::{ArpModule, IpModule};
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use pathstack::rpc::{Echo, RpcNet};
use pathstack::rpc_protocols::modules::protocol::XRPCTEST_ID;
use serde_json::{json, Value};
use std::net::Ipv4Addr;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tcp_services::{EchoClient, TcpServices};

#[derive(Parser, Debug)]
#[command(about = "A pathstack Internet host on a TAP device")]
struct Args {
    /// TAP interface name (created if absent); default with a private
    /// --netns: pshost and the process id (pshost1234).
    #[arg(long)]
    tap: Option<String>,
    /// Our address and prefix length, e.g. 10.77.0.1/24 (the default with
    /// a private --netns).
    #[arg(long)]
    ip: Option<String>,
    /// Default gateway.
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
    /// The adapter between ETH and the TAP: `tap` (the device itself),
    /// `lance:copy` or `lance:direct` (the emulated LANCE).
    #[arg(long, default_value = "tap")]
    nic: Nic,
    /// Do not run the UDP echo (port 7) and discard (port 9) services.
    #[arg(long)]
    no_udp_services: bool,
    /// Do not run the TCP echo (7), discard (9) and chargen (19) services.
    #[arg(long)]
    no_tcp_services: bool,
    /// Echo a file through the TCP echo service at this address, check
    /// it, and exit.
    #[arg(long, value_name = "ADDR:PORT")]
    tcp_client: Option<std::net::SocketAddr>,
    /// The file `--tcp-client` sends (default: 1 MB of generated bytes).
    #[arg(long, value_name = "FILE")]
    file: Option<std::path::PathBuf>,
    /// Run the RPC stack on `eth` or `ip` and serve the echo procedure
    /// (XRPCTEST, id 1002).
    #[arg(long, value_name = "eth|ip")]
    rpc: Option<RpcNet>,
    /// Our MAC address (default: derived from the TAP's kernel-side MAC).
    #[arg(long)]
    mac: Option<MacAddr>,
    /// Write every frame in and out to this pcap file.
    #[arg(long)]
    pcap: Option<std::path::PathBuf>,
    /// Never sleep: poll the device, yielding the CPU between empty polls.
    #[arg(long)]
    busy_poll: bool,
    /// Run the sockets' and services' paths modular instead of specialized
    /// (`HostConfig::specialize`), for comparison.
    #[arg(long)]
    modular: bool,
    /// TAP offloads (checksum and TCP segmentation offload both ways, as
    /// far as the kernel accepts them): on or off (the default).
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = on_off, action = clap::ArgAction::Set)]
    offload: bool,
    /// With a name: open the TAP inside that existing network namespace.
    /// Alone: make a private namespace with the TAP and the kernel-side
    /// address in it, removed on exit.
    #[arg(long, value_name = "NS", num_args = 0..=1)]
    netns: Option<Option<String>>,
    /// Ping this address (default with a private --netns: its kernel side).
    #[arg(long, value_name = "ADDR", num_args = 0..=1)]
    ping: Option<Option<Ipv4Addr>>,
    /// Echo requests to send with --ping.
    #[arg(long, default_value_t = 5)]
    count: u16,
    /// Data bytes per echo request.
    #[arg(long, default_value_t = 56)]
    size: usize,
    /// Milliseconds between echo requests.
    #[arg(long, default_value_t = 100)]
    interval_ms: u64,
    /// Stop after this many seconds (default: run until SIGINT/SIGTERM, or
    /// until the pings are done when --ping is given).
    #[arg(long)]
    seconds: Option<f64>,
    /// Write the statistics (and the ping summary) as JSON to this file,
    /// `-` for stdout, instead of printing them as text (JSON Lines with
    /// --stats).
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Every SECS seconds (fractions allowed), print the per-path
    /// statistics; turns on CPU time accounting.
    #[arg(long, value_name = "SECS", value_parser = interval)]
    stats: Option<Duration>,
}

/// Our address when a private namespace is made and `--ip` is not given.
const PRIVATE_IP: &str = "10.77.0.1/24";

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("host: {e}");
            ExitCode::FAILURE
        }
    }
}

type BoxError = Box<dyn std::error::Error>;

fn run(args: Args) -> Result<ExitCode, BoxError> {
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop))?;

    let private = matches!(args.netns, Some(None));
    let ip = match (&args.ip, private) {
        (Some(ip), _) => ip.clone(),
        (None, true) => PRIVATE_IP.to_string(),
        (None, false) => return Err("--ip ADDR/PREFIX is needed (or --netns alone)".into()),
    };
    let mut cfg = HostConfig::parse(&ip)?;
    let tap_name = match (&args.tap, private) {
        (Some(t), _) => t.clone(),
        (None, true) => format!("pshost{}", std::process::id()),
        (None, false) => return Err("--tap NAME is needed (or --netns alone)".into()),
    };

    // Declared before the host, so dropped after it: the TAP is closed
    // before its namespace goes.
    let netns = if private {
        let kernel = kernel_side(cfg.addr, cfg.prefix_len)?;
        Some(PrivateNetns::create(kernel, cfg.prefix_len)?)
    } else {
        None
    };
    let mut opts = TapOptions::new().offload(args.offload);
    match (&args.netns, &netns) {
        (Some(Some(ns)), _) => opts = opts.netns(ns.clone()),
        (_, Some(n)) => opts = opts.netns(n.name.clone()),
        _ => {}
    }
    if let Some(mac) = args.mac {
        opts = opts.mac(mac.0);
    }
    let tap = TapDevice::open(&tap_name, opts)?;
    if let Some(n) = &netns {
        n.address(&tap_name)?;
    }
    let ping_dst =
        match (args.ping, &netns) {
            (None, _) => None,
            (Some(Some(a)), _) => Some(a),
            (Some(None), Some(n)) => Some(n.kernel),
            (Some(None), None) => return Err(
                "--ping needs an address (it defaults to the kernel side only with --netns alone)"
                    .into(),
            ),
        };
    let waiter = tap.waiter()?;
    cfg.gateway = args.gateway;
    cfg.mac = Some(MacAddr(tap.mac()));
    cfg.nic = args.nic;
    cfg.rpc = args.rpc;
    cfg.specialize = !args.modular;
    // The CPU column is what --stats is mostly for; without it the clock
    // reads are not worth their cost.
    cfg.account_cpu = args.stats.is_some();
    if !args.no_udp_services {
        cfg.upper.push((
            format!("name={ECHO_INSTANCE} module=ECHO mode=echo;"),
            format!("{ECHO_INSTANCE}.down<>udp.up;"),
        ));
    }
    println!(
        "host {}/{} on {} via {} (mac {}, mtu {})",
        cfg.addr,
        cfg.prefix_len,
        tap.name(),
        cfg.nic,
        MacAddr(tap.mac()),
        tap.mtu()
    );
    if args.offload {
        println!("offloads: {:?}", tap.offloads());
    }
    if let Some(n) = &netns {
        println!(
            "namespace {} (removed on exit): the kernel side of {} is {}/{}; \
             try: sudo ip netns exec {} ping {}",
            n.name, tap_name, n.kernel, cfg.prefix_len, n.name, cfg.addr
        );
    }
    let host_addr = format!("{}/{}", cfg.addr, cfg.prefix_len);
    let host = match &args.pcap {
        Some(file) => Host::new(cfg, PcapCapture::create(tap, file)?)?,
        None => Host::new(cfg, tap)?,
    };
    let mode = if args.busy_poll {
        WaitMode::BusyPoll
    } else {
        WaitMode::Blocking
    };
    let mut host = host.with_waiter(waiter, mode);
    let services = if args.no_udp_services {
        println!("udp services: off");
        None
    } else {
        let s = UdpServices::open(&mut host)?;
        println!(
            "udp services: echo on port {ECHO_PORT} (path #{}), discard on port {DISCARD_PORT} (path #{})",
            s.echo.index(),
            s.discard.index()
        );
        Some(s)
    };
    if let Some(net) = args.rpc {
        host.rpc().server()?.register(XRPCTEST_ID, Echo)?;
        println!(
            "rpc: echo procedure {XRPCTEST_ID} (XRPCTEST) over {}, for peers calling {}",
            match net {
                RpcNet::Eth => "ETH",
                RpcNet::Ip => "IP",
            },
            host.rpc().peer()?
        );
    }
    let mut discarded = (0u64, 0u64);
    let mut tcp = if args.no_tcp_services {
        println!("tcp services: off");
        None
    } else {
        println!(
            "tcp services: echo on port {}, discard on port {}, chargen on port {}",
            tcp_services::ECHO,
            tcp_services::DISCARD,
            tcp_services::CHARGEN
        );
        Some(TcpServices::open(&mut host)?)
    };
    let mut client = match args.tcp_client {
        None => None,
        Some(peer) => {
            let data = match &args.file {
                Some(f) => std::fs::read(f)?,
                None => (0..1_000_000u32)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                    .collect(),
            };
            println!("tcp client: echoing {} bytes through {peer}", data.len());
            Some(EchoClient::connect(&mut host, peer, data)?)
        }
    };
    let mut client_result = None;
    // Opened before the loop, so that a bad FILE stops the host at once.
    let mut json_lines = match (&args.json, args.stats) {
        (Some(file), Some(_)) => Some(JsonLines::open(file)?),
        _ => None,
    };

    let started = Instant::now();
    let mut next_stats = args.stats.map(|every| started + every);
    let deadline = args.seconds.map(|s| started + Duration::from_secs_f64(s));
    let data: Vec<u8> = (0..args.size).map(|i| i as u8).collect();
    let mut pinger = ping_dst.map(|dst| Pinger::new(dst, args.count));
    let mut next_ping = started;
    while !stop.load(Ordering::Relaxed) {
        if let Some(p) = &mut pinger {
            if p.sent() < args.count && Instant::now() >= next_ping {
                if let Err(e) = p.send(&mut host, &data) {
                    // As ping(8) does for an unreachable network: say why
                    // and end with the summary of what was sent.
                    eprintln!("host: ping {}: {e}", p.dst);
                    p.count = p.sent();
                }
                next_ping = Instant::now() + Duration::from_millis(args.interval_ms);
            }
        }
        host.poll();
        if let Some(t) = &mut tcp {
            t.poll(&mut host);
        }
        if let Some(c) = &mut client {
            match c.poll(&mut host) {
                Ok(None) => {}
                Ok(Some(ok)) => {
                    let (sent, got) = c.progress();
                    println!(
                        "tcp client: sent {sent} bytes, received {got}: {}",
                        if ok {
                            "the echo matches"
                        } else {
                            "THE ECHO DIFFERS"
                        }
                    );
                    client_result = Some(ok);
                    if let Some(c) = client.take() {
                        c.close(&mut host);
                    }
                    break;
                }
                Err(e) => {
                    eprintln!("host: tcp client to {}: {e}", c.peer);
                    client_result = Some(false);
                    break;
                }
            }
        }
        if let Some(s) = &services {
            while let Some(m) = host.stack_mut().recv(s.discard, Dir::Up) {
                discarded.0 += 1;
                discarded.1 += m.len() as u64;
            }
        }
        for r in host.echo_replies() {
            match &mut pinger {
                Some(p) => p.reply(r.as_slice()),
                None => println!("icmp message from the network: {:?}", r.as_slice().first()),
            }
        }
        if let (Some(every), Some(next)) = (args.stats, &mut next_stats) {
            let now = Instant::now();
            if now >= *next {
                let elapsed = now.duration_since(started).as_secs_f64();
                let stats = Stats::of(host.stack());
                match &mut json_lines {
                    Some(out) => {
                        out.write(&json!({"elapsed_s": elapsed, "paths": stats.paths_json()}))?;
                    }
                    None => {
                        let mut text = format!("--- path statistics at {elapsed:.1} s ---\n");
                        stats.write_paths(&mut text)?;
                        print!("{text}");
                    }
                }
                // After a late turn (a long wait, a stopped process) the
                // next one is an interval away, not due at once.
                *next += every;
                if *next <= now {
                    *next = now + every;
                }
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if deadline.is_none() {
            if let Some(p) = &pinger {
                if p.done(&host, next_ping) {
                    break;
                }
            }
        }
        host.wait(Duration::from_millis(50))?;
    }
    let summary = pinger.as_ref().map(|p| p.summary(&host));
    let tcp_stats = tcp.as_ref().map(|t| t.stats);
    let echoed = services.as_ref().map(|s| s.echoed(host.stack()));
    let rpc_calls = match args.rpc {
        Some(_) => Some(host.rpc().server()?.calls()),
        None => None,
    };
    let stats = Stats::of(host.stack());
    if let Some(file) = &args.json {
        let mut j = json!({
            "host": {"addr": host_addr, "tap": tap_name, "nic": args.nic.name()},
            "modules": stats.modules_json(),
            "paths": stats.paths_json(),
        });
        if let Some(n) = echoed {
            j["udp_services"] = json!({
                "echoed": n, "discarded": discarded.0, "discarded_bytes": discarded.1,
            });
        }
        if let Some(s) = &summary {
            j["ping"] = s.json();
        }
        if let Some(n) = rpc_calls {
            j["rpc"] =
                json!({ "net": args.rpc.map(|n| format!("{n:?}").to_lowercase()), "calls": n });
        }
        if let Some(t) = tcp_stats {
            j["tcp_services"] = json!({
                "accepted": t.accepted, "failed": t.failed, "echoed": t.echoed,
                "discarded": t.discarded, "generated": t.generated,
            });
        }
        if let Some(out) = &mut json_lines {
            j["final"] = json!(true);
            j["elapsed_s"] = json!(started.elapsed().as_secs_f64());
            out.write(&j)?;
            if file != "-" {
                println!("wrote {file}");
            }
        } else {
            let text = serde_json::to_string_pretty(&j)?;
            if file == "-" {
                println!("{text}");
            } else {
                std::fs::write(file, text + "\n")?;
                println!("wrote {file}");
            }
        }
    } else {
        print!("{stats}");
        if let Some(n) = echoed {
            println!(
                "udp echo (port {ECHO_PORT}): {n} datagrams echoed; discard (port {DISCARD_PORT}): {} datagrams, {} bytes",
                discarded.0, discarded.1
            );
        }
        if let Some(n) = rpc_calls {
            println!("rpc echo (procedure {XRPCTEST_ID}): {n} calls");
        }
        if let Some(t) = tcp_stats {
            println!(
                "tcp services: {} connections ({} failed); echoed {} bytes, discarded {}, chargen sent {}",
                t.accepted, t.failed, t.echoed, t.discarded, t.generated
            );
        }
    }
    if client_result == Some(false) {
        return Ok(ExitCode::from(3));
    }
    // ping(8) ends with its summary, and so does this.
    if let Some(s) = &summary {
        print!("{s}");
        // Asked for, not only sent: a request that could not be sent is
        // unanswered too.
        if s.received < args.count {
            return Ok(ExitCode::from(2));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The first address of the network `addr/prefix_len` other than `addr`:
/// the kernel side of a private namespace's TAP.
fn kernel_side(addr: Ipv4Addr, prefix_len: u8) -> Result<Ipv4Addr, BoxError> {
    if prefix_len > 30 {
        return Err(format!(
            "--ip {addr}/{prefix_len}: a private --netns needs a network with room for two hosts (prefix 30 or shorter)"
        )
        .into());
    }
    let mask = u32::MAX << (32 - u32::from(prefix_len));
    let net = u32::from(addr) & mask;
    let first = net + 1;
    Ok(Ipv4Addr::from(if first == u32::from(addr) {
        first + 1
    } else {
        first
    }))
}

/// A network namespace this process made for its TAP, removed (with
/// everything in it) when dropped: on a normal exit, on an error, on
/// Ctrl-C (which ends the main loop) and on a panic that unwinds.
struct PrivateNetns {
    name: String,
    /// The kernel's address on the TAP.
    kernel: Ipv4Addr,
    prefix_len: u8,
}

impl PrivateNetns {
    /// Makes `ps-host-<pid>` with loopback up and IPv6 off (so that the
    /// kernel sends no router solicitations or MLD reports to the host).
    fn create(kernel: Ipv4Addr, prefix_len: u8) -> Result<PrivateNetns, BoxError> {
        let name = format!("ps-host-{}", std::process::id());
        ip(&["netns", "add", &name])?;
        // From here on the guard removes the namespace.
        let ns = PrivateNetns {
            name,
            kernel,
            prefix_len,
        };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        for knob in ["all", "default"] {
            // Written through /proc rather than with sysctl(8), which a
            // minimal system may lack; a kernel without IPv6 has no such
            // file, and then there is nothing to turn off.
            let _ = Command::new("ip")
                .args(["netns", "exec", &ns.name, "sh", "-c"])
                .arg(format!(
                    "echo 1 > /proc/sys/net/ipv6/conf/{knob}/disable_ipv6"
                ))
                .status();
        }
        Ok(ns)
    }

    /// Gives the kernel side of `tap` (open, so it exists) its address.
    fn address(&self, tap: &str) -> Result<(), BoxError> {
        let cidr = format!("{}/{}", self.kernel, self.prefix_len);
        ip(&["-n", &self.name, "addr", "add", &cidr, "dev", tap])?;
        ip(&["-n", &self.name, "link", "set", tap, "up"])
    }
}

impl Drop for PrivateNetns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("host: warning: removing namespace {}: {e}", self.name);
        }
    }
}

/// Runs `ip ARGS`, its stderr in the error.
fn ip(args: &[&str]) -> Result<(), BoxError> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        format!(
            "running `ip {}`: {e} (is iproute2 installed?)",
            args.join(" ")
        )
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into())
    }
}

/// The echo requests of `--ping` and their replies.
struct Pinger {
    dst: Ipv4Addr,
    /// Requests to send (fewer if a send fails).
    count: u16,
    /// When each request (sequence number `i + 1`) went out.
    sent_at: Vec<Instant>,
    /// Round-trip time of each request's first reply.
    rtt: Vec<Option<Duration>>,
    /// Replies to a request that already had one.
    duplicates: u16,
}

/// How long to wait for replies after the last request, as ping(8) does
/// with `-W` (its default is 10 s; 2 s is ample on one link).
const LINGER: Duration = Duration::from_secs(2);

impl Pinger {
    fn new(dst: Ipv4Addr, count: u16) -> Pinger {
        Pinger {
            dst,
            count,
            sent_at: Vec::with_capacity(usize::from(count)),
            rtt: Vec::with_capacity(usize::from(count)),
            duplicates: 0,
        }
    }

    fn sent(&self) -> u16 {
        self.sent_at.len() as u16
    }

    fn send(&mut self, host: &mut Host, data: &[u8]) -> Result<(), BoxError> {
        let seq = self.sent() + 1;
        let at = Instant::now();
        host.ping(self.dst, seq, data)?;
        self.sent_at.push(at);
        self.rtt.push(None);
        Ok(())
    }

    /// An ICMP message for us, from its type byte on.
    fn reply(&mut self, icmp: &[u8]) {
        if icmp.len() < 8 || icmp[0] != 0 {
            println!("icmp type {:?} from the network", icmp.first());
            return;
        }
        let seq = u16::from_be_bytes([icmp[6], icmp[7]]);
        let i = usize::from(seq).wrapping_sub(1);
        let (Some(t), Some(slot)) = (self.sent_at.get(i), self.rtt.get_mut(i)) else {
            println!("echo reply with icmp_seq={seq}, which was never sent");
            return;
        };
        let rtt = t.elapsed();
        let dup = slot.is_some();
        if dup {
            self.duplicates += 1;
        } else {
            *slot = Some(rtt);
        }
        println!(
            "{} bytes from {}: icmp_seq={seq} time={:.3} ms{}",
            icmp.len(),
            self.dst,
            rtt.as_secs_f64() * 1e3,
            if dup { " (DUP!)" } else { "" }
        );
    }

    /// Whether to stop: every request was sent and answered, or [`LINGER`]
    /// has passed since the next one would have gone out (`next`) and ARP
    /// is no longer trying to resolve (it retries for a few seconds; its
    /// verdict belongs in the summary).
    fn done(&self, host: &Host, next: Instant) -> bool {
        if self.sent() < self.count {
            return false;
        }
        if self.rtt.iter().all(Option::is_some) {
            return true;
        }
        let now = Instant::now();
        now >= next + LINGER && (arp_pending(host.stack()) == 0 || now >= next + 3 * LINGER)
    }

    fn summary(&self, host: &Host) -> PingSummary {
        let rtts: Vec<f64> = self
            .rtt
            .iter()
            .flatten()
            .map(|d| d.as_secs_f64() * 1e3)
            .collect();
        let received = rtts.len() as u16;
        let next_hop = if received == 0 {
            next_hop(host, self.dst)
        } else {
            NextHop::Resolved
        };
        PingSummary {
            dst: self.dst,
            transmitted: self.sent(),
            received,
            duplicates: self.duplicates,
            elapsed: self
                .sent_at
                .first()
                .map_or(Duration::ZERO, Instant::elapsed),
            rtt_ms: RttStats::of(&rtts),
            next_hop,
        }
    }
}

/// Packets waiting for ARP to resolve their next hop.
fn arp_pending(stack: &Stack) -> u64 {
    stack
        .module_id("arp")
        .and_then(|m| stack.module_stats(m))
        .and_then(|s| s.into_iter().find(|(k, _)| k == "pending"))
        .map_or(0, |(_, n)| n)
}

/// Where the way to a destination stands, for explaining a ping that got
/// no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NextHop {
    /// IP has no route (off-link, no gateway): nothing was sent.
    NoRoute,
    /// ARP knows the next hop's link address (or there is no ARP to ask).
    Resolved,
    /// ARP asked for the next hop's link address and got no answer.
    Unanswered(Ipv4Addr),
}

/// The route towards `dst` and whether ARP resolved its next hop.
fn next_hop(host: &Host, dst: Ipv4Addr) -> NextHop {
    let stack = host.stack();
    let ip = stack
        .module_id("ip")
        .and_then(|m| stack.module::<IpModule>(m));
    let arp = stack
        .module_id("arp")
        .and_then(|m| stack.module::<ArpModule>(m));
    let Some(route) = ip.and_then(|ip| ip.routes().lookup(dst)) else {
        return NextHop::NoRoute;
    };
    match arp {
        Some(arp) if arp.cache().lookup(route.next_hop, host.now()).is_none() => {
            NextHop::Unanswered(route.next_hop)
        }
        _ => NextHop::Resolved,
    }
}

/// Minimum, mean, maximum and mean deviation of round-trip times, as
/// ping(8) computes them (mdev: the standard deviation).
#[derive(Clone, Copy, Debug, PartialEq)]
struct RttStats {
    min: f64,
    avg: f64,
    max: f64,
    mdev: f64,
}

impl RttStats {
    fn of(ms: &[f64]) -> Option<RttStats> {
        if ms.is_empty() {
            return None;
        }
        let n = ms.len() as f64;
        let avg = ms.iter().sum::<f64>() / n;
        let sq = ms.iter().map(|x| x * x).sum::<f64>() / n;
        Some(RttStats {
            min: ms.iter().copied().fold(f64::INFINITY, f64::min),
            avg,
            max: ms.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mdev: (sq - avg * avg).max(0.0).sqrt(),
        })
    }
}

/// ping(8)'s closing lines for `--ping`.
struct PingSummary {
    dst: Ipv4Addr,
    transmitted: u16,
    received: u16,
    duplicates: u16,
    elapsed: Duration,
    rtt_ms: Option<RttStats>,
    /// Why nothing came back, as far as the host can tell, if nothing did.
    next_hop: NextHop,
}

impl PingSummary {
    fn loss_percent(&self) -> f64 {
        if self.transmitted == 0 {
            return 0.0;
        }
        100.0 * f64::from(self.transmitted - self.received) / f64::from(self.transmitted)
    }

    fn json(&self) -> Value {
        let mut j = json!({
            "destination": self.dst.to_string(),
            "transmitted": self.transmitted,
            "received": self.received,
            "duplicates": self.duplicates,
            "loss_percent": self.loss_percent(),
            "time_ms": self.elapsed.as_millis() as u64,
            "no_route": self.next_hop == NextHop::NoRoute,
            "arp_unanswered": matches!(self.next_hop, NextHop::Unanswered(_)),
        });
        if let Some(r) = self.rtt_ms {
            j["rtt_ms"] = json!({"min": r.min, "avg": r.avg, "max": r.max, "mdev": r.mdev});
        }
        j
    }
}

impl std::fmt::Display for PingSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "--- {} ping statistics ---", self.dst)?;
        write!(
            f,
            "{} packets transmitted, {} received, ",
            self.transmitted, self.received
        )?;
        if self.duplicates > 0 {
            write!(f, "+{} duplicates, ", self.duplicates)?;
        }
        writeln!(
            f,
            "{}% packet loss, time {}ms",
            (self.loss_percent() * 10.0).round() / 10.0,
            self.elapsed.as_millis()
        )?;
        if let Some(r) = self.rtt_ms {
            writeln!(
                f,
                "rtt min/avg/max/mdev = {:.3}/{:.3}/{:.3}/{:.3} ms",
                r.min, r.avg, r.max, r.mdev
            )?;
        }
        match self.next_hop {
            NextHop::Resolved => {}
            NextHop::NoRoute => writeln!(
                f,
                "no route to {}: it is not on this host's network and no --gateway is set",
                self.dst
            )?,
            NextHop::Unanswered(hop) => writeln!(
                f,
                "ARP got no answer for {hop}: nothing on the link answers for that address \
                 (is the peer up, with an address on this network?)"
            )?,
        }
        Ok(())
    }
}

/// The statistics of a stack, by name: what the text and JSON output show.
struct Stats {
    /// Per module instance: its name, its counters and its drops by reason.
    modules: Vec<(String, Counts, Counts)>,
    paths: Vec<PathRow>,
}

/// Named counts, in the stack's order.
type Counts = Vec<(String, u64)>;

/// One path's line of the statistics.
struct PathRow {
    id: u32,
    modules: Vec<String>,
    /// Messages that entered and left the path, down (towards the device).
    down: [u64; 2],
    /// The same, up (towards the application).
    up: [u64; 2],
    /// Messages a stage kept (a fragment for reassembly, a frame handed to
    /// the device).
    consumed: u64,
    drops: Counts,
    /// Bytes in and out, down then up.
    bytes: [u64; 4],
    /// Processing time charged to the path (only with time accounting).
    cpu_ns: u64,
    /// Buffer bytes held in the path's queues now, and at most.
    held: [u64; 2],
    /// Admission class.
    class: String,
    /// Times the device was asked to discard the path's frames.
    device_discards: u64,
}

impl Stats {
    fn of(stack: &Stack) -> Stats {
        let modules = stack
            .graph()
            .instances()
            .iter()
            .filter_map(|i| {
                let m = stack.module_id(&i.name)?;
                let counters = stack
                    .module_stats(m)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(_, n)| *n > 0)
                    .collect();
                let drops = stack
                    .module_drops(m)
                    .map(|d| d.iter().map(|(r, n)| (r.as_str().to_string(), n)).collect())
                    .unwrap_or_default();
                Some((i.name.clone(), counters, drops))
            })
            .collect();
        let paths = stack
            .path_ids()
            .filter_map(|id| {
                let p = stack.path(id)?;
                let s = p.stats();
                Some(PathRow {
                    id: id.index(),
                    modules: p
                        .modules()
                        .iter()
                        .filter_map(|&m| stack.module_name(m).map(str::to_string))
                        .collect(),
                    down: [s.msgs_in[0], s.msgs_out[0]],
                    up: [s.msgs_in[1], s.msgs_out[1]],
                    consumed: s.consumed,
                    bytes: [s.bytes_in[0], s.bytes_out[0], s.bytes_in[1], s.bytes_out[1]],
                    cpu_ns: s.cpu_ns,
                    held: [s.held_bytes, s.peak_held_bytes],
                    class: p.class().to_string(),
                    device_discards: s.device_discards,
                    drops: s
                        .drops
                        .iter()
                        .map(|(r, n)| (r.as_str().to_string(), n))
                        .collect(),
                })
            })
            .collect();
        Stats { modules, paths }
    }

    fn modules_json(&self) -> Value {
        self.modules
            .iter()
            .map(|(name, counters, drops)| {
                json!({"name": name, "counters": named(counters), "drops": named(drops)})
            })
            .collect()
    }

    fn paths_json(&self) -> Value {
        self.paths
            .iter()
            .map(|p| {
                json!({
                    "id": p.id, "modules": p.modules,
                    "down_in": p.down[0], "down_out": p.down[1],
                    "up_in": p.up[0], "up_out": p.up[1],
                    "consumed": p.consumed, "drops": named(&p.drops),
                    "down_in_bytes": p.bytes[0], "down_out_bytes": p.bytes[1],
                    "up_in_bytes": p.bytes[2], "up_out_bytes": p.bytes[3],
                    "cpu_ns": p.cpu_ns, "held_bytes": p.held[0],
                    "peak_held_bytes": p.held[1], "class": p.class,
                    "device_discards": p.device_discards,
                })
            })
            .collect()
    }
}

/// `[(name, n)]` as a JSON object.
fn named(v: &[(String, u64)]) -> Value {
    Value::Object(v.iter().map(|(k, n)| (k.clone(), json!(n))).collect())
}

/// `name=n` pairs, space-separated; `drop.` before drop reasons.
fn pairs(v: &[(String, u64)], prefix: &str) -> String {
    v.iter().map(|(k, n)| format!(" {prefix}{k}={n}")).collect()
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "--- statistics ---")?;
        self.write_modules(f)?;
        self.write_paths(f)
    }
}

impl Stats {
    /// The modules' table.
    fn write_modules(&self, f: &mut impl std::fmt::Write) -> std::fmt::Result {
        writeln!(
            f,
            "modules (counters; drop.REASON = messages dropped, by reason):"
        )?;
        for (name, counters, drops) in &self.modules {
            writeln!(
                f,
                "  {name:<6}{}{}",
                pairs(counters, ""),
                pairs(drops, "drop.")
            )?;
        }
        Ok(())
    }

    /// The paths' tables: messages and drops, then resources (what
    /// `--stats` prints every interval).
    fn write_paths(&self, f: &mut impl std::fmt::Write) -> std::fmt::Result {
        writeln!(
            f,
            "paths (messages in and out of each path; down = towards the device, \
             up = towards the application; kept = held by a stage):"
        )?;
        writeln!(
            f,
            "  {:<4} {:<28} {:>8} {:>8} {:>8} {:>8} {:>6}  drops",
            "path", "modules", "down in", "down out", "up in", "up out", "kept"
        )?;
        for p in &self.paths {
            writeln!(
                f,
                "  #{:<3} {:<28} {:>8} {:>8} {:>8} {:>8} {:>6} {}{}",
                p.id,
                p.modules.join("/"),
                p.down[0],
                p.down[1],
                p.up[0],
                p.up[1],
                p.consumed,
                pairs(&p.drops, ""),
                // Periods in which the device discarded the path's frames.
                if p.device_discards > 0 {
                    format!(" (device discarded {} times)", p.device_discards)
                } else {
                    String::new()
                }
            )?;
        }
        writeln!(
            f,
            "path resources (bytes in and out; cpu = processing time charged, with \
             time accounting; held = buffer bytes queued now / at most):"
        )?;
        writeln!(
            f,
            "  {:<4} {:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
            "path",
            "class",
            "down in B",
            "down out B",
            "up in B",
            "up out B",
            "cpu us",
            "held B",
            "peak B"
        )?;
        for p in &self.paths {
            writeln!(
                f,
                "  #{:<3} {:<10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
                p.id,
                p.class,
                p.bytes[0],
                p.bytes[1],
                p.bytes[2],
                p.bytes[3],
                p.cpu_ns / 1000,
                p.held[0],
                p.held[1]
            )?;
        }
        Ok(())
    }
}

/// Instance name of the echo service's `ECHO` module.
const ECHO_INSTANCE: &str = "echo7";
/// The echo service's port (RFC 862).
const ECHO_PORT: u16 = 7;
/// The discard service's port (RFC 863).
const DISCARD_PORT: u16 = 9;

/// The two UDP services' paths.
struct UdpServices {
    /// `ECHO / UDP / IP / ARP / ETH / driver`, bound to port 7: datagrams
    /// turn around in the path.
    echo: PathId,
    /// `UDP / IP / ARP / ETH / driver`, bound to port 9: the main loop
    /// empties its sink.
    discard: PathId,
}

impl UdpServices {
    /// Opens the echo and discard paths; specialized as the host's
    /// sockets are, unless the host runs modular paths.
    fn open(host: &mut Host) -> Result<UdpServices, Box<dyn std::error::Error>> {
        let specialize = host.specializes();
        let stack = host.stack_mut();
        let bound = |port| {
            Attrs::new().with(&PASSIVE_OPEN, true).with(
                &PARTICIPANTS,
                Participants {
                    local: vec![AddrPart::Port(port)],
                    remote: vec![],
                },
            )
        };
        let echo_module = stack
            .module_id(ECHO_INSTANCE)
            .ok_or("the host graph has no echo module")?;
        let udp = stack.module_id("udp").ok_or("the host graph has no UDP")?;
        let echo = stack.path_create(echo_module, bound(ECHO_PORT))?;
        let discard = stack.path_create(udp, bound(DISCARD_PORT))?;
        if specialize {
            // The echo is an application module above UDP: its rules name
            // ECHO and either driver under ETH (a rule applies only to a
            // path of its own module sequence). The discard path is a
            // socket path, which the host's own rules cover.
            stack.add_rule(inline::udp_fast_rule::<EchoStage, WireStage>(
                ECHO_SPEC.name,
                WIRE_SPEC.name,
            ));
            stack.add_rule(inline::udp_fast_rule::<EchoStage, LanceStage>(
                ECHO_SPEC.name,
                LANCE_SPEC.name,
            ));
            for p in [echo, discard] {
                stack.path_optimize(p)?;
            }
        }
        Ok(UdpServices { echo, discard })
    }

    /// Datagrams the echo path turned around, as its `ECHO` stage counted
    /// them (the path's own counters miss datagrams that IP reassembled and
    /// handed on to it in mid-path).
    fn echoed(&self, stack: &Stack) -> u64 {
        let Some(stage) = stack.path(self.echo).and_then(|p| p.stage(0)) else {
            return 0;
        };
        let stage: &dyn std::any::Any = stage;
        stage
            .downcast_ref::<EchoStage>()
            .map_or(0, EchoStage::echoed)
    }
}

/// `--json` with `--stats`: JSON Lines to a file or stdout, each line
/// flushed when written, so that a reader following the output sees every
/// snapshot as it is taken.
struct JsonLines {
    out: Box<dyn std::io::Write>,
}

impl JsonLines {
    /// Creates (truncates) `target`, or takes stdout for `-`.
    fn open(target: &str) -> Result<JsonLines, BoxError> {
        let out: Box<dyn std::io::Write> = if target == "-" {
            Box::new(std::io::stdout())
        } else {
            let file = std::fs::File::create(target)
                .map_err(|e| format!("creating --json file {target}: {e}"))?;
            Box::new(std::io::BufWriter::new(file))
        };
        Ok(JsonLines { out })
    }

    /// Writes `v` as one line.
    fn write(&mut self, v: &Value) -> Result<(), BoxError> {
        serde_json::to_writer(&mut self.out, v)?;
        self.out.write_all(b"\n")?;
        self.out.flush()?;
        Ok(())
    }
}

/// A positive number of seconds (for `--stats`).
fn interval(s: &str) -> Result<Duration, String> {
    let bad = || format!("`{s}`: expected a positive number of seconds");
    let secs: f64 = s.parse().map_err(|_| bad())?;
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(bad()),
    }
}

/// `on` or `off` (for `--offload`).
fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(format!("`{s}`: expected on or off")),
    }
}
