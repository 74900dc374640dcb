//! Loopback: datagrams a host sends to itself — to one of its own
//! addresses or to `127.0.0.0/8` — turn around inside `IP` and never reach
//! the device (RFC 1122 §3.2.1.3 (g): 127/8 "MUST NOT appear outside a
//! host"; a datagram to the host's own address is delivered internally,
//! as Linux's `lo` does). The `IP` stage writes the header as for any
//! datagram and hands it to the top of IP's own path, whose second
//! classification (thesis §3.4.2; `IpModule::route_end`) finds the socket
//! or connection path it is for — the same way a reassembled datagram
//! finds its path. No frame is made, so nothing here is seen by ARP, the
//! NIC or a capture.

use crate::anno::InetAnno;
use crate::wire::checksum;
use crate::wire::ipv4::protocol;
use pathstack_core::device::offload::MsgOffload;
use pathstack_core::Msg;
use std::net::Ipv4Addr;

/// The address a host uses on its loopback network (RFC 1122 §3.2.1.3
/// (g), as Linux's `lo`).
pub const LOOPBACK_ADDR: Ipv4Addr = Ipv4Addr::LOCALHOST;

/// The source of a datagram to `dst` that loops back, from a path whose
/// address is `iface`: a path on the loopback network sends from its own
/// address (a connection accepted on 127.1.2.3 answers from it); a path
/// of the device's interface sends to 127/8 from 127.0.0.1 (so a peer
/// connected to 127.0.0.1 recognizes the reply, as with Linux's source
/// selection over `lo`), and to the host's own address from itself.
pub fn source_for(dst: Ipv4Addr, iface: Ipv4Addr) -> Ipv4Addr {
    if dst.is_loopback() && !iface.is_loopback() {
        LOOPBACK_ADDR
    } else {
        iface
    }
}

/// Where the transport checksum lies in a UDP or TCP header, if the
/// protocol has one that covers the pseudo header.
fn checksum_at(proto: u8) -> Option<usize> {
    match proto {
        protocol::UDP => Some(6),
        protocol::TCP => Some(16),
        _ => None,
    }
}

/// The transport segment at the front of `msg` (no IP header yet) was
/// checksummed with `from` as the pseudo header's source; it leaves from
/// `to`: its checksum is updated for the change (RFC 1624 §3), so the
/// datagram is exactly what a transport that had chosen `to` would have
/// sent. A UDP checksum of zero (none) stays zero (RFC 768).
pub fn readdress_transport(msg: &mut Msg, proto: u8, from: Ipv4Addr, to: Ipv4Addr) {
    let Some(at) = checksum_at(proto) else {
        return;
    };
    let Some(field) = msg.as_mut_slice().get_mut(at..at + 2) else {
        return;
    };
    let mut sum = u16::from_be_bytes([field[0], field[1]]);
    if proto == protocol::UDP && sum == 0 {
        return;
    }
    let (old, new) = (from.octets(), to.octets());
    for i in [0, 2] {
        let o = u16::from_be_bytes([old[i], old[i + 1]]);
        let n = u16::from_be_bytes([new[i], new[i + 1]]);
        sum = checksum::update(sum, o, n);
    }
    // RFC 768: a computed zero is sent as all ones.
    if proto == protocol::UDP && sum == 0 {
        sum = 0xffff;
    }
    field.copy_from_slice(&sum.to_be_bytes());
}

/// The annotations of a datagram from `src` to `dst` as `IP`'s receive
/// would have written them, for a datagram that never left the host: its
/// checksums need no verifying (nothing touched the bytes, as Linux's
/// loopback marks `CHECKSUM_UNNECESSARY`; a partial checksum left for a
/// device that will never see it is not an error), and a TCP
/// super-segment arrives as one.
pub fn received_annotations(msg: &mut Msg, src: Ipv4Addr, dst: Ipv4Addr) {
    let sent = msg.anno().offload();
    let a = msg.anno_mut();
    a.reset();
    a.set_offload(MsgOffload {
        rx_csum_verified: true,
        rx_gso_size: sent.tx_gso_size,
        ..MsgOffload::default()
    });
    a.set_peer_ip(src);
    a.set_local_ip(dst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack_core::MsgPool;

    fn udp_datagram(pool: &MsgPool, src: Ipv4Addr, dst: Ipv4Addr) -> Msg {
        let payload = b"loop";
        let mut m = pool.alloc(8 + payload.len()).unwrap();
        let b = m.as_mut_slice();
        b[..2].copy_from_slice(&7000u16.to_be_bytes());
        b[2..4].copy_from_slice(&7u16.to_be_bytes());
        b[4..6].copy_from_slice(&12u16.to_be_bytes());
        b[8..].copy_from_slice(payload);
        let pseudo = checksum::pseudo_header_v4(src, dst, protocol::UDP, 12);
        let sum = checksum::compute(&[&pseudo, b]);
        b[6..8].copy_from_slice(&sum);
        m
    }

    #[test]
    fn a_readdressed_segment_has_the_checksum_of_its_new_source() {
        let pool = MsgPool::new(Default::default());
        let (iface, dst) = (Ipv4Addr::new(10, 0, 0, 1), LOOPBACK_ADDR);
        let mut m = udp_datagram(&pool, iface, dst);
        readdress_transport(&mut m, protocol::UDP, iface, source_for(dst, iface));
        let want = udp_datagram(&pool, LOOPBACK_ADDR, dst);
        assert_eq!(m.as_slice(), want.as_slice());
    }

    #[test]
    fn sources() {
        let iface = Ipv4Addr::new(10, 0, 0, 1);
        assert_eq!(
            source_for(Ipv4Addr::new(127, 3, 2, 1), iface),
            LOOPBACK_ADDR
        );
        assert_eq!(source_for(iface, iface), iface);
        let lo = Ipv4Addr::new(127, 1, 2, 3);
        assert_eq!(source_for(LOOPBACK_ADDR, lo), lo);
    }
}
