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
//! A node is exactly 32 bytes (two per cache line): 13-byte keys (an IPv4
//! active key is 9, a TCP port pair 4) are stored inline; longer keys, up
//! to [`Key::MAX_LEN`], spill into a side table.
//!
//! Each node also has a **twin**: the node of the other mode with the same
//! key whose parent is the twin of this node's parent (or which hangs from
//! the same receiving module), if it exists. A twin is what the passive walk
//! reaches when its keys equal the active walk's, so it lets the passive
//! walk take over the active walk's prefix without a hash probe (see
//! `Classifier::classify`). Twins live in a side array, not in the node: they
//! are read only when the active walk failed, and keeping them out keeps the
//! node at 32 bytes for the active walk's cache lines.

use crate::{Key, KeyMode, ModuleId, PathId};

/// "None" in the u32 fields of a node; why `u32::MAX` ids are reserved.
pub(crate) const NONE: u32 = u32::MAX;
/// Keys up to this length live inside the node.
const INLINE: usize = 13;

/// Flag: the node belongs to the passive tree.
pub(crate) const PASSIVE: u8 = 1;
/// Flag: `parent` is the receiving module's id, not a node index.
pub(crate) const ROOT: u8 = 2;

/// A handle to a demux node: what a stage passes on in the
/// `PREVIOUS_DEMUX_NODE` attribute so the next stage can register below it.
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

/// One demux node. `num_paths == 0` marks a free slot whose `parent` links
/// the free list.
#[derive(Clone, Copy)]
pub(crate) struct DemuxNode {
    pub(crate) parent: u32,
    pub(crate) next_module: u32,
    pub(crate) path: u32,
    pub(crate) num_paths: u32,
    pub(crate) flags: u8,
    pub(crate) depth: u8,
    key_len: u8,
    /// Inline key bytes (zero padded) or, for longer keys, the spill index.
    key: [u8; INLINE],
}

const _: () = assert!(std::mem::size_of::<DemuxNode>() == 32);

impl DemuxNode {
    pub(crate) fn info(&self) -> DemuxNodeInfo {
        DemuxNodeInfo {
            num_paths: self.num_paths,
            path: (self.path != NONE).then_some(PathId(self.path)),
            next_module: (self.next_module != NONE).then_some(ModuleId(self.next_module)),
            mode: if self.flags & PASSIVE != 0 {
                KeyMode::Passive
            } else {
                KeyMode::Active
            },
            depth: self.depth,
        }
    }

    /// Paths that continue below this node (those that do not end here).
    #[inline]
    pub(crate) fn continuing(&self) -> u32 {
        self.num_paths - u32::from(self.path != NONE)
    }
}

/// Owner of all demux nodes: a slab with an intrusive free list, plus the
/// spill table for keys longer than [`INLINE`].
#[derive(Default)]
pub(crate) struct NodeSlab {
    nodes: Vec<DemuxNode>,
    free_head: Option<u32>,
    live: u32,
    spill: Vec<[u8; Key::MAX_LEN]>,
    spill_free: Vec<u32>,
    /// `twin[i]`: node `i`'s twin in the other mode's tree, or `NONE`.
    /// Symmetric, and only ever names live nodes: `free` unlinks both sides.
    twin: Vec<u32>,
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

    /// The node `r` names, if it is live.
    pub(crate) fn live(&self, r: DemuxNodeRef) -> Option<&DemuxNode> {
        self.nodes.get(r.0 as usize).filter(|n| n.num_paths > 0)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<DemuxNode>()
            + self.spill.capacity() * Key::MAX_LEN
            + self.spill_free.capacity() * 4
            + self.twin.capacity() * 4
    }

    /// Node `idx`'s twin, or `NONE`.
    #[inline]
    pub(crate) fn twin(&self, idx: u32) -> u32 {
        self.twin[idx as usize]
    }

    /// Makes live nodes `a` and `b` each other's twin.
    pub(crate) fn link_twins(&mut self, a: u32, b: u32) {
        self.twin[a as usize] = b;
        self.twin[b as usize] = a;
    }

    /// Indices of the live nodes (for invariant checks).
    #[cfg(feature = "testing")]
    pub(crate) fn live_indices(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.nodes.len() as u32).filter(|&i| self.get(i).num_paths > 0)
    }

    pub(crate) fn live_count(&self) -> u32 {
        self.live
    }

    /// Whether node `idx` has edge `(parent, flags, key)`.
    #[inline]
    pub(crate) fn matches(&self, idx: u32, parent: u32, flags: u8, key: &Key) -> bool {
        let n = self.get(idx);
        if n.parent != parent || n.flags != flags || u64::from(n.key_len) != key.len {
            return false;
        }
        let len = key.len as usize;
        if len <= INLINE {
            // Both sides are zero padded, so a fixed-size compare is exact
            // and cheaper than a variable-length memcmp.
            n.key == key.bytes[..INLINE]
        } else {
            self.spill[spill_index(n) as usize][..len] == key.bytes[..len]
        }
    }

    /// The key stored in node `idx`.
    pub(crate) fn key(&self, idx: u32) -> Key {
        let n = self.get(idx);
        let len = n.key_len as usize;
        let mut k = Key::EMPTY;
        if len <= INLINE {
            k.bytes[..INLINE].copy_from_slice(&n.key);
        } else {
            k.bytes = self.spill[spill_index(n) as usize];
        }
        k.len = u64::from(n.key_len);
        k
    }

    /// Allocates a node with zero paths; the caller bumps `num_paths` at once.
    pub(crate) fn alloc(&mut self, parent: u32, flags: u8, depth: u8, key: &Key) -> u32 {
        let mut inline = [0u8; INLINE];
        let len = key.len as usize;
        if len <= INLINE {
            inline.copy_from_slice(&key.bytes[..INLINE]);
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
            inline[..4].copy_from_slice(&s.to_le_bytes());
        }
        let node = DemuxNode {
            parent,
            next_module: NONE,
            path: NONE,
            num_paths: 0,
            flags,
            depth,
            key_len: key.len as u8,
            key: inline,
        };
        self.live += 1;
        match self.free_head {
            Some(idx) => {
                self.free_head = (self.get(idx).parent != NONE).then_some(self.get(idx).parent);
                *self.get_mut(idx) = node;
                // `free` left the slot unlinked.
                debug_assert_eq!(self.twin[idx as usize], NONE);
                idx
            }
            None => {
                self.nodes.push(node);
                self.twin.push(NONE);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Returns node `idx` (with `num_paths == 0`) to the free list.
    pub(crate) fn free(&mut self, idx: u32) {
        let n = *self.get(idx);
        debug_assert_eq!(n.num_paths, 0);
        if n.key_len as usize > INLINE {
            self.spill_free.push(spill_index(&n));
        }
        let t = std::mem::replace(&mut self.twin[idx as usize], NONE);
        if t != NONE {
            self.twin[t as usize] = NONE;
        }
        let link = self.free_head.unwrap_or(NONE);
        let slot = self.get_mut(idx);
        slot.parent = link;
        slot.next_module = NONE;
        slot.path = NONE;
        self.free_head = Some(idx);
        self.live -= 1;
    }
}

fn spill_index(n: &DemuxNode) -> u32 {
    u32::from_le_bytes([n.key[0], n.key[1], n.key[2], n.key[3]])
}
