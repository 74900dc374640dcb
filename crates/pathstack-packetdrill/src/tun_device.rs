//! The host's device: the in-memory wire dressed as packetdrill's tun
//! device, which segments on transmit (TSO) and finishes checksums.
//!
//! packetdrill's scripts are written against Linux on a tun device with
//! segmentation offload: Linux hands it one super-segment for what a
//! write may send at once, and the script expects exactly that
//! (`> P. 1:10001(10000)`, the initial window in one packet, PSH on it).
//! pathstack does the same on a device that offers TSO
//! (`pathstack_core::device::offload`): the wire's end under the host
//! reports the tun's 1500-byte MTU with TCP segmentation and transmit
//! checksum offload, and carries frames up to 64 KiB. The checksums of
//! super-segments are left partial, as Linux leaves them for its tun;
//! packetdrill does not check outbound checksums.
#![deny(unsafe_code)]

use pathstack::core::device::memory::MemoryEnd;
use pathstack::core::device::offload::OffloadCaps;
use pathstack::core::device::{DeviceCaps, DeviceStats, Received, RxWaiter};
use pathstack::core::msg::{Msg, MsgPool};
use pathstack::core::Instant;
use pathstack::{Device, DeviceError};
use std::sync::Arc;

/// The MTU the host sees: packetdrill's tun default.
pub const TUN_MTU: usize = 1500;
/// Largest IPv4 datagram segmented on transmit: Linux's GSO limit.
pub const TSO_MAX: usize = 65_535;

/// The host's end of the wire, with a tun's capabilities.
pub struct TunDevice {
    end: MemoryEnd,
    tso: bool,
}

impl TunDevice {
    /// Wraps the host's end (made with an MTU of at least [`TSO_MAX`]),
    /// with segmentation and checksum offload if `tso` (a script's
    /// `ethtool -K tun0 tso off gso off` turns both off).
    pub fn new(end: MemoryEnd, tso: bool) -> TunDevice {
        TunDevice { end, tso }
    }
}

impl Device for TunDevice {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        self.end.transmit(frame, now)
    }

    fn transmit_from(&mut self, frame: &mut Msg, now: Instant) -> Result<(), DeviceError> {
        self.end.transmit_from(frame, now)
    }

    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        self.end.receive(pool, now)
    }

    fn receive_into(
        &mut self,
        pool: &MsgPool,
        now: Instant,
        frame: &mut Msg,
    ) -> Result<Received, DeviceError> {
        self.end.receive_into(pool, now, frame)
    }

    fn caps(&self) -> DeviceCaps {
        DeviceCaps {
            mtu: TUN_MTU,
            offload: if self.tso {
                OffloadCaps {
                    tx_checksum: true,
                    rx_checksum: false,
                    tso4_max: TSO_MAX,
                    rx_gro: false,
                }
            } else {
                OffloadCaps::NONE
            },
            ..self.end.caps()
        }
    }

    fn poll_at(&self) -> Option<Instant> {
        self.end.poll_at()
    }

    fn stats(&self) -> DeviceStats {
        self.end.stats()
    }

    fn rx_waiter(&self) -> Option<Arc<dyn RxWaiter>> {
        self.end.rx_waiter()
    }
}
