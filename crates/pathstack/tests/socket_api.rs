//! The synchronous socket API's parity with `std::net::UdpSocket`, over the
//! in-memory wire: handles that belong to their host, the address forms
//! `bind`/`connect`/`send_to` accept, `connect` on a bound socket, peek,
//! truncation, TTL and broadcast options, blocking receives with a
//! timeout, and a `Host::wait` that wakes when a frame arrives.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::device::record::{Recorder, Recording};
use pathstack::host::{Host, HostConfig};
use pathstack::socket::ready;
use pathstack::socket::{SocketError, UdpSocket};
use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn addr(ip: Ipv4Addr, port: u16) -> SocketAddr {
    SocketAddrV4::new(ip, port).into()
}

fn hosts() -> (Host, Host) {
    let (h1, h2, _) = recorded_hosts();
    (h1, h2)
}

/// Two hosts on a wire, with what the first one transmits recorded.
fn recorded_hosts() -> (Host, Host, Recording) {
    let (da, db) = memory_pair(MemoryConfig::default());
    let (da, sent) = Recorder::new(da, 1024);
    (
        Host::new("10.0.0.1/24".parse().unwrap(), da).unwrap(),
        Host::new("10.0.0.2/24".parse().unwrap(), db).unwrap(),
        sent,
    )
}

/// Polls both hosts until `s` on `to` has a datagram (at most 50 rounds).
fn deliver(from: &mut Host, to: &mut Host, s: &UdpSocket, buf: &mut [u8]) -> (usize, SocketAddr) {
    for _ in 0..50 {
        from.poll();
        to.poll();
        if let Some(got) = ready(s.recv_from(to, buf)).unwrap() {
            return got;
        }
    }
    panic!("nothing arrived\n{}", to.report());
}

fn kind(e: SocketError) -> ErrorKind {
    std::io::Error::from(e).kind()
}

#[test]
fn a_handle_used_on_another_host_is_refused() {
    // h2 (the recorded one) is where the foreign handle is used.
    let (mut h2, mut h1, sent_by_h2) = recorded_hosts();
    let s1 = h1.udp().bind("0.0.0.0:7").unwrap();
    let s2 = h2.udp().bind("0.0.0.0:7").unwrap();
    h2.poll(); // its ARP announcement
    let before = sent_by_h2.len();
    assert_ne!(h1.id(), h2.id());
    assert_eq!(s1.host(), h1.id());
    // Same slot, same generation on both hosts: only the host tells them apart.
    let mut buf = [0u8; 8];
    let wrong = |r: Result<(), SocketError>| match r {
        Err(e @ SocketError::WrongHost { .. }) => {
            assert_eq!(kind(e), ErrorKind::InvalidInput);
        }
        other => panic!("expected WrongHost, got {other:?}"),
    };
    wrong(h2.udp().send_to(&s1, b"x", "10.0.0.2:9").map(drop));
    // The handles' calls say so too, as `io::Error`s.
    let e = s1.recv_from(&mut h2, &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let e = s1.peek_from(&h2, &mut buf).unwrap_err();
    assert!(e.to_string().contains("belongs to host #"), "{e}");
    wrong(h2.udp().local_addr(&s1).map(drop));
    wrong(h2.udp().connect(&s1, "10.0.0.1:9"));
    wrong(h2.udp().set_ttl(&s1, 3));
    wrong(h2.udp().close(s1));
    let e = h2.udp().send_to(&s1, b"x", "10.0.0.2:9").unwrap_err();
    assert!(e.to_string().contains("belongs to host #"), "{e}");
    // Nothing left h2, and both sockets still work on their own hosts.
    h2.poll();
    assert_eq!(sent_by_h2.len(), before, "h2 sent a frame for s1");
    h1.udp().send_to(&s1, b"mine", "10.0.0.1:7").unwrap();
    let (n, from) = deliver(&mut h1, &mut h2, &s2, &mut buf);
    assert_eq!((&buf[..n], from), (&b"mine"[..], addr(B, 7)));
}

#[test]
fn every_address_form_binds_connects_and_sends() {
    let (mut h1, mut h2) = hosts();
    let srv = h2.udp().bind("0.0.0.0:7").unwrap();
    let mut buf = [0u8; 16];
    // bind: &str, String, SocketAddr, SocketAddrV4, (IpAddr, u16),
    // (Ipv4Addr, u16), (&str, u16), a slice of candidates.
    let sockets = [
        h1.udp().bind("10.0.0.1:4001").unwrap(),
        h1.udp().bind(String::from("0.0.0.0:4002")).unwrap(),
        h1.udp().bind(addr(A, 4003)).unwrap(),
        h1.udp().bind(SocketAddrV4::new(A, 4004)).unwrap(),
        h1.udp()
            .bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), 4005))
            .unwrap(),
        h1.udp().bind((A, 4006)).unwrap(),
        h1.udp().bind(("10.0.0.1", 4007)).unwrap(),
        // The first candidate fails (IPv6), the second is taken, as std does.
        h1.udp()
            .bind(&["[::1]:4008".parse().unwrap(), addr(A, 4008)][..])
            .unwrap(),
    ];
    for (i, s) in sockets.iter().enumerate() {
        let port = 4001 + i as u16;
        // As getsockname: the address it was bound to, 0.0.0.0 included.
        let bound = if matches!(i, 1 | 4) {
            Ipv4Addr::UNSPECIFIED
        } else {
            A
        };
        assert_eq!(h1.udp().local_addr(s).unwrap(), addr(bound, port));
        // send_to takes the same forms; each datagram arrives from its port.
        let sent = match i % 4 {
            0 => h1.udp().send_to(s, b"a", "10.0.0.2:7"),
            1 => h1.udp().send_to(s, b"a", addr(B, 7)),
            2 => h1.udp().send_to(s, b"a", (IpAddr::V4(B), 7)),
            _ => h1.udp().send_to(s, b"a", SocketAddrV4::new(B, 7)),
        };
        assert_eq!(sent.unwrap(), 1);
        let (_, from) = deliver(&mut h1, &mut h2, &srv, &mut buf);
        assert_eq!(from, addr(A, port));
    }
    // connect takes them too.
    let c = h1.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    h1.udp().connect(&c, ("10.0.0.2", 7)).unwrap();
    assert_eq!(h1.udp().peer_addr(&c).unwrap(), addr(B, 7));
    h1.udp().connect(&c, SocketAddrV4::new(B, 8)).unwrap();
    assert_eq!(h1.udp().peer_addr(&c).unwrap(), addr(B, 8));

    // IPv6: a clear "address family not supported", kind InvalidInput.
    for e in [
        h1.udp().bind("[::]:7").unwrap_err(),
        h1.udp().send_to(&c, b"x", "[::1]:7").unwrap_err(),
        h1.udp()
            .connect(&c, (IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]), 7))
            .unwrap_err(),
    ] {
        assert!(matches!(e, SocketError::UnsupportedFamily(_)), "{e:?}");
        assert!(
            e.to_string().contains("address family not supported"),
            "{e}"
        );
        assert_eq!(kind(e), ErrorKind::InvalidInput);
    }
    // Not an address at all, not this host's, nothing to try.
    assert_eq!(
        kind(h1.udp().bind("not an address").unwrap_err()),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(h1.udp().bind("10.9.9.9:7").unwrap_err()),
        ErrorKind::AddrNotAvailable
    );
    assert!(matches!(
        h1.udp().bind(&[][..]),
        Err(SocketError::NoAddress)
    ));
}

#[test]
fn connect_is_a_call_on_a_bound_socket() {
    let (mut h1, mut h2) = hosts();
    let srv = h2.udp().bind("0.0.0.0:7").unwrap();
    let other = h2.udp().bind("0.0.0.0:8").unwrap();
    let s = h1.udp().bind("0.0.0.0:5000").unwrap();
    let mut buf = [0u8; 16];
    assert!(matches!(
        h1.udp().send(&s, b"x"),
        Err(SocketError::NotConnected)
    ));
    assert!(matches!(
        h1.udp().peer_addr(&s),
        Err(SocketError::NotConnected)
    ));

    h1.udp().connect(&s, "10.0.0.2:7").unwrap();
    assert_eq!(h1.udp().peer_addr(&s).unwrap(), addr(B, 7));
    // It keeps its port and handle.
    assert_eq!(h1.udp().local_addr(&s).unwrap(), addr(A, 5000));
    assert_eq!(h1.udp().send(&s, b"hello").unwrap(), 5);
    let (n, from) = deliver(&mut h1, &mut h2, &srv, &mut buf);
    assert_eq!((&buf[..n], from), (&b"hello"[..], addr(A, 5000)));

    // It hears only from its peer.
    h2.udp().send_to(&other, b"stranger", from).unwrap();
    h2.udp().send_to(&srv, b"answer", from).unwrap();
    for _ in 0..5 {
        h2.poll();
        h1.poll();
    }
    assert_eq!(ready(s.recv(&mut h1, &mut buf)).unwrap(), Some(6));
    assert_eq!(&buf[..6], b"answer");
    assert_eq!(ready(s.recv(&mut h1, &mut buf)).unwrap(), None);
    assert!(matches!(
        h1.udp().send_to(&s, b"x", "10.0.0.2:8"),
        Err(SocketError::Connected { .. })
    ));

    // Connecting again moves it to another peer.
    h1.udp().connect(&s, "10.0.0.2:8").unwrap();
    h1.udp().send(&s, b"moved").unwrap();
    let (n, _) = deliver(&mut h1, &mut h2, &other, &mut buf);
    assert_eq!(&buf[..n], b"moved");
    // A closed socket cannot connect.
    h1.udp().close(s).unwrap();
    assert!(matches!(
        h1.udp().connect(&s, "10.0.0.2:7"),
        Err(SocketError::Closed)
    ));
}

#[test]
fn peek_leaves_the_datagram_and_truncation_is_reported() {
    let (mut h1, mut h2) = hosts();
    let srv = h2.udp().bind("0.0.0.0:7").unwrap();
    let cli = h1.udp().bind("0.0.0.0:0").unwrap();
    let mut buf = [0u8; 4];
    assert_eq!(ready(srv.peek_from(&h2, &mut buf)).unwrap(), None);
    h1.udp().send_to(&cli, b"0123456789", "10.0.0.2:7").unwrap();
    h1.udp().send_to(&cli, b"next", "10.0.0.2:7").unwrap();
    for _ in 0..5 {
        h1.poll();
        h2.poll();
    }
    // Bound to 0.0.0.0: its datagrams come from the host's address.
    let me = addr(A, h1.udp().local_addr(&cli).unwrap().port());
    // Peeking twice sees the same datagram, truncated to the buffer.
    assert_eq!(ready(srv.peek_from(&h2, &mut buf)).unwrap(), Some((4, me)));
    assert_eq!(ready(srv.peek_from(&h2, &mut buf)).unwrap(), Some((4, me)));
    assert_eq!(&buf, b"0123");
    assert_eq!(h2.udp().pending(&srv), 2);
    // The receive that takes it says it did not fit.
    let got = ready(srv.recv_from_trunc(&mut h2, &mut buf))
        .unwrap()
        .unwrap();
    assert_eq!((got.len, got.datagram_len, got.from), (4, 10, me));
    assert!(got.truncated());
    let got = ready(srv.recv_from_trunc(&mut h2, &mut buf))
        .unwrap()
        .unwrap();
    assert_eq!((got.len, got.datagram_len), (4, 4));
    assert!(!got.truncated(), "a datagram that just fits is whole");
    assert_eq!(&buf, b"next");
}

#[test]
fn the_socket_ttl_is_in_the_ip_header_on_the_wire() {
    let (mut h1, mut h2, sent) = recorded_hosts();
    let srv = h2.udp().bind("0.0.0.0:7").unwrap();
    let s = h1.udp().bind("0.0.0.0:0").unwrap();
    assert_eq!(h1.udp().ttl(&s).unwrap(), 64);
    let mut buf = [0u8; 8];
    h1.udp().send_to(&s, b"default", "10.0.0.2:7").unwrap();
    deliver(&mut h1, &mut h2, &srv, &mut buf);
    h1.udp().set_ttl(&s, 3).unwrap();
    assert_eq!(h1.udp().ttl(&s).unwrap(), 3);
    h1.udp().send_to(&s, b"three", "10.0.0.2:7").unwrap();
    deliver(&mut h1, &mut h2, &srv, &mut buf);
    for bad in [0, 256] {
        let e = h1.udp().set_ttl(&s, bad).unwrap_err();
        assert!(matches!(e, SocketError::BadTtl(t) if t == bad));
        assert_eq!(kind(e), ErrorKind::InvalidInput);
    }
    // The UDP datagrams in the recording (EtherType IPv4, protocol 17):
    // the TTL is byte 8 of the IP header, after 14 bytes of Ethernet.
    let ttls: Vec<u8> = sent
        .frames()
        .iter()
        .filter(|f| f[12..14] == [0x08, 0x00] && f[14 + 9] == 17)
        .map(|f| f[14 + 8])
        .collect();
    assert_eq!(ttls, [64, 3]);
}

#[test]
fn broadcast_needs_the_option_as_on_linux() {
    let (mut h1, mut h2) = hosts();
    let srv = h2.udp().bind("0.0.0.0:7").unwrap();
    let s = h1.udp().bind("0.0.0.0:0").unwrap();
    assert!(!h1.udp().broadcast(&s).unwrap());
    for dst in ["255.255.255.255:7", "10.0.0.255:7"] {
        let e = h1.udp().send_to(&s, b"all", dst).unwrap_err();
        assert!(matches!(e, SocketError::Broadcast(_)), "{dst}: {e:?}");
        assert!(e.to_string().contains("set_broadcast(true)"), "{e}");
        assert_eq!(kind(e), ErrorKind::PermissionDenied);
    }
    let c = h1.udp().bind("0.0.0.0:0").unwrap();
    assert_eq!(
        kind(h1.udp().connect(&c, "255.255.255.255:7").unwrap_err()),
        ErrorKind::PermissionDenied
    );
    // With the option the limited broadcast goes out and arrives.
    h1.udp().set_broadcast(&s, true).unwrap();
    assert!(h1.udp().broadcast(&s).unwrap());
    h1.udp().send_to(&s, b"all", "255.255.255.255:7").unwrap();
    let mut buf = [0u8; 8];
    let (n, from) = deliver(&mut h1, &mut h2, &srv, &mut buf);
    assert_eq!(&buf[..n], b"all");
    assert_eq!(from, addr(A, h1.udp().local_addr(&s).unwrap().port()));
}

#[test]
fn a_blocking_receive_times_out_or_returns_what_arrives() {
    let (mut h1, mut h2) = hosts();
    let srv = h2.udp().bind("0.0.0.0:7").unwrap();
    let mut buf = [0u8; 8];
    let t0 = Instant::now();
    let e = h2
        .udp()
        .recv_from_timeout(&srv, &mut buf, Duration::from_millis(30))
        .unwrap_err();
    assert!(t0.elapsed() >= Duration::from_millis(30));
    assert!(matches!(e, SocketError::TimedOut));
    assert_eq!(kind(e), ErrorKind::TimedOut);

    // A datagram sent from another thread after 20 ms is returned.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sender = std::thread::spawn({
        let done = std::sync::Arc::clone(&done);
        move || {
            let s = h1.udp().bind("0.0.0.0:9").unwrap();
            std::thread::sleep(Duration::from_millis(20));
            h1.udp().send_to(&s, b"late", "10.0.0.2:7").unwrap();
            // Keep answering ARP until the receiver has it.
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                h1.poll();
                h1.wait(Duration::from_millis(5)).unwrap();
            }
        }
    });
    let got = h2
        .udp()
        .recv_from_timeout(&srv, &mut buf, Duration::from_secs(5));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    sender.join().unwrap();
    let (n, from) = got.unwrap();
    assert_eq!((&buf[..n], from), (&b"late"[..], addr(A, 9)));
    // recv_timeout is for connected sockets only.
    assert!(matches!(
        h2.udp().recv_timeout(&srv, &mut buf, Duration::ZERO),
        Err(SocketError::NotConnected)
    ));
}

#[test]
fn host_wait_wakes_when_a_frame_arrives_on_the_wire() {
    let (mut h1, mut h2) = hosts();
    // Its start-up work done (the ARP announcement), h2 has nothing to do.
    h2.poll();
    h1.poll();
    while h2.poll() > 0 {}
    // Pings leave h1 at once: ARP's request is a broadcast frame.
    // The waiter reports the instant it woke, and the frame's send instant
    // is taken just before the ping: comparing the two instants (rather
    // than a sleep length measured inside a thread that may start late)
    // says whether the wait ended because of the frame.
    let waiter = std::thread::spawn(move || {
        h2.wait(Duration::from_secs(1)).unwrap();
        Instant::now()
    });
    std::thread::sleep(Duration::from_millis(20));
    let sent = Instant::now();
    h1.ping(B, 1, b"wake up").unwrap();
    let woke = waiter.join().unwrap();
    assert!(
        woke >= sent,
        "Host::wait returned {:?} before the frame was sent",
        sent - woke
    );
    let after = woke - sent;
    assert!(
        after < Duration::from_millis(500),
        "Host::wait woke {after:?} after the frame: it did not wake on it"
    );
}

#[test]
fn host_config_parses_with_from_str() {
    let cfg: HostConfig = "10.0.0.1/24".parse().unwrap();
    assert_eq!(cfg, HostConfig::parse("10.0.0.1/24").unwrap());
    assert!("10.0.0.1".parse::<HostConfig>().is_err());
}
