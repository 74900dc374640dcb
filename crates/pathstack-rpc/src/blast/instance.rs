//! What one BLAST instance shares across its sessions: the message
//! sequence counter, the bound on outstanding fragmented messages and the
//! free list of record buffers (spec §3.3).

use crate::blast::config::{FREE_LIST, OUTSTANDING_MESSAGES};

/// The instance-wide state of BLAST, owned by the BLAST module and lent
/// (`&mut`) to each [`BlastSession`](crate::blast::BlastSession) call.
///
/// * Sequence numbers are unique per instance, not per session: a NACK
///   names its message by `seq` alone (x-kernel `blast_output.c`). They
///   start at 1; 0 is reserved for short messages, and after
///   `0xFFFF_FFFF` the counter continues at 1 (§11.2 B10).
/// * At most [`OUTSTANDING_MESSAGES`] fragmented messages are held for
///   retransmission at once, over all sessions (x-kernel's counting
///   semaphore). Where the x-kernel blocks the pushing thread, a push
///   here is refused with
///   [`BlastPushError::WouldBlock`](crate::blast::BlastPushError::WouldBlock)
///   and can be retried after a HOLD expiry or a `free_resources`.
/// * Buffers of finished send and reassembly records are kept on a free
///   list of at most [`FREE_LIST`] entries and reused, so a steady stream
///   of messages allocates nothing after warm-up (a delivered message is
///   lent to the caller from its record's buffer, which then goes back on
///   the list).
#[derive(Debug)]
pub struct BlastInstance {
    next_seq: u32,
    outstanding: usize,
    max_outstanding: usize,
    free: Vec<Vec<u8>>,
    free_cap: usize,
}

impl BlastInstance {
    /// An instance with the §3.3 bounds: 64 outstanding messages, 128
    /// cached buffers.
    pub fn new() -> Self {
        Self::with_limits(OUTSTANDING_MESSAGES, FREE_LIST)
    }

    /// An instance holding at most `max_outstanding` fragmented messages
    /// and caching at most `free_list` buffers.
    pub fn with_limits(max_outstanding: usize, free_list: usize) -> Self {
        BlastInstance {
            next_seq: 1,
            outstanding: 0,
            max_outstanding,
            free: Vec::with_capacity(free_list),
            free_cap: free_list,
        }
    }

    /// The sequence number the next fragmented message will get (unless a
    /// session still holds a message with it, which is skipped).
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// Sets the next sequence number (0 means 1: zero is reserved). For
    /// tests and for an instance that resumes a numbering.
    pub fn set_next_seq(&mut self, seq: u32) {
        self.next_seq = seq.max(1);
    }

    /// Fragmented messages held now, over all sessions.
    pub fn outstanding(&self) -> usize {
        self.outstanding
    }

    /// The bound on [`BlastInstance::outstanding`].
    pub fn max_outstanding(&self) -> usize {
        self.max_outstanding
    }

    /// Buffers on the free list.
    pub fn cached_buffers(&self) -> usize {
        self.free.len()
    }

    /// Keeps a finished record's buffer for reuse; dropped if the free
    /// list is full.
    pub(crate) fn recycle(&mut self, mut buf: Vec<u8>) {
        if self.free.len() < self.free_cap && buf.capacity() > 0 {
            buf.clear();
            self.free.push(buf);
        }
    }

    /// Takes the next sequence number, skipping 0 and any `in_use`.
    pub(crate) fn take_seq(&mut self, in_use: impl Fn(u32) -> bool) -> u32 {
        loop {
            let seq = self.next_seq;
            self.next_seq = match seq.wrapping_add(1) {
                0 => 1,
                s => s,
            };
            if !in_use(seq) {
                return seq;
            }
        }
    }

    /// Whether one more fragmented message may be held.
    pub(crate) fn has_slot(&self) -> bool {
        self.outstanding < self.max_outstanding
    }

    pub(crate) fn acquire_slot(&mut self) {
        debug_assert!(self.has_slot());
        self.outstanding += 1;
    }

    pub(crate) fn release_slot(&mut self) {
        self.outstanding = self.outstanding.saturating_sub(1);
    }

    /// An empty buffer, from the free list when it has one.
    pub(crate) fn take_buffer(&mut self) -> Vec<u8> {
        self.free.pop().unwrap_or_default()
    }
}

impl Default for BlastInstance {
    fn default() -> Self {
        Self::new()
    }
}
