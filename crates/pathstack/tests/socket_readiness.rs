//! The synchronous API as a non-blocking `std::net` program uses it
//! (issue 27, problem 10): the handles' calls fail with `WouldBlock`
//! where the host's older calls return `Ok(None)`, and
//! `Host::poll_ready` waits for any of many registered sockets, as
//! `mio::Poll` does.

use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::host::Host;
use pathstack::inet::tcp::TcpConfig;
use pathstack::socket::{Events, Interest, SocketError, Token, MAX_REGISTRATIONS};
use std::io::ErrorKind;
use std::time::{Duration, Instant};

fn hosts() -> (Host, Host) {
    let (a, b) = wire_pair(WireConfig::default());
    (
        Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap(),
        Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap(),
    )
}

#[test]
fn calls_that_would_wait_fail_with_would_block() {
    let (mut client, mut server) = hosts();
    let mut buf = [0u8; 64];
    // UDP: nothing queued.
    let u = server.udp().bind("0.0.0.0:7").unwrap();
    assert_eq!(
        u.recv_from(&mut server, &mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert_eq!(
        u.peek_from(&server, &mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    // `recv` on a socket that is not connected is an error, not a wait.
    assert_eq!(
        u.recv(&mut server, &mut buf).unwrap_err().kind(),
        ErrorKind::NotConnected
    );
    // TCP: nothing to accept, nothing to read, and a full send buffer.
    let l = server.tcp().listen("0.0.0.0:80", 4).unwrap();
    assert_eq!(
        l.accept(&mut server).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    let cfg = TcpConfig {
        send_buffer: 4096,
        ..TcpConfig::default()
    };
    let c = client
        .tcp()
        .connect_with("0.0.0.0:0", "10.0.0.2:80", cfg)
        .unwrap();
    let s = loop {
        client.poll();
        server.poll();
        match l.accept(&mut server) {
            Ok((s, _)) => break s,
            Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock),
        }
    };
    client.poll();
    assert_eq!(
        s.read(&mut server, &mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    assert_eq!(
        s.peek(&server, &mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    // Written without the server running: the send buffer fills.
    let mut written = 0;
    let e = loop {
        match c.write(&mut client, &[1u8; 1000]) {
            Ok(n) => written += n,
            Err(e) => break e,
        }
    };
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
    assert_eq!(written, 4096);
    // Data arrives: read returns it, then the end of the stream is 0.
    client
        .tcp()
        .shutdown(&c, pathstack::inet::tcp::Shutdown::Write)
        .unwrap();
    let mut got = 0;
    loop {
        client.poll();
        server.poll();
        match s.read(&mut server, &mut buf) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock),
        }
    }
    assert_eq!(got, 4096);
}

/// Many sockets, one wait: the socket a datagram came to is reported,
/// the others are not.
#[test]
fn poll_ready_reports_the_socket_that_is_ready() {
    let (mut client, mut server) = hosts();
    let socks: Vec<_> = (0..16)
        .map(|i| server.udp().bind(("0.0.0.0", 7000 + i)).unwrap())
        .collect();
    for (i, s) in socks.iter().enumerate() {
        server.register(*s, Token(i), Interest::READABLE).unwrap();
    }
    let l = server.tcp().listen("0.0.0.0:80", 4).unwrap();
    server.register(l, Token(100), Interest::READABLE).unwrap();
    let mut events = Events::with_capacity(32);
    // Nothing is ready: the wait lasts its timeout.
    let started = Instant::now();
    let n = server
        .poll_ready(&mut events, Some(Duration::from_millis(50)))
        .unwrap();
    assert_eq!(n, 0);
    assert!(started.elapsed() >= Duration::from_millis(50));

    // The client, on its own thread, sends after a while (and answers
    // the server's ARP); the server's wait sleeps on the wire until the
    // datagram arrives.
    let sender = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        let c = client.udp().bind("0.0.0.0:0").unwrap();
        c.send_to(&mut client, b"to five", "10.0.0.2:7005").unwrap();
        let until = Instant::now() + Duration::from_millis(500);
        while Instant::now() < until {
            client.poll();
            client.wait(Duration::from_millis(10)).unwrap();
        }
        client
    });
    let n = server
        .poll_ready(&mut events, Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(n, 1);
    let mut client = sender.join().unwrap();
    let ev = events.iter().next().unwrap();
    assert_eq!(ev.token(), Token(5));
    assert!(ev.is_readable() && !ev.is_writable() && !ev.is_error());
    // Level-triggered: still ready until it is read.
    server
        .poll_ready(&mut events, Some(Duration::ZERO))
        .unwrap();
    assert_eq!(events.len(), 1);
    let mut buf = [0u8; 16];
    let (n, _) = socks[5].recv_from(&mut server, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"to five");
    server
        .poll_ready(&mut events, Some(Duration::ZERO))
        .unwrap();
    assert!(events.is_empty());

    // A connection to accept makes the listener readable.
    let _conn = client.tcp().connect("10.0.0.2:80").unwrap();
    let mut listener_ready = false;
    for _ in 0..100 {
        client.poll();
        server
            .poll_ready(&mut events, Some(Duration::ZERO))
            .unwrap();
        if events
            .iter()
            .any(|e| e.token() == Token(100) && e.is_readable())
        {
            listener_ready = true;
            break;
        }
    }
    assert!(listener_ready);
    l.accept(&mut server).unwrap();
}

/// A connect in progress turns writable when the handshake completes; a
/// refused one reports an error.
#[test]
fn a_connect_turns_writable_or_fails() {
    let (mut client, mut server) = hosts();
    let _l = server.tcp().listen("0.0.0.0:80", 4).unwrap();
    let ok = client.tcp().connect("10.0.0.2:80").unwrap();
    let refused = client.tcp().connect("10.0.0.2:81").unwrap();
    client.register(ok, Token(1), Interest::WRITABLE).unwrap();
    client
        .register(refused, Token(2), Interest::READABLE | Interest::WRITABLE)
        .unwrap();
    let mut events = Events::with_capacity(4);
    client
        .poll_ready(&mut events, Some(Duration::ZERO))
        .unwrap();
    assert!(events.is_empty(), "ready before the handshake: {events:?}");
    let (mut connected, mut failed) = (false, false);
    for _ in 0..100 {
        server.poll();
        client
            .poll_ready(&mut events, Some(Duration::ZERO))
            .unwrap();
        for e in &events {
            match e.token() {
                Token(1) => connected |= e.is_writable() && !e.is_error(),
                Token(2) => failed |= e.is_error(),
                t => panic!("{t:?}"),
            }
        }
        if connected && failed {
            break;
        }
    }
    assert!(
        connected && failed,
        "connected {connected}, failed {failed}"
    );
    assert!(client.tcp().is_connected(&ok).unwrap());
    let e = client.tcp().is_connected(&refused).unwrap_err();
    assert_eq!(std::io::Error::from(e).kind(), ErrorKind::ConnectionRefused);
}

#[test]
fn registrations_are_checked_and_bounded() {
    let (mut h, _other) = hosts();
    let s = h.udp().bind("0.0.0.0:7").unwrap();
    h.register(s, Token(0), Interest::READABLE).unwrap();
    assert!(matches!(
        h.register(s, Token(1), Interest::READABLE),
        Err(SocketError::AlreadyRegistered)
    ));
    h.reregister(s, Token(1), Interest::WRITABLE).unwrap();
    // Writable at once: its send queue is empty.
    let mut events = Events::with_capacity(1);
    h.poll_ready(&mut events, Some(Duration::ZERO)).unwrap();
    let e = events.iter().next().unwrap();
    assert_eq!((e.token(), e.is_writable()), (Token(1), true));
    // A closed socket's registration goes with it.
    h.udp().close(s).unwrap();
    h.poll_ready(&mut events, Some(Duration::ZERO)).unwrap();
    assert!(events.is_empty());
    assert!(matches!(h.deregister(s), Err(SocketError::NotRegistered)));
    // A stale handle is refused.
    assert!(h.register(s, Token(0), Interest::READABLE).is_err());
    // The registrations are bounded.
    for i in 0..MAX_REGISTRATIONS {
        let s = h.udp().bind("0.0.0.0:0").unwrap();
        h.register(s, Token(i), Interest::READABLE).unwrap();
    }
    let s = h.udp().bind("0.0.0.0:0").unwrap();
    let e = h.register(s, Token(0), Interest::READABLE).unwrap_err();
    assert_eq!(std::io::Error::from(e).kind(), ErrorKind::QuotaExceeded);
}
