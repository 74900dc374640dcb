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
    // Loopback and the unspecified address bind (one socket each: a
    // second bind of one socket is Linux's `EINVAL`).
    sock.bind(addr(Ipv4Addr::LOCALHOST, 80)).unwrap();
    let e = sock.bind(addr(Ipv4Addr::LOCALHOST, 81)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    drop(sock);
    let sock = TcpSocket::new_v4(&a).unwrap();
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

/// Without `SO_REUSEADDR` a socket may not bind a port a connection of
/// the host still holds (here in TIME-WAIT after the server closed
/// first), as Linux's `bind` fails with `EADDRINUSE`; with it, it binds
/// and listens.
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
    let e = again.bind(addr(Ipv4Addr::UNSPECIFIED, 82)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
    // Unbound, it listens on an ephemeral port, never on 82.
    let e = {
        let unbound = TcpSocket::new_v4(&b).unwrap();
        unbound.listen(4).unwrap().local_addr().unwrap()
    };
    assert_ne!(e.port(), 82);
    let again = TcpSocket::new_v4(&b).unwrap();
    again.set_reuseaddr(true).unwrap();
    assert!(again.reuseaddr().unwrap());
    again.bind(addr(Ipv4Addr::UNSPECIFIED, 82)).unwrap();
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

/// A bind takes its port at once (issue 27, problem 10): port 0 gets an
/// ephemeral port that `local_addr` shows before any connect or listen; a
/// second socket's bind to a held port fails with `AddrInUse`; dropping
/// the bound socket frees it; a listener (`TcpListener::bind`) cannot
/// take it meanwhile either.
#[tokio::test]
async fn a_bind_holds_its_port_until_dropped() {
    let (a, _b) = nets();
    let first = TcpSocket::new_v4(&a).unwrap();
    first.bind(addr(Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let held = first.local_addr().unwrap();
    assert!((49_152..=65_535).contains(&held.port()), "{held}");
    let second = TcpSocket::new_v4(&a).unwrap();
    let e = second.bind(held).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
    let e = TcpListener::bind(&a, held).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
    // Another bind to port 0 gets another port.
    let third = TcpSocket::new_v4(&a).unwrap();
    third.bind(addr(A, 0)).unwrap();
    assert_ne!(third.local_addr().unwrap().port(), held.port());
    assert_eq!(third.local_addr().unwrap().ip(), A);
    drop(first);
    second.bind(held).unwrap();
    assert_eq!(second.local_addr().unwrap(), held);
}

/// The port of a bind goes to the socket's connection or listener: the
/// stream's local port is the one the bind showed, and while the
/// listener holds it no other socket binds it, `SO_REUSEADDR` or not.
#[tokio::test]
async fn a_bound_port_passes_to_the_connection_or_listener() {
    let (a, b) = nets();
    let l = TcpListener::bind(&b, "0.0.0.0:86").await.unwrap();
    let sock = TcpSocket::new_v4(&a).unwrap();
    sock.bind(addr(Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let bound = sock.local_addr().unwrap().port();
    let (c, s) = within("connect and accept", async {
        tokio::join!(sock.connect(addr(B, 86)), l.accept())
    })
    .await;
    let (c, (_s, peer)) = (c.unwrap(), s.unwrap());
    assert_eq!(c.local_addr().unwrap().port(), bound);
    assert_eq!(peer.port(), bound);

    let sock = TcpSocket::new_v4(&b).unwrap();
    sock.bind(addr(Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let port = sock.local_addr().unwrap().port();
    let listener = sock.listen(4).unwrap();
    assert_eq!(listener.local_addr().unwrap().port(), port);
    let other = TcpSocket::new_v4(&b).unwrap();
    other.set_reuseaddr(true).unwrap();
    let e = other.bind(addr(Ipv4Addr::UNSPECIFIED, port)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse, "{e}");
}

/// What each step of the bind scenario of
/// [`binds_follow_linux`] returned: `Ok` or the error's kind.
type Outcomes = Vec<Result<(), ErrorKind>>;

/// The bind scenario on any `TcpSocket`-like type: `new` makes a socket,
/// `reuse` sets `SO_REUSEADDR`, `bind`, `port` reads the bound port and
/// `listen` consumes it into something held alive.
fn bind_scenario<S, L>(
    new: impl Fn() -> S,
    reuse: impl Fn(&S),
    bind: impl Fn(&S, u16) -> std::io::Result<()>,
    port: impl Fn(&S) -> u16,
    listen: impl Fn(S) -> std::io::Result<L>,
) -> Outcomes {
    let kind = |r: std::io::Result<()>| r.map_err(|e| e.kind());
    let mut out = Vec::new();
    // 1. A bind to port 0 gets a port at once.
    let s1 = new();
    out.push(kind(bind(&s1, 0)));
    let p = port(&s1);
    out.push(if p == 0 {
        Err(ErrorKind::Other)
    } else {
        Ok(())
    });
    // 2. A second socket may not bind it; once the first is dropped it may.
    let s2 = new();
    out.push(kind(bind(&s2, p)));
    drop(s1);
    out.push(kind(bind(&s2, p)));
    drop(s2);
    // 3. Two sockets with SO_REUSEADDR share a port; one without may not
    //    join them.
    let r1 = new();
    reuse(&r1);
    out.push(kind(bind(&r1, 0)));
    let q = port(&r1);
    let r2 = new();
    reuse(&r2);
    out.push(kind(bind(&r2, q)));
    let plain = new();
    out.push(kind(bind(&plain, q)));
    // 4. One of them listens; the other may not listen too, and no new
    //    socket binds the port even with SO_REUSEADDR.
    let l1 = kind(listen(r1).map(|_l| ()));
    out.push(l1);
    let l2 = kind(listen(r2).map(|_l| ()));
    out.push(l2);
    let r3 = new();
    reuse(&r3);
    out.push(kind(bind(&r3, q)));
    out
}

/// The bind scenario on pathstack's `TcpSocket` and on the kernel's
/// (tokio's `TcpSocket` on 127.0.0.1) gives the same outcomes, which are
/// Linux's rules for TCP `bind` (`inet_csk_bind_conflict`).
#[tokio::test]
async fn binds_follow_linux() {
    let (a, _b) = nets();
    let listeners = std::cell::RefCell::new(Vec::new());
    let ours = bind_scenario(
        || TcpSocket::new_v4(&a).unwrap(),
        |s| s.set_reuseaddr(true).unwrap(),
        |s, p| s.bind(addr(A, p)),
        |s| s.local_addr().unwrap().port(),
        |s| s.listen(4).map(|l| listeners.borrow_mut().push(l)),
    );
    let kernel_listeners = std::cell::RefCell::new(Vec::new());
    let kernel = bind_scenario(
        || tokio::net::TcpSocket::new_v4().unwrap(),
        |s| s.set_reuseaddr(true).unwrap(),
        |s, p| s.bind(addr(Ipv4Addr::LOCALHOST, p)),
        |s| s.local_addr().unwrap().port(),
        |s| s.listen(4).map(|l| kernel_listeners.borrow_mut().push(l)),
    );
    use ErrorKind::AddrInUse;
    let linux = vec![
        Ok(()),         // bind to port 0
        Ok(()),         // … has a port at once
        Err(AddrInUse), // a second bind to it
        Ok(()),         // … after the first is dropped
        Ok(()),         // SO_REUSEADDR bind
        Ok(()),         // a second SO_REUSEADDR bind shares it
        Err(AddrInUse), // one without SO_REUSEADDR does not
        Ok(()),         // one of the two listens
        Err(AddrInUse), // the other may not
        Err(AddrInUse), // nor does a new one bind the listener's port
    ];
    assert_eq!(kernel, linux, "the kernel");
    assert_eq!(ours, linux, "pathstack");
}

/// The TTLs of the TCP segments among `frames` whose flags, masked by
/// `mask`, are `flags`.
fn ttls_of(frames: &[Vec<u8>], mask: u8, flags: u8) -> Vec<u8> {
    frames
        .iter()
        .filter(|f| f.len() >= 54 && f[12..14] == [0x08, 0x00] && f[23] == 6)
        .filter(|f| {
            let ihl = usize::from(f[14] & 0x0f) * 4;
            f.get(14 + ihl + 13).is_some_and(|&fl| fl & mask == flags)
        })
        .map(|f| f[22])
        .collect()
}

/// A TTL set on a `TcpSocket` before it connects is in the SYN's header,
/// and one set before it listens in the SYN-ACK and in every segment of
/// the accepted connection — modular and specialized paths alike (the
/// TTL reaches the connection's path as it is made: `TCP_TTL`).
#[tokio::test]
async fn a_ttl_set_before_connect_or_listen_is_on_the_handshake() {
    use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    use pathstack::core::device::record::Recorder;
    use pathstack::host::{Host, HostConfig};
    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;
    for specialize in [false, true] {
        let (da, db) = memory_pair(MemoryConfig::default());
        let (da, sent_a) = Recorder::new(da, 4096);
        let (db, sent_b) = Recorder::new(db, 4096);
        let host = |ip: &str, dev| {
            let mut cfg = HostConfig::parse(ip).unwrap();
            cfg.specialize = specialize;
            Net::new(Host::new(cfg, dev).unwrap())
        };
        let (a, b) = (host("10.0.0.1/24", da), host("10.0.0.2/24", db));
        let ls = TcpSocket::new_v4(&b).unwrap();
        ls.set_ttl(9).unwrap();
        assert_eq!(ls.ttl().unwrap(), 9);
        ls.bind(addr(Ipv4Addr::UNSPECIFIED, 87)).unwrap();
        let l = ls.listen(4).unwrap();
        let cs = TcpSocket::new_v4(&a).unwrap();
        assert_eq!(cs.ttl().unwrap(), 64);
        cs.set_ttl(7).unwrap();
        let (c, s) = within("connect and accept", async {
            tokio::join!(cs.connect(addr(B, 87)), l.accept())
        })
        .await;
        let (mut c, (mut s, _)) = (c.unwrap(), s.unwrap());
        assert_eq!(c.ttl().unwrap(), 7);
        assert_eq!(s.ttl().unwrap(), 9);
        s.write_all(b"from the server").await.unwrap();
        let mut buf = [0u8; 15];
        within("read", c.read_exact(&mut buf)).await.unwrap();
        let (fa, fb) = (sent_a.frames(), sent_b.frames());
        assert_eq!(
            ttls_of(&fa, SYN | ACK, SYN),
            [7],
            "the SYN, specialize {specialize}"
        );
        assert_eq!(
            ttls_of(&fb, SYN | ACK, SYN | ACK),
            [9],
            "the SYN-ACK, specialize {specialize}"
        );
        let server = ttls_of(&fb, 0, 0);
        assert!(
            server.len() >= 2 && server.iter().all(|&t| t == 9),
            "{server:?}"
        );
        let client = ttls_of(&fa, 0, 0);
        assert!(client.iter().all(|&t| t == 7), "{client:?}");
        // Out of range, as Linux's `EINVAL`.
        let bad = TcpSocket::new_v4(&a).unwrap();
        for ttl in [0, 256] {
            assert_eq!(
                bad.set_ttl(ttl).unwrap_err().kind(),
                ErrorKind::InvalidInput
            );
        }
    }
}
