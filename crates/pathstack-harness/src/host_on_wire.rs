//! Host A alone on the wire once the setup is done, the harness at the
//! other end: frames go in, what A sends comes out, time moves as the
//! input says.

use crate::input::Input;
use crate::shared_end::SharedEnd;
use pathstack::host::Host;
use pathstack_core::time::{Duration, Instant};
use pathstack_core::{MsgPool, PoolConfig};

/// The host under test and the harness's end of its wire, on the
/// harness's clock.
pub(crate) struct HostOnWire {
    /// Host A, the host under test.
    pub(crate) a: Host,
    end: SharedEnd,
    /// The harness's buffers for the frames it injects and drains.
    pool: MsgPool,
    pub(crate) now: Instant,
}

impl HostOnWire {
    pub(crate) fn new(a: Host, end: SharedEnd, now: Instant) -> Self {
        HostOnWire {
            a,
            end,
            pool: MsgPool::new(PoolConfig::small(16)),
            now,
        }
    }

    /// Puts `frame` on the wire towards A.
    pub(crate) fn inject(&self, frame: &[u8]) {
        self.end.inject(&self.pool, self.now, frame);
    }

    /// A polls at the harness's time; what it sent is shown to `see`,
    /// then dropped.
    pub(crate) fn poll(&mut self, see: impl FnMut(&[u8])) {
        self.a.set_manual_clock(self.now);
        self.a.poll();
        self.end.drain(&self.pool, self.now, see);
    }

    /// The "time passes" operation: an operand byte chooses tens of
    /// microseconds, milliseconds or seconds (read from the input), or a
    /// jump to A's next timer.
    pub(crate) fn pass_time(&mut self, inp: &mut Input<'_>) {
        let by = match inp.u8() % 4 {
            0 => Duration::from_micros(u64::from(inp.u16()) * 10),
            1 => Duration::from_millis(u64::from(inp.u16())),
            2 => Duration::from_secs(u64::from(inp.u8())),
            // A's clock is the harness's since the last poll, so the
            // time to its next timer is measured from `now`.
            _ => self.a.until_timer().map_or(Duration::from_nanos(0), |d| {
                Duration::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            }),
        };
        self.now = self.now + by;
    }
}
