//! The wire between packetdrill and the host: packetdrill's bare IP
//! packets in, the host's Ethernet frames out, ARP answered here.
//!
//! packetdrill's `netdev_send` and `netdev_receive` carry IP datagrams
//! without a link layer (its tun device's view). The host is an Ethernet
//! host on one end of the in-memory wire; the shim holds the other end and
//! plays the host's only neighbour, the router towards every remote
//! address: it puts an Ethernet header in front of each injected packet,
//! takes it off each sniffed one, and answers any ARP request with its own
//! hardware address (RFC 826), so that next-hop resolution never waits on
//! the script.
#![deny(unsafe_code)]

use crate::tun_device::{TunDevice, TSO_MAX};
use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::core::msg::{MsgPool, PoolConfig};
use pathstack::core::Instant;
use pathstack::Device;
use std::collections::VecDeque;
use std::time::Duration;

/// Ethernet II header length.
const ETH_HEADER: usize = 14;
/// EtherType of IPv4.
const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP.
const ETHERTYPE_ARP: u16 = 0x0806;
/// Packets sniffed and not yet taken by packetdrill, at most. A script
/// takes every packet it expects; more than this waiting means the stack
/// sent a flood the script does not expect, and the oldest go (counted).
pub const MAX_SNIFFED: usize = 4096;
/// The wire's MTU: room for the host's super-segments
/// ([`TSO_MAX`]); the host itself sees the tun's 1500
/// ([`TunDevice`]).
pub const MTU: usize = TSO_MAX;

/// An IP packet the host sent, with the time it left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sniffed {
    /// The IP datagram (no link header).
    pub packet: Vec<u8>,
    /// When the host put it on the wire (the session's clock; the
    /// session adds the epoch offset before packetdrill sees it).
    pub at: Duration,
}

/// Why a frame or packet went nowhere, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkDrops {
    /// Injected packets that are not IPv4 (pathstack has no IPv6).
    pub not_ipv4: u64,
    /// Injected packets the wire refused (full, or longer than the MTU).
    pub refused: u64,
    /// Sniffed packets dropped because packetdrill left too many waiting.
    pub overflow: u64,
    /// Frames from the host that are neither IPv4 nor an ARP request.
    pub other: u64,
}

/// The shim's end of the wire.
pub struct Link {
    end: MemoryEnd,
    pool: MsgPool,
    /// The host's hardware address (end A).
    host_mac: [u8; 6],
    /// Ours (end B): the router's.
    our_mac: [u8; 6],
    sniffed: VecDeque<Sniffed>,
    /// What was dropped, by reason.
    pub drops: LinkDrops,
}

impl Link {
    /// A wire: the link's end and the device the host is made on.
    pub fn new(tso: bool) -> (Link, TunDevice) {
        let cfg = MemoryConfig {
            capacity: MAX_SNIFFED,
            mtu: MTU,
            ..MemoryConfig::default()
        };
        let (host_end, our_end) = memory_pair(cfg);
        let link = Link {
            end: our_end,
            pool: MsgPool::new(PoolConfig::default()),
            host_mac: cfg.mac_a,
            our_mac: cfg.mac_b,
            sniffed: VecDeque::new(),
            drops: LinkDrops::default(),
        };
        (link, TunDevice::new(host_end, tso))
    }

    /// Our hardware address: what the host's neighbour table holds for
    /// the gateway.
    pub fn our_mac(&self) -> [u8; 6] {
        self.our_mac
    }

    /// Puts an IP packet from packetdrill on the wire towards the host.
    /// Anything but IPv4 is dropped and counted (`false`).
    pub fn inject(&mut self, packet: &[u8], now: Instant) -> bool {
        if packet.first().map(|b| b >> 4) != Some(4) {
            self.drops.not_ipv4 += 1;
            return false;
        }
        let mut frame = Vec::with_capacity(ETH_HEADER + packet.len());
        frame.extend_from_slice(&self.host_mac);
        frame.extend_from_slice(&self.our_mac);
        frame.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        frame.extend_from_slice(packet);
        self.transmit(&frame, now)
    }

    fn transmit(&mut self, frame: &[u8], now: Instant) -> bool {
        let sent = self
            .pool
            .alloc_copy(frame)
            .ok()
            .is_some_and(|m| self.end.transmit(m, now).is_ok());
        if !sent {
            self.drops.refused += 1;
        }
        sent
    }

    /// Takes every frame the host has sent: IP packets are kept for
    /// packetdrill stamped `now`, ARP requests answered. Returns whether
    /// an ARP reply went back (the host then has a frame to receive).
    pub fn drain(&mut self, now: Instant) -> bool {
        let mut answered = false;
        while let Ok(Some(frame)) = self.end.receive(&self.pool, now) {
            let bytes = frame.as_slice();
            if bytes.len() < ETH_HEADER {
                self.drops.other += 1;
                continue;
            }
            let ethertype = u16::from_be_bytes([bytes[12], bytes[13]]);
            match ethertype {
                ETHERTYPE_IPV4 => {
                    if self.sniffed.len() >= MAX_SNIFFED {
                        self.sniffed.pop_front();
                        self.drops.overflow += 1;
                    }
                    self.sniffed.push_back(Sniffed {
                        packet: bytes[ETH_HEADER..].to_vec(),
                        at: Duration::from_nanos(now.as_nanos()),
                    });
                }
                ETHERTYPE_ARP => match self.arp_reply(&bytes[ETH_HEADER..]) {
                    Some(reply) => answered |= self.transmit(&reply, now),
                    None => self.drops.other += 1,
                },
                _ => self.drops.other += 1,
            }
        }
        answered
    }

    /// The reply to an ARP request for any address (RFC 826: we are the
    /// router, the next hop of everything off-link), as a whole frame;
    /// `None` for anything but an Ethernet/IPv4 request.
    fn arp_reply(&self, arp: &[u8]) -> Option<Vec<u8>> {
        let arp = arp.get(..28)?;
        // htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4, oper 1 (request).
        if arp[..8] != [0, 1, 8, 0, 6, 4, 0, 1] {
            return None;
        }
        let (sender_mac, sender_ip, target_ip) = (&arp[8..14], &arp[14..18], &arp[24..28]);
        let mut f = Vec::with_capacity(ETH_HEADER + 28);
        f.extend_from_slice(sender_mac);
        f.extend_from_slice(&self.our_mac);
        f.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
        f.extend_from_slice(&self.our_mac);
        f.extend_from_slice(target_ip);
        f.extend_from_slice(sender_mac);
        f.extend_from_slice(sender_ip);
        Some(f)
    }

    /// The oldest packet packetdrill has not taken.
    pub fn take_sniffed(&mut self) -> Option<Sniffed> {
        self.sniffed.pop_front()
    }

    /// Whether a sniffed packet waits.
    pub fn has_sniffed(&self) -> bool {
        !self.sniffed.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arp_request(sender_mac: [u8; 6], sender_ip: [u8; 4], target_ip: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&sender_mac);
        f.extend_from_slice(&ETHERTYPE_ARP.to_be_bytes());
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&sender_mac);
        f.extend_from_slice(&sender_ip);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target_ip);
        f
    }

    #[test]
    fn arp_requests_are_answered_with_our_address_and_ip_is_kept_for_packetdrill() {
        let (mut link, mut host_end) = Link::new(false);
        let pool = MsgPool::new(PoolConfig::default());
        let now = Instant::from_nanos(5_000);
        let host_mac = [2, 0, 0, 0, 0, 1];
        let req = arp_request(host_mac, [192, 168, 0, 1], [192, 168, 255, 254]);
        host_end
            .transmit(pool.alloc_copy(&req).unwrap(), now)
            .unwrap();
        let mut ip_frame = vec![0u8; 14];
        ip_frame[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        ip_frame.extend_from_slice(&[0x45, 1, 2, 3]);
        host_end
            .transmit(pool.alloc_copy(&ip_frame).unwrap(), now)
            .unwrap();
        // Neither IPv4 nor ARP: dropped and counted.
        let mut odd = vec![0u8; 20];
        odd[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
        host_end
            .transmit(pool.alloc_copy(&odd).unwrap(), now)
            .unwrap();

        assert!(link.drain(now));
        let reply = host_end.receive(&pool, now).unwrap().expect("an ARP reply");
        let r = reply.as_slice();
        assert_eq!(&r[..6], &host_mac);
        assert_eq!(&r[6..12], &link.our_mac());
        assert_eq!(&r[14..22], &[0, 1, 8, 0, 6, 4, 0, 2]);
        assert_eq!(&r[22..28], &link.our_mac());
        assert_eq!(&r[28..32], &[192, 168, 255, 254]);
        assert_eq!(&r[32..38], &host_mac);
        assert_eq!(&r[38..42], &[192, 168, 0, 1]);

        let p = link.take_sniffed().expect("the IP packet");
        assert_eq!(p.packet, [0x45, 1, 2, 3]);
        assert_eq!(p.at, Duration::from_micros(5));
        assert!(!link.has_sniffed());
        assert_eq!(link.drops.other, 1);
    }

    #[test]
    fn only_ipv4_is_injected() {
        let (mut link, _host_end) = Link::new(true);
        let now = Instant::from_nanos(0);
        assert!(!link.inject(&[0x60, 0, 0, 0], now));
        assert!(!link.inject(&[], now));
        assert_eq!(link.drops.not_ipv4, 2);
        assert!(link.inject(&[0x45, 0, 0, 20], now));
    }
}
