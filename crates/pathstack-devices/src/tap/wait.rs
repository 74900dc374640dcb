//! Waiting for input on a TAP: blocking in `epoll_wait(2)` or busy-polling,
//! on the device itself or through a [`TapWaiter`] once a stack owns it.

use super::{TapDevice, TapError};
use crate::sys;
use pathstack_core::device::{Device, DeviceError};
use pathstack_core::{Instant, Msg, MsgPool};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// How a caller waits for the next frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WaitMode {
    /// Sleep in `epoll_wait` until a frame is there.
    #[default]
    Blocking,
    /// Never sleep: keep calling `receive`, yielding the CPU
    /// (`sched_yield`) between empty polls so that kernel work queued on the
    /// same CPU (ksoftirqd forwarding our frames) still runs.
    BusyPoll,
}

/// Waits for input on a TAP device that a stack owns (see
/// [`TapDevice::waiter`]).
#[derive(Debug)]
pub struct TapWaiter {
    /// Keeps the duplicated descriptor (and so the epoll registration) alive.
    _fd: File,
    epoll: sys::Epoll,
    name: String,
}

impl TapWaiter {
    /// Waits until a frame can be read or `timeout` has passed (`None`:
    /// forever); `Ok(true)` when readable. Like
    /// [`TapDevice::wait_readable`]: milliseconds, rounded up.
    pub fn wait_readable(&self, timeout: Option<std::time::Duration>) -> Result<bool, TapError> {
        wait_epoll(&self.epoll, &self.name, timeout)
    }
}

impl TapDevice {
    /// A handle that waits for this device's input after the device itself
    /// has been moved into a stack (which owns its [`Device`]s). It holds a
    /// duplicate of the TAP file descriptor with an epoll set of its own.
    pub fn waiter(&self) -> Result<TapWaiter, TapError> {
        let wait_err = |source| TapError::Wait {
            name: self.name.clone(),
            source,
        };
        let fd = self.file.try_clone().map_err(wait_err)?;
        let epoll = sys::Epoll::watching(fd.as_raw_fd()).map_err(wait_err)?;
        Ok(TapWaiter {
            _fd: fd,
            epoll,
            name: self.name.clone(),
        })
    }

    /// Waits until a frame can be read, or `timeout` has passed (`None`:
    /// forever). `Ok(true)`: readable. Sleeps in `epoll_wait(2)` (the timeout
    /// is rounded up to whole milliseconds); signals do not cut it short.
    pub fn wait_readable(&self, timeout: Option<std::time::Duration>) -> Result<bool, TapError> {
        wait_epoll(&self.epoll, &self.name, timeout)
    }

    /// Waits for input the way `mode` says: [`WaitMode::Blocking`] is
    /// [`wait_readable`](Self::wait_readable); [`WaitMode::BusyPoll`] yields
    /// the CPU once (`sched_yield`) and returns `Ok(true)`, telling the caller
    /// to go and call `receive` again. So `loop { receive; wait(mode) }` is
    /// right for both modes.
    pub fn wait(
        &self,
        mode: WaitMode,
        timeout: Option<std::time::Duration>,
    ) -> Result<bool, TapError> {
        match mode {
            WaitMode::Blocking => self.wait_readable(timeout),
            WaitMode::BusyPoll => {
                std::thread::yield_now();
                Ok(true)
            }
        }
    }

    /// Receives the next frame, waiting for it the way `mode` says for at
    /// most `timeout` (`None`: forever). `Ok(None)` when the time is up.
    pub fn receive_timeout(
        &mut self,
        pool: &MsgPool,
        mode: WaitMode,
        timeout: Option<std::time::Duration>,
    ) -> Result<Option<Msg>, DeviceError> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            if let Some(frame) = self.receive(pool, Instant::now())? {
                return Ok(Some(frame));
            }
            let left = match deadline {
                None => None,
                Some(d) => {
                    let now = std::time::Instant::now();
                    if now >= d {
                        return Ok(None);
                    }
                    Some(d - now)
                }
            };
            match mode {
                WaitMode::Blocking => {
                    if !self.wait_readable(left)? {
                        return Ok(None);
                    }
                }
                // Yield rather than spin: when the kernel defers its network
                // softirq work to ksoftirqd on this CPU (the frames we just
                // wrote are forwarded there), a pure spin holds it off for a
                // whole scheduler slice. Measured on the 2-vCPU VM, floor
                // responder, `ping -i 0.002` from namespace B: pure spin
                // 0.6-3.4 ms mean RTT, yielding 26 us, blocking 45 us.
                WaitMode::BusyPoll => std::thread::yield_now(),
            }
        }
    }
}

/// Sleeps in `epoll_wait(2)` on `epoll` until it reports readable or
/// `timeout` has passed (`None`: forever), rounded up to whole
/// milliseconds. A signal does not cut the wait short: it resumes with
/// what is left of the timeout (a deadline, so repeated signals cannot
/// stretch it).
fn wait_epoll(
    epoll: &sys::Epoll,
    name: &str,
    timeout: Option<std::time::Duration>,
) -> Result<bool, TapError> {
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                libc::c_int::try_from(left.as_nanos().div_ceil(1_000_000))
                    .unwrap_or(libc::c_int::MAX)
            }
        };
        match epoll.wait(ms) {
            Ok(ready) => return Ok(ready),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                return Err(TapError::Wait {
                    name: name.to_owned(),
                    source,
                })
            }
        }
    }
}
