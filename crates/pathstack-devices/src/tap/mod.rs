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

mod filter;
mod frame_io;
mod mac;
mod offloads;
mod open;
mod options;
mod vnet_io;
mod wait;

pub use crate::tap_error::TapError;
pub use mac::host_mac_for;
pub use offloads::TapOffloads;
pub use options::TapOptions;
pub use wait::{TapWaiter, WaitMode};

use crate::sys;
use filter::AttachedFilter;
use open::{check_name, open_here, open_in_netns, read_backlog};
use pathstack_core::device::{Device, DeviceCaps, DeviceError, DeviceStats, FrameMatch};
use pathstack_core::{Instant, Msg, MsgPool};
use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// Bytes of an Ethernet II header (no VLAN tag): what a frame adds to the MTU.
pub const ETH_HEADER_LEN: usize = 14;

/// The largest IPv4 datagram (the total length field's limit): the most a
/// TSO/GRO super-segment may hold.
const IPV4_MAX: usize = 65_535;

/// The longest frame with offloads: a 64 KB datagram and its Ethernet header.
const GSO_FRAME_MAX: usize = IPV4_MAX + ETH_HEADER_LEN;

/// The IPv4 EtherType.
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];

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
        self.transmit_vnet(&frame, hl)
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
        self.set_discard(matches)
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
    fn tap_error_converts_to_device_error_with_context() {
        let e: DeviceError = TapError::Wait {
            name: "tap0".into(),
            source: io::Error::from(io::ErrorKind::InvalidInput),
        }
        .into();
        assert!(e.to_string().contains("tap0"), "{e}");
    }
}
