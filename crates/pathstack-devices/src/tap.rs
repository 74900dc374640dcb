//! A Linux TAP device: Ethernet frames between the kernel and this process.
//!
//! [`TapDevice`] opens `/dev/net/tun` non-blocking, attaches it to a TAP
//! interface (`IFF_TAP | IFF_NO_PI`, created if absent) and moves frames with
//! one `read(2)` or `write(2)` each, straight into and out of pooled
//! [`Msg`] buffers: nothing is allocated per frame.
//!
//! Two ways to wait for input ([`WaitMode`]): *blocking* sleeps in
//! `epoll_wait(2)` until the fd is readable (cheap on CPU, costs a wake-up);
//! *busy-poll* keeps calling `receive` (burns a core, saves the wake-up —
//! 20–40 µs across CPUs on a 2-vCPU virtual machine); a busy-poll
//! loop should yield between empty polls (see [`WaitMode::BusyPoll`]). The async API
//! is [`crate::AsyncTap`].
//!
//! A TAP interface belongs to one network namespace, and it can only be
//! attached (`TUNSETIFF`) from inside that namespace. [`TapOptions::netns`] does this for the caller: the open runs on a
//! short-lived thread that enters the namespace, so the caller's own threads
//! stay where they are. The fd keeps working from any namespace afterwards.

use crate::sys;
use pathstack_core::device::{Device, DeviceCaps, DeviceError, DeviceStats};
use pathstack_core::{Instant, Msg, MsgPool};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use thiserror::Error;

/// Bytes of an Ethernet II header (no VLAN tag): what a frame adds to the MTU.
pub const ETH_HEADER_LEN: usize = 14;

/// What went wrong opening or waiting on a TAP device.
#[derive(Debug, Error)]
pub enum TapError {
    /// The interface name cannot be given to the kernel.
    #[error("invalid TAP interface name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// `/dev/net/tun` could not be opened.
    #[error("cannot open /dev/net/tun: {source} (is the tun module loaded, and does the process have CAP_NET_ADMIN?)")]
    OpenTun {
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The named network namespace could not be entered.
    #[error("cannot enter network namespace {name:?} (/run/netns/{name}): {source}")]
    Netns {
        /// The namespace name.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// An interface ioctl failed.
    #[error("{op} failed for TAP interface {name:?}: {source}")]
    Ioctl {
        /// The operation, e.g. `TUNSETIFF` or `SIOCGIFMTU`.
        op: &'static str,
        /// The interface.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Waiting for the device to become readable failed.
    #[error("waiting for TAP interface {name:?} to become readable: {source}")]
    Wait {
        /// The interface.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The helper thread that opens a TAP inside a namespace could not run.
    #[error("cannot run the namespace thread opening TAP interface {name:?}: {source}")]
    Thread {
        /// The interface.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl From<TapError> for DeviceError {
    fn from(e: TapError) -> Self {
        let context = e.to_string();
        let source = match e {
            TapError::OpenTun { source }
            | TapError::Netns { source, .. }
            | TapError::Ioctl { source, .. }
            | TapError::Wait { source, .. }
            | TapError::Thread { source, .. } => source,
            TapError::InvalidName { reason, .. } => {
                io::Error::new(io::ErrorKind::InvalidInput, reason)
            }
        };
        DeviceError::Io { context, source }
    }
}

/// How to open a TAP device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapOptions {
    /// Open the interface inside this named network namespace
    /// (`/run/netns/NAME`, as made by `ip netns add`). `None`: the calling
    /// thread's namespace.
    pub netns: Option<String>,
    /// Set the interface MTU to this before use. `None`: keep it.
    pub mtu: Option<u32>,
    /// Set the interface administratively up (IFF_UP) if it is not.
    pub bring_up: bool,
    /// The hardware address the user-space host behind this TAP uses.
    /// `None`: derived from the kernel-side address (see [`TapDevice::mac`]).
    pub mac: Option<[u8; 6]>,
}

impl Default for TapOptions {
    /// The calling thread's namespace, MTU unchanged, brought up, derived MAC.
    fn default() -> Self {
        TapOptions {
            netns: None,
            mtu: None,
            bring_up: true,
            mac: None,
        }
    }
}

impl TapOptions {
    /// The defaults (see [`TapOptions::default`]).
    pub fn new() -> Self {
        Self::default()
    }
    /// Opens the interface inside the named network namespace.
    pub fn netns(mut self, name: impl Into<String>) -> Self {
        self.netns = Some(name.into());
        self
    }
    /// Sets the interface MTU on open.
    pub fn mtu(mut self, mtu: u32) -> Self {
        self.mtu = Some(mtu);
        self
    }
    /// Whether to bring the interface up on open.
    pub fn bring_up(mut self, up: bool) -> Self {
        self.bring_up = up;
        self
    }
    /// The user-space host's hardware address.
    pub fn mac(mut self, mac: [u8; 6]) -> Self {
        self.mac = Some(mac);
        self
    }
}

/// How a caller waits for the next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WaitMode {
    /// Sleep in `epoll_wait` until a frame is there.
    #[default]
    Blocking,
    /// Never sleep: keep calling `receive`, yielding the CPU
    /// (`sched_yield`) between empty polls so that kernel work queued on the
    /// same CPU (ksoftirqd forwarding our frames) still runs.
    BusyPoll,
}

/// An open Linux TAP device (see the [module docs](self)).
#[derive(Debug)]
pub struct TapDevice {
    file: File,
    ctl: OwnedFd,
    epoll: sys::Epoll,
    name: String,
    mtu: usize,
    kernel_mac: [u8; 6],
    mac: [u8; 6],
    /// The kernel's per-CPU input backlog bound (`net.core.netdev_max_backlog`):
    /// the queue a TAP write feeds, reported when a write is refused.
    backlog: usize,
    /// A receive buffer kept across `receive` calls that found nothing, so
    /// busy-polling does not cycle a buffer through the pool on every miss.
    spare: Option<Msg>,
    stats: DeviceStats,
}

/// Waits for input on a TAP device that a stack owns (see
/// [`TapDevice::waiter`]).
#[derive(Debug)]
pub struct TapWaiter {
    /// Keeps the duplicated descriptor (and so the epoll registration) alive.
    _fd: File,
    epoll: sys::Epoll,
    name: String,
}

impl TapWaiter {
    /// Waits until a frame can be read or `timeout` has passed (`None`:
    /// forever); `Ok(true)` when readable. Like
    /// [`TapDevice::wait_readable`]: milliseconds, rounded up.
    pub fn wait_readable(&self, timeout: Option<std::time::Duration>) -> Result<bool, TapError> {
        let ms = match timeout {
            None => -1,
            Some(t) => {
                libc::c_int::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX)
            }
        };
        loop {
            match self.epoll.wait(ms) {
                Ok(ready) => return Ok(ready),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(TapError::Wait {
                        name: self.name.clone(),
                        source,
                    })
                }
            }
        }
    }
}

/// What the namespace thread hands back.
struct Opened {
    file: File,
    ctl: OwnedFd,
    name: String,
    mtu: u32,
    kernel_mac: [u8; 6],
}

fn check_name(name: &str) -> Result<(), TapError> {
    let reason = if name.is_empty() {
        Some("empty")
    } else if name.len() > sys::MAX_IFNAME {
        Some("longer than 15 bytes (IFNAMSIZ)")
    } else if name
        .bytes()
        .any(|b| b == 0 || b == b'/' || b.is_ascii_whitespace())
    {
        Some("contains NUL, '/' or whitespace")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(TapError::InvalidName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Everything that must happen inside the interface's namespace.
fn open_here(name: &str, opts: &TapOptions) -> Result<Opened, TapError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .map_err(|source| TapError::OpenTun { source })?;
    let ioctl_err = |op: &'static str, name: &str| {
        let name = name.to_string();
        move |source| TapError::Ioctl { op, name, source }
    };
    let name = sys::tun_set_iff(&file, name).map_err(ioctl_err("TUNSETIFF", name))?;
    let ctl = sys::control_socket().map_err(ioctl_err("socket(AF_INET)", &name))?;
    if let Some(mtu) = opts.mtu {
        sys::set_mtu(&ctl, &name, mtu).map_err(ioctl_err("SIOCSIFMTU", &name))?;
    }
    if opts.bring_up {
        sys::set_up(&ctl, &name).map_err(ioctl_err("SIOCSIFFLAGS(IFF_UP)", &name))?;
    }
    let mtu = sys::get_mtu(&ctl, &name).map_err(ioctl_err("SIOCGIFMTU", &name))?;
    let kernel_mac = sys::get_hwaddr(&ctl, &name).map_err(ioctl_err("SIOCGIFHWADDR", &name))?;
    Ok(Opened {
        file,
        ctl,
        name,
        mtu,
        kernel_mac,
    })
}

/// Runs [`open_here`] on a thread that first enters namespace `ns`.
fn open_in_netns(ns: &str, name: &str, opts: &TapOptions) -> Result<Opened, TapError> {
    let ns_owned = ns.to_string();
    let name_owned = name.to_string();
    let opts = opts.clone();
    let thread = std::thread::Builder::new()
        .name(format!("netns-{ns}"))
        .spawn(move || {
            let path = format!("/run/netns/{ns_owned}");
            let netns_err = |source| TapError::Netns {
                name: ns_owned.clone(),
                source,
            };
            let handle = File::open(&path).map_err(netns_err)?;
            sys::enter_netns(&handle).map_err(netns_err)?;
            // This thread ends right after, so it never has to go back.
            open_here(&name_owned, &opts)
        })
        .map_err(|source| TapError::Thread {
            name: name.to_string(),
            source,
        })?;
    thread.join().unwrap_or_else(|_| {
        Err(TapError::Thread {
            name: name.to_string(),
            source: io::Error::other("namespace thread panicked"),
        })
    })
}

/// A MAC for the user-space host, distinct from the kernel-side address.
///
/// The kernel's TAP interface is a bridge port, and a bridge delivers frames
/// addressed to a port's own MAC locally instead of forwarding them out of
/// that port; so the host behind the TAP must not reuse the kernel's address.
/// Flipping the low bit of the last byte gives a different, stable address;
/// setting the locally-administered bit and clearing the multicast bit keeps
/// it a valid unicast address of our own (IEEE 802, clause 9.2).
pub fn host_mac_for(kernel_mac: [u8; 6]) -> [u8; 6] {
    let mut mac = kernel_mac;
    mac[0] = (mac[0] | 0x02) & !0x01;
    mac[5] ^= 0x01;
    mac
}

fn read_backlog() -> usize {
    std::fs::read_to_string("/proc/sys/net/core/netdev_max_backlog")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000)
}

impl TapDevice {
    /// Opens the TAP interface `name` (creating it if absent, as a
    /// non-persistent interface that disappears when closed), non-blocking.
    ///
    /// Needs `CAP_NET_ADMIN` (or ownership of a persistent TAP made with
    /// `ip tuntap add ... user`).
    pub fn open(name: &str, opts: TapOptions) -> Result<TapDevice, TapError> {
        check_name(name)?;
        let opened = match &opts.netns {
            Some(ns) => open_in_netns(ns, name, &opts)?,
            None => open_here(name, &opts)?,
        };
        let epoll =
            sys::Epoll::watching(opened.file.as_raw_fd()).map_err(|source| TapError::Wait {
                name: opened.name.clone(),
                source,
            })?;
        Ok(TapDevice {
            mac: opts.mac.unwrap_or(host_mac_for(opened.kernel_mac)),
            file: opened.file,
            ctl: opened.ctl,
            epoll,
            name: opened.name,
            mtu: opened.mtu as usize,
            kernel_mac: opened.kernel_mac,
            backlog: read_backlog(),
            spare: None,
            stats: DeviceStats::default(),
        })
    }

    /// A handle that waits for this device's input after the device itself
    /// has been moved into a stack (which owns its [`Device`]s). It holds a
    /// duplicate of the TAP file descriptor with an epoll set of its own.
    pub fn waiter(&self) -> Result<TapWaiter, TapError> {
        let wait_err = |source| TapError::Wait {
            name: self.name.clone(),
            source,
        };
        let fd = self.file.try_clone().map_err(wait_err)?;
        let epoll = sys::Epoll::watching(fd.as_raw_fd()).map_err(wait_err)?;
        Ok(TapWaiter {
            _fd: fd,
            epoll,
            name: self.name.clone(),
        })
    }

    /// The interface name (as the kernel reports it).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The link MTU in bytes (Ethernet payload, without the 14-byte header),
    /// as read when the device was opened or last [queried](Self::query_mtu).
    pub fn mtu(&self) -> usize {
        self.mtu
    }

    /// Asks the kernel for the current MTU (it may have been changed with
    /// `ip link set mtu`) and remembers it.
    pub fn query_mtu(&mut self) -> Result<usize, TapError> {
        let mtu = sys::get_mtu(&self.ctl, &self.name).map_err(|source| TapError::Ioctl {
            op: "SIOCGIFMTU",
            name: self.name.clone(),
            source,
        })?;
        self.mtu = mtu as usize;
        Ok(self.mtu)
    }

    /// The hardware address of the kernel side of the TAP interface.
    pub fn kernel_mac(&self) -> [u8; 6] {
        self.kernel_mac
    }

    /// The hardware address the user-space host behind the TAP uses (also in
    /// [`Device::caps`]): [`TapOptions::mac`], or [`host_mac_for`] of the
    /// kernel-side address.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Waits until a frame can be read, or `timeout` has passed (`None`:
    /// forever). `Ok(true)`: readable. Sleeps in `epoll_wait(2)` (the timeout
    /// is rounded up to whole milliseconds); signals do not cut it short.
    pub fn wait_readable(&self, timeout: Option<std::time::Duration>) -> Result<bool, TapError> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            let ms = match deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    let ms = left.as_nanos().div_ceil(1_000_000);
                    libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
                }
            };
            match self.epoll.wait(ms) {
                Ok(ready) => return Ok(ready),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(TapError::Wait {
                        name: self.name.clone(),
                        source,
                    })
                }
            }
        }
    }

    /// Waits for input the way `mode` says: [`WaitMode::Blocking`] is
    /// [`wait_readable`](Self::wait_readable); [`WaitMode::BusyPoll`] yields
    /// the CPU once (`sched_yield`) and returns `Ok(true)`, telling the caller
    /// to go and call `receive` again. So `loop { receive; wait(mode) }` is
    /// right for both modes.
    pub fn wait(
        &self,
        mode: WaitMode,
        timeout: Option<std::time::Duration>,
    ) -> Result<bool, TapError> {
        match mode {
            WaitMode::Blocking => self.wait_readable(timeout),
            WaitMode::BusyPoll => {
                std::thread::yield_now();
                Ok(true)
            }
        }
    }

    /// Receives the next frame, waiting for it the way `mode` says for at
    /// most `timeout` (`None`: forever). `Ok(None)` when the time is up.
    pub fn receive_timeout(
        &mut self,
        pool: &MsgPool,
        mode: WaitMode,
        timeout: Option<std::time::Duration>,
    ) -> Result<Option<Msg>, DeviceError> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            if let Some(frame) = self.receive(pool, Instant::now())? {
                return Ok(Some(frame));
            }
            let left = match deadline {
                None => None,
                Some(d) => {
                    let now = std::time::Instant::now();
                    if now >= d {
                        return Ok(None);
                    }
                    Some(d - now)
                }
            };
            match mode {
                WaitMode::Blocking => {
                    if !self.wait_readable(left)? {
                        return Ok(None);
                    }
                }
                // Yield rather than spin: when the kernel defers its network
                // softirq work to ksoftirqd on this CPU (the frames we just
                // wrote are forwarded there), a pure spin holds it off for a
                // whole scheduler slice. Measured on the 2-vCPU VM, floor
                // responder, `ping -i 0.002` from namespace B: pure spin
                // 0.6-3.4 ms mean RTT, yielding 26 us, blocking 45 us.
                WaitMode::BusyPoll => std::thread::yield_now(),
            }
        }
    }

    fn io_error(&mut self, what: &str, source: io::Error) -> DeviceError {
        self.stats.errors += 1;
        DeviceError::Io {
            context: format!("{what} TAP interface {}", self.name),
            source,
        }
    }
}

impl Device for TapDevice {
    /// One `write(2)` of the frame. A refused write (EAGAIN: the kernel had
    /// no buffer) drops the frame, counts it in `dropped_full` and returns
    /// [`DeviceError::QueueFull`]; a frame longer than MTU + 14 is refused
    /// before the system call.
    fn transmit(&mut self, frame: Msg, _now: Instant) -> Result<(), DeviceError> {
        let len = frame.len();
        let max = self.mtu + ETH_HEADER_LEN;
        if len > max {
            self.stats.errors += 1;
            return Err(DeviceError::FrameTooLarge { len, max });
        }
        loop {
            match (&self.file).write(frame.as_slice()) {
                Ok(n) if n == len => {
                    self.stats.tx_frames += 1;
                    self.stats.tx_bytes += len as u64;
                    return Ok(());
                }
                Ok(n) => {
                    // TAP writes are all-or-nothing; a short count means the
                    // kernel did something we do not understand.
                    let e = io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("short write: {n} of {len} bytes"),
                    );
                    return Err(self.io_error("writing to", e));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.stats.dropped_full += 1;
                    return Err(DeviceError::QueueFull {
                        capacity: self.backlog,
                    });
                }
                Err(e) => return Err(self.io_error("writing to", e)),
            }
        }
    }

    /// One `read(2)` into the tail room of a pool buffer with room for
    /// MTU + 14 bytes. `Ok(None)` when no frame is waiting (EAGAIN).
    fn receive(&mut self, pool: &MsgPool, _now: Instant) -> Result<Option<Msg>, DeviceError> {
        let need = self.mtu + ETH_HEADER_LEN;
        let mut msg = match self.spare.take() {
            // The spare is empty; it is only too small if the MTU grew.
            Some(m) if m.tailroom() >= need => m,
            _ => match pool.alloc_empty(need) {
                Ok(m) => m,
                Err(e) => {
                    self.stats.errors += 1;
                    return Err(DeviceError::NoBuffer(e));
                }
            },
        };
        loop {
            match (&self.file).read(msg.tailroom_mut()) {
                Ok(0) => {
                    // A TAP read never returns an empty frame while the
                    // interface exists.
                    self.stats.errors += 1;
                    self.spare = Some(msg);
                    return Err(DeviceError::Disconnected);
                }
                Ok(n) => {
                    // `n` is at most the tail room we offered, so this holds.
                    if let Err(e) = msg.commit_tail(n) {
                        self.stats.errors += 1;
                        return Err(DeviceError::NoBuffer(e));
                    }
                    self.stats.rx_frames += 1;
                    self.stats.rx_bytes += n as u64;
                    return Ok(Some(msg));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.spare = Some(msg);
                    return Ok(None);
                }
                Err(e) => {
                    self.spare = Some(msg);
                    return Err(self.io_error("reading from", e));
                }
            }
        }
    }

    fn caps(&self) -> DeviceCaps {
        DeviceCaps {
            mtu: self.mtu,
            link_header: ETH_HEADER_LEN,
            mac: Some(self.mac),
        }
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }
}

impl AsRawFd for TapDevice {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl AsFd for TapDevice {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_before_any_system_call() {
        for bad in ["", "a-name-longer-than-15", "a/b", "a b", "nul\0"] {
            let err = TapDevice::open(bad, TapOptions::new()).unwrap_err();
            assert!(
                matches!(err, TapError::InvalidName { .. }),
                "{bad:?}: {err}"
            );
        }
        assert!(
            check_name("pstap-012345678").is_ok(),
            "15 bytes is the limit"
        );
    }

    #[test]
    fn host_mac_differs_from_kernel_mac_and_is_local_unicast() {
        for kmac in [
            [0u8; 6],
            [0xff; 6],
            [0x02, 0, 0, 0, 0, 1],
            [0x5a, 1, 2, 3, 4, 5],
        ] {
            let mac = host_mac_for(kmac);
            assert_ne!(mac, kmac);
            assert_eq!(mac[0] & 0x01, 0, "unicast");
            assert_eq!(mac[0] & 0x02, 0x02, "locally administered");
        }
    }

    #[test]
    fn missing_namespace_is_a_clear_error() {
        let err = TapDevice::open(
            "pstest0",
            TapOptions::new().netns("pathstack-no-such-namespace"),
        )
        .unwrap_err();
        assert!(matches!(err, TapError::Netns { .. }), "{err}");
        assert!(err.to_string().contains("pathstack-no-such-namespace"));
    }

    #[test]
    fn tap_error_converts_to_device_error_with_context() {
        let e: DeviceError = TapError::Wait {
            name: "tap0".into(),
            source: io::Error::from(io::ErrorKind::InvalidInput),
        }
        .into();
        assert!(e.to_string().contains("tap0"), "{e}");
    }
}
