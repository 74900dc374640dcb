//! Ethernet II framing (DIX Ethernet v2; IEEE 802.3 §3.2 frame layout).
//!
//! A frame on the wire, as our devices see it (no preamble, no FCS):
//!
//! ```text
//!  0      6      12   14
//! +------+------+----+---------------------------+
//! | dst  | src  |type| payload (46..1500 bytes)  |
//! +------+------+----+---------------------------+
//! ```
//!
//! Slicing is done by `etherparse` (a dependency chosen, not reinvented); this
//! file adds the typed address, the destination filter, the drop reasons and
//! the output-side padding to the 60-byte minimum frame (64 bytes with the
//! FCS the adapter appends; IEEE 802.3 §4.2.3.3 `minFrameSize`).

use etherparse::Ethernet2Slice;
use pathstack_core::demux::{FlowLayout, HeaderLen, Key, KeyMode};
use pathstack_core::{Msg, MsgError};
use std::fmt;
use std::net::Ipv4Addr;

pub use etherparse::EtherType;

/// Where each header field lies (the frame layout above).
pub mod field {
    use std::ops::Range;

    /// Destination address.
    pub const DESTINATION: Range<usize> = 0..6;
    /// Source address.
    pub const SOURCE: Range<usize> = 6..12;
    /// EtherType of the payload (or, below 0x0600, an IEEE 802.3 length).
    pub const ETHERTYPE: Range<usize> = 12..14;
    /// First payload byte.
    pub const PAYLOAD: usize = 14;
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD;
/// Smallest frame we put on the wire, without the 4-byte FCS (IEEE 802.3
/// minimum frame of 64 bytes minus the FCS). Shorter frames are padded.
pub const MIN_FRAME_LEN: usize = 60;
/// Largest payload of a standard frame (the Ethernet MTU).
pub const MTU: usize = 1500;

/// A 48-bit IEEE 802 MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The broadcast address `ff:ff:ff:ff:ff:ff`.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);
    /// The all-zero address (ARP's "unknown" target hardware address).
    pub const ZERO: MacAddr = MacAddr([0; 6]);

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }
    /// Whether the group bit (I/G, least significant bit of the first octet)
    /// is set; broadcast is a multicast address by this definition.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }
    /// Whether this is an individual (unicast) address other than all-zero.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast() && *self != Self::ZERO
    }
    /// The address as bytes.
    pub fn as_bytes(&self) -> &[u8; 6] {
        &self.0
    }
}

/// Why a MAC address string did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a MAC address (expected six hex bytes like 02:00:00:00:00:01)")]
pub struct MacParseError(pub String);

impl std::str::FromStr for MacAddr {
    type Err = MacParseError;
    /// Parses `aa:bb:cc:dd:ee:ff` (or with `-` separators).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || MacParseError(s.to_string());
        let mut out = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for b in &mut out {
            let p = parts.next().ok_or_else(err)?;
            if p.is_empty() || p.len() > 2 {
                return Err(err());
            }
            *b = u8::from_str_radix(p, 16).map_err(|_| err())?;
        }
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(MacAddr(out))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The multicast MAC for an IPv4 multicast group (RFC 1112 §6.4: 01:00:5e
/// followed by the low 23 bits of the group address).
pub fn multicast_mac(group: Ipv4Addr) -> MacAddr {
    let o = group.octets();
    MacAddr([0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]])
}
pathstack_core::drop_reasons! {
    /// Why an Ethernet frame was dropped, incoming or outgoing.
    #[derive(thiserror::Error)]
    pub enum EthDropReason in "eth" {
        /// Shorter than the 14-byte header.
        #[error("frame shorter than the 14-byte Ethernet header")]
        Truncated => "truncated",
        /// Destination is neither our unicast address nor broadcast.
        #[error("frame addressed to another station")]
        NotForUs => "not_for_us",
        /// The EtherType field is a length (< 0x0600, IEEE 802.3 LLC framing), which we do not speak.
        #[error("802.3 length field instead of an EtherType (LLC framing unsupported)")]
        LengthField => "length_field",
        /// No module is registered for this EtherType.
        #[error("no protocol for this EtherType")]
        UnknownEtherType => "unknown_ethertype",
        /// Source address has the group bit set (IEEE 802 forbids a multicast source).
        #[error("source address is a multicast address")]
        MulticastSource => "multicast_source",
        /// An outgoing frame has no link-layer destination (ARP did not
        /// resolve one).
        #[error("outgoing frame without a link-layer destination")]
        NoLinkDestination => "no_link_destination",
        /// No room in front of an outgoing frame for the header.
        #[error("no headroom for the Ethernet header")]
        NoHeadroom => "no_headroom",
    }
}

/// The fields of an Ethernet II header (smoltcp calls this a *repr*).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct EthHeader {
    /// Destination address.
    pub dst: MacAddr,
    /// Source address.
    pub src: MacAddr,
    /// Type of the payload (`EtherType::IPV4`, `EtherType::ARP`, ...).
    pub ethertype: EtherType,
}

impl EthHeader {
    /// Parses the header at the start of `frame`.
    ///
    /// Checks the length, that the type field is an EtherType (≥ 0x0600, IEEE
    /// 802.3 §3.2.6) and that the source is not a group address.
    pub fn parse(frame: &[u8]) -> Result<EthHeader, EthDropReason> {
        let s =
            Ethernet2Slice::from_slice_without_fcs(frame).map_err(|_| EthDropReason::Truncated)?;
        let hdr = EthHeader {
            dst: MacAddr(s.destination()),
            src: MacAddr(s.source()),
            ethertype: s.ether_type(),
        };
        if hdr.ethertype.0 < 0x0600 {
            return Err(EthDropReason::LengthField);
        }
        if hdr.src.is_multicast() {
            return Err(EthDropReason::MulticastSource);
        }
        Ok(hdr)
    }

    /// Writes the header into the first 14 bytes of `buf`.
    ///
    /// Returns `None` if `buf` is shorter than [`HEADER_LEN`].
    pub fn emit(&self, buf: &mut [u8]) -> Option<()> {
        let h = buf.get_mut(..HEADER_LEN)?;
        h[field::DESTINATION].copy_from_slice(&self.dst.0);
        h[field::SOURCE].copy_from_slice(&self.src.0);
        h[field::ETHERTYPE].copy_from_slice(&self.ethertype.0.to_be_bytes());
        Some(())
    }

    /// Parses the header at the front of `msg` and removes it, leaving the
    /// payload (the receive direction of the ETH stage).
    pub fn pop_from(msg: &mut Msg) -> Result<EthHeader, EthDropReason> {
        let hdr = EthHeader::parse(msg.as_slice())?;
        msg.pop(HEADER_LEN).map_err(|_| EthDropReason::Truncated)?;
        Ok(hdr)
    }

    /// Pushes this header in front of `msg` (the send direction).
    pub fn push_onto(&self, msg: &mut Msg) -> Result<(), MsgError> {
        let h = msg.push(HEADER_LEN)?;
        // `push` returned exactly HEADER_LEN bytes, so emit cannot fail.
        let _ = self.emit(h);
        Ok(())
    }
}

/// The destination filter of a station that is not promiscuous: accept
/// frames to our own unicast address and to broadcast, drop the rest with
/// [`EthDropReason::NotForUs`]. Multicast groups are not joined by this
/// stack (no IGMP), so multicast destinations are dropped too.
pub fn filter_destination(dst: MacAddr, own: MacAddr) -> Result<(), EthDropReason> {
    if dst == own || dst.is_broadcast() {
        Ok(())
    } else {
        Err(EthDropReason::NotForUs)
    }
}

/// Pads a complete outgoing frame with zeros up to [`MIN_FRAME_LEN`] bytes
/// (IEEE 802.3 §4.2.3.3: the MAC pads short frames; our software "MAC" does
/// it here). Receivers find the real payload length in the IP total length.
#[inline(always)]
pub fn pad_to_minimum(frame: &mut Msg) -> Result<(), MsgError> {
    let short = MIN_FRAME_LEN.saturating_sub(frame.len());
    if short == 0 {
        return Ok(());
    }
    // Zero exactly the pad, with two fixed-size stores that may overlap
    // (a UDP or TCP frame's pad is at most 18 bytes) rather than a call to
    // `memset` for a few bytes per frame; the buffer's tail room past the
    // pad may be shorter than any fixed chunk.
    if let Some(z) = frame.tailroom_mut().get_mut(..short) {
        zero_short(z);
    }
    // Fails (nothing appended) when the room is not there.
    frame.commit_tail(short)
}

/// Zeroes `z` in at most two (overlapping) 8- or 16-byte stores when it
/// is 8 to 32 bytes long.
#[inline(always)]
fn zero_short(z: &mut [u8]) {
    let n = z.len();
    if (16..=32).contains(&n) {
        z[..16].copy_from_slice(&[0; 16]);
        z[n - 16..].copy_from_slice(&[0; 16]);
    } else if (8..16).contains(&n) {
        z[..8].copy_from_slice(&[0; 8]);
        z[n - 8..].copy_from_slice(&[0; 8]);
    } else {
        z.fill(0);
    }
}

/// The demux key of a path through ETH (Mosberger, *Scout: A Path-Based
/// Operating System*, 1997, §3.4): its EtherType, in both modes — the
/// Ethernet header names the protocol above, not a conversation.
#[inline]
pub fn path_demux_key(ethertype: u16) -> Key {
    Key::from_array(ethertype.to_be_bytes())
}

/// Where [`packet_demux_key`]'s key lies: the EtherType, in every frame
/// with a whole header (the flow table's layout for ETH).
pub const FLOW_LAYOUT: FlowLayout =
    FlowLayout::new(HeaderLen::Fixed(HEADER_LEN as u8)).key(field::ETHERTYPE.start as u8, 2);

/// The demux key of a received frame, and the header bytes it spans: what
/// ETH's partial classifier extracts (the same key as [`path_demux_key`]
/// for the frame's EtherType; `mode` does not change it). `None` when the
/// frame is shorter than the header.
#[inline]
pub fn packet_demux_key(frame: &[u8], _mode: KeyMode) -> Option<(Key, usize)> {
    let t = frame.get(field::ETHERTYPE)?;
    Some((path_demux_key(u16::from_be_bytes([t[0], t[1]])), HEADER_LEN))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack_core::{MsgPool, PoolConfig};
    use proptest::prelude::*;

    const OWN: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);
    const PEER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 2]);

    #[test]
    fn emit_then_parse_round_trip() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut m = pool.alloc_copy(b"hello").unwrap();
        let hdr = EthHeader {
            dst: PEER,
            src: OWN,
            ethertype: EtherType::IPV4,
        };
        hdr.push_onto(&mut m).unwrap();
        assert_eq!(&m.as_slice()[..6], &PEER.0);
        assert_eq!(&m.as_slice()[12..14], &[0x08, 0x00]);
        assert_eq!(EthHeader::pop_from(&mut m).unwrap(), hdr);
        assert_eq!(m.as_slice(), b"hello");
    }

    #[test]
    fn typed_errors() {
        assert_eq!(EthHeader::parse(&[0; 13]), Err(EthDropReason::Truncated));
        let mut f = [0u8; 14];
        f[12] = 0x05; // 0x05dc = 1500, an 802.3 length
        f[13] = 0xdc;
        assert_eq!(EthHeader::parse(&f), Err(EthDropReason::LengthField));
        f[12] = 0x08;
        f[13] = 0x06;
        f[6] = 0x01; // group bit in the source
        assert_eq!(EthHeader::parse(&f), Err(EthDropReason::MulticastSource));
    }

    #[test]
    fn destination_filter() {
        assert_eq!(filter_destination(OWN, OWN), Ok(()));
        assert_eq!(filter_destination(MacAddr::BROADCAST, OWN), Ok(()));
        assert_eq!(filter_destination(PEER, OWN), Err(EthDropReason::NotForUs));
        let mcast = MacAddr([0x01, 0x00, 0x5e, 0, 0, 1]);
        assert_eq!(filter_destination(mcast, OWN), Err(EthDropReason::NotForUs));
    }

    #[test]
    fn pads_short_frames_only() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut m = pool.alloc_copy(&[0xAA; 42]).unwrap();
        pad_to_minimum(&mut m).unwrap();
        assert_eq!(m.len(), MIN_FRAME_LEN);
        assert!(m.as_slice()[42..].iter().all(|&b| b == 0));
        let mut big = pool.alloc_copy(&[0xAA; 100]).unwrap();
        pad_to_minimum(&mut big).unwrap();
        assert_eq!(big.len(), 100);
    }

    #[test]
    fn mac_classes() {
        assert!(MacAddr::BROADCAST.is_multicast());
        assert!(!MacAddr::ZERO.is_unicast());
        assert!(OWN.is_unicast());
        assert_eq!(OWN.to_string(), "02:00:00:00:00:01");
    }

    #[test]
    fn packet_key_matches_the_path_key() {
        let mut f = [0u8; HEADER_LEN];
        EthHeader {
            dst: OWN,
            src: PEER,
            ethertype: EtherType::ARP,
        }
        .emit(&mut f)
        .unwrap();
        for mode in [KeyMode::Active, KeyMode::Passive] {
            let (k, used) = packet_demux_key(&f, mode).unwrap();
            assert_eq!(k, path_demux_key(EtherType::ARP.0));
            assert_eq!(used, HEADER_LEN);
        }
        assert!(packet_demux_key(&f[..13], KeyMode::Active).is_none());
    }

    proptest! {
        /// Padding zeroes exactly the pad, whatever the buffer's tail held
        /// before (a reused buffer), and keeps the frame's bytes.
        #[test]
        fn pad_zeroes_exactly_the_pad(len in 0usize..100) {
            let pool = MsgPool::new(PoolConfig::small(2));
            let mut m = pool.alloc_copy(&[0xAA; 100]).unwrap();
            m.truncate(len);
            pad_to_minimum(&mut m).unwrap();
            prop_assert_eq!(m.len(), len.max(MIN_FRAME_LEN));
            prop_assert!(m.as_slice()[..len].iter().all(|&b| b == 0xAA));
            prop_assert!(m.as_slice()[len..].iter().all(|&b| b == 0));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(h) = EthHeader::parse(&bytes) {
                prop_assert!(bytes.len() >= HEADER_LEN);
                let mut out = [0u8; HEADER_LEN];
                h.emit(&mut out).unwrap();
                prop_assert_eq!(&out[..], &bytes[..HEADER_LEN]);
            }
        }
    }
}
