//! The ARP packet for IPv4 over Ethernet (RFC 826 "Packet format"), the
//! request, reply and announcement (RFC 5227 §2.3) built from it, and the
//! reasons an ARP packet, or a packet waiting for ARP, is dropped.
//!
//! Packet slicing is etherparse's (`ArpPacketSlice`); this file checks that
//! the packet is the Ethernet/IPv4 kind. The resolution cache that learns
//! from these packets is [`crate::arp::cache`].

use crate::wire::eth::{self, EthHeader, EtherType, MacAddr};
use etherparse::{ArpHardwareId, ArpOperation, ArpPacketSlice};
use pathstack_core::{Msg, MsgError, MsgPool};
use std::net::Ipv4Addr;

/// Where each field of an Ethernet/IPv4 ARP packet lies (RFC 826 "Packet
/// format", with 6-byte hardware and 4-byte protocol addresses).
pub mod field {
    use std::ops::Range;

    /// `ar$hrd`: hardware address space (1, Ethernet).
    pub const HTYPE: Range<usize> = 0..2;
    /// `ar$pro`: protocol address space (the EtherType of IPv4).
    pub const PTYPE: Range<usize> = 2..4;
    /// `ar$hln`: hardware address length (6).
    pub const HLEN: usize = 4;
    /// `ar$pln`: protocol address length (4).
    pub const PLEN: usize = 5;
    /// `ar$op`: request or reply.
    pub const OPER: Range<usize> = 6..8;
    /// `ar$sha`: sender hardware address.
    pub const SHA: Range<usize> = 8..14;
    /// `ar$spa`: sender protocol address.
    pub const SPA: Range<usize> = 14..18;
    /// `ar$tha`: target hardware address.
    pub const THA: Range<usize> = 18..24;
    /// `ar$tpa`: target protocol address.
    pub const TPA: Range<usize> = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = field::TPA.end;

pathstack_core::drop_reasons! {
    /// Why an ARP packet was dropped. Packets waiting for ARP have reasons
    /// of their own ([`ResolutionDropReason`](crate::arp::cache::ResolutionDropReason)).
    #[derive(thiserror::Error)]
    pub enum ArpDropReason in "arp" {
        /// Shorter than its address lengths say.
        #[error("ARP packet truncated")]
        Truncated => "truncated",
        /// Hardware type is not Ethernet (1).
        #[error("ARP hardware type is not Ethernet")]
        UnsupportedHardware => "unsupported_hardware",
        /// Protocol type is not IPv4 (0x0800).
        #[error("ARP protocol type is not IPv4")]
        UnsupportedProtocol => "unsupported_protocol",
        /// Address lengths are not 6 and 4.
        #[error("ARP address lengths are not 6 and 4")]
        BadAddressLength => "bad_address_length",
        /// Operation is neither request (1) nor reply (2).
        #[error("unknown ARP operation")]
        UnknownOperation => "unknown_operation",
        /// Sender hardware address is not unicast, or sender IP is broadcast/multicast.
        #[error("invalid ARP sender address")]
        InvalidSender => "invalid_sender",
        /// Another station claims our IP address (RFC 5227 §2.4).
        #[error("another station uses our IP address")]
        AddressConflict => "address_conflict",
        /// The packet was neither for us nor about a host we know.
        #[error("ARP packet not for us")]
        NotForUs => "not_for_us",
        /// An ARP packet going down ARP's own path without a link-layer
        /// destination. The module addresses every packet it sends, so
        /// this guards against a bug (the counter name predates the enum).
        #[error("outgoing ARP packet without a link-layer destination")]
        NoBuffer => "no_buffer",
    }
}

/// ARP operation (RFC 826 `ar$op`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArpOp {
    /// `ares_op$REQUEST` (1).
    Request,
    /// `ares_op$REPLY` (2).
    Reply,
}

/// An Ethernet/IPv4 ARP packet (RFC 826 "Packet format").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArpPacket {
    /// Request or reply.
    pub op: ArpOp,
    /// `ar$sha`.
    pub sender_mac: MacAddr,
    /// `ar$spa`.
    pub sender_ip: Ipv4Addr,
    /// `ar$tha` (zero in a request).
    pub target_mac: MacAddr,
    /// `ar$tpa`.
    pub target_ip: Ipv4Addr,
}

impl ArpPacket {
    /// Parses an ARP packet and checks it is Ethernet (hardware type 1,
    /// length 6) over IPv4 (protocol 0x0800, length 4) with a known
    /// operation. Bytes after the 28-byte packet (Ethernet padding) are ignored.
    pub fn parse(bytes: &[u8]) -> Result<ArpPacket, ArpDropReason> {
        let s = ArpPacketSlice::from_slice(bytes).map_err(|_| ArpDropReason::Truncated)?;
        if s.hw_addr_type() != ArpHardwareId::ETHERNET {
            return Err(ArpDropReason::UnsupportedHardware);
        }
        if s.proto_addr_type() != EtherType::IPV4 {
            return Err(ArpDropReason::UnsupportedProtocol);
        }
        if s.hw_addr_size() != 6 || s.proto_addr_size() != 4 {
            return Err(ArpDropReason::BadAddressLength);
        }
        let op = match s.operation() {
            ArpOperation::REQUEST => ArpOp::Request,
            ArpOperation::REPLY => ArpOp::Reply,
            _ => return Err(ArpDropReason::UnknownOperation),
        };
        let mac = |b: &[u8]| MacAddr([b[0], b[1], b[2], b[3], b[4], b[5]]);
        let ip = |b: &[u8]| Ipv4Addr::new(b[0], b[1], b[2], b[3]);
        Ok(ArpPacket {
            op,
            sender_mac: mac(s.sender_hw_addr()),
            sender_ip: ip(s.sender_protocol_addr()),
            target_mac: mac(s.target_hw_addr()),
            target_ip: ip(s.target_protocol_addr()),
        })
    }

    /// Writes the 28-byte packet into the front of `buf`; `None` if too short.
    pub fn emit(&self, buf: &mut [u8]) -> Option<()> {
        let b = buf.get_mut(..PACKET_LEN)?;
        b[field::HTYPE].copy_from_slice(&ArpHardwareId::ETHERNET.0.to_be_bytes());
        b[field::PTYPE].copy_from_slice(&EtherType::IPV4.0.to_be_bytes());
        b[field::HLEN] = 6;
        b[field::PLEN] = 4;
        let op = match self.op {
            ArpOp::Request => ArpOperation::REQUEST,
            ArpOp::Reply => ArpOperation::REPLY,
        };
        b[field::OPER].copy_from_slice(&op.0.to_be_bytes());
        b[field::SHA].copy_from_slice(&self.sender_mac.0);
        b[field::SPA].copy_from_slice(&self.sender_ip.octets());
        b[field::THA].copy_from_slice(&self.target_mac.0);
        b[field::TPA].copy_from_slice(&self.target_ip.octets());
        Some(())
    }

    /// A request for `target_ip` (RFC 826: target hardware address zero).
    pub fn request(own_mac: MacAddr, own_ip: Ipv4Addr, target_ip: Ipv4Addr) -> ArpPacket {
        ArpPacket {
            op: ArpOp::Request,
            sender_mac: own_mac,
            sender_ip: own_ip,
            target_mac: MacAddr::ZERO,
            target_ip,
        }
    }

    /// An ARP announcement (RFC 5227 §2.3): a request with sender IP =
    /// target IP = our address and target MAC zero, sent to broadcast, so
    /// that every host updates its cache entry for us (RFC 826 merge rule).
    pub fn announcement(own_mac: MacAddr, own_ip: Ipv4Addr) -> ArpPacket {
        ArpPacket::request(own_mac, own_ip, own_ip)
    }

    /// The Ethernet frame carrying this packet: broadcast for a request,
    /// unicast to `target_mac` for a reply; padded to the 60-byte minimum.
    pub fn to_frame(&self, pool: &MsgPool) -> Result<Msg, MsgError> {
        let mut m = pool.alloc(PACKET_LEN)?;
        // `m` holds exactly PACKET_LEN bytes.
        let _ = self.emit(m.as_mut_slice());
        let dst = match self.op {
            ArpOp::Request => MacAddr::BROADCAST,
            ArpOp::Reply => self.target_mac,
        };
        EthHeader {
            dst,
            src: self.sender_mac,
            ethertype: EtherType::ARP,
        }
        .push_onto(&mut m)?;
        eth::pad_to_minimum(&mut m)?;
        Ok(m)
    }
}

/// Builds the gratuitous ARP announcement frame for our address (RFC 5227
/// §2.3), ready for the device: broadcast destination, padded.
pub fn gratuitous_announcement(
    pool: &MsgPool,
    own_ip: Ipv4Addr,
    own_mac: MacAddr,
) -> Result<Msg, MsgError> {
    ArpPacket::announcement(own_mac, own_ip).to_frame(pool)
}

/// Turns the ARP request in `msg` (ARP packet at the front, Ethernet header
/// already popped) into our reply, in place (RFC 826: swap sender and
/// target, fill in our hardware address, set the opcode to reply). Trailing
/// padding is trimmed. Returns the requester's MAC, the destination of the
/// reply frame.
pub fn reply_in_place(
    msg: &mut Msg,
    own_mac: MacAddr,
    own_ip: Ipv4Addr,
) -> Result<MacAddr, ArpDropReason> {
    let req = ArpPacket::parse(msg.as_slice())?;
    if req.op != ArpOp::Request || req.target_ip != own_ip {
        return Err(ArpDropReason::NotForUs);
    }
    let reply = ArpPacket {
        op: ArpOp::Reply,
        sender_mac: own_mac,
        sender_ip: own_ip,
        target_mac: req.sender_mac,
        target_ip: req.sender_ip,
    };
    msg.truncate(PACKET_LEN);
    // parse succeeded, so at least PACKET_LEN bytes are there.
    let _ = reply.emit(msg.as_mut_slice());
    Ok(req.sender_mac)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pathstack_core::PoolConfig;
    use proptest::prelude::*;

    // The hosts of the ARP tests here and in the cache's
    // (`crate::arp::cache`): us, the peer we resolve, and a third host.
    pub(crate) const OWN_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    pub(crate) const OWN_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    pub(crate) const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    pub(crate) const PEER_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);
    pub(crate) const OTHER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 3);

    /// A small pool for the frames of a test.
    pub(crate) fn pool() -> MsgPool {
        MsgPool::new(PoolConfig::small(64))
    }
    #[test]
    fn emit_parse_round_trip_and_etherparse_agrees() {
        let p = ArpPacket::request(OWN_MAC, OWN_IP, PEER_IP);
        let mut b = [0u8; PACKET_LEN];
        p.emit(&mut b).unwrap();
        assert_eq!(ArpPacket::parse(&b).unwrap(), p);
        let ep = etherparse::ArpPacket::from_slice(&b)
            .unwrap()
            .try_eth_ipv4()
            .unwrap();
        assert_eq!(ep.target_ipv4_addr(), PEER_IP);
        assert_eq!(ep.sender_mac, OWN_MAC.0);
    }

    #[test]
    fn typed_parse_errors() {
        let mut b = [0u8; PACKET_LEN];
        ArpPacket::request(OWN_MAC, OWN_IP, PEER_IP)
            .emit(&mut b)
            .unwrap();
        let bad = |f: fn(&mut [u8; PACKET_LEN]), r| {
            let mut c = b;
            f(&mut c);
            assert_eq!(ArpPacket::parse(&c), Err(r));
        };
        bad(|c| c[1] = 6, ArpDropReason::UnsupportedHardware);
        bad(|c| c[2] = 0x86, ArpDropReason::UnsupportedProtocol);
        bad(|c| c[5] = 3, ArpDropReason::BadAddressLength);
        bad(|c| c[7] = 3, ArpDropReason::UnknownOperation);
        assert_eq!(ArpPacket::parse(&b[..27]), Err(ArpDropReason::Truncated));
    }

    #[test]
    fn announcement_frame_is_rfc5227() {
        let f = gratuitous_announcement(&pool(), OWN_IP, OWN_MAC).unwrap();
        assert_eq!(f.len(), eth::MIN_FRAME_LEN);
        let mut f2 = f.try_clone().unwrap();
        let h = EthHeader::pop_from(&mut f2).unwrap();
        assert_eq!(h.dst, MacAddr::BROADCAST);
        assert_eq!(h.ethertype, EtherType::ARP);
        let p = ArpPacket::parse(f2.as_slice()).unwrap();
        assert_eq!(p.op, ArpOp::Request);
        assert_eq!(p.sender_ip, OWN_IP);
        assert_eq!(p.target_ip, OWN_IP);
        assert_eq!(p.target_mac, MacAddr::ZERO);
    }

    #[test]
    fn reply_built_in_place() {
        let pool = pool();
        let mut b = [0u8; 46]; // with Ethernet padding
        ArpPacket::request(PEER_MAC, PEER_IP, OWN_IP)
            .emit(&mut b)
            .unwrap();
        let mut m = pool.alloc_copy(&b).unwrap();
        assert_eq!(reply_in_place(&mut m, OWN_MAC, OWN_IP), Ok(PEER_MAC));
        assert_eq!(m.len(), PACKET_LEN);
        let r = ArpPacket::parse(m.as_slice()).unwrap();
        assert_eq!(
            r,
            ArpPacket {
                op: ArpOp::Reply,
                sender_mac: OWN_MAC,
                sender_ip: OWN_IP,
                target_mac: PEER_MAC,
                target_ip: PEER_IP
            }
        );
        let mut other = pool.alloc_copy(&b).unwrap();
        assert_eq!(
            reply_in_place(&mut other, OWN_MAC, OTHER_IP),
            Err(ArpDropReason::NotForUs)
        );
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(p) = ArpPacket::parse(&bytes) {
                let mut b = [0u8; PACKET_LEN];
                p.emit(&mut b).unwrap();
                prop_assert_eq!(&b[..], &bytes[..PACKET_LEN]);
            }
        }
    }
}
