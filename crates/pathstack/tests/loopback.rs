//! A host reaches itself (issue 27, problem 3): UDP and TCP to its own
//! address and to 127.0.0.0/8 turn around inside IP — no frame reaches
//! the device — and ping to itself is answered.

use pathstack::core::device::wire::{wire_pair, WireConfig, WireEnd};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::tcp::State;
use pathstack::socket::ready;
use std::net::{Ipv4Addr, SocketAddr};

const US: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

/// A host whose wire nobody listens on, and that wire's far end.
fn alone() -> (Host, WireEnd) {
    let (a, b) = wire_pair(WireConfig::default());
    (
        Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap(),
        b,
    )
}

/// The IPv4 frames the host put on its wire (ARP's announcements aside).
fn ipv4_frames(h: &Host, wire: &mut WireEnd) -> usize {
    use pathstack::core::Device as _;
    let mut n = 0;
    while let Some(f) = wire.receive(h.stack().pool(), h.now()).unwrap() {
        n += usize::from(f.as_slice().get(12..14) == Some(&[0x08, 0x00][..]));
    }
    n
}

#[test]
fn udp_to_itself_and_to_localhost() {
    let (mut h, mut wire) = alone();
    let server = h.udp().bind("0.0.0.0:7").unwrap();
    // (Not 127.1.2.3: a server bound to 0.0.0.0 answers from 127.0.0.1,
    // which a socket connected to 127.1.2.3 does not take, as on Linux.)
    for to in [US, Ipv4Addr::LOCALHOST] {
        let client = h.udp().bind_connected("0.0.0.0:0", (to, 7)).unwrap();
        h.udp().send(&client, b"hello me").unwrap();
        h.poll();
        let mut buf = [0u8; 64];
        let (n, from) = server.recv_from(&mut h, &mut buf).expect("no datagram");
        assert_eq!(&buf[..n], b"hello me");
        // From the address the client sent to (127.0.0.1 for 127/8).
        let want = if to.is_loopback() {
            Ipv4Addr::LOCALHOST
        } else {
            US
        };
        assert_eq!(from.ip(), std::net::IpAddr::V4(want), "to {to}");
        h.udp().send_to(&server, b"hello you", from).unwrap();
        h.poll();
        let n = client
            .recv(&mut h, &mut buf)
            .unwrap_or_else(|e| panic!("no reply to {to} ({e}): {}", h.report()));
        assert_eq!(&buf[..n], b"hello you", "to {to}");
    }
    assert_eq!(
        ipv4_frames(&h, &mut wire),
        0,
        "a looped datagram reached the device"
    );
    assert!(h.report().contains("looped_back=4"), "{}", h.report());
}

#[test]
fn tcp_to_itself_and_to_localhost() {
    let (mut h, mut wire) = alone();
    let l = h.tcp().listen("0.0.0.0:80", 8).unwrap();
    // A connection accepted on 127.1.2.3 answers from it.
    for to in [US, Ipv4Addr::LOCALHOST, Ipv4Addr::new(127, 1, 2, 3)] {
        let c = h.tcp().connect((to, 80)).unwrap();
        let mut accepted = None;
        for _ in 0..100 {
            h.poll();
            if accepted.is_none() {
                accepted = ready(l.accept(&mut h)).unwrap();
            }
            if accepted.is_some() && h.tcp().is_connected(&c).unwrap() {
                break;
            }
        }
        let (s, peer) = accepted.unwrap_or_else(|| panic!("not accepted to {to}: {}", h.report()));
        assert!(h.tcp().is_connected(&c).unwrap(), "to {to}");
        // The client's address: 127.0.0.1 on the loopback network.
        let client = if to.is_loopback() {
            Ipv4Addr::LOCALHOST
        } else {
            US
        };
        assert_eq!(peer.ip(), std::net::IpAddr::V4(client), "to {to}");
        assert_eq!(
            h.tcp().peer_addr(&c).unwrap(),
            SocketAddr::from((to, 80)),
            "to {to}"
        );
        let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        let (mut sent, mut got) = (0, Vec::new());
        let mut buf = vec![0u8; 8192];
        for _ in 0..10_000 {
            if sent < data.len() {
                sent += ready(c.write(&mut h, &data[sent..])).unwrap().unwrap_or(0);
            }
            h.poll();
            while let Some(n) = ready(s.read(&mut h, &mut buf)).unwrap() {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            if got.len() == data.len() {
                break;
            }
        }
        assert!(
            got == data,
            "to {to}: {} of {} bytes",
            got.len(),
            data.len()
        );
        h.tcp().close(c).unwrap();
        h.tcp().close(s).unwrap();
        for _ in 0..20 {
            h.poll();
        }
        assert_ne!(h.tcp().state(&s).ok(), Some(State::Established));
    }
    assert_eq!(
        ipv4_frames(&h, &mut wire),
        0,
        "a looped segment reached the device"
    );
}

#[test]
fn ping_to_itself_is_answered() {
    let (mut h, mut wire) = alone();
    for (seq, to) in [(1, US), (2, Ipv4Addr::LOCALHOST)] {
        h.ping(to, seq, b"are you there").unwrap();
        h.poll();
        let replies = h.echo_replies();
        assert_eq!(replies.len(), 1, "ping {to}");
        // An echo reply (type 0) with our sequence number (RFC 792).
        let r = replies[0].as_slice();
        assert_eq!((r[0], u16::from_be_bytes([r[6], r[7]])), (0, seq), "{r:?}");
    }
    assert_eq!(ipv4_frames(&h, &mut wire), 0);
}

/// A socket connected to 127.0.0.1 says so: its own address is on the
/// loopback network, as `getsockname` says on Linux.
#[test]
fn a_socket_connected_to_localhost_is_on_the_loopback_network() {
    let (mut h, _wire) = alone();
    let u = h.udp().bind_connected("0.0.0.0:0", "127.0.0.1:9").unwrap();
    assert_eq!(
        h.udp().local_addr(&u).unwrap().ip(),
        std::net::IpAddr::V4(Ipv4Addr::LOCALHOST)
    );
    let u = h.udp().bind_connected("0.0.0.0:0", (US, 9)).unwrap();
    assert_eq!(
        h.udp().local_addr(&u).unwrap().ip(),
        std::net::IpAddr::V4(US)
    );
    let _l = h.tcp().listen("0.0.0.0:80", 1).unwrap();
    let c = h.tcp().connect("127.0.0.1:80").unwrap();
    assert_eq!(
        h.tcp().local_addr(&c).unwrap().ip(),
        std::net::IpAddr::V4(Ipv4Addr::LOCALHOST)
    );
}

/// A UDP socket and a TCP listener bound *to* a loopback address (issue
/// 27, problem 9): Linux lets a socket bind any of 127.0.0.0/8, and
/// traffic to it turns around in IP. Before, the bind failed with
/// `AddrNotAvailable`.
#[test]
fn sockets_bound_to_a_loopback_address_are_served() {
    let (mut h, mut wire) = alone();
    // UDP: bound to 127.0.0.1, it says so and hears a client of localhost.
    let server = h.udp().bind("127.0.0.1:7").unwrap();
    assert_eq!(
        h.udp().local_addr(&server).unwrap(),
        SocketAddr::from((Ipv4Addr::LOCALHOST, 7))
    );
    let client = h.udp().bind_connected("0.0.0.0:0", "127.0.0.1:7").unwrap();
    h.udp().send(&client, b"to lo").unwrap();
    h.poll();
    let mut buf = [0u8; 64];
    let (n, from) = server
        .recv_from(&mut h, &mut buf)
        .expect("no datagram on the socket bound to 127.0.0.1");
    assert_eq!(&buf[..n], b"to lo");
    h.udp().send_to(&server, b"from lo", from).unwrap();
    h.poll();
    let n = ready(client.recv(&mut h, &mut buf))
        .unwrap()
        .expect("no reply");
    assert_eq!(&buf[..n], b"from lo");
    // Another address of 127/8 binds too, as on Linux.
    h.udp().bind("127.1.2.3:8").unwrap();

    // TCP: a listener bound to 127.0.0.1 accepts a connection to it.
    let l = h.tcp().listen("127.0.0.1:80", 4).unwrap();
    assert_eq!(
        h.tcp().listener_addr(&l).unwrap(),
        SocketAddr::from((Ipv4Addr::LOCALHOST, 80))
    );
    let c = h.tcp().connect("127.0.0.1:80").unwrap();
    let mut accepted = None;
    for _ in 0..100 {
        h.poll();
        if accepted.is_none() {
            accepted = ready(l.accept(&mut h)).unwrap();
        }
        if accepted.is_some() && h.tcp().is_connected(&c).unwrap() {
            break;
        }
    }
    let (s, _) = accepted.expect("not accepted on 127.0.0.1");
    assert_eq!(
        h.tcp().local_addr(&s).unwrap(),
        SocketAddr::from((Ipv4Addr::LOCALHOST, 80))
    );
    assert_eq!(ready(c.write(&mut h, b"ping")).unwrap(), Some(4));
    h.poll();
    let n = ready(s.read(&mut h, &mut buf)).unwrap().expect("no data");
    assert_eq!(&buf[..n], b"ping");
    // An address that is neither the host's nor loopback is still refused.
    let e = h.udp().bind("10.0.0.9:9").unwrap_err();
    assert_eq!(
        std::io::Error::from(e).kind(),
        std::io::ErrorKind::AddrNotAvailable
    );
    assert_eq!(ipv4_frames(&h, &mut wire), 0);
}
