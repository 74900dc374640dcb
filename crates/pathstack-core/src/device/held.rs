//! A driver's device held by its type where the core knows the type.
//!
//! A driver owns its device as a [`Device`] trait object, so every frame
//! pays a virtual call on the way in (`receive_into`) and on the way out
//! (`transmit_from`), and the ring operations behind them stay out of
//! line, with their own prologue, epilogue and a `Result` returned
//! through memory. The core knows one device type of its own, the
//! in-memory wire ([`MemoryEnd`]): a driver given one holds it by its
//! type ([`HeldDevice::Wire`]), and lends it by its type
//! ([`DeviceRef::Wire`]), so that the ring pop and push inline into the
//! stack's receive and the driver stage's transmit (issue 26 item 1: the
//! path's receive is one function from the ring pop to the socket queue;
//! thesis §4.2, the path's code specialized for what it is bound to).
//! Every other device is reached through its trait, as before, for one
//! compare more per frame.

use super::memory::MemoryEnd;
use super::{Device, DeviceError, Received};
use crate::msg::{Msg, MsgPool};
use crate::time::Instant;
use std::any::Any;

/// How a driver owns its device.
pub(crate) enum HeldDevice {
    /// The in-memory wire, by its type.
    Wire(Box<MemoryEnd>),
    /// Any other device, behind its trait.
    Other(Box<dyn Device>),
}

impl HeldDevice {
    /// `device`, by its type when it is the in-memory wire.
    pub(crate) fn of(device: Box<dyn Device>) -> Self {
        if !(device.as_ref() as &dyn Any).is::<MemoryEnd>() {
            return HeldDevice::Other(device);
        }
        let any: Box<dyn Any> = device;
        match any.downcast::<MemoryEnd>() {
            Ok(wire) => HeldDevice::Wire(wire),
            // Just asked: it is one. Were it not, it could not be given
            // back as a device, so the arm is unreachable in effect; it
            // stays a plain value, not a panic.
            Err(_) => unreachable!("type checked just above"),
        }
    }

    /// The device behind its trait (the calls that are not per frame).
    #[inline]
    pub(crate) fn as_dyn(&self) -> &dyn Device {
        match self {
            HeldDevice::Wire(w) => &**w,
            HeldDevice::Other(d) => &**d,
        }
    }

    /// The device behind its trait, writable.
    #[inline]
    pub(crate) fn as_dyn_mut(&mut self) -> &mut dyn Device {
        match self {
            HeldDevice::Wire(w) => &mut **w,
            HeldDevice::Other(d) => &mut **d,
        }
    }

    /// The device lent for one frame, by its type where it is known.
    #[inline(always)]
    pub(crate) fn lend(&mut self) -> DeviceRef<'_> {
        match self {
            HeldDevice::Wire(w) => DeviceRef::Wire(w),
            HeldDevice::Other(d) => DeviceRef::Other(&mut **d),
        }
    }
}

/// A device lent for one frame's receive or transmit: the in-memory wire
/// by its type (its ring operations inline into the caller), any other
/// device behind its trait.
pub enum DeviceRef<'a> {
    /// The in-memory wire.
    Wire(&'a mut MemoryEnd),
    /// Any other device.
    Other(&'a mut dyn Device),
}

impl<'a> From<&'a mut dyn Device> for DeviceRef<'a> {
    /// A device behind its trait (a driver outside the core lending its
    /// device: [`Module::rx_lane`](crate::module::Module::rx_lane)).
    fn from(d: &'a mut dyn Device) -> Self {
        DeviceRef::Other(d)
    }
}

impl DeviceRef<'_> {
    /// [`Device::transmit_from`], statically for the wire.
    #[inline(always)]
    pub fn transmit_from(&mut self, frame: &mut Msg, now: Instant) -> Result<(), DeviceError> {
        match self {
            DeviceRef::Wire(w) => w.send_from(frame),
            DeviceRef::Other(d) => d.transmit_from(frame, now),
        }
    }

    /// [`Device::receive_into`], statically for the wire.
    #[inline(always)]
    pub fn receive_into(
        &mut self,
        pool: &MsgPool,
        now: Instant,
        frame: &mut Msg,
    ) -> Result<Received, DeviceError> {
        match self {
            DeviceRef::Wire(w) => Ok(w.take_into(frame)),
            DeviceRef::Other(d) => d.receive_into(pool, now, frame),
        }
    }
}
