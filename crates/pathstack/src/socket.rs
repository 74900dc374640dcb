//! Non-blocking UDP sockets on a [`Host`]: the synchronous socket API.
//!
//! A socket is a path through the host graph made at the `udp` instance
//! (Mosberger, *Scout: A Path-Based Operating System*, 1997, ch. 2: a path per connection), so a socket's
//! datagrams are classified straight onto it and wait in its sink queue:
//!
//! - a *bound* socket ([`Host::udp_bind`]) is a passive path keyed by its
//!   local port; it talks to any peer, named per datagram in the message
//!   annotations;
//! - a *connected* socket ([`Host::udp_connect`]) is an active path keyed
//!   by both ports and addresses; it only sends to and hears from its peer.
//!
//! Handles are small `Copy` values, like smoltcp's socket handles: the
//! host owns the paths, the handle names one. A handle of a closed socket
//! is detected (the path id carries a generation) and answered with
//! [`SocketError::Closed`].
//!
//! Nothing here blocks. A receive with nothing queued returns `Ok(None)`
//! (the `WouldBlock` of a non-blocking BSD socket); the caller runs
//! [`Host::poll`] (and [`Host::wait`]) and tries again. A send puts the
//! datagram on the path's source queue; it leaves on the next poll.
//!
//! ```
//! use pathstack::core::device::wire::{wire_pair, WireConfig};
//! use pathstack::host::{Host, HostConfig};
//! use std::net::SocketAddrV4;
//!
//! let (a, b) = wire_pair(WireConfig::default());
//! let mut client = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
//! let mut server = Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap();
//! let srv = server.udp_bind(7).unwrap();
//! let cli = client.udp_bind(0).unwrap(); // an ephemeral port
//! client
//!     .send_to(&cli, b"hello", SocketAddrV4::new([10, 0, 0, 2].into(), 7))
//!     .unwrap();
//! let mut buf = [0u8; 64];
//! let (n, from) = loop {
//!     client.poll();
//!     server.poll();
//!     if let Some(got) = server.recv_from(&srv, &mut buf).unwrap() {
//!         break got;
//!     }
//! };
//! assert_eq!(&buf[..n], b"hello");
//! assert_eq!(from, cli.local_addr());
//! ```

use crate::host::Host;
use pathstack_core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack_core::attrs::Attrs;
use pathstack_core::error::PathError;
use pathstack_core::msg::MsgError;
use pathstack_core::{Dir, DropReason, ModuleId, Msg, PathId, QueueKind, SendError, Stack};
use pathstack_inet::modules::{UdpRefusal, UdpStage};
use pathstack_inet::InetAnno;
use std::net::{Ipv4Addr, SocketAddrV4};

/// The largest UDP payload over IPv4: 65,535 bytes of IP datagram less the
/// IP and UDP headers (RFC 768, RFC 791).
pub const MAX_DATAGRAM: usize = 65_535 - 20 - 8;

/// Why a socket operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// The host graph has no `UDP` instance named `udp`.
    #[error("the host graph has no UDP instance named `udp` (HostConfig::udp is off?)")]
    NoUdp,
    /// Another socket of this host is bound to the port.
    #[error("UDP port {0} is already bound")]
    PortInUse(u16),
    /// The datagram is larger than UDP over IPv4 can carry.
    #[error("datagram of {len} bytes is too long (UDP over IPv4 carries at most {max})")]
    MessageTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The socket's send queue is full: poll the host and try again.
    #[error("the socket's send queue is full; poll the host and send again")]
    QueueFull,
    /// The message pool has no buffer left: poll the host (sent and
    /// received messages return their buffers) and try again.
    #[error("no message buffer available; poll the host and try again")]
    NoBuffer,
    /// The stack dropped the datagram on the socket's path (no route, a
    /// full device queue …); the reason is the drop counter's name.
    #[error("the datagram was dropped: {0}")]
    Dropped(DropReason),
    /// The socket was closed (its handle is stale).
    #[error("the socket is closed")]
    Closed,
    /// `send` or `recv` on a socket that is not connected.
    #[error("the socket is not connected; use send_to/recv_from")]
    NotConnected,
    /// `send_to` to another address than a connected socket's peer.
    #[error("the socket is connected to {peer}; it cannot send to {dst}")]
    Connected {
        /// The connected peer.
        peer: SocketAddrV4,
        /// The requested destination.
        dst: SocketAddrV4,
    },
    /// The address cannot be a peer (port 0, the unspecified address).
    #[error("cannot send to {0}: {1}")]
    BadAddress(SocketAddrV4, &'static str),
    /// The stack refused to make the socket's path.
    #[error("creating the socket's path: {0}")]
    Path(#[from] PathError),
}

impl From<SocketError> for std::io::Error {
    fn from(e: SocketError) -> Self {
        use std::io::ErrorKind as K;
        let kind = match &e {
            SocketError::NoUdp => K::Unsupported,
            SocketError::PortInUse(_) => K::AddrInUse,
            SocketError::MessageTooLong { .. } | SocketError::BadAddress(..) => K::InvalidInput,
            SocketError::QueueFull => K::WouldBlock,
            SocketError::NoBuffer => K::OutOfMemory,
            SocketError::Closed | SocketError::NotConnected => K::NotConnected,
            SocketError::Connected { .. } => K::AlreadyExists,
            SocketError::Path(_) | SocketError::Dropped(_) => K::Other,
        };
        std::io::Error::new(kind, e)
    }
}

/// A handle of a UDP socket of one [`Host`]. Copy it freely: it names the
/// socket, the host owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdpSocket {
    path: PathId,
    local: SocketAddrV4,
    peer: Option<SocketAddrV4>,
}

impl UdpSocket {
    /// Our address and port.
    pub fn local_addr(&self) -> SocketAddrV4 {
        self.local
    }

    /// The peer of a connected socket.
    pub fn peer_addr(&self) -> Option<SocketAddrV4> {
        self.peer
    }

    /// The socket's path (to inspect its statistics with
    /// [`Stack::path`]).
    pub fn path(&self) -> PathId {
        self.path
    }
}

/// What a host knows about its sockets: where UDP is and the host's
/// address. Which ports are taken is the `UDP` module's to know.
#[derive(Debug, Default)]
pub(crate) struct UdpSockets {
    udp: Option<ModuleId>,
    addr: Option<Ipv4Addr>,
}

impl UdpSockets {
    /// The socket context of a host whose graph has UDP at `udp` and whose
    /// address is `addr`.
    pub(crate) fn new(udp: Option<ModuleId>, addr: Option<Ipv4Addr>) -> Self {
        UdpSockets { udp, addr }
    }

    /// The host's address.
    pub(crate) fn addr(&self) -> Option<Ipv4Addr> {
        self.addr
    }
}

/// The local port the UDP stage of a fresh path chose (it picks the
/// ephemeral port when asked for port 0).
fn chosen_port(stack: &Stack, path: PathId, udp: ModuleId) -> Option<u16> {
    let p = stack.path(path)?;
    let pos = p.modules().iter().position(|&m| m == udp)?;
    let stage: &dyn std::any::Any = p.stage(pos)?;
    stage.downcast_ref::<UdpStage>().map(UdpStage::local_port)
}

fn check_peer(dst: SocketAddrV4) -> Result<(), SocketError> {
    if dst.port() == 0 {
        return Err(SocketError::BadAddress(dst, "port 0 is reserved"));
    }
    if dst.ip().is_unspecified() {
        return Err(SocketError::BadAddress(dst, "the unspecified address"));
    }
    Ok(())
}

/// The socket API of a host.
impl Host {
    fn udp_module(&self) -> Result<ModuleId, SocketError> {
        self.sockets.udp.ok_or(SocketError::NoUdp)
    }

    fn socket_addr(&self, port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(self.sockets.addr.unwrap_or(Ipv4Addr::UNSPECIFIED), port)
    }

    fn live(&self, s: &UdpSocket) -> Result<(), SocketError> {
        match self.stack().path(s.path) {
            Some(_) => Ok(()),
            None => Err(SocketError::Closed),
        }
    }

    /// Opens a socket bound to `port` (0: an ephemeral port, RFC 6335 §6)
    /// that exchanges datagrams with any peer.
    pub fn udp_bind(&mut self, port: u16) -> Result<UdpSocket, SocketError> {
        let udp = self.udp_module()?;
        let attrs = Attrs::new().with(&PASSIVE_OPEN, true).with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(port)],
                remote: vec![],
            },
        );
        let path = self.stack_mut().path_create(udp, attrs).map_err(|e| {
            match e.cause::<UdpRefusal>() {
                Some(&UdpRefusal::PortInUse(p)) => SocketError::PortInUse(p),
                _ => SocketError::Path(e),
            }
        })?;
        let port = chosen_port(self.stack(), path, udp).unwrap_or(port);
        Ok(UdpSocket {
            path,
            local: self.socket_addr(port),
            peer: None,
        })
    }

    /// Opens a socket connected to `peer` from `local_port` (0: an
    /// ephemeral port): it sends only to `peer` and hears only from it.
    /// Connected sockets may share a local port with each other and with
    /// a bound socket; the classifier prefers the connected one.
    pub fn udp_connect(
        &mut self,
        local_port: u16,
        peer: SocketAddrV4,
    ) -> Result<UdpSocket, SocketError> {
        let udp = self.udp_module()?;
        check_peer(peer)?;
        let attrs = Attrs::new().with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(local_port)],
                remote: vec![
                    AddrPart::Ipv4(peer.ip().octets()),
                    AddrPart::Port(peer.port()),
                ],
            },
        );
        let path = self.stack_mut().path_create(udp, attrs)?;
        let port = chosen_port(self.stack(), path, udp).unwrap_or(local_port);
        Ok(UdpSocket {
            path,
            local: self.socket_addr(port),
            peer: Some(peer),
        })
    }

    /// Closes a socket: its path is deleted, datagrams still queued on it
    /// are freed, and its port is free again.
    pub fn udp_close(&mut self, s: UdpSocket) -> Result<(), SocketError> {
        self.stack_mut()
            .path_delete(s.path)
            .map_err(|_| SocketError::Closed)
    }

    /// Queues `data` as one datagram to `dst`. On a connected socket `dst`
    /// must be its peer.
    pub fn send_to(
        &mut self,
        s: &UdpSocket,
        data: &[u8],
        dst: SocketAddrV4,
    ) -> Result<(), SocketError> {
        if let Some(peer) = s.peer {
            if peer != dst {
                return Err(SocketError::Connected { peer, dst });
            }
        }
        check_peer(dst)?;
        let m = self.datagram(data)?;
        self.udp_send_msg(s, m, Some(dst))
    }

    /// Queues `data` as one datagram to a connected socket's peer.
    pub fn send(&mut self, s: &UdpSocket, data: &[u8]) -> Result<(), SocketError> {
        if s.peer.is_none() {
            return Err(SocketError::NotConnected);
        }
        let m = self.datagram(data)?;
        self.udp_send_msg(s, m, None)
    }

    fn datagram(&self, data: &[u8]) -> Result<Msg, SocketError> {
        if data.len() > MAX_DATAGRAM {
            return Err(SocketError::MessageTooLong {
                len: data.len(),
                max: MAX_DATAGRAM,
            });
        }
        self.stack().pool().alloc_copy(data).map_err(|e| match e {
            MsgError::TooLarge { .. } => SocketError::MessageTooLong {
                len: data.len(),
                max: self.stack().pool().max_payload().min(MAX_DATAGRAM),
            },
            _ => SocketError::NoBuffer,
        })
    }

    /// Queues a datagram already in a pool message (no copy), to `dst`
    /// (`None` on a connected socket: its peer). The message must come
    /// from this host's pool ([`Stack::pool`]) to have headroom for the
    /// headers.
    pub fn udp_send_msg(
        &mut self,
        s: &UdpSocket,
        mut m: Msg,
        dst: Option<SocketAddrV4>,
    ) -> Result<(), SocketError> {
        if m.len() > MAX_DATAGRAM {
            return Err(SocketError::MessageTooLong {
                len: m.len(),
                max: MAX_DATAGRAM,
            });
        }
        let dst = match (dst, s.peer) {
            (Some(d), _) => d,
            (None, Some(p)) => p,
            (None, None) => return Err(SocketError::NotConnected),
        };
        let a = m.anno_mut();
        a.set_peer(*dst.ip(), dst.port());
        // The send looks the path up; only a refusal needs to know why.
        match self.stack_mut().send(s.path, Dir::Down, m) {
            Ok(()) => Ok(()),
            Err(SendError::Dropped(reason)) => Err(SocketError::Dropped(reason)),
            Err(_) => Err(self.live(s).err().unwrap_or(SocketError::QueueFull)),
        }
    }

    /// Takes the next datagram received on `s` as a pool message (no
    /// copy); its sender is in the annotations (`peer_ip`, `peer_port`).
    /// `Ok(None)` when nothing is queued.
    pub fn udp_recv_msg(&mut self, s: &UdpSocket) -> Result<Option<Msg>, SocketError> {
        match self.stack_mut().recv(s.path, Dir::Up) {
            Some(m) => Ok(Some(m)),
            None => self.live(s).map(|()| None),
        }
    }

    /// Copies the next datagram received on `s` into `buf` and returns
    /// its length and sender. A datagram longer than `buf` is truncated
    /// to it, the rest discarded (as BSD sockets do). `Ok(None)` when
    /// nothing is queued: poll the host and try again.
    pub fn recv_from(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<(usize, SocketAddrV4)>, SocketError> {
        let Some(m) = self.udp_recv_msg(s)? else {
            return Ok(None);
        };
        let n = m.len().min(buf.len());
        buf[..n].copy_from_slice(&m.as_slice()[..n]);
        let a = m.anno();
        let from = SocketAddrV4::new(
            a.peer_ip().unwrap_or(Ipv4Addr::UNSPECIFIED),
            a.peer_port().unwrap_or(0),
        );
        Ok(Some((n, from)))
    }

    /// Like [`Host::recv_from`] on a connected socket, without the sender
    /// (always its peer).
    pub fn recv(&mut self, s: &UdpSocket, buf: &mut [u8]) -> Result<Option<usize>, SocketError> {
        if s.peer.is_none() {
            return Err(SocketError::NotConnected);
        }
        Ok(self.recv_from(s, buf)?.map(|(n, _)| n))
    }

    /// Datagrams waiting on `s` (0 for a closed socket).
    pub fn udp_pending(&self, s: &UdpSocket) -> usize {
        self.stack()
            .path(s.path)
            .map_or(0, |p| p.queue(QueueKind::sink(Dir::Up)).len())
    }
}
