//! A UDP echo server (RFC 862) written against the tokio socket API of
//! pathstack, on a TAP device: the stack runs on a current-thread runtime,
//! its driver waiting on the TAP descriptor through tokio's `AsyncFd`.
//!
//! ```text
//! cargo run --release --example udp_echo -- --tap NAME --ip ADDR/PREFIX \
//!     [--netns NS] [--port 7] [--gateway ADDR] [--seconds S]
//! ```
//!
//! The TAP device is created if absent (as root); with `--netns` it is
//! opened inside that network namespace (see `scripts/netns.sh`). Try it
//! from the peer side:
//!
//! ```text
//! echo hello | socat -t1 - UDP:10.77.1.1:7     # prints hello
//! ```
//!
//! On SIGINT/SIGTERM (or after `--seconds`) it prints how many datagrams
//! it echoed and the stack's statistics.

use clap::Parser;
use pathstack::devices::{TapDevice, TapOptions};
use pathstack::host::HostConfig;
use pathstack::inet::MacAddr;
use pathstack::tokio::{Net, UdpSocket};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(about = "A UDP echo server on pathstack's tokio API, on a TAP device")]
struct Args {
    /// TAP interface name (created if absent).
    #[arg(long)]
    tap: String,
    /// Our address and prefix length, e.g. 10.77.1.1/24.
    #[arg(long)]
    ip: String,
    /// Network namespace to open the TAP device in.
    #[arg(long)]
    netns: Option<String>,
    /// UDP port to echo on.
    #[arg(long, default_value_t = 7)]
    port: u16,
    /// Default gateway.
    #[arg(long)]
    gateway: Option<Ipv4Addr>,
    /// Stop after this many seconds (default: on SIGINT/SIGTERM).
    #[arg(long)]
    seconds: Option<u64>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    // One single-threaded stack per core: a current-thread runtime.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("udp_echo: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("udp_echo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let stop = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop))?;

    let mut opts = TapOptions::new();
    if let Some(ns) = &args.netns {
        opts = opts.netns(ns.clone());
    }
    let tap = TapDevice::open(&args.tap, opts)?;
    let mut cfg = HostConfig::parse(&args.ip)?;
    cfg.gateway = args.gateway;
    cfg.mac = Some(MacAddr(tap.mac()));
    println!(
        "udp_echo {}:{} on {} (mac {}, mtu {})",
        cfg.addr,
        args.port,
        tap.name(),
        MacAddr(tap.mac()),
        tap.mtu()
    );
    let net = Net::tap(cfg, tap)?;
    let driver = net.spawn();

    let sock = UdpSocket::bind(&net, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, args.port)).await?;
    let deadline = args.seconds.map(Duration::from_secs);
    let started = tokio::time::Instant::now();
    let mut buf = vec![0u8; 65_536];
    let (mut echoed, mut bytes) = (0u64, 0u64);
    loop {
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| started.elapsed() >= d) {
            break;
        }
        // Wake up now and then to notice a signal or the deadline.
        let got = tokio::time::timeout(Duration::from_millis(200), sock.recv_from(&mut buf)).await;
        let Ok(got) = got else { continue };
        let (n, peer) = got?;
        sock.send_to(&buf[..n], peer).await?;
        echoed += 1;
        bytes += n as u64;
    }
    driver.abort();
    println!("echoed {echoed} datagrams ({bytes} bytes)");
    print!("{}", net.with_host(|h| h.report()));
    Ok(())
}
