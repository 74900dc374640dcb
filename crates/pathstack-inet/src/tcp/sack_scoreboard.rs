//! The SACK scoreboard: the sender's view of what the receiver holds
//! (RFC 6675 §2–4, RFC 2018), with D-SACK recognition (RFC 2883 §4).
//!
//! The scoreboard keeps one entry per segment in flight from `SND.UNA`
//! (HighACK) to `SND.NXT` (HighData), in sequence order, each with its
//! SACKed, lost and retransmitted flags and its last send time (which
//! RACK, RFC 8985, needs). Its capacity in segments is fixed at
//! construction; the queue is allocated as the flight grows to it (from
//! nothing: an idle connection holds none) and kept. A sender that would
//! exceed it is told so by [`Scoreboard::on_send`] and must wait.
//!
//! Granularity: RFC 6675 reasons about octets; like Linux, this
//! scoreboard reasons about the segments as sent. A SACK block marks a
//! segment only when it covers the whole segment (receivers SACK whole
//! segments; a partial cover is conservatively ignored), and a
//! cumulative ACK inside a segment trims its front.
//!
//! "Lost" is the union of RFC 6675's `IsLost()` (computed from the SACKed
//! segments above) and an explicit mark set by a retransmission timeout
//! (RFC 6675 §5.1) or by RACK (RFC 8985 §6.2). As in Linux, a lost
//! segment stays lost until delivered; "retransmitted" says a copy sent
//! after the loss is still presumed in flight, and is cleared when that
//! copy is itself found lost, which makes the segment eligible again.

use std::collections::VecDeque;

use pathstack_core::Instant;

use super::seq::SeqNumber;

/// RFC 6675 §2 DupThresh, and RFC 8985's RACK.dupthresh.
pub const DUP_THRESH: u32 = 3;

/// At most this many SACK blocks are read from one ACK (RFC 2018 §3: 40
/// option bytes hold at most 4).
pub const MAX_SACK_BLOCKS: usize = 4;

/// A SACK block `[left, right)` as carried in the option (RFC 2018 §3:
/// the left edge is the first octet, the right edge the one after the
/// last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SackBlock {
    /// First sequence number of the block.
    pub left: SeqNumber,
    /// Sequence number just past the block.
    pub right: SeqNumber,
}

impl SackBlock {
    /// The block `[left, right)`.
    pub fn new(left: SeqNumber, right: SeqNumber) -> Self {
        SackBlock { left, right }
    }

    /// Whether the block is well formed (non-empty and shorter than half
    /// the sequence space).
    fn is_valid(self) -> bool {
        self.left.lt(self.right)
    }

    /// Whether `self` lies within `other`.
    fn within(self, other: SackBlock) -> bool {
        other.left.le(self.left) && self.right.le(other.right)
    }
}

/// One segment in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The segment's first sequence number.
    pub start: SeqNumber,
    /// Its length in octets (never 0 while on the scoreboard).
    pub len: u32,
    /// Reported held by the receiver in a SACK block.
    pub sacked: bool,
    /// Marked lost by a retransmission timeout or RACK (RFC 6675's
    /// `IsLost()` is computed separately, see [`Scoreboard::is_lost`]).
    pub lost: bool,
    /// A retransmission of it is presumed in flight.
    pub retransmitted: bool,
    /// Ever retransmitted (for Karn's algorithm and RACK's ambiguity
    /// test, RFC 8985 §6.2 step 2).
    pub ever_retransmitted: bool,
    /// When it was last (re)transmitted, RACK's `Segment.xmit_ts`.
    pub sent_at: Instant,
}

impl Segment {
    /// The sequence number just past the segment (RACK's `end_seq`).
    pub fn end(&self) -> SeqNumber {
        self.start + self.len
    }
}

/// The scoreboard is full: the segment was not recorded and must not be
/// sent yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScoreboardError {
    /// No room for another segment.
    #[error("SACK scoreboard full")]
    Full,
    /// The segment does not start at `SND.NXT` or is empty.
    #[error("segment does not continue SND.NXT")]
    NotContiguous,
    /// The segment would take the data in flight to 2^31 octets or more,
    /// beyond what sequence numbers can order (RFC 9293 §3.4).
    #[error("too much data in flight")]
    TooMuchInFlight,
    /// No segment in flight starts at the given sequence number.
    #[error("no such segment in flight")]
    NoSuchSegment,
}

/// The most recently sent segment delivered (cumulatively ACKed or newly
/// SACKed) by one ACK, in each retransmission class, for RACK
/// (RFC 8985 §6.2 step 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered {
    /// Its `xmit_ts`.
    pub sent_at: Instant,
    /// Its `end_seq`.
    pub end: SeqNumber,
    /// Whether it had ever been retransmitted (an ambiguous RTT sample).
    pub retransmitted: bool,
}

/// What one ACK changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckOutcome {
    /// Octets newly covered by the cumulative ACK.
    pub newly_acked: u32,
    /// Octets newly SACKed (segments that were not SACKed before).
    pub newly_sacked: u32,
    /// The cumulative ACK point advanced.
    pub cum_advanced: bool,
    /// The ACK was ignored as a cumulative ACK (below `SND.UNA` or beyond
    /// `SND.NXT`); its SACK blocks were still considered.
    pub cum_ignored: bool,
    /// A D-SACK block (RFC 2883 §4): the first block was below the
    /// cumulative ACK or within the second block. It reports a duplicate
    /// arrival and is not used to mark segments.
    pub dsack: Option<SackBlock>,
    /// SACK blocks (other than a D-SACK) ignored because they lay wholly
    /// below `SND.UNA` or beyond `SND.NXT`, or were malformed.
    pub sack_ignored: u32,
    /// The newest delivered segment never retransmitted.
    pub newest_original: Option<Delivered>,
    /// The newest delivered segment that had been retransmitted.
    pub newest_retransmitted: Option<Delivered>,
    /// A never-retransmitted segment was delivered below the highest
    /// end sequence delivered before (RACK.fack): reordering
    /// (RFC 8985 §6.2 step 3).
    pub reordering: bool,
}

impl AckOutcome {
    /// RFC 6675 §2 "duplicate acknowledgment" as far as the scoreboard
    /// knows: the cumulative ACK did not move, data is outstanding and the
    /// SACK information newly acknowledges data. (The caller checks that
    /// the segment carries no data and no SYN/FIN.)
    pub fn is_dup_ack(&self, outstanding: bool) -> bool {
        outstanding && !self.cum_advanced && self.newly_sacked > 0
    }

    fn note_delivered(&mut self, seg: &Segment) {
        let d = Delivered {
            sent_at: seg.sent_at,
            end: seg.end(),
            retransmitted: seg.ever_retransmitted,
        };
        let slot = if seg.ever_retransmitted {
            &mut self.newest_retransmitted
        } else {
            &mut self.newest_original
        };
        match slot {
            Some(cur) if !sent_after(d.sent_at, d.end, cur.sent_at, cur.end) => {}
            _ => *slot = Some(d),
        }
    }
}

/// What an ACK did on a clean scoreboard ([`Scoreboard::on_clean_ack`]):
/// the part of an [`AckOutcome`] such an ACK can have (it also advanced
/// SND.UNA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CleanAck {
    /// Octets newly covered by the cumulative ACK.
    pub newly_acked: u32,
    /// The newest segment delivered (never retransmitted): the
    /// outcome's `newest_original`.
    pub newest: Option<Delivered>,
    /// A segment was delivered below RACK.fack (RFC 8985 §6.2 step 3).
    pub reordering: bool,
}

/// RACK_sent_after (RFC 8985 §6.2): whether (t1, seq1) was sent after
/// (t2, seq2), breaking a tie in time by sequence.
pub fn sent_after(t1: Instant, seq1: SeqNumber, t2: Instant, seq2: SeqNumber) -> bool {
    t1 > t2 || (t1 == t2 && seq1.gt(seq2))
}

/// Which NextSeg() rule (RFC 6675 §4) chose a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Rule 1: a lost hole below HighSACK, not yet retransmitted.
    Lost,
    /// Rule 2: new data at `SND.NXT`.
    New,
    /// Rule 3: an unSACKed segment below HighSACK not yet deemed lost.
    Unsacked,
    /// Rule 4: the rescue retransmission of the highest unSACKed segment.
    Rescue,
}

/// What NextSeg() (RFC 6675 §4) chose: `len` octets from `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextSeg {
    /// The rule that chose it.
    pub rule: Rule,
    /// The first sequence number to send.
    pub start: SeqNumber,
    /// The number of octets to send (never 0).
    pub len: u32,
}

impl NextSeg {
    /// `len` octets from `start`, chosen by `rule`.
    pub fn new(rule: Rule, start: SeqNumber, len: u32) -> Self {
        NextSeg { rule, start, len }
    }

    fn of(rule: Rule, (start, len): (SeqNumber, u32)) -> Self {
        NextSeg::new(rule, start, len)
    }

    /// Whether this is a retransmission (every rule but 2).
    pub fn is_retransmission(&self) -> bool {
        self.rule != Rule::New
    }
}

/// The sender's SACK scoreboard (RFC 6675 §3–4).
#[derive(Clone, Debug)]
pub struct Scoreboard {
    segs: VecDeque<Segment>,
    capacity: usize,
    smss: u32,
    /// HighACK = SND.UNA.
    snd_una: SeqNumber,
    /// HighData + 1 = SND.NXT.
    snd_nxt: SeqNumber,
    /// HighRxt: the highest octet retransmitted in this recovery phase.
    high_rxt: Option<SeqNumber>,
    /// RescueRxt (RFC 6675 §4 rule 4).
    rescue_rxt: Option<SeqNumber>,
    /// Octets in SACKed segments.
    sacked_bytes: u32,
    /// Number of SACKed segments.
    sacked_segs: u32,
    /// RACK.fack: the highest end sequence delivered.
    fack: SeqNumber,
    /// Whether a segment in flight may be SACKed, lost or retransmitted;
    /// false only while every one is plainly in flight (set with any of
    /// those flags, cleared when the flight is acknowledged). Clean, pipe
    /// is FlightSize and NextSeg is new data: no per-segment walk for
    /// each segment a loss-free bulk sender sends.
    tainted: bool,
    /// Retransmitted segments marked lost again ([`mark_lost_at`]): a
    /// counter for `TcpStats::lost_retransmits`, no part of the state.
    ///
    /// [`mark_lost_at`]: Scoreboard::mark_lost_at
    lost_retransmits: u64,
}

impl Scoreboard {
    /// An empty scoreboard for at most `capacity` segments in flight,
    /// starting at `iss + 1` (the first data octet) with SMSS `smss`.
    pub fn new(capacity: usize, smss: u32, snd_una: SeqNumber) -> Self {
        Scoreboard {
            // Grown on demand up to `capacity`: an idle connection that
            // never sent keeps no entries at all (issue 28 item 3: 192
            // octets of each idle connection end were these), one that
            // sent a few (the bulk sender's scoreboard reaches its size in
            // the first flights and stays).
            segs: VecDeque::new(),
            capacity: capacity.max(1),
            smss: smss.max(1),
            snd_una,
            snd_nxt: snd_una,
            high_rxt: None,
            rescue_rxt: None,
            sacked_bytes: 0,
            sacked_segs: 0,
            fack: snd_una,
            tainted: false,
            lost_retransmits: 0,
        }
    }

    /// The heap octets the scoreboard holds allocated now (its segment
    /// queue grows with the flight and is kept).
    pub fn allocated_bytes(&self) -> usize {
        self.segs.capacity() * std::mem::size_of::<Segment>()
    }

    /// HighACK (RFC 6675 §2): the cumulative ACK point, `SND.UNA`.
    pub fn high_ack(&self) -> SeqNumber {
        self.snd_una
    }

    /// `SND.NXT`, one past HighData.
    pub fn snd_nxt(&self) -> SeqNumber {
        self.snd_nxt
    }

    /// HighRxt (RFC 6675 §2), if anything was retransmitted in this
    /// recovery phase.
    pub fn high_rxt(&self) -> Option<SeqNumber> {
        self.high_rxt
    }

    /// RescueRxt (RFC 6675 §2).
    pub fn rescue_rxt(&self) -> Option<SeqNumber> {
        self.rescue_rxt
    }

    /// SMSS in octets.
    pub fn smss(&self) -> u32 {
        self.smss
    }

    /// Octets from `SND.UNA` to `SND.NXT` (FlightSize, RFC 5681 §2).
    pub fn flight_size(&self) -> u32 {
        self.snd_nxt - self.snd_una
    }

    /// Octets in SACKed segments.
    pub fn sacked_bytes(&self) -> u32 {
        self.sacked_bytes
    }

    /// Number of SACKed segments (RACK.segs_sacked).
    pub fn sacked_segments(&self) -> u32 {
        self.sacked_segs
    }

    /// RACK.fack: the highest end sequence cumulatively ACKed or SACKed.
    pub fn fack(&self) -> SeqNumber {
        self.fack
    }

    /// HighSACK: one past the highest SACKed octet, if any.
    pub fn high_sack(&self) -> Option<SeqNumber> {
        if self.sacked_segs == 0 {
            return None;
        }
        self.segs.iter().rev().find(|s| s.sacked).map(Segment::end)
    }

    /// The segments in flight, in sequence order.
    pub fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.segs.iter()
    }

    /// The `index`-th segment in flight (0 is the one at `SND.UNA`).
    pub fn segment_at(&self, index: usize) -> Option<&Segment> {
        self.segs.get(index)
    }

    /// Number of segments in flight.
    pub fn len(&self) -> usize {
        self.segs.len()
    }

    /// Whether every segment in flight is plainly in flight: none SACKed,
    /// lost or retransmitted since the scoreboard last emptied. Then pipe
    /// is FlightSize, NextSeg can only choose new data, and the segments
    /// were all sent as new data, in sequence order, after every segment
    /// delivered so far.
    pub fn is_clean(&self) -> bool {
        !self.tainted
    }

    /// Whether nothing is in flight.
    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Whether another segment fits.
    pub fn has_room(&self) -> bool {
        self.segs.len() < self.capacity
    }

    /// How many more segments fit.
    pub fn room(&self) -> usize {
        self.capacity.saturating_sub(self.segs.len())
    }

    /// Records a new segment `[start, start + len)` sent at `now`; `start`
    /// must be `SND.NXT`. Fails, recording nothing, when full.
    pub fn on_send(
        &mut self,
        start: SeqNumber,
        len: u32,
        now: Instant,
    ) -> Result<(), ScoreboardError> {
        if start != self.snd_nxt || len == 0 {
            return Err(ScoreboardError::NotContiguous);
        }
        if u64::from(self.flight_size()) + u64::from(len) >= 1 << 31 {
            return Err(ScoreboardError::TooMuchInFlight);
        }
        if !self.has_room() {
            return Err(ScoreboardError::Full);
        }
        self.segs.push_back(Segment {
            start,
            len,
            sacked: false,
            lost: false,
            retransmitted: false,
            ever_retransmitted: false,
            sent_at: now,
        });
        self.snd_nxt = start + len;
        Ok(())
    }

    fn index_of(&self, start: SeqNumber) -> Option<usize> {
        // Segments are in order: binary search on the offset from SND.UNA.
        let off = start - self.snd_una;
        self.segs
            .binary_search_by(|s| (s.start - self.snd_una).cmp(&off))
            .ok()
    }

    /// Records the retransmission at `now` of the segment starting at
    /// `start` (NextSeg rules 1 and 3, or a timeout), updating HighRxt
    /// (RFC 6675 §5 step (C.2)).
    pub fn on_retransmit(&mut self, start: SeqNumber, now: Instant) -> Result<(), ScoreboardError> {
        let high = self.mark_retransmitted(start, now)? + u32::MAX; // end - 1
        self.high_rxt = Some(match self.high_rxt {
            Some(h) => h.max(high),
            None => high,
        });
        Ok(())
    }

    /// Records the rescue retransmission (NextSeg rule 4) of the segment
    /// starting at `start`: RescueRxt = `recovery_point`, HighRxt
    /// unchanged (RFC 6675 §4 rule 4).
    pub fn on_rescue_retransmit(
        &mut self,
        start: SeqNumber,
        recovery_point: SeqNumber,
        now: Instant,
    ) -> Result<(), ScoreboardError> {
        self.mark_retransmitted(start, now)?;
        self.rescue_rxt = Some(recovery_point);
        Ok(())
    }

    /// Flags the segment at `start` as retransmitted at `now`; returns its
    /// end.
    fn mark_retransmitted(
        &mut self,
        start: SeqNumber,
        now: Instant,
    ) -> Result<SeqNumber, ScoreboardError> {
        let i = self.index_of(start).ok_or(ScoreboardError::NoSuchSegment)?;
        let seg = &mut self.segs[i];
        seg.retransmitted = true;
        seg.ever_retransmitted = true;
        self.tainted = true;
        seg.sent_at = now;
        Ok(seg.end())
    }

    /// Begins a loss-recovery phase (RFC 6675 §5 step 4): HighRxt and
    /// RescueRxt become undefined until the first retransmission sets
    /// them.
    pub fn begin_recovery(&mut self) {
        self.high_rxt = None;
        self.rescue_rxt = None;
    }

    /// Sets RescueRxt directly (RFC 6675 §5 step 4.3 sets it with HighRxt
    /// on the first retransmission).
    pub fn set_rescue_rxt(&mut self, seq: SeqNumber) {
        self.rescue_rxt = Some(seq);
    }

    /// A retransmission timeout (RFC 6675 §5.1): every unSACKed segment is
    /// marked lost and no retransmission is presumed in flight any more;
    /// HighRxt is reset to HighACK.
    pub fn on_rto(&mut self) {
        for s in self.segs.iter_mut().filter(|s| !s.sacked) {
            s.lost = true;
            s.retransmitted = false;
            self.tainted = true;
        }
        self.high_rxt = None;
        self.rescue_rxt = None;
    }

    /// Retransmitted segments [`mark_lost_at`](Self::mark_lost_at) has
    /// marked lost again since the connection began.
    pub(crate) fn lost_retransmits(&self) -> u64 {
        self.lost_retransmits
    }

    /// Marks the segment at `index` lost (RACK, RFC 8985 §6.2 step 5): a
    /// retransmission of it is no longer presumed in flight.
    pub(crate) fn mark_lost_at(&mut self, index: usize) {
        if let Some(s) = self.segs.get_mut(index) {
            if !s.sacked {
                self.lost_retransmits += u64::from(s.retransmitted);
                s.lost = true;
                s.retransmitted = false;
                self.tainted = true;
            }
        }
    }

    /// Processes an ACK: cumulative ACK `cum_ack` and up to
    /// [`MAX_SACK_BLOCKS`] SACK blocks (extra ones are ignored). Never
    /// panics: a cumulative ACK below `SND.UNA` or beyond `SND.NXT`
    /// leaves the ACK point alone, and SACK parts outside
    /// `[SND.UNA, SND.NXT)` are clipped away.
    pub fn on_ack(&mut self, cum_ack: SeqNumber, sack: &[SackBlock], _now: Instant) -> AckOutcome {
        let mut out = AckOutcome::default();
        let sack = &sack[..sack.len().min(MAX_SACK_BLOCKS)];
        let prior_fack = self.fack;
        // An unacceptable cumulative ACK (outside [SND.UNA, SND.NXT]) is
        // not trusted to classify a D-SACK either.
        let cum_ok = cum_ack.in_window(self.snd_una, self.flight_size() + 1);
        let dsack_ref = if cum_ok { cum_ack } else { self.snd_una };

        // RFC 2883 §4: the first block is a D-SACK if it lies below the
        // cumulative ACK, or within the second block.
        let mut first_regular = 0;
        if let Some(&b0) = sack.first() {
            if b0.is_valid()
                && (b0.right.le(dsack_ref) || sack.get(1).is_some_and(|&b1| b0.within(b1)))
            {
                out.dsack = Some(b0);
                first_regular = 1;
            }
        }

        // Cumulative ACK (RFC 9293 §3.10.7.4: SND.UNA < SEG.ACK =< SND.NXT).
        if cum_ok && cum_ack != self.snd_una {
            out.cum_advanced = true;
            out.newly_acked = cum_ack - self.snd_una;
            while let Some(front) = self.segs.front_mut() {
                if front.end().le(cum_ack) {
                    let seg = self.segs.pop_front().expect("front exists");
                    if seg.sacked {
                        self.sacked_bytes -= seg.len;
                        self.sacked_segs -= 1;
                    } else {
                        out.note_delivered(&seg);
                        if !seg.ever_retransmitted && seg.end().lt(prior_fack) {
                            out.reordering = true;
                        }
                    }
                } else {
                    if front.start.lt(cum_ack) {
                        // A partial ACK within the segment trims its front.
                        let cut = cum_ack - front.start;
                        front.start = cum_ack;
                        front.len -= cut;
                        if front.sacked {
                            self.sacked_bytes -= cut;
                        }
                    }
                    break;
                }
            }
            self.snd_una = cum_ack;
            if self.segs.is_empty() {
                self.tainted = false;
            }
            self.fack = self.fack.max(cum_ack);
        } else if cum_ack != self.snd_una {
            out.cum_ignored = true;
        }

        for &b in &sack[first_regular..] {
            // Clip to [SND.UNA, SND.NXT).
            if !b.is_valid() {
                out.sack_ignored += 1;
                continue;
            }
            let left = b.left.max(self.snd_una);
            let right = b.right.min(self.snd_nxt);
            if !left.lt(right) || b.right.le(self.snd_una) || b.left.ge(self.snd_nxt) {
                out.sack_ignored += 1;
                continue;
            }
            let lo = left - self.snd_una;
            let hi = right - self.snd_una;
            // First segment whose start is at or after `left`.
            let una = self.snd_una;
            let mut i = self.segs.partition_point(|s| (s.start - una) < lo);
            while let Some(seg) = self.segs.get_mut(i) {
                let s_off = seg.start - una;
                if s_off + seg.len > hi {
                    break;
                }
                if !seg.sacked {
                    seg.sacked = true;
                    seg.retransmitted = false;
                    self.tainted = true;
                    self.sacked_bytes += seg.len;
                    self.sacked_segs += 1;
                    out.newly_sacked += seg.len;
                    let seg = *seg;
                    out.note_delivered(&seg);
                    if !seg.ever_retransmitted && seg.end().lt(prior_fack) {
                        out.reordering = true;
                    }
                    self.fack = self.fack.max(seg.end());
                }
                i += 1;
            }
        }
        out
    }

    /// [`on_ack`](Self::on_ack) for an ACK without SACK blocks that
    /// advances SND.UNA (`SND.UNA < cum_ack =< SND.NXT`) on a clean
    /// scoreboard ([`is_clean`](Self::is_clean)): the same state
    /// afterwards and, of the same outcome, what such an ACK can have
    /// (the rest is nothing: no SACK, no D-SACK, nothing retransmitted
    /// delivered), without the SACK work (header prediction's ACK).
    /// `None`, having changed nothing, for any other ACK.
    #[inline(always)]
    pub fn on_clean_ack(&mut self, cum_ack: SeqNumber) -> Option<CleanAck> {
        // The whole flight acknowledged, and it was one segment (a
        // request/response exchange's every ACK): the walk would take
        // that segment and stop; taken here, in the caller, without it
        // (issue 26 item 4: the one-segment flight costs its state
        // update). RACK keeps what it needs of the segment: its send
        // time and end (RFC 8985 §6.2 step 2).
        if !self.tainted
            && cum_ack == self.snd_nxt
            && cum_ack != self.snd_una
            && self.segs.len() == 1
        {
            let seg = self.segs[0];
            self.segs.clear();
            let prior_fack = self.fack;
            let out = CleanAck {
                newly_acked: cum_ack - self.snd_una,
                newest: Some(Delivered {
                    sent_at: seg.sent_at,
                    end: seg.end(),
                    retransmitted: false,
                }),
                reordering: seg.end().lt(prior_fack),
            };
            self.snd_una = cum_ack;
            self.fack = prior_fack.max(cum_ack);
            return Some(out);
        }
        self.on_clean_ack_walk(cum_ack)
    }

    /// [`on_clean_ack`](Self::on_clean_ack) of anything but the whole
    /// one-segment flight: the walk over the segments it covers.
    #[inline(never)]
    fn on_clean_ack_walk(&mut self, cum_ack: SeqNumber) -> Option<CleanAck> {
        if self.tainted
            || cum_ack == self.snd_una
            || !cum_ack.in_window(self.snd_una, self.flight_size() + 1)
        {
            return None;
        }
        let mut out = CleanAck {
            newly_acked: cum_ack - self.snd_una,
            newest: None,
            reordering: false,
        };
        let prior_fack = self.fack;
        while let Some(front) = self.segs.front_mut() {
            if front.end().le(cum_ack) {
                // Clean: neither SACKed nor ever retransmitted.
                let seg = self.segs.pop_front().expect("front exists");
                let d = Delivered {
                    sent_at: seg.sent_at,
                    end: seg.end(),
                    retransmitted: false,
                };
                match out.newest {
                    Some(cur) if !sent_after(d.sent_at, d.end, cur.sent_at, cur.end) => {}
                    _ => out.newest = Some(d),
                }
                if seg.end().lt(prior_fack) {
                    out.reordering = true;
                }
            } else {
                if front.start.lt(cum_ack) {
                    let cut = cum_ack - front.start;
                    front.start = cum_ack;
                    front.len -= cut;
                }
                break;
            }
        }
        self.snd_una = cum_ack;
        self.fack = self.fack.max(cum_ack);
        Some(out)
    }

    /// Walks the segments from the highest down, calling `f(index,
    /// segment, is_lost)` with RFC 6675's IsLost for each unSACKed one
    /// (or its explicit lost mark). O(n), no allocation.
    fn for_each_unsacked_rev(&self, mut f: impl FnMut(usize, &Segment, bool)) {
        let mut sacked_above = 0u32;
        let mut sacked_bytes_above = 0u32;
        for (i, s) in self.segs.iter().enumerate().rev() {
            if s.sacked {
                sacked_above += 1;
                sacked_bytes_above = sacked_bytes_above.saturating_add(s.len);
            } else {
                let lost = s.lost || lost_rule(sacked_above, sacked_bytes_above, self.smss);
                f(i, s, lost);
            }
        }
    }

    /// RFC 6675 §4 IsLost(seq): whether the unSACKed segment holding
    /// `seq` is deemed lost: DupThresh SACKed segments lie above it, or
    /// more than (DupThresh − 1)·SMSS SACKed octets do; or it was marked
    /// lost by a timeout or RACK. False for octets not in flight or
    /// SACKed.
    pub fn is_lost(&self, seq: SeqNumber) -> bool {
        if !seq.in_window(self.snd_una, self.flight_size()) {
            return false;
        }
        let una = self.snd_una;
        let off = seq - una;
        let i = self
            .segs
            .partition_point(|s| (s.start - una) + s.len <= off);
        let Some(seg) = self.segs.get(i) else {
            return false;
        };
        if seg.sacked {
            return false;
        }
        if seg.lost {
            return true;
        }
        let (mut n, mut bytes) = (0u32, 0u32);
        for s in self.segs.range(i + 1..).filter(|s| s.sacked) {
            n += 1;
            bytes = bytes.saturating_add(s.len);
        }
        lost_rule(n, bytes, self.smss)
    }

    /// RFC 6675 §4 SetPipe: for each unSACKed segment, its octets count
    /// once if it is not lost and once more if a retransmission of it is
    /// in flight.
    pub fn pipe(&self) -> u32 {
        if !self.tainted {
            return self.flight_size();
        }
        let mut pipe = 0u32;
        self.for_each_unsacked_rev(|_, s, lost| {
            if !lost {
                pipe = pipe.saturating_add(s.len);
            }
            if s.retransmitted {
                pipe = pipe.saturating_add(s.len);
            }
        });
        pipe
    }

    /// RFC 6675 §4 NextSeg: what to send next.
    ///
    /// `new_data` is how many octets beyond `SND.NXT` the application has
    /// queued *and* the receive window allows (rule 2); a new segment is
    /// at most SMSS and needs room on the scoreboard. `recovery_point` is
    /// RecoveryPoint when in loss recovery; rules 3 (unSACKed, not lost)
    /// and 4 (the rescue retransmission) apply only then: outside
    /// recovery a hole below HighSACK may be mere reordering.
    ///
    /// "Not yet retransmitted" is the segment's retransmitted flag, which
    /// within a recovery phase matches RFC 6675's `S > HighRxt` and also
    /// lets a segment whose retransmission RACK found lost go again.
    pub fn next_seg(&self, new_data: u32, recovery_point: Option<SeqNumber>) -> Option<NextSeg> {
        // Rule 1: the lowest lost segment not yet retransmitted. IsLost
        // implies SACKed data above, so below HighSACK as the RFC says;
        // segments marked lost by a timeout or RACK qualify wherever they
        // are, or a tail loss above HighSACK would wait for a rescue.
        // Rule 3: the lowest unSACKed, not lost, not retransmitted segment
        // below HighSACK.
        let high_sack = self.high_sack();
        let mut rule1 = None;
        let mut rule3 = None;
        // Clean (nothing SACKed, lost or retransmitted): no rule 1 or 3.
        if self.tainted {
            self.for_each_unsacked_rev(|_, s, lost| {
                if s.retransmitted {
                    return;
                }
                if lost {
                    rule1 = Some((s.start, s.len));
                } else if high_sack.is_some_and(|hs| s.start.lt(hs)) {
                    rule3 = Some((s.start, s.len));
                }
            });
        }
        if let Some(seg) = rule1 {
            return Some(NextSeg::of(Rule::Lost, seg));
        }
        // Rule 2: new data.
        if new_data > 0 && self.has_room() {
            return Some(NextSeg::of(
                Rule::New,
                (self.snd_nxt, new_data.min(self.smss)),
            ));
        }
        // Rules 3 and 4 are loss recovery's (RFC 6675 §5 step C): outside
        // it a hole below HighSACK may be reordering, not loss.
        recovery_point?;
        if let Some(seg) = rule3 {
            return Some(NextSeg::of(Rule::Unsacked, seg));
        }
        // Rule 4: one rescue retransmission per recovery, when HighACK >
        // RescueRxt (or it is undefined).
        let allowed = match self.rescue_rxt {
            None => true,
            Some(r) => self.snd_una.gt(r),
        };
        if allowed {
            // Not a segment this recovery already retransmitted: the
            // rescue protects a tail no retransmission covered, and a
            // second copy of the same data is what RFC 6675 §5 step 4.3
            // sets RescueRxt to prevent (a lost retransmission is RACK's
            // to find, RFC 8985 §6.2). Linux has no rescue at all
            // (packetdrill `prr-ss-30pkt-lost1_4` resent 3001:4001 twice).
            if let Some(s) = self
                .segs
                .iter()
                .rev()
                .find(|s| !s.sacked)
                .filter(|s| !s.retransmitted)
            {
                return Some(NextSeg::of(Rule::Rescue, (s.start, s.len)));
            }
        }
        None
    }

    /// Checks the structural invariants (for tests and debug
    /// assertions): segments contiguous from `SND.UNA` to `SND.NXT`, the
    /// SACKed counters consistent, within capacity.
    pub fn check_invariants(&self) -> Result<(), &'static str> {
        let mut at = self.snd_una;
        let (mut sb, mut sn) = (0u32, 0u32);
        for s in &self.segs {
            if s.start != at {
                return Err("segments not contiguous");
            }
            if s.len == 0 {
                return Err("empty segment");
            }
            if s.sacked {
                sb += s.len;
                sn += 1;
            }
            at = s.end();
        }
        if at != self.snd_nxt {
            return Err("segments do not reach SND.NXT");
        }
        if !self.tainted
            && self
                .segs
                .iter()
                .any(|s| s.sacked || s.lost || s.retransmitted)
        {
            return Err("a SACKed, lost or retransmitted segment while clean");
        }
        if sb != self.sacked_bytes || sn != self.sacked_segs {
            return Err("SACK counters inconsistent");
        }
        if self.segs.len() > self.capacity {
            return Err("over capacity");
        }
        Ok(())
    }
}

/// The counting part of IsLost (RFC 6675 §4).
fn lost_rule(sacked_segs_above: u32, sacked_bytes_above: u32, smss: u32) -> bool {
    sacked_segs_above >= DUP_THRESH
        || u64::from(sacked_bytes_above) > u64::from(DUP_THRESH - 1) * u64::from(smss)
}

/// Helpers shared by the tests of the loss-recovery modules.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// The SMSS the tests use.
    pub const MSS: u32 = 1000;
    /// Time zero.
    pub const T0: Instant = Instant::ZERO;

    /// A sequence number.
    pub fn s(n: u32) -> SeqNumber {
        SeqNumber(n)
    }

    /// NextSeg rule 1 for the full segment at `start`.
    pub fn lost(start: u32) -> Option<NextSeg> {
        Some(NextSeg::new(Rule::Lost, s(start), MSS))
    }

    /// NextSeg rule 2 for a full segment at `start`.
    pub fn new_data(start: u32) -> Option<NextSeg> {
        Some(NextSeg::new(Rule::New, s(start), MSS))
    }

    /// A scoreboard from 0 with `n` full segments sent at `at`.
    pub fn sent(n: u32, at: Instant) -> Scoreboard {
        let mut sb = Scoreboard::new(64, MSS, s(0));
        for i in 0..n {
            sb.on_send(s(i * MSS), MSS, at).unwrap();
        }
        sb
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use pathstack_core::Duration;
    use proptest::prelude::*;

    /// A scoreboard at `base` with `n` full segments sent.
    fn board(base: u32, n: u32) -> Scoreboard {
        let mut sb = Scoreboard::new(64, MSS, s(base));
        for i in 0..n {
            sb.on_send(s(base) + i * MSS, MSS, T0).unwrap();
        }
        sb
    }

    fn blk(a: u32, b: u32) -> SackBlock {
        SackBlock::new(s(a), s(b))
    }

    #[test]
    fn is_lost_by_count() {
        // Segments 0..6 of 1000; SACK segments 2, 4, 5 (discontiguous
        // and contiguous): 3 SACKed segments above segment 0 and 1.
        let mut sb = board(0, 6);
        sb.on_ack(s(0), &[blk(2000, 3000), blk(4000, 6000)], T0);
        assert!(sb.is_lost(s(0)));
        assert!(sb.is_lost(s(1500)));
        assert!(!sb.is_lost(s(3000)), "only 2 SACKed above, 2000 bytes");
        assert!(!sb.is_lost(s(2000)), "SACKed is not lost");
        assert!(!sb.is_lost(s(6000)), "beyond SND.NXT");
    }

    #[test]
    fn is_lost_by_bytes() {
        // Small first segments, then two large SACKed ones: 2 segments
        // above but more than (3-1)·SMSS = 2000 bytes.
        let mut sb = Scoreboard::new(8, MSS, s(0));
        sb.on_send(s(0), 500, T0).unwrap();
        sb.on_send(s(500), 1000, T0).unwrap();
        sb.on_send(s(1500), 1000, T0).unwrap();
        sb.on_send(s(2500), 1001, T0).unwrap();
        sb.on_ack(s(0), &[blk(1500, 3501)], T0);
        assert!(sb.is_lost(s(0)), "2001 > 2000 SACKed bytes above");
        sb = Scoreboard::new(8, MSS, s(0));
        sb.on_send(s(0), 500, T0).unwrap();
        sb.on_send(s(500), 1000, T0).unwrap();
        sb.on_send(s(1500), 1000, T0).unwrap();
        sb.on_ack(s(0), &[blk(500, 2500)], T0);
        assert!(!sb.is_lost(s(0)), "exactly 2000 bytes is not more");
    }

    #[test]
    fn pipe_counts_lost_and_retransmitted() {
        // 0..8, SACK 3..8 (5 segments): 0,1,2 lost.
        let mut sb = board(0, 8);
        sb.on_ack(s(0), &[blk(3000, 8000)], T0);
        assert_eq!(sb.pipe(), 0);
        sb.on_retransmit(s(0), T0).unwrap();
        // Lost and retransmitted: counts once (rule b only).
        assert_eq!(sb.pipe(), 1000);
        assert_eq!(sb.high_rxt(), Some(s(999)));
        // A retransmitted segment that is not lost counts twice.
        let mut sb = board(0, 4);
        sb.on_retransmit(s(0), T0).unwrap();
        assert_eq!(sb.pipe(), 5000);
    }

    #[test]
    fn next_seg_prefers_hole_before_new_data() {
        let mut sb = board(0, 6);
        sb.on_ack(s(0), &[blk(1000, 2000), blk(3000, 6000)], T0);
        // Segment 0 lost (4 SACKed above), segment 2 lost (3 above).
        assert_eq!(sb.next_seg(10_000, Some(s(6000))), lost(0));
        sb.on_retransmit(s(0), T0).unwrap();
        assert_eq!(sb.next_seg(10_000, Some(s(6000))), lost(2000));
        sb.on_retransmit(s(2000), T0).unwrap();
        assert_eq!(sb.next_seg(10_000, Some(s(6000))), new_data(6000));
    }

    #[test]
    fn next_seg_retransmits_marked_tail_above_high_sack() {
        // SACK of segment 1 only, then a timeout: 0, 2 and 3 are lost; 3
        // lies above HighSACK and is still retransmitted before new data.
        let mut sb = board(0, 4);
        sb.on_ack(s(0), &[blk(1000, 2000)], T0);
        sb.on_rto();
        for want in [0, 2000, 3000] {
            let n = sb.next_seg(5000, None);
            assert_eq!(n, lost(want));
            sb.on_retransmit(s(want), T0).unwrap();
        }
        assert_eq!(sb.next_seg(5000, None), new_data(4000));
    }

    #[test]
    fn next_seg_rules_3_and_4() {
        let mut sb = board(0, 4);
        // One SACKed segment at the top: 0..3 unSACKed, none lost.
        sb.on_ack(s(0), &[blk(3000, 4000)], T0);
        assert_eq!(
            sb.next_seg(0, Some(s(4000))),
            Some(NextSeg::new(Rule::Unsacked, s(0), 1000))
        );
        // Outside recovery the hole is not retransmitted (reordering).
        assert_eq!(sb.next_seg(0, None), None);
        // Nothing SACKed, nothing lost, no new data: rescue in recovery.
        let sb = board(0, 3);
        assert_eq!(sb.next_seg(0, None), None);
        assert_eq!(
            sb.next_seg(0, Some(s(3000))),
            Some(NextSeg::new(Rule::Rescue, s(2000), 1000))
        );
        let mut sb = sb;
        sb.on_rescue_retransmit(s(2000), s(3000), T0).unwrap();
        assert_eq!(sb.rescue_rxt(), Some(s(3000)));
        assert_eq!(sb.next_seg(0, Some(s(3000))), None, "one rescue only");
    }

    /// The rescue is never a second copy of a segment this recovery
    /// already retransmitted (RFC 6675 §5 step 4.3's intent).
    #[test]
    fn no_rescue_of_a_tail_already_retransmitted() {
        let mut sb = board(0, 4);
        sb.on_ack(s(0), &[blk(3000, 4000)], T0);
        for k in 0..3 {
            sb.on_retransmit(s(k * 1000), T0).unwrap();
        }
        assert_eq!(sb.rescue_rxt(), None);
        assert_eq!(sb.next_seg(0, Some(s(4000))), None);
    }

    #[test]
    fn cum_ack_trims_and_ignores_bogus() {
        let mut sb = board(100, 3);
        let o = sb.on_ack(s(1600), &[], T0);
        assert!(o.cum_advanced);
        assert_eq!(o.newly_acked, 1500);
        assert_eq!(sb.high_ack(), s(1600));
        assert_eq!(sb.segments().next().unwrap().len, 500);
        // Old and future ACKs are ignored.
        let o = sb.on_ack(s(50), &[], T0);
        assert!(o.cum_ignored && !o.cum_advanced);
        let o = sb.on_ack(s(100_000), &[blk(u32::MAX - 5, 7)], T0);
        assert!(o.cum_ignored);
        assert_eq!(sb.high_ack(), s(1600));
        sb.check_invariants().unwrap();
    }

    #[test]
    fn sack_outside_window_ignored() {
        let mut sb = board(0, 3);
        sb.on_ack(s(1000), &[], T0);
        let o = sb.on_ack(s(1000), &[blk(5000, 6000), blk(10, 20)], T0);
        // The first block is wholly below the cum ACK: a D-SACK.
        assert_eq!(o.dsack, None, "5000..6000 is not below 1000");
        assert_eq!(o.sack_ignored, 2);
        assert_eq!(o.newly_sacked, 0);
    }

    #[test]
    fn dsack_recognised() {
        // RFC 2883 §4.1.1: first block below the cumulative ACK.
        let mut sb = board(0, 4);
        let o = sb.on_ack(s(2000), &[blk(0, 1000)], T0);
        assert_eq!(o.dsack, Some(blk(0, 1000)));
        // RFC 2883 §4.2: first block within the second.
        let o = sb.on_ack(s(2000), &[blk(3000, 4000), blk(3000, 4000)], T0);
        assert_eq!(o.dsack, Some(blk(3000, 4000)));
        assert_eq!(o.newly_sacked, 1000, "the second block still SACKs");
        sb.check_invariants().unwrap();
    }

    #[test]
    fn wraps_around_sequence_space() {
        let base = u32::MAX - 2500;
        let mut sb = board(base, 6);
        sb.on_ack(
            s(base),
            &[blk(base.wrapping_add(2000), base.wrapping_add(6000))],
            T0,
        );
        assert!(sb.is_lost(s(base)));
        assert_eq!(sb.sacked_segments(), 4);
        sb.on_ack(s(base.wrapping_add(6000)), &[], T0);
        assert!(sb.is_empty());
        sb.check_invariants().unwrap();
    }

    #[test]
    fn full_board_refuses() {
        let mut sb = Scoreboard::new(2, MSS, s(0));
        sb.on_send(s(0), MSS, T0).unwrap();
        sb.on_send(s(1000), MSS, T0).unwrap();
        assert_eq!(sb.on_send(s(2000), MSS, T0), Err(ScoreboardError::Full));
        assert_eq!(
            sb.on_send(s(5), MSS, T0),
            Err(ScoreboardError::NotContiguous)
        );
        let mut big = Scoreboard::new(4, MSS, s(0));
        big.on_send(s(0), 1 << 30, T0).unwrap();
        assert_eq!(
            big.on_send(s(1 << 30), 1 << 30, T0),
            Err(ScoreboardError::TooMuchInFlight)
        );
        // A D-SACK is judged against an acceptable cumulative ACK only.
        let o = big.on_ack(s(u32::MAX), &[SackBlock::new(s(0), s(10))], T0);
        assert!(o.cum_ignored && o.dsack.is_none());
        assert_eq!(sb.next_seg(5000, None), None);
    }

    proptest! {
        /// On a clean scoreboard, `on_clean_ack` leaves the state
        /// `on_ack` leaves and finds what it finds; it declines anything
        /// else, changing nothing.
        #[test]
        fn clean_ack_is_on_ack(
            base in any::<u32>(),
            sends in proptest::collection::vec((1u32..2000, 0u64..3), 1..20),
            acks in proptest::collection::vec(any::<u32>(), 1..10),
            taint in any::<bool>(),
        ) {
            let mut sb = Scoreboard::new(32, MSS, s(base));
            let (mut at, mut t) = (s(base), T0);
            for (l, dt) in sends {
                t = t + Duration::from_micros(dt);
                if sb.on_send(at, l, t).is_ok() {
                    at += l;
                }
            }
            if taint {
                sb.mark_lost_at(0);
            }
            for a in acks {
                let flight = sb.flight_size();
                // Mostly within (SND.UNA, SND.NXT], sometimes anywhere.
                let cum = if a % 4 == 0 { s(a) } else { sb.high_ack() + a % (flight + 1) };
                let before = format!("{sb:?}");
                let mut reference = sb.clone();
                let want = reference.on_ack(cum, &[], T0);
                match sb.on_clean_ack(cum) {
                    None => {
                        prop_assert_eq!(format!("{sb:?}"), before);
                        prop_assert!(!sb.is_clean() || !want.cum_advanced);
                    }
                    Some(got) => {
                        prop_assert!(want.cum_advanced && !want.cum_ignored);
                        prop_assert_eq!(got.newly_acked, want.newly_acked);
                        prop_assert_eq!(got.newest, want.newest_original);
                        prop_assert_eq!(got.reordering, want.reordering);
                        prop_assert_eq!(want.newest_retransmitted, None);
                        prop_assert_eq!(want.dsack, None);
                        prop_assert_eq!(format!("{sb:?}"), format!("{reference:?}"));
                    }
                }
                sb = reference;
            }
        }

        /// ACKs and SACKs consistent with a random set of delivered
        /// segments (plus random junk blocks) never break the invariants:
        /// SACKed ⊆ in flight, pipe ≤ in-flight octets counting presumed
        /// retransmissions, the cumulative ACK monotone.
        #[test]
        fn invariants_hold(
            base in any::<u32>(),
            lens in proptest::collection::vec(1u32..2000, 1..40),
            delivered in proptest::collection::vec(any::<bool>(), 40),
            steps in proptest::collection::vec((0u8..4, any::<u32>(), any::<u32>()), 1..60),
        ) {
            let mut sb = Scoreboard::new(32, MSS, s(base));
            let mut starts = Vec::new();
            let mut at = s(base);
            for &l in &lens {
                if sb.on_send(at, l, T0).is_ok() {
                    starts.push((at, l));
                    at += l;
                }
            }
            let n = starts.len();
            // The receiver holds the delivered segments; its cum ACK is the
            // first undelivered one.
            let mut rcv_una = 0usize;
            let mut last_una = sb.high_ack();
            for (kind, a, b) in steps {
                let mut blocks = [blk(0, 0); 4];
                let mut nb = 0;
                match kind {
                    0 => {
                        // Deliver one more segment (retransmission).
                        let i = a as usize % n;
                        let _ = sb.on_retransmit(starts[i].0, T0);
                    }
                    1 | 2 => {
                        while rcv_una < n && delivered[rcv_una] {
                            rcv_una += 1;
                        }
                        // Up to 4 runs of delivered segments above rcv_una.
                        let mut i = rcv_una + (a as usize % 3);
                        while i < n && nb < 4 {
                            if delivered[i] {
                                let j0 = i;
                                while i < n && delivered[i] { i += 1; }
                                let l = starts[j0].0;
                                let r = starts[i - 1].0 + starts[i - 1].1;
                                blocks[nb] = SackBlock::new(l, r);
                                nb += 1;
                            }
                            i += 1;
                        }
                    }
                    _ => {
                        blocks[0] = SackBlock::new(s(a), s(b));
                        blocks[1] = SackBlock::new(s(b), s(a));
                        nb = 2;
                    }
                }
                if kind == 2 && rcv_una < n {
                    // The hole gets filled.
                    rcv_una += 1;
                }
                let cum = if rcv_una < n { starts[rcv_una].0 } else { at };
                let cum = if kind == 3 { s(a ^ b) } else { cum };
                let _ = sb.on_ack(cum, &blocks[..nb], T0);
                prop_assert!(sb.check_invariants().is_ok(), "{:?}", sb.check_invariants());
                prop_assert!(last_una.le(sb.high_ack()), "cum ACK went back");
                last_una = sb.high_ack();
                let outstanding = sb.flight_size();
                prop_assert!(sb.sacked_bytes() <= outstanding);
                let retrans: u32 = sb.segments().filter(|s| !s.sacked && s.retransmitted).map(|s| s.len).sum();
                prop_assert!(sb.pipe() <= outstanding - sb.sacked_bytes() + retrans);
                if let Some(ns) = sb.next_seg(1000, Some(at)) {
                    prop_assert!(ns.len > 0);
                }
            }
        }
    }
}
