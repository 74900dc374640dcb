//! File descriptors: the small integers packetdrill's scripts name
//! sockets by, and what each one is.
//!
//! Each number is a real descriptor of the process, open on `/dev/null`
//! while the socket lives: packetdrill, when a script ends, closes every
//! socket it still knows with the C library's `close` on that number
//! (`socket.c`, `socket_close`), not through the shared object, and dies
//! if the number is not open. A real descriptor also cannot collide with
//! packetdrill's own files. packetdrill maps the script's numbers onto
//! these, so they need not be the script's.
#![deny(unsafe_code)]

use crate::errno::Errno;
use pathstack::inet::tcp::{Keepalive, TcpConfig};
use pathstack::socket::{TcpListener, TcpStream};
use std::collections::BTreeMap;
use std::fs::File;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, IntoRawFd};
use std::time::Duration;

/// Descriptors open at once, at most (`EMFILE` beyond, as Linux's
/// `RLIMIT_NOFILE` default of 1024).
pub const MAX_FDS: usize = 1024;

/// What a descriptor is.
#[derive(Debug)]
pub enum SocketKind {
    /// A TCP socket that has neither connected nor listened.
    Fresh,
    /// A listening socket.
    Listener(TcpListener),
    /// A connection, connecting or connected.
    Stream(TcpStream),
}

/// A TCP socket: what it is and the options it was given.
#[derive(Debug)]
pub struct Socket {
    /// Listener, connection, or neither yet.
    pub kind: SocketKind,
    /// `O_NONBLOCK`.
    pub nonblocking: bool,
    /// The address `bind` gave it.
    pub bound: Option<SocketAddrV4>,
    /// The configuration its connection (or a listener's connections)
    /// will be made with: Linux's defaults and the options set before.
    pub cfg: TcpConfig,
    /// `SO_REUSEADDR` (kept for `getsockopt`).
    pub reuse_addr: bool,
    /// `SO_LINGER`: applied to the connection when it exists.
    pub linger: Option<Duration>,
    /// Keepalive timers set (`TCP_KEEPIDLE`, `TCP_KEEPINTVL`,
    /// `TCP_KEEPCNT`) for when `SO_KEEPALIVE` turns keepalive on.
    pub keepalive_timers: Option<Keepalive>,
    /// A non-blocking connect's failure not yet reported by a call.
    pub connect_pending: bool,
    /// The process descriptor that holds the socket's number.
    placeholder: Option<File>,
}

impl Socket {
    /// A fresh TCP socket.
    pub fn new(nonblocking: bool, cfg: TcpConfig) -> Socket {
        Socket {
            kind: SocketKind::Fresh,
            nonblocking,
            bound: None,
            cfg,
            reuse_addr: false,
            linger: None,
            keepalive_timers: None,
            connect_pending: false,
            placeholder: None,
        }
    }
}

/// The descriptor table: numbers as the kernel hands them out (the
/// lowest free one), each held by a real descriptor.
#[derive(Debug, Default)]
pub struct FdTable {
    fds: BTreeMap<i32, Socket>,
}

impl FdTable {
    /// Enters `s` under a new descriptor.
    pub fn insert(&mut self, mut s: Socket) -> Result<i32, Errno> {
        if self.fds.len() >= MAX_FDS {
            return Err(Errno::MFILE);
        }
        let holder = File::open("/dev/null").map_err(Errno::from)?;
        let fd = holder.as_raw_fd();
        s.placeholder = Some(holder);
        self.fds.insert(fd, s);
        Ok(fd)
    }

    /// The socket of `fd`.
    pub fn get(&self, fd: i32) -> Result<&Socket, Errno> {
        self.fds.get(&fd).ok_or(Errno::BADF)
    }

    /// The socket of `fd`, to change.
    pub fn get_mut(&mut self, fd: i32) -> Result<&mut Socket, Errno> {
        self.fds.get_mut(&fd).ok_or(Errno::BADF)
    }

    /// Takes `fd` out of the table; its number is free again.
    pub fn remove(&mut self, fd: i32) -> Result<Socket, Errno> {
        self.fds.remove(&fd).ok_or(Errno::BADF)
    }
}

impl Drop for FdTable {
    /// The numbers of sockets still open are left open: packetdrill
    /// closes them itself after freeing the session (see the module docs),
    /// and closing them here too could close whatever reused a number.
    fn drop(&mut self) {
        for s in self.fds.values_mut() {
            if let Some(f) = s.placeholder.take() {
                let _ = f.into_raw_fd();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_real_and_reused_after_close() {
        let mut t = FdTable::default();
        let s = || Socket::new(false, TcpConfig::default());
        let a = t.insert(s()).unwrap();
        let b = t.insert(s()).unwrap();
        assert_ne!(a, b);
        assert!(std::path::Path::new(&format!("/proc/self/fd/{b}")).exists());
        t.remove(b).unwrap();
        assert_eq!(t.get(b).unwrap_err(), Errno::BADF);
        assert_eq!(t.remove(b).unwrap_err(), Errno::BADF);
    }
}
