//! Why a handle names no socket of a host's table: the tables answer this
//! rather than a [`SocketError`](super::SocketError), which names the
//! host's errors, so that the host can hold the tables without an import
//! cycle (issue 27 item 8).

use crate::host_id::HostId;

/// A handle that names no socket of this table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stale {
    /// The handle belongs to another host.
    WrongHost {
        /// The handle's host.
        socket: HostId,
        /// The host it was used on.
        host: HostId,
    },
    /// The socket was closed (its slot may hold another socket now).
    Closed,
}
