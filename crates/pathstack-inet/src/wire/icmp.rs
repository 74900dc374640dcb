//! ICMP messages for IPv4 (RFC 792): the header, echo replies built in
//! place, and destination-unreachable and time-exceeded builders that
//! quote the offending datagram. Which datagrams a host must never send an
//! error about (RFC 1122 §3.2.2) is [`crate::ip::icmp_suppression`]'s.
//!
//! Length checks are etherparse's (`Icmpv4Slice`); fields are read and
//! written through [`field`]. The in-place echo turnaround and the quoting
//! builders are written here because etherparse only serialises into owned
//! headers, and we want the reply in the request's own buffer (Scout's
//! `back` arrow) and errors in a pool buffer.

use crate::wire::checksum;
use crate::wire::ipv4::{Ipv4Packet, MAX_HEADER_LEN, MIN_HEADER_LEN};
use etherparse::Icmpv4Slice;
use pathstack_core::{Msg, MsgError, MsgPool};
use std::fmt;
use std::net::Ipv4Addr;

/// Where each header field lies (RFC 792: every message starts with type,
/// code and checksum; the next word depends on the type).
pub mod field {
    use std::ops::Range;

    /// Type.
    pub const TYPE: usize = 0;
    /// Code.
    pub const CODE: usize = 1;
    /// Checksum over the whole message.
    pub const CHECKSUM: Range<usize> = 2..4;
    /// The type-dependent second word.
    pub const REST_OF_HEADER: Range<usize> = 4..8;
    /// Identifier of an echo request or reply.
    pub const ECHO_IDENT: Range<usize> = 4..6;
    /// Sequence number of an echo request or reply.
    pub const ECHO_SEQ: Range<usize> = 6..8;
    /// Next-hop MTU of a fragmentation-needed unreachable (RFC 1191 §4).
    pub const NEXT_HOP_MTU: Range<usize> = 6..8;
    /// First byte after the header: echo data, or an error's quote.
    pub const PAYLOAD: usize = 8;
}

/// Length of the ICMP header (type, code, checksum, rest-of-header word).
pub const HEADER_LEN: usize = field::PAYLOAD;

/// ICMP message types used here (RFC 792).
pub mod types {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 3;
    /// Source quench (deprecated by RFC 6633, still an error message).
    pub const SOURCE_QUENCH: u8 = 4;
    /// Redirect.
    pub const REDIRECT: u8 = 5;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 12;
}

/// Whether `icmp_type` is an ICMP error message (RFC 1122 §3.2.2 lists
/// destination unreachable, source quench, redirect, time exceeded and
/// parameter problem).
pub fn is_error_type(icmp_type: u8) -> bool {
    matches!(
        icmp_type,
        types::DEST_UNREACHABLE
            | types::SOURCE_QUENCH
            | types::REDIRECT
            | types::TIME_EXCEEDED
            | types::PARAMETER_PROBLEM
    )
}

pathstack_core::drop_reasons! {
    /// Why an incoming ICMP message was dropped.
    #[derive(thiserror::Error)]
    pub enum IcmpDropReason in "icmp" {
        /// Shorter than the 8-byte header (or a timestamp of the wrong length).
        #[error("ICMP message truncated")]
        Truncated => "truncated",
        /// Checksum does not verify.
        #[error("bad ICMP checksum")]
        BadChecksum => "bad_checksum",
        /// A type this host does not handle (RFC 1122 §3.2.2: MUST be silently discarded).
        #[error("unhandled ICMP type")]
        UnknownType => "unknown_type",
        /// Echo request to a broadcast or multicast address (RFC 1122 §3.2.2.6 MAY discard).
        #[error("echo request to a broadcast address")]
        BroadcastEcho => "broadcast_echo",
    }
}

pathstack_core::drop_reasons! {
    /// Why a peer (or a router) said it dropped one of our datagrams: the
    /// destination unreachable codes a host passes up to its transport
    /// layer (RFC 1122 §3.2.2.1, §4.1.3.3). The reason of the
    /// [`PathFault`](pathstack_core::PathFault) a socket then reports.
    #[derive(thiserror::Error)]
    pub enum UnreachableReason in "icmp" {
        /// The destination's network is unreachable (codes 0, 6, 9, 11).
        #[error("ICMP network unreachable")]
        Net => "net_unreachable",
        /// The destination host is unreachable (codes 1, 7, 10, 12, 13 …).
        #[error("ICMP host unreachable")]
        Host => "host_unreachable",
        /// The destination protocol is unreachable (code 2).
        #[error("ICMP protocol unreachable")]
        Protocol => "protocol_unreachable",
        /// No socket listens on the destination port (code 3).
        #[error("ICMP port unreachable")]
        Port => "port_unreachable",
    }
}

impl UnreachableReason {
    /// The reason of a destination unreachable `code`, and the error kind
    /// a connected socket reports for it (Linux's `icmp_err_convert`:
    /// `ENETUNREACH`, `EHOSTUNREACH`, `ENOPROTOOPT`, `ECONNREFUSED`).
    /// `None` for code 4 (fragmentation needed: path MTU discovery's
    /// business, not an error of the socket).
    pub fn of_code(code: u8) -> Option<(UnreachableReason, std::io::ErrorKind)> {
        use std::io::ErrorKind as K;
        match code {
            0 | 6 | 9 | 11 => Some((UnreachableReason::Net, K::NetworkUnreachable)),
            2 => Some((UnreachableReason::Protocol, K::Unsupported)),
            3 => Some((UnreachableReason::Port, K::ConnectionRefused)),
            4 => None,
            _ => Some((UnreachableReason::Host, K::HostUnreachable)),
        }
    }
}

/// The datagram an ICMP error quotes (RFC 792: its IP header and at least
/// its first 8 bytes; RFC 1122 §3.2.2 asks for more, we read only these),
/// when it was UDP: its addresses and ports, as we sent them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotedUdp {
    /// The ICMP type.
    pub icmp_type: u8,
    /// The ICMP code.
    pub code: u8,
    /// Its source address (ours).
    pub src: Ipv4Addr,
    /// Its source port (ours).
    pub src_port: u16,
    /// Its destination address (the peer's).
    pub dst: Ipv4Addr,
    /// Its destination port (the peer's).
    pub dst_port: u16,
}

impl QuotedUdp {
    /// Reads the UDP datagram quoted by ICMP error message `icmp` (the IP
    /// payload, checksum verified); `None` for anything else or a quote too
    /// short to hold the IP header and the UDP ports.
    pub fn parse(icmp: &[u8]) -> Option<QuotedUdp> {
        let q = QuotedDatagram::parse(icmp, crate::wire::ipv4::protocol::UDP, 4)?;
        Some(QuotedUdp {
            icmp_type: q.icmp_type,
            code: q.code,
            src: q.src,
            dst: q.dst,
            src_port: q.port(0),
            dst_port: q.port(2),
        })
    }
}

/// Room for [`reply_form`]: the longest IPv4 header and a TCP header
/// without options.
pub const REPLY_FORM_MAX: usize = 60 + 20;

/// The UDP datagram or TCP segment an ICMP error quotes, turned around
/// into the form a reply from its destination would have — addresses and
/// ports swapped — in `buf`: the IP header (its total length that of the
/// form) and the transport header as far as the classifier reads it (UDP's
/// 8 bytes; TCP's 20, of which RFC 792 guarantees the ports and the
/// sequence number, the rest written as a header without options), what
/// the classifier needs to find the path that sent it (RFC 1122
/// §4.1.3.3, §4.2.3.9: the error goes to the transport of the datagram it
/// quotes). `None` for anything else: not an error, a quote of another
/// protocol, or too short for the ports.
pub fn reply_form<'b>(icmp: &[u8], buf: &'b mut [u8; REPLY_FORM_MAX]) -> Option<&'b [u8]> {
    let p = IcmpPacket::new_checked(icmp).ok()?;
    if !p.is_error() {
        return None;
    }
    let q = &icmp[HEADER_LEN..];
    let proto = *q.get(9)?;
    let transport = match proto {
        crate::wire::ipv4::protocol::UDP => 8,
        crate::wire::ipv4::protocol::TCP => 20,
        _ => return None,
    };
    let d = QuotedDatagram::parse(icmp, proto, 4)?;
    let ihl = q.len() - d.transport.len();
    let len = ihl + transport;
    let out = buf.get_mut(..len)?;
    out.fill(0);
    let quoted = d.transport.len().min(transport);
    out[..ihl + quoted].copy_from_slice(&q[..ihl + quoted]);
    out[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    out[12..16].copy_from_slice(&d.dst.octets());
    out[16..20].copy_from_slice(&d.src.octets());
    out[ihl..ihl + 2].copy_from_slice(&q[ihl + 2..ihl + 4]);
    out[ihl + 2..ihl + 4].copy_from_slice(&q[ihl..ihl + 2]);
    if proto == crate::wire::ipv4::protocol::TCP {
        // Data offset 5: a header without options (RFC 9293 §3.1).
        out[ihl + 12] = 5 << 4;
    }
    Some(out)
}

/// The datagram quoted by an ICMP error: its IP header's addresses and
/// the first bytes of its transport header (RFC 792).
struct QuotedDatagram<'a> {
    icmp_type: u8,
    code: u8,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    /// The transport header's first bytes (at least those asked for).
    transport: &'a [u8],
}

impl<'a> QuotedDatagram<'a> {
    /// The quote of ICMP error `icmp` if it holds an IPv4 header of
    /// `protocol` and at least `need` transport bytes.
    fn parse(icmp: &'a [u8], protocol: u8, need: usize) -> Option<QuotedDatagram<'a>> {
        let p = IcmpPacket::new_checked(icmp).ok()?;
        if !p.is_error() {
            return None;
        }
        let q = &icmp[HEADER_LEN..];
        let ihl = usize::from(*q.first()? & 0x0f) * 4;
        if *q.first()? >> 4 != 4 || ihl < 20 || q.len() < ihl + need || q[9] != protocol {
            return None;
        }
        let addr = |i: usize| Ipv4Addr::new(q[i], q[i + 1], q[i + 2], q[i + 3]);
        Some(QuotedDatagram {
            icmp_type: p.msg_type(),
            code: p.code(),
            src: addr(12),
            dst: addr(16),
            transport: &q[ihl..],
        })
    }

    fn port(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.transport[at], self.transport[at + 1]])
    }
}

/// The TCP segment an ICMP error quotes: its addresses, ports and
/// sequence number as we sent them (RFC 792 guarantees the first 8 bytes
/// of the segment: the ports and the sequence number), and for
/// "fragmentation needed" (type 3, code 4) the next-hop MTU (RFC 1191
/// §4; 0 from a router that predates it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotedTcp {
    /// The ICMP type.
    pub icmp_type: u8,
    /// The ICMP code.
    pub code: u8,
    /// Its source address (ours).
    pub src: Ipv4Addr,
    /// Its source port (ours).
    pub src_port: u16,
    /// Its destination address (the peer's).
    pub dst: Ipv4Addr,
    /// Its destination port (the peer's).
    pub dst_port: u16,
    /// Its sequence number.
    pub seq: u32,
    /// The next-hop MTU of a "fragmentation needed" message.
    pub mtu: u16,
}

impl QuotedTcp {
    /// Reads the TCP segment quoted by ICMP error message `icmp` (the IP
    /// payload, checksum verified); `None` for anything else or a quote
    /// too short for the ports and the sequence number.
    pub fn parse(icmp: &[u8]) -> Option<QuotedTcp> {
        let q = QuotedDatagram::parse(icmp, crate::wire::ipv4::protocol::TCP, 8)?;
        let t = q.transport;
        Some(QuotedTcp {
            icmp_type: q.icmp_type,
            code: q.code,
            src: q.src,
            dst: q.dst,
            src_port: q.port(0),
            dst_port: q.port(2),
            seq: u32::from_be_bytes([t[4], t[5], t[6], t[7]]),
            mtu: u16::from_be_bytes([icmp[6], icmp[7]]),
        })
    }
}

/// A view of an ICMP message in a byte buffer (the IP payload): the fields
/// read and written through [`field`]. Made by [`IcmpPacket::new_checked`]
/// for received bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// A view of `buffer` without any check; it must hold at least
    /// [`HEADER_LEN`] bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        IcmpPacket { buffer }
    }

    /// Validates `buffer` (the IP payload) and verifies the checksum
    /// (RFC 792: computed over the whole ICMP message).
    pub fn new_checked(buffer: T) -> Result<Self, IcmpDropReason> {
        let s = Icmpv4Slice::from_slice(buffer.as_ref()).map_err(|_| IcmpDropReason::Truncated)?;
        if !checksum::verify(&[s.slice()]) {
            return Err(IcmpDropReason::BadChecksum);
        }
        Ok(IcmpPacket { buffer })
    }

    /// The buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    /// Code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Bytes 4..8 (identifier and sequence number of an echo; unused / next-hop MTU of an unreachable).
    pub fn rest_of_header(&self) -> [u8; 4] {
        let b = &self.buffer.as_ref()[field::REST_OF_HEADER];
        [b[0], b[1], b[2], b[3]]
    }
    /// Whether this is an error message.
    pub fn is_error(&self) -> bool {
        is_error_type(self.msg_type())
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> IcmpPacket<&'a T> {
    /// Data after the 8-byte header (echo data, or the quoted datagram of an error).
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Sets the type.
    pub fn set_msg_type(&mut self, msg_type: u8) {
        self.buffer.as_mut()[field::TYPE] = msg_type;
    }
    /// Sets the code.
    pub fn set_code(&mut self, code: u8) {
        self.buffer.as_mut()[field::CODE] = code;
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, checksum: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&checksum.to_be_bytes());
    }
    /// Sets the identifier of an echo request or reply.
    pub fn set_echo_ident(&mut self, ident: u16) {
        self.buffer.as_mut()[field::ECHO_IDENT].copy_from_slice(&ident.to_be_bytes());
    }
    /// Sets the sequence number of an echo request or reply.
    pub fn set_echo_seq(&mut self, seq: u16) {
        self.buffer.as_mut()[field::ECHO_SEQ].copy_from_slice(&seq.to_be_bytes());
    }
    /// Sets the next-hop MTU of a fragmentation-needed message (RFC 1191 §4).
    pub fn set_next_hop_mtu(&mut self, mtu: u16) {
        self.buffer.as_mut()[field::NEXT_HOP_MTU].copy_from_slice(&mtu.to_be_bytes());
    }
    /// The data after the header, to fill in.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
    /// Computes the checksum over the whole message and stores it (RFC 792:
    /// summed with the checksum field zero).
    pub fn fill_checksum(&mut self) {
        let b = self.buffer.as_mut();
        b[field::CHECKSUM].fill(0);
        let sum = checksum::compute(&[b]);
        b[field::CHECKSUM].copy_from_slice(&sum);
    }
}

/// Turns the echo request in `icmp` (the ICMP message, IP header popped)
/// into an echo reply in place: type 8 → 0, checksum updated incrementally
/// (RFC 1624; only the type word changes), identifier, sequence and data
/// kept (RFC 792 "Echo or Echo Reply Message"). Works for any size the
/// buffer holds, reassembled datagrams included. The IP layer then sends it
/// back with source = the request's destination (RFC 1122 §3.2.2.6).
pub fn echo_reply_in_place(icmp: &mut [u8]) -> Result<(), IcmpDropReason> {
    let mut p = IcmpPacket::new_checked(icmp)?;
    if p.msg_type() != types::ECHO_REQUEST || p.code() != 0 {
        return Err(IcmpDropReason::UnknownType);
    }
    // Type and code share the first 16-bit word of the checksum sum.
    let old = u16::from_be_bytes([types::ECHO_REQUEST, 0]);
    let new = u16::from_be_bytes([types::ECHO_REPLY, 0]);
    p.set_msg_type(types::ECHO_REPLY);
    let c = checksum::update(p.checksum(), old, new);
    p.set_checksum(c);
    Ok(())
}

/// The part of an offending datagram an ICMP error carries: its IP header
/// (options included) and the first 8 data bytes (RFC 792: "Internet Header
/// + 64 bits of Original Data Datagram"). Fixed size, no allocation.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Quote {
    bytes: [u8; MAX_HEADER_LEN + 8],
    len: u8,
}

impl Quote {
    /// A quote of `header` followed by up to 8 bytes of `data` (both clamped
    /// to what fits: 60 bytes of header, 8 of data).
    pub fn new(header: &[u8], data: &[u8]) -> Quote {
        let mut bytes = [0u8; MAX_HEADER_LEN + 8];
        let h = header.len().min(MAX_HEADER_LEN);
        let d = data.len().min(8);
        bytes[..h].copy_from_slice(&header[..h]);
        bytes[h..h + d].copy_from_slice(&data[..d]);
        Quote {
            bytes,
            len: (h + d) as u8,
        }
    }

    /// The quote of a whole datagram: its header by IHL, then 8 bytes.
    /// Returns `None` if `datagram` does not start with a plausible IPv4
    /// header (version 4, IHL ≥ 5, IHL bytes present).
    pub fn from_datagram(datagram: &[u8]) -> Option<Quote> {
        datagram.first()?;
        // Only the first byte is read before the length check.
        let ip = Ipv4Packet::new_unchecked(datagram);
        let ihl = ip.header_len();
        if ip.version() != 4 || ihl < MIN_HEADER_LEN || datagram.len() < ihl {
            return None;
        }
        Some(Quote::new(&datagram[..ihl], &datagram[ihl..]))
    }

    /// The quoted bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Debug for Quote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quote")
            .field("len", &self.len)
            .field("bytes", &self.as_bytes())
            .finish()
    }
}

/// The ICMP errors this host generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IcmpError {
    /// Destination unreachable, code 2: no such transport protocol (RFC 1122 §3.2.2.1 SHOULD).
    ProtocolUnreachable,
    /// Destination unreachable, code 3: no listener on the port (RFC 1122 §4.1.3.1 SHOULD).
    PortUnreachable,
    /// Destination unreachable, code 4: DF set and the datagram exceeds
    /// `next_hop_mtu`, carried in the low 16 bits of the second word (RFC 1191 §4).
    FragmentationNeeded {
        /// MTU of the next hop.
        next_hop_mtu: u16,
    },
    /// Time exceeded, code 0: TTL reached zero in transit.
    TtlExceeded,
    /// Time exceeded, code 1: fragment reassembly time exceeded (RFC 1122 §3.3.2).
    ReassemblyTimeExceeded,
}

impl IcmpError {
    /// `(type, code)` on the wire.
    pub fn type_code(&self) -> (u8, u8) {
        match self {
            IcmpError::ProtocolUnreachable => (types::DEST_UNREACHABLE, 2),
            IcmpError::PortUnreachable => (types::DEST_UNREACHABLE, 3),
            IcmpError::FragmentationNeeded { .. } => (types::DEST_UNREACHABLE, 4),
            IcmpError::TtlExceeded => (types::TIME_EXCEEDED, 0),
            IcmpError::ReassemblyTimeExceeded => (types::TIME_EXCEEDED, 1),
        }
    }

    /// Builds the ICMP error message (no IP header) quoting `quote`, in a
    /// new buffer of `pool` with headroom for the IP and Ethernet headers.
    /// The caller sends it to the source of the quoted datagram from our
    /// address, after
    /// [`may_send_error`](crate::ip::icmp_suppression::may_send_error) and the rate limiter said yes.
    pub fn build(&self, pool: &MsgPool, quote: &Quote) -> Result<Msg, MsgError> {
        let q = quote.as_bytes();
        let mut m = pool.alloc(HEADER_LEN + q.len())?;
        let mut p = IcmpPacket::new_unchecked(m.as_mut_slice());
        let (t, c) = self.type_code();
        p.set_msg_type(t);
        p.set_code(c);
        if let IcmpError::FragmentationNeeded { next_hop_mtu } = self {
            p.set_next_hop_mtu(*next_hop_mtu);
        }
        p.payload_mut().copy_from_slice(q);
        p.fill_checksum();
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4::{protocol, tests::datagram, tests::A, tests::B, Ipv4Repr};
    use pathstack_core::drop_reason::Reason;
    use pathstack_core::PoolConfig;
    use proptest::prelude::*;

    #[test]
    fn quoted_tcp_and_the_mtu_are_read_back_from_a_fragmentation_needed() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let mut tcp = [0u8; 20];
        tcp[..8].copy_from_slice(&[0xc0, 0x00, 0x00, 0x07, 0xde, 0xad, 0xbe, 0xef]);
        let dgram = datagram(&Ipv4Repr::new(A, B, protocol::TCP, 1, 0), &tcp);
        let quote = Quote::from_datagram(&dgram).unwrap();
        let m = IcmpError::FragmentationNeeded { next_hop_mtu: 1280 }
            .build(&pool, &quote)
            .unwrap();
        let q = QuotedTcp::parse(m.as_slice()).unwrap();
        assert_eq!((q.src, q.src_port, q.dst, q.dst_port), (A, 0xc000, B, 7));
        assert_eq!(
            (q.icmp_type, q.code, q.seq, q.mtu),
            (3, 4, 0xdead_beef, 1280)
        );
        // Not TCP: not read as TCP.
        assert_eq!(QuotedUdp::parse(m.as_slice()), None);
    }

    #[test]
    fn quoted_udp_is_read_back_from_a_port_unreachable() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let udp = [0x30, 0x39, 0x00, 0x09, 0, 12, 0, 0, b'h', b'i', 0, 0];
        let dgram = datagram(&Ipv4Repr::new(A, B, protocol::UDP, 1, 0), &udp);
        let quote = Quote::from_datagram(&dgram).unwrap();
        let m = IcmpError::PortUnreachable.build(&pool, &quote).unwrap();
        let q = QuotedUdp::parse(m.as_slice()).unwrap();
        assert_eq!(
            (q.icmp_type, q.code, q.src, q.src_port, q.dst, q.dst_port),
            (types::DEST_UNREACHABLE, 3, A, 12345, B, 9)
        );
        let (reason, kind) = UnreachableReason::of_code(q.code).unwrap();
        assert_eq!(kind, std::io::ErrorKind::ConnectionRefused);
        assert_eq!(reason.qualified_name(), "icmp.port_unreachable");
        // Not a quote of UDP, not an error, or cut short: nothing.
        let tcp = datagram(&Ipv4Repr::new(A, B, protocol::TCP, 1, 0), &udp);
        let m = IcmpError::PortUnreachable
            .build(&pool, &Quote::from_datagram(&tcp).unwrap())
            .unwrap();
        assert_eq!(QuotedUdp::parse(m.as_slice()), None);
        assert_eq!(QuotedUdp::parse(&echo_request(b"hi")), None);
        let short = Quote::new(&dgram[..20], &udp[..2]);
        let m = IcmpError::PortUnreachable.build(&pool, &short).unwrap();
        assert_eq!(QuotedUdp::parse(m.as_slice()), None);
        assert_eq!(UnreachableReason::of_code(4), None, "PMTU, not an error");
    }

    fn echo_request(data: &[u8]) -> Vec<u8> {
        let mut v = vec![types::ECHO_REQUEST, 0, 0, 0, 0x12, 0x34, 0, 1];
        v.extend_from_slice(data);
        let c = checksum::compute(&[&v]);
        v[2..4].copy_from_slice(&c);
        v
    }

    #[test]
    fn echo_reply_in_place_matches_etherparse() {
        let mut m = echo_request(b"ping payload!");
        echo_reply_in_place(&mut m).unwrap();
        let p = IcmpPacket::new_checked(&m).unwrap();
        assert_eq!(p.msg_type(), types::ECHO_REPLY);
        assert_eq!(p.rest_of_header(), [0x12, 0x34, 0, 1]);
        assert_eq!(p.payload(), b"ping payload!");
        // etherparse recomputes the same checksum from scratch.
        let s = Icmpv4Slice::from_slice(&m).unwrap();
        let mut h = s.header();
        h.update_checksum(s.payload());
        assert_eq!(h.checksum, u16::from_be_bytes([m[2], m[3]]));
        // A reply is not answered again.
        assert_eq!(
            echo_reply_in_place(&mut m),
            Err(IcmpDropReason::UnknownType)
        );
    }

    #[test]
    fn large_echo_reply() {
        let data: Vec<u8> = (0..65_000u32).map(|i| (i % 251) as u8).collect();
        let mut m = echo_request(&data);
        echo_reply_in_place(&mut m).unwrap();
        assert!(IcmpPacket::new_checked(&m).is_ok());
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            IcmpPacket::new_checked(&[8, 0, 0]),
            Err(IcmpDropReason::Truncated)
        );
        let mut m = echo_request(b"x");
        m[8] ^= 1;
        assert_eq!(
            IcmpPacket::new_checked(&m),
            Err(IcmpDropReason::BadChecksum)
        );
    }

    #[test]
    fn unreachable_quotes_header_and_8_bytes() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let orig = datagram(
            &Ipv4Repr::new(B, A, protocol::UDP, 77, 0),
            b"0123456789abcdef",
        );
        let q = Quote::from_datagram(&orig).unwrap();
        assert_eq!(q.as_bytes(), &orig[..28]);
        for (err, code) in [
            (IcmpError::ProtocolUnreachable, 2),
            (IcmpError::PortUnreachable, 3),
            (IcmpError::FragmentationNeeded { next_hop_mtu: 1400 }, 4),
        ] {
            let m = err.build(&pool, &q).unwrap();
            let p = IcmpPacket::new_checked(m.as_slice()).unwrap();
            assert_eq!((p.msg_type(), p.code()), (types::DEST_UNREACHABLE, code));
            assert!(p.is_error());
            assert_eq!(p.payload(), &orig[..28]);
            let quoted = Ipv4Packet::new_checked(&p.payload()[..20]);
            assert!(quoted.is_err(), "quote is truncated, as RFC 792 says");
            if code == 4 {
                assert_eq!(p.rest_of_header(), [0, 0, 0x05, 0x78]);
            }
            assert!(m.headroom() >= 34);
        }
        let m = IcmpError::ReassemblyTimeExceeded.build(&pool, &q).unwrap();
        assert_eq!(&m.as_slice()[..2], &[types::TIME_EXCEEDED, 1]);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..100), bcast in any::<bool>()) {
            if let Ok(p) = IcmpPacket::new_checked(&bytes) {
                let _ = (p.msg_type(), p.code(), p.rest_of_header(), p.payload(), p.is_error());
            }
            let _ = crate::ip::icmp_suppression::may_send_error(&bytes, bcast);
            if let Some(q) = Quote::from_datagram(&bytes) {
                prop_assert!(q.as_bytes().len() <= 68);
                prop_assert_eq!(q.as_bytes(), &bytes[..q.as_bytes().len()]);
            }
            let mut copy = bytes.clone();
            if echo_reply_in_place(&mut copy).is_ok() {
                prop_assert!(IcmpPacket::new_checked(&copy).is_ok());
            }
            let mut buf = [0u8; REPLY_FORM_MAX];
            if let Some(r) = reply_form(&bytes, &mut buf) {
                // A whole IP header of UDP or TCP and its transport header.
                let ihl = usize::from(r[0] & 0x0f) * 4;
                let transport = if r[9] == protocol::TCP { 20 } else { 8 };
                prop_assert!(ihl >= 20);
                prop_assert_eq!(r.len(), ihl + transport);
                prop_assert_eq!(usize::from(u16::from_be_bytes([r[2], r[3]])), r.len());
            }
        }
    }

    /// The quote of an error, turned around: what a reply from the
    /// datagram's destination would carry, addresses and ports swapped
    /// (the classifier finds the sending path with it); a TCP quote's
    /// header is completed to one without options.
    #[test]
    fn reply_form_swaps_the_ends_of_the_quoted_datagram() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let udp = [0x30, 0x39, 0x00, 0x09, 0, 10, 0, 0, b'h', b'i'];
        let dgram = datagram(&Ipv4Repr::new(A, B, protocol::UDP, 1, 0), &udp);
        let quote = Quote::from_datagram(&dgram).unwrap();
        let m = IcmpError::PortUnreachable.build(&pool, &quote).unwrap();
        let mut buf = [0u8; REPLY_FORM_MAX];
        let r = reply_form(m.as_slice(), &mut buf).unwrap();
        assert_eq!(r.len(), 28);
        assert_eq!((&r[12..16], &r[16..20]), (&B.octets()[..], &A.octets()[..]));
        assert_eq!(&r[20..24], &[0x00, 0x09, 0x30, 0x39]);
        let tcp = [0xc0, 0x00, 0x00, 0x07, 0xde, 0xad, 0xbe, 0xef];
        let dgram = datagram(&Ipv4Repr::new(A, B, protocol::TCP, 1, 0), &tcp);
        let quote = Quote::from_datagram(&dgram).unwrap();
        let m = IcmpError::TtlExceeded.build(&pool, &quote).unwrap();
        let r = reply_form(m.as_slice(), &mut buf).unwrap();
        assert_eq!(r.len(), 40);
        assert_eq!(
            &r[20..28],
            &[0x00, 0x07, 0xc0, 0x00, 0xde, 0xad, 0xbe, 0xef]
        );
        assert_eq!(r[32], 0x50);
        // An echo reply is no error.
        let reply = [0u8, 0, 0xff, 0xff, 0, 0, 0, 0];
        assert!(reply_form(&reply, &mut buf).is_none());
    }
}
