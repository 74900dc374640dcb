//! Devices: where frames enter and leave a stack.
//!
//! A [`Device`] moves whole link-layer frames as [`Msg`]s. The in-memory
//! device ([`memory`]) joins two devices back to back inside one process
//! (a wire in memory; "wire" alone names the header formats, issue 27); the
//! [`impair`] wrapper adds seeded loss, duplication, reordering and delay
//! around any device. Real devices (TAP, the emulated LANCE) live in
//! `pathstack-devices` and implement the same trait. The [`driver`] is the
//! `DRIVER` module that puts any device into a module graph.

use crate::msg::{Msg, MsgPool};
use crate::time::Instant;
use std::any::Any;
use std::sync::Arc;
use thiserror::Error;

pub use driver::{DriverDropReason, DriverModule, DriverParams, DriverStage, DRIVER_SPEC};
pub use failure::DeviceFailure;
pub use frame_match::{FieldTest, FieldWidth, FrameMatch};
pub use held::DeviceRef;
pub use offload::{MsgOffload, OffloadCaps};
pub use rx_lane::{RxBurst, RxLane};

pub mod driver;
pub mod failure;
pub mod forward;
pub mod frame_match;
pub(crate) mod held;
pub mod impair;
pub mod memory;
pub mod offload;
pub mod record;
pub mod rx_lane;

/// What a device can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Largest frame payload (link MTU, without the link header) in bytes.
    pub mtu: usize,
    /// Link-layer header bytes the device expects in front of the payload
    /// (14 for Ethernet II).
    pub link_header: usize,
    /// The device's hardware address, if it has one.
    pub mac: Option<[u8; 6]>,
    /// What the device offloads ([`OffloadCaps::NONE`] for most).
    pub offload: OffloadCaps,
}

/// Counters every device keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Frames handed to the device for transmission and accepted.
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames returned by `receive`.
    pub rx_frames: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Frames dropped because a bounded queue was full.
    pub dropped_full: u64,
    /// Frames dropped on purpose by an impairment.
    pub dropped_impaired: u64,
    /// Frames dropped because of an error (too large, I/O error, no buffer).
    pub errors: u64,
    /// Received frames the device discarded at the stack's request
    /// ([`Device::discard`]), where the device can count them (the
    /// in-memory wire can; a TAP's kernel filter counts in the
    /// interface's `tx_dropped` instead).
    pub dropped_discard: u64,
}

/// What went wrong in a device.
#[derive(Debug, Error)]
pub enum DeviceError {
    /// The frame is larger than the device can carry.
    #[error("frame of {len} bytes exceeds the device limit of {max} bytes")]
    FrameTooLarge {
        /// Frame length in bytes.
        len: usize,
        /// Largest frame the device carries.
        max: usize,
    },
    /// A bounded queue inside the device (or its peer) is full; the frame was dropped.
    #[error("device queue full ({capacity} frames); frame dropped")]
    QueueFull {
        /// The queue's bound.
        capacity: usize,
    },
    /// The peer end of the device is gone (the other end of the
    /// in-memory wire dropped: a cable pulled). The device itself is
    /// still there; what it sends is lost.
    #[error("device peer disconnected")]
    Disconnected,
    /// The device itself is gone for good (a TAP interface deleted under
    /// the host): nothing will pass through it again
    /// ([`crate::device::failure`]).
    #[error("the device is gone: {0}")]
    Gone(String),
    /// No buffer could be had for a received frame.
    #[error("no buffer for a received frame: {0}")]
    NoBuffer(#[from] crate::msg::MsgError),
    /// An operating-system error, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What the device was doing.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What a receive into a frame slot got ([`Device::receive_into`],
/// [`Module::receive`](crate::module::Module::receive)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received {
    /// Nothing was ready; the slot is untouched.
    Nothing,
    /// A frame, and maybe more behind it: ask again.
    Frame,
    /// A frame, and nothing ready behind it (or the driver's burst is
    /// spent): asking again in this poll would find nothing, so the stack
    /// does not (a poll that finds one frame is one call, issue 26). A
    /// frame that arrives meanwhile waits for the next poll, as it would
    /// had it arrived just after this one.
    Last,
}

/// A link-layer device.
///
/// Devices never block in `transmit` or `receive`; waiting is the caller's
/// business (see `pathstack-devices` for fd-based waiting on TAP).
pub trait Device: Any + Send {
    /// Hands a frame to the device. The device owns the message from now on;
    /// on error it has been dropped (and counted).
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError>;

    /// [`Device::transmit`] of the frame in `frame`, which is left empty
    /// (no buffer) whatever the outcome. The driver's stage transmits
    /// this way: the frame stays in the trip's slot until the device takes
    /// its buffer, instead of being moved out of it whole, annotations and
    /// all, and the slot written back empty (issue 26 item 3: a `Msg`
    /// borrowed along a trip, not `mem::take`n). The default moves it out
    /// and calls `transmit`; a device on the hot path (the in-memory wire)
    /// takes the buffer itself.
    #[inline]
    fn transmit_from(&mut self, frame: &mut Msg, now: Instant) -> Result<(), DeviceError> {
        self.transmit(std::mem::take(frame), now)
    }

    /// The next received frame, if one is ready at `now`. Devices that read
    /// from the OS take their buffer from `pool`.
    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError>;

    /// [`Device::receive`] into `frame` (empty on entry), which the stack
    /// then runs through its path where it lies. The driver's fast lane
    /// (issue 26, one run-loop entry per frame) calls this, so that a
    /// frame is written once, where it will be processed, instead of
    /// being moved out through `Result<Option<Msg>>` at every layer, and
    /// so that a device that knows it has nothing behind the frame says
    /// so ([`Received::Last`]) and is not asked again in this poll. The
    /// default goes through `receive` and does not know; a device on the
    /// hot path (the in-memory wire) writes the slot itself.
    #[inline]
    fn receive_into(
        &mut self,
        pool: &MsgPool,
        now: Instant,
        frame: &mut Msg,
    ) -> Result<Received, DeviceError> {
        Ok(match self.receive(pool, now)? {
            Some(f) => {
                *frame = f;
                Received::Frame
            }
            None => Received::Nothing,
        })
    }

    /// The device's capabilities.
    fn caps(&self) -> DeviceCaps;

    /// The earliest time at which `receive` may return a frame it cannot
    /// return now (a delayed frame), if any.
    fn poll_at(&self) -> Option<Instant> {
        None
    }

    /// The device's counters.
    fn stats(&self) -> DeviceStats;

    /// Something a thread may sleep on until this device has a frame to
    /// receive, if the device can wake a sleeper (the in-memory wire can;
    /// a TAP device is waited on through its file descriptor instead).
    /// Taken before the device moves into a stack, so that the thread
    /// driving the stack can block without polling.
    fn rx_waiter(&self) -> Option<Arc<dyn RxWaiter>> {
        None
    }

    /// From now on, discard received frames that match any of `matches`
    /// before they reach the stack; an empty slice discards nothing
    /// again. Each call replaces the last. `Ok(false)` when the device
    /// cannot discard (the default): the stack then goes on discarding
    /// at classification, as before.
    ///
    /// This is early discard pushed below the stack (thesis §5.2.1): a
    /// TAP device attaches a socket filter, so the kernel drops a flood's
    /// frames before they are queued for the reader, and they cost no
    /// wake-up, no `read(2)` and no room in the queue the other paths'
    /// frames share.
    fn discard(&mut self, matches: &[FrameMatch]) -> Result<bool, DeviceError> {
        let _ = matches;
        Ok(false)
    }
}

/// A way to sleep until a device has a frame (see [`Device::rx_waiter`]).
pub trait RxWaiter: Send + Sync {
    /// Blocks the calling thread until a frame is ready, the device can
    /// deliver no more frames, or `timeout` passes. Returns whether a frame
    /// is ready.
    fn wait_rx(&self, timeout: std::time::Duration) -> bool;

    /// The asynchronous twin of [`RxWaiter::wait_rx`], for a task that
    /// drives a stack (an async runtime's driver) instead of a thread that
    /// blocks: `Some(Poll::Ready(()))` when a frame is ready now,
    /// `Some(Poll::Pending)` when it is not and the task of `cx` will be
    /// woken when one arrives (the last task registered is the one woken),
    /// `None` when the device cannot wake a task (the default) and the
    /// caller must poll it now and then instead.
    ///
    /// The readiness is checked after the waker is registered, so a frame
    /// that arrives between the caller's last receive and this call is not
    /// missed. A wake-up may be spurious (the frame was already taken, or
    /// the peer went away): the caller receives and asks again.
    fn poll_rx(&self, cx: &mut std::task::Context<'_>) -> Option<std::task::Poll<()>> {
        let _ = cx;
        None
    }
}

impl<D: Device + ?Sized> Device for Box<D> {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        (**self).transmit(frame, now)
    }
    fn transmit_from(&mut self, frame: &mut Msg, now: Instant) -> Result<(), DeviceError> {
        (**self).transmit_from(frame, now)
    }
    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        (**self).receive(pool, now)
    }
    fn receive_into(
        &mut self,
        pool: &MsgPool,
        now: Instant,
        frame: &mut Msg,
    ) -> Result<Received, DeviceError> {
        (**self).receive_into(pool, now, frame)
    }
    fn caps(&self) -> DeviceCaps {
        (**self).caps()
    }
    fn poll_at(&self) -> Option<Instant> {
        (**self).poll_at()
    }
    fn stats(&self) -> DeviceStats {
        (**self).stats()
    }
    fn rx_waiter(&self) -> Option<Arc<dyn RxWaiter>> {
        (**self).rx_waiter()
    }
    fn discard(&mut self, matches: &[FrameMatch]) -> Result<bool, DeviceError> {
        (**self).discard(matches)
    }
}
