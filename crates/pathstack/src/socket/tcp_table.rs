//! The TCP socket table of a host: what a [`TcpListener`](super::TcpListener)
//! or [`TcpStream`](super::TcpStream) handle names (a listener's path, or a
//! connection's path and stage). Apart from the socket calls so that the
//! host holds it without an import cycle (issue 27 item 8).

use super::stale::Stale;
use crate::host_id::HostId;
use pathstack_core::slab::{Slab, SlabKey};
use pathstack_core::{ModuleId, PathId, StageRef};
use pathstack_inet::modules::tcp::ReadWouldBlock;
use pathstack_inet::modules::TcpConnStage;
use pathstack_inet::tcp::TcpConfig;
use std::net::Ipv4Addr;

#[derive(Clone, Debug)]
pub(crate) enum Entry {
    Listener {
        path: PathId,
        port: u16,
        /// The address it was bound to (`None`: `0.0.0.0`), which
        /// `local_addr` reports as `getsockname` does.
        ip: Option<Ipv4Addr>,
    },
    Stream {
        path: PathId,
        /// The connection's stage, found once when the socket is made
        /// (issue 26: no search by type on every socket call).
        conn: Option<StageRef<TcpConnStage>>,
        /// The stage's word on whether a read would block, read without
        /// entering the path (issue 26; see [`ReadWouldBlock`]).
        read_would_block: Option<ReadWouldBlock>,
    },
}

/// Where a stream's connection is: its path and, found once when the
/// socket was made, its stage.
pub(crate) type StreamAt = (PathId, Option<StageRef<TcpConnStage>>);

/// The TCP socket table of a host.
#[derive(Debug)]
pub(crate) struct TcpSockets {
    pub(crate) tcp: Option<ModuleId>,
    /// The host's own defaults for new connections
    /// ([`HostConfig::tcp_config`](crate::host::HostConfig::tcp_config)).
    pub(crate) config: Option<TcpConfig>,
    /// Unbounded here (a `u32` of slots): every socket holds a path of
    /// its own, so the path table's bound (`PathError::TableFull`)
    /// refuses a socket before this could.
    slots: Slab<Entry>,
}

impl TcpSockets {
    pub(crate) fn new(tcp: Option<ModuleId>, config: Option<TcpConfig>) -> Self {
        TcpSockets {
            config,
            tcp,
            slots: Slab::new(usize::MAX),
        }
    }

    pub(crate) fn insert(&mut self, e: Entry) -> (u32, u32) {
        // Never full: see `slots`.
        self.slots
            .insert(e)
            .map_or((u32::MAX, 0), |k| (k.slot, k.generation))
    }

    pub(crate) fn get(&self, host: HostId, h: (HostId, u32, u32)) -> Result<&Entry, Stale> {
        if h.0 != host {
            return Err(Stale::WrongHost { socket: h.0, host });
        }
        match self.slots.get(SlabKey {
            slot: h.1,
            generation: h.2,
        }) {
            Some(e) => Ok(e),
            None => Err(Stale::Closed),
        }
    }

    /// The entry the handle `h` names on host `host`, as
    /// [`get`](Self::get) finds it, without saying why not: for a socket
    /// call's usual case, which leaves the why to the general way
    /// (no [`Stale`] built and returned through memory).
    #[inline(always)]
    pub(crate) fn live(&self, host: HostId, h: (HostId, u32, u32)) -> Option<&Entry> {
        if h.0 != host {
            return None;
        }
        self.slots.get(SlabKey {
            slot: h.1,
            generation: h.2,
        })
    }

    pub(crate) fn remove(&mut self, slot: u32) {
        if let Some(key) = self.slots.key_at(slot) {
            self.slots.remove(key);
        }
    }
}
