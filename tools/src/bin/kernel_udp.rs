//! The Linux kernel's own UDP sockets as a ping-pong peer: the "kernel" row of
//! `scripts/bench-veth.sh`.
//!
//! ```text
//! kernel_udp echo   --bind IP:PORT [--busy-poll]
//! kernel_udp client --peer IP:PORT --rounds N [--warmup W] [--busy-poll] [--json FILE]
//! ```
//!
//! Run each end inside its namespace of the `scripts/netns.sh` topology, pinned:
//!
//! ```text
//! ip netns exec ps-a-42 taskset -c 0 kernel_udp echo --bind 10.77.1.4:7 &
//! ip netns exec ps-b-42 taskset -c 1 kernel_udp client --peer 10.77.1.4:7 --rounds 20000
//! ```
//!
//! The client sends one byte (the round number, modulo 256), waits for the
//! same byte to come back and records the time between the two in an HDR
//! histogram; an echo that does not come within 200 ms counts as lost, and a
//! stale echo (a late answer to a lost round) is skipped. Blocking waits sleep
//! in `recv(2)`; `--busy-poll` uses a non-blocking socket and yields the CPU
//! between empty polls (as `pathstack_devices::WaitMode::BusyPoll` does, so
//! that kernel work queued on the same CPU still runs).
#![forbid(unsafe_code)]

use pathstack_tools::rtt;

use clap::{Parser, Subcommand};
use rtt::{RttRecorder, LOSS_TIMEOUT};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(about = "1-byte UDP ping-pong over the kernel's sockets")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Echo every datagram back to its sender, until killed.
    Echo {
        /// Local address to bind, e.g. 10.77.1.4:7.
        #[arg(long)]
        bind: SocketAddr,
        /// Poll a non-blocking socket (yielding between polls) instead of sleeping.
        #[arg(long)]
        busy_poll: bool,
    },
    /// Ping-pong one byte with an echo server and report RTT percentiles.
    Client {
        /// The echo server, e.g. 10.77.1.4:7.
        #[arg(long)]
        peer: SocketAddr,
        /// Measured round trips.
        #[arg(long, default_value_t = 20_000)]
        rounds: u64,
        /// Round trips before measuring (caches, ARP, scheduler).
        #[arg(long, default_value_t = 1_000)]
        warmup: u64,
        /// Poll a non-blocking socket (yielding between polls) instead of sleeping.
        #[arg(long)]
        busy_poll: bool,
        /// Write the result as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match Cli::parse().mode {
        Mode::Echo { bind, busy_poll } => echo(bind, busy_poll)?,
        Mode::Client {
            peer,
            rounds,
            warmup,
            busy_poll,
            json,
        } => {
            let rec = client(peer, rounds, warmup, busy_poll)?;
            rec.report(json.as_deref())?;
        }
    }
    Ok(())
}

fn echo(bind: SocketAddr, busy_poll: bool) -> io::Result<()> {
    let sock = UdpSocket::bind(bind)?;
    sock.set_nonblocking(busy_poll)?;
    println!("kernel_udp echo: ready on {bind}");
    let mut buf = [0u8; 2048];
    loop {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                // A refused send (e.g. no buffer) loses this echo; the
                // client counts it.
                let _ = sock.send_to(&buf[..n], from);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Waits for the echo of `byte`; `Ok(false)` if it did not come in time.
fn await_echo(sock: &UdpSocket, byte: u8, busy_poll: bool) -> io::Result<bool> {
    let deadline = Instant::now() + LOSS_TIMEOUT;
    let mut buf = [0u8; 2048];
    loop {
        match sock.recv(&mut buf) {
            Ok(1) if buf[0] == byte => return Ok(true),
            Ok(_) => {} // a stale echo of an earlier, timed-out round
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut =>
            {
                if busy_poll {
                    std::thread::yield_now();
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // ICMP port unreachable from an earlier send: the server is not
            // up (yet); treat it like a lost round.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        if !busy_poll {
            sock.set_read_timeout(Some(deadline - now))?;
        }
    }
}

fn client(peer: SocketAddr, rounds: u64, warmup: u64, busy_poll: bool) -> io::Result<RttRecorder> {
    let local: SocketAddr = if peer.is_ipv4() {
        "0.0.0.0:0".parse().expect("constant address")
    } else {
        "[::]:0".parse().expect("constant address")
    };
    let sock = UdpSocket::bind(local)?;
    sock.connect(peer)?;
    sock.set_nonblocking(busy_poll)?;
    let name = if busy_poll {
        "kernel-busypoll"
    } else {
        "kernel"
    };
    let mut rec = RttRecorder::new(name);
    let mut start = Instant::now();
    for round in 0..warmup + rounds {
        if round == warmup {
            start = Instant::now();
        }
        let byte = round as u8;
        if !busy_poll {
            sock.set_read_timeout(Some(LOSS_TIMEOUT))?;
        }
        let t0 = Instant::now();
        match sock.send(&[byte]) {
            Ok(_) => {}
            // An earlier ICMP port unreachable can surface on send as well.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
        let echoed = await_echo(&sock, byte, busy_poll)?;
        let rtt = t0.elapsed();
        if round >= warmup {
            rec.round(echoed, rtt);
        }
    }
    rec.set_elapsed(start.elapsed());
    Ok(rec)
}
