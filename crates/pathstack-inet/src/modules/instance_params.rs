//! The parameters of IP, ARP, ETH and TCP as typed values
//! ([`InstanceParams`]), for graphs built in code
//! ([`GraphBuilder::typed`](pathstack_core::graph::GraphBuilder::typed)):
//! each key written here in the form this crate's factories parse back,
//! so no caller formats an address or a size itself.

use super::{ARP_SPEC, ETH_SPEC, IP_SPEC, TCP_SPEC};
use crate::wire::eth::MacAddr;
use pathstack_core::graph::spec::ModuleSpec;
use pathstack_core::graph::InstanceParams;
use std::net::Ipv4Addr;

/// `IP`'s parameters: one interface and its default route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpParams {
    /// The interface's address (`addr`, with `prefix_len`).
    pub addr: Ipv4Addr,
    /// Prefix length of the attached network.
    pub prefix_len: u8,
    /// The interface's MTU (`mtu`).
    pub mtu: u16,
    /// Default gateway (`gateway`), if any.
    pub gateway: Option<Ipv4Addr>,
}

impl InstanceParams for IpParams {
    fn spec(&self) -> &'static ModuleSpec {
        &IP_SPEC
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![
            ("addr", format!("{}/{}", self.addr, self.prefix_len)),
            ("mtu", self.mtu.to_string()),
        ];
        if let Some(gw) = self.gateway {
            p.push(("gateway", gw.to_string()));
        }
        p
    }
}

/// `ARP`'s parameters: the address pair it answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpParams {
    /// Our IPv4 address (`ip`).
    pub ip: Ipv4Addr,
    /// Our MAC address (`mac`).
    pub mac: MacAddr,
}

impl InstanceParams for ArpParams {
    fn spec(&self) -> &'static ModuleSpec {
        &ARP_SPEC
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        vec![("ip", self.ip.to_string()), ("mac", self.mac.to_string())]
    }
}

/// `ETH`'s parameters: the station address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthParams {
    /// Our MAC address (`mac`).
    pub mac: MacAddr,
}

impl InstanceParams for EthParams {
    fn spec(&self) -> &'static ModuleSpec {
        &ETH_SPEC
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        vec![("mac", self.mac.to_string())]
    }
}

/// `TCP`'s parameters: segment size, what the device offloads, the seed of
/// its secrets, the most connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpParams {
    /// Largest segment payload (`mss`); `None`: the module's default.
    pub mss: Option<u16>,
    /// The device finishes partial checksums (`csum_offload`).
    pub csum_offload: bool,
    /// Largest super-segment the device segments (`tso_max`), 0: none.
    pub tso_max: u32,
    /// Derive initial sequence numbers and SYN cookies from this seed
    /// (`seed`) instead of at random; for simulation and tests only.
    pub seed: Option<u64>,
    /// Most connections, listeners and bound sockets at once
    /// (`max_connections`); `None`: the module's default (65,536).
    pub max_connections: Option<usize>,
}

impl InstanceParams for TcpParams {
    fn spec(&self) -> &'static ModuleSpec {
        &TCP_SPEC
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = Vec::new();
        if let Some(mss) = self.mss {
            p.push(("mss", mss.to_string()));
        }
        if self.csum_offload {
            p.push(("csum_offload", "true".to_string()));
        }
        if self.tso_max > 0 {
            p.push(("tso_max", self.tso_max.to_string()));
        }
        if let Some(seed) = self.seed {
            p.push(("seed", seed.to_string()));
        }
        if let Some(n) = self.max_connections {
            p.push(("max_connections", n.to_string()));
        }
        p
    }
}
