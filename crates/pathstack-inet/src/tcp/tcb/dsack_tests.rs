//! D-SACK (RFC 2883) in the engine: a duplicate wholly below RCV.NXT is
//! reported in the ACK's first SACK block; a FIN drops the report of a
//! duplicate it came with, as Linux's `tcp_fin` resets its SACK state.

use super::script::*;
use super::*;

/// RFC 2883 §4: the whole duplicate segment, below RCV.NXT, is the ACK's
/// D-SACK block (Linux's `tcp_dsack_mult.pkt`).
#[test]
fn a_duplicate_below_rcv_nxt_is_reported() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 1000));
    s.expect(Out::ack(1, 1001));
    s.at(30).inject(In::data(1, 1, 1000));
    s.expect(Out::ack(1, 1001).sack(&[(1, 1001)]));
    // Once: the next ACK reports nothing.
    s.at(40).inject(In::data(1001, 1, 10));
    s.expect(Out::ack(1, 1011).sack(&[]));
}

/// A retransmission that repeats data and brings the FIN: the FIN's ACK
/// carries no D-SACK block (Linux's `tcp_close_no_rst.pkt`).
#[test]
fn a_fin_drops_the_dsack_of_its_segment() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 1000));
    s.expect(Out::ack(1, 1001));
    assert_eq!(s.read_all(), Some(1000));
    s.at(30)
        .inject(In::data(1, 1, 1000).flags(TcpFlags::ACK | TcpFlags::FIN));
    s.state(State::CloseWait);
    // At once (the segment repeated data), without the D-SACK block.
    s.expect(Out::ack(1, 1002).sack(&[]));
}
