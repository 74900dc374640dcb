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

use super::pending::enqueue;
use super::Stack;
use crate::drop_reason::{CoreDropReason, DropReason};
use crate::exec::{entry, step, Fate};
use crate::ids::{Dir, ModuleId, PathId};
use crate::module::{EndRoute, RouteCx};
use crate::msg::Msg;
use crate::ops::Ops;
use crate::path::{Path, QueueKind};
use crate::runtime::{FollowUp, Start};
use crate::sched::SchedKind;
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
/// path). One body for [`Stack::run_hops`] and the lane's
/// `Stack::settle_off_lane` (`lane.rs`).
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
        // The end module routes nothing (`Path::sink_ends`): into the
        // sink queue, with no routing call and no context to build.
        Fate::Out(d) if path.sink_ends[d.index()] => {
            count_out(path, d, msg);
            into_sink(path, d, msg);
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
    /// first hop the lane ran goes on from hop 1, `lane.rs`).
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

    /// [`Stack::enter`] with the run's time charged to path `id`: two
    /// clock reads per direct run, only when time is accounted.
    #[inline(never)]
    pub(super) fn enter_timed(&mut self, id: PathId, dir: Dir, msg: &mut Msg) -> Entered {
        let t0 = std::time::Instant::now();
        let direct = self.runs_direct(true);
        let r = self.run_lane(id, dir, direct, msg);
        self.drain_follow_ups();
        if !matches!(r, Entered::Queued | Entered::NoPath) {
            if let Some(p) = self.paths.get_mut(id) {
                p.stats.cpu_ns += t0.elapsed().as_nanos() as u64;
            }
        }
        r
    }
}

/// Gives a finished trip's message back to its pool, leaving an empty
/// one (no buffer, nothing to free) with the trip's owner.
#[inline]
pub(super) fn release(msg: &mut Msg) {
    if msg.has_buffer() {
        drop(std::mem::take(msg));
    }
}

/// Lets go of a receive slot: [`Stack::receive_frame`] leaves it empty,
/// and an empty message (no buffer, no pool) owns nothing, so it is
/// forgotten rather than dropped — `Msg`'s drop glue is an out-of-line
/// call, once per poll for nothing.
#[inline(always)]
pub(super) fn let_go(slot: Msg) {
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
    count_out(path, dir, msg);
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
    into_sink(path, dir, msg);
    Onward::Done
}

/// A message leaves `path` travelling in `dir`: counted.
#[inline(always)]
fn count_out(path: &mut Path, dir: Dir, msg: &Msg) {
    path.stats.msgs_out[dir.index()] += 1;
    path.stats.bytes_out[dir.index()] += msg.len() as u64;
}

/// A message past the last stage of `path` in `dir` goes into the sink
/// queue.
#[inline(always)]
fn into_sink(path: &mut Path, dir: Dir, msg: &mut Msg) {
    // A full sink queue or an exhausted memory budget is counted on the
    // path; the refused message goes back to its pool now, as before any
    // follow-up runs.
    path.push_queue_from(QueueKind::sink(dir), msg);
    release(msg);
}
