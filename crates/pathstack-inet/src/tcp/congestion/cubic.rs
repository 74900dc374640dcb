//! CUBIC (RFC 9438), Linux's default congestion control.
//!
//! The window function of RFC 9438 §4.2 works in segments and seconds, so
//! this state keeps W_max, K and W_est as `f64` segments; the window
//! itself stays in bytes in the shared [`Window`], with the fraction of a
//! byte carried between ACKs.

use pathstack_core::{Duration, Instant};

use super::{CcConfig, CongestionControl, Window};

/// RFC 9438 §4.2 / §5: C = 0.4 (segments / s³).
pub const C: f64 = 0.4;
/// RFC 9438 §4.6: the multiplicative decrease factor beta_cubic = 0.7.
pub const BETA: f64 = 0.7;
/// RFC 9438 §4.3: alpha_cubic = 3·(1 − β)/(1 + β), Reno-friendly AIMD.
pub const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// The state of the window function, saved at each congestion event so
/// that a spurious one can be undone (RFC 9438 §4.9).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Curve {
    /// W_max in segments (§4.2); 0 before the first congestion event.
    w_max: f64,
    /// cwnd before the last reduction, segments (§4.3 cwnd_prior).
    cwnd_prior: f64,
    /// K in seconds (§4.2 Figure 2) for the current epoch.
    k: f64,
    /// W_est in segments (§4.3).
    w_est: f64,
    /// Start of the current congestion-avoidance stage (§4.2 t_epoch).
    epoch_start: Option<Instant>,
    /// The first avoidance stage after an RTO uses K = 0 (§4.8).
    after_rto: bool,
}

/// RFC 9438 CUBIC with fast convergence (§4.7), the Reno-friendly
/// region (§4.3) and undo of spurious congestion events (§4.9).
#[derive(Clone, Debug, PartialEq)]
pub struct Cubic {
    w: Window,
    c: Curve,
    /// The curve before the last congestion event (§4.9). Boxed: only a
    /// connection that met congestion has one, and inline it cost every
    /// control block 48 octets more (issue 28 item 4).
    prior: Option<Box<Curve>>,
    /// The last RTT the caller gave (§4.4 uses W_cubic(t + RTT)).
    rtt: Duration,
    /// Fraction of a byte of cwnd growth carried to the next ACK.
    frac: f64,
}

impl Cubic {
    /// A connection's controller in its initial state.
    pub fn new(cfg: CcConfig) -> Self {
        Cubic {
            w: Window::new(cfg),
            c: Curve {
                w_max: 0.0,
                cwnd_prior: 0.0,
                k: 0.0,
                w_est: 0.0,
                epoch_start: None,
                after_rto: false,
            },
            prior: None,
            rtt: Duration::ZERO,
            frac: 0.0,
        }
    }

    /// W_max in segments.
    pub fn w_max(&self) -> f64 {
        self.c.w_max
    }

    /// K in seconds for the current avoidance epoch (meaningful once it
    /// has started).
    pub fn k(&self) -> f64 {
        self.c.k
    }

    /// W_est in segments (the Reno-friendly estimate, §4.3).
    pub fn w_est(&self) -> f64 {
        self.c.w_est
    }

    /// RFC 9438 §4.2 Figure 1: W_cubic(t) = C·(t − K)³ + W_max, in
    /// segments, `t` in seconds since the epoch began.
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.c.k).powi(3) + self.c.w_max
    }

    /// RFC 9438 §4.2 Figure 2: K = ∛((W_max − cwnd_epoch)/C), 0 when the
    /// window is already at or above W_max.
    pub fn k_for(w_max: f64, cwnd_epoch: f64) -> f64 {
        ((w_max - cwnd_epoch).max(0.0) / C).cbrt()
    }

    fn segs(&self, bytes: u32) -> f64 {
        f64::from(bytes) / f64::from(self.w.smss())
    }

    fn start_epoch(&mut self, now: Instant) {
        let cwnd = self.segs(self.w.cwnd());
        if self.c.after_rto || cwnd >= self.c.w_max {
            // §4.8 after a timeout, and before any congestion event: K = 0,
            // W_max = the window at the start of the stage.
            self.c.after_rto = false;
            self.c.w_max = cwnd;
        }
        self.c.k = Self::k_for(self.c.w_max, cwnd);
        self.c.w_est = cwnd; // §4.3: W_est = cwnd_epoch.
        self.c.epoch_start = Some(now);
    }

    /// Congestion avoidance for `bytes_acked` (RFC 9438 §4.3 – §4.5).
    fn avoidance(&mut self, bytes_acked: u32, now: Instant) {
        if self.c.epoch_start.is_none() {
            self.start_epoch(now);
        }
        let epoch = self.c.epoch_start.unwrap_or(now);
        let t = now.saturating_since(epoch).as_nanos() as f64 * 1e-9;
        let rtt = self.rtt.as_nanos() as f64 * 1e-9;
        let cwnd = self.segs(self.w.cwnd());
        let acked = self.segs(bytes_acked);

        // §4.3: W_est += alpha·segments_acked/cwnd, alpha = 1 once
        // W_est >= cwnd_prior.
        let alpha = if self.c.w_est >= self.c.cwnd_prior {
            1.0
        } else {
            ALPHA
        };
        self.c.w_est += alpha * acked / cwnd;

        let new_cwnd = if self.w_cubic(t) < self.c.w_est {
            // §4.3 Reno-friendly region: cwnd = W_est.
            self.c.w_est
        } else {
            // §4.4/§4.5: target = W_cubic(t + RTT) bounded to
            // [cwnd, 1.5·cwnd]; cwnd += (target − cwnd)/cwnd per segment.
            let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * acked
        };
        // Grow by the increment in bytes (not by converting the new window
        // back from segments, whose rounding could shrink cwnd by a byte).
        let inc = (new_cwnd - cwnd).max(0.0) * f64::from(self.w.smss()) + self.frac;
        let whole = inc.floor().min(f64::from(u32::MAX));
        self.frac = inc - whole;
        self.w.set_cwnd(self.w.cwnd().saturating_add(whole as u32));
    }

    /// The multiplicative decrease shared by loss and timeout (RFC 9438
    /// §4.6 and §4.7 fast convergence); returns the new ssthresh.
    fn reduce(&mut self, flight_size: u32) -> u32 {
        match &mut self.prior {
            Some(p) => **p = self.c,
            None => self.prior = Some(Box::new(self.c)),
        }
        self.w.save_prior();
        let cwnd = self.segs(self.w.cwnd());
        // §4.7: a window that stopped short of the last W_max releases
        // bandwidth: W_max = cwnd·(1 + β)/2.
        self.c.w_max = if cwnd < self.c.w_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.c.cwnd_prior = cwnd;
        self.c.epoch_start = None;
        self.frac = 0.0;
        // §4.6: ssthresh = flight_size·β (floored at 2·SMSS).
        self.w.set_ssthresh((f64::from(flight_size) * BETA) as u32)
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    /// Slow start below ssthresh (RFC 9438 §4.10 defers to RFC 5681 and
    /// RFC 3465), CUBIC avoidance above.
    fn on_ack(&mut self, bytes_acked: u32, rtt: Option<Duration>, now: Instant) {
        if let Some(rtt) = rtt {
            self.rtt = rtt;
        }
        let rest = self.w.ack_slow_start(bytes_acked);
        if rest > 0 {
            self.avoidance(rest, now);
        }
    }

    /// RFC 9438 §4.6: ssthresh = flight_size·β, cwnd = ssthresh.
    fn on_enter_recovery(&mut self, flight_size: u32, _now: Instant) {
        let ss = self.reduce(flight_size);
        self.w.set_cwnd(ss);
    }

    /// RFC 9438 §4.8: ssthresh as on loss, cwnd to the RFC 5681 loss
    /// window, and the next avoidance stage starts with K = 0.
    fn on_rto(&mut self, flight_size: u32, _now: Instant) {
        self.reduce(flight_size);
        self.w.to_loss_window();
        self.c.after_rto = true;
    }

    /// RFC 9438 §4.9: restores the window function (W_max, K, W_est,
    /// the epoch) as it was before the spurious event, and the window.
    fn on_spurious_congestion(&mut self, _now: Instant) {
        if let Some(c) = self.prior.take() {
            self.c = *c;
            self.frac = 0.0;
        }
        self.w.undo();
    }

    /// RFC 5681 §4.1 restart, and a new epoch: idle time is not time the
    /// window function may grow over (RFC 9438 §5.8).
    fn on_idle_restart(&mut self, _now: Instant) {
        self.w.restart_after_idle();
        self.c.epoch_start = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1460;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    /// Acks a full window per RTT, one segment per ACK, for `rtts` round
    /// trips starting at `t0`; returns the time reached.
    fn run(c: &mut Cubic, t0: Instant, rtt: Duration, rtts: u32) -> Instant {
        let mut now = t0;
        for _ in 0..rtts {
            let segs = c.cwnd() / MSS;
            for _ in 0..segs {
                c.on_ack(MSS, Some(rtt), now);
            }
            now = now + rtt;
        }
        now
    }

    /// A CUBIC in avoidance at `segs` segments, just after a loss.
    fn after_loss_at(segs: u32) -> Cubic {
        let mut c = Cubic::new(CcConfig::default());
        c.window_mut().set_cwnd(segs * MSS);
        c.on_enter_recovery(segs * MSS, Instant::ZERO);
        c
    }

    #[test]
    fn alpha_constant() {
        assert!(close(ALPHA, 0.9 / 1.7, 1e-12));
    }

    #[test]
    fn decrease_by_beta() {
        let c = after_loss_at(100);
        assert_eq!(c.ssthresh(), 70 * MSS);
        assert_eq!(c.cwnd(), 70 * MSS);
        assert!(close(c.w_max(), 100.0, 1e-9));
    }

    #[test]
    fn k_matches_figure_2() {
        // W_max 100, cwnd_epoch 70: K = ∛(30/0.4) = ∛75 ≈ 4.2172 s.
        let mut c = after_loss_at(100);
        let t0 = Instant::from_millis(10);
        c.on_ack(MSS, Some(Duration::from_millis(100)), t0);
        assert!(close(c.k(), 75f64.cbrt(), 1e-9));
        assert!(close(Cubic::k_for(100.0, 70.0), 4.2172, 1e-4));
        // W_cubic(0) = cwnd_epoch, W_cubic(K) = W_max.
        assert!(close(c.w_cubic(0.0), 70.0, 1e-9));
        assert!(close(c.w_cubic(c.k()), 100.0, 1e-9));
        // After 2 s: 0.4·(2 − 4.2172)³ + 100 ≈ 95.64.
        assert!(close(c.w_cubic(2.0), 95.64, 0.01));
    }

    #[test]
    fn window_follows_the_cubic_curve() {
        // RTT 100 ms, W_max 100: the window after t seconds tracks
        // W_cubic(t) (concave then plateau then convex).
        let rtt = Duration::from_millis(100);
        let mut c = after_loss_at(100);
        let t0 = Instant::ZERO;
        let now = run(&mut c, t0, rtt, 20); // t = 2 s
        let w = f64::from(c.cwnd()) / f64::from(MSS);
        let expect = c.w_cubic(now.saturating_since(t0).as_nanos() as f64 * 1e-9);
        assert!(close(w, expect, 2.0), "cwnd {w} vs W_cubic {expect}");
        let now = run(&mut c, now, rtt, 22); // t = 4.2 s ≈ K
        let w = f64::from(c.cwnd()) / f64::from(MSS);
        assert!(close(w, 100.0, 1.5), "plateau at W_max: {w}");
        // Convex region: well above W_max after K + 2 s.
        run(&mut c, now, rtt, 20);
        let w = f64::from(c.cwnd()) / f64::from(MSS);
        assert!(w > 100.0 + 0.4 * 8.0 - 2.0, "convex growth: {w}");
    }

    #[test]
    fn reno_friendly_region_on_short_rtts() {
        // W_max 10, RTT 1 ms: the cubic curve barely moves in 0.1 s, but
        // W_est grows by alpha per RTT until cwnd_prior, then 1 per RTT.
        let rtt = Duration::from_millis(1);
        let mut c = after_loss_at(10);
        run(&mut c, Instant::ZERO, rtt, 100);
        let w = f64::from(c.cwnd()) / f64::from(MSS);
        // 7 → 10 at alpha ≈ 0.53 per RTT takes ≈ 5.7 RTTs; the other ≈ 94
        // RTTs add one each: ≈ 104 segments, far above W_cubic(0.1) ≈ 7.4.
        assert!(close(w, 104.0, 3.0), "cwnd {w}");
        assert!(close(c.w_est(), w, 1.0));
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = after_loss_at(100);
        // A second loss at 80 < W_max = 100: W_max = 80·1.7/2 = 68.
        c.window_mut().set_cwnd(80 * MSS);
        c.on_enter_recovery(80 * MSS, Instant::ZERO);
        assert!(close(c.w_max(), 68.0, 1e-9));
        assert_eq!(c.cwnd(), 56 * MSS);
    }

    #[test]
    fn target_capped_at_one_and_a_half_cwnd() {
        // A long-idle epoch (t huge): growth per RTT at most 1.5×.
        let mut c = after_loss_at(100);
        c.on_ack(MSS, Some(Duration::from_millis(100)), Instant::ZERO);
        let before = c.cwnd();
        let later = Instant::from_millis(100_000);
        for _ in 0..before / MSS {
            c.on_ack(MSS, None, later);
        }
        let ratio = f64::from(c.cwnd()) / f64::from(before);
        assert!(ratio <= 1.5 + 1e-6 && ratio > 1.4, "{ratio}");
    }

    #[test]
    fn rto_then_k_zero() {
        let mut c = after_loss_at(100);
        c.on_rto(50 * MSS, Instant::ZERO);
        assert_eq!(c.cwnd(), MSS);
        assert_eq!(c.ssthresh(), 35 * MSS);
        // Slow start to ssthresh, then the first avoidance epoch has K = 0
        // and W_max = the window then (§4.8).
        let now = run(&mut c, Instant::ZERO, Duration::from_millis(10), 7);
        assert!(!c.window().in_slow_start());
        c.on_ack(MSS, None, now);
        assert_eq!(c.k(), 0.0);
        assert!(close(c.w_max(), 35.0, 1.5));
    }

    #[test]
    fn idle_restart_resets_epoch() {
        let mut c = after_loss_at(100);
        run(&mut c, Instant::ZERO, Duration::from_millis(100), 5);
        c.on_idle_restart(Instant::from_millis(10_000));
        assert_eq!(c.cwnd(), 10 * MSS);
    }

    #[test]
    fn spurious_loss_is_undone() {
        // §4.9: a loss later found spurious restores cwnd, ssthresh and the
        // curve (W_max, K) as they were.
        let rtt = Duration::from_millis(100);
        let mut c = after_loss_at(100);
        let now = run(&mut c, Instant::ZERO, rtt, 10);
        let (cwnd, ss, w_max, k) = (c.cwnd(), c.ssthresh(), c.w_max(), c.k());
        c.on_enter_recovery(cwnd, now);
        assert!(c.cwnd() < cwnd && c.w_max() < w_max); // fast convergence
        c.on_spurious_congestion(now);
        assert_eq!((c.cwnd(), c.ssthresh()), (cwnd, ss));
        assert_eq!((c.w_max(), c.k()), (w_max, k));
        // Only once: a second undo changes nothing.
        c.on_spurious_congestion(now);
        assert_eq!(c.cwnd(), cwnd);
    }

    proptest::proptest! {
        /// RFC 9438 §4.2: with K from Figure 2, the curve starts at
        /// cwnd_epoch (t = 0) and reaches W_max at t = K, concave before
        /// and convex after.
        #[test]
        fn curve_passes_through_epoch_and_w_max(w_max in 2.0f64..100_000.0, frac in 0.01f64..1.0) {
            let epoch = w_max * frac;
            let mut c = Cubic::new(CcConfig::default());
            c.c.w_max = w_max;
            c.c.k = Cubic::k_for(w_max, epoch);
            let tol = 1e-9 * w_max.max(1.0);
            proptest::prop_assert!(close(c.w_cubic(0.0), epoch, tol));
            proptest::prop_assert!(close(c.w_cubic(c.k()), w_max, tol));
            proptest::prop_assert!(c.w_cubic(c.k() / 2.0) <= w_max);
            proptest::prop_assert!(c.w_cubic(c.k() + 1.0) > w_max);
        }
    }
}
