//! Asynchronous errors of sockets (`SO_ERROR`): what happened to a
//! datagram after its send returned.
//!
//! A host must pass up to the application what the network says about its
//! datagrams (RFC 1122 §4.1.3.3 for ICMP errors to UDP, §3.2.2.1 for
//! destination unreachable); with BSD sockets, and here, a **connected**
//! socket reports the error on its next call (send, receive, peek, or
//! [`Udp::take_error`](crate::socket::Udp::take_error)) and then forgets it:
//!
//! - ARP gave up on the next hop: the datagrams that waited are dropped
//!   and their socket reports `HostUnreachable` (the ARP module records
//!   the fault on the path of each dropped datagram);
//! - an ICMP destination unreachable came back quoting one of its
//!   datagrams: `ConnectionRefused` for port unreachable,
//!   `HostUnreachable` or `NetworkUnreachable` for the others, as Linux's
//!   `icmp_err_convert` maps them. ICMP finds the path of the quoted
//!   datagram with the classifier (the quote turned around into the form
//!   of a reply) and hands it a copy of the error as it arrives; the UDP
//!   stage records the fault, as Linux's `__udp4_lib_err` does. The ICMP
//!   message stays in [`Host::echo_replies`] as well.
//!
//! A **bound** socket (not connected) stays silent, as
//! Linux's does unless `IP_RECVERR` is set: it talks to many peers, and an
//! error about one of them must not fail a call about another. Its
//! faults are discarded on its next call.
//!
//! A fault is kept per path, one at a time, the newest winning
//! ([`pathstack_core::fault`]).

use super::table::SocketState;
use super::Udp;
use super::{SocketError, UdpSocket};
use crate::host::Host;
use pathstack_core::PathFault;
use std::net::SocketAddrV4;
use std::ops::DerefMut;

impl Host {
    /// Takes the pending error of the socket whose state is `st`.
    fn take_error_of(&mut self, st: &SocketState) -> Option<SocketError> {
        let fault = self.stack_mut().take_fault(st.path);
        st.peer.zip(fault).map(as_error)
    }

    /// The state of `s`, or its pending error (taking it): what every send
    /// and receive checks first, with one look in the socket table.
    pub(super) fn checked(&mut self, s: &UdpSocket) -> Result<SocketState, SocketError> {
        let st = *self.socket(s)?;
        self.take_error_of(&st).map_or(Ok(st), Err)
    }

    /// Fails a send once the host's device has failed for good (a deleted
    /// TAP): Linux's `ENETDOWN` (kind `NetworkDown`), rather than a
    /// datagram counted as a driver drop (issue 27, problem 8). Receives
    /// still take what was queued before.
    pub(super) fn device_alive(&self) -> Result<(), SocketError> {
        match self.device_failure() {
            Some(f) => Err(SocketError::DeviceFailed(f.clone())),
            None => Ok(()),
        }
    }

    /// The pending error of `s`, left pending (what a peek reports, and
    /// what wakes a task waiting to receive).
    pub(crate) fn pending_error(&self, s: &UdpSocket) -> Option<SocketError> {
        let st = self.socket(s).ok()?;
        st.peer.zip(self.stack().fault(st.path)).map(as_error)
    }
}

/// A connected socket's fault as the error it reports.
fn as_error((peer, fault): (SocketAddrV4, PathFault)) -> SocketError {
    SocketError::Unreachable { peer, fault }
}

impl<H: DerefMut<Target = Host>> Udp<H> {
    /// Takes the pending asynchronous error of `s`, as
    /// `std::net::UdpSocket::take_error`: `Some` once for a connected
    /// socket whose datagrams met trouble (see [`crate::socket`]'s
    /// error section), `None` otherwise. A bound socket's faults are
    /// discarded (Linux reports them only with `IP_RECVERR`).
    pub fn take_error(&mut self, s: &UdpSocket) -> Result<Option<SocketError>, SocketError> {
        let st = *self.host.socket(s)?;
        Ok(self.host.take_error_of(&st))
    }
}
