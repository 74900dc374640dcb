//! The std-like non-blocking calls on the socket handles: what
//! `std::net`'s sockets do after `set_nonblocking(true)`, with the host as
//! an argument. A call that would wait fails with
//! [`io::ErrorKind::WouldBlock`] (a non-blocking BSD socket's
//! `EWOULDBLOCK`); the caller runs the host ([`Host::poll`], or
//! [`Host::poll_ready`] to wait for any of many sockets) and calls again.
//! Errors are `io::Error`s with the kinds of [`SocketError`]'s conversion.
//!
//! ```
//! use pathstack::core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack::host::Host;
//! use std::io::ErrorKind;
//!
//! let (a, b) = memory_pair(MemoryConfig::default());
//! let mut client = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
//! let mut server = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
//! let srv = server.udp().bind("0.0.0.0:7").unwrap();
//! let cli = client.udp().bind("0.0.0.0:0").unwrap();
//! let mut buf = [0u8; 64];
//! // Nothing yet: the call would block.
//! let e = srv.recv_from(&mut server, &mut buf).unwrap_err();
//! assert_eq!(e.kind(), ErrorKind::WouldBlock);
//! cli.send_to(&mut client, b"hello", "10.0.0.2:7").unwrap();
//! let (n, _from) = loop {
//!     client.poll();
//!     server.poll();
//!     match srv.recv_from(&mut server, &mut buf) {
//!         Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
//!         got => break got.unwrap(),
//!     }
//! };
//! assert_eq!(&buf[..n], b"hello");
//! ```

use super::tcp::Usual;
use super::{RecvInfo, SocketError, TcpListener, TcpStream, Udp, UdpSocket};
use crate::host::Host;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

/// A non-blocking call's result with `WouldBlock` as `Ok(None)`: for a
/// loop that takes what is there and moves on (`while let Some(n) =
/// ready(s.read(&mut host, &mut buf))? { … }`), where a `std` program
/// matches on the error's kind.
#[inline]
pub fn ready<T>(r: io::Result<T>) -> io::Result<Option<T>> {
    match r {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// `Ok(Some(t))` as `Ok(t)`, `Ok(None)` as `WouldBlock`.
#[inline]
fn or_would_block<T>(r: Result<Option<T>, SocketError>) -> io::Result<T> {
    match r {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e.into()),
    }
}

/// A usual case's answer ([`Usual`]) as the call's, the general way's
/// (`general`) when it was not the usual case: kept apart, so that the
/// usual case converts no [`SocketError`].
#[inline(always)]
fn usual_or(
    r: Result<usize, Usual>,
    general: impl FnOnce() -> Result<Option<usize>, SocketError>,
) -> io::Result<usize> {
    match r {
        Ok(n) => Ok(n),
        Err(Usual::WouldBlock) => Err(io::ErrorKind::WouldBlock.into()),
        Err(Usual::Tcp(e)) => Err(tcp_error(e)),
        Err(Usual::General) => or_would_block(general()),
    }
}

/// The connection's error as the general way reports it.
#[cold]
#[inline(never)]
fn tcp_error(e: pathstack_inet::tcp::TcpError) -> io::Error {
    SocketError::Tcp(e).into()
}

impl UdpSocket {
    /// Takes the next datagram into `buf` (truncated to it) with its
    /// sender, as `std::net::UdpSocket::recv_from`; `WouldBlock` when
    /// none is queued.
    #[inline]
    pub fn recv_from(&self, host: &mut Host, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        or_would_block(
            host.udp_try_recv_from_trunc(self, buf)
                .map(|r| r.map(|r| (r.len, r.from))),
        )
    }

    /// [`recv_from`](crate::socket::UdpSocket::recv_from) saying whether the datagram was
    /// truncated ([`RecvInfo::truncated`], `MSG_TRUNC`).
    ///
    /// ```
    /// # use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    /// # use pathstack::host::Host;
    /// let (a, b) = memory_pair(MemoryConfig::default());
    /// let mut h1 = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
    /// let mut h2 = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
    /// let (s1, s2) = (h1.udp().bind("0.0.0.0:0").unwrap(), h2.udp().bind("0.0.0.0:7").unwrap());
    /// s1.send_to(&mut h1, b"0123456789", "10.0.0.2:7").unwrap();
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
    pub fn recv_from_trunc(&self, host: &mut Host, buf: &mut [u8]) -> io::Result<RecvInfo> {
        or_would_block(host.udp_try_recv_from_trunc(self, buf))
    }

    /// Takes the next datagram from a connected socket's peer, as
    /// `std::net::UdpSocket::recv`; `WouldBlock` when none is queued.
    #[inline]
    pub fn recv(&self, host: &mut Host, buf: &mut [u8]) -> io::Result<usize> {
        if Udp::of(&*host).peer_addr(self).is_err() {
            return Err(SocketError::NotConnected.into());
        }
        self.recv_from(host, buf).map(|(n, _)| n)
    }

    /// Copies the next datagram without taking it (`MSG_PEEK`), as
    /// `std::net::UdpSocket::peek_from`; `WouldBlock` when none is queued.
    pub fn peek_from(&self, host: &Host, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        or_would_block(host.udp_try_peek_from(self, buf))
    }

    /// Sends `buf` as one datagram to `dst`, as
    /// `std::net::UdpSocket::send_to`; `WouldBlock` when the socket's send
    /// queue is full.
    #[inline]
    pub fn send_to(
        &self,
        host: &mut Host,
        buf: &[u8],
        dst: impl ToSocketAddrs,
    ) -> io::Result<usize> {
        Ok(host.udp().send_to(self, buf, dst)?)
    }

    /// Sends `buf` to a connected socket's peer, as
    /// `std::net::UdpSocket::send`; `WouldBlock` when the send queue is
    /// full.
    #[inline]
    pub fn send(&self, host: &mut Host, buf: &[u8]) -> io::Result<usize> {
        Ok(host.udp().send(self, buf)?)
    }
}

impl TcpStream {
    /// Reads what has arrived into `buf`, as `std::io::Read::read` on a
    /// non-blocking `std::net::TcpStream`: `Ok(0)` at the end of the
    /// stream, `WouldBlock` when nothing is there yet.
    #[inline]
    pub fn read(&self, host: &mut Host, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        usual_or(host.tcp_recv_usual(self, buf), || {
            host.tcp_try_recv(self, buf)
        })
    }

    /// Copies what has arrived without taking it (`MSG_PEEK`);
    /// `WouldBlock` when nothing is there yet.
    pub fn peek(&self, host: &Host, buf: &mut [u8]) -> io::Result<usize> {
        or_would_block(host.tcp_try_peek(self, buf))
    }

    /// Writes as much of `buf` as the send buffer takes, as
    /// `std::io::Write::write` on a non-blocking `std::net::TcpStream`;
    /// `WouldBlock` when it is full.
    #[inline]
    pub fn write(&self, host: &mut Host, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        usual_or(host.tcp_send_usual(self, buf), || {
            host.tcp_try_send(self, buf)
        })
    }

    /// Writes the slices of `bufs` in order as one write (`writev`);
    /// `WouldBlock` when the send buffer is full.
    pub fn write_vectored(&self, host: &mut Host, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        if bufs.iter().all(|b| b.is_empty()) {
            return Ok(0);
        }
        or_would_block(host.tcp_try_send_vectored(self, bufs))
    }
}

impl TcpListener {
    /// Takes an established connection and its peer, as
    /// `std::net::TcpListener::accept` on a non-blocking listener;
    /// `WouldBlock` when none waits.
    pub fn accept(&self, host: &mut Host) -> io::Result<(TcpStream, SocketAddr)> {
        or_would_block(host.tcp_try_accept(self))
    }
}
