//! Slow start on stretch ACKs (`congestion/mod.rs`, `Window::slow_start`):
//! cwnd grows by every segment an ACK covers, as Linux's `tcp_slow_start`
//! (packetdrill `slow-start-ack-per-4pkt`, the HyStart scripts), not by
//! RFC 3465 §2.2's L = 2 segments at most.

use super::script::*;
use super::*;

const MSS: usize = 1448; // 1460 less the timestamp option

/// An ACK of 4 segments of the initial window grows cwnd from 10 to 14
/// segments, so 8 new segments leave (4 replacing those acknowledged and
/// 4 of growth), where L = 2 would let out 6.
#[test]
fn a_stretch_ack_grows_cwnd_by_every_segment_it_covers() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 30 * MSS);
    s.at(20).inject(In::ack(1, 1 + 4 * MSS as u32));
    assert_eq!(s.tcb.cwnd() as usize, 14 * MSS);
    for i in 10..18u32 {
        s.expect(Out::data(1 + i * MSS as u32, MSS));
    }
    s.expect_none();
}
