//! Scheduler turns: paths with queued input, taken from the run queue
//! by rank and run a quantum (per-message) or a batch (LDLP) at a time.

use super::pending::requeue;
use super::trip::Trip;
use super::Stack;
use crate::ids::{Dir, PathId};
use crate::path::QueueKind;
use crate::sched::{Pending, SchedKind};

impl Stack {
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
    pub(super) fn run_one(
        &mut self,
        id: PathId,
        dir: Dir,
        clock: &mut Option<std::time::Instant>,
    ) -> usize {
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
            if !path.queues.is_empty(src as usize) && !path.queued[dir.index()] {
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
}
