//! The Internet modules on the path core: `ETH`, `ARP`, `IP`, `ICMP`, `UDP`.
//!
//! Thin wrappers: the protocol logic lives in the sibling files of this
//! crate (one concept each); a module here owns shared state (the ARP
//! cache, the routing table, the reassembler) and makes routing decisions,
//! and its stage does the per-message work of one path.
//!
//! Module roles follow the Scout thesis (§4.1.2, Figure 5.2): ICMP creates
//! its path through IP when it initializes, IP routes to ARP (choosing the
//! interface, the role of Scout's VNET), and ARP runs over ETH. Each module
//! also keeps a path of its own for traffic no other path claims:
//!
//! ```text
//!  ICMP path:  ICMP / IP / ARP / ETH / driver   (echo, errors; passive, protocol 1)
//!  IP path:    IP / ARP / ETH / driver          (fragments, unmatched datagrams)
//!  ARP path:   ARP / ETH / driver               (requests, replies, announcements)
//! ```
//!
//! Neighbouring stages pass per-message facts in the message's
//! [`Anno`](pathstack_core::Anno)tations: IP sets the next hop for ARP,
//! ARP sets the link destination for ETH, and on the way up IP records the
//! peer address that a passive path answers.

pub mod arp;
mod ephemeral;
pub mod eth;
pub mod fast;
mod host_graph;
pub mod icmp;
pub mod inline;
mod instance_params;
pub mod ip;
pub mod loopback;
mod params;
pub mod tcp;
pub mod udp;

pub use arp::{ArpModule, ArpStage, ARP_SPEC};
pub use eth::{EthModule, EthStage, ETH_SPEC};
pub use host_graph::HostGraph;
pub use icmp::{IcmpModule, IcmpStage, ICMP_SPEC};
pub use instance_params::{ArpParams, EthParams, IpParams, TcpParams};
pub use ip::{IpModule, IpRefusal, IpStage, IP_SPEC, LOCAL_IPV4};
pub use params::{parse_cidr, CidrError};
pub use tcp::{TcpConnStage, TcpListenStage, TcpModule, TcpRefusal, TCP_SPEC};
pub use udp::{UdpModule, UdpRefusal, UdpStage, UDP_SPEC};

use pathstack_core::stack::ModuleTypes;

/// EtherType of IPv4 (RFC 894).
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP (RFC 826).
pub const ETHERTYPE_ARP: u16 = 0x0806;

/// Registers `ETH`, `ARP`, `IP` and `ICMP`.
pub fn register(types: &mut ModuleTypes) {
    types.register(&ETH_SPEC, EthModule::create);
    types.register(&ARP_SPEC, ArpModule::create);
    types.register(&IP_SPEC, IpModule::create);
    types.register(&ICMP_SPEC, IcmpModule::create);
    types.register(&UDP_SPEC, UdpModule::create);
    types.register(&TCP_SPEC, TcpModule::create);
}
