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
//! argument: addresses are anything [`ToSocketAddrs`](std::net::ToSocketAddrs)
//! (`"10.0.0.2:7"`, a [`SocketAddr`], a [`SocketAddrV4`],
//! `(IpAddr, u16)` …; IPv6 ones fail with
//! [`SocketError::UnsupportedFamily`]); `connect` is a call on a bound
//! socket; `local_addr`, `peer_addr`, `peek_from`, `set_ttl`/`ttl` and
//! `set_broadcast`/`broadcast` are there. What differs, and why:
//!
//! - nothing blocks unless it says so: the handles' calls
//!   ([`UdpSocket::recv_from`], [`TcpStream::read`], …) fail with
//!   `WouldBlock` as a non-blocking `std` socket's do; the caller runs
//!   [`Host::poll`] (and [`Host::wait`]) and tries again, waits for any
//!   of many sockets with [`Host::poll_ready`], or calls
//!   [`Udp::recv_from_timeout`](crate::socket::Udp::recv_from_timeout), which polls and waits itself and fails
//!   with [`SocketError::TimedOut`] (kind `TimedOut`, where Linux reports
//!   a read timeout as `WouldBlock`);
//! - a send puts the datagram on the socket's path; it runs at once when
//!   the path is idle, else on the next poll;
//! - a truncated datagram is reported by [`UdpSocket::recv_from_trunc`]
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
// The port a bound, unconnected socket holds: `pathstack::tokio::TcpSocket`'s.
#[cfg(feature = "tokio")]
mod tcp_bind;
mod tcp_buffers;
mod tcp_linger;
mod tcp_open;
mod tcp_ttl;
mod tcp_view;
mod udp_view;

pub use error::{SocketError, Transport};
pub use handles::{TcpListener, TcpStream, UdpSocket};
pub use readiness::{Event, Events, Interest, Source, Token, MAX_REGISTRATIONS};
pub use tcp_buffers::{clamp_buffer, MAX_BUFFER, MIN_BUFFER};
pub use tcp_linger::MAX_LINGERING;
pub(crate) use tcp_open::TcpOpen;
pub use tcp_view::Tcp;
pub use udp_view::Udp;

use crate::host::Host;
use addr::check_peer;
use pathstack_core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack_core::attrs::Attrs;
use pathstack_core::msg::MsgError;
use pathstack_core::{Dir, ModuleId, Msg, PathId, QueueKind, Stack};
use pathstack_inet::modules::{UdpRefusal, UdpStage};
use pathstack_inet::InetAnno;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use table::SocketState;

/// The largest UDP payload over IPv4: 65,535 bytes of IP datagram less the
/// IP and UDP headers (RFC 768, RFC 791).
pub const MAX_DATAGRAM: usize = 65_535 - 20 - 8;

/// What a receive took: the datagram's length and sender, and how much of
/// it fitted (see [`UdpSocket::recv_from_trunc`]).
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

    /// The receives behind the handles' std-like calls and the tokio
    /// sockets: `Ok(None)` when nothing is queued (a handle makes that
    /// `WouldBlock`, a tokio socket registers its waker). Copies the next
    /// datagram into `buf`, truncated to it (as BSD sockets do), and says
    /// how long it was and who sent it.
    pub(crate) fn udp_try_recv_from_trunc(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<RecvInfo>, SocketError> {
        Ok(self.udp().recv_msg(s)?.map(|m| copy_out(&m, buf)))
    }

    /// [`udp_try_recv_from_trunc`](Self::udp_try_recv_from_trunc) without
    /// the truncation.
    #[cfg(feature = "tokio")]
    pub(crate) fn udp_try_recv_from(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<(usize, SocketAddr)>, SocketError> {
        Ok(self
            .udp_try_recv_from_trunc(s, buf)?
            .map(|r| (r.len, r.from)))
    }

    /// Like [`udp_try_recv_from_trunc`](Self::udp_try_recv_from_trunc), but
    /// the datagram stays queued: the next receive takes it again (`MSG_PEEK`). A pending error is reported
    /// and left pending (the next receive takes it).
    pub(crate) fn udp_try_peek_from(
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

    /// A receive on a connected socket, without the sender (always its
    /// peer).
    #[cfg(feature = "tokio")]
    pub(crate) fn udp_try_recv(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
    ) -> Result<Option<usize>, SocketError> {
        if self.socket(s)?.peer.is_none() {
            return Err(SocketError::NotConnected);
        }
        Ok(self.udp_try_recv_from(s, buf)?.map(|(n, _)| n))
    }
}
