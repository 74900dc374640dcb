//! IPv4 header parsing with validation, and header emission (RFC 791 §3.1,
//! RFC 1122 §3.2.1).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |Version|  IHL  |Type of Service|          Total Length         |
//! |         Identification        |Flags|      Fragment Offset    |
//! |  Time to Live |    Protocol   |         Header Checksum       |
//! |                       Source Address                          |
//! |                    Destination Address                        |
//! |                    Options                    |    Padding    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! [`Ipv4Packet`] is a view over a datagram's bytes, its fields read
//! through [`field`]; [`Ipv4Packet::new_checked`] validates a received one
//! (header slicing by `etherparse::Ipv4HeaderSlice`; the total-length,
//! checksum and address checks that etherparse leaves to the caller are
//! here). [`Ipv4Repr`] is the
//! header as fields, emitted without options: this stack originates no IP
//! options, so every header it writes is 20 bytes.

use crate::wire::checksum;
use etherparse::Ipv4HeaderSlice;
use pathstack_core::demux::{FlowLayout, HeaderLen, Key, KeyMode};
use pathstack_core::{Msg, MsgError};
use std::net::Ipv4Addr;
use std::ops::Range;

/// Length of a header without options (IHL = 5).
pub const MIN_HEADER_LEN: usize = field::OPTIONS;
/// Length of the longest header (IHL = 15).
pub const MAX_HEADER_LEN: usize = 60;
/// Largest datagram the total-length field can describe.
pub const MAX_DATAGRAM_LEN: usize = 65_535;
/// Default TTL of datagrams we originate (RFC 1700 / IANA recommends 64).
pub const DEFAULT_TTL: u8 = 64;

/// Where each header field lies (RFC 791 §3.1): the byte ranges every
/// accessor, emitter and demux key of this file reads and writes.
pub mod field {
    use std::ops::Range;

    /// Version (high nibble) and IHL, the header length in 32-bit words (low nibble).
    pub const VER_IHL: usize = 0;
    /// Type of service (DSCP and ECN).
    pub const TOS: usize = 1;
    /// Total length of the datagram in bytes.
    pub const LENGTH: Range<usize> = 2..4;
    /// Identification.
    pub const IDENT: Range<usize> = 4..6;
    /// Flags (3 bits) and fragment offset (13 bits, in 8-byte units).
    pub const FLG_OFF: Range<usize> = 6..8;
    /// Don't Fragment, in the [`FLG_OFF`] word.
    pub const DONT_FRAG: u16 = 0x4000;
    /// More Fragments, in the [`FLG_OFF`] word.
    pub const MORE_FRAGS: u16 = 0x2000;
    /// The fragment offset bits of the [`FLG_OFF`] word.
    pub const OFFSET: u16 = 0x1fff;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Upper-layer protocol.
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: Range<usize> = 10..12;
    /// Source address.
    pub const SRC_ADDR: Range<usize> = 12..16;
    /// Destination address.
    pub const DST_ADDR: Range<usize> = 16..20;
    /// First option byte (when IHL > 5).
    pub const OPTIONS: usize = 20;
}

/// IP protocol numbers used in this crate (IANA "Assigned Internet Protocol Numbers").
pub mod protocol {
    /// ICMP (RFC 792).
    pub const ICMP: u8 = 1;
    /// TCP (RFC 9293).
    pub const TCP: u8 = 6;
    /// UDP (RFC 768).
    pub const UDP: u8 = 17;
}

pathstack_core::drop_reasons! {
    /// Why an IPv4 datagram was dropped. [`Ipv4DropReason::as_str`] names are
    /// stable counter labels.
    #[derive(thiserror::Error)]
    pub enum Ipv4DropReason in "ipv4" {
        /// Fewer bytes than the 20-byte minimum header or than IHL × 4.
        #[error("datagram shorter than its IPv4 header")]
        Truncated => "truncated",
        /// Version field is not 4.
        #[error("IP version is not 4")]
        BadVersion => "bad_version",
        /// IHL below 5 (RFC 791: the minimum value for a correct header is 5).
        #[error("IHL below 5")]
        BadHeaderLength => "bad_header_length",
        /// Total length smaller than the header length.
        #[error("total length smaller than the header")]
        TotalLengthTooSmall => "total_length_too_small",
        /// Total length larger than the bytes received.
        #[error("total length exceeds the received bytes")]
        TotalLengthTooLarge => "total_length_too_large",
        /// Header checksum does not verify (RFC 1122 §3.2.1.2: MUST discard silently).
        #[error("bad IPv4 header checksum")]
        BadChecksum => "bad_checksum",
        /// Source is broadcast, multicast or class E (RFC 1122 §3.2.1.3: MUST discard silently).
        #[error("source address does not name a single host")]
        BadSource => "bad_source",
        /// Destination is not one of ours (a host does not forward, RFC 1122 §3.3.1.1).
        #[error("datagram not addressed to this host")]
        NotForUs => "not_for_us",
        /// TTL reached zero while forwarding (RFC 1812 §5.3.1); a host never drops on TTL when receiving.
        #[error("TTL expired in transit")]
        TtlExpired => "ttl_expired",
        /// No upper-layer protocol for the protocol field (ICMP protocol
        /// unreachable, RFC 1122 §3.2.2.1), or an outgoing path without one.
        #[error("no handler for this IP protocol")]
        NoProtocol => "no_protocol",
        /// A datagram on a path of another protocol than its own.
        #[error("datagram of another protocol than the path's")]
        WrongProtocol => "wrong_protocol",
        /// An outgoing datagram has no destination address (neither the
        /// path's peer nor the message's).
        #[error("outgoing datagram without a destination")]
        NoDestination => "no_destination",
        /// No route to the destination from the path's interface.
        #[error("no route to the destination")]
        NoRoute => "no_route",
        /// No room in front of a datagram for the header.
        #[error("no headroom for the IPv4 header")]
        NoHeadroom => "no_headroom",
        /// A datagram larger than the MTU could not be fragmented, or not
        /// every fragment could be sent (RFC 791 §3.2).
        #[error("fragmentation failed")]
        FragmentationFailed => "fragmentation_failed",
    }
}

/// Whether `addr` can be the source of a datagram we accept: not limited
/// broadcast, not multicast, not class E (RFC 1122 §3.2.1.3). 0.0.0.0 is
/// allowed (a host booting with DHCP, RFC 1122 §3.2.1.3 (a)); subnet
/// directed broadcasts can only be recognised with the interface's prefix,
/// which the caller checks.
pub fn is_valid_source(addr: Ipv4Addr) -> bool {
    !(addr.is_broadcast() || addr.is_multicast() || addr.octets()[0] >= 240)
}

/// A view of an IPv4 datagram in a byte buffer: the fields read through
/// [`field`]. Made by [`Ipv4Packet::new_checked`] for received bytes; the
/// view then ends at the total length (trailing link-layer padding is not
/// part of [`Ipv4Packet::as_bytes`] or [`Ipv4Packet::payload`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// A view of `buffer` without any check. The accessors index the
    /// buffer, so it must hold at least [`MIN_HEADER_LEN`] bytes (and the
    /// options, payload accessors the lengths the header claims).
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Validates a received datagram (RFC 791 §3.1, RFC 1122 §3.2.1):
    /// version 4, 5 ≤ IHL, IHL × 4 ≤ total length ≤ `buffer.len()`, header
    /// checksum, source address. Bytes after the total length (Ethernet
    /// padding) are ignored. Options (IHL > 5) are skipped, not interpreted:
    /// RFC 1122 §3.2.1.8 requires only that unknown options are ignored.
    ///
    /// The TTL is not checked: a host MUST NOT discard a datagram just
    /// because its TTL is below 2 (RFC 1122 §3.2.1.7).
    pub fn new_checked(buffer: T) -> Result<Self, Ipv4DropReason> {
        use etherparse::err::ipv4::{HeaderError, HeaderSliceError};
        let bytes = buffer.as_ref();
        let hdr = Ipv4HeaderSlice::from_slice(bytes).map_err(|e| match e {
            HeaderSliceError::Len(_) => Ipv4DropReason::Truncated,
            HeaderSliceError::Content(HeaderError::UnexpectedVersion { .. }) => {
                Ipv4DropReason::BadVersion
            }
            HeaderSliceError::Content(HeaderError::HeaderLengthSmallerThanHeader { .. }) => {
                Ipv4DropReason::BadHeaderLength
            }
        })?;
        let header_len = hdr.slice().len();
        let total_len = usize::from(hdr.total_len());
        if total_len < header_len {
            return Err(Ipv4DropReason::TotalLengthTooSmall);
        }
        if total_len > bytes.len() {
            return Err(Ipv4DropReason::TotalLengthTooLarge);
        }
        if !checksum::verify(&[hdr.slice()]) {
            return Err(Ipv4DropReason::BadChecksum);
        }
        if !is_valid_source(hdr.source_addr()) {
            return Err(Ipv4DropReason::BadSource);
        }
        Ok(Ipv4Packet { buffer })
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn byte(&self, at: usize) -> u8 {
        self.buffer.as_ref()[at]
    }
    fn word(&self, at: Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[at];
        u16::from_be_bytes([b[0], b[1]])
    }
    fn addr(&self, at: Range<usize>) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[at];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }

    /// Version field.
    pub fn version(&self) -> u8 {
        self.byte(field::VER_IHL) >> 4
    }
    /// Header length in bytes (IHL × 4), options included.
    pub fn header_len(&self) -> usize {
        usize::from(self.byte(field::VER_IHL) & 0x0f) * 4
    }
    /// Total length in bytes (header and payload, from the field).
    pub fn total_len(&self) -> usize {
        usize::from(self.word(field::LENGTH))
    }
    /// Type of service / DSCP+ECN byte.
    pub fn tos(&self) -> u8 {
        self.byte(field::TOS)
    }
    /// Identification field.
    pub fn ident(&self) -> u16 {
        self.word(field::IDENT)
    }
    /// Don't Fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.word(field::FLG_OFF) & field::DONT_FRAG != 0
    }
    /// More Fragments flag.
    pub fn more_frags(&self) -> bool {
        self.word(field::FLG_OFF) & field::MORE_FRAGS != 0
    }
    /// Fragment offset in bytes (the field counts 8-byte units).
    pub fn frag_offset(&self) -> usize {
        usize::from(self.word(field::FLG_OFF) & field::OFFSET) * 8
    }
    /// Whether this datagram is a fragment (MF set or offset non-zero).
    pub fn is_fragment(&self) -> bool {
        self.more_frags() || self.frag_offset() != 0
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.byte(field::TTL)
    }
    /// Protocol field.
    pub fn protocol(&self) -> u8 {
        self.byte(field::PROTOCOL)
    }
    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        self.word(field::CHECKSUM)
    }
    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        self.addr(field::SRC_ADDR)
    }
    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        self.addr(field::DST_ADDR)
    }
    /// The header fields (options are not carried into the repr).
    pub fn repr(&self) -> Ipv4Repr {
        Ipv4Repr {
            src: self.src(),
            dst: self.dst(),
            protocol: self.protocol(),
            ttl: self.ttl(),
            tos: self.tos(),
            ident: self.ident(),
            dont_frag: self.dont_frag(),
            more_frags: self.more_frags(),
            frag_offset: self.frag_offset() as u16,
            payload_len: (self.total_len() - self.header_len()) as u16,
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Ipv4Packet<&'a T> {
    /// The whole datagram, header included, without link padding.
    pub fn as_bytes(&self) -> &'a [u8] {
        &self.buffer.as_ref()[..self.total_len()]
    }
    /// The header, options included.
    pub fn header(&self) -> &'a [u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }
    /// The option bytes (empty when IHL = 5).
    pub fn options(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::OPTIONS..self.header_len()]
    }
    /// The payload (after the options, up to the total length).
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[self.header_len()..self.total_len()]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the time to live (the checksum is the caller's to update).
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }
    /// Sets the header checksum field.
    pub fn set_checksum(&mut self, checksum: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&checksum.to_be_bytes());
    }
}

/// Validates the datagram at the front of `msg` ([`Ipv4Packet::new_checked`]),
/// trims trailing link padding so that `msg` ends at the total length, and
/// returns the header fields and the header length. The header stays in
/// `msg`: the caller pops `header_len` bytes when it hands the payload up,
/// and keeps the bytes for an ICMP error quote if it needs one.
pub fn receive(msg: &mut Msg) -> Result<(Ipv4Repr, usize), Ipv4DropReason> {
    let (repr, header_len, total) = {
        let p = Ipv4Packet::new_checked(msg.as_slice())?;
        (p.repr(), p.header_len(), p.total_len())
    };
    msg.truncate(total);
    Ok((repr, header_len))
}

/// Why a header could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Ipv4EmitError {
    /// Payload plus header would exceed 65,535 bytes.
    #[error("payload of {0} bytes does not fit in one IPv4 datagram")]
    PayloadTooLong(usize),
    /// The message has no room in front for the header.
    #[error(transparent)]
    Msg(#[from] MsgError),
}

/// The fields of an IPv4 header as this stack writes it: no options
/// (20 bytes), checksum computed on emit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Upper-layer protocol ([`protocol`]).
    pub protocol: u8,
    /// Time to live (RFC 1122 §3.2.1.7: never send 0).
    pub ttl: u8,
    /// Type of service / DSCP+ECN byte.
    pub tos: u8,
    /// Identification (RFC 791; see [`IdentCounter`](crate::ip::ipv4_ident::IdentCounter)).
    pub ident: u16,
    /// Don't Fragment.
    pub dont_frag: bool,
    /// More Fragments.
    pub more_frags: bool,
    /// Fragment offset in bytes; must be a multiple of 8.
    pub frag_offset: u16,
    /// Payload length in bytes (total length − 20 on emit).
    pub payload_len: u16,
}

impl Ipv4Repr {
    /// A header for an unfragmented datagram with default TTL, TOS 0, DF clear.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, ident: u16, payload_len: u16) -> Self {
        Ipv4Repr {
            src,
            dst,
            protocol,
            ttl: DEFAULT_TTL,
            tos: 0,
            ident,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            payload_len,
        }
    }

    /// Writes the 20-byte header, checksum included, into the front of `buf`.
    /// Returns `None` if `buf` is shorter than 20 bytes or the payload
    /// length does not fit the total-length field.
    pub fn emit(&self, buf: &mut [u8]) -> Option<()> {
        let total = u16::try_from(usize::from(self.payload_len) + MIN_HEADER_LEN).ok()?;
        let h = buf.get_mut(..MIN_HEADER_LEN)?;
        h[field::VER_IHL] = 0x45; // version 4, IHL 5: no options
        h[field::TOS] = self.tos;
        h[field::LENGTH].copy_from_slice(&total.to_be_bytes());
        h[field::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        let units = (self.frag_offset / 8) & field::OFFSET;
        let flags = (if self.dont_frag { field::DONT_FRAG } else { 0 })
            | (if self.more_frags {
                field::MORE_FRAGS
            } else {
                0
            });
        h[field::FLG_OFF].copy_from_slice(&(flags | units).to_be_bytes());
        h[field::TTL] = self.ttl;
        h[field::PROTOCOL] = self.protocol;
        h[field::CHECKSUM].fill(0);
        h[field::SRC_ADDR].copy_from_slice(&self.src.octets());
        h[field::DST_ADDR].copy_from_slice(&self.dst.octets());
        let c = checksum::compute(&[h]);
        h[field::CHECKSUM].copy_from_slice(&c);
        Some(())
    }

    /// Sets `payload_len` to `msg.len()` and pushes the header in front of
    /// `msg` (the send direction of the IP stage).
    pub fn push_onto(&mut self, msg: &mut Msg) -> Result<(), Ipv4EmitError> {
        let len = msg.len();
        if len > MAX_DATAGRAM_LEN - MIN_HEADER_LEN {
            return Err(Ipv4EmitError::PayloadTooLong(len));
        }
        self.payload_len = len as u16;
        let h = msg.push(MIN_HEADER_LEN)?;
        // Length checked above and `h` is exactly 20 bytes: cannot fail.
        let _ = self.emit(h);
        Ok(())
    }
}

/// The header of every datagram of one connected path, formatted once when
/// the path is created: Scout's premise that a path takes its decisions
/// once (Mosberger, *Scout: A Path-Based Operating System*, 1997, §2.2).
/// Source, destination, protocol and flags never change on such a path;
/// per datagram only the total length, the identification and the TTL (a
/// socket option) are written, and the checksum adds those words to the
/// sum of the rest (RFC 1071 §2(C): the sum is associative). The bytes are
/// those [`Ipv4Repr::new`] with that TTL + [`Ipv4Repr::push_onto`] would
/// write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Template {
    header: [u8; MIN_HEADER_LEN],
    /// Sum of the header's words with length, identification, TTL and
    /// checksum zero.
    sum: u64,
}

impl Ipv4Template {
    /// The template for datagrams from `src` to `dst` carrying `protocol`,
    /// with the defaults of [`Ipv4Repr::new`].
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8) -> Self {
        let mut header = [0u8; MIN_HEADER_LEN];
        // A zero payload always fits.
        let _ = Ipv4Repr::new(src, dst, protocol, 0, 0).emit(&mut header);
        header[field::LENGTH].fill(0);
        header[field::TTL] = 0;
        header[field::CHECKSUM].fill(0);
        Ipv4Template {
            header,
            sum: checksum::partial(&header),
        }
    }

    /// Pushes the header, with `msg.len()` of payload, identification
    /// `ident` and time to live `ttl` ([`DEFAULT_TTL`] unless a socket
    /// chose another), in front of `msg`.
    #[inline]
    pub fn push_onto(&self, msg: &mut Msg, ident: u16, ttl: u8) -> Result<(), Ipv4EmitError> {
        let len = msg.len();
        if len > MAX_DATAGRAM_LEN - MIN_HEADER_LEN {
            return Err(Ipv4EmitError::PayloadTooLong(len));
        }
        let h = msg.push(MIN_HEADER_LEN)?;
        self.write(h, (len + MIN_HEADER_LEN) as u16, ident, ttl);
        Ok(())
    }

    /// Writes the header of a datagram of `total` bytes with
    /// identification `ident` and time to live `ttl` into the first
    /// [`MIN_HEADER_LEN`] bytes of `h` (which must have them).
    #[inline(always)]
    pub fn write(&self, h: &mut [u8], total: u16, ident: u16, ttl: u8) {
        let Some(h) = h.first_chunk_mut::<MIN_HEADER_LEN>() else {
            return;
        };
        let total = total.to_be_bytes();
        let ident = ident.to_be_bytes();
        *h = self.header;
        h[field::LENGTH].copy_from_slice(&total);
        h[field::IDENT].copy_from_slice(&ident);
        h[field::TTL] = ttl;
        // TTL shares its word with the protocol, which the sum holds.
        let sum = self.sum
            + u64::from(u16::from_ne_bytes(total))
            + u64::from(u16::from_ne_bytes(ident))
            + u64::from(u16::from_ne_bytes([ttl, 0]));
        h[field::CHECKSUM].copy_from_slice(&checksum::finish(sum));
    }
}

/// Decrements the TTL of the header at the front of `header` and updates
/// its checksum incrementally (RFC 1624 §3; RFC 1812 §5.3.1). For a host
/// that forwards (or loops back) datagrams; refuses to go below 1.
pub fn decrement_ttl_in_place(header: &mut [u8]) -> Result<(), Ipv4DropReason> {
    if header.len() < MIN_HEADER_LEN {
        return Err(Ipv4DropReason::Truncated);
    }
    let mut p = Ipv4Packet::new_unchecked(header);
    let ttl = p.ttl();
    if ttl <= 1 {
        return Err(Ipv4DropReason::TtlExpired);
    }
    // TTL and protocol share one 16-bit word of the checksum sum.
    let old = u16::from_be_bytes([ttl, p.protocol()]);
    let new = u16::from_be_bytes([ttl - 1, p.protocol()]);
    p.set_ttl(ttl - 1);
    let c = checksum::update(p.checksum(), old, new);
    p.set_checksum(c);
    Ok(())
}

/// The demux key of a path through IP (Mosberger, *Scout: A Path-Based
/// Operating System*, 1997, §3.4, Figure 3.10): in active mode, for a path
/// with a fixed remote address, the protocol, the local address and the
/// remote address; otherwise the protocol alone.
#[inline]
pub fn path_demux_key(
    mode: KeyMode,
    protocol: u8,
    local: Ipv4Addr,
    remote: Option<Ipv4Addr>,
) -> Key {
    match (mode, remote) {
        (KeyMode::Active, Some(r)) => {
            let l = local.octets();
            let r = r.octets();
            Key::from_array([protocol, l[0], l[1], l[2], l[3], r[0], r[1], r[2], r[3]])
        }
        _ => Key::from_array([protocol]),
    }
}

/// Where [`packet_demux_key`]'s active key lies in the common datagram
/// (the flow table's layout for IP): version 4 with a 20-byte header, i.e.
/// the version/IHL byte 0x45 (no options), and not a fragment — More
/// Fragments clear and fragment offset 0, the flags-and-offset word
/// masked with 0x3fff (RFC 791 §3.1; Don't Fragment may be set). Then the
/// header is 20 bytes and the key is protocol, destination, source. A
/// datagram with options or a fragment does not take the flow table's
/// probe: its header length varies, and a fragment's key spans the whole
/// datagram (see [`packet_demux_key`]).
pub const FLOW_LAYOUT: FlowLayout = FlowLayout::new(HeaderLen::Fixed(MIN_HEADER_LEN as u8))
    .guard(field::VER_IHL as u8, 0xff, 0x45)
    .guard(
        field::FLG_OFF.start as u8,
        ((field::MORE_FRAGS | field::OFFSET) >> 8) as u8,
        0,
    )
    .guard(field::FLG_OFF.start as u8 + 1, 0xff, 0)
    .key(field::PROTOCOL as u8, 1)
    .key(field::DST_ADDR.start as u8, 4)
    .key(field::SRC_ADDR.start as u8, 4);

/// Where [`packet_demux_key`]'s passive key lies: the same datagrams as
/// [`FLOW_LAYOUT`]'s, keyed on the protocol alone (a passive path serves
/// every peer).
pub const PASSIVE_FLOW_LAYOUT: FlowLayout = FlowLayout::new(HeaderLen::Fixed(MIN_HEADER_LEN as u8))
    .guard(field::VER_IHL as u8, 0xff, 0x45)
    .guard(
        field::FLG_OFF.start as u8,
        ((field::MORE_FRAGS | field::OFFSET) >> 8) as u8,
        0,
    )
    .guard(field::FLG_OFF.start as u8 + 1, 0xff, 0)
    .key(field::PROTOCOL as u8, 1);

/// The demux key of a received datagram, and the bytes it spans: what IP's
/// partial classifier extracts. Local is the destination, remote the
/// source, so the key equals [`path_demux_key`] of the path the datagram
/// belongs to. Only version and IHL are checked (the IP stage validates the
/// rest); `None` when they are wrong or the header is not all there.
///
/// A fragment has no complete transport header, so it spans the whole
/// datagram: the walk ends at IP, whose own path reassembles it and
/// classifies the whole datagram again (thesis §3.4.2, Figure 3.6).
#[inline]
pub fn packet_demux_key(datagram: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
    if datagram.len() < MIN_HEADER_LEN {
        return None;
    }
    let p = Ipv4Packet::new_unchecked(datagram);
    let ihl = p.header_len();
    if p.version() != 4 || ihl < MIN_HEADER_LEN || datagram.len() < ihl {
        return None;
    }
    let used = if p.is_fragment() { datagram.len() } else { ihl };
    Some((
        path_demux_key(mode, p.protocol(), p.dst(), Some(p.src())),
        used,
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pathstack_core::{MsgPool, PoolConfig};
    use proptest::prelude::*;

    pub(crate) const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    pub(crate) const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

    /// A datagram with header `repr` and `payload`, as bytes.
    pub(crate) fn datagram(repr: &Ipv4Repr, payload: &[u8]) -> Vec<u8> {
        let mut r = *repr;
        r.payload_len = payload.len() as u16;
        let mut v = vec![0u8; MIN_HEADER_LEN];
        r.emit(&mut v).unwrap();
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn emit_matches_etherparse_and_parses_back() {
        let mut r = Ipv4Repr::new(A, B, protocol::UDP, 0x1234, 8);
        r.dont_frag = true;
        let bytes = datagram(&r, &[1, 2, 3, 4, 5, 6, 7, 8]);
        // Cross-check against etherparse's own header checksum.
        let (eh, _) = etherparse::Ipv4Header::from_slice(&bytes).unwrap();
        assert_eq!(eh.header_checksum, eh.calc_header_checksum());
        let p = Ipv4Packet::new_checked(&bytes).unwrap();
        assert_eq!(p.repr(), r);
        assert_eq!(p.payload(), &[1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn flags_and_offset_encoding() {
        let mut r = Ipv4Repr::new(A, B, protocol::UDP, 7, 16);
        r.more_frags = true;
        r.frag_offset = 8 * 185;
        let bytes = datagram(&r, &[0; 16]);
        assert_eq!(&bytes[6..8], &[0x20, 185]);
        let p = Ipv4Packet::new_checked(&bytes).unwrap();
        assert!(p.is_fragment());
        assert_eq!(p.frag_offset(), 1480);
    }

    #[test]
    fn options_are_skipped_and_padding_trimmed() {
        // IHL 6: one 4-byte option word (NOP NOP NOP EOL).
        let mut h = [0u8; 24];
        h[0] = 0x46;
        h[2..4].copy_from_slice(&28u16.to_be_bytes());
        h[8] = 64;
        h[9] = protocol::UDP;
        h[12..16].copy_from_slice(&A.octets());
        h[16..20].copy_from_slice(&B.octets());
        h[20..24].copy_from_slice(&[1, 1, 1, 0]);
        let c = checksum::compute(&[&h]);
        h[10..12].copy_from_slice(&c);
        let mut frame = h.to_vec();
        frame.extend_from_slice(b"DATA");
        frame.extend_from_slice(&[0; 18]); // Ethernet padding
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut m = pool.alloc_copy(&frame).unwrap();
        let (repr, hl) = receive(&mut m).unwrap();
        assert_eq!(hl, 24);
        assert_eq!(repr.payload_len, 4);
        assert_eq!(m.len(), 28);
        m.pop(hl).unwrap();
        assert_eq!(m.as_slice(), b"DATA");
        assert_eq!(
            Ipv4Packet::new_checked(&frame).unwrap().options(),
            &[1, 1, 1, 0]
        );
    }

    #[test]
    fn typed_drop_reasons() {
        let good = datagram(&Ipv4Repr::new(A, B, protocol::UDP, 1, 0), b"abcd");
        let check = |f: &dyn Fn(&mut Vec<u8>), want| {
            let mut d = good.clone();
            f(&mut d);
            assert_eq!(Ipv4Packet::new_checked(&d), Err(want));
        };
        let fix = |d: &mut Vec<u8>| {
            d[10] = 0;
            d[11] = 0;
            let c = checksum::compute(&[&d[..20]]);
            d[10..12].copy_from_slice(&c);
        };
        check(&|d| d.truncate(19), Ipv4DropReason::Truncated);
        check(&|d| d[0] = 0x65, Ipv4DropReason::BadVersion);
        check(&|d| d[0] = 0x44, Ipv4DropReason::BadHeaderLength);
        check(&|d| d[0] = 0x4f, Ipv4DropReason::Truncated); // IHL 15 > 24 bytes
        check(
            &|d| {
                d[2..4].copy_from_slice(&19u16.to_be_bytes());
                fix(d)
            },
            Ipv4DropReason::TotalLengthTooSmall,
        );
        check(
            &|d| {
                d[2..4].copy_from_slice(&25u16.to_be_bytes());
                fix(d)
            },
            Ipv4DropReason::TotalLengthTooLarge,
        );
        check(&|d| d[8] ^= 1, Ipv4DropReason::BadChecksum);
        check(
            &|d| {
                d[12..16].copy_from_slice(&[224, 0, 0, 1]);
                fix(d)
            },
            Ipv4DropReason::BadSource,
        );
        // TTL 0 is accepted on receipt (RFC 1122 §3.2.1.7).
        let mut d = good.clone();
        d[8] = 0;
        fix(&mut d);
        assert!(Ipv4Packet::new_checked(&d).is_ok());
    }

    #[test]
    fn ttl_decrement_keeps_checksum_valid() {
        let mut d = datagram(&Ipv4Repr::new(A, B, protocol::ICMP, 9, 0), &[]);
        decrement_ttl_in_place(&mut d).unwrap();
        assert_eq!(d[8], DEFAULT_TTL - 1);
        assert!(Ipv4Packet::new_checked(&d).is_ok());
        d[8] = 1;
        assert_eq!(
            decrement_ttl_in_place(&mut d),
            Err(Ipv4DropReason::TtlExpired)
        );
    }

    #[test]
    fn push_onto_sets_length_and_rejects_oversize() {
        let pool = MsgPool::new(PoolConfig::default());
        let mut m = pool.alloc_copy(b"xyz").unwrap();
        let mut r = Ipv4Repr::new(A, B, protocol::UDP, 3, 0);
        r.push_onto(&mut m).unwrap();
        assert_eq!(r.payload_len, 3);
        let p = Ipv4Packet::new_checked(m.as_slice()).unwrap();
        assert_eq!(p.payload(), b"xyz");
        let mut big = pool.alloc(MAX_DATAGRAM_LEN - 19).unwrap();
        assert!(matches!(
            r.push_onto(&mut big),
            Err(Ipv4EmitError::PayloadTooLong(_))
        ));
    }

    #[test]
    fn packet_key_matches_the_path_key() {
        let bytes = datagram(&Ipv4Repr::new(B, A, protocol::UDP, 5, 8), &[0; 8]);
        for mode in [KeyMode::Active, KeyMode::Passive] {
            // Received by A from B: local A, remote B.
            let (k, used) = packet_demux_key(&bytes, mode).unwrap();
            assert_eq!(k, path_demux_key(mode, protocol::UDP, A, Some(B)));
            assert_eq!(used, MIN_HEADER_LEN);
        }
        // A listening path has no remote: its active key is the passive one.
        assert_eq!(
            path_demux_key(KeyMode::Active, protocol::UDP, A, None),
            path_demux_key(KeyMode::Passive, protocol::UDP, A, Some(B))
        );
        let mut frag = Ipv4Repr::new(B, A, protocol::UDP, 5, 8);
        frag.more_frags = true;
        let bytes = datagram(&frag, &[0; 8]);
        let (_, used) = packet_demux_key(&bytes, KeyMode::Active).unwrap();
        assert_eq!(used, bytes.len(), "a fragment ends the walk at IP");
        assert!(packet_demux_key(&bytes[..19], KeyMode::Active).is_none());
    }

    proptest! {
        /// The template writes the bytes the generic emit writes.
        #[test]
        fn template_matches_emit(src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), proto in any::<u8>(),
                                 ident in any::<u16>(), ttl in any::<u8>(), len in 0usize..1480) {
            let pool = MsgPool::new(PoolConfig::small(4));
            let payload = vec![0xa5; len];
            let (src, dst) = (Ipv4Addr::from(src), Ipv4Addr::from(dst));
            let mut by_repr = pool.alloc_copy(&payload).unwrap();
            let mut repr = Ipv4Repr::new(src, dst, proto, ident, 0);
            repr.ttl = ttl;
            repr.push_onto(&mut by_repr).unwrap();
            let mut by_template = pool.alloc_copy(&payload).unwrap();
            Ipv4Template::new(src, dst, proto).push_onto(&mut by_template, ident, ttl).unwrap();
            prop_assert_eq!(by_template.as_slice(), by_repr.as_slice());
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            if let Ok(p) = Ipv4Packet::new_checked(&bytes) {
                prop_assert!(p.header_len() >= MIN_HEADER_LEN && p.header_len() <= p.total_len());
                prop_assert!(p.total_len() <= bytes.len());
                let _ = (p.repr(), p.options(), p.payload());
            }
        }

        /// Mostly-valid headers with random fields: parse never panics, and a
        /// datagram we emit always parses back to the same fields.
        #[test]
        fn emit_parse_round_trip(src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(), proto in any::<u8>(),
                                 ttl in any::<u8>(), tos in any::<u8>(), ident in any::<u16>(),
                                 df in any::<bool>(), mf in any::<bool>(), off in 0u16..8191,
                                 payload in proptest::collection::vec(any::<u8>(), 0..64)) {
            let r = Ipv4Repr { src: src.into(), dst: dst.into(), protocol: proto, ttl, tos, ident,
                               dont_frag: df, more_frags: mf, frag_offset: off * 8, payload_len: payload.len() as u16 };
            let bytes = datagram(&r, &payload);
            match Ipv4Packet::new_checked(&bytes) {
                Ok(p) => { prop_assert_eq!(p.repr(), r); prop_assert_eq!(p.payload(), &payload[..]); }
                Err(e) => { prop_assert_eq!(e, Ipv4DropReason::BadSource); prop_assert!(!is_valid_source(r.src)); }
            }
        }
    }
}
