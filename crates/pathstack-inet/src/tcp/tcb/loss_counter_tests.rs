//! The loss-recovery counters of [`TcpStats`] (issue 28: where a sender's
//! time goes under loss) count what they say: each test scripts one kind
//! of loss (see [`super::script`]) and checks the counter it should move
//! and the ones it should not.

use super::script::*;
use super::*;
use pathstack_core::time::Duration;

const MSS: usize = 1448; // 1460 less the timestamp option
const M: u32 = MSS as u32;

fn no_rack() -> TcpConfig {
    TcpConfig {
        rack: false,
        ..TcpConfig::default()
    }
}

/// Takes every segment emitted so far; returns their relative sequence
/// numbers.
fn drain(s: &mut Script) -> Vec<u32> {
    let mut v = Vec::new();
    while let Some(e) = s.out.pop_front() {
        if !e.payload.is_empty() {
            v.push(e.repr.seq.wrapping_sub(TCB_ISS));
        }
    }
    v
}

/// RFC 6298 §5.4: a lone segment lost goes again when the timer expires,
/// 200 ms (Linux's minimum RTO) after it was sent: one timeout, one
/// timeout-driven retransmission, and 200 ms of silence before it.
#[test]
fn timeout_counts_retransmission_and_idle_time() {
    let mut s = Script::established(no_rack(), false);
    s.write(100);
    s.expect(Out::data(1, 100));
    s.expect_at(210, Out::data(1, 100));
    let st = s.tcb.stats();
    assert_eq!(st.timeouts, 1);
    assert_eq!(st.timeout_retrans_segs, 1);
    assert_eq!(st.timeout_idle_ns, Duration::from_millis(200).as_nanos());
    assert_eq!(st.rack_lost_segs, 0);
    // A second expiry of the same segment adds its 400 ms.
    s.expect_at(610, Out::data(1, 100));
    let st = s.tcb.stats();
    assert_eq!(st.timeouts, 2);
    assert_eq!(st.timeout_retrans_segs, 2);
    assert_eq!(st.timeout_idle_ns, Duration::from_millis(600).as_nanos());
}

/// RFC 8985 §6.2: a segment SACKed past is marked lost by RACK once the
/// reordering window has passed; its retransmission is a recovery one,
/// not a timeout's.
#[test]
fn rack_loss_counted() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    s.at(20)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 3 * M)]));
    s.advance_until_output(ms(100)).expect("a retransmission");
    assert_eq!(drain(&mut s), vec![1 + M]);
    let st = s.tcb.stats();
    assert_eq!(st.rack_lost_segs, 1);
    assert_eq!(st.retrans_segs, 1);
    assert_eq!(st.timeout_retrans_segs, 0);
    assert_eq!(st.lost_retransmits, 0);
    assert_eq!(st.timeouts, 0);
}

/// RFC 8985 §6.2: a retransmission is lost too; a segment sent after it
/// is SACKed, so RACK marks the retransmission lost (counted as a lost
/// retransmission) and sends it again without a timeout.
#[test]
fn lost_retransmission_counted() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    // Segment 1 lost; RACK retransmits it at about 22.5 ms.
    s.at(20)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 3 * M)]));
    s.advance_until_output(ms(29)).expect("a retransmission");
    assert_eq!(drain(&mut s), vec![1 + M]);
    // Two more segments, queued behind the window (pipe ≥ cwnd).
    s.write(2 * MSS);
    // Everything else arrives; the window lets the queued data out,
    // sent after the retransmission.
    s.at(30)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 10 * M)]));
    let sent = drain(&mut s);
    assert!(sent.contains(&(1 + 10 * M)), "new data sent: {sent:?}");
    assert!(!sent.contains(&(1 + M)), "not yet again: {sent:?}");
    assert_eq!(s.tcb.stats().lost_retransmits, 0);
    // The new data is SACKed, the retransmission is not: lost again.
    s.at(40)
        .inject(In::ack(1, 1 + M).sack(&[(1 + 2 * M, 1 + 12 * M)]));
    s.advance_until_output(ms(45))
        .expect("a second retransmission");
    assert_eq!(drain(&mut s), vec![1 + M]);
    let st = s.tcb.stats();
    assert_eq!(st.lost_retransmits, 1);
    assert_eq!(st.rack_lost_segs, 2);
    assert_eq!(st.timeouts, 0);
    assert_eq!(st.timeout_retrans_segs, 0);
}

/// RFC 8985 §7.4.2: the last two segments are lost; the tail loss probe
/// retransmits the last, whose SACK lets RACK repair the other, and the
/// ACK covering the probe (no D-SACK) shows the probe repaired a loss.
#[test]
fn tlp_loss_repaired_counted() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    s.at(20).inject(In::ack(1, 1 + 8 * M));
    s.expect_none();
    let at = s.advance_until_output(ms(5000)).expect("a probe");
    assert_eq!(drain(&mut s), vec![1 + 9 * M]);
    assert_eq!(s.tcb.stats().tlp_probes, 1);
    s.advance_to(at + Duration::from_millis(10));
    s.inject(In::ack(1, 1 + 8 * M).sack(&[(1 + 9 * M, 1 + 10 * M)]));
    s.advance_until_output(at + Duration::from_millis(20))
        .expect("RACK's retransmission");
    assert_eq!(drain(&mut s), vec![1 + 8 * M]);
    assert_eq!(s.tcb.stats().tlp_loss_repaired, 0);
    s.advance_to(at + Duration::from_millis(30));
    s.inject(In::ack(1, 1 + 10 * M));
    let st = s.tcb.stats();
    assert_eq!(st.tlp_loss_repaired, 1);
    assert_eq!(st.rack_lost_segs, 1);
    assert_eq!(st.timeouts, 0);
}

/// RFC 3708 via RFC 2883 §4: a fast retransmission the receiver reports
/// as a duplicate (D-SACK) was unnecessary; the reduction is undone once.
#[test]
fn dsack_undo_counted() {
    let mut s = Script::initial_window(no_rack(), true, MSS, 10 * MSS);
    for k in 2..=4 {
        s.at(20).inject(In::ack(1, 1).sack(&[(1 + M, 1 + k * M)]));
    }
    assert_eq!(drain(&mut s), vec![1], "the fast retransmission");
    // The original arrives late: everything acknowledged, recovery ends.
    s.at(25).inject(In::ack(1, 1 + 10 * M));
    assert_eq!(s.tcb.stats().dsack_undos, 0);
    // The retransmission arrives as a duplicate: D-SACK.
    s.at(30).inject(In::ack(1, 1 + 10 * M).sack(&[(1, 1 + M)]));
    let st = s.tcb.stats();
    assert_eq!(st.dsack_undos, 1);
    assert_eq!(st.recoveries, 1);
    assert_eq!(st.timeouts, 0);
}
