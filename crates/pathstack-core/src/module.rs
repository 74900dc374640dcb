//! Modules: units of protocol functionality that create stages, make
//! routing decisions and own shared state (thesis §3.2).

use crate::attrs::Attrs;
use crate::drop_reason::{CoreDropReason, DropReason, DropTally};
use crate::error::{ModuleError, PathError};
use crate::graph::spec::ModuleSpec;
use crate::graph::Link;
use crate::ids::{Dir, ModuleId, PathId};
use crate::module_handle::ModuleHandle;
use crate::msg::Msg;
use crate::ops::Ops;
use crate::runtime::{FollowUp, PathOp, Start, TimerOwner};
use crate::stage::Stage;
use crate::time::{Duration, Instant};
use crate::timer::{TimerError, TimerHandle};
use std::any::Any;
use std::collections::BTreeMap;

/// Where path creation goes after a module has made its stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Continue through the (single) connection of this service. If the
    /// service has several connections, `PATHNAME` picks one; without it the
    /// path ends here (a short path).
    Service(usize),
    /// Continue through connection `link` of service `service`.
    Link {
        /// Service index.
        service: usize,
        /// Connection number on that service.
        link: usize,
    },
    /// No routing decision: the path ends at this module (a leaf, or the
    /// invariants are too weak — a short path), unless `PATHNAME` forces one.
    End,
}

/// A new stage and the routing decision made with it.
pub struct Created {
    /// The stage.
    pub stage: Box<dyn Stage>,
    /// Where the path goes next.
    pub route: Route,
}

/// What [`Module::create_stage`] returns: the new stage and its routing
/// decision, or why the module refuses the path. Named so the method's
/// signature, repeated in every module, stays one line.
pub type Creation = Result<Created, PathError>;

impl Created {
    /// `stage`, boxed, with routing decision `route`.
    pub fn new(stage: impl Stage, route: Route) -> Self {
        Created {
            stage: Box::new(stage),
            route,
        }
    }
}

/// What a module sees while it creates a stage: its id, name, parameters
/// and connections, the service the path enters it by, and which way the
/// path grows; the stack's operations by dereference to [`Ops`].
pub struct CreateCx<'a> {
    pub(crate) ops: Ops<'a>,
    pub(crate) module_id: ModuleId,
    pub(crate) instance: &'a str,
    pub(crate) params: &'a BTreeMap<String, String>,
    pub(crate) links: &'a [Vec<Link>],
    pub(crate) entry: Option<usize>,
    pub(crate) growth: Dir,
}

impl CreateCx<'_> {
    /// This module's id.
    pub fn module_id(&self) -> ModuleId {
        self.module_id
    }
    /// This module's handle, for the stage to reach it by on every
    /// message ([`Cx::module_by_quiet`](crate::stage::Cx::module_by_quiet)):
    /// `M` is the creating module's own type (a handle of another type
    /// reaches nothing).
    pub fn own_handle<M: Module>(&self) -> ModuleHandle<M> {
        ModuleHandle::new(self.module_id)
    }
    /// Number of connections of service `service`.
    pub fn links(&self, service: usize) -> usize {
        self.links.get(service).map_or(0, Vec::len)
    }
    /// The service index the path enters this module by (its connection
    /// to the module before it on the path), `None` at the path's start —
    /// the module the path is created at (thesis §3.3.6).
    pub fn entry(&self) -> Option<usize> {
        self.entry
    }
    /// The direction in which the path is growing: down while creating
    /// and when extending `end[1]`, up when extending `end[0]`. Stages do
    /// not need it (they are told the direction of every message); routing
    /// decisions may.
    pub fn growth(&self) -> Dir {
        self.growth
    }
    /// A [`PathError::Refused`] naming this module, carrying `reason` (best
    /// the module's own error type, so callers can downcast it).
    pub fn refuse(&self, reason: impl Into<crate::error::Cause>) -> PathError {
        PathError::refused(self.instance, reason)
    }
    /// Refuses, with `reason`, a path that enters this module through a
    /// service ([`entry`](Self::entry) is `Some`): for a module that is the
    /// top of its paths (thesis §3.3.6: a path is created at its top module).
    pub fn require_top(&self, reason: &'static str) -> Result<(), PathError> {
        match self.entry {
            Some(_) => Err(self.refuse(reason)),
            None => Ok(()),
        }
    }
    /// Refuses, with `reason`, a path that starts at this module
    /// ([`entry`](Self::entry) is `None`): for a driver, whose paths come
    /// from above.
    pub fn require_entry(&self, reason: &'static str) -> Result<(), PathError> {
        match self.entry {
            Some(_) => Ok(()),
            None => Err(self.refuse(reason)),
        }
    }
}

/// What a module sees outside of path processing: at initialization, when
/// polled, and when its timers fire. Its own: the module's id, name,
/// parameters and drop tally, timers and paths owned by the module, frames
/// handed over; the stack's operations by dereference to [`Ops`].
pub struct ModCx<'a> {
    pub(crate) ops: Ops<'a>,
    pub(crate) module_id: ModuleId,
    pub(crate) instance: &'a str,
    pub(crate) params: &'a BTreeMap<String, String>,
    pub(crate) drops: &'a mut DropTally,
}

impl ModCx<'_> {
    /// This module's id.
    pub fn module_id(&self) -> ModuleId {
        self.module_id
    }
    /// Hands a received frame to the stack, which classifies it starting at
    /// this module and runs it as soon as this module's poll returns: for
    /// drivers that receive frames in a batch from a callback. A driver
    /// that can hand over one frame at a time implements
    /// [`Module::receive`] instead, so that each frame runs through its
    /// path before the next is read. Returns `false` (and counts a drop)
    /// when the stack's bounded hand-over list is full.
    pub fn deliver(&mut self, frame: Msg) -> bool {
        let ok = self.ops.shared.deliver(self.module_id, frame);
        if !ok {
            self.drops.add(CoreDropReason::RxFull);
        }
        ok
    }
    /// Counts a message this module dropped outside any path.
    pub fn count_drop(&mut self, reason: impl Into<DropReason>) {
        self.drops.add(reason);
    }
    /// Records that this driver's device failed for good (see
    /// [`crate::device::failure`]); the first failure stays.
    pub fn device_failed(&mut self, e: &crate::device::DeviceError) {
        self.ops.device_failed_at(self.instance, e);
    }
    /// Arms a timer that calls [`Module::on_timer`] with `token` after `after`.
    pub fn arm_timer(&mut self, after: Duration, token: u64) -> Result<TimerHandle, TimerError> {
        let owner = TimerOwner::Module {
            module: self.module_id,
            token,
        };
        self.ops.arm_timer_for(owner, after)
    }
    /// Asks the stack to create a path starting at this module once this
    /// call returns (ICMP creates its path through IP at initialization,
    /// thesis §4.1.2). The stack reports the result to
    /// [`Module::path_created`] with `tag`. The request waits in the same
    /// bounded list as a stage's [`Cx::open_path`](crate::stage::Cx::open_path);
    /// when that is full it is dropped and counted against this module.
    pub fn request_path(&mut self, attrs: Attrs, tag: u64) {
        let op = PathOp::Open {
            module: self.module_id,
            attrs,
            tag,
            first: None,
        };
        if let Err(r) = self.ops.ask_path(op) {
            self.drops.add(r);
        }
    }
}

/// A protocol module.
///
/// Modules make routing decisions (in [`Module::create_stage`]) and own
/// shared state (port tables, ARP caches, devices). Per-path work happens in
/// the [`Stage`]s they create; module code never walks the graph at packet
/// time.
pub trait Module: Any + Send {
    /// The module type's spec (services, parameters, understood keys).
    fn spec(&self) -> &'static ModuleSpec;

    /// Called once the whole graph is linked, in an order honouring the
    /// `<` markers.
    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        let _ = cx;
        Ok(())
    }

    /// Creates this module's stage of a path entering through service
    /// [`cx.entry()`](CreateCx::entry) (`None` when the path starts here)
    /// and makes a routing decision from the invariants in `attrs`, which it
    /// may update for the modules further on (thesis §3.3.6).
    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation;

    /// Routing decision when a path ending at this module is extended
    /// (thesis §3.3.7). `entry` is the service the end stage was entered
    /// by; `growth` is the direction (in path terms) the path grows in:
    /// down at `end[1]`, up at `end[0]`. The default makes no
    /// decision, so extension needs `PATHNAME`.
    fn extend_route(&mut self, entry: Option<usize>, growth: Dir, attrs: &Attrs) -> Route {
        let _ = (entry, growth, attrs);
        Route::End
    }

    /// A message fell off the end of a short path at this module (dynamic
    /// routing at path ends, thesis Fig. 2.5): say where it goes — on to
    /// another path (typically found with [`RouteCx::classify`]), into this
    /// path's sink queue, or dropped.
    ///
    /// When the returned path also runs through this module, the message
    /// continues there right after this module's stage (it has already
    /// been processed up to here); otherwise it enters at that path's end.
    fn route_end(&mut self, dir: Dir, msg: &mut Msg, cx: &mut RouteCx<'_>) -> EndRoute {
        let _ = (dir, msg, cx);
        EndRoute::Sink
    }

    /// Whether every message that goes past the end of a path at this
    /// module goes into the path's sink queue: the module keeps
    /// [`Module::route_end`]'s default. Asked when a path is established;
    /// a path whose end module says yes leaves its end with no routing
    /// call (the receive lane of an established path, issue 26 item 3).
    /// A module that overrides `route_end` must leave this `false`, the
    /// default.
    fn ends_in_sink(&self) -> bool {
        false
    }

    /// Whether this module has work for [`Module::poll`]. Asked once, when
    /// the stack is built; the stack polls only the modules that say yes
    /// (a no-op poll of every module on every `Stack::poll` costs more
    /// than a short path's stage). A driver that [`Module::receives`] is
    /// asked for frames whatever this says, and needs no poll for that.
    /// Default: what [`Module::polls_when_due`] says — most modules have
    /// no background work, and those whose work is timed say so there;
    /// a module polled on every call (a driver that delivers with
    /// [`ModCx::deliver`]) says yes here.
    fn polls(&self) -> bool {
        self.polls_when_due()
    }

    /// Whether this module's [`Module::poll`] has work only when its
    /// [`Module::poll_at`] is due (timeouts, retries: IP reassembly, ARP).
    /// Asked once, when the stack is built; the stack then calls `poll`
    /// only when `poll_at` is due, rather than calling `poll` to find
    /// nothing to do. Such a module's `poll_at` must cover all of its work,
    /// and must follow from its own state alone (no clock, no interior
    /// mutability): the stack asks it again only after the module was
    /// reached writably — any of its calls, a stage's
    /// [`Cx::module`](crate::stage::Cx::module) or `linked_module`,
    /// [`Stack::module_mut`](crate::Stack::module_mut) — so an idle poll
    /// asks it nothing. A fast form's quiet reach
    /// ([`Cx::module_quiet`](crate::stage::Cx::module_quiet)) does not
    /// mark it: the fast form marks it when its work moves the deadline
    /// earlier. Default: no (drivers are polled every time).
    fn polls_when_due(&self) -> bool {
        false
    }

    /// Does background work: device drivers receive frames here and pass
    /// them on with [`ModCx::deliver`]. Returns how much work was done.
    fn poll(&mut self, cx: &mut ModCx<'_>) -> usize {
        let _ = cx;
        0
    }

    /// Whether this module is a device driver that hands over received
    /// frames one at a time with [`Module::receive`]. Asked once, when the
    /// stack is built. Default: no.
    fn receives(&self) -> bool {
        false
    }

    /// A device driver's next received frame, written into `frame` (empty
    /// on entry): [`Received::Nothing`](crate::device::Received) when none
    /// was ready, `Frame` when one was and more may follow, `Last` when
    /// one was and the stack need not ask again in this poll (nothing
    /// ready behind it, or the driver's burst is spent). Called on every
    /// [`Stack::poll`](crate::Stack::poll) (after [`Module::poll`], if the
    /// module polls) until it returns `Nothing` or `Last`. The stack
    /// classifies each frame and runs it through its path to the end,
    /// where it lies, before asking for the next (run to completion; the
    /// driver's fast lane of issue 26: the frame is written once, not
    /// moved out through every layer, and a poll that finds one frame is
    /// one call), so a driver bounds its burst itself.
    fn receive(&mut self, cx: &mut ModCx<'_>, frame: &mut Msg) -> crate::device::Received {
        let _ = (cx, frame);
        crate::device::Received::Nothing
    }

    /// A device driver whose [`Module::receive`] is its device's receive
    /// counted against a burst: the device and the burst, for the stack to
    /// receive through directly, without a module call per frame (the
    /// wire lane, [`crate::device::rx_lane`]). The stack takes it on the
    /// per-message way only (no ranked paths, no LDLP), where each frame
    /// runs as it is handed over; the other ways call `receive`. Default:
    /// `None` (the stack calls `receive`).
    fn rx_lane(&mut self) -> Option<crate::device::RxLane<'_>> {
        None
    }

    /// The device of [`Module::rx_lane`] failed to receive: count and
    /// record it as [`Module::receive`] would have. Default: nothing.
    fn rx_failed(&mut self, e: crate::device::DeviceError, cx: &mut ModCx<'_>) {
        let _ = (e, cx);
    }

    /// A device driver's device, for its stage to transmit on: the stage
    /// reaches it through its module by this one call, typed, rather
    /// than by an `Any` downcast of the module on every frame (issue 26:
    /// "no `Any` downcast on the per-message path"). Default: `None`
    /// (not a driver).
    fn device_mut(&mut self) -> Option<&mut dyn crate::device::Device> {
        None
    }

    /// A device driver: from now on have the device discard received
    /// frames that match any of `matches` (an empty slice: none), see
    /// [`Device::discard`](crate::device::Device::discard). Returns
    /// whether the device does; the default (not a driver, or a device
    /// that cannot) is `false`.
    fn discard_in_device(&mut self, matches: &[crate::device::FrameMatch]) -> bool {
        let _ = matches;
        false
    }

    /// The earliest time this module needs [`Module::poll`] again without
    /// new input (a delayed frame in a device), if any.
    fn poll_at(&self) -> Option<Instant> {
        None
    }

    /// A module timer fired.
    fn on_timer(&mut self, token: u64, cx: &mut ModCx<'_>) {
        let _ = (token, cx);
    }

    /// The result of a path requested with [`ModCx::request_path`].
    fn path_created(&mut self, tag: u64, result: Result<PathId, &PathError>) {
        let _ = (tag, result);
    }

    /// This module's partial classifier (thesis §3.4.3, Fig. 3.9): extracts
    /// its demux key from a message arriving at it and says how many bytes
    /// of header the next module skips. `None`: the module does not
    /// demultiplex (classification passes through it).
    fn partial_classifier(&self) -> Option<Box<dyn crate::demux::PartialClassifier>> {
        None
    }

    /// Statistics lines for display (`key`, value).
    fn stats(&self) -> Vec<(String, u64)> {
        Vec::new()
    }
}

/// Where a message that fell off a path's end goes ([`Module::route_end`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndRoute {
    /// On along another path, in direction `Dir`.
    Continue(PathId, Dir),
    /// Into the path's sink queue, for the application.
    Sink,
    /// Dropped, counted against the module with this reason.
    Drop(DropReason),
}

/// Context of [`Module::route_end`]: the path the message fell off and
/// the classifier to find where it goes on; the stack's operations by
/// dereference to [`Ops`].
pub struct RouteCx<'a> {
    pub(crate) ops: Ops<'a>,
    pub(crate) path: PathId,
    pub(crate) module_id: ModuleId,
    pub(crate) demux: &'a crate::demux::Demux,
}

impl RouteCx<'_> {
    /// The path the message fell off.
    pub fn path(&self) -> PathId {
        self.path
    }
    /// Classifies `msg`, which starts with this module's header: first
    /// with paths that start at this module (thesis Fig. 2.5: a short path
    /// below, long ones above), then as if it had arrived at the bottom of
    /// the path it fell off with the same lower-level headers (see
    /// [`Demux::classify_from`](crate::demux::Demux::classify_from)) — how
    /// IP finds the socket path of a datagram it reassembled.
    pub fn classify(&self, msg: &[u8]) -> Option<(PathId, Dir)> {
        self.demux
            .classify(self.module_id, msg)
            .or_else(|| self.demux.classify_from(self.path, self.module_id, msg))
    }
    /// Classifies `msg`, which starts with the header of the module below
    /// this one on the path the message fell off, as if it had arrived at
    /// that path's bottom (see
    /// [`Demux::classify_below`](crate::demux::Demux::classify_below)):
    /// the path, its direction and that lower module, for
    /// [`RouteCx::send_after`]. How ICMP finds the path of the datagram an
    /// error quotes.
    pub fn classify_below(&self, msg: &[u8]) -> Option<(PathId, Dir, ModuleId)> {
        self.demux.classify_below(self.path, self.module_id, msg)
    }
    /// Sends `msg` on `path` in `dir`, starting right after the stage of
    /// `module` on it (at the path's end if it does not pass through
    /// `module`): a message that was processed up to `module` elsewhere.
    pub fn send_after(
        &mut self,
        path: PathId,
        module: ModuleId,
        dir: Dir,
        msg: Msg,
    ) -> Result<(), DropReason> {
        let origin = self.ops.origin;
        self.ops.shared.follow_up(FollowUp {
            path,
            start: Start::AfterModule(module),
            dir,
            msg,
            origin,
        })
    }
}

crate::ops::deref_to_ops!(CreateCx, ModCx, RouteCx);
crate::param_access::param_access!(CreateCx, ModCx);
