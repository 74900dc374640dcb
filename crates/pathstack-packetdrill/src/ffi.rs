//! The C side: `packetdrill_interface_init` and the function table of
//! packetdrill's `struct packetdrill_interface` (`packetdrill.h`).
//!
//! The only file of the crate with `unsafe` (see the crate docs for why
//! the crate is an exception to the project's rule). Every function here
//! turns packetdrill's raw pointers into references, slices and values at
//! once, checking for null and for short lengths (`EFAULT`, `EINVAL`),
//! and calls the safe [`Session`]; failures set `errno` and return `-1`,
//! as the system calls they stand in for.
#![allow(unsafe_code)]

use crate::errno::Errno;
use crate::flags::ShimFlags;
use crate::poll::PollFd;
use crate::session::Session;
use libc::{
    c_char, c_int, c_long, c_longlong, c_uint, c_ulong, c_void, epoll_event, iovec, loff_t, msghdr,
    nfds_t, pollfd, size_t, sockaddr, sockaddr_in, socklen_t, ssize_t, timeval, useconds_t,
};
use std::ffi::CStr;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

/// `struct packetdrill_interface`, field for field.
///
/// `fcntl` and `ioctl` are variadic in C (`int (*fcntl)(void *, int, int,
/// ...)`). Rust cannot define a variadic function, so they are defined with
/// the one argument packetdrill passes (an integer for `fcntl`, a pointer
/// for `ioctl`; `run_system_call.c` passes nothing more). On the Linux
/// C ABIs of x86-64 (System V) and AArch64 (AAPCS64) a variadic integer or
/// pointer argument travels in the same register as a fixed one would, so
/// the callee reads it where the caller put it; when packetdrill passes no
/// argument the register holds garbage that `F_GETFL`/`F_GETFD` and the
/// argument-less `ioctl`s never read. Other targets are refused at
/// compile time below.
#[repr(C)]
pub struct PacketdrillInterface {
    /// The [`Session`], boxed.
    pub userdata: *mut c_void,
    /// Drops the session.
    pub free: Option<unsafe extern "C" fn(*mut c_void)>,
    /// `socket`.
    pub socket: Option<unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int) -> c_int>,
    /// `bind`.
    pub bind: Option<unsafe extern "C" fn(*mut c_void, c_int, *const sockaddr, socklen_t) -> c_int>,
    /// `listen`.
    pub listen: Option<unsafe extern "C" fn(*mut c_void, c_int, c_int) -> c_int>,
    /// `accept`.
    pub accept:
        Option<unsafe extern "C" fn(*mut c_void, c_int, *mut sockaddr, *mut socklen_t) -> c_int>,
    /// `connect`.
    pub connect:
        Option<unsafe extern "C" fn(*mut c_void, c_int, *const sockaddr, socklen_t) -> c_int>,
    /// `read`.
    pub read: Option<unsafe extern "C" fn(*mut c_void, c_int, *mut c_void, size_t) -> ssize_t>,
    /// `readv`.
    pub readv: Option<unsafe extern "C" fn(*mut c_void, c_int, *const iovec, c_int) -> ssize_t>,
    /// `recv`.
    pub recv:
        Option<unsafe extern "C" fn(*mut c_void, c_int, *mut c_void, size_t, c_int) -> ssize_t>,
    /// `recvfrom`.
    pub recvfrom: Option<
        unsafe extern "C" fn(
            *mut c_void,
            c_int,
            *mut c_void,
            size_t,
            c_int,
            *mut sockaddr,
            *mut socklen_t,
        ) -> ssize_t,
    >,
    /// `recvmsg`.
    pub recvmsg: Option<unsafe extern "C" fn(*mut c_void, c_int, *mut msghdr, c_int) -> ssize_t>,
    /// `write`.
    pub write: Option<unsafe extern "C" fn(*mut c_void, c_int, *const c_void, size_t) -> ssize_t>,
    /// `writev`.
    pub writev: Option<unsafe extern "C" fn(*mut c_void, c_int, *const iovec, c_int) -> ssize_t>,
    /// `send`.
    pub send:
        Option<unsafe extern "C" fn(*mut c_void, c_int, *const c_void, size_t, c_int) -> ssize_t>,
    /// `sendto`.
    pub sendto: Option<
        unsafe extern "C" fn(
            *mut c_void,
            c_int,
            *const c_void,
            size_t,
            c_int,
            *const sockaddr,
            socklen_t,
        ) -> ssize_t,
    >,
    /// `sendmsg`.
    pub sendmsg: Option<unsafe extern "C" fn(*mut c_void, c_int, *const msghdr, c_int) -> ssize_t>,
    /// `fcntl` (variadic in C, see above).
    pub fcntl: Option<unsafe extern "C" fn(*mut c_void, c_int, c_int, c_long) -> c_int>,
    /// `ioctl` (variadic in C, see above).
    pub ioctl: Option<unsafe extern "C" fn(*mut c_void, c_int, c_ulong, *mut c_void) -> c_int>,
    /// `close`.
    pub close: Option<unsafe extern "C" fn(*mut c_void, c_int) -> c_int>,
    /// `shutdown`.
    pub shutdown: Option<unsafe extern "C" fn(*mut c_void, c_int, c_int) -> c_int>,
    /// `getsockopt`.
    pub getsockopt: Option<
        unsafe extern "C" fn(
            *mut c_void,
            c_int,
            c_int,
            c_int,
            *mut c_void,
            *mut socklen_t,
        ) -> c_int,
    >,
    /// `setsockopt`.
    pub setsockopt: Option<
        unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int, *const c_void, socklen_t) -> c_int,
    >,
    /// `poll`.
    pub poll: Option<unsafe extern "C" fn(*mut c_void, *mut pollfd, nfds_t, c_int) -> c_int>,
    /// A packet to the stack.
    pub netdev_send: Option<unsafe extern "C" fn(*mut c_void, *const c_void, size_t) -> c_int>,
    /// The next packet from the stack.
    pub netdev_receive: Option<
        unsafe extern "C" fn(*mut c_void, *mut c_void, *mut size_t, *mut c_longlong) -> c_int,
    >,
    /// `usleep` on the session's clock.
    pub usleep: Option<unsafe extern "C" fn(*mut c_void, useconds_t) -> c_int>,
    /// `gettimeofday` on the session's clock (the `struct timezone *`
    /// is passed as an opaque pointer and ignored).
    pub gettimeofday: Option<unsafe extern "C" fn(*mut c_void, *mut timeval, *mut c_void) -> c_int>,
    /// `epoll_create`: not supported.
    pub epoll_create: Option<unsafe extern "C" fn(*mut c_void, c_int) -> c_int>,
    /// `epoll_ctl`: not supported.
    pub epoll_ctl:
        Option<unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int, *mut epoll_event) -> c_int>,
    /// `epoll_wait`: not supported.
    pub epoll_wait:
        Option<unsafe extern "C" fn(*mut c_void, c_int, *mut epoll_event, c_int, c_int) -> c_int>,
    /// `pipe`: not supported.
    pub pipe: Option<unsafe extern "C" fn(*mut c_void, *mut c_int) -> c_int>,
    /// `splice`: not supported.
    pub splice: Option<
        unsafe extern "C" fn(
            *mut c_void,
            c_int,
            *mut loff_t,
            c_int,
            *mut loff_t,
            size_t,
            c_uint,
        ) -> ssize_t,
    >,
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
compile_error!(
    "pathstack-packetdrill's fcntl/ioctl entries rely on the Linux x86-64 or AArch64 C ABI"
);

/// Fills `ifc` with a new session's function table: packetdrill's entry
/// point (`so_testing.c` looks it up with `dlsym`). `flags` is
/// `--so_flags` ([`ShimFlags`]), or null. A bad flag or a host that
/// cannot be made ends the process with the reason, since packetdrill's
/// interface has no way to report it.
///
/// # Safety
///
/// `flags` is null or a NUL-terminated string; `ifc` points to a writable
/// `struct packetdrill_interface`.
#[no_mangle]
pub unsafe extern "C" fn packetdrill_interface_init(
    flags: *const c_char,
    ifc: *mut PacketdrillInterface,
) {
    let text = if flags.is_null() {
        String::new()
    } else {
        // SAFETY: the caller passes a NUL-terminated string or null (checked).
        unsafe { CStr::from_ptr(flags) }
            .to_string_lossy()
            .into_owned()
    };
    let session = ShimFlags::parse(&text).and_then(Session::new);
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pathstack-packetdrill: {e}");
            std::process::exit(1);
        }
    };
    if ifc.is_null() {
        eprintln!("pathstack-packetdrill: null interface");
        std::process::exit(1);
    }
    let table = PacketdrillInterface {
        userdata: Box::into_raw(Box::new(session)).cast(),
        free: Some(pd_free),
        socket: Some(pd_socket),
        bind: Some(pd_bind),
        listen: Some(pd_listen),
        accept: Some(pd_accept),
        connect: Some(pd_connect),
        read: Some(pd_read),
        readv: Some(pd_readv),
        recv: Some(pd_recv),
        recvfrom: Some(pd_recvfrom),
        recvmsg: Some(pd_recvmsg),
        write: Some(pd_write),
        writev: Some(pd_writev),
        send: Some(pd_send),
        sendto: Some(pd_sendto),
        sendmsg: Some(pd_sendmsg),
        fcntl: Some(pd_fcntl),
        ioctl: Some(pd_ioctl),
        close: Some(pd_close),
        shutdown: Some(pd_shutdown),
        getsockopt: Some(pd_getsockopt),
        setsockopt: Some(pd_setsockopt),
        poll: Some(pd_poll),
        netdev_send: Some(pd_netdev_send),
        netdev_receive: Some(pd_netdev_receive),
        usleep: Some(pd_usleep),
        gettimeofday: Some(pd_gettimeofday),
        epoll_create: Some(pd_epoll_create),
        epoll_ctl: Some(pd_epoll_ctl),
        epoll_wait: Some(pd_epoll_wait),
        pipe: Some(pd_pipe),
        splice: Some(pd_splice),
    };
    // SAFETY: the caller passes a writable interface struct (checked for
    // null above); `write` does not read or drop what was there.
    unsafe { ifc.write(table) };
}

/// The session behind `userdata`.
///
/// # Safety
///
/// `ud` is the `userdata` `packetdrill_interface_init` set, not yet freed.
unsafe fn session<'a>(ud: *mut c_void) -> &'a Session {
    // SAFETY: by the caller's contract `ud` is the live boxed session;
    // it is shared (`&`), and the session locks itself for packetdrill's
    // two threads.
    unsafe { &*ud.cast::<Session>() }
}

fn set_errno(e: Errno) {
    // SAFETY: `__errno_location` returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() = e.0 };
}

fn int_result(r: Result<i32, Errno>) -> c_int {
    r.unwrap_or_else(|e| {
        set_errno(e);
        -1
    })
}

fn size_result(r: Result<usize, Errno>) -> ssize_t {
    match r {
        Ok(n) => ssize_t::try_from(n).unwrap_or(ssize_t::MAX),
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

/// `len` bytes at `p` (empty for `len == 0` whatever `p`).
///
/// # Safety
///
/// Unless null, `p` points to `len` readable bytes that live and stay
/// unchanged for `'a`.
unsafe fn bytes<'a>(p: *const c_void, len: usize) -> Result<&'a [u8], Errno> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Errno::FAULT);
    }
    // SAFETY: non-null, and by the caller's contract `len` readable bytes.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// `len` writable bytes at `p`.
///
/// # Safety
///
/// Unless null, `p` points to `len` writable bytes not otherwise accessed
/// for `'a`.
unsafe fn bytes_mut<'a>(p: *mut c_void, len: usize) -> Result<&'a mut [u8], Errno> {
    if len == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Errno::FAULT);
    }
    // SAFETY: non-null, and by the caller's contract `len` writable bytes.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// An IPv4 `sockaddr_in` from C.
///
/// # Safety
///
/// Unless null, `addr` points to `len` readable bytes.
unsafe fn sockaddr_v4(addr: *const sockaddr, len: socklen_t) -> Result<SocketAddrV4, Errno> {
    // SAFETY: by the caller's contract.
    let raw = unsafe { bytes(addr.cast(), len as usize) }?;
    let family = raw.get(..2).ok_or(Errno::INVAL)?;
    let family = libc::sa_family_t::from_ne_bytes([family[0], family[1]]);
    if i32::from(family) != libc::AF_INET {
        return Err(Errno::AFNOSUPPORT);
    }
    if raw.len() < std::mem::size_of::<sockaddr_in>() {
        return Err(Errno::INVAL);
    }
    // sockaddr_in: family (2), port (2, network order), address (4).
    let port = u16::from_be_bytes([raw[2], raw[3]]);
    let ip = Ipv4Addr::new(raw[4], raw[5], raw[6], raw[7]);
    Ok(SocketAddrV4::new(ip, port))
}

/// Writes `a` as a `sockaddr_in` to `addr` (truncated to `*len`, as
/// POSIX says) and its full length to `*len`; nothing if `addr` is null.
///
/// # Safety
///
/// Unless null, `len` points to a writable `socklen_t` holding the room
/// at `addr`, which is writable for that many bytes.
unsafe fn put_sockaddr(addr: *mut sockaddr, len: *mut socklen_t, a: SocketAddrV4) {
    if addr.is_null() || len.is_null() {
        return;
    }
    let mut sin = [0u8; std::mem::size_of::<sockaddr_in>()];
    sin[..2].copy_from_slice(&(libc::AF_INET as libc::sa_family_t).to_ne_bytes());
    sin[2..4].copy_from_slice(&a.port().to_be_bytes());
    sin[4..8].copy_from_slice(&a.ip().octets());
    // SAFETY: `len` is non-null and writable by the caller's contract.
    let room = unsafe { *len } as usize;
    let n = room.min(sin.len());
    // SAFETY: `addr` has `room` ≥ `n` writable bytes; the source is ours.
    unsafe { std::ptr::copy_nonoverlapping(sin.as_ptr(), addr.cast::<u8>(), n) };
    // SAFETY: as above.
    unsafe { *len = sin.len() as socklen_t };
}

/// The buffers of an `iovec` array.
///
/// # Safety
///
/// Unless null, `iov` points to `count` `iovec`s, each describing memory
/// valid for its length for `'a`.
unsafe fn iovecs<'a>(iov: *const iovec, count: c_int) -> Result<&'a [iovec], Errno> {
    let count = usize::try_from(count).map_err(|_| Errno::INVAL)?;
    if count > libc::UIO_MAXIOV as usize {
        return Err(Errno::INVAL);
    }
    if count == 0 {
        return Ok(&[]);
    }
    if iov.is_null() {
        return Err(Errno::FAULT);
    }
    // SAFETY: non-null, `count` entries by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(iov, count) })
}

/// Receives into the buffers of `iov` in turn (one receive, scattered).
///
/// # Safety
///
/// As [`iovecs`], the buffers writable.
unsafe fn recv_iov(s: &Session, fd: c_int, iov: &[iovec], flags: c_int) -> Result<usize, Errno> {
    let total: usize = iov.iter().map(|v| v.iov_len).sum();
    let mut buf = vec![0u8; total.min(16 << 20)];
    let n = s.recv(fd, &mut buf, flags)?;
    let mut at = 0;
    for v in iov {
        if at == n {
            break;
        }
        let k = v.iov_len.min(n - at);
        // SAFETY: each iovec is writable for its length (contract).
        let dst = unsafe { bytes_mut(v.iov_base, k) }?;
        dst.copy_from_slice(&buf[at..at + k]);
        at += k;
    }
    Ok(n)
}

/// Sends the buffers of `iov`, gathered, as one write.
///
/// # Safety
///
/// As [`iovecs`].
unsafe fn send_iov(s: &Session, fd: c_int, iov: &[iovec], flags: c_int) -> Result<usize, Errno> {
    let mut buf = Vec::new();
    for v in iov {
        // SAFETY: each iovec is readable for its length (contract).
        buf.extend_from_slice(unsafe { bytes(v.iov_base, v.iov_len) }?);
    }
    s.send(fd, &buf, flags)
}

unsafe extern "C" fn pd_free(ud: *mut c_void) {
    if !ud.is_null() {
        // SAFETY: `ud` is the box `packetdrill_interface_init` leaked;
        // packetdrill frees it once, after its last call.
        drop(unsafe { Box::from_raw(ud.cast::<Session>()) });
    }
}

unsafe extern "C" fn pd_socket(ud: *mut c_void, domain: c_int, ty: c_int, proto: c_int) -> c_int {
    // SAFETY: `ud` is the session (packetdrill passes its userdata back).
    int_result(unsafe { session(ud) }.socket(domain, ty, proto))
}

unsafe extern "C" fn pd_bind(
    ud: *mut c_void,
    fd: c_int,
    a: *const sockaddr,
    len: socklen_t,
) -> c_int {
    // SAFETY: `ud` is the session; `a` has `len` bytes (bind's contract).
    let r = unsafe { sockaddr_v4(a, len) }.and_then(|a| unsafe { session(ud) }.bind(fd, a));
    int_result(r.map(|()| 0))
}

unsafe extern "C" fn pd_listen(ud: *mut c_void, fd: c_int, backlog: c_int) -> c_int {
    // SAFETY: `ud` is the session.
    int_result(unsafe { session(ud) }.listen(fd, backlog).map(|()| 0))
}

unsafe extern "C" fn pd_accept(
    ud: *mut c_void,
    fd: c_int,
    a: *mut sockaddr,
    len: *mut socklen_t,
) -> c_int {
    // SAFETY: `ud` is the session.
    let r = unsafe { session(ud) }.accept(fd).map(|(new, peer)| {
        // SAFETY: `a`/`len` as accept's contract (null or room for `*len`).
        unsafe { put_sockaddr(a, len, peer) };
        new
    });
    int_result(r)
}

unsafe extern "C" fn pd_connect(
    ud: *mut c_void,
    fd: c_int,
    a: *const sockaddr,
    len: socklen_t,
) -> c_int {
    // SAFETY: `ud` is the session; `a` has `len` bytes.
    let r = unsafe { sockaddr_v4(a, len) }.and_then(|a| unsafe { session(ud) }.connect(fd, a));
    int_result(r.map(|()| 0))
}

unsafe extern "C" fn pd_read(ud: *mut c_void, fd: c_int, buf: *mut c_void, n: size_t) -> ssize_t {
    pd_recv(ud, fd, buf, n, 0)
}

unsafe extern "C" fn pd_recv(
    ud: *mut c_void,
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
) -> ssize_t {
    // SAFETY: `buf` has `n` writable bytes (recv's contract); `ud` the session.
    let r = unsafe { bytes_mut(buf, n) }.and_then(|b| unsafe { session(ud) }.recv(fd, b, flags));
    size_result(r)
}

unsafe extern "C" fn pd_recvfrom(
    ud: *mut c_void,
    fd: c_int,
    buf: *mut c_void,
    n: size_t,
    flags: c_int,
    from: *mut sockaddr,
    fromlen: *mut socklen_t,
) -> ssize_t {
    // SAFETY: as `pd_recv`.
    let r = unsafe { bytes_mut(buf, n) }.and_then(|b| unsafe { session(ud) }.recv(fd, b, flags));
    if r.is_ok() && !fromlen.is_null() {
        // A connected TCP socket leaves the address alone (Linux sets
        // `*fromlen` to 0 for stream sockets).
        // SAFETY: `fromlen` is non-null and writable (recvfrom's contract).
        unsafe { *fromlen = 0 };
    }
    let _ = from;
    size_result(r)
}

unsafe extern "C" fn pd_readv(
    ud: *mut c_void,
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
) -> ssize_t {
    // SAFETY: `iov` has `cnt` entries of writable memory (readv's
    // contract); `ud` the session.
    let r = unsafe { iovecs(iov, cnt) }.and_then(|v| unsafe { recv_iov(session(ud), fd, v, 0) });
    size_result(r)
}

unsafe extern "C" fn pd_recvmsg(
    ud: *mut c_void,
    fd: c_int,
    msg: *mut msghdr,
    flags: c_int,
) -> ssize_t {
    if msg.is_null() {
        return size_result(Err(Errno::FAULT));
    }
    // SAFETY: non-null, a writable msghdr (recvmsg's contract).
    let m = unsafe { &mut *msg };
    // `msg_iovlen` is a `size_t` on Linux.
    let r = c_int::try_from(m.msg_iovlen)
        .ok()
        .ok_or(Errno::INVAL)
        // SAFETY: the msghdr's iovecs describe writable memory; `ud` the session.
        .and_then(|n| unsafe { iovecs(m.msg_iov, n) })
        .and_then(|v| unsafe { recv_iov(session(ud), fd, v, flags) });
    if r.is_ok() {
        // No ancillary data and no address for a stream socket.
        m.msg_controllen = 0;
        m.msg_namelen = 0;
        m.msg_flags = 0;
    }
    size_result(r)
}

unsafe extern "C" fn pd_write(
    ud: *mut c_void,
    fd: c_int,
    buf: *const c_void,
    n: size_t,
) -> ssize_t {
    pd_send(ud, fd, buf, n, 0)
}

unsafe extern "C" fn pd_send(
    ud: *mut c_void,
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
) -> ssize_t {
    // SAFETY: `buf` has `n` readable bytes (send's contract); `ud` the session.
    let r = unsafe { bytes(buf, n) }.and_then(|b| unsafe { session(ud) }.send(fd, b, flags));
    size_result(r)
}

unsafe extern "C" fn pd_sendto(
    ud: *mut c_void,
    fd: c_int,
    buf: *const c_void,
    n: size_t,
    flags: c_int,
    to: *const sockaddr,
    tolen: socklen_t,
) -> ssize_t {
    // TCP ignores the address of a connected socket's sendto (Linux's
    // `tcp_sendmsg` never reads `msg_name`); TCP Fast Open's
    // `MSG_FASTOPEN` is refused with the other unknown flags.
    let _ = (to, tolen);
    pd_send(ud, fd, buf, n, flags)
}

unsafe extern "C" fn pd_writev(
    ud: *mut c_void,
    fd: c_int,
    iov: *const iovec,
    cnt: c_int,
) -> ssize_t {
    // SAFETY: `iov` has `cnt` readable entries (writev's contract); `ud` the session.
    let r = unsafe { iovecs(iov, cnt) }.and_then(|v| unsafe { send_iov(session(ud), fd, v, 0) });
    size_result(r)
}

unsafe extern "C" fn pd_sendmsg(
    ud: *mut c_void,
    fd: c_int,
    msg: *const msghdr,
    flags: c_int,
) -> ssize_t {
    if msg.is_null() {
        return size_result(Err(Errno::FAULT));
    }
    // SAFETY: non-null, a readable msghdr (sendmsg's contract).
    let m = unsafe { &*msg };
    if m.msg_controllen != 0 || (!m.msg_name.is_null() && m.msg_namelen != 0) {
        // Ancillary data (timestamping, TFO, zero-copy) is Linux's.
        return size_result(Err(Errno::OPNOTSUPP));
    }
    // `msg_iovlen` is a `size_t` on Linux.
    let r = c_int::try_from(m.msg_iovlen)
        .ok()
        .ok_or(Errno::INVAL)
        // SAFETY: the msghdr's iovecs describe readable memory; `ud` the session.
        .and_then(|n| unsafe { iovecs(m.msg_iov, n) })
        .and_then(|v| unsafe { send_iov(session(ud), fd, v, flags) });
    size_result(r)
}

unsafe extern "C" fn pd_fcntl(ud: *mut c_void, fd: c_int, cmd: c_int, arg: c_long) -> c_int {
    // SAFETY: `ud` is the session. `arg` is read only for F_SETFL/F_SETFD,
    // where packetdrill passes it (see `PacketdrillInterface`).
    int_result(unsafe { session(ud) }.fcntl(fd, cmd, arg))
}

unsafe extern "C" fn pd_ioctl(ud: *mut c_void, fd: c_int, req: c_ulong, arg: *mut c_void) -> c_int {
    // SAFETY: `ud` is the session.
    let s = unsafe { session(ud) };
    let r = match req {
        libc::FIONREAD => s.ioctl_inq(fd).and_then(|n| {
            if arg.is_null() {
                return Err(Errno::FAULT);
            }
            // SAFETY: FIONREAD's argument is a writable int (non-null).
            unsafe { arg.cast::<c_int>().write_unaligned(n) };
            Ok(0)
        }),
        _ => Err(Errno::OPNOTSUPP),
    };
    int_result(r)
}

unsafe extern "C" fn pd_close(ud: *mut c_void, fd: c_int) -> c_int {
    // SAFETY: `ud` is the session.
    int_result(unsafe { session(ud) }.close(fd).map(|()| 0))
}

unsafe extern "C" fn pd_shutdown(ud: *mut c_void, fd: c_int, how: c_int) -> c_int {
    // SAFETY: `ud` is the session.
    int_result(unsafe { session(ud) }.shutdown(fd, how).map(|()| 0))
}

unsafe extern "C" fn pd_getsockopt(
    ud: *mut c_void,
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *mut c_void,
    len: *mut socklen_t,
) -> c_int {
    if len.is_null() {
        return int_result(Err(Errno::FAULT));
    }
    // SAFETY: `len` is non-null and read-write (getsockopt's contract);
    // `val` has `*len` writable bytes; `ud` the session.
    let r = unsafe { bytes_mut(val, *len as usize) }
        .and_then(|out| unsafe { session(ud) }.getsockopt(fd, level, name, out));
    int_result(r.map(|n| {
        // SAFETY: as above.
        unsafe { *len = n as socklen_t };
        0
    }))
}

unsafe extern "C" fn pd_setsockopt(
    ud: *mut c_void,
    fd: c_int,
    level: c_int,
    name: c_int,
    val: *const c_void,
    len: socklen_t,
) -> c_int {
    // SAFETY: `val` has `len` readable bytes (setsockopt's contract); `ud` the session.
    let r = unsafe { bytes(val, len as usize) }
        .and_then(|v| unsafe { session(ud) }.setsockopt(fd, level, name, v));
    int_result(r.map(|()| 0))
}

unsafe extern "C" fn pd_poll(
    ud: *mut c_void,
    fds: *mut pollfd,
    n: nfds_t,
    timeout: c_int,
) -> c_int {
    let n = n as usize;
    if n > crate::fd_table::MAX_FDS {
        return int_result(Err(Errno::INVAL));
    }
    let entries: &mut [pollfd] = if n == 0 {
        &mut []
    } else if fds.is_null() {
        return int_result(Err(Errno::FAULT));
    } else {
        // SAFETY: non-null, `n` writable pollfds (poll's contract).
        unsafe { std::slice::from_raw_parts_mut(fds, n) }
    };
    let mut ours: Vec<PollFd> = entries
        .iter()
        .map(|p| PollFd {
            fd: p.fd,
            events: p.events,
            revents: 0,
        })
        .collect();
    // SAFETY: `ud` is the session.
    let r = unsafe { session(ud) }.poll(&mut ours, timeout);
    for (p, o) in entries.iter_mut().zip(&ours) {
        p.revents = o.revents;
    }
    int_result(r.map(|k| c_int::try_from(k).unwrap_or(c_int::MAX)))
}

unsafe extern "C" fn pd_netdev_send(ud: *mut c_void, buf: *const c_void, n: size_t) -> c_int {
    // SAFETY: packetdrill passes its packet's `n` bytes; `ud` the session.
    let r = unsafe { bytes(buf, n) }.map(|p| unsafe { session(ud) }.netdev_send(p));
    match r {
        Ok(true) => 0,
        Ok(false) => int_result(Err(Errno::AFNOSUPPORT)),
        Err(e) => int_result(Err(e)),
    }
}

unsafe extern "C" fn pd_netdev_receive(
    ud: *mut c_void,
    buf: *mut c_void,
    count: *mut size_t,
    time_usecs: *mut c_longlong,
) -> c_int {
    if count.is_null() || time_usecs.is_null() {
        return int_result(Err(Errno::FAULT));
    }
    // SAFETY: `count` is non-null and read-write: the room at `buf`.
    let room = unsafe { *count };
    // SAFETY: `ud` is the session.
    let p = unsafe { session(ud) }.netdev_receive();
    let n = p.packet.len().min(room);
    // SAFETY: `buf` has `room` ≥ `n` writable bytes (the contract).
    match unsafe { bytes_mut(buf, n) } {
        Ok(dst) => dst.copy_from_slice(&p.packet[..n]),
        Err(e) => return int_result(Err(e)),
    }
    // SAFETY: both non-null and writable (checked above).
    unsafe {
        *count = n;
        *time_usecs = c_longlong::try_from(p.at.as_micros()).unwrap_or(c_longlong::MAX);
    }
    0
}

unsafe extern "C" fn pd_usleep(ud: *mut c_void, usec: useconds_t) -> c_int {
    // SAFETY: `ud` is the session.
    unsafe { session(ud) }.usleep(Duration::from_micros(u64::from(usec)));
    0
}

unsafe extern "C" fn pd_gettimeofday(ud: *mut c_void, tv: *mut timeval, _tz: *mut c_void) -> c_int {
    // SAFETY: `ud` is the session.
    let t = unsafe { session(ud) }.gettimeofday();
    if !tv.is_null() {
        // SAFETY: non-null, a writable timeval (gettimeofday's contract).
        unsafe {
            (*tv).tv_sec = t.as_secs() as libc::time_t;
            (*tv).tv_usec = libc::suseconds_t::from(t.subsec_micros());
        }
    }
    0
}

unsafe extern "C" fn pd_epoll_create(_ud: *mut c_void, _size: c_int) -> c_int {
    int_result(Err(Errno::OPNOTSUPP))
}

unsafe extern "C" fn pd_epoll_ctl(
    _ud: *mut c_void,
    _epfd: c_int,
    _op: c_int,
    _fd: c_int,
    _ev: *mut epoll_event,
) -> c_int {
    int_result(Err(Errno::OPNOTSUPP))
}

unsafe extern "C" fn pd_epoll_wait(
    _ud: *mut c_void,
    _epfd: c_int,
    _ev: *mut epoll_event,
    _max: c_int,
    _timeout: c_int,
) -> c_int {
    int_result(Err(Errno::OPNOTSUPP))
}

unsafe extern "C" fn pd_pipe(_ud: *mut c_void, _fds: *mut c_int) -> c_int {
    int_result(Err(Errno::OPNOTSUPP))
}

unsafe extern "C" fn pd_splice(
    _ud: *mut c_void,
    _fd_in: c_int,
    _off_in: *mut loff_t,
    _fd_out: c_int,
    _off_out: *mut loff_t,
    _len: size_t,
    _flags: c_uint,
) -> ssize_t {
    size_result(Err(Errno::OPNOTSUPP))
}
