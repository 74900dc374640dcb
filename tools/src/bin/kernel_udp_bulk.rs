//! The Linux kernel's end of the TAP-floor rows of `scripts/bench-tcp.sh`:
//! full-size UDP datagrams as fast as `std::net` sends or receives them,
//! run inside a namespace with `ip netns exec`.
//!
//! ```text
//! kernel_udp_bulk sink   --bind ADDR:PORT
//! kernel_udp_bulk source --peer ADDR:PORT [--seconds S] [--size N] [--no-gso]
//! ```
//!
//! `sink` counts the datagrams that arrive, from the first until a second
//! passes without one; `source` sends N-octet datagrams (default 1472: a
//! 1500-octet IP datagram) for S seconds, 44 at a time with UDP GSO
//! (`UDP_SEGMENT`: one `send(2)` of 64 KB that the kernel cuts into
//! datagrams late, at the TAP, which takes no offloads; as the kernel's TCP
//! sends), so that the sender is not the limit of a floor that only reads
//! frames; `--no-gso` sends one datagram per call. Both print `{"frames", "bytes",
//! "seconds", "gbps"}` with `bytes` the Ethernet frame octets the
//! datagrams took (payload + 8 UDP + 20 IPv4 + 14 Ethernet), as
//! `floor bulk-send|bulk-recv` count them.
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "kernel UDP bulk sink/source (the TAP floor's peer)")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Count arriving datagrams until a second passes without one.
    Sink {
        #[arg(long)]
        bind: SocketAddr,
    },
    /// Send datagrams for --seconds.
    Source {
        #[arg(long)]
        peer: SocketAddr,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        #[arg(long, default_value_t = 1472)]
        size: usize,
        /// One datagram per send(2) instead of UDP GSO batches.
        #[arg(long)]
        no_gso: bool,
    },
}

/// UDP, IPv4 and Ethernet header octets around a datagram's payload.
const HEADERS: u64 = 8 + 20 + 14;

fn report(frames: u64, bytes: u64, secs: f64) {
    println!(
        "{}",
        serde_json::json!({
            "frames": frames,
            "bytes": bytes,
            "seconds": secs,
            "gbps": bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
        })
    );
}

fn main() -> io::Result<()> {
    match Cli::parse().mode {
        Mode::Sink { bind } => {
            let s = UdpSocket::bind(bind)?;
            println!("kernel_udp_bulk sink: ready on {bind}");
            let mut buf = vec![0u8; 65_536];
            let (mut frames, mut bytes) = (0u64, 0u64);
            let n = s.recv(&mut buf)?;
            let first = Instant::now();
            let mut last = first;
            frames += 1;
            bytes += n as u64 + HEADERS;
            s.set_read_timeout(Some(Duration::from_secs(1)))?;
            loop {
                match s.recv(&mut buf) {
                    Ok(n) => {
                        last = Instant::now();
                        frames += 1;
                        bytes += n as u64 + HEADERS;
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        break
                    }
                    Err(e) => return Err(e),
                }
            }
            report(frames, bytes, (last - first).as_secs_f64());
        }
        Mode::Source {
            peer,
            seconds,
            size,
            no_gso,
        } => {
            let s = UdpSocket::bind("0.0.0.0:0")?;
            s.connect(peer)?;
            let batch = if no_gso {
                1
            } else {
                let seg = i32::try_from(size).map_err(io::Error::other)?;
                nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::UdpGsoSegment, &seg)?;
                // The kernel's limit: at most 64 segments in under 64 KB.
                (65_000 / size).clamp(1, 64)
            };
            let data = vec![0x5au8; size * batch];
            let start = Instant::now();
            let end = start + Duration::from_secs_f64(seconds);
            let (mut frames, mut bytes) = (0u64, 0u64);
            while Instant::now() < end {
                match s.send(&data) {
                    Ok(n) => {
                        let k = n.div_ceil(size) as u64;
                        frames += k;
                        bytes += n as u64 + k * HEADERS;
                    }
                    // The device queue is full (ENOBUFS): the datagram is lost here.
                    Err(e) if e.raw_os_error() == Some(105) => {}
                    Err(e) => return Err(e),
                }
            }
            report(frames, bytes, start.elapsed().as_secs_f64());
        }
    }
    Ok(())
}
