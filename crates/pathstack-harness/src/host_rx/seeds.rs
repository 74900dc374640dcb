//! The `host_rx` seeds: realistic frames of each kind, and the
//! application and the timers at work.

use crate::frames::{a_mac, arp_bytes, eth, ipv4, udp_bytes, A_IP, B_IP};
use crate::input::{pattern, Enc};
use pathstack_core::device::memory::MemoryConfig;
use std::net::Ipv4Addr;

/// Seeds for [`host_rx`](super::host_rx): realistic frames of each kind.
pub fn host_rx_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let frame = |e: &mut Enc, f: &[u8]| {
        e.u8(0).u16(f.len() as u16).bytes(f);
    };
    // ARP request for A, and a reply.
    let mut e = Enc::default();
    frame(
        &mut e,
        &eth(
            [0xff; 6],
            0x0806,
            &arp_bytes(1, MemoryConfig::default().mac_b, B_IP, A_IP),
        ),
    );
    frame(
        &mut e,
        &eth(
            a_mac(),
            0x0806,
            &arp_bytes(2, MemoryConfig::default().mac_b, B_IP, A_IP),
        ),
    );
    e.u8(7 | 0x80)
        .u8(1)
        .u8(9)
        .u32(u32::from(Ipv4Addr::new(10, 0, 0, 9)));
    out.push(("arp".to_string(), e.0));
    // ICMP echo request, and an error about a UDP datagram.
    let mut e = Enc::default();
    let mut icmp = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
    icmp.extend_from_slice(b"abcdefgh");
    frame(&mut e, &ipv4(1, 7, 0, 64, A_IP, &icmp));
    let inner = ipv4(17, 9, 0, 64, B_IP, &udp_bytes(7, 9999, b"x"));
    let mut unreach = vec![3, 3, 0, 0, 0, 0, 0, 0];
    unreach.extend_from_slice(&inner[14..]);
    frame(&mut e, &ipv4(1, 8, 0, 64, A_IP, &unreach));
    out.push(("icmp".to_string(), e.0));
    // UDP to the bound ports, echoed; one to a closed port; fragments.
    let mut e = Enc::default();
    frame(
        &mut e,
        &ipv4(17, 10, 0, 64, A_IP, &udp_bytes(9999, 7, b"hello")),
    );
    e.u8(5).u8(6);
    frame(
        &mut e,
        &ipv4(17, 11, 0, 64, A_IP, &udp_bytes(9999, 53, b"query")),
    );
    e.u8(5).u8(6 | 0x80);
    frame(
        &mut e,
        &ipv4(17, 12, 0, 64, A_IP, &udp_bytes(9999, 4444, b"closed")),
    );
    let big = udp_bytes(9999, 7, &pattern(2000, 5));
    e.u8(6 | 0x80)
        .u16(77)
        .u16(0x2000)
        .u8(64)
        .u8(0)
        .u16(1480)
        .bytes(&big[..1480]);
    e.u8(6 | 0x80)
        .u16(77)
        .u16(185)
        .u8(64)
        .u8(0)
        .u16((big.len() - 1480) as u16)
        .bytes(&big[1480..]);
    e.u8(5).u8(6);
    out.push(("udp".to_string(), e.0));
    // A SYN to the listener with every option, its handshake's ACK
    // guessed, a SYN to a closed port.
    let mut e = Enc::default();
    e.u8(3)
        .u16(5555)
        .u8(0x02)
        .u32(1000)
        .u32(0)
        .u8(0x0f)
        .u16(1460)
        .u8(7)
        .u32(1)
        .u32(0)
        .u16(0)
        .u16(65535);
    e.u8(3)
        .u16(5555)
        .u8(0x10)
        .u32(1001)
        .u32(0)
        .u8(0x08)
        .u32(2)
        .u32(0)
        .u16(0)
        .u16(65535);
    e.u8(3 | 0x40)
        .u16(5556)
        .u8(0x02)
        .u32(1000)
        .u32(0)
        .u8(0)
        .u16(0)
        .u16(65535);
    e.u8(5).u8(0);
    out.push(("tcp_syn".to_string(), e.0));
    // The connection: data in order, an ACK, out of order data, a FIN, the
    // application reading and writing, a RST.
    let mut e = Enc::default();
    e.u8(2)
        .u8(0x18)
        .u8(0)
        .u16(0)
        .u16(0)
        .u16(65535)
        .u16(1)
        .u16(100)
        .u8(1);
    e.u8(5).u8(1).u16(4096);
    e.u8(2)
        .u8(0x10)
        .u8(0)
        .u16(0)
        .u16(0)
        .u16(65535)
        .u16(2)
        .u16(0)
        .u8(0);
    e.u8(2)
        .u8(0x18)
        .u8(0)
        .u16(2000)
        .u16(0)
        .u16(65535)
        .u16(3)
        .u16(500)
        .u8(2);
    e.u8(5).u8(2).u16(3000);
    e.u8(4).u8(0).u16(5000);
    e.u8(2)
        .u8(0x10)
        .u8(8)
        .u16(0)
        .u16(0)
        .u16(65535)
        .u16(4)
        .u16(1448)
        .u16(1448)
        .u16(0)
        .u8(0);
    e.u8(2)
        .u8(0x11)
        .u8(0)
        .u16(100)
        .u16(0)
        .u16(65535)
        .u16(5)
        .u16(0)
        .u8(0);
    e.u8(5).u8(3).u8(1);
    e.u8(4).u8(3); // to the next timer
    e.u8(2)
        .u8(0x04)
        .u8(0)
        .u16(0)
        .u16(0)
        .u16(0)
        .u16(6)
        .u16(0)
        .u8(0);
    out.push(("tcp_conn".to_string(), e.0));
    // The application closing while data flows, timers running out.
    let mut e = Enc::default();
    e.u8(5).u8(2).u16(60000);
    e.u8(4).u8(3).u8(4).u8(3).u8(4).u8(2).u8(3);
    e.u8(5).u8(4);
    e.u8(4).u8(2).u8(70);
    out.push(("tcp_close_timers".to_string(), e.0));
    out
}
