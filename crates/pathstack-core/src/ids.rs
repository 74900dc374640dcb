//! Small identifiers shared by every part of the core.

use std::fmt;

/// A module instance in a stack's module graph (its index in the graph).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleId(pub u32);

/// A path. Ids are unique over the life of a stack: a deleted path's id is
/// never reused for another path (the generation changes), so a stale id
/// held by a timer or a socket cannot reach a new path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathId {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl PathId {
    /// The slot index (stable while the path lives; reused after deletion).
    pub fn index(self) -> u32 {
        self.index
    }
    /// A compact number for display and hashing.
    pub fn as_u64(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }
}

impl fmt::Display for PathId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "path#{}.{}", self.index, self.generation)
    }
}

/// A direction of travel along a path (thesis §3.3.3): forward is from
/// `end[0]` (the stage created first) to `end[1]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From `end[0]` towards `end[1]`.
    Forward,
    /// From `end[1]` towards `end[0]`.
    Backward,
}

impl Dir {
    /// The other direction.
    #[inline]
    pub fn reverse(self) -> Dir {
        match self {
            Dir::Forward => Dir::Backward,
            Dir::Backward => Dir::Forward,
        }
    }
    /// 0 for forward, 1 for backward (index into per-direction arrays).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}
