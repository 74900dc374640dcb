//! The MSELECT header (spec §8): 8 bytes naming the selected procedure
//! and, in replies, whether it ran.
//!
//! | off | size | field | order |
//! |---|---|---|---|
//! | 0 | 4 | id (procedure / server number) | BE |
//! | 4 | 4 | status (1 = SEL_OK, 2 = SEL_FAIL; requests carry 1) | BE |
//!
//! X32 declares both as C `long`; pathstack fixes them to 4 bytes (§12
//! item 4).

/// Length of the MSELECT header.
pub const HEADER_LEN: usize = 8;

/// Status of a request, and of a reply whose procedure ran.
pub const SEL_OK: u32 = 1;
/// Status of a reply whose procedure failed or does not exist.
pub const SEL_FAIL: u32 = 2;

pathstack_core::drop_reasons! {
    /// Why an MSELECT packet was refused.
    #[derive(thiserror::Error)]
    pub enum MselectDropReason in "mselect" {
        /// Shorter than the 8-byte header.
        #[error("MSELECT packet shorter than its header")]
        Truncated => "truncated",
        /// A status other than SEL_OK or SEL_FAIL.
        #[error("MSELECT status neither OK nor FAIL")]
        BadStatus => "bad_status",
        /// A reply for another procedure than the call's.
        #[error("MSELECT reply for another procedure")]
        WrongId => "wrong_id",
        /// A call going down without a procedure id (a bug above).
        #[error("MSELECT call without a procedure id")]
        NoProcedure => "no_procedure",
        /// No room in front of the message for the header.
        #[error("no headroom for the MSELECT header")]
        NoHeadroom => "no_headroom",
    }
}

/// An MSELECT header.
///
/// ```
/// use pathstack_rpc::wire::mselect::{MselectHeader, SEL_OK};
/// let h = MselectHeader { id: 1002, status: SEL_OK };
/// assert_eq!(h.to_bytes(), [0, 0, 0x03, 0xea, 0, 0, 0, 1]);
/// assert_eq!(MselectHeader::parse(&h.to_bytes()).unwrap().0, h);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MselectHeader {
    /// Selected procedure / server number.
    pub id: u32,
    /// [`SEL_OK`] or [`SEL_FAIL`].
    pub status: u32,
}

impl MselectHeader {
    /// Parses a packet into its header and payload; a status other than
    /// [`SEL_OK`]/[`SEL_FAIL`] is refused.
    #[inline]
    pub fn parse(packet: &[u8]) -> Result<(MselectHeader, &[u8]), MselectDropReason> {
        let (head, payload) = packet
            .split_first_chunk::<HEADER_LEN>()
            .ok_or(MselectDropReason::Truncated)?;
        let id = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let status = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if status != SEL_OK && status != SEL_FAIL {
            return Err(MselectDropReason::BadStatus);
        }
        Ok((MselectHeader { id, status }, payload))
    }

    /// The header's 8 bytes.
    #[inline]
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..4].copy_from_slice(&self.id.to_be_bytes());
        b[4..].copy_from_slice(&self.status.to_be_bytes());
        b
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`HEADER_LEN`] (a caller bug).
    pub fn emit(&self, buf: &mut [u8]) {
        buf[..HEADER_LEN].copy_from_slice(&self.to_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spec_11_1_vectors_both_ways() {
        let ok = [0x00, 0x00, 0x03, 0xea, 0x00, 0x00, 0x00, 0x01];
        let fail = [0x00, 0x00, 0x03, 0xea, 0x00, 0x00, 0x00, 0x02];
        assert_eq!(
            MselectHeader {
                id: 1002,
                status: SEL_OK
            }
            .to_bytes(),
            ok
        );
        assert_eq!(
            MselectHeader {
                id: 1002,
                status: SEL_FAIL
            }
            .to_bytes(),
            fail
        );
        assert_eq!(
            MselectHeader::parse(&fail).unwrap(),
            (
                MselectHeader {
                    id: 1002,
                    status: SEL_FAIL
                },
                &[][..]
            )
        );
    }

    #[test]
    fn refuses_short_packets_and_unknown_status() {
        assert_eq!(
            MselectHeader::parse(&[0; 7]),
            Err(MselectDropReason::Truncated)
        );
        assert_eq!(
            MselectHeader::parse(&[0; 8]),
            Err(MselectDropReason::BadStatus)
        );
    }

    proptest! {
        #[test]
        fn parse_emit_roundtrip(id: u32, fail: bool, payload in proptest::collection::vec(any::<u8>(), 0..16)) {
            let h = MselectHeader { id, status: if fail { SEL_FAIL } else { SEL_OK } };
            let mut packet = h.to_bytes().to_vec();
            packet.extend(&payload);
            let (parsed, rest) = MselectHeader::parse(&packet).unwrap();
            prop_assert_eq!(parsed, h);
            prop_assert_eq!(rest, &payload[..]);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..32)) {
            let _ = MselectHeader::parse(&bytes);
        }
    }
}
