//! What a path's stages see of their path while it runs.

use crate::attrs::Attrs;
use crate::ids::{ModuleId, PathId};
use crate::sched::SchedParams;

/// What a path's stages see of it while it runs: its id, its module
/// sequence, its attributes and scheduling parameters. Grouped so that a
/// run's [`Env`](crate::runtime::Env) borrows them with one pointer instead of a word or two
/// each: the environment is built for every path run, three times per
/// round trip (issue 26 item 6).
pub(crate) struct StageView {
    pub(crate) id: PathId,
    pub(crate) stage_modules: Vec<ModuleId>,
    /// Creation number of each stage (establish/destroy run in this order).
    pub(crate) stage_ids: Vec<u32>,
    pub(crate) attrs: Attrs,
    pub(crate) sched: SchedParams,
}
