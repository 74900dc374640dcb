//! Non-blocking UDP sockets on a [`Host`]: the synchronous socket API.
//!
//! A socket is a path through the host graph made at the `udp` instance
//! (Mosberger, *Scout: A Path-Based Operating System*, 1997, ch. 2: a path
//! per connection), so a socket's datagrams are classified straight onto
//! it and wait in its sink queue:
//!
//! - a *bound* socket ([`Udp::bind`](crate::socket::Udp::bind)) is a passive path keyed by its
//!   local port; it talks to any peer, named per datagram in the message
//!   annotations;
//! - a *connected* socket ([`Udp::connect`](crate::socket::Udp::connect), or [`Udp::bind_connected`](crate::socket::Udp::bind_connected) in
//!   one step) is an active path keyed by both ports and addresses; it
//!   only sends to and hears from its peer.
//!
//! Handles are small `Copy` values, like smoltcp's socket handles: the
//! host owns the sockets, the handle names one. A handle carries its
//! host's identity ([`crate::host::HostId`]): used on another host
//! it is refused with [`SocketError::WrongHost`]. A handle of a closed
//! socket is stale everywhere ([`SocketError::Closed`]).
//!
//! The calls follow `std::net::UdpSocket`, with the host as the first
//! argument: addresses are anything [`ToSocketAddrs`]
//! (`"10.0.0.2:7"`, a [`SocketAddr`], a [`SocketAddrV4`],
//! `(IpAddr, u16)` …; IPv6 ones fail with
//! [`SocketError::UnsupportedFamily`]); `connect` is a call on a bound
//! socket; `local_addr`, `peer_addr`, `peek_from`, `set_ttl`/`ttl` and
//! `set_broadcast`/`broadcast` are there. What differs, and why:
//!
//! - nothing blocks unless it says so: the handles' calls
//!   ([`UdpSocket::recv_from`], [`TcpStream::read`], …) fail with
//!   `WouldBlock` as a non-blocking `std` socket's do (the host's older
//!   calls, deprecated, return `Ok(None)`); the caller runs
//!   [`Host::poll`] (and [`Host::wait`]) and tries again, waits for any
//!   of many sockets with [`Host::poll_ready`], or calls
//!   [`Udp::recv_from_timeout`](crate::socket::Udp::recv_from_timeout), which polls and waits itself and fails
//!   with [`SocketError::TimedOut`] (kind `TimedOut`, where Linux reports
//!   a read timeout as `WouldBlock`);
//! - a send puts the datagram on the socket's path; it runs at once when
//!   the path is idle, else on the next poll;
//! - a truncated datagram is reported by [`Host::recv_from_trunc`]
//!   ([`RecvInfo::truncated`], as `recvmsg` sets `MSG_TRUNC`);
//! - errors come back as Linux's do: a send with no route fails with
//!   [`SocketError::NetworkUnreachable`]; a **connected** socket reports
//!   an ARP failure (`HostUnreachable`) or an ICMP destination unreachable
//!   (`ConnectionRefused` for port unreachable) on its next call, once
//!   ([`SocketError::Unreachable`], [`Udp::take_error`](crate::socket::Udp::take_error)); a bound socket
//!   stays silent, as Linux's without `IP_RECVERR`;
//! - `connect` discards the datagrams queued before it (Linux keeps them),
//!   and the port of a connected socket may be bound again by another
//!   socket (Linux refuses without `SO_REUSEADDR`): a connected socket is
//!   a path of its own, keyed by both ends, that shares its port.
//!
//! ```
//! use pathstack::core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack::host::Host;
//!
//! let (a, b) = memory_pair(MemoryConfig::default());
//! let mut client = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
//! let mut server = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
//! let srv = server.udp().bind("0.0.0.0:7").unwrap();
//! let cli = client.udp().bind("0.0.0.0:0").unwrap(); // an ephemeral port
//! cli.send_to(&mut client, b"hello", "10.0.0.2:7").unwrap();
//! let mut buf = [0u8; 64];
//! let (n, from) = loop {
//!     client.poll();
//!     server.poll();
//!     if let Ok(got) = srv.recv_from(&mut server, &mut buf) {
//!         break got;
//!     }
//! };
//! assert_eq!(&buf[..n], b"hello");
//! // Bound to 0.0.0.0 (as `local_addr` says); it sends from the host's address.
//! assert_eq!(from.port(), client.udp().local_addr(&cli).unwrap().port());
//! assert_eq!(from.ip().to_string(), "10.0.0.1");
//! ```

// The socket calls are still implemented as `Host` methods, deprecated
// for applications in favour of the views (`host.udp()`/`host.tcp()`, issue 27
// item 2) and kept one release; inside the crate they are the implementation.
#![allow(deprecated)]

mod addr;
mod blocking;
mod error;
mod faults;
mod handles;
pub(crate) mod linger_table;
mod nonblocking;
pub(crate) mod registrations;
mod specialize;
mod stale;
pub(crate) mod tcp_table;
pub use nonblocking::ready;
mod options;
mod readiness;
pub(crate) mod table;
pub mod tcp;
// The port a bound, unconnected socket holds, and a path opened with
// options set before it: `pathstack::tokio::TcpSocket`'s.
#[cfg(feature = "tokio")]
mod tcp_bind;
mod tcp_buffers;
mod tcp_linger;
#[cfg(feature = "tokio")]
mod tcp_open;
mod tcp_ttl;
mod tcp_view;
mod try_calls;
mod udp_view;

pub use error::{SocketError, Transport};
pub use handles::{TcpListener, TcpStream, UdpSocket};
pub use readiness::{Event, Events, Interest, Source, Token, MAX_REGISTRATIONS};
pub use tcp_buffers::{clamp_buffer, MAX_BUFFER, MIN_BUFFER};
pub use tcp_linger::MAX_LINGERING;
#[cfg(feature = "tokio")]
pub(crate) use tcp_open::TcpOpen;
pub use tcp_view::Tcp;
pub use udp_view::Udp;

use crate::host::Host;
use addr::{check_local, check_peer, first, resolve, try_each};
use pathstack_core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack_core::attrs::Attrs;
use pathstack_core::msg::MsgError;
use pathstack_core::{Dir, ModuleId, Msg, PathId, QueueKind, SendError, Stack};
use pathstack_inet::modules::{UdpRefusal, UdpStage};
use pathstack_inet::wire::ipv4::Ipv4DropReason;
use pathstack_inet::InetAnno;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};
use table::SocketState;

/// The largest UDP payload over IPv4: 65,535 bytes of IP datagram less the
/// IP and UDP headers (RFC 768, RFC 791).
pub const MAX_DATAGRAM: usize = 65_535 - 20 - 8;

/// What a receive took: the datagram's length and sender, and how much of
/// it fitted (see [`Host::recv_from_trunc`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvInfo {
    /// Bytes copied into the buffer.
    pub len: usize,
    /// Bytes the datagram had; more than `len` when it was truncated.
    pub datagram_len: usize,
    /// Its sender.
    pub from: SocketAddr,
}

impl RecvInfo {
    /// Whether the datagram was longer than the buffer, its tail discarded
    /// (`recvmsg`'s `MSG_TRUNC`).
    pub fn truncated(&self) -> bool {
        self.datagram_len > self.len
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

/// Copies `m` into `buf` (truncated to it, as BSD sockets do).
fn copy_out(m: &Msg, buf: &mut [u8]) -> RecvInfo {
    let n = m.len().min(buf.len());
    buf[..n].copy_from_slice(&m.as_slice()[..n]);
    let a = m.anno();
    let from = SocketAddrV4::new(
        a.peer_ip().unwrap_or(Ipv4Addr::UNSPECIFIED),
        a.peer_port().unwrap_or(0),
    );
    RecvInfo {
        len: n,
        datagram_len: m.len(),
        from: from.into(),
    }
}

/// The socket API of a host.
impl Host {
    fn udp_module(&self) -> Result<ModuleId, SocketError> {
        match self.sockets.udp {
            Some(udp) => Ok(udp),
            None => Err(SocketError::NoUdp),
        }
    }

    fn socket(&self, s: &UdpSocket) -> Result<&SocketState, SocketError> {
        Ok(self.sockets.get(s)?)
    }

    /// Makes a path at UDP from `port` (0: an ephemeral one), passive or
    /// connected to `peer`; returns it and the port it holds.
    fn udp_path(
        &mut self,
        port: u16,
        peer: Option<SocketAddrV4>,
    ) -> Result<(PathId, u16), SocketError> {
        let udp = self.udp_module()?;
        let local = vec![AddrPart::Port(port)];
        let attrs = match peer {
            None => Attrs::new().with(&PASSIVE_OPEN, true).with(
                &PARTICIPANTS,
                Participants {
                    local,
                    remote: vec![],
                },
            ),
            Some(peer) => Attrs::new().with(
                &PARTICIPANTS,
                Participants {
                    local,
                    remote: vec![
                        AddrPart::Ipv4(peer.ip().octets()),
                        AddrPart::Port(peer.port()),
                    ],
                },
            ),
        };
        let path = self.stack_mut().path_create(udp, attrs).map_err(|e| {
            match e.cause::<UdpRefusal>() {
                Some(&UdpRefusal::PortInUse(port)) => SocketError::PortInUse {
                    transport: Transport::Udp,
                    port,
                },
                _ => SocketError::Path(e),
            }
        })?;
        let port = chosen_port(self.stack(), path, udp).unwrap_or(port);
        self.specialize(path);
        Ok((path, port))
    }

    /// Checks that a socket may have `peer`: a possible peer, and a broadcast
    /// one only with the broadcast option (Linux: `EACCES`).
    fn check_peer_of(&self, broadcast: bool, peer: SocketAddrV4) -> Result<(), SocketError> {
        check_peer(peer)?;
        if !broadcast && addr::is_broadcast(self.sockets.iface.as_ref(), *peer.ip()) {
            return Err(SocketError::Broadcast(peer));
        }
        Ok(())
    }

    /// Opens a socket bound to `addr`: the host's address or `0.0.0.0`,
    /// with a port (0: an ephemeral port, RFC 6335 §6). It exchanges
    /// datagrams with any peer. Each address `addr` resolves to is tried in
    /// turn, as `std::net::UdpSocket::bind` does.
    ///
    /// ```
    /// # use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    /// # use pathstack::host::Host;
    /// # use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
    /// # let mut host = Host::new("10.0.0.1/24".parse().unwrap(), memory_pair(MemoryConfig::default()).0).unwrap();
    /// host.udp().bind("0.0.0.0:7").unwrap();
    /// host.udp().bind(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 8)).unwrap();
    /// host.udp().bind((IpAddr::V4(Ipv4Addr::UNSPECIFIED), 9)).unwrap();
    /// let e = host.udp().bind("[::]:10").unwrap_err();
    /// assert_eq!(e.to_string(), "[::]:10: address family not supported (pathstack speaks IPv4 only)");
    /// ```
    #[deprecated(note = "use host.udp().bind")]
    pub fn udp_bind(&mut self, addr: impl ToSocketAddrs) -> Result<UdpSocket, SocketError> {
        try_each(resolve(addr)?, |local| {
            check_local(self.sockets.addr(), local)?;
            let (path, port) = self.udp_path(local.port(), None)?;
            let mut st = SocketState::new(path, port, None);
            st.bound_ip = Some(*local.ip()).filter(|a| !a.is_unspecified());
            Ok(self.sockets.insert(st))
        })
    }

    /// Opens a socket bound to `local` (as [`Udp::bind`](crate::socket::Udp::bind)) and
    /// connected to `peer` in one step: one path, where
    /// [`udp_bind`](crate::socket::Udp::bind) then [`connect`](crate::socket::Udp::connect) makes
    /// two. Connected sockets may share a local port with each other and
    /// with a bound socket; the classifier prefers the connected one.
    #[deprecated(note = "use host.udp().bind_connected")]
    pub fn udp_connect(
        &mut self,
        local: impl ToSocketAddrs,
        peer: impl ToSocketAddrs,
    ) -> Result<UdpSocket, SocketError> {
        let local = first(resolve(local)?)?;
        check_local(self.sockets.addr(), local)?;
        try_each(resolve(peer)?, |peer| {
            self.check_peer_of(false, peer)?;
            let (path, port) = self.udp_path(local.port(), Some(peer))?;
            Ok(self
                .sockets
                .insert(SocketState::new(path, port, Some(peer))))
        })
    }

    /// Connects `s` to `peer`, as `std::net::UdpSocket::connect`: from now
    /// on it sends only to `peer` (with [`Udp::send`](crate::socket::Udp::send)) and hears only from
    /// it. It keeps its port; a connected socket may connect again, to
    /// another peer. Each address `peer` resolves to is tried in turn.
    ///
    /// The socket moves to a path keyed by both ends; datagrams queued on
    /// it before are discarded (Linux keeps them).
    #[deprecated(note = "use host.udp().connect")]
    pub fn connect(&mut self, s: &UdpSocket, peer: impl ToSocketAddrs) -> Result<(), SocketError> {
        let state = *self.socket(s)?;
        let (path, peer) = try_each(resolve(peer)?, |peer| {
            self.check_peer_of(state.broadcast, peer)?;
            Ok((self.udp_path(state.port, Some(peer))?.0, peer))
        })?;
        // The new path holds the port before the old one lets it go, so it
        // is never free in between.
        self.stack_mut()
            .path_delete(state.path)
            .map_err(SocketError::Path)?;
        let st = self.sockets.get_mut(s)?;
        st.path = path;
        st.peer = Some(peer);
        Ok(())
    }

    /// Closes a socket: its path is deleted, datagrams still queued on it
    /// are freed, and its port is free again. Every copy of the handle is
    /// stale from now on.
    #[deprecated(note = "use host.udp().close")]
    pub fn udp_close(&mut self, s: UdpSocket) -> Result<(), SocketError> {
        let state = self.sockets.remove(&s)?;
        self.stack_mut()
            .path_delete(state.path)
            .map_err(|_| SocketError::Closed)
    }

    /// The socket's address: the host's and its port.
    #[deprecated(note = "use host.udp().local_addr")]
    pub fn local_addr(&self, s: &UdpSocket) -> Result<SocketAddr, SocketError> {
        let st = self.socket(s)?;
        // A connected socket's own address is the one IP placed its path
        // on: 127.0.0.1 towards the loopback network.
        let placed = st.peer.and_then(|_| {
            let p = self.stack().path(st.path)?;
            p.attrs()
                .get(&pathstack_inet::modules::ip::LOCAL_IPV4)
                .copied()
        });
        // One that is not connected reports the address it was bound to,
        // `0.0.0.0` included, as `getsockname` (and so `std` and tokio)
        // do: it takes datagrams to any of the host's addresses.
        let ip = placed.or(st.bound_ip).unwrap_or(Ipv4Addr::UNSPECIFIED);
        Ok(SocketAddrV4::new(ip, st.port).into())
    }

    /// The peer of a connected socket ([`SocketError::NotConnected`] for a
    /// bound one).
    #[deprecated(note = "use host.udp().peer_addr")]
    pub fn peer_addr(&self, s: &UdpSocket) -> Result<SocketAddr, SocketError> {
        self.socket(s)?
            .peer
            .map(SocketAddr::from)
            .ok_or(SocketError::NotConnected)
    }

    /// The socket's path (to inspect its statistics with [`Stack::path`]).
    /// It changes when the socket connects.
    #[deprecated(note = "use host.udp().path_id")]
    pub fn udp_path_id(&self, s: &UdpSocket) -> Result<PathId, SocketError> {
        Ok(self.socket(s)?.path)
    }

    /// Queues `data` as one datagram to `dst` (the first address it
    /// resolves to, as `std::net::UdpSocket::send_to`); returns its length.
    /// On a connected socket `dst` must be its peer; a broadcast `dst`
    /// needs [`Udp::set_broadcast`](crate::socket::Udp::set_broadcast).
    #[deprecated(note = "use host.udp().send_to")]
    pub fn send_to(
        &mut self,
        s: &UdpSocket,
        data: &[u8],
        dst: impl ToSocketAddrs,
    ) -> Result<usize, SocketError> {
        let dst = first(resolve(dst)?)?;
        let m = self.datagram(data)?;
        self.udp_send_msg(s, m, Some(dst.into()))?;
        Ok(data.len())
    }

    /// Queues `data` as one datagram to a connected socket's peer; returns
    /// its length.
    #[deprecated(note = "use host.udp().send")]
    pub fn send(&mut self, s: &UdpSocket, data: &[u8]) -> Result<usize, SocketError> {
        if self.socket(s)?.peer.is_none() {
            return Err(SocketError::NotConnected);
        }
        let m = self.datagram(data)?;
        self.udp_send_msg(s, m, None)?;
        Ok(data.len())
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
    #[deprecated(note = "use host.udp().send_msg")]
    pub fn udp_send_msg(
        &mut self,
        s: &UdpSocket,
        mut m: Msg,
        dst: Option<SocketAddr>,
    ) -> Result<(), SocketError> {
        let state = self.checked(s)?;
        self.device_alive()?;
        if m.len() > MAX_DATAGRAM {
            return Err(SocketError::MessageTooLong {
                len: m.len(),
                max: MAX_DATAGRAM,
            });
        }
        let dst = match (dst.map(addr::v4).transpose()?, state.peer) {
            (Some(dst), Some(peer)) if dst != peer => {
                return Err(SocketError::Connected { peer, dst })
            }
            (Some(d), None) => {
                self.check_peer_of(state.broadcast, d)?;
                d
            }
            (_, Some(p)) => p,
            (None, None) => return Err(SocketError::NotConnected),
        };
        let a = m.anno_mut();
        a.set_peer(*dst.ip(), dst.port());
        a.set_ttl(state.ttl);
        match self.stack_mut().send(state.path, Dir::Down, m) {
            Ok(()) => Ok(()),
            // Run to completion: IP's drop reaches us synchronously.
            Err(SendError::Dropped(reason)) if reason == Ipv4DropReason::NoRoute => {
                Err(SocketError::NetworkUnreachable(*dst.ip()))
            }
            Err(SendError::Dropped(reason)) => Err(SocketError::Dropped(reason)),
            Err(_) => Err(SocketError::QueueFull),
        }
    }

    /// Takes the next datagram received on `s` as a pool message (no
    /// copy); its sender is in the annotations (`peer_ip`, `peer_port`).
    /// `Ok(None)` when nothing is queued.
    #[deprecated(note = "use host.udp().recv_msg")]
    pub fn udp_recv_msg(&mut self, s: &UdpSocket) -> Result<Option<Msg>, SocketError> {
        let path = self.checked(s)?.path;
        Ok(self.stack_mut().recv(path, Dir::Up))
    }

    /// Copies the next datagram received on `s` into `buf` and says how
    /// long it was and who sent it. A datagram longer than `buf` is
    /// truncated to it, the rest discarded, and [`RecvInfo::truncated`]
    /// tells (as `recvmsg`'s `MSG_TRUNC`). `Ok(None)` when nothing is
    /// queued: poll the host and try again.
    ///
    /// ```
    /// # use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    /// # use pathstack::host::Host;
    /// let (a, b) = memory_pair(MemoryConfig::default());
    /// let mut h1 = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
    /// let mut h2 = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
    /// let (s1, s2) = (h1.udp().bind("0.0.0.0:0").unwrap(), h2.udp().bind("0.0.0.0:7").unwrap());
    /// h1.send_to(&s1, b"0123456789", "10.0.0.2:7").unwrap();
    /// let mut small = [0u8; 4];
    /// let got = loop {
    ///     h1.poll();
    ///     h2.poll();
    ///     if let Ok(got) = s2.recv_from_trunc(&mut h2, &mut small) {
    ///         break got;
    ///     }
    /// };
    /// assert_eq!((got.len, got.datagram_len, got.truncated()), (4, 10, true));
    /// ```
    #[deprecated(
        since = "0.2.0",
        note = "use `UdpSocket::recv_from_trunc`, which fails with `WouldBlock` when nothing is queued"
    )]
    pub fn recv_from_trunc(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<RecvInfo>, SocketError> {
        Ok(self.udp_recv_msg(s)?.map(|m| copy_out(&m, buf)))
    }

    /// Copies the next datagram received on `s` into `buf` and returns its
    /// length and sender; a datagram longer than `buf` is truncated (see
    /// [`Host::recv_from_trunc`] to learn that it was). `Ok(None)` when
    /// nothing is queued: poll the host and try again.
    #[deprecated(
        since = "0.2.0",
        note = "use `UdpSocket::recv_from`, which fails with `WouldBlock` when nothing is queued"
    )]
    pub fn recv_from(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<(usize, SocketAddr)>, SocketError> {
        Ok(self
            .udp_try_recv_from_trunc(s, buf)?
            .map(|r| (r.len, r.from)))
    }

    /// Like [`Host::recv_from`], but the datagram stays queued: the next
    /// receive takes it again (`MSG_PEEK`). A pending error is reported
    /// and left pending (the next receive takes it).
    #[deprecated(
        since = "0.2.0",
        note = "use `UdpSocket::peek_from`, which fails with `WouldBlock` when nothing is queued"
    )]
    pub fn peek_from(
        &self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<(usize, SocketAddr)>, SocketError> {
        let path = self.socket(s)?.path;
        if let Some(e) = self.pending_error(s) {
            return Err(e);
        }
        Ok(self
            .stack()
            .path(path)
            .and_then(|p| p.queue(QueueKind::sink(Dir::Up)).front())
            .map(|m| {
                let r = copy_out(m, buf);
                (r.len, r.from)
            }))
    }

    /// Like [`Host::recv_from`] on a connected socket, without the sender
    /// (always its peer).
    #[deprecated(
        since = "0.2.0",
        note = "use `UdpSocket::recv`, which fails with `WouldBlock` when nothing is queued"
    )]
    pub fn recv(&mut self, s: &UdpSocket, buf: &mut [u8]) -> Result<Option<usize>, SocketError> {
        if self.socket(s)?.peer.is_none() {
            return Err(SocketError::NotConnected);
        }
        Ok(self.udp_try_recv_from(s, buf)?.map(|(n, _)| n))
    }

    /// Datagrams waiting on `s` (0 for a closed socket or another host's).
    #[deprecated(note = "use host.udp().pending")]
    pub fn udp_pending(&self, s: &UdpSocket) -> usize {
        self.socket(s)
            .ok()
            .and_then(|st| self.stack().path(st.path))
            .map_or(0, |p| p.queue(QueueKind::sink(Dir::Up)).len())
    }

    /// Whether a send on `s` would be queued now (its path's send queue
    /// has room); a send may still find no free buffer.
    #[deprecated(note = "use host.udp().writable")]
    pub fn udp_writable(&self, s: &UdpSocket) -> Result<bool, SocketError> {
        let path = self.socket(s)?.path;
        Ok(self.stack().path(path).is_some_and(|p| {
            let q = p.queue(QueueKind::source(Dir::Down));
            q.len() < q.capacity()
        }))
    }
}
