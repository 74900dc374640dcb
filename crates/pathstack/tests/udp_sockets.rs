//! The synchronous UDP socket API between two hosts over the in-memory
//! wire: round trips with peer addresses, ephemeral ports, errors, close,
//! and datagrams that IP fragments.

use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::host::{Host, HostConfig};
use pathstack::socket::ready;
use pathstack::socket::{SocketError, UdpSocket, MAX_DATAGRAM};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

fn addr(ip: Ipv4Addr, port: u16) -> SocketAddr {
    SocketAddrV4::new(ip, port).into()
}

struct Net {
    a: Host,
    b: Host,
}

impl Net {
    fn new() -> Net {
        let (da, db) = wire_pair(WireConfig::default());
        Net {
            a: Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), da).unwrap(),
            b: Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), db).unwrap(),
        }
    }

    fn run(&mut self, rounds: usize) {
        for _ in 0..rounds {
            self.a.poll();
            self.b.poll();
        }
    }
}

/// Polls both hosts until `s` on `h` (a or b) has a datagram, at most 50 rounds.
fn recv(net: &mut Net, on_b: bool, s: &UdpSocket, buf: &mut [u8]) -> (usize, SocketAddr) {
    for _ in 0..50 {
        net.run(1);
        let h = if on_b { &mut net.b } else { &mut net.a };
        if let Some(got) = ready(s.recv_from(h, buf)).unwrap() {
            return got;
        }
    }
    let h = if on_b { &net.b } else { &net.a };
    panic!("nothing received on {:?}\n{}", s, h.report());
}

#[test]
fn bound_sockets_round_trip_with_peer_addresses() {
    let mut net = Net::new();
    let srv = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    // As getsockname: the address it was bound to.
    assert_eq!(
        net.b.udp().local_addr(&srv).unwrap(),
        addr(Ipv4Addr::UNSPECIFIED, 7)
    );
    assert!(matches!(
        net.b.udp().peer_addr(&srv),
        Err(SocketError::NotConnected)
    ));
    let cli = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 4000)).unwrap();
    let mut buf = [0u8; 256];
    for i in 0..20u32 {
        let msg = format!("ping {i}");
        net.a
            .udp()
            .send_to(&cli, msg.as_bytes(), addr(B, 7))
            .unwrap();
        let (n, from) = recv(&mut net, true, &srv, &mut buf);
        assert_eq!(&buf[..n], msg.as_bytes());
        assert_eq!(from, addr(A, 4000));
        let reply = format!("pong {i}");
        net.b.udp().send_to(&srv, reply.as_bytes(), from).unwrap();
        let (n, from) = recv(&mut net, false, &cli, &mut buf);
        assert_eq!(&buf[..n], reply.as_bytes());
        assert_eq!(from, addr(B, 7));
    }
}

#[test]
fn connected_socket_talks_to_its_peer_only() {
    let mut net = Net::new();
    let srv = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    let other = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 8)).unwrap();
    let cli = net
        .a
        .udp()
        .bind_connected((Ipv4Addr::UNSPECIFIED, 0), addr(B, 7))
        .unwrap();
    assert_eq!(net.a.udp().peer_addr(&cli).unwrap(), addr(B, 7));
    let port = net.a.udp().local_addr(&cli).unwrap().port();
    assert!((49152..=65535).contains(&port), "ephemeral port {port}");
    assert_eq!(net.a.udp().local_addr(&cli).unwrap().ip(), A);

    net.a.udp().send(&cli, b"hello").unwrap();
    let mut buf = [0u8; 64];
    let (n, from) = recv(&mut net, true, &srv, &mut buf);
    assert_eq!(&buf[..n], b"hello");
    assert_eq!(from, net.a.udp().local_addr(&cli).unwrap());

    // A datagram from another port of the peer host is not for `cli`.
    net.b.udp().send_to(&other, b"stranger", from).unwrap();
    net.b.udp().send_to(&srv, b"answer", from).unwrap();
    net.run(5);
    assert_eq!(ready(cli.recv(&mut net.a, &mut buf)).unwrap(), Some(6));
    assert_eq!(&buf[..6], b"answer");
    assert_eq!(ready(cli.recv(&mut net.a, &mut buf)).unwrap(), None);

    // The connected socket refuses other destinations and the bound one
    // has no `send`.
    assert!(matches!(
        net.a.udp().send_to(&cli, b"x", addr(B, 8)),
        Err(SocketError::Connected { .. })
    ));
    net.a.udp().send_to(&cli, b"x", addr(B, 7)).unwrap();
    assert!(matches!(
        net.b.udp().send(&srv, b"x"),
        Err(SocketError::NotConnected)
    ));
    assert!(matches!(
        srv.recv(&mut net.b, &mut buf).map_err(socket_error),
        Err(SocketError::NotConnected)
    ));
}

#[test]
fn ephemeral_ports_are_distinct() {
    let mut net = Net::new();
    let s1 = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let s2 = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let (p1, p2) = (
        net.a.udp().local_addr(&s1).unwrap().port(),
        net.a.udp().local_addr(&s2).unwrap().port(),
    );
    assert_ne!(p1, p2);
    assert!((49152..=65535).contains(&p1) && (49152..=65535).contains(&p2));
    // The port really is the one datagrams carry.
    let srv = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 9)).unwrap();
    net.a.udp().send_to(&s2, b"x", addr(B, 9)).unwrap();
    let mut buf = [0u8; 8];
    let (_, from) = recv(&mut net, true, &srv, &mut buf);
    assert_eq!(from.port(), p2);
    // An ephemeral port is taken: binding it explicitly fails.
    assert!(
        matches!(net.a.udp().bind((Ipv4Addr::UNSPECIFIED, p1)), Err(SocketError::PortInUse { port, .. }) if port == p1)
    );
}

#[test]
fn port_in_use_and_close_frees_it() {
    let mut net = Net::new();
    let s = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    let err = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap_err();
    assert!(
        matches!(err, SocketError::PortInUse { port: 7, .. }),
        "{err}"
    );
    assert_eq!(err.to_string(), "UDP port 7 is already bound");
    assert_eq!(
        std::io::Error::from(err).kind(),
        std::io::ErrorKind::AddrInUse
    );

    // A datagram queued on the socket is freed with it.
    let cli = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    net.a.udp().send_to(&cli, b"late", addr(B, 7)).unwrap();
    net.run(5);
    assert_eq!(net.b.udp().pending(&s), 1);
    net.b.udp().close(s).unwrap();
    assert_eq!(net.b.udp().pending(&s), 0);

    // The old handle is stale everywhere.
    let mut buf = [0u8; 8];
    assert!(matches!(
        s.recv_from(&mut net.b, &mut buf).map_err(socket_error),
        Err(SocketError::Closed)
    ));
    assert!(matches!(
        net.b.udp().send_to(&s, b"x", addr(A, 1)),
        Err(SocketError::Closed)
    ));
    assert!(matches!(net.b.udp().close(s), Err(SocketError::Closed)));

    // The port is free again, and the new socket gets new datagrams only.
    let s2 = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    assert_ne!(s2, s);
    assert_eq!(ready(s2.recv_from(&mut net.b, &mut buf)).unwrap(), None);
    net.a.udp().send_to(&cli, b"new", addr(B, 7)).unwrap();
    let (n, _) = recv(&mut net, true, &s2, &mut buf);
    assert_eq!(&buf[..n], b"new");
}

#[test]
fn closed_port_is_unreachable_again() {
    let mut net = Net::new();
    let s = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    net.b.udp().close(s).unwrap();
    let cli = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    net.a.udp().send_to(&cli, b"x", addr(B, 7)).unwrap();
    net.run(5);
    // ICMP port unreachable came back (RFC 1122 §4.1.3.1).
    let replies = net.a.echo_replies();
    assert_eq!(replies.len(), 1, "{}", net.a.report());
}

#[test]
fn recv_on_empty_socket_would_block() {
    let mut net = Net::new();
    let s = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 5000)).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(ready(s.recv_from(&mut net.a, &mut buf)).unwrap(), None);
    net.run(3);
    assert_eq!(ready(s.recv_from(&mut net.a, &mut buf)).unwrap(), None);
    assert_eq!(net.a.udp().pending(&s), 0);
}

#[test]
fn short_buffer_truncates_the_datagram() {
    let mut net = Net::new();
    let srv = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    let cli = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    net.a
        .udp()
        .send_to(&cli, b"0123456789", addr(B, 7))
        .unwrap();
    net.a.udp().send_to(&cli, b"next", addr(B, 7)).unwrap();
    let mut small = [0u8; 4];
    let (n, _) = recv(&mut net, true, &srv, &mut small);
    assert_eq!((n, &small), (4, b"0123"));
    // The rest of the first datagram is gone; the next one is whole.
    let (n, _) = recv(&mut net, true, &srv, &mut small);
    assert_eq!(&small[..n], b"next");
}

#[test]
fn bad_sends_are_refused_with_a_reason() {
    let mut net = Net::new();
    let s = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let big = vec![0u8; MAX_DATAGRAM + 1];
    let e = net.a.udp().send_to(&s, &big, addr(B, 7)).unwrap_err();
    assert!(
        matches!(e, SocketError::MessageTooLong { len, max: MAX_DATAGRAM } if len == MAX_DATAGRAM + 1)
    );
    assert!(matches!(
        net.a.udp().send_to(&s, b"x", addr(B, 0)),
        Err(SocketError::BadAddress(..))
    ));
    assert!(matches!(
        net.a
            .udp()
            .bind_connected((Ipv4Addr::UNSPECIFIED, 0), addr(Ipv4Addr::UNSPECIFIED, 7)),
        Err(SocketError::BadAddress(..))
    ));
}

#[test]
fn sends_run_at_once_and_arp_bounds_what_waits() {
    // A send on an idle path runs to the device in the same call; while
    // the peer's address is being resolved, ARP keeps a bounded number of
    // datagrams per address, the latest ones (RFC 1122 §2.3.2.2).
    let mut net = Net::new();
    let srv = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    let s = net.a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let dst = addr(B, 7);
    for i in 0..1000u32 {
        net.a.udp().send_to(&s, &i.to_be_bytes(), dst).unwrap();
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 16];
    for _ in 0..20 {
        net.run(1);
        while let Some((n, _)) = ready(srv.recv_from(&mut net.b, &mut buf)).unwrap() {
            got.push(u32::from_be_bytes(buf[..n].try_into().unwrap()));
        }
    }
    assert!(!got.is_empty() && got.len() < 1000, "{} arrived", got.len());
    let first = 1000 - got.len() as u32;
    assert_eq!(got, (first..1000).collect::<Vec<_>>());
    // Resolved: now every datagram goes straight through.
    for i in 0..100u32 {
        net.a.udp().send_to(&s, &i.to_be_bytes(), dst).unwrap();
    }
    net.run(1);
    let mut n = 0;
    while ready(srv.recv_from(&mut net.b, &mut buf))
        .unwrap()
        .is_some()
    {
        n += 1;
    }
    assert_eq!(
        n, 64,
        "the socket's receive queue holds 64 (StackConfig::queue_len)"
    );
}

#[test]
fn host_without_udp_has_no_sockets() {
    let (da, _db) = wire_pair(WireConfig::default());
    let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
    cfg.udp = false;
    let mut h = Host::new(cfg, da).unwrap();
    assert!(matches!(
        h.udp().bind((Ipv4Addr::UNSPECIFIED, 7)),
        Err(SocketError::NoUdp)
    ));
}

#[test]
fn fragmented_datagrams_reach_sockets_both_ways() {
    let mut net = Net::new();
    let srv = net.b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    let cli = net
        .a
        .udp()
        .bind_connected((Ipv4Addr::UNSPECIFIED, 0), addr(B, 7))
        .unwrap();
    // 1473 bytes is the smallest payload that IP fragments on a 1500-byte
    // MTU; 8000 needs six fragments.
    for len in [1472usize, 1473, 8000] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        net.a.udp().send(&cli, &data).unwrap();
        let mut buf = vec![0u8; 9000];
        let (n, from) = recv(&mut net, true, &srv, &mut buf);
        assert_eq!(n, len, "{}", net.b.report());
        assert_eq!(&buf[..n], &data[..]);
        net.b.udp().send_to(&srv, &data, from).unwrap();
        let (n, _) = recv(&mut net, false, &cli, &mut buf);
        assert_eq!(&buf[..n], &data[..]);
    }
}

#[test]
fn sockets_work_on_a_host_from_a_graph_file() {
    let (da, db) = wire_pair(WireConfig::default());
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../graphs/host.graph");
    let mut a = Host::from_graph_file(file, da).unwrap();
    assert_eq!(a.addr(), Some(A));
    let mut b = Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), db).unwrap();
    let sa = a.udp().bind((Ipv4Addr::UNSPECIFIED, 1234)).unwrap();
    let sb = b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    a.udp().send_to(&sa, b"from a file", addr(B, 7)).unwrap();
    let mut buf = [0u8; 32];
    let mut got = None;
    for _ in 0..20 {
        a.poll();
        b.poll();
        if let Some(g) = ready(sb.recv_from(&mut b, &mut buf)).unwrap() {
            got = Some(g);
            break;
        }
    }
    let (n, from) = got.expect("datagram from the graph-file host");
    assert_eq!(&buf[..n], b"from a file");
    assert_eq!(from, addr(A, 1234));

    let missing = Host::from_graph_file("/nonexistent.graph", wire_pair(WireConfig::default()).0);
    assert!(matches!(
        missing,
        Err(pathstack::host::HostError::GraphFile { .. })
    ));
}

#[test]
fn connecting_without_a_route_keeps_ips_reason() {
    use pathstack::inet::modules::IpRefusal;
    let mut net = Net::new();
    let peer = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 9);
    let err = net
        .a
        .udp()
        .bind_connected((Ipv4Addr::UNSPECIFIED, 0), peer)
        .unwrap_err();
    let SocketError::Path(e) = &err else {
        panic!("{err}")
    };
    assert_eq!(
        e.cause::<IpRefusal>(),
        Some(&IpRefusal::NoRoute(*peer.ip()))
    );
}

/// The socket error an `io::Error` of the handles' calls carries.
fn socket_error(e: std::io::Error) -> SocketError {
    *e.into_inner()
        .expect("an error of the socket")
        .downcast()
        .expect("a SocketError")
}
