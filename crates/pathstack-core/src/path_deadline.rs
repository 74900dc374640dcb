//! What a path keeps for a computed deadline (thesis §5.2.2.2): its
//! relative `DEADLINE`, the queue its deadline follows
//! (`DEADLINE_QUEUE`), and the observed rates of arrivals at its source
//! queues and departures from its sink queues. Only a realtime path, or
//! one created with those attributes, needs any of it, so a path holds it
//! boxed, made on first need: 88 octets less in every path's slot of the
//! path table (issue 28 item 4: a million idle connections hold a million
//! paths, none of them realtime).

use crate::attrs::keys::BottleneckQueue;
use crate::rate::EventRate;
use crate::time::Duration;

/// A path's deadline parameters and observed rates.
#[derive(Clone, Debug, Default)]
pub(crate) struct PathDeadline {
    /// Relative deadline of a realtime path's work (`DEADLINE`).
    pub(crate) rel: Option<Duration>,
    /// Which queue a computed deadline follows (`DEADLINE_QUEUE`).
    pub(crate) queue: BottleneckQueue,
    /// Arrivals at the source queues.
    pub(crate) arrivals: EventRate,
    /// Departures from the sink queues.
    pub(crate) drains: EventRate,
}

impl PathDeadline {
    /// The parameters a path is created with: boxed only when one is
    /// given (the rates start when the path first runs as realtime).
    pub(crate) fn from_attrs(
        rel: Option<Duration>,
        queue: Option<BottleneckQueue>,
    ) -> Option<Box<PathDeadline>> {
        if rel.is_none() && queue.is_none() {
            return None;
        }
        Some(Box::new(PathDeadline {
            rel,
            queue: queue.unwrap_or_default(),
            ..PathDeadline::default()
        }))
    }
}
