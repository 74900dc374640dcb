//! Non-blocking TCP sockets on a [`Host`]: listeners and streams.
//!
//! A listener is a passive path at the `tcp` instance keyed by its port; a
//! SYN to it opens the connection's own path (Scout's passive open), which
//! [`TcpListener::accept`] hands out as a [`TcpStream`]. [`Tcp::connect`](crate::socket::Tcp::connect)
//! makes an active path and sends the SYN; the handshake completes as the
//! host polls ([`Tcp::is_connected`](crate::socket::Tcp::is_connected)). Handles are small `Copy`
//! values carrying the host's identity, as UDP's are.
//!
//! The calls follow `std::net::TcpStream` with the host as first
//! argument, non-blocking: [`TcpStream::write`] takes what fits in the
//! send buffer and fails with `WouldBlock` when nothing fits;
//! [`TcpStream::read`] fails with `WouldBlock` when nothing is readable
//! and returns `Ok(0)` at the end of the stream;
//! [`TcpListener::accept`] fails with `WouldBlock` when no connection
//! waits.
//! Errors map to `io::ErrorKind`
//! as Linux's errno does: a refused connect is `ConnectionRefused`, a
//! reset `ConnectionReset`, a timeout `TimedOut`, a send after
//! `shutdown(Write)` `BrokenPipe`.
//!
//! ```
//! use pathstack::core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack::host::Host;
//! use pathstack::inet::tcp::Shutdown;
//!
//! let (a, b) = memory_pair(MemoryConfig::default());
//! let mut client = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
//! let mut server = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
//! let l = server.tcp().listen("0.0.0.0:7", 16).unwrap();
//! let c = client.tcp().connect("10.0.0.2:7").unwrap();
//! let s = loop {
//!     client.poll();
//!     server.poll();
//!     if let Ok((s, _peer)) = l.accept(&mut server) {
//!         break s;
//!     }
//! };
//! assert_eq!(c.write(&mut client, b"hello").unwrap(), 5);
//! client.tcp().shutdown(&c, Shutdown::Write).unwrap();
//! let mut got = Vec::new();
//! let mut buf = [0u8; 64];
//! loop {
//!     client.poll();
//!     server.poll();
//!     match s.read(&mut server, &mut buf) {
//!         Ok(0) => break, // the client's FIN
//!         Ok(n) => got.extend_from_slice(&buf[..n]),
//!         Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock),
//!     }
//! }
//! assert_eq!(got, b"hello");
//! ```

pub use super::handles::{TcpListener, TcpStream};
use super::tcp_table::{Entry, StreamAt};
use super::{SocketError, Tcp, TcpOpen, Transport};
use crate::host::Host;
use pathstack_core::attrs::Attrs;
use pathstack_core::{ModuleId, PathId};
use pathstack_inet::modules::ip::LOCAL_IPV4;
use pathstack_inet::modules::tcp::TcpModule;
use pathstack_inet::modules::{TcpConnStage, TcpListenStage, TcpRefusal};
use pathstack_inet::tcp::{Shutdown, State, TcpConfig, TcpError, TcpStats};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};
use std::ops::{Deref, DerefMut};

/// The TCP socket API of a host.
impl Host {
    pub(super) fn tcp_module(&self) -> Result<ModuleId, SocketError> {
        self.tcp_sockets.tcp.ok_or(SocketError::NoTcp)
    }

    fn listener_entry(&self, l: &TcpListener) -> Result<(PathId, u16), SocketError> {
        match self
            .tcp_sockets
            .get(self.id(), (l.host, l.slot, l.generation))?
        {
            Entry::Listener { path, port, .. } => Ok((*path, *port)),
            Entry::Stream { .. } => Err(SocketError::Closed),
        }
    }

    fn stream_path(&self, s: &TcpStream) -> Result<PathId, SocketError> {
        self.stream_entry(s).map(|(path, _)| path)
    }

    fn stream_entry(&self, s: &TcpStream) -> Result<StreamAt, SocketError> {
        match self
            .tcp_sockets
            .get(self.id(), (s.host, s.slot, s.generation))?
        {
            Entry::Stream { path, conn, .. } => Ok((*path, *conn)),
            Entry::Listener { .. } => Err(SocketError::Closed),
        }
    }

    /// The stream's entry as [`stream_entry`](Self::stream_entry) has
    /// it, or `None` when a read of it would block, as its stage said
    /// after the last socket call (see [`ReadWouldBlock`]).
    #[inline]
    fn stream_to_read(&self, s: &TcpStream) -> Result<Option<StreamAt>, SocketError> {
        match self
            .tcp_sockets
            .get(self.id(), (s.host, s.slot, s.generation))?
        {
            Entry::Stream {
                read_would_block: Some(f),
                ..
            } if f.get() => Ok(None),
            Entry::Stream { path, conn, .. } => Ok(Some((*path, *conn))),
            Entry::Listener { .. } => Err(SocketError::Closed),
        }
    }

    /// A new stream's entry, with its connection stage found once.
    pub(super) fn stream(&self, path: PathId) -> Entry {
        let conn = self.stack().stage_ref(path);
        let read_would_block = conn
            .and_then(|at| self.stack().stage_at(at))
            .map(TcpConnStage::read_would_block);
        Entry::Stream {
            path,
            conn,
            read_would_block,
        }
    }

    /// Runs `f` on the stream's connection stage with its context; what it
    /// makes due is sent at once.
    pub(crate) fn with_conn<R>(
        &mut self,
        s: &TcpStream,
        f: impl FnOnce(&mut TcpConnStage, &mut pathstack_core::stage::Cx<'_, '_>) -> R,
    ) -> Result<R, SocketError> {
        let entry = self.stream_entry(s)?;
        self.with_entry(entry, f, TcpConnStage::flush)
    }

    /// [`with_conn`](Self::with_conn) on the stream's entry, with `then`
    /// for the flush that sends what `f` made due.
    fn with_entry<R>(
        &mut self,
        (path, at): StreamAt,
        f: impl FnOnce(&mut TcpConnStage, &mut pathstack_core::stage::Cx<'_, '_>) -> R,
        then: impl FnOnce(&mut TcpConnStage, &mut pathstack_core::stage::Cx<'_, '_>),
    ) -> Result<R, SocketError> {
        let now = self.now();
        let stack = self.stack_mut();
        stack.set_now(now);
        let g = |st: &mut TcpConnStage, cx: &mut pathstack_core::stage::Cx<'_, '_>| {
            let r = f(st, cx);
            then(st, cx);
            r
        };
        // The handle checks itself on use; without one (never seen: the
        // path had no connection stage when the socket was made) the
        // search by type decides.
        let r = match at {
            Some(at) => stack.with_stage_at(at, g),
            None => stack.with_stage::<TcpConnStage, R>(path, g),
        };
        // Not `ok_or(SocketError::Closed)`: that builds the error and
        // drops it on every call that succeeds.
        match r {
            Some(r) => Ok(r),
            None => Err(SocketError::Closed),
        }
    }

    pub(crate) fn conn<R>(
        &self,
        s: &TcpStream,
        f: impl FnOnce(&TcpConnStage) -> R,
    ) -> Result<R, SocketError> {
        let (path, at) = self.stream_entry(s)?;
        if let Some(c) = at.and_then(|at| self.stack().stage_at(at)) {
            return Ok(f(c));
        }
        let p = self.stack().path(path).ok_or(SocketError::Closed)?;
        (0..p.len())
            .filter_map(|i| p.stage(i))
            .find_map(|st| (st as &dyn std::any::Any).downcast_ref::<TcpConnStage>())
            .map(f)
            .ok_or(SocketError::Closed)
    }

    /// Makes a TCP path (a listener's or a connection's) at `tcp`; TCP's
    /// refusals (a port in use) become socket errors.
    pub(super) fn tcp_path(&mut self, tcp: ModuleId, attrs: Attrs) -> Result<PathId, SocketError> {
        self.stack_mut()
            .path_create(tcp, attrs)
            .map_err(map_refusal)
    }

    pub(crate) fn tcp_default_config(&self) -> TcpConfig {
        if let Some(c) = self.tcp_sockets.config {
            return c;
        }
        self.tcp_sockets
            .tcp
            .and_then(|m| self.stack().module::<TcpModule>(m))
            .map(|m| *m.defaults())
            .unwrap_or_default()
    }

    /// Takes an established connection from the listener's accept queue,
    /// with its peer; `Ok(None)` when none waits.
    pub(crate) fn tcp_try_accept(
        &mut self,
        l: &TcpListener,
    ) -> Result<Option<(TcpStream, SocketAddr)>, SocketError> {
        let (_, port) = self.listener_entry(l)?;
        let tcp = self.tcp_module()?;
        loop {
            let Some(path) = self
                .stack_mut()
                .module_mut::<TcpModule>(tcp)
                .and_then(|m| m.take_accepted(port))
            else {
                return Ok(None);
            };
            let (slot, generation) = self.tcp_sockets.insert(self.stream(path));
            let s = TcpStream {
                host: self.id(),
                slot,
                generation,
            };
            if self.with_conn(&s, |st, _| st.adopt()).is_err() {
                // It went away while it waited.
                self.tcp_sockets.remove(slot);
                continue;
            }
            self.specialize(path);
            let peer = Tcp::of(&*self).peer_addr(&s)?;
            return Ok(Some((s, peer)));
        }
    }

    /// Whether the link layer has said that the peer of a connection
    /// still in SYN-SENT cannot be reached: ARP gave up on the next hop
    /// and recorded it on the connection's path, as it does for a UDP
    /// socket ([`crate::socket`]'s errors). What a connect waits for is
    /// then decided.
    pub(crate) fn tcp_connect_unreachable(&self, s: &TcpStream) -> bool {
        self.stream_path(s)
            .ok()
            .and_then(|p| self.stack().fault(p))
            .is_some_and(|f| unreachable_error(f.kind).is_some())
    }

    /// Ends a connection in SYN-SENT whose peer the link layer cannot
    /// reach (Linux's `connect` fails with `EHOSTUNREACH` after ARP's
    /// retries, about 3 s, rather than after two minutes of SYNs); the
    /// error, if it ended.
    fn unreachable_while_connecting(
        &mut self,
        s: &TcpStream,
    ) -> Result<Option<TcpError>, SocketError> {
        let path = self.stream_path(s)?;
        let Some(fault) = self.stack().fault(path) else {
            return Ok(None);
        };
        let Some(e) = unreachable_error(fault.kind) else {
            return Ok(None);
        };
        self.stack_mut().take_fault(path);
        let ended = self.with_conn(s, |c, _| c.tcb_mut().on_unreachable(e))?;
        Ok(ended.then_some(e))
    }

    /// [`tcp_try_send`](Self::tcp_try_send)'s usual case, the write of a
    /// live stream whose connection stage the socket found when it was
    /// made: the octets written, or why not ([`Usual`]). Inlined into the
    /// socket call, so that neither the table's [`Stale`](super::stale::Stale)
    /// nor a [`SocketError`] is built and passed through memory on every
    /// call (issue 26: the socket call reaches its stage with the least in
    /// between; they were a third of the facade's instructions). Everything else — a failed device, a stale handle, a
    /// gone stage — is [`Usual::General`], decided having done nothing.
    #[inline(always)]
    pub(crate) fn tcp_send_usual(&mut self, s: &TcpStream, data: &[u8]) -> Result<usize, Usual> {
        if self.device_failure().is_some() {
            return Err(Usual::General);
        }
        let Some(Entry::Stream { conn: Some(at), .. }) = self
            .tcp_sockets
            .live(self.id(), (s.host, s.slot, s.generation))
        else {
            return Err(Usual::General);
        };
        let at = *at;
        let now = self.now();
        let stack = self.stack_mut();
        stack.set_now(now);
        // The stage hands back the usual segment of a quiet connection,
        // which goes down the path to the device in this call
        // (`Stack::send_from_stage`, issue 26 item 2); the rest of what
        // the write makes due goes through the context.
        match stack.send_from_stage(at, |c, cx, out| c.write_sending(data, cx, out)) {
            Some(r) => Usual::of(r),
            None => Err(Usual::General),
        }
    }

    /// [`tcp_try_recv`](Self::tcp_try_recv)'s usual case, as
    /// [`tcp_send_usual`](Self::tcp_send_usual) is the write's: a read
    /// the stage's flag answers (nothing there), or one the stage does
    /// without its context; [`Usual::General`] having done nothing.
    #[inline(always)]
    pub(crate) fn tcp_recv_usual(&mut self, s: &TcpStream, buf: &mut [u8]) -> Result<usize, Usual> {
        let (entry, at) = match self
            .tcp_sockets
            .live(self.id(), (s.host, s.slot, s.generation))
        {
            // A read that would find nothing and leave nothing to send
            // (every drain of a request/response loop ends with one) is
            // answered from the flag the stage keeps, without entering its
            // path to read nothing and flush nothing.
            Some(Entry::Stream {
                read_would_block: Some(f),
                ..
            }) if f.get() => return Err(Usual::WouldBlock),
            Some(Entry::Stream {
                path,
                conn: Some(at),
                ..
            }) => ((*path, Some(*at)), *at),
            _ => return Err(Usual::General),
        };
        // The read needs the path's context only for the flush after it,
        // and that rarely has anything to send: the stage reads without
        // one and says when the flush must still run.
        let Some(c) = self.stack_mut().stage_at_mut(at) else {
            return Err(Usual::General);
        };
        let (r, flush) = c.read(buf);
        // The stage cannot go between the read and its flush; were it
        // gone, the general way would find it gone too and say so.
        if flush
            && self
                .with_entry(entry, |_, _| (), TcpConnStage::after_read)
                .is_err()
        {
            return Err(Usual::General);
        }
        Usual::of(r)
    }

    /// Writes as much of `data` as the send buffer takes; `Ok(None)` when
    /// it is full (would block). Data written during the handshake waits
    /// for it.
    pub(crate) fn tcp_try_send(
        &mut self,
        s: &TcpStream,
        data: &[u8],
    ) -> Result<Option<usize>, SocketError> {
        match self.tcp_send_usual(s, data) {
            Ok(n) => Ok(Some(n)),
            Err(Usual::WouldBlock) => Ok(None),
            Err(Usual::Tcp(e)) => Err(SocketError::Tcp(e)),
            Err(Usual::General) => self.tcp_send_general(s, data),
        }
    }

    /// [`tcp_try_send`](Self::tcp_try_send) when it was not the usual
    /// case ([`tcp_send_usual`](Self::tcp_send_usual)): the error that
    /// says why, or the write through the search by type when the socket
    /// has no handle on its stage.
    #[cold]
    #[inline(never)]
    fn tcp_send_general(
        &mut self,
        s: &TcpStream,
        data: &[u8],
    ) -> Result<Option<usize>, SocketError> {
        self.device_alive()?;
        let entry = self.stream_entry(s)?;
        if entry.1.is_some() {
            // The usual case found the handle's stage gone.
            return Err(SocketError::Closed);
        }
        let write = |c: &mut TcpConnStage, _: &mut pathstack_core::stage::Cx<'_, '_>| c.write(data);
        self.with_entry(entry, write, TcpConnStage::after_write)?
            .map_err(SocketError::Tcp)
    }

    /// Writes the slices of `bufs` in order as one write (`writev`): as
    /// much of them as the send buffer takes, segmented as one stream of
    /// bytes, so that Nagle never holds one slice behind the ACK of
    /// another. `Ok(None)` when the buffer is full.
    pub(crate) fn tcp_try_send_vectored(
        &mut self,
        s: &TcpStream,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Result<Option<usize>, SocketError> {
        self.device_alive()?;
        self.with_conn(s, |c, _| c.tcb_mut().send_vectored(bufs))?
            .map_err(SocketError::from)
    }

    /// Reads what has arrived into `buf`: `Ok(Some(0))` at the end of the
    /// stream, `Ok(None)` when nothing is there yet.
    pub(crate) fn tcp_try_recv(
        &mut self,
        s: &TcpStream,
        buf: &mut [u8],
    ) -> Result<Option<usize>, SocketError> {
        match self.tcp_recv_usual(s, buf) {
            Ok(n) => Ok(Some(n)),
            Err(Usual::WouldBlock) => Ok(None),
            Err(Usual::Tcp(e)) => Err(SocketError::Tcp(e)),
            Err(Usual::General) => self.tcp_recv_general(s, buf),
        }
    }

    /// [`tcp_try_recv`](Self::tcp_try_recv) when it was not the usual
    /// case ([`tcp_recv_usual`](Self::tcp_recv_usual)), as
    /// [`tcp_send_general`](Self::tcp_send_general) is the write's.
    #[cold]
    #[inline(never)]
    fn tcp_recv_general(
        &mut self,
        s: &TcpStream,
        buf: &mut [u8],
    ) -> Result<Option<usize>, SocketError> {
        let Some(entry) = self.stream_to_read(s)? else {
            return Ok(None);
        };
        if entry.1.is_some() {
            // The usual case found the handle's stage gone.
            return Err(SocketError::Closed);
        }
        let read =
            |c: &mut TcpConnStage, _: &mut pathstack_core::stage::Cx<'_, '_>| c.tcb_mut().recv(buf);
        self.with_entry(entry, read, TcpConnStage::after_read)?
            .map_err(SocketError::Tcp)
    }

    /// Like [`read`](crate::socket::TcpStream::read), leaving the data in place.
    pub(crate) fn tcp_try_peek(
        &self,
        s: &TcpStream,
        buf: &mut [u8],
    ) -> Result<Option<usize>, SocketError> {
        self.conn(s, |c| c.tcb().peek(buf))?
            .map_err(SocketError::from)
    }
}

/// Why a socket call's usual case ([`Host::tcp_send_usual`],
/// [`Host::tcp_recv_usual`]) did not end with a count of octets: small
/// enough to come back in registers with the count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Usual {
    /// The call would block (`Ok(None)` of the general way).
    WouldBlock,
    /// The connection's error.
    Tcp(TcpError),
    /// Not the usual case, and nothing done: the general way decides.
    General,
}

impl Usual {
    /// The control block's answer as a usual case's.
    #[inline(always)]
    fn of(r: Result<Option<usize>, TcpError>) -> Result<usize, Usual> {
        match r {
            Ok(Some(n)) => Ok(n),
            Ok(None) => Err(Usual::WouldBlock),
            Err(e) => Err(Usual::Tcp(e)),
        }
    }
}

/// The connection error a path fault of kind `kind` ends a connect with.
fn unreachable_error(kind: std::io::ErrorKind) -> Option<TcpError> {
    match kind {
        std::io::ErrorKind::HostUnreachable => Some(TcpError::HostUnreachable),
        std::io::ErrorKind::NetworkUnreachable => Some(TcpError::NetworkUnreachable),
        _ => None,
    }
}

pub(super) fn map_refusal(e: pathstack_core::error::PathError) -> SocketError {
    match e.cause::<TcpRefusal>() {
        Some(&TcpRefusal::PortInUse(port)) => SocketError::PortInUse {
            transport: Transport::Tcp,
            port,
        },
        _ => SocketError::Path(e),
    }
}

impl<H: Deref<Target = Host>> Tcp<H> {
    /// Connections waiting in the listener's accept queue: whether an
    /// [`accept`](crate::socket::TcpListener::accept) would return one (an async layer's
    /// readiness test; none of them is taken).
    pub fn accept_pending(&self, l: &TcpListener) -> Result<usize, SocketError> {
        let (_, port) = self.host.listener_entry(l)?;
        let tcp = self.host.tcp_module()?;
        Ok(self
            .host
            .stack()
            .module::<TcpModule>(tcp)
            .and_then(|m| m.listener(port))
            .map_or(0, |q| q.accept_queue.len()))
    }

    /// The connection's state (RFC 9293 §3.3.2).
    pub fn state(&self, s: &TcpStream) -> Result<State, SocketError> {
        self.host.conn(s, |c| c.tcb().state())
    }

    /// Octets a [`read`](crate::socket::TcpStream::read) would read now (`FIONREAD`).
    pub fn recv_queue(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.conn(s, |c| c.tcb().recv_queue())
    }

    /// The listener's address: the one it was bound to (a 127/8 one
    /// included), `0.0.0.0` for one bound to `0.0.0.0`, as
    /// `getsockname` (and so `std` and tokio) report it: such a listener
    /// accepts connections to any of the host's addresses, loopback ones
    /// included.
    pub fn listener_addr(&self, l: &TcpListener) -> Result<SocketAddr, SocketError> {
        let (_, port) = self.host.listener_entry(l)?;
        let bound = match self
            .host
            .tcp_sockets
            .get(self.host.id(), (l.host, l.slot, l.generation))?
        {
            Entry::Listener { ip, .. } => *ip,
            Entry::Stream { .. } => None,
        };
        Ok(SocketAddrV4::new(bound.unwrap_or(Ipv4Addr::UNSPECIFIED), port).into())
    }

    /// The local address of `s`, as `std::net::TcpStream::local_addr`.
    pub fn local_addr(&self, s: &TcpStream) -> Result<SocketAddr, SocketError> {
        let port = self.host.conn(s, |c| c.tcb().ports().0)?;
        // The connection's own address, as IP placed its path: the host's,
        // or on the loopback network the one the peer connected to.
        let ip = self
            .host
            .stack()
            .path(self.host.stream_path(s)?)
            .and_then(|p| p.attrs().get(&LOCAL_IPV4).copied())
            .or(self.host.addr())
            .unwrap_or(Ipv4Addr::UNSPECIFIED);
        Ok(SocketAddrV4::new(ip, port).into())
    }

    /// The peer of `s`, as `std::net::TcpStream::peer_addr`.
    pub fn peer_addr(&self, s: &TcpStream) -> Result<SocketAddr, SocketError> {
        self.host.conn(s, |c| {
            SocketAddrV4::new(c.remote_ip(), c.tcb().ports().1).into()
        })
    }

    /// Whether Nagle's algorithm is off (`TCP_NODELAY`).
    pub fn nodelay(&self, s: &TcpStream) -> Result<bool, SocketError> {
        self.host.conn(s, |c| c.tcb().config().nodelay)
    }

    /// The sender's maximum segment size (RFC 9293 §3.7.1: the peer's
    /// MSS option, bounded by ours and the path MTU), what Linux's
    /// `getsockopt(TCP_MAXSEG)` reports for a connection.
    pub fn mss(&self, s: &TcpStream) -> Result<u32, SocketError> {
        self.host.conn(s, |c| c.tcb().smss())
    }

    /// The connection's counters.
    pub fn stats(&self, s: &TcpStream) -> Result<TcpStats, SocketError> {
        self.host.conn(s, |c| c.tcb().stats())
    }

    /// The path that carries `s`'s segments (for tools that look at the core).
    pub fn path_id(&self, s: &TcpStream) -> Result<PathId, SocketError> {
        self.host.stream_path(s)
    }

    /// Octets the send buffer takes now.
    pub fn send_space(&self, s: &TcpStream) -> Result<usize, SocketError> {
        self.host.conn(s, |c| c.tcb().send_space())
    }

    /// Whether a read would return something (data, end, error).
    pub fn readable(&self, s: &TcpStream) -> Result<bool, SocketError> {
        self.host.conn(s, |c| c.tcb().is_readable())
    }

    /// Whether a [`write`](crate::socket::TcpStream::write) would not block: the send
    /// buffer has room, or the connection cannot send (the send fails).
    pub fn writable(&self, s: &TcpStream) -> Result<bool, SocketError> {
        self.host.conn(s, |c| {
            let tcb = c.tcb();
            match tcb.state() {
                // The states in which `Tcb::send` queues data: only a full
                // send buffer makes it wait; in every other it fails.
                State::SynSent | State::SynReceived | State::Established | State::CloseWait => {
                    tcb.send_space() > 0
                }
                _ => true,
            }
        })
    }
}

impl<H: DerefMut<Target = Host>> Tcp<H> {
    /// Listens on `addr` (the host's address or `0.0.0.0`, port 0 for an
    /// ephemeral one) with a SYN queue and an accept queue of `backlog`
    /// connections each; beyond a full SYN queue, SYN cookies answer.
    pub fn listen(
        &mut self,
        addr: impl ToSocketAddrs,
        backlog: u32,
    ) -> Result<TcpListener, SocketError> {
        let cfg = self.host.tcp_default_config();
        self.listen_with(addr, backlog, cfg)
    }

    /// [`listen`](Self::listen) with a TCP configuration for the accepted connections.
    pub fn listen_with(
        &mut self,
        addr: impl ToSocketAddrs,
        backlog: u32,
        cfg: TcpConfig,
    ) -> Result<TcpListener, SocketError> {
        self.host
            .tcp_listen_opened(addr, backlog, TcpOpen { cfg, ttl: None })
    }

    /// Starts connecting to `peer` from an ephemeral port; the handshake
    /// completes as the host polls ([`Tcp::is_connected`](crate::socket::Tcp::is_connected)). Each
    /// address `peer` resolves to is tried in turn.
    pub fn connect(&mut self, peer: impl ToSocketAddrs) -> Result<TcpStream, SocketError> {
        let cfg = self.host.tcp_default_config();
        self.connect_with("0.0.0.0:0", peer, cfg)
    }

    /// [`connect`](crate::socket::Tcp::connect) from `local` with options `cfg`.
    pub fn connect_with(
        &mut self,
        local: impl ToSocketAddrs,
        peer: impl ToSocketAddrs,
        cfg: TcpConfig,
    ) -> Result<TcpStream, SocketError> {
        self.host
            .tcp_connect_opened(local, peer, TcpOpen { cfg, ttl: None })
    }

    /// Whether the handshake has completed; the connection's error if it
    /// failed (`ConnectionRefused`, `TimedOut`).
    pub fn is_connected(&mut self, s: &TcpStream) -> Result<bool, SocketError> {
        let (state, err) = self.host.conn(s, |c| (c.tcb().state(), c.tcb().error()))?;
        match (state, err) {
            (State::SynSent, _) => match self.host.unreachable_while_connecting(s)? {
                Some(e) => Err(e.into()),
                None => Ok(false),
            },
            (State::SynReceived, _) => Ok(false),
            (State::Closed, Some(e)) => Err(e.into()),
            (State::Closed, None) => Err(TcpError::NotConnected.into()),
            _ => Ok(true),
        }
    }

    /// Shuts the reading side, the writing side (a FIN after the data) or
    /// both.
    pub fn shutdown(&mut self, s: &TcpStream, how: Shutdown) -> Result<(), SocketError> {
        self.host
            .with_conn(s, |c, _| c.tcb_mut().shutdown(how))?
            .map_err(SocketError::from)
    }

    /// Closes the connection gracefully (FIN after the data; a reset if
    /// unread data remains, or with linger zero, see
    /// [`set_linger`](crate::socket::Tcp::set_linger)) and lets go of it: the
    /// handle is stale from now on, and the connection's path goes when
    /// the close handshake and TIME-WAIT are over.
    pub fn close(&mut self, s: TcpStream) -> Result<(), SocketError> {
        // `SO_LINGER` (`tcp_linger.rs`): zero aborts, a time bounds it.
        let linger = self.host.linger_close(&s);
        if let super::tcp_linger::LingerClose::Abort = linger {
            return self.abort(s);
        }
        self.host.with_conn(&s, |c, cx| {
            c.tcb_mut().close();
            c.release(cx);
        })?;
        if let super::tcp_linger::LingerClose::Bounded(d) = linger {
            let path = self.host.stream_path(&s)?;
            self.host.linger_watch(path, d);
        }
        self.host.tcp_sockets.remove(s.slot);
        Ok(())
    }

    /// Aborts the connection with a reset and lets go of it.
    pub fn abort(&mut self, s: TcpStream) -> Result<(), SocketError> {
        self.host.with_conn(&s, |c, cx| {
            c.tcb_mut().abort();
            c.release(cx);
        })?;
        self.host.tcp_sockets.remove(s.slot);
        Ok(())
    }

    /// Closes a listener: its path goes, and connections not yet accepted
    /// are reset.
    pub fn close_listener(&mut self, l: TcpListener) -> Result<(), SocketError> {
        let (path, port) = self.host.listener_entry(&l)?;
        let tcp = self.host.tcp_module()?;
        let waiting: Vec<PathId> = std::iter::from_fn(|| {
            self.host
                .stack_mut()
                .module_mut::<TcpModule>(tcp)
                .and_then(|m| m.take_accepted(port))
        })
        .collect();
        for p in waiting {
            let _ = self
                .host
                .stack_mut()
                .with_stage::<TcpConnStage, _>(p, |st, cx| {
                    st.tcb_mut().abort();
                    st.release(cx);
                });
        }
        self.host.tcp_sockets.remove(l.slot);
        self.host
            .stack_mut()
            .path_delete(path)
            .map_err(SocketError::Path)
    }

    /// Takes the error that ended `s`'s connection, as `std::net::TcpStream::take_error`.
    pub fn take_error(&mut self, s: &TcpStream) -> Result<Option<TcpError>, SocketError> {
        self.host.with_conn(s, |c, _| c.tcb_mut().take_error())
    }

    /// Turns Nagle's algorithm off (`TCP_NODELAY`) or on. With it on (the
    /// default), a short segment waits while an earlier short one is
    /// unacknowledged (Minshall's rule, as Linux), so small writes in a
    /// row coalesce; one write ([`write`](crate::socket::TcpStream::write) or
    /// [`write_vectored`](crate::socket::TcpStream::write_vectored)) is never held
    /// behind itself. Off, every write leaves at once.
    pub fn set_nodelay(&mut self, s: &TcpStream, on: bool) -> Result<(), SocketError> {
        self.host.with_conn(s, |c, _| c.tcb_mut().set_nodelay(on))
    }

    /// The MSS a listener's connections offer in their SYN-ACK and send
    /// with at most (Linux's `TCP_MAXSEG` on a listening socket, socket2's
    /// `set_mss`), for the connections it makes from now on; those made
    /// already keep theirs. RFC 9293 §3.7.1: the MSS offered is the most
    /// the connection will receive; the peer's bounds what it sends.
    pub fn set_listener_mss(&mut self, l: &TcpListener, mss: u16) -> Result<(), SocketError> {
        let (path, _) = self.host.listener_entry(l)?;
        self.host
            .stack_mut()
            .with_stage::<TcpListenStage, _>(path, |st, _| {
                let mut cfg = *st.config();
                cfg.mss = mss;
                st.set_config(cfg);
            })
            .ok_or(SocketError::Closed)
    }

    /// The MSS a listener's connections offer ([`set_listener_mss`](Self::set_listener_mss)).
    pub fn listener_mss(&self, l: &TcpListener) -> Result<u16, SocketError> {
        let (path, _) = self.host.listener_entry(l)?;
        self.host
            .stack()
            .stage_ref::<TcpListenStage>(path)
            .and_then(|at| self.host.stack().stage_at(at))
            .map(|st| st.config().mss)
            .ok_or(SocketError::Closed)
    }

    /// Keepalive (`SO_KEEPALIVE` with its timers), off with `None`.
    pub fn set_keepalive(
        &mut self,
        s: &TcpStream,
        k: Option<pathstack_inet::tcp::Keepalive>,
    ) -> Result<(), SocketError> {
        let now = self.host.now();
        self.host
            .with_conn(s, |c, _| c.tcb_mut().set_keepalive(k, now))
    }
}
