//! Socket options: the time to live of what a socket sends (`IP_TTL`) and
//! whether it may send to broadcast addresses (`SO_BROADCAST`), as
//! `std::net::UdpSocket::set_ttl` and `set_broadcast` set them.

use super::{SocketError, UdpSocket};
use crate::host::Host;

impl Host {
    /// Sets the time to live of the datagrams `s` sends (1 to 255; Linux's
    /// default, and ours, is 64). IP puts it in each datagram's header
    /// (RFC 791 §3.2).
    ///
    /// ```
    /// # use pathstack::core::device::wire::{wire_pair, WireConfig};
    /// # use pathstack::host::Host;
    /// # let mut host = Host::new("10.0.0.1/24".parse().unwrap(), wire_pair(WireConfig::default()).0).unwrap();
    /// let s = host.udp().bind("0.0.0.0:0").unwrap();
    /// assert_eq!(host.udp().ttl(&s).unwrap(), 64);
    /// host.udp().set_ttl(&s, 5).unwrap();
    /// assert_eq!(host.udp().ttl(&s).unwrap(), 5);
    /// assert!(host.udp().set_ttl(&s, 256).is_err());
    /// ```
    #[deprecated(note = "use host.udp().set_ttl")]
    pub fn set_ttl(&mut self, s: &UdpSocket, ttl: u32) -> Result<(), SocketError> {
        let ttl = u8::try_from(ttl)
            .ok()
            .filter(|&t| t > 0)
            .ok_or(SocketError::BadTtl(ttl))?;
        self.sockets.get_mut(s)?.ttl = ttl;
        Ok(())
    }

    /// The time to live of the datagrams `s` sends.
    #[deprecated(note = "use host.udp().ttl")]
    pub fn ttl(&self, s: &UdpSocket) -> Result<u32, SocketError> {
        Ok(u32::from(self.sockets.get(s)?.ttl))
    }

    /// Lets `s` send to broadcast addresses (the limited broadcast
    /// 255.255.255.255 and the attached network's directed broadcast), or
    /// forbids it again. Without it such a send fails with
    /// [`SocketError::Broadcast`] (kind `PermissionDenied`), as Linux
    /// fails with `EACCES` without `SO_BROADCAST`: a broadcast reaches
    /// every host on the link, so a program must ask for it.
    #[deprecated(note = "use host.udp().set_broadcast")]
    pub fn set_broadcast(&mut self, s: &UdpSocket, on: bool) -> Result<(), SocketError> {
        self.sockets.get_mut(s)?.broadcast = on;
        Ok(())
    }

    /// Whether `s` may send to broadcast addresses.
    #[deprecated(note = "use host.udp().broadcast")]
    pub fn broadcast(&self, s: &UdpSocket) -> Result<bool, SocketError> {
        Ok(self.sockets.get(s)?.broadcast)
    }
}
