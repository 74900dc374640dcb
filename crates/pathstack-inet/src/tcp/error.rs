//! Why a connection failed, as the application sees it.

use std::io;

/// A connection's error, reported to the application once (as Linux's
/// `SO_ERROR`) and then by every call that needs the connection. Each maps
/// to the [`io::ErrorKind`] Linux's errno maps to ([`TcpError::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum TcpError {
    /// The peer answered our SYN with a reset (RFC 9293 §3.10.7.3):
    /// nothing listens there (`ECONNREFUSED`).
    #[error("connection refused")]
    Refused,
    /// The peer reset an open connection (RFC 9293 §3.10.7.4)
    /// (`ECONNRESET`).
    #[error("connection reset by peer")]
    Reset,
    /// Retransmissions went unanswered past the limit (RFC 9293 §3.8.3,
    /// R2), or keepalive probes did (§3.8.4) (`ETIMEDOUT`).
    #[error("connection timed out")]
    TimedOut,
    /// The connection was aborted here (`abort`, or a listener that went
    /// away before it was accepted) (`ECONNABORTED`).
    #[error("connection aborted")]
    Aborted,
    /// A send after `shutdown(Write)` or `close` (`EPIPE`).
    #[error("broken pipe: the sending side is shut down")]
    BrokenPipe,
    /// A call that needs an open connection on one that is not (yet)
    /// (`ENOTCONN`).
    #[error("not connected")]
    NotConnected,
    /// The peer cannot be reached: while connecting, the link layer gave
    /// up on the next hop (ARP, RFC 1122 §2.3.2.1) (`EHOSTUNREACH`).
    #[error("no route to host: the peer did not answer ARP")]
    HostUnreachable,
    /// The peer's network cannot be reached while connecting
    /// (`ENETUNREACH`).
    #[error("network is unreachable")]
    NetworkUnreachable,
}

impl TcpError {
    /// The [`io::ErrorKind`] Linux's errno for this error maps to.
    pub fn kind(self) -> io::ErrorKind {
        match self {
            TcpError::Refused => io::ErrorKind::ConnectionRefused,
            TcpError::Reset => io::ErrorKind::ConnectionReset,
            TcpError::TimedOut => io::ErrorKind::TimedOut,
            TcpError::Aborted => io::ErrorKind::ConnectionAborted,
            TcpError::BrokenPipe => io::ErrorKind::BrokenPipe,
            TcpError::NotConnected => io::ErrorKind::NotConnected,
            TcpError::HostUnreachable => io::ErrorKind::HostUnreachable,
            TcpError::NetworkUnreachable => io::ErrorKind::NetworkUnreachable,
        }
    }
}

impl From<TcpError> for io::Error {
    fn from(e: TcpError) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}
