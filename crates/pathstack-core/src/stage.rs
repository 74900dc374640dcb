//! Stages: the per-path, module-private state and processing of one module
//! on one path (thesis §3.3.4), and the context a stage works in.

use crate::attrs::Attrs;
use crate::demux::{DemuxKey, KeyMode};
use crate::drop_reason::DropReason;
use crate::error::PathError;
use crate::ids::{Dir, ModuleId, PathId};
use crate::module::Module;
use crate::module_handle::ModuleHandle;
use crate::msg::Msg;
use crate::ops::Ops;
pub use crate::runtime::TimerOwner;
use crate::runtime::{Env, PathOp};
use crate::sched::SchedParams;
use crate::stack::module_slot::ModuleSlot;
use crate::time::Duration;
use crate::timer::{TimerError, TimerHandle};
use std::any::Any;
use std::ops::{Deref, DerefMut};

/// What a stage decided about a message (Scout's interface arrows).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Pass the message to the neighbouring stage in the direction of travel.
    Next,
    /// Turn the message around: it continues from the neighbouring stage in
    /// the opposite direction (an echo, an ACK built in place).
    Back,
    /// The stage kept the message (or handed it to a device); nothing more to do.
    Consumed,
    /// Drop the message and count it against the path with a reason.
    Drop(DropReason),
}

/// The per-path processing of one module.
///
/// A stage sees messages travelling in either direction: [`Dir::Down`]
/// towards the device (what the application sends), [`Dir::Up`] towards the
/// application (what arrived). Paths are created at their top, so a stage
/// never needs to work out which way is which.
/// It must never panic on message contents: malformed input is dropped with
/// [`Verdict::Drop`].
pub trait Stage: Any + Send {
    /// Processes one message.
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict;

    /// Whether this stage passes every message travelling in `dir` on
    /// unchanged ([`Verdict::Next`] without looking at it): a device
    /// driver's stage on the way up, ARP on the way up, a sink at the top
    /// on the way down. Asked once, when the path's executor is built; the
    /// executor then does not call the stage in that direction at all.
    /// Default: no.
    fn passes(&self, dir: Dir) -> bool {
        let _ = dir;
        false
    }

    /// Called once the whole path exists, in creation order, with an
    /// auxiliary attribute set passed from stage to stage (thesis §3.3.6).
    /// Demux keys are not registered here but named by
    /// [`Stage::demux_key`]: the core registers the whole chain itself.
    fn establish(&mut self, aux: &mut Attrs, cx: &mut EstablishCx<'_>) -> Result<(), PathError> {
        let _ = (aux, cx);
        Ok(())
    }

    /// This stage's partial demux key for its path (thesis §3.4.3): asked
    /// once the path is established, from the receiving end inwards. Scout
    /// has each stage register its key below the node the previous one
    /// registered (`PREVIOUS_DEMUX_NODE`); here the core does that walk
    /// with the keys the stages name. The default passes through.
    fn demux_key(&self, mode: KeyMode) -> DemuxKey {
        let _ = mode;
        DemuxKey::Pass
    }

    /// Called when the path is deleted, in creation order: release what the
    /// stage holds in its module (ports, table entries).
    fn destroy(&mut self, cx: &mut Cx<'_, '_>) {
        let _ = cx;
    }

    /// A timer armed with [`Cx::arm_timer`] expired: spontaneous work
    /// (retransmissions, reassembly timeouts). New messages go out with
    /// [`Cx::emit`].
    fn on_timer(&mut self, token: u64, cx: &mut Cx<'_, '_>) {
        let _ = (token, cx);
    }
}

/// The context of a stage while it processes a message: the module's shared
/// state, the path's attributes, timers owned by the stage, and emission
/// of new messages from the stage's own position; the stack's operations
/// common to every context (the time, the pool, `send_on`, faults) by
/// dereference to [`Ops`].
///
/// Modules and paths live in separate tables of the stack, so a stage gets
/// its module's state without `Rc<RefCell<…>>`. Two words (the run's
/// environment and the stage's position), built for every stage a message
/// passes: the operations sit in the environment, not here.
pub struct Cx<'a, 'e> {
    pub(crate) env: &'a mut Env<'e>,
    pub(crate) pos: usize,
}

impl<'e> Deref for Cx<'_, 'e> {
    type Target = Ops<'e>;
    #[inline(always)]
    fn deref(&self) -> &Ops<'e> {
        &self.env.ops
    }
}

impl DerefMut for Cx<'_, '_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.env.ops
    }
}

impl<'a, 'e> Cx<'a, 'e> {
    /// The path being run.
    #[inline]
    pub fn path(&self) -> PathId {
        self.env.view.id
    }
    /// Position of this stage on the path (0 is `end[0]`).
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }
    /// Number of stages on the path.
    #[inline]
    pub fn path_len(&self) -> usize {
        self.env.view.stage_modules.len()
    }
    /// The path's attributes.
    pub fn attrs(&self) -> &Attrs {
        &self.env.view.attrs
    }
    /// The path's attributes, writable (anonymous communication along the
    /// path, thesis §3.3.1).
    pub fn attrs_mut(&mut self) -> &mut Attrs {
        &mut self.env.view.attrs
    }
    /// The path's scheduling parameters.
    pub fn sched(&self) -> &SchedParams {
        &self.env.view.sched
    }
    /// Changes the path's scheduling parameters from inside the path
    /// (thesis §3.5.1): the path's work is in progress, so a realtime
    /// deadline may only be tightened until it has passed.
    pub fn set_sched(&mut self, new: SchedParams) -> Result<(), crate::sched::SchedError> {
        let now = self.env.ops.now;
        self.env.view.sched.update(new, now, true)
    }
    /// The module that created this stage, as `&mut dyn Module`.
    #[inline]
    pub fn module_dyn(&mut self) -> &mut dyn Module {
        let m = self.env.view.stage_modules[self.pos];
        self.env.modules[m.0 as usize].get_mut()
    }
    /// The device of the module that created this stage
    /// ([`Module::device_mut`]), the core's `DRIVER`'s reached by its type
    /// (no virtual call into the module per frame, issue 26 item 1).
    #[inline]
    pub(crate) fn module_device(&mut self) -> Option<crate::device::DeviceRef<'_>> {
        let m = self.env.view.stage_modules[self.pos];
        self.env.modules[m.0 as usize].device_mut()
    }
    /// The module that created this stage, if it is a `T`.
    #[inline]
    pub fn module<T: Module>(&mut self) -> Option<&mut T> {
        (self.module_dyn() as &mut dyn Any).downcast_mut::<T>()
    }
    /// The module connected to this stage's module by connection `link` of
    /// its service `service` (the graph's order), if it is a `T`: how a
    /// stage asks a question of a module that is not on its path — the
    /// x-kernel's control operations, such as BID and CHAN asking BIDCTL
    /// for a peer's boot id. The graph names the dependency; the stage
    /// does not reach for it by name.
    pub fn linked_module<T: Module>(&mut self, service: usize, link: usize) -> Option<&mut T> {
        let m = self.env.view.stage_modules[self.pos];
        let target = self.env.modules[m.0 as usize]
            .links
            .get(service)?
            .get(link)?
            .instance;
        let slot = self.env.modules.get_mut(target.0 as usize)?;
        (slot.get_mut() as &mut dyn Any).downcast_mut::<T>()
    }
    /// The slots of this stage's module and of the one linked at
    /// `service`/`link`, apart (`None` if the link is missing or names the
    /// module itself): what [`module_and_linked`](Self::module_and_linked)
    /// and its quiet form reach through.
    #[inline(always)]
    fn own_and_linked_slots(
        &mut self,
        service: usize,
        link: usize,
    ) -> Option<(&mut ModuleSlot, &mut ModuleSlot)> {
        let own = self.env.view.stage_modules[self.pos].0 as usize;
        let other = self.env.modules[own]
            .links
            .get(service)?
            .get(link)?
            .instance
            .0 as usize;
        if own == other || other >= self.env.modules.len() {
            return None;
        }
        let (a, b) = if own < other {
            let (lo, hi) = self.env.modules.split_at_mut(other);
            (&mut lo[own], &mut hi[0])
        } else {
            let (lo, hi) = self.env.modules.split_at_mut(own);
            (&mut hi[0], &mut lo[other])
        };
        Some((a, b))
    }
    /// This stage's module and a linked one (see
    /// [`linked_module`](Self::linked_module)) at once, when a control
    /// operation needs both: VCHAN opening channels in CHAN's table.
    /// `None` if either is missing or they are the same module.
    pub fn module_and_linked<A: Module, B: Module>(
        &mut self,
        service: usize,
        link: usize,
    ) -> Option<(&mut A, &mut B)> {
        let (a, b) = self.own_and_linked_slots(service, link)?;
        let a = (a.get_mut() as &mut dyn Any).downcast_mut::<A>()?;
        let b = (b.get_mut() as &mut dyn Any).downcast_mut::<B>()?;
        Some((a, b))
    }
    /// [`module`](Self::module) without marking the module touched, for a
    /// fast form on every message: the stack's idle poll (issue 26 items
    /// 5, 6) then stays idle while the message gives the module no work
    /// due sooner than it had. The caller must call [`Cx::touch_module`]
    /// when it may have moved the module's [`Module::poll_at`] earlier
    /// (who makes work marks it).
    #[inline]
    pub fn module_quiet<T: Module>(&mut self) -> Option<&mut T> {
        let m = self.env.view.stage_modules[self.pos];
        (self.env.modules[m.0 as usize].get_mut_quiet() as &mut dyn Any).downcast_mut::<T>()
    }
    /// [`module_and_linked`](Self::module_and_linked) without marking
    /// either module touched; as [`Cx::module_quiet`], the caller marks
    /// the linked module ([`Cx::touch_linked`]) when it may have moved
    /// its deadline earlier. Inlined: it is on every message of a fast
    /// form, which wants it without a call.
    #[inline(always)]
    pub fn module_and_linked_quiet<A: Module, B: Module>(
        &mut self,
        service: usize,
        link: usize,
    ) -> Option<(&mut A, &mut B)> {
        let (a, b) = self.own_and_linked_slots(service, link)?;
        let a = (a.get_mut_quiet() as &mut dyn Any).downcast_mut::<A>()?;
        let b = (b.get_mut_quiet() as &mut dyn Any).downcast_mut::<B>()?;
        Some((a, b))
    }
    /// The module `h` names, if it is an `M`, without marking it touched
    /// (as [`Cx::module_quiet`]): a fast form's reach on every message by
    /// a handle its stage resolved when the path was made
    /// ([`crate::module_handle`]), one index into the stack's table and
    /// the type check, with no walk of the path's stage list or the
    /// module's connections. The caller marks the module
    /// ([`Cx::touch_by`]) when it may have moved its deadline earlier.
    #[inline(always)]
    pub fn module_by_quiet<M: Module>(&mut self, h: ModuleHandle<M>) -> Option<&mut M> {
        let slot = self.env.modules.get_mut(h.index())?;
        (slot.get_mut_quiet() as &mut dyn Any).downcast_mut::<M>()
    }
    /// Marks the module `h` names touched (see [`Cx::touch_module`]).
    pub fn touch_by<M: Module>(&mut self, h: ModuleHandle<M>) {
        if let Some(slot) = self.env.modules.get_mut(h.index()) {
            slot.touch();
        }
    }
    /// Marks this stage's module touched after a
    /// [`module_quiet`](Self::module_quiet) reach that may have moved its
    /// deadline earlier: the next poll asks it again.
    #[inline]
    pub fn touch_module(&mut self) {
        let m = self.env.view.stage_modules[self.pos];
        self.env.modules[m.0 as usize].touch();
    }
    /// Marks the module linked by connection `link` of service `service`
    /// touched (see [`Cx::touch_module`]).
    pub fn touch_linked(&mut self, service: usize, link: usize) {
        let m = self.env.view.stage_modules[self.pos];
        let target = self.env.modules[m.0 as usize]
            .links
            .get(service)
            .and_then(|l| l.get(link))
            .map(|l| l.instance.0 as usize);
        if let Some(slot) = target.and_then(|t| self.env.modules.get_mut(t)) {
            slot.touch();
        }
    }
    /// Records that the device of this stage's driver module failed for
    /// good (see [`crate::device::failure`]); the first failure stays.
    pub fn device_failed(&mut self, e: &crate::device::DeviceError) {
        let m = self.env.view.stage_modules[self.pos];
        let name = &self.env.modules[m.0 as usize].name;
        self.env.ops.device_failed_at(name, e);
    }
    /// Sends a new message from this stage's position in direction `dir`:
    /// it starts at the neighbouring stage in `dir`. It is processed after
    /// the current message (or batch) is done. Fails when the bounded
    /// follow-up list is full; the message is then dropped and counted.
    pub fn emit(&mut self, dir: Dir, msg: Msg) -> Result<(), DropReason> {
        let (path, from) = (self.env.view.id, self.pos);
        self.env.ops.send_on(path, from, dir, msg)
    }
    /// Arms a timer that calls this stage's [`Stage::on_timer`] with `token`
    /// after `after`.
    pub fn arm_timer(&mut self, after: Duration, token: u64) -> Result<TimerHandle, TimerError> {
        let owner = TimerOwner::Stage {
            path: self.env.view.id,
            stage: self.env.view.stage_ids[self.pos],
            token,
        };
        self.env.ops.arm_timer_for(owner, after)
    }
    /// Asks for a new path made at this stage's module with `attrs`, once
    /// the current run is over: Scout's passive open (thesis §3.3.2), where
    /// a listener's stage makes the path of the connection a SYN asks
    /// for. The module hears the result in
    /// [`Module::path_created`] with
    /// `tag`; then `first` (the message that asked for the path) enters the
    /// new path at its first stage, travelling up, so the connection's own
    /// stage processes it. Fails (the message dropped and counted) when the
    /// bounded list of pending operations is full.
    pub fn open_path(
        &mut self,
        attrs: Attrs,
        tag: u64,
        first: Option<Msg>,
    ) -> Result<(), DropReason> {
        let module = self.env.view.stage_modules[self.pos];
        self.env.ops.ask_path(PathOp::Open {
            module,
            attrs,
            tag,
            first,
        })
    }
    /// Asks for this path to be deleted once the current run is over (a
    /// connection that has finished); its stages' `destroy` run then.
    pub fn delete_path(&mut self) -> Result<(), DropReason> {
        let path = self.env.view.id;
        self.env.ops.ask_path(PathOp::Delete(path))
    }
}

/// The context of a stage's [`Stage::establish`] callback: the stage's
/// place on the path and its module; the stack's operations by
/// dereference to [`Ops`].
pub struct EstablishCx<'a> {
    pub(crate) ops: Ops<'a>,
    pub(crate) path: PathId,
    pub(crate) position: usize,
    pub(crate) len: usize,
    pub(crate) module_id: ModuleId,
    pub(crate) module: &'a mut dyn Module,
}

crate::ops::deref_to_ops!(EstablishCx);

impl EstablishCx<'_> {
    /// The path being established.
    pub fn path(&self) -> PathId {
        self.path
    }
    /// This stage's position (0 is `end[0]`).
    pub fn position(&self) -> usize {
        self.position
    }
    /// Whether this stage is `end[1]` (the last one created).
    pub fn is_last(&self) -> bool {
        self.position + 1 == self.len
    }
    /// The module that created this stage.
    pub fn module_id(&self) -> ModuleId {
        self.module_id
    }
    /// The module that created this stage, if it is a `T`.
    pub fn module<T: Module>(&mut self) -> Option<&mut T> {
        (&mut *self.module as &mut dyn Any).downcast_mut::<T>()
    }
}
