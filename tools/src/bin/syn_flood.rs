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
use std::net::{Ipv4Addr, SocketAddrV4};

use pathstack_tools::raw_flood;

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
    let mut rng = SmallRng::from_entropy();
    let target = *args.target.ip();
    raw_flood::flood(target, args.rate, args.seconds, "SYN", |frame, _| {
        // Neither the network nor the broadcast address of the range.
        let host = rng.gen_range(1..host_mask);
        let src = Ipv4Addr::from(net | host);
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
            .write(frame, &[])?;
        Ok(())
    })
}
