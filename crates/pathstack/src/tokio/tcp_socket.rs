//! [`TcpSocket`]: a TCP socket whose options are set before it connects
//! or listens, with the methods of `tokio::net::TcpSocket`.
//!
//! A socket of a [`Net`]'s host is a path, and a path is made when it
//! connects or listens (a connection's path carries its options from
//! the start: the receive buffer decides the window and its scale in
//! the SYN, RFC 7323 §2.2). So `TcpSocket` holds the options and the
//! bound address until [`connect`](TcpSocket::connect) or
//! [`listen`](TcpSocket::listen) makes the path with them; it takes the
//! host's [`TcpConfig`] defaults when made.

use super::net::Net;
use super::tcp_listener::TcpListener;
use super::tcp_stream::TcpStream;
use crate::inet::tcp::{Keepalive, TcpConfig};
use crate::socket::{clamp_buffer, SocketError};
use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The largest listen backlog: the TCP module's bound on the SYN and the
/// accept queue (Linux bounds `listen`'s by `somaxconn`, 4096 by default;
/// ours is the 16-bit limit the module keeps).
pub const MAX_BACKLOG: u32 = 65_535;

/// A TCP socket not yet connected or listening, as
/// `tokio::net::TcpSocket`: made with [`new_v4`](Self::new_v4) on a
/// [`Net`], given options and perhaps an address, then turned into a
/// [`TcpStream`] by [`connect`](Self::connect) or a [`TcpListener`] by
/// [`listen`](Self::listen).
///
/// ```
/// use pathstack::core::device::wire::{wire_pair, WireConfig};
/// use pathstack::host::Host;
/// use pathstack::tokio::{Net, TcpSocket};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> std::io::Result<()> {
///     let (a, b) = wire_pair(WireConfig::default());
///     let client = Net::new(Host::new("10.0.0.1/24".parse().unwrap(), a)?);
///     let server = Net::new(Host::new("10.0.0.2/24".parse().unwrap(), b)?);
///
///     let s = TcpSocket::new_v4(&server)?;
///     s.bind("0.0.0.0:80".parse().unwrap())?;
///     let listener = s.listen(16)?;
///
///     let c = TcpSocket::new_v4(&client)?;
///     c.set_recv_buffer_size(16 * 1024)?;
///     c.set_nodelay(true)?;
///     let stream = c.connect("10.0.0.2:80".parse().unwrap()).await?;
///     assert!(stream.nodelay()?);
///     let (_accepted, peer) = listener.accept().await?;
///     assert_eq!(peer, stream.local_addr()?);
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct TcpSocket {
    net: Net,
    /// Behind a lock because tokio's setters take `&self`.
    opts: Mutex<Options>,
}

/// What a socket holds until it connects or listens.
#[derive(Clone, Copy, Debug)]
struct Options {
    local: Option<SocketAddrV4>,
    cfg: TcpConfig,
    reuseaddr: bool,
    linger: Option<Duration>,
}

impl TcpSocket {
    /// A new IPv4 TCP socket of `net`'s host, with the host's TCP
    /// defaults ([`HostConfig::tcp_config`](crate::host::HostConfig::tcp_config)).
    pub fn new_v4(net: &Net) -> io::Result<TcpSocket> {
        let cfg = net.inner.live()?.host.tcp_default_config();
        Ok(TcpSocket {
            net: net.clone(),
            opts: Mutex::new(Options {
                local: None,
                cfg,
                reuseaddr: false,
                linger: None,
            }),
        })
    }

    /// Fails with `Unsupported`: pathstack speaks IPv4 only.
    pub fn new_v6(net: &Net) -> io::Result<TcpSocket> {
        let _ = net;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "IPv6 sockets are not supported (pathstack speaks IPv4 only)",
        ))
    }

    fn opts(&self) -> MutexGuard<'_, Options> {
        // The options are plain values: a panic elsewhere cannot leave
        // them half-written.
        self.opts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Binds the socket to `addr`: the host's address, one of
    /// 127.0.0.0/8 or `0.0.0.0`, with a port (0: an ephemeral one, chosen
    /// when it connects or listens). The address is checked now
    /// (`AddrNotAvailable` for one that is not the host's, an IPv6 one
    /// refused); the port is taken when the socket connects or listens,
    /// and a port in use fails then with `AddrInUse`.
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        let local = self.net.inner.live()?.host.check_bind(addr)?;
        self.opts().local = Some(local);
        Ok(())
    }

    /// The address it was bound to (`0.0.0.0:0` if it was not). Unlike
    /// tokio's, the port of a bind to port 0 stays 0 until the socket
    /// connects or listens (the stream's or listener's `local_addr` says
    /// it then).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(SocketAddr::V4(self.opts().local.unwrap_or(
            SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0),
        )))
    }

    /// Lets a [`listen`](Self::listen) take a port that connections of
    /// the host still hold (`SO_REUSEADDR`): typically a server's
    /// connections in TIME-WAIT after it restarts (RFC 9293 §3.4.2 keeps
    /// them 2·MSL). Off (the default, as Linux's), such a listen fails
    /// with `AddrInUse`. It changes nothing for `connect`, whose
    /// connection is keyed by both ends. ([`TcpListener::bind`] always
    /// reuses, as tokio's does.)
    pub fn set_reuseaddr(&self, reuseaddr: bool) -> io::Result<()> {
        self.opts().reuseaddr = reuseaddr;
        Ok(())
    }

    /// Whether [`set_reuseaddr`](Self::set_reuseaddr) is on.
    pub fn reuseaddr(&self) -> io::Result<bool> {
        Ok(self.opts().reuseaddr)
    }

    /// The send buffer in octets (`SO_SNDBUF`): data written and not yet
    /// acknowledged. Clamped to
    /// [`MIN_BUFFER`](crate::socket::MIN_BUFFER)..=[`MAX_BUFFER`](crate::socket::MAX_BUFFER),
    /// as Linux clamps to `wmem_max`; [`send_buffer_size`](Self::send_buffer_size)
    /// reports the size used.
    pub fn set_send_buffer_size(&self, size: u32) -> io::Result<()> {
        self.opts().cfg.send_buffer = clamp_buffer(size);
        Ok(())
    }

    /// The send buffer's size.
    pub fn send_buffer_size(&self) -> io::Result<u32> {
        Ok(u32::try_from(self.opts().cfg.send_buffer).unwrap_or(u32::MAX))
    }

    /// The receive buffer in octets (`SO_RCVBUF`): the largest window the
    /// connection advertises, announced (with its scale) in the SYN.
    /// Clamped as [`set_send_buffer_size`](Self::set_send_buffer_size),
    /// as Linux clamps to `rmem_max`.
    pub fn set_recv_buffer_size(&self, size: u32) -> io::Result<()> {
        let mut o = self.opts();
        o.cfg.recv_buffer = clamp_buffer(size);
        // Out-of-order data is held in the receive window; never more.
        o.cfg.max_ooo_bytes = o.cfg.max_ooo_bytes.min(o.cfg.recv_buffer);
        Ok(())
    }

    /// The receive buffer's size.
    pub fn recv_buffer_size(&self) -> io::Result<u32> {
        Ok(u32::try_from(self.opts().cfg.recv_buffer).unwrap_or(u32::MAX))
    }

    /// Turns Nagle's algorithm off (`TCP_NODELAY`) for the connection (see
    /// [`TcpStream::set_nodelay`]).
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.opts().cfg.nodelay = nodelay;
        Ok(())
    }

    /// Whether Nagle's algorithm is off.
    pub fn nodelay(&self) -> io::Result<bool> {
        Ok(self.opts().cfg.nodelay)
    }

    /// Turns keepalive (`SO_KEEPALIVE`) on with the host's timers (or
    /// Linux's: 7200 s idle, 75 s apart, 9 probes), or off. For other
    /// timers, [`TcpStream::set_keepalive`] once connected.
    pub fn set_keepalive(&self, keepalive: bool) -> io::Result<()> {
        let mut o = self.opts();
        o.cfg.keepalive = match (keepalive, o.cfg.keepalive) {
            (false, _) => None,
            (true, Some(k)) => Some(k),
            (true, None) => Some(Keepalive::default()),
        };
        Ok(())
    }

    /// Whether keepalive is on.
    pub fn keepalive(&self) -> io::Result<bool> {
        Ok(self.opts().cfg.keepalive.is_some())
    }

    /// What closing the connection does with unacknowledged data
    /// (`SO_LINGER`, see [`TcpStream::set_linger`]); a listener's
    /// connections take it on accept.
    pub fn set_linger(&self, linger: Option<Duration>) -> io::Result<()> {
        self.opts().linger = linger;
        Ok(())
    }

    /// The linger option.
    pub fn linger(&self) -> io::Result<Option<Duration>> {
        Ok(self.opts().linger)
    }

    /// Connects to `addr` with the socket's options, from its bound
    /// address (an ephemeral port if none), waiting for the handshake (as
    /// [`TcpStream::connect`]).
    ///
    /// This method is cancel safe, as `TcpStream::connect`.
    pub async fn connect(self, addr: SocketAddr) -> io::Result<TcpStream> {
        let o = *self.opts();
        TcpStream::connect_from(
            &self.net,
            o.local.map(SocketAddr::V4),
            addr,
            Some(o.cfg),
            o.linger,
        )
        .await
    }

    /// Listens on the bound address (`0.0.0.0` and an ephemeral port if
    /// none) with a SYN queue and an accept queue of `backlog` each
    /// (1..=[`MAX_BACKLOG`]; 0 is taken as 1 and a larger one is
    /// clamped, as Linux clamps to `somaxconn`). Beyond a full SYN queue
    /// SYN cookies answer; beyond a full accept queue the handshake's
    /// last ACK is dropped (the client retransmits), as on Linux. Its
    /// connections have the socket's options.
    pub fn listen(self, backlog: u32) -> io::Result<TcpListener> {
        let o = *self.opts();
        let local = o
            .local
            .unwrap_or(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0));
        let mut st = self.net.inner.live()?;
        if !o.reuseaddr && local.port() != 0 && st.host.tcp_connections_on_port(local.port()) > 0 {
            return Err(SocketError::PortInUse {
                transport: crate::socket::Transport::Tcp,
                port: local.port(),
            }
            .into());
        }
        let sock = st
            .host
            .tcp()
            .listen_with(local, backlog.clamp(1, MAX_BACKLOG), o.cfg)?;
        drop(st);
        Ok(TcpListener::listening(self.net.clone(), sock, o.linger))
    }
}
