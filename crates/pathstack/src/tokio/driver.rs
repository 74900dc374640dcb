//! The life of a [`Net`](super::Net)'s driver: whether one runs, and why it
//! ended, so that no socket call waits for a driver that is gone.

use std::io;

/// Why a socket of a [`Net`](super::Net) cannot be served: its driver
/// never started or has ended. Every pending and later call of the net's
/// sockets fails with it (wrapped in an [`io::Error`]; recover it with
/// `get_ref()` and `downcast_ref::<DriverError>()`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DriverError {
    /// No driver runs: the net was made outside a tokio runtime and
    /// neither [`Net::spawn`](super::Net::spawn) nor
    /// [`Net::run`](super::Net::run) was called.
    #[error(
        "no driver runs this Net: it was made outside a tokio runtime; call Net::spawn (or await Net::run) inside one"
    )]
    NotStarted,
    /// A driver already runs ([`Net::run`](super::Net::run) was called on
    /// a net that has one).
    #[error("a driver already runs this Net (it starts when the Net is made in a runtime)")]
    AlreadyRunning,
    /// The driver panicked.
    #[error("the Net's driver panicked; the host is no longer polled")]
    Panicked,
    /// Waiting on the device failed.
    #[error("the Net's driver failed waiting for the device: {message}")]
    Device {
        /// The device error's kind.
        kind: io::ErrorKind,
        /// The device error's words.
        message: String,
    },
    /// The driver was stopped: [`Net::shutdown`](super::Net::shutdown),
    /// its task aborted or its runtime shut down (or the task awaiting
    /// [`Net::run`](super::Net::run) was dropped).
    #[error("the Net's driver stopped (shut down, aborted, or its runtime ended)")]
    Stopped,
}

impl From<DriverError> for io::Error {
    fn from(e: DriverError) -> Self {
        let kind = match &e {
            DriverError::NotStarted => io::ErrorKind::NotConnected,
            DriverError::AlreadyRunning => io::ErrorKind::AlreadyExists,
            DriverError::Device { kind, .. } => *kind,
            DriverError::Panicked | DriverError::Stopped => io::ErrorKind::BrokenPipe,
        };
        io::Error::new(kind, e)
    }
}

/// Where a net's driver is.
#[derive(Clone, Debug, Default)]
pub(super) enum DriverState {
    /// Never started.
    #[default]
    NotStarted,
    /// Running.
    Running,
    /// Ended, for good.
    Ended(DriverError),
}

impl DriverState {
    /// Ok while a driver runs; the reason it does not otherwise.
    pub(super) fn check(&self) -> Result<(), DriverError> {
        match self {
            DriverState::Running => Ok(()),
            DriverState::NotStarted => Err(DriverError::NotStarted),
            DriverState::Ended(e) => Err(e.clone()),
        }
    }
}
