//! The path object (thesis §3.3.3): stages, four queues, attributes,
//! scheduling parameters and accounting.

use crate::admission::Reservation;
use crate::attrs::keys::BottleneckQueue;
use crate::attrs::Attrs;
use crate::drop_reason::{CoreDropReason, DropReason, DropTally};
use crate::exec::Exec;
use crate::ids::{Dir, ModuleId, PathId};
use crate::msg::Msg;
use crate::ops::Ops;
use crate::path_deadline::PathDeadline;
pub use crate::path_queues::PathQueue;
use crate::path_queues::PathQueues;
use crate::rate::EventRate;
use crate::runtime::{Env, Shared};
use crate::sched::SchedParams;
use crate::stack::module_slot::ModuleSlot;
use crate::stage_view::StageView;
use crate::time::Instant;
use std::sync::Arc;

/// The index of a path queue (thesis §3.3.3 table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// `q[0]`: input travelling down (`end[0] → end[1]`).
    SourceDown = 0,
    /// `q[1]`: output that travelled down (past `end[1]`).
    SinkDown = 1,
    /// `q[2]`: input travelling up (`end[1] → end[0]`).
    SourceUp = 2,
    /// `q[3]`: output that travelled up (past `end[0]`): what the
    /// application receives.
    SinkUp = 3,
}

impl QueueKind {
    /// The source queue for messages travelling in `dir`.
    pub fn source(dir: Dir) -> Self {
        match dir {
            Dir::Down => QueueKind::SourceDown,
            Dir::Up => QueueKind::SourceUp,
        }
    }
    /// The sink queue for messages that travelled in `dir`.
    pub fn sink(dir: Dir) -> Self {
        match dir {
            Dir::Down => QueueKind::SinkDown,
            Dir::Up => QueueKind::SinkUp,
        }
    }
}

/// The buffer bytes a message holds while it waits in a queue: the whole
/// pooled buffer (headroom, data and tailroom), not only its data — that
/// is the memory the path keeps from others.
#[inline]
fn held(m: &Msg) -> u64 {
    // Headroom, data and tailroom add up to the buffer's length.
    m.buffer_len() as u64
}

/// Per-path accounting.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Messages that entered the path, per direction (down, up).
    pub msgs_in: [u64; 2],
    /// Bytes of those messages.
    pub bytes_in: [u64; 2],
    /// Messages that left the path through an end, per direction.
    pub msgs_out: [u64; 2],
    /// Bytes of those messages.
    pub bytes_out: [u64; 2],
    /// Messages kept by a stage ([`crate::stage::Verdict::Consumed`]).
    pub consumed: u64,
    /// Drops, by reason.
    pub drops: DropTally,
    /// Processing time spent in the path's stages, in nanoseconds: the
    /// wall-clock time of each run of the path (a direct run from its end,
    /// a scheduler's turn, its share of an LDLP batch), including what the
    /// run led to on other paths. Counted only with
    /// [`StackConfig::account_time`](crate::StackConfig::account_time).
    pub cpu_ns: u64,
    /// Buffer bytes the path holds now: the whole pooled buffer of every
    /// message waiting in its four queues (charged when a message is
    /// queued, returned when it is taken out; see
    /// [`crate::admission`] for the budget).
    pub held_bytes: u64,
    /// The most [`PathStats::held_bytes`] ever was.
    pub peak_held_bytes: u64,
    /// Times a device was asked to discard the path's frames because the
    /// path kept refusing them (see
    /// [`Stack::set_device_discard`](crate::Stack::set_device_discard));
    /// the frames a device discards are not counted here, as the kernel's
    /// filter cannot say which path they were for.
    pub device_discards: u64,
}

/// One path.
pub struct Path {
    pub(crate) view: StageView,
    pub(crate) exec: Box<dyn Exec>,
    /// Service through which path creation entered each stage's module.
    pub(crate) entries: Vec<Option<u32>>,
    pub(crate) next_stage_id: u32,
    pub(crate) queues: PathQueues,
    pub(crate) stats: PathStats,
    /// Hash of the module sequence: LDLP batches paths with equal keys.
    pub(crate) seq_key: u64,
    /// Whether the path is in the run queue, per direction.
    pub(crate) queued: [bool; 2],
    /// Bumped when scheduling parameters change; older run-queue entries
    /// of the path are stale.
    pub(crate) stamp: u32,
    /// Most buffer bytes the path may hold ([`PathStats::held_bytes`]);
    /// `u64::MAX`: unlimited.
    pub(crate) mem_limit: u64,
    /// Admission class and what the path reserved in it. The name is
    /// the stack's one copy of it (`Admission::intern`): a path
    /// made allocates none.
    pub(crate) class: Arc<str>,
    pub(crate) reservation: Reservation,
    /// A computed deadline's parameters and observed rates, made when
    /// the path is created with them or first runs as realtime (most
    /// paths never do: boxed, see [`PathDeadline`]).
    pub(crate) deadline: Option<Box<PathDeadline>>,
    /// The path's frames, for a device to discard them
    /// ([`Stack::set_device_discard`](crate::Stack::set_device_discard));
    /// boxed, as few paths have one (76 octets less in every slot).
    pub(crate) device_match: Option<Box<crate::device::FrameMatch>>,
    /// Frames refused at classification since one was last taken.
    pub(crate) refused_in_row: u32,
    /// Per direction, whether a message past the path's last stage goes
    /// straight into the sink queue: the end module keeps the default
    /// routing ([`Module::ends_in_sink`](crate::module::Module::ends_in_sink)).
    /// Set when the path is established; a trip then leaves the path with
    /// no routing call (issue 26 item 3).
    pub(crate) sink_ends: [bool; 2],
}

impl Path {
    /// The path's id.
    pub fn id(&self) -> PathId {
        self.view.id
    }
    /// Number of stages.
    pub fn len(&self) -> usize {
        self.view.stage_modules.len()
    }
    /// Whether the path has no stages (never true for a created path).
    pub fn is_empty(&self) -> bool {
        self.view.stage_modules.is_empty()
    }
    /// The modules traversed, from `end[0]` to `end[1]`.
    pub fn modules(&self) -> &[ModuleId] {
        &self.view.stage_modules
    }
    /// One of the four queues.
    pub fn queue(&self, kind: QueueKind) -> PathQueue<'_> {
        self.queues.view(kind as usize)
    }
    /// The path's attributes.
    pub fn attrs(&self) -> &Attrs {
        &self.view.attrs
    }
    /// Scheduling parameters.
    pub fn sched(&self) -> &SchedParams {
        &self.view.sched
    }
    /// Whether the path has input waiting to be scheduled.
    pub fn is_pending(&self) -> bool {
        self.queued[0] || self.queued[1]
    }
    /// Whether the path has made its source queues (on the first input
    /// queued for a scheduler's turn, or the first refusal): a path run to
    /// completion, as an idle connection's, never does (issue 28 item 4).
    pub fn source_queues_made(&self) -> bool {
        self.queues.is_made()
    }
    /// Accounting.
    pub fn stats(&self) -> &PathStats {
        &self.stats
    }
    /// Whether the stages run in a path-inlined executor.
    pub fn is_inlined(&self) -> bool {
        self.exec.is_inlined()
    }

    /// Whether the path runs a fused fast form (the specialization rule,
    /// [`Rule::specialize`](crate::rules::Rule::specialize)).
    pub fn is_specialized(&self) -> bool {
        self.exec.fast_hits().is_some()
    }

    /// Messages the path's fused fast form handled, per direction (down,
    /// up): the rest went through its stages (Jacobson's header-prediction
    /// hit count, for a whole path). `None` if the path is not
    /// specialized.
    pub fn fast_hits(&self) -> Option<[u64; 2]> {
        self.exec.fast_hits()
    }
    /// Key of the module sequence (equal for paths through the same modules).
    pub fn sequence_key(&self) -> u64 {
        self.seq_key
    }
    /// The stage at position `pos`, to inspect it (downcast with `Any`).
    pub fn stage(&self, pos: usize) -> Option<&dyn crate::stage::Stage> {
        self.exec.stage(pos)
    }
    /// The path's admission class ([`crate::admission`]).
    pub fn class(&self) -> &str {
        &self.class
    }
    /// Most buffer bytes the path may hold in its queues (`None`: no limit).
    pub fn memory_budget(&self) -> Option<u64> {
        (self.mem_limit != u64::MAX).then_some(self.mem_limit)
    }
    /// The observed rate of messages queued at the path's source queues
    /// (kept while the path is realtime: only its deadline needs it).
    pub fn arrival_rate(&self) -> &EventRate {
        self.deadline
            .as_ref()
            .map_or(&EventRate::UNSEEN, |d| &d.arrivals)
    }
    /// The observed rate of messages taken from the path's sink queues
    /// (kept while the path is realtime).
    pub fn drain_rate(&self) -> &EventRate {
        self.deadline
            .as_ref()
            .map_or(&EventRate::UNSEEN, |d| &d.drains)
    }

    /// A message queued at a source queue of the realtime path (its
    /// deadline parameters made on the first).
    #[inline(never)]
    pub(crate) fn record_arrival(&mut self, now: Instant) {
        self.deadline.get_or_insert_default().arrivals.record(now);
    }

    /// A message taken from a sink queue of the realtime path.
    #[inline(never)]
    pub(crate) fn record_drain(&mut self, now: Instant) {
        self.deadline.get_or_insert_default().drains.record(now);
    }

    /// The deadline a pending realtime path's input in `dir` runs under
    /// (thesis §5.2.2.2), at `now`: the one given with
    /// [`Stack::set_sched`](crate::Stack::set_sched); else `now` plus the
    /// path's `DEADLINE`; else the one its queues imply — the earlier of
    /// the time the source queue would overflow at the observed arrival
    /// rate and the time the sink queue would run dry at the observed
    /// drain rate (each known once two events were seen), or only one of
    /// them when the path's `DEADLINE_QUEUE` names its bottleneck; `now` when
    /// neither is known yet. `None` for a best-effort path.
    pub fn deadline(&self, dir: Dir, now: Instant) -> Option<Instant> {
        if !self.view.sched.realtime {
            return None;
        }
        if let Some(d) = self.view.sched.deadline {
            return Some(d);
        }
        let d = self.deadline.as_deref();
        if let Some(rel) = d.and_then(|d| d.rel) {
            return Some(now + rel);
        }
        let queue = d.map_or(BottleneckQueue::default(), |d| d.queue);
        let src = QueueKind::source(dir) as usize;
        let free = self.queues.cap(src).saturating_sub(self.queues.len(src)) as u64;
        // The `free`th arrival after the last one finds the queue full.
        let overflow = match queue {
            BottleneckQueue::Output => None,
            _ => self.arrival_rate().due(free.max(1)),
        };
        // With `len` messages left, the drain after them finds none.
        let sink = self.queues.len(QueueKind::sink(dir) as usize) as u64;
        let dry = match queue {
            BottleneckQueue::Input => None,
            _ => self.drain_rate().due(sink + 1),
        };
        match (overflow, dry) {
            (Some(a), Some(b)) => Some(a.min(b)),
            // Nothing observed yet: due now. It runs before the paths
            // whose deadlines lie ahead (a path that was never served
            // must not wait behind those that taught the stack their
            // rates), and its first runs teach it its own.
            (None, None) => Some(now),
            (a, b) => a.or(b),
        }
    }

    /// Puts `m` on queue `kind`, charging its buffer to the path; gives it
    /// back with the reason (counted on the path) when the queue is full or
    /// the path's memory budget would be exceeded.
    #[inline]
    pub(crate) fn push_queue(
        &mut self,
        kind: QueueKind,
        m: Msg,
    ) -> Result<(), (Msg, CoreDropReason)> {
        let bytes = held(&m);
        // Buffer bytes are bounded by memory: the sum cannot overflow.
        let after = self.stats.held_bytes + bytes;
        let cap = self.queues.cap(kind as usize);
        let q = self.queues.deque_mut(kind as usize);
        if after > self.mem_limit || q.len() >= cap {
            return Err(self.refuse(kind, m, after));
        }
        q.push_back(m);
        self.stats.held_bytes = after;
        if after > self.stats.peak_held_bytes {
            self.stats.peak_held_bytes = after;
        }
        Ok(())
    }

    /// [`Path::push_queue`] taking the message out of `m` only once it is
    /// taken (what a trip's end delivers to the sink queue): the 64-byte
    /// message is moved once, into the queue, not first out of the trip's
    /// slot and then into the queue (issue 26 item 2). A refused message
    /// stays in `m` for the trip's owner to release; the refusal is
    /// counted on the path. Always inlined: with the classifier's probe
    /// inlined into the poll, the compiler's budget left it a call there
    /// (60 instructions a UDP round trip, with its entry and exit).
    #[inline(always)]
    pub(crate) fn push_queue_from(&mut self, kind: QueueKind, m: &mut Msg) {
        let bytes = held(m);
        let after = self.stats.held_bytes + bytes;
        let cap = self.queues.cap(kind as usize);
        let q = self.queues.deque_mut(kind as usize);
        if after > self.mem_limit || q.len() >= cap {
            self.refuse_in_place(kind, after);
            return;
        }
        q.push_back(std::mem::take(m));
        self.stats.held_bytes = after;
        if after > self.stats.peak_held_bytes {
            self.stats.peak_held_bytes = after;
        }
    }

    /// Why a message cannot be queued on `kind` (with `after` bytes held
    /// if it were), counted on the path.
    #[cold]
    #[inline(never)]
    fn refuse_in_place(&mut self, kind: QueueKind, after: u64) -> CoreDropReason {
        let r = if after > self.mem_limit {
            CoreDropReason::OverMemoryBudget
        } else {
            self.queues.count_refused(kind as usize);
            match kind {
                QueueKind::SourceDown | QueueKind::SourceUp => CoreDropReason::SourceFull,
                QueueKind::SinkDown | QueueKind::SinkUp => CoreDropReason::SinkFull,
            }
        };
        self.count_drop(r);
        r
    }

    /// A message [`Path::push_queue`] cannot take, with why, counted.
    #[cold]
    #[inline(never)]
    fn refuse(&mut self, kind: QueueKind, m: Msg, after: u64) -> (Msg, CoreDropReason) {
        (m, self.refuse_in_place(kind, after))
    }

    /// Takes the head of queue `kind`, returning its buffer's charge.
    #[inline]
    pub(crate) fn pop_queue(&mut self, kind: QueueKind) -> Option<Msg> {
        let m = self.queues.pop(kind as usize)?;
        // Charged when queued: cannot go below zero.
        self.stats.held_bytes -= held(&m);
        Some(m)
    }

    /// Whether the path holds as many buffer bytes as its budget allows:
    /// new input is discarded before it runs.
    #[inline]
    pub(crate) fn over_budget(&self) -> bool {
        self.stats.held_bytes >= self.mem_limit
    }

    /// Splits the path into what one run borrows at once: its executor, the
    /// environment its stages see (with the stack's modules and shared
    /// state), and its counters.
    pub(crate) fn split<'e>(
        &'e mut self,
        now: Instant,
        modules: &'e mut [ModuleSlot],
        shared: &'e mut Shared,
        origin: u32,
    ) -> (&'e mut dyn Exec, Env<'e>, &'e mut PathStats) {
        let Path {
            view, exec, stats, ..
        } = self;
        let env = Env {
            ops: Ops {
                now,
                shared,
                origin,
            },
            modules,
            view,
            turn_in_place: false,
        };
        (&mut **exec, env, stats)
    }

    pub(crate) fn count_drop(&mut self, r: impl Into<DropReason>) {
        self.stats.drops.add(r);
    }
}

#[cfg(test)]
#[path = "path_layout_tests.rs"]
mod layout_tests;
