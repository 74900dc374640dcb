//! Which addresses a host can use: [`HostConfig::check`] and
//! [`ConfigError`] (issue 27, problem 6). A host that takes `0.0.0.0`,
//! its network's own address or a multicast group as its address starts
//! and then fails in ways far from the cause; it is refused up front with
//! a message that says what is wrong.

use super::HostConfig;
use std::net::Ipv4Addr;

/// Why a [`HostConfig`] names addresses no host can use.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The address is in `0.0.0.0/8`, "this host on this network", which
    /// only a host that does not know its address may use as a source
    /// (RFC 1122 §3.2.1.3 (a)).
    #[error("{0} cannot be a host's address: 0.0.0.0/8 means \"this host\" before it has an address (RFC 1122 §3.2.1.3)")]
    Unspecified(Ipv4Addr),
    /// The address is a loopback address (RFC 1122 §3.2.1.3 (g)): it
    /// never appears on a network.
    #[error("{0} is a loopback address (127.0.0.0/8) and cannot be a host's address on a device")]
    Loopback(Ipv4Addr),
    /// The address is a multicast group (RFC 1112 §4), not a host.
    #[error("{0} is a multicast group address (224.0.0.0/4), not a host's address")]
    Multicast(Ipv4Addr),
    /// The limited broadcast or a reserved (class E) address (RFC 1122
    /// §3.2.1.3 (c), RFC 6890).
    #[error(
        "{0} is reserved (240.0.0.0/4 or the limited broadcast) and cannot be a host's address"
    )]
    Reserved(Ipv4Addr),
    /// A prefix length of 0 would put every address on the link.
    #[error("prefix length 0 puts every IPv4 address on the link; give the attached network's (e.g. /24)")]
    EmptyPrefix,
    /// The address is its network's own address (host part all zeros,
    /// RFC 1122 §3.2.1.3 (b), RFC 950).
    #[error("{addr}/{prefix_len} is the network's own address (host part all zeros); a host needs one of {first}–{last}")]
    NetworkAddress {
        /// The address.
        addr: Ipv4Addr,
        /// Its prefix length.
        prefix_len: u8,
        /// The first usable host address of the network.
        first: Ipv4Addr,
        /// The last usable host address.
        last: Ipv4Addr,
    },
    /// The address is its network's directed broadcast (host part all
    /// ones, RFC 922, RFC 1122 §3.2.1.3 (d)).
    #[error("{addr}/{prefix_len} is the network's broadcast address (host part all ones); a host needs one of {first}–{last}")]
    SubnetBroadcast {
        /// The address.
        addr: Ipv4Addr,
        /// Its prefix length.
        prefix_len: u8,
        /// The first usable host address of the network.
        first: Ipv4Addr,
        /// The last usable host address.
        last: Ipv4Addr,
    },
    /// The gateway is the host itself.
    #[error("the gateway {0} is the host's own address; give the router's")]
    GatewayIsSelf(Ipv4Addr),
    /// The gateway is not on the attached network, so the host could not
    /// reach it (RFC 1122 §3.3.1.1: a gateway is a next hop on the link).
    #[error("the gateway {gateway} is not on the attached network {network}/{prefix_len}")]
    GatewayOffLink {
        /// The gateway.
        gateway: Ipv4Addr,
        /// The attached network.
        network: Ipv4Addr,
        /// Its prefix length.
        prefix_len: u8,
    },
    /// The gateway is the network's own or broadcast address, or no
    /// unicast address at all.
    #[error("the gateway {0} is not a unicast host address on the attached network")]
    GatewayNotAHost(Ipv4Addr),
}

/// The mask of a prefix length (0..=32).
fn mask(prefix_len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(prefix_len))
        .unwrap_or(0)
}

/// Whether `a` is an address in the reserved or special ranges no host
/// on a device can hold.
fn special(a: Ipv4Addr) -> Option<ConfigError> {
    if a.octets()[0] == 0 {
        Some(ConfigError::Unspecified(a))
    } else if a.is_loopback() {
        Some(ConfigError::Loopback(a))
    } else if a.is_multicast() {
        Some(ConfigError::Multicast(a))
    } else if a.octets()[0] >= 240 {
        Some(ConfigError::Reserved(a))
    } else {
        None
    }
}

impl HostConfig {
    /// Checks that the host's address, prefix and gateway are ones a host
    /// can use. [`HostConfig::parse`] and `Host::new` call it; a
    /// configuration built field by field is checked when the host is
    /// made.
    ///
    /// ```
    /// use pathstack::host::{ConfigError, HostConfig};
    /// assert!(HostConfig::parse("10.0.0.1/24").is_ok());
    /// let mut c = HostConfig::parse("10.0.0.1/24").unwrap();
    /// c.gateway = Some("10.0.1.1".parse().unwrap());
    /// assert!(matches!(c.check(), Err(ConfigError::GatewayOffLink { .. })));
    /// ```
    pub fn check(&self) -> Result<(), ConfigError> {
        let (addr, len) = (self.addr, self.prefix_len);
        if let Some(e) = special(addr) {
            return Err(e);
        }
        if len == 0 {
            return Err(ConfigError::EmptyPrefix);
        }
        let m = mask(len);
        let net = u32::from(addr) & m;
        // A /31 (RFC 3021) and a /32 have no network or broadcast address.
        if len <= 30 {
            let (first, last) = (Ipv4Addr::from(net + 1), Ipv4Addr::from((net | !m) - 1));
            let host = u32::from(addr) & !m;
            if host == 0 {
                return Err(ConfigError::NetworkAddress {
                    addr,
                    prefix_len: len,
                    first,
                    last,
                });
            }
            if host == !m {
                return Err(ConfigError::SubnetBroadcast {
                    addr,
                    prefix_len: len,
                    first,
                    last,
                });
            }
        }
        if let Some(gw) = self.gateway {
            if gw == addr {
                return Err(ConfigError::GatewayIsSelf(gw));
            }
            if special(gw).is_some() {
                return Err(ConfigError::GatewayNotAHost(gw));
            }
            if u32::from(gw) & m != net {
                return Err(ConfigError::GatewayOffLink {
                    gateway: gw,
                    network: Ipv4Addr::from(net),
                    prefix_len: len,
                });
            }
            let host = u32::from(gw) & !m;
            if len <= 30 && (host == 0 || host == !m) {
                return Err(ConfigError::GatewayNotAHost(gw));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(cidr: &str, gateway: Option<&str>) -> Result<(), ConfigError> {
        let (addr, prefix_len) = pathstack_inet::modules::parse_cidr(cidr).unwrap();
        let mut c = HostConfig::parse("10.0.0.1/24").unwrap();
        c.addr = addr;
        c.prefix_len = prefix_len;
        c.gateway = gateway.map(|g| g.parse().unwrap());
        c.check()
    }

    #[test]
    fn usable_addresses_pass() {
        for (cidr, gw) in [
            ("10.0.0.1/24", None),
            ("10.0.0.254/24", Some("10.0.0.1")),
            ("192.168.1.7/16", Some("192.168.0.1")),
            // RFC 3021: both addresses of a /31 are hosts.
            ("10.0.0.0/31", Some("10.0.0.1")),
            ("10.0.0.1/31", None),
            ("10.9.9.9/32", None),
            ("1.2.3.4/8", None),
        ] {
            assert_eq!(check(cidr, gw), Ok(()), "{cidr} via {gw:?}");
        }
    }

    #[test]
    fn unusable_addresses_are_refused_with_their_reason() {
        use ConfigError as E;
        type Case = (&'static str, Option<&'static str>, fn(&ConfigError) -> bool);
        let cases: [Case; 11] = [
            ("0.0.0.0/24", None, |e| matches!(e, E::Unspecified(_))),
            ("127.0.0.1/8", None, |e| matches!(e, E::Loopback(_))),
            ("224.0.0.5/24", None, |e| matches!(e, E::Multicast(_))),
            ("255.255.255.255/24", None, |e| matches!(e, E::Reserved(_))),
            ("240.0.0.1/24", None, |e| matches!(e, E::Reserved(_))),
            ("10.0.0.1/0", None, |e| matches!(e, E::EmptyPrefix)),
            ("10.0.0.0/24", None, |e| {
                matches!(e, E::NetworkAddress { .. })
            }),
            ("10.0.0.255/24", None, |e| {
                matches!(e, E::SubnetBroadcast { .. })
            }),
            ("10.0.0.1/24", Some("10.0.0.1"), |e| {
                matches!(e, E::GatewayIsSelf(_))
            }),
            ("10.0.0.1/24", Some("10.0.1.1"), |e| {
                matches!(e, E::GatewayOffLink { .. })
            }),
            ("10.0.0.1/24", Some("10.0.0.255"), |e| {
                matches!(e, E::GatewayNotAHost(_))
            }),
        ];
        for (cidr, gw, is) in cases {
            let e = check(cidr, gw).expect_err(cidr);
            assert!(is(&e), "{cidr} via {gw:?}: {e}");
        }
    }

    #[test]
    fn the_message_names_the_usable_range() {
        let e = check("10.0.0.0/24", None).unwrap_err();
        assert!(e.to_string().contains("10.0.0.1–10.0.0.254"), "{e}");
    }
}
