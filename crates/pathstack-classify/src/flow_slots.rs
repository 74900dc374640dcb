//! The flow table's entries, held in its slots.
//!
//! A flow entry is a few key words and its path and chain. Kept in
//! vectors beside a table of 4-byte slots that name them (as the tree's
//! [`NodeTable`](crate::hash::NodeTable) names nodes), an Ethernet/IPv4/TCP
//! flow cost its 32 bytes, the vectors' growth slack, and a slot over the
//! load factor: about 63 bytes per path at 100,000 paths, as much again as
//! the whole demux tree. Here the entry *is* the slot: `stride` words, the
//! stored key words (the bytes that vary between the gather's flows,
//! folded, `fold.rs`: one word for a host's connections; the caller of
//! [`FlowSlots::new`] decides), then one meta word packing the path, the chain and the entry's distance
//! from its home slot. A probe reads the slot it compares, one place in
//! memory instead of three.
//!
//! Open addressing with linear probing in Robin Hood order (Celis,
//! Larson and Munro, "Robin Hood Hashing", FOCS 1985): an entry never sits
//! closer to its home than one it passed, so a probe for a key that is not
//! there stops at the first slot whose entry is nearer its home than the
//! probe has come — a frame no flow has costs about one slot, not the rest
//! of the run. Deleting shifts the run back (no tombstones). The slot count
//! need not be a power of two (the home is the hash's top bits scaled to
//! it, Lemire's multiply-shift), so the table grows by half, not double:
//! between 13/24 and 13/16 of the slots hold entries.

/// Bits of the meta word: the path, then the chain (15 bits) and the
/// [`LEAF`] mark, then the distance from home plus one (0: an empty slot).
const CHAIN_SHIFT: u32 = 32;
const DIST_SHIFT: u32 = 48;
/// Mark of a *leaf* entry: its path keeps no node of its own in the tree
/// (the entry is its last level, `classifier.rs`), so the entry is found
/// from its path by the table's leaf index as well as from its key. The
/// top bit of the chain's field, which the chain's mask leaves out: a
/// lookup reads the meta word as before (a wider [`Entry`] kept the
/// compiled probe's acceptance out of line, some 30 instructions a
/// frame).
const LEAF: u64 = 1 << (DIST_SHIFT - 1);

/// Most chains a table's meta word can name.
pub(crate) const MAX_CHAINS: u32 = 1 << (DIST_SHIFT - CHAIN_SHIFT - 1);

/// Most slots a run may be long: the distance is kept in 16 bits. A
/// table whose insert would go further grows instead (at the load factor
/// this never happens with a working hash).
const MAX_DIST: usize = (1 << (64 - DIST_SHIFT)) - 2;

/// Most entries per 16 slots: at 13/16 an entry sits about 2.2 slots
/// from home on average with a random hash (Knuth, TAOCP vol. 3 §6.4,
/// linear probing: (1/(1 − α) − 1)/2), about 1.5 at the 3/4 the tree's
/// tables keep.
const LOAD_SIXTEENTHS: usize = 13;

/// One entry as a slot holds it: `key` (the stored words), path and chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) path: u32,
    pub(crate) chain: u32,
}

fn meta(e: Entry, dist: usize, leaf: bool) -> u64 {
    u64::from(e.path)
        | u64::from(e.chain) << CHAIN_SHIFT
        | ((dist as u64) + 1) << DIST_SHIFT
        | if leaf { LEAF } else { 0 }
}

fn entry_of(meta: u64) -> Entry {
    Entry {
        path: meta as u32,
        chain: (meta >> CHAIN_SHIFT) as u32 & (MAX_CHAINS - 1),
    }
}

/// Whether meta word `m` is a leaf entry's.
fn is_leaf(m: u64) -> bool {
    m & LEAF != 0
}

/// How far the entry with meta word `m` sits from its home, or `None` for
/// an empty slot.
#[inline(always)]
fn dist_of(m: u64) -> Option<usize> {
    ((m >> DIST_SHIFT) as usize).checked_sub(1)
}

/// The home in a leaf index of `n` (a power of two) slots of `path`:
/// Fibonacci hashing (Knuth, TAOCP vol. 3 §6.4), enough for ids a stack
/// hands out in sequence.
#[inline]
fn leaf_home(path: u32, n: usize) -> usize {
    let h = u64::from(path).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - n.trailing_zeros())) as usize
}

/// Most leaf entries per 8 slots of the leaf index: it is read by
/// registration only, as the tree's tails table (7/8 too).
const LEAF_LOAD_EIGHTHS: usize = 7;

/// Flow entries in open addressing, each slot `stride` words (see the
/// module docs).
pub(crate) struct FlowSlots {
    words: Vec<u64>,
    /// One bit per slot: whether some entry has its home there. A message
    /// whose home bit is clear is no flow's, found without reading the
    /// slot — about half the misses at these loads (1 − e^−α of the homes
    /// are taken), for 1/8 byte a slot.
    homes: Vec<u64>,
    /// Key words per entry (the meta word follows them).
    keys: usize,
    slots: usize,
    len: usize,
    /// The leaf entries' slots by path (slot + 1; 0 empty): open
    /// addressing, linear probing, a power of two slots at most 7/8 full.
    /// What finds a leaf path's entry, hence its keys, for its removal
    /// (the tree's tails table does this for a path with a last node).
    /// Kept right as entries move: Robin Hood insertion and the backward
    /// shift of a removal report each move.
    leaves: Vec<u32>,
    leaf_len: usize,
}

impl FlowSlots {
    /// An empty table of entries with `keys` key words each.
    pub(crate) fn new(keys: usize) -> Self {
        FlowSlots {
            words: Vec::new(),
            homes: Vec::new(),
            keys,
            slots: 0,
            len: 0,
            leaves: Vec::new(),
            leaf_len: 0,
        }
    }

    /// Number of leaf entries.
    pub(crate) fn leaf_len(&self) -> usize {
        self.leaf_len
    }

    /// The slot of the leaf entry of `path`, if any.
    pub(crate) fn find_leaf(&self, path: u32) -> Option<usize> {
        let n = self.leaves.len();
        if n == 0 {
            return None;
        }
        let mut i = leaf_home(path, n);
        loop {
            let v = self.leaves[i];
            if v == 0 {
                return None;
            }
            let slot = v as usize - 1;
            let m = self.slot(slot)[self.keys];
            if is_leaf(m) && entry_of(m).path == path {
                return Some(slot);
            }
            i = (i + 1) & (n - 1);
        }
    }

    /// The slot's entry and key words.
    pub(crate) fn entry_at(&self, slot: usize) -> (&[u64], Entry) {
        let s = self.slot(slot);
        (&s[..self.keys], entry_of(s[self.keys]))
    }

    /// The index position of leaf `path`, whose entry was in slot
    /// `from` (the index's value, not the entry, identifies it: the
    /// entry may have been overwritten already).
    fn leaf_position(&self, path: u32, from: usize) -> Option<usize> {
        let n = self.leaves.len();
        if n == 0 {
            return None;
        }
        let mut i = leaf_home(path, n);
        for _ in 0..n {
            match self.leaves[i] {
                0 => return None,
                v if v as usize == from + 1 => return Some(i),
                _ => {}
            }
            i = (i + 1) & (n - 1);
        }
        None
    }

    /// The entry now in slot `to` came from slot `from`: its index entry
    /// follows it, if it is a leaf.
    fn leaf_moved(&mut self, from: usize, to: usize) {
        let m = self.slot(to)[self.keys];
        if !is_leaf(m) {
            return;
        }
        let e = entry_of(m);
        if let Some(i) = self.leaf_position(e.path, from) {
            self.leaves[i] = to as u32 + 1;
        }
        debug_assert_eq!(self.find_leaf(e.path), Some(to));
    }

    /// Adds leaf `path` in slot `slot` to the index (room is made first).
    fn leaf_add(&mut self, path: u32, slot: usize) {
        if (self.leaf_len + 1) * 8 > self.leaves.len() * LEAF_LOAD_EIGHTHS {
            // The entry is in its slot already: the rebuilt index has it.
            let n = (self.leaves.len() * 2).max(8);
            self.reindex(n);
            return;
        }
        let n = self.leaves.len();
        let mut i = leaf_home(path, n);
        while self.leaves[i] != 0 {
            i = (i + 1) & (n - 1);
        }
        self.leaves[i] = slot as u32 + 1;
        self.leaf_len += 1;
    }

    /// Takes leaf `path`, in slot `slot`, out of the index: the rest of
    /// its run shifts back where that keeps every entry reachable.
    fn leaf_drop(&mut self, path: u32, slot: usize) {
        let Some(mut hole) = self.leaf_position(path, slot) else {
            return;
        };
        let n = self.leaves.len();
        let mut j = (hole + 1) & (n - 1);
        loop {
            let v = self.leaves[j];
            if v == 0 {
                break;
            }
            let p = entry_of(self.slot(v as usize - 1)[self.keys]).path;
            let home = leaf_home(p, n);
            // Movable into the hole unless its home lies after the hole,
            // within the run up to it (cyclically).
            if (j.wrapping_sub(home) & (n - 1)) >= (j.wrapping_sub(hole) & (n - 1)) {
                self.leaves[hole] = v;
                hole = j;
            }
            j = (j + 1) & (n - 1);
        }
        self.leaves[hole] = 0;
        self.leaf_len -= 1;
    }

    /// Rebuilds the leaf index with `n` slots from the entries.
    fn reindex(&mut self, n: usize) {
        let n = n.max(8).next_power_of_two();
        let mut leaves = vec![0u32; n];
        let mut count = 0;
        let k = self.keys;
        for (slot, s) in self.words.chunks_exact(self.stride()).enumerate() {
            if dist_of(s[k]).is_none() {
                continue;
            }
            if !is_leaf(s[k]) {
                continue;
            }
            let e = entry_of(s[k]);
            let mut i = leaf_home(e.path, n);
            while leaves[i] != 0 {
                i = (i + 1) & (n - 1);
            }
            leaves[i] = slot as u32 + 1;
            count += 1;
        }
        self.leaves = leaves;
        self.leaf_len = count;
    }

    /// Key words per entry.
    #[cfg(test)]
    fn keys(&self) -> usize {
        self.keys
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Number of slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.slots
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        (self.words.capacity() + self.homes.capacity()) * 8 + self.leaves.capacity() * 4
    }

    #[inline(always)]
    fn is_home(&self, i: usize) -> bool {
        self.homes
            .get(i / 64)
            .is_some_and(|b| b >> (i % 64) & 1 != 0)
    }

    fn set_home(&mut self, i: usize, on: bool) {
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if on {
            self.homes[w] |= bit;
        } else {
            self.homes[w] &= !bit;
        }
    }

    /// Whether an entry with home `home` is left: in Robin Hood order the
    /// entries of one home lie together, after those of earlier homes.
    fn home_taken(&self, home: usize) -> bool {
        let (k, stride) = (self.keys, self.stride());
        let mut j = home;
        for ahead in 0..self.slots {
            match dist_of(self.words[j * stride + k]) {
                Some(d) if d == ahead => return true,
                // Still an earlier home's entry.
                Some(d) if d > ahead => {}
                _ => return false,
            }
            j += 1;
            if j == self.slots {
                j = 0;
            }
        }
        false
    }

    fn stride(&self) -> usize {
        self.keys + 1
    }

    /// The home slot of hash `h`: its top bits scaled to the slot count.
    #[inline(always)]
    fn home(&self, h: u64) -> usize {
        ((u128::from(h) * self.slots as u128) >> 64) as usize
    }

    #[inline(always)]
    fn slot(&self, i: usize) -> &[u64] {
        let s = self.stride();
        &self.words[i * s..i * s + s]
    }

    /// Whether the slots outgrow a core's L2 cache (taken as 512 KB, half
    /// of this machine's AMD EPYC's 1 MB: the homes and the tree share
    /// it), so that a lookup's slot is likely a cache miss and worth
    /// loading early (`touch`).
    #[inline(always)]
    pub(crate) fn spills(&self) -> bool {
        const L2_SHARE: usize = 512 * 1024;
        self.words.len() * std::mem::size_of::<u64>() > L2_SHARE
    }

    /// Loads the home bit word and the home slot's meta word of hash `h`
    /// (what [`find_k`](Self::find_k) reads first), returning them mixed:
    /// the burst lookup's early load (`FlowTable::touch`).
    #[inline(always)]
    pub(crate) fn touch(&self, h: u64) -> u64 {
        let i = self.home(h);
        let bits = self.homes.get(i / 64).copied().unwrap_or(0);
        let meta = self
            .words
            .get(i * self.stride() + self.keys)
            .copied()
            .unwrap_or(0);
        bits ^ meta
    }

    /// The entry whose key words are `key` (the stored words, in order)
    /// under hash `h`, for which `accept` holds: one slot for a hit in its
    /// home, and a miss stops where Robin Hood order says the key would
    /// have been.
    #[inline(always)]
    pub(crate) fn find(
        &self,
        h: u64,
        key: &[u64],
        accept: impl Fn(Entry) -> bool,
    ) -> Option<Entry> {
        self.find_slot(h, key, accept).map(|i| {
            let s = self.slot(i);
            entry_of(s[self.keys])
        })
    }

    /// [`find`](Self::find) for a table of `K` key words, `K` known when
    /// compiled: the lookup's. The stride and the comparison are then
    /// constants — a multiply by a loaded stride and a loop over the
    /// words were a fifth of a probe — and the entry comes from the slot
    /// the probe compared.
    #[inline(always)]
    pub(crate) fn find_k<const K: usize>(
        &self,
        h: u64,
        key: &[u64; K],
        accept: impl Fn(Entry) -> bool,
    ) -> Option<Entry> {
        debug_assert_eq!(self.keys, K);
        let mut i = self.home(h);
        if !self.is_home(i) {
            return None;
        }
        let stride = K + 1;
        let mut d = 0;
        loop {
            let s = self.words.get(i * stride..i * stride + stride)?;
            let m = s[K];
            match dist_of(m) {
                Some(theirs) if theirs >= d => {
                    let mut same = true;
                    for j in 0..K {
                        same &= s[j] == key[j];
                    }
                    if same && accept(entry_of(m)) {
                        return Some(entry_of(m));
                    }
                }
                // Empty, or an entry nearer home than the key would be.
                _ => return None,
            }
            d += 1;
            i += 1;
            if i == self.slots {
                i = 0;
            }
        }
    }

    /// The slot of [`find`](Self::find)'s entry.
    #[inline(always)]
    pub(crate) fn find_slot(
        &self,
        h: u64,
        key: &[u64],
        accept: impl Fn(Entry) -> bool,
    ) -> Option<usize> {
        let mut i = self.home(h);
        if !self.is_home(i) {
            return None;
        }
        let (k, stride) = (self.keys, self.stride());
        let mut d = 0;
        loop {
            let s = self.words.get(i * stride..i * stride + stride)?;
            let m = s[k];
            match dist_of(m) {
                Some(theirs) if theirs >= d => {
                    // Word by word: a slice `==` would call `bcmp`.
                    if s.iter().zip(key).all(|(a, b)| a == b) && accept(entry_of(m)) {
                        return Some(i);
                    }
                }
                // Empty, or an entry nearer home than the key would be.
                _ => return None,
            }
            d += 1;
            i += 1;
            if i == self.slots {
                i = 0;
            }
        }
    }

    /// Whether one more entry needs the table to grow first.
    pub(crate) fn is_full(&self) -> bool {
        (self.len + 1) * 16 > self.slots * LOAD_SIXTEENTHS
    }

    /// The slot count to grow to: half as many again (at least 8).
    fn grown(&self) -> usize {
        (self.slots + self.slots / 2).max(8)
    }

    /// Every entry: its key words, path and chain, and whether it is a
    /// leaf.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&[u64], Entry, bool)> + '_ {
        let (k, stride) = (self.keys, self.stride());
        self.words
            .chunks_exact(stride)
            .filter(move |s| dist_of(s[k]).is_some())
            .map(move |s| (&s[..k], entry_of(s[k]), is_leaf(s[k])))
    }

    /// Refiles every entry in a table of `slots` slots and `keys` key
    /// words per entry; `relayout(old key, new key)` gives an entry's new
    /// key words and `hash` their hash.
    pub(crate) fn rebuild(
        &mut self,
        slots: usize,
        keys: usize,
        relayout: impl Fn(&[u64], &mut [u64]),
        hash: impl Fn(&[u64]) -> u64,
    ) {
        let old = std::mem::replace(self, FlowSlots::new(keys));
        self.slots = slots;
        self.words = vec![0; slots * (keys + 1)];
        self.homes = vec![0; slots.div_ceil(64)];
        let mut key = [0u64; crate::limits::WORDS];
        for (k, e, leaf) in old.entries() {
            relayout(k, &mut key[..keys]);
            let h = hash(&key[..keys]);
            self.insert(h, &key[..keys], e, leaf);
        }
        if old.leaf_len > 0 {
            self.reindex(old.leaves.len());
        }
    }

    /// Adds `e` with key words `key` under hash `h` (the caller knows it
    /// is not there), growing first if the table is full; `hash` gives a
    /// stored entry's hash from its key words. `false` (nothing added) if
    /// the entry's run is longer than a distance can say even after one
    /// more growth — only for hashes that collide on purpose; the path is
    /// then left to the tree, which answers for it all the same.
    /// A `leaf` entry is also found by its path ([`find_leaf`](Self::find_leaf)).
    pub(crate) fn insert_growing(
        &mut self,
        h: u64,
        key: &[u64],
        e: Entry,
        leaf: bool,
        hash: impl Fn(&[u64]) -> u64 + Copy,
    ) -> bool {
        if self.is_full() {
            self.rebuild(self.grown(), self.keys, |a, b| b.copy_from_slice(a), hash);
        }
        let mut filed = self.insert(h, key, e, leaf);
        if !filed {
            self.rebuild(self.grown(), self.keys, |a, b| b.copy_from_slice(a), hash);
            filed = self.insert(h, key, e, leaf);
        }
        if filed && leaf {
            if let Some(slot) = self.find_slot(h, key, |x| x == e) {
                self.leaf_add(e.path, slot);
            }
        }
        filed
    }

    /// Adds the entry, Robin Hood order; `false` (nothing changed) if it
    /// would sit further than [`MAX_DIST`] from its home.
    fn insert(&mut self, h: u64, key: &[u64], e: Entry, leaf: bool) -> bool {
        debug_assert!(self.len < self.slots);
        let (k, stride) = (self.keys, self.stride());
        // Where the run from the home slot has room, and how far.
        let mut i = self.home(h);
        let mut carry = [0u64; crate::limits::WORDS + 1];
        carry[..k].copy_from_slice(key);
        let mut carry_m = meta(e, 0, leaf);
        let mut carry_d = 0usize;
        // First a dry run: the entry and every one it displaces must stay
        // within MAX_DIST of home.
        {
            let (mut j, mut cd) = (i, 0usize);
            loop {
                let m = self.words[j * stride + k];
                let Some(theirs) = dist_of(m) else { break };
                if theirs < cd {
                    cd = theirs;
                }
                cd += 1;
                if cd > MAX_DIST {
                    return false;
                }
                j += 1;
                if j == self.slots {
                    j = 0;
                }
            }
        }
        self.set_home(i, true);
        // Where the entry carried came from (`None`: the new one), and
        // the moves made, for the leaf index (only when it has entries:
        // then no rebuild is under way, which reindexes at its end).
        let mut from = None;
        let track = self.leaf_len > 0;
        let mut moves = Vec::new();
        loop {
            let at = i * stride;
            let m = self.words[at + k];
            carry_m = carry_m & !(u64::MAX << DIST_SHIFT) | ((carry_d as u64) + 1) << DIST_SHIFT;
            match dist_of(m) {
                None => {
                    self.words[at..at + k].copy_from_slice(&carry[..k]);
                    self.words[at + k] = carry_m;
                    self.len += 1;
                    if track {
                        if let Some(f) = from {
                            moves.push((f, i));
                        }
                        // Latest first: a slot a move leaves is the one
                        // the move before fills, so in this order no two
                        // index entries hold the same slot at a time.
                        for &(f, t) in moves.iter().rev() {
                            self.leaf_moved(f, t);
                        }
                    }
                    return true;
                }
                Some(theirs) if theirs < carry_d => {
                    // Take the slot from the richer entry, carry it on.
                    let mut held = [0u64; crate::limits::WORDS + 1];
                    held[..k].copy_from_slice(&self.words[at..at + k]);
                    self.words[at..at + k].copy_from_slice(&carry[..k]);
                    self.words[at + k] = carry_m;
                    if track {
                        if let Some(f) = from {
                            moves.push((f, i));
                        }
                    }
                    from = Some(i);
                    carry = held;
                    carry_m = m;
                    carry_d = theirs;
                }
                Some(_) => {}
            }
            carry_d += 1;
            i += 1;
            if i == self.slots {
                i = 0;
            }
        }
    }

    /// Removes the entry in slot `i` (from [`find_slot`](Self::find_slot))
    /// and returns it: the rest of its run shifts back one slot.
    pub(crate) fn remove_at(&mut self, i: usize) -> Entry {
        let (k, stride) = (self.keys, self.stride());
        let m = self.words[i * stride + k];
        let gone = entry_of(m);
        if is_leaf(m) {
            self.leaf_drop(gone.path, i);
        }
        let dist = dist_of(m).unwrap_or(0);
        let home = (i + self.slots - dist) % self.slots;
        let mut hole = i;
        loop {
            let next = if hole + 1 == self.slots { 0 } else { hole + 1 };
            let m = self.words[next * stride + k];
            match dist_of(m) {
                Some(d) if d > 0 => {
                    let (from, to) = (next * stride, hole * stride);
                    self.words.copy_within(from..from + k, to);
                    self.words[to + k] = m - (1 << DIST_SHIFT);
                    if is_leaf(m) {
                        self.leaf_moved(next, hole);
                    }
                    hole = next;
                }
                _ => break,
            }
        }
        let at = hole * stride;
        self.words[at..at + stride].fill(0);
        self.len -= 1;
        if !self.home_taken(home) {
            self.set_home(home, false);
        }
        gone
    }

    /// Whether the home bits are exactly the homes of the entries.
    #[cfg(test)]
    fn homes_exact(&self) -> bool {
        let k = self.keys;
        let mut want = vec![0u64; self.homes.len()];
        for (j, s) in self.words.chunks_exact(self.stride()).enumerate() {
            if let Some(d) = dist_of(s[k]) {
                let h = (j + self.slots - d) % self.slots;
                want[h / 64] |= 1 << (h % 64);
            }
        }
        want == self.homes
    }

    /// `(entries, sum of distances from home, largest)`.
    #[cfg(feature = "testing")]
    pub(crate) fn displacements(&self) -> (usize, usize, usize) {
        let k = self.keys;
        let (mut sum, mut max) = (0, 0);
        for s in self.words.chunks_exact(self.stride()) {
            if let Some(d) = dist_of(s[k]) {
                sum += d;
                max = max.max(d);
            }
        }
        (self.len, sum, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(k: &[u64]) -> u64 {
        // Crowded homes: only a few distinct top bits.
        (k[0] % 5) << 61 | k[0]
    }

    /// Entries stay findable through inserts, growth, re-layout and
    /// backward-shift removals in any order, and a missing key is not
    /// found.
    #[test]
    fn slots_keep_runs_intact() {
        let mut t = FlowSlots::new(2);
        let key = |i: u64| [i, !i];
        // Every other entry a leaf, found by its path as well.
        let e = |i: u64| Entry {
            path: i as u32,
            chain: (i % 3) as u32,
        };
        let h = |k: &[u64]| hash(k);
        for i in 0..200u64 {
            assert!(t.insert_growing(hash(&key(i)), &key(i), e(i), i % 2 == 0, h));
            assert!(t.len() * 16 <= t.slots * LOAD_SIXTEENTHS);
            // Robin Hood insertion moves entries: the leaf index follows.
            for j in (0..=i).filter(|j| j % 2 == 0) {
                let slot = t.find_slot(hash(&key(j)), &key(j), |_| true);
                assert_eq!(t.find_leaf(j as u32), slot, "leaf {j} after inserting {i}");
            }
        }
        let mut live: Vec<u64> = (0..200).collect();
        for step in 0..200 {
            let pos = (step * 7) % live.len();
            let gone = live.remove(pos);
            // Two key words, one after the re-layout at step 100.
            let stored = |i: u64| if step > 100 { vec![i] } else { key(i).to_vec() };
            let k = stored(gone);
            let slot = t.find_slot(hash(&k), &k, |_| true).unwrap();
            assert_eq!(t.remove_at(slot), e(gone));
            assert_eq!(t.find(hash(&k), &k, |_| true), None);
            for &n in live.iter().step_by(5) {
                assert_eq!(t.find(hash(&stored(n)), &stored(n), |_| true), Some(e(n)));
            }
            assert_eq!(t.len(), live.len());
            assert!(t.homes_exact(), "home bits after removing {gone}");
            assert_eq!(t.find_leaf(gone as u32), None);
            for &n in &live {
                let k = stored(n);
                let slot = t.find_slot(hash(&k), &k, |_| true);
                let want = if n % 2 == 0 { slot } else { None };
                assert_eq!(
                    t.find_leaf(n as u32),
                    want,
                    "leaf {n} after removing {gone}"
                );
            }
            assert_eq!(t.leaf_len(), live.iter().filter(|&&n| n % 2 == 0).count());
            if step == 100 {
                // Re-layout to one key word (the first).
                t.rebuild(t.slots, 1, |a, b| b[0] = a[0], hash);
                assert_eq!(t.keys(), 1);
                for &n in &live {
                    assert_eq!(t.find(hash(&[n]), &[n], |_| true), Some(e(n)));
                }
            }
            if step > 100 {
                for &n in live.iter().step_by(3) {
                    assert_eq!(t.find(hash(&[n]), &[n], |_| true), Some(e(n)));
                }
            }
        }
        assert!(t.entries().next().is_none());
    }

    /// The meta word keeps path, chain and distance apart.
    #[test]
    fn meta_words_round_trip() {
        let e = Entry {
            path: u32::MAX - 1,
            chain: MAX_CHAINS - 1,
        };
        let m = meta(e, MAX_DIST, true);
        assert_eq!(entry_of(m), e);
        assert!(is_leaf(m) && !is_leaf(meta(e, MAX_DIST, false)));
        assert_eq!(dist_of(m), Some(MAX_DIST));
        assert_eq!(dist_of(0), None);
    }
}
