//! The stored form of a gather's flow keys: the bytes that vary between
//! its flows, folded into as few words as they fit.
//!
//! An Ethernet/IPv4/TCP flow's key is three 8-byte windows of a message
//! (`flow.rs`, [`FlowPlan`](crate::flow)), 15 key bytes. On one host the
//! EtherType, the protocol and the local address are the same for every
//! connection, and a server's local port is too: only the remote address
//! and port vary, six bytes (eight with the local port). Kept per window,
//! they would still take two words, the remote address in one window and
//! the ports in the next; laid over each other, the second window's
//! bytes rotated to where the first has none, they take one. A fold does
//! that: the bits every flow has alike are kept once (`common`, checked
//! against a message in registers), and each window's varying bytes go
//! to one stored word, rotated so that they fall on bytes no other
//! window's take there. A message's key is folded the same way (an AND,
//! a rotate and an OR a window) before the hash, which then mixes one
//! word instead of three: an entry of a host's connections is one key
//! word and its meta word, 16 bytes instead of 24 (`flow_slots.rs`).
//!
//! A byte starts to vary when a flow with another value there comes; the
//! fold is then laid out again and the entries with it, at most once per
//! byte of the windows in a gather's life.

use crate::hash::EdgeHasher;
use crate::limits::WORDS;

/// How a gather's keys are folded (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fold {
    /// The value every flow has in the common bits.
    common: [u64; WORDS],
    /// The bits every flow has alike: whole bytes (all of a byte no two
    /// flows have differed in yet; bits outside the windows' masks, zero
    /// in every key, among them).
    common_sel: [u64; WORDS],
    /// The bits that vary: the window's mask outside `common_sel`.
    vary_sel: [u64; WORDS],
    /// Where each window's varying bytes go: the stored word and the left
    /// rotation, in bits.
    place: [(u8, u32); WORDS],
    /// Stored words per key.
    stored: usize,
}

/// The bytes of `w` with any bit set, as a mask of whole bytes.
fn whole_bytes(w: u64) -> u64 {
    let mut m = 0;
    for b in 0..8 {
        if (w >> (8 * b)) & 0xff != 0 {
            m |= 0xff << (8 * b);
        }
    }
    m
}

/// One bit per byte of `w` that has any bit set.
fn byte_bits(w: u64) -> u8 {
    (0..8).fold(0, |m, b| m | u8::from((w >> (8 * b)) & 0xff != 0) << b)
}

impl Fold {
    /// The fold of a gather none of whose bytes vary yet.
    pub(crate) fn new() -> Self {
        Fold {
            common: [0; WORDS],
            common_sel: [u64::MAX; WORDS],
            vary_sel: [0; WORDS],
            place: [(0, 0); WORDS],
            stored: 0,
        }
    }

    /// Stored words per key.
    #[inline(always)]
    pub(crate) fn stored(&self) -> usize {
        self.stored
    }

    /// The common bits of window `w`, and their value.
    pub(crate) fn common(&self, w: usize) -> (u64, u64) {
        (self.common_sel[w], self.common[w])
    }

    /// The varying bits of window `w` and their left rotation into their
    /// stored word (the one word of a fold that stores one).
    pub(crate) fn varying(&self, w: usize) -> (u64, u32) {
        (self.vary_sel[w], self.place[w].1)
    }

    /// Takes `key`'s values for the common bits (the first flow, again,
    /// of a gather whose flows all went).
    pub(crate) fn set_common(&mut self, key: &[u64; WORDS]) {
        for ((c, &k), &sel) in self.common.iter_mut().zip(key).zip(&self.common_sel) {
            *c = k & sel;
        }
    }

    /// Adds the difference of window `w`'s key word `k` (masked to the
    /// window) from the common bits to `diff`: all a lookup does per
    /// window while nothing varies.
    #[inline(always)]
    pub(crate) fn check(&self, w: usize, k: u64, diff: &mut u64) {
        *diff |= (k ^ self.common[w]) & self.common_sel[w];
    }

    /// Adds window `w`'s key word `k` (masked to the window) to the
    /// stored words `out` and its difference from the common bits to
    /// `diff`: the step a lookup takes per window, in registers.
    #[inline(always)]
    pub(crate) fn add(&self, w: usize, k: u64, diff: &mut u64, out: &mut [u64; WORDS]) {
        self.check(w, k, diff);
        let (to, rot) = self.place[w];
        // `to` is below `stored`, itself at most `WORDS`: a compare, not a
        // bounds check that could panic.
        out[usize::from(to).min(WORDS - 1)] |= (k & self.vary_sel[w]).rotate_left(rot);
    }

    /// [`add`](Self::add) for a fold of one stored word: window `w`'s
    /// varying bits of `k`, in their place in that word.
    #[inline(always)]
    pub(crate) fn add_one(&self, w: usize, k: u64, diff: &mut u64) -> u64 {
        self.check(w, k, diff);
        (k & self.vary_sel[w]).rotate_left(self.place[w].1)
    }

    /// The stored words of `key` (the windows' words, masked), zero past
    /// [`stored`](Self::stored); `None` if a common bit differs (no flow
    /// of the gather has the key).
    pub(crate) fn fold(&self, key: &[u64; WORDS]) -> Option<[u64; WORDS]> {
        let (mut diff, mut out) = (0, [0; WORDS]);
        for (w, &k) in key.iter().enumerate() {
            self.add(w, k, &mut diff, &mut out);
        }
        (diff == 0).then_some(out)
    }

    /// The windows' words of the key stored as `stored`.
    pub(crate) fn unfold(&self, stored: &[u64]) -> [u64; WORDS] {
        let mut key = self.common;
        for (w, k) in key.iter_mut().enumerate() {
            let (to, rot) = self.place[w];
            if let Some(&s) = stored.get(usize::from(to)) {
                *k |= s.rotate_right(rot) & self.vary_sel[w];
            }
        }
        key
    }

    /// The fold that also lets vary every byte in which `key` differs
    /// from the common bits, or `None` if it differs in none. `masks` are
    /// the windows' masks.
    pub(crate) fn widened(&self, key: &[u64; WORDS], masks: &[u64]) -> Option<Fold> {
        let mut sel = self.common_sel;
        for (w, s) in sel.iter_mut().enumerate() {
            *s &= !whole_bytes((key[w] ^ self.common[w]) & *s);
        }
        if sel == self.common_sel {
            return None;
        }
        let mut f = Fold {
            common_sel: sel,
            ..Fold::new()
        };
        // Greedily, window by window: the first stored word with room for
        // the window's varying bytes at some rotation (none first), else
        // a new one. A window varies in at most 8 bytes, so a new word
        // always has room, and there are at most `WORDS` windows.
        let mut taken = [0u8; WORDS];
        for (w, &mask) in masks.iter().enumerate().take(WORDS) {
            f.common[w] = self.common[w] & sel[w];
            f.vary_sel[w] = mask & !sel[w];
            let bytes = byte_bits(f.vary_sel[w]);
            if bytes == 0 {
                continue;
            }
            let fits = (0..f.stored).find_map(|s| {
                (0..8u32)
                    .find(|&r| bytes.rotate_left(r) & taken[s] == 0)
                    .map(|r| (s, r))
            });
            let (s, r) = fits.unwrap_or((f.stored, 0));
            if s == f.stored {
                f.stored += 1;
            }
            taken[s] |= bytes.rotate_left(r);
            // `s` is below `WORDS` (6) and `r` below 8.
            f.place[w] = (s as u8, 8 * r);
        }
        Some(f)
    }

    /// The hash of stored words `stored` (at most `WORDS`), as a lookup
    /// hashes a message's.
    pub(crate) fn hash(hasher: &EdgeHasher, stored: &[u64]) -> u64 {
        let mut s = [0; WORDS];
        s[..stored.len()].copy_from_slice(stored);
        hasher.flow(&s, stored.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's connections: EtherType, protocol and local address alike,
    /// the remote address and the ports varying: one stored word, which
    /// unfolds to the key.
    #[test]
    fn connections_fold_into_one_word() {
        let masks = [0xffff, 0xffff_ffff_ff00_00ff, 0x00ff_ffff_ffff_ffff];
        let key = |remote: u32, rport: u16, lport: u16| {
            let mut k = [0u64; WORDS];
            k[0] = 0x0008;
            // Protocol 6, the remote address at bytes 3..7, a byte of the
            // local address.
            k[1] = 6 | u64::from(remote) << 24 | 0xc0 << 56;
            // The rest of the local address, the ports at bytes 3..7.
            k[2] = 0x45_a8_0c | u64::from(rport) << 24 | u64::from(lport) << 40;
            k
        };
        let mut f = Fold::new();
        f.set_common(&key(1, 1000, 80));
        assert_eq!(f.widened(&key(1, 1000, 80), &masks), None);
        // Another remote host and port: the address and the remote port
        // vary; another local port too.
        let f2 = f.widened(&key(2, 2000, 80), &masks).unwrap();
        let f3 = f2.widened(&key(0x0201_0203, 2000, 81), &masks).unwrap();
        assert_eq!(f3.stored(), 1);
        for k in [key(1, 1000, 80), key(0x0a0b_0c0d, 0x1234, 81)] {
            let s = f3.fold(&k).unwrap();
            assert_eq!(s[1..], [0; WORDS - 1]);
            assert_eq!(f3.unfold(&s[..1]), k);
        }
        // Two keys that differ fold apart.
        assert_ne!(f3.fold(&key(1, 1000, 80)), f3.fold(&key(1, 1000, 81)));
        // Another protocol: a common bit differs.
        let mut udp = key(1, 1000, 80);
        udp[1] ^= 6 ^ 17;
        assert_eq!(f3.fold(&udp), None);
    }

    /// Windows varying in all their bytes take a word each; the fold
    /// still unfolds exactly.
    #[test]
    fn full_windows_take_a_word_each() {
        let masks = [u64::MAX; 4];
        let mut f = Fold::new();
        let mut k = [0u64; WORDS];
        f.set_common(&k);
        k[..4].copy_from_slice(&[u64::MAX; 4]);
        let f = f.widened(&k, &masks).unwrap();
        assert_eq!(f.stored(), 4);
        let k = [1, 2, 3, 4, 0, 0];
        let s = f.fold(&k).unwrap();
        assert_eq!(f.unfold(&s[..4]), k);
    }
}
