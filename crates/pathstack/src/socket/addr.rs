//! Socket addresses: what `bind`, `connect` and `send_to` accept and which
//! of them an IPv4 host can use.
//!
//! Both APIs take any number of candidate addresses (`ToSocketAddrs`, as
//! `std::net` and `tokio::net` do) and try them in turn; pathstack speaks
//! IPv4 only, so an IPv6 candidate fails with
//! [`SocketError::UnsupportedFamily`].

use super::SocketError;
use crate::host::Host;
use pathstack_inet::modules::ip::Interface;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, ToSocketAddrs};

/// The candidates of `addrs`, resolved as `std::net` resolves them.
pub(crate) fn resolve(
    addrs: impl ToSocketAddrs,
) -> Result<impl Iterator<Item = SocketAddr>, SocketError> {
    addrs.to_socket_addrs().map_err(SocketError::Resolve)
}

/// The IPv4 address of `addr`, or why there is none.
pub(crate) fn v4(addr: SocketAddr) -> Result<SocketAddrV4, SocketError> {
    match addr {
        SocketAddr::V4(a) => Ok(a),
        SocketAddr::V6(_) => Err(SocketError::UnsupportedFamily(addr)),
    }
}

/// Tries `f` on each candidate in turn, as `std::net::UdpSocket::bind`
/// and `connect` do: the first success, or the last candidate's error.
pub(crate) fn try_each<T>(
    candidates: impl IntoIterator<Item = SocketAddr>,
    mut f: impl FnMut(SocketAddrV4) -> Result<T, SocketError>,
) -> Result<T, SocketError> {
    let mut last = SocketError::NoAddress;
    for a in candidates {
        match v4(a).and_then(&mut f) {
            Ok(t) => return Ok(t),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The first candidate, as `std::net::UdpSocket::send_to` uses it.
pub(crate) fn first(
    candidates: impl IntoIterator<Item = SocketAddr>,
) -> Result<SocketAddrV4, SocketError> {
    candidates
        .into_iter()
        .next()
        .ok_or(SocketError::NoAddress)
        .and_then(v4)
}

/// Whether a socket of a host with address `host` may bind `local`: the
/// unspecified address, the host's own, or one of the loopback network
/// 127.0.0.0/8, which every host has (RFC 1122 §3.2.1.3 (g): "addresses
/// of this form MUST NOT appear outside a host"; Linux lets a socket bind
/// any of them, since `lo` holds the whole /8). Traffic to those turns
/// around in IP (`inet::modules::loopback`).
pub(crate) fn check_local(host: Option<Ipv4Addr>, local: SocketAddrV4) -> Result<(), SocketError> {
    let ip = *local.ip();
    if ip.is_unspecified() || ip.is_loopback() || Some(ip) == host {
        Ok(())
    } else {
        Err(SocketError::NotLocal(*local.ip()))
    }
}

/// Whether `dst` can be a peer at all.
pub(crate) fn check_peer(dst: SocketAddrV4) -> Result<(), SocketError> {
    if dst.port() == 0 {
        return Err(SocketError::BadAddress(dst, "port 0 is reserved"));
    }
    if dst.ip().is_unspecified() {
        return Err(SocketError::BadAddress(dst, "the unspecified address"));
    }
    Ok(())
}

/// Whether `dst` is a broadcast address seen from `iface`: the limited
/// broadcast, or the directed broadcast of the attached network (RFC 919,
/// RFC 922; a /31 or /32 has none, RFC 3021).
pub(crate) fn is_broadcast(iface: Option<&Interface>, dst: Ipv4Addr) -> bool {
    dst.is_broadcast() || iface.is_some_and(|i| i.prefix_len < 31 && dst == i.broadcast())
}

impl Host {
    #[cfg(feature = "tokio")]
    /// The address a socket may bind, from `local` (an option-setting
    /// socket's `bind`, checked before it connects or listens).
    pub(crate) fn check_bind(&self, local: SocketAddr) -> Result<SocketAddrV4, SocketError> {
        let local = v4(local)?;
        check_local(self.sockets.addr(), local)?;
        Ok(local)
    }
}
