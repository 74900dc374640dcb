//! UDP between two hosts over the in-memory wire: bound and connected
//! paths, an echo module on top of a path, 10,000 bound sockets, and bad
//! datagrams dropped by reason.

mod common;

use common::*;
use pathstack_core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack_core::attrs::Attrs;
use pathstack_core::{Dir, PathId};
use pathstack_inet::InetAnno;
use std::net::Ipv4Addr;

const UDP: (&str, &str) = ("name=udp module=UDP;", "udp.down<>ip.up;");

fn bound(h: &mut Host, port: u16) -> PathId {
    let udp = h.stack.module_id("udp").unwrap();
    let attrs = Attrs::new().with(&PASSIVE_OPEN, true).with(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Port(port)],
            remote: vec![],
        },
    );
    h.stack.path_create(udp, attrs).unwrap()
}

fn connected(h: &mut Host, local: u16, peer: Ipv4Addr, port: u16) -> PathId {
    let udp = h.stack.module_id("udp").unwrap();
    let attrs = Attrs::new().with(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Port(local)],
            remote: vec![AddrPart::Ipv4(peer.octets()), AddrPart::Port(port)],
        },
    );
    h.stack.path_create(udp, attrs).unwrap()
}

fn send_to(h: &mut Host, path: PathId, peer: Option<(Ipv4Addr, u16)>, data: &[u8]) {
    let mut m = h.stack.pool().alloc_copy(data).unwrap();
    if let Some((ip, port)) = peer {
        m.anno_mut().set_peer_ip(ip);
        m.anno_mut().set_peer_port(port);
    }
    h.stack.send(path, Dir::Down, m).unwrap();
}

#[test]
fn connected_to_bound_and_back() {
    let mut net = Net::new(1500, &[UDP]);
    net.run(2);
    let flows = net.b.stack.demux().flow_count();
    let server = bound(&mut net.b, 7);
    // A bound socket is a flow while no active path shares its EtherType:
    // its datagrams take one probe too.
    assert_eq!(net.b.stack.demux().flow_count(), flows + 1);
    let flows = net.a.stack.demux().flow_count();
    let client = connected(&mut net.a, 0, B_IP, 7);
    // The connected socket is a flow: its datagrams take one probe.
    assert_eq!(net.a.stack.demux().flow_count(), flows + 1);
    send_to(&mut net.a, client, None, b"ping");
    net.run(4);
    let got = net.b.stack.recv(server, Dir::Up).expect("server got it");
    assert_eq!(got.as_slice(), b"ping");
    let (peer, port) = (
        got.anno().peer_ip().unwrap(),
        got.anno().peer_port().unwrap(),
    );
    assert_eq!(peer, A_IP);
    assert!(
        (49152..=65535).contains(&port),
        "ephemeral source port {port}"
    );
    // Answer to the sender from the bound path.
    send_to(&mut net.b, server, Some((peer, port)), b"pong");
    net.run(4);
    let back = net
        .a
        .stack
        .recv(client, Dir::Up)
        .expect("client got the answer");
    assert_eq!(back.as_slice(), b"pong");
    assert_eq!(back.anno().peer_port(), Some(7));
    net.a.stack.path_delete(client).unwrap();
    assert_eq!(net.a.stack.demux().flow_count(), flows);
}

/// A connected socket on the server's host shares the bound socket's
/// EtherType: both stay in the flow table (the connected one's flow is
/// probed first, and a datagram it does not accept takes the bound one's,
/// as the tree would decide), and the bound socket's datagrams reach it
/// whether the connected socket is there or not.
#[test]
fn a_bound_socket_stays_a_flow_beside_a_connected_one() {
    let mut net = Net::new(1500, &[UDP]);
    net.run(2);
    let before = net.b.stack.demux().flow_count();
    let server = bound(&mut net.b, 7);
    assert_eq!(net.b.stack.demux().flow_count(), before + 1);
    let other = connected(&mut net.b, 9000, A_IP, 9001);
    assert_eq!(
        net.b.stack.demux().flow_count(),
        before + 2,
        "the connected socket is filed beside the bound one"
    );
    let client = connected(&mut net.a, 0, B_IP, 7);
    let exchange = |net: &mut Net, want: &[u8]| {
        send_to(&mut net.a, client, None, want);
        net.run(4);
        let got = net.b.stack.recv(server, Dir::Up).expect("server got it");
        assert_eq!(got.as_slice(), want);
    };
    exchange(&mut net, b"beside the connected socket");
    net.b.stack.path_delete(other).unwrap();
    assert_eq!(net.b.stack.demux().flow_count(), before + 1);
    exchange(&mut net, b"alone");
    assert_eq!(net.b.drops("udp.no_port"), 0);
}

/// A datagram larger than the MTU goes as fragments; IP reassembles it on
/// its own path and must find the socket's path for the whole datagram
/// (bound and connected, both directions, MTU 1500 and 576).
#[test]
fn fragmented_datagrams_reach_their_sockets() {
    for mtu in [1500, 576] {
        let mut net = Net::new(mtu, &[UDP]);
        net.run(2);
        let server = bound(&mut net.b, 7);
        let client = connected(&mut net.a, 0, B_IP, 7);
        for len in [1473usize, 4_000, 20_000, 65_507] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            send_to(&mut net.a, client, None, &data);
            net.run(8);
            let got =
                net.b.stack.recv(server, Dir::Up).unwrap_or_else(|| {
                    panic!("bound socket got the {len}-byte datagram (mtu {mtu})")
                });
            assert_eq!(got.as_slice(), &data[..], "{len} bytes, mtu {mtu}");
            let peer = (
                got.anno().peer_ip().unwrap(),
                got.anno().peer_port().unwrap(),
            );
            drop(got);
            send_to(&mut net.b, server, Some(peer), &data);
            net.run(8);
            let back = net.a.stack.recv(client, Dir::Up).unwrap_or_else(|| {
                panic!("connected socket got the {len}-byte answer (mtu {mtu})")
            });
            assert_eq!(back.as_slice(), &data[..]);
        }
        assert_eq!(net.b.drops("udp.no_port"), 0);
        assert_eq!(net.a.drops("udp.no_port"), 0);
    }
}

#[test]
fn ten_thousand_bound_sockets_each_get_their_own() {
    let mut net = Net::new(1500, &[UDP]);
    net.run(2);
    let base = 20_000u16;
    let n = 10_000u16;
    let paths: Vec<PathId> = (0..n).map(|i| bound(&mut net.b, base + i)).collect();
    let client = bound(&mut net.a, 4444);
    // In batches of 32 (the wire and the pools are bounded), each socket
    // must hold exactly its own datagram.
    for batch in (0..n).collect::<Vec<_>>().chunks(32) {
        for &i in batch {
            send_to(&mut net.a, client, Some((B_IP, base + i)), &i.to_be_bytes());
        }
        net.run(3);
        for &i in batch {
            let p = paths[usize::from(i)];
            let m = net
                .b
                .stack
                .recv(p, Dir::Up)
                .unwrap_or_else(|| panic!("socket {i} got nothing\n{}", net.b.report()));
            assert_eq!(m.as_slice(), &i.to_be_bytes());
            assert!(net.b.stack.recv(p, Dir::Up).is_none());
        }
    }
}

#[test]
fn bad_datagrams_are_dropped_by_reason() {
    let mut net = Net::new(1500, &[UDP]);
    net.run(2);
    let server = bound(&mut net.b, 7);
    let good = {
        let mut v = Vec::new();
        etherparse::PacketBuilder::ethernet2(A_MAC.0, B_MAC.0)
            .ipv4(A_IP.octets(), B_IP.octets(), 64)
            .udp(1234, 7)
            .write(&mut v, b"hello")
            .unwrap();
        v
    };
    let dev = net.b.stack.module_id("dev").unwrap();
    let inject = |net: &mut Net, f: &[u8]| {
        let m = net.b.stack.pool().alloc_copy(f).unwrap();
        net.b.stack.inject(dev, m);
        net.run(1);
    };
    let mut bad_sum = good.clone();
    let last = bad_sum.len() - 1;
    bad_sum[last] ^= 0x55;
    inject(&mut net, &bad_sum);
    assert_eq!(net.b.drops("udp.bad_checksum"), 1, "{}", net.b.report());
    let mut bad_len = good.clone();
    bad_len[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&200u16.to_be_bytes());
    inject(&mut net, &bad_len);
    assert_eq!(net.b.drops("udp.bad_length"), 1, "{}", net.b.report());
    inject(&mut net, &good);
    assert_eq!(
        net.b.stack.recv(server, Dir::Up).unwrap().as_slice(),
        b"hello"
    );
    // A full receive queue drops and counts (bound: 64 by default).
    for _ in 0..70 {
        inject(&mut net, &good);
    }
    assert_eq!(net.b.drops("path.sink_full"), 6, "{}", net.b.report());
}
