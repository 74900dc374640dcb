//! The headers on the wire: one file per header, parse and emit side by
//! side, in one style.
//!
//! * **Layout.** Each file writes its header's layout down once, as the
//!   byte ranges of a `field` module ([`eth::field`], [`arp::field`],
//!   [`ipv4::field`], [`icmp::field`], [`udp::field`], [`tcp::field`]); every accessor,
//!   emitter and demux key of the file goes through them.
//! * **Received side.** Validation is etherparse's slice types
//!   (`Ethernet2Slice`, `ArpPacketSlice`, `Ipv4HeaderSlice`, `Icmpv4Slice`,
//!   `UdpHeaderSlice`, `TcpHeaderSlice`) plus the checks they leave to the caller (checksums,
//!   length fields, address rules). A header whose bytes stay in the buffer
//!   while the stack works on them has a view over those bytes in the
//!   smoltcp style: [`ipv4::Ipv4Packet`], [`icmp::IcmpPacket`],
//!   [`udp::UdpPacket`], [`tcp::TcpPacket`], each `XPacket<T: AsRef<[u8]>>` with `new_checked`
//!   for received bytes, `new_unchecked` for bytes already checked or being
//!   built, field accessors, and setters where the stack edits in place
//!   (the echo turnaround, the TTL). The fixed-size headers that are read
//!   whole, Ethernet and ARP, are parsed straight into their fields
//!   ([`eth::EthHeader::parse`], [`arp::ArpPacket::parse`]).
//!   The one exception to parse-then-decide is TCP header prediction's
//!   read of the usual established segment from fixed offsets
//!   ([`tcp_predicted::TcpPredicted`]), held to the full parse by a
//!   property test.
//! * **Sent side.** A repr of the fields the stack chooses, written with
//!   `emit` into a buffer or `push_onto` a message's headroom
//!   ([`eth::EthHeader`], [`arp::ArpPacket`], [`ipv4::Ipv4Repr`],
//!   [`udp::UdpRepr`], [`tcp::TcpRepr`]; ICMP builds its errors with [`icmp::IcmpError`]).
//! * **Errors.** Every malformed case is a typed drop reason with a stable
//!   counter name ([`pathstack_core::drop_reason`]); nothing panics on any input.
//!
//! Protocol decisions are not here: the ARP cache, fragmentation,
//! reassembly, routing, the ICMP error rules and rate limit have files of
//! their own in the crate root.

pub mod arp;
pub mod checksum;
pub mod eth;
pub mod icmp;
pub mod ipv4;
pub mod tcp;
pub mod tcp_predicted;
pub mod udp;

use pathstack_core::demux::{Key, KeyMode};

/// The demux key a transport contributes to a path (Mosberger, *Scout: A
/// Path-Based Operating System*, 1997, §3.4, Figure 3.10), shared by UDP
/// and TCP: in active mode, with a remote port, the local then the remote
/// port (network byte order); otherwise the local port.
#[inline]
fn port_demux_key(mode: KeyMode, local_port: u16, remote_port: Option<u16>) -> Key {
    let l = local_port.to_be_bytes();
    match (mode, remote_port) {
        (KeyMode::Active, Some(r)) => {
            let r = r.to_be_bytes();
            Key::from_array([l[0], l[1], r[0], r[1]])
        }
        _ => Key::from_array(l),
    }
}

/// The flow layouts (`FLOW_LAYOUT` and `PASSIVE_FLOW_LAYOUT` of ETH, IPv4,
/// UDP and TCP) keep their contract with the partial classifiers: wherever
/// a layout applies, the classifier's key for its mode and header length
/// are the layout's.
#[cfg(test)]
mod flow_layout_tests {
    use super::{eth, ipv4, tcp, udp};
    use pathstack_core::demux::{FlowLayout, Key, KeyMode};
    use proptest::prelude::*;

    type Extract = fn(&[u8], KeyMode) -> Option<(Key, usize)>;

    const LAYOUTS: [(&str, FlowLayout, Extract); 4] = [
        ("eth", eth::FLOW_LAYOUT, eth::packet_demux_key),
        ("ipv4", ipv4::FLOW_LAYOUT, ipv4::packet_demux_key),
        ("udp", udp::FLOW_LAYOUT, udp::packet_demux_key),
        ("tcp", tcp::FLOW_LAYOUT, tcp::packet_demux_key),
    ];

    /// The common headers: each layout applies, with the classifier's key.
    #[test]
    fn layouts_apply_to_common_headers() {
        let mut h = [0u8; 40];
        h[0] = 0x45; // IPv4, 20 bytes; also ETH and UDP need nothing more
        h[6] = 0x40; // Don't Fragment
        h[12] = 0x80; // TCP data offset 8 words (timestamps)
        for (name, layout, extract) in LAYOUTS {
            let got = layout.extract(&h);
            assert!(got.is_some(), "{name}'s layout does not apply");
            assert_eq!(got, extract(&h, KeyMode::Active), "{name}");
        }
        // IPv4 options or a fragment (MF, or an offset) turn it off.
        for (at, v) in [(0, 0x46), (6, 0x20), (7, 0x01), (6, 0x01)] {
            let mut d = h;
            d[at] = v;
            assert_eq!(ipv4::FLOW_LAYOUT.extract(&d), None, "byte {at} = {v:#x}");
        }
    }

    proptest! {
        #[test]
        fn layouts_agree_with_packet_demux_keys(
            mut bytes in prop::collection::vec(any::<u8>(), 0..72),
            common_ipv4 in any::<bool>(),
            data_offset in 0u8..16,
        ) {
            if common_ipv4 && bytes.len() > 8 {
                bytes[0] = 0x45;
                bytes[6] &= 0x40;
                bytes[7] = 0;
            }
            if let Some(b) = bytes.get_mut(12) {
                *b = (*b & 0x0f) | data_offset << 4;
            }
            for (name, layout, extract) in LAYOUTS {
                if let Some(got) = layout.extract(&bytes) {
                    prop_assert_eq!(Some(got), extract(&bytes, KeyMode::Active), "{}", name);
                }
            }
            // The passive layouts (ETH's is its active one).
            for (name, layout, extract) in [
                ("eth", eth::FLOW_LAYOUT, eth::packet_demux_key as Extract),
                ("ipv4", ipv4::PASSIVE_FLOW_LAYOUT, ipv4::packet_demux_key),
                ("udp", udp::PASSIVE_FLOW_LAYOUT, udp::packet_demux_key),
                ("tcp", tcp::PASSIVE_FLOW_LAYOUT, tcp::packet_demux_key),
            ] {
                if let Some(got) = layout.extract(&bytes) {
                    prop_assert_eq!(Some(got), extract(&bytes, KeyMode::Passive), "{} passive", name);
                }
            }
        }
    }
}
