//! SEGMENT ARRIVES (RFC 9293 §3.10.7), with the checks of RFC 7323
//! (PAWS), RFC 5961 (challenge ACKs) and the ACK processing of RFC 6675
//! and RFC 8985.

use super::due::Due;
use super::Tcb;
use crate::tcp::congestion::{CcConfig, CongestionControl};
use crate::tcp::conn_drop_reason::ConnDropReason as Drop;
use crate::tcp::error::TcpError;
use crate::tcp::rack::TlpVerdict;
use crate::tcp::recv_buffer::{RecvBuffer, RecvConfig};
use crate::tcp::sack_scoreboard::{SackBlock, Scoreboard};
use crate::tcp::seq::SeqNumber;
use crate::tcp::state::State;
use crate::tcp::timers::Timer;
use crate::wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
use crate::wire::tcp_predicted::TcpPredicted;
use pathstack_core::time::{Duration, Instant};

/// RFC 9293 §3.7.1: the MSS assumed when the peer sends none.
const DEFAULT_MSS: u16 = 536;
/// RFC 7323 §5.5: a TS.Recent idle this long is invalid for PAWS.
const PAWS_IDLE: Duration = Duration::from_secs(24 * 24 * 3600);
/// Segments the scoreboard tracks beyond the send buffer's full-sized
/// ones (small writes with Nagle off).
const SCOREBOARD_SLACK: usize = 64;

/// `a` is before `b` in timestamp space (RFC 7323 §5.2, modulo 2^32).
pub(super) fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

impl Tcb {
    /// A segment for this connection (the stage checked the checksum and
    /// parsed it). `Err` says why it was dropped, for the path's counters;
    /// a dropped segment may still have queued an answer (a duplicate or
    /// challenge ACK, a reset) for [`poll_output`](Self::poll_output).
    pub fn on_segment(&mut self, now: Instant, seg: &TcpRepr, payload: &[u8]) -> Result<(), Drop> {
        self.stats.segs_in += 1;
        // Header prediction first (see `predict.rs`): the next segment
        // expected on a quiet connection takes the short path.
        if self.short_paths() && self.predicted(now, &TcpPredicted::from(seg), payload) {
            return Ok(());
        }
        match self.state {
            State::Closed => {
                self.set_rst(super::reset_for(seg, payload.len()));
                Err(Drop::Closed)
            }
            State::Listen => self.on_listen(now, seg, payload),
            State::SynSent => self.on_syn_sent(now, seg, payload),
            _ => self.on_synchronized(now, seg, payload),
        }
    }

    /// Whether a SYN arriving in TIME-WAIT may open a new incarnation of
    /// the connection (RFC 6191 §2 via RFC 9293 §3.6.1): its timestamp is
    /// newer than TS.Recent, or, without timestamps, its sequence number
    /// is beyond RCV.NXT.
    pub fn accepts_reopen(&self, seg: &TcpRepr) -> bool {
        if self.state != State::TimeWait
            || !seg.flags.contains(TcpFlags::SYN)
            || seg.flags.intersects(TcpFlags::ACK | TcpFlags::RST)
        {
            return false;
        }
        match (self.ts_ok, seg.options.timestamps) {
            (true, Some((tsval, _))) => ts_before(self.ts_recent, tsval),
            _ => SeqNumber(seg.seq).gt(self.rcv_nxt()),
        }
    }

    /// Takes the options of the peer's SYN (RFC 9293 §3.7.1, RFC 7323
    /// §2.2 and §3.2, RFC 2018 §2) and makes the receive side.
    fn negotiate(&mut self, opts: &TcpOptions, now: Instant) {
        let peer_mss = opts.mss.unwrap_or(DEFAULT_MSS).max(64);
        let ws = if self.cfg.window_scaling {
            opts.window_scale
        } else {
            None
        };
        self.ws_ok = ws.is_some();
        self.snd_shift = ws.map_or(0, |s| s.min(14));
        self.rcv_shift = if ws.is_some() {
            self.cfg.window_shift()
        } else {
            0
        };
        self.sack_ok = self.cfg.sack && opts.sack_permitted;
        self.ts_ok = self.cfg.timestamps && opts.timestamps.is_some();
        if let Some((tsval, _)) = opts.timestamps.filter(|_| self.ts_ok) {
            self.ts_recent = tsval;
            self.ts_recent_at = now;
        }
        let ts_len = if self.ts_ok { 12 } else { 0 };
        self.smss = u32::from(peer_mss.min(self.cfg.mss))
            .saturating_sub(ts_len)
            .max(32);
        self.rcv = RecvBuffer::new(
            RecvConfig {
                capacity: self.cfg.recv_buffer,
                max_ooo_bytes: self.cfg.max_ooo_bytes,
                max_ooo_ranges: self.cfg.max_ooo_ranges,
                mss: self.smss,
                window_shift: self.rcv_shift,
            },
            self.irs + 1,
        );
        self.last_ack_sent = self.irs + 1;
    }

    /// The send side once the handshake is done: the scoreboard sized for
    /// the send buffer, the congestion controller with the real SMSS.
    fn start_sending(&mut self, seg: &TcpRepr, now: Instant) {
        let una = self.iss + 1;
        let cap = self.cfg.send_buffer / self.smss.max(1) as usize + SCOREBOARD_SLACK;
        self.sb = Scoreboard::new(cap, self.smss, una);
        self.cc = crate::tcp::congestion::AnyCongestion::new(
            self.cfg.congestion,
            CcConfig {
                smss: self.smss,
                ..CcConfig::default()
            },
        );
        // The window of a SYN or SYN-ACK is never scaled (RFC 7323 §2.2);
        // that of the third segment is.
        self.snd_wnd = if seg.flags.contains(TcpFlags::SYN) {
            u32::from(seg.window)
        } else {
            u32::from(seg.window) << self.snd_shift
        };
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = SeqNumber(seg.seq);
        self.snd_wl2 = SeqNumber(seg.ack);
        self.last_send = now;
        self.rtx_count = 0;
        self.timers.set(Timer::Rtx, None);
        if let Some(k) = self.cfg.keepalive {
            self.timers.set(Timer::Keepalive, Some(now + k.idle.into()));
        }
    }

    /// LISTEN (RFC 9293 §3.10.7.2), for a connection its listener made.
    fn on_listen(&mut self, now: Instant, seg: &TcpRepr, payload: &[u8]) -> Result<(), Drop> {
        if seg.flags.contains(TcpFlags::RST) {
            return Err(Drop::NotSyn);
        }
        if seg.flags.contains(TcpFlags::ACK) {
            let Some(cookie) = self.cookie.take() else {
                self.set_rst(super::reset_for(seg, payload.len()));
                self.enter_closed(None);
                return Err(Drop::NotSyn);
            };
            // The ACK of a cookie SYN-ACK: the handshake is complete
            // (RFC 4987 §3.6); the options come from the cookie.
            self.irs = SeqNumber(seg.seq.wrapping_sub(1));
            let mut opts = TcpOptions::default();
            opts.mss = Some(cookie.mss);
            opts.window_scale = cookie.window_scale;
            opts.sack_permitted = cookie.sack_permitted;
            opts.timestamps = seg.options.timestamps;
            self.negotiate(&opts, now);
            self.syn_sent_at = Some(now);
            self.state = State::SynReceived;
            return self.on_synchronized(now, seg, payload);
        }
        if !seg.flags.contains(TcpFlags::SYN) {
            return Err(Drop::NotSyn);
        }
        self.irs = SeqNumber(seg.seq);
        self.negotiate(&seg.options, now);
        self.state = State::SynReceived;
        self.due.set(Due::SYN);
        // Data on the SYN is not taken (no TCP Fast Open); the peer sends
        // it again after the handshake.
        Ok(())
    }

    /// SYN-SENT (RFC 9293 §3.10.7.3).
    fn on_syn_sent(&mut self, now: Instant, seg: &TcpRepr, payload: &[u8]) -> Result<(), Drop> {
        let ack = SeqNumber(seg.ack);
        let has_ack = seg.flags.contains(TcpFlags::ACK);
        if has_ack && (ack.le(self.iss) || ack.gt(self.iss + 1)) {
            if !seg.flags.contains(TcpFlags::RST) {
                self.set_rst(super::reset_for(seg, payload.len()));
            }
            return Err(Drop::BadAck);
        }
        if seg.flags.contains(TcpFlags::RST) {
            // Acceptable only if it acknowledges our SYN (RFC 5961 §3.2
            // keeps this rule for SYN-SENT).
            if has_ack {
                self.enter_closed(Some(TcpError::Refused));
                return Ok(());
            }
            return Err(Drop::RstNotExact);
        }
        if !seg.flags.contains(TcpFlags::SYN) {
            return Err(Drop::NoAck);
        }
        self.irs = SeqNumber(seg.seq);
        self.negotiate(&seg.options, now);
        if !has_ack {
            // Simultaneous open (RFC 9293 Figure 8): SYN-RECEIVED, our SYN
            // goes again with the ACK of theirs.
            self.state = State::SynReceived;
            self.due.set(Due::SYN);
            return Ok(());
        }
        self.handshake_rtt(now);
        self.start_sending(seg, now);
        self.state = self.established_state();
        self.due.set(Due::ACK);
        if !payload.is_empty() {
            self.take_data(now, SeqNumber(seg.seq) + 1, payload);
        }
        if seg.flags.contains(TcpFlags::FIN) {
            self.fin_in = Some(SeqNumber(seg.seq) + 1 + payload.len() as u32);
            self.check_fin(now);
        }
        Ok(())
    }

    /// ESTABLISHED, or FIN-WAIT-1 when the application shut the sending
    /// side during the handshake.
    fn established_state(&self) -> State {
        if self.snd.is_closed() {
            State::FinWait1
        } else {
            State::Established
        }
    }

    /// The RTT of the handshake, unless the SYN was retransmitted (Karn);
    /// after a SYN timeout the RTO restarts at 3 s (RFC 6298 §5.7).
    fn handshake_rtt(&mut self, now: Instant) {
        if self.syn_retransmitted {
            self.rto.on_established_after_syn_timeout();
        } else if let Some(t) = self.syn_sent_at {
            let rtt = now.saturating_since(t);
            self.rto.on_sample(rtt);
            self.rack.on_rtt_sample(rtt);
        }
    }

    /// The states after the handshake began (RFC 9293 §3.10.7.4).
    fn on_synchronized(&mut self, now: Instant, seg: &TcpRepr, payload: &[u8]) -> Result<(), Drop> {
        let seq = SeqNumber(seg.seq);
        let rst = seg.flags.contains(TcpFlags::RST);
        let syn = seg.flags.contains(TcpFlags::SYN);
        let fin = seg.flags.contains(TcpFlags::FIN);

        if self.state == State::SynReceived && syn && !rst && seq == self.irs {
            if seg.flags.contains(TcpFlags::ACK) && !self.passive {
                // Simultaneous open (RFC 9293 §3.5 Figure 8, line 6): the
                // peer's SYN-ACK repeats the SYN already taken and
                // acknowledges ours; its ACK completes the handshake.
                let mut rest = *seg;
                rest.flags.remove(TcpFlags::SYN);
                rest.seq = seg.seq.wrapping_add(1);
                return self.on_synchronized(now, &rest, payload);
            }
            if !seg.flags.contains(TcpFlags::ACK) {
                // A retransmitted SYN: the SYN-ACK again.
                self.due.set(Due::SYN);
                return Ok(());
            }
        }

        // PAWS (RFC 7323 §5.3 R1), before the sequence check.
        if self.ts_ok && !rst {
            if let Some((tsval, _)) = seg.options.timestamps {
                if ts_before(tsval, self.ts_recent)
                    && now.saturating_since(self.ts_recent_at) < PAWS_IDLE
                {
                    self.due.set(Due::ACK);
                    return Err(Drop::Paws);
                }
            }
        }

        // First: sequence number acceptable?
        let rcv_nxt = self.rcv_nxt();
        let wnd = self.rcv.advertised_right_edge().max(rcv_nxt) - rcv_nxt;
        let seg_len = payload.len() as u32 + u32::from(syn) + u32::from(fin);
        let mut data_ok = true;
        let acceptable = match (seg_len, wnd) {
            (0, 0) => seq == rcv_nxt,
            (0, _) => seq.in_window(rcv_nxt, wnd),
            (_, 0) => {
                // RFC 9293 §3.10.7.4: with a zero window, valid ACKs, URGs
                // and RSTs are still processed; the data is not taken.
                data_ok = false;
                seq == rcv_nxt
            }
            (_, _) => seq.in_window(rcv_nxt, wnd) || (seq + (seg_len - 1)).in_window(rcv_nxt, wnd),
        };
        if !acceptable {
            if !rst {
                self.due.set(Due::ACK);
                if !payload.is_empty() && (seq + payload.len() as u32).le(rcv_nxt) {
                    // Wholly below RCV.NXT: the ACK reports it in a
                    // D-SACK block (RFC 2883 §4: "the first SACK block
                    // SHOULD specify the contiguous sequence space of
                    // the duplicate segment"); `insert` takes nothing.
                    self.rcv.insert(seq, payload);
                }
            }
            if fin
                && !rst
                && self.state == State::TimeWait
                && seq + payload.len() as u32 + 1 == rcv_nxt
            {
                // The peer's FIN again (RFC 9293 §3.10.7.4 eighth,
                // TIME-WAIT): acknowledged, and 2·MSL restarts.
                self.timers
                    .set(Timer::TimeWait, Some(now + self.cfg.time_wait.into()));
            }
            return Err(Drop::OutOfWindow);
        }

        // Second: RST (RFC 5961 §3.2: only exactly at RCV.NXT; elsewhere
        // in the window a challenge ACK).
        if rst {
            if seq != rcv_nxt {
                self.challenge_ack(now);
                return Err(Drop::RstNotExact);
            }
            match self.state {
                State::SynReceived if self.passive => self.enter_closed(None),
                State::SynReceived => self.enter_closed(Some(TcpError::Refused)),
                State::Established | State::FinWait1 | State::FinWait2 | State::CloseWait => {
                    self.enter_closed(Some(TcpError::Reset))
                }
                // RFC 1337 §3 (fix F1): TIME-WAIT ignores resets, so a
                // reset cannot cut its 2·MSL short (TIME-WAIT
                // assassination).
                State::TimeWait => return Ok(()),
                _ => self.enter_closed(None),
            }
            return Ok(());
        }

        // Fourth: SYN (RFC 5961 §4.2: a challenge ACK in any synchronized
        // state; in SYN-RECEIVED a retransmitted SYN gets the SYN-ACK).
        if syn {
            self.challenge_ack(now);
            return Err(Drop::SynInWindow);
        }

        // Fifth: ACK.
        if !seg.flags.contains(TcpFlags::ACK) {
            return Err(Drop::NoAck);
        }
        let ack = SeqNumber(seg.ack);
        if self.state == State::SynReceived {
            if !(ack.gt(self.iss) && ack.le(self.iss + 1)) {
                self.set_rst(super::reset_for(seg, payload.len()));
                return Err(Drop::BadAck);
            }
            self.handshake_rtt(now);
            self.start_sending(seg, now);
            self.due.clear(Due::SYN);
            self.state = self.established_state();
        }
        self.on_ack(now, seg, payload.len())?;
        // RFC 7323 §4.3: TS.Recent from a segment covering Last.ACK.sent,
        // once its ACK is known acceptable (a segment acknowledging what
        // was never sent is dropped above, RFC 9293 §3.10.7.4 fifth, and
        // must not move TS.Recent: its TSval would make PAWS drop every
        // later segment of the peer's — Linux's `tcp_ack` updates it only
        // past the same check, packetdrill `ts_recent/invalid_ack.pkt`).
        if let Some((tsval, _)) = seg.options.timestamps.filter(|_| self.ts_ok) {
            if seq.le(self.last_ack_sent) && !ts_before(tsval, self.ts_recent) {
                self.ts_recent = tsval;
                self.ts_recent_at = now;
            }
        }
        if self.state == State::Closed {
            return Ok(());
        }

        // Sixth: URG (RFC 9293 §3.8.5): data is inline; remember the mark.
        if seg.flags.contains(TcpFlags::URG) && self.state.may_receive() {
            let up = seq + u32::from(seg.urgent);
            self.rcv_up = Some(self.rcv_up.map_or(up, |u| u.max(up)));
        }

        // Seventh: segment text.
        if !payload.is_empty() {
            if !data_ok {
                self.due.set(Due::ACK);
            } else if self.state.may_receive() && self.fin_in.is_none_or(|f| seq.lt(f)) {
                // Also after `shutdown(Read)`: queued and readable, within
                // the receive buffer, as Linux (`Tcb::shutdown`).
                self.take_data(now, seq, payload);
            } else {
                // After the peer's FIN: nothing more may arrive.
                self.due.set(Due::ACK);
            }
        }

        // Eighth: FIN.
        if fin && data_ok {
            let f = seq + payload.len() as u32;
            if self.state.may_receive() && self.fin_in.is_none() {
                self.fin_in = Some(f);
            }
            if self.state == State::TimeWait {
                // A retransmitted FIN: acknowledge, restart 2·MSL.
                self.due.set(Due::ACK);
                self.timers
                    .set(Timer::TimeWait, Some(now + self.cfg.time_wait.into()));
            }
            self.check_fin(now);
            if !self.fin_received {
                // Out of order: a duplicate ACK (with SACK) at once.
                self.due.set(Due::ACK);
            }
        }
        if let Some(k) = self.cfg.keepalive {
            self.timers.set(Timer::Keepalive, Some(now + k.idle.into()));
            self.keepalive_sent = 0;
        }
        Ok(())
    }

    /// Takes in-window data (RFC 9293 §3.10.7.4 seventh) and schedules
    /// the ACK: at once for out-of-order or duplicate data and when a hole
    /// fills (RFC 5681 §4.2), else after two full-sized segments or the
    /// delayed-ACK time, whichever comes first (RFC 9293 §3.8.6.3) — the
    /// two-segment ACK at the end of the receive burst, as a timer due now
    /// (see [`crate::tcp::TcpConfig::max_stretch_ack`]).
    fn take_data(&mut self, now: Instant, seq: SeqNumber, data: &[u8]) {
        let had_ooo = self.rcv.ooo_bytes() > 0;
        let ins = self.rcv.insert(seq, data);
        self.stats.bytes_received += ins.advanced as u64;
        if ins.out_of_order || ins.duplicate || ins.dropped || had_ooo {
            if ins.duplicate || ins.dropped {
                // Linux `tcp_data_queue`: a duplicate or out-of-window
                // segment enters quick-ACK mode (`quick_ack.rs`).
                self.quick_ack.enter(self.quick_ack_grant());
            }
            self.due.set(Due::ACK);
        } else if ins.advanced > 0 {
            self.schedule_ack_for(now, ins.advanced);
        }
        if ins.advanced > 0 {
            self.check_fin(now);
        }
    }

    /// The ACK for `advanced` new octets received in order (none out of
    /// order held): after two full-sized segments, at most
    /// `max_stretch_ack` in one receive burst, or the delayed-ACK time
    /// (see [`take_data`](Self::take_data)).
    pub(super) fn schedule_ack_for(&mut self, now: Instant, advanced: usize) {
        self.unacked_bytes += advanced as u32;
        let stretch = u32::from(self.cfg.max_stretch_ack.max(2));
        if self.unacked_bytes >= stretch * self.smss {
            self.due.set(Due::ACK);
        } else if self.cfg.quick_ack
            && self.quick_ack.on_data(
                now,
                || self.rto.rto(),
                || super::super::quick_ack::grant(self.cfg.recv_buffer, self.smss),
            )
        {
            // Quick-ACK mode (`quick_ack.rs`): due at once but after the
            // application's turn (`quick_ack::ANSWER_GRACE`), so an answer
            // carries it and a burst still gets one ACK.
            self.timers.set(
                Timer::Delack,
                Some(now + super::super::quick_ack::ANSWER_GRACE),
            );
        } else if self.unacked_bytes >= 2 * self.smss {
            // Due now, but sent when the timers run: after the rest of
            // the burst the device holds (the stack reads its input
            // before it fires timers), so one ACK covers it.
            self.timers.set(Timer::Delack, Some(now));
        } else if self.timers.get(Timer::Delack).is_none() {
            self.timers
                .set(Timer::Delack, Some(now + self.cfg.delayed_ack.into()));
        }
    }

    /// The quick ACKs one grant gives (`quick_ack::grant`).
    fn quick_ack_grant(&self) -> u8 {
        super::super::quick_ack::grant(self.cfg.recv_buffer, self.smss)
    }

    /// Whether RCV.NXT has reached the peer's FIN: then it counts
    /// (RFC 9293 §3.10.7.4 eighth) and the state moves on.
    fn check_fin(&mut self, now: Instant) {
        let Some(f) = self.fin_in else { return };
        if self.fin_received || self.rcv.rcv_nxt() != f {
            return;
        }
        self.fin_received = true;
        // Linux `tcp_fin` resets its SACK state (`tcp_sack_reset`): the
        // ACK of the FIN reports no D-SACK of a retransmission it came
        // with (RFC 2883 leaves the choice: "SHOULD").
        self.rcv.clear_dsack();
        if matches!(self.state, State::SynReceived | State::Established)
            && self.cfg.quick_ack
            && self.quick_ack.on_fin()
        {
            // Linux `tcp_fin`: interactive mode, so the ACK waits for the
            // application's FIN (or the delayed-ACK time) unless more than
            // a segment's worth is unacknowledged, the FIN counting one
            // (`__tcp_ack_snd_check`). RFC 9293 §3.8.6.3 allows the delay.
            self.unacked_bytes += 1;
            if self.unacked_bytes > self.smss {
                self.due.set(Due::ACK);
            } else if self.timers.get(Timer::Delack).is_none() {
                self.timers
                    .set(Timer::Delack, Some(now + self.cfg.delayed_ack.into()));
            }
        } else {
            self.due.set(Due::ACK);
        }
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 if self.snd.fin_acked() => self.enter_time_wait(now),
            State::FinWait1 => self.state = State::Closing,
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    pub(super) fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.timers.set(Timer::Rtx, None);
        self.timers.set(Timer::Tlp, None);
        self.timers.set(Timer::Reo, None);
        self.timers.set(Timer::Persist, None);
        self.timers.set(Timer::Keepalive, None);
        self.timers
            .set(Timer::TimeWait, Some(now + self.cfg.time_wait.into()));
    }

    /// A challenge ACK (RFC 5961 §3.2, §4.2), at most
    /// `challenge_ack_limit` a second (§7).
    fn challenge_ack(&mut self, now: Instant) {
        if now.saturating_since(self.challenge.0) >= Duration::from_secs(1) {
            self.challenge = (now, 0);
        }
        if self.challenge.1 >= self.cfg.challenge_ack_limit {
            self.stats.rare().challenge_acks_suppressed += 1;
            return;
        }
        self.challenge.1 += 1;
        self.stats.rare().challenge_acks += 1;
        self.due.set(Due::ACK);
    }

    /// The fifth check for an established connection: acknowledgment,
    /// SACK, loss detection, window update, and the FIN's ACK
    /// (RFC 9293 §3.10.7.4; RFC 6675 §5; RFC 8985 §6).
    fn on_ack(&mut self, now: Instant, seg: &TcpRepr, payload_len: usize) -> Result<(), Drop> {
        let ack = SeqNumber(seg.ack);
        let snd_una = self.sb.high_ack();
        let snd_max = self.sb.snd_nxt();
        if ack.gt(snd_max) {
            // It acknowledges something not yet sent: ACK and drop.
            self.due.set(Due::ACK);
            return Err(Drop::BadAck);
        }
        if ack.lt(snd_una - self.max_snd_wnd.max(1)) {
            // RFC 5961 §5.2: far below SND.UNA.
            self.due.set(Due::ACK);
            return Err(Drop::BadAck);
        }
        let mut blocks = [SackBlock::new(SeqNumber(0), SeqNumber(0)); 4];
        let mut n = 0;
        if self.sack_ok {
            for &(l, r) in seg.options.sack_blocks() {
                blocks[n] = SackBlock::new(SeqNumber(l), SeqNumber(r));
                n += 1;
            }
        }
        let window = u32::from(seg.window) << self.snd_shift;
        let in_recovery_before = self.recovery.in_recovery();
        let ev = self.recovery.on_ack(
            &mut self.sb,
            &mut self.cc,
            ack,
            &blocks[..n],
            self.rto.srtt(),
            now,
        );
        if ev.entered {
            self.stats.rare().recoveries += 1;
        }
        if ev.undone {
            self.stats.rare().dsack_undos += 1;
        }
        if ev.ack.cum_advanced {
            let tsecr = seg
                .options
                .timestamps
                .filter(|_| self.ts_ok)
                .map(|(_, e)| e);
            if self.recovery.eifel_check(&mut self.cc, tsecr, now) {
                self.stats.rare().eifel_undos += 1;
            }
        }
        if ev.ack.cum_advanced {
            self.snd.ack_to(ack);
            self.stats.bytes_acked += u64::from(ev.ack.newly_acked);
            self.rtx_count = 0;
            self.persist_backoff = 0;
            self.dup_acks = 0;
            // RFC 6298 §5.3: restart the timer on new data ACKed.
            self.timers.set(
                Timer::Rtx,
                (!self.sb.is_empty()).then(|| now + self.rto.rto()),
            );
            if !self.sack_ok && self.recovery.in_recovery() {
                // RFC 6582 §3.2 step 5: a partial ACK without SACK
                // retransmits the first unacknowledged segment.
                self.sb.mark_lost_at(0);
            }
        } else if !self.sack_ok
            && payload_len == 0
            && ack == snd_una
            && window == self.snd_wnd
            && !self.sb.is_empty()
            && !seg.flags.intersects(TcpFlags::SYN | TcpFlags::FIN)
        {
            // RFC 5681 §3.2 without SACK: the third duplicate ACK.
            self.dup_acks += 1;
            self.stats.rare().dup_acks_in += 1;
            if self.dup_acks == 3 && !self.recovery.in_recovery() {
                self.recovery.enter(&mut self.sb, &mut self.cc, now);
                self.stats.rare().recoveries += 1;
            }
        } else if ev.ack.is_dup_ack(true) {
            self.stats.rare().dup_acks_in += 1;
        }
        // RTT from the newest segment delivered that was never
        // retransmitted (Karn's rule, RFC 6298 §3).
        // An ACK that also covers retransmitted data is ambiguous: the
        // original segments it covers may have waited at the receiver
        // for the retransmission to fill a hole (as Linux's
        // FLAG_RETRANS_DATA_ACKED).
        if let Some(d) = ev.ack.newest_original {
            let rtt = now.saturating_since(d.sent_at);
            if ev.ack.cum_advanced && ev.ack.newest_retransmitted.is_none() {
                self.rto.on_sample(rtt);
            }
            self.rack.on_rtt_sample(rtt);
        }
        if self.cfg.rack {
            self.rack
                .on_ack(&ev.ack, self.sb.high_ack(), self.sb.snd_nxt(), now);
            self.rack_detect(now);
        }
        match self.tlp.on_ack(&ev.ack, self.sb.high_ack()) {
            TlpVerdict::LossRepaired => {
                self.stats.rare().tlp_loss_repaired += 1;
                // RFC 8985 §7.4.2: the response of a fast recovery —
                // unless the probe's loss was already answered by the
                // recovery phase it went out in or that this ACK ends
                // (one reduction per loss event, RFC 6675 §5).
                if !in_recovery_before && !ev.exited && !self.recovery.in_recovery() {
                    let flight = self.sb.flight_size();
                    self.cc.on_enter_recovery(flight, now);
                    self.cc.on_exit_recovery(flight, now);
                }
            }
            TlpVerdict::NoLoss | TlpVerdict::Pending => {}
        }
        if ev.exited {
            self.rack.on_recovery_exit();
        }
        // In recovery an ACK that delivers anything (SACKed or
        // cumulatively) shows the ACK clock running: the PTO restarts, so
        // that it fires only once it has stopped (`Tlp::may_arm`).
        let delivered = ev.ack.cum_advanced
            || (in_recovery_before
                && (ev.ack.newest_original.is_some() || ev.ack.newest_retransmitted.is_some()));
        // An ACK that changes nothing (the peer's data with an old ACK, a
        // window update, a duplicate) leaves the probe armed, as Linux's
        // `tcp_ack` leaves its pending loss-probe timer (FLAG_SET_XMIT_TIMER
        // only on new data ACKed): RFC 8985 §7.2 restarts the PTO on
        // sends and ACKs of new data, never cancels it. Cancelling it left
        // a lost tail to the RTO whenever the peer was sending too (issue
        // 28's echo over TAP: 200 ms each). Entering recovery still stops
        // it; the retransmissions re-arm it (`after_sending`).
        if delivered || (!in_recovery_before && self.recovery.in_recovery()) {
            self.timers.set(Timer::Tlp, None);
        }
        if delivered {
            // RFC 8985 §7.2: an ACK of new data restarts the PTO.
            self.arm_tlp(now);
        }
        // Window update (RFC 9293 §3.10.7.4: from the newest segment).
        let seq = SeqNumber(seg.seq);
        if self.snd_wl1.lt(seq) || (self.snd_wl1 == seq && self.snd_wl2.le(ack)) {
            self.snd_wnd = window;
            self.snd_wl1 = seq;
            self.snd_wl2 = ack;
            self.max_snd_wnd = self.max_snd_wnd.max(window);
            if window > 0 {
                self.timers.set(Timer::Persist, None);
                self.persist_backoff = 0;
            }
        }
        // Our FIN acknowledged?
        if self.snd.fin_acked() {
            match self.state {
                State::FinWait1 if self.fin_received => self.enter_time_wait(now),
                State::FinWait1 => self.state = State::FinWait2,
                State::Closing => self.enter_time_wait(now),
                State::LastAck => self.enter_closed(None),
                _ => {}
            }
        }
        Ok(())
    }

    /// RACK loss detection (RFC 8985 §6.2 step 5): marks segments lost,
    /// enters recovery for them, and sets the reordering timer (§6.3).
    pub(super) fn rack_detect(&mut self, now: Instant) {
        let reo = self
            .rack
            .reo_wnd(&self.sb, self.recovery.in_recovery(), self.rto.srtt());
        let (marked, timer) = self.rack.detect_loss(&mut self.sb, reo, now);
        if marked > 0 {
            self.stats.rare().rack_lost_segs += u64::from(marked);
        }
        // Copied only when it moved: an ACK that finds nothing lost
        // leaves the rare counters unmade (`counters.rs`).
        let lost_retransmits = self.sb.lost_retransmits();
        if lost_retransmits != self.stats.rare_ref().map_or(0, |r| r.lost_retransmits) {
            self.stats.rare().lost_retransmits = lost_retransmits;
        }
        self.timers.set(Timer::Reo, timer);
        if marked > 0 && !self.recovery.in_recovery() {
            self.recovery.enter(&mut self.sb, &mut self.cc, now);
            self.stats.rare().recoveries += 1;
        }
    }
}
