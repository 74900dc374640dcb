//! Header prediction changes nothing (see `predict.rs`), nor does the
//! output check that spares NextSeg (`output.rs`): twin control blocks,
//! one with these short paths and one taking every segment through the
//! general processing and every output through NextSeg (the test-only
//! `short_paths_off`), are fed the same random
//! segments and application calls. They must answer each the same, emit
//! the same segments (header, options and data), deliver the same data,
//! and end every step in the same state: the whole control block, compared
//! through its `Debug` form (buffers, scoreboard, RACK, recovery,
//! congestion control, timers, counters), the prediction counters aside.
//!
//! The first, with the short paths, takes its output as the connection's
//! stage does: the check half, then the predicted send with the
//! template's fields (`Tcb::poll_predicted_send`), then, when that
//! declines, the full send.
//!
//! An application's write goes to the first, when no timer is due, as
//! the stage takes it: the predicted write first (`Tcb::write_predicted`,
//! the write and its one segment in one step), the write and the output
//! above when that declines; the segment it sent is the first of the
//! outputs compared.
//!
//! A third control block, with the short paths on, skips the check half
//! of output (`Tcb::poll_quiet`) and always takes the full send
//! (`Tcb::poll_output_due`, what `poll_output` is without its check): the
//! check's "nothing to send" — and the word of what is due that it asks,
//! `due.rs` — must agree with the full send on every step, the same
//! segments out (none when the check said none) and the same state.
//!
//! The peer is a loose model: it sends mostly the next segment expected
//! with the ACK of what it received, the same window and fresh timestamps
//! (so that prediction is taken often), and otherwise segments out of
//! order, duplicates, old or bad ACKs, new windows, SACK and D-SACK
//! blocks, old, missing and random timestamps, FIN, RST, SYN and URG; it
//! misses some of what the control block sends, so that SACKs, RACK,
//! recovery and the timers have work.

use super::*;
use crate::tcp::config::{Keepalive, TcpOffload};
use crate::tcp::congestion::CongestionKind;
use crate::tcp::conn_drop_reason::ConnDropReason as Drop;
use crate::wire::tcp::{TcpTemplate, TemplateFields};
use crate::wire::tcp_predicted::TcpPredicted;
use pathstack_core::time::Duration;
use proptest::prelude::*;

/// An emitted segment: header, data, super-segment size.
type Emitted = (TcpRepr, Vec<u8>, u16);

const LPORT: u16 = 8080;
const RPORT: u16 = 40000;

/// Where the peer puts a segment, from the control block's RCV.NXT.
#[derive(Clone, Copy, Debug)]
enum Where {
    Next,
    Ahead(u32),
    Behind(u32),
    Any(u32),
}

/// The peer's acknowledgment number.
#[derive(Clone, Copy, Debug)]
enum AckTo {
    /// What it has received in order (the usual).
    Received,
    /// SND.UNA: no advance.
    Una,
    /// Everything sent, received or not.
    Sent,
    /// Part way from SND.UNA to SND.NXT, per mille.
    Part(u32),
    /// Below SND.UNA.
    Old(u32),
    /// Beyond SND.NXT.
    Beyond(u32),
    /// Any number.
    Any(u32),
}

/// The window field.
#[derive(Clone, Copy, Debug)]
enum Win {
    Same,
    Set(u16),
}

/// The timestamps option.
#[derive(Clone, Copy, Debug)]
enum Ts {
    /// The peer's clock, advanced by this many ticks.
    Fresh(u32),
    /// Older than the last sent.
    Old(u32),
    Absent,
    Any(u32),
}

/// SACK blocks.
#[derive(Clone, Copy, Debug)]
enum Sack {
    None,
    /// What the peer holds above its cumulative ACK.
    Received,
    /// A block at these offsets from SND.UNA.
    Any(u32, u32),
    /// A D-SACK of something below SND.UNA.
    Dsack(u32),
}

#[derive(Clone, Copy, Debug)]
struct SegSpec {
    dt_us: u32,
    at: Where,
    len: u16,
    flags: TcpFlags,
    ack: AckTo,
    win: Win,
    ts: Ts,
    sack: Sack,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Segment(SegSpec),
    Send(u16),
    Recv(u16),
    /// Time passes (µs); the timers due run.
    Advance(u32),
    /// The peer misses the next segment the control block sends.
    Lose,
    Nodelay(bool),
    ShutdownWrite,
    ShutdownRead,
    Close,
}

/// The peer's options on its SYN.
#[derive(Clone, Copy, Debug)]
struct PeerSyn {
    mss: Option<u16>,
    ws: Option<u8>,
    sack: bool,
    ts: bool,
    win: u16,
}

/// The control block's data as the peer holds it, and the peer's own
/// clocks.
struct Peer {
    tcb_iss: u32,
    iss: u32,
    /// Ranges of the control block's sequence space received, relative
    /// to its ISS (the SYN is 0).
    got: Vec<(u32, u32)>,
    win: u16,
    ts: u32,
    ecr: u32,
    lose_next: bool,
}

impl Peer {
    fn observe(&mut self, r: &TcpRepr, len: usize) {
        if let Some((v, _)) = r.options.timestamps {
            self.ecr = v;
        }
        if std::mem::take(&mut self.lose_next) {
            return;
        }
        let n = len as u32
            + u32::from(r.flags.contains(TcpFlags::SYN))
            + u32::from(r.flags.contains(TcpFlags::FIN));
        if n > 0 {
            let s = r.seq.wrapping_sub(self.tcb_iss);
            self.got.push((s, s.wrapping_add(n)));
        }
    }

    /// The cumulative point (relative) and the ranges above it, merged.
    fn received(&self) -> (u32, Vec<(u32, u32)>) {
        let mut v = self.got.clone();
        v.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::new();
        for (s, e) in v {
            match merged.last_mut() {
                Some(l) if s <= l.1 => l.1 = l.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let cum = match merged.first() {
            Some(&(0, e)) => e,
            _ => 0,
        };
        let above = merged.into_iter().filter(|&(s, _)| s > cum).collect();
        (cum, above)
    }
}

/// The data octet at `seq` of the peer's stream.
fn octet(peer_iss: u32, seq: u32) -> u8 {
    (seq.wrapping_sub(peer_iss).wrapping_mul(31) >> 2) as u8
}

/// The twins and the peer.
struct Twins {
    a: Tcb,
    b: Tcb,
    /// Like `a`, but every output through `poll_output_due` without the
    /// check half first.
    c: Tcb,
    now: Instant,
    peer: Peer,
    /// Compare the whole state after every step (else every 16th and at
    /// the end: large buffers make the `Debug` form long).
    every_step: bool,
    steps: usize,
    /// Segments the predicting twin took read in place from the wire.
    in_place: u64,
    /// Writes the predicting twin took as predicted writes.
    written_through: u64,
    /// What the predicting twin's predicted write sent, not yet compared.
    a_sent: Vec<Emitted>,
}

fn outputs(t: &mut Tcb, now: Instant) -> Vec<Emitted> {
    let mut v = Vec::new();
    t.poll_output(now, &mut |s| {
        let mut p = s.payload.to_vec();
        p.extend_from_slice(s.payload2);
        v.push((s.repr, p, s.gso_size));
        true
    });
    v
}

/// [`outputs`] as the connection's stage takes them: the check half, the
/// predicted send with the template's fields (made a `TcpRepr` here to
/// compare), and the full send when it declines.
fn outputs_as_stage(t: &mut Tcb, now: Instant) -> Vec<Emitted> {
    if t.poll_quiet(now) {
        return Vec::new();
    }
    let ports = t.ports();
    let mut v = Vec::new();
    let predicted = t.poll_predicted_send(now, |f, a, b| {
        v.push(template_segment(ports, f, a, b));
        true
    });
    if predicted.is_none() {
        t.poll_output_due(now, &mut |s| {
            let mut p = s.payload.to_vec();
            p.extend_from_slice(s.payload2);
            v.push((s.repr, p, s.gso_size));
            true
        });
    }
    v
}

/// The segment a predicted send hands over (the template's fields, the
/// data in two pieces), as a `TcpRepr` and its data to compare.
fn template_segment(
    (src_port, dst_port): (u16, u16),
    f: &TemplateFields,
    a: &[u8],
    b: &[u8],
) -> Emitted {
    let mut p = a.to_vec();
    p.extend_from_slice(b);
    let mut options = TcpOptions::default();
    options.timestamps = Some((f.tsval, f.tsecr));
    let repr = TcpRepr {
        src_port,
        dst_port,
        seq: f.seq,
        ack: f.ack,
        flags: f.flags,
        window: f.window,
        urgent: f.urgent,
        options,
    };
    (repr, p, 0)
}

/// [`outputs`] through the full send alone, without the check half.
fn outputs_due(t: &mut Tcb, now: Instant) -> Vec<Emitted> {
    let mut v = Vec::new();
    t.poll_output_due(now, &mut |s| {
        let mut p = s.payload.to_vec();
        p.extend_from_slice(s.payload2);
        v.push((s.repr, p, s.gso_size));
        true
    });
    v
}

/// The control block's whole state but the prediction counters and the
/// switch.
fn state(t: &mut Tcb) -> String {
    let (stats, off) = (t.stats.clone(), t.short_paths_off);
    t.stats.predicted_acks = 0;
    t.stats.predicted_data = 0;
    t.stats.predicted_sends = 0;
    t.short_paths_off = false;
    let s = format!("{t:?}");
    t.stats = stats;
    t.short_paths_off = off;
    s
}

impl Twins {
    fn new(cfg: TcpConfig, passive: bool, iss: u32, peer_iss: u32, syn: PeerSyn) -> Twins {
        let make = |off: bool| {
            let mut t = if passive {
                Tcb::listen(cfg, LPORT, RPORT, SeqNumber(iss), 77, Instant::ZERO)
            } else {
                Tcb::connect(cfg, LPORT, RPORT, SeqNumber(iss), 77, Instant::ZERO)
            };
            t.short_paths_off = off;
            t
        };
        let big = cfg.recv_buffer > 8192 || cfg.send_buffer > 8192;
        let mut w = Twins {
            a: make(false),
            b: make(true),
            c: make(false),
            now: Instant::ZERO,
            in_place: 0,
            written_through: 0,
            a_sent: Vec::new(),
            peer: Peer {
                tcb_iss: iss,
                iss: peer_iss,
                got: Vec::new(),
                win: syn.win,
                ts: 5_000,
                ecr: 0,
                lose_next: false,
            },
            every_step: !big,
            steps: 0,
        };
        let mut o = TcpOptions::default();
        o.mss = syn.mss;
        o.window_scale = syn.ws;
        o.sack_permitted = syn.sack;
        if syn.ts {
            o.timestamps = Some((w.peer.ts, 0));
        }
        if passive {
            w.inject(TcpFlags::SYN, peer_iss, 0, syn.win, o, &[]);
        } else {
            w.settle();
            w.now = w.now + Duration::from_millis(1);
            w.peer.ts += 1;
            if syn.ts {
                o.timestamps = Some((w.peer.ts, w.peer.ecr));
            }
            w.inject(
                TcpFlags::SYN | TcpFlags::ACK,
                peer_iss,
                iss.wrapping_add(1),
                syn.win,
                o,
                &[],
            );
        }
        if passive {
            // The handshake's ACK (its window is scaled, RFC 7323 §2.2).
            w.now = w.now + Duration::from_millis(1);
            w.peer.ts += 1;
            let mut o = TcpOptions::default();
            if syn.ts {
                o.timestamps = Some((w.peer.ts, w.peer.ecr));
            }
            w.inject(
                TcpFlags::ACK,
                peer_iss.wrapping_add(1),
                iss.wrapping_add(1),
                syn.win,
                o,
                &[],
            );
        }
        w
    }

    /// The timers due now, then the output of both, which must be the
    /// same; the peer sees it; the states must be the same.
    fn settle(&mut self) {
        let now = self.now;
        for t in [&mut self.a, &mut self.b, &mut self.c] {
            if t.poll_at().is_some_and(|p| p <= now) {
                t.on_tick(now);
            }
        }
        let mut oa = std::mem::take(&mut self.a_sent);
        oa.extend(outputs_as_stage(&mut self.a, now));
        let ob = outputs(&mut self.b, now);
        let oc = outputs_due(&mut self.c, now);
        assert_eq!(oa, ob, "emitted segments differ at {now:?}");
        assert_eq!(oa, oc, "the check half and the full send differ at {now:?}");
        for (r, p, _) in &oa {
            self.peer.observe(r, p.len());
        }
        self.steps += 1;
        if self.every_step || self.steps % 16 == 0 {
            self.compare();
        }
    }

    fn compare(&mut self) {
        assert_eq!(
            self.a.wants_output(),
            self.b.wants_output(),
            "wants_output at {:?}",
            self.now
        );
        assert_eq!(self.a.poll_at(), self.b.poll_at(), "poll_at");
        assert_eq!(self.a.wants_output(), self.c.wants_output(), "wants_output");
        assert_eq!(self.a.poll_at(), self.c.poll_at(), "poll_at");
        let sc = state(&mut self.c);
        let (sa, sb) = (state(&mut self.a), state(&mut self.b));
        assert!(
            sa == sc,
            "the check half and the full send leave different states at {:?}",
            self.now
        );
        if sa != sb {
            // The first difference, for the failure message.
            let at = sa
                .bytes()
                .zip(sb.bytes())
                .position(|(x, y)| x != y)
                .unwrap_or(sa.len().min(sb.len()));
            let from = at.saturating_sub(300);
            panic!(
                "states differ at {:?}:\npredicting: …{}…\ngeneral:    …{}…",
                self.now,
                &sa[from..(at + 200).min(sa.len())],
                &sb[from..(at + 200).min(sb.len())]
            );
        }
    }

    fn inject(
        &mut self,
        flags: TcpFlags,
        seq: u32,
        ack: u32,
        win: u16,
        options: TcpOptions,
        payload: &[u8],
    ) {
        let repr = TcpRepr {
            src_port: RPORT,
            dst_port: LPORT,
            seq,
            ack,
            flags,
            window: win,
            urgent: if flags.contains(TcpFlags::URG) {
                (payload.len() as u16).max(1)
            } else {
                0
            },
            options,
        };
        let (ra, in_place) = predicting_receive(&mut self.a, self.now, &repr, payload);
        self.in_place += u64::from(in_place);
        let rb = self.b.on_segment(self.now, &repr, payload);
        let (rc, _) = predicting_receive(&mut self.c, self.now, &repr, payload);
        assert_eq!(ra, rb, "on_segment {repr:?}");
        assert_eq!(ra, rc, "on_segment {repr:?}");
        self.settle();
    }

    fn segment(&mut self, s: SegSpec) {
        self.now = self.now + Duration::from_micros(u64::from(s.dt_us));
        let rcv_nxt = self.a.rcv_nxt().0;
        let seq = match s.at {
            Where::Next => rcv_nxt,
            Where::Ahead(k) => rcv_nxt.wrapping_add(k),
            Where::Behind(k) => rcv_nxt.wrapping_sub(k),
            Where::Any(v) => v,
        };
        let (una, nxt) = (self.a.snd_una().0, self.a.snd_nxt().0);
        let (cum, above) = self.peer.received();
        let ack = match s.ack {
            // What it received, and never below what it acknowledged
            // (the control block's SND.UNA).
            AckTo::Received => {
                SeqNumber(self.peer.tcb_iss.wrapping_add(cum))
                    .max(SeqNumber(una))
                    .0
            }
            AckTo::Una => una,
            AckTo::Sent => nxt,
            AckTo::Part(m) => {
                una.wrapping_add((u64::from(nxt.wrapping_sub(una)) * u64::from(m) / 1000) as u32)
            }
            AckTo::Old(k) => una.wrapping_sub(k),
            AckTo::Beyond(k) => nxt.wrapping_add(k),
            AckTo::Any(v) => v,
        };
        if let Win::Set(w) = s.win {
            self.peer.win = w;
        }
        let mut o = TcpOptions::default();
        match s.ts {
            Ts::Fresh(d) => {
                self.peer.ts = self.peer.ts.wrapping_add(d);
                o.timestamps = Some((self.peer.ts, self.peer.ecr));
            }
            Ts::Old(k) => o.timestamps = Some((self.peer.ts.wrapping_sub(k), self.peer.ecr)),
            Ts::Absent => {}
            Ts::Any(v) => o.timestamps = Some((v, self.peer.ecr)),
        }
        let blocks: Vec<(u32, u32)> = match s.sack {
            Sack::None => Vec::new(),
            Sack::Received => above
                .iter()
                .rev()
                .take(3)
                .map(|&(l, r)| {
                    (
                        self.peer.tcb_iss.wrapping_add(l),
                        self.peer.tcb_iss.wrapping_add(r),
                    )
                })
                .collect(),
            Sack::Any(l, r) => vec![(una.wrapping_add(l), una.wrapping_add(l).wrapping_add(r))],
            Sack::Dsack(k) => vec![(una.wrapping_sub(k), una)],
        };
        o.set_sack_blocks(&blocks);
        let payload: Vec<u8> = (0..u32::from(s.len))
            .map(|i| octet(self.peer.iss, seq.wrapping_add(i)))
            .collect();
        let ack = if s.flags.contains(TcpFlags::ACK) {
            ack
        } else {
            0
        };
        self.inject(s.flags, seq, ack, self.peer.win, o, &payload);
    }

    /// An application call on both; the results must be the same.
    fn app<R: PartialEq + std::fmt::Debug>(&mut self, what: &str, f: impl Fn(&mut Tcb) -> R) {
        let ra = f(&mut self.a);
        let rb = f(&mut self.b);
        let rc = f(&mut self.c);
        assert_eq!(ra, rb, "{what}");
        assert_eq!(ra, rc, "{what}");
        self.settle();
    }

    /// An application's write: on the predicting twin as the stage takes
    /// it when no timer is due (the stage's timers fire from the run loop,
    /// not before a write), the predicted write first; the others write
    /// and then send (`settle`). The same answer from all three.
    fn send(&mut self, data: &[u8]) {
        let now = self.now;
        let ports = self.a.ports();
        let mut sent = Vec::new();
        let through = if self.a.poll_at().is_none_or(|p| p > now) {
            self.a.write_predicted(now, data, |f, a, b| {
                sent.push(template_segment(ports, f, a, b));
                true
            })
        } else {
            None
        };
        let Some(n) = through else {
            self.app("send", |t| t.send(data));
            return;
        };
        self.written_through += 1;
        let ra = Ok(Some(n));
        assert_eq!(ra, self.b.send(data), "send");
        assert_eq!(ra, self.c.send(data), "send");
        self.a_sent = sent;
        self.settle();
    }

    fn run(&mut self, op: Op) {
        match op {
            Op::Segment(s) => self.segment(s),
            Op::Send(n) => {
                let data: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_mul(7)).collect();
                self.send(&data);
            }
            Op::Recv(n) => {
                let n = usize::from(n);
                self.app("recv", |t| {
                    let mut buf = vec![0u8; n];
                    t.recv(&mut buf).map(|r| r.map(|k| buf[..k].to_vec()))
                });
            }
            Op::Advance(us) => {
                self.now = self.now + Duration::from_micros(u64::from(us));
                self.settle();
            }
            Op::Lose => self.peer.lose_next = true,
            Op::Nodelay(on) => self.app("nodelay", |t| t.set_nodelay(on)),
            Op::ShutdownWrite => self.app("shutdown", |t| t.shutdown(Shutdown::Write)),
            Op::ShutdownRead => self.app("shutdown", |t| t.shutdown(Shutdown::Read)),
            Op::Close => self.app("close", |t| t.close()),
        }
    }
}

/// A predicting control block takes a segment as the connection stage
/// does: the bytes on the wire read in place by header prediction first
/// (`TcpPredicted::parse_received`, `Tcb::on_predicted_segment`), the
/// parsed segment through `on_segment` when that declines. Also says
/// whether prediction took it read in place.
fn predicting_receive(
    t: &mut Tcb,
    now: Instant,
    repr: &TcpRepr,
    payload: &[u8],
) -> (Result<(), Drop>, bool) {
    let (src, dst) = ([10, 0, 0, 2].into(), [10, 0, 0, 1].into());
    let mut bytes = vec![0u8; repr.header_len() + payload.len()];
    bytes[repr.header_len()..].copy_from_slice(payload);
    repr.emit(&mut bytes, src, dst, payload).expect("fits");
    let pseudo = TcpTemplate::new(dst, src, LPORT, RPORT).pseudo_sum();
    if let Some(Ok((seg, hl))) = TcpPredicted::parse_received(&bytes, pseudo, false) {
        if t.on_predicted_segment(now, &seg, &bytes[hl..]) {
            return (Ok(()), true);
        }
    }
    (t.on_segment(now, repr, payload), false)
}

/// The control bits of a segment in the body of a case: ACK, PSH, and
/// now and then URG, ECE or neither ACK; none that ends the connection or
/// its prediction for good (those come in the tail, see [`op`]).
fn flags(ending: bool) -> impl Strategy<Value = TcpFlags> {
    let w = u32::from(ending);
    prop_oneof![
        60 => Just(TcpFlags::ACK),
        20 => Just(TcpFlags::ACK | TcpFlags::PSH),
        1 => Just(TcpFlags::ACK | TcpFlags::URG),
        1 => Just(TcpFlags::PSH),
        1 => Just(TcpFlags::from_bits(0x40 | 0x10)), // ECE|ACK
        8 * w => Just(TcpFlags::ACK | TcpFlags::FIN),
        4 * w => Just(TcpFlags::ACK | TcpFlags::PSH | TcpFlags::FIN),
        w => Just(TcpFlags::ACK | TcpFlags::SYN),
        w => Just(TcpFlags::RST),
        w => Just(TcpFlags::ACK | TcpFlags::RST),
    ]
}

/// A segment; `ending` admits those that end the connection or its
/// prediction for good (FIN, RST, SYN, a timestamp far ahead).
fn seg_spec(ending: bool) -> impl Strategy<Value = SegSpec> {
    let at = prop_oneof![
        30 => Just(Where::Next),
        // The tail has more out of order: a FIN ahead of RCV.NXT.
        2 + 8 * u32::from(ending) => (1u32..4000).prop_map(Where::Ahead),
        2 => (1u32..4000).prop_map(Where::Behind),
        1 => any::<u32>().prop_map(Where::Any),
    ];
    let len = prop_oneof![
        6 => Just(0u16),
        6 => 1u16..200,
        2 => 200u16..3000,
    ];
    let ack = prop_oneof![
        30 => Just(AckTo::Received),
        3 => Just(AckTo::Una),
        2 => Just(AckTo::Sent),
        2 => (0u32..1000).prop_map(AckTo::Part),
        1 => (1u32..70_000).prop_map(AckTo::Old),
        1 => (1u32..70_000).prop_map(AckTo::Beyond),
        1 => any::<u32>().prop_map(AckTo::Any),
    ];
    let win = prop_oneof![
        40 => Just(Win::Same),
        1 => any::<u16>().prop_map(Win::Set),
        1 => (0u16..3000).prop_map(Win::Set),
        1 => Just(Win::Set(0)),
    ];
    let ts = prop_oneof![
        30 => (0u32..3).prop_map(Ts::Fresh),
        1 => (1u32..1000).prop_map(Ts::Old),
        1 => Just(Ts::Absent),
        u32::from(ending) => any::<u32>().prop_map(Ts::Any),
    ];
    let sack = prop_oneof![
        30 => Just(Sack::None),
        4 => Just(Sack::Received),
        1 => (0u32..5000, 1u32..3000).prop_map(|(l, r)| Sack::Any(l, r)),
        1 => (1u32..3000).prop_map(Sack::Dsack),
    ];
    (0u32..3000, at, len, flags(ending), ack, win, ts, sack).prop_map(
        |(dt_us, at, len, flags, ack, win, ts, sack)| SegSpec {
            dt_us,
            at,
            len,
            flags,
            ack,
            win,
            ts,
            sack,
        },
    )
}

/// An operation; `ending` admits those that end the connection or its
/// prediction for good (close, shutdown, and the segments of
/// [`seg_spec`]). A case is a long body without them and a short tail
/// with them, so that prediction has long stretches to be taken in.
fn op(ending: bool) -> impl Strategy<Value = Op> {
    let w = u32::from(ending);
    prop_oneof![
        30 => seg_spec(ending).prop_map(Op::Segment),
        8 => (1u16..3000).prop_map(Op::Send),
        8 => (1u16..5000).prop_map(Op::Recv),
        4 => (0u32..5_000).prop_map(Op::Advance),
        2 => (0u32..3_000_000).prop_map(Op::Advance),
        3 => Just(Op::Lose),
        1 => any::<bool>().prop_map(Op::Nodelay),
        w => Just(Op::ShutdownWrite),
        w => Just(Op::ShutdownRead),
        w => Just(Op::Close),
    ]
}

/// A case's operations: the body, then the tail (see [`op`]).
fn ops(body: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    (
        prop::collection::vec(op(false), body),
        prop::collection::vec(op(true), 0..40),
    )
        .prop_map(|(mut b, t)| {
            b.extend(t);
            b
        })
}

/// The peer's answer to a sender: an ACK of what it received, now and
/// then with a little data, SACK blocks of what it holds above a loss, an
/// ACK that stops part way or one that does not advance.
fn ack_spec() -> impl Strategy<Value = SegSpec> {
    let len = prop_oneof![8 => Just(0u16), 1 => 1u16..100];
    let ack = prop_oneof![
        20 => Just(AckTo::Received),
        2 => Just(AckTo::Una),
        2 => (0u32..1000).prop_map(AckTo::Part),
    ];
    let sack = prop_oneof![8 => Just(Sack::None), 2 => Just(Sack::Received)];
    let win = prop_oneof![
        30 => Just(Win::Same),
        1 => (0u16..3000).prop_map(Win::Set),
        1 => any::<u16>().prop_map(Win::Set),
    ];
    (0u32..3000, len, ack, win, sack).prop_map(|(dt_us, len, ack, win, sack)| SegSpec {
        dt_us,
        at: Where::Next,
        len,
        flags: TcpFlags::ACK,
        ack,
        win,
        ts: Ts::Fresh(1),
        sack,
    })
}

/// An operation of a sender's workload: writes of every size (most
/// within a segment, the output side's predicted case), the peer's
/// answers ([`ack_spec`]), losses, time, and now and then anything of
/// [`op`].
fn sender_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (1u16..200).prop_map(Op::Send),
        6 => (200u16..1500).prop_map(Op::Send),
        3 => (1500u16..6000).prop_map(Op::Send),
        24 => ack_spec().prop_map(Op::Segment),
        3 => Just(Op::Lose),
        3 => (0u32..5_000).prop_map(Op::Advance),
        1 => (0u32..3_000_000).prop_map(Op::Advance),
        2 => (1u16..5000).prop_map(Op::Recv),
        1 => any::<bool>().prop_map(Op::Nodelay),
        4 => op(false),
    ]
}

/// A sender's case: a body of [`sender_op`], then a tail of [`op`] that
/// may end the connection.
fn sender_ops(body: std::ops::Range<usize>) -> impl Strategy<Value = Vec<Op>> {
    (
        prop::collection::vec(sender_op(), body),
        prop::collection::vec(op(true), 0..20),
    )
        .prop_map(|(mut b, t)| {
            b.extend(t);
            b
        })
}

fn config() -> impl Strategy<Value = TcpConfig> {
    (
        prop::sample::select(vec![536u16, 1000, 1460]),
        prop::sample::select(vec![1024usize, 2048, 4096, 8192, 200_000]),
        prop::sample::select(vec![1024usize, 2048, 4096, 8192, 200_000]),
        1usize..=8,
        any::<u16>(),
    )
        .prop_map(|(mss, snd, rcv, ranges, bits)| {
            let bit = |i: u32| bits & (1 << i) != 0;
            TcpConfig {
                mss,
                send_buffer: snd,
                recv_buffer: rcv,
                max_ooo_bytes: rcv,
                max_ooo_ranges: ranges,
                window_scaling: !bit(0),
                timestamps: !bit(1),
                sack: !bit(2),
                rack: !bit(3),
                congestion: if bit(4) {
                    CongestionKind::NewReno
                } else {
                    CongestionKind::Cubic
                },
                nodelay: bit(5),
                keepalive: bit(6).then_some(Keepalive {
                    idle: std::time::Duration::from_millis(300),
                    interval: std::time::Duration::from_millis(100),
                    probes: 3,
                }),
                max_stretch_ack: if bit(7) { 2 } else { 16 },
                linger_zero: bit(8) && bit(9),
                offload: TcpOffload {
                    checksum: bit(10),
                    tso_max: if bit(10) && bit(11) { 65535 } else { 0 },
                },
                ..TcpConfig::default()
            }
        })
}

fn peer_syn() -> impl Strategy<Value = PeerSyn> {
    (
        prop::option::weighted(0.9, 64u16..1461),
        prop::option::weighted(0.7, 0u8..15),
        any::<bool>(),
        prop::option::weighted(0.7, Just(())),
        prop_oneof![3 => 1000u16..=65535, 1 => 1u16..1000],
    )
        .prop_map(|(mss, ws, sack, ts, win)| PeerSyn {
            mss,
            ws,
            sack,
            ts: ts.is_some(),
            win,
        })
}

/// One case: the twins opened, then `ops`; returns the counters of the
/// predicting one and how many of its writes were predicted writes.
fn twins_case(
    cfg: TcpConfig,
    passive: bool,
    iss: u32,
    peer_iss: u32,
    syn: PeerSyn,
    ops: &[Op],
) -> (TcpStats, u64) {
    let mut w = Twins::new(cfg, passive, iss, peer_iss, syn);
    for &op in ops {
        w.run(op);
    }
    w.compare();
    // Everything readable is the same (the states compared say so too).
    w.app("drain", |t| {
        let mut buf = vec![0u8; 1 << 18];
        t.recv(&mut buf).map(|r| r.map(|k| buf[..k].to_vec()))
    });
    let b = w.b.stats();
    assert_eq!(b.predicted_acks + b.predicted_data + b.predicted_sends, 0);
    (w.a.stats(), w.written_through)
}

/// A test runner of fixed seed (`seed` in every byte), for the tests
/// that count over the same generated cases on every run.
fn seeded_runner(seed: u8) -> proptest::test_runner::TestRunner {
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(128)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        ..ProptestConfig::default()
    })]

    /// With prediction and without, the same segments out, the same data
    /// delivered, the same answers and the same state, whatever comes in.
    #[test]
    fn prediction_changes_nothing(
        cfg in config(),
        passive in any::<bool>(),
        iss in prop_oneof![any::<u32>(), Just(u32::MAX - 100)],
        peer_iss in any::<u32>(),
        syn in peer_syn(),
        ops in ops(1..300),
    ) {
        twins_case(cfg, passive, iss, peer_iss, syn, &ops);
    }

    /// The output side's prediction changes nothing either: a sender's
    /// workload (writes of random sizes, the peer's ACKs, SACKs and
    /// losses) through both twins, the same segments out and the same
    /// state after every step.
    #[test]
    fn output_prediction_changes_nothing(
        cfg in config(),
        passive in any::<bool>(),
        iss in prop_oneof![any::<u32>(), Just(u32::MAX - 100)],
        peer_iss in any::<u32>(),
        syn in peer_syn(),
        ops in sender_ops(1..300),
    ) {
        twins_case(cfg, passive, iss, peer_iss, syn, &ops);
    }
}

/// The sender's random cases do take the output side's short path, and
/// leave it often too (so both sides of the equivalence are exercised):
/// over a fixed set of generated cases, a good share of the data
/// segments sent were predicted (about a fifth), and a good share were
/// not.
#[test]
fn output_prediction_is_taken_in_the_random_cases() {
    use proptest::strategy::ValueTree;
    let mut runner = seeded_runner(9);
    let strategy = (
        config(),
        any::<bool>(),
        any::<u32>(),
        any::<u32>(),
        peer_syn(),
        sender_ops(100..300),
    );
    let (mut predicted, mut data, mut through) = (0, 0, 0);
    for _ in 0..24 {
        let (cfg, passive, iss, peer_iss, syn, ops) =
            strategy.new_tree(&mut runner).unwrap().current();
        let (s, t) = twins_case(cfg, passive, iss, peer_iss, syn, &ops);
        predicted += s.predicted_sends;
        data += s.data_segs_out;
        through += t;
    }
    println!("predicted: {predicted} of {data} data segments sent, {through} as predicted writes");
    // Some of them as predicted writes (the write and its segment in one
    // step), some not.
    assert!(
        through > 10 && through < predicted,
        "{through} predicted writes"
    );
    assert!(
        predicted * 10 > data && predicted * 10 < data * 9,
        "{predicted} of {data} data segments predicted"
    );
}

/// The random cases do take the predicted paths, both of them: over a
/// fixed set of generated cases, a good share of the segments that came
/// in were predicted (so the equivalence above is not vacuous; about 15 %
/// are, the rest being the general path's to show equal).
#[test]
fn prediction_is_taken_in_the_random_cases() {
    use proptest::strategy::ValueTree;
    let mut runner = seeded_runner(7);
    let strategy = (
        config(),
        any::<bool>(),
        any::<u32>(),
        any::<u32>(),
        peer_syn(),
        ops(100..300),
    );
    let (mut acks, mut data, mut segs) = (0, 0, 0);
    for _ in 0..24 {
        let (cfg, passive, iss, peer_iss, syn, ops) =
            strategy.new_tree(&mut runner).unwrap().current();
        let (s, _) = twins_case(cfg, passive, iss, peer_iss, syn, &ops);
        acks += s.predicted_acks;
        data += s.predicted_data;
        segs += s.segs_in;
    }
    println!("predicted: {acks} pure ACKs, {data} data segments of {segs} segments");
    assert!(acks > 20 && data > 20, "{acks} ACKs, {data} data predicted");
    assert!(
        (acks + data) * 10 > segs,
        "only {} of {segs} segments predicted",
        acks + data
    );
}

/// A request/response exchange, as `pingpong --transport tcp`: every
/// segment is in-order data that also acknowledges the last one, and
/// every one is predicted.
#[test]
fn ping_pong_is_all_predicted() {
    let cfg = TcpConfig {
        nodelay: true,
        ..TcpConfig::default()
    };
    let syn = PeerSyn {
        mss: Some(1460),
        ws: Some(7),
        sack: true,
        ts: true,
        win: 512,
    };
    let mut w = Twins::new(cfg, true, 1000, 2000, syn);
    let seg = |len| SegSpec {
        dt_us: 10,
        at: Where::Next,
        len,
        flags: TcpFlags::ACK | TcpFlags::PSH,
        ack: AckTo::Received,
        win: Win::Same,
        ts: Ts::Fresh(1),
        sack: Sack::None,
    };
    for _ in 0..100 {
        w.run(Op::Segment(seg(1)));
        w.run(Op::Recv(10));
        w.run(Op::Send(1));
    }
    w.compare();
    let s = w.a.stats();
    // The first request acknowledges nothing new and is predicted as
    // data, as is every one after it; every response goes out on the
    // output side's short path.
    assert_eq!((s.predicted_data, s.predicted_acks), (100, 0), "{s:?}");
    // Every one of them read in place, as the connection stage reads it.
    assert_eq!(w.in_place, 100);
    // Every write but the first (which makes the send ring) is a
    // predicted write.
    assert_eq!(w.written_through, 99);
    assert_eq!((s.predicted_sends, s.data_segs_out), (100, 100), "{s:?}");
}

/// A FIN that came ahead of its data, then the data up to it: the data
/// is in order and predictable but for the FIN waiting at its end, which
/// it must reach (CLOSE-WAIT), so it goes the general way.
#[test]
fn data_up_to_a_fin_that_came_first() {
    let syn = PeerSyn {
        mss: Some(1460),
        ws: Some(7),
        sack: true,
        ts: true,
        win: 512,
    };
    let mut w = Twins::new(TcpConfig::default(), true, 1000, 2000, syn);
    let seg = |at, len, flags| SegSpec {
        dt_us: 10,
        at,
        len,
        flags,
        ack: AckTo::Received,
        win: Win::Same,
        ts: Ts::Fresh(1),
        sack: Sack::None,
    };
    w.run(Op::Segment(seg(Where::Next, 5, TcpFlags::ACK)));
    w.run(Op::Segment(seg(
        Where::Ahead(10),
        0,
        TcpFlags::ACK | TcpFlags::FIN,
    )));
    assert_eq!(w.a.state(), State::Established);
    w.run(Op::Segment(seg(Where::Next, 10, TcpFlags::ACK)));
    w.compare();
    assert_eq!(w.a.state(), State::CloseWait);
    assert_eq!(w.a.stats().predicted_data, 1, "only the first segment");
}
