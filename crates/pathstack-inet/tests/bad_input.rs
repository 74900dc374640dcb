//! Malformed and hostile input to an Internet host: every frame is dropped
//! and counted with a reason, nothing panics, and memory stays within the
//! configured bounds.

mod common;

use common::*;
use pathstack_inet::ip::reassembly::ReassemblyDropReason;
use pathstack_inet::modules::IpModule;
use proptest::prelude::*;

/// A well-formed Ethernet/IPv4 frame from A to B with `proto` and `payload`.
fn frame(proto: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    etherparse::PacketBuilder::ethernet2(A_MAC.0, B_MAC.0)
        .ipv4(A_IP.octets(), B_IP.octets(), 64)
        .write(&mut v, etherparse::IpNumber(proto), payload)
        .unwrap();
    v
}

/// An IPv4 fragment from A to B (header checksum valid).
fn fragment(ident: u16, offset: usize, more: bool, data: &[u8]) -> Vec<u8> {
    let mut ip = etherparse::Ipv4Header::new(
        data.len() as u16,
        64,
        etherparse::IpNumber(1),
        A_IP.octets(),
        B_IP.octets(),
    )
    .unwrap();
    ip.identification = ident;
    ip.more_fragments = more;
    ip.fragment_offset = etherparse::IpFragOffset::try_new((offset / 8) as u16).unwrap();
    ip.header_checksum = ip.calc_header_checksum();
    let mut v = Vec::new();
    etherparse::Ethernet2Header {
        source: A_MAC.0,
        destination: B_MAC.0,
        ether_type: etherparse::EtherType::IPV4,
    }
    .write(&mut v)
    .unwrap();
    ip.write(&mut v).unwrap();
    v.extend_from_slice(data);
    v
}

/// Fixes the IPv4 header checksum of a frame after a test edited the header.
fn fix_checksum(f: &mut [u8]) {
    let ihl = usize::from(f[14] & 0x0f) * 4;
    f[24..26].fill(0);
    let end = (14 + ihl).min(f.len());
    let c = pathstack_inet::wire::checksum::compute(&[&f[14..end]]);
    f[24..26].copy_from_slice(&c);
}

fn inject(net: &mut Net, bytes: &[u8]) {
    let m = net.b.stack.pool().alloc_copy(bytes).unwrap();
    let dev = net.b.stack.module_id("dev").unwrap();
    assert!(net.b.stack.inject(dev, m));
    net.run(1);
}

fn echo_request() -> Vec<u8> {
    let mut icmp = vec![8u8, 0, 0, 0, 0, 1, 0, 1, b'p', b'i', b'n', b'g'];
    let c = pathstack_inet::wire::checksum::compute(&[&icmp]);
    icmp[2..4].copy_from_slice(&c);
    frame(1, &icmp)
}

#[test]
fn each_malformation_is_counted_by_reason() {
    let good = echo_request();
    let cases: Vec<(&str, Vec<u8>, &'static str)> = vec![
        ("runt frame", good[..10].to_vec(), "demux.no_path"),
        (
            "unknown EtherType",
            {
                let mut f = good.clone();
                f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
                f
            },
            "demux.no_path",
        ),
        (
            "bad header checksum",
            {
                let mut f = good.clone();
                f[24] ^= 0xff;
                f
            },
            "ipv4.bad_checksum",
        ),
        (
            "IHL below 5",
            {
                let mut f = good.clone();
                f[14] = 0x43;
                fix_checksum(&mut f);
                f
            },
            "ipv4.bad_header_length",
        ),
        (
            "total length beyond the frame",
            {
                let mut f = good.clone();
                f[16..18].copy_from_slice(&1400u16.to_be_bytes());
                fix_checksum(&mut f);
                f
            },
            "ipv4.total_length_too_large",
        ),
        (
            "total length below the header",
            {
                let mut f = good.clone();
                f[16..18].copy_from_slice(&12u16.to_be_bytes());
                fix_checksum(&mut f);
                f
            },
            "ipv4.total_length_too_small",
        ),
        (
            "truncated IP header",
            good[..14 + 12].to_vec(),
            "ipv4.truncated",
        ),
        (
            "not our address",
            {
                let mut f = good.clone();
                f[30..34].copy_from_slice(&[10, 0, 0, 99]);
                fix_checksum(&mut f);
                f
            },
            "ipv4.not_for_us",
        ),
        (
            "not our MAC",
            {
                let mut f = good.clone();
                f[0..6].copy_from_slice(&[0x02, 9, 9, 9, 9, 9]);
                f
            },
            "eth.not_for_us",
        ),
        (
            "bad ICMP checksum",
            {
                let mut f = good.clone();
                let last = f.len() - 1;
                f[last] ^= 1;
                f
            },
            "icmp.bad_checksum",
        ),
        (
            "truncated ARP",
            {
                let mut f = good[..14].to_vec();
                f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
                f.extend_from_slice(&[0, 1, 8, 0, 6, 4]);
                f
            },
            "arp.truncated",
        ),
        ("unknown protocol", frame(143, b"zzzz"), "ipv4.no_protocol"),
    ];
    let mut net = Net::with_mtu(1500);
    net.run(2);
    for (what, bytes, reason) in cases {
        let before = net.b.drops(reason);
        inject(&mut net, &bytes);
        assert_eq!(
            net.b.drops(reason),
            before + 1,
            "{what}: expected one more `{reason}`\n{}",
            net.b.report()
        );
    }
    // The host still works.
    net.run(2);
    net.a.replies();
    net.a.ping(B_IP, 1, b"still alive");
    net.run(4);
    assert_eq!(net.a.replies().len(), 1);
}

#[test]
fn overlapping_fragments_discard_the_datagram() {
    let mut net = Net::with_mtu(1500);
    net.run(2);
    // RFC 5722 policy: an overlap discards the whole datagram, and later
    // fragments of it are dropped until its timer runs out.
    inject(&mut net, &fragment(7, 0, true, &[1u8; 16]));
    inject(&mut net, &fragment(7, 8, true, &[2u8; 16]));
    inject(&mut net, &fragment(7, 24, false, &[3u8; 8]));
    assert_eq!(net.b.drops("reassembly.overlap"), 1, "{}", net.b.report());
    assert_eq!(net.b.drops("reassembly.poisoned"), 1, "{}", net.b.report());
    assert!(net.a.replies().is_empty(), "nothing was answered");
}

#[test]
fn fragment_flood_stays_within_bounds() {
    let mut net = Net::with_mtu(1500);
    net.run(2);
    let live_before = net.b.stack.pool().stats().live;
    // 2,000 first fragments of distinct datagrams, 1,400 bytes each.
    for ident in 0..2_000u16 {
        let m = net
            .b
            .stack
            .pool()
            .alloc_copy(&fragment(ident, 0, true, &[0xab; 1400]))
            .unwrap();
        let dev = net.b.stack.module_id("dev").unwrap();
        net.b.stack.inject(dev, m);
        if ident % 32 == 0 {
            net.run(1);
        }
    }
    net.run(2);
    let ip = net.b.stack.module_id("ip").unwrap();
    let ip = net.b.stack.module::<IpModule>(ip).unwrap();
    let cfg = ip.reassembler().config().clone();
    assert!(ip.reassembler().in_progress() <= cfg.max_datagrams);
    assert!(ip.reassembler().bytes_buffered() <= cfg.max_total_bytes);
    // Oldest datagrams are evicted to make room, counted by the reassembler.
    let d = ip.reassembler().drops();
    let evicted = d.get(ReassemblyDropReason::TableFull) + d.get(ReassemblyDropReason::MemoryLimit);
    assert_eq!(
        evicted,
        2_000 - cfg.max_datagrams as u64,
        "{}",
        net.b.report()
    );
    // Buffers held: at most the datagrams in progress (each one buffer).
    let live = net.b.stack.pool().stats().live;
    assert!(
        live <= live_before + cfg.max_datagrams,
        "pool buffers live {live} (was {live_before})"
    );
    // The reassembly timer frees everything.
    let ip_id = net.b.stack.module_id("ip").unwrap();
    let in_progress = |net: &Net| {
        let ip = net.b.stack.module::<IpModule>(ip_id).unwrap();
        ip.reassembler().in_progress()
    };
    // 61 s of simulated time, in 100 ms steps.
    for _ in 0..610 {
        net.run(1000);
        if in_progress(&net) == 0 {
            break;
        }
    }
    let ip = net.b.stack.module::<IpModule>(ip_id).unwrap();
    assert_eq!(ip.reassembler().in_progress(), 0);
    assert_eq!(ip.reassembler().bytes_buffered(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any corruption of any byte of a valid echo request: no panic, the
    /// frame is answered or dropped, and no buffer is leaked.
    #[test]
    fn corrupted_frames_never_panic(edits in prop::collection::vec((0usize..60, any::<u8>()), 1..6), cut in 0usize..80) {
        let mut net = Net::with_mtu(1500);
        net.run(2);
        let live_before = net.b.stack.pool().stats().live;
        let mut f = echo_request();
        for (at, v) in edits {
            let i = at % f.len();
            f[i] = v;
        }
        f.truncate(f.len().saturating_sub(cut % 20));
        inject(&mut net, &f);
        net.run(3);
        net.a.replies();
        net.run(3);
        prop_assert!(net.b.stack.pool().stats().live <= live_before + 1);
    }
}
