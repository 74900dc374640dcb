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
//! **Offloads** ([`TapOptions::offload`], off by default): the TAP is
//! opened with `IFF_VNET_HDR`, so every frame read or written has a
//! `virtio_net_hdr` ([`crate::vnet_hdr`]) in front, and the kernel is asked
//! (`TUNSETOFFLOAD`) to hand us frames with partial checksums
//! (`TUN_F_CSUM`) and merged TCP/IPv4 super-segments of up to 64 KB
//! (`TUN_F_TSO4`) instead of checksumming and segmenting them itself. In
//! the other direction we may write such frames, and the kernel finishes
//! them. What the kernel accepted is [`TapDevice::offloads`], also in
//! [`Device::caps`] (`DeviceCaps::offload`), from which a host enables TSO
//! and checksum offload in its TCP. Whatever the kernel refuses is simply
//! not used: no header when the TUN driver lacks `IFF_VNET_HDR`, a
//! 10-byte header when it refuses the 12-byte one, no TSO when it refuses
//! `TUN_F_TSO4`, nothing when it refuses `TUN_F_CSUM`.
//!
//! A received frame that fits the MTU is copied out of the large read
//! buffer into a frame-sized pool buffer (one copy of at most ~1.5 KB, far
//! cheaper than the system call), so the large buffer stays as the spare
//! for the next read and only merged super-segments keep one of the
//! pool's few large buffers; nothing is allocated per frame either way.
//!
//! **Multi-queue** ([`TapOptions::multi_queue`]): each open of the same
//! interface with `IFF_MULTI_QUEUE` is one more queue, a [`TapDevice`] of
//! its own, so one stack per core can each own a queue; the kernel keeps a
//! flow on the queue that last wrote a frame of it, and spreads the rest
//! by flow hash.
//!
//! A TAP interface belongs to one network namespace, and it can only be
//! attached (`TUNSETIFF`) from inside that namespace. [`TapOptions::netns`] does this for the caller: the open runs on a
//! short-lived thread that enters the namespace, so the caller's own threads
//! stay where they are. The fd keeps working from any namespace afterwards.

use crate::discard_filter::discard_program;
use crate::sys;
use crate::vnet_hdr::{self, VnetHeader, VnetRepr};
use pathstack_core::device::{
    Device, DeviceCaps, DeviceError, DeviceStats, FrameMatch, OffloadCaps,
};
use pathstack_core::{Instant, Msg, MsgPool};
use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// Bytes of an Ethernet II header (no VLAN tag): what a frame adds to the MTU.
pub const ETH_HEADER_LEN: usize = 14;

/// The largest IPv4 datagram (the total length field's limit): the most a
/// TSO/GRO super-segment may hold.
const IPV4_MAX: usize = 65_535;

/// The longest frame with offloads: a 64 KB datagram and its Ethernet header.
const GSO_FRAME_MAX: usize = IPV4_MAX + ETH_HEADER_LEN;

/// The IPv4 EtherType.
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];

pub use crate::tap_error::TapError;

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
    /// Negotiate offloads (see the [module docs](self)); off by default.
    pub offload: bool,
    /// Open one queue of a multi-queue interface (`IFF_MULTI_QUEUE`; see
    /// [`TapOptions::multi_queue`]); off by default.
    pub multi_queue: bool,
}

impl Default for TapOptions {
    /// The calling thread's namespace, MTU unchanged, brought up, derived MAC.
    fn default() -> Self {
        TapOptions {
            netns: None,
            mtu: None,
            bring_up: true,
            mac: None,
            offload: false,
            multi_queue: false,
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
    /// Whether to negotiate offloads (`IFF_VNET_HDR`, `TUNSETOFFLOAD`):
    /// partial checksums and 64 KB TCP super-segments both ways, as far as
    /// the kernel accepts them ([`TapDevice::offloads`]).
    ///
    /// ```
    /// use pathstack_devices::TapOptions;
    /// assert!(!TapOptions::new().offload);
    /// assert!(TapOptions::new().offload(true).offload);
    /// ```
    pub fn offload(mut self, on: bool) -> Self {
        self.offload = on;
        self
    }
    /// Whether to open the interface as a multi-queue TAP
    /// (`IFF_MULTI_QUEUE`). Every [`TapDevice::open`] of the same name with
    /// this set attaches one more queue (the kernel allows up to 256), each
    /// its own [`TapDevice`] with its own file descriptor, so one stack per
    /// core can each own a queue. The kernel spreads frames for user space
    /// over the queues by flow: a flow goes to the queue that last wrote a
    /// frame of it, else by the frame's flow hash (`tun_select_queue`).
    /// Frames of no flow the queue's stack wrote (an ARP reply, say) may
    /// land on any queue.
    ///
    /// All opens of one interface must agree on this: the kernel refuses
    /// to attach a queue with it to an interface opened without it, and
    /// the other way round (`TUNSETIFF` fails with `EINVAL`). They should
    /// agree on [`offload`](Self::offload) too: the virtio-net header is
    /// a setting of the interface, not of a queue, so the last open
    /// decides it for every queue. A kernel without multi-queue support
    /// gives [`TapError::NoMultiQueue`].
    ///
    /// ```
    /// use pathstack_devices::TapOptions;
    /// assert!(!TapOptions::new().multi_queue);
    /// assert!(TapOptions::new().multi_queue(true).multi_queue);
    /// ```
    pub fn multi_queue(mut self, on: bool) -> Self {
        self.multi_queue = on;
        self
    }
}

/// The offloads a [`TapDevice`] negotiated with the kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapOffloads {
    /// Bytes of `virtio_net_hdr` in front of every frame: 12 or 10, 0 when
    /// the TAP was opened without `IFF_VNET_HDR` (offloads off or not
    /// supported).
    pub vnet_hdr_len: usize,
    /// The kernel accepted `TUN_F_CSUM`: it hands us frames with partial
    /// checksums (flagged `NEEDS_CSUM`) and completes ours.
    pub csum: bool,
    /// The kernel accepted `TUN_F_TSO4`: it hands us merged TCP/IPv4
    /// super-segments and segments ours.
    pub tso4: bool,
}

impl TapOffloads {
    /// The device capabilities these amount to.
    ///
    /// Writing partial checksums and GSO frames needs only the header (the
    /// kernel takes them from any `IFF_VNET_HDR` writer), but we offer them
    /// only when the kernel accepted the matching receive offload too: a
    /// kernel that refuses `TUN_F_CSUM` is one we do not trust to finish
    /// our checksums either.
    pub fn caps(&self) -> OffloadCaps {
        let csum = self.vnet_hdr_len != 0 && self.csum;
        let tso = csum && self.tso4;
        OffloadCaps {
            tx_checksum: csum,
            rx_checksum: csum,
            tso4_max: if tso { IPV4_MAX } else { 0 },
            rx_gro: tso,
        }
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
    /// With offloads it is a large buffer (a 64 KB super-segment fits).
    spare: Option<Msg>,
    offloads: TapOffloads,
    stats: DeviceStats,
    /// The socket filter attached at the stack's request ([`Device::discard`]).
    discard: AttachedFilter,
}

/// A classic BPF program attached to the TAP (TUNATTACHFILTER), kept
/// alive while attached: the kernel keeps a pointer to it and reads it
/// again when another queue attaches to the interface.
#[derive(Default)]
struct AttachedFilter(Vec<libc::sock_filter>);

impl std::fmt::Debug for AttachedFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AttachedFilter({} instructions)", self.0.len())
    }
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
    offloads: TapOffloads,
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
    let features = sys::tun_get_features(&file);
    if opts.multi_queue {
        // Unlike offloads, multi-queue cannot be quietly left out: the
        // caller means to open several queues of one interface, and without
        // the flag the second open would fail (EBUSY) anyway.
        let features = features.as_ref().map_err(|e| TapError::Ioctl {
            op: "TUNGETFEATURES",
            name: name.to_string(),
            source: io::Error::new(e.kind(), e.to_string()),
        })?;
        if features & libc::IFF_MULTI_QUEUE as libc::c_uint == 0 {
            return Err(TapError::NoMultiQueue {
                name: name.to_string(),
            });
        }
    }
    // Offloads need the header; a kernel whose TUN driver cannot do it
    // (TUNGETFEATURES without IFF_VNET_HDR) gets a plain TAP.
    let vnet = opts.offload
        && features
            .as_ref()
            .is_ok_and(|f| f & libc::IFF_VNET_HDR as libc::c_uint != 0);
    let name = sys::tun_set_iff(&file, name, vnet, opts.multi_queue)
        .map_err(ioctl_err("TUNSETIFF", name))?;
    let offloads = if vnet {
        negotiate(&file)
    } else {
        // A persistent TAP keeps the offloads its last reader accepted;
        // without the header to describe them, the kernel would hand us
        // super-segments and partial checksums we could not recognise.
        // Refused only by kernels without TUNSETOFFLOAD, which then have
        // nothing to reset.
        let _ = sys::tun_set_offload(&file, 0);
        TapOffloads::default()
    };
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
        offloads,
    })
}

/// Asks the kernel for the 12-byte header (10 if refused), then for
/// checksum and TSO4 offload, checksum alone, or nothing, taking what it
/// accepts (see [`TapOffloads`]).
fn negotiate(file: &File) -> TapOffloads {
    let vnet_hdr_len = if sys::tun_set_vnet_hdr_sz(file, vnet_hdr::LEN_MRG as libc::c_int).is_ok() {
        vnet_hdr::LEN_MRG
    } else {
        // The kernel's default size.
        vnet_hdr::LEN_LEGACY
    };
    let (csum, tso4) = if sys::tun_set_offload(file, libc::TUN_F_CSUM | libc::TUN_F_TSO4).is_ok() {
        (true, true)
    } else if sys::tun_set_offload(file, libc::TUN_F_CSUM).is_ok() {
        (true, false)
    } else {
        (false, false)
    };
    TapOffloads {
        vnet_hdr_len,
        csum,
        tso4,
    }
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
            offloads: opened.offloads,
            stats: DeviceStats::default(),
            discard: AttachedFilter::default(),
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

    /// The offloads negotiated when the device was opened (all off unless
    /// [`TapOptions::offload`] asked for them).
    pub fn offloads(&self) -> TapOffloads {
        self.offloads
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
        // The interface was deleted under us (`ip link del`): the TUN
        // driver detaches the file, and every read and write fails with
        // EBADFD from then on (ENODEV/ENXIO on older kernels). No frame
        // will pass again: a failure, not a dropped frame.
        if matches!(
            source.raw_os_error(),
            Some(libc::EBADFD | libc::ENODEV | libc::ENXIO)
        ) {
            return DeviceError::Gone(format!(
                "TAP interface {} was deleted ({what} it: {source})",
                self.name
            ));
        }
        DeviceError::Io {
            context: format!("{what} TAP interface {}", self.name),
            source,
        }
    }
}

impl TapDevice {
    /// The `virtio_net_hdr` for `frame`: what its offload annotation asks
    /// for, with `csum_start` found from the frame's own headers
    /// (Ethernet, then the IPv4 header length) so that the stages above
    /// need not know what the layers below them push.
    fn tx_vnet_repr(&self, frame: &Msg) -> Result<VnetRepr, &'static str> {
        let o = frame.anno().offload();
        if o.tx_csum_offset == 0 && o.tx_gso_size == 0 {
            return Ok(VnetRepr::default());
        }
        let b = frame.as_slice();
        if b.get(12..14) != Some(&ETHERTYPE_IPV4[..]) {
            return Err("offload asked for a frame that is not IPv4");
        }
        let ihl = usize::from(b.get(ETH_HEADER_LEN).ok_or("truncated IPv4 header")? & 0x0f) * 4;
        let start = ETH_HEADER_LEN + ihl;
        if ihl < 20 || start + usize::from(o.tx_csum_offset) + 2 > b.len() {
            return Err("checksum offload outside the frame");
        }
        // Only the offsets matter to the kernel; the casts hold because the
        // frame is at most GSO_FRAME_MAX bytes (checked by the caller).
        let needs_csum =
            (o.tx_csum_offset != 0).then_some((start as u16, u16::from(o.tx_csum_offset)));
        let gso_tcpv4 = if o.tx_gso_size != 0 {
            if needs_csum.is_none() {
                // The kernel refuses a TCP GSO frame without a partial
                // checksum (it must redo the checksum of every segment).
                return Err("segmentation offload without checksum offload");
            }
            let data_off = b.get(start + 12).ok_or("truncated TCP header")?;
            let hdr_len = start + usize::from(data_off >> 4) * 4;
            if hdr_len > b.len() {
                return Err("truncated TCP header");
            }
            Some((o.tx_gso_size, hdr_len as u16))
        } else {
            None
        };
        Ok(VnetRepr {
            needs_csum,
            data_valid: false,
            gso_tcpv4,
            ecn: false,
        })
    }

    /// One `write(2)` (or `writev(2)` of header and frame) of `len` frame
    /// bytes.
    fn write_frame(&mut self, bufs: &[IoSlice<'_>], len: usize) -> Result<(), DeviceError> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        loop {
            let r = if bufs.len() == 1 {
                (&self.file).write(&bufs[0])
            } else {
                (&self.file).write_vectored(bufs)
            };
            match r {
                Ok(n) if n == total => {
                    self.stats.tx_frames += 1;
                    self.stats.tx_bytes += len as u64;
                    return Ok(());
                }
                Ok(n) => {
                    // TAP writes are all-or-nothing; a short count means the
                    // kernel did something we do not understand.
                    let e = io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("short write: {n} of {total} bytes"),
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

    /// A receive buffer with room for `need` bytes: the spare, or a new one.
    fn rx_buffer(&mut self, pool: &MsgPool, need: usize) -> Result<Msg, DeviceError> {
        match self.spare.take() {
            // The spare is empty; it is only too small if the MTU grew.
            Some(m) if m.tailroom() >= need => Ok(m),
            _ => pool.alloc_empty(need).map_err(|e| {
                self.stats.errors += 1;
                DeviceError::NoBuffer(e)
            }),
        }
    }

    /// One `read(2)` into `msg`'s tail room: `Ok(Some(n))` for `n` bytes,
    /// `Ok(None)` when nothing is waiting. The buffer goes back to the
    /// spare unless bytes were read.
    fn read_into(&mut self, msg: &mut Msg) -> Result<Option<usize>, DeviceError> {
        loop {
            match (&self.file).read(msg.tailroom_mut()) {
                Ok(0) => {
                    // A TAP read never returns an empty frame while the
                    // interface exists.
                    self.stats.errors += 1;
                    return Err(DeviceError::Gone(format!(
                        "TAP interface {} returned an empty read",
                        self.name
                    )));
                }
                Ok(n) => {
                    // `n` is at most the tail room we offered, so this holds.
                    if let Err(e) = msg.commit_tail(n) {
                        self.stats.errors += 1;
                        return Err(DeviceError::NoBuffer(e));
                    }
                    return Ok(Some(n));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(self.io_error("reading from", e)),
            }
        }
    }

    /// `receive` with a `virtio_net_hdr` in front of each frame.
    fn receive_vnet(&mut self, pool: &MsgPool) -> Result<Option<Msg>, DeviceError> {
        let hl = self.offloads.vnet_hdr_len;
        let mut big = self.rx_buffer(pool, hl + GSO_FRAME_MAX)?;
        let n = match self.read_into(&mut big) {
            Ok(Some(n)) => n,
            other => {
                big.truncate(0);
                self.spare = Some(big);
                return other.map(|_| None);
            }
        };
        let parsed =
            VnetHeader::new_checked(big.as_slice(), hl).and_then(|h| VnetRepr::parse(&h, n - hl));
        let repr = match parsed {
            Ok(r) => r,
            Err(e) => {
                big.truncate(0);
                self.spare = Some(big);
                let e = io::Error::new(io::ErrorKind::InvalidData, e);
                return Err(self.io_error("parsing the virtio-net header from", e));
            }
        };
        let frame_len = n - hl;
        let small = self.mtu + ETH_HEADER_LEN;
        let mut msg = if frame_len <= small && repr.gso_tcpv4.is_none() {
            // Copy the frame out and keep the large buffer for the next read.
            let copied = pool.alloc_empty(small).and_then(|mut m| {
                m.extend_from_slice(&big.as_slice()[hl..])?;
                Ok(m)
            });
            big.truncate(0);
            self.spare = Some(big);
            copied.map_err(|e| {
                self.stats.errors += 1;
                DeviceError::NoBuffer(e)
            })?
        } else {
            if let Err(e) = big.pop(hl) {
                self.stats.errors += 1;
                return Err(DeviceError::NoBuffer(e));
            }
            big
        };
        let mut o = msg.anno().offload();
        // A partial checksum comes from the local kernel (another
        // namespace's TCP, forwarded to us in memory): the data never
        // crossed a wire, so there is nothing to verify, and the field
        // holds only the pseudo-header sum (virtio 1.2 §5.1.6.2.1).
        o.rx_csum_verified = repr.needs_csum.is_some() || repr.data_valid;
        o.rx_gso_size = repr.gso_tcpv4.map_or(0, |(size, _)| size);
        msg.anno_mut().set_offload(o);
        self.stats.rx_frames += 1;
        self.stats.rx_bytes += frame_len as u64;
        Ok(Some(msg))
    }
}

impl Device for TapDevice {
    /// One `write(2)` of the frame; with offloads, one `writev(2)` of the
    /// `virtio_net_hdr` its offload annotation asks for and the frame. A
    /// refused write (EAGAIN: the kernel had no buffer) drops the frame,
    /// counts it in `dropped_full` and returns [`DeviceError::QueueFull`];
    /// a frame longer than MTU + 14 (64 KB + 14 for a TSO super-segment)
    /// is refused before the system call, and so is an offload request
    /// the device cannot carry out.
    fn transmit(&mut self, frame: Msg, _now: Instant) -> Result<(), DeviceError> {
        let len = frame.len();
        let gso = frame.anno().offload().tx_gso_size != 0;
        let max = if gso && self.offloads.caps().tso4_max != 0 {
            GSO_FRAME_MAX
        } else {
            self.mtu + ETH_HEADER_LEN
        };
        if len > max {
            self.stats.errors += 1;
            return Err(DeviceError::FrameTooLarge { len, max });
        }
        let hl = self.offloads.vnet_hdr_len;
        if hl == 0 {
            if frame.anno().offload().wants_offload() {
                let e = io::Error::new(
                    io::ErrorKind::Unsupported,
                    "checksum or segmentation offload asked of a TAP opened without offloads",
                );
                return Err(self.io_error("writing to", e));
            }
            return self.write_frame(&[IoSlice::new(frame.as_slice())], len);
        }
        let repr = match self.tx_vnet_repr(&frame) {
            Ok(r) => r,
            Err(what) => {
                let e = io::Error::new(io::ErrorKind::InvalidInput, what);
                return Err(self.io_error("writing to", e));
            }
        };
        let mut hdr = [0u8; vnet_hdr::LEN_MRG];
        match VnetHeader::new_checked(&mut hdr[..hl], hl) {
            Ok(mut h) => repr.emit(&mut h),
            Err(e) => {
                let e = io::Error::new(io::ErrorKind::InvalidInput, e);
                return Err(self.io_error("writing to", e));
            }
        }
        self.write_frame(
            &[IoSlice::new(&hdr[..hl]), IoSlice::new(frame.as_slice())],
            len,
        )
    }

    /// One `read(2)` into the tail room of a pool buffer with room for
    /// MTU + 14 bytes (with offloads: the header and a 64 KB frame).
    /// `Ok(None)` when no frame is waiting (EAGAIN).
    fn receive(&mut self, pool: &MsgPool, _now: Instant) -> Result<Option<Msg>, DeviceError> {
        if self.offloads.vnet_hdr_len != 0 {
            return self.receive_vnet(pool);
        }
        let need = self.mtu + ETH_HEADER_LEN;
        let mut msg = self.rx_buffer(pool, need)?;
        match self.read_into(&mut msg) {
            Ok(Some(n)) => {
                self.stats.rx_frames += 1;
                self.stats.rx_bytes += n as u64;
                Ok(Some(msg))
            }
            other => {
                self.spare = Some(msg);
                other.map(|_| None)
            }
        }
    }

    fn caps(&self) -> DeviceCaps {
        DeviceCaps {
            mtu: self.mtu,
            link_header: ETH_HEADER_LEN,
            mac: Some(self.mac),
            offload: self.offloads.caps(),
        }
    }

    fn stats(&self) -> DeviceStats {
        self.stats
    }

    /// Attaches a classic BPF socket filter to the interface (or removes
    /// it for an empty `matches`), so the kernel drops matching frames
    /// before it queues them for the reader; it applies to every queue of
    /// a multi-queue interface. The kernel counts them in the interface's
    /// `tx_dropped`.
    fn discard(&mut self, matches: &[FrameMatch]) -> Result<bool, DeviceError> {
        let io_err = |what: &str, source| DeviceError::Io {
            context: format!("{what} the discard filter of TAP {}", self.name),
            source,
        };
        if matches.is_empty() {
            if !self.discard.0.is_empty() {
                sys::tun_detach_filter(&self.file).map_err(|e| io_err("removing", e))?;
                self.discard.0.clear();
            }
            return Ok(true);
        }
        let prog: Vec<libc::sock_filter> = discard_program(matches)
            .into_iter()
            .map(|i| libc::sock_filter {
                code: i.code,
                jt: i.jt,
                jf: i.jf,
                k: i.k,
            })
            .collect();
        sys::tun_attach_filter(&self.file, &prog).map_err(|e| io_err("attaching", e))?;
        // The old program may go now: the kernel replaced it.
        self.discard.0 = prog;
        Ok(true)
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
