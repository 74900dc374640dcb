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
use pathstack_classify as pc;
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

/// The classifier of one stack.
pub struct Demux {
    tree: pc::Classifier,
    generations: Vec<u32>,
    /// Each registered path's levels (module, key) from the receiving end,
    /// indexed by path index: what [`classify_from`](Self::classify_from)
    /// replays below the module that re-classifies. Packed
    /// ([`PackedLevels`]): they are read only when a module re-classifies,
    /// and a `Key` is 40 bytes where an Internet level's key is 0 to 11.
    levels: Vec<PackedLevels>,
}

impl Demux {
    pub(crate) fn new() -> Self {
        Demux {
            tree: pc::Classifier::new(),
            generations: Vec::new(),
            levels: Vec::new(),
        }
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
        let levels = self.levels.get(on.index as usize)?;
        if self.generations.get(on.index as usize) != Some(&on.generation) {
            return None;
        }
        // At most a handful of levels below an Internet module: a fixed
        // array keeps this free of allocation.
        let mut prefix = [(pc::ModuleId(0), Key::EMPTY); MAX_PREFIX];
        let mut at = None;
        let mut root = None;
        for (i, (m, k)) in levels.iter().enumerate() {
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
        let levels = self.levels.get(on.index as usize)?;
        if self.generations.get(on.index as usize) != Some(&on.generation) {
            return None;
        }
        let at = levels.iter().position(|(m, _)| m == module)?;
        let below = levels.iter().nth(at.checked_sub(1)?)?.0;
        let (found, dir) = self.classify_from(on, below, msg)?;
        // The path found must have a level above `below`.
        let theirs = self.levels.get(found.index as usize)?;
        let from = theirs.iter().position(|(m, _)| m == below)?;
        (theirs.iter().nth(from + 1).is_some()).then_some((found, dir, below))
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
        for (i, &(m, k)) in all[..keyed].iter().enumerate() {
            let skip = i > 0 && k.is_none() && !self.tree.has_partial_classifier(pc::ModuleId(m.0));
            if skip {
                continue;
            }
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
        let i = path.index as usize;
        if self.generations.len() <= i {
            self.generations.resize(i + 1, 0);
        }
        self.generations[i] = path.generation;
        if self.levels.len() <= i {
            self.levels.resize_with(i + 1, PackedLevels::default);
        }
        self.levels[i] = PackedLevels::pack(all);
        Ok(true)
    }

    /// Removes every key `path` registered.
    pub(crate) fn remove(&mut self, path: PathId) {
        let _ = self.tree.remove(pc::PathId(path.index));
        if let Some(l) = self.levels.get_mut(path.index as usize) {
            *l = PackedLevels::default();
        }
    }
}

/// A path's demux levels, packed into bytes: per level the module id (4
/// bytes, little-endian), the key's length (1 byte, 0 for none) and the
/// key's bytes. About 40 bytes for a UDP path instead of 6 × 56.
#[derive(Clone, Debug, Default)]
struct PackedLevels(Box<[u8]>);

impl PackedLevels {
    fn pack(levels: &[(ModuleId, Option<Key>)]) -> Self {
        let mut v = Vec::with_capacity(
            levels
                .iter()
                .map(|(_, k)| 5 + k.map_or(0, |k| k.len()))
                .sum(),
        );
        for (m, k) in levels {
            v.extend_from_slice(&m.0.to_le_bytes());
            let bytes = k.as_ref().map_or(&[][..], Key::as_bytes);
            // A key is at most `Key::MAX_LEN` (32) bytes.
            v.push(bytes.len() as u8);
            v.extend_from_slice(bytes);
        }
        PackedLevels(v.into_boxed_slice())
    }

    /// The levels, a missing key read back as the empty key (the walk
    /// treats both alike).
    fn iter(&self) -> impl Iterator<Item = (ModuleId, Key)> + '_ {
        let mut rest = &self.0[..];
        std::iter::from_fn(move || {
            let (m, tail) = rest.split_first_chunk::<4>()?;
            let (&len, tail) = tail.split_first()?;
            let (key, tail) = tail.split_at_checked(usize::from(len))?;
            rest = tail;
            Some((ModuleId(u32::from_le_bytes(*m)), Key::new(key)?))
        })
    }
}

#[cfg(test)]
mod packed_tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn packed_levels_read_back(levels in proptest::collection::vec(
            (any::<u32>(), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..=Key::MAX_LEN))),
            0..8,
        )) {
            let levels: Vec<(ModuleId, Option<Key>)> = levels
                .into_iter()
                .map(|(m, k)| (ModuleId(m), k.and_then(|k| Key::new(&k))))
                .collect();
            let back: Vec<(ModuleId, Key)> = PackedLevels::pack(&levels).iter().collect();
            let want: Vec<(ModuleId, Key)> = levels
                .iter()
                .map(|&(m, k)| (m, k.unwrap_or(Key::EMPTY)))
                .collect();
            prop_assert_eq!(back, want);
        }
    }
}
