//! Asynchronous errors of a path: what BSD sockets call the pending error
//! (`SO_ERROR`).
//!
//! Some failures happen after the call that caused them has returned: an
//! address resolution that gives up seconds later, an ICMP error that
//! comes back for a datagram sent earlier. RFC 1122 §4.1.3.3 asks UDP to
//! pass ICMP errors up to the application, and §3.2.2.1 says how an
//! unreachable destination is reported; the application can only learn
//! of them on a later call. A stage or a module
//! ([`Ops::set_fault`](crate::Ops::set_fault), on every context) records a
//! [`PathFault`] for a path; whoever owns the path (a socket) reads and
//! clears it with [`Stack::take_fault`](crate::Stack::take_fault) on its
//! next operation.
//!
//! The core does not know what the fault means to a protocol: it holds an
//! [`std::io::ErrorKind`] (what the application is told) and the
//! [`DropReason`] of the layer that raised it (why, in words a counter
//! uses too).
//!
//! Bounds: a path holds **one** pending fault, and the **newest wins**
//! (as Linux overwrites `sk_err`): the latest news about a destination is
//! the most useful. The stack holds at most [`MAX_FAULTS`] pending faults
//! in all; one more evicts the oldest, which is then lost (a fault is
//! advice, never a reason to allocate on the data path).

use crate::drop_reason::DropReason;
use crate::ids::PathId;
use std::fmt;
use std::io::ErrorKind;

/// Most pending faults the stack keeps over all paths (see the
/// [module docs](self)).
pub const MAX_FAULTS: usize = 64;

/// An asynchronous error of a path: what to tell its owner, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathFault {
    /// The error kind its owner reports (`HostUnreachable`,
    /// `ConnectionRefused` …).
    pub kind: ErrorKind,
    /// The layer's reason (`"arp.resolution_failed"`,
    /// `"icmp.port_unreachable"` …).
    pub reason: DropReason,
}

impl PathFault {
    /// A fault of `kind` for `reason`.
    pub fn new(kind: ErrorKind, reason: impl Into<DropReason>) -> Self {
        PathFault {
            kind,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for PathFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kind, self.reason)
    }
}

/// The pending faults of all paths: one slot per path, [`MAX_FAULTS`] in
/// all, preallocated.
#[derive(Debug)]
pub(crate) struct Faults(Vec<(PathId, PathFault)>);

impl Default for Faults {
    fn default() -> Self {
        Faults(Vec::with_capacity(MAX_FAULTS))
    }
}

impl Faults {
    /// Records `fault` for `path`, replacing the one it held (newest
    /// wins); evicts the oldest fault of another path when full.
    pub(crate) fn set(&mut self, path: PathId, fault: PathFault) {
        if let Some(slot) = self.0.iter_mut().find(|(p, _)| *p == path) {
            slot.1 = fault;
            return;
        }
        if self.0.len() >= MAX_FAULTS {
            self.0.remove(0);
        }
        self.0.push((path, fault));
    }

    /// The fault `path` holds, left in place.
    pub(crate) fn get(&self, path: PathId) -> Option<PathFault> {
        self.0.iter().find(|(p, _)| *p == path).map(|&(_, f)| f)
    }

    /// Takes the fault `path` holds.
    pub(crate) fn take(&mut self, path: PathId) -> Option<PathFault> {
        let i = self.0.iter().position(|(p, _)| *p == path)?;
        Some(self.0.remove(i).1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drop_reason::CoreDropReason;

    fn path(i: u32) -> PathId {
        PathId {
            index: i,
            generation: 1,
        }
    }

    #[test]
    fn one_slot_per_path_newest_wins_and_bounded() {
        let mut f = Faults::default();
        let refused = PathFault::new(ErrorKind::ConnectionRefused, CoreDropReason::SinkFull);
        let unreach = PathFault::new(ErrorKind::HostUnreachable, CoreDropReason::SinkFull);
        f.set(path(1), refused);
        f.set(path(1), unreach);
        assert_eq!(f.get(path(1)), Some(unreach));
        assert_eq!(f.take(path(1)), Some(unreach));
        assert_eq!(f.take(path(1)), None);
        for i in 0..=MAX_FAULTS as u32 {
            f.set(path(i), refused);
        }
        assert_eq!(f.0.len(), MAX_FAULTS);
        assert_eq!(f.get(path(0)), None, "the oldest was evicted");
        assert_eq!(f.get(path(MAX_FAULTS as u32)), Some(refused));
    }
}
