//! The `virtio_net_hdr` a TAP opened with `IFF_VNET_HDR` puts in front of
//! every frame (virtio 1.2 §5.1.6; Linux `include/uapi/linux/virtio_net.h`).
//!
//! ```text
//!  0      1          2         4          6            8             10            12
//!  flags  gso_type   hdr_len   gso_size   csum_start   csum_offset   num_buffers
//! ```
//!
//! Ten bytes, or twelve with `num_buffers` (the size is chosen with
//! `TUNSETVNETHDRSZ`; the kernel ignores `num_buffers` on a TAP and writes
//! 0). The 16-bit fields are in the *native* byte order: a legacy TAP
//! header is little-endian on little-endian hosts and native elsewhere
//! unless `TUNSETVNETLE`/`BE` say otherwise, which we never ask for.
//!
//! [`VnetHeader`] is a typed view over the bytes; [`VnetRepr`] the fields,
//! parsed from ([`VnetRepr::parse`]) and emitted into ([`VnetRepr::emit`])
//! such a view.

use thiserror::Error;

/// The header without `num_buffers` (`struct virtio_net_hdr`).
pub const LEN_LEGACY: usize = 10;
/// The header with `num_buffers` (`struct virtio_net_hdr_mrg_rxbuf`), the
/// size this crate asks for.
pub const LEN_MRG: usize = 12;

/// `flags`: the checksum is partial; sum from `csum_start` to the end and
/// store the result at `csum_start + csum_offset`.
pub const F_NEEDS_CSUM: u8 = 1;
/// `flags`: the checksum has been validated (receive only).
pub const F_DATA_VALID: u8 = 2;

/// `gso_type`: not a GSO frame.
pub const GSO_NONE: u8 = 0;
/// `gso_type`: TCP over IPv4.
pub const GSO_TCPV4: u8 = 1;
/// `gso_type`: UDP fragmentation offload (obsolete).
pub const GSO_UDP: u8 = 3;
/// `gso_type`: TCP over IPv6.
pub const GSO_TCPV6: u8 = 4;
/// `gso_type`: UDP segmentation offload (L4).
pub const GSO_UDP_L4: u8 = 5;
/// `gso_type` bit: the TCP segments carry ECN CWR handling.
pub const GSO_ECN: u8 = 0x80;

mod field {
    pub const FLAGS: usize = 0;
    pub const GSO_TYPE: usize = 1;
    pub const HDR_LEN: std::ops::Range<usize> = 2..4;
    pub const GSO_SIZE: std::ops::Range<usize> = 4..6;
    pub const CSUM_START: std::ops::Range<usize> = 6..8;
    pub const CSUM_OFFSET: std::ops::Range<usize> = 8..10;
    pub const NUM_BUFFERS: std::ops::Range<usize> = 10..12;
}

/// Why a header was refused.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum VnetError {
    /// Fewer bytes than the header.
    #[error("virtio-net header truncated: {have} of {need} bytes")]
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes there.
        have: usize,
    },
    /// A header length other than 10 or 12.
    #[error("virtio-net header length {0} is neither 10 nor 12")]
    BadLength(usize),
    /// A GSO type this stack does not take (UDP, IPv6, unknown).
    #[error("unsupported virtio-net GSO type {0:#04x}")]
    UnsupportedGso(u8),
    /// A GSO frame with a segment size of zero.
    #[error("virtio-net GSO frame with gso_size 0")]
    ZeroGsoSize,
    /// A partial checksum whose field lies past the frame.
    #[error("partial checksum at {start}+{offset} lies outside a {frame_len}-byte frame")]
    ChecksumOutside {
        /// `csum_start`.
        start: u16,
        /// `csum_offset`.
        offset: u16,
        /// The frame's length.
        frame_len: usize,
    },
}

/// A view of a `virtio_net_hdr` in a byte buffer of 10 or 12 bytes.
#[derive(Debug)]
pub struct VnetHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VnetHeader<T> {
    /// A view of the first `len` (10 or 12) bytes of `buffer`, checked.
    pub fn new_checked(buffer: T, len: usize) -> Result<Self, VnetError> {
        if len != LEN_LEGACY && len != LEN_MRG {
            return Err(VnetError::BadLength(len));
        }
        let have = buffer.as_ref().len();
        if have < len {
            return Err(VnetError::Truncated { need: len, have });
        }
        Ok(VnetHeader { buffer })
    }

    fn u16_at(&self, r: std::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[r];
        u16::from_ne_bytes([b[0], b[1]])
    }

    /// `flags`.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }
    /// `gso_type`.
    pub fn gso_type(&self) -> u8 {
        self.buffer.as_ref()[field::GSO_TYPE]
    }
    /// `hdr_len`: bytes of headers in front of the payload of a GSO frame.
    pub fn hdr_len(&self) -> u16 {
        self.u16_at(field::HDR_LEN)
    }
    /// `gso_size`: payload bytes of each segment.
    pub fn gso_size(&self) -> u16 {
        self.u16_at(field::GSO_SIZE)
    }
    /// `csum_start`: where the checksummed bytes begin, from the frame's start.
    pub fn csum_start(&self) -> u16 {
        self.u16_at(field::CSUM_START)
    }
    /// `csum_offset`: where the checksum field lies, from `csum_start`.
    pub fn csum_offset(&self) -> u16 {
        self.u16_at(field::CSUM_OFFSET)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VnetHeader<T> {
    fn set_u16(&mut self, r: std::ops::Range<usize>, v: u16) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_ne_bytes());
    }
}

/// The fields of a header, as this stack uses them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetRepr {
    /// The checksum is partial ([`F_NEEDS_CSUM`]): `(csum_start,
    /// csum_offset)`.
    pub needs_csum: Option<(u16, u16)>,
    /// The checksum was validated ([`F_DATA_VALID`]).
    pub data_valid: bool,
    /// A TCP/IPv4 GSO frame: `(gso_size, hdr_len)`.
    pub gso_tcpv4: Option<(u16, u16)>,
    /// The ECN bit of `gso_type`.
    pub ecn: bool,
}

impl VnetRepr {
    /// The fields of `h`, for a frame of `frame_len` bytes behind it.
    /// Refuses GSO types other than TCP/IPv4 (we offer only `TUN_F_TSO4`,
    /// so the kernel sends no others) and partial checksums outside the
    /// frame.
    pub fn parse<T: AsRef<[u8]>>(h: &VnetHeader<T>, frame_len: usize) -> Result<Self, VnetError> {
        let flags = h.flags();
        let needs_csum = if flags & F_NEEDS_CSUM != 0 {
            let (start, offset) = (h.csum_start(), h.csum_offset());
            if usize::from(start) + usize::from(offset) + 2 > frame_len {
                return Err(VnetError::ChecksumOutside {
                    start,
                    offset,
                    frame_len,
                });
            }
            Some((start, offset))
        } else {
            None
        };
        let gso = h.gso_type();
        let gso_tcpv4 = match gso & !GSO_ECN {
            GSO_NONE => None,
            GSO_TCPV4 => {
                if h.gso_size() == 0 {
                    return Err(VnetError::ZeroGsoSize);
                }
                Some((h.gso_size(), h.hdr_len()))
            }
            other => return Err(VnetError::UnsupportedGso(other)),
        };
        Ok(VnetRepr {
            needs_csum,
            data_valid: flags & F_DATA_VALID != 0,
            gso_tcpv4,
            ecn: gso & GSO_ECN != 0,
        })
    }

    /// Writes the fields into `h` (every byte of it: reserved bits and
    /// `num_buffers` are zero).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, h: &mut VnetHeader<T>) {
        let mut flags = 0;
        if self.needs_csum.is_some() {
            flags |= F_NEEDS_CSUM;
        }
        if self.data_valid {
            flags |= F_DATA_VALID;
        }
        let mut gso_type = match self.gso_tcpv4 {
            Some(_) => GSO_TCPV4,
            None => GSO_NONE,
        };
        if self.ecn {
            gso_type |= GSO_ECN;
        }
        let len = h.buffer.as_ref().len().min(LEN_MRG);
        h.buffer.as_mut()[..len].fill(0);
        h.buffer.as_mut()[field::FLAGS] = flags;
        h.buffer.as_mut()[field::GSO_TYPE] = gso_type;
        let (gso_size, hdr_len) = self.gso_tcpv4.unwrap_or((0, 0));
        h.set_u16(field::HDR_LEN, hdr_len);
        h.set_u16(field::GSO_SIZE, gso_size);
        let (start, offset) = self.needs_csum.unwrap_or((0, 0));
        h.set_u16(field::CSUM_START, start);
        h.set_u16(field::CSUM_OFFSET, offset);
        if len == LEN_MRG {
            h.set_u16(field::NUM_BUFFERS, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A header as the kernel's `virtio_net_hdr_from_skb` writes it for a
    /// 64 KB TCP/IPv4 GSO frame with a partial checksum (little-endian
    /// host): csum_start 34 (14 + 20), csum_offset 16, gso_size 1448,
    /// hdr_len 66.
    #[cfg(target_endian = "little")]
    const KERNEL_GSO: [u8; 12] = [1, 1, 66, 0, 0xa8, 0x05, 34, 0, 16, 0, 0, 0];

    #[cfg(target_endian = "little")]
    #[test]
    fn parses_a_kernel_gso_header() {
        let h = VnetHeader::new_checked(&KERNEL_GSO[..], LEN_MRG).unwrap();
        let r = VnetRepr::parse(&h, 65_000).unwrap();
        assert_eq!(
            r,
            VnetRepr {
                needs_csum: Some((34, 16)),
                data_valid: false,
                gso_tcpv4: Some((1448, 66)),
                ecn: false,
            }
        );
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn emits_what_the_kernel_writes() {
        let r = VnetRepr {
            needs_csum: Some((34, 16)),
            data_valid: false,
            gso_tcpv4: Some((1448, 66)),
            ecn: false,
        };
        let mut b = [0xffu8; 12];
        r.emit(&mut VnetHeader::new_checked(&mut b[..], LEN_MRG).unwrap());
        assert_eq!(b, KERNEL_GSO);
    }

    #[test]
    fn plain_frame_is_all_zero_both_lengths() {
        for len in [LEN_LEGACY, LEN_MRG] {
            let mut b = vec![0xaau8; len];
            VnetRepr::default().emit(&mut VnetHeader::new_checked(&mut b[..], len).unwrap());
            assert!(b.iter().all(|&x| x == 0), "{b:?}");
            let h = VnetHeader::new_checked(&b[..], len).unwrap();
            assert_eq!(VnetRepr::parse(&h, 60).unwrap(), VnetRepr::default());
        }
    }

    #[test]
    fn refuses_what_we_did_not_negotiate_or_cannot_be() {
        let mut b = [0u8; 12];
        b[field::GSO_TYPE] = GSO_TCPV6;
        b[4] = 1;
        let h = VnetHeader::new_checked(&b[..], LEN_MRG).unwrap();
        assert_eq!(
            VnetRepr::parse(&h, 100),
            Err(VnetError::UnsupportedGso(GSO_TCPV6))
        );
        let mut b = [0u8; 12];
        b[field::GSO_TYPE] = GSO_TCPV4;
        let h = VnetHeader::new_checked(&b[..], LEN_MRG).unwrap();
        assert_eq!(VnetRepr::parse(&h, 100), Err(VnetError::ZeroGsoSize));
        let mut b = [0u8; 12];
        b[field::FLAGS] = F_NEEDS_CSUM;
        b[6..8].copy_from_slice(&90u16.to_ne_bytes());
        b[8..10].copy_from_slice(&16u16.to_ne_bytes());
        let h = VnetHeader::new_checked(&b[..], LEN_MRG).unwrap();
        assert!(matches!(
            VnetRepr::parse(&h, 100),
            Err(VnetError::ChecksumOutside { .. })
        ));
        assert_eq!(
            VnetHeader::new_checked(&b[..5], LEN_LEGACY).unwrap_err(),
            VnetError::Truncated { need: 10, have: 5 }
        );
        assert_eq!(
            VnetHeader::new_checked(&b[..], 11).unwrap_err(),
            VnetError::BadLength(11)
        );
    }

    fn repr() -> impl Strategy<Value = VnetRepr> {
        (
            proptest::option::of((0u16..200, 0u16..64)),
            any::<bool>(),
            proptest::option::of((1u16.., any::<u16>())),
            any::<bool>(),
        )
            .prop_map(|(needs_csum, data_valid, gso_tcpv4, ecn)| VnetRepr {
                needs_csum,
                data_valid,
                gso_tcpv4,
                ecn,
            })
    }

    proptest! {
        /// Nothing the kernel (or anyone) writes makes the parser panic.
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..16),
                              len in prop_oneof![Just(LEN_LEGACY), Just(LEN_MRG), 0usize..20],
                              frame_len in 0usize..70_000) {
            if let Ok(h) = VnetHeader::new_checked(&bytes[..], len) {
                let _ = VnetRepr::parse(&h, frame_len);
            }
        }

        /// What we emit parses back to the same fields.
        #[test]
        fn emit_then_parse_round_trips(r in repr(), mrg: bool) {
            let len = if mrg { LEN_MRG } else { LEN_LEGACY };
            let mut b = vec![0x5au8; len];
            r.emit(&mut VnetHeader::new_checked(&mut b[..], len).unwrap());
            let h = VnetHeader::new_checked(&b[..], len).unwrap();
            prop_assert_eq!(VnetRepr::parse(&h, 70_000), Ok(r));
        }
    }
}
