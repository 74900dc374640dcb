//! [`UdpSocket`]: an async UDP socket on a [`Net`], with the methods of
//! `tokio::net::UdpSocket`.

use super::net::Net;
use crate::host::Host;
use crate::socket::{self, RecvInfo, SocketError};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use ::tokio::io::ReadBuf;
use ::tokio::net::{lookup_host, ToSocketAddrs};

/// An async UDP socket: a socket of a [`Net`]'s host (see
/// [`crate::socket`]). Dropping it closes it.
///
/// Its methods are those of `tokio::net::UdpSocket`, so a tokio program
/// ports by changing its `use` line and the socket's construction
/// (`UdpSocket::bind(&net, addr)`: the socket lives on a host, not in the
/// kernel). Like tokio's, it can be shared between tasks (through an
/// `Arc`): one may receive while another sends.
///
/// Every async method is cancel safe, in tokio's sense: a receive that is
/// cancelled took no datagram (it is still queued), a send that is
/// cancelled sent nothing.
#[derive(Debug)]
pub struct UdpSocket {
    net: Net,
    sock: socket::UdpSocket,
}

/// The addresses `addr` resolves to (tokio's resolution: a literal address
/// at once, a name on the blocking pool).
async fn resolve(addr: impl ToSocketAddrs) -> io::Result<Vec<SocketAddr>> {
    Ok(lookup_host(addr).await?.collect())
}

/// The address `send_to` uses: the first `addr` resolves to, as tokio's.
async fn first(addr: impl ToSocketAddrs) -> io::Result<SocketAddr> {
    lookup_host(addr)
        .await?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no addresses to send data to"))
}

/// A "not now" of a non-blocking call: the `WouldBlock` of the `try_`
/// methods (a full queue and a pool out of buffers alike).
fn would_block(e: SocketError) -> io::Error {
    match e {
        SocketError::QueueFull | SocketError::NoBuffer => io::ErrorKind::WouldBlock.into(),
        e => e.into(),
    }
}

impl UdpSocket {
    /// Binds a socket on `net`'s host to `addr`: the host's address or
    /// `0.0.0.0`, with a port (0 picks an ephemeral port). Each address
    /// `addr` resolves to is tried in turn, as tokio does; IPv6 ones fail
    /// with an "address family not supported" error.
    ///
    /// This method is cancel safe: cancelled, it bound nothing.
    pub async fn bind(net: &Net, addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let addrs = resolve(addr).await?;
        let sock = net.inner.live()?.host.udp().bind(&addrs[..])?;
        Ok(UdpSocket {
            net: net.clone(),
            sock,
        })
    }

    /// Connects the socket to `addr`: from now on it sends only there
    /// (with [`send`](Self::send)) and hears only from there. Each address
    /// `addr` resolves to is tried in turn. Datagrams queued before are
    /// discarded (see [`Udp::connect`](crate::socket::Udp::connect)).
    ///
    /// This method is cancel safe: cancelled, the socket is as it was.
    pub async fn connect(&self, addr: impl ToSocketAddrs) -> io::Result<()> {
        let addrs = resolve(addr).await?;
        self.with_host(|h, s| h.udp().connect(s, &addrs[..]))
    }

    /// Our address and port.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.with_host(|h, s| h.udp().local_addr(s))
    }

    /// The peer of a connected socket (`NotConnected` otherwise).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.with_host(|h, s| h.udp().peer_addr(s))
    }

    /// The synchronous handle (for [`Host`]'s socket calls inside
    /// [`Net::with_host`]; on another host they fail with
    /// [`SocketError::WrongHost`]).
    pub fn handle(&self) -> socket::UdpSocket {
        self.sock
    }

    /// Runs `f` on the host with the socket's handle.
    fn with_host<T>(
        &self,
        f: impl FnOnce(&mut Host, &socket::UdpSocket) -> Result<T, SocketError>,
    ) -> io::Result<T> {
        Ok(f(&mut self.net.inner.live()?.host, &self.sock)?)
    }

    /// Takes the socket's pending asynchronous error, as tokio's
    /// `take_error`: a connected socket's `HostUnreachable` (ARP gave up)
    /// or `ConnectionRefused` (ICMP port unreachable) …, once; see
    /// [`Udp::take_error`](crate::socket::Udp::take_error). The next send or receive reports it too.
    pub fn take_error(&self) -> io::Result<Option<io::Error>> {
        self.with_host(|h, s| h.udp().take_error(s))
            .map(|e| e.map(io::Error::from))
    }

    /// Sets the time to live of the datagrams the socket sends (1 to 255).
    pub fn set_ttl(&self, ttl: u32) -> io::Result<()> {
        self.with_host(|h, s| h.udp().set_ttl(s, ttl))
    }

    /// The time to live of the datagrams the socket sends (64 unless set).
    pub fn ttl(&self) -> io::Result<u32> {
        self.with_host(|h, s| h.udp().ttl(s))
    }

    /// Lets the socket send to broadcast addresses, or forbids it (the
    /// default: a send to one fails with `PermissionDenied`, as Linux's
    /// without `SO_BROADCAST`).
    pub fn set_broadcast(&self, on: bool) -> io::Result<()> {
        self.with_host(|h, s| h.udp().set_broadcast(s, on))
    }

    /// Whether the socket may send to broadcast addresses.
    pub fn broadcast(&self) -> io::Result<bool> {
        self.with_host(|h, s| h.udp().broadcast(s))
    }

    // ---- sending ----

    /// Tries `send` once: on success the stack runs at once (the datagram
    /// leaves without a task switch to the driver); on a full queue or no
    /// buffer the task waits for the stack's next poll.
    fn poll_send_with(
        &self,
        cx: &mut Context<'_>,
        send: impl FnOnce(&mut Host, &socket::UdpSocket) -> Result<usize, SocketError>,
    ) -> Poll<io::Result<usize>> {
        let inner = &*self.net.inner;
        let mut st = match inner.live() {
            Ok(st) => st,
            Err(e) => return Poll::Ready(Err(e)),
        };
        let r = match send(&mut st.host, &self.sock) {
            Ok(n) => {
                st.poll();
                Poll::Ready(Ok(n))
            }
            Err(SocketError::QueueFull | SocketError::NoBuffer) => {
                st.wait_progress(cx.waker());
                Poll::Pending
            }
            Err(e) => return Poll::Ready(Err(e.into())),
        };
        drop(st);
        // The driver re-reads the next timer (ARP may have armed one for
        // this datagram), or polls to make room.
        inner.kick.notify_one();
        r
    }

    /// Sends `buf` as one datagram to `target` (the first address it
    /// resolves to); returns its length. Waits while the socket's send
    /// queue is full or no buffer is free. A broadcast `target` needs
    /// [`set_broadcast`](Self::set_broadcast).
    ///
    /// This method is cancel safe: if it is cancelled (used in
    /// `tokio::select!` and another branch completes first), the datagram
    /// was not sent.
    pub async fn send_to(&self, buf: &[u8], target: impl ToSocketAddrs) -> io::Result<usize> {
        let target = first(target).await?;
        poll_fn(|cx| self.poll_send_to(cx, buf, target)).await
    }

    /// Sends `buf` as one datagram to a connected socket's peer.
    ///
    /// This method is cancel safe: cancelled, the datagram was not sent.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_send(cx, buf)).await
    }

    /// Sends `buf` to `target`, or registers the task to be woken when it
    /// may succeed (`Poll::Pending`), as tokio's `poll_send_to`.
    pub fn poll_send_to(
        &self,
        cx: &mut Context<'_>,
        buf: &[u8],
        target: SocketAddr,
    ) -> Poll<io::Result<usize>> {
        self.poll_send_with(cx, |h, s| h.udp().send_to(s, buf, target))
    }

    /// Sends `buf` to a connected socket's peer, or registers the task to
    /// be woken when it may succeed, as tokio's `poll_send`.
    pub fn poll_send(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_send_with(cx, |h, s| h.udp().send(s, buf))
    }

    /// Sends `buf` to `target` now, or fails with `WouldBlock`.
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        self.try_send_with(|h, s| h.udp().send_to(s, buf, target))
    }

    /// Sends `buf` to a connected socket's peer now, or fails with
    /// `WouldBlock`.
    pub fn try_send(&self, buf: &[u8]) -> io::Result<usize> {
        self.try_send_with(|h, s| h.udp().send(s, buf))
    }

    fn try_send_with(
        &self,
        send: impl FnOnce(&mut Host, &socket::UdpSocket) -> Result<usize, SocketError>,
    ) -> io::Result<usize> {
        let inner = &*self.net.inner;
        let n = {
            let mut st = inner.live()?;
            let n = send(&mut st.host, &self.sock).map_err(would_block)?;
            st.poll();
            n
        };
        inner.kick.notify_one();
        Ok(n)
    }

    /// Waits until a send would be queued (the socket's send queue has
    /// room). A send may still find no free buffer and wait.
    ///
    /// This method is cancel safe.
    pub async fn writable(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let mut st = match self.net.inner.live() {
                Ok(st) => st,
                Err(e) => return Poll::Ready(Err(e)),
            };
            match st.host.udp().writable(&self.sock) {
                Ok(true) => Poll::Ready(Ok(())),
                Ok(false) => {
                    st.wait_progress(cx.waker());
                    drop(st);
                    self.net.inner.kick.notify_one();
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e.into())),
            }
        })
        .await
    }

    // ---- receiving ----

    /// Tries `recv` once; with nothing queued the task waits for a
    /// datagram on the socket. A datagram is taken only in the poll that
    /// returns it, which makes every receive cancel safe.
    fn poll_recv_with<T>(
        &self,
        cx: &mut Context<'_>,
        recv: impl FnOnce(&mut Host, &socket::UdpSocket) -> Result<Option<T>, SocketError>,
    ) -> Poll<io::Result<T>> {
        let mut st = match self.net.inner.live() {
            Ok(st) => st,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match recv(&mut st.host, &self.sock) {
            Ok(Some(got)) => Poll::Ready(Ok(got)),
            Ok(None) => {
                st.wait_readable(self.sock, cx.waker());
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }

    /// Tries `recv` once, without waiting (`WouldBlock` with nothing
    /// queued).
    fn try_recv_with<T>(
        &self,
        recv: impl FnOnce(&mut Host, &socket::UdpSocket) -> Result<Option<T>, SocketError>,
    ) -> io::Result<T> {
        self.with_host(recv)?
            .ok_or_else(|| io::ErrorKind::WouldBlock.into())
    }

    /// Waits for a datagram, copies it into `buf` (truncated to its
    /// length, the rest discarded; see [`recv_from_trunc`](Self::recv_from_trunc))
    /// and returns its length and sender.
    ///
    /// This method is cancel safe: if it is cancelled before it returns,
    /// no datagram was taken from the socket.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| self.poll_recv_with(cx, |h, s| h.udp_try_recv_from(s, buf))).await
    }

    /// Like [`recv_from`](Self::recv_from), and says whether the datagram
    /// was longer than `buf` ([`RecvInfo::truncated`], as `recvmsg`'s
    /// `MSG_TRUNC`; tokio has no counterpart).
    ///
    /// This method is cancel safe.
    pub async fn recv_from_trunc(&self, buf: &mut [u8]) -> io::Result<RecvInfo> {
        poll_fn(|cx| self.poll_recv_with(cx, |h, s| h.udp_try_recv_from_trunc(s, buf))).await
    }

    /// Waits for a datagram from a connected socket's peer.
    ///
    /// This method is cancel safe.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_recv_with(cx, |h, s| h.udp_try_recv(s, buf))).await
    }

    /// Waits for a datagram and copies it into `buf` without taking it:
    /// the next receive returns it again.
    ///
    /// This method is cancel safe.
    pub async fn peek_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| self.poll_recv_with(cx, |h, s| h.udp_try_peek_from(s, buf))).await
    }

    /// Waits until a datagram is queued (a receive would not wait).
    ///
    /// This method is cancel safe.
    pub async fn readable(&self) -> io::Result<()> {
        poll_fn(|cx| {
            self.poll_recv_with(cx, |h, s| {
                h.udp().local_addr(s)?;
                Ok((h.udp().pending(s) > 0).then_some(()))
            })
        })
        .await
    }

    /// Takes a datagram into `buf`'s unfilled part and returns its sender,
    /// or registers the task to be woken when one arrives, as tokio's
    /// `poll_recv_from`.
    pub fn poll_recv_from(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<SocketAddr>> {
        let got = self.poll_recv_with(cx, |h, s| h.udp_try_recv_from(s, buf.initialize_unfilled()));
        got.map_ok(|(n, from)| {
            buf.advance(n);
            from
        })
    }

    /// Like [`poll_recv_from`](Self::poll_recv_from) on a connected
    /// socket, without the sender, as tokio's `poll_recv`.
    pub fn poll_recv(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let got = self.poll_recv_with(cx, |h, s| h.udp_try_recv(s, buf.initialize_unfilled()));
        got.map_ok(|n| buf.advance(n))
    }

    /// Takes a datagram if one is queued, without waiting (`WouldBlock` if
    /// none).
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        self.try_recv_with(|h, s| h.udp_try_recv_from(s, buf))
    }

    /// Takes a datagram from a connected socket's peer if one is queued
    /// (`WouldBlock` if none).
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.try_recv_with(|h, s| h.udp_try_recv(s, buf))
    }
}

impl Drop for UdpSocket {
    fn drop(&mut self) {
        let mut st = self.net.inner.lock();
        // Closing a socket twice is the only failure, and a handle owned
        // here cannot have been closed elsewhere.
        let _ = st.host.udp().close(self.sock);
        st.forget(self.sock);
    }
}
