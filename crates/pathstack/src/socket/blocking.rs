//! Blocking receives with a timeout: the host is polled, and waits for its
//! device ([`Host::wait`]) in between, until a datagram arrives or the
//! time is up. For a thread that drives one host and has nothing else to
//! do (the way `std::net::UdpSocket::set_read_timeout` is used).

use super::Udp;
use super::{RecvInfo, SocketError, UdpSocket};
use crate::host::Host;
use std::net::SocketAddr;
use std::ops::DerefMut;
use std::time::{Duration, Instant};

impl<H: DerefMut<Target = Host>> Udp<H> {
    /// Waits at most `timeout` for a datagram on `s`, running the host
    /// meanwhile, and takes it as [`UdpSocket::recv_from_trunc`] does. Fails
    /// with [`SocketError::TimedOut`] (kind `TimedOut`) when none came.
    /// Other sockets of the host receive too while it waits.
    ///
    /// ```
    /// # use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    /// # use pathstack::host::Host;
    /// # use std::time::Duration;
    /// # let mut host = Host::new("10.0.0.1/24".parse().unwrap(), memory_pair(MemoryConfig::default()).0).unwrap();
    /// let s = host.udp().bind("0.0.0.0:7").unwrap();
    /// let mut buf = [0u8; 16];
    /// let e = host.udp().recv_from_timeout(&s, &mut buf, Duration::from_millis(10)).unwrap_err();
    /// assert_eq!(std::io::Error::from(e).kind(), std::io::ErrorKind::TimedOut);
    /// ```
    pub fn recv_from_trunc_timeout(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<RecvInfo, SocketError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(got) = self.host.udp_try_recv_from_trunc(s, buf)? {
                return Ok(got);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // A last look: what the device holds now is in time.
                self.host.poll();
                return self
                    .host
                    .udp_try_recv_from_trunc(s, buf)?
                    .ok_or(SocketError::TimedOut);
            }
            if self.host.poll() == 0 {
                self.host
                    .wait(left)
                    .map_err(|e| SocketError::Wait(Box::new(e)))?;
            }
        }
    }

    /// Waits at most `timeout` for a datagram on `s` (see
    /// [`Udp::recv_from_trunc_timeout`](crate::socket::Udp::recv_from_trunc_timeout)) and returns its length and sender.
    pub fn recv_from_timeout(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<(usize, SocketAddr), SocketError> {
        self.recv_from_trunc_timeout(s, buf, timeout)
            .map(|r| (r.len, r.from))
    }

    /// Waits at most `timeout` for a datagram from a connected socket's
    /// peer (see [`Udp::recv_from_trunc_timeout`](crate::socket::Udp::recv_from_trunc_timeout)).
    pub fn recv_timeout(
        &mut self,
        s: &UdpSocket,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, SocketError> {
        self.peer_addr(s)?;
        self.recv_from_timeout(s, buf, timeout).map(|(n, _)| n)
    }
}
