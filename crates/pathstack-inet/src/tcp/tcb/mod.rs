//! The transmission control block (RFC 9293 §3.3.1): one connection's
//! state machine, with no I/O of its own.
//!
//! A [`Tcb`] takes segments ([`Tcb::on_segment`]), calls of the
//! application ([`Tcb::send`], [`Tcb::recv`], [`Tcb::shutdown`],
//! [`Tcb::close`], [`Tcb::abort`]) and the passing of time
//! ([`Tcb::on_tick`] at [`Tcb::poll_at`]), and produces the segments to
//! send ([`Tcb::poll_output`]). The connection's stage on its path feeds it
//! from the wire and hands what it produces down the path; the segment-level
//! tests drive it directly. The parts it is made of are tested alone in the
//! sibling files: the buffers, the SACK scoreboard, loss recovery, RACK-TLP,
//! the RTO estimator and the congestion controllers.
//!
//! The code is split by the RFC's own sections: `input.rs` is "SEGMENT
//! ARRIVES" (§3.10.7), `output.rs` builds segments (§3.8, §3.10.4 SEND), and
//! `timers.rs` is "TIMEOUTS" (§3.10.8) with RFC 6298, RFC 8985 and the
//! persist and keepalive timers.

mod counters;
mod due;
mod input;
mod output;
mod predict;
mod predict_output;
mod timers;

use super::config::TcpConfig;
use super::congestion::{AnyCongestion, CcConfig};
use super::error::TcpError;
use super::quick_ack::QuickAck;
use super::rack::{Rack, Tlp};
use super::recovery::Recovery;
use super::recv_buffer::{RecvBuffer, RecvConfig};
use super::rto::RtoEstimator;
use super::sack_scoreboard::Scoreboard;
use super::send_buffer::SendBuffer;
use super::seq::SeqNumber;
use super::state::State;
use super::timers::{Timer, Timers};
use crate::wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
use counters::Counters;
use due::Due;
use pathstack_core::time::Instant;
use std::io::IoSlice;
use std::sync::Arc;

pub use output::OutSegment;

/// Which way [`Tcb::shutdown`] closes: `std::net`'s own type.
pub use std::net::Shutdown;

/// What a listener learned from a valid SYN cookie (RFC 4987 §3.6): the
/// options the SYN carried, recovered from the cookie and the timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CookieOpen {
    /// The MSS the cookie encoded.
    pub mss: u16,
    /// The peer's window shift, if it offered scaling (only with
    /// timestamps, as Linux).
    pub window_scale: Option<u8>,
    /// The peer offered SACK (only with timestamps).
    pub sack_permitted: bool,
}

/// Counters of one connection (what `ss -ti` shows of a Linux socket).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Segments received and processed.
    pub segs_in: u64,
    /// Segments sent.
    pub segs_out: u64,
    /// Segments sent carrying data.
    pub data_segs_out: u64,
    /// Segments retransmitted (fast, RACK, TLP or timeout).
    pub retrans_segs: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Tail loss probes sent.
    pub tlp_probes: u64,
    /// Loss-recovery phases entered.
    pub recoveries: u64,
    /// Octets acknowledged by the peer.
    pub bytes_acked: u64,
    /// Octets received in order.
    pub bytes_received: u64,
    /// Duplicate ACKs received.
    pub dup_acks_in: u64,
    /// Challenge ACKs sent (RFC 5961).
    pub challenge_acks: u64,
    /// Challenge ACKs not sent because of the rate limit (RFC 5961 §7).
    pub challenge_acks_suppressed: u64,
    /// Window probes sent (persist timer).
    pub window_probes: u64,
    /// Keepalive probes sent.
    pub keepalive_probes: u64,
    /// Path-MTU reductions taken from ICMP (RFC 1191, RFC 5927).
    pub pmtu_reductions: u64,
    /// Pure ACKs taken by header prediction (Linux's `TCPHPAcks`).
    pub predicted_acks: u64,
    /// In-order data segments taken by header prediction (Linux's
    /// `TCPHPHits`).
    pub predicted_data: u64,
    /// Segments of new data sent by the output side's prediction (the
    /// usual write of a quiet connection, `predict_output.rs`).
    pub predicted_sends: u64,
    // What loss recovery did (issue 28: where a sender's time goes under
    // loss; Linux's `TcpExt` counters of the same name in brackets).
    /// Segments retransmitted outside a recovery phase and not as a
    /// probe: those a retransmission timeout marked lost (Linux's
    /// `TCPSlowStartRetrans` after `TCPTimeouts`).
    pub timeout_retrans_segs: u64,
    /// Segments RACK marked lost (RFC 8985 §6.2 step 5).
    pub rack_lost_segs: u64,
    /// Retransmissions RACK deemed lost again (Linux's
    /// `TCPLostRetransmit`): RFC 8985 §6.2 repairs them without waiting
    /// for the timer.
    pub lost_retransmits: u64,
    /// Tail loss probes that repaired a loss (RFC 8985 §7.4.2; Linux's
    /// `TCPLossProbeRecovery`).
    pub tlp_loss_repaired: u64,
    /// Recovery phases whose reduction D-SACKs undid (RFC 3708; Linux's
    /// `TCPDSACKUndo`).
    pub dsack_undos: u64,
    /// Nanoseconds from the last segment sent to each retransmission
    /// timeout with data outstanding: the time the sender sat silent
    /// waiting for the timer.
    pub timeout_idle_ns: u64,
    /// Timeouts found spurious by their first ACK's timestamp echo and
    /// undone (RFC 3522, RFC 4015; Linux's `TCPSpuriousRTOs`).
    pub eifel_undos: u64,
}

/// One connection's transmission control block.
#[derive(Debug)]
pub struct Tcb {
    /// Shared by the connections made with the same configuration (the
    /// module hands one out to all, `TcpModule::share`), copied on the
    /// first per-connection change (`set_nodelay` and the like): 8
    /// octets per control block instead of 208 (issue 28 item 4).
    cfg: Arc<TcpConfig>,
    state: State,
    local_port: u16,
    remote_port: u16,
    /// Made by a listener (a reset in SYN-RECEIVED ends it quietly,
    /// RFC 9293 §3.10.7.4 "return to LISTEN").
    passive: bool,
    /// The options a cookie carried, for a connection opened by a
    /// cookie's ACK in LISTEN.
    cookie: Option<CookieOpen>,
    iss: SeqNumber,
    irs: SeqNumber,

    // ----- send side -----
    snd: SendBuffer,
    sb: Scoreboard,
    recovery: Recovery,
    cc: AnyCongestion,
    rto: RtoEstimator,
    rack: Rack,
    tlp: Tlp,
    /// SND.WND, scaled.
    snd_wnd: u32,
    snd_wl1: SeqNumber,
    snd_wl2: SeqNumber,
    /// The largest window the peer advertised (RFC 5961 §5.2 MAX.SND.WND).
    max_snd_wnd: u32,
    /// The peer's window shift (0 without scaling).
    snd_shift: u8,
    /// The effective send MSS (RFC 9293 §3.7.1): the peer's MSS, our
    /// route's, less the timestamp option.
    smss: u32,
    /// Duplicate ACKs counted the classic way (RFC 5681 §3.2), for peers
    /// without SACK.
    dup_acks: u32,

    // ----- receive side -----
    rcv: RecvBuffer,
    rcv_shift: u8,
    /// The sequence number of the peer's FIN, once seen.
    fin_in: Option<SeqNumber>,
    /// RCV.NXT has passed the peer's FIN.
    fin_received: bool,
    /// `shutdown(Read)`: a read with nothing queued returns the end of
    /// the stream (data that arrives is still queued, `shutdown`).
    read_shut: bool,
    /// The urgent pointer (RFC 9293 §3.8.5): the sequence number after the
    /// last urgent octet seen. Urgent data is delivered inline.
    rcv_up: Option<SeqNumber>,

    // ----- negotiated -----
    /// Both ends offered window scaling.
    ws_ok: bool,
    ts_ok: bool,
    sack_ok: bool,
    /// TS.Recent (RFC 7323 §4.3).
    ts_recent: u32,
    /// When TS.Recent was taken (PAWS' 24-day rule, RFC 7323 §5.5).
    ts_recent_at: Instant,
    /// Our timestamp clock's offset (RFC 7323 §5.4: random per connection).
    ts_offset: u32,
    /// RCV.NXT as last acknowledged (Last.ACK.sent, RFC 7323 §4.3).
    last_ack_sent: SeqNumber,

    // ----- what to send -----
    /// The end of the last sub-MSS segment of new data sent (Linux's
    /// `snd_sml`): Nagle holds a small segment only while this one is
    /// unacknowledged (Minshall's rule, see `output.rs`).
    snd_sml: SeqNumber,
    /// The control segments due (reset, SYN, ACK, probes), one bit each
    /// (see `due.rs`).
    due: Due,
    syn_sent_at: Option<Instant>,
    syn_retransmitted: bool,
    unacked_bytes: u32,
    /// Whether the ACK of in-order data goes at once (`quick_ack.rs`).
    quick_ack: QuickAck,
    /// The reset to send, while [`Due::RST`] is set (`set_rst` keeps the
    /// two together).
    ///
    /// Boxed: a connection sends a reset at most once or twice in its
    /// life, and the header inline cost every control block 64 octets
    /// (issue 28 item 3).
    rst_out: Option<Box<TcpRepr>>,

    // ----- timers -----
    /// The timers' deadlines, with a bound on the earliest kept
    /// (`wake_at`).
    timers: Timers,
    /// Consecutive timeouts of the same data (R2) or SYN.
    rtx_count: u32,
    persist_backoff: u32,
    keepalive_sent: u32,
    last_send: Instant,
    /// The send time recorded on the scoreboard for the last segment
    /// sent: strictly increasing in transmission order (see
    /// `next_xmit_stamp`).
    xmit_stamp: Instant,
    /// Challenge ACKs in the current second: (second's start, count).
    challenge: (Instant, u32),

    error: Option<TcpError>,
    /// The counters, the rare ones boxed on first need (`counters.rs`).
    stats: Counters,
    /// Tests only: the short paths off — header prediction (every
    /// segment through the general processing), the output check before
    /// NextSeg and output prediction (every send through NextSeg) — for
    /// the differential test's reference control block. A test switch rather than a configuration field: the short
    /// paths change no behaviour, so there is nothing for an application
    /// to choose, and production code cannot turn them off by mistake.
    #[cfg(test)]
    short_paths_off: bool,
}

impl Tcb {
    fn new(
        cfg: Arc<TcpConfig>,
        local_port: u16,
        remote_port: u16,
        iss: SeqNumber,
        ts_offset: u32,
        now: Instant,
    ) -> Tcb {
        let smss = u32::from(cfg.mss);
        Tcb {
            state: State::Closed,
            local_port,
            remote_port,
            passive: false,
            cookie: None,
            iss,
            irs: SeqNumber(0),
            snd: SendBuffer::new(cfg.send_buffer, iss + 1),
            sb: Scoreboard::new(1, smss, iss + 1),
            recovery: Recovery::new().with_safe_ack_only(cfg.prr_safe_ack),
            cc: AnyCongestion::new(
                cfg.congestion,
                CcConfig {
                    smss,
                    ..CcConfig::default()
                },
            ),
            rto: RtoEstimator::new(cfg.rto),
            rack: Rack::new(),
            tlp: Tlp::new(),
            snd_wnd: 0,
            snd_wl1: SeqNumber(0),
            snd_wl2: iss,
            max_snd_wnd: 0,
            snd_shift: 0,
            smss,
            dup_acks: 0,
            rcv: RecvBuffer::new(
                RecvConfig {
                    capacity: 0,
                    ..RecvConfig::default()
                },
                SeqNumber(0),
            ),
            rcv_shift: 0,
            fin_in: None,
            fin_received: false,
            read_shut: false,
            rcv_up: None,
            ws_ok: false,
            ts_ok: false,
            sack_ok: false,
            ts_recent: 0,
            ts_recent_at: now,
            ts_offset,
            last_ack_sent: SeqNumber(0),
            snd_sml: iss + 1,
            due: Due::default(),
            syn_sent_at: None,
            syn_retransmitted: false,
            unacked_bytes: 0,
            quick_ack: QuickAck::new(now),
            rst_out: None,
            timers: Timers::default(),
            rtx_count: 0,
            persist_backoff: 0,
            keepalive_sent: 0,
            last_send: now,
            xmit_stamp: now,
            challenge: (now, 0),
            error: None,
            stats: Counters::default(),
            #[cfg(test)]
            short_paths_off: false,
            cfg,
        }
    }

    /// Sets (or with `None`, drops) the reset to send, with its bit in
    /// [`Due`].
    fn set_rst(&mut self, rst: Option<TcpRepr>) {
        if rst.is_some() {
            self.due.set(Due::RST);
        } else {
            self.due.clear(Due::RST);
        }
        self.rst_out = rst.map(Box::new);
    }

    /// Whether the short paths are on (header prediction, the output
    /// check, output prediction): always, but for the tests' reference
    /// control blocks.
    #[inline]
    fn short_paths(&self) -> bool {
        #[cfg(test)]
        {
            !self.short_paths_off
        }
        #[cfg(not(test))]
        {
            true
        }
    }

    /// An active open (RFC 9293 §3.10.1 OPEN, active): SYN-SENT, the SYN
    /// goes out with the next [`poll_output`](Self::poll_output). `iss`
    /// comes from the RFC 6528 generator, `ts_offset` is this connection's
    /// random timestamp offset.
    pub fn connect(
        cfg: impl Into<Arc<TcpConfig>>,
        local_port: u16,
        remote_port: u16,
        iss: SeqNumber,
        ts_offset: u32,
        now: Instant,
    ) -> Tcb {
        let mut t = Tcb::new(cfg.into(), local_port, remote_port, iss, ts_offset, now);
        t.state = State::SynSent;
        t.due.set(Due::SYN);
        t
    }

    /// A connection a listener made for a SYN (Scout's passive open): in
    /// LISTEN, about to see that SYN in [`on_segment`](Self::on_segment).
    pub fn listen(
        cfg: impl Into<Arc<TcpConfig>>,
        local_port: u16,
        remote_port: u16,
        iss: SeqNumber,
        ts_offset: u32,
        now: Instant,
    ) -> Tcb {
        let mut t = Tcb::new(cfg.into(), local_port, remote_port, iss, ts_offset, now);
        t.state = State::Listen;
        t.passive = true;
        t
    }

    /// A connection a listener made for the ACK of a SYN cookie: in
    /// LISTEN, about to see that ACK, whose acknowledgment number less
    /// one is our ISS (RFC 4987 §3.6). The timestamp offset is 0: the
    /// cookie's timestamps were on the listener's clock.
    pub fn from_cookie(
        cfg: impl Into<Arc<TcpConfig>>,
        local_port: u16,
        remote_port: u16,
        ack: &TcpRepr,
        cookie: CookieOpen,
        now: Instant,
    ) -> Tcb {
        let iss = SeqNumber(ack.ack.wrapping_sub(1));
        let mut t = Tcb::new(cfg.into(), local_port, remote_port, iss, 0, now);
        t.state = State::Listen;
        t.passive = true;
        t.cookie = Some(cookie);
        t
    }

    // ----- what the application and the stage read -----

    /// Brings [`wake_at`](Self::wake_at) back to
    /// [`poll_at`](Self::poll_at): the bound is left behind by deadlines
    /// that moved later or stopped (`tcp::timers::Timers`), and at the
    /// handshake's end the SYN's retransmission deadline is such a one —
    /// the stage asks this once there, so that an idle connection holds
    /// no timer armed at a deadline that no longer exists.
    pub fn settle_wake(&mut self) {
        self.timers.settle();
    }

    /// The state.
    pub fn state(&self) -> State {
        self.state
    }
    /// The configuration.
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    /// The configuration as shared with other connections (for a new
    /// control block of the same connection, sharing it too).
    pub fn shared_config(&self) -> Arc<TcpConfig> {
        Arc::clone(&self.cfg)
    }
    /// Local and remote port.
    pub fn ports(&self) -> (u16, u16) {
        (self.local_port, self.remote_port)
    }
    /// Made by a listener.
    pub fn is_passive(&self) -> bool {
        self.passive
    }
    /// The counters.
    pub fn stats(&self) -> TcpStats {
        self.stats.snapshot()
    }
    /// The receive buffer's drop counters.
    pub fn recv_stats(&self) -> super::recv_buffer::RecvStats {
        self.rcv.stats()
    }
    /// The pending error, without taking it.
    pub fn error(&self) -> Option<TcpError> {
        self.error
    }
    /// Takes the pending error (`SO_ERROR`).
    pub fn take_error(&mut self) -> Option<TcpError> {
        self.error.take()
    }
    /// The effective send MSS.
    pub fn smss(&self) -> u32 {
        self.smss
    }
    /// The congestion window in octets.
    pub fn cwnd(&self) -> u32 {
        use super::congestion::CongestionControl;
        self.cc.cwnd()
    }
    /// The smoothed RTT, once sampled.
    pub fn srtt(&self) -> Option<pathstack_core::time::Duration> {
        self.rto.srtt()
    }
    /// The current RTO.
    pub fn rto(&self) -> pathstack_core::time::Duration {
        self.rto.rto()
    }
    /// The negotiated extensions: (window scaling, timestamps, SACK).
    pub fn extensions(&self) -> (bool, bool, bool) {
        (self.ws_ok, self.ts_ok, self.sack_ok)
    }
    /// SND.UNA.
    pub fn snd_una(&self) -> SeqNumber {
        self.sb.high_ack()
    }
    /// SND.NXT (the highest sequence number sent, plus one).
    pub fn snd_nxt(&self) -> SeqNumber {
        match self.state {
            State::Listen | State::Closed if !self.syn_sent() => self.iss,
            State::SynSent | State::SynReceived => self.iss + 1,
            _ => self.sb.snd_nxt(),
        }
    }
    fn syn_sent(&self) -> bool {
        self.syn_sent_at.is_some()
    }
    /// RCV.NXT, the peer's FIN included once received.
    pub fn rcv_nxt(&self) -> SeqNumber {
        self.rcv.rcv_nxt() + u32::from(self.fin_received)
    }
    /// The peer's send window (SND.WND), scaled.
    pub fn snd_wnd(&self) -> u32 {
        self.snd_wnd
    }
    /// The urgent pointer last received, if any (RFC 9293 §3.8.5: urgent
    /// data is delivered inline; this marks where it ends).
    pub fn urgent_mark(&self) -> Option<SeqNumber> {
        self.rcv_up
    }
    /// Octets readable now.
    pub fn recv_queue(&self) -> usize {
        self.rcv.len()
    }
    /// Octets written and not yet acknowledged.
    pub fn send_queue(&self) -> usize {
        self.snd.len()
    }
    /// Room for [`send`](Self::send) now.
    pub fn send_space(&self) -> usize {
        if self.state.may_send() || matches!(self.state, State::SynSent | State::SynReceived) {
            self.snd.free()
        } else {
            0
        }
    }
    /// Whether a read would not block: data, the end of the stream, or
    /// an error.
    pub fn is_readable(&self) -> bool {
        !self.rcv.is_empty()
            || self.fin_received
            || self.error.is_some()
            || self.read_shut
            || self.state == State::Closed
    }
    /// Whether a [`recv`](Self::recv) now would answer `Ok(None)` having
    /// changed nothing, and the flush after it would find nothing to send:
    /// nothing readable (no data, end of stream or error), not LISTEN (a
    /// read there is an error), no segment due and nothing written that is
    /// still unsent. The socket layer answers such a read without entering
    /// the connection's path (issue 26: in a request/response loop every
    /// drain of the socket ends with one).
    #[inline]
    pub fn read_would_block(&self) -> bool {
        self.read_would_block_quiet() && !self.output_pending()
    }

    /// [`read_would_block`](Self::read_would_block) for a caller that
    /// has found [`output_pending`](Self::output_pending) false already
    /// (the socket's read, which asks it to decide on the flush).
    #[inline(always)]
    pub fn read_would_block_quiet(&self) -> bool {
        !self.is_readable() && self.state != State::Listen
    }

    /// Whether output waits that a flush now might send: a segment due
    /// (one whose emission failed for want of a buffer), or written data
    /// not yet sent (held by a window or Nagle, or not sent for want of a
    /// buffer; nothing else retries the latter but the next flush).
    #[inline]
    pub fn output_pending(&self) -> bool {
        self.wants_output() || self.sb.snd_nxt().lt(self.snd.end())
    }

    /// Whether the connection is over for good: closed, nothing left to
    /// send (its path may go once its owner lets it).
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    // ----- application calls (RFC 9293 §3.10.2–§3.10.6) -----

    /// SEND: queues as much of `data` as the send buffer takes and
    /// returns how much; `Ok(None)` when it is full (would block). Data
    /// written before the handshake completes waits for it.
    pub fn send(&mut self, data: &[u8]) -> Result<Option<usize>, TcpError> {
        match self.state {
            State::SynSent | State::SynReceived | State::Established | State::CloseWait => {}
            State::Listen => return Err(TcpError::NotConnected),
            State::Closed => return Err(self.error.take().unwrap_or(TcpError::BrokenPipe)),
            _ => return Err(TcpError::BrokenPipe),
        }
        if self.snd.is_closed() {
            return Err(TcpError::BrokenPipe);
        }
        if data.is_empty() {
            return Ok(Some(0));
        }
        match self.snd.write(data) {
            0 => Ok(None),
            n => Ok(Some(n)),
        }
    }

    /// SEND of several slices as one write (`writev`): as much of them,
    /// in order, as the send buffer takes. The bytes become one stream
    /// before anything is segmented, so the segments are full-sized and
    /// Nagle never holds one slice behind the ACK of another (hyper hands
    /// a response's head and body over this way). `Ok(None)` when the
    /// buffer takes nothing of non-empty slices.
    pub fn send_vectored(&mut self, bufs: &[IoSlice<'_>]) -> Result<Option<usize>, TcpError> {
        let mut total = 0;
        for b in bufs.iter().filter(|b| !b.is_empty()) {
            match self.send(b)? {
                Some(n) => {
                    total += n;
                    if n < b.len() {
                        break;
                    }
                }
                None => break,
            }
        }
        let wanted = bufs.iter().any(|b| !b.is_empty());
        Ok(if total == 0 && wanted {
            None
        } else {
            Some(total)
        })
    }

    /// RECEIVE: copies readable data into `buf`. `Ok(Some(0))` is the end
    /// of the stream (the peer's FIN, or `shutdown(Read)`); `Ok(None)`
    /// would block; an error is the connection's (once; then the end).
    #[inline(always)]
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<Option<usize>, TcpError> {
        if !self.rcv.is_empty() && !buf.is_empty() {
            let n = self.rcv.read(buf);
            self.after_read();
            return Ok(Some(n));
        }
        self.recv_empty()
    }

    /// Like [`recv`](Self::recv) without taking the data.
    pub fn peek(&self, buf: &mut [u8]) -> Result<Option<usize>, TcpError> {
        let (a, b) = self.rcv.peek();
        if !a.is_empty() && !buf.is_empty() {
            let n = a.len().min(buf.len());
            buf[..n].copy_from_slice(&a[..n]);
            let m = b.len().min(buf.len() - n);
            buf[n..n + m].copy_from_slice(&b[..m]);
            return Ok(Some(n + m));
        }
        if self.fin_received || self.read_shut {
            return Ok(Some(0));
        }
        match (self.error, self.state) {
            (Some(e), _) => Err(e),
            (None, State::Closed) => Ok(Some(0)),
            (None, State::Listen) => Err(TcpError::NotConnected),
            _ => Ok(None),
        }
    }

    /// [`recv`](Self::recv) with nothing to read: out of line, as the
    /// socket answers most such reads from its flag without a call here.
    #[cold]
    #[inline(never)]
    fn recv_empty(&mut self) -> Result<Option<usize>, TcpError> {
        if self.fin_received || self.read_shut {
            return Ok(Some(0));
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.state {
            State::Closed => Ok(Some(0)),
            State::Listen => Err(TcpError::NotConnected),
            _ => Ok(None),
        }
    }

    /// After a read: a window update goes out when the window the free
    /// space allows is at least twice the one last advertised and two
    /// segments larger (receiver SWS avoidance, RFC 9293 §3.8.6.2.2: only
    /// significant openings are announced; Linux's `tcp_cleanup_rbuf`
    /// rule). Reads that keep up with a bulk transfer send nothing: the
    /// delayed ACKs carry the window.
    #[inline(always)]
    fn after_read(&mut self) {
        if !self.state.may_receive() {
            return;
        }
        let rcv_nxt = self.rcv.rcv_nxt();
        let advertised = self.rcv.advertised_right_edge().max(rcv_nxt) - rcv_nxt;
        let free = (self.rcv.config().capacity - self.rcv.len()) as u32;
        let max = 65535u32 << self.rcv_shift;
        let possible = free.min(max);
        if possible >= advertised.saturating_mul(2) && possible - advertised >= 2 * self.smss {
            // The update rides on an ACK already on its way (a quick ACK
            // due after the application's turn, `quick_ack::ANSWER_GRACE`,
            // or a delayed one) while the window advertised still holds
            // four full segments: a sender with that much room is not
            // held, and the ACKs of what it sends carry the new window.
            // So the first read of a connection, whose window was the
            // SYN's unscaled 65,535 (RFC 7323 §2.2), does not send a
            // bare ACK before the application's answer (issue 28's
            // connection rate). A window that holds the sender back goes
            // at once (RFC 9293 §3.8.6.2.2).
            if self.timers.get(Timer::Delack).is_some() && advertised >= 4 * self.smss {
                return;
            }
            self.due.set(Due::ACK);
        }
    }

    /// SHUTDOWN: `Write` queues a FIN after the data (RFC 9293 §3.10.4
    /// CLOSE for the sending half); `Read` makes a read with nothing
    /// queued return the end of the stream instead of waiting.
    ///
    /// `Read` has Linux's meaning, which is what `std::net::TcpStream::
    /// shutdown(Read)` means on Linux and so what this API (which follows
    /// std) means: data queued and data that arrives later are still
    /// acknowledged, queued and readable (`tcp_shutdown` only sets
    /// `RCV_SHUTDOWN`; packetdrill `shutdown-rd-wr-close`), and a close
    /// with it unread resets (RFC 2525 §2.17). RFC 9293 has no half-close
    /// of the receive side, so the meaning is the API's. What is queued
    /// stays within the receive buffer: the window closes as it fills,
    /// as for any reader that does not read. (pathstack discarded such
    /// data before, counted as `read_shut`.)
    pub fn shutdown(&mut self, how: Shutdown) -> Result<(), TcpError> {
        if matches!(how, Shutdown::Read | Shutdown::Both) {
            self.read_shut = true;
        }
        if matches!(how, Shutdown::Write | Shutdown::Both) {
            match self.state {
                State::Listen => return Err(TcpError::NotConnected),
                State::SynSent | State::SynReceived => {
                    // The FIN is queued behind the data and goes once the
                    // handshake is done (RFC 9293 §3.10.4, SYN-RECEIVED:
                    // "queue for processing after entering ESTABLISHED").
                    self.snd.close();
                }
                State::Established => {
                    self.snd.close();
                    self.state = State::FinWait1;
                }
                State::CloseWait => {
                    self.snd.close();
                    self.state = State::LastAck;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// CLOSE (RFC 9293 §3.10.4): the FIN handshake, after the data queued.
    /// Unread data makes it a reset instead (RFC 2525 §2.17, as Linux),
    /// and so does the linger-zero option.
    pub fn close(&mut self) {
        if self.cfg.linger_zero || !self.rcv.is_empty() {
            self.abort();
            return;
        }
        match self.state {
            // RFC 9293 §3.10.4: nothing to tell the peer yet.
            State::Listen | State::SynSent => self.enter_closed(None),
            _ => {
                let _ = self.shutdown(Shutdown::Write);
            }
        }
    }

    /// ABORT (RFC 9293 §3.10.5): a reset to the peer if it knows the
    /// connection; everything queued is discarded.
    pub fn abort(&mut self) {
        if matches!(
            self.state,
            State::SynReceived
                | State::Established
                | State::FinWait1
                | State::FinWait2
                | State::CloseWait
        ) {
            let mut r = self.repr(self.snd_nxt(), TcpFlags::RST | TcpFlags::ACK, 0);
            // Our own reset carries the timestamps (RFC 7323 §3.2: TSopt
            // "MAY" be sent in an <RST>; Linux's `tcp_send_active_reset`
            // does): TS.Recent now, TSval when it leaves
            // (`poll_output_due`).
            if self.ts_ok {
                r.options.timestamps = Some((0, self.ts_recent));
            }
            self.set_rst(Some(r));
        }
        self.enter_closed(None);
    }

    /// The network says the peer cannot be reached (the link layer gave
    /// up resolving the next hop): an active open still in SYN-SENT ends
    /// with `error`, as Linux ends a `connect` with `EHOSTUNREACH` once
    /// ARP has failed (about 3 s) instead of retransmitting SYNs for two
    /// minutes. A connection in any other state goes on: for it this is
    /// a soft error (RFC 1122 §4.2.3.9), and its retransmissions may yet
    /// get through. Returns whether the connection ended.
    pub fn on_unreachable(&mut self, error: TcpError) -> bool {
        if self.state != State::SynSent {
            return false;
        }
        self.enter_closed(Some(error));
        true
    }

    /// An ICMP "fragmentation needed" quoting our segment with sequence
    /// number `seq` reports a next-hop MTU of `mtu` (RFC 1191 §4). Taken
    /// only if `seq` is one we sent and the peer has not acknowledged
    /// (RFC 5927 §4.1: a forged message must guess it), and only to lower
    /// the MSS, never below 536 octets of IPv4 datagram less the
    /// headers (RFC 1191 §3's 68 is ignored as Linux does with its 552
    /// minimum). New segments use the new MSS; segments in flight go
    /// again as they are (IP fragments them). Returns whether it was
    /// taken.
    pub fn on_frag_needed(&mut self, mtu: u16, seq: SeqNumber) -> bool {
        if !self.state.is_synchronized() {
            return false;
        }
        let (una, nxt) = (self.sb.high_ack(), self.sb.snd_nxt());
        if !(seq.ge(una) && seq.lt(nxt)) {
            return false;
        }
        let ts_len = if self.ts_ok { 12 } else { 0 };
        let mss = u32::from(mtu.max(576)).saturating_sub(40 + ts_len);
        if mss >= self.smss {
            return false;
        }
        self.smss = mss;
        self.stats.rare().pmtu_reductions += 1;
        true
    }

    /// Changes this connection's configuration, copying the shared one
    /// only if the change changes something (a socket layer that sets
    /// every connection's options to the defaults copies nothing).
    fn change_config(&mut self, change: impl FnOnce(&mut TcpConfig)) {
        let mut cfg = *self.cfg;
        change(&mut cfg);
        if cfg != *self.cfg {
            self.cfg = Arc::new(cfg);
        }
    }

    /// Sets the send buffer's size at run time (`SO_SNDBUF`): writes may
    /// queue up to it from now on; never below what is queued.
    pub fn set_send_buffer(&mut self, size: usize) {
        self.snd.set_capacity(size);
        let cap = self.snd.capacity();
        self.change_config(|c| c.send_buffer = cap);
    }

    /// Sets the receive buffer's size at run time (`SO_RCVBUF`): the
    /// window offered follows it, its right edge never moving back
    /// ([`RecvBuffer::set_capacity`]).
    pub fn set_recv_buffer(&mut self, size: usize) {
        let cap = self.rcv.set_capacity(size);
        self.change_config(|c| c.recv_buffer = cap);
    }

    /// Sets `nodelay` (Nagle off) at run time.
    pub fn set_nodelay(&mut self, on: bool) {
        self.change_config(|c| c.nodelay = on);
    }

    /// Sets keepalive at run time.
    pub fn set_keepalive(&mut self, k: Option<super::config::Keepalive>, now: Instant) {
        self.change_config(|c| c.keepalive = k);
        self.keepalive_sent = 0;
        self.timers.set(
            Timer::Keepalive,
            k.filter(|_| self.state.is_synchronized())
                .map(|k| now + k.idle.into()),
        );
    }

    /// Ends the connection: CLOSED, every timer off, the error (if any)
    /// kept for the application.
    fn enter_closed(&mut self, error: Option<TcpError>) {
        self.state = State::Closed;
        if error.is_some() {
            self.error = error;
        }
        self.timers.stop_all();
        self.due.clear(
            Due::ACK | Due::SYN | Due::TLP | Due::WINDOW_PROBE | Due::KEEPALIVE | Due::SWS_OVERRIDE,
        );
    }

    /// A segment header from this connection with our ports, `seq`,
    /// `flags` and `window`; acknowledgment and options are the caller's.
    fn repr(&self, seq: SeqNumber, flags: TcpFlags, window: u16) -> TcpRepr {
        TcpRepr {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: seq.0,
            ack: if flags.contains(TcpFlags::ACK) {
                self.rcv_nxt().0
            } else {
                0
            },
            flags,
            window,
            urgent: 0,
            options: TcpOptions::default(),
        }
    }
}

/// The reset that answers `seg` (of `payload_len` data octets) when no
/// connection takes it (RFC 9293 §3.10.7.1, CLOSED): `<SEQ=SEG.ACK><CTL=RST>`
/// if it had an ACK, else `<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>`;
/// `None` for a reset (never answered).
pub fn reset_for(seg: &TcpRepr, payload_len: usize) -> Option<TcpRepr> {
    if seg.flags.contains(TcpFlags::RST) {
        return None;
    }
    let mut r = TcpRepr {
        src_port: seg.dst_port,
        dst_port: seg.src_port,
        seq: 0,
        ack: 0,
        flags: TcpFlags::RST,
        window: 0,
        urgent: 0,
        options: TcpOptions::default(),
    };
    if seg.flags.contains(TcpFlags::ACK) {
        r.seq = seg.ack;
    } else {
        let len = payload_len as u32
            + u32::from(seg.flags.contains(TcpFlags::SYN))
            + u32::from(seg.flags.contains(TcpFlags::FIN));
        r.ack = seg.seq.wrapping_add(len);
        r.flags = TcpFlags::RST | TcpFlags::ACK;
    }
    Some(r)
}

#[cfg(test)]
mod bare_fin_tests;
#[cfg(test)]
mod dsack_tests;
#[cfg(test)]
mod idle_restart_tests;
#[cfg(test)]
mod impairment_tests;
#[cfg(test)]
mod layout_tests;
#[cfg(test)]
mod limited_transmit_tests;
#[cfg(test)]
mod loss_counter_tests;
#[cfg(test)]
mod packetdrill_recovery_tests;
#[cfg(test)]
mod predict_tests;
#[cfg(test)]
mod push_tests;
#[cfg(test)]
mod quick_ack_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod script;
#[cfg(test)]
mod script_tests;
#[cfg(test)]
mod shutdown_read_tests;
#[cfg(test)]
mod slow_start_tests;
#[cfg(test)]
mod tests;
