//! Which modules a poll must look at.
//!
//! Most polls of a busy stack find no module with work of its own: the
//! timed modules (reassembly, the ARP cache) have deadlines far ahead, and
//! only the drivers have frames. Such a poll asks the drivers and nothing
//! else; the loop over every polled module runs only when one of them may
//! have work (issue 26 item 5: `Stack::poll`'s cost per round trip is what
//! each call does, and an idle timed module should cost nothing).

use super::module_slot::ModuleSlot;
use super::Polled;
use crate::ids::ModuleId;
use crate::time::Instant;

/// The polled modules grouped by what a poll may skip.
#[derive(Debug)]
pub(super) struct Polling {
    /// Driver modules that only receive (not polled, no deadline), in
    /// module order: all an idle poll calls.
    pub receivers: Vec<ModuleId>,
    /// The modules polled only when their deadline is due
    /// ([`Module::polls_when_due`](crate::module::Module::polls_when_due)),
    /// by index in the module table.
    timed: Vec<usize>,
    /// Some module is polled in every poll: no poll is idle.
    always: bool,
    /// The earliest deadline of the timed modules as last asked, `None`
    /// when none has one. Set by each full pass over the modules (the only
    /// place a deadline is asked again); it starts due, so that the first
    /// poll asks every module.
    pub due: Option<Instant>,
}

impl Polling {
    /// The grouping of `polled`.
    pub fn of(polled: &[Polled]) -> Self {
        Polling {
            receivers: polled
                .iter()
                .filter(|p| p.receives && !p.polls && !p.when_due)
                .map(|p| ModuleId(p.index as u32))
                .collect(),
            timed: polled
                .iter()
                .filter(|p| p.when_due)
                .map(|p| p.index)
                .collect(),
            always: polled.iter().any(|p| p.polls && !p.when_due),
            due: Some(Instant::ZERO),
        }
    }

    /// Whether a poll at `now` has nothing to do but ask the receivers
    /// for frames: no module polled every time, no cached deadline due,
    /// and no timed module reached writably since it was last asked (its
    /// deadline may have moved; `ModuleSlot::touched`). Then the full pass
    /// would skip every timed module, as this skips them.
    #[inline(always)]
    pub fn idle(&self, modules: &[ModuleSlot], now: Instant) -> bool {
        !self.always
            && self.due.is_none_or(|t| t > now)
            && self
                .timed
                .iter()
                .all(|&i| modules.get(i).is_none_or(|s| !s.touched))
    }
}
