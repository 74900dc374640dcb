//! The per-packet protocol logic allocates nothing from the heap once its
//! tables exist and the pool is warm: ETH/IP/UDP parse and emit, ARP
//! resolution with queueing, retries and give-ups, fragmentation and
//! reassembly of a 4,000-byte datagram, ICMP echo turnaround and error
//! building. Buffers come from the pool only (Scout's buffer refresh).
//!
//! One test in this binary: the allocation counter is process-wide, and
//! tests in one binary run on parallel threads.

use pathstack_core::{Duration, Instant, MsgPool, PoolConfig};
use pathstack_inet::arp::cache::{ArpCache, ArpConfig, Resolution};
use pathstack_inet::ip::frag::fragment;
use pathstack_inet::ip::icmp_suppression::may_send_error;
use pathstack_inet::ip::ipv4_ident::IdentCounter;
use pathstack_inet::ip::reassembly::{Reassembler, Reassembly, ReassemblyConfig};
use pathstack_inet::wire::arp::{ArpOp, ArpPacket};
use pathstack_inet::wire::icmp::{self, IcmpError, Quote};
use pathstack_inet::wire::ipv4::{self, protocol, Ipv4Repr};
use pathstack_inet::wire::udp::{UdpPacket, UdpRepr};
use pathstack_inet::{EthHeader, MacAddr};
use std::net::Ipv4Addr;

use pathstack_testutil::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

const OWN_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const OWN_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

struct World {
    pool: MsgPool,
    arp: ArpCache,
    reasm: Reassembler,
    ids: IdentCounter,
    payload: Vec<u8>,
    delivered: usize,
}

/// One round of everything; returns the bytes that made it through.
fn round(w: &mut World, i: u64) -> usize {
    let now = Instant::from_millis(i * 10);
    let mut seen = 0;

    // UDP + IP + ETH down, then up again.
    let mut m = w.pool.alloc_copy(&w.payload[..64]).unwrap();
    UdpRepr {
        src_port: 1000,
        dst_port: 7,
    }
    .push_onto(&mut m, OWN_IP, PEER_IP)
    .unwrap();
    Ipv4Repr::new(OWN_IP, PEER_IP, protocol::UDP, w.ids.next_ident(), 0)
        .push_onto(&mut m)
        .unwrap();
    // ARP: alternate between a resolved peer and an unknown host whose
    // packets queue and are released by a reply or dropped by a give-up.
    let host = Ipv4Addr::new(10, 0, 1, (i % 4) as u8 + 1);
    let next_hop = if i % 2 == 0 { PEER_IP } else { host };
    let mut frame = match w.arp.lookup_or_queue(next_hop, m, now) {
        Resolution::Resolved(mac, m) => Some((mac, m)),
        Resolution::Queued { .. } | Resolution::Dropped(_) => None,
    };
    if i % 3 == 0 {
        let reply = ArpPacket {
            op: ArpOp::Reply,
            sender_mac: MacAddr([2, 0, 0, 0, 1, (i % 4) as u8 + 1]),
            sender_ip: host,
            target_mac: OWN_MAC,
            target_ip: OWN_IP,
        };
        let _ = w.arp.on_packet(&reply, OWN_IP, now, |_, m| seen += m.len());
    }
    w.arp.poll(now, |_| {});
    let keep_peer = ArpPacket {
        op: ArpOp::Reply,
        sender_mac: PEER_MAC,
        sender_ip: PEER_IP,
        target_mac: OWN_MAC,
        target_ip: OWN_IP,
    };
    let _ = w.arp.on_packet(&keep_peer, OWN_IP, now, |_, _| {});
    if let Some((mac, mut m)) = frame.take() {
        EthHeader {
            dst: mac,
            src: OWN_MAC,
            ethertype: pathstack_inet::wire::eth::EtherType::IPV4,
        }
        .push_onto(&mut m)
        .unwrap();
        pathstack_inet::wire::eth::pad_to_minimum(&mut m).unwrap();
        EthHeader::pop_from(&mut m).unwrap();
        let (repr, hl) = ipv4::receive(&mut m).unwrap();
        m.pop(hl).unwrap();
        let u = UdpPacket::new_checked(m.as_slice(), repr.src, repr.dst).unwrap();
        seen += u.payload().len();
    }

    // Fragment a 4,000-byte datagram, reassemble it in reverse order.
    let mut big = w.pool.alloc_copy(&w.payload[..4000]).unwrap();
    let h = Ipv4Repr::new(PEER_IP, OWN_IP, protocol::ICMP, w.ids.next_ident(), 0);
    let mut frags = [(); 3].map(|_| pathstack_core::Msg::default());
    let mut n = 0;
    fragment(&mut big, &h, 1500, |f| {
        frags[n] = f;
        n += 1;
    })
    .unwrap();
    for f in frags.iter_mut().rev() {
        let mut f = std::mem::take(f);
        let (repr, hl) = ipv4::receive(&mut f).unwrap();
        f.pop(hl).unwrap();
        if let Reassembly::Complete(_, m) = w.reasm.input(&repr, f, now) {
            w.delivered += 1;
            seen += m.len();
        }
    }
    w.reasm.poll(now, |_| {});

    // ICMP echo turnaround in place, and a port unreachable.
    let mut echo = w.pool.alloc_copy(&w.payload[..64]).unwrap();
    {
        let b = echo.as_mut_slice();
        b[..8].copy_from_slice(&[icmp::types::ECHO_REQUEST, 0, 0, 0, 0, 1, 0, 1]);
        let c = pathstack_inet::wire::checksum::compute(&[b]);
        b[2..4].copy_from_slice(&c);
    }
    icmp::echo_reply_in_place(echo.as_mut_slice()).unwrap();
    seen += echo.len();
    let mut dgram = w.pool.alloc_copy(&w.payload[..32]).unwrap();
    Ipv4Repr::new(PEER_IP, OWN_IP, protocol::UDP, 1, 0)
        .push_onto(&mut dgram)
        .unwrap();
    if may_send_error(dgram.as_slice(), false).is_ok() {
        let q = Quote::from_datagram(dgram.as_slice()).unwrap();
        seen += IcmpError::PortUnreachable.build(&w.pool, &q).unwrap().len();
    }
    seen
}

#[test]
fn protocol_logic_makes_no_heap_allocations_after_warm_up() {
    let mut w = World {
        pool: MsgPool::new(PoolConfig::default()),
        arp: ArpCache::new(ArpConfig {
            retry_interval: Duration::from_millis(20),
            ..ArpConfig::default()
        }),
        reasm: Reassembler::new(ReassemblyConfig::default()),
        ids: IdentCounter::new(1),
        payload: (0..4000u32).map(|i| i as u8).collect(),
        delivered: 0,
    };
    let mut bytes = 0;
    for i in 0..1_000 {
        bytes += round(&mut w, i);
    }
    let before = counting_alloc::allocations();
    for i in 1_000..6_000 {
        bytes += round(&mut w, i);
    }
    let allocs = counting_alloc::allocations() - before;
    assert_eq!(allocs, 0, "{allocs} heap allocations in 5,000 rounds");
    assert_eq!(w.delivered, 6_000);
    assert!(bytes > 0);
    assert!(
        w.arp.resolution_drops().total() > 0,
        "the give-up path was exercised"
    );
    assert_eq!(w.pool.stats().heap_allocs, 0);
}
