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
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

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

/// `IPPROTO_RAW` (RFC 791 protocol 255): a raw socket that sends whole
/// IPv4 datagrams, header included (Linux `raw(7)`: implies `IP_HDRINCL`).
const IPPROTO_RAW: i32 = 255;

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
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(IPPROTO_RAW)))
        .map_err(|e| format!("raw socket (needs CAP_NET_RAW): {e}"))?;
    let dst = SockAddr::from(SocketAddrV4::new(args.target, 0));
    let data: Vec<u8> = (0..args.size).map(|i| i as u8).collect();
    // The identifier names this flood (RFC 792: "to aid in matching").
    let id = std::process::id() as u16;
    let mut frame = Vec::with_capacity(64 + args.size);
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
            frame.clear();
            PacketBuilder::ipv4(args.source.octets(), args.target.octets(), 64)
                .icmpv4_echo_request(id, sent as u16)
                .write(&mut frame, &data)
                .map_err(|e| format!("building echo request {sent}: {e}"))?;
            sock.send_to(&frame, &dst)
                .map_err(|e| format!("sending echo request {sent}: {e}"))?;
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
        return Err(format!("sent {rate:.0} echo requests/s, asked for {}", args.rate).into());
    }
    Ok(())
}
