//! The main job: 1-byte UDP ping-pong between two pathstack hosts.
//!
//! With no arguments: two stacks in one process joined by the in-memory
//! wire; for each scheduler (per-message, LDLP) and path form (modular
//! STD, path-inlined PIN) it runs `--rounds` round trips and prints RTT
//! median, p99, p99.9 and round trips per second.
//!
//! Each side's path is `ECHO / UDP / IP / ARP / ETH / WIRE`: the server's
//! ECHO turns the datagram around inside the path (the thesis' TCPTEST
//! role: an application module at the top of the path), the client's ECHO
//! leaves the reply in the path's sink.
//!
//! ```text
//! cargo run --release --example pingpong -- [--rounds N] [--sched per-message|ldlp]
//!     [--form std|pin] [--json FILE] [--wire memory] [--transport udp]
//! ```

use clap::Parser;
use hdrhistogram::Histogram;
use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::core::rules::Rule;
use pathstack::core::synthetic::{EchoStage, WireStage};
use pathstack::core::{Dir, PathId, SchedKind};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::eth::MacAddr;
use pathstack::inet::modules::{ArpStage, EthStage, IpStage, UdpStage};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(about = "1-byte UDP ping-pong between two pathstack hosts")]
struct Args {
    /// `memory` (two stacks in one process); `tap` is not implemented yet.
    #[arg(long, default_value = "memory")]
    wire: String,
    /// Transport (only `udp` so far).
    #[arg(long, default_value = "udp")]
    transport: String,
    /// Measured round trips per configuration (after 1,000 warm-up ones).
    #[arg(long, default_value_t = 50_000)]
    rounds: u64,
    /// Only this scheduler (`per-message`, `ldlp`); default both.
    #[arg(long)]
    sched: Option<SchedKind>,
    /// Only this path form (`std`, `pin`); default both.
    #[arg(long)]
    form: Option<String>,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

const PORT: u16 = 7;

fn config(addr: &str, mac: u8, sched: SchedKind, mode: &str) -> HostConfig {
    let mut c = HostConfig::parse(addr).expect("address");
    c.mac = Some(MacAddr([0x02, 0, 0, 0, 0, mac]));
    c.sched = sched;
    c.upper = vec![(
        format!("name=app module=ECHO mode={mode};"),
        "app.down<>udp.up;".into(),
    )];
    c
}

fn inline_rule() -> Rule {
    Rule::inline::<(EchoStage, UdpStage, IpStage, ArpStage, EthStage, WireStage)>(
        "inline ECHO/UDP/IP/ARP/ETH/WIRE",
        &["ECHO", "UDP", "IP", "ARP", "ETH", "WIRE"],
    )
}

struct Pair {
    client: Host,
    server: Host,
    cpath: PathId,
}

fn pair(sched: SchedKind, pin: bool) -> Result<Pair, Box<dyn std::error::Error>> {
    let (a, b) = wire_pair(WireConfig::default());
    let mut client = Host::new(config("10.0.0.1/24", 1, sched, "sink"), a)?;
    let mut server = Host::new(config("10.0.0.2/24", 2, sched, "echo"), b)?;
    let app = server.stack().module_id("app").ok_or("no app module")?;
    let spath = server.stack_mut().path_create(
        app,
        Attrs::new().with(&PASSIVE_OPEN, true).with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(PORT)],
                remote: vec![],
            },
        ),
    )?;
    let app = client.stack().module_id("app").ok_or("no app module")?;
    let cpath = client.stack_mut().path_create(
        app,
        Attrs::new().with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(0)],
                remote: vec![AddrPart::Ipv4([10, 0, 0, 2]), AddrPart::Port(PORT)],
            },
        ),
    )?;
    if pin {
        for (h, p) in [(&mut client, cpath), (&mut server, spath)] {
            h.stack_mut().add_rule(inline_rule());
            let applied = h.stack_mut().path_optimize(p)?;
            if applied.is_empty() {
                return Err("the inlining rule did not apply".into());
            }
        }
    }
    Ok(Pair {
        client,
        server,
        cpath,
    })
}

impl Pair {
    /// One round trip; `false` if the reply did not come back.
    fn round_trip(&mut self) -> bool {
        let Ok(m) = self.client.stack().pool().alloc_copy(b"x") else {
            return false;
        };
        if self
            .client
            .stack_mut()
            .send(self.cpath, Dir::Forward, m)
            .is_err()
        {
            return false;
        }
        for _ in 0..8 {
            self.client.poll();
            self.server.poll();
            self.client.poll();
            if self
                .client
                .stack_mut()
                .recv(self.cpath, Dir::Backward)
                .is_some()
            {
                return true;
            }
        }
        false
    }
}

struct Result1 {
    config: String,
    rounds: u64,
    hist: Histogram<u64>,
    per_s: f64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if args.transport != "udp" {
        return Err(format!("transport `{}`: only `udp` exists so far", args.transport).into());
    }
    if args.wire != "memory" {
        return Err(format!(
            "wire `{}`: only `memory` is implemented so far (the TAP/veth ping-pong is not done yet)",
            args.wire
        )
        .into());
    }
    let scheds = match args.sched {
        Some(s) => vec![s],
        None => vec![SchedKind::PerMessage, SchedKind::Ldlp { batch: 32 }],
    };
    let forms: Vec<bool> = match args.form.as_deref() {
        Some("std") => vec![false],
        Some("pin") => vec![true],
        None => vec![false, true],
        Some(f) => return Err(format!("form `{f}`: expected std or pin").into()),
    };
    let mut results = Vec::new();
    for &sched in &scheds {
        for &pin in &forms {
            let mut p = pair(sched, pin)?;
            for _ in 0..1_000 {
                if !p.round_trip() {
                    return Err("warm-up round trip lost".into());
                }
            }
            let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3)?;
            let t0 = Instant::now();
            let mut lost = 0u64;
            for _ in 0..args.rounds {
                let t = Instant::now();
                if p.round_trip() {
                    hist.record(t.elapsed().as_nanos() as u64)?;
                } else {
                    lost += 1;
                }
            }
            let secs = t0.elapsed().as_secs_f64();
            if lost > 0 {
                eprintln!("{lost} round trips lost");
            }
            let sched_name = match sched {
                SchedKind::PerMessage => "per-message",
                SchedKind::Ldlp { .. } => "ldlp",
            };
            results.push(Result1 {
                config: format!("{sched_name}/{}", if pin { "pin" } else { "std" }),
                rounds: hist.len(),
                per_s: hist.len() as f64 / secs,
                hist,
            });
        }
    }
    println!("1-byte UDP ping-pong, in-memory wire, two stacks in one process");
    println!(
        "{:<18} {:>8} {:>10} {:>10} {:>10} {:>12}",
        "config", "rounds", "p50 ns", "p99 ns", "p99.9 ns", "RT/s"
    );
    for r in &results {
        println!(
            "{:<18} {:>8} {:>10} {:>10} {:>10} {:>12.0}",
            r.config,
            r.rounds,
            r.hist.value_at_quantile(0.5),
            r.hist.value_at_quantile(0.99),
            r.hist.value_at_quantile(0.999),
            r.per_s
        );
    }
    if let Some(file) = &args.json {
        let json = serde_json::json!({
            "transport": "udp",
            "wire": "memory",
            "results": results.iter().map(|r| serde_json::json!({
                "config": r.config,
                "rounds": r.rounds,
                "rtt_ns": {
                    "p50": r.hist.value_at_quantile(0.5),
                    "p99": r.hist.value_at_quantile(0.99),
                    "p999": r.hist.value_at_quantile(0.999),
                },
                "round_trips_per_s": r.per_s,
            })).collect::<Vec<_>>(),
        });
        std::fs::write(file, serde_json::to_string_pretty(&json)?)?;
        println!("wrote {}", file.display());
    }
    Ok(())
}
