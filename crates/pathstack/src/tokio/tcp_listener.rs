//! [`TcpListener`]: an async TCP listener on a [`Net`], with the methods
//! of `tokio::net::TcpListener`.

use super::net::Net;
use super::tcp_stream::TcpStream;
use crate::socket;
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

use ::tokio::net::{lookup_host, ToSocketAddrs};

/// The backlog of a listener: tokio's (and `std`'s) 1024. It bounds the
/// SYN queue and, separately, the accept queue; beyond a full SYN queue
/// SYN cookies answer.
const BACKLOG: u32 = 1024;

/// An async TCP listener: a listening socket of a [`Net`]'s host.
/// Dropping it closes it (connections not yet accepted are reset).
///
/// Its methods are those of `tokio::net::TcpListener`; it is `Send` and
/// `Sync`.
#[derive(Debug)]
pub struct TcpListener {
    net: Net,
    sock: socket::TcpListener,
    /// The linger option its connections take (a [`TcpSocket`]'s,
    /// inherited on accept as Linux's accepted sockets inherit
    /// `SO_LINGER`).
    ///
    /// [`TcpSocket`]: super::TcpSocket
    linger: Option<std::time::Duration>,
}

impl TcpListener {
    /// Listens on `addr`: the host's address or `0.0.0.0`, with a port (0
    /// picks an ephemeral one). Each address `addr` resolves to is tried
    /// in turn, as tokio does; a port another listener holds fails with
    /// `AddrInUse`, an IPv6 address with an "address family not
    /// supported" error.
    ///
    /// This method is cancel safe: cancelled, it bound nothing.
    pub async fn bind(net: &Net, addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let addrs: Vec<SocketAddr> = lookup_host(addr).await?.collect();
        let sock = net.inner.live()?.host.tcp().listen(&addrs[..], BACKLOG)?;
        Ok(TcpListener {
            net: net.clone(),
            sock,
            linger: None,
        })
    }

    /// A listener of `net` for a socket `sock` listening already, its
    /// connections taking `linger`.
    pub(super) fn listening(
        net: Net,
        sock: socket::TcpListener,
        linger: Option<std::time::Duration>,
    ) -> TcpListener {
        TcpListener { net, sock, linger }
    }

    /// Waits for a connection whose handshake has completed and takes it,
    /// with its peer's address.
    ///
    /// This method is cancel safe: cancelled, it took no connection (the
    /// next call returns it).
    pub async fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        poll_fn(|cx| self.poll_accept(cx)).await
    }

    /// Takes a connection, or registers the task to be woken when one is
    /// there, as tokio's `poll_accept`.
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(TcpStream, SocketAddr)>> {
        let mut st = match self.net.inner.live() {
            Ok(st) => st,
            Err(e) => return Poll::Ready(Err(e)),
        };
        match st.host.tcp_try_accept(&self.sock) {
            Ok(Some((s, peer))) => {
                if self.linger.is_some() {
                    if let Err(e) = st.host.tcp().set_linger(&s, self.linger) {
                        return Poll::Ready(Err(e.into()));
                    }
                }
                drop(st);
                Poll::Ready(Ok((TcpStream::accepted(self.net.clone(), s), peer)))
            }
            Ok(None) => {
                st.wait_accept(self.sock, cx.waker());
                Poll::Pending
            }
            Err(e) => Poll::Ready(Err(e.into())),
        }
    }

    /// The address and port it listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self
            .net
            .inner
            .live()?
            .host
            .tcp()
            .listener_addr(&self.sock)?)
    }

    /// The synchronous handle (for [`Host`](crate::host::Host)'s calls
    /// inside [`Net::with_host`]).
    pub fn handle(&self) -> socket::TcpListener {
        self.sock
    }
}

impl Drop for TcpListener {
    fn drop(&mut self) {
        let mut st = self.net.inner.lock();
        st.forget_listener(self.sock);
        // Closing twice is the only failure, and a handle owned here
        // cannot have been closed elsewhere.
        let _ = st.host.tcp().close_listener(self.sock);
        // The resets of the connections that waited leave now.
        st.poll();
        drop(st);
        self.net.inner.kick.notify_one();
    }
}
