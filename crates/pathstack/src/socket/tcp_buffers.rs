//! The buffer sizes of a [`Host`]'s TCP connections (`SO_SNDBUF`,
//! `SO_RCVBUF`), their bounds, and the windows they give.
//!
//! A connection's buffers are set before it opens (the receive buffer
//! decides the window scale announced in the SYN, RFC 7323 §2.2, so it
//! cannot grow afterwards): [`TcpConfig::send_buffer`] and
//! [`TcpConfig::recv_buffer`], which `pathstack::tokio::TcpSocket` sets
//! through [`clamp_buffer`].

use super::Tcp;
use super::{SocketError, TcpStream};
use crate::host::Host;
#[cfg(feature = "tokio")]
use pathstack_inet::modules::tcp::TcpModule;
#[cfg(doc)]
use pathstack_inet::tcp::TcpConfig;
use std::ops::{Deref, DerefMut};

/// The smallest buffer a connection gets: Linux's `SOCK_MIN_SNDBUF`
/// order (two full segments and then some), so a window never shrinks
/// below one MSS.
pub const MIN_BUFFER: usize = 4 * 1024;

/// The largest buffer a connection gets: the host's `wmem_max`/`rmem_max`.
/// Linux clamps a larger `SO_SNDBUF`/`SO_RCVBUF` to those silently, and
/// so do we; 16 MiB is Linux's `tcp_rmem` maximum on large hosts and
/// needs a window scale of 9 (RFC 7323 allows 14).
pub const MAX_BUFFER: usize = 16 * 1024 * 1024;

/// A requested buffer size clamped to [`MIN_BUFFER`]..=[`MAX_BUFFER`], as
/// Linux clamps `SO_SNDBUF`/`SO_RCVBUF` (without doubling it: the size
/// asked for, bounded, is the size used and the size reported).
pub fn clamp_buffer(size: u32) -> usize {
    usize::try_from(size)
        .unwrap_or(MAX_BUFFER)
        .clamp(MIN_BUFFER, MAX_BUFFER)
}

impl Host {
    #[cfg(feature = "tokio")]
    /// Connections of this host on local port `port`, TIME-WAIT ones
    /// included (what a listener without `SO_REUSEADDR` may not bind
    /// over).
    pub(crate) fn tcp_connections_on_port(&self, port: u16) -> u32 {
        self.tcp_sockets
            .tcp
            .and_then(|m| self.stack().module::<TcpModule>(m))
            .map_or(0, |m| m.connections_on_port(port))
    }
}

impl<H: Deref<Target = Host>> Tcp<H> {
    /// The connection's send buffer in octets (`SO_SNDBUF`).
    pub fn send_buffer_size(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.conn(s, |c| c.tcb().config().send_buffer)
    }

    /// The connection's receive buffer in octets (`SO_RCVBUF`): the
    /// largest window it advertises.
    pub fn recv_buffer_size(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.conn(s, |c| c.tcb().config().recv_buffer)
    }

    /// The window the peer advertised last, scaled (Linux's
    /// `tcpi_snd_wnd`): how much we may have in flight to it. The peer's
    /// receive buffer bounds it.
    pub fn send_window(&self, s: &TcpStream) -> Result<u32, SocketError> {
        self.host.conn(s, |c| c.tcb().snd_wnd())
    }
}

impl<H: DerefMut<Target = Host>> Tcp<H> {
    /// Sets the connection's send buffer (`SO_SNDBUF` on a live
    /// connection), clamped as [`clamp_buffer`] clamps; the buffer grows
    /// on demand, so this sets the most it may hold. Never below what is
    /// queued. Returns the size set.
    pub fn set_send_buffer_size(&mut self, s: &TcpStream, size: u32) -> Result<usize, SocketError> {
        let size = clamp_buffer(size);
        self.host.with_conn(s, |c, _| {
            c.tcb_mut().set_send_buffer(size);
            c.tcb().config().send_buffer
        })
    }

    /// Sets the connection's receive buffer (`SO_RCVBUF` on a live
    /// connection), clamped as [`clamp_buffer`] clamps: the window offered
    /// follows it, within the window scale the SYN announced (RFC 7323
    /// §2.3) and never moving its right edge back (RFC 9293 §3.8.6.2.2).
    /// Returns the size set.
    pub fn set_recv_buffer_size(&mut self, s: &TcpStream, size: u32) -> Result<usize, SocketError> {
        let size = clamp_buffer(size);
        self.host.with_conn(s, |c, _| {
            c.tcb_mut().set_recv_buffer(size);
            c.tcb().config().recv_buffer
        })
    }
}
