//! The operations a stage or module may invoke on the stack, whichever
//! context it holds: the time, the message pool, sending a message onto a
//! path, timers, path faults, device failures and path requests.
//!
//! The five contexts ([`Cx`](crate::stage::Cx),
//! [`EstablishCx`](crate::stage::EstablishCx),
//! [`CreateCx`](crate::module::CreateCx), [`ModCx`](crate::module::ModCx),
//! [`RouteCx`](crate::module::RouteCx)) each reach one [`Ops`] and
//! dereference to it, so `cx.send_on(..)`, `cx.now()` and the rest are
//! written here once (issue 26 item 6) and read the same at every call
//! site. A context keeps only what is its own: a stage's position and
//! path view, a module's id and parameters, a route's classifier. Where an
//! operation depends on who asks — whose timer it is, which driver failed,
//! which module a path is made at — the context names itself as a
//! parameter of the one operation here rather than writing it again.

use crate::device::DeviceError;
use crate::drop_reason::DropReason;
use crate::fault::PathFault;
use crate::ids::{Dir, PathId};
use crate::msg::{Msg, MsgPool};
use crate::runtime::{PathOp, Shared, TimerOwner};
use crate::time::{Duration, Instant};
use crate::timer::{TimerError, TimerHandle};

/// The stack's operations, as every context offers them (see the module
/// docs): three words, the time, the stack-wide state and the batch
/// position of the message being run (0 outside a path run).
pub struct Ops<'s> {
    pub(crate) now: Instant,
    pub(crate) shared: &'s mut Shared,
    /// Position of the running message in its batch: what it emits keeps
    /// its place when LDLP runs follow-ups after the batch.
    pub(crate) origin: u32,
}

impl<'s> Ops<'s> {
    /// The operations at time `now` outside a batch.
    #[inline]
    pub(crate) fn new(now: Instant, shared: &'s mut Shared) -> Self {
        Ops {
            now,
            shared,
            origin: 0,
        }
    }

    /// Current stack time.
    #[inline]
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The message pool, to allocate new messages.
    #[inline]
    pub fn pool(&self) -> &MsgPool {
        &self.shared.pool
    }

    /// Sends a message on a path (another or the running one) from
    /// position `from` in direction `dir`: it starts at the neighbour of
    /// stage `from`, after the current message (or batch) is done. This
    /// is how a stage resumes a message it parked on another path (ARP
    /// releasing packets that waited for a reply), hands a message to a
    /// sibling path of its module (an IP stage sending an ICMP error on
    /// ICMP's path), or a module's spontaneous work (ARP retries,
    /// announcements) reaches the wire. A path deleted in the meantime
    /// drops it silently. Fails when the bounded follow-up list is full;
    /// the message is then dropped and counted.
    #[inline]
    pub fn send_on(
        &mut self,
        path: PathId,
        from: usize,
        dir: Dir,
        msg: Msg,
    ) -> Result<(), DropReason> {
        self.shared.send_on(path, from, dir, msg, self.origin)
    }

    /// Records an asynchronous error for `path` (the running one or
    /// another, e.g. the path a parked message came from, or one ARP gave
    /// up on), which its owner reads with
    /// [`Stack::take_fault`](crate::Stack::take_fault); see
    /// [`crate::fault`] for the bounds.
    pub fn set_fault(&mut self, path: PathId, fault: PathFault) {
        self.shared.faults.set(path, fault);
    }

    /// Cancels a timer; `false` if it already fired or was cancelled.
    pub fn cancel_timer(&mut self, handle: TimerHandle) -> bool {
        self.shared.timers.cancel(handle)
    }

    /// Arms a timer for `owner` after `after`: a context's `arm_timer`
    /// names its owner (a stage of a path, a module) and comes here.
    pub(crate) fn arm_timer_for(
        &mut self,
        owner: TimerOwner,
        after: Duration,
    ) -> Result<TimerHandle, TimerError> {
        self.shared.timers.arm(self.now + after, owner)
    }

    /// Records that the device of driver `driver` failed for good (see
    /// [`crate::device::failure`]); the first failure stays.
    pub(crate) fn device_failed_at(&mut self, driver: &str, e: &DeviceError) {
        self.shared.device_failed(driver, e);
    }

    /// Asks for a path to be opened or deleted once the current run or
    /// module call is over, within the bound of the follow-up list: a
    /// stage's [`open_path`](crate::stage::Cx::open_path) and
    /// [`delete_path`](crate::stage::Cx::delete_path) and a module's
    /// [`request_path`](crate::module::ModCx::request_path).
    pub(crate) fn ask_path(&mut self, op: PathOp) -> Result<(), DropReason> {
        self.shared.path_op(op)
    }
}

/// Makes each named context (a struct with one lifetime and an `ops`
/// field) dereference to its [`Ops`], so `cx.now()`, `cx.send_on(..)`,
/// `cx.set_fault(..)` read the same in a stage, a module and a route
/// decision. A stage's [`Cx`](crate::stage::Cx) reaches its `Ops` through
/// the run's environment and writes its two impls out.
macro_rules! deref_to_ops {
    ($($cx:ident),*) => {$(
        impl<'a> std::ops::Deref for $cx<'a> {
            type Target = $crate::ops::Ops<'a>;
            #[inline]
            fn deref(&self) -> &Self::Target {
                &self.ops
            }
        }
        impl std::ops::DerefMut for $cx<'_> {
            #[inline]
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.ops
            }
        }
    )*};
}
pub(crate) use deref_to_ops;

#[cfg(test)]
mod tests {
    use crate::stage::Cx;
    use std::mem::size_of;

    /// A stage's context is built for every stage a message passes: the
    /// operations live in the run's environment, so it stays two words.
    #[test]
    fn a_stages_context_stays_two_words() {
        assert_eq!(size_of::<Cx<'_, '_>>(), 2 * size_of::<usize>());
    }
}
