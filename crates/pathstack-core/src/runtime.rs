//! The run-time state that every context views: the stack-wide `Shared`
//! part (pool, timers, follow-up messages, frames handed over by drivers),
//! the [`Env`] one path run borrows, and how a message is sent onto a path
//! from a given position (`Shared::send_on`).
//!
//! This file sits below the contexts ([`Cx`](crate::stage::Cx),
//! [`ModCx`](crate::module::ModCx), [`RouteCx`](crate::module::RouteCx)):
//! they hold borrows of these types and add nothing but accessors, so the
//! rules written here (bounds, drop counting) are written once.

use crate::attrs::Attrs;
use crate::drop_reason::{CoreDropReason, DropReason};
use crate::ids::{Dir, ModuleId, PathId};
use crate::msg::{Msg, MsgPool};
use crate::ops::Ops;
use crate::stack::module_slot::ModuleSlot;
use crate::stage_view::StageView;
use crate::timer::TimerWheel;
use std::collections::VecDeque;

/// Who owns a timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerOwner {
    /// A stage of a path (identified by its creation number).
    Stage {
        /// The path.
        path: PathId,
        /// The stage's creation number on that path.
        stage: u32,
        /// The stage's token.
        token: u64,
    },
    /// A module.
    Module {
        /// The module.
        module: ModuleId,
        /// The module's token.
        token: u64,
    },
}

/// Where a message begins on a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// At the path's end it enters by: `end[0]` travelling down,
    /// `end[1]` travelling up.
    End,
    /// At the path's end, taken from its source queue and counted already
    /// (an LDLP batch of one, run as a single message).
    Dequeued,
    /// At the neighbour of the stage at this position, in the direction of
    /// travel (after that stage: a message sent on from it, or turned).
    After(usize),
    /// Right after the stage of this module, if the path runs through it
    /// (the message was processed up to there on another path and routed
    /// on at that path's end); else at the path's end.
    AfterModule(ModuleId),
}

/// A message produced while another was processed: turned around with
/// [`Verdict::Back`](crate::stage::Verdict::Back), emitted with
/// [`Cx::emit`](crate::stage::Cx::emit), sent on another path, or routed on
/// at a path's end while others were waiting. It is processed after the
/// message (or batch) that produced it.
pub(crate) struct FollowUp {
    pub path: PathId,
    pub start: Start,
    pub dir: Dir,
    pub msg: Msg,
    /// Position of the message it came from in its batch; keeps per-message
    /// order when LDLP processes follow-ups after the batch.
    pub origin: u32,
}

impl FollowUp {
    /// Lets go of a follow-up that has run: its message is empty then
    /// (no buffer, nothing to free), so it is forgotten rather than
    /// dropped, saving `Msg`'s out-of-line drop glue.
    #[inline(always)]
    pub(crate) fn let_go(self) {
        if self.msg.has_buffer() {
            drop(self.msg);
        } else {
            std::mem::forget(self.msg);
        }
    }
}

/// Stack-wide things a stage or module may use while it runs.
pub(crate) struct Shared {
    pub pool: MsgPool,
    pub timers: TimerWheel<TimerOwner>,
    pub follow_ups: Vec<FollowUp>,
    pub follow_up_cap: usize,
    pub follow_up_drops: u64,
    /// Frames a driver handed over with
    /// [`ModCx::deliver`](crate::module::ModCx::deliver) during its poll;
    /// the stack classifies and runs them as soon as the poll returns.
    /// Drivers that receive one frame at a time use
    /// [`Module::receive`](crate::module::Module::receive) and never pass
    /// through here.
    pub rx: VecDeque<(ModuleId, Msg)>,
    pub rx_cap: usize,
    pub rx_drops: u64,
    /// Pending asynchronous errors of paths ([`crate::fault`]).
    pub faults: crate::fault::Faults,
    /// Paths stages asked to open or delete ([`Cx::open_path`],
    /// [`Cx::delete_path`]), done once the current run is over; at most
    /// `follow_up_cap`.
    ///
    /// [`Cx::open_path`]: crate::stage::Cx::open_path
    /// [`Cx::delete_path`]: crate::stage::Cx::delete_path
    pub path_ops: Vec<PathOp>,
    /// The first device failure a driver reported
    /// ([`crate::device::failure`]).
    pub device_failure: Option<crate::device::DeviceFailure>,
    /// The first follow-up of an application's call into a stage, held
    /// to run as soon as the call returns ([`crate::send_lane`]).
    pub lane: crate::send_lane::SendLane<FollowUp>,
}

/// A path a stage asked to open or delete while a path ran: Scout's
/// passive open (a listener's stage makes a connection's path) and a
/// connection that has finished (TCP's TIME-WAIT ending).
pub(crate) enum PathOp {
    /// Create a path at `module` with `attrs`; report the result to the
    /// module's [`Module::path_created`](crate::module::Module::path_created)
    /// with `tag`; then `first` enters the new path at its first stage,
    /// travelling up (the segment that opened it).
    Open {
        module: ModuleId,
        attrs: Attrs,
        tag: u64,
        first: Option<Msg>,
    },
    /// Delete the path.
    Delete(PathId),
}

impl Shared {
    /// Records that the device of driver `module` failed for good
    /// ([`crate::device::failure`]); the first failure stays.
    pub fn device_failed(&mut self, module: &str, e: &crate::device::DeviceError) {
        if self.device_failure.is_none() {
            self.device_failure = Some(crate::device::DeviceFailure::new(module, e));
        }
    }

    /// Queues `msg` to run on `path` from the neighbour of stage `from` in
    /// `dir`: what every context's `send_on` does. Fails when the bounded
    /// follow-up list is full; the message is then dropped and counted.
    pub(crate) fn send_on(
        &mut self,
        path: PathId,
        from: usize,
        dir: Dir,
        msg: Msg,
        origin: u32,
    ) -> Result<(), DropReason> {
        self.follow_up(FollowUp {
            path,
            start: Start::After(from),
            dir,
            msg,
            origin,
        })
    }

    /// Queues a path operation, within the bound (the follow-up one).
    pub(crate) fn path_op(&mut self, op: PathOp) -> Result<(), DropReason> {
        if self.path_ops.len() >= self.follow_up_cap {
            self.follow_up_drops += 1;
            return Err(CoreDropReason::FollowUpOverflow.into());
        }
        self.path_ops.push(op);
        Ok(())
    }

    /// Adds a follow-up, within the bound: in the send lane when it is
    /// the first of an application's call ([`crate::send_lane`]), else in
    /// the list. Inlined: every emission comes this way.
    #[inline]
    pub(crate) fn follow_up(&mut self, f: FollowUp) -> Result<(), DropReason> {
        let f = match self.lane.offer(f, self.follow_ups.is_empty()) {
            Ok(()) => return Ok(()),
            Err(f) => f,
        };
        if self.follow_ups.len() >= self.follow_up_cap {
            self.follow_up_drops += 1;
            return Err(CoreDropReason::FollowUpOverflow.into());
        }
        self.follow_ups.push(f);
        Ok(())
    }

    /// Hands a received frame to the stack on behalf of driver `module`;
    /// `false` (and one drop counted by the caller) when the bound is hit.
    pub(crate) fn deliver(&mut self, module: ModuleId, frame: Msg) -> bool {
        if self.rx.len() >= self.rx_cap {
            self.rx_drops += 1;
            return false;
        }
        self.rx.push_back((module, frame));
        true
    }
}

/// Everything a stage's context borrows while one path runs (internal).
#[doc(hidden)]
pub struct Env<'e> {
    /// The time, the stack-wide state and the running message's batch
    /// position: what a stage's [`Cx`](crate::stage::Cx) dereferences to.
    pub(crate) ops: Ops<'e>,
    pub(crate) modules: &'e mut [ModuleSlot],
    /// The running path's id, modules, attributes and scheduling
    /// parameters, behind one pointer.
    pub(crate) view: &'e mut StageView,
    /// Whether the trip may continue a turned message in place: nothing
    /// waits in the run loop's work list. (Follow-ups a stage adds while
    /// the message runs are checked when it turns,
    /// [`Env::may_turn_in_place`].)
    pub(crate) turn_in_place: bool,
}

impl Env<'_> {
    /// Whether a message a stage just turned around may go on at once in
    /// the same executor: only when it would be the next follow-up anyway
    /// (nothing else waits), so that messages keep their order.
    #[inline(always)]
    pub(crate) fn may_turn_in_place(&self) -> bool {
        self.turn_in_place && self.ops.shared.follow_ups.is_empty()
    }
}
