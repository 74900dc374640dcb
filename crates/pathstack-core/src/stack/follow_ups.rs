//! Follow-ups: messages produced while another is processed (emitted,
//! sent on another path, turned while others wait) and the paths stages
//! asked to open or delete, run after the message that produced them.

use super::trip::Trip;
use super::Stack;
use crate::drop_reason::CoreDropReason;
use crate::error::PathError;
use crate::ids::Dir;
use crate::runtime::{FollowUp, PathOp, Start};

impl Stack {
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
