//! The UDP header on the wire (RFC 768), with the IPv4 pseudo-header
//! checksum. Only the wire format: ports and sockets are the UDP module's.
//!
//! Slicing is etherparse's (`UdpHeaderSlice`); both checksums sum the
//! pseudo header and the segment with [`crate::wire::checksum`] (faster
//! than etherparse's, see there).

use crate::wire::checksum;
use crate::wire::ipv4::protocol;
use etherparse::UdpHeaderSlice;
use pathstack_core::demux::{FlowLayout, HeaderLen, Key, KeyMode};
use pathstack_core::{Msg, MsgError};
use std::net::Ipv4Addr;

/// Where each header field lies (RFC 768 "Format").
pub mod field {
    use std::ops::Range;

    /// Source port.
    pub const SRC_PORT: Range<usize> = 0..2;
    /// Destination port.
    pub const DST_PORT: Range<usize> = 2..4;
    /// Length of header and data in bytes.
    pub const LENGTH: Range<usize> = 4..6;
    /// Checksum over the pseudo header, header and data (zero: none).
    pub const CHECKSUM: Range<usize> = 6..8;
    /// First data byte.
    pub const PAYLOAD: usize = 8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = field::PAYLOAD;

pathstack_core::drop_reasons! {
    /// Why a UDP datagram was dropped.
    #[derive(thiserror::Error)]
    pub enum UdpDropReason in "udp" {
        /// Shorter than the 8-byte header.
        #[error("UDP datagram truncated")]
        Truncated => "truncated",
        /// Length field below 8 or beyond the IP payload.
        #[error("bad UDP length field")]
        BadLength => "bad_length",
        /// Checksum present and wrong (RFC 1122 §4.1.3.4: MUST discard silently).
        #[error("bad UDP checksum")]
        BadChecksum => "bad_checksum",
        /// No path for the destination port: IP found none and sends ICMP
        /// port unreachable (RFC 1122 §4.1.3.1).
        #[error("no listener on the UDP port")]
        NoPort => "no_port",
        /// A datagram for another port (or from another peer) than its
        /// path's.
        #[error("datagram for another port than the path's")]
        WrongPort => "wrong_port",
        /// A datagram without a local address (IP did not annotate one), or
        /// an outgoing one on a path IP gave no address.
        #[error("no local address for the UDP checksum")]
        NoLocalAddress => "no_local_address",
        /// An outgoing datagram has no destination address and port.
        #[error("outgoing datagram without a destination")]
        NoDestination => "no_destination",
        /// An outgoing datagram too long for the length field, or without
        /// room for the header.
        #[error("outgoing datagram too long")]
        TooLong => "too_long",
    }
}

/// The IPv4 pseudo header the UDP checksum covers (RFC 768).
pub(crate) fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, udp_len: u16) -> [u8; 12] {
    checksum::pseudo_header_v4(src, dst, protocol::UDP, udp_len)
}

/// A view of a UDP datagram in a byte buffer: the fields read through
/// [`field`]. Made by [`UdpPacket::new_checked`] for received bytes; the
/// view then ends at the UDP length field ([`UdpPacket::payload`] stops
/// there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// A view of `buffer` without any check; it must hold at least
    /// [`HEADER_LEN`] bytes (and the payload accessor the length the
    /// header claims).
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Validates the IP payload `buffer` of a datagram from `src` to `dst`:
    /// 8 ≤ length ≤ `buffer.len()` (extra bytes ignored), and the checksum
    /// over the pseudo header unless it is zero ("no checksum", RFC 768).
    pub fn new_checked(buffer: T, src: Ipv4Addr, dst: Ipv4Addr) -> Result<Self, UdpDropReason> {
        Self::new_received(buffer, src, dst, false)
    }

    /// [`UdpPacket::new_checked`] for a received datagram, the checksum
    /// skipped when the device vouched for it (`checksum_verified`: the
    /// message's `rx_csum_verified` offload fact; the field may then hold
    /// a partial sum, see `pathstack_core::device::offload`).
    pub fn new_received(
        buffer: T,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        checksum_verified: bool,
    ) -> Result<Self, UdpDropReason> {
        let bytes = buffer.as_ref();
        let h = UdpHeaderSlice::from_slice(bytes).map_err(|_| UdpDropReason::Truncated)?;
        let len = usize::from(h.length());
        if len < HEADER_LEN || len > bytes.len() {
            return Err(UdpDropReason::BadLength);
        }
        if !checksum_verified
            && h.checksum() != 0
            && !checksum::verify(&[&pseudo_header(src, dst, h.length()), &bytes[..len]])
        {
            return Err(UdpDropReason::BadChecksum);
        }
        Ok(UdpPacket { buffer })
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn word(&self, at: std::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[at];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.word(field::SRC_PORT)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.word(field::DST_PORT)
    }
    /// Checksum field (zero: the sender computed none).
    pub fn checksum(&self) -> u16 {
        self.word(field::CHECKSUM)
    }
    /// Whether the sender computed a checksum.
    pub fn has_checksum(&self) -> bool {
        self.checksum() != 0
    }
    /// Length of the datagram (header included), from the length field.
    pub fn len(&self) -> usize {
        usize::from(self.word(field::LENGTH))
    }
    /// Whether the datagram carries no data.
    pub fn is_empty(&self) -> bool {
        self.len() == HEADER_LEN
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> UdpPacket<&'a T> {
    /// The data after the header, up to the length field.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD..self.len()]
    }
}

/// Why a UDP header could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UdpEmitError {
    /// Payload longer than 65,527 bytes.
    #[error("UDP payload of {0} bytes too long")]
    TooLong(usize),
    /// No headroom for the header.
    #[error(transparent)]
    Msg(#[from] MsgError),
}

/// The UDP header fields we choose; length and checksum are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

impl UdpRepr {
    /// Pushes the header in front of `msg` (the payload), with the length
    /// and the checksum over the pseudo header for `src` → `dst` (RFC 768;
    /// a computed zero is sent as 0xFFFF).
    pub fn push_onto(
        &self,
        msg: &mut Msg,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<(), UdpEmitError> {
        let len =
            u16::try_from(msg.len() + HEADER_LEN).map_err(|_| UdpEmitError::TooLong(msg.len()))?;
        let h = msg.push(HEADER_LEN)?;
        h[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        h[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        h[field::LENGTH].copy_from_slice(&len.to_be_bytes());
        h[field::CHECKSUM].fill(0);
        let c = checksum::compute(&[&pseudo_header(src, dst, len), msg.as_slice()]);
        // RFC 768: a computed zero is sent as all ones (zero means "none").
        let c = if c == [0, 0] { [0xff, 0xff] } else { c };
        msg.as_mut_slice()[field::CHECKSUM].copy_from_slice(&c);
        Ok(())
    }
}

/// The demux key of a path through UDP (Mosberger, *Scout: A Path-Based
/// Operating System*, 1997, §3.4, Figure 3.10): in active mode, for a
/// connected path, the local and the remote port; otherwise the local port.
#[inline]
pub fn path_demux_key(mode: KeyMode, local_port: u16, remote_port: Option<u16>) -> Key {
    super::port_demux_key(mode, local_port, remote_port)
}

/// Where [`packet_demux_key`]'s active key lies: destination then source
/// port, in every datagram with a whole header (the flow table's layout
/// for UDP).
pub const FLOW_LAYOUT: FlowLayout = FlowLayout::new(HeaderLen::Fixed(HEADER_LEN as u8))
    .key(field::DST_PORT.start as u8, 2)
    .key(field::SRC_PORT.start as u8, 2);

/// Where [`packet_demux_key`]'s passive key lies: the destination port
/// alone, in the same datagrams as [`FLOW_LAYOUT`]'s (a bound socket
/// takes datagrams from every peer).
pub const PASSIVE_FLOW_LAYOUT: FlowLayout =
    FlowLayout::new(HeaderLen::Fixed(HEADER_LEN as u8)).key(field::DST_PORT.start as u8, 2);

/// The demux key of a received datagram, and the header bytes it spans:
/// what UDP's partial classifier extracts. Local is the destination port,
/// remote the source port, so the key equals [`path_demux_key`] of the
/// datagram's path. `None` when the header is not all there.
#[inline]
pub fn packet_demux_key(datagram: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
    let p = UdpPacket::new_unchecked(datagram.get(..HEADER_LEN)?);
    Some((
        path_demux_key(mode, p.dst_port(), Some(p.src_port())),
        HEADER_LEN,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack_core::{MsgPool, PoolConfig};
    use proptest::prelude::*;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    #[test]
    fn round_trip_and_checksum() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut m = pool.alloc_copy(b"hello udp").unwrap();
        UdpRepr {
            src_port: 4000,
            dst_port: 7,
        }
        .push_onto(&mut m, A, B)
        .unwrap();
        let p = UdpPacket::new_checked(m.as_slice(), A, B).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (4000, 7));
        assert_eq!(p.payload(), b"hello udp");
        assert!(p.has_checksum());
        // Wrong pseudo header (other destination) fails the checksum.
        assert_eq!(
            UdpPacket::new_checked(m.as_slice(), A, A),
            Err(UdpDropReason::BadChecksum)
        );
        // Zero checksum means "none" (RFC 768).
        m.as_mut_slice()[6..8].fill(0);
        assert!(UdpPacket::new_checked(m.as_slice(), A, A).is_ok());
    }

    #[test]
    fn length_field_checks() {
        let mut d = [0u8; 12];
        d[4..6].copy_from_slice(&7u16.to_be_bytes());
        assert_eq!(
            UdpPacket::new_checked(&d, A, B),
            Err(UdpDropReason::BadLength)
        );
        d[4..6].copy_from_slice(&13u16.to_be_bytes());
        assert_eq!(
            UdpPacket::new_checked(&d, A, B),
            Err(UdpDropReason::BadLength)
        );
        d[4..6].copy_from_slice(&10u16.to_be_bytes());
        assert_eq!(UdpPacket::new_checked(&d, A, B).unwrap().payload(), &[0, 0]);
        assert_eq!(
            UdpPacket::new_checked(&d[..7], A, B),
            Err(UdpDropReason::Truncated)
        );
    }

    #[test]
    fn packet_key_matches_the_path_key() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut m = pool.alloc_copy(b"x").unwrap();
        UdpRepr {
            src_port: 4000,
            dst_port: 7,
        }
        .push_onto(&mut m, A, B)
        .unwrap();
        for mode in [KeyMode::Active, KeyMode::Passive] {
            // Received by B: local port 7, remote port 4000.
            let (k, used) = packet_demux_key(m.as_slice(), mode).unwrap();
            assert_eq!(k, path_demux_key(mode, 7, Some(4000)));
            assert_eq!(used, HEADER_LEN);
        }
        assert_eq!(
            path_demux_key(KeyMode::Active, 7, None),
            path_demux_key(KeyMode::Passive, 7, Some(4000))
        );
        assert!(packet_demux_key(&m.as_slice()[..7], KeyMode::Passive).is_none());
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(p) = UdpPacket::new_checked(&bytes, A, B) {
                prop_assert!(p.len() >= HEADER_LEN && p.len() <= bytes.len());
                let _ = (p.src_port(), p.dst_port(), p.payload());
            }
        }

        #[test]
        fn emitted_always_verifies(payload in proptest::collection::vec(any::<u8>(), 0..600), sp in any::<u16>(), dp in any::<u16>(), s in any::<[u8; 4]>(), d in any::<[u8; 4]>()) {
            let pool = MsgPool::new(PoolConfig::small(2));
            let mut m = pool.alloc_copy(&payload).unwrap();
            UdpRepr { src_port: sp, dst_port: dp }.push_onto(&mut m, s.into(), d.into()).unwrap();
            let p = UdpPacket::new_checked(m.as_slice(), s.into(), d.into()).unwrap();
            prop_assert!(p.has_checksum());
            prop_assert_eq!(p.payload(), &payload[..]);
        }
    }
}
