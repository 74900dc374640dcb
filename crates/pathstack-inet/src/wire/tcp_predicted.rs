//! The TCP header as header prediction reads it: the usual segment of an
//! established connection read from fixed offsets in place, without the
//! general option walk or a [`TcpRepr`] (issue 26: the predicted segment
//! costs its checks, not a parse). Van Jacobson's prediction tests the
//! header's shape first (BSD's `tcp_input` looks for exactly the
//! timestamp option laid out as RFC 7323 Appendix A recommends, NOP NOP
//! TS; Linux's `tcp_rcv_established` compares the header-length and flag
//! word, `pred_flags`, and then reads the aligned timestamps): ACK with or
//! without PSH, and either no options or just that timestamp option.
//! Every other header is not this shape and takes the general parse.
//!
//! The fields read are the ones [`TcpRepr::parse_received`] would read
//! for the same bytes (the option walk of NOP NOP TS gives exactly these
//! timestamps), so the control block sees the same segment either way.

use super::checksum;
use super::tcp::{field, option_kind, TcpDropReason, TcpFlags, TcpRepr, HEADER_LEN};

/// The header with the timestamp option alone, NOP NOP TS: 20 + 12 octets.
const TS_HEADER_LEN: usize = HEADER_LEN + 12;

/// The first option word of the aligned timestamp option (RFC 7323
/// Appendix A): NOP, NOP, kind 8, length 10.
const TS_WORD: [u8; 4] = [
    option_kind::NOP,
    option_kind::NOP,
    option_kind::TIMESTAMPS,
    10,
];

/// The fields of a segment of the predicted shape: what header prediction
/// asks of a segment (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPredicted {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Control bits (ACK, and PSH or not, for a segment of the shape).
    pub flags: TcpFlags,
    /// Receive window (unscaled, as on the wire).
    pub window: u16,
    /// Timestamps `(TSval, TSecr)` (RFC 7323 §3.2).
    pub timestamps: Option<(u32, u32)>,
    /// Whether the segment carries SACK blocks (never, for one read from
    /// the wire here; a general segment's view may).
    pub sack: bool,
}

impl TcpPredicted {
    /// Reads a received segment in place when its header has the
    /// predicted shape: `None` (nothing checked) when it has not, and the
    /// general parse takes it; otherwise the checksum is verified as
    /// [`TcpRepr::parse_received`] verifies it (`pseudo` the template's
    /// pseudo-header sum) and the fields and header length returned.
    #[inline]
    pub fn parse_received(
        bytes: &[u8],
        pseudo: u64,
        checksum_verified: bool,
    ) -> Option<Result<(TcpPredicted, usize), TcpDropReason>> {
        let h = bytes.first_chunk::<TS_HEADER_LEN>()?;
        let flags = h[field::FLAGS] & !TcpFlags::PSH.bits();
        if flags != TcpFlags::ACK.bits() {
            return None;
        }
        let (hl, timestamps) = match h[field::DATA_OFF] >> 4 {
            5 => (HEADER_LEN, None),
            8 if h[HEADER_LEN..HEADER_LEN + 4] == TS_WORD => (
                TS_HEADER_LEN,
                Some((be32(h, HEADER_LEN + 4), be32(h, HEADER_LEN + 8))),
            ),
            _ => return None,
        };
        // At least TS_HEADER_LEN octets: the length fits in 16 bits unless
        // the segment is oversized, which the general parse reports.
        let len = u16::try_from(bytes.len()).ok()?;
        let len_word = u64::from(u16::from_ne_bytes(len.to_be_bytes()));
        if !checksum_verified && !checksum::verifies(pseudo + len_word + checksum::partial(bytes)) {
            return Some(Err(TcpDropReason::BadChecksum));
        }
        Some(Ok((
            TcpPredicted {
                seq: be32(h, field::SEQ_NUM.start),
                ack: be32(h, field::ACK_NUM.start),
                flags: TcpFlags::from_bits(h[field::FLAGS]),
                window: u16::from_be_bytes([h[field::WINDOW.start], h[field::WINDOW.start + 1]]),
                timestamps,
                sack: false,
            },
            hl,
        )))
    }
}

impl From<&TcpRepr> for TcpPredicted {
    /// The fields of a parsed segment prediction asks about.
    #[inline(always)]
    fn from(r: &TcpRepr) -> Self {
        TcpPredicted {
            seq: r.seq,
            ack: r.ack,
            flags: r.flags,
            window: r.window,
            timestamps: r.options.timestamps,
            sack: !r.options.sack_blocks().is_empty(),
        }
    }
}

/// The big-endian word at `at` of the header.
#[inline(always)]
fn be32(h: &[u8; TS_HEADER_LEN], at: usize) -> u32 {
    u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tcp::tests::repr_of;
    use crate::wire::tcp::{TcpOptions, TcpTemplate};
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    /// A segment as `TcpRepr` writes it, then perhaps damaged.
    fn segment(
        repr: &TcpRepr,
        payload: &[u8],
        s: Ipv4Addr,
        d: Ipv4Addr,
        damage: Option<(usize, u8)>,
    ) -> Vec<u8> {
        let hl = repr.header_len();
        let mut bytes = vec![0u8; hl + payload.len()];
        bytes[hl..].copy_from_slice(payload);
        repr.emit(&mut bytes, s, d, payload).expect("fits");
        if let Some((at, x)) = damage {
            let at = at % bytes.len();
            bytes[at] ^= x;
        }
        bytes
    }

    proptest! {
        /// The in-place read is the general parse for the segments it
        /// takes: the same fields, header length and checksum verdict;
        /// and it takes every segment of the predicted shape (ACK or
        /// ACK|PSH, no options or the aligned timestamps alone, at least
        /// 32 octets).
        #[test]
        fn predicted_read_is_the_parse(
            (seq, ack, flags, window, urgent) in any::<(u32, u32, u8, u16, u16)>(),
            ts in proptest::option::of(any::<(u32, u32)>()),
            sack_ok in any::<bool>(),
            payload in proptest::collection::vec(any::<u8>(), 0..40),
            damage in proptest::option::of((any::<usize>(), 1u8..=255)),
            verified in any::<bool>(),
            usual in any::<bool>(),
            s in any::<[u8; 4]>(),
            d in any::<[u8; 4]>(),
        ) {
            let flags = if usual { 0x10 | (flags & 0x08) } else { flags };
            let mut options = TcpOptions::default();
            options.timestamps = ts;
            options.sack_permitted = sack_ok && !usual;
            let repr = repr_of((1, 2, seq, ack), (flags, window, urgent), options);
            let (s, d) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let bytes = segment(&repr, &payload, s, d, damage);
            let pseudo = TcpTemplate::new(d, s, 2, 1).pseudo_sum();
            let general = TcpRepr::parse_received(&bytes, pseudo, verified);
            match TcpPredicted::parse_received(&bytes, pseudo, verified) {
                None => {
                    // Not taken: only a segment not of the shape.
                    let shape = bytes.len() >= TS_HEADER_LEN
                        && bytes[field::FLAGS] & !TcpFlags::PSH.bits() == TcpFlags::ACK.bits()
                        && (bytes[field::DATA_OFF] >> 4 == 5
                            || (bytes[field::DATA_OFF] >> 4 == 8
                                && bytes[HEADER_LEN..HEADER_LEN + 4] == TS_WORD));
                    prop_assert!(!shape);
                }
                Some(Err(e)) => prop_assert_eq!(general.map(|_| ()), Err(e)),
                Some(Ok((p, hl))) => {
                    let (r, ghl) = general.expect("the general parse takes it too");
                    prop_assert_eq!(hl, ghl);
                    prop_assert_eq!(p, TcpPredicted::from(&r));
                }
            }
            // Undamaged, of the shape and long enough: always taken.
            if usual && damage.is_none() && !sack_ok && bytes.len() >= TS_HEADER_LEN {
                prop_assert!(matches!(
                    TcpPredicted::parse_received(&bytes, pseudo, verified),
                    Some(Ok(_))
                ));
            }
        }

        /// Any bytes: never a panic, and what is taken reads as the
        /// general parse reads it.
        #[test]
        fn predicted_read_of_any_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..80),
            verified in any::<bool>(),
        ) {
            let pseudo = TcpTemplate::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 1, 2).pseudo_sum();
            if let Some(Ok((p, hl))) = TcpPredicted::parse_received(&bytes, pseudo, verified) {
                let (r, ghl) = TcpRepr::parse_received(&bytes, pseudo, verified).expect("parses");
                prop_assert_eq!(hl, ghl);
                prop_assert_eq!(p, TcpPredicted::from(&r));
            }
        }
    }
}
