//! Header prediction (Van Jacobson's, in 4.3BSD-Reno and every BSD TCP
//! since; Linux's `tcp_rcv_established` fast path): on an established
//! connection most segments are the next one expected, carry only ACK (and
//! PSH), the same window and fresh timestamps, and either acknowledge new
//! data or bring new data in order. For those, most of SEGMENT ARRIVES
//! (RFC 9293 §3.10.7.4) cannot change anything: the sequence number is
//! RCV.NXT, so it is acceptable and nothing is trimmed; there is no RST,
//! SYN, URG or FIN to look at; and while nothing is SACKed, lost or
//! retransmitted, no recovery is under way and no probe is out, the SACK
//! scoreboard, RFC 6675 recovery, RACK's loss detection and the tail loss
//! probe's verdict all come out as "nothing". The seed (Mosberger et al.,
//! TR 95-02, §2.6) makes the same point of the work a loss-free LAN
//! connection never needs (the congestion window arithmetic there).
//!
//! [`Tcb::predicted`] recognises those segments and does only what the
//! general processing would change for them, in the same order, so the
//! state afterwards is exactly the general path's (the differential test
//! in `predict_tests.rs` drives both and compares everything). Every other
//! segment goes the general way, unchanged.
//!
//! The two predicted cases, as BSD's `tcp_input` names them:
//!
//! - a pure ACK that advances SND.UNA (the sender's side of a transfer);
//! - in-order data whose ACK is within [SND.UNA, SND.NXT] (the receiver's
//!   side; unlike BSD, the ACK may also advance, as in a request/response
//!   exchange where every segment carries both — Linux takes those on its
//!   fast path too).
//!
//! The connection stage asks before it parses (issue 26 item 4): a
//! segment whose header has the predicted shape (ACK or ACK|PSH, no
//! options or NOP NOP TS alone) is read from fixed offsets in place
//! ([`TcpPredicted`], checksum verified) and offered to
//! [`Tcb::on_predicted_segment`]; only a segment of another shape, or one
//! prediction declines, is parsed into a `TcpRepr` for
//! [`on_segment`](Tcb::on_segment), which asks the same question of its
//! fields first.

use super::Tcb;
use crate::tcp::congestion::CongestionControl;
use crate::tcp::sack_scoreboard::CleanAck;
use crate::tcp::seq::SeqNumber;
use crate::tcp::state::State;
use crate::tcp::timers::Timer;
use crate::wire::tcp::TcpFlags;
use crate::wire::tcp_predicted::TcpPredicted;
use pathstack_core::time::Instant;

/// ACK, with or without PSH: the only control bits a predicted segment
/// carries (BSD's `(tiflags & (TH_SYN|TH_FIN|TH_RST|TH_URG|TH_ACK)) ==
/// TH_ACK`).
const PREDICTED_FLAGS: u8 = TcpFlags::ACK.bits();

impl Tcb {
    /// Header prediction: takes `seg` on the short path and returns true
    /// if it is one of the predicted cases (see the module docs); returns
    /// false, having changed nothing, for every other segment, which the
    /// caller then processes in full.
    #[inline(always)]
    pub(super) fn predicted(&mut self, now: Instant, seg: &TcpPredicted, payload: &[u8]) -> bool {
        if self.state != State::Established
            || seg.flags.bits() & !TcpFlags::PSH.bits() != PREDICTED_FLAGS
        {
            return false;
        }
        // The next segment expected, no FIN of the peer's seen (RCV.NXT
        // then counts it), the window as it was.
        let seq = SeqNumber(seg.seq);
        if seq != self.rcv.rcv_nxt()
            || self.fin_in.is_some()
            || (u32::from(seg.window) << self.snd_shift) != self.snd_wnd
        {
            return false;
        }
        // Timestamps as negotiated and not older than TS.Recent (so PAWS,
        // RFC 7323 §5.3 R1, passes); no SACK blocks.
        let tsval = match (self.ts_ok, seg.timestamps) {
            (true, Some((v, _))) if !super::input::ts_before(v, self.ts_recent) => Some(v),
            (true, _) => return false,
            (false, _) => None,
        };
        if seg.sack {
            return false;
        }
        // SND.UNA =< SEG.ACK =< SND.NXT; a pure ACK must advance SND.UNA
        // (one that does not is a duplicate ACK or a window probe's
        // answer: the general path counts it).
        let ack = SeqNumber(seg.ack);
        let una = self.sb.high_ack();
        if ack.lt(una) || ack.gt(self.sb.snd_nxt()) || (payload.is_empty() && ack == una) {
            return false;
        }
        // Nothing SACKed, lost or retransmitted, no recovery and no
        // duplicate ACKs counted, no probe outstanding: the loss-recovery
        // machinery has nothing to do with an ACK (see `on_predicted_ack`).
        if !self.sb.is_clean()
            || !self.recovery.is_open()
            || self.dup_acks != 0
            || self.tlp.outstanding()
        {
            return false;
        }
        // In-order data that fits the window whole, with nothing queued
        // out of order and the reading side open: appended as it is.
        if !payload.is_empty() {
            let rcv_nxt = self.rcv.rcv_nxt();
            let wnd = self.rcv.advertised_right_edge().max(rcv_nxt) - rcv_nxt;
            if self.read_shut || self.rcv.ooo_bytes() != 0 || payload.len() as u64 > u64::from(wnd)
            {
                return false;
            }
        }

        // The scoreboard takes an ACK of new data first: it checks what
        // it relies on again and may still decline, having changed
        // nothing (it never does after the checks above).
        let acked = if ack == una {
            None
        } else {
            match self.sb.on_clean_ack(ack) {
                Some(c) => Some(c),
                None => return false,
            }
        };

        // RFC 7323 §4.3: TS.Recent from a segment covering Last.ACK.sent.
        if let Some(v) = tsval {
            if seq.le(self.last_ack_sent) {
                self.ts_recent = v;
                self.ts_recent_at = now;
            }
        }
        self.on_predicted_ack(now, ack, acked);
        // Window update (RFC 9293 §3.10.7.4): the window is unchanged,
        // SND.WL1 and SND.WL2 move as the general rule has them move.
        if self.snd_wl1.lt(seq) || (self.snd_wl1 == seq && self.snd_wl2.le(ack)) {
            self.snd_wl1 = seq;
            self.snd_wl2 = ack;
            if self.snd_wnd > 0 {
                self.timers.set(Timer::Persist, None);
                self.persist_backoff = 0;
            }
        }
        if payload.is_empty() {
            self.stats.predicted_acks += 1;
        } else {
            self.stats.predicted_data += 1;
            let n = self.rcv.append_predicted(payload);
            self.stats.bytes_received += n as u64;
            self.schedule_ack_for(now, n);
        }
        if let Some(k) = self.cfg.keepalive {
            self.timers.set(Timer::Keepalive, Some(now + k.idle.into()));
            self.keepalive_sent = 0;
        }
        true
    }

    /// Header prediction for a segment read in place from the wire
    /// ([`TcpPredicted::parse_received`]): what
    /// [`on_segment`](Self::on_segment) does for it when it is one of the
    /// predicted cases, returning true; false, having changed nothing,
    /// otherwise, and the caller parses it in full and hands it to
    /// `on_segment`. The segment's path then never builds a `TcpRepr`.
    #[inline]
    pub fn on_predicted_segment(
        &mut self,
        now: Instant,
        seg: &TcpPredicted,
        payload: &[u8],
    ) -> bool {
        if self.short_paths() && self.predicted(now, seg, payload) {
            self.stats.segs_in += 1;
            return true;
        }
        false
    }

    /// The fifth check (`on_ack`) for a predicted segment, whose ACK
    /// `ack` is within [SND.UNA, SND.NXT], on a clean scoreboard with
    /// recovery open and no probe outstanding. What the general path does
    /// that is skipped here, and why it would change nothing:
    ///
    /// - RFC 6675 recovery (`Recovery::on_ack`): no D-SACK to undo with;
    ///   no duplicate ACK (nothing newly SACKed); no entry, since DupAcks
    ///   is 0 and IsLost(HighACK) needs SACKed data or a lost mark.
    /// - RACK's loss detection (RFC 8985 §6.2 step 5): a clean scoreboard
    ///   holds only segments sent as new data, in sequence order, after
    ///   every segment ever delivered (a retransmission or a SACK makes it
    ///   unclean until all is acknowledged), so none was sent before
    ///   RACK.xmit_ts: nothing is marked and no reordering timer is set.
    /// - The tail loss probe's verdict (RFC 8985 §7.4): no probe is
    ///   outstanding.
    /// - The window update is the caller's; the FIN is never acknowledged
    ///   in ESTABLISHED (ours is queued only on leaving it).
    ///
    /// `acked` is what the scoreboard made of an ACK of new data (it has
    /// taken it already), `None` for data with the ACK unchanged.
    #[inline(always)]
    fn on_predicted_ack(&mut self, now: Instant, ack: SeqNumber, acked: Option<CleanAck>) {
        let Some(out) = acked else {
            // Data with the ACK unchanged: RACK sees an ACK that delivers
            // nothing (its D-SACK round may still end); the probe timer
            // runs on, as for any ACK that acknowledges nothing new
            // (`input.rs`, RFC 8985 §7.2).
            if self.cfg.rack {
                self.rack.on_clean_ack(None, false, self.sb.high_ack(), now);
                self.timers.set(Timer::Reo, None);
            }
            return;
        };
        // RFC 6675 §5 outside recovery: the congestion controller sees
        // the new data acknowledged, with the SRTT before this ACK's
        // sample.
        // (On a clean scoreboard FlightSize is SND.NXT − SND.UNA: before
        // this ACK, what it acknowledged and what is left.)
        // The controller's own test (`on_ack_with_flight`: the window
        // grows only while used) asked here first, so that an ACK of an
        // application-limited flight (every ACK of a request/response
        // exchange) reads no SRTT and calls no controller.
        let flight_before = out.newly_acked + self.sb.flight_size();
        if self.cc.cwnd() < flight_before.saturating_mul(2) {
            let srtt = self.rto.srtt();
            self.cc
                .on_ack_with_flight(out.newly_acked, flight_before, srtt, now);
        }
        self.snd.ack_predicted(ack - self.snd.una());
        self.stats.bytes_acked += u64::from(out.newly_acked);
        self.rtx_count = 0;
        self.persist_backoff = 0;
        if self.sb.is_empty() {
            // Everything outstanding acknowledged (a request/response
            // exchange's every ACK): RFC 6298 §5.2 stops the timer, no
            // reordering can be pending, and no probe may be armed with
            // nothing in flight (`Tlp::may_arm`): the three timers stop
            // together, and the PTO is not computed to be thrown away.
            self.rtt_and_rack(now, out);
            self.timers.stop(&[Timer::Rtx, Timer::Reo, Timer::Tlp]);
            return;
        }
        // RFC 6298 §5.3: restart the timer on new data ACKed.
        self.timers.set(Timer::Rtx, Some(now + self.rto.rto()));
        self.rtt_and_rack(now, out);
        if self.cfg.rack {
            self.timers.set(Timer::Reo, None);
        }
        self.timers.set(Timer::Tlp, None);
        // RFC 8985 §7.2: an ACK of new data restarts the PTO.
        self.arm_tlp(now);
    }

    /// The RTT sample of a predicted ACK of new data and RACK's update
    /// (RFC 8985 §6.2 steps 1–4): the newest segment it delivered was
    /// never retransmitted, an unambiguous sample (Karn), taken once for
    /// the estimator (RFC 6298 §2.3) and for RACK.
    #[inline(always)]
    fn rtt_and_rack(&mut self, now: Instant, out: CleanAck) {
        match out.newest {
            Some(d) => {
                let rtt = now.saturating_since(d.sent_at);
                self.rto.on_sample(rtt);
                let una = self.sb.high_ack();
                self.rack
                    .on_predicted_sample(d, rtt, self.cfg.rack, out.reordering, una);
            }
            None if self.cfg.rack => {
                self.rack
                    .on_clean_ack(None, out.reordering, self.sb.high_ack(), now);
            }
            None => {}
        }
    }
}
