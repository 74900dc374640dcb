//! [`TcpStream`]: an async TCP connection on a [`Net`], with the methods
//! of `tokio::net::TcpStream` and tokio's `AsyncRead`/`AsyncWrite`.

use super::net::Net;
use super::tcp_readiness::TcpInterest;
use crate::host::Host;
use crate::inet::tcp::TcpConfig;
use crate::socket::{self, SocketError};
use std::future::poll_fn;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use ::tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use ::tokio::net::{lookup_host, ToSocketAddrs};

/// An async TCP connection: a stream of a [`Net`]'s host (see
/// [`crate::socket`]'s TCP calls), made by [`TcpStream::connect`] or
/// [`TcpListener::accept`](super::TcpListener::accept).
///
/// It implements tokio's [`AsyncRead`] and [`AsyncWrite`], so
/// `tokio::io::copy`, `tokio_util::codec::Framed` and hyper (through
/// `hyper_util::rt::TokioIo`) use it unchanged; its other methods are
/// those of `tokio::net::TcpStream`. It is `Send` and `Sync`: it can move
/// into a task of a multi-threaded runtime, and its halves
/// ([`split`](Self::split), [`into_split`](Self::into_split), in `tcp_split.rs`) can be read
/// and written by two tasks at once.
///
/// A write runs the stack at once in the writing task, so the data leaves
/// without waiting for the driver; [`poll_flush`](AsyncWrite::poll_flush)
/// has nothing to do (the data is in the connection's send buffer, as a
/// kernel socket's is). [`poll_shutdown`](AsyncWrite::poll_shutdown)
/// sends a FIN after the data. Dropping the stream closes it gracefully
/// (the FIN handshake and TIME-WAIT go on in the stack; a reset instead
/// if unread data remains, as Linux does).
///
/// Every async method is cancel safe, in tokio's sense: a read that is
/// cancelled took no data, a write that is cancelled queued none, and a
/// cancelled [`connect`](crate::socket::Udp::connect) leaves no connection behind.
#[derive(Debug)]
pub struct TcpStream {
    net: Net,
    sock: socket::TcpStream,
}

impl TcpStream {
    /// Connects to `addr` from an ephemeral port of `net`'s host, waiting
    /// for the handshake. Each address `addr` resolves to is tried in
    /// turn, as tokio does; the last one's error is returned if none
    /// answers (`ConnectionRefused` when the peer resets the SYN,
    /// `TimedOut` when it never answers; IPv6 addresses fail with an
    /// "address family not supported" error).
    ///
    /// This method is cancel safe: cancelled, the half-open connection is
    /// dropped (nothing more is sent for it).
    pub async fn connect(net: &Net, addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        Self::connect_with(net, addr, None).await
    }

    /// [`connect`](crate::socket::Udp::connect) with the connection's options (buffer
    /// sizes, SYN retries, timers …; tokio's `TcpSocket` sets some of them
    /// on a kernel socket before it connects). `None` takes the host's
    /// defaults.
    ///
    /// This method is cancel safe, as `connect`.
    pub async fn connect_with(
        net: &Net,
        addr: impl ToSocketAddrs,
        cfg: Option<TcpConfig>,
    ) -> io::Result<TcpStream> {
        let mut last = None;
        for peer in lookup_host(addr).await? {
            match Self::connect_to(net, peer, cfg).await {
                Ok(s) => return Ok(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "could not resolve to any address",
            )
        }))
    }

    async fn connect_to(
        net: &Net,
        peer: SocketAddr,
        cfg: Option<TcpConfig>,
    ) -> io::Result<TcpStream> {
        Self::connect_opened(
            net,
            |h| match cfg {
                None => h.tcp().connect(peer),
                Some(cfg) => h.tcp().connect_with("0.0.0.0:0", peer, cfg),
            },
            None,
        )
        .await
    }

    /// Connects with the connection `open` starts on the host (a
    /// [`TcpSocket`](super::TcpSocket)'s, from its bound port with its
    /// options) and the linger option `linger`, and waits for the
    /// handshake.
    pub(super) async fn connect_opened(
        net: &Net,
        open: impl FnOnce(&mut Host) -> Result<socket::TcpStream, SocketError>,
        linger: Option<std::time::Duration>,
    ) -> io::Result<TcpStream> {
        let stream = {
            let mut st = net.inner.live()?;
            let sock = open(&mut st.host)?;
            if linger.is_some() {
                st.host.tcp().set_linger(&sock, linger)?;
            }
            // The SYN leaves now; the driver learns of its retransmission
            // timer below.
            st.poll();
            // Made at once, so that a cancelled connect drops (closes) it.
            TcpStream {
                net: net.clone(),
                sock,
            }
        };
        net.inner.kick.notify_one();
        poll_fn(|cx| stream.poll_interest(cx, TcpInterest::Connect)).await?;
        stream.with_host(|h, s| h.tcp().is_connected(s))?;
        Ok(stream)
    }

    /// A stream for a connection accepted on `net`.
    pub(super) fn accepted(net: Net, sock: socket::TcpStream) -> TcpStream {
        TcpStream { net, sock }
    }

    /// The synchronous handle (for [`Host`]'s TCP calls inside
    /// [`Net::with_host`], e.g. [`Tcp::stats`](crate::socket::Tcp::stats)).
    pub fn handle(&self) -> socket::TcpStream {
        self.sock
    }

    /// Runs `f` on the host with the stream's handle.
    fn with_host<T>(
        &self,
        f: impl FnOnce(&mut Host, &socket::TcpStream) -> Result<T, SocketError>,
    ) -> io::Result<T> {
        Ok(f(&mut self.net.inner.live()?.host, &self.sock)?)
    }

    /// Our address and port.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.with_host(|h, s| h.tcp().local_addr(s))
    }

    /// The peer's address and port.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.with_host(|h, s| h.tcp().peer_addr(s))
    }

    /// Turns Nagle's algorithm off (`TCP_NODELAY`, `true`) or on.
    ///
    /// With Nagle on (the default, as on Linux), a segment shorter than
    /// the MSS waits while an earlier short segment is unacknowledged
    /// (Minshall's rule), so small writes in a row coalesce. One write,
    /// vectored or not, is never held behind itself: its full segments and
    /// its tail leave at once, and a request/response protocol that writes
    /// each message in one call (hyper does) needs no `set_nodelay`. Turn
    /// it off for a protocol that writes one message in several small
    /// calls and waits for the answer; every write then leaves at once.
    pub fn set_nodelay(&self, nodelay: bool) -> io::Result<()> {
        self.with_host(|h, s| h.tcp().set_nodelay(s, nodelay))
    }

    /// Whether Nagle's algorithm is off.
    pub fn nodelay(&self) -> io::Result<bool> {
        self.with_host(|h, s| h.tcp().nodelay(s))
    }

    /// Turns keepalive probes on (`Some`, as `SO_KEEPALIVE` with
    /// `TCP_KEEPIDLE`/`TCP_KEEPINTVL`/`TCP_KEEPCNT`; e.g.
    /// [`Keepalive::after`](crate::inet::tcp::Keepalive::after) a
    /// `std::time::Duration`) or off (`None`) on this connection
    /// (RFC 9293 §3.8.4). A peer that stops answering them ends the
    /// connection with `TimedOut`.
    pub fn set_keepalive(&self, keepalive: Option<crate::inet::tcp::Keepalive>) -> io::Result<()> {
        self.with_host(|h, s| h.tcp().set_keepalive(s, keepalive))
    }

    /// Sets the IP time to live of the segments the connection sends
    /// (`IP_TTL`, 1 to 255; 64 by default, as on Linux).
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.with_host(|h, s| h.tcp().set_ttl(s, ttl))
    }

    /// The IP time to live of the connection's segments.
    pub fn ttl(&self) -> io::Result<u32> {
        self.with_host(|h, s| h.tcp().ttl(s))
    }

    /// Sets what dropping the stream does with data the peer has not
    /// acknowledged (`SO_LINGER`; RFC 793's ABORT beside CLOSE): `None`,
    /// the default, closes gracefully; `Some(Duration::ZERO)` resets the
    /// connection and drops the data; `Some(d)` closes gracefully but
    /// resets the connection if the data is still unacknowledged after
    /// `d`. Unlike a kernel socket's, the drop never blocks the thread
    /// (it runs the stack): the stack bounds the close instead (see
    /// [`Tcp::set_linger`](crate::socket::Tcp::set_linger)).
    pub fn set_linger(&self, linger: Option<std::time::Duration>) -> io::Result<()> {
        self.with_host(|h, s| h.tcp().set_linger(s, linger))
    }

    /// The stream's linger option (`None` unless set).
    pub fn linger(&self) -> io::Result<Option<std::time::Duration>> {
        self.with_host(|h, s| h.tcp().linger(s))
    }

    /// Takes the connection's pending error (`SO_ERROR`), once: a reset,
    /// a timeout … The next read or write reports it too.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.with_host(|h, s| h.tcp().take_error(s))
            .map(|e| e.map(io::Error::from))
    }

    // ---- readiness ----

    /// Ready when `interest` is; otherwise registers the task to be woken
    /// when the driver finds it so.
    fn poll_interest(&self, cx: &mut Context<'_>, interest: TcpInterest) -> Poll<io::Result<()>> {
        let mut st = match self.net.inner.live() {
            Ok(st) => st,
            Err(e) => return Poll::Ready(Err(e)),
        };
        if super::tcp_readiness::is_ready(&st.host, &self.sock, interest) {
            return Poll::Ready(Ok(()));
        }
        st.wait_tcp(self.sock, interest, cx.waker());
        Poll::Pending
    }

    /// Waits until a read would not block: data arrived, the peer ended
    /// its stream, or the connection failed. A
    /// [`try_read`](Self::try_read) may then still report `WouldBlock`
    /// if another task read first.
    ///
    /// This method is cancel safe.
    pub async fn readable(&self) -> io::Result<()> {
        poll_fn(|cx| self.poll_read_ready(cx)).await
    }

    /// Waits until a write would not block: the send buffer has room, or
    /// the connection cannot send (the write then fails).
    ///
    /// This method is cancel safe.
    pub async fn writable(&self) -> io::Result<()> {
        poll_fn(|cx| self.poll_write_ready(cx)).await
    }

    /// Ready when a read would not block; otherwise registers the task to
    /// be woken when it would, as tokio's `poll_read_ready`.
    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_interest(cx, TcpInterest::Read)
    }

    /// Ready when a write would not block; otherwise registers the task to
    /// be woken when it would, as tokio's `poll_write_ready`.
    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_interest(cx, TcpInterest::Write)
    }

    // ---- reading ----

    /// Tries `recv` once: `Some` from it is returned (the stack then runs
    /// at once, so that a window update the read made due leaves, and the
    /// driver is kicked if that armed an earlier timer); `None` registers
    /// the task for readability (with a waker) or is `WouldBlock`.
    fn poll_recv_with<T>(
        &self,
        waker: Option<&std::task::Waker>,
        recv: impl FnOnce(&mut Host, &socket::TcpStream) -> Result<Option<T>, SocketError>,
    ) -> Poll<io::Result<T>> {
        let inner = &*self.net.inner;
        let mut st = match inner.live() {
            Ok(st) => st,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match recv(&mut st.host, &self.sock) {
            Ok(Some(got)) => {
                let kick = st.run_after_call();
                drop(st);
                if kick {
                    inner.kick.notify_one();
                }
                Poll::Ready(Ok(got))
            }
            Ok(None) => match waker {
                Some(w) => {
                    st.wait_tcp(self.sock, TcpInterest::Read, w);
                    Poll::Pending
                }
                None => Poll::Ready(Err(io::ErrorKind::WouldBlock.into())),
            },
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }

    /// [`AsyncRead::poll_read`] through a shared reference (the halves
    /// read through it).
    pub(super) fn poll_read_shared(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // An empty buffer is never a wait (tokio returns at once too);
        // the stack's read would otherwise report "nothing yet".
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        let got = self.poll_recv_with(Some(cx.waker()), |h, s| {
            // Zero only what the waiting data fills (at least a byte, for
            // the end of the stream or an error): hyper reads into 8 KB
            // and more of uninitialized buffer, and zeroing all of it for
            // every read cost more than the copy. tokio's own stream
            // reads into it uninitialized, which needs `unsafe`.
            let want = h.tcp().recv_queue(s)?.clamp(1, buf.remaining());
            h.tcp_try_recv(s, buf.initialize_unfilled_to(want))
        });
        got.map_ok(|n| buf.advance(n))
    }

    /// Reads what has arrived into `buf` without waiting: the bytes read,
    /// `Ok(0)` at the end of the stream (or for an empty `buf`),
    /// `WouldBlock` when nothing is there yet.
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        match self.poll_recv_with(None, |h, s| h.tcp_try_recv(s, buf)) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Waits for data and copies it into `buf` without taking it: the next
    /// read returns it again. `Ok(0)` at the end of the stream.
    ///
    /// This method is cancel safe.
    pub async fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut buf = ReadBuf::new(buf);
        poll_fn(|cx| self.poll_peek(cx, &mut buf)).await
    }

    /// Copies arrived data into `buf`'s unfilled part without taking it,
    /// or registers the task to be woken when some arrives, as tokio's
    /// `poll_peek`; returns how much was copied.
    pub fn poll_peek(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(0));
        }
        let mut st = match self.net.inner.live() {
            Ok(st) => st,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match st.host.tcp_try_peek(&self.sock, buf.initialize_unfilled()) {
            Ok(Some(n)) => {
                buf.advance(n);
                Poll::Ready(Ok(n))
            }
            Ok(None) => {
                st.wait_tcp(self.sock, TcpInterest::Read, cx.waker());
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }

    // ---- writing ----

    /// Tries to queue `bufs` as one write: what the send buffer took is
    /// sent at once (the stack runs in this task) and the driver is kicked
    /// if it must re-read the next timer; a full buffer registers the task for
    /// writability (with a waker) or is `WouldBlock`.
    fn poll_send_with(
        &self,
        waker: Option<&std::task::Waker>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let inner = &*self.net.inner;
        let mut st = match inner.live() {
            Ok(st) => st,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match st.host.tcp_try_send_vectored(&self.sock, bufs) {
            Ok(Some(n)) => {
                let kick = st.run_after_call();
                drop(st);
                if kick {
                    // The segments sent armed an earlier timer (the
                    // retransmission timer) than the driver sleeps until.
                    inner.kick.notify_one();
                }
                Poll::Ready(Ok(n))
            }
            Ok(None) => match waker {
                Some(w) => {
                    st.wait_tcp(self.sock, TcpInterest::Write, w);
                    Poll::Pending
                }
                None => Poll::Ready(Err(io::ErrorKind::WouldBlock.into())),
            },
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }

    /// [`AsyncWrite::poll_write_vectored`] through a shared reference:
    /// the slices are one write ([`socket::TcpStream::write_vectored`]), so a
    /// response's head and body that hyper hands over this way leave in
    /// full segments and never wait for each other behind Nagle.
    ///
    /// [`socket::TcpStream::write_vectored`]: crate::socket::TcpStream::write_vectored
    pub(super) fn poll_write_vectored_shared(
        &self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_send_with(Some(cx.waker()), bufs)
    }

    /// [`AsyncWrite::poll_write`] through a shared reference.
    pub(super) fn poll_write_shared(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_send_with(Some(cx.waker()), &[io::IoSlice::new(buf)])
    }

    /// Queues as much of `buf` as the send buffer takes, without waiting
    /// (`WouldBlock` when it is full); what it took is sent at once.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        self.try_write_vectored(&[io::IoSlice::new(buf)])
    }

    /// Queues as much of the slices of `bufs`, in order, as the send
    /// buffer takes, as one write, without waiting (`WouldBlock` when it
    /// is full); what it took is sent at once.
    pub fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self.poll_send_with(None, bufs) {
            Poll::Ready(r) => r,
            Poll::Pending => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Shuts the reading side (a read with nothing queued returns the end
    /// of the stream; what arrives is still queued, as on Linux,
    /// `Tcb::shutdown`), the writing side (a FIN after the data) or both.
    pub(super) fn shutdown_std(&self, how: Shutdown) -> io::Result<()> {
        let inner = &*self.net.inner;
        {
            let mut st = inner.live()?;
            st.host.tcp().shutdown(&self.sock, how)?;
            // The FIN leaves now; a reader of this stream wakes to its end.
            st.poll();
        }
        inner.kick.notify_one();
        Ok(())
    }
}

impl AsyncRead for TcpStream {
    /// Reads what has arrived (at least a byte), waiting if nothing has;
    /// nothing read means the end of the stream.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_read_shared(cx, buf)
    }
}

impl AsyncWrite for TcpStream {
    /// Queues as much of `buf` as the send buffer takes (at least a byte),
    /// waiting while it is full; sent at once.
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_shared(cx, buf)
    }

    /// Queues the slices, in order, as far as the send buffer takes them:
    /// one write, segmented as one stream of bytes.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored_shared(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Nothing to do: written data is in the send buffer, on its way.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Shuts the writing side: a FIN goes after the data. Reading goes on.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown_std(Shutdown::Write))
    }
}

impl Drop for TcpStream {
    fn drop(&mut self) {
        {
            let mut st = self.net.inner.lock();
            st.forget_tcp(self.sock);
            // Closing twice is the only failure, and a handle owned here
            // cannot have been closed elsewhere; a connection the stack
            // already dropped (reset, timed out) has nothing to close.
            let _ = st.host.tcp().close(self.sock);
            // The FIN (or reset) leaves now.
            st.poll();
        }
        self.net.inner.kick.notify_one();
    }
}
