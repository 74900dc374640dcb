//! `setsockopt` and `getsockopt`: the options pathstack has, with Linux's
//! names and encodings; every other one is `EOPNOTSUPP`.
//!
//! An option set before the connection exists goes into the configuration
//! it will be made with (a listener's, for the connections it accepts);
//! one set on a connection is applied to it where the facade can
//! (`TCP_NODELAY`, `SO_KEEPALIVE`, `SO_LINGER`), else refused rather than
//! silently ignored, so that a script relying on it fails visibly.
#![deny(unsafe_code)]

use crate::errno::Errno;
use crate::fd_table::SocketKind;
use crate::session::Session;
use pathstack::inet::tcp::CongestionKind;
use pathstack::socket::clamp_buffer;
use std::time::Duration;

/// An option value as C passes it: an `int`, a `struct linger`, or bytes
/// (`TCP_CONGESTION`'s name).
fn int(v: &[u8]) -> Result<i32, Errno> {
    let b: [u8; 4] = v
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or(Errno::INVAL)?;
    Ok(i32::from_ne_bytes(b))
}

fn put_int(out: &mut [u8], v: i32) -> Result<usize, Errno> {
    let dst = out.get_mut(..4).ok_or(Errno::INVAL)?;
    dst.copy_from_slice(&v.to_ne_bytes());
    Ok(4)
}

fn secs(v: i32) -> Result<Duration, Errno> {
    u64::try_from(v)
        .ok()
        .filter(|&s| s >= 1)
        .map(Duration::from_secs)
        .ok_or(Errno::INVAL)
}

impl Session {
    /// `setsockopt(fd, level, name, value)`.
    pub fn setsockopt(&self, fd: i32, level: i32, name: i32, value: &[u8]) -> Result<(), Errno> {
        self.with(|s| {
            let sock = s.fds.get_mut(fd)?;
            let stream = match sock.kind {
                SocketKind::Stream(st) => Some(st),
                _ => None,
            };
            // A listener's connections are made with the configuration
            // it was made with; the facade changes only its MSS
            // afterwards (`Tcp::set_listener_mss`), so any other option
            // that only lives there is refused on a listener rather than
            // silently ignored.
            if matches!(sock.kind, SocketKind::Listener(_))
                && !matches!(
                    (level, name),
                    (libc::SOL_SOCKET, libc::SO_REUSEADDR | libc::SO_LINGER)
                        | (libc::IPPROTO_TCP, libc::TCP_MAXSEG)
                )
            {
                return Err(Errno::OPNOTSUPP);
            }
            let listener = match sock.kind {
                SocketKind::Listener(l) => Some(l),
                _ => None,
            };
            let ka = sock
                .keepalive_timers
                .or(sock.cfg.keepalive)
                .unwrap_or_default();
            match (level, name) {
                (libc::SOL_SOCKET, libc::SO_REUSEADDR) => {
                    // A fresh host has no port in TIME-WAIT to reuse;
                    // remembered for getsockopt.
                    sock.reuse_addr = int(value)? != 0;
                    Ok(())
                }
                (libc::SOL_SOCKET, libc::SO_SNDBUF | libc::SO_RCVBUF) => {
                    // Linux doubles the value (`sock_setsockopt`: "We
                    // double it on the way in to account for struct
                    // sk_buff etc. overhead") and getsockopt reports the
                    // doubled size; the scripts expect both. pathstack's
                    // buffers hold payload only, so the doubled size is
                    // what a write may queue (a little more than Linux's
                    // accounting lets through).
                    let asked = u32::try_from(int(value)?).unwrap_or(0);
                    let size = clamp_buffer(asked.saturating_mul(2));
                    let size32 = u32::try_from(size).unwrap_or(u32::MAX);
                    let mut tcp = s.net.host.tcp();
                    match stream {
                        // On a connection: the buffers grow on demand, so
                        // the new size is the most they may hold from now
                        // on (the receive window's right edge never moves
                        // back).
                        Some(st) if name == libc::SO_SNDBUF => {
                            tcp.set_send_buffer_size(&st, size32).map_err(Errno::from)?;
                        }
                        Some(st) => {
                            tcp.set_recv_buffer_size(&st, size32).map_err(Errno::from)?;
                        }
                        None if name == libc::SO_SNDBUF => sock.cfg.send_buffer = size,
                        None => sock.cfg.recv_buffer = size,
                    }
                    Ok(())
                }
                (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => {
                    let k = (int(value)? != 0).then_some(ka);
                    sock.cfg.keepalive = k;
                    match stream {
                        Some(st) => s.net.host.tcp().set_keepalive(&st, k).map_err(Errno::from),
                        None => Ok(()),
                    }
                }
                (
                    libc::IPPROTO_TCP,
                    libc::TCP_KEEPIDLE | libc::TCP_KEEPINTVL | libc::TCP_KEEPCNT,
                ) => {
                    let v = int(value)?;
                    let mut k = ka;
                    match name {
                        libc::TCP_KEEPIDLE => k.idle = secs(v)?,
                        libc::TCP_KEEPINTVL => k.interval = secs(v)?,
                        _ => {
                            k.probes = u32::try_from(v)
                                .ok()
                                .filter(|&p| p >= 1)
                                .ok_or(Errno::INVAL)?
                        }
                    }
                    // Kept for when SO_KEEPALIVE turns keepalive on; in
                    // force at once if it is on.
                    sock.keepalive_timers = Some(k);
                    if sock.cfg.keepalive.is_none() {
                        return Ok(());
                    }
                    sock.cfg.keepalive = Some(k);
                    match stream {
                        Some(st) => s
                            .net
                            .host
                            .tcp()
                            .set_keepalive(&st, Some(k))
                            .map_err(Errno::from),
                        None => Ok(()),
                    }
                }
                (libc::SOL_SOCKET, libc::SO_LINGER) => {
                    let on = int(value)?;
                    let secs = int(value.get(4..).ok_or(Errno::INVAL)?)?;
                    let linger =
                        (on != 0).then(|| Duration::from_secs(u64::try_from(secs).unwrap_or(0)));
                    sock.linger = linger;
                    match stream {
                        Some(st) => s
                            .net
                            .host
                            .tcp()
                            .set_linger(&st, linger)
                            .map_err(Errno::from),
                        None => Ok(()),
                    }
                }
                (libc::IPPROTO_TCP, libc::TCP_NODELAY) => {
                    let on = int(value)? != 0;
                    sock.cfg.nodelay = on;
                    match stream {
                        Some(st) => s.net.host.tcp().set_nodelay(&st, on).map_err(Errno::from),
                        None => Ok(()),
                    }
                }
                (libc::IPPROTO_TCP, libc::TCP_MAXSEG) if stream.is_none() => {
                    let mss = int(value)?;
                    // Linux's bounds: 88 (TCP_MIN_MSS) to 32767.
                    sock.cfg.mss = u16::try_from(mss)
                        .ok()
                        .filter(|m| (88..=32767).contains(m))
                        .ok_or(Errno::INVAL)?;
                    match listener {
                        Some(l) => s
                            .net
                            .host
                            .tcp()
                            .set_listener_mss(&l, sock.cfg.mss)
                            .map_err(Errno::from),
                        None => Ok(()),
                    }
                }
                (libc::IPPROTO_TCP, libc::TCP_CONGESTION) if stream.is_none() => {
                    let name = value.split(|&b| b == 0).next().unwrap_or_default();
                    sock.cfg.congestion = match name {
                        b"cubic" => CongestionKind::Cubic,
                        b"reno" => CongestionKind::NewReno,
                        _ => return Err(Errno(libc::ENOENT)),
                    };
                    Ok(())
                }
                _ => Err(Errno::OPNOTSUPP),
            }
        })
    }

    /// `getsockopt(fd, level, name)` into `out`; the length written.
    pub fn getsockopt(
        &self,
        fd: i32,
        level: i32,
        name: i32,
        out: &mut [u8],
    ) -> Result<usize, Errno> {
        self.with(|s| {
            let sock = s.fds.get_mut(fd)?;
            let stream = match sock.kind {
                SocketKind::Stream(st) => Some(st),
                _ => None,
            };
            let (cfg, reuse, linger) = (sock.cfg, sock.reuse_addr, sock.linger);
            let pending = std::mem::take(&mut sock.connect_pending);
            match (level, name) {
                (libc::SOL_SOCKET, libc::SO_ERROR) => {
                    let err = match stream {
                        Some(st) => {
                            let mut tcp = s.net.host.tcp();
                            match tcp.take_error(&st) {
                                Ok(Some(e)) => Errno::from(e).0,
                                Ok(None) if pending => match tcp.is_connected(&st) {
                                    Err(e) => Errno::from(e).0,
                                    Ok(_) => 0,
                                },
                                _ => 0,
                            }
                        }
                        None => 0,
                    };
                    put_int(out, err)
                }
                (libc::SOL_SOCKET, libc::SO_TYPE) => put_int(out, libc::SOCK_STREAM),
                (libc::SOL_SOCKET, libc::SO_REUSEADDR) => put_int(out, i32::from(reuse)),
                (libc::SOL_SOCKET, libc::SO_KEEPALIVE) => {
                    put_int(out, i32::from(cfg.keepalive.is_some()))
                }
                (libc::SOL_SOCKET, libc::SO_SNDBUF | libc::SO_RCVBUF) => {
                    let size = match stream {
                        Some(st) if name == libc::SO_SNDBUF => {
                            s.net.host.tcp().send_buffer_size(&st)
                        }
                        Some(st) => s.net.host.tcp().recv_buffer_size(&st),
                        None if name == libc::SO_SNDBUF => Ok(cfg.send_buffer),
                        None => Ok(cfg.recv_buffer),
                    }
                    .map_err(Errno::from)?;
                    put_int(out, i32::try_from(size).unwrap_or(i32::MAX))
                }
                (libc::SOL_SOCKET, libc::SO_LINGER) => {
                    let dst = out.get_mut(..8).ok_or(Errno::INVAL)?;
                    let secs = linger.map_or(0, |d| i32::try_from(d.as_secs()).unwrap_or(i32::MAX));
                    dst[..4].copy_from_slice(&i32::from(linger.is_some()).to_ne_bytes());
                    dst[4..].copy_from_slice(&secs.to_ne_bytes());
                    Ok(8)
                }
                (libc::IPPROTO_TCP, libc::TCP_NODELAY) => {
                    let on = match stream {
                        Some(st) => s.net.host.tcp().nodelay(&st).map_err(Errno::from)?,
                        None => cfg.nodelay,
                    };
                    put_int(out, i32::from(on))
                }
                (libc::IPPROTO_TCP, libc::TCP_MAXSEG) => {
                    let mss = match stream {
                        Some(st) => s.net.host.tcp().mss(&st).map_err(Errno::from)?,
                        None => u32::from(cfg.mss),
                    };
                    put_int(out, i32::try_from(mss).unwrap_or(i32::MAX))
                }
                (libc::IPPROTO_TCP, libc::TCP_CONGESTION) => {
                    let name: &[u8] = match cfg.congestion {
                        CongestionKind::Cubic => b"cubic",
                        CongestionKind::NewReno => b"reno",
                    };
                    let n = name.len().min(out.len());
                    out[..n].copy_from_slice(&name[..n]);
                    out[n..].fill(0);
                    Ok(out.len())
                }
                _ => Err(Errno::OPNOTSUPP),
            }
        })
    }
}
