//! The stack's classifier: Scout's demux tree (thesis §3.4), from
//! `pathstack-classify`, keyed by module instances and paths of this stack.
//!
//! A path's keys are registered when it is established, walking its stages
//! from the receiving end (`end[1]`, the device side for paths created from
//! the top) towards `end[0]`: each stage names its partial key with
//! [`Stage::demux_key`](crate::stage::Stage::demux_key), passes through, or
//! stops classification at itself. Scout threads `PREVIOUS_DEMUX_NODE`
//! through the establish callbacks in creation order; we do the same walk in
//! the core, in classification order, so that it is right whichever end the
//! path was created from.

use crate::attrs::{keys, Attrs};
use crate::error::PathError;
use crate::ids::{Dir, ModuleId, PathId};
use pathstack_classify as pc;
pub use pathstack_classify::{DemuxNodeRef, Key, KeyMode, PartialClassifier};

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

/// The classifier of one stack.
pub struct Demux {
    tree: pc::Classifier,
    generations: Vec<u32>,
}

impl Demux {
    pub(crate) fn new() -> Self {
        Demux {
            tree: pc::Classifier::new(),
            generations: Vec::new(),
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
        let generation = *self.generations.get(p.0 as usize)?;
        Some((
            PathId {
                index: p.0,
                generation,
            },
            Dir::Backward,
        ))
    }

    /// Number of demux nodes in the tree.
    pub fn node_count(&self) -> usize {
        self.tree.node_count()
    }

    /// Registers the keys of `path` given its stages' keys from `end[1]`
    /// inwards (`levels[0]` is the receiving module). Nothing is registered
    /// when no stage has a key (the path is then reached only by its id).
    pub(crate) fn register(
        &mut self,
        path: PathId,
        mode: KeyMode,
        levels: &[(ModuleId, Option<Key>)],
        aux: &mut Attrs,
    ) -> Result<bool, PathError> {
        if levels.iter().all(|(_, k)| k.is_none()) {
            return Ok(false);
        }
        let id = pc::PathId(path.index);
        let mut prev = None;
        for (i, (module, key)) in levels.iter().enumerate() {
            let next = levels.get(i + 1).map(|(m, _)| pc::ModuleId(m.0));
            let level = pc::Level {
                module: pc::ModuleId(module.0),
                key: *key,
            };
            match self.tree.register(id, mode, prev, level, next) {
                Ok(node) => {
                    prev = Some(node);
                    aux.insert(&keys::PREVIOUS_DEMUX_NODE, node);
                }
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
        Ok(true)
    }

    /// Removes every key `path` registered.
    pub(crate) fn remove(&mut self, path: PathId) {
        let _ = self.tree.remove(pc::PathId(path.index));
    }
}
