//! The socket calls of packetdrill's interface on the session's host:
//! `socket`, `bind`, `listen`, `accept`, `connect`, `read`/`recv`,
//! `write`/`send`, `close`, `shutdown`, `fcntl`, `ioctl`, with Linux's
//! blocking rules and errno values.
#![deny(unsafe_code)]

use crate::errno::Errno;
use crate::fd_table::{Socket, SocketKind};
use crate::session::{Attempt, Inner, Session};
use pathstack::inet::tcp::Shutdown;
use pathstack::socket::TcpStream;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

/// `recv` flags the shim honours: `MSG_PEEK`, `MSG_DONTWAIT`, and
/// `MSG_NOSIGNAL` (there are no signals here).
const RECV_FLAGS: i32 = libc::MSG_PEEK | libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
/// `send` flags the shim honours.
const SEND_FLAGS: i32 = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;

fn any_v4() -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => any_v4(),
    }
}

/// `WouldBlock` is a try to repeat; anything else ends the call.
fn attempt<T>(r: io::Result<T>) -> Attempt<T> {
    match r {
        Ok(v) => Attempt::Done(Ok(v)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Attempt::Blocked,
        Err(e) => Attempt::Done(Err(Errno::from(e))),
    }
}

impl Inner {
    fn stream(&self, fd: i32) -> Result<TcpStream, Errno> {
        match self.fds.get(fd)?.kind {
            SocketKind::Stream(s) => Ok(s),
            _ => Err(Errno::NOTCONN),
        }
    }

    /// Applies the options kept for a connection that exists now.
    fn apply_linger(&mut self, s: &TcpStream, linger: Option<std::time::Duration>) {
        if linger.is_some() {
            let _ = self.net.host.tcp().set_linger(s, linger);
        }
    }
}

impl Session {
    /// `socket(AF_INET, SOCK_STREAM[|SOCK_NONBLOCK], 0|IPPROTO_TCP)`.
    /// Other families are `EAFNOSUPPORT` (pathstack has no IPv6), other
    /// types and protocols `EPROTONOSUPPORT`.
    pub fn socket(&self, domain: i32, ty: i32, protocol: i32) -> Result<i32, Errno> {
        if domain != libc::AF_INET {
            return Err(Errno::AFNOSUPPORT);
        }
        let nonblocking = ty & libc::SOCK_NONBLOCK != 0;
        let base = ty & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC);
        if base != libc::SOCK_STREAM || !(protocol == 0 || protocol == libc::IPPROTO_TCP) {
            return Err(Errno::PROTONOSUPPORT);
        }
        self.with(|s| {
            let cfg = s.defaults;
            s.fds.insert(Socket::new(nonblocking, cfg))
        })
    }

    /// `bind`: remembered until the socket connects or listens (the
    /// facade takes the local address then). The address must be the
    /// host's or `0.0.0.0` (`EADDRNOTAVAIL`, as Linux).
    pub fn bind(&self, fd: i32, addr: SocketAddrV4) -> Result<(), Errno> {
        self.with(|s| {
            let local = s.net.host.addr();
            let sock = s.fds.get_mut(fd)?;
            if !matches!(sock.kind, SocketKind::Fresh) || sock.bound.is_some() {
                return Err(Errno::INVAL);
            }
            if !addr.ip().is_unspecified() && Some(*addr.ip()) != local {
                return Err(Errno(libc::EADDRNOTAVAIL));
            }
            sock.bound = Some(addr);
            Ok(())
        })
    }

    /// `listen`: the socket becomes a listener with a SYN and an accept
    /// queue of `backlog` each (at least 1).
    pub fn listen(&self, fd: i32, backlog: i32) -> Result<(), Errno> {
        self.with(|s| {
            let sock = s.fds.get(fd)?;
            match sock.kind {
                SocketKind::Listener(_) => return Ok(()),
                SocketKind::Stream(_) => return Err(Errno::INVAL),
                SocketKind::Fresh => {}
            }
            let (addr, cfg) = (sock.bound.unwrap_or_else(any_v4), sock.cfg);
            let backlog = u32::try_from(backlog).unwrap_or(0).clamp(1, 4096);
            let l = s
                .net
                .host
                .tcp()
                .listen_with(addr, backlog, cfg)
                .map_err(Errno::from)?;
            s.fds.get_mut(fd)?.kind = SocketKind::Listener(l);
            Ok(())
        })
    }

    /// `accept`: the next connection, as a new blocking descriptor (Linux
    /// does not pass `O_NONBLOCK` on), and its peer.
    pub fn accept(&self, fd: i32) -> Result<(i32, SocketAddrV4), Errno> {
        let blocking = self.with(|s| s.fds.get(fd).map(|x| !x.nonblocking))?;
        self.run(blocking, None, |s| {
            let sock = match s.fds.get(fd) {
                Ok(x) => x,
                Err(e) => return Attempt::Done(Err(e)),
            };
            let SocketKind::Listener(l) = sock.kind else {
                return Attempt::Done(Err(Errno::INVAL));
            };
            let (cfg, linger) = (sock.cfg, sock.linger);
            match attempt(l.accept(&mut s.net.host)) {
                Attempt::Done(Ok((stream, peer))) => {
                    s.apply_linger(&stream, linger);
                    let mut new = Socket::new(false, cfg);
                    new.linger = linger;
                    new.kind = SocketKind::Stream(stream);
                    Attempt::Done(s.fds.insert(new).map(|fd| (fd, v4(peer))))
                }
                Attempt::Done(Err(e)) => Attempt::Done(Err(e)),
                Attempt::Blocked => Attempt::Blocked,
            }
        })
    }

    /// `connect`: sends the SYN; a non-blocking socket returns
    /// `EINPROGRESS`, a blocking one waits for the handshake. Again on a
    /// connecting socket `EALREADY`, on a connected one `EISCONN`, on one
    /// whose connect failed the failure (`ECONNREFUSED`, `ETIMEDOUT`).
    pub fn connect(&self, fd: i32, peer: SocketAddrV4) -> Result<(), Errno> {
        let started = self.with(|s| {
            let sock = s.fds.get(fd)?;
            match sock.kind {
                SocketKind::Fresh => {}
                SocketKind::Listener(_) => return Err(Errno::ISCONN),
                SocketKind::Stream(st) => {
                    return match s.net.host.tcp().is_connected(&st) {
                        Ok(true) => Err(Errno::ISCONN),
                        Ok(false) => Err(Errno::ALREADY),
                        Err(e) => Err(Errno::from(e)),
                    }
                }
            }
            let (local, cfg, linger, nonblocking) = (
                sock.bound.unwrap_or_else(any_v4),
                sock.cfg,
                sock.linger,
                sock.nonblocking,
            );
            let st = s
                .net
                .host
                .tcp()
                .connect_with(local, peer, cfg)
                .map_err(Errno::from)?;
            s.apply_linger(&st, linger);
            let sock = s.fds.get_mut(fd)?;
            sock.kind = SocketKind::Stream(st);
            sock.connect_pending = true;
            Ok((st, nonblocking))
        })?;
        let (st, nonblocking) = started;
        if nonblocking {
            return Err(Errno::INPROGRESS);
        }
        self.run(true, None, |s| match s.net.host.tcp().is_connected(&st) {
            Ok(true) => Attempt::Done(Ok(())),
            Ok(false) => Attempt::Blocked,
            Err(e) => Attempt::Done(Err(Errno::from(e))),
        })
    }

    /// `recv` (and `read` with no flags): what is readable, `0` at the
    /// end of the stream; blocks on a blocking socket with nothing.
    pub fn recv(&self, fd: i32, buf: &mut [u8], flags: i32) -> Result<usize, Errno> {
        if flags & !RECV_FLAGS != 0 {
            return Err(Errno::OPNOTSUPP);
        }
        let peek = flags & libc::MSG_PEEK != 0;
        let blocking = self.with(|s| s.fds.get(fd).map(|x| !x.nonblocking))?
            && flags & libc::MSG_DONTWAIT == 0;
        self.run(blocking, None, |s| {
            let st = match s.stream(fd) {
                Ok(st) => st,
                Err(e) => return Attempt::Done(Err(e)),
            };
            if peek {
                attempt(s.net.host.tcp().peek(&st, buf))
            } else {
                attempt(st.read(&mut s.net.host, buf))
            }
        })
    }

    /// `send` (and `write` with no flags): a blocking socket waits until
    /// all of `data` is in the send buffer, as Linux; a non-blocking one
    /// takes what fits (`EAGAIN` if nothing does).
    pub fn send(&self, fd: i32, data: &[u8], flags: i32) -> Result<usize, Errno> {
        if flags & !SEND_FLAGS != 0 {
            return Err(Errno::OPNOTSUPP);
        }
        let blocking = self.with(|s| s.fds.get(fd).map(|x| !x.nonblocking))?
            && flags & libc::MSG_DONTWAIT == 0;
        let mut done = 0;
        let r = self.run(blocking, None, |s| {
            let st = match s.stream(fd) {
                Ok(st) => st,
                Err(e) => return Attempt::Done(Err(e)),
            };
            loop {
                if done == data.len() {
                    return Attempt::Done(Ok(done));
                }
                match st.write(&mut s.net.host, &data[done..]) {
                    Ok(0) => return Attempt::Blocked,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        return Attempt::Blocked;
                    }
                    // Linux reports what it took before the error.
                    Err(_) if done > 0 => return Attempt::Done(Ok(done)),
                    Err(e) => return Attempt::Done(Err(Errno::from(e))),
                }
            }
        });
        match r {
            // A non-blocking send that took part of the data.
            Err(Errno::AGAIN) if done > 0 => Ok(done),
            r => r,
        }
    }

    /// `close`: a connection closes gracefully (or resets, with unread
    /// data or a zero linger), a listener resets what it has not handed
    /// out.
    pub fn close(&self, fd: i32) -> Result<(), Errno> {
        self.with(|s| {
            let sock = s.fds.remove(fd)?;
            match sock.kind {
                SocketKind::Fresh => Ok(()),
                SocketKind::Stream(st) => s.net.host.tcp().close(st).map_err(Errno::from),
                SocketKind::Listener(l) => s.net.host.tcp().close_listener(l).map_err(Errno::from),
            }
        })
    }

    /// `shutdown(SHUT_RD|SHUT_WR|SHUT_RDWR)`.
    pub fn shutdown(&self, fd: i32, how: i32) -> Result<(), Errno> {
        let how = match how {
            libc::SHUT_RD => Shutdown::Read,
            libc::SHUT_WR => Shutdown::Write,
            libc::SHUT_RDWR => Shutdown::Both,
            _ => return Err(Errno::INVAL),
        };
        self.with(|s| {
            let st = s.stream(fd)?;
            s.net.host.tcp().shutdown(&st, how).map_err(Errno::from)
        })
    }

    /// `fcntl`: `F_GETFL`/`F_SETFL` (`O_NONBLOCK`), `F_GETFD`/`F_SETFD`
    /// (accepted, nothing to do: there is no `exec`).
    pub fn fcntl(&self, fd: i32, cmd: i32, arg: i64) -> Result<i32, Errno> {
        self.with(|s| {
            let sock = s.fds.get_mut(fd)?;
            match cmd {
                libc::F_GETFL => Ok(libc::O_RDWR
                    | if sock.nonblocking {
                        libc::O_NONBLOCK
                    } else {
                        0
                    }),
                libc::F_SETFL => {
                    sock.nonblocking = arg & i64::from(libc::O_NONBLOCK) != 0;
                    Ok(0)
                }
                libc::F_GETFD | libc::F_SETFD => Ok(0),
                _ => Err(Errno::INVAL),
            }
        })
    }

    /// `ioctl(FIONREAD)` (`SIOCINQ`): bytes readable. Others are
    /// `EOPNOTSUPP`.
    pub fn ioctl_inq(&self, fd: i32) -> Result<i32, Errno> {
        self.with(|s| {
            let st = match s.fds.get(fd)?.kind {
                SocketKind::Stream(st) => st,
                _ => return Err(Errno::INVAL),
            };
            let n = s.net.host.tcp().recv_queue(&st).map_err(Errno::from)?;
            Ok(i32::try_from(n).unwrap_or(i32::MAX))
        })
    }
}
