//! A path's four queues (thesis §3.3.3); the source queues made on
//! first use.
//!
//! With run to completion most paths never queue a message: an idle TCP
//! connection's path has never held one. Four inline `VecDeque`s and
//! their refusal counters were 192 octets of every path's slot, and a
//! million idle connections are two million slots (issue 28 item 4). The
//! two source queues (input waiting for a scheduler's turn) and the four
//! refusal counters are one box made by the first message queued there
//! (or refused anywhere), and kept from then on, so that a path queueing
//! in steady state allocates nothing more. The two sink queues stay
//! inline: a datagram socket's receive takes from one on every message
//! (UDP PIN's predicted path), and the box's check cost 10 instructions a
//! round trip there.

use crate::msg::Msg;
use std::collections::VecDeque;

/// What a path's queues make on first use.
#[derive(Debug, Default)]
pub(crate) struct MadeQueues {
    /// The source queues, down and up.
    source: [VecDeque<Msg>; 2],
    /// Messages refused because the queue was full, per queue.
    dropped: [u64; 4],
}

/// A path's four bounded FIFOs, indexed by `QueueKind as usize` (sources
/// even, sinks odd): the sinks and the bounds inline, the sources made
/// on first use ([`PathQueues::deque_mut`]).
#[derive(Debug)]
pub(crate) struct PathQueues {
    /// The sink queues, down and up.
    sink: [VecDeque<Msg>; 2],
    /// Most messages each queue holds (`QUEUE_LEN`, or the stack's
    /// default); `u32` is ample (a queue's messages are pooled buffers).
    caps: [u32; 4],
    made: Option<Box<MadeQueues>>,
}

/// Whether queue `i` is a sink (`QueueKind::SinkDown`, `SinkUp`).
#[inline(always)]
fn is_sink(i: usize) -> bool {
    i & 1 == 1
}

impl PathQueues {
    pub(crate) fn new(cap: usize) -> Self {
        PathQueues {
            sink: Default::default(),
            caps: [clamp(cap); 4],
            made: None,
        }
    }

    /// The bound of queue `i`.
    #[inline(always)]
    pub(crate) fn cap(&self, i: usize) -> usize {
        self.caps[i] as usize
    }

    /// Sets every queue's bound (messages queued beyond it stay).
    pub(crate) fn set_capacity(&mut self, cap: usize) {
        self.caps = [clamp(cap); 4];
    }

    /// Whether the boxed part was made (a source queue used, or a
    /// message refused).
    pub(crate) fn is_made(&self) -> bool {
        self.made.is_some()
    }

    /// Queue `i`, if it exists yet.
    #[inline(always)]
    fn deque(&self, i: usize) -> Option<&VecDeque<Msg>> {
        if is_sink(i) {
            Some(&self.sink[i >> 1])
        } else {
            self.made.as_ref().map(|m| &m.source[i >> 1])
        }
    }

    /// Queue `i`, made now if it is a source queue not used before.
    #[inline(always)]
    pub(crate) fn deque_mut(&mut self, i: usize) -> &mut VecDeque<Msg> {
        if is_sink(i) {
            &mut self.sink[i >> 1]
        } else {
            &mut self.made_mut().source[i >> 1]
        }
    }

    /// Counts a message refused by queue `i` (full).
    pub(crate) fn count_refused(&mut self, i: usize) {
        self.made_mut().dropped[i] += 1;
    }

    fn made_mut(&mut self) -> &mut MadeQueues {
        match self.made {
            Some(ref mut m) => m,
            None => self.make(),
        }
    }

    /// The first source message queued or refusal: out of line, as most
    /// paths never get here.
    #[cold]
    #[inline(never)]
    fn make(&mut self) -> &mut MadeQueues {
        self.made.insert(Box::default())
    }

    /// Messages in queue `i`.
    #[inline(always)]
    pub(crate) fn len(&self, i: usize) -> usize {
        self.deque(i).map_or(0, VecDeque::len)
    }

    /// Whether queue `i` is empty.
    #[inline(always)]
    pub(crate) fn is_empty(&self, i: usize) -> bool {
        self.len(i) == 0
    }

    /// Takes the head of queue `i`.
    #[inline(always)]
    pub(crate) fn pop(&mut self, i: usize) -> Option<Msg> {
        if is_sink(i) {
            self.sink[i >> 1].pop_front()
        } else {
            self.made.as_mut()?.source[i >> 1].pop_front()
        }
    }

    /// A read-only view of queue `i`.
    pub(crate) fn view(&self, i: usize) -> PathQueue<'_> {
        PathQueue {
            q: self.deque(i),
            cap: self.cap(i),
            dropped: self.made.as_ref().map_or(0, |m| m.dropped[i]),
        }
    }
}

/// A bound as stored: a larger one means no bound a path can reach.
fn clamp(cap: usize) -> u32 {
    u32::try_from(cap).unwrap_or(u32::MAX)
}

/// One of a path's queues, to inspect it ([`crate::path::Path::queue`]):
/// a bounded FIFO of messages. Its storage is allocated when the path
/// first queues a message and grows (doubling) up to the bound, never
/// past it: with run to completion most paths never queue a message, so
/// a path costs no queue memory until it needs it, and a queue that has
/// reached its working size allocates nothing more (steady state stays
/// allocation-free).
#[derive(Clone, Copy, Debug)]
pub struct PathQueue<'a> {
    q: Option<&'a VecDeque<Msg>>,
    cap: usize,
    dropped: u64,
}

impl<'a> PathQueue<'a> {
    /// Messages in the queue.
    pub fn len(&self) -> usize {
        self.q.map_or(0, VecDeque::len)
    }
    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Most messages the queue holds.
    pub fn capacity(&self) -> usize {
        self.cap
    }
    /// Messages refused because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
    /// The message at the head of the queue, left in place (what a
    /// socket's `peek` reads).
    pub fn front(&self) -> Option<&'a Msg> {
        self.q.and_then(VecDeque::front)
    }
    /// The queued messages, oldest first, left in place.
    pub fn iter(&self) -> impl Iterator<Item = &'a Msg> + 'a {
        self.q.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::MsgPool;
    use crate::path::QueueKind;

    /// Reading, bounding and popping a path that never queued makes
    /// nothing, nor does queueing on a sink; the first source message
    /// makes the box, which then stays (a path queueing in steady state
    /// allocates nothing more).
    #[test]
    fn sources_made_on_first_use_and_kept() {
        let mut qs = PathQueues::new(2);
        for i in 0..4 {
            assert_eq!((qs.len(i), qs.cap(i), qs.is_empty(i)), (0, 2, true));
            assert!(qs.pop(i).is_none());
            let v = qs.view(i);
            assert_eq!((v.len(), v.capacity(), v.dropped()), (0, 2, 0));
            assert!(v.front().is_none() && v.iter().next().is_none());
        }
        qs.set_capacity(usize::MAX);
        assert_eq!(qs.cap(0), u32::MAX as usize);
        let pool = MsgPool::new(crate::msg::PoolConfig::default());
        let sink_up = QueueKind::SinkUp as usize;
        qs.deque_mut(sink_up)
            .push_back(pool.alloc_copy(&[4]).unwrap());
        assert_eq!(qs.len(sink_up), 1);
        assert!(qs.pop(sink_up).is_some());
        assert!(!qs.is_made(), "made by a sink");

        let src_up = QueueKind::SourceUp as usize;
        qs.deque_mut(src_up)
            .push_back(pool.alloc_copy(&[1, 2, 3]).unwrap());
        assert!(qs.is_made());
        assert_eq!(
            (qs.len(src_up), qs.len(QueueKind::SourceDown as usize)),
            (1, 0)
        );
        let head = qs.view(src_up).front().map(|m| m.as_slice().to_vec());
        assert_eq!(head, Some(vec![1, 2, 3]));
        assert!(qs.pop(src_up).is_some());
        assert!(qs.pop(src_up).is_none());
        qs.count_refused(sink_up);
        assert_eq!(qs.view(sink_up).dropped(), 1);
        assert!(qs.is_made(), "an emptied queue keeps its box");
    }
}
