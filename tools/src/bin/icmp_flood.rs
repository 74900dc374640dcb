//! An ICMP echo flood at a stated rate, the heavier of the two floods of
//! `scripts/study-priority.sh` (the other is `ping -f`, which only sends
//! as fast as replies come back, and at least 100 per second): ICMP echo
//! requests (RFC 792) at a fixed rate for a bounded time, through a raw
//! IPv4 socket (`IPPROTO_RAW`, so the header is ours: RFC 791) of the
//! namespace it runs in; the kernel resolves the target's MAC and sends the
//! frames.
//!
//! ```text
//! icmp_flood --target ADDR --source ADDR [--rate N] [--seconds S] [--size BYTES]
//! ```
//!
//! The source is a real address of the sending side (the replies go back
//! to its kernel, which drops them: no socket waits for them), so the
//! target's replies cost it a real transmission as a ping's do. Each
//! request carries `--size` data bytes (56 by default, as `ping`'s) and a
//! sequence number; the identifier is this process's id.
//!
//! The sending is paced in 1 ms steps (the requests due by then go out in
//! a burst). Prints `{"sent", "seconds", "rate"}` on stdout at the end;
//! fails (non-zero exit) if a send fails or the rate fell more than 5 %
//! short of `--rate`.
#![forbid(unsafe_code)]

use clap::Parser;
use etherparse::PacketBuilder;
use std::net::Ipv4Addr;

use pathstack_tools::raw_flood;

#[derive(Parser)]
#[command(about = "ICMP echo request flood at a fixed rate through a raw IPv4 socket")]
struct Args {
    /// The host to flood.
    #[arg(long)]
    target: Ipv4Addr,
    /// Our source address (an address of this namespace).
    #[arg(long)]
    source: Ipv4Addr,
    /// Echo requests per second.
    #[arg(long, default_value_t = 20_000)]
    rate: u64,
    /// How long to flood.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Data bytes per request.
    #[arg(long, default_value_t = 56)]
    size: usize,
}

type BoxError = Box<dyn std::error::Error>;

fn main() -> std::process::ExitCode {
    match run(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("icmp_flood: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<(), BoxError> {
    if args.size > 1400 {
        return Err(format!("--size {}: at most 1400 (one frame)", args.size).into());
    }
    let data: Vec<u8> = (0..args.size).map(|i| i as u8).collect();
    // The identifier names this flood (RFC 792: "to aid in matching").
    let id = std::process::id() as u16;
    raw_flood::flood(
        args.target,
        args.rate,
        args.seconds,
        "echo request",
        |frame, n| {
            PacketBuilder::ipv4(args.source.octets(), args.target.octets(), 64)
                .icmpv4_echo_request(id, n as u16)
                .write(frame, &data)?;
            Ok(())
        },
    )
}
