//! `SO_LINGER` on a [`Host`]'s TCP streams: what `close` does with data
//! the peer has not yet acknowledged.
//!
//! POSIX's `SO_LINGER` (and RFC 793's ABORT beside CLOSE) gives three
//! closes:
//!
//! - `None`, the default: the graceful close — a FIN after the data, the
//!   connection goes on in the stack until the data is acknowledged (or
//!   given up on by the retransmission limit);
//! - `Some(0)`: ABORT — a reset, the data queued is dropped;
//! - `Some(d)`: a graceful close that may last at most `d`. A blocking
//!   `close` on Linux waits up to `d` for the data to be acknowledged;
//!   here nothing may block (the caller's thread runs the stack), so
//!   `close` returns at once and the stack resets the connection and
//!   drops its data if they are still unacknowledged when `d` has passed
//!   (what BSD's `soclose` does when the linger time runs out). The
//!   connection's resources are then bounded by `d`, not by the
//!   retransmission limit.

use super::Tcp;
use super::{SocketError, TcpStream};
use crate::host::Host;
use pathstack_core::PathId;
use pathstack_inet::modules::TcpConnStage;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// Closed connections with a linger time that the host watches at once.
/// A close beyond it is graceful without the bound (the default close),
/// so the table never grows past it.
pub const MAX_LINGERING: usize = 4096;

/// What closing a stream does, by its linger option.
pub(crate) enum LingerClose {
    /// The default graceful close.
    Graceful,
    /// A reset (linger zero).
    Abort,
    /// A graceful close bounded by this time.
    Bounded(Duration),
}

impl Host {
    /// What closing `s` does; its option goes with it.
    pub(crate) fn linger_close(&mut self, s: &TcpStream) -> LingerClose {
        match self.tcp_lingers.take(s) {
            None => LingerClose::Graceful,
            Some(d) if d.is_zero() => LingerClose::Abort,
            Some(d) => LingerClose::Bounded(d),
        }
    }

    /// Watches the close of `path`: reset when `d` has passed with data
    /// unacknowledged.
    pub(crate) fn linger_watch(&mut self, path: PathId, d: Duration) {
        if self.tcp_lingers.closing.len() < MAX_LINGERING {
            let at = self.now() + d.into();
            self.tcp_lingers.closing.push((path, at));
        }
    }

    /// Any closes that have lingered their time: those whose data is still
    /// unacknowledged are reset (their data dropped); the others go on
    /// (FIN handshake, TIME-WAIT) as a graceful close does.
    pub(crate) fn linger_expire(&mut self) {
        let now = self.now();
        let mut i = 0;
        while i < self.tcp_lingers.closing.len() {
            let (path, at) = self.tcp_lingers.closing[i];
            if at > now {
                i += 1;
                continue;
            }
            self.tcp_lingers.closing.swap_remove(i);
            let stack = self.stack_mut();
            stack.set_now(now);
            // The path may be gone already (closed and out of TIME-WAIT).
            let _ = stack.with_stage::<TcpConnStage, _>(path, |st, cx| {
                if st.tcb().send_queue() > 0 && !st.tcb().is_closed() {
                    st.tcb_mut().abort();
                }
                st.flush(cx);
            });
        }
    }
}

impl<H: Deref<Target = Host>> Tcp<H> {
    /// The stream's linger option (`None` unless set).
    pub fn linger(&self, s: &TcpStream) -> Result<Option<Duration>, SocketError> {
        self.state(s)?;
        Ok(self
            .host
            .tcp_lingers
            .set
            .iter()
            .find(|(t, _)| t == s)
            .map(|&(_, d)| d))
    }
}

impl<H: DerefMut<Target = Host>> Tcp<H> {
    /// Sets what [`tcp_close`](crate::socket::Tcp::close) does with unacknowledged
    /// data (`SO_LINGER`, see the module docs): `None` the graceful
    /// close, `Some(Duration::ZERO)` a reset that drops the data,
    /// `Some(d)` a graceful close reset after `d` if the data is still
    /// unacknowledged (the call never blocks).
    pub fn set_linger(
        &mut self,
        s: &TcpStream,
        linger: Option<Duration>,
    ) -> Result<(), SocketError> {
        // A stale or foreign handle is refused here, as every option is.
        self.state(s)?;
        let lingers = &mut self.host.tcp_lingers;
        lingers.take(s);
        if let Some(d) = linger {
            lingers.set.push((*s, d));
        }
        Ok(())
    }
}
