//! The identity of a remote host as the RPC protocols see it: x-kernel's
//! "lower session", which names the remote host.

use pathstack_inet::MacAddr;
use std::fmt;
use std::net::Ipv4Addr;

/// A remote host: its Ethernet address when the RPC stack runs directly
/// over `ETH` (`graphs/rpc.graph`), its IPv4 address when BLAST and BIDCTL
/// run over `IP` (`graphs/rpc-ip.graph`).
///
/// BIDCTL keeps one state machine per `Peer`, CHAN one set of channels
/// per `Peer`: the x-kernel's requirement that all messages from one host
/// arrive through one lower session and different hosts through different
/// ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    /// A host on the local Ethernet, by MAC address.
    Mac(MacAddr),
    /// A host reached through IP.
    Ipv4(Ipv4Addr),
}

impl From<MacAddr> for Peer {
    fn from(m: MacAddr) -> Self {
        Peer::Mac(m)
    }
}

impl From<Ipv4Addr> for Peer {
    fn from(a: Ipv4Addr) -> Self {
        Peer::Ipv4(a)
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Peer::Mac(m) => write!(f, "{m}"),
            Peer::Ipv4(a) => write!(f, "{a}"),
        }
    }
}
