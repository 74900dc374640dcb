//! A paced flood of IPv4 datagrams through a raw socket, for the flood
//! examples (`syn_flood`, `icmp_flood`): the socket (`IPPROTO_RAW`, so the
//! datagram's header is the example's own: RFC 791; Linux `raw(7)` implies
//! `IP_HDRINCL`), the pacing in 1 ms steps (the datagrams due by then go out
//! in a burst), and the report `{"sent", "seconds", "rate"}` on stdout.
//!
//! Used by the `syn_flood` and `icmp_flood` tools.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::{Duration, Instant};

type BoxError = Box<dyn std::error::Error>;

/// `IPPROTO_RAW` (RFC 791 protocol 255).
const IPPROTO_RAW: i32 = 255;

/// Sends to `target` `rate` datagrams per second for `seconds`, each
/// written into the (cleared) buffer by `build(buffer, n)` for the `n`-th
/// datagram; the kernel resolves the target's MAC and sends the frames.
/// Prints the report, and fails if a send fails or the rate fell more than
/// 5 % short of `rate` (`what` names the datagrams in the messages, e.g.
/// "SYN").
pub fn flood(
    target: Ipv4Addr,
    rate: u64,
    seconds: f64,
    what: &str,
    mut build: impl FnMut(&mut Vec<u8>, u64) -> Result<(), BoxError>,
) -> Result<(), BoxError> {
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(IPPROTO_RAW)))
        .map_err(|e| format!("raw socket (needs CAP_NET_RAW): {e}"))?;
    let dst = SockAddr::from(SocketAddrV4::new(target, 0));
    let mut frame = Vec::with_capacity(1500);
    let start = Instant::now();
    let end = Duration::from_secs_f64(seconds);
    let mut sent = 0u64;
    loop {
        let t = start.elapsed();
        if t >= end {
            break;
        }
        let due = (t.as_secs_f64() * rate as f64) as u64;
        while sent < due {
            frame.clear();
            build(&mut frame, sent).map_err(|e| format!("building {what} {sent}: {e}"))?;
            sock.send_to(&frame, &dst)
                .map_err(|e| format!("sending {what} {sent}: {e}"))?;
            sent += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let secs = start.elapsed().as_secs_f64();
    let achieved = sent as f64 / secs;
    println!(
        "{}",
        serde_json::json!({"sent": sent, "seconds": secs, "rate": achieved})
    );
    if achieved < 0.95 * rate as f64 {
        return Err(format!("sent {achieved:.0} {what}/s, asked for {rate}").into());
    }
    Ok(())
}
