//! A stage's own send: an application's call into a stage whose one
//! message goes down the path from that stage in the same call, handed
//! back by the stage rather than emitted.
//!
//! [`Stack::with_stage_at`] gives the stage its full context and runs
//! what it emits; the first emission is held in the send lane
//! (`send_lane.rs`) so that it runs in place rather than from the
//! follow-up list. For the usual write of an established connection —
//! one segment, built by the stage from its header template — that is a
//! lane opened and closed, a follow-up record made, offered and taken
//! back, for a message whose way is known before the call: down the path
//! from the stage, through the path's fast form, to the device (issue 26
//! item 2: "a send fills its fields and hands the frame to the device in
//! the same call"). Here the stage puts that message in a slot the call
//! lends it (no `Option` to build and move out: the message is a cache
//! line, and moving it cost more than the rest of the hand-over) and it
//! runs at once; the context is still there for everything else (timers, other
//! emissions, which go the general way as follow-ups).

use super::trip::{settle, Settled, Trip, TripEnds};
use super::Stack;
use crate::exec::{step, Fate};
use crate::ids::Dir;
use crate::msg::Msg;
use crate::runtime::Start;
use crate::stage::{Cx, Stage};
use crate::stage_ref::StageRef;

impl Stack {
    /// Calls `f` on the stage `at` names with its full context, as
    /// [`Stack::with_stage_at`] does, and sends the message `f` puts in
    /// the slot it is lent (if any: the slot starts empty, without a
    /// buffer) down the path from that stage at once: through the path's
    /// executor (its fast form when it is specialized) to the device, then
    /// where the path's end routes it, as the lane runs an application's
    /// first emission. What `f` emitted through the context runs first,
    /// in order, as follow-ups (the slot's message is the call's last). `None` when the stage is no longer there (the path deleted).
    pub fn send_from_stage<T: Stage, R>(
        &mut self,
        at: StageRef<T>,
        f: impl FnOnce(&mut T, &mut Cx<'_, '_>, &mut Msg) -> R,
    ) -> Option<R> {
        let path = self.paths.get_mut(at.path)?;
        let pos = at.locate(&path.view.stage_ids)?;
        // Nothing waits in the work list outside a run; read before the
        // path is borrowed.
        let work_empty = self.work.is_empty();
        let (exec, mut env, _) = path.split(self.now, &mut self.modules, &mut self.shared, 0);
        let stage = exec.stage_mut(pos)?;
        let stage = (stage as &mut dyn std::any::Any).downcast_mut::<T>()?;
        let mut msg = Msg::default();
        let r = f(stage, &mut Cx { env: &mut env, pos }, &mut msg);
        if !msg.has_buffer() {
            // Nothing in the slot: an empty message owns nothing.
            std::mem::forget(msg);
            self.drain_follow_ups();
            return Some(r);
        }
        let dir = Dir::Down;
        if !env.ops.shared.follow_ups.is_empty() {
            // Emitted before it: it goes behind them, in order (dropped
            // and counted if the bounded list is full, as any emission).
            let _ = env.ops.send_on(at.path, pos, dir, msg);
            self.drain_follow_ups();
            return Some(r);
        }
        // It runs on through the executor at hand, as the lane's first
        // emission does in `with_stage_at` (the same settling after).
        env.turn_in_place = work_empty;
        let fate = match step(pos, dir, exec.len()) {
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
        // trip's first hop, so a drop is counted on the path.
        if let Settled::On(next, dir, m) = settle(path, ends, 1, 0, fate, &mut msg) {
            let trip = Trip {
                path: next,
                start: Start::AfterModule(m),
                dir,
                origin: 0,
                dequeued: false,
                fresh: false,
            };
            let direct = self.runs_direct(false);
            self.run_hops(trip, direct, 1, &mut msg);
        }
        // A message that went out of the device has no buffer left:
        // forgotten rather than dropped (`Msg`'s drop glue is a call).
        if msg.has_buffer() {
            drop(msg);
        } else {
            std::mem::forget(msg);
        }
        self.drain_follow_ups();
        Some(r)
    }
}
