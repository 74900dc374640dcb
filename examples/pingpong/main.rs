//! The main job: a 1-byte UDP ping-pong between two pathstack hosts on the
//! in-memory wire, no root and no device, with the round-trip time
//! printed.
//!
//! ```text
//! cargo run --release --example pingpong [-- ROUNDS]
//! ```
//!
//! Both hosts run on this one thread: a round trip is the client's send,
//! the server's poll (receive, echo), the client's poll (receive). So the
//! time measured is the stacks' and the sockets' work alone, with no thread
//! wake-up in it (`examples/wire_wake.rs` measures the wake-ups). The echo
//! here is the application's, through the socket API; the thesis' echo
//! inside the server's path, and the path-inlined form, are the measurement
//! tool's. The measurement tool
//! with every transport, form, scheduler and the instruction counts is
//! `pingpong_bench` in `tools/` (`scripts/instr.sh`).

use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::host::Host;
use pathstack::socket::ready;
use std::time::Instant;

/// Polls of both hosts after which a round trip counts as lost: the
/// wire loses nothing, so this only guards against a stack bug.
const MAX_POLLS: u32 = 1_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 100_000,
    };
    let (a, b) = wire_pair(WireConfig::default());
    let mut client = Host::new("10.0.0.1/24".parse()?, a)?;
    let mut server = Host::new("10.0.0.2/24".parse()?, b)?;
    let srv = server.udp().bind("0.0.0.0:7")?;
    let sock = client.udp().bind("0.0.0.0:0")?;
    client.udp().connect(&sock, "10.0.0.2:7")?;

    // One round trip of the server's echo: everything the server received
    // goes back to its sender.
    let round = |client: &mut Host, server: &mut Host, byte: u8| -> std::io::Result<()> {
        sock.send(client, &[byte])?;
        let mut buf = [0u8; 64];
        for _ in 0..MAX_POLLS {
            server.poll();
            while let Some((n, peer)) = ready(srv.recv_from(server, &mut buf))? {
                srv.send_to(server, &buf[..n], peer)?;
            }
            client.poll();
            if let Some(n) = ready(sock.recv(client, &mut buf))? {
                assert_eq!(&buf[..n], &[byte], "the echo of this round");
                return Ok(());
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no echo after {MAX_POLLS} polls"),
        ))
    };

    // The first rounds resolve ARP (RFC 826) on both sides and warm the
    // caches; they are not timed.
    for i in 0..100 {
        round(&mut client, &mut server, i as u8)?;
    }
    // Each round trip timed on its own: the median is what one costs; the
    // mean also carries the rounds in which the OS ran something else.
    let mut ns = Vec::with_capacity(rounds as usize);
    let t0 = Instant::now();
    for i in 0..rounds {
        let t = Instant::now();
        round(&mut client, &mut server, i as u8)?;
        ns.push(t.elapsed().as_nanos() as u64);
    }
    let mean = t0.elapsed().as_secs_f64() * 1e9 / f64::from(rounds.max(1));
    ns.sort_unstable();
    let median = ns.get(ns.len() / 2).copied().unwrap_or(0);
    println!(
        "{rounds} UDP round trips of 1 byte between two stacks on the in-memory wire: \
         median {median} ns, mean {mean:.0} ns per round trip"
    );
    Ok(())
}
