//! The TAP device for async code: its fd registered with tokio's reactor.
//!
//! tokio's [`AsyncFd`] watches the fd edge-triggered and caches readiness;
//! the methods here clear that cache whenever a read finds nothing, so an
//! `await` only returns when a frame is really there (the pattern of the
//! `AsyncFd` documentation).

use crate::tap::{TapDevice, TapError};
use pathstack_core::device::{Device, DeviceError};
use pathstack_core::{Instant, Msg, MsgPool};
use tokio::io::unix::AsyncFd;

/// A [`TapDevice`] whose waits are `async` (tokio).
#[derive(Debug)]
pub struct AsyncTap {
    fd: AsyncFd<TapDevice>,
}

impl AsyncTap {
    /// Registers the device with the current tokio runtime's reactor.
    ///
    /// # Panics
    ///
    /// When called outside a tokio runtime with I/O enabled (as
    /// tokio's [`AsyncFd`] does).
    pub fn new(tap: TapDevice) -> Result<AsyncTap, TapError> {
        let name = tap.name().to_string();
        let fd =
            crate::sys::register_async(tap).map_err(|source| TapError::Wait { name, source })?;
        Ok(AsyncTap { fd })
    }

    /// Waits until a frame can be read.
    pub async fn readable(&self) -> Result<(), TapError> {
        loop {
            let mut guard = self.fd.readable().await.map_err(|e| self.wait_err(e))?;
            // tokio's readiness may be stale (an earlier read emptied the
            // queue); ask the kernel without sleeping.
            if guard
                .get_inner()
                .wait_readable(Some(std::time::Duration::ZERO))?
            {
                guard.retain_ready();
                return Ok(());
            }
            guard.clear_ready();
        }
    }

    /// Waits for the next frame and returns it.
    pub async fn receive(&mut self, pool: &MsgPool) -> Result<Msg, DeviceError> {
        loop {
            let mut guard = self
                .fd
                .readable_mut()
                .await
                .map_err(|source| DeviceError::Io {
                    context: "waiting for TAP readiness".to_string(),
                    source,
                })?;
            match guard.get_inner_mut().receive(pool, Instant::now())? {
                Some(frame) => return Ok(frame),
                None => guard.clear_ready(),
            }
        }
    }

    /// Sends a frame. TAP writes do not block (see [`TapDevice`]'s
    /// `transmit`), so this needs no `await`.
    pub fn transmit(&mut self, frame: Msg) -> Result<(), DeviceError> {
        self.fd.get_mut().transmit(frame, Instant::now())
    }

    /// The device (for its name, MTU, MAC, counters, `wait_readable`).
    ///
    /// There is deliberately no `get_mut`: tokio requires that the fd it
    /// watches is never swapped out from under it, and a `&mut TapDevice`
    /// would allow exactly that (`*dev = other`).
    pub fn get_ref(&self) -> &TapDevice {
        self.fd.get_ref()
    }

    /// Deregisters from the reactor and gives the device back.
    pub fn into_inner(self) -> TapDevice {
        self.fd.into_inner()
    }

    fn wait_err(&self, source: std::io::Error) -> TapError {
        TapError::Wait {
            name: self.fd.get_ref().name().to_string(),
            source,
        }
    }
}
