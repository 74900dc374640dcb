//! The handles of a host's sockets: small `Copy` values that name a
//! socket the host owns (as smoltcp's socket handles). A handle is (host,
//! slot, generation): another host's handle is refused
//! ([`SocketError::WrongHost`](super::SocketError::WrongHost)), a closed
//! socket's is stale ([`SocketError::Closed`](super::SocketError::Closed)).
//! They stand apart from the host so that its tables can name them
//! without importing it (issue 27 item 8: no import cycle in the facade).

use crate::host_id::HostId;

/// A handle of a UDP socket of one [`Host`](crate::Host). Copy it freely: it names the
/// socket, the host owns it. It carries the host's identity: on another
/// host every call fails with [`SocketError::WrongHost`](super::SocketError::WrongHost).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UdpSocket {
    pub(crate) host: HostId,
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

impl UdpSocket {
    /// The host the socket belongs to.
    pub fn host(&self) -> HostId {
        self.host
    }
}

/// A listening TCP socket of one [`Host`](crate::Host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TcpListener {
    pub(crate) host: HostId,
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}

/// A TCP connection of one [`Host`](crate::Host).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TcpStream {
    pub(crate) host: HostId,
    pub(crate) slot: u32,
    pub(crate) generation: u32,
}
