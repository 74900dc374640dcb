//! The Linux kernel's end of `scripts/bench-tcp.sh`: TCP bulk transfer
//! with `std::net` (blocking sockets, the kernel's default buffers and
//! congestion control), run inside a namespace with `ip netns exec`.
//!
//! ```text
//! kernel_tcp_bulk sink   --bind ADDR:PORT
//! kernel_tcp_bulk source --peer ADDR:PORT [--seconds S] [--conns N]
//! ```
//!
//! `sink` accepts one connection and reads until EOF; `source` connects,
//! writes for S seconds, shuts its writing side down and waits for the
//! peer's close; with `--conns N` it does so on N connections at once,
//! one thread each, and reports their total. Both print `{"bytes":..,"seconds":..,"gbps":..}` on
//! stdout, as `tcp_bulk` and `smoltcp_peer tcp-*` do.
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "kernel TCP bulk sink/source")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Accept one connection, read until EOF.
    Sink {
        #[arg(long)]
        bind: SocketAddr,
    },
    /// Connect, write for --seconds, shut down.
    Source {
        #[arg(long)]
        peer: SocketAddr,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Parallel connections, one thread each.
        #[arg(long, default_value_t = 1)]
        conns: usize,
    },
}

/// One connection of the source: connects, writes until `end`, shuts
/// down, waits for the peer's close; the octets written.
fn send_until(peer: SocketAddr, end: Instant) -> std::io::Result<u64> {
    let mut s = TcpStream::connect_timeout(&peer, Duration::from_secs(10))?;
    let data = vec![0x5au8; 256 * 1024];
    let mut bytes = 0u64;
    while Instant::now() < end {
        bytes += s.write(&data)? as u64;
    }
    s.shutdown(Shutdown::Write)?;
    // The peer closes once it has read everything.
    let mut b = [0u8; 64];
    while s.read(&mut b)? > 0 {}
    Ok(bytes)
}

fn report(bytes: u64, secs: f64) {
    println!(
        "{}",
        json!({
            "bytes": bytes,
            "seconds": secs,
            "gbps": bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
        })
    );
}

fn main() -> std::io::Result<()> {
    match Cli::parse().mode {
        Mode::Sink { bind } => {
            let l = TcpListener::bind(bind)?;
            println!("kernel_tcp_bulk sink: ready on {bind}");
            let (mut s, _) = l.accept()?;
            let mut buf = vec![0u8; 256 * 1024];
            let mut bytes = 0u64;
            let mut start = None;
            loop {
                let n = s.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                start.get_or_insert_with(Instant::now);
                bytes += n as u64;
            }
            report(bytes, start.map_or(0.0, |t| t.elapsed().as_secs_f64()));
        }
        Mode::Source {
            peer,
            seconds,
            conns,
        } => {
            let start = Instant::now();
            let end = start + Duration::from_secs_f64(seconds);
            let threads: Vec<_> = (0..conns.max(1))
                .map(|_| std::thread::spawn(move || send_until(peer, end)))
                .collect();
            let mut bytes = 0u64;
            for t in threads {
                bytes += t
                    .join()
                    .map_err(|_| std::io::Error::other("a sender thread panicked"))??;
            }
            report(bytes, start.elapsed().as_secs_f64());
        }
    }
    Ok(())
}
