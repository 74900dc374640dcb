//! Schedulers and the run queue (thesis §3.5.1, §5.2.2).
//!
//! A path with input waiting is *pending* and sits in the run queue once per
//! direction. Realtime paths run first, earliest deadline first; then
//! best-effort paths by fixed priority (higher first); within one priority,
//! round robin: a path runs at most a quantum of messages
//! ([`StackConfig::quantum`](crate::StackConfig::quantum)) per turn and, if
//! it has more, goes back behind its peers — Scout's default scheduler, so
//! no path starves the others of its rank.
//!
//! A realtime path's deadline is the one given
//! ([`SchedParams::deadline`](crate::SchedParams::deadline) through
//! [`Stack::set_sched`](crate::Stack::set_sched), or `now` plus the path's
//! `DEADLINE` attribute when it becomes pending), else the one its queues
//! imply (§5.2.2.2): the time its source queue would overflow at the
//! observed arrival rate, or its sink queue run dry at the observed drain
//! rate, whichever is earlier ([`Path::deadline`](crate::Path::deadline);
//! the rates are moving averages a realtime path keeps per enqueue and per
//! [`Stack::recv`](crate::Stack::recv), [`crate::rate`]); a realtime path
//! with nothing observed yet is due at once. The deadline is taken when
//! the path enters the run queue.
//!
//! The run queue is off the common path: under per-message scheduling a
//! message entering an idle path (a received frame, an application's
//! send) runs through it at once, to completion (`stack/trip.rs`). A path
//! enters the run queue only when its input has to wait: input already
//! queued ahead of it, [`Stack::enqueue`](crate::Stack::enqueue), LDLP
//! with a second message available (below) — or a burst of received
//! frames while *ranked* paths exist (realtime, or a priority other than
//! 0). Then the whole burst is classified first, each
//! frame onto its path's source queue (where a frame of a full queue, or
//! of a path over its memory budget, is discarded before any stage sees
//! it: early discard), and the scheduler runs the pending paths in rank
//! order, so that a frame of an important path never waits behind less
//! important frames that arrived before it in the same burst (§5.2.2.1,
//! the priority inversion of a shared IP input queue). A single frame with
//! nothing behind it still runs at once; a stack with no ranked paths
//! keeps running frames in arrival order, as before.
//!
//! Two schedulers share that queue (chosen when the stack is built and
//! switchable at run time):
//! - [`SchedKind::PerMessage`] takes one message of the best path and runs
//!   it through the whole path.
//! - [`SchedKind::Ldlp`] (Blackwell, *Speeding up Protocols for Small
//!   Messages*, §3) takes the available messages of the best path and of
//!   every other pending path with the same module sequence and direction,
//!   up to `batch`, and runs them stage-major: each stage's code and data
//!   are loaded once per batch. A driver's burst of several frames is
//!   classified onto the paths' queues first, then batched.
//!
//!   *The lone-message rule*: a message that enters an idle path when
//!   nothing else waits — the run queue is empty, no follow-up is pending
//!   and, for a received frame, no further frame is waiting in the
//!   driver's burst; or an application's [`Stack::send`](crate::Stack::send)
//!   under the same conditions — runs straight through its path, exactly
//!   as per-message scheduling runs it. A batch of one has no stage-major
//!   order to gain, and taking it through the path queue and the run queue
//!   only costs instructions and cache lines (at low arrival rates that
//!   was LDLP's whole latency gap to per-message). As soon as a second
//!   message is available — a burst, input already queued,
//!   [`Stack::enqueue`](crate::Stack::enqueue) — LDLP queues and batches.
//!
//! Messages that a stage turns around
//! ([`Verdict::Back`](crate::stage::Verdict::Back)) or emits are processed
//! after the message (per-message) or the batch (LDLP) that produced them,
//! grouped by the message they came from, in the order of that message in
//! the batch. With that rule both schedulers give identical outputs, in
//! identical per-path order, whenever each path's input arrives at one end
//! and is answered at most once (echoes, ACKs, replies) — the property test
//! `tests/sched_equiv.rs` checks exactly this. Outside it the two differ by
//! design, because LDLP batches per direction:
//! - a path fed from both ends at once sees its two directions interleaved
//!   per batch under LDLP, per message otherwise;
//! - a message emitted in the stage's *own* direction of travel, or turned
//!   around a second time, leaves after the rest of the batch rather than
//!   right after its origin.
//!
//! LDLP's premise is that a layer's state is per direction and that the
//! messages of a batch are independent (Blackwell §3.2).

use crate::ids::{Dir, PathId};
use crate::time::Instant;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use thiserror::Error;

/// A refused scheduling change (thesis §3.5.1).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum SchedError {
    /// A pending realtime path's deadline may only move earlier.
    #[error("deadline may only be tightened while the path is pending (current {current}, requested {requested})")]
    DeadlineLoosened {
        /// The deadline in force.
        current: Instant,
        /// The later deadline asked for.
        requested: Instant,
    },
    /// A pending realtime path may not become best-effort before its deadline.
    #[error("a pending realtime path cannot become best-effort before its deadline {0}")]
    RealtimeDropped(Instant),
}

/// How a path is scheduled (thesis §3.5.1): by deadline if realtime, else by
/// fixed priority (higher first). Within a class, arrival order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SchedParams {
    /// Earliest-deadline-first instead of fixed priority.
    pub realtime: bool,
    /// Fixed priority of a best-effort path.
    pub priority: u32,
    /// Absolute deadline of a realtime path's pending work.
    pub deadline: Option<Instant>,
}

impl SchedParams {
    /// Replaces the parameters, obeying the thesis §3.5.1 rule: while the
    /// path has work pending, a realtime deadline may only be replaced by an
    /// earlier one, and realtime may not turn into best-effort, unless the
    /// deadline in force has already passed at `now`.
    pub fn update(
        &mut self,
        new: SchedParams,
        now: Instant,
        pending: bool,
    ) -> Result<(), SchedError> {
        if pending && self.realtime {
            if let Some(cur) = self.deadline {
                if cur > now {
                    if !new.realtime {
                        return Err(SchedError::RealtimeDropped(cur));
                    }
                    match new.deadline {
                        Some(d) if d <= cur => {}
                        requested => {
                            return Err(SchedError::DeadlineLoosened {
                                current: cur,
                                requested: requested.unwrap_or(Instant::from_nanos(u64::MAX)),
                            })
                        }
                    }
                }
            }
        }
        *self = new;
        Ok(())
    }
}

/// Which scheduler runs the paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedKind {
    /// Each message through the whole path, one at a time.
    PerMessage,
    /// Locality-driven layer processing: batches of up to `batch` messages
    /// of paths with the same module sequence, run stage-major.
    Ldlp {
        /// Most messages in one batch (at least 1).
        batch: usize,
    },
}

impl std::fmt::Display for SchedKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchedKind::PerMessage => f.write_str("per-message"),
            SchedKind::Ldlp { batch } => write!(f, "ldlp(batch {batch})"),
        }
    }
}

impl std::str::FromStr for SchedKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "per-message" => Ok(SchedKind::PerMessage),
            "ldlp" => Ok(SchedKind::Ldlp { batch: 32 }),
            other => match other.strip_prefix("ldlp:").map(str::parse::<usize>) {
                Some(Ok(b)) if b > 0 => Ok(SchedKind::Ldlp { batch: b }),
                _ => Err(format!(
                    "unknown scheduler `{other}` (expected per-message, ldlp or ldlp:N)"
                )),
            },
        }
    }
}

/// One pending (path, direction) in the run queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pending {
    pub path: PathId,
    pub dir: Dir,
    pub seq_key: u64,
    /// The path's scheduling stamp when queued; a stale entry is skipped.
    pub stamp: u32,
    rank: Rank,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rank {
    realtime: bool,
    deadline: Reverse<Instant>,
    priority: u32,
    order: Reverse<u64>,
}

impl Ord for Rank {
    fn cmp(&self, o: &Self) -> Ordering {
        self.realtime
            .cmp(&o.realtime)
            .then_with(|| {
                if self.realtime {
                    self.deadline.cmp(&o.deadline)
                } else {
                    self.priority.cmp(&o.priority)
                }
            })
            .then_with(|| self.order.cmp(&o.order))
    }
}
impl PartialOrd for Rank {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> Ordering {
        self.rank.cmp(&o.rank)
    }
}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// The run queue: a heap of pending (path, direction) entries.
pub(crate) struct RunQueue {
    heap: BinaryHeap<Pending>,
    order: u64,
}

impl RunQueue {
    pub fn with_capacity(n: usize) -> Self {
        RunQueue {
            heap: BinaryHeap::with_capacity(n),
            order: 0,
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        path: PathId,
        dir: Dir,
        seq_key: u64,
        stamp: u32,
        realtime: bool,
        deadline: Option<Instant>,
        priority: u32,
    ) {
        self.order += 1;
        self.heap.push(Pending {
            path,
            dir,
            seq_key,
            stamp,
            rank: Rank {
                realtime,
                deadline: Reverse(deadline.unwrap_or(Instant::from_nanos(u64::MAX))),
                priority,
                order: Reverse(self.order),
            },
        });
    }

    pub fn pop(&mut self) -> Option<Pending> {
        self.heap.pop()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Removes and hands to `take` the entries with this module sequence and
    /// direction, best first, while `take` returns `true`.
    pub fn take_matching(&mut self, seq_key: u64, dir: Dir, mut take: impl FnMut(Pending) -> bool) {
        if !self
            .heap
            .iter()
            .any(|p| p.seq_key == seq_key && p.dir == dir)
        {
            return;
        }
        let mut room = true;
        let mut all = std::mem::take(&mut self.heap).into_sorted_vec();
        // into_sorted_vec is ascending: best entries are at the end.
        let mut kept = Vec::with_capacity(all.len());
        while let Some(p) = all.pop() {
            if room && p.seq_key == seq_key && p.dir == dir {
                room = take(p);
            } else {
                kept.push(p);
            }
        }
        self.heap = BinaryHeap::from(kept);
    }
}
