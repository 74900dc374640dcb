//! Asynchronous errors of sockets (`SO_ERROR`): what happened to a
//! datagram after its send returned.
//!
//! A host must pass up to the application what the network says about its
//! datagrams (RFC 1122 §4.1.3.3 for ICMP errors to UDP, §3.2.2.1 for
//! destination unreachable); with BSD sockets, and here, a **connected**
//! socket reports the error on its next call (send, receive, peek, or
//! [`Host::take_error`]) and then forgets it:
//!
//! - ARP gave up on the next hop: the datagrams that waited are dropped
//!   and their socket reports `HostUnreachable` (the ARP module records
//!   the fault on the path of each dropped datagram);
//! - an ICMP destination unreachable came back quoting one of its
//!   datagrams: `ConnectionRefused` for port unreachable,
//!   `HostUnreachable` or `NetworkUnreachable` for the others, as Linux's
//!   `icmp_err_convert` maps them. The host looks the quoted datagram up
//!   in its socket table (ports and peer address), as Linux's
//!   `__udp4_lib_err` does; the ICMP message stays in
//!   [`Host::echo_replies`] as well.
//!
//! A **bound** socket (not connected) stays silent, as
//! Linux's does unless `IP_RECVERR` is set: it talks to many peers, and an
//! error about one of them must not fail a call about another. Its
//! faults are discarded on its next call.
//!
//! A fault is kept per path, one at a time, the newest winning
//! ([`pathstack_core::fault`]).

use super::table::SocketState;
use super::{SocketError, UdpSocket};
use crate::host::Host;
use pathstack_core::{Dir, PathFault, QueueKind};
use pathstack_inet::wire::icmp::{types, QuotedUdp, UnreachableReason};
use std::net::SocketAddrV4;

impl Host {
    /// Takes the pending asynchronous error of `s`, as
    /// `std::net::UdpSocket::take_error`: `Some` once for a connected
    /// socket whose datagrams met trouble (see [`crate::socket`]'s
    /// error section), `None` otherwise. A bound socket's faults are
    /// discarded (Linux reports them only with `IP_RECVERR`).
    pub fn take_error(&mut self, s: &UdpSocket) -> Result<Option<SocketError>, SocketError> {
        let st = *self.socket(s)?;
        Ok(self.take_error_of(&st))
    }

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

    /// The pending error of `s`, left pending (what a peek reports, and
    /// what wakes a task waiting to receive).
    pub(crate) fn pending_error(&self, s: &UdpSocket) -> Option<SocketError> {
        let st = self.socket(s).ok()?;
        st.peer.zip(self.stack().fault(st.path)).map(as_error)
    }

    /// Matches the ICMP errors that arrived since the last call to the
    /// connected sockets whose datagrams they quote, and records each as
    /// its socket's fault. `seen` ICMP messages were looked at before;
    /// returns how many are queued now.
    pub(crate) fn route_icmp_errors(&mut self, seen: usize) -> usize {
        let icmp = self.icmp_path();
        let Some(queue) = self
            .stack()
            .path(icmp)
            .map(|p| p.queue(QueueKind::sink(Dir::Up)))
        else {
            return 0;
        };
        let queued = queue.len();
        if queued <= seen {
            return queued;
        }
        // At most the sink's bound of messages, each looked at once.
        let mut found: Vec<(pathstack_core::PathId, PathFault)> = Vec::new();
        for m in queue.iter().skip(seen) {
            let Some(q) = QuotedUdp::parse(m.as_slice()) else {
                continue;
            };
            if q.icmp_type != types::DEST_UNREACHABLE || Some(q.src) != self.addr() {
                continue;
            }
            let Some((reason, kind)) = UnreachableReason::of_code(q.code) else {
                continue;
            };
            let peer = SocketAddrV4::new(q.dst, q.dst_port);
            if let Some(path) = self.sockets.connected_path(q.src_port, peer) {
                found.push((path, PathFault::new(kind, reason)));
            }
        }
        // TCP: "fragmentation needed" lowers a connection's MSS, checked
        // against what it has in flight (RFC 5927 §4.1).
        let mut frag: Vec<(pathstack_core::PathId, u16, u32)> = Vec::new();
        if let Some(tcp) = self
            .tcp_sockets
            .tcp
            .and_then(|m| self.stack().module::<pathstack_inet::modules::TcpModule>(m))
        {
            for m in queue.iter().skip(seen) {
                let Some(q) = pathstack_inet::wire::icmp::QuotedTcp::parse(m.as_slice()) else {
                    continue;
                };
                if q.icmp_type != types::DEST_UNREACHABLE
                    || q.code != 4
                    || Some(q.src) != self.addr()
                {
                    continue;
                }
                if let Some(p) = tcp.connection(q.src_port, q.dst, q.dst_port) {
                    frag.push((p, q.mtu, q.seq));
                }
            }
        }
        for (path, fault) in found {
            self.stack_mut().set_fault(path, fault);
        }
        for (path, mtu, seq) in frag {
            let _ = self
                .stack_mut()
                .with_stage::<pathstack_inet::modules::TcpConnStage, _>(path, |c, _| {
                    c.tcb_mut()
                        .on_frag_needed(mtu, pathstack_inet::tcp::SeqNumber(seq))
                });
        }
        queued
    }
}

/// A connected socket's fault as the error it reports.
fn as_error((peer, fault): (SocketAddrV4, PathFault)) -> SocketError {
    SocketError::Unreachable { peer, fault }
}
