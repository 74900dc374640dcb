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
//! module sequence (`ldlp.rs`), and the run queue that orders pending
//! paths by priority and deadline. Messages produced while another is
//! processed (emitted, sent on another path, turned while others wait) are
//! follow-ups, run after the message that produced them, in order.

use super::{Polled, Stack};
use crate::drop_reason::{CoreDropReason, DropReason};
use crate::exec::{entry, step, Fate};
use crate::ids::{Dir, ModuleId, PathId};
use crate::module::{EndRoute, RouteCx};
use crate::msg::Msg;
use crate::path::{Path, QueueKind};
use crate::runtime::{FollowUp, PathOp, Start};
use crate::sched::{RunQueue, SchedKind};

/// Most paths one message may run through in one trip (a route that
/// keeps handing a message on at path ends is a routing loop).
const MAX_HOPS: usize = 16;

/// What became of a message handed to [`Stack::run`] at a path's end.
pub(super) enum Entered {
    /// It ran (or was handed on as a follow-up).
    Ran,
    /// It waits in the path's source queue for the scheduler.
    Queued,
    /// The path's source queue was full (counted on the path).
    QueueFull(Msg),
    /// No such path.
    NoPath(Msg),
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

/// A message to run: where it starts and what it came from.
pub(super) struct Trip {
    pub path: PathId,
    pub start: Start,
    pub dir: Dir,
    pub msg: Msg,
    /// Its batch position (LDLP), for follow-up order.
    pub origin: u32,
    /// Taken from the path's own source queue by the scheduler: it runs
    /// even though more input waits behind it.
    pub dequeued: bool,
}

impl Trip {
    /// A message entering path `path` at its end, travelling in `dir`.
    pub fn enter(path: PathId, dir: Dir, msg: Msg) -> Self {
        Trip {
            path,
            start: Start::End,
            dir,
            msg,
            origin: 0,
            dequeued: false,
        }
    }
}

/// Where a message that went past a path's last stage goes next.
enum Onward {
    /// Into the sink queue, dropped, or nowhere: done.
    Done,
    /// On along another path, after the stage of the module it left by.
    Path(PathId, Dir, ModuleId, Msg),
}

impl Stack {
    // ----- messages in and out -------------------------------------------

    /// Sends `msg` on path `id` in direction `dir`: it enters at `end[0]`
    /// (down, what an application sends) or `end[1]` (up). Under per-message scheduling, on a
    /// path with nothing queued, it runs through the path now — and out of
    /// the device, if that is where the path ends — at the time of the
    /// last [`Stack::poll`]; otherwise it waits in the path's source queue
    /// for the next poll. Fails, giving the message back, if the path does
    /// not exist or its queue is full; fails too when it ran and a stage
    /// of the path dropped it (a message carried on to other paths, or
    /// turned around, is not followed further).
    pub fn send(&mut self, id: PathId, dir: Dir, mut msg: Msg) -> Result<(), SendError> {
        // A message handed back in (a received datagram reused for the
        // reply) was not classified onto this trip.
        msg.anno_mut().set_classified(false);
        match self.enter(id, dir, msg) {
            Entered::Ran | Entered::Queued => Ok(()),
            Entered::QueueFull(m) => Err(SendError::QueueFull(m)),
            Entered::NoPath(m) => Err(SendError::NoPath(m)),
            Entered::Dropped(r) => Err(SendError::Dropped(r)),
        }
    }

    /// Puts `msg` on path `id`'s source queue for direction `dir` without
    /// running it: it runs at the next [`Stack::poll`], in the order of
    /// the run queue (realtime paths by deadline, then by priority) or in
    /// an LDLP batch with the input of like paths. For applications that
    /// hand over several messages at once and want them scheduled
    /// together. Gives the message back if the path does not exist or the
    /// queue is full.
    pub fn enqueue(&mut self, id: PathId, dir: Dir, msg: Msg) -> Result<(), Msg> {
        let Some(path) = self.paths.get_mut(id) else {
            return Err(msg);
        };
        enqueue(path, &mut self.runq, dir, msg).inspect_err(|_| {
            path.count_drop(CoreDropReason::SourceFull);
        })
    }

    /// Takes the next message that left path `id` travelling in `dir`
    /// (from its sink queue).
    pub fn recv(&mut self, id: PathId, dir: Dir) -> Option<Msg> {
        self.paths.get_mut(id)?.queues[QueueKind::sink(dir) as usize].pop()
    }

    /// Hands `frame` to the stack as if driver module `module` had received
    /// it: it is classified and run now, like a frame from the device.
    /// For applications that run their own driver loop, and for tests.
    /// Returns `false` when `module` does not exist.
    pub fn inject(&mut self, module: ModuleId, frame: Msg) -> bool {
        if module.0 as usize >= self.modules.len() {
            return false;
        }
        self.receive_frame(module, frame);
        true
    }

    // ----- running -------------------------------------------------------

    /// Runs a trip to its end: through the path from `trip.start`, turning
    /// in place while nothing else waits, then on to the next path when
    /// the end module routes it there. A trip entering a path at its end
    /// waits in the path's source queue instead when LDLP schedules or
    /// the path already has input queued.
    pub(super) fn run(&mut self, trip: Trip) -> Entered {
        let Trip {
            path: mut id,
            mut start,
            mut dir,
            mut msg,
            origin,
            dequeued,
        } = trip;
        let now = self.now;
        for hop in 0..MAX_HOPS {
            let Some(path) = self.paths.get_mut(id) else {
                return Entered::NoPath(msg);
            };
            if let Start::AfterModule(m) = start {
                start = resolve_after(path, m, dir);
            }
            let len = path.len();
            let mut pos = match start {
                Start::End => {
                    let queue_first = !dequeued || hop > 0;
                    if queue_first
                        && (path.queued[dir.index()] || self.sched != SchedKind::PerMessage)
                    {
                        return match enqueue(path, &mut self.runq, dir, msg) {
                            Ok(()) => Entered::Queued,
                            Err(msg) => {
                                path.count_drop(CoreDropReason::SourceFull);
                                Entered::QueueFull(msg)
                            }
                        };
                    }
                    path.stats.msgs_in[dir.index()] += 1;
                    path.stats.bytes_in[dir.index()] += msg.len() as u64;
                    Some(entry(dir, len))
                }
                Start::Dequeued => Some(entry(dir, len)),
                Start::After(p) => step(p, dir, len),
                Start::AfterModule(_) => unreachable!("resolved above"),
            };
            // Through the stages; a message turned around goes on in place
            // when it would be the next follow-up anyway.
            let fate = loop {
                let Some(p) = pos else {
                    break Fate::Out(dir);
                };
                let fate = {
                    let (exec, mut env, _) =
                        path.split(now, &mut self.modules, &mut self.shared, origin);
                    exec.run(p, dir, &mut msg, &mut env)
                };
                if let Fate::Turned { .. } = fate {
                    // Turned around, it is no longer the message the
                    // classifier matched.
                    msg.anno_mut().set_classified(false);
                }
                match fate {
                    Fate::Turned { from, dir: d }
                        if self.shared.follow_ups.is_empty() && self.work.is_empty() =>
                    {
                        dir = d;
                        pos = step(from, d, len);
                    }
                    other => break other,
                }
            };
            match fate {
                Fate::Consumed => path.stats.consumed += 1,
                Fate::Dropped(r) => {
                    path.count_drop(r);
                    if hop == 0 {
                        return Entered::Dropped(r);
                    }
                }
                Fate::Turned { from, dir } => {
                    let f = FollowUp {
                        path: id,
                        start: Start::After(from),
                        dir,
                        msg,
                        origin,
                    };
                    if self.shared.follow_up(f).is_err() {
                        path.count_drop(CoreDropReason::FollowUpOverflow);
                    }
                }
                Fate::Out(d) => {
                    let mut rcx = RouteCx {
                        now,
                        path: id,
                        module_id: ModuleId(0),
                        demux: &self.demux,
                        shared: &mut self.shared,
                    };
                    match leave(path, d, msg, &mut self.modules, &mut rcx) {
                        Onward::Done => {}
                        Onward::Path(next, next_dir, m, next_msg) => {
                            let f = FollowUp {
                                path: next,
                                start: Start::AfterModule(m),
                                dir: next_dir,
                                msg: next_msg,
                                origin,
                            };
                            if !(self.shared.follow_ups.is_empty() && self.work.is_empty()) {
                                // Others wait: keep their order.
                                if self.shared.follow_up(f).is_err() {
                                    self.modules[m.0 as usize]
                                        .drops
                                        .add(CoreDropReason::FollowUpOverflow);
                                }
                                return Entered::Ran;
                            }
                            id = f.path;
                            start = f.start;
                            dir = f.dir;
                            msg = f.msg;
                            continue;
                        }
                    }
                }
            }
            return Entered::Ran;
        }
        if let Some(path) = self.paths.get_mut(id) {
            path.count_drop(CoreDropReason::RouteLoop);
        }
        Entered::Ran
    }

    /// A message enters path `id` at its end from outside any run (an
    /// application's send, a received frame): it runs now, with everything
    /// it leads to, or waits in the path's queue.
    pub(super) fn enter(&mut self, id: PathId, dir: Dir, msg: Msg) -> Entered {
        let r = self.run(Trip::enter(id, dir, msg));
        self.drain_follow_ups();
        r
    }

    /// A frame received by driver module `m`: classified once, then run.
    pub(super) fn receive_frame(&mut self, m: ModuleId, mut frame: Msg) {
        let Some((id, dir)) = self.demux.classify(m, frame.as_slice()) else {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
            return;
        };
        // Every key of the path matched: its stages need not compare those
        // fields again (parse once).
        frame.anno_mut().set_classified(true);
        // Other outcomes are counted on the path.
        if let Entered::NoPath(_) = self.enter(id, dir, frame) {
            self.modules[m.0 as usize].drops.add(CoreDropReason::NoPath);
        }
    }

    /// Polls the modules with background work; the frames a driver
    /// receives run one by one as it hands them over.
    pub(super) fn poll_modules(&mut self) -> usize {
        let mut work = 0;
        for k in 0..self.polled.len() {
            let Polled {
                index,
                receives,
                when_due,
            } = self.polled[k];
            if when_due
                && self.modules[index]
                    .module
                    .poll_at()
                    .is_none_or(|t| t > self.now)
            {
                continue;
            }
            let m = ModuleId(index as u32);
            // Path creation errors went to `path_created`.
            work += self.run_module(m, |module, cx| module.poll(cx)).0;
            // Module polls may have sent messages (ARP retries) or handed
            // over frames in a batch.
            self.drain_follow_ups();
            while let Some((from, frame)) = self.shared.rx.pop_front() {
                work += 1;
                self.receive_frame(from, frame);
            }
            // Drivers that hand over one frame at a time.
            if receives {
                while let Some(frame) = self.call_module(m, |module, cx| module.receive(cx)) {
                    work += 1;
                    self.receive_frame(m, frame);
                }
                // Path creation errors went to `path_created`.
                let _ = self.create_requested_paths(m);
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
        while let Some(p) = self.runq.pop() {
            let Some(path) = self.paths.get_mut(p.path) else {
                continue;
            };
            if p.stamp != path.stamp || !path.queued[p.dir.index()] {
                continue;
            }
            path.queued[p.dir.index()] = false;
            n += match self.sched {
                SchedKind::PerMessage => self.run_one(p.path, p.dir),
                SchedKind::Ldlp { batch } => self.run_batch(p.path, p.dir, p.seq_key, batch),
            };
        }
        n
    }

    /// Per-message: one queued message of path `id` through the whole
    /// path, then its follow-ups.
    fn run_one(&mut self, id: PathId, dir: Dir) -> usize {
        let t0 = self.config.account_time.then(std::time::Instant::now);
        let Some(path) = self.paths.get_mut(id) else {
            return 0;
        };
        let Some(msg) = path.queues[QueueKind::source(dir) as usize].pop() else {
            return 0;
        };
        // More input waiting: back in the run queue behind its peers.
        if !path.queues[QueueKind::source(dir) as usize].is_empty() {
            requeue(path, &mut self.runq, dir);
        }
        let mut trip = Trip::enter(id, dir, msg);
        trip.dequeued = true;
        self.run(trip);
        self.drain_follow_ups();
        if let Some(t0) = t0 {
            if let Some(p) = self.paths.get_mut(id) {
                p.stats.cpu_ns += t0.elapsed().as_nanos() as u64;
            }
        }
        1
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
    /// [`Cx::delete_path`](crate::stage::Cx::delete_path)), in the order
    /// asked; a message that opened a path becomes a follow-up on it.
    // OUT (feature `outline`): not called in the steady ping-pong
    // (callgrind), so its call sites move out of line.
    #[cfg_attr(feature = "outline", cold)]
    #[inline(never)]
    fn run_path_ops(&mut self) {
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
                        .module
                        .path_created(tag, result.as_ref().copied());
                    let (Ok(id), Some(msg)) = (result, first) else {
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
        let mut work = std::mem::take(&mut self.work);
        // Stable by origin: emission order is kept within a group. (Already
        // sorted after a per-message run, where every origin is 0.)
        if !self.shared.follow_ups.is_sorted_by_key(|f| f.origin) {
            self.shared.follow_ups.sort_by_key(|f| f.origin);
        }
        work.extend(self.shared.follow_ups.drain(..));
        // `self.work` must look non-empty while items wait in `work`, so
        // that a turned message does not jump ahead of them.
        while let Some(f) = work.pop_front() {
            let origin = f.origin;
            std::mem::swap(&mut self.work, &mut work);
            self.run(Trip {
                path: f.path,
                start: f.start,
                dir: f.dir,
                msg: f.msg,
                origin,
                dequeued: false,
            });
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
}

/// Where a message handed on after module `m`'s stage starts on `path`:
/// right after `m`'s stage if the path runs through `m` (it has been
/// processed up to there), else at the path's end.
fn resolve_after(path: &Path, m: ModuleId, dir: Dir) -> Start {
    let at = match dir {
        Dir::Up => path.stage_modules.iter().rposition(|&x| x == m),
        Dir::Down => path.stage_modules.iter().position(|&x| x == m),
    };
    at.map_or(Start::End, Start::After)
}

/// A message went past the last stage of `path` in `dir`: the end module
/// may route it onto another path (dynamic routing at a short path's end,
/// thesis Fig. 2.5); otherwise it goes to the sink queue.
fn leave(
    path: &mut Path,
    dir: Dir,
    mut msg: Msg,
    modules: &mut [crate::module::ModuleSlot],
    rcx: &mut RouteCx<'_>,
) -> Onward {
    path.stats.msgs_out[dir.index()] += 1;
    path.stats.bytes_out[dir.index()] += msg.len() as u64;
    let end_pos = match dir {
        Dir::Down => path.len() - 1,
        Dir::Up => 0,
    };
    let m = path.stage_modules[end_pos];
    rcx.module_id = m;
    match modules[m.0 as usize].module.route_end(dir, &mut msg, rcx) {
        EndRoute::Continue(next, next_dir) if next != path.id => {
            return Onward::Path(next, next_dir, m, msg);
        }
        EndRoute::Drop(reason) => {
            modules[m.0 as usize].drops.add(reason);
            return Onward::Done;
        }
        EndRoute::Continue(..) | EndRoute::Sink => {}
    }
    if path.queues[QueueKind::sink(dir) as usize]
        .push(msg)
        .is_err()
    {
        path.count_drop(CoreDropReason::SinkFull);
    }
    Onward::Done
}

/// Puts a message on a path's source queue and makes the path pending.
pub(super) fn enqueue(path: &mut Path, runq: &mut RunQueue, dir: Dir, msg: Msg) -> Result<(), Msg> {
    path.queues[QueueKind::source(dir) as usize].push(msg)?;
    if !path.queued[dir.index()] {
        requeue(path, runq, dir);
    }
    Ok(())
}

/// Puts a path with queued input in direction `dir` in the run queue.
pub(super) fn requeue(path: &mut Path, runq: &mut RunQueue, dir: Dir) {
    path.queued[dir.index()] = true;
    let s = path.sched;
    runq.push(
        path.id,
        dir,
        path.seq_key,
        path.stamp,
        s.realtime,
        s.deadline,
        s.priority,
    );
}
