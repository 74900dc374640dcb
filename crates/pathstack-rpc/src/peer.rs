//! The identity of a remote host as the RPC protocols see it: x-kernel's
//! "lower session", which names the remote host.

use pathstack_inet::MacAddr;
use std::cmp::Ordering;
use std::fmt;
use std::net::Ipv4Addr;

/// Tag of a [`PeerAddr::Ipv4`] in a [`Peer`]'s word (a MAC's is zero).
const IPV4: u64 = 1 << 48;

/// A remote host: its Ethernet address when the RPC stack runs directly
/// over `ETH` (`graphs/rpc.graph`), its IPv4 address when BLAST and BIDCTL
/// run over `IP` (`graphs/rpc-ip.graph`).
///
/// BIDCTL keeps one state machine per `Peer`, CHAN one set of channels
/// per `Peer`: the x-kernel's requirement that all messages from one host
/// arrive through one lower session and different hosts through different
/// ones.
///
/// Held as one word — the address's octets in little-endian order (a
/// plain load on the usual machines; the word is compared, never shown),
/// a MAC's in the low 48 bits, an IPv4 address's in the low 32 with bit 48 set — so that
/// comparing two peers is one integer comparison: BID's held boot ids,
/// CHAN's channel keys and the handle caches compare the peer on every
/// message (issue 26 item 7; the derived comparison of an enum over six
/// octets cost 69 instructions a round trip). The order is
/// [`PeerAddr`]'s (MAC first, then by octets), as the enum's was.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer(u64);

/// A [`Peer`]'s address, to match on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeerAddr {
    /// A host on the local Ethernet, by MAC address.
    Mac(MacAddr),
    /// A host reached through IP.
    Ipv4(Ipv4Addr),
}

impl Peer {
    /// A host on the local Ethernet, by MAC address.
    #[inline(always)]
    pub fn mac(m: MacAddr) -> Peer {
        let mut w = [0u8; 8];
        w[..6].copy_from_slice(&m.0);
        Peer(u64::from_le_bytes(w))
    }

    /// A host reached through IP.
    #[inline(always)]
    pub const fn ipv4(a: Ipv4Addr) -> Peer {
        Peer(IPV4 | u32::from_le_bytes(a.octets()) as u64)
    }

    /// The peer's address.
    #[inline]
    pub const fn addr(self) -> PeerAddr {
        let [a, b, c, d, e, f, _, _] = self.0.to_le_bytes();
        if self.0 & IPV4 != 0 {
            PeerAddr::Ipv4(Ipv4Addr::new(a, b, c, d))
        } else {
            PeerAddr::Mac(MacAddr([a, b, c, d, e, f]))
        }
    }
}

impl Ord for Peer {
    fn cmp(&self, other: &Self) -> Ordering {
        self.addr().cmp(&other.addr())
    }
}

impl PartialOrd for Peer {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl From<MacAddr> for Peer {
    fn from(m: MacAddr) -> Self {
        Peer::mac(m)
    }
}

impl From<Ipv4Addr> for Peer {
    fn from(a: Ipv4Addr) -> Self {
        Peer::ipv4(a)
    }
}

impl From<PeerAddr> for Peer {
    fn from(a: PeerAddr) -> Self {
        match a {
            PeerAddr::Mac(m) => Peer::mac(m),
            PeerAddr::Ipv4(a) => Peer::ipv4(a),
        }
    }
}

impl fmt::Debug for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr() {
            PeerAddr::Mac(m) => write!(f, "Mac({m})"),
            PeerAddr::Ipv4(a) => write!(f, "Ipv4({a})"),
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr() {
            PeerAddr::Mac(m) => write!(f, "{m}"),
            PeerAddr::Ipv4(a) => write!(f, "{a}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_gives_back_its_address() {
        let m = MacAddr([2, 0xff, 0, 0x80, 7, 1]);
        let a = Ipv4Addr::new(10, 0, 255, 9);
        assert_eq!(Peer::mac(m).addr(), PeerAddr::Mac(m));
        assert_eq!(Peer::ipv4(a).addr(), PeerAddr::Ipv4(a));
        assert_eq!(Peer::from(PeerAddr::Ipv4(a)), Peer::ipv4(a));
    }

    #[test]
    fn peers_of_different_kinds_or_octets_differ() {
        // The same low octets as a MAC and as an address are two peers.
        let m = Peer::mac(MacAddr([0, 0, 10, 0, 0, 1]));
        let a = Peer::ipv4(Ipv4Addr::new(10, 0, 0, 1));
        assert_ne!(m, a);
        assert_ne!(
            Peer::mac(MacAddr([2, 0, 0, 0, 0, 1])),
            Peer::mac(MacAddr([3, 0, 0, 0, 0, 1]))
        );
        assert_ne!(
            Peer::mac(MacAddr([2, 0, 0, 0, 0, 1])),
            Peer::mac(MacAddr([2, 0, 0, 0, 0, 2]))
        );
        assert_eq!(Peer::mac(MacAddr([0xff; 6])), Peer::mac(MacAddr::BROADCAST));
    }

    #[test]
    fn peers_order_as_the_enum_did() {
        // MACs before addresses, each by its octets.
        let mut v = vec![
            Peer::ipv4(Ipv4Addr::new(10, 0, 0, 2)),
            Peer::mac(MacAddr([0xff; 6])),
            Peer::ipv4(Ipv4Addr::new(9, 255, 255, 255)),
            Peer::mac(MacAddr([1, 0, 0, 0, 0, 0])),
        ];
        v.sort();
        let addrs: Vec<_> = v.into_iter().map(Peer::addr).collect();
        assert_eq!(
            addrs,
            vec![
                PeerAddr::Mac(MacAddr([1, 0, 0, 0, 0, 0])),
                PeerAddr::Mac(MacAddr([0xff; 6])),
                PeerAddr::Ipv4(Ipv4Addr::new(9, 255, 255, 255)),
                PeerAddr::Ipv4(Ipv4Addr::new(10, 0, 0, 2)),
            ]
        );
    }

    #[test]
    fn debug_and_display_name_the_address() {
        let m = Peer::mac(MacAddr([2, 0, 0, 0, 0, 1]));
        assert_eq!(format!("{m}"), format!("{}", MacAddr([2, 0, 0, 0, 0, 1])));
        assert!(format!("{m:?}").starts_with("Mac("));
        let a = Peer::ipv4(Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(format!("{a}"), "10.0.0.1");
        assert_eq!(format!("{a:?}"), "Ipv4(10.0.0.1)");
    }
}
