//! The Internet checksum (RFC 1071) over byte slices, and its incremental
//! update (RFC 1624).
//!
//! Summing is delegated to `etherparse::checksum::Sum16BitWords`; this file
//! only fixes the byte order once, so callers read and write checksums as
//! the two bytes that go on the wire. The incremental update is hand-written
//! because etherparse has none; it is three lines of RFC 1624 §3 (Eqn. 3).

use etherparse::checksum::Sum16BitWords;

/// The checksum of the concatenation of `parts`, as the two bytes to store
/// in a header whose checksum field was zero during the sum.
///
/// Every part except the last must have even length (the 16-bit word
/// alignment of RFC 1071 §2); the last one is padded with a zero byte.
pub fn compute(parts: &[&[u8]]) -> [u8; 2] {
    sum(parts).ones_complement().to_ne_bytes()
}

/// Whether the checksum over `parts` (checksum field included) verifies,
/// i.e. the one's complement sum is all ones (RFC 1071 §1, step 3).
pub fn verify(parts: &[&[u8]]) -> bool {
    sum(parts).ones_complement() == 0
}

fn sum(parts: &[&[u8]]) -> Sum16BitWords {
    parts
        .iter()
        .fold(Sum16BitWords::new(), |s, p| s.add_slice(p))
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

    proptest! {
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
