//! The stack's classifier: Scout's demux tree (thesis §3.4), from
//! `pathstack-classify`, keyed by module instances and paths of this stack.
//!
//! A path's keys are registered when it is established, walking its stages
//! from the receiving end (`end[1]`, the device side for paths created from
//! the top) towards `end[0]`: each stage names its partial key with
//! [`Stage::demux_key`](crate::stage::Stage::demux_key), passes through, or
//! stops classification at itself. Scout threads the `PREVIOUS_DEMUX_NODE`
//! attribute through the establish callbacks in creation order; we do the
//! same walk in the core, in classification order, passing each level the
//! node of the one before, so that it is right whichever end the path was
//! created from.

use crate::error::PathError;
use crate::ids::{Dir, ModuleId, PathId};
use level_shape::{LevelShape, LevelShapes, NO_SHAPE};
use pathstack_classify as pc;

mod level_shape;
pub use pathstack_classify::{
    DemuxNodeRef, FlowLayout, HeaderLen, Key, KeyMode, PartialClassifier,
};

/// What a stage contributes to its path's classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemuxKey {
    /// The module does not demultiplex on this path: pass through.
    Pass,
    /// The module's partial key for this path.
    Key(Key),
    /// Stop classification at this module (after registering `Key` if
    /// given): later modules' keys are not used, e.g. because the data is
    /// encrypted beyond this point (thesis §3.4.3.2).
    Stop(Option<Key>),
}

/// Most demultiplexing levels of one path.
pub(crate) const MAX_LEVELS: usize = 32;

/// Most levels below a module that re-classifies with
/// [`Demux::classify_from`].
const MAX_PREFIX: usize = 8;

/// The levels of one path, (module, key) from the receiving end; a level
/// without a key has the empty one.
type Levels = [(ModuleId, Key); MAX_LEVELS];

/// The classifier of one stack.
pub struct Demux {
    tree: pc::Classifier,
    generations: Vec<u32>,
    /// Each registered path's [`LevelShape`] id, indexed by path index
    /// ([`NO_SHAPE`] when it registered no key): with the keys the tree
    /// holds, the path's levels, what [`classify_from`](Self::classify_from)
    /// replays below the module that re-classifies. 4 bytes a path where a
    /// copy of the levels was a 16-byte box of 30 to 50 bytes (issue 26);
    /// read only when a module re-classifies.
    shapes: Vec<u32>,
    shape_table: LevelShapes,
}

impl Demux {
    pub(crate) fn new() -> Self {
        Demux {
            tree: pc::Classifier::new(),
            generations: Vec::new(),
            shapes: Vec::new(),
            shape_table: LevelShapes::default(),
        }
    }

    /// The levels `on` registered, into `out`; how many. `None` when `on`
    /// is not registered with a key (or no longer: its generation).
    fn levels_of(&self, on: PathId, out: &mut Levels) -> Option<usize> {
        if self.generations.get(on.index as usize) != Some(&on.generation) {
            return None;
        }
        let shape = self.shape_table.get(*self.shapes.get(on.index as usize)?)?;
        let mut keys = [(pc::ModuleId(0), Key::EMPTY); pc::MAX_DEPTH];
        let kept = self.tree.path_levels(pc::PathId(on.index), &mut keys)?;
        let mut keys = keys[..kept].iter();
        for (i, (&m, slot)) in shape.modules().iter().zip(out.iter_mut()).enumerate() {
            let key = if shape.in_tree & (1 << i) != 0 {
                let &(km, k) = keys.next()?;
                // The tree holds this path's chain as registered; a
                // mismatch would be a broken invariant, answered with
                // nothing rather than with another path's keys.
                if km.0 != m.0 {
                    return None;
                }
                k
            } else {
                Key::EMPTY
            };
            *slot = (m, key);
        }
        Some(shape.modules().len())
    }

    /// Installs the partial classifier of a module.
    pub(crate) fn set_partial_classifier(
        &mut self,
        module: ModuleId,
        p: Box<dyn PartialClassifier>,
    ) -> Result<(), pc::ClassifyError> {
        self.tree.set_partial_classifier(pc::ModuleId(module.0), p)
    }

    /// The path (and the direction it is entered in) for a message arriving
    /// at `module`, or `None`.
    #[inline(always)]
    pub fn classify(&self, module: ModuleId, msg: &[u8]) -> Option<(PathId, Dir)> {
        let p = self.tree.classify(pc::ModuleId(module.0), msg)?;
        self.found(p)
    }

    /// The path for `msg`, which starts with `module`'s header, as if it
    /// had arrived at the receiving end of `on` (a path through `module`)
    /// with the same lower-level headers as the messages of `on`: the keys
    /// `on` registered below `module` are replayed, the rest is classified
    /// from `msg`. `None` when `on` is not registered, does not pass
    /// through `module`, or is the only match (the message just left it).
    ///
    /// Used by a module that rebuilds a message above the receiving end —
    /// IP reassembling a datagram on its own path — since the demux trees
    /// are rooted at the receiving module (thesis §3.4).
    pub fn classify_from(&self, on: PathId, module: ModuleId, msg: &[u8]) -> Option<(PathId, Dir)> {
        let mut levels = [(ModuleId(0), Key::EMPTY); MAX_LEVELS];
        let n = self.levels_of(on, &mut levels)?;
        let levels = &levels[..n];
        // At most a handful of levels below an Internet module: fixed
        // arrays keep this free of allocation.
        let mut prefix = [(pc::ModuleId(0), Key::EMPTY); MAX_PREFIX];
        let mut at = None;
        let mut root = None;
        for (i, &(m, k)) in levels.iter().enumerate() {
            root.get_or_insert(m);
            if m == module {
                at = Some(i);
                break;
            }
            *prefix.get_mut(i)? = (pc::ModuleId(m.0), k);
        }
        let (at, root) = (at?, root?);
        let p = self
            .tree
            .classify_prefixed(pc::ModuleId(root.0), &prefix[..at], msg)
            .filter(|p| p.0 != on.index)?;
        self.found(p)
    }

    /// The path for `msg`, which starts with the header of the module
    /// *below* `module` on path `on`, as if it had arrived at the receiving
    /// end of `on` with `on`'s keys below that module; with that module.
    /// Only a path that goes on above that module counts (a socket's or a
    /// connection's path, not a short path ending there, such as IP's own
    /// one), and never `on` itself.
    ///
    /// How an error report finds the path it concerns: ICMP, at the top of
    /// its own path, holds a copy of a datagram this host sent; turned
    /// around into the form a reply would have, it classifies to the path
    /// that sent it (RFC 1122 §4.1.3.3, §4.2.3.9: the transport learns of
    /// the error).
    pub fn classify_below(
        &self,
        on: PathId,
        module: ModuleId,
        msg: &[u8],
    ) -> Option<(PathId, Dir, ModuleId)> {
        let mut buf = [(ModuleId(0), Key::EMPTY); MAX_LEVELS];
        let n = self.levels_of(on, &mut buf)?;
        let levels = &buf[..n];
        let at = levels.iter().position(|&(m, _)| m == module)?;
        let below = levels.get(at.checked_sub(1)?)?.0;
        let (found, dir) = self.classify_from(on, below, msg)?;
        // The path found must have a level above `below`.
        let n = self.levels_of(found, &mut buf)?;
        let theirs = &buf[..n];
        let from = theirs.iter().position(|&(m, _)| m == below)?;
        (from + 1 < theirs.len()).then_some((found, dir, below))
    }

    fn found(&self, p: pc::PathId) -> Option<(PathId, Dir)> {
        let generation = *self.generations.get(p.0 as usize)?;
        Some((
            PathId {
                index: p.0,
                generation,
            },
            Dir::Up,
        ))
    }

    /// Number of demux nodes in the tree.
    pub fn node_count(&self) -> usize {
        self.tree.node_count()
    }

    /// Number of paths the classifier finds with one probe of its flow
    /// table: established paths (a connected socket, a TCP connection)
    /// whose every level has a key and a fixed layout
    /// ([`PartialClassifier::flow_layout`]).
    pub fn flow_count(&self) -> usize {
        self.tree.flow_count()
    }

    /// Registers the keys of `path` given its stages' keys from `end[1]`
    /// inwards (`levels[0]` is the receiving module; the walk stops after
    /// the last entry). Nothing is registered
    /// when no stage has a key (the path is then reached only by its id).
    pub(crate) fn register(
        &mut self,
        path: PathId,
        mode: KeyMode,
        levels: &[(ModuleId, Option<Key>)],
    ) -> Result<bool, PathError> {
        // Pass-through levels after the last key add nothing to the tree
        // (they are kept for `classify_from`).
        let all = levels;
        self.release_shape(path);
        let keyed = all
            .iter()
            .rposition(|(_, k)| k.is_some())
            .map_or(0, |i| i + 1);
        if keyed == 0 {
            return Ok(false);
        }
        // A level without a key at a module without a partial classifier
        // (ARP under IP, say) matches the empty key and consumes nothing:
        // a probe that can only succeed. Leave it out of the tree — the node
        // above names the next module that does demultiplex — except the
        // receiving module, where every walk starts.
        let mut kept = [(ModuleId(0), None); MAX_LEVELS];
        let mut n = 0;
        let mut in_tree = 0u32;
        for (i, &(m, k)) in all[..keyed].iter().enumerate() {
            let skip = i > 0 && k.is_none() && !self.tree.has_partial_classifier(pc::ModuleId(m.0));
            if skip {
                continue;
            }
            // A path of more than `MAX_LEVELS` (32) levels is refused
            // below, so every level has its bit.
            in_tree |= 1u32.checked_shl(i as u32).unwrap_or(0);
            let Some(slot) = kept.get_mut(n) else {
                return Err(PathError::Demux(format!(
                    "more than {MAX_LEVELS} demultiplexing levels"
                )));
            };
            *slot = (m, k);
            n += 1;
        }
        let levels = &kept[..n];
        let id = pc::PathId(path.index);
        let mut prev = None;
        for (i, (module, key)) in levels.iter().enumerate() {
            let next = levels.get(i + 1).map(|(m, _)| pc::ModuleId(m.0));
            let level = pc::Level {
                module: pc::ModuleId(module.0),
                key: *key,
            };
            match self.tree.register(id, mode, prev, level, next) {
                // Scout threads PREVIOUS_DEMUX_NODE through the stages'
                // establish calls; the core walks the levels itself, so the
                // previous node stays here.
                Ok(node) => prev = Some(node),
                Err(e) => {
                    let _ = self.tree.remove(id);
                    return Err(PathError::Demux(e.to_string()));
                }
            }
        }
        let Some(shape) = LevelShape::new(all.iter().map(|&(m, _)| m), in_tree)
            .and_then(|shape| self.shape_table.acquire(shape))
        else {
            let _ = self.tree.remove(id);
            return Err(PathError::Demux(format!(
                "more than {} kinds of path (level shapes) or {MAX_LEVELS} levels",
                level_shape::MAX_SHAPES
            )));
        };
        let i = path.index as usize;
        if self.generations.len() <= i {
            self.generations.resize(i + 1, 0);
        }
        self.generations[i] = path.generation;
        if self.shapes.len() <= i {
            self.shapes.resize(i + 1, NO_SHAPE);
        }
        self.shapes[i] = shape;
        Ok(true)
    }

    /// Removes every key `path` registered.
    pub(crate) fn remove(&mut self, path: PathId) {
        let _ = self.tree.remove(pc::PathId(path.index));
        self.release_shape(path);
    }

    /// Forgets `path`'s shape, if it has one.
    fn release_shape(&mut self, path: PathId) {
        if let Some(s) = self.shapes.get_mut(path.index as usize) {
            let id = std::mem::replace(s, NO_SHAPE);
            self.shape_table.release(id);
        }
    }
}

#[cfg(test)]
mod path_bytes;

#[cfg(test)]
mod levels_tests {
    use super::*;
    use pathstack_classify::testing::inet::{self, ETH, IPV4, TCP};
    use proptest::prelude::*;

    /// Modules with the test classifiers (ETH, IPv4, TCP) and without.
    fn module() -> impl Strategy<Value = ModuleId> {
        prop::sample::select(vec![ETH.0, IPV4.0, TCP.0, 50, 100]).prop_map(ModuleId)
    }

    fn levels() -> impl Strategy<Value = Vec<(ModuleId, Option<Key>)>> {
        prop::collection::vec(
            (
                module(),
                prop::option::of(prop::collection::vec(0u8..3, 0..=3)),
            ),
            1..7,
        )
        .prop_map(|v| {
            v.into_iter()
                .map(|(m, k)| (m, k.and_then(|k| Key::new(&k))))
                .collect()
        })
    }

    proptest! {
        /// The levels `classify_from` replays are the ones each path
        /// registered — keys from the tree, keyless and skipped levels
        /// from the path's shape — until it is removed; a path that
        /// registered no key has none; removing every path frees every
        /// node and shape.
        #[test]
        fn levels_read_back(paths in prop::collection::vec(levels(), 1..12), gone in any::<u16>()) {
            let mut d = Demux::new();
            inet::install(&mut d.tree);
            let mut live = Vec::new();
            for (i, want) in paths.iter().enumerate() {
                let id = PathId { index: i as u32, generation: 7 };
                if let Ok(true) = d.register(id, KeyMode::Active, want) {
                    live.push((id, want));
                } else {
                    // Refused (ambiguous) or keyless: nothing to give back.
                    let mut out = [(ModuleId(0), Key::EMPTY); MAX_LEVELS];
                    prop_assert_eq!(d.levels_of(id, &mut out), None);
                }
            }
            for (k, (id, _)) in live.iter().enumerate() {
                if gone & (1 << (k % 16)) != 0 {
                    d.remove(*id);
                }
            }
            for (k, (id, want)) in live.iter().enumerate() {
                let mut out = [(ModuleId(0), Key::EMPTY); MAX_LEVELS];
                let got = d.levels_of(*id, &mut out).map(|n| out[..n].to_vec());
                let expect = (gone & (1 << (k % 16)) == 0).then(|| {
                    want.iter().map(|&(m, k)| (m, k.unwrap_or(Key::EMPTY))).collect::<Vec<_>>()
                });
                prop_assert_eq!(got, expect);
                let stale = PathId { index: id.index, generation: 8 };
                prop_assert_eq!(d.levels_of(stale, &mut out), None);
            }
            for (id, _) in &live {
                d.remove(*id);
            }
            prop_assert_eq!(d.node_count(), 0);
            prop_assert_eq!(d.shape_table.len(), 0);
        }
    }
}
