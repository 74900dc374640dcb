//! [`UdpSocket`]: an async UDP socket on a [`Net`].

use super::net::Net;
use crate::socket::{self, SocketError};
use std::future::poll_fn;
use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::pin::pin;
use std::task::Poll;

/// An async UDP socket: a path of a [`Net`]'s host (see
/// [`crate::socket`]). Dropping it closes it.
///
/// Like `tokio::net::UdpSocket`, it can be shared between tasks (through an
/// `Arc`): one may receive while another sends.
#[derive(Debug)]
pub struct UdpSocket {
    net: Net,
    sock: socket::UdpSocket,
}

fn v4(addr: SocketAddr) -> io::Result<SocketAddrV4> {
    match addr {
        SocketAddr::V4(a) => Ok(a),
        SocketAddr::V6(_) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{addr}: pathstack speaks IPv4 only"),
        )),
    }
}

impl UdpSocket {
    /// Binds a socket to `addr`: port 0 picks an ephemeral port; the
    /// address must be the host's or unspecified (`0.0.0.0`).
    pub async fn bind(net: &Net, addr: impl Into<SocketAddr>) -> io::Result<UdpSocket> {
        let addr = v4(addr.into())?;
        let sock = {
            let mut st = net.inner.lock();
            check_local(st.host.addr(), addr)?;
            st.host.udp_bind(addr.port())?
        };
        Ok(UdpSocket {
            net: net.clone(),
            sock,
        })
    }

    /// A socket bound to `local` (as [`UdpSocket::bind`]) and connected to
    /// `peer`: it sends only to `peer` and hears only from it. (One step,
    /// where tokio binds and then connects: a connected socket is a path of
    /// its own, keyed by both ends.)
    pub async fn connect(
        net: &Net,
        local: impl Into<SocketAddr>,
        peer: impl Into<SocketAddr>,
    ) -> io::Result<UdpSocket> {
        let (local, peer) = (v4(local.into())?, v4(peer.into())?);
        let sock = {
            let mut st = net.inner.lock();
            check_local(st.host.addr(), local)?;
            st.host.udp_connect(local.port(), peer)?
        };
        Ok(UdpSocket {
            net: net.clone(),
            sock,
        })
    }

    /// Our address and port.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.sock.local_addr().into())
    }

    /// The peer of a connected socket.
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.sock
            .peer_addr()
            .map(SocketAddr::from)
            .ok_or_else(|| SocketError::NotConnected.into())
    }

    /// The synchronous handle (for [`Host`](crate::host::Host)'s socket
    /// calls inside [`Net::with_host`]).
    pub fn handle(&self) -> socket::UdpSocket {
        self.sock
    }

    /// Sends `buf` as one datagram to `target`; returns its length. Waits
    /// while the socket's send queue is full or no buffer is free.
    pub async fn send_to(&self, buf: &[u8], target: impl Into<SocketAddr>) -> io::Result<usize> {
        let dst = v4(target.into())?;
        self.send_with(buf, |h, s| h.send_to(s, buf, dst)).await
    }

    /// Sends `buf` as one datagram to a connected socket's peer.
    pub async fn send(&self, buf: &[u8]) -> io::Result<usize> {
        self.send_with(buf, |h, s| h.send(s, buf)).await
    }

    async fn send_with(
        &self,
        buf: &[u8],
        send: impl Fn(&mut crate::host::Host, &socket::UdpSocket) -> Result<(), SocketError>,
    ) -> io::Result<usize> {
        let inner = &*self.net.inner;
        loop {
            // Registered before trying, so a poll between the failed try
            // and the `await` is not missed.
            let mut progress = pin!(inner.progress.notified());
            progress.as_mut().enable();
            {
                let mut st = inner.lock();
                match send(&mut st.host, &self.sock) {
                    Ok(()) => {
                        // Run the stack now: the datagram leaves without a
                        // task switch to the driver.
                        st.poll();
                        drop(st);
                        // The driver re-reads the next timer (ARP may have
                        // armed one for this datagram).
                        inner.kick.notify_one();
                        return Ok(buf.len());
                    }
                    Err(SocketError::QueueFull | SocketError::NoBuffer) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            inner.kick.notify_one();
            progress.await;
        }
    }

    /// Waits for a datagram, copies it into `buf` (truncated to its
    /// length, the rest discarded) and returns its length and sender.
    pub async fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        poll_fn(|cx| {
            let mut st = self.net.inner.lock();
            match st.host.recv_from(&self.sock, buf) {
                Ok(Some((n, from))) => Poll::Ready(Ok((n, from.into()))),
                Ok(None) => {
                    st.wait_for(self.sock.path(), cx.waker());
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e.into())),
            }
        })
        .await
    }

    /// Waits for a datagram from a connected socket's peer.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        if self.sock.peer_addr().is_none() {
            return Err(SocketError::NotConnected.into());
        }
        Ok(self.recv_from(buf).await?.0)
    }

    /// Takes a datagram if one is queued, without waiting (an error of
    /// kind `WouldBlock` if none).
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        match self.net.inner.lock().host.recv_from(&self.sock, buf)? {
            Some((n, from)) => Ok((n, from.into())),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

impl Drop for UdpSocket {
    fn drop(&mut self) {
        let mut st = self.net.inner.lock();
        // Closing a socket twice is the only failure, and a handle owned
        // here cannot have been closed elsewhere.
        let _ = st.host.udp_close(self.sock);
        st.forget(self.sock.path());
    }
}

fn check_local(host: Option<std::net::Ipv4Addr>, addr: SocketAddrV4) -> io::Result<()> {
    if addr.ip().is_unspecified() || Some(*addr.ip()) == host {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("{} is not this host's address", addr.ip()),
        ))
    }
}
