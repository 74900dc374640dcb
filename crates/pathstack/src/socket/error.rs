//! [`SocketError`]: why a socket operation failed, and the
//! [`std::io::Error`] each reason becomes (the kinds Linux's errno values
//! map to, so that code written against `std::net` matches on the same
//! kinds).

use super::stale::Stale;
use crate::host::HostError;
use crate::host_id::HostId;
use pathstack_core::error::PathError;
use pathstack_core::{DropReason, PathFault};
use pathstack_inet::modules::{IpRefusal, TcpRefusal, UdpRefusal};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// The transport protocol a socket error is about (ports are per
/// protocol: a UDP and a TCP socket may share a number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// UDP (RFC 768).
    Udp,
    /// TCP (RFC 9293).
    Tcp,
}

impl std::fmt::Display for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Transport::Udp => "UDP",
            Transport::Tcp => "TCP",
        })
    }
}

/// Why a socket operation failed.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// The host graph has no `UDP` instance named `udp`.
    #[error("the host graph has no UDP instance named `udp` (HostConfig::udp is off?)")]
    NoUdp,
    /// Another socket of this host is bound to the port.
    #[error("{transport} port {port} is already bound")]
    PortInUse {
        /// The transport protocol whose port it is.
        transport: Transport,
        /// The port.
        port: u16,
    },
    /// The host graph has no `TCP` instance named `tcp`.
    #[error("the host graph has no TCP instance named `tcp` (HostConfig::tcp is off?)")]
    NoTcp,
    /// The TCP connection's error (refused, reset, timed out, …).
    #[error(transparent)]
    Tcp(#[from] pathstack_inet::tcp::TcpError),
    /// The datagram is larger than UDP over IPv4 can carry.
    #[error("datagram of {len} bytes is too long (UDP over IPv4 carries at most {max})")]
    MessageTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The socket's send queue is full: poll the host and try again.
    #[error("the socket's send queue is full; poll the host and send again")]
    QueueFull,
    /// The message pool has no buffer left: poll the host (sent and
    /// received messages return their buffers) and try again.
    #[error("no message buffer available; poll the host and try again")]
    NoBuffer,
    /// IP has no route to the destination (no interface's network holds
    /// it and there is no gateway): Linux's `ENETUNREACH`. A host must
    /// tell its transport layer when it cannot send (RFC 1122 §3.3.1.1,
    /// §4.1.3.3), not let the datagram vanish.
    #[error("network unreachable: no route to {0}")]
    NetworkUnreachable(Ipv4Addr),
    /// An asynchronous error of a connected socket (Linux's `SO_ERROR`),
    /// reported once, by the first call after it happened: ARP gave up on
    /// the next hop (`HostUnreachable`), or an ICMP destination
    /// unreachable came back for a datagram it sent (`ConnectionRefused`
    /// for port unreachable, `HostUnreachable`, `NetworkUnreachable`), as
    /// RFC 1122 §4.1.3.3 asks UDP to pass up. The error kind is the
    /// fault's.
    #[error("{}", unreachable_message(.peer, .fault))]
    Unreachable {
        /// The connected peer.
        peer: SocketAddrV4,
        /// What happened, and the reason of the layer that said so.
        fault: PathFault,
    },
    /// The stack dropped the datagram on the socket's path (a full device
    /// queue …); the reason is the drop counter's name.
    #[error("the datagram was dropped: {0}")]
    Dropped(DropReason),
    /// The socket was closed (its handle is stale).
    #[error("the socket is closed")]
    Closed,
    /// The handle belongs to another host: a handle names a socket of the
    /// host that made it, and only there.
    #[error("the socket belongs to {socket}, not to this host ({host})")]
    WrongHost {
        /// The host that made the socket.
        socket: HostId,
        /// The host it was used on.
        host: HostId,
    },
    /// `send` or `recv` on a socket that is not connected.
    #[error("the socket is not connected; use send_to/recv_from")]
    NotConnected,
    /// `send_to` to another address than a connected socket's peer.
    #[error("the socket is connected to {peer}; it cannot send to {dst}")]
    Connected {
        /// The connected peer.
        peer: SocketAddrV4,
        /// The requested destination.
        dst: SocketAddrV4,
    },
    /// The address cannot be a peer (port 0, the unspecified address).
    #[error("cannot send to {0}: {1}")]
    BadAddress(SocketAddrV4, &'static str),
    /// An address of a family pathstack does not speak (IPv6).
    #[error("{0}: address family not supported (pathstack speaks IPv4 only)")]
    UnsupportedFamily(SocketAddr),
    /// A local address that is not this host's.
    #[error("{0} is not this host's address")]
    NotLocal(Ipv4Addr),
    /// The address did not resolve (`ToSocketAddrs` failed).
    #[error("resolving the address: {0}")]
    Resolve(#[source] std::io::Error),
    /// The address resolved to no address at all.
    #[error("the address resolved to no socket address")]
    NoAddress,
    /// A datagram to a broadcast address from a socket without the
    /// broadcast option (Linux: `EACCES` unless `SO_BROADCAST` is set).
    #[error("{0} is a broadcast address; set_broadcast(true) first")]
    Broadcast(SocketAddrV4),
    /// A time to live outside 1–255 (Linux: `EINVAL` for `IP_TTL`).
    #[error("TTL {0} is out of range (1 to 255)")]
    BadTtl(u32),
    /// No datagram arrived within the timeout of a blocking receive.
    #[error("no datagram arrived within the timeout")]
    TimedOut,
    /// The host's device failed for good (a TAP deleted under the host):
    /// nothing can be sent any more.
    #[error(transparent)]
    DeviceFailed(pathstack_core::device::DeviceFailure),
    /// Waiting for the device in a blocking receive failed.
    #[error("waiting for the device: {0}")]
    Wait(#[source] Box<HostError>),
    /// A socket registered for readiness twice ([`Host::register`](crate::host::Host::register); mio
    /// says `AlreadyExists` too).
    #[error("the socket is registered already; use reregister")]
    AlreadyRegistered,
    /// A socket that is not registered for readiness
    /// ([`Host::reregister`](crate::host::Host::reregister),
    /// [`Host::deregister`](crate::host::Host::deregister)).
    #[error("the socket is not registered")]
    NotRegistered,
    /// The readiness registrations are at their bound
    /// ([`MAX_REGISTRATIONS`](crate::socket::MAX_REGISTRATIONS)).
    #[error("{0} sockets are registered already, the most a host watches")]
    TooManyRegistrations(usize),
    /// The stack refused to make the socket's path. Admission control's
    /// refusal ([`PathError::Admission`]: the path would take its class or
    /// the stack past a budget, see [`HostConfig::budgets`](crate::host::HostConfig::budgets))
    /// becomes [`std::io::ErrorKind::QuotaExceeded`].
    #[error("creating the socket's path: {0}")]
    Path(#[from] PathError),
}

/// The words for an asynchronous error of a socket connected to `peer`.
fn unreachable_message(peer: &SocketAddrV4, fault: &PathFault) -> String {
    use std::io::ErrorKind as K;
    let (ip, why) = (peer.ip(), fault.reason);
    match fault.kind {
        K::ConnectionRefused => {
            format!("connection refused: nothing listens on {peer} ({why})")
        }
        K::HostUnreachable => format!("host unreachable: {ip} cannot be reached ({why})"),
        K::NetworkUnreachable => format!("network unreachable: no way to {ip}'s network ({why})"),
        kind => format!("{peer}: {kind} ({why})"),
    }
}

impl From<Stale> for SocketError {
    fn from(s: Stale) -> SocketError {
        match s {
            Stale::WrongHost { socket, host } => SocketError::WrongHost { socket, host },
            Stale::Closed => SocketError::Closed,
        }
    }
}

impl From<SocketError> for std::io::Error {
    fn from(e: SocketError) -> Self {
        use std::io::ErrorKind as K;
        // A resolver's error keeps its own kind (as std's `bind` returns it).
        let e = match e {
            SocketError::Resolve(inner) => return inner,
            e => e,
        };
        let kind = match &e {
            SocketError::NoUdp | SocketError::NoTcp => K::Unsupported,
            SocketError::Tcp(e) => e.kind(),
            SocketError::PortInUse { .. } => K::AddrInUse,
            SocketError::MessageTooLong { .. }
            | SocketError::BadAddress(..)
            | SocketError::UnsupportedFamily(_)
            | SocketError::WrongHost { .. }
            | SocketError::NoAddress
            | SocketError::BadTtl(_) => K::InvalidInput,
            SocketError::NotLocal(_) => K::AddrNotAvailable,
            SocketError::Broadcast(_) => K::PermissionDenied,
            SocketError::QueueFull => K::WouldBlock,
            SocketError::TimedOut => K::TimedOut,
            SocketError::NoBuffer => K::OutOfMemory,
            SocketError::Closed | SocketError::NotConnected => K::NotConnected,
            SocketError::Connected { .. } | SocketError::AlreadyRegistered => K::AlreadyExists,
            SocketError::NotRegistered => K::NotFound,
            SocketError::TooManyRegistrations(_) => K::QuotaExceeded,
            SocketError::NetworkUnreachable(_) => K::NetworkUnreachable,
            SocketError::Unreachable { fault, .. } => fault.kind,
            // Connecting without a route is Linux's `ENETUNREACH` too.
            SocketError::Path(e)
                if matches!(e.cause::<IpRefusal>(), Some(IpRefusal::NoRoute(_))) =>
            {
                K::NetworkUnreachable
            }
            // Linux's `EDQUOT` kind: a budget, not the machine, said no;
            // closing sockets of the class (or of the stack) frees room.
            SocketError::Path(PathError::Admission(_)) => K::QuotaExceeded,
            // The stack's path table is at its configured bound: a quota
            // of the stack's, freed as paths go.
            SocketError::Path(PathError::TableFull(_)) => K::QuotaExceeded,
            // Every ephemeral port is taken: Linux's `connect` says
            // `EADDRNOTAVAIL` ("Cannot assign requested address").
            SocketError::Path(e) if no_ephemeral_port(e) => K::AddrNotAvailable,
            SocketError::Wait(t) => t.kind(),
            SocketError::DeviceFailed(f) => f.kind,
            SocketError::Path(_) | SocketError::Dropped(_) | SocketError::Resolve(_) => K::Other,
        };
        std::io::Error::new(kind, e)
    }
}

/// Whether UDP or TCP refused a path because no ephemeral port is left.
fn no_ephemeral_port(e: &PathError) -> bool {
    matches!(e.cause::<UdpRefusal>(), Some(UdpRefusal::NoEphemeralPort))
        || matches!(e.cause::<TcpRefusal>(), Some(TcpRefusal::NoEphemeralPort))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack_core::admission::{AdmissionError, Resource};
    use std::io::ErrorKind;

    #[test]
    fn an_admission_refusal_is_quota_exceeded_with_its_reason() {
        let refusal = AdmissionError {
            class: "udp".into(),
            scope: "class",
            resource: Resource::Paths,
            requested: 1,
            in_use: 2,
            limit: 2,
        };
        let e = std::io::Error::from(SocketError::Path(PathError::Admission(refusal)));
        assert_eq!(e.kind(), ErrorKind::QuotaExceeded);
        assert!(
            e.to_string()
                .contains("path count budget of the class is 2"),
            "{e}"
        );
        // A full path table is the stack's own quota (issue 27, problem 8).
        let full = std::io::Error::from(SocketError::Path(PathError::TableFull(4)));
        assert_eq!(full.kind(), ErrorKind::QuotaExceeded);
    }
}
