//! `shutdown(Read)` with Linux's meaning (`Tcb::shutdown`): a read with
//! nothing queued returns the end of the stream, but data that arrives is
//! still acknowledged, queued and readable (packetdrill
//! `shutdown-rd-wr-close`), within the receive buffer.

use super::script::*;
use super::*;

/// The script's sequence: `shutdown(SHUT_RD)`, a read (0), 1000 octets
/// arrive and are ACKed, a read returns them, then the end again.
#[test]
fn data_after_shutdown_read_is_queued_and_readable() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).app(|t| t.shutdown(Shutdown::Read)).unwrap();
    assert_eq!(s.read_all(), Some(0), "nothing queued: the end");
    assert!(s.tcb.is_readable());
    s.at(30).inject(In::data(1, 1, 1000));
    // The first data of the connection: a quick ACK.
    s.advance_until_output(ms(100)).expect("an ACK");
    s.expect(Out::ack(1, 1001));
    assert_eq!(s.read_all(), Some(1000), "the data, not the end");
    assert_eq!(s.read_all(), Some(0), "then the end again");
}

/// Data queued before `shutdown(Read)` stays readable; a close with it
/// unread resets (RFC 2525 §2.17), as Linux.
#[test]
fn shutdown_read_keeps_queued_data_and_close_with_it_unread_resets() {
    let mut s = Script::established(TcpConfig::default(), false);
    s.at(20).inject(In::data(1, 1, 500));
    s.advance_until_output(ms(100)).expect("an ACK");
    s.expect(Out::ack(1, 501));
    s.app(|t| t.shutdown(Shutdown::Read)).unwrap();
    s.at(120).inject(In::data(501, 1, 500));
    let mut buf = [0u8; 2000];
    assert_eq!(s.app(|t| t.peek(&mut buf)).unwrap(), Some(1000));
    s.app(|t| t.close());
    s.advance_until_output(ms(300)).expect("a reset");
    let e = s.out.pop_back().expect("a segment");
    assert!(e.repr.flags.contains(TcpFlags::RST), "{:?}", e.repr);
}

/// What is queued after `shutdown(Read)` is bounded by the receive
/// buffer: the window closes as it fills, and data beyond it is not taken.
#[test]
fn data_after_shutdown_read_stays_within_the_receive_buffer() {
    let cfg = TcpConfig {
        recv_buffer: 4000,
        ..TcpConfig::default()
    };
    let mut s = Script::established(cfg, false);
    s.at(20).app(|t| t.shutdown(Shutdown::Read)).unwrap();
    for i in 0..6u32 {
        s.inject(In::data(1 + i * 1000, 1, 1000));
    }
    let mut buf = [0u8; 10_000];
    let queued = s.app(|t| t.peek(&mut buf)).unwrap().unwrap();
    assert!(queued <= 4000, "{queued} octets queued");
}
