//! A device that has failed for good (issue 27, problem 2): its driver
//! records the failure once ([`ModCx::device_failed`],
//! [`Cx::device_failed`]), the stack keeps it
//! ([`Stack::device_failure`]), and whoever drives the stack ends every
//! pending and later call with it instead of waiting for frames that will
//! never come (a TAP deleted under a running host). A transient error —
//! a full queue, a frame too large, no buffer — is counted as a drop and
//! is not a failure, and neither is a peer that went away (the other end
//! of the in-memory wire dropped, a cable pulled): the host keeps
//! running, as Linux's does when the carrier goes.
//!
//! [`ModCx::device_failed`]: crate::module::ModCx::device_failed
//! [`Cx::device_failed`]: crate::stage::Cx::device_failed
//! [`Stack::device_failure`]: crate::Stack::device_failure

use super::DeviceError;
use std::io;

/// How a device failed: the driver module's instance, and the error as a
/// `std::io` kind and words (the device's `io::Error` itself is not
/// `Clone`, and every caller that reads the failure gets its own copy).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the device of `{module}` failed: {message}")]
pub struct DeviceFailure {
    /// The driver module's instance name.
    pub module: String,
    /// The `std::io` kind the failure reports as: `NetworkDown` for a
    /// device whose other end is gone, the OS error's own otherwise.
    pub kind: io::ErrorKind,
    /// What the device said.
    pub message: String,
}

impl DeviceError {
    /// Whether the device cannot carry frames any more (the interface is
    /// gone), as opposed to refusing one frame or losing its peer.
    pub fn is_fatal(&self) -> bool {
        matches!(self, DeviceError::Gone(_))
    }

    /// The `std::io` kind this error reports as.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            DeviceError::FrameTooLarge { .. } => io::ErrorKind::InvalidInput,
            DeviceError::QueueFull { .. } => io::ErrorKind::WouldBlock,
            // Linux's `ENETDOWN` for an interface that is down or went
            // away.
            DeviceError::Disconnected | DeviceError::Gone(_) => io::ErrorKind::NetworkDown,
            DeviceError::NoBuffer(_) => io::ErrorKind::OutOfMemory,
            DeviceError::Io { source, .. } => source.kind(),
        }
    }
}

impl DeviceFailure {
    /// The failure of the device of driver `module`, from its error.
    pub fn new(module: &str, e: &DeviceError) -> Self {
        DeviceFailure {
            module: module.to_string(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}

impl From<DeviceFailure> for io::Error {
    fn from(f: DeviceFailure) -> Self {
        io::Error::new(f.kind, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_gone_device_is_a_failure() {
        let gone = DeviceError::Gone("TAP interface t0 was deleted".into());
        assert!(gone.is_fatal());
        assert!(!DeviceError::Disconnected.is_fatal());
        assert!(!DeviceError::QueueFull { capacity: 8 }.is_fatal());
        let e = io::Error::from(DeviceFailure::new("wire", &gone));
        assert_eq!(e.kind(), io::ErrorKind::NetworkDown);
        assert_eq!(
            e.to_string(),
            "the device of `wire` failed: the device is gone: TAP interface t0 was deleted"
        );
    }
}
