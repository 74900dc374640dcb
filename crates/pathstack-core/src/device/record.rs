//! A device wrapper that keeps a copy of every frame transmitted through
//! it, for tests that compare what two configurations put on the wire
//! (e.g. the LANCE's `copy` and `direct` descriptor access must produce
//! identical traffic) and for debugging without a pcap file.
//!
//! The copies are bounded: after `max_frames` the oldest are not kept and
//! [`Recording::missed`] counts them, so a long run cannot grow memory
//! without bound.
//!
//! ```
//! use pathstack_core::device::record::Recorder;
//! use pathstack_core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack_core::device::Device;
//! use pathstack_core::{Instant, MsgPool, PoolConfig};
//! let (a, _b) = memory_pair(MemoryConfig::default());
//! let (mut a, sent) = Recorder::new(a, 1024);
//! let pool = MsgPool::new(PoolConfig::default());
//! a.transmit(pool.alloc_copy(b"frame").unwrap(), Instant::ZERO).unwrap();
//! assert_eq!(sent.frames(), vec![b"frame".to_vec()]);
//! ```

use super::{Device, DeviceError};
use crate::msg::Msg;
use crate::time::Instant;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

#[derive(Default)]
struct Frames {
    kept: VecDeque<Vec<u8>>,
    missed: u64,
}

/// The frames a [`Recorder`] saw transmitted; a handle that stays valid
/// after the recorder moved into a stack.
#[derive(Clone, Default)]
pub struct Recording {
    frames: Arc<Mutex<Frames>>,
    max_frames: usize,
}

impl Recording {
    /// Copies of the frames kept, oldest first.
    pub fn frames(&self) -> Vec<Vec<u8>> {
        self.lock().kept.iter().cloned().collect()
    }

    /// Number of frames kept.
    pub fn len(&self) -> usize {
        self.lock().kept.len()
    }

    /// Whether no frame is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Frames not kept because `max_frames` were already held.
    pub fn missed(&self) -> u64 {
        self.lock().missed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Frames> {
        // A copy of bytes is consistent at every step: a panic elsewhere
        // while holding the lock leaves nothing half-done.
        self.frames.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A device that records a copy of every frame transmitted through it and
/// otherwise passes everything to the device it wraps.
pub struct Recorder<D> {
    inner: D,
    sent: Recording,
}

impl<D: Device> Recorder<D> {
    /// Wraps `inner`, keeping at most `max_frames` frames (the oldest are
    /// dropped first); returns the recorder and the handle to read them.
    pub fn new(inner: D, max_frames: usize) -> (Recorder<D>, Recording) {
        let sent = Recording {
            frames: Arc::default(),
            max_frames,
        };
        (
            Recorder {
                inner,
                sent: sent.clone(),
            },
            sent,
        )
    }
}

impl<D: Device> Device for Recorder<D> {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        {
            let mut f = self.sent.lock();
            if f.kept.len() >= self.sent.max_frames {
                f.kept.pop_front();
                f.missed += 1;
            }
            if self.sent.max_frames > 0 {
                f.kept.push_back(frame.as_slice().to_vec());
            } else {
                f.missed += 1;
            }
        }
        self.inner.transmit(frame, now)
    }
    // Only transmitted frames are recorded; the receive side is the inner
    // device's whole (its `receive_into` and early `discard` too, so a
    // recorded device receives as cheaply as a bare one).
    crate::forward_device!((inner) receive, receive_into, discard, caps, poll_at, stats, rx_waiter);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{memory_pair, MemoryConfig};
    use crate::{MsgPool, PoolConfig};

    #[test]
    fn keeps_the_newest_frames_within_the_bound() {
        let (a, mut b) = memory_pair(MemoryConfig::default());
        let (mut a, sent) = Recorder::new(a, 2);
        let pool = MsgPool::new(PoolConfig::default());
        for i in 0..5u8 {
            a.transmit(pool.alloc_copy(&[i]).unwrap(), Instant::ZERO)
                .unwrap();
        }
        assert_eq!(sent.frames(), vec![vec![3], vec![4]]);
        assert_eq!(sent.missed(), 3);
        // Everything still went through.
        let mut got = 0;
        while b.receive(&pool, Instant::ZERO).unwrap().is_some() {
            got += 1;
        }
        assert_eq!(got, 5);
    }
}
