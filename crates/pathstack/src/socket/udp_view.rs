//! The UDP view of a host: `host.udp()`, a thin borrow whose calls follow
//! `std::net::UdpSocket` with the socket handle as the first argument
//! (issue 27 item 2: one protocol per view, no `udp_` prefixes on `Host`).
//!
//! The view holds nothing but the borrow, so it costs nothing; each call
//! runs on the host's socket table and the socket's path as before. The
//! non-blocking receives answer `WouldBlock` as a non-blocking `std`
//! socket's do (see [`ready`](super::ready)).

// The view is the public face of the socket calls; the host's own
// methods behind it are deprecated for applications and stay one release.
#![allow(deprecated)]

use super::{RecvInfo, SocketError, UdpSocket};
use crate::host::Host;
use pathstack_core::{Msg, PathId};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// UDP on a host: `host.udp()`.
///
/// `host.udp()` borrows the host mutably; [`Udp::of`] makes the view of
/// a shared borrow (`Udp::of(&host)`), which offers the calls that only
/// look.
pub struct Udp<H> {
    host: H,
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
        self.host.local_addr(s)
    }

    /// The peer of a connected socket, as `std::net::UdpSocket::peer_addr`.
    pub fn peer_addr(&self, s: &UdpSocket) -> Result<SocketAddr, SocketError> {
        self.host.peer_addr(s)
    }

    /// The path that carries `s`'s datagrams (for tools that look at the core).
    pub fn path_id(&self, s: &UdpSocket) -> Result<PathId, SocketError> {
        self.host.udp_path_id(s)
    }

    /// Datagrams queued on `s`.
    pub fn pending(&self, s: &UdpSocket) -> usize {
        self.host.udp_pending(s)
    }

    /// Whether a send on `s` would be taken now.
    pub fn writable(&self, s: &UdpSocket) -> Result<bool, SocketError> {
        self.host.udp_writable(s)
    }

    /// The IP time-to-live of `s`'s datagrams.
    pub fn ttl(&self, s: &UdpSocket) -> Result<u32, SocketError> {
        self.host.ttl(s)
    }

    /// Whether `s` may send to a broadcast address.
    pub fn broadcast(&self, s: &UdpSocket) -> Result<bool, SocketError> {
        self.host.broadcast(s)
    }

    /// Copies the next datagram without taking it, as `std`'s `peek_from`.
    pub fn peek_from(&self, s: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        s.peek_from(&self.host, buf)
    }
}

impl<H: DerefMut<Target = Host>> Udp<H> {
    /// Opens a socket bound to `addr`, as `std::net::UdpSocket::bind`; port 0 picks an ephemeral port.
    pub fn bind(&mut self, addr: impl ToSocketAddrs) -> Result<UdpSocket, SocketError> {
        self.host.udp_bind(addr)
    }

    /// Opens a socket bound to `local` and connected to `peer` in one step: one path, where [`bind`](Self::bind) then [`connect`](Self::connect) makes two.
    pub fn bind_connected(
        &mut self,
        local: impl ToSocketAddrs,
        peer: impl ToSocketAddrs,
    ) -> Result<UdpSocket, SocketError> {
        self.host.udp_connect(local, peer)
    }

    /// Connects `s` to `peer`, as `std::net::UdpSocket::connect`: it then sends only to `peer` and hears only from it.
    pub fn connect(&mut self, s: &UdpSocket, peer: impl ToSocketAddrs) -> Result<(), SocketError> {
        self.host.connect(s, peer)
    }

    /// Closes `s`: its path is destroyed and its handle is stale everywhere.
    pub fn close(&mut self, s: UdpSocket) -> Result<(), SocketError> {
        self.host.udp_close(s)
    }

    /// Sends `data` to `dst`, as `std::net::UdpSocket::send_to`.
    pub fn send_to(
        &mut self,
        s: &UdpSocket,
        data: &[u8],
        dst: impl ToSocketAddrs,
    ) -> Result<usize, SocketError> {
        self.host.send_to(s, data, dst)
    }

    /// Sends `data` to the peer of a connected socket, as `std::net::UdpSocket::send`.
    pub fn send(&mut self, s: &UdpSocket, data: &[u8]) -> Result<usize, SocketError> {
        self.host.send(s, data)
    }

    /// Sends a message the caller built (no copy), to `dst` or the connected peer.
    pub fn send_msg(
        &mut self,
        s: &UdpSocket,
        m: Msg,
        dst: Option<SocketAddr>,
    ) -> Result<(), SocketError> {
        self.host.udp_send_msg(s, m, dst)
    }

    /// Takes the next queued datagram as a message (no copy); `None` when none is queued.
    pub fn recv_msg(&mut self, s: &UdpSocket) -> Result<Option<Msg>, SocketError> {
        self.host.udp_recv_msg(s)
    }

    /// Sets the IP time-to-live of `s`'s datagrams, as `std::net::UdpSocket::set_ttl`.
    pub fn set_ttl(&mut self, s: &UdpSocket, ttl: u32) -> Result<(), SocketError> {
        self.host.set_ttl(s, ttl)
    }

    /// Allows or forbids sends to a broadcast address, as `SO_BROADCAST`.
    pub fn set_broadcast(&mut self, s: &UdpSocket, on: bool) -> Result<(), SocketError> {
        self.host.set_broadcast(s, on)
    }

    /// Takes the error pending on `s` (an ICMP or ARP failure of a connected socket), as `std::net::UdpSocket::take_error`.
    pub fn take_error(&mut self, s: &UdpSocket) -> Result<Option<SocketError>, SocketError> {
        self.host.take_error(s)
    }

    /// Polls the host until a datagram comes or `timeout` passes; says whether it was truncated.
    pub fn recv_from_trunc_timeout(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<RecvInfo, SocketError> {
        self.host.recv_from_trunc_timeout(s, buf, timeout)
    }

    /// Polls the host until a datagram comes or `timeout` passes ([`SocketError::TimedOut`]).
    pub fn recv_from_timeout(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<(usize, SocketAddr), SocketError> {
        self.host.recv_from_timeout(s, buf, timeout)
    }

    /// [`recv_from_timeout`](Self::recv_from_timeout) without the sender's address.
    pub fn recv_timeout(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, SocketError> {
        self.host.recv_timeout(s, buf, timeout)
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
