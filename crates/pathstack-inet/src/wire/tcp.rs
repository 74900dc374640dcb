//! The TCP header on the wire (RFC 9293 §3.1), its options (RFC 9293
//! §3.2, RFC 7323 window scale and timestamps, RFC 2018 SACK), and the
//! checksum over the IPv4 pseudo header. Only the wire format: sequence
//! space, states and timers are the TCP module's.
//!
//! Slicing is etherparse's (`TcpHeaderSlice`: the 20-byte minimum and a
//! data offset of at least 5 within the buffer); the checksum is
//! [`crate::wire::checksum`]'s as for UDP. Options are hand-written:
//! etherparse's `TcpOptionsIterator` stops with an error at a kind it does
//! not know, where RFC 9293 §3.2 says an option a TCP does not implement
//! MUST be ignored, skipped by its length; and it has no fixed-size result
//! to parse into without allocating.

use crate::wire::checksum;
use crate::wire::ipv4::protocol;
use etherparse::TcpHeaderSlice;
use pathstack_core::demux::{FlowLayout, HeaderLen, Key, KeyMode};
use pathstack_core::{Msg, MsgError};
use std::fmt;
use std::net::Ipv4Addr;
use std::ops::{BitAnd, BitOr, BitOrAssign, Range};

/// Where each header field lies (RFC 9293 §3.1, Figure 1).
pub mod field {
    use std::ops::Range;

    /// Source port.
    pub const SRC_PORT: Range<usize> = 0..2;
    /// Destination port.
    pub const DST_PORT: Range<usize> = 2..4;
    /// Sequence number.
    pub const SEQ_NUM: Range<usize> = 4..8;
    /// Acknowledgment number.
    pub const ACK_NUM: Range<usize> = 8..12;
    /// Data offset (high nibble, in 32-bit words) and the reserved bits.
    pub const DATA_OFF: usize = 12;
    /// Control bits CWR ECE URG ACK PSH RST SYN FIN ([`super::TcpFlags`]).
    pub const FLAGS: usize = 13;
    /// Receive window.
    pub const WINDOW: Range<usize> = 14..16;
    /// Checksum over the pseudo header, header and data.
    pub const CHECKSUM: Range<usize> = 16..18;
    /// Urgent pointer.
    pub const URGENT: Range<usize> = 18..20;
    /// First option byte (options run up to the data offset).
    pub const OPTIONS: usize = 20;
}

/// Option kinds (RFC 9293 §3.2; IANA "TCP Option Kind Numbers").
pub mod option_kind {
    /// End of option list (RFC 9293 §3.2).
    pub const EOL: u8 = 0;
    /// No-operation (RFC 9293 §3.2).
    pub const NOP: u8 = 1;
    /// Maximum segment size (RFC 9293 §3.2, §3.7.1).
    pub const MSS: u8 = 2;
    /// Window scale (RFC 7323 §2).
    pub const WINDOW_SCALE: u8 = 3;
    /// SACK permitted (RFC 2018 §2).
    pub const SACK_PERMITTED: u8 = 4;
    /// SACK blocks (RFC 2018 §3).
    pub const SACK: u8 = 5;
    /// Timestamps (RFC 7323 §3).
    pub const TIMESTAMPS: u8 = 8;
}

/// Length of the TCP header without options.
pub const HEADER_LEN: usize = field::OPTIONS;
/// Longest TCP header: data offset 15 words (RFC 9293 §3.1).
pub const MAX_HEADER_LEN: usize = 60;
/// Most option bytes a header carries.
pub const MAX_OPTIONS_LEN: usize = MAX_HEADER_LEN - HEADER_LEN;
/// Most SACK blocks one option carries: 4 fill 34 of the 40 option bytes
/// (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 4;
/// The largest window shift (RFC 7323 §2.3).
pub const MAX_WINDOW_SHIFT: u8 = 14;

pathstack_core::drop_reasons! {
    /// Why a TCP segment was dropped by the wire format.
    #[derive(thiserror::Error)]
    pub enum TcpDropReason in "tcp" {
        /// Shorter than the 20-byte header.
        #[error("TCP segment truncated")]
        Truncated => "truncated",
        /// Data offset below 5 words or beyond the segment.
        #[error("bad TCP data offset")]
        BadDataOffset => "bad_data_offset",
        /// Checksum wrong (RFC 9293 §3.1; RFC 1122 §4.2.2.7: MUST discard).
        #[error("bad TCP checksum")]
        BadChecksum => "bad_checksum",
        /// An option whose length byte is missing, below 2 or runs past the
        /// options (RFC 9293 §3.2: an illegal option length).
        #[error("malformed TCP option")]
        BadOption => "bad_option",
        /// A known option with a length other than its own (MSS 4, window
        /// scale 3, SACK-permitted 2, timestamps 10, SACK 2 + 8n with
        /// 1 ≤ n ≤ 4).
        #[error("TCP option of the wrong length")]
        BadOptionLength => "bad_option_length",
        /// A segment longer than the 16-bit length of the pseudo header.
        #[error("TCP segment too long")]
        TooLong => "too_long",
    }
}

/// The control bits (RFC 9293 §3.1; ECE and CWR from RFC 3168 §6.1): a
/// set of bits as in byte 13 of the header.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TcpFlags(u8);

impl TcpFlags {
    /// No more data from sender.
    pub const FIN: TcpFlags = TcpFlags(0x01);
    /// Synchronize sequence numbers.
    pub const SYN: TcpFlags = TcpFlags(0x02);
    /// Reset the connection.
    pub const RST: TcpFlags = TcpFlags(0x04);
    /// Push function.
    pub const PSH: TcpFlags = TcpFlags(0x08);
    /// Acknowledgment field is significant.
    pub const ACK: TcpFlags = TcpFlags(0x10);
    /// Urgent pointer field is significant.
    pub const URG: TcpFlags = TcpFlags(0x20);
    /// ECN-Echo (RFC 3168).
    pub const ECE: TcpFlags = TcpFlags(0x40);
    /// Congestion window reduced (RFC 3168).
    pub const CWR: TcpFlags = TcpFlags(0x80);

    const NAMES: [(TcpFlags, &'static str); 8] = [
        (Self::FIN, "FIN"),
        (Self::SYN, "SYN"),
        (Self::RST, "RST"),
        (Self::PSH, "PSH"),
        (Self::ACK, "ACK"),
        (Self::URG, "URG"),
        (Self::ECE, "ECE"),
        (Self::CWR, "CWR"),
    ];

    /// No bit set.
    pub const fn empty() -> Self {
        TcpFlags(0)
    }
    /// The flags of header byte 13.
    pub const fn from_bits(bits: u8) -> Self {
        TcpFlags(bits)
    }
    /// Header byte 13.
    pub const fn bits(self) -> u8 {
        self.0
    }
    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Whether any bit of `other` is set.
    pub const fn intersects(self, other: TcpFlags) -> bool {
        self.0 & other.0 != 0
    }
    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// Sets the bits of `other`.
    pub fn insert(&mut self, other: TcpFlags) {
        self.0 |= other.0;
    }
    /// Clears the bits of `other`.
    pub fn remove(&mut self, other: TcpFlags) {
        self.0 &= !other.0;
    }
}

impl BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | rhs.0)
    }
}

impl BitOrAssign for TcpFlags {
    fn bitor_assign(&mut self, rhs: TcpFlags) {
        self.0 |= rhs.0;
    }
}

impl BitAnd for TcpFlags {
    type Output = TcpFlags;
    fn bitand(self, rhs: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 & rhs.0)
    }
}

impl fmt::Debug for TcpFlags {
    /// The set bits by name, `SYN|ACK`; `-` for none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (flag, name) in Self::NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// The options of one segment, parsed into fixed fields: no allocation,
/// and the same size for any segment.
///
/// Duplicated options: the last one counts (as Linux's
/// `tcp_parse_options`). Unknown kinds are skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpOptions {
    /// Maximum segment size (RFC 9293 §3.7.1).
    pub mss: Option<u16>,
    /// Window shift (RFC 7323 §2); a received shift above 14 reads as 14
    /// (RFC 7323 §2.3).
    pub window_scale: Option<u8>,
    /// SACK permitted (RFC 2018 §2).
    pub sack_permitted: bool,
    /// Timestamps `(TSval, TSecr)` (RFC 7323 §3.2).
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks `(left edge, right edge)` (RFC 2018 §3); entries past
    /// `sack_len` are zero, so that equal block lists compare equal.
    sack: [(u32, u32); MAX_SACK_BLOCKS],
    sack_len: u8,
}

impl TcpOptions {
    /// The SACK blocks `(left edge, right edge)`, first block first.
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..usize::from(self.sack_len)]
    }

    /// Sets the SACK blocks to the first [`MAX_SACK_BLOCKS`] of `blocks`;
    /// returns how many were taken.
    pub fn set_sack_blocks(&mut self, blocks: &[(u32, u32)]) -> usize {
        let n = blocks.len().min(MAX_SACK_BLOCKS);
        self.sack = [(0, 0); MAX_SACK_BLOCKS];
        self.sack[..n].copy_from_slice(&blocks[..n]);
        self.sack_len = n as u8;
        n
    }

    /// Parses the option bytes of a header (RFC 9293 §3.2): EOL ends the
    /// list, NOP is one byte, every other kind has a length byte counting
    /// kind and length; unknown kinds are skipped by it.
    #[inline]
    pub fn parse(bytes: &[u8]) -> Result<TcpOptions, TcpDropReason> {
        // The options of nearly every segment on a connection with
        // timestamps: NOP, NOP, timestamps, as RFC 7323 Appendix A
        // recommends and every TCP sends them. Read in place (Linux's
        // `tcp_parse_aligned_timestamp`; the "timestamps in the usual
        // layout" of header prediction), in the caller's body (issue 26:
        // a call and the copy of its answer per segment otherwise); the
        // loop of `parse_any` gives the same.
        if let [option_kind::NOP, option_kind::NOP, option_kind::TIMESTAMPS, 10, ts @ ..] = bytes {
            if ts.len() == 8 {
                return Ok(TcpOptions {
                    timestamps: Some((be32(&ts[0..4]), be32(&ts[4..8]))),
                    ..TcpOptions::default()
                });
            }
        }
        Self::parse_any(bytes)
    }

    /// [`parse`](Self::parse) of any option list, out of line.
    #[inline(never)]
    fn parse_any(mut bytes: &[u8]) -> Result<TcpOptions, TcpDropReason> {
        let mut o = TcpOptions::default();
        while let Some((&kind, rest)) = bytes.split_first() {
            match kind {
                option_kind::EOL => break,
                option_kind::NOP => {
                    bytes = rest;
                    continue;
                }
                _ => {}
            }
            let len = usize::from(*rest.first().ok_or(TcpDropReason::BadOption)?);
            if len < 2 || len > bytes.len() {
                return Err(TcpDropReason::BadOption);
            }
            let body = &bytes[2..len];
            let fixed = |want: usize| {
                if body.len() == want {
                    Ok(())
                } else {
                    Err(TcpDropReason::BadOptionLength)
                }
            };
            match kind {
                option_kind::MSS => {
                    fixed(2)?;
                    o.mss = Some(u16::from_be_bytes([body[0], body[1]]));
                }
                option_kind::WINDOW_SCALE => {
                    fixed(1)?;
                    // RFC 7323 §2.3: a shift above 14 MUST be used as 14.
                    o.window_scale = Some(body[0].min(MAX_WINDOW_SHIFT));
                }
                option_kind::SACK_PERMITTED => {
                    fixed(0)?;
                    o.sack_permitted = true;
                }
                option_kind::TIMESTAMPS => {
                    fixed(8)?;
                    o.timestamps = Some((be32(&body[0..4]), be32(&body[4..8])));
                }
                option_kind::SACK => {
                    // RFC 2018 §3: length 2 + 8n; n ≤ 4 is all 40 bytes allow.
                    let n = body.len() / 8;
                    if body.len() % 8 != 0 || n == 0 || n > MAX_SACK_BLOCKS {
                        return Err(TcpDropReason::BadOptionLength);
                    }
                    let mut blocks = [(0, 0); MAX_SACK_BLOCKS];
                    for (b, edges) in blocks.iter_mut().zip(body.chunks_exact(8)) {
                        *b = (be32(&edges[0..4]), be32(&edges[4..8]));
                    }
                    o.set_sack_blocks(&blocks[..n]);
                }
                _ => {} // RFC 9293 §3.2: ignore an option not implemented.
            }
            bytes = &bytes[len..];
        }
        Ok(o)
    }

    /// Length of the options as [`TcpOptions::emit`] writes them: always a
    /// multiple of 4, so no padding is needed (RFC 9293 §3.1 "Options").
    pub fn len(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.timestamps.is_some() {
            n += 12;
        } else if self.sack_permitted {
            n += 4;
        }
        if self.window_scale.is_some() {
            n += 4;
        }
        if self.sack_len > 0 {
            n += 4 + 8 * usize::from(self.sack_len);
        }
        n
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the options into the front of `buf` (at least
    /// [`TcpOptions::len`] bytes) in Linux's order and alignment
    /// (`tcp_options_write`): MSS; SACK-permitted and timestamps together
    /// (or NOP NOP before either alone); NOP and window scale; NOP NOP and
    /// the SACK blocks. A window shift above 14 is sent as 14. Returns the
    /// length written, `None` if `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) -> Option<usize> {
        let buf = buf.get_mut(..self.len())?;
        let mut w = Writer { buf, at: 0 };
        if let Some(mss) = self.mss {
            w.put(&[option_kind::MSS, 4]);
            w.put(&mss.to_be_bytes());
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some((val, ecr))) => {
                if sp {
                    w.put(&[option_kind::SACK_PERMITTED, 2]);
                } else {
                    w.put(&[option_kind::NOP, option_kind::NOP]);
                }
                w.put(&[option_kind::TIMESTAMPS, 10]);
                w.put(&val.to_be_bytes());
                w.put(&ecr.to_be_bytes());
            }
            (true, None) => w.put(&[
                option_kind::NOP,
                option_kind::NOP,
                option_kind::SACK_PERMITTED,
                2,
            ]),
            (false, None) => {}
        }
        if let Some(shift) = self.window_scale {
            // RFC 7323 §2.3: never send a shift above 14.
            let shift = shift.min(MAX_WINDOW_SHIFT);
            w.put(&[option_kind::NOP, option_kind::WINDOW_SCALE, 3, shift]);
        }
        let blocks = self.sack_blocks();
        if !blocks.is_empty() {
            let len = 2 + 8 * blocks.len() as u8;
            w.put(&[option_kind::NOP, option_kind::NOP, option_kind::SACK, len]);
            for (left, right) in blocks {
                w.put(&left.to_be_bytes());
                w.put(&right.to_be_bytes());
            }
        }
        Some(w.at)
    }
}

/// Appends to a buffer sized beforehand.
struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.at..self.at + bytes.len()].copy_from_slice(bytes);
        self.at += bytes.len();
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// The checksum of the segment `parts` (header first, checksum field zero
/// or set) for `src` → `dst` with the IPv4 pseudo header (RFC 9293 §3.1).
fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, tcp_len: u16) -> [u8; 12] {
    checksum::pseudo_header_v4(src, dst, protocol::TCP, tcp_len)
}

/// A view of a TCP segment in a byte buffer: the fields read through
/// [`field`]. Made by [`TcpPacket::new_checked`] for received bytes; the
/// segment is the whole buffer (TCP has no length field of its own: the IP
/// payload is the segment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// A view of `buffer` without any check; it must hold at least
    /// [`HEADER_LEN`] bytes, and the data offset must lie within it for
    /// the options and payload accessors.
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Validates the IP payload `buffer` of a segment from `src` to `dst`:
    /// at least 20 bytes, a data offset of 5..=15 words within the buffer,
    /// and the checksum over the pseudo header (RFC 9293 §3.1). Options
    /// are parsed separately ([`TcpPacket::parse_options`]).
    pub fn new_checked(buffer: T, src: Ipv4Addr, dst: Ipv4Addr) -> Result<Self, TcpDropReason> {
        Self::new_received(buffer, src, dst, false)
    }

    /// [`TcpPacket::new_checked`] for a received segment, the checksum
    /// skipped when the device vouched for it (`checksum_verified`: the
    /// message's `rx_csum_verified` offload fact; the field may then hold
    /// a partial sum, see `pathstack_core::device::offload`).
    pub fn new_received(
        buffer: T,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        checksum_verified: bool,
    ) -> Result<Self, TcpDropReason> {
        use etherparse::err::tcp::HeaderSliceError;
        let bytes = buffer.as_ref();
        TcpHeaderSlice::from_slice(bytes).map_err(|e| match e {
            HeaderSliceError::Len(_) if bytes.len() < HEADER_LEN => TcpDropReason::Truncated,
            _ => TcpDropReason::BadDataOffset,
        })?;
        let len = u16::try_from(bytes.len()).map_err(|_| TcpDropReason::TooLong)?;
        if !checksum_verified && !checksum::verify(&[&pseudo_header(src, dst, len), bytes]) {
            return Err(TcpDropReason::BadChecksum);
        }
        Ok(TcpPacket { buffer })
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn word(&self, at: Range<usize>) -> u16 {
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
    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::SEQ_NUM])
    }
    /// Acknowledgment number (significant with [`TcpFlags::ACK`]).
    pub fn ack_number(&self) -> u32 {
        be32(&self.buffer.as_ref()[field::ACK_NUM])
    }
    /// Header length in bytes, from the data offset.
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFF] >> 4) * 4
    }
    /// The control bits.
    pub fn flags(&self) -> TcpFlags {
        TcpFlags(self.buffer.as_ref()[field::FLAGS])
    }
    /// Receive window (unscaled).
    pub fn window(&self) -> u16 {
        self.word(field::WINDOW)
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.word(field::CHECKSUM)
    }
    /// Urgent pointer (significant with [`TcpFlags::URG`]).
    pub fn urgent(&self) -> u16 {
        self.word(field::URGENT)
    }
    /// Length of the data after the header.
    pub fn payload_len(&self) -> usize {
        self.buffer.as_ref().len() - self.header_len()
    }
    /// Sequence space the segment occupies: data, plus one each for SYN
    /// and FIN (RFC 9293 §3.4, SEG.LEN).
    pub fn segment_len(&self) -> usize {
        let f = self.flags();
        self.payload_len()
            + usize::from(f.contains(TcpFlags::SYN))
            + usize::from(f.contains(TcpFlags::FIN))
    }
    /// The options, parsed.
    pub fn parse_options(&self) -> Result<TcpOptions, TcpDropReason> {
        TcpOptions::parse(&self.buffer.as_ref()[field::OPTIONS..self.header_len()])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> TcpPacket<&'a T> {
    /// The option bytes, between the fixed header and the data offset.
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }
    /// The data after the header.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }
}

/// Why a TCP header could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TcpEmitError {
    /// Options longer than the 40 bytes a header holds.
    #[error("TCP options of {0} bytes too long")]
    OptionsTooLong(usize),
    /// Header and payload longer than the pseudo header's 16-bit length.
    #[error("TCP segment of {0} bytes too long")]
    TooLong(usize),
    /// Buffer shorter than the header.
    #[error("buffer shorter than the TCP header")]
    BufferTooShort,
    /// No headroom for the header.
    #[error(transparent)]
    Msg(#[from] MsgError),
}

/// The TCP header fields: what the stack chooses when sending, and what it
/// reads of a received segment ([`TcpRepr::parse`]). Data offset and
/// checksum are computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TcpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Control bits.
    pub flags: TcpFlags,
    /// Receive window (unscaled, as on the wire).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// Options.
    pub options: TcpOptions,
}

impl TcpRepr {
    /// The fields of a checked segment, options parsed.
    pub fn parse<T: AsRef<[u8]>>(p: &TcpPacket<T>) -> Result<TcpRepr, TcpDropReason> {
        Ok(TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq_number(),
            ack: p.ack_number(),
            flags: p.flags(),
            window: p.window(),
            urgent: p.urgent(),
            options: p.parse_options()?,
        })
    }

    /// A received segment checked and read in one pass: what
    /// [`TcpPacket::new_received`] then [`TcpRepr::parse`] give (the same
    /// answer and the same drop reason for any bytes), with the header's
    /// length. For a connection, whose pseudo header's addresses and
    /// protocol are fixed: `pseudo` is their sum
    /// ([`TcpTemplate::pseudo_sum`]; the sum is the same either way
    /// round, RFC 1071 §2(B)), so only the length is added per segment,
    /// and the header is read in place rather than through a checked view
    /// first (issue 26: the verify-only receive of an established path).
    #[inline]
    pub fn parse_received(
        bytes: &[u8],
        pseudo: u64,
        checksum_verified: bool,
    ) -> Result<(TcpRepr, usize), TcpDropReason> {
        let Some(h) = bytes.first_chunk::<HEADER_LEN>() else {
            return Err(TcpDropReason::Truncated);
        };
        let hl = usize::from(h[field::DATA_OFF] >> 4) * 4;
        if hl < HEADER_LEN || hl > bytes.len() {
            return Err(TcpDropReason::BadDataOffset);
        }
        let len = u16::try_from(bytes.len()).map_err(|_| TcpDropReason::TooLong)?;
        // RFC 9293 §3.1: the pseudo header's TCP length, as a native-order
        // word like the rest of the sum.
        let len_word = u64::from(u16::from_ne_bytes(len.to_be_bytes()));
        if !checksum_verified && !checksum::verifies(pseudo + len_word + checksum::partial(bytes)) {
            return Err(TcpDropReason::BadChecksum);
        }
        let word = |at: Range<usize>| u16::from_be_bytes([h[at.start], h[at.start + 1]]);
        let repr = TcpRepr {
            src_port: word(field::SRC_PORT),
            dst_port: word(field::DST_PORT),
            seq: be32(&h[field::SEQ_NUM]),
            ack: be32(&h[field::ACK_NUM]),
            flags: TcpFlags(h[field::FLAGS]),
            window: word(field::WINDOW),
            urgent: word(field::URGENT),
            options: TcpOptions::parse(&bytes[field::OPTIONS..hl])?,
        };
        Ok((repr, hl))
    }

    /// Header length: 20 bytes and the options, which
    /// [`TcpOptions::emit`] lays out in whole 32-bit words.
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.options.len()
    }

    /// Writes the header with a zero checksum into `h` (exactly
    /// [`TcpRepr::header_len`] bytes, at most 60).
    fn write_header(&self, h: &mut [u8]) {
        h[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        h[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        h[field::SEQ_NUM].copy_from_slice(&self.seq.to_be_bytes());
        h[field::ACK_NUM].copy_from_slice(&self.ack.to_be_bytes());
        h[field::DATA_OFF] = ((h.len() / 4) as u8) << 4;
        h[field::FLAGS] = self.flags.bits();
        h[field::WINDOW].copy_from_slice(&self.window.to_be_bytes());
        h[field::CHECKSUM].fill(0);
        h[field::URGENT].copy_from_slice(&self.urgent.to_be_bytes());
        // Sized by `len()` above: cannot fail.
        let _ = self.options.emit(&mut h[field::OPTIONS..]);
    }

    /// Checks the lengths before writing: the header's, and the segment's
    /// `header_len + payload_len` for the pseudo header.
    fn checked_lens(&self, payload_len: usize) -> Result<(usize, u16), TcpEmitError> {
        let opts = self.options.len();
        if opts > MAX_OPTIONS_LEN {
            return Err(TcpEmitError::OptionsTooLong(opts));
        }
        let hl = self.header_len();
        let total =
            u16::try_from(hl + payload_len).map_err(|_| TcpEmitError::TooLong(hl + payload_len))?;
        Ok((hl, total))
    }

    /// Writes the header into the front of `buf`, with the checksum over
    /// the pseudo header for `src` → `dst`, the header and `payload` (which
    /// the caller places after the header). Returns the header length.
    pub fn emit(
        &self,
        buf: &mut [u8],
        src: Ipv4Addr,
        dst: Ipv4Addr,
        payload: &[u8],
    ) -> Result<usize, TcpEmitError> {
        let (hl, total) = self.checked_lens(payload.len())?;
        let h = buf.get_mut(..hl).ok_or(TcpEmitError::BufferTooShort)?;
        self.write_header(h);
        let c = checksum::compute(&[&pseudo_header(src, dst, total), h, payload]);
        h[field::CHECKSUM].copy_from_slice(&c);
        Ok(hl)
    }

    /// Pushes the header in front of `msg` (the payload), with the
    /// checksum over the pseudo header for `src` → `dst`.
    pub fn push_onto(
        &self,
        msg: &mut Msg,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<(), TcpEmitError> {
        self.push_with(msg, src, dst, false)
    }

    /// [`TcpRepr::push_onto`] with the checksum left partial for a device
    /// to finish (checksum offload): the field holds the folded sum of the
    /// pseudo header alone, not complemented, as Linux's
    /// `tcp_v4_send_check` leaves it for `CHECKSUM_PARTIAL`. Summing the
    /// segment with this field in place and storing the complement gives
    /// the full checksum (RFC 1071 §2 associativity). The field's offset in
    /// the header is [`CHECKSUM_OFFSET`].
    pub fn push_onto_partial(
        &self,
        msg: &mut Msg,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<(), TcpEmitError> {
        self.push_with(msg, src, dst, true)
    }

    fn push_with(
        &self,
        msg: &mut Msg,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        partial: bool,
    ) -> Result<(), TcpEmitError> {
        let (hl, total) = self.checked_lens(msg.len())?;
        self.write_header(msg.push(hl)?);
        let pseudo = pseudo_header(src, dst, total);
        let c = if partial {
            checksum::pseudo_sum(&pseudo)
        } else {
            checksum::compute(&[&pseudo, msg.as_slice()])
        };
        msg.as_mut_slice()[field::CHECKSUM].copy_from_slice(&c);
        Ok(())
    }
}

/// The header of a connection's usual segment, formatted once: its
/// ports, a data offset of 8 words and the options NOP, NOP, timestamps —
/// the layout of every segment of a connection with timestamps but those
/// carrying SACK blocks (and the handshake's). Per segment only sequence
/// and acknowledgment numbers, control bits, window, urgent pointer and
/// the two timestamps are written, and the checksum adds those words and
/// the data to the sum of the rest (RFC 1071 §2(C)), pseudo header
/// included: the TCP header prediction's "template" (Jacobson; BSD's
/// `tcp_template`), in the manner of the IP layer's
/// [`Ipv4Template`](crate::wire::ipv4::Ipv4Template). The bytes are those
/// [`TcpRepr::push_onto`] (or [`TcpRepr::push_onto_partial`]) writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpTemplate {
    header: [u8; TEMPLATE_LEN],
    src_port: u16,
    dst_port: u16,
    /// Sum of the pseudo header's addresses and protocol (its length
    /// zero).
    pseudo: u64,
    /// `pseudo` plus the header's constant words (ports, data offset,
    /// options' kinds and lengths).
    sum: u64,
}

/// The template's header length: 20 octets and NOP, NOP, timestamps.
const TEMPLATE_LEN: usize = HEADER_LEN + 12;

impl TcpTemplate {
    /// The template for segments from `src`:`src_port` to `dst`:`dst_port`.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, src_port: u16, dst_port: u16) -> Self {
        let mut header = [0u8; TEMPLATE_LEN];
        header[field::SRC_PORT].copy_from_slice(&src_port.to_be_bytes());
        header[field::DST_PORT].copy_from_slice(&dst_port.to_be_bytes());
        header[field::DATA_OFF] = ((TEMPLATE_LEN / 4) as u8) << 4;
        header[field::OPTIONS..field::OPTIONS + 4].copy_from_slice(&[
            option_kind::NOP,
            option_kind::NOP,
            option_kind::TIMESTAMPS,
            10,
        ]);
        let pseudo = checksum::partial(&pseudo_header(src, dst, 0));
        TcpTemplate {
            header,
            src_port,
            dst_port,
            pseudo,
            sum: pseudo + checksum::partial(&header),
        }
    }

    /// The sum of the pseudo header's addresses and protocol, its length
    /// left out: what [`TcpRepr::parse_received`] checks a received
    /// segment of the connection with.
    #[inline]
    pub fn pseudo_sum(&self) -> u64 {
        self.pseudo
    }

    /// Whether `repr` is a segment of this template: its ports, and the
    /// timestamps as its only option.
    #[inline]
    pub fn fits(&self, repr: &TcpRepr) -> bool {
        let o = &repr.options;
        repr.src_port == self.src_port
            && repr.dst_port == self.dst_port
            && o.timestamps.is_some()
            && o.mss.is_none()
            && o.window_scale.is_none()
            && !o.sack_permitted
            && o.sack_len == 0
    }

    /// Pushes the header of `repr` (which [`fits`](Self::fits)) in front
    /// of `msg` (the data), with the full checksum, or (`partial`) the
    /// pseudo header's sum for a device to finish, as
    /// [`TcpRepr::push_onto_partial`] leaves it.
    #[inline]
    pub fn push_onto(
        &self,
        msg: &mut Msg,
        repr: &TcpRepr,
        partial: bool,
    ) -> Result<(), TcpEmitError> {
        debug_assert!(self.fits(repr));
        let (tsval, tsecr) = repr.options.timestamps.unwrap_or_default();
        let fields = TemplateFields {
            seq: repr.seq,
            ack: repr.ack,
            flags: repr.flags,
            window: repr.window,
            urgent: repr.urgent,
            tsval,
            tsecr,
        };
        self.push_fields(msg, &fields, partial)
    }

    /// Pushes the header with `fields` in front of `msg` (the data), as
    /// [`push_onto`](Self::push_onto) does for a `TcpRepr` with the same
    /// fields (the same bytes): what a predicted send writes, which has
    /// no `TcpRepr` (`Tcb::poll_predicted_send`). In line into the send
    /// that writes the segment: the call's register saves cost more
    /// than a quarter of the header's writing (issue 26).
    #[inline(always)]
    pub fn push_fields(
        &self,
        msg: &mut Msg,
        fields: &TemplateFields,
        partial: bool,
    ) -> Result<(), TcpEmitError> {
        let total = TEMPLATE_LEN + msg.len();
        let total = u16::try_from(total).map_err(|_| TcpEmitError::TooLong(total))?;
        let data = if partial {
            0
        } else {
            checksum::partial(msg.as_slice())
        };
        let h = msg.push(TEMPLATE_LEN)?;
        h.copy_from_slice(&self.header);
        let (seq, ack) = (fields.seq.to_be_bytes(), fields.ack.to_be_bytes());
        let (window, urgent) = (fields.window.to_be_bytes(), fields.urgent.to_be_bytes());
        let (tsval, tsecr) = (fields.tsval.to_be_bytes(), fields.tsecr.to_be_bytes());
        let len = total.to_be_bytes();
        h[field::SEQ_NUM].copy_from_slice(&seq);
        h[field::ACK_NUM].copy_from_slice(&ack);
        h[field::FLAGS] = fields.flags.bits();
        h[field::WINDOW].copy_from_slice(&window);
        h[field::URGENT].copy_from_slice(&urgent);
        h[TEMPLATE_LEN - 8..TEMPLATE_LEN - 4].copy_from_slice(&tsval);
        h[TEMPLATE_LEN - 4..].copy_from_slice(&tsecr);
        // Native-order words at even offsets, as `checksum::partial` adds
        // them (the flags share a word with the data offset, which the
        // template's sum holds).
        let c = if partial {
            checksum::fold_to_bytes(self.pseudo + u64::from(u16::from_ne_bytes(len)))
        } else {
            let words = u64::from(u32::from_ne_bytes(seq))
                + u64::from(u32::from_ne_bytes(ack))
                + u64::from(u16::from_ne_bytes([0, fields.flags.bits()]))
                + u64::from(u16::from_ne_bytes(window))
                + u64::from(u16::from_ne_bytes(urgent))
                + u64::from(u32::from_ne_bytes(tsval))
                + u64::from(u32::from_ne_bytes(tsecr))
                + u64::from(u16::from_ne_bytes(len));
            checksum::finish(self.sum + words + data)
        };
        h[field::CHECKSUM].copy_from_slice(&c);
        Ok(())
    }
}

/// The fields a header written from a [`TcpTemplate`] has of its own:
/// the rest (ports, data offset, the timestamp option's layout) is the
/// template's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TemplateFields {
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Control bits.
    pub flags: TcpFlags,
    /// Receive window (scaled, as on the wire).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// TSval (RFC 7323 §3.2).
    pub tsval: u32,
    /// TSecr.
    pub tsecr: u32,
}

/// Where the checksum field lies in the TCP header (for checksum offload).
pub const CHECKSUM_OFFSET: u8 = field::CHECKSUM.start as u8;

/// The demux key of a path through TCP (Mosberger 1997, §3.4): in active
/// mode, for a connection, the local and the remote port; otherwise (a
/// listener) the local port. The same layout as UDP's
/// ([`crate::wire::udp::path_demux_key`]).
#[inline]
pub fn path_demux_key(mode: KeyMode, local_port: u16, remote_port: Option<u16>) -> Key {
    super::port_demux_key(mode, local_port, remote_port)
}

/// Where [`packet_demux_key`]'s active key lies: destination then source
/// port; the header is as long as its data offset says, at least 20 bytes
/// and all there (the flow table's layout for TCP; options such as
/// timestamps do not move the ports).
pub const FLOW_LAYOUT: FlowLayout = FlowLayout::new(HeaderLen::Words {
    at: field::DATA_OFF as u8,
    shift: 4,
    min: HEADER_LEN as u8,
})
.key(field::DST_PORT.start as u8, 2)
.key(field::SRC_PORT.start as u8, 2);

/// Where [`packet_demux_key`]'s passive key lies: the destination port
/// alone, in the same segments as [`FLOW_LAYOUT`]'s (a listener's key).
/// Every segment to the port that no connection takes is the listener's,
/// not only a SYN: the partial classifier reads no flags, so the walk
/// reaches the listener too, and its stage sorts them out (RFC 9293
/// §3.10.7.2: a RST is dropped, an ACK checked as a SYN cookie's or
/// answered with a reset, anything else without SYN dropped).
pub const PASSIVE_FLOW_LAYOUT: FlowLayout = FlowLayout::new(HeaderLen::Words {
    at: field::DATA_OFF as u8,
    shift: 4,
    min: HEADER_LEN as u8,
})
.key(field::DST_PORT.start as u8, 2);

/// The demux key of a received segment, and the header bytes it spans
/// (the whole header, options included): what TCP's partial classifier
/// extracts. Local is the destination port, remote the source port, so the
/// key equals [`path_demux_key`] of the segment's path. `None` when the
/// header is not all there or its data offset is below 5.
#[inline]
pub fn packet_demux_key(segment: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
    let p = TcpPacket::new_unchecked(segment.get(..HEADER_LEN)?);
    let hl = p.header_len();
    if hl < HEADER_LEN || hl > segment.len() {
        return None;
    }
    Some((path_demux_key(mode, p.dst_port(), Some(p.src_port())), hl))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use pathstack_core::{MsgPool, PoolConfig};
    use proptest::prelude::*;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// A SYN as Linux sends it, written by hand from RFC 9293 §3.1 and the
    /// option formats: 10.0.0.1:40000 → 10.0.0.2:80, seq 0x12345678,
    /// window 64240, options MSS 1460, SACK-permitted, timestamps
    /// (123456, 0), NOP, window scale 7. The checksum 0x518e was computed
    /// apart from this crate (a Python RFC 1071 sum).
    const LINUX_SYN: [u8; 40] = [
        0x9c, 0x40, 0x00, 0x50, // ports
        0x12, 0x34, 0x56, 0x78, // seq
        0x00, 0x00, 0x00, 0x00, // ack
        0xa0, 0x02, 0xfa, 0xf0, // data offset 10, SYN, window
        0x51, 0x8e, 0x00, 0x00, // checksum, urgent
        0x02, 0x04, 0x05, 0xb4, // MSS 1460
        0x04, 0x02, 0x08, 0x0a, // SACK-permitted, timestamps kind/len
        0x00, 0x01, 0xe2, 0x40, // TSval 123456
        0x00, 0x00, 0x00, 0x00, // TSecr 0
        0x01, 0x03, 0x03, 0x07, // NOP, window scale 7
    ];

    fn linux_syn_repr() -> TcpRepr {
        TcpRepr {
            src_port: 40000,
            dst_port: 80,
            seq: 0x1234_5678,
            ack: 0,
            flags: TcpFlags::SYN,
            window: 64240,
            urgent: 0,
            options: TcpOptions {
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((123_456, 0)),
                ..TcpOptions::default()
            },
        }
    }

    #[test]
    fn linux_syn_parses() {
        let p = TcpPacket::new_checked(&LINUX_SYN[..], A, B).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (40000, 80));
        assert_eq!(p.seq_number(), 0x1234_5678);
        assert_eq!(p.flags(), TcpFlags::SYN);
        assert_eq!(p.header_len(), 40);
        assert_eq!(p.segment_len(), 1);
        assert!(p.payload().is_empty());
        assert_eq!(p.checksum(), 0x518e);
        assert_eq!(TcpRepr::parse(&p).unwrap(), linux_syn_repr());
        assert_eq!(format!("{:?}", TcpFlags::SYN | TcpFlags::ACK), "SYN|ACK");
    }

    #[test]
    fn linux_syn_emits_byte_for_byte() {
        let r = linux_syn_repr();
        assert_eq!(r.header_len(), 40);
        let mut buf = [0u8; 40];
        assert_eq!(r.emit(&mut buf, A, B, &[]), Ok(40));
        assert_eq!(buf, LINUX_SYN);
        // Checksum known answer, and the pseudo header matters.
        assert_eq!(
            TcpPacket::new_checked(&buf[..], A, A),
            Err(TcpDropReason::BadChecksum)
        );
    }

    /// What a device does with a partial checksum (checksum offload):
    /// sums the segment with the field in place and stores the complement.
    fn finish_partial(segment: &mut [u8]) {
        let at = usize::from(CHECKSUM_OFFSET);
        let c = checksum::compute(&[segment]);
        segment[at..at + 2].copy_from_slice(&c);
    }

    #[test]
    fn partial_checksum_finished_by_the_device_is_the_full_one() {
        let pool = MsgPool::new(PoolConfig::small(4));
        for payload in [&b""[..], b"x", b"hello tcp", &[0xffu8; 1001][..]] {
            let mut r = linux_syn_repr();
            r.flags = TcpFlags::ACK;
            let mut full = pool.alloc_copy(payload).unwrap();
            r.push_onto(&mut full, A, B).unwrap();
            let mut partial = pool.alloc_copy(payload).unwrap();
            r.push_onto_partial(&mut partial, A, B).unwrap();
            assert_ne!(partial.as_slice(), full.as_slice(), "left unfinished");
            assert!(TcpPacket::new_checked(partial.as_slice(), A, B).is_err());
            // The device's view trusts it; the bytes are otherwise right.
            assert!(TcpPacket::new_received(partial.as_slice(), A, B, true).is_ok());
            finish_partial(partial.as_mut_slice());
            assert_eq!(partial.as_slice(), full.as_slice());
        }
    }

    #[test]
    fn push_onto_matches_emit() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut m = pool.alloc_copy(b"hello tcp").unwrap();
        let mut r = linux_syn_repr();
        r.flags = TcpFlags::ACK | TcpFlags::PSH;
        r.options.set_sack_blocks(&[(1, 2), (3, 4)]);
        r.push_onto(&mut m, A, B).unwrap();
        let p = TcpPacket::new_checked(m.as_slice(), A, B).unwrap();
        assert_eq!(p.payload(), b"hello tcp");
        assert_eq!(TcpRepr::parse(&p).unwrap(), r);
        let mut buf = vec![0u8; m.len()];
        let hl = r.emit(&mut buf, A, B, b"hello tcp").unwrap();
        buf[hl..].copy_from_slice(b"hello tcp");
        assert_eq!(&buf[..], m.as_slice());
    }

    #[test]
    fn header_checks() {
        assert_eq!(
            TcpPacket::new_checked(&LINUX_SYN[..19], A, B),
            Err(TcpDropReason::Truncated)
        );
        // Data offset beyond the segment.
        assert_eq!(
            TcpPacket::new_checked(&LINUX_SYN[..36], A, B),
            Err(TcpDropReason::BadDataOffset)
        );
        // Data offset below 5.
        let mut s = LINUX_SYN;
        s[field::DATA_OFF] = 0x40;
        assert_eq!(
            TcpPacket::new_checked(&s[..], A, B),
            Err(TcpDropReason::BadDataOffset)
        );
        assert!(packet_demux_key(&s, KeyMode::Passive).is_none());
        assert!(packet_demux_key(&LINUX_SYN[..36], KeyMode::Passive).is_none());
    }

    fn opts(bytes: &[u8]) -> Result<TcpOptions, TcpDropReason> {
        TcpOptions::parse(bytes)
    }

    #[test]
    fn option_edge_cases() {
        // EOL ends the list: what follows is padding, even garbage.
        assert_eq!(opts(&[0, 2, 0, 0xff]), Ok(TcpOptions::default()));
        // Unknown kind skipped by its length (RFC 9293 §3.2).
        let o = opts(&[30, 4, 9, 9, 2, 4, 0x05, 0xb4]).unwrap();
        assert_eq!(o.mss, Some(1460));
        // Window scale above 14 reads as 14 (RFC 7323 §2.3).
        assert_eq!(opts(&[3, 3, 15]).unwrap().window_scale, Some(14));
        assert_eq!(opts(&[3, 3, 255]).unwrap().window_scale, Some(14));
        let big = TcpOptions {
            window_scale: Some(200),
            ..TcpOptions::default()
        };
        let mut b = [0u8; 4];
        assert_eq!(big.emit(&mut b), Some(4));
        assert_eq!(b, [1, 3, 3, 14]);
        assert_eq!(big.emit(&mut b[..3]), None);
        // Illegal lengths.
        for bad in [
            &[2][..],
            &[2, 0],
            &[2, 1, 0, 0],
            &[30, 5, 0, 0],
            &[8, 10, 0],
        ] {
            assert_eq!(opts(bad), Err(TcpDropReason::BadOption), "{bad:?}");
        }
        // Known kinds with other lengths.
        for bad in [
            &[2, 3, 0][..],
            &[3, 4, 0, 0],
            &[4, 3, 0],
            &[8, 6, 0, 0, 0, 0],
            &[5, 2],
            &[5, 6, 0, 0, 0, 0],
        ] {
            assert_eq!(opts(bad), Err(TcpDropReason::BadOptionLength), "{bad:?}");
        }
        // Four SACK blocks; a fifth would not fit in 40 bytes anyway.
        let mut four = vec![5, 34];
        for i in 0u32..8 {
            four.extend_from_slice(&i.to_be_bytes());
        }
        assert_eq!(
            opts(&four).unwrap().sack_blocks(),
            &[(0, 1), (2, 3), (4, 5), (6, 7)]
        );
    }

    #[test]
    fn options_too_long_for_the_header() {
        let mut r = linux_syn_repr();
        r.options.set_sack_blocks(&[(1, 2); 4]);
        assert_eq!(r.options.len(), 4 + 12 + 4 + 36);
        assert_eq!(
            r.emit(&mut [0u8; 80], A, B, &[]),
            Err(TcpEmitError::OptionsTooLong(56))
        );
        // Timestamps and three blocks: exactly 40, as Linux sends.
        r.options.mss = None;
        r.options.window_scale = None;
        r.options.sack_permitted = false;
        assert_eq!(r.options.set_sack_blocks(&[(1, 2); 5]), 4);
        r.options.set_sack_blocks(&[(1, 2); 3]);
        assert_eq!(r.header_len(), MAX_HEADER_LEN);
        assert_eq!(r.emit(&mut [0u8; 60], A, B, &[]), Ok(60));
        assert_eq!(
            r.emit(&mut [0u8; 59], A, B, &[]),
            Err(TcpEmitError::BufferTooShort)
        );
    }

    #[test]
    fn packet_key_matches_the_path_key() {
        for mode in [KeyMode::Active, KeyMode::Passive] {
            // Received by B: local port 80, remote port 40000.
            let (k, used) = packet_demux_key(&LINUX_SYN, mode).unwrap();
            assert_eq!(k, path_demux_key(mode, 80, Some(40000)));
            assert_eq!(used, 40);
        }
        assert_eq!(
            path_demux_key(KeyMode::Active, 7, Some(1)),
            crate::wire::udp::path_demux_key(KeyMode::Active, 7, Some(1))
        );
        assert_eq!(
            path_demux_key(KeyMode::Active, 80, None),
            path_demux_key(KeyMode::Passive, 80, Some(40000))
        );
    }

    fn arb_options() -> impl Strategy<Value = TcpOptions> {
        (
            proptest::option::of(any::<u16>()),
            proptest::option::of(0..=MAX_WINDOW_SHIFT),
            any::<bool>(),
            proptest::option::of(any::<(u32, u32)>()),
            proptest::collection::vec(any::<(u32, u32)>(), 0..=MAX_SACK_BLOCKS),
        )
            .prop_map(|(mss, window_scale, sack_permitted, timestamps, blocks)| {
                let mut o = TcpOptions {
                    mss,
                    window_scale,
                    sack_permitted,
                    timestamps,
                    ..TcpOptions::default()
                };
                o.set_sack_blocks(&blocks);
                o
            })
    }

    /// The segment of these header fields (the flags as their bits, any
    /// of the eight) and `options`: how the property tests here and of
    /// the predicted read (`wire::tcp_predicted`) build one from the
    /// values proptest draws.
    pub(in crate::wire) fn repr_of(
        (src_port, dst_port, seq, ack): (u16, u16, u32, u32),
        (flags, window, urgent): (u8, u16, u16),
        options: TcpOptions,
    ) -> TcpRepr {
        TcpRepr {
            src_port,
            dst_port,
            seq,
            ack,
            flags: TcpFlags::from_bits(flags),
            window,
            urgent,
            options,
        }
    }

    fn arb_repr() -> impl Strategy<Value = TcpRepr> {
        (
            any::<(u16, u16, u32, u32)>(),
            any::<(u8, u16, u16)>(),
            arb_options(),
        )
            .prop_map(|(fields, more, options)| repr_of(fields, more, options))
    }

    /// The options as etherparse reads them, mapped to ours; `None` when
    /// it finds an error (or a kind it does not know).
    fn etherparse_options(bytes: &[u8]) -> Option<TcpOptions> {
        use etherparse::TcpOptionElement as E;
        let mut o = TcpOptions::default();
        for e in etherparse::TcpOptionsIterator::from_slice(bytes) {
            match e.ok()? {
                E::Noop => {}
                E::MaximumSegmentSize(v) => o.mss = Some(v),
                E::WindowScale(v) => o.window_scale = Some(v.min(MAX_WINDOW_SHIFT)),
                E::SelectiveAcknowledgementPermitted => o.sack_permitted = true,
                E::Timestamp(v, e) => o.timestamps = Some((v, e)),
                E::SelectiveAcknowledgement(first, rest) => {
                    let mut b = vec![first];
                    b.extend(rest.iter().flatten());
                    o.set_sack_blocks(&b);
                }
            }
        }
        Some(o)
    }

    /// Option lists from well-formed pieces, one byte then perhaps
    /// overwritten: mostly valid, sometimes subtly not.
    fn arb_option_bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(vec![option_kind::NOP]),
            Just(vec![option_kind::EOL]),
            any::<u16>().prop_map(|v| {
                let b = v.to_be_bytes();
                vec![2, 4, b[0], b[1]]
            }),
            any::<u8>().prop_map(|v| vec![3, 3, v]),
            Just(vec![4, 2]),
            any::<[u8; 8]>().prop_map(|v| [&[8u8, 10][..], &v].concat()),
            (1usize..=4, any::<[u8; 32]>()).prop_map(|(n, v)| [
                &[5u8, 2 + 8 * n as u8][..],
                &v[..8 * n]
            ]
            .concat()),
        ];
        (
            proptest::collection::vec(piece, 0..6),
            any::<Option<(usize, u8)>>(),
        )
            .prop_map(|(pieces, corrupt)| {
                let mut b = pieces.concat();
                b.truncate(MAX_OPTIONS_LEN);
                if let (Some((at, v)), false) = (corrupt, b.is_empty()) {
                    let at = at % b.len();
                    b[at] = v;
                }
                b
            })
    }

    proptest! {
        /// Wherever etherparse parses an option list without error, ours
        /// gives the same options.
        #[test]
        fn options_agree_with_etherparse(bytes in arb_option_bytes()) {
            let ours = TcpOptions::parse(&bytes);
            if let Some(theirs) = etherparse_options(&bytes) {
                prop_assert_eq!(ours, Ok(theirs));
            }
        }

        /// The aligned timestamps read in place (and what follows them
        /// read by the loop) as etherparse reads them.
        #[test]
        fn aligned_timestamps_agree_with_etherparse(
            ts in any::<[u8; 8]>(),
            rest in proptest::collection::vec(any::<u8>(), 0..6),
            cut in 0usize..13,
        ) {
            let mut bytes = [&[1u8, 1, 8, 10][..], &ts, &rest].concat();
            if cut > 0 {
                bytes.truncate(cut);
            }
            let ours = TcpOptions::parse(&bytes);
            if bytes.len() == 12 {
                let v = (be32(&ts[..4]), be32(&ts[4..]));
                prop_assert_eq!(ours, Ok(TcpOptions { timestamps: Some(v), ..TcpOptions::default() }));
            }
            if let Some(theirs) = etherparse_options(&bytes) {
                prop_assert_eq!(ours, Ok(theirs));
            }
        }

        /// A segment from the template is byte for byte the one
        /// `push_onto` (or `push_onto_partial`) writes.
        #[test]
        fn template_writes_what_push_onto_writes(
            (sp, dp, seq, ack) in any::<(u16, u16, u32, u32)>(),
            (flags, window, urgent) in any::<(u8, u16, u16)>(),
            ts in any::<(u32, u32)>(),
            payload in proptest::collection::vec(any::<u8>(), 0..100),
            s in any::<[u8; 4]>(),
            d in any::<[u8; 4]>(),
            partial in any::<bool>(),
        ) {
            let options = TcpOptions { timestamps: Some(ts), ..TcpOptions::default() };
            let r = repr_of((sp, dp, seq, ack), (flags, window, urgent), options);
            let t = TcpTemplate::new(s.into(), d.into(), sp, dp);
            prop_assert!(t.fits(&r));
            let pool = MsgPool::new(PoolConfig::small(4));
            let mut a = pool.alloc_copy(&payload).unwrap();
            let mut b = pool.alloc_copy(&payload).unwrap();
            t.push_onto(&mut a, &r, partial).unwrap();
            if partial {
                r.push_onto_partial(&mut b, s.into(), d.into()).unwrap();
            } else {
                r.push_onto(&mut b, s.into(), d.into()).unwrap();
            }
            prop_assert_eq!(a.as_slice(), b.as_slice());
        }

        /// The template takes its ports with the timestamps alone.
        #[test]
        fn template_fits_only_its_layout(r in arb_repr(), other in any::<u16>()) {
            let t = TcpTemplate::new(A, B, r.src_port, r.dst_port);
            let layout = r.options.timestamps.is_some()
                && r.options == TcpOptions { timestamps: r.options.timestamps, ..TcpOptions::default() };
            prop_assert_eq!(t.fits(&r), layout);
            if other != r.dst_port {
                prop_assert!(!TcpTemplate::new(A, B, r.src_port, other).fits(&r));
            }
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..100), s in any::<[u8; 4]>(), d in any::<[u8; 4]>()) {
            let _ = TcpOptions::parse(&bytes);
            let _ = packet_demux_key(&bytes, KeyMode::Active);
            // Make the checksum right half the time, so the checks past it
            // run on arbitrary headers too.
            let mut bytes = bytes;
            if bytes.len() >= HEADER_LEN && s[0] & 1 == 0 {
                bytes[16] = 0;
                bytes[17] = 0;
                let c = checksum::compute(&[&pseudo_header(s.into(), d.into(), bytes.len() as u16), &bytes]);
                bytes[16..18].copy_from_slice(&c);
            }
            if let Ok(p) = TcpPacket::new_checked(&bytes[..], s.into(), d.into()) {
                prop_assert!(p.header_len() >= HEADER_LEN && p.header_len() <= bytes.len());
                let _ = (p.options(), p.payload(), p.segment_len(), TcpRepr::parse(&p));
            }
        }

        /// The one-pass read of a received segment answers as the checked
        /// view and the parse do, drop reason included, for any bytes
        /// (checksums made right half the time), either way round of the
        /// pseudo header's addresses.
        #[test]
        fn parse_received_is_check_then_parse(
            bytes in proptest::collection::vec(any::<u8>(), 0..100),
            s in any::<[u8; 4]>(),
            d in any::<[u8; 4]>(),
            verified in any::<bool>(),
            offset in 0u8..16,
        ) {
            let mut bytes = bytes;
            if bytes.len() >= HEADER_LEN {
                // Data offsets of every value, most within the buffer.
                bytes[field::DATA_OFF] = (offset << 4) | (bytes[field::DATA_OFF] & 0x0f);
                if s[0] & 1 == 0 {
                    bytes[16] = 0;
                    bytes[17] = 0;
                    let c = checksum::compute(&[&pseudo_header(s.into(), d.into(), bytes.len() as u16), &bytes]);
                    bytes[16..18].copy_from_slice(&c);
                }
            }
            let (s, d) = (Ipv4Addr::from(s), Ipv4Addr::from(d));
            let want = TcpPacket::new_received(&bytes[..], s, d, verified)
                .and_then(|p| TcpRepr::parse(&p).map(|r| (r, p.header_len())));
            // The connection's template is made for the other direction.
            let pseudo = TcpTemplate::new(d, s, 1, 2).pseudo_sum();
            prop_assert_eq!(TcpRepr::parse_received(&bytes, pseudo, verified), want);
        }

        #[test]
        fn emit_parse_round_trip(r in arb_repr(), payload in proptest::collection::vec(any::<u8>(), 0..600), s in any::<[u8; 4]>(), d in any::<[u8; 4]>()) {
            let pool = MsgPool::new(PoolConfig::small(2));
            let mut m = pool.alloc_copy(&payload).unwrap();
            match r.push_onto(&mut m, s.into(), d.into()) {
                Err(TcpEmitError::OptionsTooLong(n)) => prop_assert!(n > MAX_OPTIONS_LEN),
                Err(e) => prop_assert!(false, "{e}"),
                Ok(()) => {
                    let p = TcpPacket::new_checked(m.as_slice(), s.into(), d.into()).unwrap();
                    prop_assert_eq!(p.header_len(), r.header_len());
                    prop_assert_eq!(p.payload(), &payload[..]);
                    prop_assert_eq!(TcpRepr::parse(&p).unwrap(), r);
                }
            }
        }

        /// etherparse as the reference: same fields, same options, same
        /// checksum, on every header we emit.
        #[test]
        fn agrees_with_etherparse(r in arb_repr(), payload in proptest::collection::vec(any::<u8>(), 0..100), s in any::<[u8; 4]>(), d in any::<[u8; 4]>()) {
            let mut buf = [0u8; MAX_HEADER_LEN];
            let Ok(hl) = r.emit(&mut buf, s.into(), d.into(), &payload) else {
                return Ok(());
            };
            let h = TcpHeaderSlice::from_slice(&buf[..hl]).unwrap();
            prop_assert_eq!((h.source_port(), h.destination_port()), (r.src_port, r.dst_port));
            prop_assert_eq!((h.sequence_number(), h.acknowledgment_number()), (r.seq, r.ack));
            prop_assert_eq!((h.window_size(), h.urgent_pointer()), (r.window, r.urgent));
            prop_assert_eq!((h.syn(), h.fin(), h.ack(), h.cwr()), (r.flags.contains(TcpFlags::SYN), r.flags.contains(TcpFlags::FIN), r.flags.contains(TcpFlags::ACK), r.flags.contains(TcpFlags::CWR)));
            prop_assert_eq!(h.checksum(), h.calc_checksum_ipv4_raw(s, d, &payload).unwrap());
            prop_assert_eq!(etherparse_options(h.options()), Some(r.options));
        }
    }
}
