//! One level of a filter: the module and the key it demultiplexes on.

use crate::{Key, ModuleId};

/// One module's contribution to a path's filter: its partial key, or
/// `None` for a module that does not demultiplex (pass-through).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Level {
    /// The module at this level.
    pub module: ModuleId,
    /// Its partial key; `None` is the same as [`Key::EMPTY`].
    pub key: Option<Key>,
}

impl Level {
    /// A demultiplexing level.
    pub fn demux(module: ModuleId, key: Key) -> Level {
        Level {
            module,
            key: Some(key),
        }
    }

    /// A module that does not demultiplex: the walk passes through it.
    pub fn pass_through(module: ModuleId) -> Level {
        Level { module, key: None }
    }

    /// The key the classifier stores for this level.
    #[inline]
    pub fn key_or_empty(&self) -> Key {
        self.key.unwrap_or(Key::EMPTY)
    }
}
