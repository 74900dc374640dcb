//! An Internet host on a TAP device: answers ARP and ping (any size up to
//! the reassembly limit), runs the UDP echo (port 7, RFC 862) and discard
//! (port 9, RFC 863) services, optionally pings a peer, and prints
//! per-module and per-path statistics on SIGINT/SIGTERM.
//!
//! ```text
//! cargo run --release --example host -- --tap NAME --ip ADDR/PREFIX \
//!     [--nic tap|lance:copy|lance:direct] [--no-udp-services] \
//!     [--gateway ADDR] [--mac MAC] [--pcap FILE] [--busy-poll] [--netns NS] \
//!     [--ping ADDR [--count N] [--size BYTES] [--interval-ms MS]] [--seconds S]
//! ```
//!
//! The TAP device is created if absent (as root). With `--netns` it is
//! opened inside that network namespace (see `scripts/netns.sh`).
//!
//! `--nic` chooses what stands between ETH and the TAP: the TAP itself
//! (`tap`, the generic `WIRE` driver) or the emulated Am7990 LANCE with
//! DEC 3000 sparse memory (Mosberger, Peterson and O'Malley, *Protocol Latency: MIPS and Reality*, 1995, §2.6), its descriptors copied to
//! dense memory (`lance:copy`) or accessed in place (`lance:direct`).
//!
//! The echo service is the thesis' in-path echo: an `ECHO mode=echo`
//! module at the top of a passive UDP path bound to port 7 turns each
//! datagram around inside the path, so the reply never leaves the stack's
//! packet loop. Discard is a passive UDP path bound to port 9 whose sink
//! the main loop empties and counts. Try them from the peer namespace:
//!
//! ```text
//! echo hello | socat -t1 - UDP:10.77.1.1:7     # prints hello
//! echo hello | socat -t1 - UDP:10.77.1.1:9     # prints nothing; counted
//! ```

use clap::Parser;
use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::synthetic::EchoStage;
use pathstack::core::{Dir, PathId, Stack};
use pathstack::devices::{PcapCapture, TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use std::net::Ipv4Addr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(about = "A pathstack Internet host on a TAP device")]
struct Args {
    /// TAP interface name (created if absent).
    #[arg(long)]
    tap: String,
    /// Our address and prefix length, e.g. 10.77.1.1/24.
    #[arg(long)]
    ip: String,
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
    /// Our MAC address (default: derived from the TAP's kernel-side MAC).
    #[arg(long)]
    mac: Option<MacAddr>,
    /// Write every frame in and out to this pcap file.
    #[arg(long)]
    pcap: Option<std::path::PathBuf>,
    /// Never sleep: poll the device, yielding the CPU between empty polls.
    #[arg(long)]
    busy_poll: bool,
    /// Open the TAP device inside this network namespace.
    #[arg(long)]
    netns: Option<String>,
    /// Ping this address.
    #[arg(long)]
    ping: Option<Ipv4Addr>,
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
}

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

fn run(args: Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop))?;

    let mut opts = TapOptions::new();
    if let Some(ns) = &args.netns {
        opts = opts.netns(ns.clone());
    }
    if let Some(mac) = args.mac {
        opts = opts.mac(mac.0);
    }
    let tap = TapDevice::open(&args.tap, opts)?;
    let waiter = tap.waiter()?;
    let mut cfg = HostConfig::parse(&args.ip)?;
    cfg.gateway = args.gateway;
    cfg.mac = Some(MacAddr(tap.mac()));
    cfg.nic = args.nic;
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
        let s = UdpServices::open(host.stack_mut())?;
        println!(
            "udp services: echo on port {ECHO_PORT} (path #{}), discard on port {DISCARD_PORT} (path #{})",
            s.echo.index(),
            s.discard.index()
        );
        Some(s)
    };
    let mut discarded = (0u64, 0u64);

    let started = Instant::now();
    let deadline = args.seconds.map(|s| started + Duration::from_secs_f64(s));
    let data: Vec<u8> = (0..args.size).map(|i| i as u8).collect();
    let mut sent = 0u16;
    let mut sent_at = Vec::new();
    let mut answered = 0u16;
    let mut next_ping = started;
    while !stop.load(Ordering::Relaxed) {
        if let Some(dst) = args.ping {
            if sent < args.count && Instant::now() >= next_ping {
                sent += 1;
                sent_at.push(Instant::now());
                host.ping(dst, sent, &data)?;
                next_ping = Instant::now() + Duration::from_millis(args.interval_ms);
            }
        }
        host.poll();
        if let Some(s) = &services {
            while let Some(m) = host.stack_mut().recv(s.discard, Dir::Up) {
                discarded.0 += 1;
                discarded.1 += m.len() as u64;
            }
        }
        for r in host.echo_replies() {
            let b = r.as_slice();
            if b.len() >= 8 && b[0] == 0 {
                let seq = u16::from_be_bytes([b[6], b[7]]);
                let rtt = sent_at
                    .get(usize::from(seq).wrapping_sub(1))
                    .map(|t| t.elapsed());
                answered += 1;
                println!(
                    "{} bytes from {}: icmp_seq={seq} time={:.1} us",
                    b.len(),
                    args.ping.map(|a| a.to_string()).unwrap_or_default(),
                    rtt.map_or(0.0, |d| d.as_secs_f64() * 1e6)
                );
            } else if let Some(&t) = b.first() {
                println!("icmp type {t} from the network");
            }
        }
        if args.ping.is_some() && deadline.is_none() && answered == args.count {
            break;
        }
        if args.ping.is_some()
            && deadline.is_none()
            && sent == args.count
            && Instant::now() >= next_ping + Duration::from_secs(2)
        {
            break;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        host.wait(Duration::from_millis(50))?;
    }
    println!("--- statistics ---");
    print!("{}", host.report());
    if let Some(s) = &services {
        println!(
            "udp echo (port {ECHO_PORT}): {} datagrams echoed; discard (port {DISCARD_PORT}): {} datagrams, {} bytes",
            s.echoed(host.stack()),
            discarded.0,
            discarded.1
        );
    }
    if args.ping.is_some() {
        println!("{sent} echo requests sent, {answered} replies");
        if answered < sent {
            return Ok(ExitCode::from(2));
        }
    }
    Ok(ExitCode::SUCCESS)
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
    fn open(stack: &mut Stack) -> Result<UdpServices, Box<dyn std::error::Error>> {
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
