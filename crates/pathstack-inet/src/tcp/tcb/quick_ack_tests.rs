//! Linux's quick-ACK mode (`quick_ack.rs`) in the engine: which ACKs of
//! in-order data go at once and which wait for the delayed-ACK timer
//! (RFC 9293 §3.8.6.3, RFC 5681 §4.2 allow both), and the peer's FIN.

use super::script::*;
use super::*;

/// The first segments of a connection are ACKed at once (the sender's
/// slow start is not held for 40 ms); once the application answers
/// within the ACK delay, the connection is interactive and the ACK
/// waits, riding on the answer.
#[test]
fn first_data_is_acked_at_once_until_the_application_answers() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 100));
    s.expect(Out::ack(1, 101));
    s.at(30).inject(In::data(101, 1, 100));
    s.expect(Out::ack(1, 201));
    // The answer, 1 ms later: interactive from now on.
    s.at(31).write(10);
    s.expect(Out::data(1, 10).ack_no(201));
    s.at(40).inject(In::data(201, 11, 100));
    s.expect_none();
    s.at(45).write(10);
    s.expect(Out::data(11, 10).ack_no(301));
    s.expect_none();
}

/// The delayed-ACK timer firing ends interactive mode: the application
/// did not answer in time, so the next segments are ACKed at once again
/// (while the grant lasts).
#[test]
fn a_missed_delayed_ack_ends_interactive_mode() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 100));
    s.expect(Out::ack(1, 101));
    s.at(21).write(10);
    s.expect(Out::data(1, 10).ack_no(101));
    s.at(30).inject(In::data(101, 11, 100));
    s.expect_none();
    s.expect_at(70, Out::ack(11, 201));
    s.at(100).inject(In::data(201, 11, 100));
    s.expect(Out::ack(11, 301));
}

/// With the mode off (`TcpConfig::quick_ack`), the first data waits for
/// the delayed-ACK timer as any other.
#[test]
fn without_quick_ack_the_first_data_waits() {
    let cfg = TcpConfig {
        quick_ack: false,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, true);
    s.at(20).inject(In::data(1, 1, 100));
    s.expect_none();
    s.expect_at(60, Out::ack(1, 101));
}

/// The grant is min(16, buffer / (2·MSS)) segments: a 4-segment buffer
/// gives two quick ACKs, then the ACK is delayed again.
#[test]
fn the_grant_is_bounded_by_the_receive_buffer() {
    let cfg = TcpConfig {
        recv_buffer: 4 * 1460,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    s.at(20).inject(In::data(1, 1, 10));
    s.expect(Out::ack(1, 11));
    s.at(21).inject(In::data(11, 1, 10));
    s.expect(Out::ack(1, 21));
    s.at(22).inject(In::data(21, 1, 10));
    s.expect_none();
    s.expect_at(62, Out::ack(1, 31));
}

/// The peer's FIN after data (Linux `tcp_fin`): interactive mode, so its
/// ACK waits for the application's close — the FIN then carries it — or
/// the delayed-ACK time. A FIN before any data is ACKed at once.
#[test]
fn a_fin_after_data_waits_for_the_close_a_fin_alone_does_not() {
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 100));
    s.expect(Out::ack(1, 101));
    assert_eq!(s.read_all(), Some(100));
    s.at(30).inject(In::fin(101, 1));
    s.state(State::CloseWait);
    s.expect_none();
    s.at(35).app(|t| t.close());
    s.expect(Out::fin(1, 102));

    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::fin(1, 1));
    s.expect(Out::ack(1, 2));

    // Unanswered, the FIN's ACK goes at the delayed-ACK time.
    let mut s = Script::established(TcpConfig::default(), true);
    s.at(20).inject(In::data(1, 1, 100));
    s.expect(Out::ack(1, 101));
    s.at(30).inject(In::fin(101, 1));
    s.expect_none();
    s.expect_at(70, Out::ack(1, 102));
}
