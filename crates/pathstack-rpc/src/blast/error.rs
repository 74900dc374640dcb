//! Why a push to BLAST failed.

use std::io;

/// A message BLAST refused to send. Nothing was sent and no state changed:
/// the caller still has the whole message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum BlastPushError {
    /// Longer than `MAX_FRAGS · F` (spec §3.4 item 1; `16 · F` with the
    /// default mask): BLAST cannot carry it.
    #[error("message of {len} bytes exceeds BLAST's maximum of {max} bytes")]
    TooLarge {
        /// The message length.
        len: usize,
        /// The largest message the session carries.
        max: usize,
    },
    /// The instance already holds its maximum of fragmented messages for
    /// retransmission (x-kernel `OUTSTANDING_MESSAGES`, where the push
    /// blocks). Retry after a HOLD expiry or a `free_resources`
    /// ([`BlastSession::poll_at`](crate::blast::BlastSession::poll_at)
    /// says when the next hold ends).
    #[error("BLAST holds {outstanding} unacknowledged messages; push again after one is freed")]
    WouldBlock {
        /// Messages held now.
        outstanding: usize,
    },
}

impl BlastPushError {
    /// The [`io::ErrorKind`] this error maps to.
    pub fn kind(self) -> io::ErrorKind {
        match self {
            BlastPushError::TooLarge { .. } => io::ErrorKind::InvalidInput,
            BlastPushError::WouldBlock { .. } => io::ErrorKind::WouldBlock,
        }
    }
}

impl From<BlastPushError> for io::Error {
    fn from(e: BlastPushError) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}
