//! Frames from host B (the fuzzer's side of the wire) to host A (the host
//! under test): Ethernet, IPv4 with its checksums, and the transport
//! headers the seeds and the structured operations build.

use pathstack_core::device::memory::MemoryConfig;
use pathstack_inet::wire::checksum;
use pathstack_inet::wire::tcp::TcpRepr;
use std::net::Ipv4Addr;

/// Host A's address: the host under test.
pub(crate) const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// Host B's address: the host the harness speaks for once the setup is
/// done.
pub(crate) const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// The largest frame injected: an Ethernet frame of the wire's MTU.
pub(crate) const FRAME_MAX: usize = 1514;

/// An Ethernet frame from B to `dst`.
pub(crate) fn eth(dst: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&MemoryConfig::default().mac_b);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// Host A's MAC address (the wire's first end).
pub(crate) fn a_mac() -> [u8; 6] {
    MemoryConfig::default().mac_a
}

/// An IPv4 packet B → A (or `dst`) with a correct header checksum, and the
/// L4 checksum filled in when unfragmented.
pub(crate) fn ipv4(proto: u8, id: u16, frag: u16, ttl: u8, dst: Ipv4Addr, l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20];
    p[0] = 0x45;
    let total = (20 + l4.len()).min(65535) as u16;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&frag.to_be_bytes());
    p[8] = ttl;
    p[9] = proto;
    p[12..16].copy_from_slice(&B_IP.octets());
    p[16..20].copy_from_slice(&dst.octets());
    p.extend_from_slice(l4);
    let mut f = eth(a_mac(), 0x0800, &p);
    fix_checksums(&mut f);
    f
}

/// Recomputes the IPv4 header checksum and, for an unfragmented TCP, UDP
/// or ICMP packet, the L4 checksum, of an Ethernet frame (what a mutated
/// frame needs to get past the checks).
pub(crate) fn fix_checksums(f: &mut [u8]) {
    if f.len() < 34 || f[12..14] != [0x08, 0x00] {
        return;
    }
    let ihl = usize::from(f[14] & 0x0f) * 4;
    if ihl < 20 || 14 + ihl > f.len() {
        return;
    }
    f[24] = 0;
    f[25] = 0;
    let c = checksum::compute(&[&f[14..14 + ihl]]);
    f[24..26].copy_from_slice(&c);
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    let end = (14 + total).min(f.len());
    if end < 14 + ihl || u16::from_be_bytes([f[20], f[21]]) & 0x3fff != 0 {
        return;
    }
    let src = Ipv4Addr::new(f[26], f[27], f[28], f[29]);
    let dst = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
    let proto = f[23];
    let l4 = &mut f[14 + ihl..end];
    let at = match proto {
        1 => 2,
        6 => 16,
        17 => 6,
        _ => return,
    };
    if l4.len() < at + 2 {
        return;
    }
    l4[at] = 0;
    l4[at + 1] = 0;
    let c = if proto == 1 {
        checksum::compute(&[l4])
    } else {
        let pseudo = checksum::pseudo_header_v4(src, dst, proto, l4.len() as u16);
        checksum::compute(&[&pseudo, l4])
    };
    let c = if proto == 17 && c == [0, 0] {
        [0xff, 0xff]
    } else {
        c
    };
    l4[at..at + 2].copy_from_slice(&c);
}

/// A TCP segment's bytes (empty when the header does not fit).
pub(crate) fn tcp_bytes(r: &TcpRepr, payload: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u8> {
    let mut buf = vec![0u8; 60 + payload.len()];
    match r.emit(&mut buf, src, dst, payload) {
        Ok(hl) => {
            buf.truncate(hl);
            buf.extend_from_slice(payload);
            buf
        }
        Err(_) => Vec::new(),
    }
}

/// A UDP datagram's bytes, checksum zero (left to [`fix_checksums`]).
pub(crate) fn udp_bytes(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::with_capacity(8 + payload.len());
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

/// An ARP packet (RFC 826) for Ethernet and IPv4, target MAC zero.
pub(crate) fn arp_bytes(
    op: u16,
    sender_mac: [u8; 6],
    sender: Ipv4Addr,
    target: Ipv4Addr,
) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&sender_mac);
    a.extend_from_slice(&sender.octets());
    a.extend_from_slice(&[0; 6]);
    a.extend_from_slice(&target.octets());
    a
}
