//! The CHAN header (spec §6.2): 16 bytes that name a request/reply
//! channel, say who sent the packet and what it carries, and number the
//! call for at-most-once execution.
//!
//! | off | size | field | order |
//! |---|---|---|---|
//! | 0 | 2 | chan (≥ 1) | BE |
//! | 2 | 1 | unused (sent 0, ignored) | – |
//! | 3 | 1 | flags ([`flags`]) | – |
//! | 4 | 4 | prot_id (upper protocol, MSELECT = 20) | BE |
//! | 8 | 4 | seq (call number of the channel) | BE |
//! | 12 | 4 | len (user bytes after the header) | BE |
//!
//! Receipt applies the x-kernel's length rule (X32 `chan.c`): a `len`
//! below the bytes present truncates the payload (link padding), a `len`
//! above them drops the packet.

use pathstack_core::demux::{FlowLayout, HeaderLen, Key, KeyMode};
use std::ops::Range;

/// Where each header field lies.
pub mod field {
    use std::ops::Range;

    /// Channel number.
    pub const CHAN: Range<usize> = 0..2;
    /// Unused byte (X32 leaves it uninitialised, §12 item 15; sent as 0).
    pub const UNUSED: usize = 2;
    /// Flag bits.
    pub const FLAGS: usize = 3;
    /// Upper protocol number.
    pub const PROT_ID: Range<usize> = 4..8;
    /// Call sequence number.
    pub const SEQ: Range<usize> = 8..12;
    /// User bytes after the header.
    pub const LEN: Range<usize> = 12..16;
}

/// Length of the CHAN header.
pub const HEADER_LEN: usize = 16;

/// The flag bits of byte 3 (spec §6.2).
pub mod flags {
    /// Sent by the client end of the channel (demultiplexes to the server
    /// table on receipt).
    pub const FROM_CLIENT: u8 = 0x01;
    /// User data (a request or a reply) follows the header.
    pub const USER_MSG: u8 = 0x02;
    /// The sender asks for an acknowledgement (probe or retransmission).
    pub const ACK_REQUESTED: u8 = 0x04;
    /// "I do not have it": asks the other end to resend its message.
    pub const NEGATIVE_ACK: u8 = 0x08;
    /// Every bit the protocol defines; others are ignored on receipt.
    pub const ALL: u8 = FROM_CLIENT | USER_MSG | ACK_REQUESTED | NEGATIVE_ACK;
}

/// The default CHAN protocol number of MSELECT, CHAN's usual upper
/// protocol (spec §0.3, implicit numbering).
pub const PROT_ID_MSELECT: u32 = 20;

/// The demux key of a received packet and the header bytes it spans:
/// what CHAN's partial classifier extracts. Requests (`FROM_CLIENT` set)
/// go to the server's path and replies to the client's, so the key is
/// that flag bit, then `prot_id` (spec §6.2); the other flags and the
/// channel number are the stage's business. `None` when the packet is
/// shorter than the header; `mode` does not change it.
#[inline]
pub fn packet_demux_key(packet: &[u8], _mode: KeyMode) -> Option<(Key, usize)> {
    let h = packet.get(..HEADER_LEN)?;
    let side = h[field::FLAGS] & flags::FROM_CLIENT;
    let p = &h[field::PROT_ID];
    Some((Key::from_array([side, p[0], p[1], p[2], p[3]]), HEADER_LEN))
}

/// Where [`packet_demux_key`]'s key lies: the `FROM_CLIENT` bit of the
/// flags byte, then `prot_id`, in every packet with a whole header (the
/// flow table's layout for CHAN).
pub const FLOW_LAYOUT: FlowLayout = FlowLayout::new(HeaderLen::Fixed(HEADER_LEN as u8))
    .key_bits(field::FLAGS as u8, flags::FROM_CLIENT)
    .key(field::PROT_ID.start as u8, 4);

pathstack_core::drop_reasons! {
    /// Why a CHAN packet was refused or discarded, by the header view or
    /// by the channel engines.
    #[derive(thiserror::Error)]
    pub enum ChanDropReason in "chan" {
        /// Shorter than the 16-byte header.
        #[error("CHAN packet shorter than its header")]
        Truncated => "truncated",
        /// The `len` field claims more bytes than the packet carries
        /// (spec §6.2, C7).
        #[error("CHAN length field beyond the packet")]
        BadLength => "bad_length",
        /// Sequence number below the channel's (a stale duplicate; spec
        /// §6.3, C7).
        #[error("CHAN packet with an old sequence number")]
        OldSeq => "old_seq",
        /// Sequence number above a client channel's current call: no such
        /// call was ever made (spec §6.4 "seq > ours → drop").
        #[error("CHAN packet for a call not yet made")]
        FutureSeq => "future_seq",
        /// A duplicate of the current call's packet that needs no answer
        /// (spec §6.5 "current seq → drop", C2).
        #[error("duplicate CHAN packet for the current call")]
        Duplicate => "duplicate",
        /// A new request on a server channel still executing the previous
        /// one (spec §6.5 EXECUTE, new seq).
        #[error("new CHAN request while the previous one executes")]
        Busy => "busy",
        /// A control packet with nothing to act on in the channel's state
        /// (e.g. a late explicit ACK).
        #[error("CHAN control packet with nothing to act on")]
        Unsolicited => "unsolicited",
        /// No client channel with this number (and no dormant one).
        #[error("no CHAN client channel for the packet")]
        NoChannel => "no_channel",
        /// The channel was disabled by a peer reboot (spec §6.4, §6.5).
        #[error("CHAN channel disabled by a peer reboot")]
        Disabled => "disabled",
        /// A request for a protocol number no server enabled.
        #[error("no CHAN server for the protocol number")]
        NoListener => "no_listener",
        /// The server channel table is full (bound `max_channels`).
        #[error("CHAN server channel table full")]
        TableFull => "table_full",
        /// A reply longer than the path carries (16 BLAST fragments).
        #[error("CHAN reply too large for the transport")]
        TooLarge => "too_large",
    }
}

/// A CHAN header, parsed or to be emitted.
///
/// ```
/// use pathstack_rpc::wire::chan::{flags, ChanHeader};
/// let h = ChanHeader { chan: 1, flags: flags::FROM_CLIENT | flags::USER_MSG,
///                      prot_id: 20, seq: 2, len: 8 };
/// let bytes = h.to_bytes();
/// assert_eq!(bytes[..4], [0x00, 0x01, 0x00, 0x03]);
/// let packet = [&bytes[..], &[0u8; 8]].concat();
/// assert_eq!(ChanHeader::parse(&packet).unwrap(), (h, &[0u8; 8][..]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChanHeader {
    /// Channel number (≥ 1 for real channels).
    pub chan: u16,
    /// Flag bits ([`flags`]); unknown bits are kept as received.
    pub flags: u8,
    /// Upper protocol number.
    pub prot_id: u32,
    /// Call sequence number.
    pub seq: u32,
    /// User bytes after the header (0 for control packets).
    pub len: u32,
}

impl ChanHeader {
    /// Parses a received packet: the header and its payload, truncated to
    /// `len` when the packet carries more (padding); a `len` beyond the
    /// packet drops it (spec §6.2).
    #[inline]
    pub fn parse(packet: &[u8]) -> Result<(ChanHeader, &[u8]), ChanDropReason> {
        if packet.len() < HEADER_LEN {
            return Err(ChanDropReason::Truncated);
        }
        let h = ChanHeader {
            chan: u16::from_be_bytes(be(packet, field::CHAN)),
            flags: packet[field::FLAGS],
            prot_id: u32::from_be_bytes(be(packet, field::PROT_ID)),
            seq: u32::from_be_bytes(be(packet, field::SEQ)),
            len: u32::from_be_bytes(be(packet, field::LEN)),
        };
        let payload = &packet[HEADER_LEN..];
        let len = usize::try_from(h.len).map_err(|_| ChanDropReason::BadLength)?;
        if len > payload.len() {
            return Err(ChanDropReason::BadLength);
        }
        Ok((h, &payload[..len]))
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`
    /// (the unused byte as 0, §12 item 15).
    ///
    /// # Panics
    /// If `buf` is shorter than [`HEADER_LEN`] (a caller bug, never wire
    /// input).
    pub fn emit(&self, buf: &mut [u8]) {
        buf[..HEADER_LEN].copy_from_slice(&self.to_bytes());
    }

    /// The header's 16 bytes.
    #[inline]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::CHAN].copy_from_slice(&self.chan.to_be_bytes());
        b[field::UNUSED] = 0;
        b[field::FLAGS] = self.flags;
        b[field::PROT_ID].copy_from_slice(&self.prot_id.to_be_bytes());
        b[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        b[field::LEN].copy_from_slice(&self.len.to_be_bytes());
        b
    }

    /// Whether every bit of `f` is set.
    pub fn has(&self, f: u8) -> bool {
        self.flags & f == f
    }
}

fn be<const N: usize>(b: &[u8], r: Range<usize>) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[r]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    fn h(flags: u8, seq: u32, len: u32) -> ChanHeader {
        ChanHeader {
            chan: 1,
            flags,
            prot_id: 20,
            seq,
            len,
        }
    }

    #[test]
    fn spec_11_1_vectors_both_ways() {
        use flags::*;
        let cases = [
            // request (chan 1, seq 2, 8 B)
            (
                h(FROM_CLIENT | USER_MSG, 2, 8),
                "00 01 00 03 00 00 00 14 00 00 00 02 00 00 00 08",
            ),
            // reply
            (
                h(USER_MSG, 2, 8),
                "00 01 00 02 00 00 00 14 00 00 00 02 00 00 00 08",
            ),
            // explicit client ACK
            (
                h(FROM_CLIENT, 3, 0),
                "00 01 00 01 00 00 00 14 00 00 00 03 00 00 00 00",
            ),
            // server ACK: flags 00, seq 2, len 0
            (
                h(0, 2, 0),
                "00 01 00 00 00 00 00 14 00 00 00 02 00 00 00 00",
            ),
            // client NACK 09, server NACK 08
            (
                h(FROM_CLIENT | NEGATIVE_ACK, 2, 0),
                "00 01 00 09 00 00 00 14 00 00 00 02 00 00 00 00",
            ),
            (
                h(NEGATIVE_ACK, 2, 0),
                "00 01 00 08 00 00 00 14 00 00 00 02 00 00 00 00",
            ),
            // client probe 05, len 0
            (
                h(FROM_CLIENT | ACK_REQUESTED, 2, 0),
                "00 01 00 05 00 00 00 14 00 00 00 02 00 00 00 00",
            ),
            // short-request retransmission 07, len 8
            (
                h(FROM_CLIENT | USER_MSG | ACK_REQUESTED, 2, 8),
                "00 01 00 07 00 00 00 14 00 00 00 02 00 00 00 08",
            ),
        ];
        for (header, bytes) in cases {
            let bytes = hex(bytes);
            assert_eq!(header.to_bytes().to_vec(), bytes);
            let mut packet = bytes.clone();
            packet.extend(std::iter::repeat_n(0xAB, header.len as usize));
            let (parsed, payload) = ChanHeader::parse(&packet).unwrap();
            assert_eq!(parsed, header);
            assert_eq!(payload.len(), header.len as usize);
        }
    }

    #[test]
    fn length_rule_truncates_padding_and_drops_short_packets() {
        let header = h(flags::USER_MSG, 2, 8);
        let mut packet = header.to_bytes().to_vec();
        packet.extend([1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0]); // 3 bytes padding
        let (_, payload) = ChanHeader::parse(&packet).unwrap();
        assert_eq!(payload, &[1, 2, 3, 4, 5, 6, 7, 8]);
        packet.truncate(HEADER_LEN + 7);
        assert_eq!(ChanHeader::parse(&packet), Err(ChanDropReason::BadLength));
        assert_eq!(
            ChanHeader::parse(&packet[..15]),
            Err(ChanDropReason::Truncated)
        );
    }

    #[test]
    fn unused_byte_is_ignored_on_receipt() {
        let mut b = h(flags::USER_MSG, 2, 0).to_bytes();
        b[field::UNUSED] = 0x5A;
        assert_eq!(ChanHeader::parse(&b).unwrap().0, h(flags::USER_MSG, 2, 0));
    }

    proptest! {
        #[test]
        fn parse_emit_roundtrip(chan: u16, fl: u8, prot_id: u32, seq: u32, len in 0u32..64) {
            let header = ChanHeader { chan, flags: fl, prot_id, seq, len };
            let mut packet = vec![0u8; HEADER_LEN + len as usize];
            header.emit(&mut packet);
            let (parsed, payload) = ChanHeader::parse(&packet).unwrap();
            prop_assert_eq!(parsed, header);
            prop_assert_eq!(payload.len(), len as usize);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = ChanHeader::parse(&bytes);
        }
    }
}
