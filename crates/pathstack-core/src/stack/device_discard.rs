//! Early discard pushed into the device (thesis §5.2.1).
//!
//! A path whose queue is full has its frames discarded right after
//! classification: no stage runs for them (`path.source_full`). In Scout
//! that classification ran in the driver at interrupt time, so a flood cost
//! little more than the interrupt. In a user-space stack each of those
//! frames has already cost the kernel's queue a slot, a wake-up and a
//! `read(2)` before it is classified; under a heavy enough flood the
//! kernel's queue, shared by every path, overflows and the frames of the
//! paths that matter are lost before the stack sees them.
//!
//! So a path may carry a [`FrameMatch`] describing its frames
//! ([`Stack::set_device_discard`]). When
//! [`StackConfig::device_discard_after`](crate::StackConfig::device_discard_after)
//! of its frames in a row are refused at classification, the stack asks
//! the driver that received them to have its device discard matching
//! frames ([`Module::discard_in_device`](crate::module::Module::discard_in_device)),
//! for [`StackConfig::device_discard_hold`](crate::StackConfig::device_discard_hold).
//! Then the device lets them in again, and the path either takes them or
//! refuses another run of them. Each such period is counted on the path
//! ([`PathStats::device_discards`](crate::path::PathStats::device_discards)).
//!
//! The cost stays off the fast path: the refusal is the slow path
//! already, and an idle stack pays one comparison per poll.

use super::Stack;
use crate::device::FrameMatch;
use crate::error::PathError;
use crate::ids::{ModuleId, PathId};
use crate::time::Instant;

/// Most paths whose frames devices discard at once (all drivers together):
/// each device filter stays a few dozen instructions.
pub const MAX_DEVICE_DISCARDS: usize = 4;

/// One path whose frames a driver's device is discarding.
#[derive(Clone, Copy, Debug)]
struct Shed {
    driver: ModuleId,
    path: PathId,
    until: Instant,
}

/// The paths being discarded in devices, and the drivers that cannot.
#[derive(Debug, Default)]
pub(super) struct DeviceDiscards {
    /// At most [`MAX_DEVICE_DISCARDS`].
    active: Vec<Shed>,
    /// Drivers whose devices said they cannot discard (at most one entry
    /// per module): not asked again.
    unable: Vec<ModuleId>,
}

impl DeviceDiscards {
    /// Whether any device is discarding for a path (one comparison, asked
    /// once per poll).
    #[inline]
    pub(super) fn any(&self) -> bool {
        !self.active.is_empty()
    }

    /// When the first discard in progress ends.
    pub(super) fn next_end(&self) -> Option<Instant> {
        self.active.iter().map(|s| s.until).min()
    }
}

impl Stack {
    /// Gives path `id` the match of its frames, so that while the path
    /// refuses them at classification the driver's device can discard them
    /// itself; `None` takes it away and ends a discard in progress.
    ///
    /// After [`StackConfig::device_discard_after`](crate::StackConfig::device_discard_after)
    /// refusals in a row the stack asks the driver to discard matching frames
    /// for [`StackConfig::device_discard_hold`](crate::StackConfig::device_discard_hold),
    /// then lets them in again (thesis §5.2.1: Scout classified in the driver,
    /// so a flood cost little more than the interrupt).
    ///
    /// ```
    /// # use pathstack_core::device::FrameMatch;
    /// // IPv4 ICMP to 10.0.0.1: EtherType, IP protocol, destination.
    /// let icmp = FrameMatch::new()
    ///     .with_u16(12, 0x0800)
    ///     .with_u8(23, 1)
    ///     .with_u32(30, u32::from_be_bytes([10, 0, 0, 1]));
    /// # let _ = icmp;
    /// // stack.set_device_discard(icmp_path, Some(icmp))?;
    /// ```
    pub fn set_device_discard(
        &mut self,
        id: PathId,
        frames: Option<FrameMatch>,
    ) -> Result<(), PathError> {
        let path = self.paths.get_mut(id).ok_or(PathError::NoSuchPath(id))?;
        path.device_match = frames.map(Box::new);
        path.refused_in_row = 0;
        if let Some(k) = self.discards.active.iter().position(|s| s.path == id) {
            let shed = self.discards.active.swap_remove(k);
            self.install_device_discards(shed.driver);
        }
        Ok(())
    }

    /// Whether a device is discarding path `id`'s frames now.
    pub fn device_discarding(&self, id: PathId) -> bool {
        self.discards.active.iter().any(|s| s.path == id)
    }

    /// A frame of path `id`, received by driver `driver`, was refused at
    /// classification: after enough in a row, the device discards the
    /// path's frames for a while.
    #[cold]
    #[inline(never)]
    pub(super) fn refused_at_classification(&mut self, driver: ModuleId, id: PathId) {
        let after = self.config.device_discard_after.max(1);
        let Some(path) = self.paths.get_mut(id) else {
            return;
        };
        if path.device_match.is_none() {
            return;
        }
        path.refused_in_row = path.refused_in_row.saturating_add(1);
        if path.refused_in_row < after
            || self.discards.active.len() >= MAX_DEVICE_DISCARDS
            || self.discards.unable.contains(&driver)
            || self.discards.active.iter().any(|s| s.path == id)
        {
            return;
        }
        self.discards.active.push(Shed {
            driver,
            path: id,
            until: self.now + self.config.device_discard_hold,
        });
        if self.install_device_discards(driver) {
            if let Some(path) = self.paths.get_mut(id) {
                path.stats.device_discards += 1;
            }
        } else {
            self.discards.active.pop();
            self.discards.unable.push(driver);
        }
    }

    /// Ends the discards whose time is up (called from `poll` while any
    /// is active).
    #[inline(never)]
    pub(super) fn lift_device_discards(&mut self) {
        let now = self.now;
        let mut k = 0;
        while k < self.discards.active.len() {
            let shed = self.discards.active[k];
            if shed.until > now {
                k += 1;
                continue;
            }
            self.discards.active.swap_remove(k);
            if let Some(path) = self.paths.get_mut(shed.path) {
                path.refused_in_row = 0;
            }
            self.install_device_discards(shed.driver);
        }
    }

    /// Sets driver `driver`'s device filter to the matches of the paths
    /// active on it. Returns whether the device discards.
    fn install_device_discards(&mut self, driver: ModuleId) -> bool {
        let mut matches = [FrameMatch::new(); MAX_DEVICE_DISCARDS];
        let mut n = 0;
        for shed in self.discards.active.iter().filter(|s| s.driver == driver) {
            if let Some(m) = self
                .paths
                .get(shed.path)
                .and_then(|p| p.device_match.as_deref().copied())
            {
                matches[n] = m;
                n += 1;
            }
        }
        match self.modules.get_mut(driver.0 as usize) {
            Some(slot) => slot.get_mut().discard_in_device(&matches[..n]),
            None => false,
        }
    }
}
