//! SACK-based loss recovery: the state machine of RFC 6675 §5 (and the
//! timeout rule of §5.1), driving a [`Scoreboard`] and a
//! [`CongestionControl`].
//!
//! The caller feeds every ACK to [`Recovery::on_ack`] and then asks
//! [`Recovery::next_to_send`] what to transmit, sends it, reports it with
//! [`Recovery::on_sent`], and asks again until it answers `None`: that
//! loop is RFC 6675 §5 step (C), "while cwnd − pipe ≥ 1 SMSS, send
//! NextSeg()". Outside recovery the same loop sends new data (and any
//! segment a timeout or RACK marked lost) while the window allows.
//!
//! Within recovery what may be sent is RFC 6937 PRR's sndcnt ([`Prr`]),
//! not cwnd − pipe, and recovery ends with cwnd = ssthresh. A timeout
//! arms the same D-SACK undo as a fast recovery (RFC 3708 §3, Linux's
//! `tcp_try_undo_loss`): when every retransmission it caused is reported
//! duplicate, the timeout was spurious and its reduction is undone.

use pathstack_core::{Duration, Instant};

use super::congestion::CongestionControl;
use super::prr::Prr;
use super::sack_scoreboard::{
    AckOutcome, NextSeg, Rule, SackBlock, Scoreboard, ScoreboardError, DUP_THRESH,
};
use super::seq::SeqNumber;

/// What one ACK did to the recovery state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecoveryEvent {
    /// What the scoreboard saw.
    pub ack: AckOutcome,
    /// This ACK started a loss-recovery phase (RFC 6675 §5 step 4); the
    /// fast retransmission is the next thing [`Recovery::next_to_send`]
    /// returns.
    pub entered: bool,
    /// This ACK ended loss recovery (RFC 6675 §5 step (A)).
    pub exited: bool,
    /// D-SACKs showed every retransmission of the last recovery phase
    /// unnecessary: the congestion controller's reduction was undone
    /// (RFC 3708 §3.2 via RFC 2883 §4; Linux `tcp_try_undo_dsack`).
    pub undone: bool,
}

/// The RFC 6675 §5 loss-recovery state of one connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// The DupAcks counter (RFC 6675 §2), reset by a cumulative ACK.
    dup_acks: u32,
    /// In a loss-recovery phase.
    in_recovery: bool,
    /// RecoveryPoint, kept after recovery ends (RFC 6675 §5: a new phase
    /// starts only once the cumulative ACK is beyond it). Stored as one
    /// past HighData, so "cum ACK > HighData" reads "cum ACK ≥ point".
    recovery_point: Option<SeqNumber>,
    /// The fast retransmission (RFC 6675 §5 step 4.3) is due.
    fast_rexmit_due: bool,
    /// Retransmissions of the last recovery phase (or of the last
    /// timeout's loss phase) not yet shown unnecessary by a D-SACK, and
    /// HighACK when it began (D-SACKs below it are about older
    /// retransmissions); `None` once undone.
    undo: Option<(u32, SeqNumber)>,
    /// After a timeout, until the cumulative ACK passes the RecoveryPoint
    /// it set: its retransmissions count towards `undo`.
    after_rto: bool,
    /// The PRR state of the current recovery phase (RFC 6937).
    prr: Prr,
    /// RFC 3522 Eifel detection: RetransmitTS, the TSval of the first
    /// retransmission of the last timeout, until the first ACK of new
    /// data after it ([`eifel_check`](Recovery::eifel_check)).
    eifel_ts: Option<u32>,
    /// The current phase's reduction was undone by D-SACK: the window is
    /// the one before the loss, sending follows cwnd − pipe again and the
    /// phase ends without setting cwnd to ssthresh (Linux clears
    /// `undo_marker`, which `tcp_end_cwnd_reduction` asks).
    reduction_undone: bool,
    /// Not [`is_open`](Recovery::is_open): `in_recovery ||
    /// fast_rexmit_due || dup_acks > 0`, kept by every change of the
    /// three ([`settle`](Recovery::settle)). Header prediction asks it for
    /// every segment in and out, and a change is rare (issue 26: reading
    /// the three cost about 74 instructions per round trip).
    unsettled: bool,
    /// `TcpConfig::prr_safe_ack`: PRR-SSRB only on ACKs that advance
    /// SND.UNA.
    safe_ack_only: bool,
}

impl Recovery {
    /// Not in recovery, no duplicate ACKs seen.
    pub fn new() -> Self {
        Recovery::default()
    }

    /// With `TcpConfig::prr_safe_ack`: within recovery, PRR's extra
    /// segment only for ACKs that advance SND.UNA (RFC 6937bis SafeACK).
    pub fn with_safe_ack_only(mut self, on: bool) -> Self {
        self.safe_ack_only = on;
        self
    }

    /// Whether a loss-recovery phase is under way.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// Linux's `TCP_CA_Open`: not in recovery, no fast retransmission
    /// due and no duplicate ACK counted. Then an ACK that SACKs nothing
    /// cannot start recovery while nothing on the scoreboard is lost, and
    /// [`next_to_send`](Self::next_to_send) has only new data to offer.
    #[inline]
    pub fn is_open(&self) -> bool {
        debug_assert_eq!(
            self.unsettled,
            self.in_recovery || self.fast_rexmit_due || self.dup_acks > 0
        );
        !self.unsettled
    }

    /// Recomputes [`unsettled`](Recovery::unsettled) after a change of
    /// the recovery phase, the fast retransmission or DupAcks.
    #[inline]
    fn settle(&mut self) {
        self.unsettled = self.in_recovery || self.fast_rexmit_due || self.dup_acks > 0;
    }

    /// Whether the sender is recovering from a retransmission timeout: from
    /// the timeout until the cumulative ACK reaches the RecoveryPoint it
    /// set (Linux's `TCP_CA_Loss`).
    pub fn after_timeout(&self) -> bool {
        self.after_rto
    }

    /// The current (or last) RecoveryPoint, one past HighData at entry.
    pub fn recovery_point(&self) -> Option<SeqNumber> {
        self.recovery_point
    }

    /// The DupAcks counter.
    pub fn dup_acks(&self) -> u32 {
        self.dup_acks
    }

    /// Processes an ACK (cumulative ACK and SACK blocks) on the
    /// scoreboard, then applies RFC 6675 §5: exit on a cumulative ACK
    /// covering RecoveryPoint (step A); outside recovery, count duplicate
    /// ACKs and enter recovery on the DupThresh-th one or when
    /// IsLost(HighACK + 1) (steps 1, 2 and 4), if the cumulative ACK is
    /// beyond the previous RecoveryPoint. `srtt` goes to the congestion
    /// controller with ACKs of new data outside recovery.
    pub fn on_ack(
        &mut self,
        sb: &mut Scoreboard,
        cc: &mut dyn CongestionControl,
        cum_ack: SeqNumber,
        sack: &[SackBlock],
        srtt: Option<Duration>,
        now: Instant,
    ) -> RecoveryEvent {
        let outstanding = !sb.is_empty();
        let flight_before = sb.flight_size();
        let sacked_before = sb.sacked_bytes();
        let ack = sb.on_ack(cum_ack, sack, now);
        let mut ev = RecoveryEvent {
            ack,
            entered: false,
            exited: false,
            undone: false,
        };
        if let (Some(d), Some((n, marker))) = (ack.dsack, self.undo) {
            if n > 0 && d.left.ge(marker) {
                self.undo = Some((n - 1, marker));
                if n == 1 {
                    // Every retransmission was a duplicate: nothing was lost.
                    self.undo = None;
                    cc.on_spurious_congestion(now);
                    self.reduction_undone = self.in_recovery;
                    ev.undone = true;
                }
            }
        }
        if self.in_recovery {
            if let Some(rp) = self.recovery_point {
                if ack.cum_advanced && sb.high_ack().ge(rp) {
                    // (A) End of recovery: cwnd = ssthresh (RFC 6937 §3).
                    self.in_recovery = false;
                    self.fast_rexmit_due = false;
                    self.dup_acks = 0;
                    self.settle();
                    if !self.reduction_undone {
                        cc.on_exit_recovery(sb.flight_size(), now);
                    }
                    ev.exited = true;
                    return ev;
                }
            }
            // Within recovery PRR paces sending by what is delivered,
            // by default with PRR-SSRB's extra segment on every ACK (RFC
            // 6937), not only on RFC 6937bis's SafeACKs as Linux
            // (`safe_ack_only`): the loss study (impairment_tests)
            // measured the bis rule slower, 5 % loss median 3.981 s →
            // 4.145 s and 1 % 0.286 s → 0.325 s (`prr.rs`).
            let safe = ack.cum_advanced || !self.safe_ack_only;
            self.prr
                .on_ack(delivered_data(ack.newly_acked, sacked_before, sb), safe);
            return ev;
        }
        if self.after_rto && self.recovery_point.is_none_or(|rp| sb.high_ack().ge(rp)) {
            self.after_rto = false;
        }
        if ack.cum_advanced {
            // The ACK that ends a disorder (duplicates counted, recovery
            // not entered: reordering) grows the window by what it newly
            // delivered (RFC 6937 DeliveredData), not by the octets the
            // duplicates SACKed, which the limited transmits already sent
            // on (RFC 3042; Linux grows by its `delivered`,
            // `tcp_cong_control`; packetdrill `limited-transmit-sack`).
            // Only then: counting only DeliveredData on every ACK slowed
            // the loss study at 1 % (median 0.286 s → 0.362 s).
            let grown = if self.dup_acks > 0 {
                delivered_data(ack.newly_acked, sacked_before, sb)
            } else {
                ack.newly_acked
            };
            self.dup_acks = 0;
            cc.on_ack_with_flight(grown, flight_before, srtt, now);
        } else if ack.is_dup_ack(outstanding) {
            self.dup_acks += 1;
        }
        self.settle();
        let beyond_last = match self.recovery_point {
            None => true,
            Some(rp) => sb.high_ack().ge(rp),
        };
        if beyond_last
            && !sb.is_empty()
            && (self.dup_acks >= DUP_THRESH || sb.is_lost(sb.high_ack()))
        {
            self.enter(sb, cc, now);
            // The entering ACK found the loss: never a SafeACK (RFC
            // 6937bis), so PRR's conservative bound: the fast
            // retransmission takes what it delivered (Linux's
            // `tcp_cwnd_reduction`; packetdrill
            // `prr-ss-ack-below-snd_una-cubic`).
            self.prr
                .on_ack(delivered_data(ack.newly_acked, sacked_before, sb), false);
            ev.entered = true;
        }
        ev
    }

    /// Starts a loss-recovery phase (RFC 6675 §5 step 4; also the entry
    /// RACK uses when it detects a loss, RFC 8985 §6.2): RecoveryPoint =
    /// HighData, ssthresh and cwnd reduced by the congestion controller
    /// from FlightSize, and the fast retransmission scheduled. Does
    /// nothing if already in recovery or nothing is in flight.
    pub fn enter(&mut self, sb: &mut Scoreboard, cc: &mut dyn CongestionControl, now: Instant) {
        if self.in_recovery || sb.is_empty() {
            return;
        }
        self.in_recovery = true;
        self.recovery_point = Some(sb.snd_nxt());
        self.fast_rexmit_due = true;
        self.undo = Some((0, sb.high_ack()));
        self.after_rto = false;
        self.eifel_ts = None;
        self.prr = Prr::start(sb.flight_size());
        self.reduction_undone = false;
        self.dup_acks = 0;
        self.settle();
        sb.begin_recovery();
        cc.on_enter_recovery(sb.flight_size(), now);
    }

    /// The retransmission timer expired (RFC 6675 §5.1): RecoveryPoint =
    /// HighData (preserved), recovery terminated, every unSACKed segment
    /// lost, and the congestion controller's timeout response. The
    /// retransmissions then come from [`next_to_send`](Self::next_to_send)
    /// as the (one-segment) window allows. If D-SACKs later show every
    /// one of them unnecessary, the timeout was spurious and its
    /// reduction is undone (RFC 3708 §3; Linux `tcp_try_undo_loss`): at
    /// 5 % loss most timeouts are, the first ACK after the retransmission
    /// covering the whole flight (issue 28).
    pub fn on_rto(&mut self, sb: &mut Scoreboard, cc: &mut dyn CongestionControl, now: Instant) {
        let marker = sb.high_ack();
        cc.on_rto(sb.flight_size(), now);
        sb.on_rto();
        self.in_recovery = false;
        self.fast_rexmit_due = false;
        self.dup_acks = 0;
        self.settle();
        self.recovery_point = Some(sb.snd_nxt());
        self.undo = Some((0, marker));
        self.after_rto = true;
    }

    /// The first retransmission of a timeout (RFC 3522 §3.2 step 1) goes
    /// with TSval `tsval`: Eifel detection is armed until the first ACK
    /// of new data after it. Later timeouts of the same episode keep the
    /// first one's RetransmitTS.
    pub fn arm_eifel(&mut self, tsval: u32) {
        self.eifel_ts = Some(tsval);
    }

    /// RFC 3522 §3.2 on an ACK that advanced the cumulative ACK, with its
    /// TSecr (none without timestamps): if it echoes a timestamp older
    /// than the timeout's retransmission, the original segments were
    /// acknowledged, not the retransmission — the timeout was spurious —
    /// and the reduction is undone at once, the response of RFC 4015 §2
    /// (cwnd and ssthresh as before the timeout; Linux's
    /// `tcp_packet_delayed` and `tcp_try_undo_loss`), without waiting a
    /// round trip for the D-SACK the receiver may not even send (an old
    /// duplicate below RCV.NXT). Chosen over F-RTO (RFC 5682) because it
    /// decides on the first ACK without holding back the go-back-N
    /// retransmissions, and every pathstack and Linux peer echoes
    /// timestamps. True when it undid.
    pub fn eifel_check(
        &mut self,
        cc: &mut dyn CongestionControl,
        tsecr: Option<u32>,
        now: Instant,
    ) -> bool {
        let Some(retransmit_ts) = self.eifel_ts.take() else {
            return false;
        };
        let spurious = tsecr.is_some_and(|e| (e.wrapping_sub(retransmit_ts) as i32) < 0);
        // (`undo` is still the timeout's: a recovery entered since would
        // have disarmed the detection.)
        if spurious && self.undo.is_some() {
            self.undo = None;
            cc.on_spurious_congestion(now);
            return true;
        }
        false
    }

    /// What to send next, or `None` when nothing may be sent now. The
    /// fast retransmission of the segment at HighACK comes first and
    /// regardless of the window (RFC 6675 §5 step 4.3); after it, a
    /// segment is returned only while cwnd − pipe ≥ 1 SMSS (step C),
    /// chosen by NextSeg (§4). `new_data` is what the application has
    /// queued beyond `SND.NXT` within the receive window.
    pub fn next_to_send(
        &self,
        sb: &Scoreboard,
        cc: &dyn CongestionControl,
        new_data: u32,
    ) -> Option<NextSeg> {
        if self.fast_rexmit_due {
            if let Some(s) = sb.segments().find(|s| !s.sacked) {
                return Some(NextSeg::new(Rule::Lost, s.start, s.len));
            }
        }
        if self.send_room(sb, cc) < sb.smss() {
            return None;
        }
        let rp = if self.in_recovery {
            self.recovery_point
        } else {
            None
        };
        sb.next_seg(new_data, rp)
    }

    /// [`next_to_send`](Self::next_to_send) on a clean scoreboard
    /// ([`Scoreboard::is_clean`]) with recovery open ([`is_open`](Self::is_open)):
    /// no fast retransmission is due and NextSeg has only rule 2, new
    /// data, to offer, while cwnd − pipe ≥ 1 SMSS with pipe = FlightSize.
    /// The same answer without the scoreboard's walk: what a loss-free
    /// sender asks for every segment.
    pub fn next_new(sb: &Scoreboard, cc: &dyn CongestionControl, new_data: u32) -> Option<NextSeg> {
        let room = cc.cwnd().saturating_sub(sb.flight_size());
        (room >= sb.smss() && new_data > 0 && sb.has_room())
            .then(|| NextSeg::new(Rule::New, sb.snd_nxt(), new_data.min(sb.smss())))
    }

    /// The octets the congestion state lets go now: PRR's sndcnt in
    /// recovery (RFC 6937 §3), else cwnd − pipe (RFC 6675 §5 step C).
    pub fn send_room(&self, sb: &Scoreboard, cc: &dyn CongestionControl) -> u32 {
        if self.in_recovery && !self.reduction_undone {
            self.prr.sndcnt(sb.pipe(), cc.ssthresh(), sb.smss())
        } else {
            cc.cwnd().saturating_sub(sb.pipe())
        }
    }

    fn count_retransmission(&mut self) {
        if let Some((n, marker)) = self.undo {
            if self.in_recovery || self.after_rto {
                self.undo = Some((n.saturating_add(1), marker));
            }
        }
    }

    /// Records that `seg` (from [`next_to_send`](Self::next_to_send)) was
    /// sent at `now`: new data goes on the scoreboard (step C.3), a
    /// retransmission updates HighRxt (step C.2) and, for the fast
    /// retransmission, RescueRxt too (step 4.3); a rescue sets RescueRxt
    /// = RecoveryPoint (§4 rule 4).
    pub fn on_sent(
        &mut self,
        sb: &mut Scoreboard,
        seg: NextSeg,
        now: Instant,
    ) -> Result<(), ScoreboardError> {
        if self.in_recovery {
            self.prr.on_sent(seg.len);
        }
        match seg.rule {
            Rule::New => sb.on_send(seg.start, seg.len, now),
            Rule::Lost | Rule::Unsacked => {
                sb.on_retransmit(seg.start, now)?;
                self.count_retransmission();
                if self.fast_rexmit_due {
                    self.fast_rexmit_due = false;
                    self.settle();
                    if let Some(h) = sb.high_rxt() {
                        sb.set_rescue_rxt(h);
                    }
                }
                Ok(())
            }
            Rule::Rescue => {
                let rp = self.recovery_point.unwrap_or(sb.snd_nxt());
                sb.on_rescue_retransmit(seg.start, rp, now)?;
                self.count_retransmission();
                Ok(())
            }
        }
    }
}

/// RFC 6937 §3 DeliveredData of an ACK: the change in SND.UNA plus the
/// change in SACKed octets (which falls when the cumulative ACK covers
/// SACKed data, so that nothing is counted twice).
fn delivered_data(newly_acked: u32, sacked_before: u32, sb: &Scoreboard) -> u32 {
    (newly_acked.saturating_add(sb.sacked_bytes())).saturating_sub(sacked_before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::congestion::{CcConfig, NewReno};
    use crate::tcp::sack_scoreboard::testing::*;

    fn setup(n: u32) -> (Scoreboard, NewReno, Recovery) {
        let sb = sent(n, T0);
        let cc = NewReno::new(CcConfig {
            smss: MSS,
            initial_window_segments: 10,
        });
        (sb, cc, Recovery::new())
    }

    fn sack(
        r: &mut Recovery,
        sb: &mut Scoreboard,
        cc: &mut NewReno,
        cum: u32,
        right: u32,
    ) -> RecoveryEvent {
        r.on_ack(
            sb,
            cc,
            s(cum),
            &[SackBlock::new(s(1000), s(right))],
            None,
            T0,
        )
    }

    #[test]
    fn enters_on_third_dup_ack_and_exits_at_recovery_point() {
        let (mut sb, mut cc, mut r) = setup(10);
        assert!(!sack(&mut r, &mut sb, &mut cc, 0, 2000).entered);
        assert_eq!(r.dup_acks(), 1);
        assert!(!sack(&mut r, &mut sb, &mut cc, 0, 3000).entered);
        let ev = sack(&mut r, &mut sb, &mut cc, 0, 4000);
        assert!(ev.entered && r.in_recovery());
        assert_eq!(r.recovery_point(), Some(s(10_000)));
        assert_eq!(cc.cwnd(), 5000, "FlightSize / 2");
        // Fast retransmission first, regardless of the window.
        let fr = r.next_to_send(&sb, &cc, 5000).unwrap();
        assert_eq!(fr, NextSeg::new(Rule::Lost, s(0), 1000));
        r.on_sent(&mut sb, fr, T0).unwrap();
        assert_eq!(sb.high_rxt(), Some(s(999)));
        assert_eq!(sb.rescue_rxt(), Some(s(999)));
        // pipe = 1000 (rexmit) + 6000 (4..10) > cwnd: nothing more.
        assert_eq!(sb.pipe(), 7000);
        assert_eq!(r.next_to_send(&sb, &cc, 5000), None);
        // More SACKs drain the pipe to 3000: new data may go.
        let ev = sack(&mut r, &mut sb, &mut cc, 0, 8000);
        assert!(!ev.entered && !ev.exited);
        assert_eq!(sb.pipe(), 3000);
        let n = r.next_to_send(&sb, &cc, 5000).unwrap();
        assert_eq!(n, NextSeg::new(Rule::New, s(10_000), 1000));
        r.on_sent(&mut sb, n, T0).unwrap();
        let n = r.next_to_send(&sb, &cc, 4000).unwrap();
        r.on_sent(&mut sb, n, T0).unwrap();
        assert_eq!(r.next_to_send(&sb, &cc, 3000), None, "cwnd - pipe < SMSS");
        // A partial ACK does not end recovery.
        let ev = r.on_ack(&mut sb, &mut cc, s(9000), &[], None, T0);
        assert!(!ev.exited && r.in_recovery());
        // The ACK covering RecoveryPoint does.
        let ev = r.on_ack(&mut sb, &mut cc, s(10_000), &[], None, T0);
        assert!(ev.exited && !r.in_recovery());
        // RFC 6937 §3: cwnd = ssthresh, though nothing is in flight
        // (RFC 6582's option 1 gave min(ssthresh, SMSS + SMSS) here).
        assert_eq!(cc.cwnd(), 5000);
    }

    #[test]
    fn enters_when_highack_is_lost_on_one_ack() {
        // One ACK SACKing three segments: DupAcks is 1, IsLost(HighACK+1).
        let (mut sb, mut cc, mut r) = setup(10);
        let ev = sack(&mut r, &mut sb, &mut cc, 0, 4000);
        assert!(ev.ack.is_dup_ack(true), "a single duplicate ACK");
        assert!(ev.entered);
    }

    #[test]
    fn no_reentry_before_recovery_point() {
        let (mut sb, mut cc, mut r) = setup(10);
        sack(&mut r, &mut sb, &mut cc, 0, 4000);
        r.on_rto(&mut sb, &mut cc, T0);
        assert!(!r.in_recovery());
        assert_eq!(cc.cwnd(), 1000);
        // After the timeout everything unSACKed is lost: the first hole is
        // retransmitted first.
        assert_eq!(r.next_to_send(&sb, &cc, 0), lost(0));
        // Duplicate ACKs below the preserved RecoveryPoint do not re-enter.
        let ev = r.on_ack(
            &mut sb,
            &mut cc,
            s(1000),
            &[SackBlock::new(s(4000), s(8000))],
            None,
            T0,
        );
        assert!(!ev.entered);
    }

    #[test]
    fn new_data_outside_recovery_follows_cwnd() {
        let (mut sb, cc, mut r) = setup(0);
        let mut sent = 0;
        while let Some(n) = r.next_to_send(&sb, &cc, 100_000) {
            r.on_sent(&mut sb, n, T0).unwrap();
            sent += n.len;
        }
        assert_eq!(sent, 10_000, "the initial window");
    }

    #[test]
    fn dsack_of_every_retransmission_undoes_the_reduction() {
        // Segment 0 was only delayed: the fast retransmission duplicates
        // it, the receiver D-SACKs it, and cwnd comes back.
        let (mut sb, mut cc, mut r) = setup(10);
        let ev = sack(&mut r, &mut sb, &mut cc, 0, 4000);
        assert!(ev.entered);
        assert_eq!(cc.cwnd(), 5000);
        let fr = r.next_to_send(&sb, &cc, 0).unwrap();
        r.on_sent(&mut sb, fr, T0).unwrap();
        let ev = r.on_ack(&mut sb, &mut cc, s(4000), &[], None, T0);
        assert!(!ev.undone);
        let d = [SackBlock::new(s(0), s(1000))];
        let ev = r.on_ack(&mut sb, &mut cc, s(4000), &d, None, T0);
        assert!(ev.undone && ev.ack.dsack.is_some());
        assert_eq!(cc.cwnd(), 10_000);
        // At most once.
        let ev = r.on_ack(&mut sb, &mut cc, s(4000), &d, None, T0);
        assert!(!ev.undone);
    }

    /// A receiver holding some octets: the cumulative ACK is the first
    /// missing octet, the SACK blocks the first runs held above it.
    struct Receiver {
        held: Vec<bool>,
    }

    impl Receiver {
        fn ack(&self) -> (SeqNumber, [SackBlock; 4], usize) {
            let una = self.held.iter().position(|h| !h).unwrap_or(self.held.len());
            let mut blocks = [SackBlock::new(s(0), s(0)); 4];
            let mut n = 0;
            let mut i = una;
            while i < self.held.len() && n < 3 {
                if self.held[i] {
                    let j = i;
                    while i < self.held.len() && self.held[i] {
                        i += 1;
                    }
                    blocks[n] = SackBlock::new(s(j as u32), s(i as u32));
                    n += 1;
                }
                i += 1;
            }
            (s(una as u32), blocks, n)
        }
    }

    proptest::proptest! {
        /// On a clean scoreboard with recovery open, `next_new` answers
        /// as `next_to_send`.
        #[test]
        fn next_new_is_next_to_send_when_clean(
            sends in proptest::collection::vec(1u32..3000, 0..40),
            acked in 0u32..200_000,
            iw in 1u32..20,
            cap in 1usize..40,
            new_data in proptest::prop_oneof![proptest::prelude::Just(0u32), 0u32..5000],
        ) {
            use crate::tcp::congestion::{AnyCongestion, CongestionKind};
            let mut cc = AnyCongestion::new(CongestionKind::Cubic, CcConfig { smss: MSS, initial_window_segments: iw });
            cc.on_ack(acked, None, T0);
            let mut sb = Scoreboard::new(cap, MSS, s(7));
            let mut at = s(7);
            for l in sends {
                if sb.on_send(at, l, T0).is_ok() {
                    at += l;
                }
            }
            let r = Recovery::new();
            proptest::prop_assert!(sb.is_clean() && r.is_open());
            proptest::prop_assert_eq!(Recovery::next_new(&sb, &cc, new_data), r.next_to_send(&sb, &cc, new_data));
        }

        /// A lossy channel (random drops of first transmissions and
        /// retransmissions), then a lossless one: the scoreboard's
        /// invariants hold throughout, the cumulative ACK never goes back,
        /// pipe stays within the octets in flight plus presumed
        /// retransmissions, and all data is eventually acknowledged.
        #[test]
        fn recovery_under_loss(
            drops in proptest::collection::vec(proptest::bool::weighted(0.2), 400),
            rtos in proptest::collection::vec(proptest::bool::weighted(0.05), 200),
            cubic in proptest::bool::ANY,
            use_rack in proptest::bool::ANY,
        ) {
            use crate::tcp::rack::Rack;
            use crate::tcp::congestion::{AnyCongestion, CongestionKind};
            const TOTAL: u32 = 60 * MSS;
            let kind = if cubic { CongestionKind::Cubic } else { CongestionKind::NewReno };
            let mut cc = AnyCongestion::new(kind, CcConfig { smss: MSS, initial_window_segments: 4 });
            let mut sb = Scoreboard::new(32, MSS, s(0));
            let mut r = Recovery::new();
            let mut rx = Receiver { held: vec![false; TOTAL as usize] };
            let mut d = 0usize;
            let mut last_una = s(0);
            let mut now = T0;
            let mut rack = Rack::new();
            rack.on_rtt_sample(pathstack_core::Duration::from_millis(10));
            for round in 0..400usize {
                let lossy = round < 200;
                now = now + pathstack_core::Duration::from_millis(10);
                let mut burst = 0;
                while let Some(seg) = r.next_to_send(&sb, &cc, TOTAL - (sb.snd_nxt() - s(0))) {
                    r.on_sent(&mut sb, seg, now).unwrap();
                    let dropped = lossy && drops[d % drops.len()];
                    d += 1;
                    if !dropped {
                        let a = seg.start - s(0);
                        for b in &mut rx.held[a as usize..(a + seg.len) as usize] {
                            *b = true;
                        }
                    }
                    burst += 1;
                    proptest::prop_assert!(burst < 100, "unbounded burst");
                }
                let (cum, blocks, n) = rx.ack();
                let ev = r.on_ack(&mut sb, &mut cc, cum, &blocks[..n], None, now);
                if use_rack {
                    // RFC 8985 §9.3: RACK's losses start RFC 6675 recovery.
                    rack.on_ack(&ev.ack, sb.high_ack(), sb.snd_nxt(), now);
                    let reo = rack.reo_wnd(&sb, r.in_recovery(), None);
                    if rack.detect_loss(&mut sb, reo, now).0 > 0 {
                        r.enter(&mut sb, &mut cc, now);
                    }
                    if ev.exited {
                        rack.on_recovery_exit();
                    }
                }
                if (lossy && rtos[round % rtos.len()]) || (!sb.is_empty() && r.next_to_send(&sb, &cc, 0).is_none() && round % 7 == 6) {
                    r.on_rto(&mut sb, &mut cc, now);
                }
                proptest::prop_assert!(sb.check_invariants().is_ok());
                proptest::prop_assert!(last_una.le(sb.high_ack()));
                last_una = sb.high_ack();
                let retrans: u32 = sb.segments().filter(|x| !x.sacked && x.retransmitted).map(|x| x.len).sum();
                proptest::prop_assert!(sb.pipe() <= sb.flight_size() - sb.sacked_bytes() + retrans);
                proptest::prop_assert!(cc.cwnd() >= MSS);
                if sb.high_ack() == s(TOTAL) {
                    break;
                }
            }
            proptest::prop_assert_eq!(sb.high_ack(), s(TOTAL), "all data acknowledged");
        }
    }
}
