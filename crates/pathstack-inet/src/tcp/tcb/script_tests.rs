//! Segment-level scripts in the manner of packetdrill: one Tcb, the
//! script playing its peer (see [`super::script`]). Each test names the
//! RFC section it checks.

use super::script::*;
use super::*;
use crate::tcp::config::Keepalive;
use crate::tcp::conn_drop_reason::ConnDropReason;
use pathstack_core::time::Duration;

const MSS: usize = 1448; // 1460 less the timestamp option

fn no_rack() -> TcpConfig {
    TcpConfig {
        rack: false,
        ..TcpConfig::default()
    }
}

// ----- three-way handshake, every option combination -----

/// Which options the script's SYN or SYN-ACK carries.
#[derive(Clone, Copy)]
struct Offer {
    mss: Option<u16>,
    ws: bool,
    sack: bool,
    ts: bool,
}

const NONE: Offer = Offer {
    mss: None,
    ws: false,
    sack: false,
    ts: false,
};

fn with_offer(mut seg: In, o: Offer) -> In {
    if let Some(m) = o.mss {
        seg = seg.mss(m);
    }
    if o.ws {
        seg = seg.ws(7);
    }
    if o.sack {
        seg = seg.sack_perm();
    }
    if o.ts {
        seg = seg.ts(5000, 0);
    }
    seg
}

fn expected_smss(o: Offer) -> u32 {
    u32::from(o.mss.unwrap_or(536).min(1460)) - if o.ts { 12 } else { 0 }
}

/// RFC 9293 §3.5, §3.7.1 (MSS, 536 by default); RFC 7323 §2.2, §3.2 and
/// RFC 2018 §2: the SYN-ACK offers back only what the SYN offered; its
/// window is not scaled.
fn passive_handshake(o: Offer) {
    let mut s = Script::passive(TcpConfig::default());
    s.inject(with_offer(In::syn(), o));
    s.state(State::SynReceived);
    let mut exp = Out::synack()
        .mss(Some(1460))
        .ws(o.ws.then_some(3))
        .sack_perm(o.sack)
        .ts(o.ts)
        .win(65535)
        .len(0);
    if o.ts {
        exp = exp.tsecr(5000);
    }
    s.expect(exp);
    s.expect_none();
    let mut ack = In::ack(1, 1).win(1000);
    if o.ts {
        ack = ack.ts(5010, 100);
    }
    s.at(10).inject(ack);
    assert_eq!(s.last, Ok(()));
    s.state(State::Established);
    s.expect_none();
    assert_eq!(s.tcb.extensions(), (o.ws, o.ts, o.sack));
    assert_eq!(s.tcb.smss(), expected_smss(o));
    // The third segment's window is scaled (RFC 7323 §2.2).
    assert_eq!(s.tcb.snd_wnd(), if o.ws { 1000 << 7 } else { 1000 });
}

/// RFC 9293 §3.5 (active side), §3.7.1, RFC 7323 §2.2: the SYN offers
/// everything configured; what the SYN-ACK answers decides.
fn active_handshake(o: Offer) {
    let mut s = Script::active(TcpConfig::default());
    s.state(State::SynSent);
    s.expect(
        Out::syn()
            .mss(Some(1460))
            .ws(Some(3))
            .sack_perm(true)
            .ts(true)
            .win(65535)
            .len(0),
    );
    s.at(10).inject(with_offer(In::synack(), o).win(5000));
    assert_eq!(s.last, Ok(()));
    s.state(State::Established);
    // The ACK: scaled window only when both offered scaling.
    let win = if o.ws {
        ((256 * 1024) >> 3) as u16
    } else {
        65535
    };
    let mut exp = Out::ack(1, 1)
        .win(win)
        .ts(o.ts)
        .mss(None)
        .ws(None)
        .sack_perm(false);
    if o.ts {
        exp = exp.tsecr(5000);
    }
    s.expect(exp);
    s.expect_none();
    assert_eq!(s.tcb.extensions(), (o.ws, o.ts, o.sack));
    assert_eq!(s.tcb.smss(), expected_smss(o));
    // The SYN-ACK's window is never scaled (RFC 7323 §2.2).
    assert_eq!(s.tcb.snd_wnd(), 5000);
}

/// RFC 9293 §3.8.1 (retransmission) and §3.10.7.4: a retransmitted SYN
/// in SYN-RECEIVED is answered with the SYN-ACK again; the SYN-ACK also
/// goes again on its own timeout (RFC 6298 §5, 1 s initial RTO, counted
/// from the last one sent).
#[test]
fn handshake_passive_syn_retransmitted() {
    let mut s = Script::passive(TcpConfig::default());
    s.inject(In::syn().mss(1460));
    s.expect(Out::synack());
    s.at(500).inject(In::syn().mss(1460));
    s.expect(Out::synack().mss(Some(1460)));
    s.state(State::SynReceived);
    s.expect_at(1500, Out::synack());
    s.at(1510).inject(In::ack(1, 1));
    s.state(State::Established);
}

macro_rules! handshakes {
    ($($passive:ident, $active:ident: $offer:expr;)*) => {$(
        #[test]
        fn $passive() {
            passive_handshake($offer);
        }
        #[test]
        fn $active() {
            active_handshake($offer);
        }
    )*};
}

handshakes! {
    handshake_passive_no_options, handshake_active_no_options: NONE;
    handshake_passive_mss_only, handshake_active_mss_only: Offer { mss: Some(1200), ..NONE };
    handshake_passive_ws, handshake_active_ws: Offer { ws: true, ..NONE };
    handshake_passive_sack_perm, handshake_active_sack_perm: Offer { sack: true, ..NONE };
    handshake_passive_ts, handshake_active_ts: Offer { ts: true, ..NONE };
    handshake_passive_all, handshake_active_all: Offer { mss: Some(1460), ws: true, sack: true, ts: true };
}

/// RFC 9293 §3.5 Figure 8: simultaneous open. Both SYNs cross; each side
/// answers with SYN-ACK and goes ESTABLISHED on the other's SYN-ACK.
#[test]
fn simultaneous_open() {
    let mut s = Script::active(TcpConfig::default());
    s.expect(Out::syn());
    s.at(5).inject(In::syn().all_opts());
    s.state(State::SynReceived);
    s.expect(Out::synack().ws(Some(3)).sack_perm(true).tsecr(7000));
    s.at(10).inject(In::synack().all_opts().ts(7010, 105));
    s.state(State::Established);
    while s.out.pop_front().is_some() {}
    assert_eq!(s.tcb.extensions(), (true, true, true));
    s.auto_ts = true;
    s.write(100);
    s.expect(Out::data(1, 100).ack_no(1));
}

// ----- closing (RFC 9293 §3.6, Figures 12–14) -----

/// RFC 9293 §3.6 case 1: active close, FIN-WAIT-1 → FIN-WAIT-2 →
/// TIME-WAIT, and CLOSED after 2·MSL (§3.10.8).
#[test]
fn active_close() {
    let cfg = TcpConfig {
        time_wait: std::time::Duration::from_secs(2),
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    s.at(20).app(|t| t.shutdown(Shutdown::Write)).unwrap();
    s.state(State::FinWait1);
    s.expect(Out::fin(1, 1).len(0));
    s.at(30).inject(In::ack(1, 2));
    s.state(State::FinWait2);
    s.expect_none();
    s.at(40).inject(In::fin(1, 2));
    s.state(State::TimeWait);
    s.expect(Out::ack(2, 2));
    time_wait_ends_at(&mut s, 2040);
}

/// RFC 9293 §3.6 case 2: passive close, CLOSE-WAIT → LAST-ACK → CLOSED.
#[test]
fn passive_close() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::fin(1, 1));
    s.state(State::CloseWait);
    s.expect(Out::ack(1, 2));
    assert_eq!(s.read_all(), Some(0));
    s.at(30).app(|t| t.close());
    s.state(State::LastAck);
    s.expect(Out::fin(1, 2));
    s.at(40).inject(In::ack(2, 2));
    s.state(State::Closed);
    assert_eq!(s.tcb.error(), None);
    s.expect_none();
}

/// RFC 9293 §3.6 case 3 (Figure 14): simultaneous close, FIN-WAIT-1 →
/// CLOSING → TIME-WAIT.
#[test]
fn simultaneous_close() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).app(|t| t.shutdown(Shutdown::Write)).unwrap();
    s.expect(Out::fin(1, 1));
    s.inject(In::fin(1, 1));
    s.state(State::Closing);
    s.expect(Out::ack(2, 2));
    s.at(30).inject(In::ack(2, 2));
    s.state(State::TimeWait);
    s.expect_none();
}

/// RFC 9293 §3.10.7.4 seventh and eighth: data and FIN in one segment;
/// the FIN is acknowledged at once after the data.
#[test]
fn fin_with_data() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::data(1, 1, 100).flags(TcpFlags::FIN));
    s.state(State::CloseWait);
    s.expect(Out::ack(1, 102));
    s.expect_none();
    assert_eq!(s.read_all(), Some(100));
    assert_eq!(s.read_all(), Some(0));
}

/// RFC 2525 §2.17 (and RFC 9293 §3.10.4 ABORT): closing with unread data
/// resets the connection.
#[test]
fn close_with_unread_data_sends_rst() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::data(1, 1, 100));
    // The connection's first data: a quick ACK (`quick_ack.rs`).
    s.expect(Out::ack(1, 101));
    s.app(|t| t.close());
    s.expect(Out::rst(1).ack_no(101));
    s.state(State::Closed);
    s.expect_none();
}

/// The reset of `close` with unread data carries the timestamps (RFC 7323
/// §3.2 allows TSopt on a reset; Linux's `tcp_send_active_reset` sends
/// it): TSval of the moment it leaves, TSecr TS.Recent.
#[test]
fn abort_reset_carries_timestamps() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 100));
    let ack = s.expect(Out::ack(1, 101));
    let tsecr = ack.repr.options.timestamps.expect("timestamps").1;
    s.at(1020).app(|t| t.close());
    let rst = s.expect(Out::rst(1).ack_no(101).tsecr(tsecr));
    let (val, _) = rst.repr.options.timestamps.unwrap();
    let (ack_val, _) = ack.repr.options.timestamps.unwrap();
    assert_eq!(val.wrapping_sub(ack_val), 1000, "TSval when it leaves");
}

// ----- resets and SYNs (RFC 5961) -----

/// RFC 5961 §3.2: a reset in the window but not at RCV.NXT gets a
/// challenge ACK; the connection stays.
#[test]
fn rst_in_window_not_exact_challenge_ack() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::rst(101));
    assert_eq!(s.last, Err(ConnDropReason::RstNotExact));
    s.expect(Out::ack(1, 1));
    s.state(State::Established);
    assert_eq!(s.tcb.stats().challenge_acks, 1);
}

/// RFC 5961 §3.2, RFC 9293 §3.10.7.4 second: a reset exactly at RCV.NXT
/// resets the connection (ECONNRESET).
#[test]
fn rst_at_rcv_nxt_resets() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::rst(1));
    assert_eq!(s.last, Ok(()));
    s.state(State::Closed);
    s.expect_none();
    assert_eq!(s.tcb.error(), Some(TcpError::Reset));
}

/// RFC 9293 §3.10.7.4 first, RFC 5961 §3.2: a reset outside the window
/// is dropped silently.
#[test]
fn rst_out_of_window_ignored() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::rst(10_000_000));
    assert_eq!(s.last, Err(ConnDropReason::OutOfWindow));
    s.expect_none();
    s.state(State::Established);
    s.inject(In::rst(0u32.wrapping_sub(5)));
    s.expect_none();
    s.state(State::Established);
}

/// RFC 5961 §4.2: a SYN on an established connection gets a challenge
/// ACK, whatever its sequence number; the connection stays.
#[test]
fn syn_in_established_challenge_ack() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::new(TcpFlags::SYN, 500, 0));
    assert_eq!(s.last, Err(ConnDropReason::SynInWindow));
    s.expect(Out::ack(1, 1));
    s.state(State::Established);
    assert_eq!(s.tcb.stats().challenge_acks, 1);
}

/// RFC 5961 §7: challenge ACKs are rate limited (per second).
#[test]
fn challenge_ack_rate_limit() {
    let cfg = TcpConfig {
        challenge_ack_limit: 2,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    s.at(20).inject(In::rst(101));
    s.expect(Out::ack(1, 1));
    s.at(30).inject(In::new(TcpFlags::SYN, 200, 0));
    s.expect(Out::ack(1, 1));
    s.at(40).inject(In::rst(301));
    s.expect_none();
    s.at(500).inject(In::rst(301));
    s.expect_none();
    assert_eq!(s.tcb.stats().challenge_acks, 2);
    assert_eq!(s.tcb.stats().challenge_acks_suppressed, 2);
    // A new second.
    s.at(1100).inject(In::rst(401));
    s.expect(Out::ack(1, 1));
    s.state(State::Established);
}

// ----- loss recovery -----

/// RFC 5681 §3.2: without SACK, the third duplicate ACK retransmits the
/// first unacknowledged segment (and the first two send nothing: no new
/// data is queued).
#[test]
fn fast_retransmit_three_dupacks_no_sack() {
    let cfg = TcpConfig {
        sack: false,
        ..no_rack()
    };
    let mut s = Script::initial_window(cfg, false, 1460, 10 * 1460);
    s.at(20).inject(In::ack(1, 1 + 1460));
    s.expect_none();
    for _ in 0..2 {
        s.inject(In::ack(1, 1 + 1460));
        s.expect_none();
    }
    s.inject(In::ack(1, 1 + 1460));
    s.expect(Out::data(1 + 1460, 1460));
    s.expect_none();
    assert_eq!(s.tcb.stats().retrans_segs, 1);
    assert_eq!(s.tcb.stats().recoveries, 1);
    s.at(30).inject(In::ack(1, 1 + 14600));
    s.expect_none();
    assert_eq!(s.tcb.snd_una(), SeqNumber(TCB_ISS.wrapping_add(1 + 14600)));
}

/// RFC 6675 §5 (DupThresh via SACK, §4 IsLost): three segments SACKed
/// above a hole mark it lost; it alone is retransmitted.
#[test]
fn fast_retransmit_with_sack() {
    let mut s = Script::initial_window(no_rack(), true, MSS, 10 * MSS);
    let m = MSS as u32;
    s.at(20).inject(In::ack(1, 1).sack(&[(1 + m, 1 + 2 * m)]));
    s.expect_none();
    s.inject(In::ack(1, 1).sack(&[(1 + m, 1 + 3 * m)]));
    s.expect_none();
    s.inject(In::ack(1, 1).sack(&[(1 + m, 1 + 4 * m)]));
    s.expect(Out::data(1, MSS));
    s.expect_none();
    assert_eq!(s.tcb.stats().retrans_segs, 1);
}

/// RFC 6675 §5: two holes in one window are both retransmitted, and
/// nothing else.
#[test]
fn sack_recovery_two_holes() {
    let mut s = Script::initial_window(no_rack(), true, MSS, 10 * MSS);
    let m = MSS as u32;
    // Segments 0 and 4 lost.
    s.at(20);
    for k in 2..=4 {
        s.inject(In::ack(1, 1).sack(&[(1 + m, 1 + k * m)]));
    }
    for k in 6..=10 {
        s.inject(In::ack(1, 1).sack(&[(1 + 5 * m, 1 + k * m), (1 + m, 1 + 4 * m)]));
    }
    let mut seqs: Vec<u32> = Vec::new();
    while let Some(e) = s.out.pop_front() {
        assert_eq!(e.payload.len(), MSS);
        seqs.push(e.repr.seq.wrapping_sub(TCB_ISS));
    }
    seqs.sort_unstable();
    assert_eq!(seqs, vec![1, 1 + 4 * m]);
    assert_eq!(s.tcb.stats().retrans_segs, 2);
    s.at(30).inject(In::ack(1, 1 + 10 * m));
    s.expect_none_until(3000);
}

/// RFC 8985 §6.2 step 5: a segment SACKed past is not lost until the
/// reordering window (min_RTT/4) has passed; if it arrives within the
/// window it is not retransmitted.
#[test]
fn rack_reordering_within_window_not_retransmitted() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    let m = MSS as u32;
    // RTT 10 ms: segment 1 is late, segment 2 SACKed at 20 ms.
    s.at(20)
        .inject(In::ack(1, 1 + m).sack(&[(1 + 2 * m, 1 + 3 * m)]));
    s.expect_none();
    s.advance_to(ms(20) + Duration::from_micros(1500));
    s.inject(In::ack(1, 1 + 3 * m));
    s.expect_none();
    s.at(25).inject(In::ack(1, 1 + 10 * m));
    s.expect_none_until(3000);
    assert_eq!(s.tcb.stats().retrans_segs, 0);
}

/// RFC 8985 §6.2, §6.3: when the reordered segment does not come, it is
/// retransmitted once the reordering timer expires (RTT + min_RTT/4).
#[test]
fn rack_retransmits_after_reordering_window() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    let m = MSS as u32;
    s.at(20)
        .inject(In::ack(1, 1 + m).sack(&[(1 + 2 * m, 1 + 3 * m)]));
    s.expect_none();
    let at = s.advance_until_output(ms(100)).expect("a retransmission");
    assert!(at > ms(20) && at <= ms(23), "retransmitted at {at:?}");
    s.expect(Out::data(1 + m, MSS));
    assert_eq!(s.tcb.stats().retrans_segs, 1);
}

/// RFC 8985 §7.2, §7.3: a tail drop is probed after about 2·SRTT, before
/// the RTO, with the last segment (no new data is queued).
#[test]
fn tlp_probe_before_rto() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    let m = MSS as u32;
    // The last two segments are lost.
    s.at(20).inject(In::ack(1, 1 + 8 * m));
    s.expect_none();
    let srtt = s.tcb.srtt().unwrap();
    let rto_at = ms(20) + s.tcb.rto();
    let at = s.advance_until_output(ms(5000)).expect("a probe");
    s.expect(Out::data(1 + 9 * m, MSS));
    let expect = ms(20) + Duration::from_nanos(2 * srtt.as_nanos());
    assert!(
        at >= expect && at <= expect + Duration::from_millis(5),
        "probe at {at:?}, 2·SRTT after the ACK is {expect:?}"
    );
    assert!(at < rto_at, "probe at {at:?}, RTO at {rto_at:?}");
    assert_eq!(s.tcb.stats().tlp_probes, 1);
    assert_eq!(s.tcb.stats().timeouts, 0);
}

/// RFC 6298 §5.5 (the timer backs off, doubling) and §3 / Karn: no RTT
/// sample from a retransmitted segment.
#[test]
fn rto_backoff_and_karn() {
    let cfg = TcpConfig {
        rack: false,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    let srtt = s.tcb.srtt();
    let rto = s.tcb.rto();
    assert_eq!(rto, Duration::from_millis(200));
    s.write(100);
    s.expect(Out::data(1, 100));
    let mut t = 10u64;
    for k in 0..4 {
        t += 200 << k;
        s.expect_at(t, Out::data(1, 100));
    }
    assert_eq!(s.tcb.stats().timeouts, 4);
    // The ACK of the retransmission: no sample (Karn).
    s.at(t + 5).inject(In::ack(1, 101));
    assert_eq!(s.tcb.srtt(), srtt);
    assert_eq!(s.tcb.snd_una(), SeqNumber(TCB_ISS.wrapping_add(101)));
    s.expect_none_until(t + 10_000);
}

/// RFC 6298 §3 (Karn): a cumulative ACK covering a retransmitted segment
/// and original segments sent before it yields no RTT sample (the
/// originals waited at the receiver for the retransmission).
#[test]
fn karn_no_sample_from_ack_covering_retransmission() {
    let cfg = TcpConfig {
        rack: false,
        sack: false,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    let srtt = s.tcb.srtt();
    s.write(3 * 1460);
    for i in 0..3 {
        s.expect(Out::data(1 + i * 1460, 1460));
    }
    // The first is lost; the timeout retransmits it (cwnd one segment).
    s.expect_at(210, Out::data(1, 1460));
    s.expect_none();
    s.at(215).inject(In::ack(1, 1 + 3 * 1460));
    assert_eq!(s.tcb.srtt(), srtt, "no sample from an ambiguous ACK");
}

/// RFC 9293 §3.8.6.1: a zero window is probed, the probes back off
/// (RFC 1122 §4.2.2.17), and data resumes when the window opens.
#[test]
fn zero_window_persist_probes() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::ack(1, 1).win(0));
    assert_eq!(s.tcb.snd_wnd(), 0);
    s.write(1000);
    s.expect_none();
    let mut t = 20u64;
    let mut gaps = Vec::new();
    for _ in 0..4 {
        let at = s.advance_until_output(ms(100_000)).expect("a window probe");
        s.expect(Out::new(TcpFlags::ACK).len(0).ack_no(1));
        let now = at.as_nanos() / 1_000_000;
        gaps.push(now - t);
        t = now;
        // The peer answers: still zero.
        s.inject(In::ack(1, 1).win(0));
        s.expect_none();
    }
    assert_eq!(gaps, vec![200, 400, 800, 1600], "probe intervals");
    assert_eq!(s.tcb.stats().window_probes, 4);
    s.after(10).inject(In::ack(1, 1).win(65535));
    s.expect(Out::data(1, 1000));
}

/// RFC 9293 §3.8.6.2.1, sender silly-window avoidance: a window below a
/// segment, below half the largest one offered and too small for what
/// is queued takes nothing; the write goes whole once the window opens.
#[test]
fn a_small_window_is_not_filled_with_a_silly_segment() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::ack(1, 1).win(10));
    s.write(1000);
    s.expect_none();
    s.at(30).inject(In::ack(1, 1).win(2000));
    s.expect(Out::data(1, 1000));
    s.expect_none();
}

/// RFC 9293 §3.8.6.2.1 case (4): when a small window does not grow, the
/// override timeout (the persist timer's interval) sends what it takes;
/// and data that fits whole is not held (case 2).
#[test]
fn the_override_timeout_sends_what_a_small_window_takes() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::ack(1, 1).win(10));
    s.write(1000);
    s.expect_none();
    let at = s.advance_until_output(ms(100_000)).expect("the override");
    s.expect(Out::data(1, 10));
    assert_eq!(
        at,
        ms(220),
        "one persist interval (the RTO) after the write"
    );
    s.expect_none();
    // All of a small write fits: it goes at once.
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::ack(1, 1).win(10));
    s.write(8);
    s.expect(Out::data(1, 8));
}

/// RFC 7323 §2.2–§2.3: the window field we send is the window >> our
/// shift; the peer's is << its shift; the SYN's is never scaled.
#[test]
fn window_scaling_shifts() {
    let mut s = Script::established(TcpConfig::default(), true);
    // Handshake ACK: 65535 >> 7 = 511, scaled by 7.
    assert_eq!(s.tcb.snd_wnd(), 511 << 7);
    s.at(20).inject(In::ack(1, 1).win(100));
    assert_eq!(s.tcb.snd_wnd(), 100 << 7);
    s.inject(In::ack(1, 1).win(1000));
    s.write(100);
    s.expect(Out::data(1, 100).win(((256 * 1024) >> 3) as u16));
    // The connection's first data: ACKed at once (quick-ACK mode).
    s.at(30).inject(In::data(1, 101, 1000));
    s.expect(Out::ack(101, 1001).win(((256 * 1024 - 1000) >> 3) as u16));
}

/// RFC 7323 §5.3 R1: a segment with an older timestamp is dropped (PAWS)
/// and acknowledged.
#[test]
fn paws_rejects_old_timestamp() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 100));
    assert_eq!(s.last, Ok(()));
    let tsval = s.tsval();
    s.at(30).inject(In::data(101, 1, 100).ts(tsval - 10, 0));
    assert_eq!(s.last, Err(ConnDropReason::Paws));
    s.expect(Out::ack(1, 101).ts(true));
    assert_eq!(s.tcb.recv_queue(), 100);
    assert_eq!(s.tcb.rcv_nxt(), SeqNumber(PEER_ISS + 101));
}

/// TIME-WAIT after an active close, with timestamps.
fn to_time_wait(cfg: TcpConfig) -> Script {
    let mut s = Script::established(cfg, true);
    s.at(20).app(|t| t.shutdown(Shutdown::Write)).unwrap();
    s.expect(Out::fin(1, 1));
    s.at(30).inject(In::fin(1, 2));
    s.expect(Out::ack(2, 2));
    s.state(State::TimeWait);
    s
}

/// RFC 9293 §3.10.7.4 eighth (TIME-WAIT): a retransmitted FIN is
/// acknowledged again and restarts the 2·MSL timer; TIME-WAIT then ends
/// (§3.10.8).
#[test]
fn time_wait_reacks_fin_and_expires() {
    let cfg = TcpConfig {
        time_wait: std::time::Duration::from_secs(60),
        ..TcpConfig::default()
    };
    let mut s = to_time_wait(cfg);
    s.at(1030).inject(In::fin(1, 2));
    s.expect(Out::ack(2, 2));
    s.state(State::TimeWait);
    time_wait_ends_at(&mut s, 61_030);
}

/// RFC 9293 §3.10.8: TIME-WAIT lasts `time_wait` (2·MSL).
#[test]
fn time_wait_expires_after_2msl() {
    let cfg = TcpConfig {
        time_wait: std::time::Duration::from_secs(3),
        ..TcpConfig::default()
    };
    let mut s = to_time_wait(cfg);
    s.at(3029);
    s.state(State::TimeWait);
    s.at(3030);
    s.state(State::Closed);
}

/// RFC 6191 §2 (RFC 9293 §3.6.1): a SYN in TIME-WAIT may reopen the
/// connection if its timestamp is newer (or without timestamps, its
/// sequence number is beyond RCV.NXT); not if older.
#[test]
fn time_wait_accepts_reopen() {
    let s = to_time_wait(TcpConfig::default());
    let ts = s.tsval();
    let syn = |seq: u32, ts: Option<u32>| {
        let mut o = TcpOptions::default();
        o.timestamps = ts.map(|v| (v, 0));
        TcpRepr {
            src_port: REMOTE,
            dst_port: LOCAL,
            seq: PEER_ISS.wrapping_add(seq),
            ack: 0,
            flags: TcpFlags::SYN,
            window: 65535,
            urgent: 0,
            options: o,
        }
    };
    assert!(s.tcb.accepts_reopen(&syn(100_000, Some(ts + 1000))));
    assert!(!s.tcb.accepts_reopen(&syn(100_000, Some(ts - 1000))));
    // Without timestamps in the connection: by sequence number.
    let cfg = TcpConfig {
        timestamps: false,
        ..TcpConfig::default()
    };
    let mut s = to_time_wait(cfg);
    assert!(s.tcb.accepts_reopen(&syn(100_000, None)));
    assert!(!s.tcb.accepts_reopen(&syn(0u32.wrapping_sub(100_000), None)));
    s.expect_none();
}

// ----- acknowledgment and sending policy -----

/// RFC 9293 §3.8.6.3, RFC 5681 §4.2: one segment is acknowledged after
/// the delayed-ACK time; every second full-sized segment at once;
/// out-of-order data at once, with a SACK block (RFC 2018 §4).
#[test]
fn delayed_ack() {
    // Quick-ACK mode off: every ACK of in-order data is delayed (the
    // mode's own tests are below).
    let cfg = TcpConfig {
        quick_ack: false,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, true);
    let m = MSS as u32;
    s.at(20).inject(In::data(1, 1, 500));
    s.expect_none();
    s.expect_at(60, Out::ack(1, 501));
    s.at(100).inject(In::data(501, 1, MSS));
    s.expect_none();
    s.at(101).inject(In::data(501 + m, 1, MSS));
    s.expect(Out::ack(1, 501 + 2 * m));
    s.expect_none();
    // A hole: the next segment is missing.
    let hole = 501 + 3 * m;
    s.at(110).inject(In::data(hole, 1, 100));
    s.expect(Out::ack(1, 501 + 2 * m).sack(&[(hole, hole + 100)]));
    s.expect_none();
}

/// Segments that arrive in one receive burst share one ACK, sent after
/// the last, up to `max_stretch_ack` segments (Linux's GRO receiver does
/// the same); segments that arrive one by one are ACKed every second.
#[test]
fn stretch_ack_per_burst() {
    let cfg = TcpConfig {
        max_stretch_ack: 4,
        quick_ack: false,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, true);
    let m = MSS as u32;
    let seg = |k: u32| In::data(1 + k * m, 1, MSS);
    s.at(20).inject_burst((0..3).map(seg));
    s.expect(Out::ack(1, 1 + 3 * m));
    s.expect_none();
    // Six in a burst: the fourth reaches the bound and is ACKed at once,
    // the last two at the end of the burst.
    s.at(30).inject_burst((3..9).map(seg));
    s.expect(Out::ack(1, 1 + 7 * m));
    s.expect(Out::ack(1, 1 + 9 * m));
    s.expect_none();
    // One by one: every second segment.
    s.at(40).inject(seg(9));
    s.expect_none();
    s.inject(seg(10));
    s.expect(Out::ack(1, 1 + 11 * m));
}

/// RFC 896, RFC 9293 §3.7.4: Nagle holds a small segment while data is
/// unacknowledged; it goes with the ACK.
#[test]
fn nagle_holds_small_write() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).write(100);
    s.expect(Out::data(1, 100));
    s.at(21).write(50);
    s.expect_none();
    s.at(30).inject(In::ack(1, 101));
    s.expect(Out::data(101, 50));
}

/// Minshall's rule (Linux's `tcp_minshall_check`): the tail of one write
/// goes at once behind the full segments before it, because no *small*
/// segment is unacknowledged. Classic Nagle held it until the peer's
/// (delayed) ACK of the full segment.
#[test]
fn nagle_lets_the_tail_of_a_write_follow_its_full_segments() {
    let mut s = Script::established(TcpConfig::default(), false);
    let m = 1460u32;
    s.at(20).write(m as usize + 200);
    s.expect(Out::data(1, m as usize));
    s.expect(Out::data(1 + m, 200));
    s.expect_none();
    // Now a small segment is out: the next small write waits for its ACK.
    s.at(21).write(30);
    s.expect_none();
    s.at(30).inject(In::ack(1, 1 + m + 200));
    s.expect(Out::data(1 + m + 200, 30));
}

/// A full segment in flight does not hold a small write: only an
/// unacknowledged small one does.
#[test]
fn nagle_does_not_hold_a_small_write_behind_a_full_segment() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).write(1460);
    s.expect(Out::data(1, 1460));
    s.at(21).write(100);
    s.expect(Out::data(1461, 100));
    s.expect_none();
}

/// A vectored write is one write: its slices leave as one stream of
/// bytes, in one segment here. Written as two writes while that (small)
/// segment is unacknowledged, the same slices wait for its ACK.
#[test]
fn a_vectored_write_leaves_as_one_segment() {
    let mut s = Script::established(TcpConfig::default(), false);
    let (head, body) = ([0x5au8; 117], [0x5au8; 255]);
    let bufs = [
        std::io::IoSlice::new(&head),
        std::io::IoSlice::new(&[]),
        std::io::IoSlice::new(&body),
    ];
    let n = s.at(20).app(|t| t.send_vectored(&bufs)).expect("send");
    assert_eq!(n, Some(117 + 255));
    s.expect(Out::data(1, 117 + 255));
    s.expect_none();
    // The same slices as two writes while that segment is out: both wait
    // for its ACK, then leave together.
    s.at(30).write(117);
    s.expect_none();
    s.write(255);
    s.expect_none();
    s.at(40).inject(In::ack(1, 1 + 372));
    s.expect(Out::data(1 + 372, 117 + 255));
}

/// A vectored write into a full send buffer would block; empty slices
/// alone take nothing and do not block.
#[test]
fn a_vectored_write_blocks_only_on_a_full_buffer() {
    let cfg = TcpConfig {
        send_buffer: 1000,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    let big = [0x5au8; 800];
    let bufs = [std::io::IoSlice::new(&big), std::io::IoSlice::new(&big)];
    assert_eq!(s.at(20).app(|t| t.send_vectored(&bufs)), Ok(Some(1000)));
    assert_eq!(s.app(|t| t.send_vectored(&bufs)), Ok(None));
    assert_eq!(
        s.app(|t| t.send_vectored(&[std::io::IoSlice::new(&[])])),
        Ok(Some(0))
    );
    assert_eq!(s.app(|t| t.send_vectored(&[])), Ok(Some(0)));
}

/// `TCP_NODELAY`: Nagle off, small writes go at once.
#[test]
fn nodelay_sends_at_once() {
    let cfg = TcpConfig {
        nodelay: true,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    s.at(20).write(100);
    s.expect(Out::data(1, 100));
    s.at(21).write(50);
    s.expect(Out::data(101, 50));
}

/// RFC 9293 §3.8.4: keepalive is off by default.
#[test]
fn keepalive_off_by_default() {
    let mut s = Script::established(TcpConfig::default(), false);
    assert_eq!(s.tcb.poll_at(), None);
    s.expect_none_until(4 * 3600 * 1000);
    s.state(State::Established);
}

/// RFC 9293 §3.8.4 (RFC 1122 §4.2.3.6): with keepalive, probes go after
/// `idle`, then every `interval`; after `probes` unanswered, TimedOut.
#[test]
fn keepalive_probes_then_times_out() {
    let cfg = TcpConfig {
        keepalive: Some(Keepalive {
            idle: std::time::Duration::from_secs(10),
            interval: std::time::Duration::from_secs(1),
            probes: 3,
        }),
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    for t in [10_010u64, 11_010, 12_010] {
        s.expect_at(t, Out::ack(0, 1));
        s.state(State::Established);
    }
    s.expect_none_until(13_009);
    s.state(State::Established);
    s.at(13_010);
    s.state(State::Closed);
    assert_eq!(s.tcb.error(), Some(TcpError::TimedOut));
    assert_eq!(s.tcb.stats().keepalive_probes, 3);
}

/// RFC 9293 §3.8.4: an answered probe restarts the idle time.
#[test]
fn keepalive_answered_keeps_connection() {
    let cfg = TcpConfig {
        keepalive: Some(Keepalive {
            idle: std::time::Duration::from_secs(10),
            interval: std::time::Duration::from_secs(1),
            probes: 3,
        }),
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    s.expect_at(10_010, Out::ack(0, 1));
    s.at(10_020).inject(In::ack(1, 1));
    s.expect_none();
    s.expect_at(20_020, Out::ack(0, 1));
    s.state(State::Established);
}

/// TIME-WAIT holds, silent, until just before `end` (ms) and the
/// connection closes at `end` (RFC 9293 §3.10.8: it lasts 2·MSL).
fn time_wait_ends_at(s: &mut Script, end: u64) {
    s.expect_none_until(end - 1);
    s.state(State::TimeWait);
    s.at(end);
    s.state(State::Closed);
    s.expect_none();
}
