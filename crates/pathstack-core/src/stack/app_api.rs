//! The application's side of the stack: sending, enqueueing, receiving,
//! injecting frames.

use super::pending::enqueue;
use super::trip::{let_go, Entered};
use super::Stack;
use crate::drop_reason::DropReason;
use crate::ids::{Dir, ModuleId, PathId};
use crate::msg::Msg;
use crate::path::QueueKind;

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

impl Stack {
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
        // The drain rate a realtime path's deadline follows (§5.2.2.2);
        // kept for realtime paths only, off the best-effort fast path —
        // out of line whole, so that the usual take holds nothing across
        // a call (the deadline's state is made on demand, issue 28).
        if path.view.sched.realtime {
            return recv_realtime(path, dir, now);
        }
        path.pop_queue(QueueKind::sink(dir))
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
}

/// [`Stack::recv`] on a realtime path: the message, and its departure
/// counted in the path's drain rate.
#[cold]
#[inline(never)]
fn recv_realtime(path: &mut crate::path::Path, dir: Dir, now: crate::time::Instant) -> Option<Msg> {
    let m = path.pop_queue(QueueKind::sink(dir))?;
    path.record_drain(now);
    Some(m)
}
