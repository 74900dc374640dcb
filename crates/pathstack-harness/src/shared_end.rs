//! Host B's end of the wire, shared between host B (during the setup) and
//! the harness (after it), recording the frames it carries while asked to.

use crate::frames::FRAME_MAX;
use pathstack_core::device::memory::MemoryEnd;
use pathstack_core::device::{Device, DeviceError, RxWaiter};
use pathstack_core::time::Instant;
use pathstack_core::{Msg, MsgPool};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One end of the wire shared between the second host (during setup) and
/// the harness (after), which records the frames it carries: the setup's
/// exchange tells the harness the sequence numbers and boot ids it must
/// speak of, and the seeds replay it.
#[derive(Clone)]
pub(crate) struct SharedEnd(Arc<Mutex<Shared>>);

struct Shared {
    end: MemoryEnd,
    /// Every frame sent or received through this end, while `Some`.
    log: Option<Vec<Vec<u8>>>,
}

impl SharedEnd {
    /// `end`, recording from the start.
    pub(crate) fn recording(end: MemoryEnd) -> Self {
        SharedEnd(Arc::new(Mutex::new(Shared {
            end,
            log: Some(Vec::new()),
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic of the fuzzed code must not hide behind a poisoned lock.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops recording; what was recorded, oldest first.
    pub(crate) fn take_log(&self) -> Vec<Vec<u8>> {
        self.lock().log.take().unwrap_or_default()
    }

    /// Puts `frame` (cut to [`FRAME_MAX`]) on the wire as the host under
    /// test's peer: the fuzz targets' way in.
    pub(crate) fn inject(&self, pool: &MsgPool, now: Instant, frame: &[u8]) {
        let frame = &frame[..frame.len().min(FRAME_MAX)];
        if let Ok(m) = pool.alloc_copy(frame) {
            let _ = self.lock().end.transmit(m, now);
        }
    }

    /// Takes every frame the host under test sent off the wire, showing
    /// each to `see` (the targets follow what the host said, then drop
    /// it).
    pub(crate) fn drain(&self, pool: &MsgPool, now: Instant, mut see: impl FnMut(&[u8])) {
        loop {
            let f = match self.lock().end.receive(pool, now) {
                Ok(Some(m)) => m,
                _ => break,
            };
            see(f.as_slice());
        }
    }
}

impl Device for SharedEnd {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        let mut g = self.lock();
        if let Some(log) = &mut g.log {
            log.push(frame.as_slice().to_vec());
        }
        g.end.transmit(frame, now)
    }
    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        let mut g = self.lock();
        let r = g.end.receive(pool, now);
        if let (Some(log), Ok(Some(m))) = (&mut g.log, &r) {
            log.push(m.as_slice().to_vec());
        }
        r
    }
    pathstack_core::forward_device!((lock().end) caps, poll_at, stats);
    fn rx_waiter(&self) -> Option<Arc<dyn RxWaiter>> {
        // The setup polls both hosts in turn; nobody sleeps on this end.
        None
    }
}
