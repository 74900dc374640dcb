//! Socket options: the time to live of what a socket sends (`IP_TTL`) and
//! whether it may send to broadcast addresses (`SO_BROADCAST`), as
//! `std::net::UdpSocket::set_ttl` and `set_broadcast` set them.

use super::Udp;
use super::{SocketError, UdpSocket};
use crate::host::Host;
use std::ops::{Deref, DerefMut};

impl<H: Deref<Target = Host>> Udp<H> {
    /// The time to live of the datagrams `s` sends.
    pub fn ttl(&self, s: &UdpSocket) -> Result<u32, SocketError> {
        Ok(u32::from(self.host.sockets.get(s)?.ttl))
    }

    /// Whether `s` may send to broadcast addresses.
    pub fn broadcast(&self, s: &UdpSocket) -> Result<bool, SocketError> {
        Ok(self.host.sockets.get(s)?.broadcast)
    }
}

impl<H: DerefMut<Target = Host>> Udp<H> {
    /// Sets the time to live of the datagrams `s` sends (1 to 255; Linux's
    /// default, and ours, is 64). IP puts it in each datagram's header
    /// (RFC 791 §3.2).
    ///
    /// ```
    /// # use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    /// # use pathstack::host::Host;
    /// # let mut host = Host::new("10.0.0.1/24".parse().unwrap(), memory_pair(MemoryConfig::default()).0).unwrap();
    /// let s = host.udp().bind("0.0.0.0:0").unwrap();
    /// assert_eq!(host.udp().ttl(&s).unwrap(), 64);
    /// host.udp().set_ttl(&s, 5).unwrap();
    /// assert_eq!(host.udp().ttl(&s).unwrap(), 5);
    /// assert!(host.udp().set_ttl(&s, 256).is_err());
    /// ```
    pub fn set_ttl(&mut self, s: &UdpSocket, ttl: u32) -> Result<(), SocketError> {
        let ttl = u8::try_from(ttl)
            .ok()
            .filter(|&t| t > 0)
            .ok_or(SocketError::BadTtl(ttl))?;
        self.host.sockets.get_mut(s)?.ttl = ttl;
        Ok(())
    }

    /// Lets `s` send to broadcast addresses (the limited broadcast
    /// 255.255.255.255 and the attached network's directed broadcast), or
    /// forbids it again. Without it such a send fails with
    /// [`SocketError::Broadcast`] (kind `PermissionDenied`), as Linux
    /// fails with `EACCES` without `SO_BROADCAST`: a broadcast reaches
    /// every host on the link, so a program must ask for it.
    pub fn set_broadcast(&mut self, s: &UdpSocket, on: bool) -> Result<(), SocketError> {
        self.host.sockets.get_mut(s)?.broadcast = on;
        Ok(())
    }
}
