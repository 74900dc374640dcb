//! Whether a read of a connection would block, kept by the connection's
//! stage where the socket that holds it can see it without entering the
//! path (issue 26: "a read that finds nothing answers without reaching the
//! stage").
//!
//! A request/response application drains its socket after every message,
//! so every drain ends with a read that finds nothing; entering the path
//! for it (its context, the read, the flush after it) costs about as much
//! as the read that found the data. The stage sets the flag only after a
//! read, once pending output is flushed and the control block says a read
//! would answer `Ok(None)` having changed nothing and leave nothing to
//! send ([`Tcb::read_would_block`](crate::tcp::Tcb::read_would_block));
//! every other way the connection can change — a segment, a timer, a
//! socket call that writes the control block, the path's end — clears it
//! first, so a stale "would block" is never read; a write keeps it unless
//! it leaves output pending (a write changes nothing a read answers). A
//! cleared flag only means "ask the stage".

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The shared flag: one per connection, held by its stage and (a clone)
/// by its socket. Its one writer and its readers run on the stack's
/// thread, one after the other (a stage is `Send`, so the flag is
/// atomic, read and written without ordering).
#[derive(Clone, Debug, Default)]
pub struct ReadWouldBlock(Arc<AtomicBool>);

impl ReadWouldBlock {
    /// Whether a read would answer `Ok(None)` and change nothing.
    #[inline(always)]
    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Sets the flag (the stage, after a read).
    #[inline(always)]
    pub(super) fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }
}
