//! `DRIVER`: the device driver module over any [`Device`].
//!
//! It owns one device given to the stack builder (`device=N`): frames that
//! reach its stage from above are transmitted, frames the device receives
//! go to the classifier. Any [`Device`] works (the in-memory wire, TAP, a
//! pcap replay), which is why it lives here and not with the synthetic
//! test modules.

use crate::attrs::Attrs;
use crate::device::held::{DeviceRef, HeldDevice};
use crate::device::{Device, DeviceError, DeviceStats, FrameMatch, Received, RxBurst, RxLane};
use crate::error::ModuleError;
use crate::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use crate::graph::InstanceParams;
use crate::ids::Dir;
use crate::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use crate::module_setup::ModuleSetup;
use crate::msg::Msg;
use crate::stage::{Cx, Stage, Verdict};
use crate::time::Instant;

/// Spec of `DRIVER`.
pub const DRIVER_SPEC: ModuleSpec = ModuleSpec {
    name: "DRIVER",
    doc: "device driver: frames to and from one device",
    services: &[ServiceSpec::new("up", ServiceType::NETDEV, Count::Any)],
    params: &[
        ParamSpec::required("device", "index of the device given to the stack builder"),
        ParamSpec::optional("rx_burst", "most frames received per poll (default 64)"),
    ],
    understands: &[],
};

crate::drop_reasons! {
    /// Why `DRIVER` dropped a frame.
    pub enum DriverDropReason in "driver" {
        /// The device refused the frame (too large, queue full, I/O error).
        TxError => "tx_error",
        /// The device failed to receive (counted once per failed poll).
        RxError => "rx_error",
    }
}

/// The `DRIVER` module: owns a device.
pub struct DriverModule {
    /// By its type when it is the in-memory wire (`device::held`).
    device: HeldDevice,
    /// Frames taken per poll, and those still to take in this one.
    rx_burst: RxBurst,
    rx_errors: u64,
}

/// `DRIVER`'s parameters as typed values ([`InstanceParams`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DriverParams {
    /// The stack's device this driver takes (`device`).
    pub device: usize,
    /// Most frames taken per poll (`rx_burst`); `None`: the default, 64.
    pub rx_burst: Option<usize>,
}

impl InstanceParams for DriverParams {
    fn spec(&self) -> &'static ModuleSpec {
        &DRIVER_SPEC
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        let mut p = vec![("device", self.device.to_string())];
        if let Some(n) = self.rx_burst {
            p.push(("rx_burst", n.to_string()));
        }
        p
    }
}

impl DriverModule {
    /// Factory: takes device `device=N` from the stack builder.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let index: usize = setup.param("device", usize::MAX)?;
        let rx_burst = setup.param("rx_burst", 64usize)?.max(1);
        let device = HeldDevice::of(setup.take_device(index)?);
        Ok(Box::new(DriverModule {
            device,
            rx_burst: RxBurst::new(rx_burst),
            rx_errors: 0,
        }))
    }

    /// The device's counters.
    pub fn device_stats(&self) -> DeviceStats {
        self.device.as_dyn().stats()
    }

    /// The device lent for one frame, by its type where the core knows
    /// it (`device::held`): what the stack transmits on for the driver's
    /// stage ([`Cx::module_device`]).
    #[inline(always)]
    pub(crate) fn lend_device(&mut self) -> DeviceRef<'_> {
        self.device.lend()
    }

    /// The receive lane ([`Module::rx_lane`]), by type: the stack's own
    /// `DRIVER` lends its device by its type.
    #[inline(always)]
    pub(crate) fn lane(&mut self) -> RxLane<'_> {
        RxLane {
            device: self.device.lend(),
            burst: &mut self.rx_burst,
        }
    }

    /// The device failed to receive: counted, and recorded when it is for
    /// good. Out of line, so that the per-frame call keeps only the
    /// common case (no registers saved for error handling; issue 26).
    #[cold]
    #[inline(never)]
    fn receive_failed(&mut self, e: DeviceError, cx: &mut ModCx<'_>) -> Received {
        self.rx_burst.reset();
        self.rx_errors += 1;
        cx.count_drop(DriverDropReason::RxError);
        if e.is_fatal() {
            cx.device_failed(&e);
        }
        Received::Nothing
    }
}

impl Module for DriverModule {
    fn spec(&self) -> &'static ModuleSpec {
        &DRIVER_SPEC
    }

    fn create_stage(&mut self, _attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        cx.require_entry("a DRIVER path must come from above (through `up`)")?;
        Ok(Created::new(DriverStage, Route::End))
    }

    /// The device's own vtable (not `Box<dyn Device>`'s forwarding
    /// impl), as `receive` calls it.
    #[inline]
    fn device_mut(&mut self) -> Option<&mut dyn Device> {
        Some(self.device.as_dyn_mut())
    }

    fn receives(&self) -> bool {
        true
    }

    /// One frame at a time, so that each runs through its path before the
    /// next is read (run to completion), at most `rx_burst` per poll: the
    /// frame that spends the burst is handed over as the last one, and the
    /// next call starts the next poll's burst.
    #[inline]
    fn receive(&mut self, cx: &mut ModCx<'_>, frame: &mut Msg) -> Received {
        // By its type where the core knows it, else through the device's
        // own vtable, not `Box<dyn Device>`'s forwarding impl.
        match self.device.lend().receive_into(cx.pool(), cx.now(), frame) {
            Ok(got) => self.rx_burst.count(got),
            Err(e) => self.receive_failed(e, cx),
        }
    }

    /// The device and the burst, for the stack to receive through without
    /// a module call per frame (the wire lane, `device::rx_lane`): what
    /// `receive` does, with the same burst.
    #[inline]
    fn rx_lane(&mut self) -> Option<RxLane<'_>> {
        Some(self.lane())
    }

    /// A failed receive through the lane, counted and recorded as
    /// `receive` does.
    fn rx_failed(&mut self, e: DeviceError, cx: &mut ModCx<'_>) {
        self.receive_failed(e, cx);
    }

    fn poll_at(&self) -> Option<Instant> {
        self.device.as_dyn().poll_at()
    }

    fn discard_in_device(&mut self, matches: &[FrameMatch]) -> bool {
        // A device that failed to set its filter discards nothing it was
        // not discarding before; the stack keeps discarding at
        // classification.
        self.device.as_dyn_mut().discard(matches).unwrap_or(false)
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let s = self.device.as_dyn().stats();
        vec![
            ("tx_frames".into(), s.tx_frames),
            ("rx_frames".into(), s.rx_frames),
            ("rx_errors".into(), self.rx_errors),
        ]
    }
}

/// The `DRIVER` stage: the device end of a path.
pub struct DriverStage;

impl DriverStage {
    #[inline(always)]
    fn transmit(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let now = cx.now();
        // The module's device, not by an `Any` downcast of the module
        // (issue 26 item 6), nor by a virtual call into it: the stack
        // holds its `DRIVER` by type (`Cx::module_device`, item 1).
        match cx.module_device() {
            // The frame's buffer leaves the trip's slot in the device
            // (`Device::transmit_from`), not the whole message first; the
            // in-memory wire's push inlined here (`device::held`).
            Some(mut d) => match d.transmit_from(msg, now) {
                Ok(()) => Verdict::Consumed,
                Err(e) => transmit_failed(e, cx),
            },
            None => Verdict::Drop(DriverDropReason::TxError.into()),
        }
    }
}

/// The device refused a frame: dropped, and the device's failure recorded
/// when it is for good. Out of line, so that the executor a transmit is
/// inlined into keeps only the common case (issue 26).
#[cold]
#[inline(never)]
fn transmit_failed(e: DeviceError, cx: &mut Cx<'_, '_>) -> Verdict {
    if e.is_fatal() {
        cx.device_failed(&e);
    }
    Verdict::Drop(DriverDropReason::TxError.into())
}

impl Stage for DriverStage {
    fn passes(&self, dir: Dir) -> bool {
        dir != Dir::Down
    }

    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            self.transmit(msg, cx)
        } else {
            Verdict::Next
        }
    }
}
