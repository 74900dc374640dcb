//! Running messages through paths.
//!
//! The common case is the cheap case (Scout's premise, thesis §2.2): a
//! frame a driver receives is classified once and, when its path has
//! nothing queued, runs through the path to its end at once — into the
//! sink queue, on to the next path, or out of a device — with no queue in
//! between. So does a message an application sends on an idle path. A
//! message turned around in the path (an echo, an ACK built in place)
//! continues in place. Each trip looks its path up once
//! ([`PathTable::get_mut`](crate::path_table::PathTable::get_mut)); a
//! message routed on at a path's end looks the next path up once.
//!
//! Queues are for what needs them: a path whose input is already queued
//! (per-path order), LDLP, which batches the input of paths with the same
//! module sequence (`ldlp.rs`) when there is more than one message to
//! batch (a lone message runs as above, under LDLP too), and the run queue that orders pending
//! paths by priority and deadline. Messages produced while another is
//! processed (emitted, sent on another path, turned while others wait) are
//! follow-ups, run after the message that produced them, in order.

use super::{Polled, Stack};
use crate::device::Received;
use crate::drop_reason::{CoreDropReason, DropReason};
use crate::error::PathError;
use crate::exec::{entry, step, Fate};
use crate::ids::{Dir, ModuleId, PathId};
use crate::module::{EndRoute, RouteCx};
use crate::msg::Msg;
use crate::ops::Ops;
use crate::path::{Path, QueueKind};
use crate::runtime::{FollowUp, PathOp, Start};
use crate::sched::{Pending, RunQueue, SchedKind};
use crate::time::Instant;

/// Most paths one message may run through in one trip (a route that
/// keeps handing a message on at path ends is a routing loop).
const MAX_HOPS: usize = 16;

/// What became of a message handed to [`Stack::run`] at a path's end.
///
/// The message itself travels by reference (`&mut Msg`, owned by whoever
/// started the trip), so this is one word, not a message: when the path
/// did not take it (`QueueFull`, `NoPath`) it is still where it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Entered {
    /// It ran (or was handed on as a follow-up).
    Ran,
    /// It waits in the path's source queue for the scheduler.
    Queued,
    /// The path's source queue was full (counted on the path); the
    /// message was left with the caller.
    QueueFull,
    /// No such path; the message was left with the caller.
    NoPath,
    /// A stage of the path it entered dropped it.
    Dropped(DropReason),
}

/// Why [`Stack::send`] did not take a message onto its path.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The path does not exist (deleted, or an id from another stack).
    #[error("no such path")]
    NoPath(Msg),
    /// The path's source queue is full (the path already has input
    /// waiting for the scheduler).
    #[error("the path's source queue is full")]
    QueueFull(Msg),
    /// It ran and a stage of the path dropped it (counted on the path).
    #[error("dropped on the path: {0}")]
    Dropped(DropReason),
}

impl SendError {
    /// The message, when the path did not take it.
    pub fn into_msg(self) -> Option<Msg> {
        match self {
            SendError::NoPath(m) | SendError::QueueFull(m) => Some(m),
            SendError::Dropped(_) => None,
        }
    }
}

/// Where a message's run starts and what it came from. The message is
/// not part of it: it stays where it is and the run works on it by
/// reference (issue 26: a frame is not copied from layer to layer).
pub(super) struct Trip {
    pub path: PathId,
    pub start: Start,
    pub dir: Dir,
    /// Its batch position (LDLP), for follow-up order.
    pub origin: u32,
    /// Taken from the path's own source queue by the scheduler: it runs
    /// even though more input waits behind it.
    pub dequeued: bool,
    /// It enters from outside any run (an application's send, a received
    /// frame not part of a burst): under LDLP it runs into idle paths at
    /// once, as per-message scheduling runs every message, when it is
    /// alone (the lone-message rule, [`Stack::run`]).
    pub fresh: bool,
}

impl Trip {
    /// A message entering path `path` at its end, travelling in `dir`.
    pub fn enter(path: PathId, dir: Dir) -> Self {
        Trip {
            path,
            start: Start::End,
            dir,
            origin: 0,
            dequeued: false,
            fresh: false,
        }
    }
}

/// Where a message that went past a path's last stage goes next.
enum Onward {
    /// Into the sink queue, dropped, or nowhere: done.
    Done,
    /// On along another path, after the stage of the module it left by.
    Path(PathId, Dir, ModuleId),
}

/// What [`settle`] needs of the stack besides the path: the parts a
/// message leaving the path's end or turned around reaches.
pub(super) struct TripEnds<'a> {
    pub modules: &'a mut [super::module_slot::ModuleSlot],
    pub shared: &'a mut crate::runtime::Shared,
    pub demux: &'a crate::demux::Demux,
    /// Nothing waits in the run loop's work list.
    pub work_empty: bool,
    pub now: Instant,
}

/// How a hop of a trip ended, once its fate is settled.
pub(super) enum Settled {
    /// The trip is over.
    Done(Entered),
    /// It goes on along another path, after the stage of the module it
    /// left by.
    On(PathId, Dir, ModuleId),
}

/// Settles the fate of a message after path `path`'s stages, on hop `hop`
/// of its trip: what is left of a consumed or dropped message goes back
/// to its pool, a turned one becomes a follow-up, one that went past the
/// last stage leaves by the end module (the sink queue, or on to another
/// path). One body for [`Stack::run_hops`] and [`Stack::run_entering`].
#[inline(always)]
pub(super) fn settle(
    path: &mut Path,
    ends: TripEnds<'_>,
    hop: usize,
    origin: u32,
    fate: Fate,
    msg: &mut Msg,
) -> Settled {
    let id = path.view.id;
    match fate {
        // What the stage left of the message goes back to its pool now,
        // before any follow-up runs (the trip's owner keeps only an empty
        // message).
        Fate::Consumed => {
            path.stats.consumed += 1;
            release(msg);
        }
        Fate::Dropped(r) => {
            path.count_drop(r);
            release(msg);
            if hop == 0 {
                return Settled::Done(Entered::Dropped(r));
            }
        }
        Fate::Turned { from, dir } => {
            let f = FollowUp {
                path: id,
                start: Start::After(from),
                dir,
                msg: std::mem::take(msg),
                origin,
            };
            if ends.shared.follow_up(f).is_err() {
                path.count_drop(CoreDropReason::FollowUpOverflow);
            }
        }
        Fate::Out(d) => {
            let mut rcx = RouteCx {
                ops: Ops::new(ends.now, ends.shared),
                path: id,
                module_id: ModuleId(0),
                demux: ends.demux,
            };
            match leave(path, d, msg, ends.modules, &mut rcx) {
                Onward::Done => {}
                Onward::Path(next, next_dir, m) => {
                    if !(ends.shared.follow_ups.is_empty() && ends.work_empty) {
                        // Others wait: keep their order.
                        let f = FollowUp {
                            path: next,
                            start: Start::AfterModule(m),
                            dir: next_dir,
                            msg: std::mem::take(msg),
                            origin,
                        };
                        if ends.shared.follow_up(f).is_err() {
                            ends.modules[m.0 as usize]
                                .drops
                                .add(CoreDropReason::FollowUpOverflow);
                        }
                        return Settled::Done(Entered::Ran);
                    }
                    return Settled::On(next, next_dir, m);
                }
            }
        }
    }
    Settled::Done(Entered::Ran)
}

impl Stack {
    // ----- messages in and out -------------------------------------------

    /// Sends `msg` on path `id` in direction `dir`: it enters at `end[0]`
    /// (down, what an application sends) or `end[1]` (up). On a path with
    /// nothing queued it runs through the path now — and out of the
    /// device, if that is where the path ends — at the time of the last
    /// [`Stack::poll`]: under per-message scheduling always, under LDLP
    /// when nothing else waits to be scheduled (the lone-message rule of
    /// [`crate::sched`]). Otherwise it waits in the path's source queue
    /// for the next poll. Fails, giving the message back, if the path does
    /// not exist or its queue is full; fails too when it ran and a stage
    /// of the path dropped it (a message carried on to other paths, or
    /// turned around, is not followed further).
    pub fn send(&mut self, id: PathId, dir: Dir, mut msg: Msg) -> Result<(), SendError> {
        // A message handed back in (a received datagram reused for the
        // reply) was not classified onto this trip.
        msg.anno_mut().set_classified(false);
        let r = match self.enter(id, dir, &mut msg) {
            Entered::Ran | Entered::Queued => Ok(()),
            Entered::QueueFull => return Err(SendError::QueueFull(msg)),
            Entered::NoPath => return Err(SendError::NoPath(msg)),
            Entered::Dropped(r) => Err(SendError::Dropped(r)),
        };
        // What the trip left here is usually nothing (the message went
        // on): let go of it without the drop glue's out-of-line call.
        let_go(msg);
        r
    }

    /// Puts `msg` on path `id`'s source queue for direction `dir` without
    /// running it: it runs at the next [`Stack::poll`], in the order of
    /// the run queue (realtime paths by deadline, then by priority) or in
    /// an LDLP batch with the input of like paths. For applications that
    /// hand over several messages at once and want them scheduled
    /// together. Gives the message back if the path does not exist or the
    /// queue is full.
    pub fn enqueue(&mut self, id: PathId, dir: Dir, msg: Msg) -> Result<(), Msg> {
        let now = self.now;
        let Some(path) = self.paths.get_mut(id) else {
            return Err(msg);
        };
        // Refusals are counted on the path.
        enqueue(path, &mut self.runq, dir, msg, now).map_err(|(m, _)| m)
    }

    /// Takes the next message that left path `id` travelling in `dir`
    /// (from its sink queue).
    pub fn recv(&mut self, id: PathId, dir: Dir) -> Option<Msg> {
        let now = self.now;
        let path = self.paths.get_mut(id)?;
        let m = path.pop_queue(QueueKind::sink(dir))?;
        // The drain rate a realtime path's deadline follows (§5.2.2.2);
        // kept for realtime paths only, off the best-effort fast path.
        if path.view.sched.realtime {
            path.drains.record(now);
        }
        Some(m)
    }

    /// Hands `frame` to the stack as if driver module `module` had received
    /// it: it is classified and run now, like a frame from the device.
    /// For applications that run their own driver loop, and for tests.
    /// Returns `false` when `module` does not exist.
    pub fn inject(&mut self, module: ModuleId, mut frame: Msg) -> bool {
        if module.0 as usize >= self.modules.len() {
            return false;
        }
        self.receive_frame(module, &mut frame);
        true
    }

    // ----- running -------------------------------------------------------

    /// Runs a trip to its end: through the path from `trip.start`, turning
    /// in place while nothing else waits, then on to the next path when
    /// the end module routes it there. A trip entering a path at its end
    /// waits in the path's source queue instead when the path already has
    /// input queued, or when LDLP schedules and the trip did not enter
    /// alone ([`Trip::fresh`]).
    pub(super) fn run(&mut self, trip: Trip, msg: &mut Msg) -> Entered {
        let direct = self.runs_direct(trip.fresh);
        self.run_hops(trip, direct, 0, msg)
    }

    /// Whether a trip entering a path at its end runs into it at once
    /// when the path has nothing queued. Per-message runs every message
    /// straight into an idle path. LDLP only a message that enters alone
    /// — nothing in the run queue, no follow-up waiting, so no second
    /// message to batch it with, and a batch of one would be per-message
    /// processing behind a path queue and a run-queue turn
    /// (`crate::sched`, the lone-message rule); it queues the rest to
    /// batch them. (A driver's burst of several frames does not come this
    /// way: `receive_burst` queues it.) Decided once per trip.
    #[inline(always)]
    pub(super) fn runs_direct(&self, fresh: bool) -> bool {
        self.sched == SchedKind::PerMessage
            || (fresh
                && self.runq.is_empty()
                && self.shared.follow_ups.is_empty()
                && self.work.is_empty())
    }

    /// [`Stack::run`] from hop `first_hop` of the trip on (a trip whose
    /// first hop [`Stack::run_entering`] ran goes on from hop 1).
    pub(super) fn run_hops(
        &mut self,
        trip: Trip,
        direct: bool,
        first_hop: usize,
        msg: &mut Msg,
    ) -> Entered {
        let Trip {
            path: mut id,
            mut start,
            mut dir,
            origin,
            dequeued,
            fresh: _,
        } = trip;
        let now = self.now;
        // The work list does not change during the trip's own stages.
        let turn_in_place = self.work.is_empty();
        for hop in first_hop..MAX_HOPS {
            let Some(path) = self.paths.get_mut(id) else {
                return Entered::NoPath;
            };
            if let Start::AfterModule(m) = start {
                start = resolve_after(path, m, dir);
            }
            let len = path.len();
            let pos = match start {
                Start::End => {
                    let queue_first = !dequeued || hop > 0;
                    if queue_first && (path.queued[dir.index()] || !direct) {
                        return match enqueue(path, &mut self.runq, dir, std::mem::take(msg), now) {
                            Ok(()) => Entered::Queued,
                            // Counted on the path; the message goes back.
                            Err((m, _)) => {
                                *msg = m;
                                Entered::QueueFull
                            }
                        };
                    }
                    if path.over_budget() {
                        // Early discard: the path holds all the buffers
                        // its budget allows (thesis §5.2.3).
                        path.count_drop(CoreDropReason::OverMemoryBudget);
                        return Entered::QueueFull;
                    }
                    path.stats.msgs_in[dir.index()] += 1;
                    path.stats.bytes_in[dir.index()] += msg.len() as u64;
                    Some(entry(dir, len))
                }
                Start::Dequeued => Some(entry(dir, len)),
                Start::After(p) => step(p, dir, len),
                Start::AfterModule(_) => unreachable!("resolved above"),
            };
            // Through the stages; the executor goes on with a message
            // turned around when it would be the next follow-up anyway
            // (`Exec::run`), so a `Turned` fate here waits its turn.
            let fate = match pos {
                None => Fate::Out(dir),
                Some(p) => {
                    let (exec, mut env, _) =
                        path.split(now, &mut self.modules, &mut self.shared, origin);
                    env.turn_in_place = turn_in_place;
                    exec.run(p, dir, msg, &mut env)
                }
            };
            let ends = TripEnds {
                modules: &mut self.modules,
                shared: &mut self.shared,
                demux: &self.demux,
                work_empty: turn_in_place,
                now,
            };
            match settle(path, ends, hop, origin, fate, msg) {
                Settled::Done(e) => return e,
                Settled::On(next, next_dir, m) => {
                    id = next;
                    start = Start::AfterModule(m);
                    dir = next_dir;
                }
            }
        }
        if let Some(path) = self.paths.get_mut(id) {
            path.count_drop(CoreDropReason::RouteLoop);
        }
        Entered::Ran
    }

    /// The first hop of a trip that enters path `id` at its end from
    /// outside any run (an application's send, a received frame), written
    /// out for the common case: the path is idle and takes the message at
    /// once, and its executor consumes it in one go (a frame echoed out of
    /// the device, a send that leaves by the device) or hands it to the
    /// sink queue. The same steps as [`Stack::run`], without a [`Trip`] to
    /// pack and unpack or a start to resolve (issue 26, the run loop at
    /// its minimum); a message that queues or routes on to another path
    /// goes on in [`Stack::run_hops`].
    #[inline(always)]
    fn run_entering(&mut self, id: PathId, dir: Dir, msg: &mut Msg) -> Entered {
        let direct = self.runs_direct(true);
        let now = self.now;
        let turn_in_place = self.work.is_empty();
        let Some(path) = self.paths.get_mut(id) else {
            return Entered::NoPath;
        };
        if path.queued[dir.index()] || !direct || path.over_budget() {
            // It queues, or the path's budget refuses it: as any trip.
            let trip = Trip {
                fresh: true,
                ..Trip::enter(id, dir)
            };
            return self.run_hops(trip, direct, 0, msg);
        }
        path.stats.msgs_in[dir.index()] += 1;
        path.stats.bytes_in[dir.index()] += msg.len() as u64;
        let pos = entry(dir, path.len());
        let fate = {
            let (exec, mut env, _) = path.split(now, &mut self.modules, &mut self.shared, 0);
            env.turn_in_place = turn_in_place;
            exec.run(pos, dir, msg, &mut env)
        };
        let ends = TripEnds {
            modules: &mut self.modules,
            shared: &mut self.shared,
            demux: &self.demux,
            work_empty: turn_in_place,
            now,
        };
        match settle(path, ends, 0, 0, fate, msg) {
            Settled::Done(e) => e,
            Settled::On(next, next_dir, m) => {
                let trip = Trip {
                    path: next,
                    start: Start::AfterModule(m),
                    dir: next_dir,
                    origin: 0,
                    dequeued: false,
                    fresh: true,
                };
                self.run_hops(trip, direct, 1, msg)
            }
        }
    }

    /// A message enters path `id` at its end from outside any run (an
    /// application's send, a received frame): it runs now, with everything
    /// it leads to, or waits in the path's queue.
    // Inlined into its two callers, `send` and `receive_frame`: one call
    // less per trip (issue 26).
    #[inline(always)]
    pub(super) fn enter(&mut self, id: PathId, dir: Dir, msg: &mut Msg) -> Entered {
        if self.config.account_time {
            return self.enter_timed(id, dir, msg);
        }
        let r = self.run_entering(id, dir, msg);
        self.drain_follow_ups();
        r
    }

    /// [`Stack::enter`] with the run's time charged to path `id`: two
    /// clock reads per direct run, only when time is accounted.
    #[inline(never)]
    fn enter_timed(&mut self, id: PathId, dir: Dir, msg: &mut Msg) -> Entered {
        let t0 = std::time::Instant::now();
        let r = self.run_entering(id, dir, msg);
        self.drain_follow_ups();
        if !matches!(r, Entered::Queued | Entered::NoPath) {
            if let Some(p) = self.paths.get_mut(id) {
                p.stats.cpu_ns += t0.elapsed().as_nanos() as u64;
            }
        }
        r
    }

    /// A frame received by driver module `m`, run where it lies (the
    /// driver wrote it there, [`Module::receive`](crate::module::Module::receive)):
    /// classified once, then run. Whatever the run left of it (a refused
    /// frame) goes back to its pool, so `frame` is empty afterwards, ready
    /// for the driver's next frame.
    #[inline]
    pub(super) fn receive_frame(&mut self, m: ModuleId, frame: &mut Msg) {
        let Some((id, dir)) = self.demux.classify(m, frame.as_slice()) else {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
            release(frame);
            return;
        };
        // Every key of the path matched: its stages need not compare those
        // fields again (parse once).
        frame.anno_mut().set_classified(true);
        // Other outcomes are counted on the path.
        if let Entered::NoPath = self.enter(id, dir, frame) {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
        }
        release(frame);
    }

    /// A frame of a burst received by driver module `m`: classified onto
    /// its path's source queue, to run when the scheduler picks the path.
    /// Early discard (thesis §5.2.1, §5.2.3): when the queue is full or the
    /// path holds its memory budget, the frame is dropped here, counted on
    /// the path, before any stage has seen it.
    #[inline(never)]
    fn queue_frame(&mut self, m: ModuleId, mut frame: Msg) {
        // Not inlined, and the only other caller of the classifier on
        // received frames: `receive_frame` keeps its classifier inlined
        // as before, so the fast path's code is that of a stack without
        // ranked paths.
        let Some((id, dir)) = self.demux.classify(m, frame.as_slice()) else {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
            return;
        };
        frame.anno_mut().set_classified(true);
        let now = self.now;
        match self.paths.get_mut(id) {
            Some(path) => match enqueue(path, &mut self.runq, dir, frame, now) {
                Ok(()) => path.refused_in_row = 0,
                // Counted on the path; a run of them may move the discard
                // into the device.
                Err(_) => self.refused_at_classification(m, id),
            },
            None => self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath),
        }
    }

    /// The frames driver modules handed over in their polls, while ranked
    /// paths exist or LDLP schedules: a burst is classified onto the
    /// paths' queues first and then scheduled; a lone frame runs at once.
    #[inline(never)]
    fn receive_handed_over(&mut self) -> usize {
        let mut work = 0;
        if self.shared.rx.len() > 1 {
            // A burst: classify it all, then run by rank (thesis §5.2.2.1).
            while let Some((from, frame)) = self.shared.rx.pop_front() {
                work += 1;
                self.queue_frame(from, frame);
            }
            self.run_pending();
        }
        while let Some((from, mut frame)) = self.shared.rx.pop_front() {
            work += 1;
            self.receive_frame(from, &mut frame);
        }
        work
    }

    /// Frames handed over one at a time by driver module `m` while ranked
    /// paths exist or LDLP schedules: a burst (up to `rx_cap` frames) is
    /// classified onto the paths' queues first, then the scheduler runs
    /// the pending paths — in rank order, so a frame of an important path
    /// does not wait behind those of less important ones that arrived
    /// before it (thesis §5.2.2.1), and under LDLP in batches of like
    /// paths. A single frame (nothing behind it) still runs at once: under
    /// LDLP too, where a batch of one would gain nothing from the queues.
    /// `first` is the frame the driver has already handed over and `got`
    /// what it said of it (the caller asks for it, so that a poll with
    /// nothing received costs one module call; `Last`: nothing behind it,
    /// so it runs alone).
    #[inline(never)]
    fn receive_burst(&mut self, m: ModuleId, mut first: Msg, got: Received) -> usize {
        let mut next = Msg::default();
        let mut got = match got {
            Received::Frame => self.call_module(m, |module, cx| module.receive(cx, &mut next)),
            Received::Nothing | Received::Last => Received::Nothing,
        };
        if got == Received::Nothing {
            self.receive_frame(m, &mut first);
            return 1;
        }
        self.queue_frame(m, first);
        self.queue_frame(m, std::mem::take(&mut next));
        let cap = self.config.rx_cap.max(2);
        let mut work = 2;
        let mut burst = 2;
        loop {
            while burst < cap && got == Received::Frame {
                got = self.call_module(m, |module, cx| module.receive(cx, &mut next));
                if got == Received::Nothing {
                    break;
                }
                self.queue_frame(m, std::mem::take(&mut next));
                burst += 1;
                work += 1;
            }
            self.run_pending();
            if burst < cap || got != Received::Frame {
                break;
            }
            burst = 0;
        }
        work
    }

    /// Polls the modules with background work and asks the drivers for
    /// their frames; the frames a driver receives run one by one as it
    /// hands them over. A driver that only receives is not polled, and a
    /// driver that knows nothing more is ready says so with the frame
    /// ([`Received::Last`]): a poll that finds one frame is one module
    /// call (the driver's fast lane, issue 26).
    pub(super) fn poll_modules(&mut self) -> usize {
        let mut work = 0;
        for k in 0..self.polled.len() {
            let Polled {
                index,
                polls,
                receives,
                when_due,
                ..
            } = self.polled[k];
            if when_due {
                // A deadline is the module's own state: it can only have
                // moved if the module was reached writably since it was
                // last asked (its poll, its stages, `module_mut`). An idle
                // poll asks no module for it (issue 26 item 6).
                let slot = &mut self.modules[index];
                if slot.touched {
                    slot.touched = false;
                    self.polled[k].due = slot.get().poll_at();
                }
                if self.polled[k].due.is_none_or(|t| t > self.now) {
                    continue;
                }
            }
            let m = ModuleId(index as u32);
            if polls {
                // Path creation errors went to `path_created`.
                work += self.run_module(m, |module, cx| module.poll(cx)).0;
                // Module polls may have sent messages (ARP retries) or
                // handed over frames in a batch.
                self.drain_follow_ups();
            }
            // The driver's burst is looked at before it runs when its order
            // matters (ranked paths) or it is to be batched (LDLP).
            if self.ranked > 0 || self.sched != SchedKind::PerMessage {
                if !self.shared.rx.is_empty() {
                    work += self.receive_handed_over();
                }
                if receives {
                    let mut first = Msg::default();
                    let got = self.call_module(m, |module, cx| module.receive(cx, &mut first));
                    if got != Received::Nothing {
                        work += self.receive_burst(m, first, got);
                    }
                }
            } else {
                while let Some((from, mut frame)) = self.shared.rx.pop_front() {
                    work += 1;
                    self.receive_frame(from, &mut frame);
                }
                // Drivers that hand over one frame at a time: each is
                // written into `frame` and runs there.
                if receives {
                    let mut frame = Msg::default();
                    loop {
                        let got = self.call_module(m, |module, cx| module.receive(cx, &mut frame));
                        if got == Received::Nothing {
                            break;
                        }
                        work += 1;
                        self.receive_frame(m, &mut frame);
                        if got == Received::Last {
                            break;
                        }
                    }
                    let_go(frame);
                }
            }
            if receives {
                // Path creation errors went to `path_created`.
                let _ = self.create_requested_paths();
            }
        }
        work
    }

    /// Runs pending paths until none is left. Returns messages processed.
    #[inline]
    pub fn run_pending(&mut self) -> usize {
        // Off the common path (run to completion leaves it empty): one
        // comparison when there is nothing to schedule.
        if self.runq.is_empty() {
            return 0;
        }
        self.run_pending_now()
    }

    #[inline(never)]
    fn run_pending_now(&mut self) -> usize {
        let mut n = 0;
        // One clock read per turn when time is accounted: each turn ends
        // where the next begins.
        let mut clock = self.config.account_time.then(std::time::Instant::now);
        // The loop of `pop_live` and `run_turn_of`, written out: this is
        // every LDLP batch's way in.
        while let Some(p) = self.runq.pop() {
            let Some(path) = self.paths.get_mut(p.path) else {
                continue;
            };
            if p.stamp != path.stamp || !path.queued[p.dir.index()] {
                continue;
            }
            path.queued[p.dir.index()] = false;
            n += match self.sched {
                SchedKind::PerMessage => self.run_one(p.path, p.dir, &mut clock),
                SchedKind::Ldlp { batch } => {
                    self.run_batch(p.path, p.dir, p.seq_key, batch, &mut clock)
                }
            };
        }
        n
    }

    /// Runs one scheduling turn: the best pending path's quantum
    /// ([`StackConfig::quantum`](crate::StackConfig::quantum) messages,
    /// per-message) or one LDLP batch of its class. Returns the messages
    /// taken from source queues (0: nothing was pending). [`Stack::poll`]
    /// runs turns until nothing is pending; this is for who drives the
    /// scheduler on a virtual clock (a simulation charging each message a
    /// processing time).
    pub fn run_turn(&mut self) -> usize {
        let mut clock = self.config.account_time.then(std::time::Instant::now);
        match self.pop_live() {
            Some(p) => self.run_turn_of(p, &mut clock),
            None => 0,
        }
    }

    /// The best run-queue entry still current (stale ones are skipped),
    /// its path marked as no longer queued in that direction.
    #[inline]
    fn pop_live(&mut self) -> Option<Pending> {
        while let Some(p) = self.runq.pop() {
            let Some(path) = self.paths.get_mut(p.path) else {
                continue;
            };
            if p.stamp != path.stamp || !path.queued[p.dir.index()] {
                continue;
            }
            path.queued[p.dir.index()] = false;
            return Some(p);
        }
        None
    }

    #[inline]
    fn run_turn_of(&mut self, p: Pending, clock: &mut Option<std::time::Instant>) -> usize {
        match self.sched {
            SchedKind::PerMessage => self.run_one(p.path, p.dir, clock),
            SchedKind::Ldlp { batch } => self.run_batch(p.path, p.dir, p.seq_key, batch, clock),
        }
    }

    /// Per-message: up to a quantum of queued messages of path `id`, each
    /// through the whole path with its follow-ups (Scout's fixed-priority
    /// round robin, thesis §3.5.1: the quantum bounds how long one path
    /// keeps its peers of equal rank waiting).
    fn run_one(&mut self, id: PathId, dir: Dir, clock: &mut Option<std::time::Instant>) -> usize {
        let quantum = self.config.quantum.max(1);
        let src = QueueKind::source(dir);
        let now = self.now;
        let mut ran = 0;
        while ran < quantum {
            let Some(path) = self.paths.get_mut(id) else {
                break;
            };
            let Some(msg) = path.pop_queue(src) else {
                break;
            };
            // More input waiting: back in the run queue behind its peers
            // now, so that input arriving meanwhile queues behind it; the
            // rest of the quantum runs first.
            if !path.queues[src as usize].is_empty() && !path.queued[dir.index()] {
                requeue(path, &mut self.runq, dir, now);
            }
            let mut msg = msg;
            let mut trip = Trip::enter(id, dir);
            trip.dequeued = true;
            self.run(trip, &mut msg);
            self.drain_follow_ups();
            ran += 1;
        }
        if ran > 0 {
            self.charge_time(clock, std::slice::from_ref(&id));
        }
        ran
    }

    /// Charges the time since `clock` to `paths` (shared out evenly) and
    /// moves `clock` on: one clock read per turn.
    pub(super) fn charge_time(&mut self, clock: &mut Option<std::time::Instant>, paths: &[PathId]) {
        let Some(t0) = *clock else {
            return;
        };
        let t1 = std::time::Instant::now();
        *clock = Some(t1);
        let per = (t1 - t0).as_nanos() as u64 / paths.len().max(1) as u64;
        for &id in paths {
            if let Some(p) = self.paths.get_mut(id) {
                p.stats.cpu_ns += per;
            }
        }
    }

    /// Processes follow-ups (turned, emitted and handed-on messages),
    /// grouped by the message of the batch they came from, each group
    /// breadth-first. New follow-ups join the end of their origin's group.
    #[inline]
    pub(super) fn drain_follow_ups(&mut self) {
        // Called after every trip and module call: the empty case is the
        // common one and costs two comparisons at the call site.
        if !self.shared.follow_ups.is_empty() || !self.shared.path_ops.is_empty() {
            self.drain_follow_ups_now();
        }
    }

    /// Opens and deletes the paths stages asked for during the run
    /// ([`Cx::open_path`](crate::stage::Cx::open_path),
    /// [`Cx::delete_path`](crate::stage::Cx::delete_path)) or a module
    /// during its call ([`ModCx::request_path`](crate::ModCx::request_path)),
    /// in the order asked; a message that opened a path becomes a
    /// follow-up on it. The first creation error, if any (a module's
    /// initialization fails with it).
    // OUT (feature `outline`): not called in the steady ping-pong
    // (callgrind), so its call sites move out of line.
    #[cfg_attr(feature = "outline", cold)]
    #[inline(never)]
    pub(super) fn run_path_ops(&mut self) -> Option<PathError> {
        let mut first_error = None;
        for op in std::mem::take(&mut self.shared.path_ops) {
            match op {
                PathOp::Delete(id) => {
                    let _ = self.path_delete(id);
                }
                PathOp::Open {
                    module,
                    attrs,
                    tag,
                    first,
                } => {
                    let result = self.path_create(module, attrs);
                    self.modules[module.0 as usize]
                        .get_mut()
                        .path_created(tag, result.as_ref().copied());
                    let id = match result {
                        Ok(id) => id,
                        Err(e) => {
                            first_error.get_or_insert(e);
                            continue;
                        }
                    };
                    let Some(msg) = first else {
                        continue;
                    };
                    let len = self.paths.get(id).map_or(0, |p| p.len());
                    // It enters the new path's first stage going up.
                    let f = FollowUp {
                        path: id,
                        start: if len > 1 { Start::After(1) } else { Start::End },
                        dir: Dir::Up,
                        msg,
                        origin: 0,
                    };
                    if self.shared.follow_up(f).is_err() {
                        self.modules[module.0 as usize]
                            .drops
                            .add(CoreDropReason::FollowUpOverflow);
                    }
                }
            }
        }
        first_error
    }

    // OUT (feature `outline`): not called in the steady ping-pong
    // (callgrind), so its call sites move out of line.
    #[cfg_attr(feature = "outline", cold)]
    #[inline(never)]
    fn drain_follow_ups_now(&mut self) {
        loop {
            self.drain_follow_ups_once();
            if self.shared.path_ops.is_empty() {
                break;
            }
            self.run_path_ops();
            if self.shared.follow_ups.is_empty() {
                break;
            }
        }
    }

    fn drain_follow_ups_once(&mut self) {
        // The common case — one follow-up (a segment a stage emitted, a
        // message handed on) and nothing else waiting — runs straight from
        // where the stage left it: no work list to go through. In the same
        // order as below: what it leads to runs after it.
        while self.work.is_empty() && self.shared.follow_ups.len() == 1 {
            let Some(mut f) = self.shared.follow_ups.pop() else {
                break;
            };
            self.run_follow_up(&mut f);
        }
        if self.shared.follow_ups.is_empty() {
            return;
        }
        let mut work = std::mem::take(&mut self.work);
        // Stable by origin: emission order is kept within a group. (Already
        // sorted after a per-message run, where every origin is 0.)
        if !self.shared.follow_ups.is_sorted_by_key(|f| f.origin) {
            self.shared.follow_ups.sort_by_key(|f| f.origin);
        }
        work.extend(self.shared.follow_ups.drain(..));
        // `self.work` must look non-empty while items wait in `work`, so
        // that a turned message does not jump ahead of them.
        while let Some(mut f) = work.pop_front() {
            let origin = f.origin;
            std::mem::swap(&mut self.work, &mut work);
            self.run_follow_up(&mut f);
            std::mem::swap(&mut self.work, &mut work);
            if !self.shared.follow_ups.is_empty() {
                let at = work
                    .iter()
                    .position(|w| w.origin > origin)
                    .unwrap_or(work.len());
                for (i, g) in self.shared.follow_ups.drain(..).enumerate() {
                    work.insert(at + i, g);
                }
            }
        }
        self.work = work;
    }

    /// Runs follow-up `f` from where it was handed on.
    #[inline(always)]
    pub(super) fn run_follow_up(&mut self, f: &mut FollowUp) {
        let trip = Trip {
            path: f.path,
            start: f.start,
            dir: f.dir,
            origin: f.origin,
            dequeued: false,
            fresh: false,
        };
        self.run(trip, &mut f.msg);
    }
}

/// Gives a finished trip's message back to its pool, leaving an empty
/// one (no buffer, nothing to free) with the trip's owner.
#[inline]
fn release(msg: &mut Msg) {
    if msg.has_buffer() {
        drop(std::mem::take(msg));
    }
}

/// Lets go of a receive slot: [`Stack::receive_frame`] leaves it empty,
/// and an empty message (no buffer, no pool) owns nothing, so it is
/// forgotten rather than dropped — `Msg`'s drop glue is an out-of-line
/// call, once per poll for nothing.
#[inline(always)]
fn let_go(slot: Msg) {
    if slot.has_buffer() {
        drop(slot);
    } else {
        std::mem::forget(slot);
    }
}

/// Where a message handed on after module `m`'s stage starts on `path`:
/// right after `m`'s stage if the path runs through `m` (it has been
/// processed up to there), else at the path's end.
fn resolve_after(path: &Path, m: ModuleId, dir: Dir) -> Start {
    let at = match dir {
        Dir::Up => path.view.stage_modules.iter().rposition(|&x| x == m),
        Dir::Down => path.view.stage_modules.iter().position(|&x| x == m),
    };
    at.map_or(Start::End, Start::After)
}

/// A message went past the last stage of `path` in `dir`: the end module
/// may route it onto another path (dynamic routing at a short path's end,
/// thesis Fig. 2.5); otherwise it goes to the sink queue.
fn leave(
    path: &mut Path,
    dir: Dir,
    msg: &mut Msg,
    modules: &mut [super::module_slot::ModuleSlot],
    rcx: &mut RouteCx<'_>,
) -> Onward {
    path.stats.msgs_out[dir.index()] += 1;
    path.stats.bytes_out[dir.index()] += msg.len() as u64;
    let end_pos = match dir {
        Dir::Down => path.len() - 1,
        Dir::Up => 0,
    };
    let m = path.view.stage_modules[end_pos];
    rcx.module_id = m;
    match modules[m.0 as usize].get_mut().route_end(dir, msg, rcx) {
        EndRoute::Continue(next, next_dir) if next != path.view.id => {
            return Onward::Path(next, next_dir, m);
        }
        EndRoute::Drop(reason) => {
            modules[m.0 as usize].drops.add(reason);
            return Onward::Done;
        }
        EndRoute::Continue(..) | EndRoute::Sink => {}
    }
    // A full sink queue or an exhausted memory budget is counted on the
    // path.
    let _ = path.push_queue(QueueKind::sink(dir), std::mem::take(msg));
    Onward::Done
}

/// Puts a message on a path's source queue and makes the path pending.
/// A refusal (queue full, memory budget exhausted) is counted on the path
/// and gives the message back with its reason.
pub(super) fn enqueue(
    path: &mut Path,
    runq: &mut RunQueue,
    dir: Dir,
    msg: Msg,
    now: Instant,
) -> Result<(), (Msg, CoreDropReason)> {
    // The offered rate, refused messages included: what a computed
    // deadline must keep up with (kept for realtime paths only).
    if path.view.sched.realtime {
        path.arrivals.record(now);
    }
    path.push_queue(QueueKind::source(dir), msg)?;
    if !path.queued[dir.index()] {
        requeue(path, runq, dir, now);
    }
    Ok(())
}

/// Puts a path with queued input in direction `dir` in the run queue,
/// ranked by its scheduling parameters; a realtime path by the deadline
/// in force at `now` ([`Path::deadline`]).
#[inline(always)]
pub(super) fn requeue(path: &mut Path, runq: &mut RunQueue, dir: Dir, now: Instant) {
    path.queued[dir.index()] = true;
    let s = path.view.sched;
    let deadline = if s.realtime {
        path.deadline(dir, now)
    } else {
        None
    };
    runq.push(
        path.view.id,
        dir,
        path.seq_key,
        path.stamp,
        s.realtime,
        deadline,
        s.priority,
    );
}
