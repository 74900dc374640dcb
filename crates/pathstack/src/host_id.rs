//! A host's identity, in a file of its own so that the socket and call
//! tables can name it without importing the host (issue 27 item 8: no
//! import cycle in the facade).

use std::sync::atomic::{AtomicU64, Ordering};

/// A host's identity, unique in the process. Every socket handle carries
/// its host's, so that a handle used on another host is refused
/// ([`SocketError::WrongHost`](crate::socket::SocketError::WrongHost))
/// rather than taken for that host's socket in the same slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostId(u64);

impl HostId {
    /// A new identity: a process-wide counter, so no two hosts share one.
    pub(crate) fn next() -> HostId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        HostId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

impl std::fmt::Display for HostId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "host #{}", self.0)
    }
}
