//! The server channels of an RPC server path, held by the path's `CHAN`
//! stage (issue 26 items 6 and 7): the table of every channel the path's
//! requests arrive on, the engine's requests about them, and the stage
//! timer that runs their retransmissions.
//!
//! The thesis' PIN version kept on the path what a call needs (Mosberger
//! §4.2.2), so a request and its reply reach their channel without a
//! lookup and without leaving the path. Only the server path's `CHAN`
//! stage ever reaches the server table (its requests, its replies, the
//! BIDCTL notices registered for its peers), so the stage owns it: the
//! fast form reaches it as a field of the stage, with no module reached
//! and no `Any` downcast through the stack's module table. What the
//! module's poll did for it — fire the reply retransmission timers
//! (spec §6.6) — is a stage timer ([`Cx::arm_timer`]) armed for the
//! table's earliest deadline, re-armed only when a message moves that
//! deadline earlier (who makes work marks it, as the module's deadline
//! was marked before).

use super::protocol;
use crate::chan::{ChanAction, ServerConfig, ServerTable, TableError};
use pathstack_core::stage::Cx;
use pathstack_core::timer::TimerHandle;
use pathstack_core::Instant;

/// The server path's channel table and the timer of its retransmissions.
pub(crate) struct ServerChannels {
    /// The channels (spec §6.2's server half).
    pub(crate) table: ServerTable,
    /// The engine's requests (reused).
    pub(crate) actions: Vec<ChanAction>,
    /// The instant the armed timer fires, if one is armed: the table has
    /// no work before it (a deadline moved later only fires it early,
    /// and the firing looks again).
    due: Option<Instant>,
    /// The armed timer.
    timer: Option<TimerHandle>,
    /// The armed timer's token: a timer that fires with another one was
    /// replaced by an earlier one (and cancelled; the token makes sure).
    token: u64,
}

impl ServerChannels {
    /// An empty table serving MSELECT (the protocol above `CHAN` on an RPC
    /// server path).
    pub(crate) fn new() -> Result<Self, TableError> {
        let mut table = ServerTable::new(ServerConfig::default());
        table.enable(protocol::MSELECT)?;
        Ok(ServerChannels {
            table,
            actions: Vec::new(),
            due: None,
            timer: None,
            token: 0,
        })
    }

    /// Notes a retransmission timer a reply armed at `at`: the stage's
    /// timer is armed again only if `at` is before the one armed (on a
    /// ping-pong, once per timeout, not per reply).
    #[inline(always)]
    pub(crate) fn armed(&mut self, cx: &mut Cx<'_, '_>, at: Instant) {
        if self.due.is_none_or(|d| at < d) {
            self.arm(cx, at);
        }
    }

    /// Arms the stage's timer again for the table's earliest deadline, if
    /// that is before the one armed: after anything but an established
    /// request or reply (a resend, a probe answered, a reboot's teardown),
    /// which may have moved any channel's timer.
    pub(crate) fn rearm(&mut self, cx: &mut Cx<'_, '_>) {
        if let Some(at) = self.table.poll_at() {
            self.armed(cx, at);
        }
    }

    /// Arms the stage's timer for `at`, replacing the one armed. A timer
    /// the stack cannot arm (its wheel full) leaves none armed, so the
    /// next reply tries again.
    #[inline(never)]
    fn arm(&mut self, cx: &mut Cx<'_, '_>, at: Instant) {
        if let Some(h) = self.timer.take() {
            cx.cancel_timer(h);
        }
        self.token = self.token.wrapping_add(1);
        let after = at.saturating_since(cx.now());
        self.timer = cx.arm_timer(after, self.token).ok();
        self.due = self.timer.is_some().then_some(at);
    }

    /// The stage's timer `token` fired: the retransmissions due now are
    /// asked for (in [`ServerChannels::actions`]) and the timer armed
    /// for the next deadline. `false` for a timer that was replaced.
    pub(crate) fn fired(&mut self, token: u64, cx: &mut Cx<'_, '_>) -> bool {
        if token != self.token {
            return false;
        }
        self.timer = None;
        self.due = None;
        self.table.on_time(cx.now(), &mut self.actions);
        self.rearm(cx);
        true
    }
}
