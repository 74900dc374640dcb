//! A packetdrill-like script driver for one [`Tcb`]: the script plays the
//! peer. It injects segments at given times and checks the segments the
//! Tcb emits (flags, sequence and acknowledgment numbers, window,
//! options, payload length) and when it emits them.
//!
//! Sequence numbers in scripts are relative: what the Tcb sends is
//! relative to its ISS, what the script sends to the script's own ISS
//! (the Tcb's IRS), so `seq(1)` is the first data octet either way. SACK
//! blocks follow the same rule as the sequence numbers of the side that
//! owns the data.
//!
//! ```text
//! let mut s = Script::passive(cfg);
//! s.inject(In::syn().mss(1460));
//! s.expect(Out::synack().seq(0).ack(1).mss(1460));
//! s.at(10).inject(In::ack(1, 1));
//! ```

use super::*;
use crate::tcp::conn_drop_reason::ConnDropReason;
use pathstack_core::time::Duration;
use std::collections::VecDeque;

/// The Tcb's local port.
pub const LOCAL: u16 = 8080;
/// The script's port.
pub const REMOTE: u16 = 40000;
/// The Tcb's ISS (near the wrap, so the arithmetic is exercised).
pub const TCB_ISS: u32 = 0xffff_ff00;
/// The script's ISS (the Tcb's IRS).
pub const PEER_ISS: u32 = 1_000_000;
/// The script's timestamp clock offset.
const PEER_TS_BASE: u32 = 7_000;

/// A segment the Tcb emitted, with the time it did.
#[derive(Clone, Debug)]
pub struct Emitted {
    /// When.
    pub at: Instant,
    /// The header.
    pub repr: TcpRepr,
    /// The data.
    pub payload: Vec<u8>,
}

/// A segment the script injects.
#[derive(Clone, Debug)]
pub struct In {
    flags: TcpFlags,
    seq: u32,
    ack: u32,
    win: u16,
    opts: TcpOptions,
    ts_set: bool,
    payload: Vec<u8>,
}

impl In {
    /// A segment with `flags`, relative `seq` and `ack`.
    pub fn new(flags: TcpFlags, seq: u32, ack: u32) -> In {
        In {
            flags,
            seq,
            ack,
            win: 65535,
            opts: TcpOptions::default(),
            ts_set: false,
            payload: Vec::new(),
        }
    }
    /// A SYN at relative 0, no options.
    pub fn syn() -> In {
        In::new(TcpFlags::SYN, 0, 0)
    }
    /// A SYN-ACK at relative 0 acknowledging our SYN.
    pub fn synack() -> In {
        In::new(TcpFlags::SYN | TcpFlags::ACK, 0, 1)
    }
    /// A bare ACK.
    pub fn ack(seq: u32, ack: u32) -> In {
        In::new(TcpFlags::ACK, seq, ack)
    }
    /// A data segment (ACK, PSH) of `len` octets (pattern by sequence).
    pub fn data(seq: u32, ack: u32, len: usize) -> In {
        In::new(TcpFlags::ACK | TcpFlags::PSH, seq, ack).len(len)
    }
    /// FIN|ACK.
    pub fn fin(seq: u32, ack: u32) -> In {
        In::new(TcpFlags::FIN | TcpFlags::ACK, seq, ack)
    }
    /// A reset (no ACK) at `seq`.
    pub fn rst(seq: u32) -> In {
        In::new(TcpFlags::RST, seq, 0)
    }
    /// Payload of `len` octets.
    pub fn len(mut self, len: usize) -> In {
        let base = self.seq;
        self.payload = (0..len)
            .map(|i| pattern(base.wrapping_add(i as u32)))
            .collect();
        self
    }
    /// Adds flags.
    pub fn flags(mut self, f: TcpFlags) -> In {
        self.flags.insert(f);
        self
    }
    /// The window field (as sent, not scaled).
    pub fn win(mut self, w: u16) -> In {
        self.win = w;
        self
    }
    /// MSS option.
    pub fn mss(mut self, m: u16) -> In {
        self.opts.mss = Some(m);
        self
    }
    /// Window scale option.
    pub fn ws(mut self, s: u8) -> In {
        self.opts.window_scale = Some(s);
        self
    }
    /// SACK-permitted option.
    pub fn sack_perm(mut self) -> In {
        self.opts.sack_permitted = true;
        self
    }
    /// Timestamps, explicit (TSval, TSecr).
    pub fn ts(mut self, val: u32, ecr: u32) -> In {
        self.opts.timestamps = Some((val, ecr));
        self.ts_set = true;
        self
    }
    /// SACK blocks, relative to the Tcb's ISS.
    pub fn sack(mut self, blocks: &[(u32, u32)]) -> In {
        let v: Vec<(u32, u32)> = blocks
            .iter()
            .map(|&(l, r)| (TCB_ISS.wrapping_add(l), TCB_ISS.wrapping_add(r)))
            .collect();
        self.opts.set_sack_blocks(&v);
        self
    }
    /// Every option of a Linux SYN: MSS 1460, WS 7, SACK, TS.
    pub fn all_opts(self) -> In {
        self.mss(1460).ws(7).sack_perm().ts(PEER_TS_BASE, 0)
    }
}

/// The octet at relative sequence number `i` of injected data.
pub fn pattern(i: u32) -> u8 {
    (i.wrapping_mul(31) >> 2) as u8
}

/// What an emitted segment must look like: only the fields set are
/// checked.
#[derive(Clone, Debug, Default)]
pub struct Out {
    flags: Option<TcpFlags>,
    seq: Option<u32>,
    ack: Option<u32>,
    win: Option<u16>,
    len: Option<usize>,
    mss: Option<Option<u16>>,
    ws: Option<Option<u8>>,
    sack_perm: Option<bool>,
    ts: Option<bool>,
    tsecr: Option<u32>,
    sack: Option<Vec<(u32, u32)>>,
}

impl Out {
    /// A segment with exactly `flags` (PSH is ignored unless named).
    pub fn new(flags: TcpFlags) -> Out {
        Out {
            flags: Some(flags),
            ..Out::default()
        }
    }
    /// A SYN.
    pub fn syn() -> Out {
        Out::new(TcpFlags::SYN).seq(0)
    }
    /// A SYN-ACK.
    pub fn synack() -> Out {
        Out::new(TcpFlags::SYN | TcpFlags::ACK).seq(0).ack_no(1)
    }
    /// A bare ACK at `seq` acknowledging `ack`.
    pub fn ack(seq: u32, ack: u32) -> Out {
        Out::new(TcpFlags::ACK).seq(seq).ack_no(ack).len(0)
    }
    /// Data of `len` octets at `seq`.
    pub fn data(seq: u32, len: usize) -> Out {
        Out::new(TcpFlags::ACK).seq(seq).len(len)
    }
    /// FIN|ACK.
    pub fn fin(seq: u32, ack: u32) -> Out {
        Out::new(TcpFlags::FIN | TcpFlags::ACK).seq(seq).ack_no(ack)
    }
    /// A reset (any ACK bit).
    pub fn rst(seq: u32) -> Out {
        Out::new(TcpFlags::RST | TcpFlags::ACK).seq(seq)
    }
    /// Relative sequence number.
    pub fn seq(mut self, s: u32) -> Out {
        self.seq = Some(s);
        self
    }
    /// Relative acknowledgment number.
    pub fn ack_no(mut self, a: u32) -> Out {
        self.ack = Some(a);
        self
    }
    /// Window field as sent.
    pub fn win(mut self, w: u16) -> Out {
        self.win = Some(w);
        self
    }
    /// Payload length.
    pub fn len(mut self, n: usize) -> Out {
        self.len = Some(n);
        self
    }
    /// The MSS option (`None`: absent).
    pub fn mss(mut self, m: Option<u16>) -> Out {
        self.mss = Some(m);
        self
    }
    /// The window scale option (`None`: absent).
    pub fn ws(mut self, s: Option<u8>) -> Out {
        self.ws = Some(s);
        self
    }
    /// SACK-permitted present or not.
    pub fn sack_perm(mut self, on: bool) -> Out {
        self.sack_perm = Some(on);
        self
    }
    /// Timestamps present or not.
    pub fn ts(mut self, on: bool) -> Out {
        self.ts = Some(on);
        self
    }
    /// Timestamps present with this TSecr.
    pub fn tsecr(mut self, ecr: u32) -> Out {
        self.ts = Some(true);
        self.tsecr = Some(ecr);
        self
    }
    /// SACK blocks, relative to the script's ISS (empty: none).
    pub fn sack(mut self, blocks: &[(u32, u32)]) -> Out {
        self.sack = Some(blocks.to_vec());
        self
    }

    fn check(&self, e: &Emitted) {
        let r = &e.repr;
        let ctx = format!(
            "at {:?}: {:?} seq {} ack {} win {} len {} {:?}",
            e.at,
            r.flags,
            r.seq.wrapping_sub(TCB_ISS),
            r.ack.wrapping_sub(PEER_ISS),
            r.window,
            e.payload.len(),
            r.options
        );
        if let Some(f) = self.flags {
            let mut got = r.flags;
            if !f.contains(TcpFlags::PSH) {
                got.remove(TcpFlags::PSH);
            }
            assert_eq!(got, f, "flags; {ctx}");
        }
        assert_eq!(r.src_port, LOCAL, "src port; {ctx}");
        assert_eq!(r.dst_port, REMOTE, "dst port; {ctx}");
        if let Some(s) = self.seq {
            assert_eq!(r.seq.wrapping_sub(TCB_ISS), s, "seq; {ctx}");
        }
        if let Some(a) = self.ack {
            assert_eq!(r.ack.wrapping_sub(PEER_ISS), a, "ack; {ctx}");
        }
        if let Some(w) = self.win {
            assert_eq!(r.window, w, "window; {ctx}");
        }
        if let Some(n) = self.len {
            assert_eq!(e.payload.len(), n, "payload length; {ctx}");
        }
        if let Some(m) = self.mss {
            assert_eq!(r.options.mss, m, "MSS option; {ctx}");
        }
        if let Some(s) = self.ws {
            assert_eq!(r.options.window_scale, s, "WS option; {ctx}");
        }
        if let Some(p) = self.sack_perm {
            assert_eq!(r.options.sack_permitted, p, "SACK-permitted; {ctx}");
        }
        if let Some(t) = self.ts {
            assert_eq!(r.options.timestamps.is_some(), t, "timestamps; {ctx}");
        }
        if let Some(ecr) = self.tsecr {
            assert_eq!(r.options.timestamps.map(|t| t.1), Some(ecr), "TSecr; {ctx}");
        }
        if let Some(b) = &self.sack {
            let got: Vec<(u32, u32)> = r
                .options
                .sack_blocks()
                .iter()
                .map(|&(l, r)| (l.wrapping_sub(PEER_ISS), r.wrapping_sub(PEER_ISS)))
                .collect();
            assert_eq!(&got, b, "SACK blocks; {ctx}");
        }
    }
}

/// One Tcb and the script playing its peer.
pub struct Script {
    /// The connection under test.
    pub tcb: Tcb,
    /// The script's clock.
    pub now: Instant,
    /// What the Tcb emitted and the script has not checked yet.
    pub out: VecDeque<Emitted>,
    /// The result of the last injected segment.
    pub last: Result<(), ConnDropReason>,
    /// Add timestamps to injected segments (TSval from the script's
    /// clock, TSecr the last TSval seen) unless the segment sets them.
    pub auto_ts: bool,
    last_tsval: u32,
    /// Inside [`inject_burst`](Self::inject_burst): timers wait.
    burst: bool,
}

/// A connection whose device segments (TSO): checksums partial, 64 KB.
pub fn tso_config() -> TcpConfig {
    TcpConfig {
        offload: crate::tcp::TcpOffload {
            checksum: true,
            tso_max: 65_535,
        },
        ..TcpConfig::default()
    }
}

/// Milliseconds as an instant.
pub fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

impl Script {
    fn with(tcb: Tcb) -> Script {
        Script {
            tcb,
            now: Instant::ZERO,
            out: VecDeque::new(),
            last: Ok(()),
            auto_ts: false,
            burst: false,
            last_tsval: 0,
        }
    }
    /// A Tcb in SYN-SENT (its SYN is in `out`).
    pub fn active(cfg: TcpConfig) -> Script {
        let mut s = Script::with(Tcb::connect(
            cfg,
            LOCAL,
            REMOTE,
            SeqNumber(TCB_ISS),
            100,
            Instant::ZERO,
        ));
        s.collect();
        s
    }
    /// A Tcb in LISTEN, about to see a SYN.
    pub fn passive(cfg: TcpConfig) -> Script {
        Script::with(Tcb::listen(
            cfg,
            LOCAL,
            REMOTE,
            SeqNumber(TCB_ISS),
            100,
            Instant::ZERO,
        ))
    }

    /// An ESTABLISHED passive connection: SYN (with every option when
    /// `opts`) at 0, SYN-ACK, the ACK at 10 ms; nothing left in `out`.
    pub fn established(cfg: TcpConfig, opts: bool) -> Script {
        let mut s = Script::passive(cfg);
        let syn = if opts {
            In::syn().all_opts()
        } else {
            In::syn().mss(1460)
        };
        s.inject(syn);
        s.expect(Out::synack());
        s.auto_ts = s.tcb.extensions().1;
        s.at(10)
            .inject(In::ack(1, 1).win(65535 >> if opts { 7 } else { 0 }));
        s.expect_none();
        assert_eq!(s.tcb.state(), State::Established);
        s
    }

    /// [`established`](Self::established), then `written` octets written
    /// and the initial window of ten `mss`-octet segments sent at 10 ms
    /// (RFC 5681 §3.1, RFC 6928); nothing left in `out`.
    pub fn initial_window(cfg: TcpConfig, opts: bool, mss: usize, written: usize) -> Script {
        let mut s = Script::established(cfg, opts);
        s.write(written);
        for i in 0..10 {
            s.expect(Out::data(1 + (i * mss) as u32, mss).ack_no(1));
        }
        s.expect_none();
        s
    }

    /// The script's TSval now.
    pub fn tsval(&self) -> u32 {
        PEER_TS_BASE.wrapping_add((self.now.as_nanos() / 1_000_000) as u32)
    }

    /// Takes what the Tcb sends now, after running the timers due by the
    /// host's next poll — as the stack does after the input it read (an
    /// ACK due at the end of a receive burst is a timer due now) and,
    /// for a quick ACK, after an application's turn that did not answer
    /// (it is due `quick_ack::ANSWER_GRACE` after the data; a script's
    /// application acts in steps of its own, after this).
    fn collect(&mut self) {
        let now = self.now;
        let next_poll = now + crate::tcp::quick_ack::ANSWER_GRACE;
        if !self.burst && self.tcb.poll_at().is_some_and(|p| p <= next_poll) {
            self.tcb.on_tick(next_poll);
        }
        let mut v = Vec::new();
        self.tcb.poll_output(now, &mut |o| {
            let mut p = o.payload.to_vec();
            p.extend_from_slice(o.payload2);
            v.push(Emitted {
                at: now,
                repr: o.repr,
                payload: p,
            });
            true
        });
        for e in v {
            if let Some((val, _)) = e.repr.options.timestamps {
                self.last_tsval = val;
            }
            self.out.push_back(e);
        }
    }

    /// Runs the Tcb's timers up to `t` (each at its deadline, collecting
    /// what it sends then), and sets the clock to `t`.
    pub fn at(&mut self, t_ms: u64) -> &mut Script {
        self.advance_to(ms(t_ms));
        self
    }

    /// Like [`at`](Self::at) with an instant.
    pub fn advance_to(&mut self, t: Instant) {
        assert!(t >= self.now, "time goes forward: {:?} → {:?}", self.now, t);
        for _ in 0..10_000 {
            match self.tcb.poll_at() {
                Some(p) if p <= t => {
                    if p > self.now {
                        self.now = p;
                    }
                    self.tcb.on_tick(self.now);
                    self.collect();
                    if self.tcb.poll_at() == Some(p) && p <= self.now {
                        // A deadline on_tick did not clear: leave it.
                        break;
                    }
                }
                _ => break,
            }
        }
        self.now = t;
        self.tcb.on_tick(t);
        self.collect();
    }

    /// Advances time by `d` milliseconds.
    pub fn after(&mut self, d_ms: u64) -> &mut Script {
        let t = self.now + Duration::from_millis(d_ms);
        self.advance_to(t);
        self
    }

    /// Injects `seg` now; what the Tcb answers goes to `out`.
    pub fn inject(&mut self, seg: In) -> &mut Script {
        let mut opts = seg.opts;
        if self.auto_ts && !seg.ts_set {
            opts.timestamps = Some((self.tsval(), self.last_tsval));
        }
        let repr = TcpRepr {
            src_port: REMOTE,
            dst_port: LOCAL,
            seq: PEER_ISS.wrapping_add(seg.seq),
            ack: if seg.flags.contains(TcpFlags::ACK) {
                TCB_ISS.wrapping_add(seg.ack)
            } else {
                0
            },
            flags: seg.flags,
            window: seg.win,
            urgent: 0,
            options: opts,
        };
        self.last = self.tcb.on_segment(self.now, &repr, &seg.payload);
        self.collect();
        self
    }

    /// Injects `segs` as one receive burst (frames the device held when
    /// the stack polled it): the timers due now run only after the last,
    /// as the stack fires timers after the input it read.
    pub fn inject_burst(&mut self, segs: impl IntoIterator<Item = In>) -> &mut Script {
        let collect = std::mem::replace(&mut self.burst, true);
        for seg in segs {
            self.inject(seg);
        }
        self.burst = collect;
        self.collect();
        self
    }

    /// Lets the application act on the Tcb now, then collects output.
    pub fn app<R>(&mut self, f: impl FnOnce(&mut Tcb) -> R) -> R {
        let r = f(&mut self.tcb);
        self.collect();
        r
    }

    /// Writes `n` octets (all must fit).
    pub fn write(&mut self, n: usize) -> &mut Script {
        let data = vec![0x5a; n];
        let w = self.app(|t| t.send(&data)).expect("send");
        assert_eq!(w, Some(n), "send took all");
        self
    }

    /// Reads everything readable; returns the count (`None`: would block,
    /// `Some(0)`: end of stream).
    pub fn read_all(&mut self) -> Option<usize> {
        let mut buf = vec![0u8; 1 << 20];
        self.app(|t| t.recv(&mut buf)).expect("recv")
    }

    /// The next emitted segment must match `o` (and have been emitted
    /// by now).
    pub fn expect(&mut self, o: Out) -> Emitted {
        let e = self.out.pop_front().unwrap_or_else(|| {
            panic!(
                "expected {o:?} at {:?}, nothing emitted (state {})",
                self.now,
                self.tcb.state()
            )
        });
        o.check(&e);
        e
    }

    /// The next emitted segment must match `o` and go out at `t_ms`
    /// (advancing time to it, through the Tcb's timers).
    pub fn expect_at(&mut self, t_ms: u64, o: Out) -> Emitted {
        self.expect_none();
        self.advance_until_output(ms(t_ms) + Duration::from_secs(3600));
        let e = self.expect(o);
        assert_eq!(
            e.at,
            ms(t_ms),
            "emitted at {:?}, expected {} ms",
            e.at,
            t_ms
        );
        e
    }

    /// Advances through the Tcb's timers until it emits something or
    /// `limit`; returns the time it did.
    pub fn advance_until_output(&mut self, limit: Instant) -> Option<Instant> {
        while self.out.is_empty() {
            match self.tcb.poll_at() {
                Some(p) if p <= limit => {
                    let p = if p > self.now { p } else { self.now };
                    let before = self.now;
                    self.advance_to(p);
                    if self.out.is_empty() && p == before && self.tcb.poll_at() == Some(p) {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        Some(self.out[0].at)
    }

    /// Nothing was emitted (that the script has not checked).
    pub fn expect_none(&mut self) {
        if let Some(e) = self.out.front() {
            panic!(
                "expected nothing, emitted at {:?}: {:?} seq {} ack {} win {} len {}",
                e.at,
                e.repr.flags,
                e.repr.seq.wrapping_sub(TCB_ISS),
                e.repr.ack.wrapping_sub(PEER_ISS),
                e.repr.window,
                e.payload.len()
            );
        }
    }

    /// Nothing is emitted up to `t_ms` (timers run).
    pub fn expect_none_until(&mut self, t_ms: u64) {
        self.expect_none();
        self.at(t_ms);
        self.expect_none();
    }

    /// The state must be `st`.
    pub fn state(&self, st: State) -> &Self {
        assert_eq!(self.tcb.state(), st, "state at {:?}", self.now);
        self
    }
}
