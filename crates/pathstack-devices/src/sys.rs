//! The Linux calls that `std` does not wrap: TAP and interface ioctls, epoll
//! and `setns`. This is the only file of the crate with `unsafe` code; every
//! block says why it is sound. Everything here is `pub(crate)` and returns
//! plain `io::Result`s; `tap.rs` adds the context a user needs.
//!
//! Reading and writing frames needs no unsafe code: the TAP fd is a
//! `std::fs::File`, whose `read`/`write` are single `read(2)`/`write(2)` calls.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Longest interface name the kernel accepts (IFNAMSIZ minus the NUL).
pub(crate) const MAX_IFNAME: usize = libc::IFNAMSIZ - 1;

/// An `ifreq` with `name` filled in and the union zeroed.
///
/// The caller has checked `name.len() <= MAX_IFNAME` and that it holds no NUL.
fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: `ifreq` is a plain C struct (a char array and a union of
    // integers, sockaddrs and a pointer); all-zero bytes are a valid value of
    // each of them (the pointer becomes null and is never dereferenced here).
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes().take(MAX_IFNAME)) {
        *dst = src as libc::c_char;
    }
    req
}

/// The name the kernel wrote back into an `ifreq` (it fills in `%d` patterns).
fn ifreq_name(req: &libc::ifreq) -> String {
    let bytes: Vec<u8> = req
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A system call's result: `Ok` unless it returned a negative value, when
/// the error is taken from `errno`.
fn errno_unless_ok(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `ioctl(fd, request, &mut req)`, with the error taken from `errno`.
fn ioctl_ifreq(fd: RawFd, request: libc::c_ulong, req: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: every request passed here (TUNSETIFF, SIOC[GS]IF*) reads and/or
    // writes exactly one `struct ifreq`, and `req` is a valid, exclusively
    // borrowed `ifreq` that outlives the call. `fd` is open (borrowed from an
    // owner in the caller) and a bad fd only yields EBADF.
    let rc = unsafe { libc::ioctl(fd, request as _, req as *mut libc::ifreq) };
    errno_unless_ok(rc)
}

/// Attaches the open `/dev/net/tun` file to the TAP interface `name`
/// (creating it if absent) as an Ethernet TAP without packet-information
/// header. Returns the interface's name as the kernel reports it.
/// With `vnet_hdr`, every frame read or written carries a `virtio_net_hdr`
/// in front (`IFF_VNET_HDR`). With `multi_queue` (`IFF_MULTI_QUEUE`) the
/// file becomes one more queue of the interface.
pub(crate) fn tun_set_iff(
    tun: &File,
    name: &str,
    vnet_hdr: bool,
    multi_queue: bool,
) -> io::Result<String> {
    let mut req = ifreq(name);
    let mut flags = libc::IFF_TAP | libc::IFF_NO_PI;
    if vnet_hdr {
        flags |= libc::IFF_VNET_HDR;
    }
    if multi_queue {
        flags |= libc::IFF_MULTI_QUEUE;
    }
    req.ifr_ifru.ifru_flags = flags as libc::c_short;
    ioctl_ifreq(tun.as_raw_fd(), libc::TUNSETIFF as libc::c_ulong, &mut req)?;
    Ok(ifreq_name(&req))
}

/// The `IFF_*` flags this kernel's TUN driver supports (TUNGETFEATURES).
pub(crate) fn tun_get_features(tun: &File) -> io::Result<libc::c_uint> {
    let mut features: libc::c_uint = 0;
    // SAFETY: TUNGETFEATURES writes one `unsigned int` through the pointer,
    // which points to a live, exclusively borrowed `c_uint`; the fd is open.
    let rc = unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            libc::TUNGETFEATURES as _,
            &mut features as *mut libc::c_uint,
        )
    };
    errno_unless_ok(rc).map(|()| features)
}

/// Sets the size of the `virtio_net_hdr` in front of each frame
/// (TUNSETVNETHDRSZ; 10 or 12).
pub(crate) fn tun_set_vnet_hdr_sz(tun: &File, size: libc::c_int) -> io::Result<()> {
    // SAFETY: TUNSETVNETHDRSZ reads one `int` through the pointer, which
    // points to a live `c_int` for the duration of the call; the fd is open.
    let rc = unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            libc::TUNSETVNETHDRSZ as _,
            &size as *const libc::c_int,
        )
    };
    errno_unless_ok(rc)
}

/// Tells the kernel which offloaded frames this reader takes
/// (TUNSETOFFLOAD with `TUN_F_*` bits): EINVAL when it refuses them.
pub(crate) fn tun_set_offload(tun: &File, flags: libc::c_uint) -> io::Result<()> {
    // SAFETY: TUNSETOFFLOAD takes its argument by value (an unsigned long
    // of TUN_F_* bits), no memory is passed; the fd is open.
    let rc = unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            libc::TUNSETOFFLOAD as _,
            libc::c_ulong::from(flags),
        )
    };
    errno_unless_ok(rc)
}

/// Attaches the classic BPF program `prog` to every queue of the TAP
/// interface `tun` belongs to (TUNATTACHFILTER), replacing the one
/// attached before. The caller keeps `prog` alive for as long as it is
/// attached: the kernel keeps the pointer and reads the program again
/// when another queue attaches to the interface.
pub(crate) fn tun_attach_filter(tun: &File, prog: &[libc::sock_filter]) -> io::Result<()> {
    let len = u16::try_from(prog.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "BPF program too long"))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr().cast_mut(),
    };
    // SAFETY: TUNATTACHFILTER reads one `struct sock_fprog` through the
    // pointer, which points to a live value for the duration of the call;
    // the kernel copies the `len` instructions it points to (it never
    // writes through `filter`), and `prog` holds `len` of them. The fd is
    // open.
    let rc = unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            libc::TUNATTACHFILTER as _,
            &fprog as *const libc::sock_fprog,
        )
    };
    errno_unless_ok(rc)
}

/// Removes the socket filter from every queue of the TAP interface
/// (TUNDETACHFILTER); a TAP without one is left as it is.
pub(crate) fn tun_detach_filter(tun: &File) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: 0,
        filter: std::ptr::null_mut(),
    };
    // SAFETY: TUNDETACHFILTER takes a `struct sock_fprog` pointer by its
    // request code but does not read it; it points to a live value
    // anyway. The fd is open.
    let rc = unsafe {
        libc::ioctl(
            tun.as_raw_fd(),
            libc::TUNDETACHFILTER as _,
            &fprog as *const libc::sock_fprog,
        )
    };
    errno_unless_ok(rc)
}

/// A datagram socket to run interface ioctls on. It belongs to the network
/// namespace of the thread that made it, for as long as it lives.
pub(crate) fn control_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2) call with constant arguments; no memory is passed.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2), is open and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The interface's MTU (SIOCGIFMTU).
pub(crate) fn get_mtu(ctl: &OwnedFd, name: &str) -> io::Result<u32> {
    let mut req = ifreq(name);
    ioctl_ifreq(ctl.as_raw_fd(), libc::SIOCGIFMTU, &mut req)?;
    // SAFETY: SIOCGIFMTU succeeded, so the kernel wrote the `ifru_mtu` member.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    u32::try_from(mtu).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "negative MTU"))
}

/// Sets the interface's MTU (SIOCSIFMTU).
pub(crate) fn set_mtu(ctl: &OwnedFd, name: &str, mtu: u32) -> io::Result<()> {
    let mut req = ifreq(name);
    req.ifr_ifru.ifru_mtu = i32::try_from(mtu)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "MTU too large"))?;
    ioctl_ifreq(ctl.as_raw_fd(), libc::SIOCSIFMTU, &mut req)
}

/// The interface's (kernel-side) hardware address (SIOCGIFHWADDR).
pub(crate) fn get_hwaddr(ctl: &OwnedFd, name: &str) -> io::Result<[u8; 6]> {
    let mut req = ifreq(name);
    ioctl_ifreq(ctl.as_raw_fd(), libc::SIOCGIFHWADDR, &mut req)?;
    // SAFETY: SIOCGIFHWADDR succeeded, so the kernel wrote `ifru_hwaddr`.
    let sa = unsafe { req.ifr_ifru.ifru_hwaddr };
    let mut mac = [0u8; 6];
    for (dst, src) in mac.iter_mut().zip(sa.sa_data.iter()) {
        *dst = *src as u8;
    }
    Ok(mac)
}

/// Sets IFF_UP on the interface (SIOCGIFFLAGS, then SIOCSIFFLAGS).
pub(crate) fn set_up(ctl: &OwnedFd, name: &str) -> io::Result<()> {
    let mut req = ifreq(name);
    ioctl_ifreq(ctl.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req)?;
    // SAFETY: SIOCGIFFLAGS succeeded, so the kernel wrote `ifru_flags`.
    let flags = unsafe { req.ifr_ifru.ifru_flags };
    if flags & libc::IFF_UP as libc::c_short != 0 {
        return Ok(());
    }
    req.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
    ioctl_ifreq(ctl.as_raw_fd(), libc::SIOCSIFFLAGS, &mut req)
}

/// Moves the calling thread into the network namespace referred to by `ns`
/// (an open `/run/netns/NAME`). Other threads are not affected.
pub(crate) fn enter_netns(ns: &File) -> io::Result<()> {
    // SAFETY: setns(2) takes an fd and a flag; `ns` is open for the duration
    // of the call. Changing the network namespace of one thread is allowed in
    // multithreaded processes (only user namespaces require a single thread).
    let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    errno_unless_ok(rc)
}

/// An epoll instance watching one fd for input, level-triggered.
#[derive(Debug)]
pub(crate) struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// An epoll instance with `watched` registered for EPOLLIN.
    pub(crate) fn watching(watched: RawFd) -> io::Result<Epoll> {
        // SAFETY: plain epoll_create1(2) call; no memory is passed.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` was just returned by epoll_create1, is open and unowned.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: watched as u64,
        };
        // SAFETY: `ev` is a valid epoll_event that the kernel only reads during
        // the call; both fds are open.
        let rc = unsafe { libc::epoll_ctl(fd.as_raw_fd(), libc::EPOLL_CTL_ADD, watched, &mut ev) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll { fd })
    }

    /// Waits up to `timeout_ms` milliseconds (-1: forever, 0: just look) for
    /// the watched fd to become readable. `Ok(false)` on timeout; EINTR is
    /// returned as an error of kind `Interrupted` for the caller to retry.
    pub(crate) fn wait(&self, timeout_ms: libc::c_int) -> io::Result<bool> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: we pass room for exactly one event (`maxevents` = 1) in
        // `ev`, which is valid and exclusively borrowed for the call.
        let n = unsafe { libc::epoll_wait(self.fd.as_raw_fd(), &mut ev, 1, timeout_ms) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n > 0)
        }
    }
}

/// Registers a TAP device with the current tokio reactor (readable interest).
///
/// # Panics
///
/// Outside a tokio runtime with I/O enabled (as tokio's `AsyncFd` does).
// Why this file names `TapDevice` (the one import from here back into the
// devices, a circle with `tap/`): the registration is unsafe only because
// of what it assumes about the device's descriptor, and keeping every
// `unsafe` of the crate in this one file, next to the facts it relies on,
// is worth more to an auditor than the circle costs.
#[cfg(feature = "tokio")]
pub(crate) fn register_async(
    tap: crate::tap::TapDevice,
) -> io::Result<tokio::io::unix::AsyncFd<crate::tap::TapDevice>> {
    // SAFETY: tokio requires that the fd stays open and the same for as long
    // as the AsyncFd owns the object. `TapDevice::as_raw_fd` returns the fd
    // of its private `file` field, which is set once in `TapDevice::open`,
    // never reassigned, and closed only when the device is dropped. The one
    // way to swap the object inside the AsyncFd would be a `&mut TapDevice`
    // from `AsyncFd::get_mut`, and `AsyncTap` hands none out.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(tap, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}

/// Registers an owned descriptor (e.g. a duplicate of a TAP device's, taken
/// before the device went into a stack) with tokio's reactor for
/// readability.
///
/// # Panics
///
/// Outside a tokio runtime with I/O enabled (as tokio's `AsyncFd` does).
#[cfg(feature = "tokio")]
pub fn register_readable(
    fd: std::os::fd::OwnedFd,
) -> io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    // SAFETY: tokio requires that the fd stays open and the same while the
    // AsyncFd owns the object. The `OwnedFd` is moved in: the AsyncFd holds
    // the only owner of this descriptor number, closes it only when dropped
    // (after deregistering), and an `OwnedFd` cannot be reassigned through
    // the shared references `AsyncFd::get_ref` gives; callers must not
    // swap it through `AsyncFd::get_mut` (the facade never calls it).
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(|e| e.into_parts().1)
}
