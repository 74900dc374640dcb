//! The TCP view of a host: `host.tcp()`, a thin borrow whose calls follow
//! `std::net::TcpListener` and `std::net::TcpStream` with the handle as the
//! first argument (issue 27 item 2: no `tcp_` prefixes on `Host`).
//!
//! Nothing here blocks: `connect` starts the handshake (RFC 9293 §3.5) and
//! the caller polls the host; `read`, `write` and `accept` answer
//! `WouldBlock` as a non-blocking `std` socket's do.

// The view is the public face of the TCP calls; the host's `tcp_*`
// methods behind it are deprecated for applications and stay one release.
#![allow(deprecated)]

use super::{SocketError, TcpListener, TcpStream};
use crate::host::Host;
use pathstack_core::PathId;
use pathstack_inet::tcp::{Keepalive, Shutdown, State, TcpConfig, TcpError, TcpStats};
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// TCP on a host: `host.tcp()`.
///
/// `host.tcp()` borrows the host mutably; [`Tcp::of`] makes the view of
/// a shared borrow (`Tcp::of(&host)`), which offers the calls that only
/// look.
pub struct Tcp<H> {
    host: H,
}

impl Host {
    /// The host's TCP listeners and streams: `host.tcp().listen("0.0.0.0:80", 16)`.
    pub fn tcp(&mut self) -> Tcp<&mut Host> {
        Tcp { host: self }
    }
}

impl<H: Deref<Target = Host>> Tcp<H> {
    /// The view of `host`, which may be a shared borrow: `Tcp::of(&host)`.
    pub fn of(host: H) -> Self {
        Tcp { host }
    }

    /// Connections established and waiting for `accept` on `l`.
    pub fn accept_pending(&self, l: &TcpListener) -> Result<usize, SocketError> {
        self.host.tcp_accept_pending(l)
    }

    /// The RFC 9293 state of `s`'s connection.
    pub fn state(&self, s: &TcpStream) -> Result<State, SocketError> {
        self.host.tcp_state(s)
    }

    /// Bytes received and not yet read.
    pub fn recv_queue(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.tcp_recv_queue(s)
    }

    /// The address `l` listens on, as `std::net::TcpListener::local_addr`.
    pub fn listener_addr(&self, l: &TcpListener) -> Result<SocketAddr, SocketError> {
        self.host.tcp_listener_addr(l)
    }

    /// The local address of `s`, as `std::net::TcpStream::local_addr`.
    pub fn local_addr(&self, s: &TcpStream) -> Result<SocketAddr, SocketError> {
        self.host.tcp_local_addr(s)
    }

    /// The peer of `s`, as `std::net::TcpStream::peer_addr`.
    pub fn peer_addr(&self, s: &TcpStream) -> Result<SocketAddr, SocketError> {
        self.host.tcp_peer_addr(s)
    }

    /// Whether Nagle's algorithm is off on `s`.
    pub fn nodelay(&self, s: &TcpStream) -> Result<bool, SocketError> {
        self.host.tcp_nodelay(s)
    }

    /// The connection's counters.
    pub fn stats(&self, s: &TcpStream) -> Result<TcpStats, SocketError> {
        self.host.tcp_stats(s)
    }

    /// The path that carries `s`'s segments (for tools that look at the core).
    pub fn path_id(&self, s: &TcpStream) -> Result<PathId, SocketError> {
        self.host.tcp_path_id(s)
    }

    /// Bytes a write would take now.
    pub fn send_space(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.tcp_send_space(s)
    }

    /// Whether a read would not block (data, FIN or an error).
    pub fn readable(&self, s: &TcpStream) -> Result<bool, SocketError> {
        self.host.tcp_readable(s)
    }

    /// Whether a write would not block.
    pub fn writable(&self, s: &TcpStream) -> Result<bool, SocketError> {
        self.host.tcp_writable(s)
    }

    /// The send buffer's size, as `SO_SNDBUF`.
    pub fn send_buffer_size(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.tcp_send_buffer_size(s)
    }

    /// The receive buffer's size, as `SO_RCVBUF`.
    pub fn recv_buffer_size(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.tcp_recv_buffer_size(s)
    }

    /// The peer's advertised window.
    pub fn send_window(&self, s: &TcpStream) -> Result<u32, SocketError> {
        self.host.tcp_send_window(s)
    }

    /// The linger time of `s`.
    pub fn linger(&self, s: &TcpStream) -> Result<Option<Duration>, SocketError> {
        self.host.tcp_linger(s)
    }

    /// The IP time-to-live of `s`'s segments.
    pub fn ttl(&self, s: &TcpStream) -> Result<u32, SocketError> {
        self.host.tcp_ttl(s)
    }

    /// Copies what `s` received without taking it, as `std`'s `peek`.
    pub fn peek(&self, s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        s.peek(&self.host, buf)
    }
}

impl<H: DerefMut<Target = Host>> Tcp<H> {
    /// Listens on `addr` with at most `backlog` connections waiting for `accept`, as `std::net::TcpListener::bind`.
    pub fn listen(
        &mut self,
        addr: impl ToSocketAddrs,
        backlog: u32,
    ) -> Result<TcpListener, SocketError> {
        self.host.tcp_listen(addr, backlog)
    }

    /// [`listen`](Self::listen) with a TCP configuration for the accepted connections.
    pub fn listen_with(
        &mut self,
        addr: impl ToSocketAddrs,
        backlog: u32,
        cfg: TcpConfig,
    ) -> Result<TcpListener, SocketError> {
        self.host.tcp_listen_with(addr, backlog, cfg)
    }

    /// Starts a connection to `peer`, as `std::net::TcpStream::connect` but without waiting: poll the host until [`is_connected`](Self::is_connected).
    pub fn connect(&mut self, peer: impl ToSocketAddrs) -> Result<TcpStream, SocketError> {
        self.host.tcp_connect(peer)
    }

    /// [`connect`](Self::connect) from `local` with a TCP configuration.
    pub fn connect_with(
        &mut self,
        local: impl ToSocketAddrs,
        peer: impl ToSocketAddrs,
        cfg: TcpConfig,
    ) -> Result<TcpStream, SocketError> {
        self.host.tcp_connect_with(local, peer, cfg)
    }

    /// Whether the connection is established; a failed connect is its error.
    pub fn is_connected(&mut self, s: &TcpStream) -> Result<bool, SocketError> {
        self.host.tcp_is_connected(s)
    }

    /// Shuts down reading, writing or both, as `std::net::TcpStream::shutdown`.
    pub fn shutdown(&mut self, s: &TcpStream, how: Shutdown) -> Result<(), SocketError> {
        self.host.tcp_shutdown(s, how)
    }

    /// Closes `s` (an orderly FIN, or as its linger says); the handle is stale after.
    pub fn close(&mut self, s: TcpStream) -> Result<(), SocketError> {
        self.host.tcp_close(s)
    }

    /// Aborts `s` with a reset (RFC 9293 ABORT).
    pub fn abort(&mut self, s: TcpStream) -> Result<(), SocketError> {
        self.host.tcp_abort(s)
    }

    /// Closes the listener `l`; connections not yet accepted are reset.
    pub fn close_listener(&mut self, l: TcpListener) -> Result<(), SocketError> {
        self.host.tcp_close_listener(l)
    }

    /// Takes the error that ended `s`'s connection, as `std::net::TcpStream::take_error`.
    pub fn take_error(&mut self, s: &TcpStream) -> Result<Option<TcpError>, SocketError> {
        self.host.tcp_take_error(s)
    }

    /// Turns Nagle's algorithm off (`true`) or on, as `TCP_NODELAY`.
    pub fn set_nodelay(&mut self, s: &TcpStream, on: bool) -> Result<(), SocketError> {
        self.host.tcp_set_nodelay(s, on)
    }

    /// Sets or clears keepalive probing (RFC 9293 §3.8.4).
    pub fn set_keepalive(
        &mut self,
        s: &TcpStream,
        k: Option<Keepalive>,
    ) -> Result<(), SocketError> {
        self.host.tcp_set_keepalive(s, k)
    }

    /// Sets `SO_LINGER`, as `std::net::TcpStream::set_linger`.
    pub fn set_linger(
        &mut self,
        s: &TcpStream,
        linger: Option<Duration>,
    ) -> Result<(), SocketError> {
        self.host.tcp_set_linger(s, linger)
    }

    /// Sets the IP time-to-live of `s`'s segments, as `std::net::TcpStream::set_ttl`.
    pub fn set_ttl(&mut self, s: &TcpStream, ttl: u32) -> Result<(), SocketError> {
        self.host.tcp_set_ttl(s, ttl)
    }

    /// Takes an established connection from `l`, as a non-blocking
    /// `std::net::TcpListener::accept`: `WouldBlock` when none waits.
    pub fn accept(&mut self, l: &TcpListener) -> io::Result<(TcpStream, SocketAddr)> {
        l.accept(&mut self.host)
    }

    /// Reads what `s` received, as a non-blocking `std::io::Read::read`:
    /// `Ok(0)` at the peer's FIN, `WouldBlock` when nothing is there yet.
    pub fn read(&mut self, s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        s.read(&mut self.host, buf)
    }

    /// Queues `buf` for sending, as a non-blocking `std::io::Write::write`:
    /// the bytes taken, `WouldBlock` when the send buffer is full.
    pub fn write(&mut self, s: &TcpStream, buf: &[u8]) -> io::Result<usize> {
        s.write(&mut self.host, buf)
    }

    /// [`write`](Self::write) gathering from several buffers.
    pub fn write_vectored(&mut self, s: &TcpStream, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        s.write_vectored(&mut self.host, bufs)
    }
}
