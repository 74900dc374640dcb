//! Building the segments to send (RFC 9293 §3.8: what the windows allow,
//! Nagle, the options every segment carries), in the order of urgency:
//! a reset, the SYN, data and retransmissions (RFC 6675 NextSeg, RACK-TLP
//! probes), window and keepalive probes, and a bare ACK.
//!
//! With segmentation offload ([`TcpOffload`](crate::tcp::TcpOffload)), new
//! data goes down in super-segments: whole MSS-sized segments, as many as
//! the send window, the congestion window (less the pipe), the scoreboard,
//! the device's limit and half the congestion window (Linux's
//! `tcp_cwnd_test` quota, `tso_len`) allow, handed over as one
//! [`OutSegment`] with [`OutSegment::gso_size`] set; the device cuts it up
//! (Linux's `tcp_tso_autosize` without the pacing-rate term). The
//! scoreboard still records one entry per MSS-sized segment, because that
//! is what the receiver sees and SACKs: loss recovery, RACK and RTT
//! sampling work on those wire segments exactly as without offload. Lost
//! segments that NextSeg would retransmit one after another go as one
//! super-segment too (`retransmission_len`), recorded segment by segment.
//! A sub-MSS tail still waits for Nagle. A FIN queued behind the data
//! rides on the segment or super-segment that ends it, as on Linux
//! (`fin_rides`).

use super::due::Due;
use super::Tcb;
use crate::tcp::congestion::{idle_restart_due, CongestionControl};
use crate::tcp::rack;
use crate::tcp::recovery::Recovery;
use crate::tcp::sack_scoreboard::{NextSeg, Rule};
use crate::tcp::seq::SeqNumber;
use crate::tcp::state::State;
use crate::tcp::timers::Timer;
use crate::wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
use pathstack_core::time::Instant;

/// Segments one [`Tcb::poll_output`] produces at most; the rest follow on
/// the next call (the next ACK), so a burst stays within the stack's
/// bounded follow-up list.
pub const MAX_BURST: usize = 64;

/// A segment to send: its header fields and its payload, in at most two
/// pieces (the send ring may wrap).
#[derive(Clone, Copy, Debug)]
pub struct OutSegment<'a> {
    /// The header (the checksum is the stage's, over its IP addresses).
    pub repr: TcpRepr,
    /// The data, first piece.
    pub payload: &'a [u8],
    /// The data, second piece (empty unless the ring wrapped).
    pub payload2: &'a [u8],
    /// A super-segment for the device to cut into segments of this many
    /// data octets (segmentation offload); 0 for an ordinary segment.
    pub gso_size: u16,
}

impl OutSegment<'_> {
    /// Data octets.
    pub fn payload_len(&self) -> usize {
        self.payload.len() + self.payload2.len()
    }
}

impl Tcb {
    /// Hands every segment due now to `emit`, which returns `false` when it
    /// could not send (no buffer): what was not sent is tried again on the
    /// next call. Returns the number of segments sent.
    #[inline]
    pub fn poll_output(
        &mut self,
        now: Instant,
        emit: &mut dyn FnMut(OutSegment<'_>) -> bool,
    ) -> usize {
        if self.poll_quiet(now) {
            return 0;
        }
        self.poll_output_due(now, emit)
    }

    /// The check half of [`poll_output`](Self::poll_output) (the seed's
    /// split of `tcp_output`, TR 95-02 §2.6): when there is nothing at all
    /// to send, does what `poll_output` would (its timer upkeep) and
    /// returns true; otherwise returns false having changed nothing, and
    /// [`poll_output_due`](Self::poll_output_due) sends. A caller that
    /// must prepare to send (the stage: its emission closure) asks this
    /// first, and prepares only when there is something.
    #[inline]
    pub fn poll_quiet(&mut self, now: Instant) -> bool {
        // Asked after every segment and every application call, and most
        // often there is nothing at all to send: no reset, no SYN (not in
        // a handshake state), no probe and no ACK due, and nothing for
        // `send_data` (see `nothing_to_send`). Then only its timer upkeep
        // runs, the work of the full call with nothing to send.
        // (No reset, ACK or probe due: one test of the word, `due.rs`.)
        if !self.due.any_of(Due::SEGMENT) && self.sends_data() && self.nothing_to_send() {
            self.before_sending(now);
            // `after_sending(now, 0)`, whose two cases — data in flight
            // without a retransmission timer, a closed window — are asked
            // here first: out of line it is a call on every quiet poll.
            if !self.sb.is_empty() || self.snd_wnd == 0 || self.sb.snd_nxt().lt(self.snd.end()) {
                self.after_sending(now, 0);
            }
            return true;
        }
        false
    }

    /// After a predicted segment (`predict.rs`), whether the flush would
    /// find nothing to do at all: [`poll_quiet`](Self::poll_quiet) would
    /// answer true having changed nothing (issue 26 item 4). The usual
    /// case of a request/response exchange: the segment acknowledged all
    /// in flight, nothing is unsent, no ACK is due now (the answer carries
    /// it, or the delayed-ACK timer does), and the window restart after
    /// idle (RFC 5681 §4.1) is not due. Conservative: false sends the
    /// caller the long way, which is always right.
    #[inline(always)]
    pub fn predicted_quiet(&self, now: Instant) -> bool {
        // `poll_quiet`'s own tests, with what the prediction settled:
        // ESTABLISHED (so `sends_data`), `short_paths`, a clean scoreboard
        // and recovery open. Nothing in flight and nothing unsent make
        // `new_data` 0 and `after_sending(now, 0)` unneeded (its cases
        // need data in flight, a closed window or unsent data).
        self.state == State::Established
            && self.sb.is_empty()
            && !self.due.any_of(Due::SEGMENT)
            && !self.due.has(Due::TLP)
            && self.snd_wnd != 0
            && !self.sb.snd_nxt().lt(self.snd.end())
            && self.sb.is_clean()
            && self.recovery.is_open()
            && self.short_paths()
            && !(self.cfg.slow_start_after_idle
                && idle_restart_due(self.last_send, now, self.rto.rto()))
    }

    /// [`poll_output`](Self::poll_output) in full, for a caller that has
    /// asked [`poll_quiet`](Self::poll_quiet) (called without, it is
    /// still `poll_output`, the long way when nothing is due).
    #[inline(never)]
    pub fn poll_output_due(
        &mut self,
        now: Instant,
        emit: &mut dyn FnMut(OutSegment<'_>) -> bool,
    ) -> usize {
        let mut sent = 0;
        if let Some(&r) = self.rst_out.as_deref() {
            let mut r = r;
            if let Some((_, ecr)) = r.options.timestamps {
                // An abort's reset (`abort`): TSval of the moment it goes.
                r.options.timestamps = Some((self.ts_now(now), ecr));
            }
            if !emit(OutSegment {
                repr: r,
                payload: &[],
                payload2: &[],
                gso_size: 0,
            }) {
                return 0;
            }
            self.set_rst(None);
            self.stats.segs_out += 1;
            sent += 1;
        }
        match self.state {
            State::Closed | State::Listen => return sent,
            State::SynSent | State::SynReceived => {
                if self.due.has(Due::SYN) {
                    let r = self.syn_repr(now);
                    if !emit(OutSegment {
                        repr: r,
                        payload: &[],
                        payload2: &[],
                        gso_size: 0,
                    }) {
                        return sent;
                    }
                    self.due.clear(Due::SYN);
                    self.stats.segs_out += 1;
                    if self.syn_sent_at.is_none() {
                        self.syn_sent_at = Some(now);
                    }
                    self.timers.set(Timer::Rtx, Some(now + self.rto.rto()));
                    self.after_ack_sent();
                    sent += 1;
                }
                return sent;
            }
            _ => {}
        }
        if self.sends_data() {
            sent += self.send_data(now, emit);
        }
        if self.due.any_of(Due::WINDOW_PROBE | Due::KEEPALIVE) {
            // A segment below SND.UNA makes the peer answer with its
            // window (Linux's `tcp_xmit_probe_skb`; RFC 9293 §3.8.6.1
            // allows either form of probe).
            let r = self.ack_repr(now, self.sb.high_ack() - 1, TcpFlags::ACK, 0);
            if emit(OutSegment {
                repr: r,
                payload: &[],
                payload2: &[],
                gso_size: 0,
            }) {
                if self.due.has(Due::WINDOW_PROBE) {
                    self.stats.rare().window_probes += 1;
                } else {
                    self.stats.rare().keepalive_probes += 1;
                }
                self.due.clear(Due::WINDOW_PROBE | Due::KEEPALIVE);
                self.stats.segs_out += 1;
                sent += 1;
            }
        }
        if self.due.has(Due::ACK) && self.state != State::Closed {
            let r = self.ack_repr(now, self.sb.snd_nxt(), TcpFlags::ACK, 0);
            if emit(OutSegment {
                repr: r,
                payload: &[],
                payload2: &[],
                gso_size: 0,
            }) {
                self.stats.segs_out += 1;
                self.after_ack_sent();
                sent += 1;
            }
        }
        sent
    }

    /// Octets beyond SND.NXT that may go now: queued (the FIN counts as
    /// one) and within the peer's window. A FIN alone goes even into a
    /// zero window.
    ///
    /// Sender silly-window avoidance (RFC 9293 §3.8.6.2.1, RFC 1122
    /// §4.2.3.4): data goes into the window only when all of it fits
    /// (case 2; Nagle, `nagle_holds`, decides about small segments with
    /// data in flight), a full segment fits (case 1), or at least half
    /// the largest window the peer has offered (case 3, Fs = 1/2);
    /// otherwise it waits for the window to open, or for the override
    /// timeout (case 4: the persist timer, `Due::SWS_OVERRIDE`), as
    /// Linux's `tcp_snd_wnd_test` holds a segment the window cuts and
    /// `tcp_write_wakeup` sends what fits when the probe timer runs out.
    /// Without it a 10-octet window took 10 octets of a 1,000-octet
    /// write and left the rest to Nagle (packetdrill
    /// `tcp-info-rwnd-limited`).
    fn new_data(&self) -> u32 {
        let nxt = self.sb.snd_nxt();
        let unsent = self.snd.end() - nxt.min(self.snd.end());
        if unsent == 0 {
            return 0;
        }
        let right = self.sb.high_ack() + self.snd_wnd;
        let room = if right.gt(nxt) { right - nxt } else { 0 };
        let data_unsent = self.snd.data_end() - nxt.min(self.snd.data_end());
        if data_unsent == 0 {
            return 1; // just the FIN
        }
        if room < data_unsent
            && room < self.smss
            && room < self.max_snd_wnd / 2
            && !self.due.has(Due::SWS_OVERRIDE)
        {
            return 0;
        }
        unsent.min(room)
    }

    /// Queued data waits for the peer's window: none may go now
    /// ([`new_data`](Self::new_data) is 0: the window is closed, or too
    /// small by silly-window avoidance), though some is unsent. What the
    /// persist timer is for (RFC 9293 §3.8.6.1, §3.8.6.2.1).
    pub(super) fn window_holds_data(&self) -> bool {
        self.sb.snd_nxt().lt(self.snd.end()) && self.new_data() == 0
    }

    /// The states that send data (and retransmit, and the FIN).
    fn sends_data(&self) -> bool {
        matches!(
            self.state,
            State::Established
                | State::CloseWait
                | State::FinWait1
                | State::Closing
                | State::LastAck
        )
    }

    /// The check half of output, apart from the sending half (the seed's
    /// split of `tcp_output`, TR 95-02 §2.6): most calls (after every
    /// application call and every segment) have nothing to send. With no
    /// new data the windows allow, no probe due, recovery open and a
    /// clean scoreboard, NextSeg has nothing (rules 1 and 3 need a SACKed,
    /// lost or retransmitted segment, rule 4 recovery, rule 2 new data),
    /// and this says so without asking it.
    #[inline]
    fn nothing_to_send(&self) -> bool {
        self.short_paths()
            && !self.due.has(Due::TLP)
            && self.sb.is_clean()
            && self.recovery.is_open()
            && self.new_data() == 0
    }

    /// Before sending: RFC 5681 §4.1, the window restarts after an idle
    /// period (unless `slow_start_after_idle` is off).
    #[inline]
    fn before_sending(&mut self, now: Instant) {
        if self.sb.is_empty()
            && self.cfg.slow_start_after_idle
            && idle_restart_due(self.last_send, now, self.rto.rto())
        {
            self.cc.on_idle_restart(now);
        }
    }

    /// After sending `sent` segments: the retransmission timer runs while
    /// data is in flight, the probe timeout is armed after sending, the
    /// persist timer while data waits for a closed window.
    #[inline]
    pub(super) fn after_sending(&mut self, now: Instant, sent: usize) {
        if !self.sb.is_empty() && self.timers.get(Timer::Rtx).is_none() {
            self.timers.set(Timer::Rtx, Some(now + self.rto.rto()));
        }
        // RFC 8985 §7.2: arm the probe timeout after sending.
        if sent > 0 {
            self.arm_tlp(now);
        }
        // The persist timer (RFC 9293 §3.8.6.1, and §3.8.6.2.1's override
        // timeout): data waits for a window that is closed or too small,
        // and nothing is in flight to bring an update. (Nothing in flight
        // first: it is rare while sending, and the rest is not free.)
        if self.sb.is_empty()
            && self.timers.get(Timer::Persist).is_none()
            && self.window_holds_data()
        {
            self.timers
                .set(Timer::Persist, Some(now + self.persist_interval()));
        }
    }

    /// [`after_sending`](Self::after_sending)`(now, 1)` after a predicted
    /// send that went out and is on the scoreboard, in line: data is in
    /// flight, so the retransmission timer runs (RFC 6298 §5.1) and the
    /// probe timeout is armed (RFC 8985 §7.2); the prediction asked for
    /// room in the send window, so it is open and the persist timer's
    /// case (a closed window, nothing in flight) cannot arise.
    ///
    /// `arm_tlp` with what the prediction settled: data is in flight and
    /// recovery is open (`predicted_send` asked `Recovery::is_open`, which
    /// excludes recovery), so of `Tlp::may_arm` only "no probe out" is
    /// left to ask; the retransmission timer is running, so the time left
    /// on it is read from the deadline just looked at (or set), and the
    /// RTO is computed once for both.
    #[inline(always)]
    pub(super) fn after_predicted_send(&mut self, now: Instant) {
        debug_assert!(!self.sb.is_empty() && self.snd_wnd > 0 && !self.recovery.in_recovery());
        let rtx = match self.timers.get(Timer::Rtx) {
            Some(at) => at,
            None => {
                let at = now + self.rto.rto();
                self.timers.set(Timer::Rtx, Some(at));
                at
            }
        };
        if self.cfg.rack && !self.tlp.outstanding() {
            let pto = rack::probe_timeout(
                self.rto.srtt(),
                self.sb.len(),
                rack::WC_DEL_ACK,
                rtx.saturating_since(now),
            );
            self.timers.set(Timer::Tlp, Some(now + pto));
        }
    }

    /// Data, FIN and retransmissions as the windows, RFC 6675 and RACK-TLP
    /// allow.
    fn send_data(&mut self, now: Instant, emit: &mut dyn FnMut(OutSegment<'_>) -> bool) -> usize {
        let mut sent = 0;
        // The previous segment was a super-segment the half-cwnd quota
        // cut short (`tso_len`): the next new data continues it.
        let mut quota_cut = false;
        self.before_sending(now);
        // The usual write of a quiet connection: one segment, sent and
        // recorded without the walk below (`predict_output.rs`).
        if let Some(seg) = self.predicted_send() {
            let sent = self.send_predicted(now, seg, emit);
            if sent == 1 {
                self.after_predicted_send(now);
            } else {
                self.after_sending(now, sent);
            }
            return sent;
        }
        while sent < MAX_BURST {
            if self.nothing_to_send() {
                break;
            }
            // New segments leave room for the SACK blocks they carry
            // (Linux's `tcp_current_mss`).
            let sack_len = match self.rcv.pending_sack_blocks() {
                0 => 0,
                n if self.sack_ok => 4 + 8 * n.min(if self.ts_ok { 3 } else { 4 }) as u32,
                _ => 0,
            };
            let cap = self.smss.saturating_sub(sack_len).max(self.smss / 2);
            let new_data = self.new_data().min(cap);
            let next = if self.due.has(Due::TLP) {
                self.due.clear(Due::TLP);
                match rack::probe_segment(&self.sb, new_data) {
                    Some(p) => {
                        self.stats.rare().tlp_probes += 1;
                        Some((p, true))
                    }
                    None => None,
                }
            } else if self.short_paths() && self.sb.is_clean() && self.recovery.is_open() {
                // Nothing lost: only new data to offer (see `next_new`).
                Recovery::next_new(&self.sb, &self.cc, new_data).map(|s| (s, false))
            } else {
                self.recovery
                    .next_to_send(&self.sb, &self.cc, new_data)
                    .map(|s| (s, false))
            };
            let Some((mut seg, probe)) = next.or_else(|| {
                self.limited_transmit(new_data)
                    .or_else(|| self.bare_fin(new_data))
                    .map(|s| (s, false))
            }) else {
                break;
            };
            if seg.rule == Rule::New && !probe && self.nagle_holds(seg, cap) {
                break;
            }
            let mut gso_size = 0;
            let continues_cut = quota_cut && seg.rule == Rule::New && !probe;
            quota_cut = false;
            if seg.rule == Rule::New && !probe && seg.len == cap {
                let (len, cut) = self.tso_len(cap);
                seg.len = len;
                quota_cut = cut;
                if seg.len > cap {
                    gso_size = cap as u16;
                }
                seg.len += self.fin_rides(seg);
            } else if seg.rule == Rule::Lost && !probe && seg.len == cap {
                seg.len = self.retransmission_len(seg);
                if seg.len > cap {
                    gso_size = cap as u16;
                }
            }
            if !self.emit_range(now, seg, gso_size, continues_cut, emit) {
                break;
            }
            if seg.rule == Rule::New && !probe && seg.len < cap {
                self.snd_sml = seg.start + seg.len;
            }
            if probe {
                self.tlp
                    .on_probe_sent(seg, self.sb.snd_nxt().max(seg.start + seg.len));
            }
            // A super-segment goes on the scoreboard as the segments the
            // device makes of it (see the module docs).
            if !self.record_sent(now, seg, gso_size) {
                break;
            }
            if seg.is_retransmission() {
                // Wire segments: a super-segment counts as what it becomes.
                let n = if gso_size == 0 {
                    1
                } else {
                    u64::from(seg.len.div_ceil(u32::from(gso_size)))
                };
                let rare = self.stats.rare();
                rare.retrans_segs += n;
                rare.timeout_retrans_segs += n * u64::from(!probe && !self.recovery.in_recovery());
            }
            sent += 1;
        }
        // The override is for this output only (RFC 9293 §3.8.6.2.1 (4)).
        self.due.clear(Due::SWS_OVERRIDE);
        self.after_sending(now, sent);
        sent
    }

    /// RFC 3042 limited transmit on a connection without SACK: on each of
    /// the first two duplicate ACKs a segment of new data, if the peer's
    /// window allows it and FlightSize stays within cwnd plus the
    /// duplicates' segments ("the amount of outstanding data would remain
    /// less than or equal to the congestion window plus 2*SMSS bytes",
    /// RFC 3042 §2; RFC 5681 §3.2 step 1 SHOULD). With SACK, RFC 6675's
    /// pipe does it: the SACKed segments leave the pipe, which frees the
    /// room. Without it nothing freed the room, so a lone loss in a window
    /// waited for the third duplicate or the tail-loss probe (packetdrill
    /// `limited-transmit-no-sack`, Linux's `tcp_add_reno_sack`).
    fn limited_transmit(&self, new_data: u32) -> Option<NextSeg> {
        if self.sack_ok
            || !(1..=2).contains(&self.dup_acks)
            || self.recovery.in_recovery()
            || new_data == 0
            || !self.sb.has_room()
        {
            return None;
        }
        let len = new_data.min(self.smss);
        let allowed = self.cc.cwnd() + self.dup_acks * self.smss;
        (self.sb.flight_size() + len <= allowed)
            .then(|| NextSeg::new(Rule::New, self.sb.snd_nxt(), len))
    }

    /// The FIN alone, when it is all that is left to send and the
    /// congestion window held it back: a bare FIN adds no data to the
    /// network, which is what RFC 5681 §3.1's window bounds ("the amount
    /// of data", FlightSize), so it goes at once, as Linux sends it
    /// (`tcp_cwnd_test`: "Don't be strict about the congestion window for
    /// the final FIN"), rather than waiting for an ACK or the tail-loss
    /// probe to make room (packetdrill `shutdown-rdwr-write-queue-close`).
    fn bare_fin(&self, new_data: u32) -> Option<NextSeg> {
        let nxt = self.sb.snd_nxt();
        (new_data == 1 && !nxt.lt(self.snd.data_end()) && self.sb.has_room())
            .then(|| NextSeg::new(Rule::New, nxt, 1))
    }

    /// 1 when the FIN rides on the full segment (or super-segment) of new
    /// data `seg` that ends the data, 0 otherwise. Linux puts the FIN on
    /// the write queue's last buffer while it is unsent (`tcp_send_fin`),
    /// so the last data and the FIN leave as one segment
    /// (`> FP. 13001:20001(7000)`, packetdrill
    /// `shutdown-rdwr-send-queue-ack-close`); the data and the FIN each
    /// count as a segment otherwise, and the FIN alone would wait for the
    /// next ACK. The FIN takes no room in either window (RFC 5681 §3.1
    /// bounds data; a FIN goes even into a zero window, `new_data`), so
    /// nothing else limits it. A shorter segment already takes the FIN
    /// with it (`new_data` counts it).
    fn fin_rides(&self, seg: NextSeg) -> u32 {
        let end = seg.start + seg.len;
        u32::from(end == self.snd.data_end() && self.snd.fin_seq() == Some(end))
    }

    /// Records `seg` as sent: on the scoreboard as the wire segments of
    /// `gso_size` octets a super-segment becomes (the FIN riding on the
    /// last, as the device leaves it), or as it is. False when the
    /// scoreboard refused it.
    fn record_sent(&mut self, now: Instant, seg: NextSeg, gso_size: u16) -> bool {
        if gso_size == 0 {
            let stamp = self.next_xmit_stamp(now);
            return self.recovery.on_sent(&mut self.sb, seg, stamp).is_ok();
        }
        let end = seg.start + seg.len;
        let mut at = seg.start;
        while at.lt(end) {
            let mut len = (end - at).min(u32::from(gso_size));
            if end - (at + len) == 1 {
                len += 1; // the FIN (`fin_rides`)
            }
            let part = NextSeg::new(seg.rule, at, len);
            let stamp = self.next_xmit_stamp(now);
            if self.recovery.on_sent(&mut self.sb, part, stamp).is_err() {
                return false;
            }
            at = part.start + part.len;
        }
        true
    }

    /// The length of a new segment of `cap` octets grown into a
    /// super-segment: whole `cap`-sized segments, as many as the device
    /// takes, the data queued and within the send window, the congestion
    /// window less the pipe, the scoreboard's room and half the congestion
    /// window allow; `cap` when that is one, or without segmentation
    /// offload.
    ///
    /// Half the congestion window (in segments, at least one) is Linux's
    /// `tcp_cwnd_test` quota ("for better scheduling, ensure we have at
    /// least 2 GSO packets in flight"): a window's worth goes as two or
    /// more super-segments, so the ACK of the first releases the next
    /// while the second is still in flight, and one lost frame on a
    /// device that does not cut super-segments (a TAP with offloads on)
    /// costs at most half the window, not all of it. RFC 9293 leaves how
    /// data is packaged to the sender; packetdrill
    /// `slow-start-after-idle` and `slow-start-after-win-update` expect
    /// it (`> P. 1:5001(5000)`, `> P. 5001:10001(5000)` with cwnd 10).
    ///
    /// Also returns whether the quota was what cut it (more would have
    /// fit otherwise).
    fn tso_len(&self, cap: u32) -> (u32, bool) {
        let max = self.cfg.offload.tso_payload_max();
        if max < 2 * cap || cap == 0 {
            return (cap, false);
        }
        let nxt = self.sb.snd_nxt();
        let data_end = self.snd.data_end();
        let data = if nxt.lt(data_end) { data_end - nxt } else { 0 };
        let right = self.sb.high_ack() + self.snd_wnd;
        let window = if right.gt(nxt) { right - nxt } else { 0 };
        let cwnd_room = self.recovery.send_room(&self.sb, &self.cc);
        let segs_room = u32::try_from(self.sb.room()).unwrap_or(u32::MAX);
        let half_cwnd = (self.cc.cwnd() / self.smss.max(1) / 2).max(1);
        let octets = max.min(data).min(window).min(cwnd_room);
        let segs = (octets / cap).min(segs_room);
        (segs.min(half_cwnd).max(1) * cap, segs > half_cwnd)
    }

    /// The length of the retransmission of the lost segment `seg` (RFC
    /// 6675 NextSeg rule 1, a full segment) grown into a super-segment
    /// with segmentation offload: the segments right after it that NextSeg
    /// would choose next by the same rule — full-sized, not SACKed, not
    /// yet retransmitted, deemed lost (IsLost, RACK or the timeout) — as
    /// many as the device takes and the congestion state's room (cwnd −
    /// pipe, or PRR's sndcnt, each falling by what is sent) allows. The
    /// wire carries the same segments as one at a time would (the device
    /// cuts it, the scoreboard records each, `record_sent`); only the
    /// device gets one buffer instead of several, as Linux retransmits a
    /// multi-segment buffer whole (`tcp_retransmit_skb` with `segs` from
    /// cwnd − in-flight: packetdrill `fr-4pkt-fack-last-byte`,
    /// `> . 1001:3001(2000)` after the timeout). RFC 6298 §5.4 and RFC
    /// 8985 §7.3 leave the packaging to the sender.
    fn retransmission_len(&self, seg: NextSeg) -> u32 {
        let max = self.cfg.offload.tso_payload_max();
        let cap = seg.len;
        if max < 2 * cap || cap == 0 {
            return cap;
        }
        let mut room = self
            .recovery
            .send_room(&self.sb, &self.cc)
            .saturating_sub(cap);
        let mut end = seg.start + cap;
        let mut len = cap;
        let first_end = end;
        for s in self.sb.segments().skip_while(|s| s.start.lt(first_end)) {
            if s.start != end
                || s.len != cap
                || s.sacked
                || s.retransmitted
                || room < cap
                || len + cap > max
                || !self.sb.is_lost(s.start)
            {
                break;
            }
            len += cap;
            room -= cap;
            end += cap;
        }
        len
    }

    /// Arms the probe timeout (RFC 8985 §7.2) if a probe may go: after
    /// sending, and on an ACK of new data.
    ///
    /// Without `TcpConfig::probe_after_timeout`, not while recovering
    /// from a timeout (RFC 8985 §7.2: "the connection is not in loss
    /// recovery"; Linux's `TCP_CA_Loss`): the timeout already marked the
    /// whole flight lost, and a probe of the tail takes a segment of the
    /// window the slow start after it has (packetdrill
    /// `fr-4pkt-fack-last-byte`: a probe 200 ms after the timeout's
    /// retransmission held `1001:3001` to one segment). Fast recovery
    /// keeps its probe either way (`TailLossProbe::may_arm`).
    #[inline]
    pub(super) fn arm_tlp(&mut self, now: Instant) {
        if self.cfg.rack
            && self.tlp.may_arm(&self.sb, self.recovery.in_recovery())
            && (self.cfg.probe_after_timeout || !self.recovery.after_timeout())
        {
            // (The RTO only when the timer is off: `map_or` would compute
            // it for every arming.)
            let rto_left = self
                .timers
                .get(Timer::Rtx)
                .map_or_else(|| self.rto.rto(), |t| t.saturating_since(now));
            let pto =
                rack::probe_timeout(self.rto.srtt(), self.sb.len(), rack::WC_DEL_ACK, rto_left);
            self.timers.set(Timer::Tlp, Some(now + pto));
        }
    }

    /// The send time to record for a segment going out at `now`: `now`,
    /// or a nanosecond after the previous segment's when that is not
    /// earlier. The host hands the connection one `now` for a whole poll,
    /// which may answer a burst of ACKs with new data and then
    /// retransmissions; RACK orders transmissions by these times, ties
    /// broken by sequence number (RFC 8985 §6.2, `sent_after`), so with
    /// equal times a retransmission would look older than new data sent
    /// before it, and the SACK of that data would mark the retransmission
    /// lost again at once.
    pub(super) fn next_xmit_stamp(&mut self, now: Instant) -> Instant {
        let stamp = if now > self.xmit_stamp {
            now
        } else {
            Instant::from_nanos(self.xmit_stamp.as_nanos() + 1)
        };
        self.xmit_stamp = stamp;
        stamp
    }

    /// Nagle (RFC 896; RFC 9293 §3.7.4; RFC 1122 §4.2.3.4) with
    /// Minshall's refinement, as Linux applies it (`tcp_nagle_check`,
    /// `tcp_minshall_check`): a segment shorter than SMSS waits while a
    /// previous *small* segment is unacknowledged, unless `nodelay` or it
    /// carries the FIN. Classic Nagle would also hold the tail of a write
    /// behind the ACK of the full segments before it; a receiver that
    /// delays its ACK for a lone full segment (RFC 1122 §4.2.3.2 asks an
    /// ACK for every second one) then stalls a request/response exchange
    /// for its delayed-ACK timer, 40 ms on Linux. With the rule, one
    /// write always leaves whole, and small writes still coalesce.
    #[inline(always)]
    pub(super) fn nagle_holds(&self, seg: NextSeg, full: u32) -> bool {
        // The usual answers (TCP_NODELAY, a full segment, nothing in
        // flight) in line, at every send; the rule's own test out of line.
        if self.cfg.nodelay || seg.len >= full || self.sb.is_empty() {
            return false;
        }
        self.nagle_small_unacked(seg)
    }

    /// [`nagle_holds`](Self::nagle_holds) past its usual answers: a small
    /// segment is unacknowledged, and `seg` does not reach the FIN.
    #[inline(never)]
    fn nagle_small_unacked(&self, seg: NextSeg) -> bool {
        let small_unacked =
            self.snd_sml.gt(self.sb.high_ack()) && !self.snd_sml.gt(self.sb.snd_nxt());
        if !small_unacked {
            return false;
        }
        let end = seg.start + seg.len;
        self.snd.fin_seq().is_none_or(|f| !f.lt(end))
    }

    /// Emits the range `[start, start + len)` of the send sequence space:
    /// its data from the send buffer, FIN if the range covers it; PSH at
    /// a push point (`push_point`), or when `continues_cut` (new data
    /// right after a super-segment the half-cwnd quota cut, `tso_len`):
    /// Linux cuts such a super-segment from one write-queue buffer
    /// (`tso_fragment`, "PSH and FIN should only be set in the second
    /// packet"), and the rest of the buffer keeps its PSH (packetdrill
    /// `slow-start-ack-per-4pkt`: `> P. 10001:18001(8000)`, cwnd 14,
    /// leaves as 7000 and a PSH-marked 1000).
    fn emit_range(
        &mut self,
        now: Instant,
        seg: NextSeg,
        gso_size: u16,
        continues_cut: bool,
        emit: &mut dyn FnMut(OutSegment<'_>) -> bool,
    ) -> bool {
        let una = self.snd.una();
        let data_end = self.snd.data_end();
        let start = seg.start.max(una);
        let end = seg.start + seg.len;
        let data_len = if start.lt(data_end) {
            (end.min(data_end) - start) as usize
        } else {
            0
        };
        let fin = self.snd.fin_seq().is_some_and(|f| f.ge(start) && f.lt(end));
        let mut flags = TcpFlags::ACK;
        if fin {
            flags.insert(TcpFlags::FIN);
        }
        if data_len > 0 && (continues_cut || self.push_point(start, data_len as u32, data_end)) {
            flags.insert(TcpFlags::PSH);
        }
        let repr = self.ack_repr(now, start, flags, data_len);
        let (a, b) = self.snd.peek((start - una) as usize, data_len);
        let ok = emit(OutSegment {
            repr,
            payload: a,
            payload2: b,
            gso_size,
        });
        if ok {
            self.after_segment_sent(now, data_len);
        }
        ok
    }

    /// Whether the segment of `len` octets of data from `start` carries
    /// PSH. The sockets API has no PUSH flag, so every write ends at a
    /// push point (RFC 9293 §3.9.1: "the PSH bit is not a record marker
    /// and is independent of segment boundaries"; RFC 1122 §4.2.2.2 lets a
    /// sender choose push points and MUSTs PSH "in the last buffered
    /// segment" — the first case below). As Linux places it, measured by
    /// the packetdrill corpus (`docs/packetdrill.md`): on the segment that
    /// empties what was written, and on every super-segment of new data
    /// (more than one MSS). Linux marks PSH on the write queue's buffers
    /// (`tcp_push` at the end of each write, `forced_push` when half the
    /// peer's largest window is unpushed) and its new super-segments leave
    /// as such buffers, PSH kept; a single segment cut from the middle of
    /// a buffer, and a retransmission re-cut from the queue
    /// (`tcp_fragment`: "PSH and FIN should only be set in the second
    /// packet"), carry none.
    #[inline]
    fn push_point(&self, start: SeqNumber, len: u32, data_end: SeqNumber) -> bool {
        start + len == data_end || (len > self.smss && !start.lt(self.sb.snd_nxt()))
    }

    /// A segment with `data_len` octets of data (and an ACK) went out:
    /// the counters, the idle clock and the delayed-ACK state.
    pub(super) fn after_segment_sent(&mut self, now: Instant, data_len: usize) {
        self.stats.segs_out += 1;
        if data_len > 0 {
            self.stats.data_segs_out += 1;
            self.quick_ack
                .on_data_sent(now, self.cfg.delayed_ack.into());
        }
        self.last_send = now;
        self.after_ack_sent();
    }

    /// An ACK-carrying header at `seq` without SACK blocks: window and
    /// timestamps (what [`ack_repr`](Self::ack_repr) sends while nothing
    /// is held out of order).
    #[inline(always)]
    pub(super) fn plain_ack_repr(
        &mut self,
        now: Instant,
        seq: SeqNumber,
        flags: TcpFlags,
    ) -> TcpRepr {
        // (The options are written in place: `repr` leaves them empty.)
        let mut r = self.repr(seq, flags, 0);
        r.window = self.rcv.window_field();
        if self.ts_ok {
            r.options.timestamps = Some((self.ts_now(now), self.ts_recent));
        }
        self.last_ack_sent = self.rcv_nxt();
        r
    }

    /// An ACK-carrying header at `seq`: window, timestamps and SACK blocks.
    fn ack_repr(
        &mut self,
        now: Instant,
        seq: SeqNumber,
        flags: TcpFlags,
        data_len: usize,
    ) -> TcpRepr {
        let mut r = self.plain_ack_repr(now, seq, flags);
        // With nothing held out of order and no D-SACK pending there are
        // no blocks to report (nor a D-SACK to take): the common case.
        if self.sack_ok && self.rcv.pending_sack_blocks() > 0 {
            // The options and the data must fit the MSS (RFC 9293
            // §3.7.1: the MSS counts data only, the IP datagram must not
            // outgrow the MTU): as many blocks as the room left allows.
            let room = (self.mss_raw() as usize).saturating_sub(data_len).min(40);
            let ts_len = if self.ts_ok { 12 } else { 0 };
            let max_blocks = room.saturating_sub(ts_len + 4) / 8;
            let mut blocks = [(0u32, 0u32); 4];
            let n = self.rcv.sack_blocks_within(&mut blocks, max_blocks);
            r.options.set_sack_blocks(&blocks[..n]);
        }
        r
    }

    /// Our SYN or SYN-ACK with the options we offer (RFC 9293 §3.7.1, RFC
    /// 7323 §2.2/§3.2, RFC 2018 §2); in SYN-RECEIVED only those the peer
    /// offered. Its window is never scaled (RFC 7323 §2.2).
    fn syn_repr(&mut self, now: Instant) -> TcpRepr {
        let synack = self.state == State::SynReceived;
        let flags = if synack {
            TcpFlags::SYN | TcpFlags::ACK
        } else {
            TcpFlags::SYN
        };
        let mut r = self.repr(self.iss, flags, self.cfg.recv_buffer.min(65535) as u16);
        let mut o = TcpOptions::default();
        o.mss = Some(self.cfg.mss);
        if synack {
            if self.ws_ok {
                o.window_scale = Some(self.rcv_shift);
            }
            o.sack_permitted = self.sack_ok;
            if self.ts_ok {
                o.timestamps = Some((self.ts_now(now), self.ts_recent));
            }
        } else {
            if self.cfg.window_scaling {
                o.window_scale = Some(self.cfg.window_shift());
            }
            o.sack_permitted = self.cfg.sack;
            if self.cfg.timestamps {
                o.timestamps = Some((self.ts_now(now), 0));
            }
        }
        r.options = o;
        r
    }

    /// Our timestamp clock: milliseconds plus this connection's offset
    /// (RFC 7323 §5.4).
    pub(super) fn ts_now(&self, now: Instant) -> u32 {
        ((now.as_nanos() / 1_000_000) as u32).wrapping_add(self.ts_offset)
    }

    /// The MSS before the options are taken off it: the peer's and our
    /// route's.
    fn mss_raw(&self) -> u32 {
        self.smss + if self.ts_ok { 12 } else { 0 }
    }

    /// An ACK went out: the delayed-ACK state is reset.
    fn after_ack_sent(&mut self) {
        self.quick_ack.on_ack_sent(|| self.unacked_bytes > 0);
        self.due.clear(Due::ACK);
        self.unacked_bytes = 0;
        self.timers.set(Timer::Delack, None);
    }
}
