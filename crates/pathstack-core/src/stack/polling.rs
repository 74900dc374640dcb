//! Which modules a poll must look at.
//!
//! Most polls of a busy stack find no module with work of its own: the
//! timed modules (reassembly, the ARP cache) have deadlines far ahead, and
//! only the drivers have frames. Such a poll asks the drivers and nothing
//! else; the pass over every polled module, with its per-module
//! bookkeeping, runs only when one of them may have work (issue 26 item 5:
//! `Stack::poll`'s cost per round trip is what each call does, and an idle
//! timed module should cost nothing beyond two comparisons).

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
    /// by index in the module table (where their `touched` flag is).
    timed: Vec<usize>,
    /// The earliest of the timed modules' deadlines as the last quiet full
    /// pass left them cached (`None`: none has one): an idle poll compares
    /// the clock with this one deadline instead of each module's. Stale
    /// after a busy pass, when it is not looked at (`quiet` is false).
    pub next_due: Option<Instant>,
    /// Some module is polled in every poll: no poll is idle.
    always: bool,
    /// The last full pass found every timed module quiet (not touched,
    /// not due), so this poll may well be idle and is worth the look. A
    /// stack whose timed modules every message reaches (RPC's CHAN,
    /// BIDCTL, BLAST) never is: its polls make the full pass at once,
    /// without looking first.
    pub quiet: bool,
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
            next_due: None,
            always: polled.iter().any(|p| p.polls && !p.when_due),
            quiet: false,
        }
    }

    /// Caches the earliest deadline of the timed modules in `polled`, as
    /// the quiet full pass just left them (`Polling::next_due`). Out of
    /// line: it runs once per quiet pass, not per poll.
    #[inline(never)]
    pub fn gather_next_due(&mut self, polled: &[Polled]) {
        self.next_due = polled
            .iter()
            .filter(|p| p.when_due)
            .filter_map(|p| p.due)
            .min();
    }

    /// Whether a poll at `now` has nothing to do but ask the receivers
    /// for frames: no module is polled every time, and every timed module
    /// has a cached deadline ahead (or none) and was not reached writably
    /// since it was asked (its deadline may have moved;
    /// `ModuleSlot::touched`). The full pass would then skip every timed
    /// module, as this skips them. Looked at only after a quiet full pass
    /// ([`Polling::quiet`]).
    #[inline(always)]
    pub fn idle(&self, modules: &[ModuleSlot], now: Instant) -> bool {
        self.quiet
            && !self.always
            && self.next_due.is_none_or(|t| t > now)
            && Self::untouched(&self.timed, modules)
    }

    /// Whether none of the timed modules `timed` was reached writably.
    /// An Internet host has two (IP's reassembly, the ARP cache): they are
    /// asked without a loop, whose set-up and iterator cost its idle poll
    /// a few instructions (issue 26 item 6, as `Stack::poll_modules` asks
    /// its one driver). One compare of the count: a dispatch over several
    /// counts cost RPC's idle polls, with five timed modules, 6
    /// instructions each.
    #[inline(always)]
    fn untouched(timed: &[usize], modules: &[ModuleSlot]) -> bool {
        let quiet = |i: usize| modules.get(i).is_none_or(|s| !s.touched);
        if let [a, b] = *timed {
            return quiet(a) & quiet(b);
        }
        timed.iter().all(|&i| quiet(i))
    }
}
