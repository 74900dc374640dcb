//! pathstack-inet: the protocol logic of ETH, ARP, IPv4 and ICMP.
//!
//! Each file is one concept in the style of smoltcp's `wire` module: a typed
//! view over bytes per header, parse and emit side by side, with the tests
//! beside the code. Nothing here depends on the Module/Stage API; the ETH,
//! ARP, IP and ICMP modules of the stack wrap these types in thin stages.
//!
//! Header slicing and checksums come from `etherparse` (DESIGN.md); what is
//! hand-written says why. Nothing panics on any input: every malformed case
//! is a typed drop reason with a stable name ([`drop_reason`]), and every
//! table and queue has a bound fixed at construction.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arp_cache;
pub mod drop_reason;
pub mod frag;
pub mod icmp_suppression;
pub mod ipv4_ident;
pub mod modules;
pub mod rate_limit;
pub mod reassembly;
pub mod route;
pub mod wire;

pub use drop_reason::{DropCounts, DropReason};
pub use wire::eth::{EthDropReason, EthHeader, MacAddr};
pub use wire::ipv4::{Ipv4DropReason, Ipv4Packet, Ipv4Repr};
