//! The BID header (spec §4.2): the sender's and the receiver's BootIds in
//! front of every message between CHAN and BLAST.
//!
//! ```text
//!  0        4        8        12
//! +--------+--------+--------+
//! | srcBid | dstBid | hlpNum |  payload (CHAN header and data)
//! +--------+--------+--------+
//! ```
//!
//! All three fields are big-endian `u32` (the BootIds by pathstack's
//! choice, spec §12 item 5; `hlpNum` as X32's `htonl`, four bytes per
//! spec §12 item 4).

use crate::boot::BootId;
use pathstack_core::demux::{FlowLayout, HeaderLen, Key, KeyMode};

/// Where each header field lies (spec §4.2).
pub mod field {
    use std::ops::Range;

    /// The sender's BootId.
    pub const SRC_BID: Range<usize> = 0..4;
    /// The sender's idea of the receiver's BootId.
    pub const DST_BID: Range<usize> = 4..8;
    /// The upper protocol's number (CHAN = 13).
    pub const HLP_NUM: Range<usize> = 8..12;
    /// First payload byte.
    pub const PAYLOAD: usize = 12;
}

/// Length of the BID header.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// The upper protocol number of CHAN, the default `hlpNum` (spec §0.3).
pub const HLP_CHAN: u32 = 13;

/// The demux key of a received message and the header bytes it spans:
/// what BID's partial classifier extracts, `hlpNum` (spec §4.2; the
/// BootIds are checked by the stage, not demultiplexed on). `None` when
/// the message is shorter than the header; `mode` does not change it.
#[inline]
pub fn packet_demux_key(msg: &[u8], _mode: KeyMode) -> Option<(Key, usize)> {
    let h = msg.get(field::HLP_NUM)?;
    let h: [u8; 4] = h.try_into().ok()?;
    msg.get(..HEADER_LEN)?;
    Some((Key::from_array(h), HEADER_LEN))
}

/// Where [`packet_demux_key`]'s key lies: `hlpNum`, in every message with
/// a whole header (the flow table's layout for BID).
pub const FLOW_LAYOUT: FlowLayout =
    FlowLayout::new(HeaderLen::Fixed(HEADER_LEN as u8)).key(field::HLP_NUM.start as u8, 4);

pathstack_core::drop_reasons! {
    /// Why a BID message was dropped (spec §4.3), by the header view or by
    /// the BID stage with the verdict of [`crate::boot::BidFilter`].
    #[derive(thiserror::Error)]
    pub enum BidDropReason in "bid" {
        /// Shorter than the 12-byte header.
        #[error("BID message truncated")]
        Truncated => "truncated",
        /// Its `dstBid` is not our BootId: it was meant for an earlier
        /// incarnation of this host (an empty BID message goes back).
        #[error("BID message for another incarnation of this host")]
        StaleDstBid => "stale_dst_bid",
        /// Its `srcBid` is not the peer's BootId we know: BIDCTL is asked to
        /// verify it before anything from that incarnation goes up.
        #[error("BID message from an unconfirmed incarnation of the peer")]
        UnknownSrcBid => "unknown_src_bid",
        /// The peer's BootId is not known yet (BIDCTL's first handshake is
        /// under way): the session is inactive and drops arrivals.
        #[error("BID session inactive: peer BootId not known yet")]
        Inactive => "inactive",
        /// A message to send while the peer's BootId is not known yet
        /// (X32: an inactive session has no push); CHAN retransmits later.
        #[error("cannot send on an inactive BID session: peer BootId not known yet")]
        InactiveSend => "inactive_send",
        /// No upper protocol registered for its `hlpNum`.
        #[error("no upper protocol for the BID hlpNum")]
        UnknownProtocol => "unknown_protocol",
    }
}

/// A BID header (spec §4.2).
///
/// ```
/// use pathstack_rpc::boot::BootId;
/// use pathstack_rpc::wire::bid::{BidHeader, HLP_CHAN};
///
/// let h = BidHeader { src_bid: BootId(0x2F5E_1000), dst_bid: BootId(0x2F5E_2000), hlp_num: HLP_CHAN };
/// let bytes = h.to_bytes();
/// assert_eq!(bytes, [0x2f, 0x5e, 0x10, 0x00, 0x2f, 0x5e, 0x20, 0x00, 0, 0, 0, 0x0d]);
/// assert_eq!(BidHeader::parse(&bytes), Ok((h, &[][..])));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BidHeader {
    /// The sender's BootId.
    pub src_bid: BootId,
    /// The sender's idea of the receiver's BootId.
    pub dst_bid: BootId,
    /// The upper protocol number ([`HLP_CHAN`] for CHAN).
    pub hlp_num: u32,
}

fn word(b: &[u8], at: std::ops::Range<usize>) -> [u8; 4] {
    [
        b[at.start],
        b[at.start + 1],
        b[at.start + 2],
        b[at.start + 3],
    ]
}

impl BidHeader {
    /// Reads the header at the front of `bytes`; returns it and the
    /// payload after it.
    pub fn parse(bytes: &[u8]) -> Result<(BidHeader, &[u8]), BidDropReason> {
        if bytes.len() < HEADER_LEN {
            return Err(BidDropReason::Truncated);
        }
        let h = BidHeader {
            src_bid: BootId::from_be_bytes(word(bytes, field::SRC_BID)),
            dst_bid: BootId::from_be_bytes(word(bytes, field::DST_BID)),
            hlp_num: u32::from_be_bytes(word(bytes, field::HLP_NUM)),
        };
        Ok((h, &bytes[HEADER_LEN..]))
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`HEADER_LEN`] (a caller bug: the stage
    /// makes room for the header first).
    pub fn emit(&self, buf: &mut [u8]) {
        buf[..HEADER_LEN].copy_from_slice(&self.to_bytes());
    }

    /// The header's wire bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::SRC_BID].copy_from_slice(&self.src_bid.to_be_bytes());
        b[field::DST_BID].copy_from_slice(&self.dst_bid.to_be_bytes());
        b[field::HLP_NUM].copy_from_slice(&self.hlp_num.to_be_bytes());
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Spec §11.1: BID (my 0x2F5E1000, peer 0x2F5E2000, CHAN).
    const VECTOR: [u8; 12] = [
        0x2f, 0x5e, 0x10, 0x00, 0x2f, 0x5e, 0x20, 0x00, 0x00, 0x00, 0x00, 0x0d,
    ];

    #[test]
    fn spec_vector_both_ways() {
        let h = BidHeader {
            src_bid: BootId(0x2F5E_1000),
            dst_bid: BootId(0x2F5E_2000),
            hlp_num: HLP_CHAN,
        };
        assert_eq!(h.to_bytes(), VECTOR);
        let mut buf = [0xAAu8; 20];
        h.emit(&mut buf);
        assert_eq!(buf[..12], VECTOR);
        let (p, payload) = BidHeader::parse(&buf).unwrap();
        assert_eq!(p, h);
        assert_eq!(payload, &[0xAA; 8]);
    }

    #[test]
    fn short_input_is_truncated() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                BidHeader::parse(&VECTOR[..n]),
                Err(BidDropReason::Truncated)
            );
        }
    }

    proptest! {
        #[test]
        fn parse_emit_round_trip(src: u32, dst: u32, hlp: u32, tail in proptest::collection::vec(any::<u8>(), 0..16)) {
            let h = BidHeader { src_bid: BootId(src), dst_bid: BootId(dst), hlp_num: hlp };
            let mut bytes = h.to_bytes().to_vec();
            bytes.extend_from_slice(&tail);
            let (p, payload) = BidHeader::parse(&bytes).unwrap();
            prop_assert_eq!(p, h);
            prop_assert_eq!(payload, &tail[..]);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            let _ = BidHeader::parse(&bytes);
        }
    }
}
