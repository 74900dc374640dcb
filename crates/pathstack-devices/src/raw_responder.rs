//! A raw minimal responder, the fastest a user-space host on a TAP can
//! possibly answer: the *floor* the benchmarks measure pathstack against
//! (`examples/floor.rs` serves it on a TAP).
//!
//! [`RawResponder`] answers ARP requests, ICMP echo requests and UDP
//! datagrams (echo) for one IPv4/MAC address by rewriting the received frame
//! in place and sending the same buffer back: no parsing beyond the fields it
//! needs, no copy, no allocation. It is the stand-in for a minimal
//! hand-written C responder, the floor a user-space stack can reach; the benchmarks
//! put pathstack's paths next to it to show what the path machinery costs.
//!
//! It is hand-written rather than built on etherparse on purpose: the point
//! is the least work per frame, and swapping fields in place needs no header
//! structs. The checksum fix-ups use the incremental update of RFC 1624
//! (eqn. 3), which also keeps a corrupted checksum corrupted, so damage on
//! the way in is still detected by the peer:
//! - swapping source and destination addresses and ports changes neither the
//!   IPv4 header checksum nor the UDP checksum (a one's-complement sum does
//!   not depend on order, and the UDP pseudo-header holds both addresses);
//! - ICMP echo request → reply changes the type word (RFC 792), so the ICMP
//!   checksum is updated;
//! - the reply's TTL is reset to 64, so the IPv4 header checksum is updated.
//!
//! Everything else is dropped and counted with a reason ([`Ignored`]);
//! nothing from the wire can make it panic.

use pathstack_core::device::{Device, DeviceError};
use pathstack_core::{Instant, MsgPool};
use std::net::Ipv4Addr;
use thiserror::Error;

const ETH_LEN: usize = 14;
const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_ARP: u16 = 0x0806;
const ARP_LEN: usize = 28;
const IPPROTO_ICMP: u8 = 1;
const IPPROTO_UDP: u8 = 17;
const ICMP_ECHO_REQUEST: u8 = 8;
const ICMP_ECHO_REPLY: u8 = 0;
/// TTL of replies (the Linux default, net.ipv4.ip_default_ttl).
const REPLY_TTL: u8 = 64;

/// What the responder sent back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// An ARP reply (RFC 826) to a request for our address.
    ArpReply,
    /// An ICMP echo reply (RFC 792).
    IcmpEchoReply,
    /// The UDP datagram, returned to its sender (RFC 862 style echo).
    UdpEcho,
}

/// Why a frame got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum Ignored {
    /// Shorter than the headers it claims to carry.
    #[error("frame too short")]
    TooShort,
    /// Neither ARP nor IPv4.
    #[error("ether type is neither ARP nor IPv4")]
    UnknownEtherType,
    /// Not for our MAC or IPv4 address.
    #[error("not addressed to us")]
    NotForUs,
    /// Sent from a multicast/broadcast MAC: never answered (RFC 1122 3.2.2).
    #[error("sender MAC is multicast")]
    MulticastSource,
    /// ARP, but not an Ethernet/IPv4 request.
    #[error("ARP packet is not an Ethernet/IPv4 request")]
    NotArpRequest,
    /// The IPv4 header is malformed (version, header length, total length).
    #[error("malformed IPv4 header")]
    BadIpv4Header,
    /// The IPv4 header checksum is wrong.
    #[error("bad IPv4 header checksum")]
    BadIpv4Checksum,
    /// An IPv4 fragment: the floor does not reassemble.
    #[error("IPv4 fragment")]
    Fragment,
    /// An IPv4 protocol other than ICMP and UDP.
    #[error("IPv4 protocol is neither ICMP nor UDP")]
    UnknownProtocol,
    /// ICMP, but not an echo request.
    #[error("ICMP message is not an echo request")]
    NotEchoRequest,
    /// The UDP length field does not fit the datagram.
    #[error("bad UDP length")]
    BadUdpLength,
    /// UDP to a port we do not echo on.
    #[error("UDP port not echoed")]
    PortClosed,
}

impl Ignored {
    /// Every reason, in counter order.
    pub const ALL: [Ignored; 12] = [
        Ignored::TooShort,
        Ignored::UnknownEtherType,
        Ignored::NotForUs,
        Ignored::MulticastSource,
        Ignored::NotArpRequest,
        Ignored::BadIpv4Header,
        Ignored::BadIpv4Checksum,
        Ignored::Fragment,
        Ignored::UnknownProtocol,
        Ignored::NotEchoRequest,
        Ignored::BadUdpLength,
        Ignored::PortClosed,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// Counters of a responder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResponderStats {
    /// ARP replies sent.
    pub arp_replies: u64,
    /// ICMP echo replies sent.
    pub icmp_replies: u64,
    /// UDP datagrams echoed.
    pub udp_echoes: u64,
    /// Frames not answered, by reason (index: position in [`Ignored::ALL`]).
    pub ignored: [u64; Ignored::ALL.len()],
}

impl ResponderStats {
    /// Frames not answered for `reason`.
    pub fn ignored(&self, reason: Ignored) -> u64 {
        self.ignored[reason.index()]
    }
}

/// What one [`RawResponder::serve`] call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// No frame was waiting.
    Idle,
    /// A frame was answered.
    Answered(Answer),
    /// A frame was received and not answered.
    Ignored(Ignored),
}

/// Answers ARP, ICMP echo and UDP echo for one address, in place (see the
/// [module docs](self)).
#[derive(Clone, Debug)]
pub struct RawResponder {
    mac: [u8; 6],
    ip: [u8; 4],
    udp_port: Option<u16>,
    stats: ResponderStats,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

/// One's-complement sum of 16-bit words, folded (RFC 1071).
fn ones_sum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut words = bytes.chunks_exact(2);
    for w in &mut words {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The checksum after one 16-bit word changes from `old` to `new`
/// (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')).
fn checksum_update(check: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!check) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn swap_ranges(b: &mut [u8], a: usize, c: usize, len: usize) {
    for i in 0..len {
        b.swap(a + i, c + i);
    }
}

impl RawResponder {
    /// A responder for `ip` at `mac`, echoing UDP on every port.
    pub fn new(mac: [u8; 6], ip: Ipv4Addr) -> Self {
        RawResponder {
            mac,
            ip: ip.octets(),
            udp_port: None,
            stats: ResponderStats::default(),
        }
    }

    /// Echoes UDP only on `port` (`None`: every port).
    pub fn udp_port(mut self, port: Option<u16>) -> Self {
        self.udp_port = port;
        self
    }

    /// The counters.
    pub fn stats(&self) -> &ResponderStats {
        &self.stats
    }

    /// Rewrites `frame` into its answer, in place (same length), or says
    /// why there is none (the frame may then be partly rewritten). Counts
    /// either outcome.
    pub fn answer_in_place(&mut self, frame: &mut [u8]) -> Result<Answer, Ignored> {
        let outcome = self.answer(frame);
        match outcome {
            Ok(Answer::ArpReply) => self.stats.arp_replies += 1,
            Ok(Answer::IcmpEchoReply) => self.stats.icmp_replies += 1,
            Ok(Answer::UdpEcho) => self.stats.udp_echoes += 1,
            Err(why) => self.stats.ignored[why.index()] += 1,
        }
        outcome
    }

    /// Receives at most one frame from `dev` and, if it deserves an answer,
    /// sends the rewritten buffer back through `dev`.
    pub fn serve<D: Device + ?Sized>(
        &mut self,
        dev: &mut D,
        pool: &MsgPool,
        now: Instant,
    ) -> Result<Served, DeviceError> {
        let Some(mut frame) = dev.receive(pool, now)? else {
            return Ok(Served::Idle);
        };
        match self.answer_in_place(frame.as_mut_slice()) {
            Ok(answer) => {
                dev.transmit(frame, now)?;
                Ok(Served::Answered(answer))
            }
            Err(why) => Ok(Served::Ignored(why)),
        }
    }

    fn answer(&self, f: &mut [u8]) -> Result<Answer, Ignored> {
        if f.len() < ETH_LEN {
            return Err(Ignored::TooShort);
        }
        if f[6] & 0x01 != 0 {
            return Err(Ignored::MulticastSource);
        }
        let answer = match be16(f, 12) {
            ETHERTYPE_ARP => self.arp(f)?,
            ETHERTYPE_IPV4 => self.ipv4(f)?,
            _ => return Err(Ignored::UnknownEtherType),
        };
        // Ethernet: back to the sender, from us.
        f.copy_within(6..12, 0);
        f[6..12].copy_from_slice(&self.mac);
        Ok(answer)
    }

    /// RFC 826: a request for our protocol address becomes a reply.
    fn arp(&self, f: &mut [u8]) -> Result<Answer, Ignored> {
        if f.len() < ETH_LEN + ARP_LEN {
            return Err(Ignored::TooShort);
        }
        let a = ETH_LEN;
        let dst_ok = f[0..6] == [0xff; 6] || f[0..6] == self.mac;
        // hardware type Ethernet (1), protocol IPv4, lengths 6 and 4, op request (1)
        if be16(f, a) != 1
            || be16(f, a + 2) != ETHERTYPE_IPV4
            || f[a + 4] != 6
            || f[a + 5] != 4
            || be16(f, a + 6) != 1
        {
            return Err(Ignored::NotArpRequest);
        }
        if !dst_ok || f[a + 24..a + 28] != self.ip {
            return Err(Ignored::NotForUs);
        }
        put16(f, a + 6, 2);
        // target <- sender; sender <- us
        f.copy_within(a + 8..a + 18, a + 18);
        f[a + 8..a + 14].copy_from_slice(&self.mac);
        f[a + 14..a + 18].copy_from_slice(&self.ip);
        Ok(Answer::ArpReply)
    }

    fn ipv4(&self, f: &mut [u8]) -> Result<Answer, Ignored> {
        let ip = ETH_LEN;
        if f.len() < ip + 20 {
            return Err(Ignored::TooShort);
        }
        let ihl = usize::from(f[ip] & 0x0f) * 4;
        let total = usize::from(be16(f, ip + 2));
        if f[ip] >> 4 != 4 || ihl < 20 || total < ihl || ip + total > f.len() {
            return Err(Ignored::BadIpv4Header);
        }
        if f[0..6] != self.mac || f[ip + 16..ip + 20] != self.ip {
            return Err(Ignored::NotForUs);
        }
        if ones_sum(&f[ip..ip + ihl]) != 0xffff {
            return Err(Ignored::BadIpv4Checksum);
        }
        // More-fragments flag or a fragment offset: part of a larger datagram.
        if be16(f, ip + 6) & 0x3fff != 0 {
            return Err(Ignored::Fragment);
        }
        let l4 = ip + ihl;
        let l4_len = total - ihl;
        let answer = match f[ip + 9] {
            IPPROTO_ICMP => {
                if l4_len < 8 {
                    return Err(Ignored::TooShort);
                }
                if f[l4] != ICMP_ECHO_REQUEST || f[l4 + 1] != 0 {
                    return Err(Ignored::NotEchoRequest);
                }
                let old = be16(f, l4);
                f[l4] = ICMP_ECHO_REPLY;
                let check = checksum_update(be16(f, l4 + 2), old, be16(f, l4));
                put16(f, l4 + 2, check);
                Answer::IcmpEchoReply
            }
            IPPROTO_UDP => {
                if l4_len < 8 {
                    return Err(Ignored::TooShort);
                }
                let udp_len = usize::from(be16(f, l4 + 4));
                if udp_len < 8 || udp_len > l4_len {
                    return Err(Ignored::BadUdpLength);
                }
                if self.udp_port.is_some_and(|p| p != be16(f, l4 + 2)) {
                    return Err(Ignored::PortClosed);
                }
                swap_ranges(f, l4, l4 + 2, 2);
                Answer::UdpEcho
            }
            _ => return Err(Ignored::UnknownProtocol),
        };
        swap_ranges(f, ip + 12, ip + 16, 4);
        let old = be16(f, ip + 8);
        f[ip + 8] = REPLY_TTL;
        let check = checksum_update(be16(f, ip + 10), old, be16(f, ip + 8));
        put16(f, ip + 10, check);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::{PacketBuilder, SlicedPacket};
    use proptest::prelude::*;

    const US_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
    const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
    const US: [u8; 4] = [10, 77, 1, 1];
    const PEER: [u8; 4] = [10, 77, 1, 2];

    fn responder() -> RawResponder {
        RawResponder::new(US_MAC, Ipv4Addr::from(US))
    }

    fn arp_request(dst_mac: [u8; 6], target: [u8; 4]) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&dst_mac);
        f.extend_from_slice(&PEER_MAC);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 1]);
        f.extend_from_slice(&PEER_MAC);
        f.extend_from_slice(&PEER);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target);
        f.resize(60, 0); // minimum Ethernet frame, as Linux pads it
        f
    }

    fn icmp_echo(
        reply: bool,
        from: ([u8; 6], [u8; 4]),
        to: ([u8; 6], [u8; 4]),
        ttl: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let b = PacketBuilder::ethernet2(from.0, to.0).ipv4(from.1, to.1, ttl);
        let b = if reply {
            b.icmpv4_echo_reply(0x1234, 7)
        } else {
            b.icmpv4_echo_request(0x1234, 7)
        };
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    fn udp(
        from: ([u8; 6], [u8; 4], u16),
        to: ([u8; 6], [u8; 4], u16),
        ttl: u8,
        payload: &[u8],
    ) -> Vec<u8> {
        let b = PacketBuilder::ethernet2(from.0, to.0)
            .ipv4(from.1, to.1, ttl)
            .udp(from.2, to.2);
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    #[test]
    fn arp_request_for_us_becomes_reply() {
        let mut r = responder();
        let mut f = arp_request([0xff; 6], US);
        assert_eq!(r.answer_in_place(&mut f), Ok(Answer::ArpReply));
        assert_eq!(&f[0..6], &PEER_MAC);
        assert_eq!(&f[6..12], &US_MAC);
        assert_eq!(&f[12..14], &[0x08, 0x06]);
        assert_eq!(&f[20..22], &[0, 2], "op reply");
        assert_eq!(&f[22..28], &US_MAC, "sender hw");
        assert_eq!(&f[28..32], &US, "sender ip");
        assert_eq!(&f[32..38], &PEER_MAC, "target hw");
        assert_eq!(&f[38..42], &PEER, "target ip");
        assert_eq!(f.len(), 60);
        assert_eq!(r.stats().arp_replies, 1);
    }

    #[test]
    fn arp_for_someone_else_is_ignored_and_counted() {
        let mut r = responder();
        let mut f = arp_request([0xff; 6], [10, 77, 1, 9]);
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::NotForUs));
        let mut f = arp_request([0xff; 6], US);
        f[21] = 2; // already a reply
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::NotArpRequest));
        let mut f = arp_request([0xff; 6], US);
        f.truncate(40);
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::TooShort));
        assert_eq!(r.stats().ignored(Ignored::NotForUs), 1);
        assert_eq!(r.stats().ignored(Ignored::NotArpRequest), 1);
        assert_eq!(r.stats().ignored(Ignored::TooShort), 1);
        assert_eq!(r.stats().arp_replies, 0);
    }

    #[test]
    fn icmp_echo_reply_matches_etherparse() {
        let mut r = responder();
        let payload: Vec<u8> = (0..56u8).collect();
        let mut f = icmp_echo(false, (PEER_MAC, PEER), (US_MAC, US), 61, &payload);
        assert_eq!(r.answer_in_place(&mut f), Ok(Answer::IcmpEchoReply));
        let want = icmp_echo(true, (US_MAC, US), (PEER_MAC, PEER), REPLY_TTL, &payload);
        assert_eq!(f, want);
    }

    #[test]
    fn udp_echo_matches_etherparse() {
        let mut r = responder();
        let mut f = udp((PEER_MAC, PEER, 40000), (US_MAC, US, 7), 64, b"hello");
        assert_eq!(r.answer_in_place(&mut f), Ok(Answer::UdpEcho));
        let want = udp(
            (US_MAC, US, 7),
            (PEER_MAC, PEER, 40000),
            REPLY_TTL,
            b"hello",
        );
        assert_eq!(f, want);
        // checksums verified independently by etherparse
        let p = SlicedPacket::from_ethernet(&f).unwrap();
        assert!(p.net.is_some());
    }

    #[test]
    fn udp_port_filter() {
        let mut r = responder().udp_port(Some(7));
        let mut f = udp((PEER_MAC, PEER, 40000), (US_MAC, US, 9), 64, b"x");
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::PortClosed));
        let mut f = udp((PEER_MAC, PEER, 40000), (US_MAC, US, 7), 64, b"x");
        assert_eq!(r.answer_in_place(&mut f), Ok(Answer::UdpEcho));
    }

    #[test]
    fn bad_ipv4_is_ignored_with_reason() {
        let mut r = responder();
        let good = icmp_echo(false, (PEER_MAC, PEER), (US_MAC, US), 64, b"abcd");
        let mut f = good.clone();
        f[24] ^= 0xff; // header checksum
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::BadIpv4Checksum));
        let mut f = good.clone();
        f[14] = 0x46; // IHL 6 without fixing anything else
        f.truncate(14 + 20);
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::BadIpv4Header));
        let mut f = good.clone();
        f[0] = 0x02; // different destination MAC
        f[5] = 0x99;
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::NotForUs));
        let mut f = good.clone();
        f[6] = 0x01; // multicast source
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::MulticastSource));
        let mut f = good.clone();
        f[12] = 0x86; // IPv6 ether type
        f[13] = 0xdd;
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::UnknownEtherType));
        let mut f = good;
        f[20] = 0x20; // more fragments; recompute the header checksum
        let sum_fix = {
            let mut g = f.clone();
            put16(&mut g, 24, 0);
            !ones_sum(&g[14..34])
        };
        put16(&mut f, 24, sum_fix);
        assert_eq!(r.answer_in_place(&mut f), Err(Ignored::Fragment));
        let s = r.stats();
        assert_eq!(s.icmp_replies, 0);
        assert_eq!(s.ignored.iter().sum::<u64>(), 6);
    }

    #[test]
    fn checksum_update_agrees_with_full_recompute() {
        let mut data = [
            0x45u8, 0, 0, 84, 0x12, 0x34, 0x40, 0, 61, 1, 0, 0, 10, 77, 1, 2, 10, 77, 1, 1,
        ];
        let full = |d: &[u8; 20]| {
            let mut g = *d;
            g[10] = 0;
            g[11] = 0;
            !ones_sum(&g)
        };
        let c0 = full(&data);
        put16(&mut data, 10, c0);
        let old = be16(&data, 8);
        data[8] = 64;
        let inc = checksum_update(c0, old, be16(&data, 8));
        assert_eq!(inc, full(&data));
    }

    proptest! {
        /// Arbitrary bytes never panic and an answer never changes the length.
        #[test]
        fn arbitrary_frames_never_panic(mut bytes in proptest::collection::vec(any::<u8>(), 0..200), kind in 0u8..3) {
            // Steer some inputs past the first checks.
            if bytes.len() >= 14 {
                bytes[0..6].copy_from_slice(&US_MAC);
                bytes[6] &= 0xfe;
                match kind {
                    0 => { bytes[12] = 0x08; bytes[13] = 0x06; }
                    1 => { bytes[12] = 0x08; bytes[13] = 0x00; }
                    _ => {}
                }
            }
            let len = bytes.len();
            let mut r = responder();
            let _ = r.answer_in_place(&mut bytes);
            prop_assert_eq!(bytes.len(), len);
        }

        /// For any payload, ID/sequence and incoming TTL, the in-place echo
        /// reply equals the one etherparse builds from scratch.
        #[test]
        fn echo_replies_match_builder(payload in proptest::collection::vec(any::<u8>(), 0..1400), ttl in 1u8..=255, sport in 1u16.., dport in 1u16..) {
            let mut r = responder();
            let mut f = icmp_echo(false, (PEER_MAC, PEER), (US_MAC, US), ttl, &payload);
            prop_assert_eq!(r.answer_in_place(&mut f), Ok(Answer::IcmpEchoReply));
            prop_assert_eq!(&f, &icmp_echo(true, (US_MAC, US), (PEER_MAC, PEER), REPLY_TTL, &payload));
            let mut f = udp((PEER_MAC, PEER, sport), (US_MAC, US, dport), ttl, &payload);
            prop_assert_eq!(r.answer_in_place(&mut f), Ok(Answer::UdpEcho));
            prop_assert_eq!(&f, &udp((US_MAC, US, dport), (PEER_MAC, PEER, sport), REPLY_TTL, &payload));
        }
    }
}
