//! `errno` values as Linux returns them for each failure of a socket call.
#![deny(unsafe_code)]

use std::io;

/// A Linux `errno` value: what a failed call leaves in `errno` after
/// returning `-1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// `EAGAIN`/`EWOULDBLOCK`: a non-blocking call that would block.
    pub const AGAIN: Errno = Errno(libc::EAGAIN);
    /// `EBADF`: no such file descriptor.
    pub const BADF: Errno = Errno(libc::EBADF);
    /// `EINVAL`.
    pub const INVAL: Errno = Errno(libc::EINVAL);
    /// `EOPNOTSUPP`: what the shim answers for a call or option pathstack
    /// does not implement.
    pub const OPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    /// `ENOTSOCK`.
    pub const NOTSOCK: Errno = Errno(libc::ENOTSOCK);
    /// `EFAULT`: a null or short buffer.
    pub const FAULT: Errno = Errno(libc::EFAULT);
    /// `EMFILE`: the descriptor table is full.
    pub const MFILE: Errno = Errno(libc::EMFILE);
    /// `EINPROGRESS`: a non-blocking connect has sent its SYN.
    pub const INPROGRESS: Errno = Errno(libc::EINPROGRESS);
    /// `EALREADY`: a connect while one is in progress.
    pub const ALREADY: Errno = Errno(libc::EALREADY);
    /// `EISCONN`: a connect on a connected socket.
    pub const ISCONN: Errno = Errno(libc::EISCONN);
    /// `ENOTCONN`.
    pub const NOTCONN: Errno = Errno(libc::ENOTCONN);
    /// `EAFNOSUPPORT`: an address family other than IPv4.
    pub const AFNOSUPPORT: Errno = Errno(libc::EAFNOSUPPORT);
    /// `EPROTONOSUPPORT`: a socket type or protocol other than TCP.
    pub const PROTONOSUPPORT: Errno = Errno(libc::EPROTONOSUPPORT);
    /// `ENOPROTOOPT`: an option level or name Linux does not know either.
    pub const NOPROTOOPT: Errno = Errno(libc::ENOPROTOOPT);
}

impl From<&io::Error> for Errno {
    /// The errno of an `std::io` error: its OS code when it has one, else
    /// the value Linux uses for its kind (the facade maps pathstack's
    /// failures onto the kinds Linux's errno values map to,
    /// `pathstack::socket::SocketError`).
    fn from(e: &io::Error) -> Errno {
        if let Some(code) = e.raw_os_error() {
            return Errno(code);
        }
        use io::ErrorKind as K;
        Errno(match e.kind() {
            K::WouldBlock => libc::EAGAIN,
            K::ConnectionRefused => libc::ECONNREFUSED,
            K::ConnectionReset => libc::ECONNRESET,
            K::ConnectionAborted => libc::ECONNABORTED,
            K::NotConnected => libc::ENOTCONN,
            K::AddrInUse => libc::EADDRINUSE,
            K::AddrNotAvailable => libc::EADDRNOTAVAIL,
            K::BrokenPipe => libc::EPIPE,
            K::TimedOut => libc::ETIMEDOUT,
            K::InvalidInput => libc::EINVAL,
            K::AlreadyExists => libc::EISCONN,
            K::HostUnreachable => libc::EHOSTUNREACH,
            K::NetworkUnreachable => libc::ENETUNREACH,
            K::PermissionDenied => libc::EACCES,
            K::OutOfMemory | K::QuotaExceeded => libc::ENOBUFS,
            K::Unsupported => libc::EOPNOTSUPP,
            K::NotFound => libc::ENOENT,
            _ => libc::EIO,
        })
    }
}

impl From<io::Error> for Errno {
    fn from(e: io::Error) -> Errno {
        Errno::from(&e)
    }
}

impl From<pathstack::socket::SocketError> for Errno {
    fn from(e: pathstack::socket::SocketError) -> Errno {
        Errno::from(io::Error::from(e))
    }
}

impl From<pathstack::inet::tcp::TcpError> for Errno {
    fn from(e: pathstack::inet::tcp::TcpError) -> Errno {
        Errno::from(pathstack::socket::SocketError::from(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_linux_values() {
        let e = |k| Errno::from(io::Error::from(k)).0;
        assert_eq!(e(io::ErrorKind::WouldBlock), libc::EAGAIN);
        assert_eq!(e(io::ErrorKind::ConnectionRefused), libc::ECONNREFUSED);
        assert_eq!(e(io::ErrorKind::ConnectionReset), libc::ECONNRESET);
        assert_eq!(e(io::ErrorKind::BrokenPipe), libc::EPIPE);
        assert_eq!(
            Errno::from(io::Error::from_raw_os_error(libc::EMSGSIZE)).0,
            libc::EMSGSIZE
        );
        let refused = pathstack::inet::tcp::TcpError::Refused;
        assert_eq!(Errno::from(refused).0, libc::ECONNREFUSED);
    }
}
