//! RACK-TLP (RFC 8985): time-based loss detection (RACK, §6) and the tail
//! loss probe (TLP, §7), over the segments of a [`Scoreboard`].
//!
//! RACK deems a segment lost when a segment sent sufficiently later has
//! been delivered: it was sent before `RACK.xmit_ts` and more than
//! `RACK.rtt + RACK.reo_wnd` ago. The reordering window starts at
//! min_RTT/4, is zero until reordering has been seen (§6.2 step 4), and
//! grows in steps of min_RTT/4 on D-SACKs (at most once per round trip),
//! decaying back after 16 loss recoveries, bounded by SRTT.
//!
//! Wiring (RFC 8985 §9.3): after each ACK, [`Rack::on_ack`] then
//! [`Rack::detect_loss`]; if it marked segments lost and the sender is not
//! in recovery, [`Recovery::enter`](super::recovery::Recovery::enter)
//! starts RFC 6675 recovery, whose NextSeg retransmits them. When
//! recovery ends, [`Rack::on_recovery_exit`]. The reordering timer and the
//! PTO ([`probe_timeout`], [`Tlp`]) are the caller's timers.

use pathstack_core::{Duration, Instant};

use super::sack_scoreboard::{AckOutcome, Delivered, NextSeg, Rule, Scoreboard, DUP_THRESH};
use super::seq::SeqNumber;

/// RFC 8985 §7.2 WCDelAckT: the worst-case delayed-ACK time added to the
/// PTO when one segment is in flight (200 ms).
pub const WC_DEL_ACK: Duration = Duration::from_millis(200);

/// Recoveries a widened reordering window persists for (RFC 8985 §6.2
/// step 4, RACK.reo_wnd_persist = 16).
pub const REO_WND_PERSIST: u32 = 16;

/// The RACK state of one connection (RFC 8985 §6.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rack {
    /// RACK.xmit_ts: send time of the most recently sent delivered segment.
    xmit_ts: Option<Instant>,
    /// RACK.end_seq of that segment.
    end_seq: SeqNumber,
    /// RACK.rtt: the RTT of that segment.
    rtt: Duration,
    /// RACK.min_RTT (the minimum of all samples; RFC 8985 §6.1 suggests a
    /// windowed filter, Linux uses one over 5 minutes).
    min_rtt: Option<Duration>,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// RACK.reo_wnd_mult.
    reo_wnd_mult: u32,
    /// RACK.reo_wnd_persist.
    reo_wnd_persist: u32,
    /// RACK.dsack_round: SND.NXT when the window was last widened.
    dsack_round: Option<SeqNumber>,
}

impl Default for Rack {
    fn default() -> Self {
        Rack::new()
    }
}

impl Rack {
    /// No segment delivered yet; reo_wnd_mult = 1.
    pub fn new() -> Self {
        Rack {
            xmit_ts: None,
            end_seq: SeqNumber(0),
            rtt: Duration::ZERO,
            min_rtt: None,
            reordering_seen: false,
            reo_wnd_mult: 1,
            reo_wnd_persist: 0,
            dsack_round: None,
        }
    }

    /// RACK.xmit_ts and RACK.end_seq, once a segment was delivered.
    pub fn newest_delivered(&self) -> Option<(Instant, SeqNumber)> {
        self.xmit_ts.map(|t| (t, self.end_seq))
    }

    /// RACK.rtt.
    pub fn rtt(&self) -> Duration {
        self.rtt
    }

    /// RACK.min_RTT.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// RACK.reo_wnd_mult.
    pub fn reo_wnd_mult(&self) -> u32 {
        self.reo_wnd_mult
    }

    /// Whether reordering has been observed.
    pub fn reordering_seen(&self) -> bool {
        self.reordering_seen
    }

    /// Takes an RTT sample into min_RTT (RFC 8985 §6.2 step 1); the caller
    /// passes the same unambiguous samples it gives the RTO estimator.
    pub fn on_rtt_sample(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// RFC 8985 §6.2 steps 2–4 for one ACK already applied to the
    /// scoreboard (`ack` is what [`Scoreboard::on_ack`] returned,
    /// `snd_una`/`snd_nxt` the scoreboard's after it).
    ///
    /// Step 2 considers the newest delivered segment of each
    /// retransmission class; a retransmitted one is used only if its RTT
    /// is at least min_RTT (the ambiguity test without timestamps).
    pub fn on_ack(
        &mut self,
        ack: &AckOutcome,
        snd_una: SeqNumber,
        snd_nxt: SeqNumber,
        now: Instant,
    ) {
        // Step 2: RACK.xmit_ts / end_seq / rtt.
        let candidates = [ack.newest_original, ack.newest_retransmitted];
        for d in candidates.into_iter().flatten() {
            self.on_delivered(d, now);
        }
        // Step 3: reordering detected by the scoreboard against RACK.fack.
        if ack.reordering {
            self.reordering_seen = true;
        }
        // Step 4: D-SACK widens the window at most once per round trip.
        self.end_dsack_round(snd_una);
        if ack.dsack.is_some() && self.dsack_round.is_none() {
            self.reo_wnd_mult = self.reo_wnd_mult.saturating_add(1);
            self.dsack_round = Some(snd_nxt);
            self.reo_wnd_persist = REO_WND_PERSIST;
        }
    }

    /// [`on_ack`](Self::on_ack) for an ACK on a clean scoreboard
    /// (header prediction's): what [`Scoreboard::on_clean_ack`] found,
    /// or nothing delivered (`None`, `false`) when SND.UNA did not move.
    /// Such an ACK has no D-SACK and delivers nothing retransmitted.
    ///
    /// [`Scoreboard::on_clean_ack`]: super::sack_scoreboard::Scoreboard::on_clean_ack
    pub fn on_clean_ack(
        &mut self,
        newest: Option<Delivered>,
        reordering: bool,
        snd_una: SeqNumber,
        now: Instant,
    ) {
        if let Some(d) = newest {
            self.on_delivered(d, now);
        }
        if reordering {
            self.reordering_seen = true;
        }
        self.end_dsack_round(snd_una);
    }

    /// [`on_rtt_sample`](Self::on_rtt_sample) and then, with `rack` on,
    /// [`on_clean_ack`](Self::on_clean_ack) for header prediction's ACK
    /// of new data whose newest delivered segment `d` gave the sample
    /// `rtt` (`now` − its `xmit_ts`): the same steps in the same order,
    /// with the RTT taken once and in line (issue 26 item 4: RACK's
    /// per-ACK update at what RFC 8985 §6.2 needs on a clean scoreboard).
    #[inline(always)]
    pub fn on_predicted_sample(
        &mut self,
        d: Delivered,
        rtt: Duration,
        rack: bool,
        reordering: bool,
        snd_una: SeqNumber,
    ) {
        self.on_rtt_sample(rtt);
        if !rack {
            return;
        }
        // `on_delivered` with its RTT given. Never retransmitted on a
        // clean scoreboard; asked all the same, as `on_delivered` asks.
        self.take_if_newer(d, rtt);
        if reordering {
            self.reordering_seen = true;
        }
        self.end_dsack_round(snd_una);
    }

    /// Step 2 for a delivered segment: it becomes RACK.xmit_ts/end_seq
    /// if sent after the current one; a retransmitted one only if its RTT
    /// is at least min_RTT (the ambiguity test without timestamps).
    fn on_delivered(&mut self, d: Delivered, now: Instant) {
        self.take_if_newer(d, now.saturating_since(d.sent_at));
    }

    /// Step 2 with the segment's RTT known: shared by
    /// [`on_delivered`](Self::on_delivered) and header prediction's
    /// [`on_predicted_sample`](Self::on_predicted_sample).
    #[inline(always)]
    fn take_if_newer(&mut self, d: Delivered, rtt: Duration) {
        if d.retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        let newer = match self.xmit_ts {
            None => true,
            Some(t) => super::sack_scoreboard::sent_after(d.sent_at, d.end, t, self.end_seq),
        };
        if newer {
            self.xmit_ts = Some(d.sent_at);
            self.end_seq = d.end;
            self.rtt = rtt;
        }
    }

    /// Step 4: the round trip of the last widening ends once SND.UNA
    /// passes the SND.NXT it was widened at.
    fn end_dsack_round(&mut self, snd_una: SeqNumber) {
        if self.dsack_round.is_some_and(|r| snd_una.ge(r)) {
            self.dsack_round = None;
        }
    }

    /// A loss recovery ended (RFC 8985 §6.2 step 4): after
    /// [`REO_WND_PERSIST`] recoveries without further D-SACKs the window
    /// multiplier returns to 1.
    pub fn on_recovery_exit(&mut self) {
        if self.reo_wnd_persist > 0 {
            self.reo_wnd_persist -= 1;
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 1;
            }
        }
    }

    /// RACK.reo_wnd (RFC 8985 §6.2 step 4, RACK_update_reo_wnd): zero if
    /// no reordering was seen and the sender is in recovery or DupThresh
    /// segments are SACKed; else min(reo_wnd_mult·min_RTT/4, SRTT).
    pub fn reo_wnd(&self, sb: &Scoreboard, in_recovery: bool, srtt: Option<Duration>) -> Duration {
        if !self.reordering_seen && (in_recovery || sb.sacked_segments() >= DUP_THRESH) {
            return Duration::ZERO;
        }
        let Some(min_rtt) = self.min_rtt else {
            return Duration::ZERO;
        };
        let w = u128::from(min_rtt.as_nanos()) * u128::from(self.reo_wnd_mult) / 4;
        let w = w.min(u128::from(u64::MAX)) as u64;
        let w = match srtt {
            Some(s) => w.min(s.as_nanos()),
            None => w,
        };
        Duration::from_nanos(w)
    }

    /// RFC 8985 §6.2 step 5 (RACK_detect_loss): marks lost every unSACKed
    /// segment sent before RACK.xmit_ts whose time (xmit_ts + RACK.rtt +
    /// reo_wnd) has passed. Returns how many were newly marked and, if
    /// some candidates are not yet due, when the reordering timer should
    /// fire (§6.3: after the longest remaining wait).
    pub fn detect_loss(
        &self,
        sb: &mut Scoreboard,
        reo_wnd: Duration,
        now: Instant,
    ) -> (u32, Option<Instant>) {
        let Some(rack_ts) = self.xmit_ts else {
            return (0, None);
        };
        let mut marked = 0;
        let mut timer: Option<Instant> = None;
        let wait = Duration::from_nanos(self.rtt.as_nanos().saturating_add(reo_wnd.as_nanos()));
        let n = sb.len();
        for i in 0..n {
            let Some(seg) = sb.segment_at(i).copied() else {
                break;
            };
            if seg.sacked || (seg.lost && !seg.retransmitted) {
                continue;
            }
            if !super::sack_scoreboard::sent_after(rack_ts, self.end_seq, seg.sent_at, seg.end()) {
                continue;
            }
            let deadline = seg.sent_at + wait;
            if deadline <= now {
                sb.mark_lost_at(i);
                marked += 1;
            } else {
                timer = Some(timer.map_or(deadline, |t| t.max(deadline)));
            }
        }
        (marked, timer)
    }
}

/// Slack added to 2·SRTT when several segments are in flight: Linux's
/// `TCP_TIMEOUT_MIN` (2 jiffies, 2 ms at HZ=1000). Without it a
/// microsecond SRTT (a TAP on one machine) makes the probe fire while the
/// peer is still taking in a 64 KB super-segment: spurious probes.
pub const PTO_SLACK: Duration = Duration::from_millis(2);

/// RFC 8985 §7.2 probe timeout: 2·SRTT, plus [`WC_DEL_ACK`] (or the
/// peer's `max_ack_delay` when known) when exactly one segment is in
/// flight, else plus [`PTO_SLACK`] (as Linux); 1 s without an RTT
/// sample; never later than the RTO would fire (`rto`, the time left on
/// the retransmission timer).
pub fn probe_timeout(
    srtt: Option<Duration>,
    segments_in_flight: usize,
    max_ack_delay: Duration,
    rto: Duration,
) -> Duration {
    let pto = match srtt {
        Some(s) => {
            let mut p = s.as_nanos().saturating_mul(2);
            p = p.saturating_add(if segments_in_flight == 1 {
                max_ack_delay.as_nanos()
            } else {
                PTO_SLACK.as_nanos()
            });
            Duration::from_nanos(p)
        }
        None => Duration::from_secs(1),
    };
    pto.min(rto)
}

/// The probe to send when the PTO fires (RFC 8985 §7.3): a new segment
/// if the application has data the receive window allows (`new_data`),
/// else a retransmission of the highest-sequence segment in flight.
pub fn probe_segment(sb: &Scoreboard, new_data: u32) -> Option<NextSeg> {
    if new_data > 0 && sb.has_room() {
        return Some(NextSeg::new(
            Rule::New,
            sb.snd_nxt(),
            new_data.min(sb.smss()),
        ));
    }
    sb.segments()
        .last()
        .map(|s| NextSeg::new(Rule::Lost, s.start, s.len))
}

/// What an ACK says about an outstanding tail loss probe
/// (RFC 8985 §7.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlpVerdict {
    /// Nothing decided yet (or no probe outstanding).
    Pending,
    /// The probe was unnecessary: it was new data, or a D-SACK shows the
    /// retransmitted probe duplicated a segment that had arrived. No
    /// congestion response.
    NoLoss,
    /// The retransmitted probe repaired a loss (the ACK covers it with no
    /// D-SACK): the caller applies the congestion response of a fast
    /// recovery (§7.4.2).
    LossRepaired,
}

/// The TLP state of one connection (RFC 8985 §7.1): whether a probe is
/// outstanding, and for which octets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tlp {
    /// TLP.end_seq: `SND.NXT` when the probe was sent.
    end_seq: Option<SeqNumber>,
    /// TLP.is_retrans: the probe was a retransmission.
    is_retrans: bool,
}

impl Tlp {
    /// No probe outstanding.
    pub fn new() -> Self {
        Tlp::default()
    }

    /// Whether a probe is outstanding.
    pub fn outstanding(&self) -> bool {
        self.end_seq.is_some()
    }

    /// Whether the PTO may be armed (RFC 8985 §7.2): data is in flight
    /// and no probe is outstanding.
    ///
    /// Unlike RFC 8985 §7.2 (and Linux, whose probe needs `TCP_CA_Open`),
    /// a probe may also go in loss recovery: there the PTO is restarted by
    /// every ACK that delivers data ([`Tcb`]'s ACK processing), so it
    /// fires only once the ACK clock has stopped — the retransmission
    /// and everything after it sent, and every ACK since lost. RACK has
    /// no later delivery to judge the retransmission by (§6.2), and
    /// without the probe the 200 ms RTO is the only way out, then
    /// restarting at one segment: at 5 % loss each way with a flight of
    /// a few segments that was most of a transfer's time (issue 28, item
    /// 1; docs/design.md "Under loss"). At most one probe per recovery
    /// phase: the probe's `end_seq` is at or beyond RecoveryPoint, so it
    /// is cleared only once recovery is over. `in_recovery` is kept for
    /// the callers' sake and no longer decides.
    ///
    /// [`Tcb`]: super::tcb::Tcb
    pub fn may_arm(&self, sb: &Scoreboard, in_recovery: bool) -> bool {
        let _ = in_recovery;
        !sb.is_empty() && self.end_seq.is_none()
    }

    /// A probe was sent (RFC 8985 §7.3): remembers `SND.NXT` after it and
    /// whether it was a retransmission.
    pub fn on_probe_sent(&mut self, probe: NextSeg, snd_nxt: SeqNumber) {
        self.end_seq = Some(snd_nxt);
        self.is_retrans = probe.is_retransmission();
    }

    /// RFC 8985 §7.4.2 on an ACK already applied to the scoreboard
    /// (`snd_una` after it).
    pub fn on_ack(&mut self, ack: &AckOutcome, snd_una: SeqNumber) -> TlpVerdict {
        let Some(end) = self.end_seq else {
            return TlpVerdict::Pending;
        };
        if !self.is_retrans {
            // A new-data probe: RACK detects any loss it reveals.
            if snd_una.ge(end) {
                self.end_seq = None;
                return TlpVerdict::NoLoss;
            }
            return TlpVerdict::Pending;
        }
        if ack.dsack.is_some_and(|d| d.right == end) {
            self.end_seq = None;
            return TlpVerdict::NoLoss;
        }
        if snd_una.gt(end) || (snd_una == end && ack.cum_advanced && ack.dsack.is_none()) {
            self.end_seq = None;
            return TlpVerdict::LossRepaired;
        }
        TlpVerdict::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::sack_scoreboard::testing::*;
    use crate::tcp::sack_scoreboard::SackBlock;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn at(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    #[test]
    fn marks_lost_after_reordering_window() {
        // Segments 0 and 1 sent at 0 ms and 10 ms; segment 1 SACKed at
        // 110 ms (RACK.rtt = 100 ms). With reordering seen and min_RTT
        // 100 ms, reo_wnd = 25 ms: segment 0 is lost at 0+100+25 = 125 ms.
        let mut sb = Scoreboard::new(8, MSS, s(0));
        sb.on_send(s(0), MSS, at(0)).unwrap();
        sb.on_send(s(1000), MSS, at(10)).unwrap();
        let mut rack = Rack::new();
        rack.on_rtt_sample(ms(100));
        rack.reordering_seen = true;
        let ack = sb.on_ack(s(0), &[SackBlock::new(s(1000), s(2000))], at(110));
        rack.on_ack(&ack, sb.high_ack(), sb.snd_nxt(), at(110));
        assert_eq!(rack.newest_delivered(), Some((at(10), s(2000))));
        assert_eq!(rack.rtt(), ms(100));
        let reo = rack.reo_wnd(&sb, false, Some(ms(100)));
        assert_eq!(reo, ms(25));
        let (n, timer) = rack.detect_loss(&mut sb, reo, at(110));
        assert_eq!((n, timer), (0, Some(at(125))));
        assert!(!sb.is_lost(s(0)));
        let (n, timer) = rack.detect_loss(&mut sb, reo, at(125));
        assert_eq!((n, timer), (1, None));
        assert!(sb.is_lost(s(0)));
        assert_eq!(sb.next_seg(0, None), lost(0));
    }

    #[test]
    fn reo_wnd_zero_until_reordering_when_dupthresh_sacked() {
        let mut sb = sent(5, at(0));
        let mut rack = Rack::new();
        rack.on_rtt_sample(ms(40));
        assert_eq!(rack.reo_wnd(&sb, false, Some(ms(50))), ms(10));
        assert_eq!(rack.reo_wnd(&sb, true, Some(ms(50))), Duration::ZERO);
        sb.on_ack(s(0), &[SackBlock::new(s(1000), s(4000))], at(1));
        assert_eq!(rack.reo_wnd(&sb, false, Some(ms(50))), Duration::ZERO);
    }

    #[test]
    fn dsack_widens_once_per_round_and_decays() {
        let mut sb = sent(4, at(0));
        let mut rack = Rack::new();
        rack.on_rtt_sample(ms(40));
        rack.reordering_seen = true;
        let ack = sb.on_ack(s(2000), &[SackBlock::new(s(0), s(1000))], at(1));
        assert!(ack.dsack.is_some());
        rack.on_ack(&ack, sb.high_ack(), sb.snd_nxt(), at(1));
        assert_eq!(rack.reo_wnd_mult(), 2);
        // A second D-SACK in the same round does not widen further.
        let ack = sb.on_ack(s(2000), &[SackBlock::new(s(1000), s(2000))], at(2));
        rack.on_ack(&ack, sb.high_ack(), sb.snd_nxt(), at(2));
        assert_eq!(rack.reo_wnd_mult(), 2);
        assert_eq!(rack.reo_wnd(&sb, false, Some(ms(100))), ms(20));
        // Bounded by SRTT.
        assert_eq!(rack.reo_wnd(&sb, false, Some(ms(15))), ms(15));
        // After the round (SND.UNA passes 4000) a new D-SACK widens again.
        let ack = sb.on_ack(s(4000), &[SackBlock::new(s(0), s(1000))], at(3));
        rack.on_ack(&ack, sb.high_ack(), sb.snd_nxt(), at(3));
        assert_eq!(rack.reo_wnd_mult(), 3);
        for _ in 0..REO_WND_PERSIST {
            rack.on_recovery_exit();
        }
        assert_eq!(rack.reo_wnd_mult(), 1);
    }

    #[test]
    fn tlp_timer_values() {
        let rto = Duration::from_secs(1);
        // 2·SRTT + Linux's 2 ms with several segments in flight.
        assert_eq!(probe_timeout(Some(ms(50)), 3, WC_DEL_ACK, rto), ms(102));
        let us = Duration::from_micros;
        assert_eq!(probe_timeout(Some(us(40)), 3, WC_DEL_ACK, rto), us(2080));
        // + WCDelAckT with one segment in flight.
        assert_eq!(probe_timeout(Some(ms(50)), 1, WC_DEL_ACK, rto), ms(300));
        // 1 s without an RTT sample, but never beyond the RTO.
        assert_eq!(probe_timeout(None, 2, WC_DEL_ACK, ms(800)), ms(800));
        assert_eq!(probe_timeout(None, 2, WC_DEL_ACK, ms(3000)), ms(1000));
        assert_eq!(probe_timeout(Some(ms(400)), 1, WC_DEL_ACK, rto), rto);
    }

    #[test]
    fn tlp_probe_choice() {
        let mut sb = Scoreboard::new(8, MSS, s(0));
        sb.on_send(s(0), MSS, at(0)).unwrap();
        sb.on_send(s(1000), 500, at(0)).unwrap();
        assert_eq!(probe_segment(&sb, 3000), new_data(1500));
        assert_eq!(
            probe_segment(&sb, 0),
            Some(NextSeg::new(Rule::Lost, s(1000), 500))
        );
        let empty = Scoreboard::new(8, MSS, s(0));
        assert_eq!(probe_segment(&empty, 0), None);
    }

    #[test]
    fn tlp_loss_verdicts() {
        // A retransmitted probe of the last segment, then an ACK of it
        // without D-SACK: the probe repaired a loss.
        let mut sb = sent(3, at(0));
        let mut tlp = Tlp::new();
        // In recovery too (issue 28: the PTO there fires only once the
        // ACK clock has stopped).
        assert!(tlp.may_arm(&sb, false) && tlp.may_arm(&sb, true));
        let probe = probe_segment(&sb, 0).unwrap();
        tlp.on_probe_sent(probe, sb.snd_nxt());
        assert!(!tlp.may_arm(&sb, false), "one probe at a time");
        let ack = sb.on_ack(s(3000), &[], at(10));
        assert_eq!(tlp.on_ack(&ack, sb.high_ack()), TlpVerdict::LossRepaired);
        // The same, but the ACK carries a D-SACK of the probe: no loss.
        let mut sb = sent(3, at(0));
        tlp.on_probe_sent(probe, sb.snd_nxt());
        let ack = sb.on_ack(s(3000), &[SackBlock::new(s(2000), s(3000))], at(10));
        assert_eq!(tlp.on_ack(&ack, sb.high_ack()), TlpVerdict::NoLoss);
        // A new-data probe is resolved by its ACK, without a verdict.
        let mut sb = sent(3, at(0));
        let probe = probe_segment(&sb, MSS).unwrap();
        sb.on_send(probe.start, probe.len, at(1)).unwrap();
        tlp.on_probe_sent(probe, sb.snd_nxt());
        let ack = sb.on_ack(s(2000), &[], at(10));
        assert_eq!(tlp.on_ack(&ack, sb.high_ack()), TlpVerdict::Pending);
        let ack = sb.on_ack(s(4000), &[], at(11));
        assert_eq!(tlp.on_ack(&ack, sb.high_ack()), TlpVerdict::NoLoss);
    }

    #[test]
    fn detects_a_lost_retransmission() {
        use crate::tcp::congestion::{CcConfig, NewReno};
        use crate::tcp::recovery::Recovery;
        let mut cc = NewReno::new(CcConfig {
            smss: MSS,
            initial_window_segments: 10,
        });
        let mut sb = sent(4, at(0));
        let mut r = Recovery::new();
        let mut rack = Rack::new();
        rack.on_rtt_sample(ms(100));
        // Segment 0 lost; 1..4 SACKed at 100 ms: recovery, fast rexmit.
        let sack = [SackBlock::new(s(1000), s(4000))];
        let ev = r.on_ack(&mut sb, &mut cc, s(0), &sack, Some(ms(100)), at(100));
        rack.on_ack(&ev.ack, sb.high_ack(), sb.snd_nxt(), at(100));
        assert!(ev.entered);
        let fr = r.next_to_send(&sb, &cc, MSS).unwrap();
        assert_eq!(fr, NextSeg::new(Rule::Lost, s(0), MSS));
        r.on_sent(&mut sb, fr, at(100)).unwrap();
        // New data at 101 ms, SACKed at 201 ms; the retransmission is not
        // acknowledged. Nothing SACK-based can tell: it was retransmitted.
        let n = r.next_to_send(&sb, &cc, MSS).unwrap();
        assert_eq!(n, NextSeg::new(Rule::New, s(4000), MSS));
        r.on_sent(&mut sb, n, at(101)).unwrap();
        let sack = [SackBlock::new(s(1000), s(5000))];
        let ev = r.on_ack(&mut sb, &mut cc, s(0), &sack, Some(ms(100)), at(201));
        rack.on_ack(&ev.ack, sb.high_ack(), sb.snd_nxt(), at(201));
        assert_eq!(r.next_to_send(&sb, &cc, 0), None);
        // RACK: sent before RACK.xmit_ts (101 ms) and 100 ms + reo_wnd (0
        // in recovery without reordering) ago: lost again.
        let reo = rack.reo_wnd(&sb, r.in_recovery(), Some(ms(100)));
        assert_eq!(reo, Duration::ZERO);
        assert_eq!(rack.detect_loss(&mut sb, reo, at(201)), (1, None));
        assert_eq!(
            r.next_to_send(&sb, &cc, 0),
            Some(NextSeg::new(Rule::Lost, s(0), MSS))
        );
    }
}
