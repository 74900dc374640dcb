//! [`TapError`]: what went wrong opening or waiting on a TAP device, and
//! the [`std::io::Error`] it becomes (the OS error's own kind where there
//! is one), so that `TapDevice::open(..)?` works in a function returning
//! `std::io::Result` (issue 27, problem 4).

use pathstack_core::device::DeviceError;
use std::io;
use thiserror::Error;

/// What went wrong opening or waiting on a TAP device.
#[derive(Debug, Error)]
pub enum TapError {
    /// The interface name cannot be given to the kernel.
    #[error("invalid TAP interface name {name:?}: {reason}")]
    InvalidName {
        /// The name given.
        name: String,
        /// Why it was refused.
        reason: &'static str,
    },
    /// `/dev/net/tun` could not be opened.
    #[error("cannot open /dev/net/tun: {source} (is the tun module loaded, and does the process have CAP_NET_ADMIN?)")]
    OpenTun {
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The named network namespace could not be entered.
    #[error("cannot enter network namespace {name:?} (/run/netns/{name}): {source}")]
    Netns {
        /// The namespace name.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// An interface ioctl failed.
    #[error("{op} failed for TAP interface {name:?}: {source}")]
    Ioctl {
        /// The operation, e.g. `TUNSETIFF` or `SIOCGIFMTU`.
        op: &'static str,
        /// The interface.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// Waiting for the device to become readable failed.
    #[error("waiting for TAP interface {name:?} to become readable: {source}")]
    Wait {
        /// The interface.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// [`TapOptions::multi_queue`](crate::TapOptions::multi_queue) was asked for, but this kernel's TUN
    /// driver does not offer `IFF_MULTI_QUEUE` (TUNGETFEATURES).
    #[error("TAP interface {name:?}: this kernel's TUN driver has no multi-queue support (IFF_MULTI_QUEUE)")]
    NoMultiQueue {
        /// The interface.
        name: String,
    },
    /// The helper thread that opens a TAP inside a namespace could not run.
    #[error("cannot run the namespace thread opening TAP interface {name:?}: {source}")]
    Thread {
        /// The interface.
        name: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl From<TapError> for DeviceError {
    fn from(e: TapError) -> Self {
        let context = e.to_string();
        let source = match e {
            TapError::OpenTun { source }
            | TapError::Netns { source, .. }
            | TapError::Ioctl { source, .. }
            | TapError::Wait { source, .. }
            | TapError::Thread { source, .. } => source,
            TapError::InvalidName { reason, .. } => {
                io::Error::new(io::ErrorKind::InvalidInput, reason)
            }
            TapError::NoMultiQueue { .. } => io::Error::new(
                io::ErrorKind::Unsupported,
                "TUN driver without IFF_MULTI_QUEUE",
            ),
        };
        DeviceError::Io { context, source }
    }
}

impl TapError {
    /// The [`io::ErrorKind`] of this error: the OS error's where the
    /// kernel refused (`PermissionDenied` without `CAP_NET_ADMIN`,
    /// `NotFound` for a missing namespace), `InvalidInput` for a name the
    /// kernel cannot take, `Unsupported` for a missing TUN feature.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            TapError::OpenTun { source }
            | TapError::Netns { source, .. }
            | TapError::Ioctl { source, .. }
            | TapError::Wait { source, .. }
            | TapError::Thread { source, .. } => source.kind(),
            TapError::InvalidName { .. } => io::ErrorKind::InvalidInput,
            TapError::NoMultiQueue { .. } => io::ErrorKind::Unsupported,
        }
    }
}

impl From<TapError> for io::Error {
    fn from(e: TapError) -> Self {
        io::Error::new(e.kind(), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_with_the_os_errors_kind() {
        let e = TapError::Netns {
            name: "nowhere".into(),
            source: io::Error::from_raw_os_error(libc::ENOENT),
        };
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::NotFound);
        assert!(io.to_string().contains("nowhere"), "{io}");
        let bad = TapError::InvalidName {
            name: "x".repeat(20),
            reason: "longer than 15 bytes",
        };
        assert_eq!(io::Error::from(bad).kind(), io::ErrorKind::InvalidInput);
        let old = TapError::NoMultiQueue { name: "t0".into() };
        assert_eq!(io::Error::from(old).kind(), io::ErrorKind::Unsupported);
    }
}
