//! The BLAST header: fragmentation with selective retransmission, in the
//! x-kernel v3.2 layouts (spec §3.2). The width of the fragment mask is a
//! build choice, as in the x-kernel (`blast_mask16.h`, `blast_mask32.h`,
//! `blast_mask64.h`): one [`Mask`] bit per fragment, so the mask bounds
//! the fragments of a message ([`MAX_FRAGS`]) and sets the header length
//! ([`HEADER_LEN`]).
//!
//! | build | mask | fragments | header |
//! |-------|------|-----------|--------|
//! | default | 16 bits (X32 default) | 16 | 20 bytes |
//! | feature `blast-mask32` | 32 bits (X32 `blast_mask32.h`) | 32 | 20 bytes |
//! | feature `blast-mask64` | 64 bits (OSF default) | 64 | 24 bytes |
//!
//! The two features exclude each other. Hosts of different builds do not
//! understand each other's fragments and NACKs: the mask sits at another
//! offset (the first 15 bytes agree).
//!
//! The default layout, 20 bytes:
//!
//! | off | size | field      | meaning |
//! |-----|------|------------|---------|
//! | 0   | 4    | `prot_id`  | upper protocol number (BID = 21) |
//! | 4   | 4    | `seq`      | message id; 0 = unfragmented ("short") message |
//! | 8   | 4    | `len`      | payload bytes in this packet (a stale copy in a NACK) |
//! | 12  | 2    | `num_frag` | fragments of the message; 0 for a short message |
//! | 14  | 1    | `op`       | 1 SEND, 2 NACK, 3 RETRANSMIT |
//! | 15  | 3    | pad        | zero, ignored on receipt |
//! | 18  | 2    | `mask`     | data: the one fragment carried; NACK: fragments received |
//!
//! `blast-mask32`, 20 bytes: bytes 0–14 as above, one pad byte at 15 and
//! `mask` as a u32 at 16. `blast-mask64`, 24 bytes: bytes 0–14 as above,
//! one pad byte at 15, `mask_hi` (u32, fragments 33–64) at 16 and
//! `mask_lo` (u32, fragments 1–32) at 20 — high word first, so the two
//! words together are the 64-bit mask in big-endian order.
//!
//! All integers big-endian. Bit `i − 1` of the mask stands for fragment
//! `i` (1-based).
//!
//! [`BlastHeader::parse`] checks everything the header alone can tell and
//! returns the payload trimmed to `len`: a frame padded to the Ethernet
//! minimum carries more bytes than the message, and those are not part of
//! it (x-kernel `blast_input.c` truncates the same way).

use pathstack_core::demux::{FlowLayout, HeaderLen, Key, KeyMode};

#[cfg(all(feature = "blast-mask32", feature = "blast-mask64"))]
compile_error!(
    "features `blast-mask32` and `blast-mask64` of pathstack-rpc exclude each other: \
     BLAST has one mask width per build"
);

/// The fragment mask: bit `i − 1` stands for fragment `i`. 16 bits by
/// default (x-kernel `blast_mask16.h`).
#[cfg(not(any(feature = "blast-mask32", feature = "blast-mask64")))]
pub type Mask = u16;
/// The fragment mask: bit `i − 1` stands for fragment `i`. 32 bits
/// (feature `blast-mask32`, x-kernel `blast_mask32.h`).
#[cfg(all(feature = "blast-mask32", not(feature = "blast-mask64")))]
pub type Mask = u32;
/// The fragment mask: bit `i − 1` stands for fragment `i`. 64 bits
/// (feature `blast-mask64`, the OSF default; x-kernel `blast_mask64.h`).
#[cfg(feature = "blast-mask64")]
pub type Mask = u64;

/// Most fragments one message may have: the width of the [`Mask`].
pub const MAX_FRAGS: usize = Mask::BITS as usize;

/// Bytes of the mask on the wire.
const MASK_LEN: usize = MAX_FRAGS / 8;

/// Length of the BLAST header: 15 bytes of fixed fields, then the pad
/// that aligns the mask to 4 bytes (x-kernel: a C struct on ILP32), then
/// the mask. 20 bytes for the 16- and 32-bit masks, 24 for the 64-bit one.
pub const HEADER_LEN: usize = field::MASK.end;

/// Where each header field lies.
pub mod field {
    use super::MASK_LEN;
    use std::ops::Range;

    /// Upper protocol number.
    pub const PROT_ID: Range<usize> = 0..4;
    /// Message sequence number (0: short message).
    pub const SEQ: Range<usize> = 4..8;
    /// Payload length of this packet.
    pub const LEN: Range<usize> = 8..12;
    /// Number of fragments of the message.
    pub const NUM_FRAG: Range<usize> = 12..14;
    /// Operation.
    pub const OP: usize = 14;
    /// Where the mask starts: the 16-bit mask ends the 20-byte struct
    /// (3 pad bytes before it), the wider ones follow one pad byte at
    /// their 4-byte alignment.
    const MASK_START: usize = if MASK_LEN == 2 { 18 } else { 16 };
    /// Padding, zero on the wire.
    pub const PAD: Range<usize> = 15..MASK_START;
    /// Fragment mask, big-endian. In the 64-bit layout the x-kernel's
    /// `mask_hi` and `mask_lo` words in that order (`MASK_HI`, `MASK_LO`
    /// in that build).
    pub const MASK: Range<usize> = MASK_START..MASK_START + MASK_LEN;
    /// `mask_hi`: fragments 33–64 (64-bit layout).
    #[cfg(feature = "blast-mask64")]
    pub const MASK_HI: Range<usize> = 16..20;
    /// `mask_lo`: fragments 1–32 (64-bit layout).
    #[cfg(feature = "blast-mask64")]
    pub const MASK_LO: Range<usize> = 20..24;
}

/// The operation codes of the `op` byte.
pub mod op {
    /// A fragment (or a short message) sent for the first time.
    pub const SEND: u8 = 1;
    /// The receiver's report of the fragments it holds.
    pub const NACK: u8 = 2;
    /// A fragment resent in answer to a NACK.
    pub const RETRANSMIT: u8 = 3;
}

/// The demux key of a received packet and the header bytes it spans:
/// what BLAST's partial classifier extracts. A short message — sequence
/// number 0, no fragment count, op SEND (spec §3.2: a message that fits
/// one packet is sent unfragmented with seq 0) — is keyed on its upper
/// protocol and classification goes on past the header; anything else
/// (fragments, NACKs, retransmissions) gives `None`, ending the walk at
/// BLAST, whose own path takes it. `mode` does not change the key.
#[inline]
pub fn packet_demux_key(packet: &[u8], _mode: KeyMode) -> Option<(Key, usize)> {
    let h = packet.get(..HEADER_LEN)?;
    let short = h[field::SEQ] == [0; 4] && h[field::NUM_FRAG] == [0; 2] && h[field::OP] == op::SEND;
    let p = &h[field::PROT_ID];
    short.then(|| (Key::from_array([p[0], p[1], p[2], p[3]]), HEADER_LEN))
}

/// Where [`packet_demux_key`]'s key lies: the upper protocol number, in a
/// short message (its seven guard bytes: seq and `num_frag` zero, op
/// SEND), the flow table's layout for BLAST. Fragments, NACKs and
/// retransmissions take the tree walk, which ends at BLAST's own path.
pub const FLOW_LAYOUT: FlowLayout = FlowLayout::new(HeaderLen::Fixed(HEADER_LEN as u8))
    .guard(field::SEQ.start as u8, 0xff, 0)
    .guard(field::SEQ.start as u8 + 1, 0xff, 0)
    .guard(field::SEQ.start as u8 + 2, 0xff, 0)
    .guard(field::SEQ.start as u8 + 3, 0xff, 0)
    .guard(field::NUM_FRAG.start as u8, 0xff, 0)
    .guard(field::NUM_FRAG.start as u8 + 1, 0xff, 0)
    .guard(field::OP as u8, 0xff, op::SEND)
    .key(field::PROT_ID.start as u8, 4);

pathstack_core::drop_reasons! {
    /// Why a BLAST packet was refused or discarded: by
    /// [`BlastHeader::parse`] (the header alone) or by the engine
    /// ([`crate::blast`]: the packet does not fit the session's state).
    #[derive(thiserror::Error)]
    pub enum BlastDropReason in "blast" {
        /// Shorter than the header ([`HEADER_LEN`]).
        #[error("BLAST packet shorter than its header")]
        Truncated => "truncated",
        /// An `op` other than SEND, NACK, RETRANSMIT; or a short message
        /// (seq 0) with an op other than SEND.
        #[error("BLAST packet with an unknown operation")]
        BadOp => "bad_op",
        /// `len` claims more bytes than the packet carries.
        #[error("BLAST length field beyond the payload")]
        BadLength => "bad_length",
        /// `num_frag` zero or above the mask width for a fragmented
        /// message, or non-zero for a short one.
        #[error("BLAST fragment count out of range")]
        BadNumFrag => "bad_num_frag",
        /// A data packet whose mask does not name exactly one fragment, or
        /// names one beyond `num_frag`; a NACK (or short message) with bits
        /// beyond `num_frag`.
        #[error("BLAST mask does not fit the fragment count")]
        BadMask => "bad_mask",
        /// A fragment longer than the receiver's fragment size: no sender
        /// on this link makes one, and storing it would break the
        /// reassembly bound.
        #[error("BLAST fragment longer than the fragment size")]
        FragmentTooLong => "fragment_too_long",
        /// A fragment whose `num_frag` differs from the one its message
        /// started with.
        #[error("BLAST fragment disagrees with its message's fragment count")]
        InconsistentFragment => "inconsistent_fragment",
        /// A NACK for a message the sender no longer holds (freed after
        /// HOLD or FREERESOURCES, or never sent): x-kernel ignores it.
        #[error("BLAST NACK for an unknown message")]
        NackUnknownSeq => "nack_unknown_seq",
        /// A RETRANSMIT for a message the receiver holds no record of: it
        /// was already delivered or discarded ("already finished",
        /// x-kernel `blast_input.c`).
        #[error("BLAST retransmission for a finished or unknown message")]
        RetransmitUnknownSeq => "retransmit_unknown_seq",
        /// A new message while the session's reassembly table (records or
        /// bytes) is full.
        #[error("BLAST reassembly table full")]
        ReassemblyFull => "reassembly_full",
        /// A packet other than SEND for a session that does not exist: no
        /// state is created for it (§11.2 B6). Counted by the stage.
        #[error("BLAST packet for no session")]
        NoSession => "no_session",
        /// A long message while the instance already holds its maximum of
        /// fragmented messages (spec §3.3 `OUTSTANDING_MESSAGES`; CHAN
        /// sends it again).
        #[error("BLAST holds its maximum of outstanding messages")]
        OutstandingFull => "outstanding_full",
        /// A fragmented message or fragment from a new peer while the
        /// module's session table is full.
        #[error("BLAST session table full")]
        SessionTableFull => "session_table_full",
    }
}

/// The operation of a BLAST packet (the `op` byte, see [`op`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BlastOp {
    /// A fragment (or short message) sent for the first time.
    Send = op::SEND,
    /// The receiver's report of the fragments it holds.
    Nack = op::NACK,
    /// A fragment resent in answer to a NACK.
    Retransmit = op::RETRANSMIT,
}

impl BlastOp {
    /// The operation an `op` byte names, if any.
    pub const fn from_u8(b: u8) -> Option<Self> {
        match b {
            op::SEND => Some(BlastOp::Send),
            op::NACK => Some(BlastOp::Nack),
            op::RETRANSMIT => Some(BlastOp::Retransmit),
            _ => None,
        }
    }
}

/// A parsed BLAST header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlastHeader {
    /// Upper protocol number (implicit numbering: BID = 21).
    pub prot_id: u32,
    /// Message sequence number; 0 for a short (unfragmented) message.
    pub seq: u32,
    /// Payload bytes this packet carries (SEND, RETRANSMIT); in a NACK the
    /// stale value copied from the first fragment that arrived.
    pub len: u32,
    /// Fragments of the message; 0 for a short message.
    pub num_frag: u16,
    /// The operation.
    pub op: BlastOp,
    /// Data packet: the one fragment carried (bit `i − 1` for fragment
    /// `i`); NACK: the fragments received.
    pub mask: Mask,
}

impl BlastHeader {
    /// The header of a short (unfragmented) message of `len` bytes: seq 0,
    /// no fragments, no mask (x-kernel `blast_output.c`).
    pub const fn short(prot_id: u32, len: u32) -> Self {
        BlastHeader {
            prot_id,
            seq: 0,
            len,
            num_frag: 0,
            op: BlastOp::Send,
            mask: 0,
        }
    }

    /// Whether this is a short (unfragmented) message.
    pub const fn is_short(&self) -> bool {
        self.seq == 0
    }

    /// The 1-based fragment number a data packet carries: the lowest set
    /// bit of the mask, or `None` for an empty mask.
    pub const fn fragment(&self) -> Option<usize> {
        if self.mask == 0 {
            None
        } else {
            Some(self.mask.trailing_zeros() as usize + 1)
        }
    }

    /// The mask with the low `num_frag` bits set: a complete message.
    pub const fn full_mask(num_frag: u16) -> Mask {
        if num_frag as usize >= MAX_FRAGS {
            Mask::MAX
        } else {
            (1 << num_frag) - 1
        }
    }

    /// Parses a received packet: the header and its payload, trimmed to
    /// `len` for SEND and RETRANSMIT (the stage keeps `HEADER_LEN + len`
    /// bytes of the frame, see [`BlastHeader::payload_len`]), empty for a
    /// NACK (which carries no data; a padded frame's bytes are ignored).
    ///
    /// ```
    /// use pathstack_rpc::wire::blast::{BlastHeader, BlastOp};
    /// // A 36-byte short message, padded to 60 bytes by the link.
    /// let mut frame = [0u8; 80];
    /// BlastHeader::short(21, 36).emit(&mut frame);
    /// let (h, payload) = BlastHeader::parse(&frame).unwrap();
    /// assert_eq!((h.op, h.seq, payload.len()), (BlastOp::Send, 0, 36));
    /// ```
    pub fn parse(bytes: &[u8]) -> Result<(Self, &[u8]), BlastDropReason> {
        if bytes.len() < HEADER_LEN {
            return Err(BlastDropReason::Truncated);
        }
        let u32_at = |r: std::ops::Range<usize>| {
            let b = &bytes[r];
            u32::from_be_bytes([b[0], b[1], b[2], b[3]])
        };
        let u16_at = |r: std::ops::Range<usize>| {
            let b = &bytes[r];
            u16::from_be_bytes([b[0], b[1]])
        };
        let mut mask = [0u8; MASK_LEN];
        mask.copy_from_slice(&bytes[field::MASK]);
        let header = BlastHeader {
            prot_id: u32_at(field::PROT_ID),
            seq: u32_at(field::SEQ),
            len: u32_at(field::LEN),
            num_frag: u16_at(field::NUM_FRAG),
            op: BlastOp::from_u8(bytes[field::OP]).ok_or(BlastDropReason::BadOp)?,
            mask: Mask::from_be_bytes(mask),
        };
        header.check()?;
        let payload = &bytes[HEADER_LEN..];
        match header.op {
            BlastOp::Nack => Ok((header, &payload[..0])),
            BlastOp::Send | BlastOp::Retransmit => {
                let len = header.payload_len().ok_or(BlastDropReason::BadLength)?;
                if len > payload.len() {
                    return Err(BlastDropReason::BadLength);
                }
                Ok((header, &payload[..len]))
            }
        }
    }

    /// The field checks of [`BlastHeader::parse`] that need no payload.
    fn check(&self) -> Result<(), BlastDropReason> {
        if self.is_short() {
            // A short message has no fragments and no repair: NACK and
            // RETRANSMIT only exist for seq ≠ 0 (§3.4).
            if self.op != BlastOp::Send {
                return Err(BlastDropReason::BadOp);
            }
            if self.num_frag != 0 {
                return Err(BlastDropReason::BadNumFrag);
            }
            if self.mask != 0 {
                return Err(BlastDropReason::BadMask);
            }
            return Ok(());
        }
        if self.num_frag == 0 || usize::from(self.num_frag) > MAX_FRAGS {
            return Err(BlastDropReason::BadNumFrag);
        }
        let beyond = self.mask & !Self::full_mask(self.num_frag);
        match self.op {
            BlastOp::Nack if beyond != 0 => Err(BlastDropReason::BadMask),
            BlastOp::Nack => Ok(()),
            BlastOp::Send | BlastOp::Retransmit => {
                if self.mask.count_ones() != 1 || beyond != 0 {
                    Err(BlastDropReason::BadMask)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The payload length as a `usize` (`None` only where `usize` is
    /// narrower than 32 bits and the value does not fit). For SEND and
    /// RETRANSMIT the stage keeps `HEADER_LEN + payload_len` bytes of a
    /// received frame and trims the rest (link padding, §3.5).
    pub fn payload_len(&self) -> Option<usize> {
        usize::try_from(self.len).ok()
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`
    /// (pad bytes zero).
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`HEADER_LEN`]: a caller bug, never a
    /// property of received data.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[..HEADER_LEN].copy_from_slice(&self.to_bytes());
    }

    /// The header as its [`HEADER_LEN`] wire bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[field::PROT_ID].copy_from_slice(&self.prot_id.to_be_bytes());
        b[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        b[field::LEN].copy_from_slice(&self.len.to_be_bytes());
        b[field::NUM_FRAG].copy_from_slice(&self.num_frag.to_be_bytes());
        b[field::OP] = self.op as u8;
        b[field::MASK].copy_from_slice(&self.mask.to_be_bytes());
        b
    }
}

/// The §11.1 vectors, written in the default 16-bit layout, moved into
/// the layout of this build, for the tests of the header and of the
/// engine. The move is spelled out byte by byte from spec §3.2 rather
/// than taken from [`field`], so that a wrong offset there shows.
#[cfg(test)]
pub(crate) mod test_vectors {
    /// The bytes of a hex string (`"00 0c 01"`).
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap())
            .collect()
    }

    /// A 20-byte header in the 16-bit layout (pad 15–17, mask 18–19) in
    /// the layout of this build.
    pub(crate) fn vector(mask16_layout: &str) -> Vec<u8> {
        let v = hex(mask16_layout);
        assert_eq!(v.len(), 20, "a 16-bit-layout header is 20 bytes");
        in_this_layout(&v)
    }

    #[cfg(not(any(feature = "blast-mask32", feature = "blast-mask64")))]
    fn in_this_layout(v: &[u8]) -> Vec<u8> {
        v.to_vec()
    }

    /// 32-bit: one pad byte at 15, the mask as a u32 at 16.
    #[cfg(feature = "blast-mask32")]
    fn in_this_layout(v: &[u8]) -> Vec<u8> {
        let mut out = v[..15].to_vec();
        out.extend_from_slice(&[0, 0, 0, v[18], v[19]]);
        out
    }

    /// 64-bit: one pad byte at 15, `mask_hi` (zero: fragments 33–64) at
    /// 16, `mask_lo` at 20.
    #[cfg(feature = "blast-mask64")]
    fn in_this_layout(v: &[u8]) -> Vec<u8> {
        let mut out = v[..15].to_vec();
        out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, v[18], v[19]]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::test_vectors::{hex, vector};
    use super::*;
    use proptest::prelude::*;

    fn frag(seq: u32, len: u32, i: u16, op: BlastOp) -> BlastHeader {
        BlastHeader {
            prot_id: 21,
            seq,
            len,
            num_frag: 12,
            op,
            mask: 1 << (i - 1),
        }
    }

    /// Both ways: emit gives the vector (in the 16-bit layout, moved to
    /// this build's), parse of the vector (with `len` payload bytes behind
    /// it) gives the header.
    fn both_ways(h: BlastHeader, mask16_layout: &str) {
        exact(h, &vector(mask16_layout));
    }

    /// Both ways, with the vector in this build's layout.
    fn exact(h: BlastHeader, v: &[u8]) {
        assert_eq!(h.to_bytes().as_slice(), v);
        let mut pkt = v.to_vec();
        let payload_len = if h.op == BlastOp::Nack { 0 } else { h.len };
        pkt.extend((0..payload_len).map(|i| i as u8));
        let (p, payload) = BlastHeader::parse(&pkt).unwrap();
        assert_eq!(p, h);
        assert_eq!(payload.len() as u32, payload_len);
    }

    #[test]
    fn vector_short_36_bytes() {
        both_ways(
            BlastHeader::short(21, 36),
            "00 00 00 15 00 00 00 00 00 00 00 24 00 00 01 00 00 00 00 00",
        );
    }

    #[test]
    fn vector_fragments_1_3_12_of_12() {
        both_ways(
            frag(7, 1460, 1, BlastOp::Send),
            "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 01 00 00 00 00 01",
        );
        both_ways(
            frag(7, 1460, 3, BlastOp::Send),
            "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 01 00 00 00 00 04",
        );
        both_ways(
            frag(7, 324, 12, BlastOp::Send),
            "00 00 00 15 00 00 00 07 00 00 01 44 00 0c 01 00 00 00 08 00",
        );
    }

    #[test]
    fn vector_nack_fragment_3_missing() {
        let h = BlastHeader {
            op: BlastOp::Nack,
            mask: 0x0ffb,
            ..frag(7, 1460, 1, BlastOp::Send)
        };
        both_ways(
            h,
            "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 02 00 00 00 0f fb",
        );
    }

    #[test]
    fn vector_retransmit_fragment_3() {
        both_ways(
            frag(7, 1460, 3, BlastOp::Retransmit),
            "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 03 00 00 00 00 04",
        );
    }

    #[test]
    fn padded_frame_is_trimmed_to_len() {
        // B8: 10-byte short message in a frame padded to 46 bytes.
        let mut frame = vec![0xAAu8; 46];
        BlastHeader::short(21, 10).emit(&mut frame);
        let (_, payload) = BlastHeader::parse(&frame).unwrap();
        assert_eq!(payload, &[0xAA; 10]);
        // A padded NACK carries no payload at all.
        let nack = BlastHeader {
            op: BlastOp::Nack,
            mask: 0x0ffb,
            ..frag(7, 1460, 1, BlastOp::Send)
        };
        let mut frame = vec![0u8; 46];
        nack.emit(&mut frame);
        assert_eq!(BlastHeader::parse(&frame).unwrap().1.len(), 0);
    }

    #[test]
    fn pad_bytes_are_ignored() {
        let mut b = frag(7, 0, 2, BlastOp::Send).to_bytes();
        b[field::PAD].fill(0xa5);
        assert_eq!(
            BlastHeader::parse(&b).unwrap().0,
            frag(7, 0, 2, BlastOp::Send)
        );
    }

    #[test]
    fn refusals() {
        let ok = frag(7, 4, 3, BlastOp::Send);
        let parse = |h: BlastHeader, extra: usize| {
            let mut b = h.to_bytes().to_vec();
            b.resize(HEADER_LEN + extra, 0);
            BlastHeader::parse(&b).map(|(h, _)| h)
        };
        assert_eq!(parse(ok, 4), Ok(ok));
        assert_eq!(
            BlastHeader::parse(&ok.to_bytes()[..HEADER_LEN - 1]),
            Err(BlastDropReason::Truncated)
        );
        let mut bad_op = ok.to_bytes();
        bad_op[field::OP] = 4;
        assert_eq!(BlastHeader::parse(&bad_op), Err(BlastDropReason::BadOp));
        bad_op[field::OP] = 0;
        assert_eq!(BlastHeader::parse(&bad_op), Err(BlastDropReason::BadOp));
        assert_eq!(parse(ok, 3), Err(BlastDropReason::BadLength));
        let bad = |h| parse(h, 4).unwrap_err();
        assert_eq!(bad(BlastHeader { mask: 0, ..ok }), BlastDropReason::BadMask);
        assert_eq!(bad(BlastHeader { mask: 6, ..ok }), BlastDropReason::BadMask);
        assert_eq!(
            bad(BlastHeader {
                mask: 1 << 12,
                ..ok
            }),
            BlastDropReason::BadMask
        );
        assert_eq!(
            bad(BlastHeader { num_frag: 0, ..ok }),
            BlastDropReason::BadNumFrag
        );
        assert_eq!(
            bad(BlastHeader {
                num_frag: MAX_FRAGS as u16 + 1,
                ..ok
            }),
            BlastDropReason::BadNumFrag
        );
        let nack = BlastHeader {
            op: BlastOp::Nack,
            mask: 0x1fff,
            ..ok
        };
        assert_eq!(bad(nack), BlastDropReason::BadMask);
        let short = BlastHeader::short(21, 4);
        assert_eq!(
            bad(BlastHeader {
                op: BlastOp::Retransmit,
                ..short
            }),
            BlastDropReason::BadOp
        );
        assert_eq!(
            bad(BlastHeader {
                op: BlastOp::Nack,
                ..short
            }),
            BlastDropReason::BadOp
        );
        assert_eq!(
            bad(BlastHeader {
                num_frag: 1,
                ..short
            }),
            BlastDropReason::BadNumFrag
        );
        assert_eq!(
            bad(BlastHeader { mask: 1, ..short }),
            BlastDropReason::BadMask
        );
    }

    /// The header of fragment `i` of `n`, seq 7, 1460 bytes.
    fn wide(n: u16, i: u16, op: BlastOp) -> BlastHeader {
        BlastHeader {
            num_frag: n,
            mask: 1 << (i - 1),
            ..frag(7, 1460, 1, op)
        }
    }

    #[test]
    #[cfg(not(any(feature = "blast-mask32", feature = "blast-mask64")))]
    fn layout_16_bit_mask() {
        assert_eq!((HEADER_LEN, MAX_FRAGS), (20, 16));
        assert_eq!((field::PAD, field::MASK), (15..18, 18..20));
        exact(
            wide(16, 16, BlastOp::Send),
            &hex("00 00 00 15 00 00 00 07 00 00 05 b4 00 10 01 00 00 00 80 00"),
        );
    }

    /// Each header with its bytes, both ways ([`exact`]).
    #[cfg(any(feature = "blast-mask32", feature = "blast-mask64"))]
    fn exact_all(cases: &[(BlastHeader, &str)]) {
        for (h, v) in cases {
            exact(*h, &hex(v));
        }
    }

    /// `n` fragments do not fit the mask.
    #[cfg(any(feature = "blast-mask32", feature = "blast-mask64"))]
    fn too_many_frags(n: u8) {
        let mut b = wide(1, 1, BlastOp::Send).to_bytes();
        b[13] = n;
        assert_eq!(BlastHeader::parse(&b), Err(BlastDropReason::BadNumFrag));
    }

    #[test]
    #[cfg(feature = "blast-mask32")]
    fn layout_32_bit_mask() {
        use BlastOp::{Nack, Retransmit, Send};
        assert_eq!((HEADER_LEN, MAX_FRAGS), (20, 32));
        assert_eq!((field::PAD, field::MASK), (15..16, 16..20));
        let nack = |mask| BlastHeader {
            mask,
            ..wide(32, 1, Nack)
        };
        exact_all(&[
            // Below fragment 17 the bytes are those of the 16-bit layout.
            (
                wide(32, 1, Send),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 20 01 00 00 00 00 01",
            ),
            (
                wide(32, 17, Send),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 20 01 00 00 01 00 00",
            ),
            (
                wide(32, 32, Retransmit),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 20 03 00 80 00 00 00",
            ),
            // NACK of 32 fragments, 3 and 17 missing.
            (
                nack(0xfffe_fffb),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 20 02 00 ff fe ff fb",
            ),
        ]);
        too_many_frags(33);
    }

    #[test]
    #[cfg(feature = "blast-mask64")]
    fn layout_64_bit_mask() {
        use BlastOp::{Nack, Retransmit, Send};
        assert_eq!((HEADER_LEN, MAX_FRAGS), (24, 64));
        assert_eq!((field::PAD, field::MASK), (15..16, 16..24));
        assert_eq!((field::MASK_HI, field::MASK_LO), (16..20, 20..24));
        let nack = |mask| BlastHeader {
            mask,
            ..wide(40, 1, Nack)
        };
        exact_all(&[
            // Fragment 1 of 40: mask_hi 0, mask_lo bit 0.
            (
                wide(40, 1, Send),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 28 01 00 00 00 00 00 00 00 00 01",
            ),
            // Fragment 33 of 40: mask_hi bit 0, mask_lo 0.
            (
                wide(40, 33, Send),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 28 01 00 00 00 00 01 00 00 00 00",
            ),
            // Fragment 32 of 40: the top bit of mask_lo.
            (
                wide(40, 32, Retransmit),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 28 03 00 00 00 00 00 80 00 00 00",
            ),
            // Fragment 64 of 64: the top bit of mask_hi.
            (
                wide(64, 64, Send),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 40 01 00 80 00 00 00 00 00 00 00",
            ),
            // NACK of 40 fragments, 3 and 33 missing: mask_hi holds 34–40.
            (
                nack(0x0000_00fe_ffff_fffb),
                "00 00 00 15 00 00 00 07 00 00 05 b4 00 28 02 00 00 00 00 fe ff ff ff fb",
            ),
        ]);
        // A NACK naming fragment 41 of 40 is refused.
        let mut b = wide(40, 1, BlastOp::Nack).to_bytes();
        b[19] = 0x81; // fragments 33 and 40: mask_hi bits 0 and 7
        assert!(BlastHeader::parse(&b).is_ok());
        b[18] = 0x01; // fragment 41: mask_hi bit 8
        assert_eq!(BlastHeader::parse(&b), Err(BlastDropReason::BadMask));
        too_many_frags(65);
        // A 20-byte packet is short of the 24-byte header.
        assert_eq!(
            BlastHeader::parse(&hex(
                "00 00 00 15 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00 00"
            )),
            Err(BlastDropReason::Truncated)
        );
    }

    #[test]
    fn full_mask_widths() {
        assert_eq!(BlastHeader::full_mask(1), 0x0001);
        assert_eq!(BlastHeader::full_mask(12), 0x0fff);
        assert_eq!(BlastHeader::full_mask(16), 0xffff);
        assert_eq!(BlastHeader::full_mask(MAX_FRAGS as u16), Mask::MAX);
        assert_eq!(BlastHeader::full_mask(MAX_FRAGS as u16 + 1), Mask::MAX);
    }

    fn any_header() -> impl Strategy<Value = BlastHeader> {
        let short = (any::<u32>(), 0u32..2000).prop_map(|(p, l)| BlastHeader::short(p, l));
        let data = (
            any::<u32>(),
            1u32..,
            0u32..2000,
            1u16..=MAX_FRAGS as u16,
            prop_oneof![Just(BlastOp::Send), Just(BlastOp::Retransmit)],
            0u16..MAX_FRAGS as u16,
        )
            .prop_map(|(prot_id, seq, len, n, op, bit)| BlastHeader {
                prot_id,
                seq,
                len,
                num_frag: n,
                op,
                mask: 1 << (bit % n),
            });
        let nack = (
            any::<u32>(),
            1u32..,
            any::<u32>(),
            1u16..=MAX_FRAGS as u16,
            any::<Mask>(),
        )
            .prop_map(|(prot_id, seq, len, n, mask)| BlastHeader {
                prot_id,
                seq,
                len,
                num_frag: n,
                op: BlastOp::Nack,
                mask: mask & BlastHeader::full_mask(n),
            });
        prop_oneof![short, data, nack]
    }

    proptest! {
        #[test]
        fn parse_emit_roundtrip(h in any_header(), pad in 0usize..40) {
            let mut b = h.to_bytes().to_vec();
            let payload = if h.op == BlastOp::Nack { 0 } else { h.len as usize };
            b.resize(HEADER_LEN + payload + pad, 0x5a);
            let (p, body) = BlastHeader::parse(&b).unwrap();
            prop_assert_eq!(p, h);
            prop_assert_eq!(body.len(), payload);
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok((h, body)) = BlastHeader::parse(&bytes) {
                prop_assert!(body.len() <= bytes.len() - HEADER_LEN);
                prop_assert_eq!(&h.to_bytes()[..15], &bytes[..15]);
            }
        }
    }
}
