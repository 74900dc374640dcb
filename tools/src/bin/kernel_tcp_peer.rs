//! The Linux kernel's ends of the latency, connection and load rows of
//! `scripts/bench-tcp.sh`, on `std::net` (and tokio for the echo server's
//! many connections), run inside a namespace with `ip netns exec`.
//!
//! ```text
//! kernel_tcp_peer echo   --bind ADDR:PORT
//! kernel_tcp_peer rtt    --peer ADDR:PORT [--rounds N] [--warmup W] [--json FILE]
//! kernel_tcp_peer rate   --peer ADDR:PORT [--seconds S]
//! kernel_tcp_peer stream --peer ADDR:PORT [--seconds S] [--wait W]
//! kernel_tcp_peer hold   --peer ADDR:PORT --count N
//! ```
//!
//! - `echo`: a TCP echo server (RFC 862) for any number of connections,
//!   `TCP_NODELAY` on each; one tokio task per connection on one thread.
//!   Prints `ready` once listening; runs until killed.
//! - `rtt`: one connection, `TCP_NODELAY`, 1 byte each way per round trip;
//!   RTT percentiles as the UDP clients report them (`pathstack_tools::rtt`).
//! - `rate`: connections per second: connect, 1-byte echo, close (this end
//!   closes first, so TIME-WAIT stays here, RFC 9293 §3.6), one after the
//!   other for S seconds. JSON `{"conns", "seconds", "conn_per_s"}`.
//! - `stream`: a busy echo connection's throughput: one thread writes
//!   64 KB chunks for S seconds then shuts down its writing side, another
//!   reads the echo until the server closes; the echoed octets must equal
//!   the written ones. JSON `{"bytes", "seconds", "gbps"}` (octets echoed
//!   back per second). With `--wait W` it prints `connected` on stderr once
//!   the connection is up and waits W seconds before sending (so that a
//!   SYN flood can start on an established connection).
//! - `hold`: opens N connections and keeps them open and silent until
//!   killed; prints `established N` once all are up. Needs `ulimit -n`
//!   above N.
//!
//! Every mode fails (non-zero exit, message on stderr) on the first error
//! instead of reporting a figure from a partial run.
#![forbid(unsafe_code)]

use pathstack_tools::rtt;

use clap::{Parser, Subcommand};
use rtt::RttRecorder;
use serde_json::json;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "kernel TCP peer: echo server, RTT, connection rate, stream, idle holder")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Echo server for any number of connections, until killed.
    Echo {
        #[arg(long)]
        bind: SocketAddr,
    },
    /// 1-byte ping-pong on one connection; RTT percentiles.
    Rtt {
        #[arg(long)]
        peer: SocketAddr,
        #[arg(long, default_value_t = 20_000)]
        rounds: u64,
        #[arg(long, default_value_t = 1_000)]
        warmup: u64,
        /// Write the result as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Connect, 1-byte echo, close, repeatedly; connections per second.
    Rate {
        #[arg(long)]
        peer: SocketAddr,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// Bulk through an echo server; octets echoed per second.
    Stream {
        #[arg(long)]
        peer: SocketAddr,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Seconds between the connect and the first octet.
        #[arg(long, default_value_t = 0.0)]
        wait: f64,
    },
    /// Open N connections and keep them idle until killed.
    Hold {
        #[arg(long)]
        peer: SocketAddr,
        #[arg(long)]
        count: usize,
    },
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How long a connect may take before the run fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

fn connect(peer: SocketAddr) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&peer, CONNECT_TIMEOUT)?;
    s.set_nodelay(true)?;
    Ok(s)
}

fn main() -> std::process::ExitCode {
    match run(Cli::parse().mode) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kernel_tcp_peer: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(mode: Mode) -> Result<(), BoxError> {
    match mode {
        Mode::Echo { bind } => echo(bind),
        Mode::Rtt {
            peer,
            rounds,
            warmup,
            json,
        } => {
            let rec = rtt(peer, rounds, warmup)?;
            rec.report(json.as_deref())?;
            Ok(())
        }
        Mode::Rate { peer, seconds } => rate(peer, seconds),
        Mode::Stream {
            peer,
            seconds,
            wait,
        } => stream(peer, seconds, wait),
        Mode::Hold { peer, count } => hold(peer, count),
    }
}

fn echo(bind: SocketAddr) -> Result<(), BoxError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    rt.block_on(async move {
        let l = tokio::net::TcpListener::bind(bind).await?;
        println!("kernel_tcp_peer echo: ready on {bind}");
        loop {
            let (s, _) = l.accept().await?;
            s.set_nodelay(true)?;
            // A connection's error (a reset) ends only that connection.
            tokio::spawn(async move {
                let _ = echo_conn(s).await;
            });
        }
    })
}

/// Echoes one connection until the peer closes (then closes it too).
async fn echo_conn(s: tokio::net::TcpStream) -> io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        s.readable().await?;
        let n = match s.try_read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        let mut off = 0;
        while off < n {
            s.writable().await?;
            match s.try_write(&buf[off..n]) {
                Ok(k) => off += k,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn rtt(peer: SocketAddr, rounds: u64, warmup: u64) -> Result<RttRecorder, BoxError> {
    let mut s = connect(peer)?;
    let mut rec = RttRecorder::new("kernel-tcp");
    let mut b = [0u8; 1];
    let mut round = |i: u64, s: &mut TcpStream| -> Result<Duration, BoxError> {
        let byte = [i as u8];
        let t = Instant::now();
        s.write_all(&byte)?;
        s.read_exact(&mut b)?;
        let d = t.elapsed();
        if b != byte {
            return Err(format!("round {i}: echoed {:?}, sent {:?}", b, byte).into());
        }
        Ok(d)
    };
    for i in 0..warmup {
        round(i, &mut s)?;
    }
    let t0 = Instant::now();
    for i in 0..rounds {
        let d = round(i, &mut s)?;
        rec.record(d);
    }
    rec.set_elapsed(t0.elapsed());
    Ok(rec)
}

fn rate(peer: SocketAddr, seconds: f64) -> Result<(), BoxError> {
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut conns = 0u64;
    let mut b = [0u8; 1];
    while Instant::now() < end {
        let mut s = connect(peer).map_err(|e| format!("connection {conns}: connect: {e}"))?;
        s.write_all(b"x")?;
        s.read_exact(&mut b)
            .map_err(|e| format!("connection {conns}: reading the echo: {e}"))?;
        drop(s);
        conns += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"conns": conns, "seconds": secs, "conn_per_s": conns as f64 / secs})
    );
    Ok(())
}

fn stream(peer: SocketAddr, seconds: f64, wait: f64) -> Result<(), BoxError> {
    let mut s = connect(peer)?;
    if wait > 0.0 {
        eprintln!("connected");
        std::thread::sleep(Duration::from_secs_f64(wait));
    }
    let mut r = s.try_clone()?;
    let reader = std::thread::spawn(move || -> io::Result<u64> {
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0u64;
        loop {
            match r.read(&mut buf)? {
                0 => return Ok(got),
                n => got += n as u64,
            }
        }
    });
    let data = vec![0x5au8; 64 * 1024];
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut sent = 0u64;
    while Instant::now() < end {
        sent += s.write(&data)? as u64;
    }
    s.shutdown(Shutdown::Write)?;
    let got = reader.join().map_err(|_| "the reader thread panicked")??;
    let secs = start.elapsed().as_secs_f64();
    if got != sent {
        return Err(format!("sent {sent} octets, {got} came back").into());
    }
    println!(
        "{}",
        json!({"bytes": got, "seconds": secs, "gbps": got as f64 * 8.0 / secs / 1e9})
    );
    Ok(())
}

fn hold(peer: SocketAddr, count: usize) -> Result<(), BoxError> {
    let mut held = Vec::with_capacity(count);
    for i in 0..count {
        let s = TcpStream::connect_timeout(&peer, CONNECT_TIMEOUT)
            .map_err(|e| format!("idle connection {i} of {count}: {e}"))?;
        held.push(s);
    }
    println!("established {count}");
    io::stdout().flush()?;
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
