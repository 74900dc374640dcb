//! How fast `Host::wait` wakes on the in-memory wire: 1,000 UDP echoes
//! between two hosts, each driven by its own thread that sleeps in
//! `Host::recv_from_timeout` (and so in `Host::wait`) until a frame
//! arrives. Every round trip is two wake-ups; with a 1 ms polling sleep
//! the run took seconds, with the wire's waker it takes milliseconds.
//!
//! The floor, measured in the same run: the same number of round trips of
//! a bare `Mutex`/`Condvar` ping-pong between two threads, the cheapest
//! cross-thread wake-up the standard library offers. On small VMs a
//! wake-up of a sleeping thread on another vCPU costs tens of
//! microseconds, and both figures are dominated by it.
//!
//! ```text
//! cargo run --release --example wire_wake [-- ROUNDS]
//! taskset -c 0 target/release/examples/wire_wake   # both threads on one CPU
//! ```
//!
//! On a 2-vCPU VM the two threads usually sit on different vCPUs, and each
//! wake-up of an idle vCPU costs tens of microseconds; pinned to one CPU the
//! same run shows what the stack and the waker cost.

use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::host::Host;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(5);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1000,
    };
    let (a, b) = wire_pair(WireConfig::default());
    let mut client = Host::new("10.0.0.1/24".parse()?, a)?;
    let mut server = Host::new("10.0.0.2/24".parse()?, b)?;
    let srv = server.udp().bind("0.0.0.0:7")?;
    let echo = std::thread::spawn(move || -> Result<(), pathstack::socket::SocketError> {
        let mut buf = [0u8; 64];
        for _ in 0..=rounds {
            let (n, peer) = server.udp().recv_from_timeout(&srv, &mut buf, LIMIT)?;
            server.udp().send_to(&srv, &buf[..n], peer)?;
        }
        // Stay up until the client has the last echo (ARP, retransmits).
        while server
            .udp()
            .recv_from_timeout(&srv, &mut buf, Duration::from_millis(100))
            .is_ok()
        {}
        Ok(())
    });
    let sock = client.udp().bind("0.0.0.0:0")?;
    client.udp().connect(&sock, "10.0.0.2:7")?;
    let mut buf = [0u8; 64];
    // One warm-up round resolves ARP on both sides.
    client.udp().send(&sock, b"warm-up")?;
    client.udp().recv_timeout(&sock, &mut buf, LIMIT)?;
    let t0 = Instant::now();
    for i in 0..rounds {
        client.udp().send(&sock, &i.to_be_bytes())?;
        let n = client.udp().recv_timeout(&sock, &mut buf, LIMIT)?;
        assert_eq!(&buf[..n], &i.to_be_bytes());
    }
    let took = t0.elapsed();
    drop(client);
    echo.join().expect("echo thread")?;
    let floor = condvar_ping_pong(rounds);
    let per = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(rounds.max(1));
    println!(
        "{rounds} echoes between two threads over the in-memory wire: {:.1} ms, {:.1} µs per round trip",
        took.as_secs_f64() * 1e3,
        per(took)
    );
    println!(
        "floor, a bare condvar ping-pong between two threads: {:.1} ms, {:.1} µs per round trip ({:.2}x)",
        floor.as_secs_f64() * 1e3,
        per(floor),
        took.as_secs_f64() / floor.as_secs_f64().max(1e-9)
    );
    Ok(())
}

/// `rounds` round trips of a turn passed back and forth between two
/// threads through one `Mutex<u32>` and a `Condvar` each way.
fn condvar_ping_pong(rounds: u32) -> Duration {
    let shared = Arc::new((Mutex::new(0u32), Condvar::new(), Condvar::new()));
    let other = Arc::clone(&shared);
    let peer = std::thread::spawn(move || {
        let (turn, ping, pong) = &*other;
        let mut t = turn.lock().unwrap_or_else(|e| e.into_inner());
        for i in 0..rounds {
            while *t != 2 * i + 1 {
                t = ping.wait(t).unwrap_or_else(|e| e.into_inner());
            }
            *t += 1;
            pong.notify_one();
        }
    });
    let (turn, ping, pong) = &*shared;
    let t0 = Instant::now();
    for i in 0..rounds {
        let mut t = turn.lock().unwrap_or_else(|e| e.into_inner());
        *t += 1;
        ping.notify_one();
        while *t != 2 * i + 2 {
            t = pong.wait(t).unwrap_or_else(|e| e.into_inner());
        }
    }
    let took = t0.elapsed();
    let _ = peer.join();
    took
}
