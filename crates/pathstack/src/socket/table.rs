//! The socket table of a host: what a [`UdpSocket`] handle names.
//!
//! A handle is (host, slot, generation). The host part makes a handle
//! from another host an error ([`Stale::WrongHost`]) instead of a
//! name for this host's socket in the same slot; the generation makes a
//! handle of a closed socket stale ([`Stale::Closed`]) even after
//! its slot is reused. The slot holds what the socket is now: its path
//! (which `connect` replaces), port, peer and options.

use super::handles::UdpSocket;
use super::stale::Stale;
use crate::host_id::HostId;
use pathstack_core::slab::{Slab, SlabKey};
use pathstack_core::{ModuleId, PathId};
use pathstack_inet::modules::ip::Interface;
use pathstack_inet::wire::ipv4::DEFAULT_TTL;
use std::net::{Ipv4Addr, SocketAddrV4};

/// A live socket.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SocketState {
    /// The path its datagrams travel.
    pub(crate) path: PathId,
    /// Its local port.
    pub(crate) port: u16,
    /// The peer of a connected socket.
    pub(crate) peer: Option<SocketAddrV4>,
    /// The address it was bound to, when not `0.0.0.0` (what
    /// `local_addr` reports for a socket that is not connected, as
    /// `getsockname` does).
    pub(crate) bound_ip: Option<std::net::Ipv4Addr>,
    /// Time to live of what it sends (`IP_TTL`).
    pub(crate) ttl: u8,
    /// Whether it may send to broadcast addresses (`SO_BROADCAST`).
    pub(crate) broadcast: bool,
}

impl SocketState {
    /// A socket on `path` holding `port`, with the default options (TTL
    /// 64, no broadcast: Linux's defaults).
    pub(crate) fn new(path: PathId, port: u16, peer: Option<SocketAddrV4>) -> Self {
        SocketState {
            path,
            port,
            peer,
            bound_ip: None,
            ttl: DEFAULT_TTL,
            broadcast: false,
        }
    }
}

/// What a host knows about its sockets: its identity, where UDP is, its
/// interface, and the socket table. Which ports are taken is the `UDP`
/// module's to know.
#[derive(Debug)]
pub(crate) struct UdpSockets {
    host: HostId,
    pub(crate) udp: Option<ModuleId>,
    pub(crate) iface: Option<Interface>,
    /// Unbounded here (a `u32` of slots): every socket holds a path of
    /// its own, so the path table's bound (`PathError::TableFull`)
    /// refuses a socket before this could.
    slots: Slab<SocketState>,
}

impl UdpSockets {
    /// The socket context of host `host`, whose graph has UDP at `udp` and
    /// whose (first) interface is `iface`.
    pub(crate) fn new(host: HostId, udp: Option<ModuleId>, iface: Option<Interface>) -> Self {
        UdpSockets {
            host,
            udp,
            iface,
            slots: Slab::new(usize::MAX),
        }
    }

    /// The host's address.
    pub(crate) fn addr(&self) -> Option<Ipv4Addr> {
        self.iface.map(|i| i.addr)
    }

    /// The host's identity.
    pub(crate) fn host(&self) -> HostId {
        self.host
    }

    /// Enters a new socket; returns its handle.
    pub(crate) fn insert(&mut self, socket: SocketState) -> UdpSocket {
        // Never full: see `slots`.
        let key = self.slots.insert(socket).unwrap_or(SlabKey {
            slot: u32::MAX,
            generation: 0,
        });
        UdpSocket {
            host: self.host,
            slot: key.slot,
            generation: key.generation,
        }
    }

    fn key(&self, s: &UdpSocket) -> Result<SlabKey, Stale> {
        if s.host != self.host {
            return Err(Stale::WrongHost {
                socket: s.host,
                host: self.host,
            });
        }
        Ok(SlabKey {
            slot: s.slot,
            generation: s.generation,
        })
    }

    /// The socket `s` names.
    pub(crate) fn get(&self, s: &UdpSocket) -> Result<&SocketState, Stale> {
        // Matches, not `ok_or(Stale::Closed)`: that builds the error
        // (which has drop glue) and drops it on every call that succeeds,
        // each send and receive.
        match self.slots.get(self.key(s)?) {
            Some(socket) => Ok(socket),
            None => Err(Stale::Closed),
        }
    }

    /// The socket `s` names, writable.
    pub(crate) fn get_mut(&mut self, s: &UdpSocket) -> Result<&mut SocketState, Stale> {
        let key = self.key(s)?;
        match self.slots.get_mut(key) {
            Some(socket) => Ok(socket),
            None => Err(Stale::Closed),
        }
    }

    /// Removes the socket `s` names: its handle (and every copy) is stale
    /// from now on.
    pub(crate) fn remove(&mut self, s: &UdpSocket) -> Result<SocketState, Stale> {
        let key = self.key(s)?;
        match self.slots.remove(key) {
            Some(socket) => Ok(socket),
            None => Err(Stale::Closed),
        }
    }
}
