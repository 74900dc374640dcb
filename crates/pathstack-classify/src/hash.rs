//! How demux edges are hashed, and the table they are looked up in.
//!
//! SipHash (std's default) would cost more than the rest of a lookup for
//! our 1–13-byte keys. The edge hash is a seeded *folded multiply* (the
//! 128-bit product of two words, its halves XORed: foldhash's mixing step)
//! over the edge word and the key's words — two multiplications for a key
//! of up to 16 bytes, all in registers, where a general `Hasher` takes a
//! dozen calls' worth of state updates. Unlike FxHash it is *seeded per
//! classifier* from process-level randomness, so an attacker on the wire
//! cannot precompute a set of 5-tuples that collide in our table. It is not
//! a cryptographic PRF, so a determined adaptive attacker measuring timing
//! could still degrade one table; the exposure is bounded because only keys
//! that are *registered* (paths someone established) occupy the table:
//! packets from the wire only probe it, and a probe of a missing key ends at
//! the first empty slot, not an insertion.

use std::hash::BuildHasher;

use crate::node::Probe;

/// `a × b` as a 128-bit product, folded to 64 bits.
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Per-classifier seeded hasher of `(parent, flags, key)` edges and of path ids.
#[derive(Clone)]
pub(crate) struct EdgeHasher {
    seeds: [u64; 5],
    paths: foldhash::fast::RandomState,
}

impl Default for EdgeHasher {
    fn default() -> Self {
        let paths = foldhash::fast::RandomState::default();
        // Seeds from the per-classifier random state, so every classifier
        // hashes differently (see the module docs).
        let seeds = [1u64, 2, 3, 4, 5].map(|i| paths.hash_one(i) | 1);
        EdgeHasher { seeds, paths }
    }
}

impl EdgeHasher {
    /// The 32-bit tag of the edge `p` looks up: what the edge table stores
    /// and derives the home slot from.
    #[inline(always)]
    pub(crate) fn edge(&self, p: &Probe<'_>) -> u32 {
        let s = &self.seeds;
        let k = p.key;
        let mut h = fold(p.edge ^ s[0], k.word(0) ^ s[1]);
        h = fold(h ^ k.word(1), s[2]);
        if k.len() > 16 {
            h = fold(h ^ k.word(2) ^ s[3], k.word(3) ^ s[4]);
        }
        (h >> 32) as u32
    }

    #[inline]
    pub(crate) fn path(&self, path: u32) -> u64 {
        self.paths.hash_one(path)
    }
}

/// An empty slot of the [`EdgeTable`] (no node has index `NONE`).
const EMPTY: u64 = u64::MAX;

/// The demux edges: open addressing with linear probing over 8-byte slots,
/// each holding an edge's 32-bit tag and its node index.
///
/// Not `hashbrown`: its `find` compares candidates through a `dyn FnMut`,
/// which the compiler cannot inline, so every probe paid a call and the
/// spilling of the walk's registers around it. Here the probe is a loop of
/// word compares inlined into the walk; the tag rules out all but the
/// matching node (false tag matches cost one node compare, never a wrong
/// answer). The home slot is taken from the tag's top bits, so growing and
/// deleting (backward shift, no tombstones: probe runs never lengthen with
/// churn) never rereads a node. The load stays at most 3/4 and at least
/// 3/8 once grown, so a probe inspects a couple of adjacent slots whatever
/// the number of edges.
#[derive(Default)]
pub(crate) struct EdgeTable {
    slots: Vec<u64>,
    len: usize,
}

impl EdgeTable {
    /// The home slot of `tag` in a table of `n` slots (a power of two):
    /// the tag's top `log2(n)` bits.
    #[inline(always)]
    fn home(tag: u32, n: usize) -> usize {
        ((u64::from(tag) * n as u64) >> 32) as usize
    }

    /// The node with tag `tag` for which `eq` holds.
    #[inline(always)]
    pub(crate) fn find(&self, tag: u32, eq: impl Fn(u32) -> bool) -> Option<u32> {
        let n = self.slots.len();
        let mut i = Self::home(tag, n);
        loop {
            // `get` also answers the empty table.
            let s = *self.slots.get(i)?;
            if s == EMPTY {
                return None;
            }
            if (s >> 32) as u32 == tag && eq(s as u32) {
                return Some(s as u32);
            }
            i = (i + 1) & (n - 1);
        }
    }

    /// Adds `node` under `tag`; the caller knows the edge is not present.
    pub(crate) fn insert(&mut self, tag: u32, node: u32) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        Self::place(&mut self.slots, (u64::from(tag) << 32) | u64::from(node));
        self.len += 1;
    }

    fn place(slots: &mut [u64], entry: u64) {
        let n = slots.len();
        let mut i = Self::home((entry >> 32) as u32, n);
        while slots[i] != EMPTY {
            i = (i + 1) & (n - 1);
        }
        slots[i] = entry;
    }

    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(8);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; n]);
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            Self::place(&mut self.slots, e);
        }
    }

    /// Removes `node`, stored under `tag`; `false` if it is not there.
    pub(crate) fn remove(&mut self, tag: u32, node: u32) -> bool {
        let n = self.slots.len();
        let entry = (u64::from(tag) << 32) | u64::from(node);
        let mut i = Self::home(tag, n);
        loop {
            match self.slots.get(i) {
                None => return false,
                Some(&EMPTY) => return false,
                Some(&s) if s == entry => break,
                Some(_) => i = (i + 1) & (n - 1),
            }
        }
        // Backward shift: pull later entries of the run into the hole
        // unless that would put one before its home slot.
        let mut hole = i;
        let mut j = (i + 1) & (n - 1);
        loop {
            let s = self.slots[j];
            if s == EMPTY {
                break;
            }
            let home = Self::home((s >> 32) as u32, n);
            // Distances travelled from the home slot, cyclically.
            if (j.wrapping_sub(home) & (n - 1)) >= (j.wrapping_sub(hole) & (n - 1)) {
                self.slots[hole] = s;
                hole = j;
            }
            j = (j + 1) & (n - 1);
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
        true
    }

    /// Number of edges.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Crowded homes and wrap-around: every entry stays findable through
    /// inserts, growth and backward-shift removals in any order.
    #[test]
    fn edge_table_keeps_runs_intact() {
        let mut t = EdgeTable::default();
        // Tags sharing their top bits collide; the last ones wrap around.
        let tags: Vec<u32> = (0..40u32)
            .map(|i| if i % 2 == 0 { 0xffff_ff00 | i } else { i << 27 })
            .collect();
        for (node, &tag) in tags.iter().enumerate() {
            t.insert(tag, node as u32);
        }
        let mut live: Vec<usize> = (0..tags.len()).collect();
        for step in 0..tags.len() {
            let pos = (step * 7) % live.len();
            let gone = live.remove(pos);
            assert!(t.remove(tags[gone], gone as u32));
            assert!(!t.remove(tags[gone], gone as u32));
            assert_eq!(t.find(tags[gone], |n| n == gone as u32), None);
            for &n in &live {
                assert_eq!(t.find(tags[n], |m| m == n as u32), Some(n as u32));
            }
            assert_eq!(t.len(), live.len());
        }
    }
}
