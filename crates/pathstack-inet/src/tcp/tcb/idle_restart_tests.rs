//! Restart after idle (RFC 5681 §4.1) and its switch,
//! `TcpConfig::slow_start_after_idle`: what a sender idle for longer
//! than the RTO sends at once.

use super::script::*;
use super::*;

const MSS: usize = 1448; // 1460 less the timestamp option

/// The initial window, all of it ACKed one segment at a time at 20 ms
/// (the window grows past the initial one), then `idle_ms` of silence and
/// a write of 30 segments: the window before the pause and the segments
/// that leave at once, in segments.
fn burst_after_idle(restart: bool, idle_ms: u64) -> (usize, usize) {
    let cfg = TcpConfig {
        slow_start_after_idle: restart,
        ..TcpConfig::default()
    };
    let mut s = Script::initial_window(cfg, true, MSS, 10 * MSS);
    s.at(20);
    for k in 1..=10u32 {
        s.inject(In::ack(1, 1 + k * MSS as u32));
    }
    s.expect_none();
    let cwnd = s.tcb.cwnd() as usize / MSS;
    assert!(cwnd > 10, "slow start grew the window: {cwnd}");
    s.at(20 + idle_ms).write(30 * MSS);
    assert!(s.out.iter().all(|e| e.payload.len() == MSS));
    (cwnd, s.out.len())
}

#[test]
fn an_idle_sender_restarts_from_the_initial_window() {
    let (_, burst) = burst_after_idle(true, 5_000);
    assert_eq!(burst, 10, "RW = min(IW, cwnd)");
}

#[test]
fn a_short_pause_keeps_the_window() {
    // 100 ms: shorter than the RTO (at least 200 ms).
    let (cwnd, burst) = burst_after_idle(true, 100);
    assert_eq!(burst, cwnd);
}

#[test]
fn without_the_switch_the_window_survives_idle() {
    let (cwnd, burst) = burst_after_idle(false, 5_000);
    assert_eq!(burst, cwnd);
}
