//! The BIDCTL header (spec §5.2): the whole of a BIDCTL message, guarded by
//! an Internet checksum so that an unreliable transport suffices and a
//! mangled packet is never taken for a reboot.
//!
//! ```text
//!  0       2       4        8        12       16       20
//! +-------+-------+--------+--------+--------+--------+
//! | flags |  sum  | srcBid | dstBid | reqTag | rplTag |
//! +-------+-------+--------+--------+--------+--------+
//! ```
//!
//! `flags` is big-endian; `sum` is the RFC 1071 checksum of the 20 bytes
//! computed with `sum = 0`; the BootIds and tags are big-endian `u32`
//! (pathstack's choice for X32's raw copies, spec §12 item 5).

use crate::boot::BootId;
use pathstack_inet::wire::checksum;

/// Where each header field lies (spec §5.2).
pub mod field {
    use std::ops::Range;

    /// [`super::flags`].
    pub const FLAGS: Range<usize> = 0..2;
    /// Internet checksum of the 20 header bytes.
    pub const SUM: Range<usize> = 2..4;
    /// The sender's BootId (always valid).
    pub const SRC_BID: Range<usize> = 4..8;
    /// The sender's idea of the receiver's BootId (0 if unknown).
    pub const DST_BID: Range<usize> = 8..12;
    /// The tag of this query (with [`super::flags::QUERY`]).
    pub const REQ_TAG: Range<usize> = 12..16;
    /// The query tag being answered (with [`super::flags::RESPONSE`]).
    pub const RPL_TAG: Range<usize> = 16..20;
}

/// Length of the BIDCTL header (and message: it has no payload).
pub const HEADER_LEN: usize = 20;

/// The flag bits (spec §5.2). No flag at all is a keepalive or "null"
/// message; QUERY and RESPONSE may be combined.
pub mod flags {
    /// Asks for the receiver's BootId; `reqTag` names the query.
    pub const QUERY: u16 = 0x1;
    /// Answers the query whose tag is in `rplTag`.
    pub const RESPONSE: u16 = 0x2;
    /// Boot broadcast: "I (re)started with this `srcBid`".
    pub const BCAST: u16 = 0x4;
}

pathstack_core::drop_reasons! {
    /// Why a BIDCTL message was dropped, by the header view or by the
    /// engine ([`crate::boot::Bidctl::on_packet`]).
    #[derive(thiserror::Error)]
    pub enum BidctlDropReason in "bidctl" {
        /// Shorter than the 20-byte header.
        #[error("BIDCTL message truncated")]
        Truncated => "truncated",
        /// The checksum does not verify (spec §5.2).
        #[error("bad BIDCTL checksum")]
        BadChecksum => "bad_checksum",
        /// A boot broadcast from a host we hold no state for (spec §5.5:
        /// only hosts we talk to care about its reboot).
        #[error("BIDCTL boot broadcast from an unknown host")]
        BcastFromUnknown => "bcast_from_unknown",
        /// A RESPONSE whose `rplTag` is not our outstanding query's.
        #[error("BIDCTL response to another query")]
        WrongTag => "wrong_tag",
        /// Neither the RESPONSE we wait for nor a QUERY to answer, while a
        /// handshake with the peer is under way (spec §5.5 OPEN/QUERY rows).
        #[error("BIDCTL message while waiting for a response")]
        AwaitingResponse => "awaiting_response",
        /// Its `dstBid` is not our BootId (answered with a null message).
        #[error("BIDCTL message for another incarnation of this host")]
        StaleDstBid => "stale_dst_bid",
        /// Its `srcBid` is not the peer's BootId we know: a query checks it.
        #[error("BIDCTL message from an unconfirmed incarnation of the peer")]
        UnknownSrcBid => "unknown_src_bid",
        /// From one of our own addresses (our boot broadcast looped back).
        #[error("BIDCTL message from this host")]
        FromLocalHost => "from_local_host",
        /// From a new peer while every slot of the peer table is held by a
        /// peer with registrants.
        #[error("BIDCTL peer table full")]
        TableFull => "table_full",
    }
}

/// A BIDCTL header (spec §5.2), without its checksum: [`BidctlHeader::to_bytes`]
/// computes it, [`BidctlHeader::parse`] checks it.
///
/// ```
/// use pathstack_rpc::boot::BootId;
/// use pathstack_rpc::wire::bidctl::{flags, BidctlHeader};
///
/// let query = BidctlHeader {
///     flags: flags::QUERY,
///     src_bid: BootId(0x2F5E_1000),
///     dst_bid: BootId::UNKNOWN,
///     req_tag: 0x2F5E_0ABC,
///     rpl_tag: 0,
/// };
/// let bytes = query.to_bytes();
/// assert_eq!(&bytes[..4], &[0x00, 0x01, 0x86, 0x86]);
/// assert_eq!(BidctlHeader::parse(&bytes).unwrap().0, query);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BidctlHeader {
    /// [`flags`] bits (unknown bits are kept, as X32 ignores them).
    pub flags: u16,
    /// The sender's BootId.
    pub src_bid: BootId,
    /// The sender's idea of the receiver's BootId.
    pub dst_bid: BootId,
    /// The query's tag (0 unless [`flags::QUERY`]).
    pub req_tag: u32,
    /// The answered query's tag (0 unless [`flags::RESPONSE`]).
    pub rpl_tag: u32,
}

fn word(b: &[u8], at: std::ops::Range<usize>) -> [u8; 4] {
    [
        b[at.start],
        b[at.start + 1],
        b[at.start + 2],
        b[at.start + 3],
    ]
}

impl BidctlHeader {
    /// Whether the QUERY flag is set.
    pub const fn is_query(&self) -> bool {
        self.flags & flags::QUERY != 0
    }
    /// Whether the RESPONSE flag is set.
    pub const fn is_response(&self) -> bool {
        self.flags & flags::RESPONSE != 0
    }
    /// Whether the BCAST flag is set.
    pub const fn is_bcast(&self) -> bool {
        self.flags & flags::BCAST != 0
    }

    /// Reads and checks the header at the front of `bytes`; returns it and
    /// what follows (nothing in a BIDCTL message but, say, link padding,
    /// which the caller ignores).
    pub fn parse(bytes: &[u8]) -> Result<(BidctlHeader, &[u8]), BidctlDropReason> {
        if bytes.len() < HEADER_LEN {
            return Err(BidctlDropReason::Truncated);
        }
        if !checksum::verify(&[&bytes[..HEADER_LEN]]) {
            return Err(BidctlDropReason::BadChecksum);
        }
        let h = BidctlHeader {
            flags: u16::from_be_bytes([bytes[0], bytes[1]]),
            src_bid: BootId::from_be_bytes(word(bytes, field::SRC_BID)),
            dst_bid: BootId::from_be_bytes(word(bytes, field::DST_BID)),
            req_tag: u32::from_be_bytes(word(bytes, field::REQ_TAG)),
            rpl_tag: u32::from_be_bytes(word(bytes, field::RPL_TAG)),
        };
        Ok((h, &bytes[HEADER_LEN..]))
    }

    /// Writes the header, checksum included, into the first
    /// [`HEADER_LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`HEADER_LEN`] (a caller bug).
    pub fn emit(&self, buf: &mut [u8]) {
        buf[..HEADER_LEN].copy_from_slice(&self.to_bytes());
    }

    /// The header's wire bytes, checksum included.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::FLAGS].copy_from_slice(&self.flags.to_be_bytes());
        b[field::SRC_BID].copy_from_slice(&self.src_bid.to_be_bytes());
        b[field::DST_BID].copy_from_slice(&self.dst_bid.to_be_bytes());
        b[field::REQ_TAG].copy_from_slice(&self.req_tag.to_be_bytes());
        b[field::RPL_TAG].copy_from_slice(&self.rpl_tag.to_be_bytes());
        let sum = checksum::compute(&[&b]);
        b[field::SUM].copy_from_slice(&sum);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Spec §11.1: QUERY (src 0x2F5E1000, dst 0, tag 0x2F5E0ABC).
    const QUERY: [u8; 20] = [
        0x00, 0x01, 0x86, 0x86, 0x2f, 0x5e, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2f, 0x5e, 0x0a,
        0xbc, 0x00, 0x00, 0x00, 0x00,
    ];
    /// Spec §11.1: RESPONSE from 0x2F5E2000.
    const RESPONSE: [u8; 20] = [
        0x00, 0x02, 0x37, 0x27, 0x2f, 0x5e, 0x20, 0x00, 0x2f, 0x5e, 0x10, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x2f, 0x5e, 0x0a, 0xbc,
    ];
    /// Spec §11.1: BCAST from 0x2F5E3000.
    const BCAST: [u8; 20] = [
        0x00, 0x04, 0xa0, 0x9d, 0x2f, 0x5e, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    fn vectors() -> [([u8; 20], BidctlHeader); 3] {
        [
            (
                QUERY,
                BidctlHeader {
                    flags: flags::QUERY,
                    src_bid: BootId(0x2F5E_1000),
                    dst_bid: BootId(0),
                    req_tag: 0x2F5E_0ABC,
                    rpl_tag: 0,
                },
            ),
            (
                RESPONSE,
                BidctlHeader {
                    flags: flags::RESPONSE,
                    src_bid: BootId(0x2F5E_2000),
                    dst_bid: BootId(0x2F5E_1000),
                    req_tag: 0,
                    rpl_tag: 0x2F5E_0ABC,
                },
            ),
            (
                BCAST,
                BidctlHeader {
                    flags: flags::BCAST,
                    src_bid: BootId(0x2F5E_3000),
                    dst_bid: BootId(0),
                    req_tag: 0,
                    rpl_tag: 0,
                },
            ),
        ]
    }

    #[test]
    fn spec_vectors_both_ways_with_their_checksums() {
        for (bytes, h) in vectors() {
            assert_eq!(h.to_bytes(), bytes, "{h:?}");
            let mut buf = [0u8; 24];
            h.emit(&mut buf);
            assert_eq!(buf[..20], bytes);
            let (p, rest) = BidctlHeader::parse(&buf).unwrap();
            assert_eq!(p, h);
            assert_eq!(rest.len(), 4);
        }
    }

    #[test]
    fn flipping_any_of_the_160_bits_makes_the_receiver_drop() {
        for (bytes, _) in vectors() {
            for bit in 0..160 {
                let mut b = bytes;
                b[bit / 8] ^= 0x80 >> (bit % 8);
                assert_eq!(
                    BidctlHeader::parse(&b),
                    Err(BidctlDropReason::BadChecksum),
                    "bit {bit} of {bytes:02x?}"
                );
            }
        }
    }

    #[test]
    fn short_input_is_truncated() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                BidctlHeader::parse(&QUERY[..n]),
                Err(BidctlDropReason::Truncated)
            );
        }
    }

    #[test]
    fn flag_predicates() {
        let (q, r, b) = (vectors()[0].1, vectors()[1].1, vectors()[2].1);
        assert!(q.is_query() && !q.is_response() && !q.is_bcast());
        assert!(!r.is_query() && r.is_response() && !r.is_bcast());
        assert!(!b.is_query() && !b.is_response() && b.is_bcast());
    }

    proptest! {
        #[test]
        fn parse_emit_round_trip(f: u16, src: u32, dst: u32, req: u32, rpl: u32) {
            let h = BidctlHeader { flags: f, src_bid: BootId(src), dst_bid: BootId(dst), req_tag: req, rpl_tag: rpl };
            let bytes = h.to_bytes();
            let (p, rest) = BidctlHeader::parse(&bytes).unwrap();
            prop_assert_eq!(p, h);
            prop_assert!(rest.is_empty());
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = BidctlHeader::parse(&bytes);
        }
    }
}
