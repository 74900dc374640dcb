//! The TCP socket table of a host: what a [`TcpListener`](super::TcpListener)
//! or [`TcpStream`](super::TcpStream) handle names (a listener's path, or a
//! connection's path and stage). Apart from the socket calls so that the
//! host holds it without an import cycle (issue 27 item 8).

use super::stale::Stale;
use crate::host_id::HostId;
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
#[derive(Debug, Default)]
pub(crate) struct TcpSockets {
    pub(crate) tcp: Option<ModuleId>,
    /// The host's own defaults for new connections
    /// ([`HostConfig::tcp_config`](crate::host::HostConfig::tcp_config)).
    pub(crate) config: Option<TcpConfig>,
    slots: Vec<(u32, Option<Entry>)>,
    free: Vec<u32>,
}

impl TcpSockets {
    pub(crate) fn new(tcp: Option<ModuleId>, config: Option<TcpConfig>) -> Self {
        TcpSockets {
            config,
            tcp,
            ..TcpSockets::default()
        }
    }

    pub(crate) fn insert(&mut self, e: Entry) -> (u32, u32) {
        if let Some(slot) = self.free.pop() {
            let s = &mut self.slots[slot as usize];
            s.1 = Some(e);
            return (slot, s.0);
        }
        self.slots.push((0, Some(e)));
        ((self.slots.len() - 1) as u32, 0)
    }

    pub(crate) fn get(&self, host: HostId, h: (HostId, u32, u32)) -> Result<&Entry, Stale> {
        if h.0 != host {
            return Err(Stale::WrongHost { socket: h.0, host });
        }
        match self.slots.get(h.1 as usize) {
            Some((g, Some(e))) if *g == h.2 => Ok(e),
            _ => Err(Stale::Closed),
        }
    }

    pub(crate) fn remove(&mut self, slot: u32) {
        if let Some(s) = self.slots.get_mut(slot as usize) {
            if s.1.take().is_some() {
                s.0 = s.0.wrapping_add(1);
                self.free.push(slot);
            }
        }
    }
}
