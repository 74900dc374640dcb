//! The IPv4 routing table of a host: longest-prefix match with a default
//! route (RFC 1122 §3.3.1, RFC 1812 §5.2.4.3 for the longest-match rule).
//!
//! A host's table is small (one or two on-link prefixes and a default), so
//! routes are kept in a bounded vector sorted by prefix length, longest
//! first, and the first match wins: that is longest-prefix match with a
//! scan of a few entries and no allocation after [`RoutingTable::new`].

use pathstack_core::generation::Generation;
use std::net::Ipv4Addr;

/// One configured route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RouteEntry {
    /// Network address of the prefix (host bits must be zero).
    pub prefix: Ipv4Addr,
    /// Prefix length, 0..=32. 0 is the default route.
    pub prefix_len: u8,
    /// Interface index the datagrams leave by.
    pub interface: usize,
    /// Gateway, or `None` when the prefix is on-link (the destination itself
    /// is the next hop).
    pub gateway: Option<Ipv4Addr>,
    /// Source address for datagrams using this route (RFC 1122 §3.3.4.3:
    /// the address of the outgoing interface).
    pub src: Ipv4Addr,
    /// MTU of the path through this route.
    pub mtu: u16,
}

/// The result of a lookup: where to send a datagram for a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    /// Interface index.
    pub interface: usize,
    /// Next hop to resolve with ARP: the gateway, or the destination itself
    /// when on-link (RFC 1122 §3.3.1.1).
    pub next_hop: Ipv4Addr,
    /// Source address to use.
    pub src: Ipv4Addr,
    /// MTU for fragmentation.
    pub mtu: u16,
}

/// Why a route could not be added.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The table already holds its maximum number of routes.
    #[error("routing table full ({0} routes)")]
    Full(usize),
    /// Prefix length above 32 or host bits set in the prefix.
    #[error("invalid prefix {prefix}/{len}")]
    BadPrefix {
        /// The prefix given.
        prefix: Ipv4Addr,
        /// The length given.
        len: u8,
    },
    /// A route for this exact prefix exists already.
    #[error("a route for {prefix}/{len} exists")]
    Exists {
        /// The prefix given.
        prefix: Ipv4Addr,
        /// The length given.
        len: u8,
    },
    /// MTU below the 68 bytes every IPv4 link must carry (RFC 791 §3.2).
    #[error("MTU {0} below the IPv4 minimum of 68")]
    MtuTooSmall(u16),
}

/// The smallest MTU every IPv4 link must support (RFC 791 §3.2, "Fragmentation").
pub const MIN_MTU: u16 = 68;

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    }
}

/// A bounded routing table.
#[derive(Clone, Debug)]
pub struct RoutingTable {
    routes: Vec<RouteEntry>,
    max_routes: usize,
    /// Bumped by every change, so that a path's fast form can keep the
    /// next hop it found while the table stays the same.
    generation: Generation,
}

impl RoutingTable {
    /// An empty table that holds at most `max_routes` routes.
    pub fn new(max_routes: usize) -> Self {
        RoutingTable {
            routes: Vec::with_capacity(max_routes),
            max_routes,
            generation: Generation::new(),
        }
    }

    /// The table's change counter (see [`pathstack_core::generation`]).
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// Adds a route. Prefixes must be exact (no host bits) and unique.
    pub fn add(&mut self, entry: RouteEntry) -> Result<(), RouteError> {
        let (prefix, len) = (entry.prefix, entry.prefix_len);
        if len > 32 || u32::from(prefix) & !mask(len) != 0 {
            return Err(RouteError::BadPrefix { prefix, len });
        }
        if entry.mtu < MIN_MTU {
            return Err(RouteError::MtuTooSmall(entry.mtu));
        }
        if self
            .routes
            .iter()
            .any(|r| r.prefix == prefix && r.prefix_len == len)
        {
            return Err(RouteError::Exists { prefix, len });
        }
        if self.routes.len() >= self.max_routes {
            return Err(RouteError::Full(self.max_routes));
        }
        // Keep longest prefixes first so the first match is the longest.
        let at = self
            .routes
            .iter()
            .position(|r| r.prefix_len < len)
            .unwrap_or(self.routes.len());
        self.routes.insert(at, entry);
        self.generation.bump();
        Ok(())
    }

    /// Adds the default route (0.0.0.0/0) through `gateway`.
    pub fn set_default(
        &mut self,
        gateway: Ipv4Addr,
        interface: usize,
        src: Ipv4Addr,
        mtu: u16,
    ) -> Result<(), RouteError> {
        self.remove(Ipv4Addr::UNSPECIFIED, 0);
        self.add(RouteEntry {
            prefix: Ipv4Addr::UNSPECIFIED,
            prefix_len: 0,
            interface,
            gateway: Some(gateway),
            src,
            mtu,
        })
    }

    /// Removes the route for exactly `prefix/len`; returns whether one existed.
    pub fn remove(&mut self, prefix: Ipv4Addr, len: u8) -> bool {
        let before = self.routes.len();
        self.routes
            .retain(|r| !(r.prefix == prefix && r.prefix_len == len));
        self.generation.bump();
        self.routes.len() != before
    }

    /// The route for `dst` by longest-prefix match, or `None` if nothing
    /// (not even a default route) matches.
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<Route> {
        let d = u32::from(dst);
        self.routes
            .iter()
            .find(|r| d & mask(r.prefix_len) == u32::from(r.prefix))
            .map(|r| Route {
                interface: r.interface,
                next_hop: r.gateway.unwrap_or(dst),
                src: r.src,
                mtu: r.mtu,
            })
    }

    /// The configured routes, longest prefix first.
    pub fn routes(&self) -> &[RouteEntry] {
        &self.routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn on_link(prefix: [u8; 4], len: u8, iface: usize) -> RouteEntry {
        RouteEntry {
            prefix: prefix.into(),
            prefix_len: len,
            interface: iface,
            gateway: None,
            src: Ipv4Addr::new(10, 0, 0, 1),
            mtu: 1500,
        }
    }

    #[test]
    fn longest_prefix_wins_and_default_catches_rest() {
        let mut t = RoutingTable::new(8);
        t.add(on_link([10, 0, 0, 0], 8, 0)).unwrap();
        t.add(on_link([10, 1, 0, 0], 16, 1)).unwrap();
        t.set_default(
            Ipv4Addr::new(10, 0, 0, 254),
            0,
            Ipv4Addr::new(10, 0, 0, 1),
            1500,
        )
        .unwrap();
        let r = t.lookup(Ipv4Addr::new(10, 1, 2, 3)).unwrap();
        assert_eq!((r.interface, r.next_hop), (1, Ipv4Addr::new(10, 1, 2, 3)));
        let r = t.lookup(Ipv4Addr::new(10, 2, 2, 3)).unwrap();
        assert_eq!(r.interface, 0);
        let r = t.lookup(Ipv4Addr::new(8, 8, 8, 8)).unwrap();
        assert_eq!(r.next_hop, Ipv4Addr::new(10, 0, 0, 254));
        assert!(t.remove(Ipv4Addr::UNSPECIFIED, 0));
        assert_eq!(t.lookup(Ipv4Addr::new(8, 8, 8, 8)), None);
    }

    #[test]
    fn bounded_and_validated() {
        let mut t = RoutingTable::new(1);
        t.add(on_link([10, 0, 0, 0], 8, 0)).unwrap();
        assert_eq!(
            t.add(on_link([10, 0, 0, 0], 8, 0)),
            Err(RouteError::Exists {
                prefix: Ipv4Addr::new(10, 0, 0, 0),
                len: 8
            })
        );
        assert_eq!(
            t.add(on_link([11, 0, 0, 0], 8, 0)),
            Err(RouteError::Full(1))
        );
        let mut t = RoutingTable::new(4);
        assert!(matches!(
            t.add(on_link([10, 0, 0, 1], 8, 0)),
            Err(RouteError::BadPrefix { .. })
        ));
        assert!(matches!(
            t.add(on_link([0, 0, 0, 0], 33, 0)),
            Err(RouteError::BadPrefix { .. })
        ));
        let mut small = on_link([10, 0, 0, 0], 8, 0);
        small.mtu = 67;
        assert_eq!(t.add(small), Err(RouteError::MtuTooSmall(67)));
        t.add(on_link([10, 0, 0, 7], 32, 2)).unwrap();
        assert_eq!(t.lookup(Ipv4Addr::new(10, 0, 0, 7)).unwrap().interface, 2);
    }

    proptest! {
        /// Matches a brute-force reference: the matching route with the
        /// longest prefix.
        #[test]
        fn lpm_matches_reference(routes in proptest::collection::vec((any::<u32>(), 0u8..=32), 0..12), dsts in proptest::collection::vec(any::<u32>(), 1..20)) {
            let mut t = RoutingTable::new(16);
            let mut added = Vec::new();
            for (i, (p, len)) in routes.into_iter().enumerate() {
                let e = on_link(Ipv4Addr::from(p & mask(len)).octets(), len, i);
                if t.add(e).is_ok() { added.push(e); }
            }
            for d in dsts {
                let want = added.iter()
                    .filter(|r| d & mask(r.prefix_len) == u32::from(r.prefix))
                    .max_by_key(|r| r.prefix_len)
                    .map(|r| r.interface);
                prop_assert_eq!(t.lookup(d.into()).map(|r| r.interface), want);
            }
        }
    }
}
