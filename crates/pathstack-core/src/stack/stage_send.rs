//! An application's call into one of a path's stages, and the message it
//! sends down the path from that stage in the same call.
//!
//! [`Stack::with_stage_at`] and [`Stack::send_from_stage`] are one
//! implementation, [`Stack::call_stage`]: it finds the stage by its
//! handle, lends it with its full context, and runs *one* message of the
//! call in place — through the path's executor from the stage's
//! neighbour (the path's fast form when it is specialized) to the device,
//! then where the path's end routes it — before the follow-up list is
//! drained. Which message that is is the only difference:
//!
//! - [`Stack::with_stage_at`]: the call's first emission, held in the
//!   send lane (`send_lane.rs`) rather than the follow-up list.
//! - [`Stack::send_from_stage`]: the message the stage puts in a slot the
//!   call lends it (no lane to open and close, no follow-up record made,
//!   offered and taken back, for a message whose way is known before the
//!   call: down the path from the stage — issue 26 item 2: "a send fills
//!   its fields and hands the frame to the device in the same call"). The
//!   slot is lent without a buffer, not as an `Option` to build and move
//!   out: the message is a cache line, and moving it cost more than the
//!   rest of the hand-over. Emissions through the context go the general
//!   way, as follow-ups, ahead of the slot's.
//!
//! One body, so the settling after the in-place run (a drop counted on
//! the path, not reported; a message routed on to the next path run
//! directly while nothing waits) cannot drift between the two.

use super::trip::{settle, Settled, Trip, TripEnds};
use super::Stack;
use crate::exec::{step, Fate};
use crate::ids::Dir;
use crate::msg::Msg;
use crate::runtime::Start;
use crate::stage::{Cx, Stage};
use crate::stage_ref::StageRef;

/// Which message of an application's call into a stage runs in place
/// ([`Stack::call_stage`]'s `LANE`): the call's first emission, through
/// the send lane (`true`), or the message the stage puts in the slot it is
/// lent (`false`). A constant, not an argument, so that each form is its
/// own function from the start: the compiler then inlines the stage's call
/// into the smaller body of its own form.
const LANE: bool = true;
const SLOT: bool = false;

impl Stack {
    /// Calls `f` on the stage `at` names with its full context, then runs
    /// what it emitted: how an application reaches per-path state that
    /// lives in a stage (a TCP connection's buffers). [`Stack::with_stage`]
    /// without the search by type. The first message `f` emits runs as
    /// soon as `f` returns, ahead of the follow-up list (the send lane,
    /// `send_lane.rs`): a write leaves by the device in the same call, and
    /// through the path's fast form when it has one. `None` when the stage
    /// is no longer there (the path deleted).
    pub fn with_stage_at<T: Stage, R>(
        &mut self,
        at: StageRef<T>,
        f: impl FnOnce(&mut T, &mut Cx<'_, '_>) -> R,
    ) -> Option<R> {
        self.call_stage::<LANE, T, R>(at, |s, cx, _| f(s, cx))
    }

    /// Calls `f` on the stage `at` names with its full context, as
    /// [`Stack::with_stage_at`] does, and sends the message `f` puts in
    /// the slot it is lent (if any: the slot starts empty, without a
    /// buffer) down the path from that stage at once: through the path's
    /// executor (its fast form when it is specialized) to the device, then
    /// where the path's end routes it, as the lane runs an application's
    /// first emission. What `f` emitted through the context runs first,
    /// in order, as follow-ups (the slot's message is the call's last).
    /// `None` when the stage is no longer there (the path deleted).
    pub fn send_from_stage<T: Stage, R>(
        &mut self,
        at: StageRef<T>,
        f: impl FnOnce(&mut T, &mut Cx<'_, '_>, &mut Msg) -> R,
    ) -> Option<R> {
        self.call_stage::<SLOT, T, R>(at, f)
    }

    /// The one body of [`Stack::with_stage_at`] and
    /// [`Stack::send_from_stage`] (see the module docs).
    #[inline]
    fn call_stage<const IN_LANE: bool, T: Stage, R>(
        &mut self,
        at: StageRef<T>,
        f: impl FnOnce(&mut T, &mut Cx<'_, '_>, &mut Msg) -> R,
    ) -> Option<R> {
        let path = self.paths.get_mut(at.path)?;
        let pos = at.locate(&path.view.stage_ids)?;
        // The path's length from its view, not the executor (a virtual
        // call for what the path holds beside it); and nothing waits in
        // the work list outside a run: both read before the path is
        // borrowed.
        let len = path.len();
        let work_empty = self.work.is_empty();
        let (exec, mut env, _) = path.split(self.now, &mut self.modules, &mut self.shared, 0);
        let stage = exec.stage_mut(pos)?;
        let stage = (stage as &mut dyn std::any::Any).downcast_mut::<T>()?;
        if IN_LANE {
            env.ops.shared.lane.open();
        }
        let mut msg = Msg::default();
        let r = f(stage, &mut Cx { env: &mut env, pos }, &mut msg);
        // Where the message that runs in place starts: after `from`, going
        // `dir`, for the batch position `origin`.
        let (from, dir, origin) = match IN_LANE {
            SLOT if !msg.has_buffer() => {
                // Nothing in the slot: an empty message owns nothing.
                std::mem::forget(msg);
                self.drain_follow_ups();
                return Some(r);
            }
            SLOT if !env.ops.shared.follow_ups.is_empty() => {
                // Emitted before it: it goes behind them, in order
                // (dropped and counted if the bounded list is full, as any
                // emission).
                let _ = env.ops.send_on(at.path, pos, Dir::Down, msg);
                self.drain_follow_ups();
                return Some(r);
            }
            SLOT => (pos, Dir::Down, 0),
            LANE => {
                // The slot was not lent to `f`: still empty.
                std::mem::forget(msg);
                match env.ops.shared.lane.close() {
                    None => {
                        self.drain_follow_ups();
                        return Some(r);
                    }
                    // Emitted on this path (a segment from the
                    // connection's stage): it runs on through the
                    // executor at hand, as the next follow-up would, with
                    // those emitted after it waiting behind it.
                    Some(first) if first.path == at.path => match first.start {
                        Start::After(from) => {
                            msg = first.msg;
                            (from, first.dir, first.origin)
                        }
                        _ => return Some(self.run_first_elsewhere(first, r)),
                    },
                    Some(first) => return Some(self.run_first_elsewhere(first, r)),
                }
            }
        };
        // It runs on through the executor at hand (`Env::may_turn_in_place`:
        // it turns in place only while nothing else waits).
        env.turn_in_place = work_empty;
        env.ops.origin = origin;
        let fate = match step(from, dir, len) {
            Some(p) => exec.run(p, dir, &mut msg, &mut env),
            None => Fate::Out(dir),
        };
        let ends = TripEnds {
            modules: &mut self.modules,
            shared: &mut self.shared,
            demux: &self.demux,
            work_empty,
            now: self.now,
        };
        // Settled as a follow-up's hop is (`Stack::run_hops`): not a
        // trip's first hop, so a drop is counted on the path, not reported
        // to a caller.
        if let Settled::On(next, dir, m) = settle(path, ends, 1, origin, fate, &mut msg) {
            let trip = Trip {
                path: next,
                start: Start::AfterModule(m),
                dir,
                origin,
                dequeued: false,
                fresh: false,
            };
            let direct = self.runs_direct(false);
            self.run_hops(trip, direct, 1, &mut msg);
        }
        // A message that went out of the device has no buffer left:
        // forgotten rather than dropped (`Msg`'s drop glue is a call).
        super::trip::let_go(msg);
        self.drain_follow_ups();
        Some(r)
    }

    /// The lane's message of a call when it is not for the called stage's
    /// path (or starts elsewhere on it): run as the first follow-up, then
    /// the rest.
    #[cold]
    #[inline(never)]
    fn run_first_elsewhere<R>(&mut self, mut first: crate::runtime::FollowUp, r: R) -> R {
        self.run_follow_up(&mut first);
        first.let_go();
        self.drain_follow_ups();
        r
    }
}
