//! The FIN alone past a full congestion window (`output.rs`, `bare_fin`):
//! it adds no data to the network, so it goes at once, as Linux's
//! `tcp_cwnd_test` lets it (packetdrill `shutdown-rdwr-write-queue-close`).

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
    // The ACK makes room: the last segment and then the FIN.
    s.expect(Out::data(1 + 10 * MSS as u32, MSS));
    s.expect(Out::fin(1 + 11 * MSS as u32, 1).len(0));
}
