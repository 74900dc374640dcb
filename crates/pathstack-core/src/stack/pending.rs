//! Making a path pending: a message put on a path's source queue, and
//! the path ranked in the run queue by its scheduling parameters. The
//! trip engine, the application calls, the receive bursts, LDLP and the
//! scheduler's turns all do it, so it lives apart from each of them.

use crate::drop_reason::CoreDropReason;
use crate::ids::Dir;
use crate::msg::Msg;
use crate::path::{Path, QueueKind};
use crate::sched::RunQueue;
use crate::time::Instant;

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
        path.record_arrival(now);
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
