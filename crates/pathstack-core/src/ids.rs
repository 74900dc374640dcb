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

/// Why a message was dropped: a stable short name used as a counter key
/// (`"ipv4.bad_checksum"`, `"queue.full"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DropReason(&'static str);

impl DropReason {
    /// A reason with a stable name.
    pub const fn new(name: &'static str) -> Self {
        DropReason(name)
    }
    /// The reason's name.
    pub const fn as_str(self) -> &'static str {
        self.0
    }
    /// A path's sink queue was full.
    pub const SINK_FULL: DropReason = DropReason::new("path.sink_full");
    /// A path's source queue was full.
    pub const SOURCE_FULL: DropReason = DropReason::new("path.source_full");
    /// No path matched an arriving message.
    pub const NO_PATH: DropReason = DropReason::new("demux.no_path");
    /// Too many follow-up messages (turned or emitted) in one scheduling round.
    pub const FOLLOW_UP_OVERFLOW: DropReason = DropReason::new("sched.follow_up_overflow");
    /// The stack's hand-over list for received frames was full.
    pub const RX_FULL: DropReason = DropReason::new("stack.rx_full");
    /// A message was routed on at path ends more often than any real route
    /// needs (a routing loop).
    pub const ROUTE_LOOP: DropReason = DropReason::new("path.route_loop");
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// Counts per drop reason; small and linear, since a path sees few reasons.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DropCounts {
    counts: Vec<(DropReason, u64)>,
}

impl DropCounts {
    /// Adds one drop for `reason`.
    pub fn add(&mut self, reason: DropReason) {
        match self.counts.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((reason, 1)),
        }
    }
    /// Drops counted for `reason`.
    pub fn get(&self, reason: DropReason) -> u64 {
        self.counts
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, n)| *n)
    }
    /// Total over all reasons.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|(_, n)| n).sum()
    }
    /// (reason, count) pairs in first-seen order.
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        self.counts.iter().copied()
    }
}
