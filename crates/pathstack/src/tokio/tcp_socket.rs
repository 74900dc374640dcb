//! [`TcpSocket`]: a TCP socket whose options are set before it connects
//! or listens, with the methods of `tokio::net::TcpSocket`.
//!
//! A socket of a [`Net`]'s host is a path, and a path is made when it
//! connects or listens (a connection's path carries its options from
//! the start: the receive buffer decides the window and its scale in
//! the SYN, RFC 7323 §2.2; the time to live is the SYN's). So
//! `TcpSocket` holds the options until [`connect`](TcpSocket::connect)
//! or [`listen`](TcpSocket::listen) makes the path with them; it takes
//! the host's [`TcpConfig`] defaults when made. A [`bind`](TcpSocket::bind)
//! takes its port at once, as Linux's does: the host's TCP module holds
//! it (`socket/tcp_bind.rs`) until the socket hands it to its connection
//! or listener, or is dropped.

use super::net::Net;
use super::tcp_listener::TcpListener;
use super::tcp_stream::TcpStream;
use crate::host::Host;
use crate::inet::tcp::{Keepalive, TcpConfig};
use crate::socket::{clamp_buffer, SocketError, TcpOpen};
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
/// use pathstack::core::device::memory::{memory_pair, MemoryConfig};
/// use pathstack::host::Host;
/// use pathstack::tokio::{Net, TcpSocket};
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> std::io::Result<()> {
///     let (a, b) = memory_pair(MemoryConfig::default());
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
///
/// `bind` takes the port at once, with Linux's rules for TCP: a second
/// socket's `bind` to a port another holds fails with `AddrInUse` unless
/// both set [`set_reuseaddr`](Self::set_reuseaddr) before binding and
/// the other is not listening; a listener's port is never shared; a bind
/// to a port that connections hold (TIME-WAIT, accepted ones) needs
/// `set_reuseaddr`; a bind to port 0 takes an ephemeral port, which
/// [`local_addr`](Self::local_addr) then shows, and a `connect` without
/// a bind never picks a port a bind holds. Dropping the socket frees the
/// port; connecting or listening hands it on. (Ports are held across the
/// host's addresses: a bind to `127.0.0.1:p` and one to the host's
/// address with the same `p` conflict, where Linux lets them be.)
#[derive(Debug)]
pub struct TcpSocket {
    net: Net,
    /// Behind a lock because tokio's setters take `&self`.
    opts: Mutex<Options>,
}

/// What a socket holds until it connects or listens.
#[derive(Clone, Copy, Debug)]
struct Options {
    /// The bound address, its port the one held (none before `bind`).
    local: Option<SocketAddrV4>,
    /// Whether the host holds `local`'s port for this socket: from a
    /// `bind` until it is handed on or the socket is dropped.
    holds_port: bool,
    cfg: TcpConfig,
    /// The IP time to live of its segments (`None`: IP's default).
    ttl: Option<u8>,
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
                holds_port: false,
                cfg,
                ttl: None,
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
    /// 127.0.0.0/8 or `0.0.0.0`, with a port (0: a free ephemeral one,
    /// chosen now). The port is taken now, with Linux's rules (see
    /// [`TcpSocket`]): `AddrInUse` when another socket holds it,
    /// `AddrNotAvailable` for an address that is not the host's (an
    /// IPv6 one refused), `InvalidInput` for a socket already bound
    /// (Linux's `EINVAL`).
    pub fn bind(&self, addr: SocketAddr) -> io::Result<()> {
        let mut o = self.opts();
        if o.local.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the TCP socket is bound already",
            ));
        }
        let mut st = self.net.inner.live()?;
        let local = st.host.check_bind(addr)?;
        let local = st.host.tcp_bind_port(local, o.reuseaddr)?;
        o.local = Some(local);
        o.holds_port = true;
        Ok(())
    }

    /// The address it was bound to, with the port it holds (that of a
    /// bind to port 0 included); `0.0.0.0:0` if it was not bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(SocketAddr::V4(self.opts().local.unwrap_or(
            SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0),
        )))
    }

    /// Lets a [`bind`](Self::bind) or [`listen`](Self::listen) take a
    /// port that connections of the host still hold (`SO_REUSEADDR`):
    /// typically a server's connections in TIME-WAIT after it restarts
    /// (RFC 9293 §3.4.2 keeps them 2·MSL), or share it with other bound
    /// sockets that set it too and are not listening. Off (the default,
    /// as Linux's), such a bind or listen fails with `AddrInUse`. Set it
    /// before `bind`: the port is taken then. It changes nothing else for
    /// `connect`, whose connection is keyed by both ends.
    /// ([`TcpListener::bind`] always reuses, as tokio's does.)
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

    /// The IP time to live of its segments (`IP_TTL`), 1 to 255
    /// (`InvalidInput` otherwise, Linux's `EINVAL`): set before `connect`
    /// it is in the SYN's header, before `listen` in the SYN-ACKs and
    /// every segment of the accepted connections (Linux's accepted
    /// sockets inherit the listener's).
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        let ttl = u8::try_from(ttl)
            .ok()
            .filter(|&t| t > 0)
            .ok_or(SocketError::BadTtl(ttl))?;
        self.opts().ttl = Some(ttl);
        Ok(())
    }

    /// The time to live of its segments (64, Linux's default, unless
    /// set).
    pub fn ttl(&self) -> io::Result<u32> {
        Ok(u32::from(
            self.opts()
                .ttl
                .unwrap_or(crate::inet::wire::ipv4::DEFAULT_TTL),
        ))
    }

    /// The options, the port it holds handed on to the path about to be
    /// made (so that dropping the socket does not give it back).
    fn hand_over(&self) -> Options {
        let mut o = self.opts();
        let out = *o;
        o.holds_port = false;
        out
    }

    /// Connects to `addr` with the socket's options, from its bound
    /// address (an ephemeral port if none), waiting for the handshake (as
    /// [`TcpStream::connect`]).
    ///
    /// This method is cancel safe, as `TcpStream::connect`.
    pub async fn connect(self, addr: SocketAddr) -> io::Result<TcpStream> {
        let o = self.hand_over();
        let local = o
            .local
            .unwrap_or(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0));
        let open = TcpOpen {
            cfg: o.cfg,
            ttl: o.ttl,
        };
        TcpStream::connect_opened(
            &self.net,
            |h: &mut Host| {
                // The port passes from the bind to the connection under
                // the same lock: nothing can take it in between.
                if o.holds_port {
                    h.tcp_unbind_port(local.port());
                }
                h.tcp_connect_opened(local, addr, open)
            },
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
        let o = self.hand_over();
        let local = o
            .local
            .unwrap_or(SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0));
        let mut st = self.net.inner.live()?;
        // The port passes from the bind to the listener under the same
        // lock.
        if o.holds_port {
            st.host.tcp_unbind_port(local.port());
        }
        let port = local.port();
        if !o.reuseaddr
            && port != 0
            && (st.host.tcp_connections_on_port(port) > 0 || st.host.tcp_port_bound(port))
        {
            return Err(SocketError::PortInUse {
                transport: crate::socket::Transport::Tcp,
                port,
            }
            .into());
        }
        let open = TcpOpen {
            cfg: o.cfg,
            ttl: o.ttl,
        };
        let sock = st
            .host
            .tcp_listen_opened(local, backlog.clamp(1, MAX_BACKLOG), open)?;
        drop(st);
        Ok(TcpListener::listening(self.net.clone(), sock, o.linger))
    }
}

impl Drop for TcpSocket {
    /// A socket dropped bound, without connecting or listening, frees its
    /// port (Linux's `close` of a bound socket).
    fn drop(&mut self) {
        let o = self.opts.get_mut().unwrap_or_else(PoisonError::into_inner);
        if !o.holds_port {
            return;
        }
        o.holds_port = false;
        let port = o.local.map_or(0, |l| l.port());
        // A host already shut down holds nothing any more.
        if let Ok(mut st) = self.net.inner.live() {
            st.host.tcp_unbind_port(port);
        }
    }
}
