//! SYN cookies (RFC 4987 §3.6), encoded as Linux encodes them
//! (`net/ipv4/syncookies.c`).
//!
//! A listener whose SYN queue is full cannot keep a half-open connection
//! for every SYN without letting a SYN flood exhaust its memory. With SYN
//! cookies it keeps *nothing*: the little state a connection needs before
//! the handshake completes is folded into the initial sequence number of
//! the SYN-ACK (the "cookie"), and the client hands it back, plus one, in
//! the acknowledgment number of the third segment. The listener then
//! checks that the cookie is its own, recent and for this 4-tuple and
//! client ISN, and only then creates the connection (RFC 4987 §3.6).
//!
//! The cookie, as Linux's `secure_tcp_syn_cookie` builds it:
//!
//! ```text
//! cookie = H1(tuple) + client_isn + (count << 24)
//!        + ((H2(tuple, count) + mss_index) mod 2^24)
//! ```
//!
//! * `H1`, `H2` are keyed hashes (SipHash-2-4, as Linux's `cookie_hash`)
//!   with different domains; `H1` hides the counter, `H2` authenticates it
//!   and the data;
//! * `count` is a counter that ticks every [`COOKIE_PERIOD`] (Linux's
//!   `tcp_cookie_time`, one minute); its low 8 bits ride in the top byte;
//! * `mss_index` picks the client's MSS from a four-entry table
//!   ([`MSS_TABLE_V4`], [`MSS_TABLE_V6`]): the only option the cookie
//!   itself can carry.
//!
//! The rest of the SYN's options would be lost. Linux saves the window
//! scale and SACK-permitted in the low 6 bits of the SYN-ACK's TSval when
//! the client sent timestamps (`cookie_init_timestamp`); the client echoes
//! the TSval as the ACK's TSecr and the listener decodes it
//! (`cookie_timestamp_decode`): see [`encode_timestamp`],
//! [`decode_timestamp`]. Without timestamps, window scaling and SACK are
//! simply off for that connection, as on Linux.
//!
//! Everything here is pure, allocation-free and driven by an explicit
//! `now`; the TCP module decides when cookies are in use (when the SYN
//! queue is full) and parses and builds the segments.

use std::hash::Hasher;

use pathstack_core::{Duration, Instant};

use super::isn::{FourTuple, TupleKey};
use super::seq::SeqNumber;

/// How often the cookie counter ticks: Linux's `TCP_SYNCOOKIE_PERIOD`
/// (`60 * HZ`), the period of `tcp_cookie_time`.
pub const COOKIE_PERIOD: Duration = Duration::from_secs(60);

/// A cookie is accepted while `current count - cookie count` is below this
/// (Linux's `MAX_SYNCOOKIE_AGE`): it stays valid for at least one and at
/// most two [`COOKIE_PERIOD`]s, depending on when in its period it was made.
pub const MAX_COOKIE_AGE: u32 = 2;

/// Bits of the cookie below the counter (Linux's `COOKIEBITS`).
const COOKIE_BITS: u32 = 24;
/// Mask of the hashed data part (Linux's `COOKIEMASK`).
const COOKIE_MASK: u32 = (1 << COOKIE_BITS) - 1;

/// The MSS values an IPv4 cookie can carry (Linux's `msstab` in
/// `syncookies.c`), ascending; the index into it is the cookie's data.
pub const MSS_TABLE_V4: [u16; 4] = [536, 1300, 1440, 1460];

/// The MSS values an IPv6 cookie can carry (Linux's `msstab` in
/// `net/ipv6/syncookies.c`: 1280, 1480, 1500 and 9000 less 60 bytes of
/// headers), ascending.
pub const MSS_TABLE_V6: [u16; 4] = [1280 - 60, 1480 - 60, 1500 - 60, 9000 - 60];

/// Low bits of the TSval that carry options (Linux's `TSBITS`).
pub const TS_OPTION_BITS: u32 = 6;
/// The window-scale field of the TSval's option bits; all ones means "no
/// window scaling" (Linux's `TS_OPT_WSCALE_MASK`).
const TS_OPT_WSCALE_MASK: u32 = 0xf;
/// SACK permitted (Linux's `TS_OPT_SACK`).
const TS_OPT_SACK: u32 = 1 << 4;
/// ECN (Linux's `TS_OPT_ECN`); never set by this stack.
const TS_OPT_ECN: u32 = 1 << 5;
/// The largest window shift (RFC 7323 §2.3); Linux's `TCP_MAX_WSCALE`.
const MAX_WSCALE: u8 = 14;

/// Why the ACK of a third segment does not carry a valid cookie.
///
/// A forged or mangled cookie decodes to a random counter, so it usually
/// shows up as [`Expired`](Self::Expired); the two are told apart only for
/// diagnostics, and both mean "drop (or reset) the segment, create
/// nothing".
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CookieError {
    /// The counter in the cookie is not one of the last [`MAX_COOKIE_AGE`]
    /// minutes: the cookie is too old, from the future, or not ours.
    #[error("SYN cookie expired or not ours (counter out of range)")]
    Expired,
    /// The counter is recent but the hashed data does not decode to an
    /// MSS-table index: the cookie is not ours for this 4-tuple and ISN.
    #[error("SYN cookie invalid for this 4-tuple and sequence number")]
    Invalid,
}

/// The SYN options a cookie connection can restore from the timestamp
/// echo (Linux's `cookie_timestamp_decode`). The default is "neither",
/// what a connection gets when the client did not use timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CookieOptions {
    /// The client's window-scale shift (RFC 7323 §2.3), `None` if it sent
    /// no Window Scale option. Shifts above 14 are encoded as 14.
    pub wscale: Option<u8>,
    /// Whether the client sent SACK-Permitted (RFC 2018 §2).
    pub sack_permitted: bool,
}

/// A stateless SYN-cookie codec holding the 128-bit secret key.
///
/// The key should be drawn at random once per boot and be independent of
/// the [`IsnGenerator`](super::isn::IsnGenerator)'s (Linux keeps a
/// separate `syncookie_secret`); it is fixed at construction so that tests
/// are deterministic.
///
/// Its `Debug` is the key's, which never prints the secret.
#[derive(Clone, Debug)]
pub struct SynCookies(TupleKey);

impl SynCookies {
    /// A codec keyed by the 128-bit `secret` (little-endian halves).
    pub fn new(secret: [u8; 16]) -> Self {
        SynCookies(TupleKey::new(secret))
    }

    /// The cookie counter at `now`: whole [`COOKIE_PERIOD`]s since the
    /// origin, modulo 2^32 (Linux's `tcp_cookie_time`). Only its low 8
    /// bits travel in the cookie.
    pub fn counter(now: Instant) -> u32 {
        (now.as_nanos() / COOKIE_PERIOD.as_nanos()) as u32
    }

    /// The MSS table for the tuple's address family: [`MSS_TABLE_V4`] or
    /// [`MSS_TABLE_V6`] (Linux keeps one per family).
    pub fn mss_table(tuple: &FourTuple) -> &'static [u16; 4] {
        if tuple.remote_ip.is_ipv4() {
            &MSS_TABLE_V4
        } else {
            &MSS_TABLE_V6
        }
    }

    /// The ISS for a SYN-ACK sent in place of keeping a half-open
    /// connection, and the MSS it encodes (RFC 4987 §3.6; Linux's
    /// `__cookie_v4_init_sequence`).
    ///
    /// Used when the SYN queue is full: instead of storing the SYN's
    /// state, the listener sends this ISS and forgets the SYN, so a flood
    /// of spoofed SYNs costs it no memory. `client_isn` is the SYN's
    /// sequence number, `mss` the MSS it announced (536 if it sent none,
    /// RFC 9293 §3.7.1). The MSS that survives is the largest table entry
    /// not above `mss` (the smallest entry if `mss` is below them all, as
    /// Linux does); announce and use *that* one, since it is what
    /// [`check_ack`](Self::check_ack) will restore.
    pub fn syn_ack_iss(
        &self,
        tuple: &FourTuple,
        client_isn: SeqNumber,
        mss: u16,
        now: Instant,
    ) -> (SeqNumber, u16) {
        let table = Self::mss_table(tuple);
        // Linux: `for (mssind = ARRAY_SIZE(msstab) - 1; mssind; mssind--)
        // if (mss >= msstab[mssind]) break;`
        let index = (1..table.len())
            .rev()
            .find(|&i| mss >= table[i])
            .unwrap_or(0);
        let cookie = self.cookie(tuple, client_isn, Self::counter(now), index as u32);
        (SeqNumber(cookie), table[index])
    }

    /// Validates the ACK that completes a cookie handshake and returns the
    /// MSS the cookie carried (RFC 4987 §3.6; Linux's `__cookie_v4_check`).
    ///
    /// Since the listener kept no state for the SYN, the third segment is
    /// all it has: `ack_seq` and `ack_ack` are that segment's SEG.SEQ and
    /// SEG.ACK, so the client's ISN is `ack_seq - 1` and the cookie is
    /// `ack_ack - 1`. The cookie is accepted if it was made for this
    /// 4-tuple and client ISN by this key less than [`MAX_COOKIE_AGE`]
    /// counter ticks ago; then (and only then) the caller creates the
    /// connection with ISS = `ack_ack - 1`, the returned MSS, and the
    /// options of [`decode_timestamp`] if the segment carries timestamps.
    ///
    /// As on Linux, the MSS index is authenticated only together with the
    /// counter: an acknowledgment 1 to 3 short of the right one, or a
    /// sequence number 1 to 3 past it, decodes to a lower table entry
    /// (while there is one) instead of failing.
    /// That gives nothing away, since producing it takes the valid cookie.
    pub fn check_ack(
        &self,
        tuple: &FourTuple,
        ack_seq: SeqNumber,
        ack_ack: SeqNumber,
        now: Instant,
    ) -> Result<u16, CookieError> {
        let client_isn = SeqNumber(ack_seq.0.wrapping_sub(1));
        let cookie = ack_ack.0.wrapping_sub(1);
        let index = self.check_cookie(tuple, client_isn, cookie, Self::counter(now))?;
        Self::mss_table(tuple)
            .get(index as usize)
            .copied()
            .ok_or(CookieError::Invalid)
    }

    /// Linux's `secure_tcp_syn_cookie`: the cookie for `data` (< 2^24) at
    /// counter `count`.
    fn cookie(&self, tuple: &FourTuple, client_isn: SeqNumber, count: u32, data: u32) -> u32 {
        self.hash(tuple, 0, 0)
            .wrapping_add(client_isn.0)
            .wrapping_add(count << COOKIE_BITS)
            .wrapping_add(self.hash(tuple, count, 1).wrapping_add(data) & COOKIE_MASK)
    }

    /// Linux's `check_tcp_syn_cookie`: the data of `cookie` if its counter
    /// is within [`MAX_COOKIE_AGE`] of `count`. The data is not checked
    /// here; a wrong cookie yields a random 24-bit value.
    fn check_cookie(
        &self,
        tuple: &FourTuple,
        client_isn: SeqNumber,
        cookie: u32,
        count: u32,
    ) -> Result<u32, CookieError> {
        // Strip H1 and the ISN: what is left is (count << 24) + hashed data.
        let rest = cookie.wrapping_sub(self.hash(tuple, 0, 0).wrapping_add(client_isn.0));
        // Age in ticks, modulo the 8 bits that travel; a cookie from the
        // future comes out as 255 and fails too.
        let age = count.wrapping_sub(rest >> COOKIE_BITS) & (u32::MAX >> COOKIE_BITS);
        if age >= MAX_COOKIE_AGE {
            return Err(CookieError::Expired);
        }
        let made = count.wrapping_sub(age);
        Ok(rest.wrapping_sub(self.hash(tuple, made, 1)) & COOKIE_MASK)
    }

    /// Linux's `cookie_hash`: SipHash-2-4 of the 4-tuple and `count`, in
    /// domain `domain` (Linux uses two keys; one key and a domain byte is
    /// the same for a PRF), truncated to 32 bits.
    fn hash(&self, t: &FourTuple, count: u32, domain: u8) -> u32 {
        let mut h = self.0.hasher(&[domain], t);
        h.write(&count.to_be_bytes());
        h.finish() as u32
    }
}

/// The TSval of a cookie SYN-ACK carrying `opts` in its low
/// [`TS_OPTION_BITS`] bits (Linux's `cookie_init_timestamp`).
///
/// Only for a client that sent the Timestamps option (RFC 7323 §3.2): it
/// echoes the TSval as the TSecr of its ACK, which is how the window scale
/// and SACK-permitted survive the listener keeping no state. Bits 0–3 hold
/// the window shift (0xf = none), bit 4 SACK-permitted, bit 5 ECN (always
/// clear here). The other bits are `now_ts`'s; if that would put the TSval
/// ahead of `now_ts` it is moved back one step of 2^6, so the TSval is
/// never ahead of the clock the connection later stamps with, and the
/// timestamps the peer sees never run backwards (RFC 7323 §5.4). The
/// comparison is modulo 2^32, as timestamps are.
pub fn encode_timestamp(now_ts: u32, opts: CookieOptions) -> u32 {
    let mut bits = opts
        .wscale
        .map_or(TS_OPT_WSCALE_MASK, |w| u32::from(w.min(MAX_WSCALE)));
    if opts.sack_permitted {
        bits |= TS_OPT_SACK;
    }
    let ts = (now_ts >> TS_OPTION_BITS << TS_OPTION_BITS) | bits;
    if ts > now_ts {
        ts.wrapping_sub(1 << TS_OPTION_BITS)
    } else {
        ts
    }
}

/// The options carried by the TSecr of a cookie handshake's ACK (Linux's
/// `cookie_timestamp_decode`), or `None` if the echo cannot be one of ours.
///
/// Call only when the ACK carries the Timestamps option; without it the
/// connection gets [`CookieOptions::default()`] (no window scaling, no
/// SACK), as on Linux. `None` when the ECN bit is set: this stack never
/// encodes ECN, so (like Linux's `cookie_ecn_ok` with ECN off) the segment
/// is refused.
pub fn decode_timestamp(tsecr: u32) -> Option<CookieOptions> {
    if tsecr & TS_OPT_ECN != 0 {
        return None;
    }
    let wscale = tsecr & TS_OPT_WSCALE_MASK;
    Some(CookieOptions {
        wscale: (wscale != TS_OPT_WSCALE_MASK).then_some(wscale as u8),
        sack_permitted: tsecr & TS_OPT_SACK != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::isn::tests::tuple;
    use proptest::prelude::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    const KEY: [u8; 16] = *b"cookie-secret-16";

    fn tuple6(rport: u16) -> FourTuple {
        FourTuple {
            local_ip: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).into(),
            local_port: 443,
            remote_ip: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2).into(),
            remote_port: rport,
        }
    }

    /// What the client's third segment carries: SEG.SEQ = ISN + 1,
    /// SEG.ACK = cookie + 1.
    fn ack_of(client_isn: SeqNumber, iss: SeqNumber) -> (SeqNumber, SeqNumber) {
        (client_isn + 1, iss + 1)
    }

    /// The ACK (its sequence and acknowledgment numbers) of the SYN-ACK
    /// `c` would send for `isn` and `mss` at `now`, with bit `bit` of the
    /// cookie flipped on the way; and the MSS the cookie encoded.
    fn ack_of_flipped_cookie(
        c: &SynCookies,
        t: &FourTuple,
        isn: u32,
        mss: u16,
        now: Instant,
        bit: u32,
    ) -> (SeqNumber, SeqNumber, u16) {
        let (iss, encoded) = c.syn_ack_iss(t, SeqNumber(isn), mss, now);
        let (seq, ack) = ack_of(SeqNumber(isn), SeqNumber(iss.0 ^ (1 << bit)));
        (seq, ack, encoded)
    }

    /// The table entry Linux would pick for `mss`.
    fn expected_mss(table: &[u16; 4], mss: u16) -> u16 {
        table
            .iter()
            .copied()
            .filter(|&m| m <= mss)
            .max()
            .unwrap_or(table[0])
    }

    fn minutes(m: u64) -> Duration {
        Duration::from_secs(60 * m)
    }

    #[test]
    fn round_trip_every_table_mss_and_between() {
        let c = SynCookies::new(KEY);
        let now = Instant::ZERO + minutes(1000);
        let isn = SeqNumber(0x1234_5678);
        let mut seen = [0usize; 8];
        for (t, table) in [
            (tuple(40000), &MSS_TABLE_V4),
            (tuple6(40000), &MSS_TABLE_V6),
        ] {
            for mss in (0..=10_000u16).chain([u16::MAX - 1, u16::MAX]) {
                let (iss, encoded) = c.syn_ack_iss(&t, isn, mss, now);
                assert_eq!(encoded, expected_mss(table, mss), "mss {mss}");
                let (seq, ack) = ack_of(isn, iss);
                assert_eq!(c.check_ack(&t, seq, ack, now), Ok(encoded), "mss {mss}");
                let slot = table.iter().position(|&m| m == encoded).unwrap();
                seen[slot + if t.remote_ip.is_ipv4() { 0 } else { 4 }] += 1;
            }
            for &m in table {
                assert_eq!(c.syn_ack_iss(&t, isn, m, now).1, m, "exact entry {m}");
            }
        }
        // Every entry of both tables was produced and restored.
        assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    }

    #[test]
    fn table_choice_is_linuxs() {
        let c = SynCookies::new(KEY);
        let t = tuple(1);
        let pick = |mss| c.syn_ack_iss(&t, SeqNumber(0), mss, Instant::ZERO).1;
        assert_eq!(pick(0), 536);
        assert_eq!(pick(535), 536);
        assert_eq!(pick(536), 536);
        assert_eq!(pick(1299), 536);
        assert_eq!(pick(1300), 1300);
        assert_eq!(pick(1459), 1440);
        assert_eq!(pick(1460), 1460);
        assert_eq!(pick(9000), 1460);
        let t6 = tuple6(1);
        assert_eq!(
            c.syn_ack_iss(&t6, SeqNumber(0), 1440, Instant::ZERO).1,
            1440
        );
        assert_eq!(
            c.syn_ack_iss(&t6, SeqNumber(0), 9000, Instant::ZERO).1,
            8940
        );
    }

    #[test]
    fn wrong_ack_tuple_or_isn_is_rejected() {
        let c = SynCookies::new(KEY);
        let now = Instant::ZERO + minutes(7) + Duration::from_secs(3);
        let t = tuple(40000);
        let isn = SeqNumber(0xdead_beef);
        let (iss, _) = c.syn_ack_iss(&t, isn, 1460, now);
        let (seq, ack) = ack_of(isn, iss);
        assert_eq!(c.check_ack(&t, seq, ack, now), Ok(1460));

        // Wrong acknowledgment number, off by small and large amounts
        // (1460 is the last index, 3: see `small_ack_shortfall_lowers_the_mss`
        // for the offsets -1..=-3 that are not caught).
        for delta in [
            1u32,
            2,
            3,
            4,
            1 << 10,
            1 << 24,
            1 << 31,
            0u32.wrapping_sub(4),
        ] {
            assert!(
                c.check_ack(&t, seq, ack + delta, now).is_err(),
                "ack +{delta}"
            );
        }
        // Wrong client ISN (a sequence number 1..=3 too high is the mirror
        // of an acknowledgment 1..=3 short: not caught, see below).
        for delta in [u32::MAX, u32::MAX - 1, 4, 1 << 8, 1 << 24, 1 << 31] {
            assert!(
                c.check_ack(&t, seq + delta, ack, now).is_err(),
                "seq +{delta}"
            );
        }
        // Wrong 4-tuple, one field at a time.
        let others = [
            FourTuple {
                remote_port: 40001,
                ..t
            },
            FourTuple {
                local_port: 81,
                ..t
            },
            FourTuple {
                remote_ip: Ipv4Addr::new(10, 0, 0, 3).into(),
                ..t
            },
            FourTuple {
                local_ip: Ipv4Addr::new(10, 0, 0, 9).into(),
                ..t
            },
            FourTuple {
                local_ip: t.remote_ip,
                local_port: t.remote_port,
                remote_ip: t.local_ip,
                remote_port: t.local_port,
            },
        ];
        for o in others {
            assert!(c.check_ack(&o, seq, ack, now).is_err(), "{o:?}");
        }
        // Another key.
        let mut other_key = KEY;
        other_key[15] ^= 0x80;
        assert!(SynCookies::new(other_key)
            .check_ack(&t, seq, ack, now)
            .is_err());
    }

    #[test]
    fn small_ack_shortfall_lowers_the_mss() {
        // Linux's cookie adds the MSS index to the hash, unauthenticated
        // on its own: an acknowledgment 1..=3 short decodes to a lower
        // index while one is left. Pinned here so that the TCP module does
        // not rely on more (it costs no security: the sender still needs
        // the valid cookie).
        let c = SynCookies::new(KEY);
        let now = Instant::ZERO + minutes(4);
        let t = tuple(40000);
        let isn = SeqNumber(99);
        let (iss, mss) = c.syn_ack_iss(&t, isn, 1460, now);
        assert_eq!(mss, 1460);
        let (seq, ack) = ack_of(isn, iss);
        let short = |d: u32| c.check_ack(&t, seq, SeqNumber(ack.0.wrapping_sub(d)), now);
        assert_eq!(short(1), Ok(1440));
        assert_eq!(short(2), Ok(1300));
        assert_eq!(short(3), Ok(536));
        assert_eq!(short(4), Err(CookieError::Invalid));
        // From the smallest entry there is nothing lower: every shortfall
        // fails.
        let (iss, mss) = c.syn_ack_iss(&t, isn, 536, now);
        assert_eq!(mss, 536);
        for d in 1..=4 {
            assert_eq!(
                c.check_ack(&t, seq, iss + 1 + 0u32.wrapping_sub(d), now),
                Err(CookieError::Invalid)
            );
        }
    }

    #[test]
    fn a_random_ack_almost_never_passes() {
        // A blind attacker guessing SEG.ACK: of 100,000 guesses next to a
        // valid cookie none decodes (each passes with probability
        // 2/256 * 4/2^24 ≈ 2^-29; the key is fixed, so this is
        // deterministic).
        let c = SynCookies::new(KEY);
        let t = tuple(5555);
        let now = Instant::ZERO + minutes(3);
        let isn = SeqNumber(42);
        let (iss, _) = c.syn_ack_iss(&t, isn, 1460, now);
        let mut expired = 0;
        for i in 1..=100_000u32 {
            let guess = iss + 1 + i.wrapping_mul(0x9e37_79b9);
            match c.check_ack(&t, isn + 1, guess, now) {
                Err(CookieError::Expired) => expired += 1,
                Err(CookieError::Invalid) => {}
                Ok(m) => panic!("guess {i} accepted with mss {m}"),
            }
        }
        // Most guesses fail on the counter, as Linux's check does first.
        assert!(expired > 95_000, "{expired}");
    }

    #[test]
    fn cookie_lives_one_to_two_minutes() {
        let c = SynCookies::new(KEY);
        let t = tuple(40000);
        let isn = SeqNumber(7);
        let start = Instant::ZERO + minutes(10);

        // Made at the start of a period: valid through the end of the next.
        let (iss, _) = c.syn_ack_iss(&t, isn, 1300, start);
        let (seq, ack) = ack_of(isn, iss);
        for age in [
            Duration::ZERO,
            Duration::from_secs(1),
            Duration::from_secs(59),
            minutes(1),
            Duration::from_millis(2 * 60_000 - 1),
        ] {
            assert_eq!(
                c.check_ack(&t, seq, ack, start + age),
                Ok(1300),
                "age {age}"
            );
        }
        for age in [minutes(2), minutes(3), minutes(100), minutes(255)] {
            assert_eq!(
                c.check_ack(&t, seq, ack, start + age),
                Err(CookieError::Expired),
                "age {age}"
            );
        }
        // 256 and 257 minutes on, the 8 counter bits in the cookie come
        // round to "fresh" again, but H2 is keyed by the full counter, so
        // the data decodes to a random 24-bit value and is refused.
        for age in [minutes(256), minutes(257)] {
            assert_eq!(
                c.check_ack(&t, seq, ack, start + age),
                Err(CookieError::Invalid),
                "age {age}"
            );
        }
        // From the future (clock went back, or a cookie never ours).
        assert_eq!(
            c.check_ack(&t, seq, ack, Instant::from_nanos(start.as_nanos() - 1)),
            Err(CookieError::Expired)
        );

        // Made at the very end of a period: it lives just over one minute.
        let late = start + Duration::from_millis(60_000 - 1);
        let (iss, _) = c.syn_ack_iss(&t, isn, 1300, late);
        let (seq, ack) = ack_of(isn, iss);
        assert_eq!(
            c.check_ack(&t, seq, ack, late + Duration::from_millis(1)),
            Ok(1300)
        );
        assert_eq!(c.check_ack(&t, seq, ack, late + minutes(1)), Ok(1300));
        assert_eq!(
            c.check_ack(&t, seq, ack, late + Duration::from_millis(60_000 + 1)),
            Err(CookieError::Expired)
        );
    }

    #[test]
    fn counter_ticks_every_period() {
        assert_eq!(SynCookies::counter(Instant::ZERO), 0);
        assert_eq!(
            SynCookies::counter(Instant::ZERO + Duration::from_secs(59)),
            0
        );
        assert_eq!(SynCookies::counter(Instant::ZERO + minutes(1)), 1);
        assert_eq!(SynCookies::counter(Instant::ZERO + minutes(300)), 300);
    }

    #[test]
    fn counter_wraps_in_the_cookie() {
        // Only 8 bits of the counter travel: around a wrap of those bits
        // (count 255 -> 256) a fresh cookie still checks.
        let c = SynCookies::new(KEY);
        let t = tuple(1);
        let made = Instant::ZERO + minutes(255) + Duration::from_secs(30);
        let (iss, _) = c.syn_ack_iss(&t, SeqNumber(1), 1440, made);
        let (seq, ack) = ack_of(SeqNumber(1), iss);
        assert_eq!(c.check_ack(&t, seq, ack, made + minutes(1)), Ok(1440));
        assert_eq!(
            c.check_ack(&t, seq, ack, made + minutes(2)),
            Err(CookieError::Expired)
        );
    }

    #[test]
    fn timestamp_options_round_trip() {
        let nows = [
            0u32,
            1,
            5,
            63,
            64,
            65,
            1000,
            0x7fff_ffff,
            0x8000_0040,
            u32::MAX,
        ];
        let mut checked = 0;
        for now_ts in nows {
            for wscale in (0..=14u8).map(Some).chain([None]) {
                for sack_permitted in [false, true] {
                    let opts = CookieOptions {
                        wscale,
                        sack_permitted,
                    };
                    let ts = encode_timestamp(now_ts, opts);
                    assert_eq!(decode_timestamp(ts), Some(opts), "{now_ts} {opts:?}");
                    // Never ahead of the clock, at most one step behind
                    // (modulo 2^32, as timestamps compare).
                    let behind = now_ts.wrapping_sub(ts);
                    assert!(behind < 1 << TS_OPTION_BITS, "{now_ts} {ts}");
                    if now_ts >= 1 << TS_OPTION_BITS {
                        assert!(ts <= now_ts, "{now_ts} {ts}");
                    }
                    // The high bits are the clock's, or one step less.
                    let hi = ts >> TS_OPTION_BITS;
                    let now_hi = now_ts >> TS_OPTION_BITS;
                    let steps = now_hi.wrapping_sub(hi) & (u32::MAX >> TS_OPTION_BITS);
                    assert!(steps <= 1, "{now_ts} {ts}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, nows.len() * 16 * 2);
    }

    #[test]
    fn timestamp_layout_is_linuxs() {
        let none = CookieOptions::default();
        assert_eq!(encode_timestamp(0x1000, none) & 0x3f, 0xf);
        let o = CookieOptions {
            wscale: Some(7),
            sack_permitted: true,
        };
        assert_eq!(encode_timestamp(0x1000 + 0x3f, o), 0x1000 | 0x10 | 7);
        // Options above the clock's low bits: one step back.
        assert_eq!(encode_timestamp(0x1000, o), 0x1000 - 0x40 + 0x17);
        // Shifts above 14 are clamped (RFC 7323 §2.3).
        let big = CookieOptions {
            wscale: Some(200),
            sack_permitted: false,
        };
        assert_eq!(
            decode_timestamp(encode_timestamp(1 << 20, big))
                .unwrap()
                .wscale,
            Some(14)
        );
    }

    #[test]
    fn timestamp_with_ecn_is_refused() {
        let ts = encode_timestamp(123_456, CookieOptions::default());
        assert_eq!(ts & TS_OPT_ECN, 0);
        assert_eq!(decode_timestamp(ts | TS_OPT_ECN), None);
        assert!(decode_timestamp(ts).is_some());
    }

    #[test]
    fn debug_hides_the_key() {
        let s = format!("{:?}", SynCookies::new(KEY));
        assert!(s.starts_with("SynCookies"));
        assert!(!s.contains("k0") && !s.contains(&format!("{}", u64::from_le_bytes(*b"cookie-s"))));
    }

    #[test]
    fn errors_display() {
        assert!(CookieError::Expired.to_string().contains("expired"));
        assert!(CookieError::Invalid.to_string().contains("invalid"));
    }

    fn any_tuple() -> impl Strategy<Value = FourTuple> {
        (
            any::<bool>(),
            any::<u128>(),
            any::<u16>(),
            any::<u128>(),
            any::<u16>(),
        )
            .prop_map(|(v6, l, local_port, r, remote_port)| {
                // Both ends of one family, as on the wire.
                let ip = |a: u128| -> IpAddr {
                    if v6 {
                        Ipv6Addr::from(a).into()
                    } else {
                        Ipv4Addr::from(a as u32).into()
                    }
                };
                FourTuple {
                    local_ip: ip(l),
                    local_port,
                    remote_ip: ip(r),
                    remote_port,
                }
            })
    }

    proptest! {
        /// Any tuple, ISN, MSS and time: the cookie checks, within one
        /// period, to the MSS it announced.
        #[test]
        fn prop_round_trip(
            t in any_tuple(),
            isn: u32,
            mss: u16,
            now_ns in 0u64..(1u64 << 62),
            later_ns in 0u64..60_000_000_000,
        ) {
            let c = SynCookies::new(KEY);
            let now = Instant::from_nanos(now_ns);
            let (iss, encoded) = c.syn_ack_iss(&t, SeqNumber(isn), mss, now);
            prop_assert_eq!(encoded, expected_mss(SynCookies::mss_table(&t), mss));
            let (seq, ack) = ack_of(SeqNumber(isn), iss);
            prop_assert_eq!(c.check_ack(&t, seq, ack, now), Ok(encoded));
            let later = now + Duration::from_nanos(later_ns);
            prop_assert_eq!(c.check_ack(&t, seq, ack, later), Ok(encoded));
        }

        /// Flipping any one of the cookie's bits 2..=31 is rejected.
        ///
        /// Why: after H1 and the ISN are stripped, a flip adds ±2^bit.
        /// Bits 25..=31 move the counter by ±2^k, k ≥ 1, out of the 2-tick
        /// window: always rejected. Bits 2..=23 without a carry into the
        /// counter leave the counter and H2 unchanged and move the data by
        /// ±2^bit, out of 0..=3: always rejected. Bit 24, or a carry, moves
        /// the counter by one; if still in the window, the data is
        /// rehashed under another counter and is a random 24-bit value,
        /// accepted with probability 4/2^24 = 2^-22 per case. Bits 0 and 1
        /// are not authenticated beyond that (also true of Linux): a flip
        /// there moves the MSS index by ±1 or ±2 and may land on another
        /// table entry; see `prop_low_bit_flip_changes_the_mss`.
        #[test]
        fn prop_bit_flip_is_rejected(
            t in any_tuple(),
            isn: u32,
            mss: u16,
            now_ns in 0u64..(1u64 << 62),
            bit in 2u32..32,
        ) {
            let (c, now) = (SynCookies::new(KEY), Instant::from_nanos(now_ns));
            let (seq, ack, _) = ack_of_flipped_cookie(&c, &t, isn, mss, now, bit);
            prop_assert!(c.check_ack(&t, seq, ack, now).is_err());
        }

        /// A flip of bit 0 or 1 never restores the original MSS silently:
        /// either it is rejected or (no carry) it decodes to another index.
        /// The residual case, a carry into the counter and a random match
        /// of the same index, has probability 2^-24 per case.
        #[test]
        fn prop_low_bit_flip_changes_the_mss(
            t in any_tuple(),
            isn: u32,
            mss: u16,
            now_ns in 0u64..(1u64 << 62),
            bit in 0u32..2,
        ) {
            let (c, now) = (SynCookies::new(KEY), Instant::from_nanos(now_ns));
            let (seq, ack, encoded) = ack_of_flipped_cookie(&c, &t, isn, mss, now, bit);
            // Rejected, or accepted with another MSS: never the original.
            prop_assert_ne!(c.check_ack(&t, seq, ack, now), Ok(encoded));
        }

        /// A timestamp carries any options and never gets ahead of the
        /// clock (modulo 2^32).
        #[test]
        fn prop_timestamp_round_trip(
            now_ts: u32,
            wscale in proptest::option::of(0u8..=14),
            sack_permitted: bool,
        ) {
            let opts = CookieOptions { wscale, sack_permitted };
            let ts = encode_timestamp(now_ts, opts);
            prop_assert_eq!(decode_timestamp(ts), Some(opts));
            prop_assert!(now_ts.wrapping_sub(ts) < 1 << TS_OPTION_BITS);
        }
    }
}
