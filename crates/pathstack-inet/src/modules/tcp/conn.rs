//! The stage of a connection's path: segments in, the control block's
//! output down, one timer for all of the connection's timers.

use super::{four_tuple, PassiveOpen, ReadWouldBlock, TcpModule};
use crate::anno::InetAnno;
use crate::modules::ip::LOCAL_IPV4;
use crate::tcp::conn_drop_reason::ConnDropReason;
use crate::tcp::ring::copy_octets;
use crate::tcp::{CookieOpen, OutSegment, SeqNumber, State, Tcb, TcpConfig};
use crate::wire::icmp::{types, QuotedTcp};
use crate::wire::tcp::{self as wire, TcpPacket, TcpRepr, TcpTemplate, TemplateFields};
use crate::wire::tcp_predicted::TcpPredicted;
use pathstack_core::attrs::Attrs;
use pathstack_core::demux::{DemuxKey, KeyMode};
use pathstack_core::error::PathError;
use pathstack_core::stage::{Cx, EstablishCx, Stage, Verdict};
use pathstack_core::timer::TimerHandle;
use pathstack_core::{Dir, Instant, Msg};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// The stage of one connection.
pub struct TcpConnStage {
    tcb: Tcb,
    remote_ip: Ipv4Addr,
    /// Our address, read once from the path's `LOCAL_IPV4`.
    local_ip: Option<Ipv4Addr>,
    /// The header of the connection's usual segment, formatted once we
    /// know our address (see [`TcpTemplate`]).
    template: Option<TcpTemplate>,
    /// The timer armed for the control block's earliest deadline.
    timer: Option<(TimerHandle, Instant)>,
    /// The listener that opened it (its port), until it is established.
    listener: Option<u16>,
    /// What opened it, for the first segment.
    open: Option<PassiveOpen>,
    /// An application holds the connection (a socket). When it lets go,
    /// the path is deleted once the connection has closed.
    owned: bool,
    /// The module counted this connection's establishment or failure.
    counted: bool,
    /// The first segment of a passive open has made the control block.
    started: bool,
    /// The IP time to live of its segments (`IP_TTL` on the socket);
    /// `None`: IP's default. Carried in each segment's annotations, which
    /// IP's stage and the fast form's link template both read.
    ttl: Option<u8>,
    /// Whether a read would block, for the socket (see
    /// [`ReadWouldBlock`]).
    read_would_block: ReadWouldBlock,
}

impl TcpConnStage {
    pub(super) fn new(
        cfg: Arc<TcpConfig>,
        lport: u16,
        rip: Ipv4Addr,
        rport: u16,
        open: Option<PassiveOpen>,
    ) -> TcpConnStage {
        // The ISS needs our address, known once IP is on the path: a
        // placeholder in LISTEN until the first segment (passive) or
        // `connect` (active) makes the real one.
        let tcb = Tcb::listen(
            cfg,
            lport,
            rport,
            crate::tcp::SeqNumber(0),
            0,
            Instant::ZERO,
        );
        TcpConnStage {
            tcb,
            remote_ip: rip,
            local_ip: None,
            template: None,
            timer: None,
            listener: open.map(|_| lport),
            open,
            owned: open.is_none(),
            counted: false,
            started: false,
            ttl: None,
            read_would_block: ReadWouldBlock::default(),
        }
    }

    /// Sets the IP time to live of the segments it sends from now on
    /// (RFC 1122 §3.2.1.7: the transport may set it); `None` for IP's
    /// default.
    pub fn set_ttl(&mut self, ttl: Option<u8>) {
        self.ttl = ttl;
    }

    /// The IP time to live of its segments.
    pub fn ttl(&self) -> u8 {
        self.ttl.unwrap_or(crate::wire::ipv4::DEFAULT_TTL)
    }

    /// The connection's control block.
    pub fn tcb(&self) -> &Tcb {
        &self.tcb
    }

    /// The control block, writable (socket options at run time). Output
    /// it makes due goes out with the next [`flush`](Self::flush). Clears
    /// the socket's [`ReadWouldBlock`] until the next
    /// [`after_read`](Self::after_read).
    #[inline]
    pub fn tcb_mut(&mut self) -> &mut Tcb {
        self.read_would_block.set(false);
        &mut self.tcb
    }

    /// The flag the socket reads to answer a read that would find
    /// nothing without entering the path (a clone of the stage's).
    pub fn read_would_block(&self) -> ReadWouldBlock {
        self.read_would_block.clone()
    }

    /// After the application's read ([`Tcb::recv`] through
    /// [`tcb_mut`](Self::tcb_mut)), in place of the flush: a read changes
    /// only what the receiving side shows and may make a window update
    /// due, so the flush runs only when output is pending (that update,
    /// or what a write left unsent: a read is what retries a write that
    /// found no buffer). Its timer upkeep has nothing to do — a read moves
    /// no deadline, and the flush after the segment that brought the data
    /// did it — nor do its accounting (no state changes) or the path's
    /// deletion (the socket holds the connection). Then the socket's
    /// [`ReadWouldBlock`] is set from the control block.
    #[inline]
    pub fn after_read(&mut self, cx: &mut Cx<'_, '_>) {
        if self.tcb.output_pending() {
            self.flush(cx);
        }
        self.read_would_block.set(self.tcb.read_would_block());
    }

    /// RECEIVE into `buf` ([`Tcb::recv`]) without the path's context
    /// ([`Stack::stage_at_mut`](pathstack_core::Stack::stage_at_mut)):
    /// the read and whether [`after_read`](Self::after_read) must still
    /// run. A read whose flush would find nothing to send (its window
    /// update is not due, no write waits; almost every read of a
    /// request/response exchange) is done here with what `after_read`
    /// does then — the socket's [`ReadWouldBlock`] from the control block
    /// — and needs no context; otherwise (`true`) the caller runs
    /// `after_read` with one, which flushes and sets the flag.
    /// In line always: its one caller is the socket's read, whose call
    /// would cost a third of what the read does (its registers saved and
    /// restored; TCP ping-pong 5,588 → 5,527 instructions per round trip).
    #[inline(always)]
    pub fn read(&mut self, buf: &mut [u8]) -> (Result<Option<usize>, crate::tcp::TcpError>, bool) {
        let r = self.tcb.recv(buf);
        if self.tcb.output_pending() {
            // As `tcb_mut` leaves it: `after_read` sets it after the flush.
            self.read_would_block.set(false);
            return (r, true);
        }
        // `Tcb::read_would_block` with its output half known: nothing is
        // pending (asked just above), so only the reading side is asked.
        self.read_would_block.set(self.tcb.read_would_block_quiet());
        (r, false)
    }

    /// SEND of the application's `data` ([`Tcb::send`]), keeping the
    /// socket's [`ReadWouldBlock`]: a write changes nothing a read
    /// answers; what it may leave is output, which
    /// [`after_write`](Self::after_write) flushes and looks at.
    #[inline]
    pub fn write(&mut self, data: &[u8]) -> Result<Option<usize>, crate::tcp::TcpError> {
        self.tcb.send(data)
    }

    /// After a [`write`](Self::write), in place of the flush: the flush;
    /// then, as a read that skipped the path would also skip the flush
    /// that retries what is still pending, the socket's
    /// [`ReadWouldBlock`] goes while output waits.
    #[inline]
    pub fn after_write(&mut self, cx: &mut Cx<'_, '_>) {
        // A write has almost always left data to send: the control
        // block's check half would only find that out again before the
        // send asks the same things (`Tcb::poll_output_due` alone is the
        // whole of `poll_output`).
        self.flush_as(cx, false, None);
        self.after_write_flag();
    }

    /// [`write`](Self::write) and [`after_write`](Self::after_write) in
    /// one, for [`Stack::send_from_stage`](pathstack_core::Stack::send_from_stage):
    /// the predicted segment (`Tcb::poll_predicted_send`, the usual write
    /// of a quiet connection), headers written from the template, goes
    /// into `out` (lent empty) for the caller to run down the path at
    /// once, rather than emitted into the send lane and taken back out
    /// (issue 26 item 2). Anything else the write makes due goes out
    /// through `cx` as before.
    #[inline]
    pub fn write_sending(
        &mut self,
        data: &[u8],
        cx: &mut Cx<'_, '_>,
        out: &mut Msg,
    ) -> Result<Option<usize>, crate::tcp::TcpError> {
        // The usual write of a request/response exchange in one step
        // (`Tcb::write_predicted`: a write on a quiet connection with
        // nothing unacknowledged, which is one predicted segment of the
        // written octets), taken in the flush's send: what the write and
        // the flush after it would do, without the flush's steps that
        // find nothing here — the connection's establishment counted, our
        // address known, and ESTABLISHED (not closed: the path stays).
        if let (true, Some(lip)) = (self.counted, self.local_ip) {
            let now = cx.now();
            if let Some(n) = self.send(cx, now, lip, Some(&mut *out), Some(data)) {
                self.arm(cx);
                self.after_write_flag();
                return Ok(Some(n));
            }
        }
        let r = self.tcb.send(data);
        self.flush_as(cx, false, Some(out));
        self.after_write_flag();
        r
    }

    /// The socket's [`ReadWouldBlock`] after a write's flush: as a read
    /// that skipped the path would also skip the flush that retries what
    /// is still pending, the flag goes while output waits.
    #[inline(always)]
    fn after_write_flag(&mut self) {
        if self.read_would_block.get() && self.tcb.output_pending() {
            self.read_would_block.set(false);
        }
    }

    /// The peer's address.
    pub fn remote_ip(&self) -> Ipv4Addr {
        self.remote_ip
    }

    /// Whether an application holds the connection.
    pub fn is_owned(&self) -> bool {
        self.owned
    }

    /// The application takes the connection (accept).
    pub fn adopt(&mut self) {
        self.owned = true;
    }

    /// The application lets the connection go (close): the path is
    /// deleted once the connection has closed (after TIME-WAIT).
    pub fn release(&mut self, cx: &mut Cx<'_, '_>) {
        self.owned = false;
        self.flush(cx);
    }

    #[inline(always)]
    fn local_ip(&mut self, cx: &Cx<'_, '_>) -> Option<Ipv4Addr> {
        if self.local_ip.is_none() {
            self.read_local_ip(cx);
        }
        self.local_ip
    }

    /// Reads our address from the path's attributes (once; out of line).
    #[cold]
    #[inline(never)]
    fn read_local_ip(&mut self, cx: &Cx<'_, '_>) {
        self.local_ip = cx.attrs().get(&LOCAL_IPV4).copied();
    }

    /// Sends what the control block has to send, arms the timer for its
    /// next deadline, tells the module about establishment and failure,
    /// and deletes the path once the connection is over and unowned.
    pub fn flush(&mut self, cx: &mut Cx<'_, '_>) {
        self.flush_as(cx, true, None);
    }

    /// [`flush`](Self::flush), asking the control block's check half
    /// first (`ask_quiet`) or going straight to the send when output is
    /// expected. With `hold`, a predicted segment is put there instead
    /// of emitted (see [`write_sending`](Self::write_sending)).
    #[inline(always)]
    fn flush_as(&mut self, cx: &mut Cx<'_, '_>, ask_quiet: bool, hold: Option<&mut Msg>) {
        let now = cx.now();
        self.account(cx);
        if let Some(lip) = self.local_ip(cx) {
            // Most flushes (after a read, after a segment that needs no
            // answer) have nothing to send: the control block's check
            // half says so before the emission below is set up.
            if !(ask_quiet && self.tcb.poll_quiet(now)) {
                self.send(cx, now, lip, hold, None);
            }
        }
        self.arm(cx);
        if !self.owned && self.tcb.is_closed() {
            Self::delete(cx);
        }
    }

    /// The flush after a predicted segment (issue 26 item 4): when the
    /// prediction left nothing to send (`Tcb::predicted_quiet`: the
    /// answer will carry the ACK, nothing unsent, no restart due), only
    /// the timer is armed for what the prediction itself set; the rest of
    /// the flush would find nothing (the connection is counted, our
    /// address known, ESTABLISHED). Otherwise the flush as always.
    #[inline(always)]
    fn after_predicted(&mut self, cx: &mut Cx<'_, '_>, now: Instant) {
        if self.counted && self.local_ip.is_some() && self.tcb.predicted_quiet(now) {
            // The general path is the reference: its check half answers
            // "quiet", and in this case changes nothing.
            debug_assert!(
                self.tcb.poll_quiet(now),
                "predicted_quiet but not poll_quiet"
            );
            self.arm(cx);
            return;
        }
        self.flush(cx);
    }

    /// The connection is over and unowned: its path goes.
    #[cold]
    #[inline(never)]
    fn delete(cx: &mut Cx<'_, '_>) {
        let _ = cx.delete_path();
    }

    /// Sends what the control block has to send, each segment in a buffer
    /// of the path's pool with its header from the template; a predicted
    /// segment into `hold` when given, for the caller to send. With
    /// `write`, only the predicted write of those octets
    /// (`Tcb::write_predicted`, see [`write_sending`](Self::write_sending)):
    /// `Some` of the octets written, or `None`, having done nothing, when
    /// it is not that case. (One function for both, so that the control
    /// block's predicted send is inlined once.)
    #[inline(never)]
    fn send(
        &mut self,
        cx: &mut Cx<'_, '_>,
        now: Instant,
        lip: Ipv4Addr,
        hold: Option<&mut Msg>,
        write: Option<&[u8]>,
    ) -> Option<usize> {
        let rip = self.remote_ip;
        let csum_offload = self.tcb.config().offload.checksum;
        if self.template.is_none() {
            let (lport, rport) = self.tcb.ports();
            self.template = Some(TcpTemplate::new(lip, rip, lport, rport));
        }
        let ttl = self.ttl;
        // The usual write of a quiet connection (header prediction on
        // output, `tcb/predict_output.rs`): its header's own fields
        // written into the template, with no `TcpRepr` built and no
        // `dyn` call. Everything else the general way below.
        if let Some(t) = &self.template {
            let predicted = self.tcb.predicted_output(now, write, |f, a, b| {
                if let Some(h) = hold {
                    return fill_held(cx, h, t, f, a, b, csum_offload, ttl, rip);
                }
                let Some(mut m) = segment_msg(cx, a, b, csum_offload, 0) else {
                    return false;
                };
                if t.push_fields(&mut m, f, csum_offload).is_err() {
                    return false;
                }
                dress_segment(&mut m, ttl, rip);
                cx.emit(Dir::Down, m).is_ok()
            });
            if predicted.is_some() || write.is_some() {
                return predicted;
            }
        }
        let template = self.template.as_ref();
        self.tcb.poll_output_due(now, &mut |seg: OutSegment<'_>| {
            let Some(mut m) =
                segment_msg(cx, seg.payload, seg.payload2, csum_offload, seg.gso_size)
            else {
                return false;
            };
            // The usual segment from the template, the rest (SACK
            // blocks, the handshake, resets) field by field.
            let pushed = if let Some(t) = template.filter(|t| t.fits(&seg.repr)) {
                t.push_onto(&mut m, &seg.repr, csum_offload)
            } else if csum_offload {
                seg.repr.push_onto_partial(&mut m, lip, rip)
            } else {
                seg.repr.push_onto(&mut m, lip, rip)
            };
            if pushed.is_err() {
                return false;
            }
            dress_segment(&mut m, ttl, rip);
            cx.emit(Dir::Down, m).is_ok()
        });
        None
    }

    /// Reports state changes to the module: a passive connection that is
    /// established joins its listener's accept queue; one that failed
    /// leaves the SYN queue.
    #[inline(always)]
    fn account(&mut self, cx: &mut Cx<'_, '_>) {
        if !self.counted {
            self.account_change(cx);
        }
    }

    /// [`account`](Self::account) until the connection is counted: out of
    /// line, as every flush of an established connection has it done
    /// (the flush is called after every segment and application call).
    #[cold]
    #[inline(never)]
    fn account_change(&mut self, cx: &mut Cx<'_, '_>) {
        let state = self.tcb.state();
        let established = state.is_synchronized();
        let failed = state == State::Closed;
        if !(established || failed) {
            return;
        }
        self.counted = true;
        if established {
            self.drop_stale_timer(cx);
        }
        let path = cx.path();
        let Some(m) = cx.module::<TcpModule>() else {
            return;
        };
        if established {
            m.counters.established += 1;
        } else {
            m.counters.failed += 1;
        }
        let Some(port) = self.listener.take() else {
            return;
        };
        let Some(l) = m.listener_mut(port) else {
            // The listener went away: nobody will accept it.
            self.tcb.abort();
            return;
        };
        if matches!(self.open, Some(PassiveOpen::Syn)) {
            l.syn_queue = l.syn_queue.saturating_sub(1);
        }
        if established {
            if l.accept_queue.len() >= l.backlog {
                l.overflows += 1;
                self.tcb.abort();
            } else {
                l.accept_queue.push_back(path);
            }
        }
    }

    /// At the handshake's end: the stage's timer was armed for the SYN's
    /// (or SYN-ACK's) retransmission deadline, which the ACK stopped, and
    /// [`arm`](Self::arm) leaves a timer armed earlier than needed in
    /// place (it fires, finds nothing due and re-arms). An idle
    /// established connection has no deadline at all (no keepalive by
    /// default), so that timer would fire into nothing an initial RTO
    /// later (RFC 6298 §2.1: 1 s) — and a host opening connections fast
    /// holds one for every connection of the last second. Here the
    /// control block's bound is brought back to its true earliest
    /// deadline and the timer cancelled unless that deadline is as early;
    /// the flush's [`arm`](Self::arm) then arms what is left (a delayed
    /// ACK, keepalive).
    fn drop_stale_timer(&mut self, cx: &mut Cx<'_, '_>) {
        let Some((h, at)) = self.timer else { return };
        self.tcb.settle_wake();
        if self.tcb.wake_at().is_none_or(|w| w > at) {
            cx.cancel_timer(h);
            self.timer = None;
        }
    }

    /// Arms the stage's timer for the control block's earliest deadline
    /// (only when it moved earlier: a timer that fires early finds nothing
    /// due and re-arms). The control block's [`Tcb::wake_at`], a bound
    /// kept without walking its deadlines, is what it asks: the usual
    /// segment moves its deadlines later or stops them, which leaves the
    /// bound (and this timer) where it was.
    #[inline(always)]
    fn arm(&mut self, cx: &mut Cx<'_, '_>) {
        let Some(at) = self.tcb.wake_at() else {
            return;
        };
        if self.timer.is_some_and(|(_, t)| t <= at) {
            return;
        }
        self.rearm(cx, at);
    }

    /// Moves the stage's timer earlier, to `at` (out of line: most
    /// flushes find it armed early enough).
    #[inline(never)]
    fn rearm(&mut self, cx: &mut Cx<'_, '_>, at: Instant) {
        if let Some((h, _)) = self.timer.take() {
            cx.cancel_timer(h);
        }
        let after = at.saturating_since(cx.now());
        if let Ok(h) = cx.arm_timer(after, 0) {
            self.timer = Some((h, at));
        }
    }

    /// The first segment of a passive open: the ISS from the keyed hash
    /// (RFC 6528) now that our address is known, and the control block
    /// for what opened the path.
    fn start_passive(&mut self, cx: &mut Cx<'_, '_>, repr: &TcpRepr) {
        let Some(open) = self.open else { return };
        let Some(lip) = self.local_ip(cx) else { return };
        let (lport, rport) = self.tcb.ports();
        let cfg = self.tcb.shared_config();
        let now = cx.now();
        let Some(m) = cx.module::<TcpModule>() else {
            return;
        };
        let tuple = four_tuple(lip, lport, self.remote_ip, rport);
        let iss = m.iss(&tuple, now);
        self.tcb = match open {
            PassiveOpen::Syn => Tcb::listen(cfg, lport, rport, iss, ts_offset(iss), now),
            PassiveOpen::Cookie(c) => Tcb::from_cookie(cfg, lport, rport, repr, c, now),
        };
    }
}

/// A segment's buffer from the path's pool with its data (`a`, then `b`:
/// the send ring may wrap), the header still to push; with checksum
/// offload, where the device finds the checksum field (and, for a
/// super-segment, `gso_size`). `None` when there is no buffer.
#[inline(always)]
fn segment_msg(
    cx: &mut Cx<'_, '_>,
    a: &[u8],
    b: &[u8],
    csum_offload: bool,
    gso_size: u16,
) -> Option<Msg> {
    let mut m = cx.pool().alloc_empty(a.len() + b.len()).ok()?;
    fill_segment(&mut m, a, b, csum_offload, gso_size)?;
    Some(m)
}

/// [`segment_msg`]'s filling of an empty buffer `m`: the data and the
/// offload annotations. `None` when the data does not fit.
#[inline(always)]
fn fill_segment(m: &mut Msg, a: &[u8], b: &[u8], csum_offload: bool, gso_size: u16) -> Option<()> {
    // (Empty pieces, a bare ACK's and the unwrapped ring's second, are
    // not copied: appending nothing is a no-op.) A few octets are copied
    // in line, not by a call to `memcpy` (`tcp::ring`).
    if !a.is_empty() {
        copy_octets(m.append(a.len()).ok()?, a);
    }
    if !b.is_empty() {
        copy_octets(m.append(b.len()).ok()?, b);
    }
    // With checksum offload the device sums the segment (and, for a
    // super-segment, each piece it cuts): the header leaves the
    // pseudo-header sum and we say where the field is.
    if csum_offload {
        let anno = m.anno_mut();
        let mut o = anno.offload();
        o.tx_csum_offset = wire::CHECKSUM_OFFSET;
        o.tx_gso_size = gso_size;
        anno.set_offload(o);
    }
    Some(())
}

/// The predicted segment built in the slot `h` it is lent (empty: no
/// buffer, nothing to drop), not beside it and moved in (the message is
/// a cache line): its data `a` then `b`, its header from the template
/// `t` with `f`, its annotations. Whether it is there to send; when not,
/// the slot is left empty again.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn fill_held(
    cx: &mut Cx<'_, '_>,
    h: &mut Msg,
    t: &TcpTemplate,
    f: &TemplateFields,
    a: &[u8],
    b: &[u8],
    csum_offload: bool,
    ttl: Option<u8>,
    rip: Ipv4Addr,
) -> bool {
    let Ok(fresh) = cx.pool().alloc_empty(a.len() + b.len()) else {
        return false;
    };
    std::mem::forget(std::mem::replace(h, fresh));
    if fill_segment(h, a, b, csum_offload, 0).is_none()
        || t.push_fields(h, f, csum_offload).is_err()
    {
        drop(std::mem::take(h));
        return false;
    }
    dress_segment(h, ttl, rip);
    true
}

/// A segment with its header, ready to go down the path: its
/// annotations (the socket's time to live, the peer).
#[inline(always)]
fn dress_segment(m: &mut Msg, ttl: Option<u8>, rip: Ipv4Addr) {
    if let Some(ttl) = ttl {
        m.anno_mut().set_ttl(ttl);
    }
    m.anno_mut().set_peer_ip(rip);
}

/// A connection's timestamp offset (RFC 7323 §5.4), derived from its
/// keyed-hash ISS so it is as unpredictable.
fn ts_offset(iss: crate::tcp::SeqNumber) -> u32 {
    iss.0.rotate_left(13) ^ 0x5bd1_e995
}

impl TcpConnStage {
    /// An ICMP error about one of this connection's segments (handed over
    /// by ICMP). "Fragmentation needed" lowers the connection's MSS when
    /// it quotes a segment in flight (RFC 1191 §6.3, checked as RFC 5927
    /// §4.1 advises); the other unreachables are soft errors for an
    /// established connection (RFC 1122 §4.2.3.9: TCP MUST NOT abort on
    /// them), and are left to the application that reads ICMP.
    #[cold]
    #[inline(never)]
    fn icmp_error(&mut self, msg: &Msg) {
        let Some(q) = QuotedTcp::parse(msg.as_slice()) else {
            return;
        };
        let (lport, rport) = self.tcb.ports();
        let ours = q.src_port == lport && q.dst_port == rport && q.dst == self.remote_ip;
        if ours && q.icmp_type == types::DEST_UNREACHABLE && q.code == 4 {
            self.tcb.on_frag_needed(q.mtu, SeqNumber(q.seq));
        }
    }
}

impl Stage for TcpConnStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        // A segment may bring data, the FIN or an error: the socket asks.
        self.read_would_block.set(false);
        if dir == Dir::Down {
            // Data goes down through the socket calls, not as messages.
            return Verdict::Drop(ConnDropReason::Closed.into());
        }
        if msg.anno().icmp_error() {
            self.icmp_error(msg);
            return Verdict::Consumed;
        }
        let a = msg.anno();
        let (Some(src), Some(dst)) = (a.peer_ip(), a.local_ip()) else {
            return Verdict::Drop(wire::TcpDropReason::Truncated.into());
        };
        let verified = a.offload().rx_csum_verified;
        // Once the connection has its template (its first segment sent),
        // a segment is checked with the template's pseudo-header sum in
        // one pass; the same answer as the checked view and the parse.
        let parsed = match &self.template {
            Some(t) if src == self.remote_ip && Some(dst) == self.local_ip => {
                // Header prediction on the bytes in place first (issue 26
                // item 4): the usual segment of an established connection
                // is read from fixed offsets and taken without a parse.
                // One that is not of the shape is parsed in full; one that
                // is, but not predicted, is parsed without checking the
                // checksum a second time.
                let pseudo = t.pseudo_sum();
                match TcpPredicted::parse_received(msg.as_slice(), pseudo, verified) {
                    None => TcpRepr::parse_received(msg.as_slice(), pseudo, verified),
                    Some(Err(e)) => return Verdict::Drop(e.into()),
                    Some(Ok((seg, hl))) => {
                        let now = cx.now();
                        if self
                            .tcb
                            .on_predicted_segment(now, &seg, &msg.as_slice()[hl..])
                        {
                            self.after_predicted(cx, now);
                            return Verdict::Consumed;
                        }
                        TcpRepr::parse_received(msg.as_slice(), pseudo, true)
                    }
                }
            }
            _ => TcpPacket::new_received(msg.as_slice(), src, dst, verified)
                .and_then(|p| TcpRepr::parse(&p).map(|r| (r, p.header_len()))),
        };
        let (repr, hl) = match parsed {
            Ok(r) => r,
            Err(e) => return Verdict::Drop(e.into()),
        };
        if self.open.is_some() && !self.started {
            self.started = true;
            self.start_passive(cx, &repr);
        }
        let now = cx.now();
        let payload = &msg.as_slice()[hl..];
        if self.tcb.accepts_reopen(&repr) {
            // RFC 6191: a new incarnation from TIME-WAIT. This path goes
            // and the SYN goes on to the listener, which opens the new
            // connection's path after this one is deleted.
            let (lport, _) = self.tcb.ports();
            let listener = cx
                .module::<TcpModule>()
                .and_then(|m| m.listener(lport))
                .and_then(|l| l.path);
            self.tcb.abort();
            self.owned = false;
            self.flush(cx);
            if let Some(l) = listener {
                let _ = cx.send_on(l, 1, Dir::Up, std::mem::take(msg));
                return Verdict::Consumed;
            }
            return Verdict::Drop(ConnDropReason::Closed.into());
        }
        if self.tcb.state() == State::SynReceived && self.accept_queue_full(cx) {
            // Linux drops the handshake's ACK while the accept queue is
            // full: the connection stays in SYN-RECEIVED and the peer's
            // retransmission (or ours of the SYN-ACK) tries again.
            return Verdict::Drop(ConnDropReason::ListenQueueFull.into());
        }
        let r = self.tcb.on_segment(now, &repr, payload);
        self.flush(cx);
        match r {
            Ok(()) => Verdict::Consumed,
            Err(e) => Verdict::Drop(e.into()),
        }
    }

    fn establish(&mut self, _aux: &mut Attrs, cx: &mut EstablishCx<'_>) -> Result<(), PathError> {
        let (lport, rport) = self.tcb.ports();
        let (path, rip) = (cx.path(), self.remote_ip);
        if let Some(m) = cx.module::<TcpModule>() {
            m.record_conn(lport, rip, rport, path);
        }
        Ok(())
    }

    fn on_timer(&mut self, _token: u64, cx: &mut Cx<'_, '_>) {
        self.read_would_block.set(false);
        self.timer = None;
        self.tcb.on_tick(cx.now());
        self.flush(cx);
    }

    fn destroy(&mut self, cx: &mut Cx<'_, '_>) {
        // The socket asks, and finds the path gone.
        self.read_would_block.set(false);
        if let Some((h, _)) = self.timer.take() {
            cx.cancel_timer(h);
        }
        let (lport, rport) = self.tcb.ports();
        let (rip, path) = (self.remote_ip, cx.path());
        let listener = self.listener.take();
        let syn = matches!(self.open, Some(PassiveOpen::Syn)) && !self.counted;
        if let Some(m) = cx.module::<TcpModule>() {
            m.release_conn(lport, rip, rport, path);
            if let Some(l) = listener.and_then(|p| m.listener_mut(p)) {
                if syn {
                    l.syn_queue = l.syn_queue.saturating_sub(1);
                }
                l.accept_queue.retain(|&p| p != path);
            }
        }
    }

    fn demux_key(&self, mode: KeyMode) -> DemuxKey {
        let (lport, rport) = self.tcb.ports();
        DemuxKey::Key(wire::path_demux_key(mode, lport, Some(rport)))
    }
}

impl TcpConnStage {
    fn accept_queue_full(&self, cx: &mut Cx<'_, '_>) -> bool {
        let Some(port) = self.listener else {
            return false;
        };
        cx.module::<TcpModule>()
            .and_then(|m| m.listener(port))
            .is_some_and(|l| l.accept_queue.len() >= l.backlog)
    }

    /// For an active open: the ISS from the keyed hash (RFC 6528) and the
    /// SYN. Called by the socket layer right after the path is made.
    pub fn connect(&mut self, cx: &mut Cx<'_, '_>) {
        if self.open.is_some() || self.tcb.state() != State::Listen {
            return;
        }
        let Some(lip) = self.local_ip(cx) else { return };
        let (lport, rport) = self.tcb.ports();
        let cfg = self.tcb.shared_config();
        let now = cx.now();
        let rip = self.remote_ip;
        let Some(m) = cx.module::<TcpModule>() else {
            return;
        };
        let iss = m.iss(&four_tuple(lip, lport, rip, rport), now);
        self.tcb = Tcb::connect(cfg, lport, rport, iss, ts_offset(iss), now);
        self.flush(cx);
    }
}

/// What a cookie's ACK carried, decoded (for the listener).
pub(super) fn cookie_open(mss: u16, tsecr: Option<u32>) -> CookieOpen {
    let opts = tsecr.and_then(crate::tcp::syn_cookie::decode_timestamp);
    CookieOpen {
        mss,
        window_scale: opts.and_then(|o| o.wscale),
        sack_permitted: opts.is_some_and(|o| o.sack_permitted),
    }
}
