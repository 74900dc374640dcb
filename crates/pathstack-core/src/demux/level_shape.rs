//! The shape of a path's demux levels — which modules, in which order, and
//! which of them the tree holds — kept once for all the paths that share
//! it, so that `Demux` keeps 4 bytes a path to give a path's levels back
//! (issue 26: a path's bytes).
//!
//! A path's keys are in the classifier's tree
//! ([`Classifier::path_levels`](pathstack_classify::Classifier::path_levels)),
//! but not all of its levels are: a keyless level at a module without a
//! partial classifier (ARP under IP), and the keyless levels above the
//! last key (a socket's stage above TCP), add nothing to the tree. They
//! are what varies from one kind of path to another, not from one
//! connection to the next: a host's thousands of TCP connections have one
//! shape. `classify_from` and `classify_below` (IP reassembly, ICMP errors)
//! need all the levels, so the shape keeps the modules and says which
//! levels' keys to take from the tree; the rest have none.

use super::MAX_LEVELS;
use crate::fast_map::FastMap;
use crate::ids::ModuleId;
use std::hash::{Hash, Hasher};

/// "No shape": a path that registered no key.
pub(super) const NO_SHAPE: u32 = u32::MAX;

/// Most distinct shapes of the live paths. A shape is a sequence of module
/// instances of the stack's module graph, so a stack has a handful (one
/// per kind of path: a TCP connection, a UDP socket, ARP's, ICMP's); the
/// bound keeps the table bounded whatever a caller registers.
pub(super) const MAX_SHAPES: usize = 4096;

/// One shape: the modules of a path's levels from the receiving end, and
/// a bit per level the tree holds (levels are at most
/// [`MAX_LEVELS`](super::MAX_LEVELS), 32).
///
/// The modules are held in place, not boxed: every path made looks its
/// shape up, and a boxed key cost an allocation and a free per path
/// (issue 28 item 4, opens per second); the table holds a handful of
/// shapes, so their 136 octets each are nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LevelShape {
    /// The first `len` are the levels' modules; the rest stay
    /// `ModuleId(0)`, so the derived equality is the prefix's.
    modules: [ModuleId; MAX_LEVELS],
    len: u8,
    pub(super) in_tree: u32,
}

impl LevelShape {
    /// The shape of levels `modules` (`None`: more than `MAX_LEVELS`).
    pub(super) fn new(
        modules: impl ExactSizeIterator<Item = ModuleId>,
        in_tree: u32,
    ) -> Option<Self> {
        let len = modules.len();
        if len > MAX_LEVELS {
            return None;
        }
        let mut m = [ModuleId(0); MAX_LEVELS];
        for (slot, id) in m.iter_mut().zip(modules) {
            *slot = id;
        }
        Some(LevelShape {
            modules: m,
            len: len as u8,
            in_tree,
        })
    }

    /// The levels' modules, from the receiving end.
    pub(super) fn modules(&self) -> &[ModuleId] {
        &self.modules[..self.len as usize]
    }
}

/// The used levels only (equal shapes have equal prefixes and zero
/// tails, so this agrees with the derived equality).
impl Hash for LevelShape {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u8(self.len);
        for m in self.modules() {
            state.write_u32(m.0);
        }
        state.write_u32(self.in_tree);
    }
}

const _: () = assert!(MAX_LEVELS <= 32);

/// The shapes of the live paths, each counted by its paths and freed with
/// the last of them.
#[derive(Debug, Default)]
pub(super) struct LevelShapes {
    /// By shape id: the shape and how many paths have it (`None`: free).
    slots: Vec<Option<(LevelShape, u32)>>,
    ids: FastMap<LevelShape, u32>,
    free: Vec<u32>,
}

impl LevelShapes {
    /// The id of `shape`, counted for one more path; `None` when
    /// [`MAX_SHAPES`] shapes are live and `shape` is not one of them.
    pub(super) fn acquire(&mut self, shape: LevelShape) -> Option<u32> {
        if let Some(&id) = self.ids.get(&shape) {
            if let Some(Some((_, n))) = self.slots.get_mut(id as usize) {
                *n += 1;
            }
            return Some(id);
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None if self.slots.len() < MAX_SHAPES => {
                self.slots.push(None);
                (self.slots.len() - 1) as u32
            }
            None => return None,
        };
        self.ids.insert(shape.clone(), id);
        self.slots[id as usize] = Some((shape, 1));
        Some(id)
    }

    /// One path fewer has shape `id` (nothing for [`NO_SHAPE`]).
    pub(super) fn release(&mut self, id: u32) {
        let Some(slot) = self.slots.get_mut(id as usize) else {
            return;
        };
        if let Some((shape, n)) = slot {
            *n -= 1;
            if *n == 0 {
                self.ids.remove(shape);
                *slot = None;
                self.free.push(id);
            }
        }
    }

    pub(super) fn get(&self, id: u32) -> Option<&LevelShape> {
        self.slots.get(id as usize)?.as_ref().map(|(s, _)| s)
    }

    /// Live shapes.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }
}
