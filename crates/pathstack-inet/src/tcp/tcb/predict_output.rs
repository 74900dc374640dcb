//! Header prediction on the output side: the usual send of a quiet
//! established connection as one short step. The input side
//! (`predict.rs`) takes the usual segment in; its mirror here is the
//! usual write going out — an application's write that fits one segment,
//! on a connection with nothing lost, nothing queued behind it and every
//! window open (a request or a response of a request/response exchange).
//! The seed splits `tcp_output` into its check and the send (Mosberger et
//! al., TR 95-02, §2.6), and BSD's `tcp_output` builds such a segment from
//! the connection's template; Linux's `tcp_write_xmit` has its own short
//! path for the segment that fits every window.
//!
//! For that write the general send (`send_data` in `output.rs`) walks
//! the whole of RFC 6675's NextSeg and RACK-TLP's choice, to offer the
//! one new segment every check lets through: the check half's new-data
//! arithmetic, the SACK blocks' room in the MSS, the probe, NextSeg (rule
//! 2 only on a clean scoreboard), Nagle, segmentation offload's growth,
//! the general segment builder (FIN, PSH, data ranges that start below
//! SND.UNA, SACK blocks), recording on the scoreboard through loss
//! recovery, and a second turn of the loop to find nothing more.
//! [`Tcb::predicted_send`] recognises the case and does only what that
//! walk changes, in the same order, so the state afterwards is exactly the
//! general path's (the differential test in `predict_tests.rs` drives a
//! control block with and one without it and compares everything). Every
//! other case goes the general way, unchanged.

use super::due::Due;
use super::output::OutSegment;
use super::Tcb;
use crate::tcp::congestion::{idle_restart_due, CongestionControl};
use crate::tcp::sack_scoreboard::{NextSeg, Rule};
use crate::tcp::seq::SeqNumber;
use crate::tcp::state::State;
use crate::wire::tcp::{TcpFlags, TemplateFields};
use pathstack_core::time::Instant;

impl Tcb {
    /// The one segment the general send would offer now, when it is the
    /// predicted case (see the module docs): `None`, having changed
    /// nothing, otherwise. Asked after `before_sending`, which both paths
    /// run first (its idle restart may shrink the congestion window).
    ///
    /// What each check stands for in the general send's first turn:
    ///
    /// - ESTABLISHED, no FIN queued, no probe due: no FIN bit, no TLP.
    /// - Clean scoreboard, recovery open: NextSeg is rule 2, new data
    ///   (`Recovery::next_new`, which the recovery tests prove equal to
    ///   NextSeg there).
    /// - No SACK blocks to carry: the segment's room is the SMSS.
    /// - All unsent data within the SMSS (the scoreboard's too, as
    ///   `next_new` cuts to it), the send window and cwnd − FlightSize
    ///   ≥ SMSS, the scoreboard with room: the whole of it is the segment.
    ///   Then segmentation offload cannot grow it (`tso_len` of at most
    ///   one segment's data is one segment), and after it nothing is left,
    ///   so the loop's second turn ends at the check half.
    /// - Nagle does not hold it (`nagle_holds`, asked as the general path
    ///   asks it).
    #[inline]
    pub(super) fn predicted_send(&self) -> Option<NextSeg> {
        if !self.output_quiet() || self.due.has(Due::TLP) || self.snd.is_closed() {
            return None;
        }
        // Unsent data, from an SND.NXT not below the send buffer's
        // SND.UNA (the general builder would start such a range at the
        // latter).
        let nxt = self.sb.snd_nxt();
        let data_end = self.snd.data_end();
        if !nxt.lt(data_end) || nxt.lt(self.snd.una()) {
            return None;
        }
        self.whole_new_segment(nxt, data_end - nxt)
    }

    /// Sends `seg` (from [`predicted_send`](Self::predicted_send)) and
    /// records it: what the general send's first turn does for it, with
    /// the choices it makes on the way known in advance — ACK and PSH
    /// (the segment empties what was written), no FIN, no SACK blocks, no
    /// super-segment, new data on the scoreboard. Returns the segments
    /// sent, 0 when `emit` could not send it or the scoreboard refused it
    /// (the general path's two breaks, which leave the same state).
    pub(super) fn send_predicted(
        &mut self,
        now: Instant,
        seg: NextSeg,
        emit: &mut dyn FnMut(OutSegment<'_>) -> bool,
    ) -> usize {
        // No SACK blocks to carry (`predicted_send` checked).
        let repr = self.plain_ack_repr(now, seg.start, TcpFlags::ACK | TcpFlags::PSH);
        let una = self.snd.una();
        let (a, b) = self.snd.peek((seg.start - una) as usize, seg.len as usize);
        if !emit(OutSegment {
            repr,
            payload: a,
            payload2: b,
            gso_size: 0,
        }) {
            return 0;
        }
        self.record_predicted(now, seg)
    }

    /// What [`send_predicted`](Self::send_predicted) does once `seg` went
    /// out: the counters, Minshall's small-segment mark, the scoreboard.
    #[inline(always)]
    fn record_predicted(&mut self, now: Instant, seg: NextSeg) -> usize {
        self.after_segment_sent(now, seg.len as usize);
        self.stats.predicted_sends += 1;
        if seg.len < self.smss {
            self.snd_sml = seg.start + seg.len;
        }
        // `record_sent` for an ordinary segment of new data: what
        // `Recovery::on_sent` does for rule 2.
        let stamp = self.next_xmit_stamp(now);
        usize::from(self.sb.on_send(seg.start, seg.len, stamp).is_ok())
    }

    /// The whole of [`poll_output_due`](Self::poll_output_due) when all
    /// it would do is the predicted send, for a caller that writes the
    /// header from the connection's template (the stage): the header's
    /// own fields and the data handed to `emit` directly — no
    /// [`OutSegment`], no `TcpRepr`, no `dyn` call — and the same state
    /// afterwards as `poll_output_due` leaves (`predict_tests.rs` drives a
    /// control block through this first, as the stage does, against one
    /// without short paths). `None`, having changed nothing, when it is
    /// not that case; `Some` of the segments sent (0 when `emit` could
    /// not send) otherwise.
    ///
    /// What `poll_output_due` would do besides, known absent here:
    /// nothing else is due (no reset, SYN, ACK or probe: the word is
    /// empty, so the only segment is the data and nothing follows it);
    /// `before_sending` has no idle restart to make (a connection idle
    /// past its RTO goes the general way); and the timestamps are on, the
    /// template's layout (with no SACK blocks, `predicted_send` asks).
    #[inline]
    pub fn poll_predicted_send<F>(&mut self, now: Instant, emit: F) -> Option<usize>
    where
        F: FnOnce(&TemplateFields, &[u8], &[u8]) -> bool,
    {
        self.predicted_output(now, None, emit)
    }

    /// [`send`](Self::send) of `data` and then
    /// [`poll_predicted_send`](Self::poll_predicted_send) in one step, for
    /// the usual write of a request/response exchange: a write on a quiet
    /// connection with nothing held in the send buffer (all acknowledged,
    /// nothing queued), which becomes exactly one predicted segment of
    /// `data` (issue 26 item 2, Jacobson's prediction on output). The
    /// segment's data is handed to `emit` from `data` itself (the octets
    /// the send ring now holds), so neither is the ring read back nor are
    /// the general send's checks asked of what is known here: SEND's state
    /// cases (ESTABLISHED, no FIN queued), a write the ring takes whole
    /// as allocated, and a segment that starts at SND.UNA = SND.NXT and
    /// ends at the data's end. `None`, having changed nothing, when it is
    /// not that case (the caller writes and flushes the general way);
    /// otherwise the octets written (all of `data`), the segment sent or
    /// not as `poll_predicted_send` would have left it — the same state
    /// afterwards as `send` and `poll_predicted_send` (`predict_tests.rs`
    /// drives a control block through this, as the stage does, against
    /// one without short paths).
    #[inline]
    pub fn write_predicted<F>(&mut self, now: Instant, data: &[u8], emit: F) -> Option<usize>
    where
        F: FnOnce(&TemplateFields, &[u8], &[u8]) -> bool,
    {
        self.predicted_output(now, Some(data), emit)
    }

    /// The one body of [`poll_predicted_send`](Self::poll_predicted_send)
    /// (`write` `None`: `Some` of the segments sent) and
    /// [`write_predicted`](Self::write_predicted) (`Some(data)`: `Some` of
    /// the octets written), for a caller that takes both in one place
    /// (the stage's send): the header's fields, the emission, the
    /// recording and the timers written once, so that the compiler
    /// inlines them once.
    #[inline]
    pub fn predicted_output<F>(
        &mut self,
        now: Instant,
        write: Option<&[u8]>,
        emit: F,
    ) -> Option<usize>
    where
        F: FnOnce(&TemplateFields, &[u8], &[u8]) -> bool,
    {
        if self.due.any()
            || !self.ts_ok
            || (self.sb.is_empty()
                && self.cfg.slow_start_after_idle
                && idle_restart_due(self.last_send, now, self.rto.rto()))
        {
            return None;
        }
        let seg = match write {
            None => self.predicted_send()?,
            Some(data) => {
                let seg = self.written_send(data)?;
                self.snd.write_fitting(data);
                seg
            }
        };
        let fields = self.predicted_fields(now, seg);
        // The segment's data: what was just written, or read from the
        // send ring.
        let (a, b) = match write {
            Some(data) => (data, &[][..]),
            None => {
                let una = self.snd.una();
                self.snd.peek((seg.start - una) as usize, seg.len as usize)
            }
        };
        let went = emit(&fields, a, b);
        let sent = self.after_predicted_emit(now, seg, went);
        Some(write.map_or(sent, <[u8]>::len))
    }

    /// The one segment a write of `data` would be once written, when
    /// [`write_predicted`](Self::write_predicted) may take it (asked after
    /// `poll_predicted_send`'s own checks): SEND's cases, and
    /// [`predicted_send`](Self::predicted_send)'s checks for the segment
    /// `[SND.UNA, SND.UNA + len)` that the write leaves. `None`, having
    /// changed nothing, otherwise.
    #[inline(always)]
    fn written_send(&self, data: &[u8]) -> Option<NextSeg> {
        let n = data.len();
        // SEND's cases: ESTABLISHED (no FIN queued: `fits_allocated`),
        // something to write, and all of it taken by the ring as it is,
        // which holds nothing before it. (No probe is due: the word of
        // what is due was asked empty.)
        let nxt = self.sb.snd_nxt();
        if n == 0
            || !self.output_quiet()
            || !self.snd.is_empty()
            || !self.snd.fits_allocated(n)
            || nxt != self.snd.una()
        {
            return None;
        }
        self.whole_new_segment(nxt, n as u32)
    }

    /// What both predicted sends ask of the connection first: short paths
    /// on, ESTABLISHED, a clean scoreboard, recovery open and no SACK
    /// blocks to carry (so NextSeg is rule 2, new data, and the segment's
    /// room is the SMSS).
    #[inline(always)]
    fn output_quiet(&self) -> bool {
        self.short_paths()
            && self.state == State::Established
            && self.sb.is_clean()
            && self.recovery.is_open()
            && !(self.sack_ok && self.rcv.pending_sack_blocks() > 0)
    }

    /// The new-data segment `[nxt, nxt + len)` when it is the whole of
    /// one send: within the SMSS (the scoreboard's too), the send window
    /// and cwnd − FlightSize ≥ SMSS, the scoreboard with room, and Nagle
    /// not holding it — the checks [`predicted_send`](Self::predicted_send)
    /// and [`written_send`](Self::written_send) share.
    #[inline(always)]
    fn whole_new_segment(&self, nxt: SeqNumber, len: u32) -> Option<NextSeg> {
        let right = self.sb.high_ack() + self.snd_wnd;
        if len > self.smss
            || len > self.sb.smss()
            || !right.gt(nxt)
            || right - nxt < len
            || self.cc.cwnd().saturating_sub(self.sb.flight_size()) < self.sb.smss()
            || !self.sb.has_room()
        {
            return None;
        }
        let seg = NextSeg::new(Rule::New, nxt, len);
        if self.nagle_holds(seg, self.smss) {
            return None;
        }
        Some(seg)
    }

    /// The header fields of the predicted segment `seg`:
    /// `plain_ack_repr`'s, ACK and PSH (the segment empties what was
    /// written), RCV.NXT, the window, the timestamps; the ACK recorded as
    /// sent.
    #[inline(always)]
    fn predicted_fields(&mut self, now: Instant, seg: NextSeg) -> TemplateFields {
        let fields = TemplateFields {
            seq: seg.start.0,
            ack: self.rcv_nxt().0,
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: self.rcv.window_field(),
            urgent: 0,
            tsval: self.ts_now(now),
            tsecr: self.ts_recent,
        };
        self.last_ack_sent = self.rcv_nxt();
        fields
    }

    /// After the predicted segment `seg` was handed over (`went`: it went
    /// out): recorded, and the timers as `after_sending` leaves them.
    /// Returns the segments sent.
    #[inline(always)]
    fn after_predicted_emit(&mut self, now: Instant, seg: NextSeg, went: bool) -> usize {
        if !went {
            self.after_sending(now, 0);
            return 0;
        }
        let sent = self.record_predicted(now, seg);
        if sent == 1 {
            self.after_predicted_send(now);
        } else {
            self.after_sending(now, sent);
        }
        sent
    }
}
