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
use pathstack::tokio::UdpSocket;
// The TAP start-up (options, signals) the tokio TAP servers share.
use pathstack_tools::tap_net;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(about = "A UDP echo server on pathstack's tokio API, on a TAP device")]
struct Args {
    #[command(flatten)]
    tap: tap_net::TapArgs,
    /// UDP port to echo on.
    #[arg(long, default_value_t = 7)]
    port: u16,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tap_net::run_current_thread("udp_echo", run(args))
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let stop = args.tap.stop()?;
    let net = args.tap.open("udp_echo", args.port)?;
    let driver = net.spawn();

    let sock = UdpSocket::bind(&net, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, args.port)).await?;
    let mut buf = vec![0u8; 65_536];
    let (mut echoed, mut bytes) = (0u64, 0u64);
    loop {
        if stop.now() {
            break;
        }
        // Wake up now and then to notice a signal or the deadline.
        let got = tokio::time::timeout(tap_net::STOP_POLL, sock.recv_from(&mut buf)).await;
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
