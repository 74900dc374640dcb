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

/// A direction of travel along a path (thesis §3.3.3), named for where
/// it leads: down towards the device, up towards the application.
///
/// A path is created at its top (the module an application or a protocol
/// opens it on) and routed downwards, so `end[0]`, the stage created first,
/// is the top and `end[1]` the bottom: [`Dir::Down`] runs from `end[0]` to
/// `end[1]`. Extending a path at `end[0]` grows it upwards, at `end[1]`
/// downwards, which keeps that orientation. Stages therefore never work out
/// which way is down; they match on the direction they are given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Towards the device: from `end[0]` to `end[1]`.
    Down,
    /// Towards the application: from `end[1]` to `end[0]`.
    Up,
}

impl Dir {
    /// The other direction.
    #[inline]
    pub fn reverse(self) -> Dir {
        match self {
            Dir::Down => Dir::Up,
            Dir::Up => Dir::Down,
        }
    }
    /// 0 for down, 1 for up (index into per-direction arrays).
    #[inline]
    pub fn index(self) -> usize {
        self as usize
    }
}
