//! Initial sequence numbers per RFC 6528 §3:
//!
//! ```text
//! ISN = M + F(localip, localport, remoteip, remoteport, secretkey)
//! ```
//!
//! `M` is a timer ticking every 4 microseconds (the RFC 793 / RFC 9293
//! §3.4.1 clock) and `F` a keyed pseudorandom function, here SipHash-2-4
//! (RFC 6528 §3 suggests MD5; SipHash is the keyed PRF Linux uses for the
//! same purpose in `secure_tcp_seq`). The key is fixed at construction so
//! that tests are deterministic; a host draws it at random once per boot
//! (RFC 6528 §3: "secretkey ... SHOULD be of at least 128 bits").

use std::hash::Hasher;
use std::net::IpAddr;

use pathstack_core::Instant;
use siphasher::sip::SipHasher24;

use super::seq::SeqNumber;

/// Nanoseconds per tick of the ISN clock `M` (RFC 9293 §3.4.1: "bound to a
/// (possibly fictitious) 32-bit clock whose low order bit is incremented
/// roughly every 4 microseconds").
pub const ISN_TICK_NANOS: u64 = 4_000;

/// The connection identifiers `F` is computed over (RFC 6528 §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FourTuple {
    /// This end's address.
    pub local_ip: IpAddr,
    /// This end's port.
    pub local_port: u16,
    /// The peer's address.
    pub remote_ip: IpAddr,
    /// The peer's port.
    pub remote_port: u16,
}

/// A 128-bit secret key for SipHash-2-4 over a connection's 4-tuple:
/// what the ISN generator and the SYN-cookie codec
/// ([`super::syn_cookie`]) are keyed with. Its `Debug` never prints it.
#[derive(Clone)]
pub(super) struct TupleKey {
    k0: u64,
    k1: u64,
}

impl std::fmt::Debug for TupleKey {
    // The key is a secret: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TupleKey(..)")
    }
}

impl TupleKey {
    /// The key from `secret` (little-endian halves).
    pub(super) fn new(secret: [u8; 16]) -> Self {
        let k = u128::from_le_bytes(secret);
        TupleKey {
            k0: k as u64,
            k1: (k >> 64) as u64,
        }
    }

    /// A keyed hasher that has taken `prefix` and then the 4-tuple.
    pub(super) fn hasher(&self, prefix: &[u8], t: &FourTuple) -> SipHasher24 {
        let mut h = SipHasher24::new_with_keys(self.k0, self.k1);
        h.write(prefix);
        write_ip(&mut h, t.local_ip);
        h.write(&t.local_port.to_be_bytes());
        write_ip(&mut h, t.remote_ip);
        h.write(&t.remote_port.to_be_bytes());
        h
    }
}

/// An RFC 6528 ISN generator holding the 128-bit secret key.
///
/// Its `Debug` is the key's, which never prints the secret.
#[derive(Clone, Debug)]
pub struct IsnGenerator(TupleKey);

impl IsnGenerator {
    /// A generator keyed by the 128-bit `secret` (little-endian halves).
    pub fn new(secret: [u8; 16]) -> Self {
        IsnGenerator(TupleKey::new(secret))
    }

    /// `F(localip, localport, remoteip, remoteport, secretkey)`: the keyed
    /// hash of the 4-tuple, truncated to 32 bits.
    pub fn offset(&self, t: &FourTuple) -> u32 {
        self.0.hasher(&[], t).finish() as u32
    }

    /// The clock component `M` at `now`: `now` in 4 µs ticks, modulo 2^32
    /// (it wraps every ~4.77 hours, as the RFC's clock does).
    pub fn clock(now: Instant) -> u32 {
        (now.as_nanos() / ISN_TICK_NANOS) as u32
    }

    /// The ISN for a connection on `t` opened at `now` (RFC 6528 §3).
    pub fn isn(&self, t: &FourTuple, now: Instant) -> SeqNumber {
        SeqNumber(Self::clock(now)) + self.offset(t)
    }
}

/// Feeds an address with a family tag, so that a v4 address and the
/// v4-mapped v6 address do not collide by construction.
fn write_ip(h: &mut SipHasher24, ip: IpAddr) {
    match ip {
        IpAddr::V4(a) => {
            h.write_u8(4);
            h.write(&a.octets());
        }
        IpAddr::V6(a) => {
            h.write_u8(6);
            h.write(&a.octets());
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use pathstack_core::Duration;
    use proptest::prelude::*;
    use std::net::Ipv4Addr;

    const KEY: [u8; 16] = *b"pathstack-secret";

    /// The connection the tests of this module and of SYN cookies use:
    /// 10.0.0.1:80 (ours) with 10.0.0.2:`rport`.
    pub(in crate::tcp) fn tuple(rport: u16) -> FourTuple {
        FourTuple {
            local_ip: Ipv4Addr::new(10, 0, 0, 1).into(),
            local_port: 80,
            remote_ip: Ipv4Addr::new(10, 0, 0, 2).into(),
            remote_port: rport,
        }
    }

    #[test]
    fn deterministic_for_a_key() {
        let a = IsnGenerator::new(KEY);
        let b = IsnGenerator::new(KEY);
        let now = Instant::from_millis(1234);
        assert_eq!(a.isn(&tuple(40000), now), b.isn(&tuple(40000), now));
    }

    #[test]
    fn different_keys_give_different_isns() {
        let mut other = KEY;
        other[0] ^= 1;
        let t = tuple(40000);
        assert_ne!(
            IsnGenerator::new(KEY).offset(&t),
            IsnGenerator::new(other).offset(&t)
        );
    }

    #[test]
    fn same_tuple_advances_with_the_clock() {
        let g = IsnGenerator::new(KEY);
        let t = tuple(40000);
        let t0 = Instant::from_millis(5);
        let base = g.isn(&t, t0);
        // 4 µs is one tick; 1 s is 250,000 ticks (RFC 9293 §3.4.1).
        assert_eq!(g.isn(&t, t0 + Duration::from_micros(4)) - base, 1);
        assert_eq!(g.isn(&t, t0 + Duration::from_micros(3)) - base, 0);
        assert_eq!(g.isn(&t, t0 + Duration::from_secs(1)) - base, 250_000);
    }

    #[test]
    fn clock_wraps_modulo_2_32() {
        let wrap = Instant::from_nanos((1u64 << 32) * ISN_TICK_NANOS);
        assert_eq!(IsnGenerator::clock(wrap), 0);
    }

    #[test]
    fn neighbouring_ports_are_unrelated() {
        // Adjacent 4-tuples: the offsets should not be adjacent (or equal);
        // with a 32-bit PRF a collision among 1,000 is ~1e-4 likely, and the
        // key is fixed, so this is deterministic.
        let g = IsnGenerator::new(KEY);
        let offs: Vec<u32> = (40000..41000).map(|p| g.offset(&tuple(p))).collect();
        for w in offs.windows(2) {
            let d = w[1].wrapping_sub(w[0]);
            assert!(d > 1 << 16 && d < u32::MAX - (1 << 16), "{w:?}");
        }
        let mut sorted = offs.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), offs.len());
    }

    #[test]
    fn debug_hides_the_key() {
        let s = format!("{:?}", IsnGenerator::new(KEY));
        assert!(!s.contains("k0") && !s.contains(&format!("{}", u64::from_le_bytes(*b"pathstac"))));
    }

    proptest! {
        /// Swapping the ends changes F: the two directions of a connection
        /// are different 4-tuples.
        #[test]
        fn direction_matters(lp: u16, rp: u16, la: u32, ra: u32) {
            prop_assume!((la, lp) != (ra, rp));
            let g = IsnGenerator::new(KEY);
            let t = FourTuple {
                local_ip: Ipv4Addr::from(la).into(),
                local_port: lp,
                remote_ip: Ipv4Addr::from(ra).into(),
                remote_port: rp,
            };
            let rev = FourTuple {
                local_ip: t.remote_ip,
                local_port: t.remote_port,
                remote_ip: t.local_ip,
                remote_port: t.local_port,
            };
            // 2^-32 chance per case of a true collision; fixed key makes
            // any failure reproducible rather than flaky.
            prop_assert_ne!(g.offset(&t), g.offset(&rev));
        }

        /// For a fixed tuple the ISN is exactly the offset plus the clock.
        #[test]
        fn isn_is_clock_plus_offset(ns: u64, rp: u16) {
            let g = IsnGenerator::new(KEY);
            let t = tuple(rp);
            let now = Instant::from_nanos(ns);
            prop_assert_eq!(
                g.isn(&t, now) - SeqNumber(g.offset(&t)),
                IsnGenerator::clock(now)
            );
        }
    }
}
