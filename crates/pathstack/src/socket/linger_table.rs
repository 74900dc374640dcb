//! The linger options of a host's streams (`SO_LINGER`) and the closes
//! they bound; apart from the calls that set them so that the host holds
//! the table without an import cycle (issue 27 item 8).

use super::handles::TcpStream;
use pathstack_core::{Instant, PathId};
use std::time::Duration;

/// The linger options of a host's streams and the closes they bound.
#[derive(Debug, Default)]
pub(crate) struct TcpLingers {
    /// Streams with `SO_LINGER` set; every other stream has `None`. At
    /// most one entry per open stream (the TCP module bounds those).
    pub(crate) set: Vec<(TcpStream, Duration)>,
    /// Connections closed with a linger time, and when it runs out.
    pub(crate) closing: Vec<(PathId, Instant)>,
}

impl TcpLingers {
    /// The earliest moment a lingering close runs out.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.closing.iter().map(|&(_, at)| at).min()
    }

    /// Whether a close is watched (the host's poll looks only then).
    pub(crate) fn watching(&self) -> bool {
        !self.closing.is_empty()
    }

    /// Takes the linger option of `s` (it is being closed).
    pub(crate) fn take(&mut self, s: &TcpStream) -> Option<Duration> {
        let i = self.set.iter().position(|(t, _)| t == s)?;
        Some(self.set.swap_remove(i).1)
    }
}
