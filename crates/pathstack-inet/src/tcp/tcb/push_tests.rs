//! Where PSH goes (`output.rs`, `push_point`): the end of what was
//! written (RFC 1122 §4.2.2.2's MUST) and, as Linux places it, every
//! super-segment of new data; not a single segment cut from the middle
//! of a write, nor a retransmission that does not reach the end.

use super::script::*;
use super::*;

const MSS: usize = 1448; // 1460 less the timestamp option

fn psh(e: &Emitted) -> bool {
    e.repr.flags.contains(TcpFlags::PSH)
}

/// A write larger than the window: the initial window's super-segment
/// carries PSH though data stays queued (Linux: `> P. 1:10001(10000)`),
/// and so does the next super-segment an ACK lets out.
#[test]
fn a_super_segment_of_new_data_carries_psh() {
    let m = MSS as u32;
    let mut s = Script::established(tso_config(), true);
    s.at(20).write(15 * MSS);
    // The initial window as two super-segments of half cwnd each
    // (`tso_len`; packetdrill joins them into `1:10001(10000)`).
    let e = s.expect(Out::data(1, 5 * MSS));
    assert!(psh(&e), "the initial window's first super-segment");
    let e = s.expect(Out::data(1 + 5 * m, 5 * MSS));
    assert!(psh(&e), "the initial window's second super-segment");
    s.expect_none();
    s.at(30).inject(In::ack(1, 1 + m));
    let e = s.expect(Out::data(1 + 10 * m, 2 * MSS));
    assert!(psh(&e), "two segments on an ACK in slow start");
}

/// Without segmentation offload: single segments from the middle of a
/// write carry no PSH, the one that empties it does (RFC 1122 §4.2.2.2).
#[test]
fn single_segments_carry_psh_only_at_the_end_of_the_write() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).write(3 * MSS + 100);
    for i in 0..3u32 {
        let e = s.expect(Out::data(1 + i * MSS as u32, MSS));
        assert!(!psh(&e), "segment {i} leaves data queued");
    }
    let e = s.expect(Out::data(1 + 3 * MSS as u32, 100));
    assert!(psh(&e), "the last buffered segment");
}

/// A retransmission of the first segments of a write carries no PSH
/// (Linux re-cuts it from the queue; only the piece at the end keeps it).
#[test]
fn a_retransmission_short_of_the_end_carries_no_psh() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).write(2 * MSS);
    s.expect(Out::data(1, MSS));
    let e = s.expect(Out::data(1 + MSS as u32, MSS));
    assert!(psh(&e));
    // The tail-loss probe resends the last segment, which ends the
    // write (RFC 8985 §7.3); then the timeout resends the first only
    // (loss window of one).
    s.advance_until_output(ms(5_000)).expect("a probe");
    let e = s.expect(Out::data(1 + MSS as u32, MSS));
    assert!(psh(&e), "the probe reaches the end of the write");
    s.advance_until_output(ms(5_000)).expect("a retransmission");
    let e = s.expect(Out::data(1, MSS));
    assert!(!psh(&e), "retransmission of the first segment");
}

/// The half-cwnd quota cuts a super-segment short (`tso_len`): the new
/// data right after it carries PSH, as the rest of Linux's write-queue
/// buffer (packetdrill `slow-start-ack-per-4pkt`: at cwnd 14 with 6
/// segments in flight, `> P. 10001:18001(8000)` leaves as 7000 and a
/// PSH-marked 1000, which packetdrill joins). Without it the 1000 went
/// without PSH and the script failed.
#[test]
fn new_data_continuing_a_quota_cut_super_segment_carries_psh() {
    let m = MSS as u32;
    let mut s = Script::established(tso_config(), true);
    s.at(20).write(30 * MSS);
    s.expect(Out::data(1, 5 * MSS));
    s.expect(Out::data(1 + 5 * m, 5 * MSS));
    s.expect_none();
    // Four segments acknowledged in slow start: cwnd 14, 6 in flight,
    // room for 8; the quota is 7.
    s.at(30).inject(In::ack(1, 1 + 4 * m));
    let e = s.expect(Out::data(1 + 10 * m, 7 * MSS));
    assert!(psh(&e), "a super-segment of new data");
    let e = s.expect(Out::data(1 + 17 * m, MSS));
    assert!(psh(&e), "the rest of the cut super-segment");
    s.expect_none();
}
