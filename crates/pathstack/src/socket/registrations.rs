//! What a host's readiness wait watches: the caller's [`Token`], the
//! [`Interest`] and the socket ([`Source`]) of each registration (as
//! `mio`'s). Apart from the wait itself so that the host holds the list
//! without an import cycle (issue 27 item 8).

use super::handles::{TcpListener, TcpStream, UdpSocket};

/// The caller's name for a registered socket, handed back in its
/// [`Event`](super::Event)s (as `mio::Token`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token(pub usize);

/// What a registered socket is watched for: [`Interest::READABLE`],
/// [`Interest::WRITABLE`] or both (`READABLE | WRITABLE`). Errors are
/// always reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interest(u8);

impl Interest {
    /// Readable: data (or a datagram, or a connection to accept) is there.
    pub const READABLE: Interest = Interest(1);
    /// Writable: a send would take data now.
    pub const WRITABLE: Interest = Interest(2);

    /// Whether it includes readable.
    pub fn is_readable(self) -> bool {
        self.0 & 1 != 0
    }

    /// Whether it includes writable.
    pub fn is_writable(self) -> bool {
        self.0 & 2 != 0
    }
}

impl std::ops::BitOr for Interest {
    type Output = Interest;
    fn bitor(self, other: Interest) -> Interest {
        Interest(self.0 | other.0)
    }
}

/// A socket of any kind, to register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// A UDP socket.
    Udp(UdpSocket),
    /// A TCP connection.
    Tcp(TcpStream),
    /// A TCP listener.
    Listener(TcpListener),
}

impl From<UdpSocket> for Source {
    fn from(s: UdpSocket) -> Source {
        Source::Udp(s)
    }
}

impl From<TcpStream> for Source {
    fn from(s: TcpStream) -> Source {
        Source::Tcp(s)
    }
}

impl From<TcpListener> for Source {
    fn from(s: TcpListener) -> Source {
        Source::Listener(s)
    }
}

/// A host's registrations.
#[derive(Debug, Default)]
pub(crate) struct Registrations {
    pub(crate) list: Vec<(Source, Token, Interest)>,
}

impl Registrations {
    pub(crate) fn find(&self, source: Source) -> Option<usize> {
        self.list.iter().position(|(s, _, _)| *s == source)
    }
}
