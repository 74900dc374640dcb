//! Scripted loss patterns (issue 28 item 6) against the recovery of
//! `recovery.rs` and `prr.rs`: for each, the timeouts taken, what each
//! ACK lets out during recovery as RFC 6937 PRR computes it, the window
//! when recovery ends (ssthresh, RFC 6937 §3) and, for a spurious
//! timeout, the undo (RFC 3708 §3).

use super::script::*;
use super::*;
use crate::tcp::congestion::{CongestionControl, CongestionKind};
use pathstack_core::time::Duration;

const MSS: usize = 1448; // 1460 less the timestamp option
const M: u32 = MSS as u32;

/// NewReno (ssthresh = FlightSize / 2, RFC 5681 eq. 4) and no RACK, so
/// that recovery starts on the third duplicate ACK (RFC 6675 §5) and the
/// numbers are the RFCs' own.
fn reno() -> TcpConfig {
    TcpConfig {
        rack: false,
        congestion: CongestionKind::NewReno,
        ..TcpConfig::default()
    }
}

/// The segment numbers (relative sequence / MSS) emitted so far.
fn drain(s: &mut Script) -> Vec<u32> {
    let mut v = Vec::new();
    while let Some(e) = s.out.pop_front() {
        if !e.payload.is_empty() {
            v.push(e.repr.seq.wrapping_sub(TCB_ISS + 1) / M);
        }
    }
    v
}

/// One loss in a window of ten (then twelve, with RFC 6675's sends on
/// the first duplicate ACKs): after the fast retransmission, PRR sends
/// one new segment per two ACKs while pipe > ssthresh (6 segments, half
/// of RecoverFS = 12), and one per ACK once pipe is below it (PRR-SSRB);
/// recovery ends with cwnd = ssthresh and no timeout.
#[test]
fn single_loss_prr_paces_and_ends_at_ssthresh() {
    let mut s = Script::initial_window(reno(), true, MSS, 20 * MSS);
    let mut per_ack = Vec::new();
    for k in 2..=10 {
        s.at(20).inject(In::ack(1, 1).sack(&[(1 + M, 1 + k * M)]));
        per_ack.push(drain(&mut s));
    }
    let expected: [&[u32]; 9] = [
        &[10], // dup ACK 1: cwnd − pipe = 1 segment (RFC 6675 §5 step C)
        &[11], // dup ACK 2
        &[0],  // dup ACK 3: recovery, the fast retransmission only
        &[],   // ceil(2 · 6 / 12) − 1 = 0
        &[12], // ceil(3 · 6 / 12) − 1 = 1
        &[],   // ceil(4 · 6 / 12) − 2 = 0
        &[],   // pipe = ssthresh: PRR-SSRB, ssthresh − pipe = 0
        &[13], // pipe < ssthresh: min(ssthresh − pipe, …) = 1
        &[14],
    ];
    assert_eq!(per_ack, expected);
    assert_eq!(s.tcb.cc.ssthresh(), 6 * M);
    // The retransmission fills the hole; everything sent is delivered.
    s.at(30).inject(In::ack(1, 1 + 15 * M));
    assert!(!s.tcb.recovery.in_recovery());
    assert_eq!(s.tcb.cwnd(), 6 * M, "cwnd = ssthresh (RFC 6937 §3)");
    let st = s.tcb.stats();
    assert_eq!((st.recoveries, st.timeouts), (1, 0));
    // With cwnd = ssthresh the rest goes at once, not one segment.
    assert_eq!(drain(&mut s), vec![15, 16, 17, 18, 19]);
}

/// Four consecutive losses (a burst) in a window of ten: on the third
/// duplicate ACK all four are lost (RFC 6675 IsLost), pipe is below
/// ssthresh; that ACK found the loss (not a SafeACK, RFC 6937bis) and
/// lets out only the fast retransmission; each later one DeliveredData
/// plus one segment (PRR-SSRB) within ssthresh − pipe: the holes go one per
/// ACK, no timeout, and
/// recovery ends at cwnd = ssthresh (5 segments), where RFC 6582's
/// option 1 left min(ssthresh, SMSS + SMSS) = 2.
#[test]
fn burst_loss_repaired_without_timeout() {
    let mut s = Script::initial_window(reno(), true, MSS, 10 * MSS);
    let mut per_ack = Vec::new();
    for k in 5..=10 {
        s.at(20)
            .inject(In::ack(1, 1).sack(&[(1 + 4 * M, 1 + k * M)]));
        per_ack.push(drain(&mut s));
    }
    let expected: [&[u32]; 6] = [&[], &[], &[0], &[1, 2], &[3], &[]];
    assert_eq!(per_ack, expected);
    s.at(30).inject(In::ack(1, 1 + 10 * M));
    assert!(!s.tcb.recovery.in_recovery());
    assert_eq!(s.tcb.cwnd(), 5 * M);
    assert_eq!(s.tcb.cc.ssthresh(), 5 * M);
    let st = s.tcb.stats();
    assert_eq!((st.recoveries, st.timeouts, st.retrans_segs), (1, 0, 4));
}

/// RFC 8985 §6.2: the retransmission is lost too and RACK sends it again
/// (no timeout); recovery then ends at cwnd = ssthresh.
#[test]
fn lost_retransmission_ends_at_ssthresh() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    s.at(20)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 3 * M)]));
    s.advance_until_output(ms(29)).expect("a retransmission");
    assert_eq!(drain(&mut s), vec![1]);
    s.write(2 * MSS);
    s.at(30)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 10 * M)]));
    drain(&mut s);
    s.at(40)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 12 * M)]));
    s.advance_until_output(ms(45))
        .expect("a second retransmission");
    assert_eq!(drain(&mut s), vec![1]);
    s.at(50).inject(In::ack(1, 1 + 12 * M));
    assert!(!s.tcb.recovery.in_recovery());
    assert_eq!(s.tcb.cwnd(), s.tcb.cc.ssthresh());
    let st = s.tcb.stats();
    assert_eq!((st.lost_retransmits, st.timeouts), (1, 0));
}

/// RFC 8985 §7: the last two segments are lost; the probe and RACK
/// repair them without a timeout, and the congestion response is a fast
/// recovery's (§7.4.2): cwnd = ssthresh after it.
#[test]
fn tail_loss_repaired_by_probe_without_timeout() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    s.at(20).inject(In::ack(1, 1 + 8 * M));
    let at = s.advance_until_output(ms(5000)).expect("a probe");
    assert!(at < ms(210), "the probe goes before the RTO");
    assert_eq!(drain(&mut s), vec![9]);
    s.advance_to(at + Duration::from_millis(10));
    s.inject(In::ack(1, 1 + 8 * M).sack(&[(1 + 9 * M, 1 + 10 * M)]));
    s.advance_until_output(at + Duration::from_millis(20))
        .expect("RACK's retransmission");
    assert_eq!(drain(&mut s), vec![8]);
    s.advance_to(at + Duration::from_millis(30));
    s.inject(In::ack(1, 1 + 10 * M));
    let st = s.tcb.stats();
    assert_eq!((st.tlp_loss_repaired, st.timeouts), (1, 0));
    assert_eq!(s.tcb.cwnd(), s.tcb.cc.ssthresh());
}

/// The first segment with payload emitted before `deadline`: when, and
/// the segment numbers emitted then (pure ACKs are passed over).
fn next_data(s: &mut Script, deadline: Instant) -> Option<(Instant, Vec<u32>)> {
    loop {
        let at = s.advance_until_output(deadline)?;
        let segs = drain(s);
        if !segs.is_empty() {
            return Some((at, segs));
        }
    }
}

/// Tail loss while the peer sends too (an echo, issue 28 over TAP): the
/// last two segments are lost and the peer's data keeps arriving with
/// the old ACK and no SACK, then a window update. Those segments
/// acknowledge nothing new, so
/// the probe timeout armed by the last ACK of new data runs on (RFC 8985
/// §7.2; Linux's `tcp_ack` leaves a pending loss probe alone) and the
/// probe goes at 2·SRTT, not the RTO at 200 ms and its loss window.
#[test]
fn tail_loss_probe_survives_the_peers_data() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    s.at(20).inject(In::ack(1, 1 + 8 * M));
    // The peer's data (the predicted path, `predict.rs`) and a window
    // update (the full path, `input.rs`): neither acknowledges anything.
    s.at(25).inject(In::data(1, 1 + 8 * M, 100));
    s.at(30).inject(In::ack(101, 1 + 8 * M).win(30000));
    let (at, segs) = next_data(&mut s, ms(5000)).expect("a probe");
    assert!(at < ms(100), "the probe at 2·SRTT, not the RTO: {at:?}");
    assert_eq!(segs, vec![9]);
    let st = s.tcb.stats();
    assert_eq!((st.tlp_probes, st.timeouts), (1, 0));
}

/// A spurious timeout: the ACKs are delayed past the RTO, the timer
/// retransmits the first segment at cwnd = 1, then the delayed ACK
/// covers the whole flight and the receiver reports the retransmission
/// as a duplicate (D-SACK). Every retransmission of the timeout was
/// unnecessary: the reduction is undone (RFC 3708 §3, Linux
/// `tcp_try_undo_loss`), cwnd and ssthresh back to what they were.
#[test]
fn spurious_timeout_is_undone_by_dsack() {
    let mut s = Script::initial_window(reno(), true, MSS, 10 * MSS);
    let (cwnd, ssthresh) = (s.tcb.cwnd(), s.tcb.cc.ssthresh());
    assert_eq!(cwnd, 10 * M);
    let at = s.advance_until_output(ms(1000)).expect("the timeout");
    assert_eq!(at, ms(210));
    assert_eq!(drain(&mut s), vec![0]);
    assert_eq!(s.tcb.cwnd(), M, "the loss window");
    s.at(215).inject(In::ack(1, 1 + 10 * M));
    assert_eq!(s.tcb.stats().dsack_undos, 0);
    s.at(216).inject(In::ack(1, 1 + 10 * M).sack(&[(1, 1 + M)]));
    let st = s.tcb.stats();
    assert_eq!((st.timeouts, st.dsack_undos), (1, 1));
    assert!(s.tcb.cwnd() >= cwnd, "cwnd restored: {}", s.tcb.cwnd());
    assert_eq!(s.tcb.cc.ssthresh(), ssthresh);
}

/// A timeout that was not spurious (the retransmission fills a real
/// hole, no D-SACK) keeps its reduction.
#[test]
fn real_timeout_is_not_undone() {
    let mut s = Script::initial_window(reno(), true, MSS, 10 * MSS);
    s.advance_until_output(ms(1000)).expect("the timeout");
    assert_eq!(drain(&mut s), vec![0]);
    s.at(215).inject(In::ack(1, 1 + 10 * M));
    s.at(216).inject(In::ack(1, 1 + 10 * M));
    let st = s.tcb.stats();
    assert_eq!((st.timeouts, st.dsack_undos), (1, 0));
    assert_eq!(s.tcb.cc.ssthresh(), 5 * M);
    assert!(s.tcb.cwnd() < 10 * M);
}

/// RFC 8985 §7.2–7.3: with one segment in flight the probe timeout
/// (2·SRTT + 200 ms, at most the time left on the RTO) ties with the
/// retransmission timer; the probe is armed in its place, so the probe
/// goes (cwnd kept) and the RTO is re-armed after it: a timeout, with
/// its loss window, only if the probe is lost too.
#[test]
fn lone_segment_probe_goes_before_the_timeout() {
    let mut s = Script::established(TcpConfig::default(), true);
    let cwnd = s.tcb.cwnd();
    s.write(100);
    s.expect(Out::data(1, 100));
    let at = s.advance_until_output(ms(1000)).expect("the probe");
    assert_eq!(at, ms(210), "at the RTO's time");
    assert_eq!(drain(&mut s), vec![0]);
    let st = s.tcb.stats();
    assert_eq!((st.tlp_probes, st.timeouts), (1, 0));
    assert_eq!(s.tcb.cwnd(), cwnd, "no loss window");
    // The probe is lost too: the RTO, re-armed when it went, fires one
    // RTO later.
    let at = s.advance_until_output(ms(2000)).expect("the timeout");
    assert_eq!(at, ms(410));
    assert_eq!(drain(&mut s), vec![0]);
    assert_eq!(s.tcb.stats().timeouts, 1);
}

/// The ACK clock stops in recovery (issue 28 item 1, cause 2): one loss
/// in the initial window, the SACKs of the other nine start recovery
/// (RFC 6675 §5 step 4, IsLost), the fast retransmission and PRR's new
/// segments go (RFC 6937 §3), and then every ACK is lost. RACK has no
/// later delivery to judge the retransmission by (RFC 8985 §6.2), so
/// before this change the 200 ms RTO was the way out, at one segment.
/// Now the probe timeout, restarted by each delivering ACK in recovery,
/// fires after 2·SRTT + 2 ms (RFC 8985 §7.2's PTO; the probe allowed in
/// recovery, `Tlp::may_arm`) with one new segment; its ACK ends recovery
/// at cwnd = ssthresh: one reduction, no timeout, recovered in about
/// three round trips instead of ten.
#[test]
fn stopped_ack_clock_in_recovery_probes_before_the_timeout() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 30 * MSS);
    let reductions = s.tcb.cc.window().reductions();
    s.at(20).inject(In::ack(1, 1).sack(&[(1 + M, 1 + 10 * M)]));
    assert!(s.tcb.recovery.in_recovery());
    let first = drain(&mut s);
    assert_eq!(first[0], 0, "the fast retransmission first: {first:?}");
    // CUBIC: ssthresh = 0.7 · FlightSize (RFC 9438 §4.6) = 7 segments;
    // nine delivered, PRR lets ceil(9 · 7 / 10) = 7 go, the
    // retransmission included (RFC 6937 §3, rounded to segments).
    assert_eq!(s.tcb.cc.ssthresh(), 7 * M);
    assert_eq!(first, vec![0, 10, 11, 12, 13, 14, 15]);
    // Every ACK from now on is lost: the probe, one new segment, goes at
    // the PTO (SRTT is 10 ms here: 2 · 10 + 2 ms after the last ACK).
    let at = s.advance_until_output(ms(1000)).expect("a probe");
    assert_eq!(at, ms(42), "PTO = 2·SRTT + 2 ms, not the 200 ms RTO");
    assert_eq!(drain(&mut s), vec![16]);
    let st = s.tcb.stats();
    assert_eq!((st.tlp_probes, st.timeouts), (1, 0));
    assert!(s.tcb.recovery.in_recovery());
    // The probe's ACK covers everything: recovery ends at ssthresh.
    s.at(52).inject(In::ack(1, 1 + 17 * M));
    assert!(!s.tcb.recovery.in_recovery());
    assert_eq!(s.tcb.cwnd(), s.tcb.cc.ssthresh(), "RFC 6937 §3");
    assert_eq!(s.tcb.cc.ssthresh(), 7 * M);
    let st = s.tcb.stats();
    assert_eq!((st.recoveries, st.timeouts), (1, 0));
    // One reduction for the loss event (RFC 6675 §5); the probe's
    // repair adds none (RFC 8985 §7.4.2 only answers a loss no recovery
    // answered).
    assert_eq!(s.tcb.cc.window().reductions() - reductions, 1);
    // Recovered 32 ms (about three 10 ms round trips) after it began,
    // where the RTO left the sender silent until 210 ms.
}

/// Reordering (issue 28 item 6): segment 1 of the initial window is
/// delayed past three others. Three segments SACKed above it make it
/// lost (RFC 6675 §4 IsLost; RACK's reo_wnd is 0 before any reordering
/// is seen, RFC 8985 §6.2 step 4), so recovery starts and it is
/// retransmitted: one reduction. The original then arrives, and the
/// receiver reports the retransmission as a duplicate (D-SACK, RFC 2883
/// §4): every retransmission of the phase was unnecessary, the
/// reduction is undone (RFC 3708 §3.2), cwnd and ssthresh come back, no
/// timeout, and RACK widens its reordering window (RFC 8985 §6.2 step 4:
/// reo_wnd_mult + 1), all within the next round trip.
#[test]
fn reordering_past_three_segments_is_undone_by_dsack() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 30 * MSS);
    let ssthresh = s.tcb.cc.ssthresh();
    let reductions = s.tcb.cc.window().reductions();
    s.at(20)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 5 * M)]));
    assert!(s.tcb.recovery.in_recovery());
    let cwnd = s.tcb.cc.window().cwnd();
    let sent = drain(&mut s);
    assert_eq!(sent[0], 1, "the fast retransmission of the late one");
    assert_eq!(s.tcb.cc.window().reductions() - reductions, 1);
    assert!(s.tcb.cc.ssthresh() < ssthresh);
    // The late original arrives 1 ms later: the cumulative ACK jumps.
    s.at(21).inject(In::ack(1, 1 + 5 * M));
    // The retransmission arrives a round trip after it went: D-SACK.
    s.at(30)
        .inject(In::ack(1, 1 + 5 * M).sack(&[(1 + M, 1 + 2 * M)]));
    let st = s.tcb.stats();
    assert_eq!((st.recoveries, st.timeouts, st.dsack_undos), (1, 0, 1));
    assert_eq!(s.tcb.cc.ssthresh(), ssthresh, "ssthresh restored");
    assert!(
        s.tcb.cc.window().cwnd() >= cwnd,
        "cwnd at least the reduced one"
    );
    assert!(s.tcb.rack.reo_wnd_mult() >= 2, "RACK's window widened");
    // The rest of the flight is acknowledged: recovery ends without
    // setting cwnd to the (undone) ssthresh.
    let high = s.tcb.sb.snd_nxt().0.wrapping_sub(TCB_ISS);
    s.at(31).inject(In::ack(1, high));
    assert!(
        !s.tcb.recovery.in_recovery(),
        "sent {sent:?}, point {:?}, una {:?}, nxt {:?}, last {:?}",
        s.tcb.recovery.recovery_point(),
        s.tcb.sb.high_ack(),
        s.tcb.sb.snd_nxt(),
        s.last
    );
    assert_eq!(s.tcb.stats().retrans_segs, 1, "no other retransmission");
}

/// Eifel detection (RFC 3522 §3.2) with the response of RFC 4015: the
/// ACKs are delayed past the RTO, the timer retransmits the first
/// segment at cwnd = 1, and the first ACK after it echoes the TSval of
/// the original flight (sent at 10 ms), older than the retransmission's
/// (210 ms): the originals were acknowledged, the timeout was spurious,
/// and cwnd and ssthresh come back on that ACK, a round trip before any
/// D-SACK could. An ACK echoing the retransmission's TSval would have
/// kept the reduction (`real_timeout_is_not_undone` without timestamps;
/// here the same with them).
#[test]
fn spurious_timeout_is_undone_by_timestamps_on_its_first_ack() {
    for (echo_original, undone) in [(true, true), (false, false)] {
        let mut s = Script::initial_window(reno(), true, MSS, 10 * MSS);
        let (cwnd, ssthresh) = (s.tcb.cwnd(), s.tcb.cc.ssthresh());
        let at = s.advance_until_output(ms(1000)).expect("the timeout");
        assert_eq!(at, ms(210));
        assert_eq!(drain(&mut s), vec![0]);
        assert_eq!(s.tcb.cwnd(), M, "the loss window");
        let ecr = s.tcb.ts_now(if echo_original { ms(10) } else { ms(210) });
        s.advance_to(ms(215));
        let val = s.tsval();
        s.inject(In::ack(1, 1 + 10 * M).ts(val, ecr));
        let st = s.tcb.stats();
        assert_eq!(st.timeouts, 1);
        assert_eq!(st.eifel_undos, u64::from(undone));
        if undone {
            assert!(s.tcb.cwnd() >= cwnd, "cwnd restored: {}", s.tcb.cwnd());
            assert_eq!(s.tcb.cc.ssthresh(), ssthresh);
        } else {
            assert_eq!(s.tcb.cc.ssthresh(), 5 * M, "FlightSize / 2 kept");
            assert!(s.tcb.cwnd() < cwnd);
        }
    }
}
