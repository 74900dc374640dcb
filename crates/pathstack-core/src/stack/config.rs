//! The limits and choices of a stack ([`StackConfig`]) and its counters
//! ([`StackStats`]).

use crate::admission::Budgets;
use crate::msg::PoolConfig;
use crate::sched::SchedKind;
use crate::time::Duration;

/// Limits and choices of a stack. Every queue and table is bounded by one
/// of these.
#[derive(Clone, Debug)]
pub struct StackConfig {
    /// The message pool.
    pub pool: PoolConfig,
    /// The scheduler to start with.
    pub sched: SchedKind,
    /// Most paths alive at once.
    pub max_paths: usize,
    /// Capacity of each path queue unless the path's `QUEUE_LEN` says otherwise.
    pub queue_len: usize,
    /// Most stages in one path (a longer route is a routing loop).
    pub max_stages: usize,
    /// Most follow-up messages (turned around or emitted) pending at once.
    pub follow_up_cap: usize,
    /// Most received frames waiting for classification.
    pub rx_cap: usize,
    /// Most timers armed at once.
    pub max_timers: usize,
    /// Resolution of the timer wheel.
    pub timer_tick: Duration,
    /// Measure processing time per path ([`PathStats::cpu_ns`](crate::path::PathStats::cpu_ns)).
    /// Off by default: a clock read costs about as much as a short path's
    /// whole processing (≈ 300 instructions on Linux, measured with
    /// cachegrind). When on, the scheduler reads the clock once per turn
    /// (each turn ends where the next begins) and a direct run from a
    /// path's end twice; never per stage.
    pub account_time: bool,
    /// Round-robin quantum: most messages a best-effort path (or a
    /// realtime one) runs per turn under per-message scheduling before
    /// its peers of equal rank get theirs (at least 1; thesis §3.5.1's
    /// fixed-priority round robin). LDLP's turn is one batch.
    pub quantum: usize,
    /// Admission control: budgets per stack and per path class
    /// ([`crate::admission`]).
    pub budgets: Budgets,
    /// Early discard in the device: after this many frames of a path in a
    /// row were refused at classification (its queue full, or over its
    /// memory budget), the stack asks the driver's device to discard the
    /// path's frames itself, if the path has a
    /// [`FrameMatch`](crate::device::FrameMatch)
    /// ([`Stack::set_device_discard`](crate::Stack::set_device_discard)).
    pub device_discard_after: u32,
    /// How long a device discards a path's frames before the stack lets
    /// them in again to see whether the path still cannot take them.
    pub device_discard_hold: Duration,
}

impl Default for StackConfig {
    fn default() -> Self {
        StackConfig {
            pool: PoolConfig::default(),
            sched: SchedKind::PerMessage,
            max_paths: 1 << 20,
            queue_len: 64,
            max_stages: 32,
            follow_up_cap: 1024,
            rx_cap: 1024,
            max_timers: 1 << 16,
            timer_tick: Duration::from_micros(100),
            account_time: false,
            quantum: 1,
            budgets: Budgets::default(),
            // A quarter of the driver's default 64-frame burst: a flood,
            // not one short burst into a two-slot queue.
            device_discard_after: 16,
            // Long against a flood's inter-arrival time (tens of µs), short
            // against a path's reaction to its load going away.
            device_discard_hold: Duration::from_millis(20),
        }
    }
}

/// Stack-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackStats {
    /// Paths alive.
    pub paths: usize,
    /// Demux nodes in the classifier.
    pub demux_nodes: usize,
    /// Received frames dropped because the receive hand-over list was full.
    pub rx_drops: u64,
    /// Follow-up messages dropped because their list was full.
    pub follow_up_drops: u64,
    /// Timers armed.
    pub timers: usize,
}
