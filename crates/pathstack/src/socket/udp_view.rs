//! The UDP view of a host: `host.udp()`, a thin borrow whose calls follow
//! `std::net::UdpSocket` with the socket handle as the first argument
//! (issue 27 item 2: one protocol per view, no `udp_` prefixes on `Host`).
//!
//! The view holds nothing but the borrow, so it costs nothing; each call
//! runs on the host's socket table and the socket's path as before. The
//! non-blocking receives answer `WouldBlock` as a non-blocking `std`
//! socket's do (see [`ready`](super::ready)).

use super::addr::{self, check_local, first, resolve, try_each};
use super::table::SocketState;
use super::{RecvInfo, SocketError, UdpSocket, MAX_DATAGRAM};
use crate::host::Host;
use pathstack_core::{Dir, Msg, PathId, QueueKind, SendError};
use pathstack_inet::wire::ipv4::Ipv4DropReason;
use pathstack_inet::InetAnno;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};
use std::ops::{Deref, DerefMut};

/// UDP on a host: `host.udp()`.
///
/// `host.udp()` borrows the host mutably; [`Udp::of`] makes the view of
/// a shared borrow (`Udp::of(&host)`), which offers the calls that only
/// look.
pub struct Udp<H> {
    pub(super) host: H,
}

impl Host {
    /// The host's UDP sockets: `host.udp().bind("0.0.0.0:7")`.
    pub fn udp(&mut self) -> Udp<&mut Host> {
        Udp { host: self }
    }
}

impl<H: Deref<Target = Host>> Udp<H> {
    /// The view of `host`, which may be a shared borrow: `Udp::of(&host)`.
    pub fn of(host: H) -> Self {
        Udp { host }
    }

    /// The address `s` is bound to, as `std::net::UdpSocket::local_addr`.
    pub fn local_addr(&self, s: &UdpSocket) -> Result<SocketAddr, SocketError> {
        let st = self.host.socket(s)?;
        // A connected socket's own address is the one IP placed its path
        // on: 127.0.0.1 towards the loopback network.
        let placed = st.peer.and_then(|_| {
            let p = self.host.stack().path(st.path)?;
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
    pub fn peer_addr(&self, s: &UdpSocket) -> Result<SocketAddr, SocketError> {
        self.host
            .socket(s)?
            .peer
            .map(SocketAddr::from)
            .ok_or(SocketError::NotConnected)
    }

    /// The socket's path (to inspect its statistics with [`Stack::path`](pathstack_core::Stack::path)).
    /// It changes when the socket connects.
    pub fn path_id(&self, s: &UdpSocket) -> Result<PathId, SocketError> {
        Ok(self.host.socket(s)?.path)
    }

    /// Datagrams waiting on `s` (0 for a closed socket or another host's).
    pub fn pending(&self, s: &UdpSocket) -> usize {
        self.host
            .socket(s)
            .ok()
            .and_then(|st| self.host.stack().path(st.path))
            .map_or(0, |p| p.queue(QueueKind::sink(Dir::Up)).len())
    }

    /// Whether a send on `s` would be queued now (its path's send queue
    /// has room); a send may still find no free buffer.
    pub fn writable(&self, s: &UdpSocket) -> Result<bool, SocketError> {
        let path = self.host.socket(s)?.path;
        Ok(self.host.stack().path(path).is_some_and(|p| {
            let q = p.queue(QueueKind::source(Dir::Down));
            q.len() < q.capacity()
        }))
    }

    /// Copies the next datagram without taking it, as `std`'s `peek_from`.
    pub fn peek_from(&self, s: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        s.peek_from(&self.host, buf)
    }
}

impl<H: DerefMut<Target = Host>> Udp<H> {
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
    pub fn bind(&mut self, addr: impl ToSocketAddrs) -> Result<UdpSocket, SocketError> {
        try_each(resolve(addr)?, |local| {
            check_local(self.host.sockets.addr(), local)?;
            let (path, port) = self.host.udp_path(local.port(), None)?;
            let mut st = SocketState::new(path, port, None);
            st.bound_ip = Some(*local.ip()).filter(|a| !a.is_unspecified());
            Ok(self.host.sockets.insert(st))
        })
    }

    /// Opens a socket bound to `local` (as [`Udp::bind`](crate::socket::Udp::bind)) and
    /// connected to `peer` in one step: one path, where
    /// [`bind`](crate::socket::Udp::bind) then [`connect`](crate::socket::Udp::connect) makes
    /// two. Connected sockets may share a local port with each other and
    /// with a bound socket; the classifier prefers the connected one.
    pub fn bind_connected(
        &mut self,
        local: impl ToSocketAddrs,
        peer: impl ToSocketAddrs,
    ) -> Result<UdpSocket, SocketError> {
        let local = first(resolve(local)?)?;
        check_local(self.host.sockets.addr(), local)?;
        try_each(resolve(peer)?, |peer| {
            self.host.check_peer_of(false, peer)?;
            let (path, port) = self.host.udp_path(local.port(), Some(peer))?;
            Ok(self
                .host
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
    pub fn connect(&mut self, s: &UdpSocket, peer: impl ToSocketAddrs) -> Result<(), SocketError> {
        let state = *self.host.socket(s)?;
        let (path, peer) = try_each(resolve(peer)?, |peer| {
            self.host.check_peer_of(state.broadcast, peer)?;
            Ok((self.host.udp_path(state.port, Some(peer))?.0, peer))
        })?;
        // The new path holds the port before the old one lets it go, so it
        // is never free in between.
        self.host
            .stack_mut()
            .path_delete(state.path)
            .map_err(SocketError::Path)?;
        let st = self.host.sockets.get_mut(s)?;
        st.path = path;
        st.peer = Some(peer);
        Ok(())
    }

    /// Closes a socket: its path is deleted, datagrams still queued on it
    /// are freed, and its port is free again. Every copy of the handle is
    /// stale from now on.
    pub fn close(&mut self, s: UdpSocket) -> Result<(), SocketError> {
        let state = self.host.sockets.remove(&s)?;
        self.host
            .stack_mut()
            .path_delete(state.path)
            .map_err(|_| SocketError::Closed)
    }

    /// Queues `data` as one datagram to `dst` (the first address it
    /// resolves to, as `std::net::UdpSocket::send_to`); returns its length.
    /// On a connected socket `dst` must be its peer; a broadcast `dst`
    /// needs [`Udp::set_broadcast`](crate::socket::Udp::set_broadcast).
    pub fn send_to(
        &mut self,
        s: &UdpSocket,
        data: &[u8],
        dst: impl ToSocketAddrs,
    ) -> Result<usize, SocketError> {
        let dst = first(resolve(dst)?)?;
        let m = self.host.datagram(data)?;
        self.send_msg(s, m, Some(dst.into()))?;
        Ok(data.len())
    }

    /// Queues `data` as one datagram to a connected socket's peer; returns
    /// its length.
    pub fn send(&mut self, s: &UdpSocket, data: &[u8]) -> Result<usize, SocketError> {
        if self.host.socket(s)?.peer.is_none() {
            return Err(SocketError::NotConnected);
        }
        let m = self.host.datagram(data)?;
        self.send_msg(s, m, None)?;
        Ok(data.len())
    }

    /// Queues a datagram already in a pool message (no copy), to `dst`
    /// (`None` on a connected socket: its peer). The message must come
    /// from this host's pool ([`Stack::pool`](pathstack_core::Stack::pool)) to have headroom for the
    /// headers.
    pub fn send_msg(
        &mut self,
        s: &UdpSocket,
        mut m: Msg,
        dst: Option<SocketAddr>,
    ) -> Result<(), SocketError> {
        let state = self.host.checked(s)?;
        self.host.device_alive()?;
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
                self.host.check_peer_of(state.broadcast, d)?;
                d
            }
            (_, Some(p)) => p,
            (None, None) => return Err(SocketError::NotConnected),
        };
        let a = m.anno_mut();
        a.set_peer(*dst.ip(), dst.port());
        a.set_ttl(state.ttl);
        match self.host.stack_mut().send(state.path, Dir::Down, m) {
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
    pub fn recv_msg(&mut self, s: &UdpSocket) -> Result<Option<Msg>, SocketError> {
        let path = self.host.checked(s)?.path;
        Ok(self.host.stack_mut().recv(path, Dir::Up))
    }

    /// Receives a datagram, as a non-blocking `std::net::UdpSocket::recv_from`:
    /// `WouldBlock` when none is queued.
    pub fn recv_from(&mut self, s: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        s.recv_from(&mut self.host, buf)
    }

    /// [`recv_from`](Self::recv_from) that also says whether the datagram
    /// was truncated (as `recvmsg`'s `MSG_TRUNC`).
    pub fn recv_from_trunc(&mut self, s: &UdpSocket, buf: &mut [u8]) -> io::Result<RecvInfo> {
        s.recv_from_trunc(&mut self.host, buf)
    }

    /// Receives a datagram from the connected peer, as a non-blocking
    /// `std::net::UdpSocket::recv`.
    pub fn recv(&mut self, s: &UdpSocket, buf: &mut [u8]) -> io::Result<usize> {
        s.recv(&mut self.host, buf)
    }
}
