//! The headers on the wire: one file per header, parse and emit side by
//! side.

pub mod arp;
pub mod checksum;
pub mod eth;
pub mod icmp;
pub mod ipv4;
pub mod udp;
