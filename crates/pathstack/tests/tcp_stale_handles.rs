//! A TCP stream handle that names no live socket of the host it is used on
//! — closed, aborted, its slot taken by a later connection, or another
//! host's — is refused by `read` and `write` with the kinds it always had
//! (`NotConnected`, `InvalidInput`), never reaching another connection;
//! and a connection that ended keeps reporting its own error. The socket
//! calls' usual case (`Host::tcp_recv_usual`, `tcp_send_usual`) hands
//! every such handle to the general way, which decides.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::host::Host;
use pathstack::socket::{TcpListener, TcpStream};
use std::io::ErrorKind;

fn hosts() -> (Host, Host) {
    let (a, b) = memory_pair(MemoryConfig::default());
    (
        Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap(),
        Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap(),
    )
}

/// A connection from `c` to `l` on `s`: the client's and the server's ends.
fn connect(c: &mut Host, s: &mut Host, l: &TcpListener, port: u16) -> (TcpStream, TcpStream) {
    let cs = c.tcp().connect(("10.0.0.2", port)).unwrap();
    for _ in 0..50 {
        c.poll();
        s.poll();
        if let Ok((ss, _)) = l.accept(s) {
            for _ in 0..5 {
                c.poll();
                s.poll();
            }
            assert!(c.tcp().is_connected(&cs).unwrap());
            return (cs, ss);
        }
    }
    panic!("no connection");
}

/// Moves `data` from `from` to `to` and checks it arrived.
fn exchange(a: &mut Host, b: &mut Host, from: &TcpStream, to: &TcpStream, data: &[u8]) {
    assert_eq!(from.write(a, data).unwrap(), data.len());
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    for _ in 0..50 {
        a.poll();
        b.poll();
        match to.read(b, &mut buf) {
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock),
        }
        if got.len() == data.len() {
            break;
        }
    }
    assert_eq!(got, data);
}

fn kind<T: std::fmt::Debug>(r: std::io::Result<T>) -> ErrorKind {
    r.unwrap_err().kind()
}

#[test]
fn closed_and_reused_handles_are_refused_and_reach_no_other_connection() {
    let (mut c, mut s) = hosts();
    let l = s.tcp().listen("0.0.0.0:7", 8).unwrap();
    let (c1, s1) = connect(&mut c, &mut s, &l, 7);
    exchange(&mut c, &mut s, &c1, &s1, b"one");
    let mut buf = [0u8; 8];
    // Closed by its owner: the handle is stale at once, though the
    // connection's path lives on through the close handshake.
    c.tcp().close(c1).unwrap();
    assert_eq!(kind(c1.write(&mut c, b"x")), ErrorKind::NotConnected);
    assert_eq!(kind(c1.read(&mut c, &mut buf)), ErrorKind::NotConnected);
    // A read that would have blocked (the flag the socket keeps) is
    // refused too: the handle is checked before the flag.
    assert_eq!(kind(s1.read(&mut s, &mut buf)), ErrorKind::WouldBlock);
    s.tcp().abort(s1).unwrap();
    assert_eq!(kind(s1.read(&mut s, &mut buf)), ErrorKind::NotConnected);
    assert_eq!(kind(s1.write(&mut s, b"x")), ErrorKind::NotConnected);
    for _ in 0..10 {
        c.poll();
        s.poll();
    }
    // A second connection takes the freed slots: the old handles still
    // name nothing, and using them changes nothing on the new one.
    let (c2, s2) = connect(&mut c, &mut s, &l, 7);
    assert_eq!(kind(c1.write(&mut c, b"zz")), ErrorKind::NotConnected);
    assert_eq!(kind(s1.read(&mut s, &mut buf)), ErrorKind::NotConnected);
    assert_eq!(kind(s1.write(&mut s, b"zz")), ErrorKind::NotConnected);
    exchange(&mut c, &mut s, &c2, &s2, b"two");
    exchange(&mut s, &mut c, &s2, &c2, b"back");
    // The new connection carried its own octets only.
    assert_eq!(s.tcp().stats(&s2).unwrap().bytes_received, 3);
    assert_eq!(c.tcp().stats(&c2).unwrap().bytes_received, 4);
    assert_eq!(c.tcp().stats(&c2).unwrap().data_segs_out, 1);
}

#[test]
fn a_stream_handle_used_on_another_host_is_refused() {
    let (mut c, mut s) = hosts();
    let l = s.tcp().listen("0.0.0.0:7", 8).unwrap();
    let (cs, ss) = connect(&mut c, &mut s, &l, 7);
    let mut buf = [0u8; 8];
    assert_eq!(kind(cs.write(&mut s, b"x")), ErrorKind::InvalidInput);
    assert_eq!(kind(cs.read(&mut s, &mut buf)), ErrorKind::InvalidInput);
    assert_eq!(kind(ss.read(&mut c, &mut buf)), ErrorKind::InvalidInput);
    // Nothing was sent or taken on either connection.
    exchange(&mut c, &mut s, &cs, &ss, b"ok");
}

#[test]
fn a_reset_connection_reports_its_error_through_the_live_handle() {
    let (mut c, mut s) = hosts();
    let l = s.tcp().listen("0.0.0.0:7", 8).unwrap();
    let (cs, ss) = connect(&mut c, &mut s, &l, 7);
    exchange(&mut c, &mut s, &cs, &ss, b"hi");
    s.tcp().abort(ss).unwrap();
    for _ in 0..10 {
        c.poll();
        s.poll();
    }
    let mut buf = [0u8; 8];
    assert_eq!(kind(cs.read(&mut c, &mut buf)), ErrorKind::ConnectionReset);
}
