//! The stack: one per core, owning the module graph, the paths, the
//! classifier, the devices (inside their driver modules), the timers and the
//! scheduler. Single-threaded and non-preemptive, like Scout on a
//! uniprocessor; `Send`, so it can be moved to the thread that runs it.
//!
//! Time is passed in: [`Stack::poll`] takes `now`, so tests run on virtual
//! time and are deterministic. Messages that enter between polls (an
//! application's [`Stack::send`]) run at the time of the last poll.
//!
//! The files of this module, by concern:
//! - `config.rs`: limits and counters; `module_types.rs`: module factories;
//! - `builder.rs`: making a stack from a graph;
//! - `lifecycle.rs`: creating, extending, optimizing and deleting paths;
//! - `trip.rs`: running a message through paths to completion (the trip);
//!   `lane.rs`: the common case of a trip entering from outside;
//!   `stage_send.rs`: a stage's own send, run down its path at once;
//! - `app_api.rs`: an application's send, enqueue, recv and inject;
//! - `receive.rs`: frames from the drivers, one by one or in bursts;
//!   `polling.rs`: which modules a poll must look at;
//! - `turns.rs`: scheduler turns over paths with queued input;
//! - `follow_ups.rs`: messages produced while another runs, and path ops;
//! - `ldlp.rs`: running batches stage-major (LDLP).

mod app_api;
mod builder;
mod config;
mod device_discard;
mod follow_ups;
mod lane;
mod ldlp;
mod lifecycle;
pub(crate) mod module_slot;
mod module_types;
mod pending;
mod polling;
mod receive;
mod stage_send;
mod trip;
mod turns;

pub use crate::module_setup::ModuleSetup;
pub use app_api::SendError;
pub use builder::StackBuilder;
pub use config::{StackConfig, StackStats};
pub use module_types::{ModuleFactory, ModuleTypes};

use crate::demux::Demux;
use crate::drop_reason::DropTally;
use crate::error::{ModuleError, PathError, StackError};
use crate::fault::PathFault;
use crate::graph::ModuleGraph;
use crate::ids::{ModuleId, PathId};
use crate::module::{ModCx, Module};
use crate::msg::MsgPool;
use crate::ops::Ops;
use crate::path_table::PathTable;
use crate::rules::Rule;
use crate::runtime::{FollowUp, Shared, TimerOwner};
use crate::sched::{RunQueue, SchedKind};
use crate::stage::{Cx, Stage};
use crate::stage_ref::StageRef;
use crate::time::Instant;
use builder::batch_bound;
use module_slot::ModuleSlot;
use std::collections::VecDeque;

/// Which end of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `end[0]`: the stage created first.
    Zero,
    /// `end[1]`: the stage created last.
    One,
}

/// A protocol stack: modules, paths, classifier, timers and scheduler.
pub struct Stack {
    modules: Vec<ModuleSlot>,
    paths: PathTable,
    shared: Shared,
    demux: Demux,
    runq: RunQueue,
    sched: SchedKind,
    rules: Vec<Rule>,
    now: Instant,
    batch: Vec<ldlp::Slot>,
    /// Follow-ups being processed ([`Stack::drain_follow_ups`]).
    work: VecDeque<FollowUp>,
    fired: Vec<TimerOwner>,
    /// The modules whose [`Module::polls`] or [`Module::receives`] said yes.
    polled: Vec<Polled>,
    /// What an idle poll may skip of `polled`.
    polling: polling::Polling,
    config: StackConfig,
    graph: ModuleGraph,
    /// Reservations of the live paths (admission control).
    admission: crate::admission::Admission,
    /// Live paths with scheduling parameters other than the default
    /// (realtime, or a priority other than 0). While there are none, every
    /// received frame runs at once in arrival order (per-message); while
    /// there are some, or under LDLP, a driver's burst is classified onto
    /// the paths' queues first and then scheduled (`receive.rs`).
    ranked: usize,
    /// Trips entering from outside take the lane at once (`lane.rs`):
    /// per-message scheduling, no time accounting.
    lane_open: bool,
    /// Paths whose frames devices discard for now ([`device_discard`]).
    discards: device_discard::DeviceDiscards,
}

fn _assert_send() {
    fn is_send<T: Send>() {}
    is_send::<Stack>();
}

/// A module the stack polls, and how (asked once, when it is built).
#[derive(Clone, Copy, Debug)]
pub(super) struct Polled {
    /// Its index in the module table.
    pub index: usize,
    /// It has work for [`Module::poll`] ([`Module::polls`]); a driver
    /// that only receives is not polled, only asked for frames.
    pub polls: bool,
    /// It hands over frames one at a time ([`Module::receives`]).
    pub receives: bool,
    /// It has work only when its [`Module::poll_at`] is due
    /// ([`Module::polls_when_due`]).
    pub when_due: bool,
    /// Its `poll_at` when last asked; asked again only once the module
    /// has been reached writably since (`ModuleSlot::touched`).
    pub due: Option<Instant>,
}

impl Stack {
    /// A builder for a stack over `graph`.
    pub fn builder(graph: ModuleGraph, types: ModuleTypes) -> StackBuilder {
        StackBuilder::new(graph, types)
    }

    // ----- modules -------------------------------------------------------

    fn init_module(&mut self, m: ModuleId) -> Result<(), StackError> {
        let (result, path_error) = self.run_module(m, |module, cx| module.init(cx));
        result?;
        match path_error {
            Some(e) => Err(ModuleError::InitPath {
                instance: self.modules[m.0 as usize].name.clone(),
                source: e,
            }
            .into()),
            None => Ok(()),
        }
    }

    /// Runs `f` on module `m` with its context, then creates the paths it
    /// asked for with [`ModCx::request_path`] and reports each result to
    /// [`Module::path_created`]. Returns `f`'s result and the first path
    /// creation error, if any. Every module call (init, timer, poll,
    /// receive) goes through [`Stack::call_module`], so keeps the same
    /// contract.
    fn run_module<R>(
        &mut self,
        m: ModuleId,
        f: impl FnOnce(&mut dyn Module, &mut ModCx<'_>) -> R,
    ) -> (R, Option<PathError>) {
        let r = self.call_module(m, f);
        (r, self.create_requested_paths())
    }

    /// Runs `f` on module `m` with its context; the paths it asks for wait
    /// with the stages' path operations for
    /// [`Stack::create_requested_paths`]. The one place a `ModCx` is made.
    #[inline]
    pub(super) fn call_module<R>(
        &mut self,
        m: ModuleId,
        f: impl FnOnce(&mut dyn Module, &mut ModCx<'_>) -> R,
    ) -> R {
        let (module, slot) = self.modules[m.0 as usize].parts_mut();
        let mut cx = ModCx {
            ops: Ops::new(self.now, &mut self.shared),
            module_id: m,
            instance: slot.name,
            params: slot.params,
            drops: slot.drops,
        };
        f(module, &mut cx)
    }

    /// Creates the paths the module just called asked for
    /// ([`ModCx::request_path`]), reporting each result to its
    /// [`Module::path_created`]; the first error, if any.
    #[inline]
    pub(super) fn create_requested_paths(&mut self) -> Option<PathError> {
        // The common case, after every module call: nothing asked for.
        if self.shared.path_ops.is_empty() {
            return None;
        }
        self.run_path_ops()
    }

    /// The module instance called `name`.
    pub fn module_id(&self, name: &str) -> Option<ModuleId> {
        self.modules
            .iter()
            .position(|s| s.name == name)
            .map(|i| ModuleId(i as u32))
    }

    /// The first module instance of type `T`, whatever its instance name:
    /// code that needs a protocol (the facade's UDP, IP, ICMP …) finds it
    /// by what it is, so a graph file may name its instances as it likes.
    pub fn module_of<T: Module>(&self) -> Option<(ModuleId, &T)> {
        self.modules.iter().enumerate().find_map(|(i, slot)| {
            (slot.get() as &dyn std::any::Any)
                .downcast_ref::<T>()
                .map(|m| (ModuleId(i as u32), m))
        })
    }

    /// [`Stack::module_of`], writable.
    pub fn module_of_mut<T: Module>(&mut self) -> Option<(ModuleId, &mut T)> {
        self.modules.iter_mut().enumerate().find_map(|(i, slot)| {
            (slot.get_mut() as &mut dyn std::any::Any)
                .downcast_mut::<T>()
                .map(|m| (ModuleId(i as u32), m))
        })
    }

    /// The instance name of a module.
    pub fn module_name(&self, m: ModuleId) -> Option<&str> {
        self.modules.get(m.0 as usize).map(|s| s.name.as_str())
    }

    /// A module, if it is a `T`.
    pub fn module<T: Module>(&self, m: ModuleId) -> Option<&T> {
        let slot = self.modules.get(m.0 as usize)?;
        (slot.get() as &dyn std::any::Any).downcast_ref::<T>()
    }

    /// A module, writable, if it is a `T`.
    pub fn module_mut<T: Module>(&mut self, m: ModuleId) -> Option<&mut T> {
        let slot = self.modules.get_mut(m.0 as usize)?;
        (slot.get_mut() as &mut dyn std::any::Any).downcast_mut::<T>()
    }

    /// Drops a module counted outside any path, by reason.
    pub fn module_drops(&self, m: ModuleId) -> Option<&DropTally> {
        self.modules.get(m.0 as usize).map(|s| &s.drops)
    }

    /// A module's statistics lines ([`Module::stats`]).
    pub fn module_stats(&self, m: ModuleId) -> Option<Vec<(String, u64)>> {
        self.modules.get(m.0 as usize).map(|s| s.get().stats())
    }

    /// The module graph the stack was built from.
    pub fn graph(&self) -> &ModuleGraph {
        &self.graph
    }

    /// The message pool.
    pub fn pool(&self) -> &MsgPool {
        &self.shared.pool
    }

    /// Moves the stack's clock to `now` (never back) without polling:
    /// for calls into stages between polls ([`Stack::with_stage`]).
    pub fn set_now(&mut self, now: Instant) {
        if now > self.now {
            self.now = now;
        }
    }

    /// Current stack time (the `now` of the last poll).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The classifier.
    pub fn demux(&self) -> &Demux {
        &self.demux
    }

    /// Stack-wide counters.
    pub fn stats(&self) -> StackStats {
        StackStats {
            paths: self.paths.len(),
            demux_nodes: self.demux.node_count(),
            rx_drops: self.shared.rx_drops,
            follow_up_drops: self.shared.follow_up_drops,
            timers: self.shared.timers.len(),
        }
    }

    /// The scheduler in use.
    pub fn scheduler(&self) -> SchedKind {
        self.sched
    }

    /// Switches the scheduler (takes effect at the next scheduling round).
    pub fn set_scheduler(&mut self, s: SchedKind) {
        self.sched = s;
        self.reopen_lane();
        let want = batch_bound(s);
        if self.batch.capacity() < want {
            self.batch.reserve(want - self.batch.len());
        }
    }

    // ----- running ---------------------------------------------------------

    /// Does all work that is ready at `now`: polls the modules that have
    /// background work — each frame a driver receives is classified and
    /// run through its path to the end before the next is taken — then
    /// fires due timers, and, when paths have queued input (LDLP batches, busy
    /// paths), runs the scheduler until none is pending. Returns the number
    /// of messages and events handled.
    pub fn poll(&mut self, now: Instant) -> usize {
        if now > self.now {
            self.now = now;
        }
        // Input first, then timers: what arrived before a deadline is seen
        // before the timer acts on its absence (a host that polls late
        // must not retransmit what the ACKs waiting in the device already
        // acknowledge).
        let mut work = self.poll_modules();
        // Off the fast path: one comparison while no device discards.
        if self.discards.any() {
            self.lift_device_discards();
        }
        // An idle timer wheel costs one comparison.
        if self.shared.timers.due(self.now) {
            work += self.fire_timers();
        }
        work += self.run_pending();
        work
    }
    /// The first device failure a driver reported (a deleted TAP, the
    /// other end of the wire gone; [`crate::device::failure`]), if any:
    /// what a driver loop ends its sockets' calls with.
    pub fn device_failure(&self) -> Option<&crate::device::DeviceFailure> {
        self.shared.device_failure.as_ref()
    }

    /// Takes the asynchronous error a stage or module recorded for `path`
    /// since the last call (`SO_ERROR`: reading clears it); see
    /// [`crate::fault`].
    pub fn take_fault(&mut self, path: PathId) -> Option<PathFault> {
        self.shared.faults.take(path)
    }

    /// Records an asynchronous error for `path` from outside the stack's
    /// modules (a socket layer that matched an ICMP error to its socket);
    /// see [`Ops::set_fault`](crate::Ops::set_fault).
    pub fn set_fault(&mut self, path: PathId, fault: PathFault) {
        self.shared.faults.set(path, fault);
    }

    /// The asynchronous error `path` holds, left pending.
    pub fn fault(&self, path: PathId) -> Option<PathFault> {
        self.shared.faults.get(path)
    }

    /// The earliest time at which [`Stack::poll`] has timed work to do, if any.
    pub fn poll_at(&self) -> Option<Instant> {
        let t = self.shared.timers.next_deadline();
        let m = self.modules.iter().filter_map(|s| s.get().poll_at()).min();
        // A device discard ends by time, even when nothing else arrives.
        let d = self.discards.next_end();
        [t, m, d].into_iter().flatten().min()
    }

    fn fire_timers(&mut self) -> usize {
        let mut fired = std::mem::take(&mut self.fired);
        fired.clear();
        self.shared.timers.expire(self.now, &mut |o| fired.push(o));
        let n = fired.len();
        for owner in fired.drain(..) {
            match owner {
                TimerOwner::Module { module, token } => {
                    if (module.0 as usize) < self.modules.len() {
                        // Path creation errors went to `path_created`.
                        let _ = self.run_module(module, |m, cx| m.on_timer(token, cx));
                    }
                }
                TimerOwner::Stage { path, stage, token } => self.stage_timer(path, stage, token),
            }
            // Module timers and stage timers may have sent messages (ARP
            // requests, retransmissions).
            self.drain_follow_ups();
        }
        self.fired = fired;
        n
    }

    /// Calls `f` on the first stage of path `id` that is a `T`, with its
    /// full context (timers, emission, path operations), then runs what
    /// it emitted: how an application reaches per-path state that lives in
    /// a stage (a TCP connection's buffers: a write queues data and sends
    /// the segments the windows allow, a read may open the window). `None`
    /// when the path or such a stage does not exist. Finds the stage by
    /// its type on every call; [`Stack::stage_ref`] and
    /// [`Stack::with_stage_at`] find it once.
    pub fn with_stage<T: Stage, R>(
        &mut self,
        id: PathId,
        f: impl FnOnce(&mut T, &mut Cx<'_, '_>) -> R,
    ) -> Option<R> {
        let at = self.stage_ref::<T>(id)?;
        self.with_stage_at(at, f)
    }

    /// A handle on the first stage of path `id` that is a `T`, for
    /// [`Stack::with_stage_at`] and [`Stack::stage_at`]: the search by
    /// type done once ([`crate::stage_ref`]). `None` when the path or such
    /// a stage does not exist.
    pub fn stage_ref<T: Stage>(&self, id: PathId) -> Option<StageRef<T>> {
        let path = self.paths.get(id)?;
        let pos = (0..path.len()).find(|&p| {
            path.stage(p)
                .is_some_and(|s| (s as &dyn std::any::Any).is::<T>())
        })?;
        Some(StageRef::new(id, pos, *path.view.stage_ids.get(pos)?))
    }

    /// The stage `at` names, to inspect it; `None` when it is no longer
    /// there (the path deleted).
    pub fn stage_at<T: Stage>(&self, at: StageRef<T>) -> Option<&T> {
        let path = self.paths.get(at.path)?;
        let pos = at.locate(&path.view.stage_ids)?;
        (path.stage(pos)? as &dyn std::any::Any).downcast_ref::<T>()
    }

    /// The stage `at` names, to change what needs no context: no message
    /// sent, no timer armed, no path asked for (a socket's read that finds
    /// nothing to flush). Without the context of
    /// [`with_stage_at`](Self::with_stage_at) there is nothing to open or
    /// drain around the call: the application's call costs the stage's
    /// work and the handle's check (issue 26, "no context built when the
    /// call only reads state"). `None` when it is no longer there.
    #[inline]
    pub fn stage_at_mut<T: Stage>(&mut self, at: StageRef<T>) -> Option<&mut T> {
        let path = self.paths.get_mut(at.path)?;
        let pos = at.locate(&path.view.stage_ids)?;
        (path.exec.stage_mut(pos)? as &mut dyn std::any::Any).downcast_mut::<T>()
    }

    fn stage_timer(&mut self, id: crate::ids::PathId, stage: u32, token: u64) {
        let Some(path) = self.paths.get_mut(id) else {
            return;
        };
        let Some(pos) = path.view.stage_ids.iter().position(|&s| s == stage) else {
            return;
        };
        let (exec, mut env, _) = path.split(self.now, &mut self.modules, &mut self.shared, 0);
        if let Some(s) = exec.stage_mut(pos) {
            let mut cx = Cx { env: &mut env, pos };
            s.on_timer(token, &mut cx);
        }
    }
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("modules", &self.modules.len())
            .field("paths", &self.paths.len())
            .field("sched", &self.sched)
            .finish()
    }
}
