//! Round-trip-time recording for the ping-pong comparison clients
//! (`kernel_udp`, `smoltcp_peer`, `floor`): an HDR histogram of RTTs plus
//! the counts and wall time of the run, reported as a line on stdout and as
//! a JSON file that `scripts/bench-summary.py` reads.
//!
//! One module for every tool that measures round trips, so the measuring
//! is identical for every system compared.

use hdrhistogram::Histogram;
use std::path::Path;
use std::time::Duration;

/// Longest RTT the histogram holds; longer ones are clamped (and still
/// counted), so one stall cannot abort a run.
const MAX_RTT_NS: u64 = 10_000_000_000;

/// How long a client waits for an echo before counting the round as lost and
/// going on with the next one.
pub const LOSS_TIMEOUT: Duration = Duration::from_millis(200);

/// RTTs of one run (see the [module docs](self)).
pub struct RttRecorder {
    system: String,
    hist: Histogram<u64>,
    lost: u64,
    elapsed: Duration,
}

impl RttRecorder {
    /// An empty recorder for the system named `system` (the name in the JSON).
    pub fn new(system: &str) -> Self {
        RttRecorder {
            system: system.to_string(),
            // 1 ns .. 10 s at 3 significant digits: 0.1 % resolution.
            hist: Histogram::new_with_bounds(1, MAX_RTT_NS, 3)
                .expect("constant histogram bounds are valid"),
            lost: 0,
            elapsed: Duration::ZERO,
        }
    }

    /// Records one measured round trip.
    pub fn record(&mut self, rtt: Duration) {
        let ns = u64::try_from(rtt.as_nanos())
            .unwrap_or(MAX_RTT_NS)
            .clamp(1, MAX_RTT_NS);
        self.hist.saturating_record(ns);
    }

    /// Counts a round whose echo never came.
    /// One round trip of `rtt` that came back (`echoed`) or was lost.
    pub fn round(&mut self, echoed: bool, rtt: Duration) {
        if echoed {
            self.record(rtt);
        } else {
            self.lost();
        }
    }

    pub fn lost(&mut self) {
        self.lost += 1;
    }

    /// Sets the wall time of the measured rounds (for round trips per second).
    pub fn set_elapsed(&mut self, elapsed: Duration) {
        self.elapsed = elapsed;
    }

    /// Round trips recorded.
    pub fn rounds(&self) -> u64 {
        self.hist.len()
    }

    /// Round trips that got no answer in time.
    pub fn lost_count(&self) -> u64 {
        self.lost
    }

    /// The RTT at quantile `q` (0..=1), in nanoseconds.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        self.hist.value_at_quantile(q)
    }

    /// Answered round trips per second of the run.
    pub fn round_trips_per_s(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s > 0.0 {
            self.rounds() as f64 / s
        } else {
            0.0
        }
    }

    /// One human-readable line.
    pub fn summary_line(&self) -> String {
        let us = |q: f64| self.hist.value_at_quantile(q) as f64 / 1000.0;
        format!(
            "{}: {} round trips ({} lost): RTT median {:.1} us, p99 {:.1} us, p99.9 {:.1} us, min {:.1} us, max {:.1} us; {:.0} round trips/s",
            self.system,
            self.rounds(),
            self.lost,
            us(0.5),
            us(0.99),
            us(0.999),
            self.hist.min() as f64 / 1000.0,
            self.hist.max() as f64 / 1000.0,
            self.round_trips_per_s(),
        )
    }

    /// The run as JSON: `{"system", "rounds", "lost", "rtt_ns": {"p50",
    /// "p99", "p999", "min", "max", "mean"}, "round_trips_per_s"}`.
    pub fn to_json(&self) -> serde_json::Value {
        let h = &self.hist;
        serde_json::json!({
            "system": self.system,
            "rounds": self.rounds(),
            "lost": self.lost,
            "rtt_ns": {
                "p50": h.value_at_quantile(0.5),
                "p99": h.value_at_quantile(0.99),
                "p999": h.value_at_quantile(0.999),
                "min": h.min(),
                "max": h.max(),
                "mean": h.mean(),
            },
            "round_trips_per_s": self.round_trips_per_s(),
        })
    }

    /// Prints the summary line and, if `json` is given, writes the JSON there.
    pub fn report(&self, json: Option<&Path>) -> std::io::Result<()> {
        println!("{}", self.summary_line());
        if let Some(path) = json {
            let text = serde_json::to_string_pretty(&self.to_json())?;
            std::fs::write(path, text + "\n")?;
        }
        Ok(())
    }
}
