//! The setup of the host targets: hosts A and B on the in-memory wire, on
//! one clock set by hand, until B has said what the target needs (a
//! connection, a call exchange); then B leaves and the harness speaks for
//! it ([`HostOnWire`]).

use crate::host_on_wire::HostOnWire;
use crate::shared_end::SharedEnd;
use pathstack::host::{Host, HostConfig};
use pathstack_core::device::memory::{memory_pair, MemoryConfig};
use pathstack_core::msg::SizeClass;
use pathstack_core::time::{Duration, Instant};
use pathstack_core::{PoolConfig, StackConfig};

/// Hosts A (under test) and B (the peer) on the in-memory wire, B on a
/// recording [`SharedEnd`].
pub(crate) struct HostPair {
    pub(crate) a: Host,
    pub(crate) b: Host,
    end: SharedEnd,
    now: Instant,
}

/// A stack sized for a few connections: the default one preallocates for
/// a million paths and a thousand frames, which would cost more than the
/// input itself on every execution.
fn small_stack() -> StackConfig {
    StackConfig {
        pool: PoolConfig {
            headroom: 128,
            classes: vec![
                SizeClass {
                    buf_size: 2048,
                    prealloc: 32,
                    max: 1024,
                },
                SizeClass {
                    buf_size: 72 * 1024,
                    prealloc: 0,
                    max: 8,
                },
            ],
        },
        max_paths: 256,
        max_timers: 1024,
        follow_up_cap: 256,
        rx_cap: 256,
        ..StackConfig::default()
    }
}

impl HostPair {
    /// A at 10.0.0.1/24 and B at 10.0.0.2/24, each configured by
    /// `config` from its address, on small stacks; the clock at 1 s.
    pub(crate) fn new(config: impl Fn(&str) -> Option<HostConfig>) -> Option<HostPair> {
        let (a_end, b_end) = memory_pair(MemoryConfig::default());
        let end = SharedEnd::recording(b_end);
        let now = Instant::from_millis(1000);
        let mut a = Host::with_stack_config(config("10.0.0.1/24")?, a_end, small_stack()).ok()?;
        let mut b =
            Host::with_stack_config(config("10.0.0.2/24")?, end.clone(), small_stack()).ok()?;
        // A deterministic clock, so that an input replays the same way.
        a.set_manual_clock(now);
        b.set_manual_clock(now);
        Some(HostPair { a, b, end, now })
    }

    /// Moves the clock `ms` milliseconds on; both hosts poll.
    pub(crate) fn step(&mut self, ms: u64) {
        self.now = self.now + Duration::from_millis(ms);
        self.a.set_manual_clock(self.now);
        self.b.set_manual_clock(self.now);
        self.a.poll();
        self.b.poll();
    }

    /// B leaves: A stays on the wire with the harness at B's end. Returns
    /// that, and every frame the wire carried during the setup.
    pub(crate) fn part(self) -> (HostOnWire, Vec<Vec<u8>>) {
        drop(self.b);
        let log = self.end.take_log();
        (HostOnWire::new(self.a, self.end, self.now), log)
    }
}
