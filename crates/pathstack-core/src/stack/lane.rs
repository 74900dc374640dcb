//! The lane: the way a message entering a path from outside any run (a
//! frame from the device ring, an application's send) takes when nothing
//! about the stack or the path asks for more.
//!
//! Scout's common case is the cheap case (thesis §2.2): an established,
//! specialized path with nothing queued is a lookup by id and a call into
//! its executor — the fused form — whose result is the sink queue or the
//! device. What could make a trip take the general way is read where it
//! is kept:
//!
//! - the stack's part, once, when it changes: per-message scheduling and
//!   no time accounting, one flag ([`Stack::lane_open`], recomputed by
//!   [`Stack::reopen_lane`] when the scheduler is switched). Off it, the
//!   same trip runs behind the flag (`enter_general`): with the run's time
//!   charged, or under LDLP, where only a message that enters alone runs
//!   direct (the lone-message rule, [`Stack::runs_direct`]) and the rest
//!   queue to be batched;
//! - the path's part, per trip, from the path itself (it changes with
//!   every message queued or buffer held): no input queued in the
//!   direction (per-path order) and its memory budget not spent (early
//!   discard, thesis §5.2.3). The path is found by its id with one
//!   generation compare (`PathTable::get_mut`), so a deleted or remade
//!   path is never reached by a stale id.
//!
//! Everything else — a queued path, a spent budget, a message LDLP
//! batches, one routed on at the path's end or turned while others wait,
//! time accounting —
//! takes the general trip (`trip.rs`), out of line, which remains the
//! reference and decides and counts as before: the lane only leaves out
//! the work that the general trip would have found nothing to do in
//! (issue 26 items 1, 3, 6).

use super::trip::{release, settle, Entered, Settled, Trip, TripEnds};
use super::Stack;
use crate::exec::{entry, Fate};
use crate::ids::{Dir, PathId};
use crate::msg::Msg;
use crate::path::QueueKind;
use crate::runtime::Start;
use crate::sched::SchedKind;

impl Stack {
    /// A message enters path `id` at its end from outside any run (an
    /// application's send, a received frame): it runs now, with everything
    /// it leads to, or waits in the path's queue.
    // Inlined into its two callers, `send` and `receive_frame`: one call
    // less per trip (issue 26).
    #[inline(always)]
    pub(super) fn enter(&mut self, id: PathId, dir: Dir, msg: &mut Msg) -> Entered {
        if !self.lane_open {
            return self.enter_general(id, dir, msg);
        }
        // Per-message: every trip runs direct.
        let r = self.run_lane(id, dir, true, msg);
        self.drain_follow_ups();
        r
    }

    /// [`Stack::enter`] off the open lane: with the run's time charged to
    /// the path (out of line), or under LDLP, where only a message that
    /// enters alone runs direct ([`Stack::runs_direct`]) and the rest
    /// queue to be batched. Inlined as well: out of line, the call and a
    /// second prologue cost LDLP's round trip 60 instructions; the
    /// per-message way runs only the first copy.
    #[inline(always)]
    fn enter_general(&mut self, id: PathId, dir: Dir, msg: &mut Msg) -> Entered {
        if self.config.account_time {
            return self.enter_timed(id, dir, msg);
        }
        let direct = self.runs_direct(true);
        let r = self.run_lane(id, dir, direct, msg);
        self.drain_follow_ups();
        r
    }

    /// Recomputes [`Stack::lane_open`]: per-message scheduling (every trip
    /// runs direct) and no time accounting. Called when the stack is made
    /// and when its scheduler is switched.
    pub(super) fn reopen_lane(&mut self) {
        self.lane_open = self.sched == SchedKind::PerMessage && !self.config.account_time;
    }

    /// The lane's trip: the path looked up by id, its own conditions
    /// checked, its executor run, and the two fates an established path's
    /// message meets — past the path's end into the sink queue, or
    /// consumed (out of the device) — settled in place. Anything else
    /// goes on in the general trip.
    #[inline(always)]
    pub(super) fn run_lane(
        &mut self,
        id: PathId,
        dir: Dir,
        direct: bool,
        msg: &mut Msg,
    ) -> Entered {
        let now = self.now;
        let turn_in_place = self.work.is_empty();
        let Some(path) = self.paths.get_mut(id) else {
            return Entered::NoPath;
        };
        if path.queued[dir.index()] || !direct || path.over_budget() {
            return self.run_queued_or_refused(id, dir, direct, msg);
        }
        path.stats.msgs_in[dir.index()] += 1;
        path.stats.bytes_in[dir.index()] += msg.len() as u64;
        let pos = entry(dir, path.len());
        let fate = {
            let (exec, mut env, _) = path.split(now, &mut self.modules, &mut self.shared, 0);
            env.turn_in_place = turn_in_place;
            exec.run(pos, dir, msg, &mut env)
        };
        match fate {
            // The end module routes nothing (`Path::sink_ends`).
            Fate::Out(d) if path.sink_ends[d.index()] => {
                path.stats.msgs_out[d.index()] += 1;
                path.stats.bytes_out[d.index()] += msg.len() as u64;
                path.push_queue_from(QueueKind::sink(d), msg);
                release(msg);
                Entered::Ran
            }
            Fate::Consumed => {
                path.stats.consumed += 1;
                release(msg);
                Entered::Ran
            }
            fate => self.settle_off_lane(id, fate, turn_in_place, msg),
        }
    }

    /// A message for a path with input queued in its direction, one LDLP
    /// batches (`direct` false), or one for a path whose budget is spent:
    /// the general trip, which queues it behind that input or refuses it,
    /// counted on the path.
    #[inline(never)]
    fn run_queued_or_refused(
        &mut self,
        id: PathId,
        dir: Dir,
        direct: bool,
        msg: &mut Msg,
    ) -> Entered {
        let trip = Trip {
            fresh: true,
            ..Trip::enter(id, dir)
        };
        self.run_hops(trip, direct, 0, msg)
    }

    /// A fate the lane does not settle in place (dropped, turned while
    /// others wait, routed on by the end module): `settle`, as the general
    /// trip settles it, and the general trip from hop 1 for a message
    /// routed on to another path.
    #[inline(never)]
    fn settle_off_lane(
        &mut self,
        id: PathId,
        fate: Fate,
        turn_in_place: bool,
        msg: &mut Msg,
    ) -> Entered {
        let now = self.now;
        let Some(path) = self.paths.get_mut(id) else {
            return Entered::NoPath;
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
                // Routed on: the lane ran it direct, so does the rest.
                self.run_hops(trip, true, 1, msg)
            }
        }
    }
}
