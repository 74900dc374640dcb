//! Demux nodes (thesis §3.4.3, the `DemuxNode` struct before Figure 3.8) and
//! the slab that owns them.
//!
//! A node stands for the set of paths whose keys agree with a message up to
//! one module. It records how many paths it represents (`num_paths`), the
//! path that ends at it, and the next module that refines the decision. The
//! thesis copies the parent's path into every node so that "the longest
//! path usable from it" is read directly; we carry that path along the walk
//! instead, so removing a path never has to rewrite the nodes below it.
//!
//! A node is exactly 32 bytes (two per cache line) and holds what the walk
//! reads: its edge *(parent, flags, key length)* packed in one word, so a
//! candidate is checked with one compare; 12-byte keys (an IPv4 active key
//! is 9, a TCP port pair 4) inline as two more words; the path, the next
//! module, and its **only child** (below). Longer keys, up to
//! [`Key::MAX_LEN`], spill into a side table. What only registration reads
//! is kept apart: the path count in a side array (4 bytes a node), and what
//! few nodes have — twins, and the children of a node with several — in
//! sparse maps (see [`NodeSlab`]). A path's own node, usually a leaf, so
//! costs 36 bytes; with its edge table slot and its entry in the tails
//! table (4 bytes each over their load factors, `hash.rs`) about 55 bytes
//! among 1,000,000 paths. A path that is also a flow added its flow-table
//! entry, about 21 bytes: 78.8 in all, above the 64 the classifier is held
//! to (issue 26). So an active flow path keeps no leaf: its flow entry is
//! its last level (a *leafless* path, `Classifier::register`), and the
//! node above it carries the `LEAFLESS` mark that sends a walk missing
//! below it to the flow table — about 33 bytes a path among 1,000,000
//! (`docs/design.md`).
//!
//! **Only child.** Most demux nodes have one child: the ETH node of an
//! IPv4-only host has one IP node below it, a connected socket's IP node one
//! UDP node. A node records that child, so the walk checks the child's edge
//! directly instead of hashing and probing the edge table — and, the child
//! being the node's only one, a mismatch is a definite miss. It plays the
//! part of the x-kernel map manager's one-entry cache of the last lookup,
//! but is exact rather than a guess: it never misses for a key the table
//! holds and never goes stale, so no mix of flows can make it thrash or
//! cost more than one compare. A node with several children falls back to
//! the table. The child is known from a count and the XOR of the children's
//! indices, which stays exact when children come and go in any order; only
//! a node with several children needs them recorded (a node with one is
//! its `only`, a node with none has neither).
//!
//! Each node also has a **twin**: the node of the other mode with the same
//! key whose parent is the twin of this node's parent (or which hangs from
//! the same receiving module), if it exists. A twin is what the passive walk
//! reaches when its keys equal the active walk's, so it lets the passive
//! walk take over the active walk's prefix without a hash probe (see
//! `Classifier::classify`). Twins live in a sparse map, not in the node: they
//! are read only when the active walk failed, few nodes have one (only
//! where both modes' keys agree all the way from the receiving module: an
//! EtherType, a pass-through level), and a mark in the node's edge word
//! says which, so keeping them out keeps the node at 32 bytes for the
//! active walk's cache lines and costs a node without a twin nothing.

use crate::{Key, KeyMode, ModuleId, PathId};

/// "None" in the u32 fields of a node; why `u32::MAX` ids are reserved.
pub(crate) const NONE: u32 = u32::MAX;
/// Keys up to this length live inside the node.
const INLINE: usize = 12;

/// Flag: the node belongs to the passive tree.
pub(crate) const PASSIVE: u8 = 1;
/// Flag: `parent` is the receiving module's id, not a node index.
pub(crate) const ROOT: u8 = 2;

/// The bits of [`DemuxNode::edge`] that name the edge; the depth and the
/// marks above them are not part of it.
pub(crate) const EDGE_MASK: u64 = (1 << 48) - 1;

/// Mark in [`DemuxNode::edge`]: the node has a twin (in `NodeSlab::twins`).
const TWIN: u64 = 1 << 56;

/// Mark in [`DemuxNode::edge`]: some path's last level below the node is
/// a flow entry, not a node (a *leafless* path, `classifier.rs`), so a
/// walk whose probe below it misses asks the flow table. Set when such a
/// path is filed, cleared when no path continues below the node any
/// more; in between it may outlive those paths, which costs a walk that
/// misses there one flow probe, never a wrong answer.
const LEAFLESS: u64 = 1 << 57;

/// The packed edge word of `(parent, flags, key length)`.
#[inline(always)]
pub(crate) fn edge_word(parent: u32, flags: u8, key_len: u64) -> u64 {
    u64::from(parent) | (u64::from(flags) << 32) | (key_len << 40)
}

/// One edge looked up by the walk, in the form a node stores it, so that
/// checking a candidate node is three word compares.
pub(crate) struct Probe<'k> {
    /// [`edge_word`] of the edge.
    pub(crate) edge: u64,
    pub(crate) key: &'k Key,
}

impl<'k> Probe<'k> {
    #[inline(always)]
    pub(crate) fn new(parent: u32, flags: u8, key: &'k Key) -> Self {
        Probe {
            edge: edge_word(parent, flags, key.len),
            key,
        }
    }
}

/// A handle to a demux node: what registering one level returns, so that
/// the next level can register below it (Scout's `PREVIOUS_DEMUX_NODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DemuxNodeRef(pub(crate) u32);

/// A read-only view of one demux node, for inspection and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemuxNodeInfo {
    /// How many path chains pass through or end at this node.
    pub num_paths: u32,
    /// The path whose keys end exactly here, if any.
    pub path: Option<PathId>,
    /// The module that refines the decision after this node, if any path continues.
    pub next_module: Option<ModuleId>,
    /// Which tree the node is in.
    pub mode: KeyMode,
    /// Levels from the receiving module (the root node is depth 1).
    pub depth: u8,
}

/// One demux node: what a lookup reads, in one half cache line.
#[derive(Clone, Copy)]
pub(crate) struct DemuxNode {
    /// `parent | flags << 32 | key_len << 40 | depth << 48 | marks << 56`
    /// (the marks [`TWIN`] and [`LEAFLESS`]); in a free slot, the next free slot (or `NONE`)
    /// in the low half.
    pub(crate) edge: u64,
    /// Key bytes 0..8 (zero padded), or the spill index of a longer key.
    key_lo: u64,
    /// Key bytes 8..12.
    key_hi: u32,
    pub(crate) next_module: u32,
    pub(crate) path: u32,
    /// The only child, if the node has exactly one; else `NONE`.
    pub(crate) only: u32,
}

const _: () = assert!(std::mem::size_of::<DemuxNode>() == 32);

impl DemuxNode {
    /// The parent node (or receiving module, for a root).
    #[inline]
    pub(crate) fn parent(&self) -> u32 {
        self.edge as u32
    }

    #[inline]
    pub(crate) fn flags(&self) -> u8 {
        (self.edge >> 32) as u8
    }

    #[inline]
    fn key_len(&self) -> usize {
        usize::from((self.edge >> 40) as u8)
    }

    #[inline]
    pub(crate) fn depth(&self) -> u8 {
        (self.edge >> 48) as u8
    }
}

/// A set of children, enough to name the only one: a count and the XOR of
/// their indices (which *is* the child while the count is 1).
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Family {
    count: u32,
    xor: u32,
}

impl Family {
    /// `child` was added (`add`) or removed.
    pub(crate) fn changed(&mut self, child: u32, add: bool) {
        if add {
            self.add(child);
        } else {
            self.count -= 1;
            self.xor ^= child;
        }
    }

    /// The family of the two children `a` and `b`.
    fn of_two(a: u32, b: u32) -> Family {
        Family {
            count: 2,
            xor: a ^ b,
        }
    }

    pub(crate) fn add(&mut self, child: u32) {
        self.count += 1;
        self.xor ^= child;
    }

    /// No child at all.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The only child, or `NONE` when there are none or several.
    #[inline]
    pub(crate) fn only(&self) -> u32 {
        if self.count == 1 {
            self.xor
        } else {
            NONE
        }
    }
}

/// What few nodes have, by node index: `(node, value)` entries in an
/// open-addressing table, linearly probed from a Fibonacci hash of the node
/// index and at most half full (twins; the children of nodes with several).
///
/// Not a `hashbrown` map: the passive walk reads a twin per level it takes
/// over, and registration updates a family per path added below a node
/// with several children (thousands, below a busy host's IP node); a
/// general map's hashing and group probing cost more than either. Unseeded,
/// because what it holds comes from registration, never from the wire.
struct SideTable<V> {
    /// `(node, value)`, node `NONE` for a vacant slot.
    slots: Vec<(u32, V)>,
    len: usize,
}

impl<V: Copy + Default> Default for SideTable<V> {
    fn default() -> Self {
        SideTable {
            slots: Vec::new(),
            len: 0,
        }
    }
}

impl<V: Copy + Default> SideTable<V> {
    const VACANT: u32 = NONE;

    #[inline(always)]
    fn home(node: u32, n: usize) -> usize {
        // n is a power of two of at least 8: keep the product's top bits.
        (u64::from(node).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - n.trailing_zeros())) as usize
    }

    /// The slot holding `node`, if any.
    #[inline]
    fn slot(&self, node: u32) -> Option<usize> {
        let n = self.slots.len();
        if n == 0 {
            return None;
        }
        let mut i = Self::home(node, n);
        loop {
            match self.slots[i].0 {
                Self::VACANT => return None,
                k if k == node => return Some(i),
                _ => i = (i + 1) & (n - 1),
            }
        }
    }

    #[inline]
    fn get(&self, node: u32) -> Option<V> {
        self.slot(node).map(|i| self.slots[i].1)
    }

    fn get_mut(&mut self, node: u32) -> Option<&mut V> {
        self.slot(node).map(|i| &mut self.slots[i].1)
    }

    fn contains(&self, node: u32) -> bool {
        self.slot(node).is_some()
    }

    /// Records `value` for `node`, which has none.
    fn insert(&mut self, node: u32, value: V) {
        debug_assert!(node != Self::VACANT && !self.contains(node));
        if (self.len + 1) * 2 > self.slots.len() {
            let n = (self.slots.len() * 2).max(8);
            let old = std::mem::replace(&mut self.slots, vec![(Self::VACANT, V::default()); n]);
            for e in old.into_iter().filter(|e| e.0 != Self::VACANT) {
                self.place(e);
            }
        }
        self.place((node, value));
        self.len += 1;
    }

    fn place(&mut self, entry: (u32, V)) {
        let n = self.slots.len();
        let mut i = Self::home(entry.0, n);
        while self.slots[i].0 != Self::VACANT {
            i = (i + 1) & (n - 1);
        }
        self.slots[i] = entry;
    }

    /// Forgets `node`'s value, if recorded (backward shift, as in
    /// `hash.rs`).
    fn remove(&mut self, node: u32) -> Option<V> {
        let i = self.slot(node)?;
        let value = self.slots[i].1;
        let n = self.slots.len();
        let mut hole = i;
        let mut j = (i + 1) & (n - 1);
        loop {
            let e = self.slots[j];
            if e.0 == Self::VACANT {
                break;
            }
            let home = Self::home(e.0, n);
            if (j.wrapping_sub(home) & (n - 1)) >= (j.wrapping_sub(hole) & (n - 1)) {
                self.slots[hole] = e;
                hole = j;
            }
            j = (j + 1) & (n - 1);
        }
        self.slots[hole].0 = Self::VACANT;
        self.len -= 1;
        Some(value)
    }

    /// The recorded `(node, value)` pairs.
    #[cfg(feature = "testing")]
    fn iter(&self) -> impl Iterator<Item = (u32, V)> + '_ {
        self.slots.iter().copied().filter(|e| e.0 != Self::VACANT)
    }

    fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<(u32, V)>()
    }
}

/// Owner of all demux nodes: a slab with an intrusive free list, plus the
/// spill table for keys longer than [`INLINE`].
///
/// Per node, besides the 32-byte node, only the path count is kept densely
/// (4 bytes): what the walk does not read and most nodes do not have lives
/// in sparse maps — the children of a node with several (a node with one
/// names it in `only`, one with none has `only == NONE` and no entry), and
/// twins (a node that has one carries the [`TWIN`] mark, so nodes without
/// are never looked up). A path's leaf node, what most nodes are, so costs
/// 36 bytes where a dense side array of counts, twin and children made it
/// 48.
#[derive(Default)]
pub(crate) struct NodeSlab {
    nodes: Vec<DemuxNode>,
    /// Paths passing through or ending at each node; 0 marks a free slot.
    num_paths: Vec<u32>,
    /// The children of the nodes that have two or more.
    families: SideTable<Family>,
    /// Each node's twin in the other mode's tree, for the nodes marked
    /// [`TWIN`]. Symmetric, and only ever names live nodes: `free` unlinks
    /// both sides.
    twins: SideTable<u32>,
    free_head: Option<u32>,
    live: u32,
    spill: Vec<[u8; Key::MAX_LEN]>,
    spill_free: Vec<u32>,
}

impl NodeSlab {
    #[inline]
    pub(crate) fn get(&self, idx: u32) -> &DemuxNode {
        &self.nodes[idx as usize]
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, idx: u32) -> &mut DemuxNode {
        &mut self.nodes[idx as usize]
    }

    /// How many paths pass through or end at node `idx`.
    #[inline]
    pub(crate) fn num_paths(&self, idx: u32) -> u32 {
        self.num_paths[idx as usize]
    }

    /// Paths that continue below node `idx` (those that do not end here).
    #[inline]
    pub(crate) fn continuing(&self, idx: u32) -> u32 {
        self.num_paths(idx) - u32::from(self.get(idx).path != NONE)
    }

    /// One more path through node `idx`.
    pub(crate) fn add_path(&mut self, idx: u32) {
        self.num_paths[idx as usize] += 1;
    }

    /// One path fewer through node `idx`; returns how many remain.
    pub(crate) fn drop_path(&mut self, idx: u32) -> u32 {
        let c = &mut self.num_paths[idx as usize];
        *c -= 1;
        *c
    }

    /// Node `idx` gained (`add`) or lost a child; keeps its only child.
    pub(crate) fn child_changed(&mut self, idx: u32, child: u32, add: bool) {
        let only = &mut self.nodes[idx as usize].only;
        match (*only, add) {
            // One child: a second makes a family; losing it leaves none.
            (o, true) if o != NONE => {
                self.families.insert(idx, Family::of_two(o, child));
                *only = NONE;
            }
            (o, false) if o != NONE => {
                debug_assert_eq!(o, child);
                *only = NONE;
            }
            // None or several: one map lookup, which finds the family of a
            // node with several (a connection's host node with thousands of
            // ports churns here) or makes the first child the only one.
            _ => match self.families.get_mut(idx) {
                Some(f) => {
                    f.changed(child, add);
                    if f.count == 1 {
                        *only = f.xor;
                        self.families.remove(idx);
                    }
                }
                None => {
                    debug_assert!(add, "node {idx} loses a child it does not have");
                    *only = child;
                }
            },
        }
    }

    /// Node `idx`'s children, from its only child or its family entry
    /// (the invariant check's view; walks use the only child and the edge
    /// table).
    #[cfg(feature = "testing")]
    pub(crate) fn children(&self, idx: u32) -> Family {
        match self.nodes[idx as usize].only {
            NONE => self.families.get(idx).unwrap_or_default(),
            only => Family {
                count: 1,
                xor: only,
            },
        }
    }

    /// The node `r` names, if it is live.
    pub(crate) fn live(&self, r: DemuxNodeRef) -> Option<&DemuxNode> {
        let i = r.0 as usize;
        self.num_paths
            .get(i)
            .filter(|&&n| n > 0)
            .map(|_| &self.nodes[i])
    }

    /// Inspection view of live node `idx`.
    pub(crate) fn info(&self, idx: u32) -> DemuxNodeInfo {
        let n = self.get(idx);
        DemuxNodeInfo {
            num_paths: self.num_paths(idx),
            path: (n.path != NONE).then_some(PathId(n.path)),
            next_module: (n.next_module != NONE).then_some(ModuleId(n.next_module)),
            mode: if n.flags() & PASSIVE != 0 {
                KeyMode::Passive
            } else {
                KeyMode::Active
            },
            depth: n.depth(),
        }
    }

    /// Heap bytes of the nodes, of their path counts, and of the sparse
    /// maps and spilled keys.
    pub(crate) fn footprint(&self) -> (usize, usize, usize) {
        (
            self.nodes.capacity() * std::mem::size_of::<DemuxNode>(),
            self.num_paths.capacity() * 4,
            self.families.heap_bytes()
                + self.twins.heap_bytes()
                + self.spill.capacity() * Key::MAX_LEN
                + self.spill_free.capacity() * 4,
        )
    }

    /// Whether node `idx` carries the [`LEAFLESS`] mark.
    #[inline(always)]
    pub(crate) fn has_leafless(&self, idx: u32) -> bool {
        self.get(idx).edge & LEAFLESS != 0
    }

    /// Sets (`on`) or clears node `idx`'s [`LEAFLESS`] mark.
    pub(crate) fn mark_leafless(&mut self, idx: u32, on: bool) {
        let n = self.get_mut(idx);
        if on {
            n.edge |= LEAFLESS;
        } else {
            n.edge &= !LEAFLESS;
        }
    }

    /// Node `idx`'s twin, or `NONE`.
    #[inline]
    pub(crate) fn twin(&self, idx: u32) -> u32 {
        if self.get(idx).edge & TWIN == 0 {
            return NONE;
        }
        self.twins.get(idx).unwrap_or(NONE)
    }

    /// Makes live nodes `a` and `b` each other's twin.
    pub(crate) fn link_twins(&mut self, a: u32, b: u32) {
        self.twins.insert(a, b);
        self.twins.insert(b, a);
        self.get_mut(a).edge |= TWIN;
        self.get_mut(b).edge |= TWIN;
    }

    /// Indices of the live nodes, in slab order (what the tables are
    /// rebuilt from when they grow).
    pub(crate) fn live_indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.num_paths
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, _)| i as u32)
    }

    /// Whether the sparse maps name only live nodes, families only nodes
    /// with several children and twins only marked nodes (for invariant
    /// checks).
    #[cfg(feature = "testing")]
    pub(crate) fn side_maps_consistent(&self) -> bool {
        let live = |i: u32| self.num_paths.get(i as usize).is_some_and(|&n| n > 0);
        self.families
            .iter()
            .all(|(i, f)| live(i) && f.count >= 2 && self.get(i).only == NONE)
            && self
                .twins
                .iter()
                .all(|(i, t)| live(i) && live(t) && self.get(i).edge & TWIN != 0)
    }

    pub(crate) fn live_count(&self) -> u32 {
        self.live
    }

    /// Whether node `idx` has the edge `p` looks for.
    #[inline(always)]
    pub(crate) fn matches(&self, idx: u32, p: &Probe<'_>) -> bool {
        let n = self.get(idx);
        if (n.edge ^ p.edge) & EDGE_MASK != 0 {
            return false;
        }
        let len = p.key.len();
        if len <= INLINE {
            // Both sides are zero padded, so whole-word compares are exact.
            n.key_lo == p.key.word(0) && n.key_hi == p.key.word(1) as u32
        } else {
            self.spill_matches(n, p.key)
        }
    }

    #[inline(never)]
    fn spill_matches(&self, n: &DemuxNode, key: &Key) -> bool {
        self.spill[n.key_lo as usize] == key.bytes
    }

    /// The key stored in node `idx`.
    pub(crate) fn key(&self, idx: u32) -> Key {
        let n = self.get(idx);
        let len = n.key_len();
        let mut k = Key::EMPTY;
        if len <= INLINE {
            k.bytes[..8].copy_from_slice(&n.key_lo.to_le_bytes());
            k.bytes[8..INLINE].copy_from_slice(&n.key_hi.to_le_bytes());
        } else {
            k.bytes = self.spill[n.key_lo as usize];
        }
        k.len = len as u64;
        k
    }

    /// Allocates a node with zero paths; the caller bumps its count at once.
    pub(crate) fn alloc(&mut self, parent: u32, flags: u8, depth: u8, key: &Key) -> u32 {
        let (key_lo, key_hi) = if key.len() <= INLINE {
            (key.word(0), key.word(1) as u32)
        } else {
            let s = match self.spill_free.pop() {
                Some(s) => {
                    self.spill[s as usize] = key.bytes;
                    s
                }
                None => {
                    self.spill.push(key.bytes);
                    (self.spill.len() - 1) as u32
                }
            };
            (u64::from(s), 0)
        };
        let node = DemuxNode {
            edge: edge_word(parent, flags, key.len) | (u64::from(depth) << 48),
            key_lo,
            key_hi,
            next_module: NONE,
            path: NONE,
            only: NONE,
        };
        self.live += 1;
        match self.free_head {
            Some(idx) => {
                let link = self.get(idx).parent();
                self.free_head = (link != NONE).then_some(link);
                *self.get_mut(idx) = node;
                idx
            }
            None => {
                self.nodes.push(node);
                self.num_paths.push(0);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Returns node `idx` (with no paths left) to the free list.
    pub(crate) fn free(&mut self, idx: u32) {
        let n = *self.get(idx);
        debug_assert_eq!(self.num_paths(idx), 0);
        if n.key_len() > INLINE {
            self.spill_free.push(n.key_lo as u32);
        }
        // No paths left means no children left: no family entry.
        debug_assert!(n.only == NONE && !self.families.contains(idx));
        if n.edge & TWIN != 0 {
            let t = self.twins.remove(idx).unwrap_or(NONE);
            if t != NONE {
                self.twins.remove(t);
                self.get_mut(t).edge &= !TWIN;
            }
        }
        let link = self.free_head.unwrap_or(NONE);
        let slot = self.get_mut(idx);
        slot.edge = u64::from(link);
        slot.next_module = NONE;
        slot.path = NONE;
        slot.only = NONE;
        self.free_head = Some(idx);
        self.live -= 1;
    }
}
