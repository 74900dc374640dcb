//! The IP time to live of a [`Host`]'s TCP connection (`IP_TTL` on a TCP
//! socket, `std::net::TcpStream::set_ttl`).
//!
//! The connection's stage puts it in the annotations of every segment it
//! sends; IP's stage (the modular path) and the fast form's link
//! template (a specialized path) both write the header's TTL from there,
//! so the two forms agree (RFC 1122 §3.2.1.7: the transport may set the
//! TTL of what it sends).

use super::Tcp;
use super::{SocketError, TcpStream};
use crate::host::Host;
use std::ops::{Deref, DerefMut};

impl<H: Deref<Target = Host>> Tcp<H> {
    /// The time to live of the segments `s` sends.
    pub fn ttl(&self, s: &TcpStream) -> Result<u32, SocketError> {
        self.host.conn(s, |c| u32::from(c.ttl()))
    }
}

impl<H: DerefMut<Target = Host>> Tcp<H> {
    /// Sets the time to live of the segments `s` sends from now on (1 to
    /// 255, Linux's `EINVAL` otherwise; the default is 64, Linux's).
    pub fn set_ttl(&mut self, s: &TcpStream, ttl: u32) -> Result<(), SocketError> {
        let ttl = u8::try_from(ttl)
            .ok()
            .filter(|&t| t > 0)
            .ok_or(SocketError::BadTtl(ttl))?;
        self.host.with_conn(s, |c, _| c.set_ttl(Some(ttl)))
    }
}
