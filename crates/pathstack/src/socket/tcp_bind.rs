//! A TCP port held by a socket that is bound but has not connected or
//! listened yet (`bind(2)` on a `tokio::net::TcpSocket`): the host's TCP
//! module keeps it among its ports ([`BoundPorts`] states Linux's rules),
//! so that a second bind, a listener or an ephemeral choice does not take
//! it meanwhile.

use super::tcp::map_refusal;
use super::SocketError;
use crate::host::Host;
use pathstack_core::error::PathError;
#[cfg(doc)]
use pathstack_inet::modules::tcp::BoundPorts;
use pathstack_inet::modules::tcp::TcpModule;
use std::net::SocketAddrV4;

impl Host {
    /// Holds `local`'s port (port 0: a free ephemeral one, chosen now)
    /// for a socket that will connect or listen later, `SO_REUSEADDR` if
    /// `reuse`; the address with the port held. `AddrInUse` when Linux's
    /// `bind` would fail with `EADDRINUSE`; `AddrNotAvailable` when no
    /// ephemeral port is free.
    pub(crate) fn tcp_bind_port(
        &mut self,
        local: SocketAddrV4,
        reuse: bool,
    ) -> Result<SocketAddrV4, SocketError> {
        let tcp = self.tcp_module()?;
        let m = self
            .stack_mut()
            .module_mut::<TcpModule>(tcp)
            .ok_or(SocketError::NoTcp)?;
        // Refused as a path would be, so that the errors read the same
        // (`AddrInUse` for a port in use; `AddrNotAvailable` with no
        // ephemeral port left, as for `connect`).
        match m.bind_port(local.port(), reuse) {
            Ok(port) => Ok(SocketAddrV4::new(*local.ip(), port)),
            Err(r) => Err(map_refusal(PathError::refused("tcp", r))),
        }
    }

    /// Gives back a port [`tcp_bind_port`](Self::tcp_bind_port) held:
    /// the socket closed, or its connection or listener takes the port
    /// next.
    pub(crate) fn tcp_unbind_port(&mut self, port: u16) {
        if let Some(m) = self
            .tcp_sockets
            .tcp
            .and_then(|tcp| self.stack_mut().module_mut::<TcpModule>(tcp))
        {
            m.unbind_port(port);
        }
    }

    /// Whether a bound socket that has not connected or listened holds
    /// `port` (a listen without `SO_REUSEADDR` may not join it).
    pub(crate) fn tcp_port_bound(&self, port: u16) -> bool {
        self.tcp_sockets
            .tcp
            .and_then(|m| self.stack().module::<TcpModule>(m))
            .is_some_and(|m| m.bound().holds(port))
    }
}
