//! The protocol views of a host (issue 27 item 2): `host.udp()`,
//! `host.tcp()` and `host.rpc()` drive a real exchange each between two
//! hosts on the in-memory wire, with `std::net`'s names and no prefixed
//! `Host` method; `Udp::of`/`Tcp::of`/`Rpc::of` answer through a shared
//! borrow.

use pathstack::inet::MacAddr;
use pathstack::rpc::{Rpc, RpcNet};
use pathstack::socket::{Tcp, Udp};
use pathstack::{wire_pair, Host, HostConfig, WireConfig};
use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr};

/// Polls rounds bound every exchange: a few hundred are plenty on the
/// wire (ARP, then the exchange), so a stuck exchange fails instead of
/// spinning.
const ROUNDS: usize = 10_000;

fn pair(rpc: Option<RpcNet>) -> (Host, Host) {
    let (a, b) = wire_pair(WireConfig::default());
    let cfg = |cidr: &str, n: u8| HostConfig {
        rpc,
        mac: Some(MacAddr([2, 0, 0, 0, 0, n])),
        ..HostConfig::parse(cidr).unwrap()
    };
    (
        Host::new(cfg("10.0.0.1/24", 1), a).unwrap(),
        Host::new(cfg("10.0.0.2/24", 2), b).unwrap(),
    )
}

fn poll_both(a: &mut Host, b: &mut Host) {
    a.poll();
    b.poll();
}

#[test]
fn udp_echo_through_the_view() {
    let (mut client, mut server) = pair(None);
    let echo = server.udp().bind("0.0.0.0:7").unwrap();
    let sock = client.udp().bind("0.0.0.0:0").unwrap();
    let local = Udp::of(&client).local_addr(&sock).unwrap();
    assert_ne!(local.port(), 0, "an ephemeral port was picked");
    client.udp().connect(&sock, "10.0.0.2:7").unwrap();
    assert_eq!(
        Udp::of(&client).peer_addr(&sock).unwrap(),
        "10.0.0.2:7".parse::<SocketAddr>().unwrap()
    );
    client.udp().send(&sock, b"hello views").unwrap();

    let mut buf = [0u8; 64];
    // Nothing arrived before a poll: WouldBlock, as a non-blocking std socket.
    let e = server.udp().recv_from(&echo, &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock);
    let mut echoed = false;
    let mut reply = None;
    for _ in 0..ROUNDS {
        poll_both(&mut client, &mut server);
        if let Ok((n, from)) = server.udp().recv_from(&echo, &mut buf) {
            assert_eq!(&buf[..n], b"hello views");
            assert_eq!(from.port(), local.port());
            server.udp().send_to(&echo, &buf[..n], from).unwrap();
            echoed = true;
        }
        if let Ok(n) = client.udp().recv(&sock, &mut buf) {
            reply = Some(buf[..n].to_vec());
            break;
        }
    }
    assert!(echoed);
    assert_eq!(reply.as_deref(), Some(&b"hello views"[..]));
    client.udp().close(sock).unwrap();
    assert!(
        Udp::of(&client).local_addr(&sock).is_err(),
        "a closed handle is stale"
    );
}

#[test]
fn tcp_exchange_through_the_view() {
    let (mut client, mut server) = pair(None);
    let listener = server.tcp().listen("0.0.0.0:80", 4).unwrap();
    assert_eq!(
        Tcp::of(&server).listener_addr(&listener).unwrap().port(),
        80
    );
    let stream = client.tcp().connect("10.0.0.2:80").unwrap();
    client.tcp().set_nodelay(&stream, true).unwrap();
    assert!(Tcp::of(&client).nodelay(&stream).unwrap());

    let mut accepted = None;
    for _ in 0..ROUNDS {
        poll_both(&mut client, &mut server);
        if accepted.is_none() {
            match server.tcp().accept(&listener) {
                Ok((s, peer)) => {
                    assert_eq!(peer, Tcp::of(&client).local_addr(&stream).unwrap());
                    accepted = Some(s);
                }
                Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock),
            }
        }
        if accepted.is_some() && client.tcp().is_connected(&stream).unwrap() {
            break;
        }
    }
    let peer = accepted.expect("the server accepted the connection");
    assert!(client.tcp().is_connected(&stream).unwrap());

    let request = b"GET / over the view";
    assert_eq!(client.tcp().write(&stream, request).unwrap(), request.len());
    client.tcp().shutdown(&stream, Shutdown::Write).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    for _ in 0..ROUNDS {
        poll_both(&mut client, &mut server);
        match server.tcp().read(&peer, &mut buf) {
            Ok(0) => break, // the client's FIN
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => assert_eq!(e.kind(), ErrorKind::WouldBlock),
        }
    }
    assert_eq!(got, request);
    assert!(Tcp::of(&server).stats(&peer).unwrap().segs_in > 0);
    server.tcp().close(peer).unwrap();
    client.tcp().close(stream).unwrap();
    server.tcp().close_listener(listener).unwrap();
}

#[test]
fn rpc_call_through_the_view() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        let (mut client, mut server) = pair(Some(net));
        server
            .rpc()
            .serve_fn(42, |req| req.iter().rev().copied().collect())
            .unwrap();
        let peer = Rpc::of(&server).peer().unwrap();
        let call = client.rpc().start(peer, 42, b"abc").unwrap();
        assert_eq!(Rpc::of(&client).in_flight(), 1);
        let mut reply = None;
        for _ in 0..ROUNDS {
            poll_both(&mut client, &mut server);
            if let Some(m) = client.rpc().poll(&call).unwrap() {
                reply = Some(m.as_slice().to_vec());
                break;
            }
        }
        assert_eq!(reply.as_deref(), Some(&b"cba"[..]), "{net:?}");
        assert_eq!(Rpc::of(&client).in_flight(), 0, "{net:?}");
        assert_eq!(server.rpc().server().unwrap().calls(), 1, "{net:?}");
    }
}
