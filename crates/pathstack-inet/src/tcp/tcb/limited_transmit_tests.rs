//! The first duplicate ACKs (RFC 3042 limited transmit, RFC 5681 §3.2
//! step 1) and the cumulative ACK that ends the disorder: new data on
//! each of the first two duplicates, with SACK (RFC 6675's pipe) and
//! without (`output.rs`, `limited_transmit`); and the window grows on the
//! cumulative ACK by what it newly delivered, not by the segments the
//! SACKs already reported (`recovery.rs`, Linux's `tcp_cong_control` with
//! the ACK's delivered count) — packetdrill `limited-transmit-sack` and
//! `limited-transmit-no-sack`.

use super::script::*;
use super::*;

/// The segment numbers (relative sequence / `mss`) of the data emitted
/// so far.
fn drain(s: &mut Script, mss: u32) -> Vec<u32> {
    let mut v = Vec::new();
    while let Some(e) = s.out.pop_front() {
        if !e.payload.is_empty() {
            v.push(e.repr.seq.wrapping_sub(TCB_ISS + 1) / mss);
        }
    }
    v
}

/// Without SACK: each of the first two duplicate ACKs sends one new
/// segment (the initial window filled cwnd, so nothing else could), the
/// third retransmits the first segment (RFC 5681 §3.2 step 2).
#[test]
fn without_sack_the_first_two_duplicates_send_new_data() {
    const MSS: u32 = 1460; // no timestamps
    let mut s =
        Script::initial_window(TcpConfig::default(), false, MSS as usize, 20 * MSS as usize);
    let dup = || In::ack(1, 1).win(65535);
    s.at(120).inject(dup());
    assert_eq!(drain(&mut s, MSS), [10], "first duplicate: a new segment");
    s.at(130).inject(dup());
    assert_eq!(drain(&mut s, MSS), [11], "second duplicate: a new segment");
    s.at(140).inject(dup());
    assert_eq!(drain(&mut s, MSS)[0], 0, "third: the fast retransmission");
}

/// With SACK the first two duplicates send new data (pipe falls by the
/// SACKed segments); the cumulative ACK of three segments, two of them
/// SACKed before, then grows cwnd (10, slow start) by the one segment it
/// newly delivered, to 11: with 9 in flight, two segments go, as on
/// Linux, not four.
#[test]
fn the_cumulative_ack_grows_the_window_by_what_it_newly_delivered() {
    const MSS: u32 = 1448; // 1460 less the timestamp option
    let cfg = TcpConfig {
        rack: false,
        ..TcpConfig::default()
    };
    let mut s = Script::initial_window(cfg, true, MSS as usize, 20 * MSS as usize);
    s.at(120)
        .inject(In::ack(1, 1).sack(&[(1 + MSS, 1 + 2 * MSS)]));
    assert_eq!(drain(&mut s, MSS), [10]);
    s.at(130)
        .inject(In::ack(1, 1).sack(&[(1 + MSS, 1 + 3 * MSS)]));
    assert_eq!(drain(&mut s, MSS), [11]);
    let cwnd = s.tcb.cwnd();
    s.at(140).inject(In::ack(1, 1 + 3 * MSS));
    assert_eq!(s.tcb.cwnd(), cwnd + MSS, "one segment newly delivered");
    assert_eq!(drain(&mut s, MSS), [12, 13]);
}
