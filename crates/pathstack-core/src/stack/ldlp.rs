//! LDLP (Blackwell, *Speeding up Protocols for Small Messages*, §3): the
//! queued input of the best pending path and of the other pending paths
//! with the same module sequence and direction, up to the batch bound, run
//! stage-major, so that each stage's code and data are loaded once per
//! batch.

use super::pending::requeue;
use super::trip::Trip;
use super::Stack;
use crate::drop_reason::CoreDropReason;
use crate::exec::{entry, step};
use crate::ids::{Dir, PathId};
use crate::msg::Msg;
use crate::path::QueueKind;
use crate::runtime::{FollowUp, Start};
use crate::stage::Verdict;

/// One message of an LDLP batch.
pub(super) struct Slot {
    path: PathId,
    msg: Msg,
    alive: bool,
}

impl Stack {
    /// A batch of messages from `first` and the other pending paths with
    /// the same module sequence and direction, run stage-major.
    pub(super) fn run_batch(
        &mut self,
        first: PathId,
        dir: Dir,
        seq_key: u64,
        bound: usize,
        clock: &mut Option<std::time::Instant>,
    ) -> usize {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let bound = bound.max(1);
        self.take_input(first, dir, bound, &mut batch);
        if batch.len() < bound {
            let mut others: Vec<PathId> = Vec::new();
            let paths = &self.paths;
            self.runq.take_matching(seq_key, dir, |p| {
                let live = paths
                    .get(p.path)
                    .is_some_and(|path| path.stamp == p.stamp && path.queued[dir.index()]);
                if live && !others.contains(&p.path) {
                    others.push(p.path);
                }
                others.len() + 1 < bound
            });
            for id in others {
                let room = bound - batch.len();
                let Some(path) = self.paths.get_mut(id) else {
                    continue;
                };
                path.queued[dir.index()] = false;
                if room == 0 {
                    // Could not take it after all: put it back.
                    requeue(path, &mut self.runq, dir, self.now);
                    continue;
                }
                self.take_input(id, dir, room, &mut batch);
            }
        }
        let n = batch.len();
        if n == 1 {
            // A batch of one has no stage-major order to gain: it runs as a
            // single message (and so continues in place when turned),
            // without the batch's bookkeeping.
            if let Some(mut slot) = batch.pop() {
                self.run(
                    Trip {
                        path: slot.path,
                        start: Start::Dequeued,
                        dir,
                        origin: 0,
                        dequeued: true,
                        fresh: false,
                    },
                    &mut slot.msg,
                );
                self.drain_follow_ups();
                self.charge_time(clock, std::slice::from_ref(&slot.path));
            }
            self.batch = batch;
            return 1;
        }
        let Some(len) = batch
            .first()
            .and_then(|s| self.paths.get(s.path))
            .map(|p| p.len())
        else {
            self.batch = batch;
            return 0;
        };
        let mut pos = entry(dir, len);
        loop {
            let mut any = false;
            for (k, slot) in batch.iter_mut().enumerate() {
                if !slot.alive {
                    continue;
                }
                let Some(path) = self.paths.get_mut(slot.path) else {
                    slot.alive = false;
                    continue;
                };
                let (exec, mut env, stats) =
                    path.split(self.now, &mut self.modules, &mut self.shared, k as u32);
                match exec.process_at(pos, dir, &mut slot.msg, &mut env) {
                    Verdict::Next => any = true,
                    Verdict::Back => {
                        slot.alive = false;
                        let f = FollowUp {
                            path: slot.path,
                            start: Start::After(pos),
                            dir: dir.reverse(),
                            msg: std::mem::take(&mut slot.msg),
                            origin: k as u32,
                        };
                        if env.ops.shared.follow_up(f).is_err() {
                            stats.drops.add(CoreDropReason::FollowUpOverflow);
                        }
                    }
                    Verdict::Consumed => {
                        slot.alive = false;
                        stats.consumed += 1;
                    }
                    Verdict::Drop(r) => {
                        slot.alive = false;
                        stats.drops.add(r);
                    }
                }
            }
            if !any {
                break;
            }
            match step(pos, dir, len) {
                Some(p) => pos = p,
                None => {
                    // Past the last stage: each message leaves its path.
                    for (k, slot) in batch.iter_mut().enumerate() {
                        if slot.alive {
                            slot.alive = false;
                            // Taken out of the batch: what is left of it
                            // goes back to its pool when this trip ends.
                            let mut msg = std::mem::take(&mut slot.msg);
                            self.run(
                                Trip {
                                    path: slot.path,
                                    start: Start::After(pos),
                                    dir,
                                    origin: k as u32,
                                    dequeued: false,
                                    fresh: false,
                                },
                                &mut msg,
                            );
                        }
                    }
                    break;
                }
            }
        }
        self.drain_follow_ups();
        if clock.is_some() {
            // Processing time is shared out evenly over the batch's messages.
            let ids: Vec<PathId> = batch.iter().map(|s| s.path).collect();
            self.charge_time(clock, &ids);
        }
        batch.clear();
        self.batch = batch;
        n
    }

    /// Moves up to `room` messages of path `id`'s source queue for `dir`
    /// into the batch; requeues the path if it has more.
    fn take_input(&mut self, id: PathId, dir: Dir, room: usize, batch: &mut Vec<Slot>) {
        let Some(path) = self.paths.get_mut(id) else {
            return;
        };
        let q = QueueKind::source(dir);
        let mut taken = 0;
        while taken < room {
            let Some(msg) = path.pop_queue(q) else {
                break;
            };
            path.stats.msgs_in[dir.index()] += 1;
            path.stats.bytes_in[dir.index()] += msg.len() as u64;
            batch.push(Slot {
                path: id,
                msg,
                alive: true,
            });
            taken += 1;
        }
        if !path.queues.is_empty(q as usize) {
            requeue(path, &mut self.runq, dir, self.now);
        }
    }
}
