//! Two Internet hosts over the in-memory wire: ARP resolution, ping of
//! every size up to the reassembly limit (fragmentation and reassembly both
//! ways), ICMP errors for unclaimed datagrams.

mod common;

use common::*;
use pathstack_inet::modules::{ArpModule, IpModule};
use pathstack_inet::wire::icmp::types;

fn assert_echo(reply: &[u8], seq: u16, data: &[u8]) {
    assert_eq!(reply[0], types::ECHO_REPLY, "type");
    assert_eq!(u16::from_be_bytes([reply[6], reply[7]]), seq, "sequence");
    assert_eq!(&reply[8..], data, "echoed data");
    assert!(
        pathstack_inet::wire::checksum::verify(&[reply]),
        "reply checksum verifies"
    );
}

#[test]
fn ping_resolves_then_answers() {
    let mut net = Net::with_mtu(1500);
    // The announcements go out at start; let them land.
    net.run(2);
    net.a.ping(B_IP, 1, b"hello");
    net.run(5);
    let r = net.a.replies();
    assert_eq!(r.len(), 1, "one reply");
    assert_echo(r[0].as_slice(), 1, b"hello");
    let arp = net.a.stack.module_id("arp").unwrap();
    let arp = net.a.stack.module::<ArpModule>(arp).unwrap();
    assert_eq!(
        arp.cache().lookup(B_IP, net.now),
        Some(B_MAC),
        "A learned B from the announcement or the reply"
    );
    // 100 more, each answered, nothing parked.
    let mut r = Vec::new();
    for seq in 2..102u16 {
        net.a.ping(B_IP, seq, &seq.to_be_bytes());
        net.run(1);
        r.extend(net.a.replies());
    }
    net.run(3);
    r.extend(net.a.replies());
    assert_eq!(r.len(), 100);
    for (i, m) in r.iter().enumerate() {
        let seq = i as u16 + 2;
        assert_echo(m.as_slice(), seq, &seq.to_be_bytes());
    }
}

#[test]
fn unannounced_peer_is_resolved_by_request() {
    let mut net = Net::with_mtu(1500);
    // Ping before any announcement has been processed: A must park the
    // request and ask.
    net.a.ping(B_IP, 9, b"x");
    net.run(6);
    let r = net.a.replies();
    assert_eq!(r.len(), 1);
    assert_echo(r[0].as_slice(), 9, b"x");
}

#[test]
fn large_pings_fragment_and_reassemble_both_ways() {
    for (mtu, size) in [
        (1500u16, 4_000usize),
        (1500, 60_000),
        (576, 9_000),
        (1500, 65_507),
    ] {
        let mut net = Net::with_mtu(mtu);
        net.run(2);
        let data: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
        net.a.ping(B_IP, 3, &data);
        net.run(10);
        let r = net.a.replies();
        assert_eq!(
            r.len(),
            1,
            "mtu {mtu} size {size}\nA:\n{}B:\n{}",
            net.a.report(),
            net.b.report()
        );
        assert_echo(r[0].as_slice(), 3, &data);
        for h in [&net.a, &net.b] {
            let ip = h.stack.module_id("ip").unwrap();
            let ip = h.stack.module::<IpModule>(ip).unwrap();
            assert_eq!(ip.counters().fragmented, 1, "each side fragmented once");
            assert_eq!(ip.counters().reassembled, 1, "each side reassembled once");
            assert_eq!(ip.reassembler().bytes_buffered(), 0, "nothing left held");
        }
    }
}

#[test]
fn unclaimed_protocols_and_ports_get_unreachable() {
    let mut net = Net::with_mtu(1500);
    net.run(2);
    // Frames from A's addresses to B for UDP port 7 (no UDP module, so
    // no path) and for protocol 99, delivered to B's driver directly.
    let frame = |proto: u8| {
        let b = etherparse::PacketBuilder::ethernet2(A_MAC.0, B_MAC.0).ipv4(
            A_IP.octets(),
            B_IP.octets(),
            64,
        );
        let mut v = Vec::new();
        match proto {
            17 => b.udp(9, 7).write(&mut v, b"abcd").unwrap(),
            p => b
                .write(&mut v, etherparse::IpNumber(p), b"abcdefgh")
                .unwrap(),
        }
        v
    };
    for (proto, code, reason) in [(17u8, 3u8, "udp.no_port"), (99, 2, "ipv4.no_protocol")] {
        let m = net.b.stack.pool().alloc_copy(&frame(proto)).unwrap();
        let wire = net.b.stack.module_id("dev").unwrap();
        net.b.stack.inject(wire, m);
        net.run(4);
        let r = net.a.replies();
        assert_eq!(r.len(), 1, "one ICMP error for protocol {proto}");
        let e = r[0].as_slice();
        assert_eq!((e[0], e[1]), (types::DEST_UNREACHABLE, code));
        assert_eq!(e[8 + 9], proto, "quotes the offending header");
        assert_eq!(net.b.drops(reason), 1, "{reason}");
    }
}
