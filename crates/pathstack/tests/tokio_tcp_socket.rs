//! `pathstack::tokio::TcpSocket` (issue 27, problem 10): options set
//! before a connect or a listen reach the connection — the receive buffer
//! is the window the peer sees, the bound address is the stream's — the
//! buffer sizes are bounded, the backlog is honoured, `SO_REUSEADDR`
//! decides whether a listener may take a port connections hold, and
//! `SO_LINGER` on the stream decides how a drop closes it.
#![cfg(feature = "tokio")]

#[path = "support/wire_nets.rs"]
mod wire_nets;

use pathstack::socket::{MAX_BUFFER, MIN_BUFFER};
use pathstack::tokio::{Net, TcpListener, TcpSocket, TcpStream};
use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wire_nets::{addr, nets, within, A, B};

/// The window the host of `net` may fill towards `s`'s peer.
fn send_window(net: &Net, s: &TcpStream) -> u32 {
    net.with_host(|h| h.tcp().send_window(&s.handle())).unwrap()
}

#[tokio::test]
async fn options_set_before_connect_reach_the_connection() {
    let (a, b) = nets();
    let l = TcpListener::bind(&b, "0.0.0.0:80").await.unwrap();
    let sock = TcpSocket::new_v4(&a).unwrap();
    sock.bind(addr(A, 40_000)).unwrap();
    sock.set_recv_buffer_size(8192).unwrap();
    sock.set_send_buffer_size(10_000).unwrap();
    sock.set_nodelay(true).unwrap();
    sock.set_keepalive(true).unwrap();
    assert_eq!(sock.local_addr().unwrap(), addr(A, 40_000));
    assert_eq!(sock.recv_buffer_size().unwrap(), 8192);
    let (c, s) = within("connect and accept", async {
        tokio::join!(sock.connect(addr(B, 80)), l.accept())
    })
    .await;
    let (c, (s, peer)) = (c.unwrap(), s.unwrap());
    // The bound address is the connection's.
    assert_eq!(peer, addr(A, 40_000));
    assert_eq!(c.local_addr().unwrap(), addr(A, 40_000));
    assert!(c.nodelay().unwrap());
    let h = c.handle();
    assert_eq!(
        a.with_host(|h2| h2.tcp().recv_buffer_size(&h)).unwrap(),
        8192
    );
    assert_eq!(
        a.with_host(|h2| h2.tcp().send_buffer_size(&h)).unwrap(),
        10_000
    );
    // The peer sees the small receive buffer as our window; a default
    // connection advertises its 256 KiB.
    let w = send_window(&b, &s);
    assert!(w > 0 && w <= 8192, "the server may send {w} octets");
    let (c2, s2) = within("default connect", async {
        tokio::join!(TcpStream::connect(&a, addr(B, 80)), l.accept())
    })
    .await;
    let (_c2, (s2, _)) = (c2.unwrap(), s2.unwrap());
    assert!(send_window(&b, &s2) > 65_535, "{}", send_window(&b, &s2));
}

#[tokio::test]
async fn buffer_sizes_are_clamped_to_the_hosts_bounds() {
    let (a, _b) = nets();
    let sock = TcpSocket::new_v4(&a).unwrap();
    sock.set_send_buffer_size(u32::MAX).unwrap();
    sock.set_recv_buffer_size(u32::MAX).unwrap();
    assert_eq!(sock.send_buffer_size().unwrap() as usize, MAX_BUFFER);
    assert_eq!(sock.recv_buffer_size().unwrap() as usize, MAX_BUFFER);
    sock.set_send_buffer_size(1).unwrap();
    sock.set_recv_buffer_size(0).unwrap();
    assert_eq!(sock.send_buffer_size().unwrap() as usize, MIN_BUFFER);
    assert_eq!(sock.recv_buffer_size().unwrap() as usize, MIN_BUFFER);
    // The options read back as set.
    assert!(!sock.nodelay().unwrap());
    assert!(!sock.keepalive().unwrap());
    assert!(!sock.reuseaddr().unwrap());
    assert_eq!(sock.linger().unwrap(), None);
    sock.set_linger(Some(Duration::from_secs(1))).unwrap();
    assert_eq!(sock.linger().unwrap(), Some(Duration::from_secs(1)));
}

#[tokio::test]
async fn ipv6_and_foreign_addresses_are_refused() {
    let (a, _b) = nets();
    let e = TcpSocket::new_v6(&a).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let sock = TcpSocket::new_v4(&a).unwrap();
    let e = sock.bind(addr(Ipv4Addr::new(10, 0, 0, 9), 80)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrNotAvailable, "{e}");
    assert!(sock.bind("[::1]:80".parse().unwrap()).is_err());
    // Loopback and the unspecified address bind.
    sock.bind(addr(Ipv4Addr::LOCALHOST, 80)).unwrap();
    sock.bind(addr(Ipv4Addr::UNSPECIFIED, 80)).unwrap();
}

/// The backlog bounds the SYN and the accept queue: with two connections
/// waiting to be accepted, a third is held out until one is taken.
#[tokio::test]
async fn the_backlog_bounds_the_accept_queue() {
    let (a, b) = nets();
    let sock = TcpSocket::new_v4(&b).unwrap();
    sock.bind(addr(Ipv4Addr::UNSPECIFIED, 81)).unwrap();
    let l = sock.listen(2).unwrap();
    let clients: Vec<_> = (0..3)
        .map(|_| {
            let a = a.clone();
            tokio::spawn(async move { TcpStream::connect(&a, addr(B, 81)).await })
        })
        .collect();
    let pending = || {
        b.with_host(|h| h.tcp().accept_pending(&l.handle()))
            .unwrap()
    };
    within("two connections to accept", async {
        while pending() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    // The third stays out while the queue is full.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(pending(), 2, "connections waiting to be accepted");
    // Each client writes once connected: the third one's handshake was
    // completed by a SYN cookie (its SYN found the SYN queue full) and its
    // last ACK dropped while the accept queue was full; its data segment,
    // retransmitted, carries the ACK again (as on Linux).
    let mut streams = Vec::new();
    for c in clients {
        let mut c = within("connect", c).await.unwrap().unwrap();
        c.write_all(b"hi").await.unwrap();
        streams.push(c);
    }
    for _ in 0..3 {
        let (mut s, _) = within("accept", l.accept()).await.unwrap();
        let mut buf = [0u8; 2];
        within("read", s.read_exact(&mut buf)).await.unwrap();
        assert_eq!(&buf, b"hi");
    }
    // A huge backlog is bounded, not refused.
    let sock = TcpSocket::new_v4(&b).unwrap();
    sock.listen(u32::MAX).unwrap();
}

/// Without `SO_REUSEADDR` a listener may not take a port a connection of
/// the host still holds (here in TIME-WAIT after the server closed
/// first); with it, it may.
#[tokio::test]
async fn reuseaddr_lets_a_listener_take_a_port_held_in_time_wait() {
    let (a, b) = nets();
    {
        let sock = TcpSocket::new_v4(&b).unwrap();
        sock.bind(addr(Ipv4Addr::UNSPECIFIED, 82)).unwrap();
        let l = sock.listen(4).unwrap();
        let (c, s) = within("connect and accept", async {
            tokio::join!(TcpStream::connect(&a, addr(B, 82)), l.accept())
        })
        .await;
        let (mut c, (s, _)) = (c.unwrap(), s.unwrap());
        drop(s); // The server closes first: its side goes to TIME-WAIT.
        let mut buf = [0u8; 1];
        assert_eq!(within("end", c.read(&mut buf)).await.unwrap(), 0);
        drop(c);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = TcpSocket::new_v4(&b).unwrap();
    again.bind(addr(Ipv4Addr::UNSPECIFIED, 82)).unwrap();
    let e = again.listen(4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
    let again = TcpSocket::new_v4(&b).unwrap();
    again.bind(addr(Ipv4Addr::UNSPECIFIED, 82)).unwrap();
    again.set_reuseaddr(true).unwrap();
    assert!(again.reuseaddr().unwrap());
    let l = again.listen(4).unwrap();
    assert_eq!(l.local_addr().unwrap().port(), 82);
}

/// Linger zero: dropping the stream resets the connection and drops its
/// data (RFC 793's ABORT); the peer's read says `ConnectionReset`. A
/// listener's linger option is its connections'.
#[tokio::test]
async fn linger_zero_drops_with_a_reset() {
    let (a, b) = nets();
    let sock = TcpSocket::new_v4(&b).unwrap();
    sock.bind(addr(Ipv4Addr::UNSPECIFIED, 83)).unwrap();
    sock.set_linger(Some(Duration::ZERO)).unwrap();
    let l = sock.listen(4).unwrap();
    let (c, s) = within("connect and accept", async {
        tokio::join!(TcpStream::connect(&a, addr(B, 83)), l.accept())
    })
    .await;
    let (mut c, (s, _)) = (c.unwrap(), s.unwrap());
    assert_eq!(s.linger().unwrap(), Some(Duration::ZERO));
    assert_eq!(c.linger().unwrap(), None);
    drop(s);
    let mut buf = [0u8; 8];
    let e = within("read", c.read(&mut buf)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");

    // And set on a connected stream; the default close is graceful.
    let l = TcpListener::bind(&b, "0.0.0.0:84").await.unwrap();
    for linger in [None, Some(Duration::ZERO)] {
        let (c, s) = within("connect and accept", async {
            tokio::join!(TcpStream::connect(&a, addr(B, 84)), l.accept())
        })
        .await;
        let (mut c, (s, _)) = (c.unwrap(), s.unwrap());
        s.set_linger(linger).unwrap();
        drop(s);
        let got = within("read", c.read(&mut buf)).await;
        match linger {
            None => assert_eq!(got.unwrap(), 0, "a FIN"),
            Some(_) => assert_eq!(got.unwrap_err().kind(), ErrorKind::ConnectionReset),
        }
        c.write_all(b"x").await.ok();
    }
}

/// `set_ttl`/`ttl` on the tokio stream (the segments' TTL itself is
/// checked on the wire by `tests/tcp_ttl.rs`).
#[tokio::test]
async fn a_streams_ttl_is_set_and_read_back() {
    let (a, b) = nets();
    let l = TcpListener::bind(&b, "0.0.0.0:85").await.unwrap();
    let (c, s) = within("connect and accept", async {
        tokio::join!(TcpStream::connect(&a, addr(B, 85)), l.accept())
    })
    .await;
    let (c, _s) = (c.unwrap(), s.unwrap());
    assert_eq!(c.ttl().unwrap(), 64);
    c.set_ttl(9).unwrap();
    assert_eq!(c.ttl().unwrap(), 9);
    assert_eq!(c.set_ttl(0).unwrap_err().kind(), ErrorKind::InvalidInput);
}
