//! Messages a module's engine asked for, each with where it goes: the
//! way BIDCTL and CHAN, whose engines live in the module, put their
//! packets and notices on paths from whichever context ran the engine —
//! a stage (its `Cx`) or the module's poll (its `ModCx`).

use pathstack_core::module::ModCx;
use pathstack_core::stage::Cx;
use pathstack_core::{Dir, Msg, PathId};

/// `(path, from, dir, msg)`, as `send_on` takes them.
pub type Sends = Vec<(PathId, usize, Dir, Msg)>;

/// Sends everything in `out` from a stage's context (`out` is left empty,
/// its capacity kept). A message whose path is gone is dropped (and
/// counted by the core).
pub(crate) fn from_stage(cx: &mut Cx<'_, '_>, out: &mut Sends) {
    for (p, from, dir, m) in out.drain(..) {
        let _ = cx.send_on(p, from, dir, m);
    }
}

/// Sends everything in `out` from a module's poll; returns how many were
/// sent and how many could not be.
pub(crate) fn from_module(cx: &mut ModCx<'_>, out: Sends) -> (usize, u64) {
    let n = out.len();
    let mut failed = 0;
    for (p, from, dir, m) in out {
        if cx.send_on(p, from, dir, m).is_err() {
            failed += 1;
        }
    }
    (n, failed)
}
