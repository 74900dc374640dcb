//! Which network the RPC stack runs on: directly over Ethernet or over IP
//! (the `net=` parameter of `BLAST` and `BIDCTL`).

use pathstack_core::error::ModuleError;
use pathstack_core::stack::ModuleSetup;
use std::str::FromStr;

/// The network below BLAST and BIDCTL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RpcNet {
    /// Directly over Ethernet (EtherTypes 0x3001 and 0x3006); peers are
    /// MAC addresses.
    #[default]
    Eth,
    /// Over IPv4 (protocols 101 and 205); peers are IPv4 addresses.
    Ip,
}

impl RpcNet {
    /// The `PROT_ID` a module below names its path with: the EtherType
    /// over Ethernet, the IP protocol number over IP.
    pub fn lower_prot_id(self, ethertype: u16, ip_protocol: u8) -> u32 {
        match self {
            RpcNet::Eth => u32::from(ethertype),
            RpcNet::Ip => u32::from(ip_protocol),
        }
    }

    /// The bytes of an MTU the network's own headers take below BLAST:
    /// none over Ethernet (the MTU is the Ethernet payload), 20 over IP.
    pub fn header_overhead(self) -> usize {
        match self {
            RpcNet::Eth => 0,
            RpcNet::Ip => 20,
        }
    }

    /// The `net=` parameter of a module (default `eth`).
    pub fn param(setup: &ModuleSetup<'_>) -> Result<RpcNet, ModuleError> {
        setup.param("net", RpcNet::Eth)
    }
}

/// Why a `net=` parameter did not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a network for the RPC stack (expected `eth` or `ip`)")]
pub struct RpcNetError(String);

impl FromStr for RpcNet {
    type Err = RpcNetError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "eth" => Ok(RpcNet::Eth),
            "ip" => Ok(RpcNet::Ip),
            other => Err(RpcNetError(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_networks_and_refuses_others() {
        assert_eq!("eth".parse(), Ok(RpcNet::Eth));
        assert_eq!("ip".parse(), Ok(RpcNet::Ip));
        assert!("ipx".parse::<RpcNet>().is_err());
        assert_eq!(RpcNet::Eth.lower_prot_id(0x3001, 101), 0x3001);
        assert_eq!(RpcNet::Ip.lower_prot_id(0x3001, 101), 101);
    }
}
