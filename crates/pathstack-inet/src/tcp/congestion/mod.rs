//! Pluggable congestion control: the [`CongestionControl`] trait, the
//! window state every algorithm shares ([`Window`]: RFC 5681 slow start,
//! loss window, restart after idle, RFC 3465 byte counting), and two
//! algorithms, [`NewReno`] (RFC 5681, RFC 6582) and [`Cubic`] (RFC 9438).
//!
//! Windows are in bytes. The loss-recovery machinery (RFC 6675 SACK
//! recovery, RACK-TLP) decides *when* a congestion event happens and what
//! is in flight; these types decide only how the window responds.
//! [`AnyCongestion`] chooses an algorithm at run time without a box.

use pathstack_core::{Duration, Instant};

pub mod cubic;
pub mod newreno;

pub use cubic::Cubic;
pub use newreno::NewReno;

/// Parameters common to every algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CcConfig {
    /// The sender maximum segment size SMSS in bytes (RFC 5681 §2).
    pub smss: u32,
    /// The initial window in segments (RFC 6928's IW10, which Linux uses;
    /// RFC 5681 §3.1 alone allows 2 to 4).
    pub initial_window_segments: u32,
}

impl Default for CcConfig {
    /// SMSS 1460 (Ethernet), IW 10.
    fn default() -> Self {
        CcConfig {
            smss: 1460,
            initial_window_segments: 10,
        }
    }
}

/// The congestion window, slow-start threshold and byte counter shared by
/// every algorithm, with the RFC 5681 rules that do not differ between
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    smss: u32,
    iw: u32,
    cwnd: u32,
    ssthresh: u32,
    /// RFC 3465 §2.1 `bytes_acked` in congestion avoidance.
    bytes_acked: u32,
    /// (cwnd, ssthresh) before the last congestion event, for undo.
    prior: Option<(u32, u32)>,
    /// In the slow start that follows a retransmission timeout, where
    /// RFC 3465 §2.3 limits growth to L = 1 segment per ACK.
    after_rto: bool,
    /// Multiplicative decreases so far (loss, timeout or probe-repaired
    /// loss), undone ones included: RFC 6675 §5 allows one per window of
    /// data, which is what issue 28's loss study compares against.
    reductions: u32,
}

impl Window {
    /// IW = `initial_window_segments`·SMSS, ssthresh "arbitrarily high"
    /// (RFC 5681 §3.1).
    pub fn new(cfg: CcConfig) -> Self {
        let smss = cfg.smss.max(1);
        let iw = smss.saturating_mul(cfg.initial_window_segments.max(1));
        Window {
            smss,
            iw,
            cwnd: iw,
            ssthresh: u32::MAX,
            bytes_acked: 0,
            prior: None,
            after_rto: false,
            reductions: 0,
        }
    }

    /// Multiplicative decreases so far (each [`save_prior`](Self::save_prior)).
    pub fn reductions(&self) -> u32 {
        self.reductions
    }

    /// The congestion window in bytes.
    pub fn cwnd(&self) -> u32 {
        self.cwnd
    }

    /// The slow-start threshold in bytes.
    pub fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    /// SMSS in bytes.
    pub fn smss(&self) -> u32 {
        self.smss
    }

    /// The initial (and restart) window in bytes.
    pub fn initial_window(&self) -> u32 {
        self.iw
    }

    /// Whether the sender is in slow start (RFC 5681 §3.1: cwnd < ssthresh).
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Sets cwnd (bytes), never below one segment.
    pub fn set_cwnd(&mut self, cwnd: u32) {
        self.cwnd = cwnd.max(self.smss);
    }

    /// Slow start with byte counting (RFC 3465 §2.2, RFC 5681 §3.1):
    /// cwnd grows by every byte the ACK newly acknowledges, as Linux's
    /// `tcp_slow_start` grows it by every segment acknowledged, but by at
    /// most one SMSS per ACK after a timeout (RFC 3465 §2.3), and not past
    /// ssthresh in one step. Returns the part of the increase beyond
    /// ssthresh, which congestion avoidance counts instead.
    ///
    /// Why not RFC 3465 §2.2's L = 2·SMSS: with delayed ACKs, GRO and
    /// ACK thinning a receiver routinely acknowledges 4 to 10 segments at
    /// once, and an L of 2 then grows cwnd by much less than the doubling
    /// per round trip slow start is meant to be (RFC 3465 §2.2 itself
    /// notes L trades burstiness for growth). A stretch ACK reports data
    /// that has left the network, so counting all of it keeps slow start
    /// at one doubling per RTT, which is what Linux does and what its
    /// packetdrill scripts (`slow-start-ack-per-4pkt`, the HyStart ones)
    /// expect. After a timeout the ACKs may cover segments the
    /// retransmissions never needed to resend (RFC 3465 §2.3), so L = 1
    /// stays there.
    pub fn slow_start(&mut self, bytes_acked: u32) -> u32 {
        let inc = if self.after_rto {
            bytes_acked.min(self.smss)
        } else {
            bytes_acked
        };
        let room = self.ssthresh.saturating_sub(self.cwnd);
        let used = inc.min(room);
        self.cwnd = self.cwnd.saturating_add(used);
        if self.cwnd >= self.ssthresh {
            self.after_rto = false;
        }
        inc - used
    }

    /// The slow-start part of an ACK of `bytes_acked` new bytes: grows cwnd
    /// if in slow start and returns what congestion avoidance must count
    /// (all of it above ssthresh, the overshoot when crossing it, else 0).
    pub fn ack_slow_start(&mut self, bytes_acked: u32) -> u32 {
        if self.in_slow_start() {
            self.slow_start(bytes_acked)
        } else {
            bytes_acked
        }
    }

    /// Reno congestion avoidance with byte counting (RFC 3465 §2.1,
    /// RFC 5681 §3.1): once a full window of bytes has been acknowledged,
    /// cwnd += SMSS.
    pub fn reno_avoidance(&mut self, bytes_acked: u32) {
        // At most one SMSS per ACK, however much it covers (RFC 3465 §2.1;
        // RFC 5681 eq. 3 likewise bounds the per-ACK increase).
        self.bytes_acked = self.bytes_acked.saturating_add(bytes_acked);
        if self.bytes_acked >= self.cwnd {
            self.bytes_acked -= self.cwnd;
            self.cwnd = self.cwnd.saturating_add(self.smss);
        }
    }

    /// Sets ssthresh after a congestion event and returns it, floored at
    /// 2·SMSS (RFC 5681 §3.1 eq. 4).
    pub fn set_ssthresh(&mut self, ssthresh: u32) -> u32 {
        self.ssthresh = ssthresh.max(2 * self.smss);
        self.bytes_acked = 0;
        self.after_rto = false;
        self.ssthresh
    }

    /// After a retransmission timeout: cwnd = the loss window, one segment
    /// (RFC 5681 §3.1). ssthresh is the algorithm's to set first.
    pub fn to_loss_window(&mut self) {
        self.cwnd = self.smss;
        self.bytes_acked = 0;
        self.after_rto = true;
    }

    /// Remembers cwnd and ssthresh before a congestion event reduces them,
    /// so that [`undo`](Self::undo) can restore them.
    pub fn save_prior(&mut self) {
        self.prior = Some((self.cwnd, self.ssthresh));
        self.reductions = self.reductions.wrapping_add(1);
    }

    /// Undoes the last reduction once the congestion event it answered is
    /// found spurious (by D-SACK, RFC 2883 §4; timestamps, RFC 3522; or
    /// F-RTO, RFC 5682): cwnd and ssthresh become at least what they were
    /// (RFC 9438 §4.9; Linux `tcp_undo_cwnd_reduction` likewise takes the
    /// maximum). At most once per event.
    pub fn undo(&mut self) {
        if let Some((cwnd, ssthresh)) = self.prior.take() {
            self.cwnd = self.cwnd.max(cwnd);
            self.ssthresh = self.ssthresh.max(ssthresh);
            self.bytes_acked = 0;
            self.after_rto = false;
        }
    }

    /// Restart after idle (RFC 5681 §4.1): when nothing was sent for more
    /// than an RTO, cwnd = min(RW, cwnd) with RW = IW.
    pub fn restart_after_idle(&mut self) {
        self.cwnd = self.cwnd.min(self.iw);
        self.bytes_acked = 0;
    }
}

/// Whether a sender idle since `last_send` must restart its window at
/// `now` (RFC 5681 §4.1: "has not sent data in an interval exceeding the
/// retransmission timeout").
pub fn idle_restart_due(last_send: Instant, now: Instant, rto: Duration) -> bool {
    now.saturating_since(last_send) > rto
}

/// A congestion-control algorithm. Sizes are bytes; `flight_size` is the
/// data outstanding when the event was detected (RFC 5681 §2 FlightSize).
///
/// The window state lives in a [`Window`]; the provided methods implement
/// what RFC 5681, RFC 6582 and RFC 6675 fix for every algorithm, and an
/// algorithm overrides only what it changes.
pub trait CongestionControl {
    /// A short stable name ("newreno", "cubic"), as Linux's
    /// `tcp_congestion_control` names them.
    fn name(&self) -> &'static str;

    /// The shared window state.
    fn window(&self) -> &Window;

    /// The shared window state, mutably.
    fn window_mut(&mut self) -> &mut Window;

    /// New data was cumulatively acknowledged outside loss recovery:
    /// `bytes_acked` octets. `rtt` is the connection's current RTT
    /// estimate (SRTT) if it has one; CUBIC uses it for W_cubic(t + RTT)
    /// (RFC 9438 §4.4), NewReno ignores it.
    fn on_ack(&mut self, bytes_acked: u32, rtt: Option<Duration>, now: Instant);

    /// [`on_ack`](Self::on_ack) for an ACK that found `flight_before`
    /// octets in flight, when the window may grow on it: only while the
    /// sender uses it, FlightSize more than half of cwnd. RFC 7661 §4.3
    /// holds the window still while it is not validated (less than half
    /// of it used), and RFC 9438 §5.8 has CUBIC not grow it while the
    /// application, not cwnd, limits the flow; the test is Linux's
    /// (`tcp_is_cwnd_limited` in slow start, `cwnd < 2 · packets_out`,
    /// which its algorithms ask before growing), applied in both phases.
    /// A request/response exchange (one segment in flight against a
    /// window of ten) then does no window arithmetic per ACK (issue 26),
    /// and the window does not grow to sizes the path never carried.
    #[inline]
    fn on_ack_with_flight(
        &mut self,
        bytes_acked: u32,
        flight_before: u32,
        rtt: Option<Duration>,
        now: Instant,
    ) {
        if self.window().cwnd() < flight_before.saturating_mul(2) {
            self.on_ack(bytes_acked, rtt, now);
        }
    }

    /// A loss was detected and recovery begins (fast retransmit, RFC 5681
    /// §3.2 step 2; RFC 6675 §5 step 4): reduces ssthresh and sets
    /// cwnd = ssthresh.
    fn on_enter_recovery(&mut self, flight_size: u32, now: Instant);

    /// The retransmission timer expired (RFC 5681 §3.1 eq. 4 and the loss
    /// window; RFC 9438 §4.8).
    fn on_rto(&mut self, flight_size: u32, now: Instant);

    /// The congestion window in bytes.
    fn cwnd(&self) -> u32 {
        self.window().cwnd()
    }

    /// The slow-start threshold in bytes.
    fn ssthresh(&self) -> u32 {
        self.window().ssthresh()
    }

    /// RFC 6582 §3.2 step 3 (recovery without SACK): each additional
    /// duplicate ACK inflates cwnd by SMSS; entering recovery the caller
    /// passes 3 for the three that triggered it (step 2's "+ 3·SMSS").
    fn on_dup_acks_in_recovery(&mut self, count: u32) {
        let w = self.window_mut();
        let inc = w.smss().saturating_mul(count);
        w.set_cwnd(w.cwnd().saturating_add(inc));
    }

    /// RFC 6582 §3.2 step 5 (recovery without SACK), a partial ACK of
    /// `bytes_acked`: deflate cwnd by the amount acknowledged, then add
    /// back SMSS if at least SMSS was acknowledged.
    fn on_partial_ack(&mut self, bytes_acked: u32) {
        let w = self.window_mut();
        let mut cwnd = w.cwnd().saturating_sub(bytes_acked);
        if bytes_acked >= w.smss() {
            cwnd = cwnd.saturating_add(w.smss());
        }
        w.set_cwnd(cwnd);
    }

    /// Recovery ended with a full ACK: cwnd = ssthresh (RFC 6937 §3 "On
    /// exiting recovery"; RFC 6582 §3.2 step 6, option 2; Linux
    /// `tcp_end_cwnd_reduction`). Option 1, min(ssthresh, FlightSize +
    /// SMSS), avoids a burst but collapses the window whenever the ACK
    /// ending recovery acknowledges the whole flight, which under random
    /// loss is most recoveries (issue 28: cwnd of one or two segments
    /// about 70 times a second at 5 % loss); the sender's burst limit
    /// bounds what goes out at once instead.
    fn on_exit_recovery(&mut self, _flight_size: u32, _now: Instant) {
        let w = self.window_mut();
        w.set_cwnd(w.ssthresh());
    }

    /// The last congestion event (loss or timeout) was spurious: undo its
    /// reduction (RFC 9438 §4.9 for CUBIC; the same window restoration
    /// serves NewReno, as in Linux).
    fn on_spurious_congestion(&mut self, _now: Instant) {
        self.window_mut().undo();
    }

    /// The sender restarts after an idle period longer than the RTO
    /// (RFC 5681 §4.1; see [`idle_restart_due`]).
    fn on_idle_restart(&mut self, _now: Instant) {
        self.window_mut().restart_after_idle();
    }
}

/// Which algorithm a connection uses (the `congestion control` socket
/// option, Linux's `TCP_CONGESTION`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CongestionKind {
    /// [`NewReno`].
    NewReno,
    /// [`Cubic`], the default as in Linux.
    #[default]
    Cubic,
}

/// One of the algorithms, chosen at run time (a per-connection option)
/// without a heap allocation.
#[derive(Clone, Debug)]
pub enum AnyCongestion {
    /// RFC 5681 / RFC 6582.
    NewReno(NewReno),
    /// RFC 9438, the default (as in Linux).
    Cubic(Cubic),
}

impl AnyCongestion {
    /// A fresh controller of the given kind.
    pub fn new(kind: CongestionKind, cfg: CcConfig) -> Self {
        match kind {
            CongestionKind::NewReno => AnyCongestion::NewReno(NewReno::new(cfg)),
            CongestionKind::Cubic => AnyCongestion::Cubic(Cubic::new(cfg)),
        }
    }

    /// Which algorithm this is.
    pub fn kind(&self) -> CongestionKind {
        match self {
            AnyCongestion::NewReno(_) => CongestionKind::NewReno,
            AnyCongestion::Cubic(_) => CongestionKind::Cubic,
        }
    }

    fn inner(&self) -> &dyn CongestionControl {
        match self {
            AnyCongestion::NewReno(c) => c,
            AnyCongestion::Cubic(c) => c,
        }
    }
    fn inner_mut(&mut self) -> &mut dyn CongestionControl {
        match self {
            AnyCongestion::NewReno(c) => c,
            AnyCongestion::Cubic(c) => c,
        }
    }
}

impl CongestionControl for AnyCongestion {
    fn name(&self) -> &'static str {
        self.inner().name()
    }
    // The window is read for every segment sent and every ACK (cwnd,
    // FlightSize's room): matched here, each arm a static call the
    // compiler inlines, rather than a `dyn` call through `inner`.
    #[inline]
    fn window(&self) -> &Window {
        match self {
            AnyCongestion::NewReno(c) => c.window(),
            AnyCongestion::Cubic(c) => c.window(),
        }
    }
    #[inline]
    fn window_mut(&mut self) -> &mut Window {
        match self {
            AnyCongestion::NewReno(c) => c.window_mut(),
            AnyCongestion::Cubic(c) => c.window_mut(),
        }
    }
    fn on_ack(&mut self, bytes_acked: u32, rtt: Option<Duration>, now: Instant) {
        self.inner_mut().on_ack(bytes_acked, rtt, now)
    }
    fn on_enter_recovery(&mut self, flight_size: u32, now: Instant) {
        self.inner_mut().on_enter_recovery(flight_size, now)
    }
    fn on_rto(&mut self, flight_size: u32, now: Instant) {
        self.inner_mut().on_rto(flight_size, now)
    }
    fn on_partial_ack(&mut self, bytes_acked: u32) {
        self.inner_mut().on_partial_ack(bytes_acked)
    }
    fn on_dup_acks_in_recovery(&mut self, count: u32) {
        self.inner_mut().on_dup_acks_in_recovery(count)
    }
    fn on_exit_recovery(&mut self, flight_size: u32, now: Instant) {
        self.inner_mut().on_exit_recovery(flight_size, now)
    }
    fn on_idle_restart(&mut self, now: Instant) {
        self.inner_mut().on_idle_restart(now)
    }
    fn on_spurious_congestion(&mut self, now: Instant) {
        self.inner_mut().on_spurious_congestion(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window grows on an ACK only while more than half of it was in
    /// flight (RFC 7661 §4.3, RFC 9438 §5.8), in slow start and in
    /// congestion avoidance, for both algorithms.
    #[test]
    fn the_window_grows_only_while_it_is_used() {
        let mss = CcConfig::default().smss;
        for kind in [CongestionKind::NewReno, CongestionKind::Cubic] {
            let mut cc = AnyCongestion::new(kind, CcConfig::default());
            let t = Instant::ZERO + Duration::from_secs(1);
            let rtt = Some(Duration::from_millis(10));
            let iw = cc.window().cwnd();
            // A request/response exchange: one segment out of ten.
            for _ in 0..100 {
                cc.on_ack_with_flight(mss, mss, rtt, t);
            }
            assert_eq!(cc.window().cwnd(), iw, "{kind:?}: app-limited");
            // Exactly half in flight is not yet using it.
            cc.on_ack_with_flight(mss, iw / 2, rtt, t);
            assert_eq!(cc.window().cwnd(), iw, "{kind:?}: half");
            // More than half: slow start grows it.
            cc.on_ack_with_flight(mss, iw / 2 + 1, rtt, t);
            assert_eq!(cc.window().cwnd(), iw + mss, "{kind:?}: slow start");
            // In congestion avoidance too: after a loss, a window's worth
            // of ACKs with the window used grows it; unused, it stays.
            cc.on_enter_recovery(cc.window().cwnd(), t);
            cc.on_exit_recovery(cc.window().cwnd(), t);
            let ca = cc.window().cwnd();
            assert!(!cc.window().in_slow_start());
            let mut now = t;
            for _ in 0..200 {
                now = now + Duration::from_millis(1);
                cc.on_ack_with_flight(mss, mss, rtt, now);
            }
            assert_eq!(cc.window().cwnd(), ca, "{kind:?}: avoidance, app-limited");
            for _ in 0..200 {
                now = now + Duration::from_millis(1);
                cc.on_ack_with_flight(mss, ca, rtt, now);
            }
            assert!(cc.window().cwnd() > ca, "{kind:?}: avoidance, used");
        }
    }

    #[test]
    fn initial_window_and_threshold() {
        let w = Window::new(CcConfig::default());
        assert_eq!(w.cwnd(), 14_600);
        assert_eq!(w.ssthresh(), u32::MAX);
        assert!(w.in_slow_start());
    }

    #[test]
    fn slow_start_counts_every_byte_of_a_stretch_ack() {
        // Linux's tcp_slow_start: a stretch ACK of 4 segments grows cwnd
        // by 4 segments (not RFC 3465 §2.2's L = 2; see `slow_start`).
        let mut w = Window::new(CcConfig::default());
        assert_eq!(w.slow_start(4 * 1460), 0);
        assert_eq!(w.cwnd(), 14_600 + 4 * 1460);
    }

    #[test]
    fn abc_limit_is_one_segment_after_rto() {
        // RFC 3465 §2.3: L = 1·SMSS in the slow start after a timeout,
        // unlimited again once ssthresh is reached and a later loss occurs.
        let mut w = Window::new(CcConfig::default());
        w.set_ssthresh(5 * 1460);
        w.to_loss_window();
        w.slow_start(3 * 1460);
        assert_eq!(w.cwnd(), 2 * 1460);
        w.slow_start(3 * 1460);
        w.slow_start(3 * 1460);
        w.slow_start(3 * 1460);
        assert_eq!(w.cwnd(), 5 * 1460);
        w.set_ssthresh(u32::MAX);
        w.slow_start(3 * 1460);
        assert_eq!(w.cwnd(), 8 * 1460);
    }

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut w = Window::new(CcConfig::default());
        w.set_ssthresh(15_000);
        assert_eq!(w.slow_start(1460), 1060);
        assert_eq!(w.cwnd(), 15_000);
        assert!(!w.in_slow_start());
    }

    #[test]
    fn avoidance_adds_one_segment_per_window() {
        let mut w = Window::new(CcConfig::default());
        w.set_ssthresh(1000);
        for _ in 0..9 {
            w.reno_avoidance(1460);
        }
        assert_eq!(w.cwnd(), 14_600);
        w.reno_avoidance(1460);
        assert_eq!(w.cwnd(), 14_600 + 1460);
    }

    #[test]
    fn stretch_ack_adds_one_segment_in_avoidance() {
        // RFC 3465 §2.1: one SMSS per ACK even for an ACK of 3 windows.
        let mut w = Window::new(CcConfig::default());
        w.set_ssthresh(1000);
        w.reno_avoidance(3 * 14_600);
        assert_eq!(w.cwnd(), 14_600 + 1460);
    }

    #[test]
    fn ssthresh_floor_and_restart() {
        let mut w = Window::new(CcConfig::default());
        assert_eq!(w.set_ssthresh(100), 2920);
        w.set_cwnd(100_000);
        w.restart_after_idle();
        assert_eq!(w.cwnd(), 14_600);
        w.to_loss_window();
        assert_eq!(w.cwnd(), 1460);
        w.restart_after_idle(); // min(RW, cwnd): never grows
        assert_eq!(w.cwnd(), 1460);
    }

    #[test]
    fn idle_is_longer_than_the_rto() {
        let t = Instant::from_millis(1000);
        let rto = Duration::from_millis(200);
        assert!(!idle_restart_due(t, t + rto, rto));
        assert!(idle_restart_due(t, t + rto + Duration::from_nanos(1), rto));
    }

    #[test]
    fn any_dispatches() {
        let cfg = CcConfig::default();
        let mut a = AnyCongestion::new(CongestionKind::NewReno, cfg);
        let mut b = AnyCongestion::new(CongestionKind::default(), cfg);
        assert_eq!(b.kind(), CongestionKind::Cubic);
        assert_eq!((a.name(), b.name()), ("newreno", "cubic"));
        a.on_enter_recovery(20 * 1460, Instant::ZERO);
        b.on_enter_recovery(20 * 1460, Instant::ZERO);
        assert_eq!(a.cwnd(), 10 * 1460); // halved
        assert_eq!(b.cwnd(), 14 * 1460); // times 0.7
    }

    /// One input to a controller in the property tests.
    #[derive(Clone, Debug)]
    enum Event {
        Ack(u32, u64),
        Recovery(u32),
        DupAcks(u32),
        Partial(u32),
        Exit(u32),
        Rto(u32),
        Idle,
        Undo,
        Wait(u64),
    }

    fn event() -> impl proptest::strategy::Strategy<Value = Event> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (1u32..200_000, 0u64..2_000).prop_map(|(b, r)| Event::Ack(b, r)),
            1 => (0u32..2_000_000).prop_map(Event::Recovery),
            1 => (0u32..10).prop_map(Event::DupAcks),
            1 => (0u32..100_000).prop_map(Event::Partial),
            1 => (0u32..2_000_000).prop_map(Event::Exit),
            1 => (0u32..2_000_000).prop_map(Event::Rto),
            1 => Just(Event::Idle),
            1 => Just(Event::Undo),
            2 => (0u64..60_000).prop_map(Event::Wait),
        ]
    }

    proptest::proptest! {
        /// Whatever happens, for both algorithms: cwnd stays at least one
        /// segment, ssthresh at least two (RFC 5681 eq. 4), an ACK never
        /// shrinks cwnd, and slow start grows by at most L·SMSS per ACK
        /// (RFC 3465 §2.2).
        #[test]
        fn invariants(events in proptest::collection::vec(event(), 0..200), smss in 500u32..9000) {
            let cfg = CcConfig { smss, initial_window_segments: 10 };
            for kind in [CongestionKind::NewReno, CongestionKind::Cubic] {
                let mut cc = AnyCongestion::new(kind, cfg);
                let mut now = Instant::ZERO;
                for e in &events {
                    let before = cc.cwnd();
                    let slow = cc.window().in_slow_start();
                    match *e {
                        Event::Ack(b, rtt) => {
                            cc.on_ack(b, Some(Duration::from_millis(rtt)), now);
                            proptest::prop_assert!(cc.cwnd() >= before);
                            let grew = cc.cwnd() - before;
                            if slow && cc.window().in_slow_start() {
                                // Slow start grows by at most the bytes
                                // the ACK covers (Linux's tcp_slow_start).
                                proptest::prop_assert!(grew <= b);
                            }
                            if !slow && cc.name() == "newreno" {
                                // RFC 3465 §2.1: at most SMSS per ACK.
                                proptest::prop_assert!(grew <= smss);
                            }
                        }
                        Event::Recovery(f) => cc.on_enter_recovery(f, now),
                        Event::DupAcks(n) => cc.on_dup_acks_in_recovery(n),
                        Event::Partial(b) => cc.on_partial_ack(b),
                        Event::Exit(f) => cc.on_exit_recovery(f, now),
                        Event::Rto(f) => cc.on_rto(f, now),
                        Event::Idle => cc.on_idle_restart(now),
                        Event::Undo => cc.on_spurious_congestion(now),
                        Event::Wait(ms) => now = now + Duration::from_millis(ms),
                    }
                    proptest::prop_assert!(cc.cwnd() >= smss);
                    proptest::prop_assert!(cc.ssthresh() >= 2 * smss);
                }
                if let AnyCongestion::Cubic(c) = &cc {
                    proptest::prop_assert!(c.w_max().is_finite() && c.k().is_finite());
                    proptest::prop_assert!(c.w_est().is_finite());
                }
            }
        }
    }
}
