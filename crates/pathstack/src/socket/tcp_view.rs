//! The TCP view of a host: `host.tcp()`, a thin borrow whose calls follow
//! `std::net::TcpListener` and `std::net::TcpStream` with the handle as the
//! first argument (issue 27 item 2: no `tcp_` prefixes on `Host`).
//!
//! Nothing here blocks: `connect` starts the handshake (RFC 9293 §3.5) and
//! the caller polls the host; `read`, `write` and `accept` answer
//! `WouldBlock` as a non-blocking `std` socket's do.

use super::{TcpListener, TcpStream};
use crate::host::Host;
use std::io;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};

/// TCP on a host: `host.tcp()`.
///
/// `host.tcp()` borrows the host mutably; [`Tcp::of`] makes the view of
/// a shared borrow (`Tcp::of(&host)`), which offers the calls that only
/// look.
pub struct Tcp<H> {
    pub(super) host: H,
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

    /// Copies what `s` received without taking it, as `std`'s `peek`.
    pub fn peek(&self, s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        s.peek(&self.host, buf)
    }
}

impl<H: DerefMut<Target = Host>> Tcp<H> {
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
