//! How demux edges are hashed, and the tables nodes are looked up in.
//!
//! SipHash (std's default) would cost more than the rest of a lookup for
//! our 1–13-byte keys. The edge hash is a seeded *folded multiply* (the
//! 128-bit product of two words, its halves XORed: foldhash's mixing step)
//! over the edge word and the key's words, then one multiply that spreads
//! the result's bits to the top ones the table's home slot takes — three
//! multiplications for a key of up to 16 bytes, all in registers, where a
//! general `Hasher` takes a dozen calls' worth of state updates. Unlike
//! FxHash it is *seeded per classifier* from process-level randomness, so
//! an attacker on the wire cannot precompute a set of 5-tuples that collide
//! in our table. It is not a cryptographic PRF, so a determined adaptive
//! attacker measuring timing could still degrade one table; the exposure is
//! bounded because only keys that are *registered* (paths someone
//! established) occupy the table: packets from the wire only probe it, and
//! a probe of a missing key ends at the first empty slot, not an insertion.

use std::hash::BuildHasher;

use crate::node::Probe;

/// The key length's bits in an edge word (`node::edge_word`).
const KEY_LEN_BITS: u64 = 0xff << 40;

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
    /// The 64-bit hash of the edge `p` looks up: the edge table takes its
    /// home slot from the top bits and its tag from others (see
    /// [`NodeTable`]).
    ///
    /// What it takes from the parent and flags (the edge word without the
    /// key length) is mixed apart from the key: the walk knows the parent
    /// before the partial classifier returns the key, so that multiply
    /// runs while the classifier does, and once the key is there a folded
    /// multiply (two beyond 16 bytes) and the last step are left. The
    /// length goes in the top byte of the second word, so keys that differ
    /// only in trailing zeros hash apart.
    ///
    /// The last step (fold the halves, multiply by an odd seed) is what
    /// spreads *sequences*: ports or hosts in sequence make the folded
    /// multiply's top bits an arithmetic progression, which lands evenly on
    /// the slots for some seeds and in a few runs for others (a mean probe
    /// of 3 to 11 slots where a random hash gives 1.35, test
    /// `tables_spread_sequences_for_any_seed`); the halves folded and
    /// multiplied again leave no such pattern.
    #[inline(always)]
    pub(crate) fn edge(&self, p: &Probe<'_>) -> u64 {
        let s = &self.seeds;
        let k = p.key;
        let parent = fold(p.edge & !KEY_LEN_BITS ^ s[0], s[3]);
        let mut h = fold(k.word(0) ^ parent, k.word(1) ^ k.len.rotate_right(8) ^ s[1]);
        if k.len() > 16 {
            h = fold(h ^ k.word(2) ^ s[2], k.word(3) ^ s[4]);
        }
        (h ^ (h >> 32)).wrapping_mul(s[2])
    }

    /// The hash of a flow key (`flow.rs`): its `words` words (the rest
    /// zero), mixed as [`edge`](Self::edge) mixes a key — a folded
    /// multiply per two words (two for an Ethernet/IPv4/TCP flow's three),
    /// then the same last step, so flows of sequential ports or hosts
    /// spread.
    #[inline(always)]
    pub(crate) fn flow(&self, key: &[u64; crate::limits::WORDS], words: usize) -> u64 {
        let s = &self.seeds;
        let mut h = fold(key[0] ^ s[0], key[1] ^ s[1]);
        if words > 2 {
            h = fold(h ^ key[2] ^ s[2], key[3] ^ s[4]);
        }
        if words > 4 {
            h = fold(h ^ key[4] ^ s[3], key[5] ^ s[1]);
        }
        (h ^ (h >> 32)).wrapping_mul(s[2])
    }

    /// The hash of a path id, for the tails table: foldhash's, with the
    /// same last step as [`edge`](Self::edge)'s (ids are allocated in
    /// sequence, and foldhash alone spreads a sequence unevenly).
    #[inline]
    pub(crate) fn path(&self, path: u32) -> u64 {
        let h = self.paths.hash_one(path);
        (h ^ (h >> 32)).wrapping_mul(self.seeds[2])
    }
}

/// An empty slot of a [`NodeTable`]: tag 0, which no entry has.
const EMPTY: u32 = 0;

/// Bits of a slot that hold the node index; the displacement and the tag
/// are above them.
const NODE_BITS: u32 = 24;
const NODE_MASK: u32 = (1 << NODE_BITS) - 1;
/// How far an entry sits from its home slot, saturating at [`DISP_MAX`].
const DISP_BITS: u32 = 3;
const DISP_MAX: u32 = (1 << DISP_BITS) - 1;
const DISP_FIELD: u32 = DISP_MAX << NODE_BITS;
/// Where the tag starts: the top 5 bits.
const TAG_SHIFT: u32 = NODE_BITS + DISP_BITS;

/// Most nodes a classifier can hold: a slot names its node in 24 bits.
pub(crate) const MAX_NODES: u32 = 1 << NODE_BITS;

/// Node indices looked up by a 64-bit hash: open addressing with linear
/// probing over 4-byte slots, each a node index (24 bits), how far it sits
/// from its home slot (3 bits, saturating at 7) and a 5-bit tag taken from
/// the hash. What an entry stands for is in the node it names (an edge; a
/// chain's path), so the table holds nothing else and a candidate is
/// confirmed by comparing that node.
///
/// Not `hashbrown`: its `find` compares candidates through a `dyn FnMut`,
/// which the compiler cannot inline, so every probe paid a call and the
/// spilling of the walk's registers around it. Here the probe is a loop of
/// word compares inlined into the walk; the tag rules out all but about one
/// in 31 non-matching slots before the node is read (false tag matches
/// cost one node compare, never a wrong answer). The home slot is taken
/// from the hash's top bits. Deleting shifts the rest of the run back (no
/// tombstones: probe runs never lengthen with churn), and the stored
/// displacement says which entries may move without reading their nodes
/// (only one displaced by 7 or more is rehashed).
///
/// A slot is half the 8 bytes it was with a 32-bit tag, so a path's edge
/// costs 4 bytes over the load factor: the slot cannot recompute its home,
/// so growing rebuilds the table from the node slab (in slab order, a
/// sequential read) — registration work, off the lookup path.
pub(crate) struct NodeTable {
    slots: Vec<u32>,
    /// `64 − log2(slots)`: the home slot is the hash shifted right by it
    /// (63 for the empty table, whose every lookup finds no slot).
    shift: u32,
    len: usize,
    /// Most entries per 8 slots before the table grows.
    load_eighths: usize,
}

impl NodeTable {
    /// An empty table that keeps at most `load_eighths`/8 of its slots full.
    pub(crate) const fn new(load_eighths: usize) -> Self {
        NodeTable {
            slots: Vec::new(),
            shift: 63,
            len: 0,
            load_eighths,
        }
    }

    /// The home slot of hash `h`: its top `log2(n)` bits for `n` slots
    /// (a shift, not a multiply: it is on the walk's critical path).
    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        (h >> self.shift) as usize
    }

    /// The tag of hash `h`: 5 bits below the ones [`home`](Self::home)
    /// uses (up to 2^24 slots), never 0, which marks an empty slot.
    #[inline(always)]
    fn tag(h: u64) -> u32 {
        ((h >> 8) as u32 & 0x1f).max(1)
    }

    /// The node under hash `h` for which `eq` holds.
    #[inline(always)]
    pub(crate) fn find(&self, h: u64, eq: impl Fn(u32) -> bool) -> Option<u32> {
        self.probe(h, eq).map(|(_, node)| node)
    }

    /// The slot and node under hash `h` for which `eq` holds: the one
    /// probe sequence of [`find`](Self::find) and
    /// [`find_slot`](Self::find_slot) (linear from the home slot, to the
    /// first empty one).
    #[inline(always)]
    fn probe(&self, h: u64, eq: impl Fn(u32) -> bool) -> Option<(usize, u32)> {
        let n = self.slots.len();
        let tag = Self::tag(h);
        let mut i = self.home(h);
        loop {
            // `get` also answers the empty table.
            let s = *self.slots.get(i)?;
            if s == EMPTY {
                return None;
            }
            if s >> TAG_SHIFT == tag && eq(s & NODE_MASK) {
                return Some((i, s & NODE_MASK));
            }
            i = (i + 1) & (n - 1);
        }
    }

    /// Whether one more entry needs the table to grow first
    /// ([`rebuild`](Self::rebuild) with [`grown`](Self::grown) slots).
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        (self.len + 1) * 8 > self.slots.len() * self.load_eighths
    }

    /// The slot count to grow to.
    pub(crate) fn grown(&self) -> usize {
        (self.slots.len() * 2).max(8)
    }

    /// Replaces the contents with `entries` (hash, node) in `n` slots.
    pub(crate) fn rebuild(&mut self, n: usize, entries: impl Iterator<Item = (u64, u32)>) {
        self.slots.clear();
        self.slots.shrink_to_fit();
        self.slots.resize(n, EMPTY);
        self.shift = 64 - n.trailing_zeros();
        self.len = 0;
        for (h, node) in entries {
            self.insert(h, node);
        }
    }

    /// Adds `node` under hash `h`; the caller knows it is not present and
    /// that the table is not [full](Self::is_full).
    pub(crate) fn insert(&mut self, h: u64, node: u32) {
        debug_assert!(node <= NODE_MASK && !self.is_full());
        let n = self.slots.len();
        let mut i = self.home(h);
        let mut disp = 0;
        while self.slots[i] != EMPTY {
            i = (i + 1) & (n - 1);
            disp += 1;
        }
        self.slots[i] = Self::tag(h) << TAG_SHIFT | disp.min(DISP_MAX) << NODE_BITS | node;
        self.len += 1;
    }

    /// The slot of the node under hash `h` for which `eq` holds (for
    /// [`remove_at`](Self::remove_at)).
    pub(crate) fn find_slot(&self, h: u64, eq: impl Fn(u32) -> bool) -> Option<usize> {
        self.probe(h, eq).map(|(i, _)| i)
    }

    /// Removes `node`, stored under hash `h`; `false` if it is not there.
    /// `hash_of(m)` must give the hash node `m` was inserted under.
    pub(crate) fn remove(&mut self, h: u64, node: u32, hash_of: impl Fn(u32) -> u64) -> bool {
        match self.find_slot(h, |m| m == node) {
            Some(slot) => {
                self.remove_at(slot, hash_of);
                true
            }
            None => false,
        }
    }

    /// Removes the entry in slot `i` (found by
    /// [`find_slot`](Self::find_slot)) and returns its node; `hash_of` as
    /// in [`remove`](Self::remove).
    pub(crate) fn remove_at(&mut self, i: usize, hash_of: impl Fn(u32) -> u64) -> u32 {
        let n = self.slots.len();
        let node = self.slots[i] & NODE_MASK;
        // Backward shift: pull later entries of the run into the hole
        // unless that would put one before its home slot.
        let mut hole = i;
        let mut j = (i + 1) & (n - 1);
        loop {
            let s = self.slots[j];
            if s == EMPTY {
                break;
            }
            // Distance travelled from the home slot, cyclically.
            let disp = match (s & DISP_FIELD) >> NODE_BITS {
                DISP_MAX => j.wrapping_sub(self.home(hash_of(s & NODE_MASK))) & (n - 1),
                d => d as usize,
            };
            let gap = j.wrapping_sub(hole) & (n - 1);
            if disp >= gap {
                let left = (disp - gap).min(DISP_MAX as usize) as u32;
                self.slots[hole] = s & !DISP_FIELD | left << NODE_BITS;
                hole = j;
            }
            j = (j + 1) & (n - 1);
        }
        self.slots[hole] = EMPTY;
        self.len -= 1;
        node
    }

    /// How far the entries sit from their home slots: `(entries, sum of
    /// displacements, largest)`. `hash_of` as in [`remove`](Self::remove).
    #[cfg(feature = "testing")]
    pub(crate) fn displacements(&self, hash_of: impl Fn(u32) -> u64) -> (usize, usize, usize) {
        let n = self.slots.len();
        let (mut sum, mut max) = (0, 0);
        for (i, &s) in self.slots.iter().enumerate() {
            if s != EMPTY {
                let d = i.wrapping_sub(self.home(hash_of(s & NODE_MASK))) & (n - 1);
                sum += d;
                max = max.max(d);
            }
        }
        (self.len, sum, max)
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Crowded homes, equal tags and wrap-around: every entry stays
    /// findable through inserts, growth and backward-shift removals in any
    /// order.
    #[test]
    fn node_table_keeps_runs_intact() {
        let mut t = NodeTable::new(6);
        // Hashes sharing their top bits collide, the even ones with equal
        // tags too; the last ones wrap around.
        let hashes: Vec<u64> = (0..40u64)
            .map(|i| {
                if i % 2 == 0 {
                    0xffff_ff00_0000_0000 | i << 16 | 0x300
                } else {
                    i << 59 | i << 8
                }
            })
            .collect();
        let hash_of = |m: u32| hashes[m as usize];
        for (node, &h) in hashes.iter().enumerate() {
            if t.is_full() {
                let n = t.grown();
                t.rebuild(n, (0..node as u32).map(|m| (hash_of(m), m)));
            }
            t.insert(h, node as u32);
        }
        let mut live: Vec<usize> = (0..hashes.len()).collect();
        for step in 0..hashes.len() {
            let pos = (step * 7) % live.len();
            let gone = live.remove(pos);
            assert!(t.remove(hashes[gone], gone as u32, hash_of));
            assert!(!t.remove(hashes[gone], gone as u32, hash_of));
            assert_eq!(t.find(hashes[gone], |n| n == gone as u32), None);
            for &n in &live {
                assert_eq!(t.find(hashes[n], |m| m == n as u32), Some(n as u32));
            }
            assert_eq!(t.len(), live.len());
        }
    }

    /// Tag 0 marks an empty slot, so a hash whose tag bits are 0 is stored
    /// under tag 1.
    #[test]
    fn zero_tag_is_not_empty() {
        let mut t = NodeTable::new(6);
        t.rebuild(8, std::iter::empty());
        t.insert(0, 5);
        assert_eq!(t.find(0, |n| n == 5), Some(5));
        assert_eq!(t.find(1 << 8, |n| n == 5), Some(5), "tag 1 as well");
    }
}
