//! The receive lane of a device driver: the stack reads a driver's device
//! itself, frame by frame, within the driver's burst.
//!
//! A driver that hands over frames one at a time
//! ([`Module::receive`](crate::module::Module::receive)) does nothing per
//! frame but ask its device and count the frame against its per-poll
//! burst. Called as a module, that is a module context built, a virtual
//! call into the driver and its bookkeeping, for every frame (issue 26
//! item 1: the layers between a device's ring and the path's fused
//! receive). A driver that offers its lane
//! ([`Module::rx_lane`](crate::module::Module::rx_lane)) gives the stack
//! its device and its burst instead: the stack asks the device directly
//! and counts with the same [`RxBurst`], so the frames handed over and
//! the polls they fall in are those of the driver's own `receive`. A
//! device error goes back to the driver
//! ([`Module::rx_failed`](crate::module::Module::rx_failed)), which
//! counts and records it as its `receive` would have.

use super::held::DeviceRef;
use super::Received;

/// A driver's per-poll receive burst: at most `burst` frames are handed
/// over in one poll (the frame that spends it is handed over as the last
/// one, and the next call starts the next poll's burst).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxBurst {
    burst: usize,
    left: usize,
}

impl RxBurst {
    /// A burst of `burst` frames per poll (at least one).
    pub fn new(burst: usize) -> Self {
        let burst = burst.max(1);
        RxBurst { burst, left: burst }
    }

    /// What the device's answer `got` means for the stack, counted against
    /// the burst: a frame that spends it is the poll's last.
    #[inline(always)]
    pub fn count(&mut self, got: Received) -> Received {
        match got {
            Received::Frame if self.left > 1 => {
                self.left -= 1;
                Received::Frame
            }
            Received::Nothing => {
                self.left = self.burst;
                Received::Nothing
            }
            Received::Frame | Received::Last => {
                self.left = self.burst;
                Received::Last
            }
        }
    }

    /// The device failed: the next call starts a new burst.
    #[inline]
    pub fn reset(&mut self) {
        self.left = self.burst;
    }
}

/// What a driver lends the stack to receive through: its device and its
/// burst ([`Module::rx_lane`](crate::module::Module::rx_lane)).
pub struct RxLane<'a> {
    /// The driver's device: by its type where the core knows it (the
    /// in-memory wire, `device::held`), else by its own vtable
    /// (`DeviceRef::from(&mut dyn Device)`).
    pub device: DeviceRef<'a>,
    /// The driver's burst, counted as its own `receive` counts it.
    pub burst: &'a mut RxBurst,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_hands_over_its_last_frame_as_last_and_starts_again() {
        let mut b = RxBurst::new(3);
        assert_eq!(b.count(Received::Frame), Received::Frame);
        assert_eq!(b.count(Received::Frame), Received::Frame);
        // The third spends the burst.
        assert_eq!(b.count(Received::Frame), Received::Last);
        // The next poll has a whole burst again.
        assert_eq!(b.count(Received::Frame), Received::Frame);
        assert_eq!(b.count(Received::Nothing), Received::Nothing);
        assert_eq!(b.count(Received::Frame), Received::Frame);
        assert_eq!(b.count(Received::Frame), Received::Frame);
        assert_eq!(b.count(Received::Last), Received::Last);
    }

    #[test]
    fn a_burst_of_one_hands_over_every_frame_as_last() {
        let mut b = RxBurst::new(0);
        assert_eq!(b.count(Received::Frame), Received::Last);
        assert_eq!(b.count(Received::Frame), Received::Last);
    }
}
