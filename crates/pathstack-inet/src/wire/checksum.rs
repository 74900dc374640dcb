//! The Internet checksum (RFC 1071) over byte slices, and its incremental
//! update (RFC 1624).
//!
//! Hand-written rather than `etherparse::checksum::Sum16BitWords`, which
//! adds one 16-bit word per step: every datagram is summed twice per hop
//! (IP header and UDP pseudo header plus data), and on a 1-byte ping-pong
//! the word-at-a-time sums were the largest single cost in the stages. We
//! add 32-bit words into a 64-bit accumulator and fold once at the end
//! (RFC 1071 §4.1's "deferred carries" and §2(B)'s byte-order
//! independence: native-order words give the native-order sum), which
//! gives the same result in a quarter of the additions. The
//! differential property test below checks it against etherparse.
//! Callers read and write checksums as the two bytes that go on the wire.

use std::net::Ipv4Addr;

/// The checksum of the concatenation of `parts`, as the two bytes to store
/// in a header whose checksum field was zero during the sum.
///
/// Every part except the last must have even length (the 16-bit word
/// alignment of RFC 1071 §2); the last one is padded with a zero byte.
#[inline]
pub fn compute(parts: &[&[u8]]) -> [u8; 2] {
    (!sum(parts)).to_ne_bytes()
}

/// Whether the checksum over `parts` (checksum field included) verifies,
/// i.e. the one's complement sum is all ones (RFC 1071 §1, step 3).
#[inline]
pub fn verify(parts: &[&[u8]]) -> bool {
    sum(parts) == 0xffff
}

/// The running sum of `bytes` (even length) for a checksum finished later
/// with [`finish`]: what a pre-formatted header keeps of its constant
/// words, so that only the words that change are added per datagram.
#[inline]
pub fn partial(bytes: &[u8]) -> u64 {
    add_words(bytes)
}

/// Whether a running sum `acc` of covered data (checksum field included,
/// from [`partial`]s) verifies: [`verify`] for a sum kept in pieces, such
/// as a pseudo header's kept apart from the bytes.
#[inline]
pub fn verifies(acc: u64) -> bool {
    fold(acc) == 0xffff
}

/// The checksum bytes for a running sum `acc` of native-order words (from
/// [`partial`] plus further words).
#[inline]
pub fn finish(acc: u64) -> [u8; 2] {
    (!fold(acc)).to_ne_bytes()
}

/// The one's complement sum of `parts` in native byte order, folded to 16
/// bits.
#[inline]
fn sum(parts: &[&[u8]]) -> u16 {
    let mut acc = 0u64;
    for p in parts {
        acc += add_words(p);
    }
    fold(acc)
}

/// The sum of `bytes` as native-order 16-bit words (a trailing odd byte
/// padded with zero), carries deferred: at most 2^-16 of the `u64` range
/// per 64 KiB, so no overflow for any datagram.
///
/// Eight bytes per addition (RFC 1071 §2(C): the sum may be taken over
/// any width of word, since 2^16 ≡ 1 in one's complement, so a carry out
/// of bit 63 is worth one): half the additions of 32-bit words, and a
/// short header is a few straight loads.
#[inline(always)]
fn add_words(bytes: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut carries = 0u64;
    let mut eights = bytes.chunks_exact(8);
    for e in &mut eights {
        let (s, c) = acc.overflowing_add(u64::from_ne_bytes([
            e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7],
        ]));
        acc = s;
        carries += u64::from(c);
    }
    let mut rest = eights.remainder();
    // At most seven bytes: a four, a two and a one, each padded to the
    // native-order position it holds in a 16-bit word.
    let mut tail = 0u64;
    if let Some((q, r)) = rest.split_first_chunk::<4>() {
        tail += u64::from(u32::from_ne_bytes(*q));
        rest = r;
    }
    if let Some((w, r)) = rest.split_first_chunk::<2>() {
        tail += u64::from(u16::from_ne_bytes(*w));
        rest = r;
    }
    if let [last] = rest {
        tail += u64::from(u16::from_ne_bytes([*last, 0]));
    }
    (acc >> 32) + (acc & 0xffff_ffff) + carries + tail
}

/// The folded sum of `bytes`, *not* complemented, as the two bytes to
/// store: what a partial checksum field holds for a device to finish
/// (checksum offload; `bytes` is the pseudo header).
#[inline]
pub fn pseudo_sum(bytes: &[u8]) -> [u8; 2] {
    fold(add_words(bytes)).to_ne_bytes()
}

/// The folded running sum `acc`, *not* complemented, as the two bytes to
/// store: [`pseudo_sum`] for a sum kept in pieces.
#[inline]
pub fn fold_to_bytes(acc: u64) -> [u8; 2] {
    fold(acc).to_ne_bytes()
}

/// Folds a deferred-carry sum to 16 bits (RFC 1071 §4.1), by two
/// end-around-carry additions of its halves (RFC 1071 §2(A)): `add; adc`
/// twice, where shifting and masking took five rounds. A non-zero sum
/// folds to 1..=0xffff, zero to 0, as before.
#[inline(always)]
fn fold(acc: u64) -> u16 {
    let (s, c) = (acc as u32).overflowing_add((acc >> 32) as u32);
    // With a carry out, `s` is at most 2^32 - 2: adding it cannot wrap.
    let s = s + u32::from(c);
    let (t, c) = (s as u16).overflowing_add((s >> 16) as u16);
    t + u16::from(c)
}

/// The IPv4 pseudo header a transport checksum covers (RFC 768 for UDP,
/// RFC 9293 §3.1 "Checksum" for TCP): source address, destination
/// address, a zero byte, the protocol and the transport length (header
/// and data).
#[inline]
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, len: u16) -> [u8; 12] {
    let mut p = [0u8; 12];
    p[0..4].copy_from_slice(&src.octets());
    p[4..8].copy_from_slice(&dst.octets());
    p[9] = protocol;
    p[10..12].copy_from_slice(&len.to_be_bytes());
    p
}

/// Updates a stored checksum after one 16-bit word of the covered data
/// changed from `old` to `new` (RFC 1624 §3, Eqn. 3: `HC' = ~(~HC + ~m + m')`).
/// All values are in network byte order as read with `u16::from_be_bytes`.
pub fn update(checksum: u16, old: u16, new: u16) -> u16 {
    let mut s = u32::from(!checksum) + u32::from(!old) + u32::from(new);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2 (one's
        // complement sum), so the checksum is its complement 220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(compute(&[&data]), [0x22, 0x0d]);
        let mut with = data.to_vec();
        with.extend_from_slice(&[0x22, 0x0d]);
        assert!(verify(&[&with]));
    }

    /// etherparse's word-at-a-time sum: the reference.
    fn reference(parts: &[&[u8]]) -> [u8; 2] {
        parts
            .iter()
            .fold(etherparse::checksum::Sum16BitWords::new(), |s, p| {
                s.add_slice(p)
            })
            .ones_complement()
            .to_ne_bytes()
    }

    proptest! {
        #[test]
        fn sum_matches_etherparse(
            head in proptest::collection::vec(any::<u8>(), 0..40),
            tail in proptest::collection::vec(any::<u8>(), 0..1600),
        ) {
            // Every part but the last has even length.
            let head = &head[..head.len() & !1];
            prop_assert_eq!(compute(&[head, &tail]), reference(&[head, &tail]));
            prop_assert_eq!(compute(&[&tail]), reference(&[&tail]));
        }

        #[test]
        fn fold_matches_shift_and_mask(acc in any::<u64>()) {
            // RFC 1071 §4.1's deferred-carry fold, round by round.
            let mut a = (acc & 0xffff_ffff) + (acc >> 32);
            a = (a & 0xffff_ffff) + (a >> 32);
            let mut s = (a & 0xffff) + (a >> 16);
            s = (s & 0xffff) + (s >> 16);
            s = (s & 0xffff) + (s >> 16);
            prop_assert_eq!(fold(acc), s as u16);
        }

        #[test]
        fn partial_sums_of_any_split(
            data in proptest::collection::vec(any::<u8>(), 0..200),
            cut in 0usize..200,
        ) {
            // A sum kept in even-length pieces is the sum of the whole.
            let cut = cut.min(data.len()) & !1;
            let (a, b) = data.split_at(cut);
            prop_assert_eq!(finish(partial(a) + partial(b)), reference(&[&data]));
        }

        #[test]
        fn all_ones_and_zeros(n in 0usize..100, ones: bool) {
            let data = vec![if ones { 0xff } else { 0 }; n];
            prop_assert_eq!(compute(&[&data]), reference(&[&data]));
        }

        #[test]
        fn incremental_matches_recompute(mut data in proptest::collection::vec(any::<u8>(), 4..64), word in 0usize..30, new in any::<u16>()) {
            if data.len() % 2 == 1 { data.pop(); }
            let i = (word % (data.len() / 2 - 1)) * 2 + 2; // never the checksum word 0
            data[0] = 0; data[1] = 0;
            let c = compute(&[&data]);
            data[0..2].copy_from_slice(&c);
            let old = u16::from_be_bytes([data[i], data[i + 1]]);
            data[i..i + 2].copy_from_slice(&new.to_be_bytes());
            let upd = update(u16::from_be_bytes(c), old, new);
            data[0..2].copy_from_slice(&upd.to_be_bytes());
            prop_assert!(verify(&[&data]));
        }
    }
}
