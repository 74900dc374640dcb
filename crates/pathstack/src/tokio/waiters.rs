//! [`Waiters`]: the tasks waiting for one thing (a socket's receive queue,
//! room to send), to be woken together when it may have happened.

use std::task::Waker;

/// Distinct tasks a list holds before it wakes them all to start afresh.
/// A task that keeps cancelling and retrying re-registers the same waker
/// (deduplicated), so only many distinct tasks reach the bound; woken,
/// each re-registers if it still waits.
const MAX_WAITERS: usize = 64;

/// A bounded list of wakers.
#[derive(Debug, Default)]
pub(super) struct Waiters(Vec<Waker>);

impl Waiters {
    /// Registers `waker`, once.
    pub(super) fn register(&mut self, waker: &Waker) {
        if self.0.iter().any(|w| w.will_wake(waker)) {
            return;
        }
        if self.0.len() >= MAX_WAITERS {
            self.wake_all();
        }
        self.0.push(waker.clone());
    }

    /// Wakes every registered task and forgets it.
    pub(super) fn wake_all(&mut self) {
        self.0.drain(..).for_each(Waker::wake);
    }
}
