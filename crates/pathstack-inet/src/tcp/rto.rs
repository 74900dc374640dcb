//! The retransmission timeout of RFC 6298: the smoothed RTT estimator
//! (§2), Karn's algorithm (§3) and exponential backoff (§5).
//!
//! All arithmetic is integer nanoseconds (widened to `u128` where it
//! multiplies), so nothing overflows and results are exact to the
//! nanosecond; alpha = 1/8 and beta = 1/4 are the RFC's shifts.

use pathstack_core::{Duration, Instant};

use super::seq::SeqNumber;

/// The RFC 6298 §2 constant K (RTO = SRTT + max(G, K·RTTVAR)).
pub const K: u64 = 4;

/// Bounds and constants of the estimator, in `std::time::Duration` as the
/// rest of the public configuration (the estimator keeps them as
/// nanoseconds, [`RtoEstimator::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtoConfig {
    /// RTO before any sample (RFC 6298 §2.1: 1 second).
    pub initial: std::time::Duration,
    /// Lower bound on the RTO (RFC 6298 §2.4: 1 second SHOULD; Linux uses
    /// 200 ms, `TCP_RTO_MIN`).
    pub min: std::time::Duration,
    /// Upper bound on the RTO, also the cap on backoff (RFC 6298 §2.5: at
    /// least 60 seconds; Linux `TCP_RTO_MAX` is 120 s).
    pub max: std::time::Duration,
    /// The clock granularity G (RFC 6298 §2).
    pub granularity: std::time::Duration,
}

impl Default for RtoConfig {
    /// RFC 6298's values: initial and minimum 1 s, maximum 60 s, G = 1 ms.
    fn default() -> Self {
        RtoConfig {
            initial: std::time::Duration::from_secs(1),
            min: std::time::Duration::from_secs(1),
            max: std::time::Duration::from_secs(60),
            granularity: std::time::Duration::from_millis(1),
        }
    }
}

impl RtoConfig {
    /// Linux's defaults: minimum 200 ms, maximum 120 s, initial 1 s.
    pub fn linux() -> Self {
        RtoConfig {
            min: std::time::Duration::from_millis(200),
            max: std::time::Duration::from_secs(120),
            ..RtoConfig::default()
        }
    }
}

/// The RTT estimator and current RTO of one connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtoEstimator {
    /// The configuration's initial RTO in nanoseconds; with `bounds`, all
    /// of the configuration (kept converted, not as the four
    /// `std::time::Duration`s: 64 octets less in every control block,
    /// issue 28 item 3).
    initial: u64,
    /// The configuration's bounds in nanoseconds, converted once: the
    /// estimator uses them on every sample.
    bounds: Bounds,
    /// SRTT in ns, `None` before the first sample (RFC 6298 §2.1).
    srtt: Option<u64>,
    /// RTTVAR in ns.
    rttvar: u64,
    /// The RTO computed from the estimator (before backoff), in ns.
    base_rto: u64,
    /// Consecutive timeouts since the last valid sample (RFC 6298 §5.5).
    backoffs: u32,
}

impl RtoEstimator {
    /// An estimator with no samples: RTO = `cfg.initial` (RFC 6298 §2.1).
    pub fn new(cfg: RtoConfig) -> Self {
        let bounds = Bounds {
            min: nanos(cfg.min),
            max: nanos(cfg.max),
            granularity: nanos(cfg.granularity),
        };
        let base_rto = bounds.clamp(nanos(cfg.initial));
        RtoEstimator {
            initial: nanos(cfg.initial),
            bounds,
            srtt: None,
            rttvar: 0,
            base_rto,
            backoffs: 0,
        }
    }

    /// The configuration (as given, to the nanosecond).
    pub fn config(&self) -> RtoConfig {
        let d = std::time::Duration::from_nanos;
        RtoConfig {
            initial: d(self.initial),
            min: d(self.bounds.min),
            max: d(self.bounds.max),
            granularity: d(self.bounds.granularity),
        }
    }

    /// SRTT, if any sample has been taken.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt.map(Duration::from_nanos)
    }

    /// RTTVAR (zero before the first sample).
    pub fn rttvar(&self) -> Duration {
        Duration::from_nanos(self.rttvar)
    }

    /// The current RTO, including backoff, within `[min, max]`.
    pub fn rto(&self) -> Duration {
        if self.backoffs == 0 {
            // The usual case, without the wide shift.
            return Duration::from_nanos(self.base_rto.min(self.bounds.max));
        }
        let backed = u128::from(self.base_rto) << self.backoffs.min(64);
        Duration::from_nanos(backed.min(u128::from(self.bounds.max)) as u64)
    }

    /// Consecutive timeouts since the last valid sample (a caller gives up
    /// after some number, RFC 9293 §3.8.3 R2).
    pub fn backoffs(&self) -> u32 {
        self.backoffs
    }

    /// Takes an RTT measurement `rtt` (RFC 6298 §2.2/§2.3) and clears any
    /// backoff (§5, Karn: a valid sample from a segment that was not
    /// retransmitted ends the backoff). The caller must not pass samples
    /// from retransmitted segments unless they are unambiguous
    /// (timestamps, RFC 7323 §4); [`on_ack_sample`](Self::on_ack_sample)
    /// applies that rule.
    pub fn on_sample(&mut self, rtt: Duration) {
        let r = rtt.as_nanos();
        // Every sample of a real path: below 2^60 ns (36 years) all the
        // arithmetic fits in 64 bits and the wide arithmetic below gives
        // the same figures at a few times the cost (one sample per ACK of
        // new data, issue 26 item 4).
        if let Some(srtt) = self.srtt.filter(|s| (s | self.rttvar | r) >> 60 == 0) {
            let delta = srtt.abs_diff(r);
            self.rttvar = (3 * self.rttvar + delta) / 4;
            let srtt = (7 * srtt + r) / 8;
            self.srtt = Some(srtt);
            let spread = (self.rttvar * K).max(self.bounds.granularity);
            self.base_rto = self.bounds.clamp(srtt.saturating_add(spread));
            self.backoffs = 0;
            return;
        }
        self.on_sample_wide(r);
    }

    /// [`on_sample`](Self::on_sample) in 128-bit arithmetic: the first
    /// sample, and any beyond 2^60 ns.
    #[inline(never)]
    fn on_sample_wide(&mut self, r: u64) {
        match self.srtt {
            None => {
                // §2.2: SRTT <- R, RTTVAR <- R/2.
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // §2.3: RTTVAR <- (1 - beta)·RTTVAR + beta·|SRTT - R'|, then
                // SRTT <- (1 - alpha)·SRTT + alpha·R', beta = 1/4, alpha = 1/8.
                let delta = u128::from(srtt.abs_diff(r));
                self.rttvar = ((3 * u128::from(self.rttvar) + delta) / 4) as u64;
                self.srtt = Some(((7 * u128::from(srtt) + u128::from(r)) / 8) as u64);
            }
        }
        // §2.2/§2.3: RTO <- SRTT + max(G, K·RTTVAR), then §2.4/§2.5 bounds.
        let srtt = self.srtt.unwrap_or(r);
        let var = u128::from(self.rttvar) * u128::from(K);
        let spread = var.max(u128::from(self.bounds.granularity));
        let rto = (u128::from(srtt) + spread).min(u128::from(u64::MAX)) as u64;
        self.base_rto = self.bounds.clamp(rto);
        self.backoffs = 0;
    }

    /// Karn's algorithm (RFC 6298 §3): an ACK covering a segment measured
    /// at `rtt` yields a sample only if that segment was never
    /// retransmitted. Returns whether the sample was taken.
    pub fn on_ack_sample(&mut self, rtt: Duration, retransmitted: bool) -> bool {
        if retransmitted {
            return false;
        }
        self.on_sample(rtt);
        true
    }

    /// The retransmission timer expired (RFC 6298 §5.5): RTO <- RTO·2, up to
    /// the maximum (§2.5). The doubled value holds until the next valid
    /// sample.
    pub fn on_timeout(&mut self) {
        // `rto()` applies the doubling and the cap; this only counts.
        self.backoffs = self.backoffs.saturating_add(1);
    }

    /// RFC 6298 §5.7: if the timer expired while waiting for the SYN's
    /// ACK and the RTO is below 3 s, it is re-initialized to 3 s once data
    /// transmission begins. Applied, as Linux does (`tcp_init_metrics`),
    /// only when the handshake gave no RTT sample.
    pub fn on_established_after_syn_timeout(&mut self) {
        let three = Duration::from_secs(3);
        if self.srtt.is_none() && self.backoffs > 0 && self.rto() < three {
            self.backoffs = 0;
            self.base_rto = self.bounds.clamp(three.as_nanos());
        }
    }
}

/// The RTO's bounds and G in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Bounds {
    min: u64,
    max: u64,
    granularity: u64,
}

impl Bounds {
    /// RFC 6298 §2.4/§2.5: the RTO within `[min, max]`.
    fn clamp(&self, rto: u64) -> u64 {
        rto.max(self.min).min(self.max)
    }
}

fn nanos(d: std::time::Duration) -> u64 {
    Duration::from(d).as_nanos()
}

/// Times one segment at a time, as RFC 6298 §3 allows ("at least one RTT
/// measurement per RTT"), applying Karn's rule: a retransmission of any
/// segment at or after the timed one cancels the measurement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttSampler {
    timed: Option<(SeqNumber, Instant)>,
}

impl RttSampler {
    /// No segment timed.
    pub fn new() -> Self {
        RttSampler::default()
    }

    /// A new segment ending at `end_seq` (exclusive) was first sent at
    /// `now`: time it if nothing is being timed.
    pub fn on_send(&mut self, end_seq: SeqNumber, now: Instant) {
        if self.timed.is_none() {
            self.timed = Some((end_seq, now));
        }
    }

    /// A segment was retransmitted: the measurement in progress is
    /// ambiguous now (RFC 6298 §3, Karn) and is dropped.
    pub fn on_retransmit(&mut self) {
        self.timed = None;
    }

    /// A cumulative ACK for `ack` arrived at `now`: the sample, if it
    /// covers the timed segment.
    pub fn on_ack(&mut self, ack: SeqNumber, now: Instant) -> Option<Duration> {
        let (end, sent) = self.timed?;
        if ack.ge(end) {
            self.timed = None;
            Some(now.saturating_since(sent))
        } else {
            None
        }
    }

    /// Whether a segment is being timed.
    pub fn is_timing(&self) -> bool {
        self.timed.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn cfg_min(min_ms: u64) -> RtoConfig {
        RtoConfig {
            min: std::time::Duration::from_millis(min_ms),
            ..RtoConfig::default()
        }
    }

    #[test]
    fn initial_rto_is_one_second() {
        let e = RtoEstimator::new(RtoConfig::default());
        assert_eq!(e.rto(), Duration::from_secs(1));
        assert_eq!(e.srtt(), None);
    }

    #[test]
    fn first_sample_formula() {
        // §2.2: R = 100 ms -> SRTT 100, RTTVAR 50, RTO = 100 + 4·50 = 300 ms.
        let mut e = RtoEstimator::new(cfg_min(200));
        e.on_sample(ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn second_sample_formula() {
        // §2.3 with R' = 200 ms after R = 100 ms:
        // RTTVAR = 3/4·50 + 1/4·|100 - 200| = 37.5 + 25 = 62.5 ms
        // SRTT   = 7/8·100 + 1/8·200 = 112.5 ms
        // RTO    = 112.5 + 4·62.5 = 362.5 ms
        let mut e = RtoEstimator::new(cfg_min(200));
        e.on_sample(ms(100));
        e.on_sample(ms(200));
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(362_500));
    }

    #[test]
    fn granularity_bounds_the_variance_term() {
        // Steady RTT: RTTVAR decays towards 0, RTO -> SRTT + G.
        let mut e = RtoEstimator::new(RtoConfig {
            min: std::time::Duration::ZERO,
            granularity: ms(10).into(),
            ..RtoConfig::default()
        });
        for _ in 0..200 {
            e.on_sample(ms(50));
        }
        assert_eq!(e.srtt(), Some(ms(50)));
        assert_eq!(e.rto(), ms(60));
    }

    #[test]
    fn minimum_applies() {
        let mut rfc = RtoEstimator::new(RtoConfig::default());
        rfc.on_sample(ms(10));
        assert_eq!(rfc.rto(), Duration::from_secs(1)); // §2.4
        let mut linux = RtoEstimator::new(RtoConfig::linux());
        linux.on_sample(ms(10));
        assert_eq!(linux.rto(), ms(200));
    }

    #[test]
    fn maximum_applies() {
        let mut e = RtoEstimator::new(RtoConfig::default());
        e.on_sample(Duration::from_secs(100));
        assert_eq!(e.rto(), Duration::from_secs(60)); // §2.5
    }

    #[test]
    fn backoff_doubles_to_the_cap_and_a_sample_resets_it() {
        let mut e = RtoEstimator::new(RtoConfig::default());
        let mut seen = vec![];
        for _ in 0..10 {
            e.on_timeout();
            seen.push(e.rto().as_nanos() / 1_000_000_000);
        }
        // §5.5 doubling, §2.5 cap at 60 s.
        assert_eq!(seen, [2, 4, 8, 16, 32, 60, 60, 60, 60, 60]);
        assert_eq!(e.backoffs(), 10);
        e.on_sample(ms(100));
        assert_eq!(e.backoffs(), 0);
        assert_eq!(e.rto(), Duration::from_secs(1));
    }

    #[test]
    fn karn_ignores_retransmitted_samples() {
        let mut e = RtoEstimator::new(cfg_min(200));
        e.on_timeout();
        assert!(!e.on_ack_sample(ms(5000), true));
        assert_eq!(e.srtt(), None);
        // The backed-off RTO is kept until a valid sample (§5, Karn).
        assert_eq!(e.rto(), Duration::from_secs(2));
        assert!(e.on_ack_sample(ms(100), false));
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn syn_timeout_then_three_seconds() {
        let mut e = RtoEstimator::new(RtoConfig::default());
        e.on_timeout();
        e.on_established_after_syn_timeout();
        assert_eq!(e.rto(), Duration::from_secs(3)); // §5.7
        assert_eq!(e.backoffs(), 0);
        // An RTO already at or above 3 s is left alone.
        let mut e = RtoEstimator::new(RtoConfig::default());
        e.on_timeout();
        e.on_timeout();
        e.on_established_after_syn_timeout();
        assert_eq!(e.rto(), Duration::from_secs(4));
    }

    #[test]
    fn sampler_times_one_segment_and_obeys_karn() {
        let mut s = RttSampler::new();
        let t0 = Instant::from_millis(1000);
        s.on_send(SeqNumber(100), t0);
        s.on_send(SeqNumber(200), t0 + ms(1)); // already timing
        assert_eq!(s.on_ack(SeqNumber(50), t0 + ms(5)), None);
        assert_eq!(s.on_ack(SeqNumber(100), t0 + ms(40)), Some(ms(40)));
        assert!(!s.is_timing());
        s.on_send(SeqNumber(300), t0 + ms(50));
        s.on_retransmit();
        assert_eq!(s.on_ack(SeqNumber(300), t0 + ms(90)), None);
    }

    proptest! {
        /// The RTO always lies in [min, max], whatever the samples and
        /// timeouts.
        #[test]
        fn rto_within_bounds(events in proptest::collection::vec((any::<bool>(), 0u64..200_000), 0..64)) {
            let cfg = RtoConfig::linux();
            let mut e = RtoEstimator::new(cfg);
            for (timeout, rtt_ms) in events {
                if timeout { e.on_timeout() } else { e.on_sample(ms(rtt_ms)) }
                prop_assert!(e.rto() >= cfg.min.into() && e.rto() <= cfg.max.into());
            }
        }

        /// The 64-bit arithmetic of the usual sample is the 128-bit
        /// arithmetic's: the same SRTT, RTTVAR and RTO for any state and
        /// sample, near the 2^60 ns edge and beyond it included.
        #[test]
        fn narrow_sample_is_the_wide_one(
            samples in proptest::collection::vec(prop_oneof![
                0u64..10_000_000_000,
                (1u64 << 59)..(1u64 << 61),
                any::<u64>(),
            ], 1..16),
            granularity in prop_oneof![0u64..1_000_000, any::<u64>()],
        ) {
            let cfg = RtoConfig {
                granularity: std::time::Duration::from_nanos(granularity),
                ..RtoConfig::linux()
            };
            let mut narrow = RtoEstimator::new(cfg);
            let mut wide = narrow.clone();
            for r in samples {
                narrow.on_sample(Duration::from_nanos(r));
                wide.on_sample_wide(r);
                prop_assert_eq!(
                    (narrow.srtt, narrow.rttvar, narrow.base_rto, narrow.backoffs),
                    (wide.srtt, wide.rttvar, wide.base_rto, wide.backoffs)
                );
            }
        }

        /// With a constant RTT, SRTT converges to it from any start.
        #[test]
        fn srtt_converges(first in 1u64..10_000, steady in 1u64..10_000) {
            let mut e = RtoEstimator::new(RtoConfig::default());
            e.on_sample(ms(first));
            for _ in 0..300 {
                e.on_sample(ms(steady));
            }
            let srtt = e.srtt().unwrap_or_default().as_nanos();
            prop_assert!(srtt.abs_diff(ms(steady).as_nanos()) <= 8);
        }
    }
}
