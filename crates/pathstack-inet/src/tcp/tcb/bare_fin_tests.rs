//! Where the FIN goes (`output.rs`): alone past a full congestion window
//! (`bare_fin`), since it adds no data to the network, as Linux's
//! `tcp_cwnd_test` lets it (packetdrill `shutdown-rdwr-write-queue-close`);
//! on the full segment or super-segment that ends the data (`fin_rides`),
//! as Linux's FIN rides on its last unsent buffer (packetdrill
//! `shutdown-rdwr-send-queue-ack-close`).

use super::script::*;
use super::*;

const MSS: usize = 1448; // 1460 less the timestamp option

/// The initial window fills cwnd; `shutdown(SHUT_WR)` then sends the FIN
/// at once, not when an ACK or the tail-loss probe makes room.
#[test]
fn a_bare_fin_goes_past_a_full_congestion_window() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 10 * MSS);
    assert_eq!(s.tcb.cwnd() as usize, 10 * MSS, "the window is full");
    s.at(20).app(|t| t.shutdown(Shutdown::Write)).unwrap();
    let e = s.expect(Out::fin(1 + 10 * MSS as u32, 1).len(0));
    assert_eq!(e.at, ms(20), "the FIN leaves with the shutdown");
    s.expect_none();
    // It is on the scoreboard like any segment: the ACK of everything,
    // the FIN included, ends FIN-WAIT-1.
    s.at(30).inject(In::ack(1, 2 + 10 * MSS as u32));
    s.state(State::FinWait2);
}

/// Data the window holds back is not sent with the FIN's exemption, nor
/// is the FIN sent ahead of it.
#[test]
fn data_past_a_full_window_still_waits() {
    let mut s = Script::initial_window(TcpConfig::default(), true, MSS, 11 * MSS);
    s.at(20).app(|t| t.shutdown(Shutdown::Write)).unwrap();
    s.expect_none();
    s.at(30).inject(In::ack(1, 1 + MSS as u32));
    // The ACK makes room: the last segment, the FIN on it.
    s.expect(Out::fin(1 + 10 * MSS as u32, 1).len(MSS));
    s.expect_none();
}

/// With segmentation offload, the super-segment that ends the data
/// carries the FIN (Linux: `> FP. 13001:20001(7000)`), and the scoreboard
/// holds it on the last wire segment: the ACK of the data alone leaves
/// the FIN outstanding, the ACK of the FIN ends FIN-WAIT-1.
#[test]
fn the_fin_rides_on_the_super_segment_that_ends_the_data() {
    let m = MSS as u32;
    let mut s = Script::established(tso_config(), true);
    s.at(20).write(12 * MSS);
    // The initial window as two halves (`tso_len`).
    s.expect(Out::data(1, 5 * MSS));
    s.expect(Out::data(1 + 5 * m, 5 * MSS));
    s.app(|t| t.shutdown(Shutdown::Write)).unwrap();
    s.expect_none();
    s.at(30).inject(In::ack(1, 1 + 10 * m));
    let e = s.expect(Out::fin(1 + 10 * m, 1).len(2 * MSS));
    assert!(e.repr.flags.contains(TcpFlags::PSH), "it ends the write");
    s.expect_none();
    s.at(40).inject(In::ack(1, 1 + 12 * m));
    s.state(State::FinWait1);
    s.at(50).inject(In::ack(1, 2 + 12 * m));
    s.state(State::FinWait2);
}
