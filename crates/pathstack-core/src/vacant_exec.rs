//! The executor a path holds for the moment its own is taken out to be
//! rebuilt (inlining, specialization, extension): stageless and
//! zero-sized, so putting it in place allocates nothing. The placeholder
//! was a boxed empty `DynExec`, an allocation and a free per path made
//! (issue 28 item 4: connection opens per second).

use crate::drop_reason::CoreDropReason;
use crate::exec::{traverse, Exec, Fate};
use crate::ids::Dir;
use crate::msg::Msg;
use crate::runtime::Env;
use crate::stage::{Stage, Verdict};

/// No stages; every position is out of range.
pub(crate) struct VacantExec;

impl Exec for VacantExec {
    fn len(&self) -> usize {
        0
    }
    fn process_at(
        &mut self,
        _pos: usize,
        _dir: Dir,
        _msg: &mut Msg,
        _env: &mut Env<'_>,
    ) -> Verdict {
        Verdict::Drop(CoreDropReason::BadPosition.into())
    }
    fn run_once(&mut self, pos: usize, dir: Dir, msg: &mut Msg, env: &mut Env<'_>) -> Fate {
        traverse(self, pos, dir, msg, env)
    }
    fn stage(&self, _pos: usize) -> Option<&dyn Stage> {
        None
    }
    fn stage_mut(&mut self, _pos: usize) -> Option<&mut dyn Stage> {
        None
    }
    fn into_stages(self: Box<Self>) -> Vec<Box<dyn Stage>> {
        Vec::new()
    }
    fn is_inlined(&self) -> bool {
        false
    }
}
