//! NewReno: RFC 5681 congestion control with the RFC 6582 recovery
//! window rules (the latter are the [`CongestionControl`] provided
//! methods, shared with every algorithm).

use pathstack_core::{Duration, Instant};

use super::{CcConfig, CongestionControl, Window};

/// RFC 5681 / RFC 6582 NewReno.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewReno {
    w: Window,
}

impl NewReno {
    /// A connection's controller in its initial state (RFC 5681 §3.1).
    pub fn new(cfg: CcConfig) -> Self {
        NewReno {
            w: Window::new(cfg),
        }
    }

    /// RFC 5681 §3.1 eq. 4: ssthresh = max(FlightSize / 2, 2·SMSS).
    fn halve(&mut self, flight_size: u32) -> u32 {
        self.w.save_prior();
        self.w.set_ssthresh(flight_size / 2)
    }
}

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }
    fn window(&self) -> &Window {
        &self.w
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    /// Slow start below ssthresh, then one SMSS per window of bytes
    /// (RFC 5681 §3.1, RFC 3465 §2).
    fn on_ack(&mut self, bytes_acked: u32, _rtt: Option<Duration>, _now: Instant) {
        let rest = self.w.ack_slow_start(bytes_acked);
        if rest > 0 {
            self.w.reno_avoidance(rest);
        }
    }

    /// RFC 5681 §3.2 step 2 / RFC 6582 §3.2 step 2 without the "+3·SMSS"
    /// (see [`CongestionControl::on_dup_acks_in_recovery`]).
    fn on_enter_recovery(&mut self, flight_size: u32, _now: Instant) {
        let ss = self.halve(flight_size);
        self.w.set_cwnd(ss);
    }

    fn on_rto(&mut self, flight_size: u32, _now: Instant) {
        self.halve(flight_size);
        self.w.to_loss_window();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1460;
    const T: Instant = Instant::ZERO;

    fn reno() -> NewReno {
        NewReno::new(CcConfig::default())
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut r = reno();
        for rtt in 0..4 {
            let segs = r.cwnd() / MSS;
            for _ in 0..segs {
                r.on_ack(MSS, None, T);
            }
            assert_eq!(r.cwnd(), (10 << (rtt + 1)) * MSS);
        }
    }

    #[test]
    fn avoidance_after_threshold() {
        let mut r = reno();
        r.on_enter_recovery(40 * MSS, T);
        r.on_exit_recovery(40 * MSS, T);
        assert_eq!(r.cwnd(), 20 * MSS);
        // One RTT: 20 ACKs of one segment add one SMSS (RFC 5681 eq. 3).
        for _ in 0..20 {
            r.on_ack(MSS, None, T);
        }
        assert_eq!(r.cwnd(), 21 * MSS);
    }

    #[test]
    fn halving_on_fast_retransmit() {
        let mut r = reno();
        r.on_enter_recovery(30 * MSS, T);
        assert_eq!(r.ssthresh(), 15 * MSS);
        assert_eq!(r.cwnd(), 15 * MSS);
        // Small flight: floored at 2·SMSS (RFC 5681 eq. 4).
        r.on_enter_recovery(MSS, T);
        assert_eq!(r.ssthresh(), 2 * MSS);
    }

    #[test]
    fn newreno_inflation_and_partial_ack() {
        // RFC 6582 §3.2: enter with 3 dup ACKs, two more, then a partial
        // ACK of 4 segments.
        let mut r = reno();
        r.on_enter_recovery(20 * MSS, T);
        r.on_dup_acks_in_recovery(3);
        assert_eq!(r.cwnd(), 13 * MSS);
        r.on_dup_acks_in_recovery(2);
        assert_eq!(r.cwnd(), 15 * MSS);
        r.on_partial_ack(4 * MSS);
        assert_eq!(r.cwnd(), 12 * MSS);
        // Step 6 option 2 (RFC 6937 §3): ssthresh, however little is in
        // flight.
        r.on_exit_recovery(3 * MSS, T);
        assert_eq!(r.cwnd(), 10 * MSS);
    }

    #[test]
    fn rto_to_loss_window_then_slow_start() {
        let mut r = reno();
        r.on_rto(24 * MSS, T);
        assert_eq!((r.cwnd(), r.ssthresh()), (MSS, 12 * MSS));
        r.on_ack(MSS, None, T);
        assert_eq!(r.cwnd(), 2 * MSS);
    }

    #[test]
    fn slow_start_crossing_threshold_counts_the_rest() {
        let mut r = reno();
        r.on_enter_recovery(22 * MSS, T); // ssthresh 11 segments
        r.window_mut().set_cwnd(10 * MSS);
        r.on_ack(2 * MSS, None, T); // 1 MSS in slow start, 1 MSS counted
        assert_eq!(r.cwnd(), 11 * MSS);
        assert!(!r.window().in_slow_start());
    }

    #[test]
    fn idle_restart() {
        let mut r = reno();
        r.window_mut().set_cwnd(50 * MSS);
        r.on_idle_restart(T);
        assert_eq!(r.cwnd(), 10 * MSS);
    }

    #[test]
    fn spurious_rto_is_undone() {
        let mut r = reno();
        r.window_mut().set_cwnd(40 * MSS);
        r.on_rto(40 * MSS, T);
        assert_eq!(r.cwnd(), MSS);
        r.on_ack(MSS, None, T);
        r.on_spurious_congestion(T);
        // RFC 5681 state as before the timeout: cwnd 40, ssthresh "infinite".
        assert_eq!((r.cwnd(), r.ssthresh()), (40 * MSS, u32::MAX));
    }
}
