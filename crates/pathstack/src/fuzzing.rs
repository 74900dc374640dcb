//! The bodies of the cargo-fuzz targets in the repository's `fuzz/`
//! directory, here so that the corpus replay test
//! (`crates/pathstack/tests/fuzz_corpus.rs`) runs exactly the same code.
//! Not a stable API.
//!
//! * [`tcp_segment`]: a [`Tcb`] driven into one of the connection states by
//!   a scripted exchange with a second control block, then fed segments
//!   (raw header bytes, structured headers relative to its sequence
//!   numbers, the peer's own segments replayed and mutated), time, and
//!   application calls, decoded from the fuzz input; every segment it
//!   emits is checked.
//! * [`host_rx`]: Ethernet frames into a whole [`Host`] with UDP sockets, a
//!   TCP listener and an established connection, set up over the
//!   in-memory wire with a second host before the input is read.
//! * [`rpc_rx`](fn@rpc_rx): frames into a host running the RPC stack as client and
//!   server, with calls in flight to a peer the harness speaks for (see
//!   its documentation).
//!
//! All run on a deterministic clock, so an input replays the same way
//! (the TCP module's ISN and cookie secrets are random per host: the
//! `host_rx` input speaks of the connection's sequence numbers relative
//! to what the setup exchanged).
//!
//! The rule they check is the project's: nothing from the wire may panic
//! the stack. [`tcp_segment_seeds`], [`host_rx_seeds`] and
//! [`rpc_rx_seeds`] make the seed corpora.

mod rpc_rx;

pub use rpc_rx::{rpc_rx, rpc_rx_reach, rpc_rx_seeds, RpcRxReach};

use crate::host::{Host, HostConfig};
use crate::socket::{TcpListener, TcpStream, UdpSocket};
use pathstack_core::device::wire::{wire_pair, WireConfig, WireEnd};
use pathstack_core::device::{Device, DeviceCaps, DeviceError, DeviceStats, RxWaiter};
use pathstack_core::msg::SizeClass;
use pathstack_core::time::{Duration, Instant};
use pathstack_core::{Msg, MsgPool, PoolConfig, StackConfig};
use pathstack_inet::tcp::{CongestionKind, Keepalive, SeqNumber, Shutdown, State, Tcb, TcpConfig};
use pathstack_inet::wire::checksum;
use pathstack_inet::wire::tcp::{TcpFlags, TcpOptions, TcpPacket, TcpRepr};
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, PoisonError};

// ----------------------------------------------------------------------
// Input decoding
// ----------------------------------------------------------------------

/// The fuzz bytes, read front to back; past the end every read is zero.
struct Input<'a> {
    d: &'a [u8],
}

impl<'a> Input<'a> {
    fn is_empty(&self) -> bool {
        self.d.is_empty()
    }
    fn u8(&mut self) -> u8 {
        match self.d.split_first() {
            Some((&b, rest)) => {
                self.d = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    fn i16(&mut self) -> i16 {
        self.u16() as i16
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.d.len());
        let (a, b) = self.d.split_at(n);
        self.d = b;
        a
    }
}

/// The seed encoder: the inverse of [`Input`].
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, b: u8) -> &mut Self {
        self.0.push(b);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
}

fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

// ----------------------------------------------------------------------
// tcp_segment
// ----------------------------------------------------------------------

type Seg = (TcpRepr, Vec<u8>);

const CLIENT_PORT: u16 = 40000;
const SERVER_PORT: u16 = 80;
const SRC_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const DST_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// Operations per input at most (keeps one execution short).
const MAX_OPS: usize = 512;
/// Segments kept for replay at most.
const MAX_KEPT: usize = 64;

/// The stages a [`tcp_segment`] input starts from (its first byte).
const STAGES: u8 = 12;

/// The connection's configuration from a flags byte and a size byte.
fn tcp_config(flags: u8, size: u8) -> TcpConfig {
    let buf = [4096usize, 16 * 1024, 64 * 1024, 200 * 1024][usize::from(size & 3)];
    TcpConfig {
        mss: [1460u16, 536, 100, 9000][usize::from((size >> 2) & 3)],
        send_buffer: buf,
        recv_buffer: buf,
        max_ooo_bytes: buf,
        max_ooo_ranges: [16usize, 4, 1, 0][usize::from((size >> 4) & 3)],
        window_scaling: flags & 1 == 0,
        timestamps: flags & 2 == 0,
        sack: flags & 4 == 0,
        rack: flags & 8 == 0,
        congestion: if flags & 16 == 0 {
            CongestionKind::Cubic
        } else {
            CongestionKind::NewReno
        },
        nodelay: flags & 32 != 0,
        keepalive: (flags & 64 != 0).then_some(Keepalive {
            idle: std::time::Duration::from_secs(10),
            interval: std::time::Duration::from_secs(1),
            probes: 3,
        }),
        linger_zero: flags & 128 != 0,
        ..TcpConfig::default()
    }
}

/// Checks what a control block emits must always satisfy, and returns it.
fn check_out(t: &Tcb, seg: &pathstack_inet::tcp::OutSegment<'_>) -> Seg {
    let smss = t.smss() as usize;
    assert!(
        seg.payload_len() <= smss,
        "segment of {} octets above the send MSS {smss} in {}",
        seg.payload_len(),
        t.state()
    );
    assert_eq!(
        (seg.repr.src_port, seg.repr.dst_port),
        t.ports(),
        "segment with other ports"
    );
    let mut payload = seg.payload.to_vec();
    payload.extend_from_slice(seg.payload2);
    // What the stack emits, it can write and read back.
    let mut buf = vec![0u8; 60 + payload.len()];
    let hl = seg
        .repr
        .emit(&mut buf, DST_IP, SRC_IP, &payload)
        .expect("an emitted segment fits a header");
    buf.truncate(hl);
    buf.extend_from_slice(&payload);
    let p = TcpPacket::new_checked(&buf[..], DST_IP, SRC_IP).expect("own segment checks");
    let back = TcpRepr::parse(&p).expect("own segment parses");
    assert_eq!(back, seg.repr, "own segment reads back the same");
    (seg.repr, payload)
}

/// Runs `poll_output` with the checks; `refuse_after` makes the emitter
/// refuse (no buffer) after that many segments.
fn outputs(t: &mut Tcb, now: Instant, refuse_after: usize) -> Vec<Seg> {
    let mut v = Vec::new();
    let mut checked = Vec::new();
    let n = {
        // The checks read the control block, which `poll_output` borrows:
        // take what they need first.
        let smss = t.smss() as usize;
        let ports = t.ports();
        let state = t.state();
        t.poll_output(now, &mut |s| {
            if v.len() >= refuse_after {
                return false;
            }
            assert!(
                s.payload_len() <= smss,
                "segment of {} octets above the send MSS {smss} in {state}",
                s.payload_len()
            );
            assert_eq!((s.repr.src_port, s.repr.dst_port), ports);
            let mut p = s.payload.to_vec();
            p.extend_from_slice(s.payload2);
            v.push((s.repr, p));
            true
        })
    };
    assert_eq!(n, v.len(), "poll_output counts what it sent");
    for (r, p) in v {
        let seg = pathstack_inet::tcp::OutSegment {
            repr: r,
            payload: &p,
            payload2: &[],
            gso_size: 0,
        };
        checked.push(check_out(t, &seg));
    }
    checked
}

/// Delivers everything both ways until quiet (lossless, 1 ms per round),
/// letting delayed ACKs go out. A closed block gets nothing (its path
/// would be gone; it would answer with a reset).
fn exchange(a: &mut Tcb, b: &mut Tcb, now: &mut Instant, rounds: usize) {
    for _ in 0..rounds {
        let mut moved = false;
        for (r, p) in outputs(a, *now, usize::MAX) {
            moved = true;
            if !b.is_closed() {
                let _ = b.on_segment(*now, &r, &p);
            }
        }
        for (r, p) in outputs(b, *now, usize::MAX) {
            moved = true;
            if !a.is_closed() {
                let _ = a.on_segment(*now, &r, &p);
            }
        }
        *now = *now + Duration::from_millis(1);
        if !moved {
            *now = *now + Duration::from_millis(50);
            a.on_tick(*now);
            b.on_tick(*now);
            if !(a.wants_output() || b.wants_output()) {
                break;
            }
        }
    }
}

/// Writes `n` pattern octets (as much as fits).
fn app_send(t: &mut Tcb, n: usize, salt: u8) {
    let data = pattern(n, salt);
    if let Ok(Some(w)) = t.send(&data) {
        assert!(w <= n);
    }
}

/// The fuzzed connection and its peer.
struct Conn {
    t: Tcb,
    p: Tcb,
    now: Instant,
    /// What `t` emitted, not yet given to the peer.
    to_peer: Vec<Seg>,
    /// What the peer emitted and `t` has not seen (or may see again).
    from_peer: Vec<Seg>,
    /// The last timestamps each side sent.
    t_tsval: u32,
    p_tsval: u32,
}

impl Conn {
    fn keep(list: &mut Vec<Seg>, segs: Vec<Seg>, ts: &mut u32) {
        for s in segs {
            if let Some((v, _)) = s.0.options.timestamps {
                *ts = v;
            }
            if list.len() >= MAX_KEPT {
                list.remove(0);
            }
            list.push(s);
        }
    }
    fn t_out(&mut self, refuse_after: usize) {
        let v = outputs(&mut self.t, self.now, refuse_after);
        Self::keep(&mut self.to_peer, v, &mut self.t_tsval);
    }
    fn p_out(&mut self) {
        let v = outputs(&mut self.p, self.now, usize::MAX);
        Self::keep(&mut self.from_peer, v, &mut self.p_tsval);
    }
    fn deliver_to_t(&mut self, seg: &Seg) {
        let before = self.t.state();
        let r = self.t.on_segment(self.now, &seg.0, &seg.1);
        // A segment never revives a closed connection.
        if before == State::Closed {
            assert!(r.is_err());
            assert_eq!(self.t.state(), State::Closed);
        }
    }
}

/// Builds the connection of stage `stage` (see [`STAGES`]).
fn setup(stage: u8, tcfg: TcpConfig, pcfg: TcpConfig) -> Conn {
    let mut now = Instant::from_millis(1000);
    let client = Tcb::connect(
        tcfg,
        CLIENT_PORT,
        SERVER_PORT,
        SeqNumber(0xffff_f000),
        0x1000_0000,
        now,
    );
    let server = Tcb::listen(pcfg, SERVER_PORT, CLIENT_PORT, SeqNumber(1000), 77, now);
    let swap = stage & 0x10 != 0;
    let stage = (stage & 0x0f) % STAGES;
    let mut c = Conn {
        t: client,
        p: server,
        now,
        to_peer: Vec::new(),
        from_peer: Vec::new(),
        t_tsval: 0,
        p_tsval: 0,
    };
    match stage {
        // LISTEN: the fuzzed block is the listener; the client's SYN is
        // there to replay.
        0 => {
            std::mem::swap(&mut c.t, &mut c.p);
            c.p_out();
        }
        // SYN-SENT: our SYN is out; the peer's SYN-ACK waits for replay.
        1 => {
            c.t_out(usize::MAX);
            for s in std::mem::take(&mut c.to_peer) {
                let _ = c.p.on_segment(now, &s.0, &s.1);
            }
            c.p_out();
        }
        // SYN-RECEIVED: the listener answered; the client's ACK waits.
        2 => {
            std::mem::swap(&mut c.t, &mut c.p);
            c.p_out();
            for s in std::mem::take(&mut c.from_peer) {
                let _ = c.t.on_segment(now, &s.0, &s.1);
            }
            c.t_out(usize::MAX);
            for s in std::mem::take(&mut c.to_peer) {
                let _ = c.p.on_segment(now, &s.0, &s.1);
            }
            c.p_out();
        }
        _ => {
            exchange(&mut c.t, &mut c.p, &mut now, 16);
            if swap {
                std::mem::swap(&mut c.t, &mut c.p);
            }
            // Data both ways, delivered.
            app_send(&mut c.t, 3000, 1);
            app_send(&mut c.p, 2000, 2);
            exchange(&mut c.t, &mut c.p, &mut now, 32);
            let mut buf = [0u8; 4096];
            let _ = c.t.recv(&mut buf);
            let _ = c.p.recv(&mut buf);
            match stage {
                // ESTABLISHED with data in flight both ways: half of each
                // side's segments delivered, the rest held.
                3 | 4 => {
                    app_send(&mut c.t, 6000, 3);
                    app_send(&mut c.p, 5000, 4);
                    let ts = outputs(&mut c.t, now, usize::MAX);
                    let ps = outputs(&mut c.p, now, usize::MAX);
                    let (th, tk) = ts.split_at(ts.len() / 2);
                    let (ph, pk) = ps.split_at(ps.len() / 2);
                    now = now + Duration::from_millis(1);
                    for (r, p) in th {
                        let _ = c.p.on_segment(now, r, p);
                    }
                    for (r, p) in ph {
                        let _ = c.t.on_segment(now, r, p);
                    }
                    Conn::keep(&mut c.to_peer, tk.to_vec(), &mut c.t_tsval);
                    Conn::keep(&mut c.from_peer, pk.to_vec(), &mut c.p_tsval);
                    if stage == 4 {
                        // and the ACKs of what arrived, held too.
                        c.now = now;
                        c.p_out();
                    }
                }
                // FIN-WAIT-1: our FIN is out, not acknowledged.
                5 => {
                    let _ = c.t.shutdown(Shutdown::Write);
                }
                // FIN-WAIT-2: our FIN acknowledged, the peer still sends.
                6 => {
                    let _ = c.t.shutdown(Shutdown::Write);
                    exchange(&mut c.t, &mut c.p, &mut now, 16);
                    app_send(&mut c.p, 1500, 5);
                }
                // CLOSE-WAIT: the peer's FIN in.
                7 => {
                    let _ = c.p.shutdown(Shutdown::Write);
                    exchange(&mut c.t, &mut c.p, &mut now, 16);
                }
                // CLOSING: both FINs crossed, neither acknowledged.
                8 => {
                    let _ = c.t.shutdown(Shutdown::Write);
                    let _ = c.p.shutdown(Shutdown::Write);
                    let ts = outputs(&mut c.t, now, usize::MAX);
                    let ps = outputs(&mut c.p, now, usize::MAX);
                    now = now + Duration::from_millis(1);
                    for (r, p) in &ts {
                        let _ = c.p.on_segment(now, r, p);
                    }
                    for (r, p) in &ps {
                        let _ = c.t.on_segment(now, r, p);
                    }
                }
                // LAST-ACK: the peer's FIN in, then ours out.
                9 => {
                    let _ = c.p.shutdown(Shutdown::Write);
                    exchange(&mut c.t, &mut c.p, &mut now, 16);
                    let _ = c.t.shutdown(Shutdown::Write);
                }
                // TIME-WAIT: ours acknowledged, then the peer's FIN.
                10 => {
                    let _ = c.t.shutdown(Shutdown::Write);
                    exchange(&mut c.t, &mut c.p, &mut now, 16);
                    let _ = c.p.shutdown(Shutdown::Write);
                    exchange(&mut c.t, &mut c.p, &mut now, 16);
                }
                // CLOSED by a reset of ours.
                _ => {
                    c.t.abort();
                }
            }
            c.now = now;
            c.t_out(usize::MAX);
            c.p_out();
        }
    }
    c
}

/// The state the scripted setup reaches for `stage` with the default configuration
/// (for the seed test).
pub fn tcp_stage_state(stage: u8) -> State {
    let cfg = tcp_config(0, 0);
    setup(stage, cfg, cfg).t.state()
}

/// One segment built from structured fields relative to the connection.
/// The SYN options `opt`'s low bits ask for: MSS (bit 0) and window
/// scale (bit 1) read from `inp`, SACK-permitted (bit 2).
fn syn_options(inp: &mut Input<'_>, opt: u8) -> TcpOptions {
    let mut options = TcpOptions::default();
    if opt & 1 != 0 {
        options.mss = Some(inp.u16());
    }
    if opt & 2 != 0 {
        options.window_scale = Some(inp.u8());
    }
    options.sack_permitted = opt & 4 != 0;
    options
}

fn structured_segment(inp: &mut Input<'_>, c: &Conn) -> Seg {
    let flags = TcpFlags::from_bits(inp.u8());
    let modes = inp.u8();
    let dseq = i32::from(inp.i16());
    let dack = i32::from(inp.i16());
    let seq = match modes & 3 {
        0 => c.t.rcv_nxt().0.wrapping_add_signed(dseq),
        1 => c.t.rcv_nxt().0.wrapping_add_signed(dseq * 1024),
        2 => c.p.snd_nxt().0.wrapping_add_signed(dseq),
        _ => inp.u32(),
    };
    let ack = match (modes >> 2) & 3 {
        0 => c.t.snd_una().0.wrapping_add_signed(dack),
        1 => c.t.snd_nxt().0.wrapping_add_signed(dack),
        2 => c.t.snd_una().0.wrapping_add_signed(dack * 1024),
        _ => inp.u32(),
    };
    let window = inp.u16();
    let urgent = if modes & 0x10 != 0 { inp.u16() } else { 0 };
    let opt = inp.u8();
    let mut options = syn_options(inp, opt);
    if opt & 8 != 0 {
        let dv = i32::from(inp.i16());
        let tsval = if modes & 0x20 != 0 {
            inp.u32()
        } else {
            c.p_tsval.wrapping_add_signed(dv)
        };
        options.timestamps = Some((tsval, c.t_tsval));
    }
    let nblocks = usize::from((opt >> 4) & 7);
    if nblocks > 0 {
        let mut blocks = [(0u32, 0u32); 4];
        for b in blocks.iter_mut().take(nblocks.min(4)) {
            let l = c.t.snd_una().0.wrapping_add(u32::from(inp.u16()));
            *b = (l, l.wrapping_add(u32::from(inp.u16())));
        }
        options.set_sack_blocks(&blocks[..nblocks.min(4)]);
    }
    let len = usize::from(inp.u16() % 4096);
    let payload = pattern(len, inp.u8());
    (
        TcpRepr {
            src_port: c.t.ports().1,
            dst_port: c.t.ports().0,
            seq,
            ack,
            flags,
            window,
            urgent,
            options,
        },
        payload,
    )
}

/// Raw header bytes (ports and checksum filled in) through
/// [`TcpPacket::new_checked`] and [`TcpRepr::parse`].
fn raw_segment(bytes: &[u8], (local, remote): (u16, u16)) -> Option<Seg> {
    let mut buf = bytes.to_vec();
    if buf.len() < 20 {
        buf.resize(20, 0);
    }
    buf[0..2].copy_from_slice(&remote.to_be_bytes());
    buf[2..4].copy_from_slice(&local.to_be_bytes());
    buf[16] = 0;
    buf[17] = 0;
    let len = u16::try_from(buf.len()).ok()?;
    let pseudo = pseudo_header(SRC_IP, DST_IP, 6, len);
    let c = checksum::compute(&[&pseudo, &buf]);
    buf[16..18].copy_from_slice(&c);
    let p = TcpPacket::new_checked(&buf[..], SRC_IP, DST_IP).ok()?;
    let r = TcpRepr::parse(&p).ok()?;
    Some((r, p.payload().to_vec()))
}

fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, len: u16) -> [u8; 12] {
    let mut h = [0u8; 12];
    h[0..4].copy_from_slice(&src.octets());
    h[4..8].copy_from_slice(&dst.octets());
    h[9] = proto;
    h[10..12].copy_from_slice(&len.to_be_bytes());
    h
}

/// The `tcp_segment` target: see the module's documentation. Layout:
/// stage byte, our flags, the peer's flags, sizes, then operations.
pub fn tcp_segment(data: &[u8]) {
    let mut inp = Input { d: data };
    let stage = inp.u8();
    let tflags = inp.u8();
    let pflags = inp.u8();
    let size = inp.u8();
    let mut c = setup(stage, tcp_config(tflags, size), tcp_config(pflags, size));
    let mut buf = vec![0u8; 70_000];
    let mut ops = 0;
    while !inp.is_empty() && ops < MAX_OPS {
        ops += 1;
        let op = inp.u8();
        match op % 14 {
            0 => {
                let n = usize::from(inp.u8());
                // The stage's demux hands a connection only segments of
                // its ports: the raw bytes get them.
                if let Some(s) = raw_segment(inp.bytes(n), c.t.ports()) {
                    c.deliver_to_t(&s);
                }
            }
            1 => {
                let s = structured_segment(&mut inp, &c);
                c.deliver_to_t(&s);
            }
            2 => {
                let k = usize::from(inp.u8());
                let how = inp.u8();
                let d = inp.i16();
                if c.from_peer.is_empty() {
                    continue;
                }
                let mut s = c.from_peer[k % c.from_peer.len()].clone();
                match how % 8 {
                    0 => {}
                    1 => s.0.seq = s.0.seq.wrapping_add_signed(i32::from(d)),
                    2 => s.0.ack = s.0.ack.wrapping_add_signed(i32::from(d)),
                    3 => s.0.flags = TcpFlags::from_bits(s.0.flags.bits() ^ (d as u8)),
                    4 => s.1.truncate(usize::from(d as u16) % (s.1.len() + 1)),
                    5 => s.0.window = d as u16,
                    6 => {
                        if let Some((v, e)) = s.0.options.timestamps {
                            s.0.options.timestamps = Some((v.wrapping_add_signed(i32::from(d)), e));
                        }
                    }
                    _ => {
                        // Delivered and forgotten (the in-order path).
                        let i = k % c.from_peer.len();
                        s = c.from_peer.remove(i);
                    }
                }
                c.deliver_to_t(&s);
            }
            3 => {
                c.now = c.now + Duration::from_micros(u64::from(inp.u16()) * 10);
                c.t.on_tick(c.now);
            }
            4 => {
                if let Some(at) = c.t.poll_at() {
                    if at > c.now {
                        c.now = at;
                    }
                }
                c.t.on_tick(c.now);
            }
            5 => {
                let s = u64::from(inp.u8());
                let unit = if op & 0x80 != 0 { 60 } else { 1 };
                c.now = c.now + Duration::from_secs(s * unit);
                c.t.on_tick(c.now);
            }
            6 => {
                let n = usize::from(inp.u16()) % 70_000;
                let before = c.t.send_queue();
                match c.t.send(&buf[..n]) {
                    Ok(Some(w)) => {
                        assert!(w <= n);
                        assert_eq!(c.t.send_queue(), before + w, "send queues what it took");
                    }
                    Ok(None) | Err(_) => assert_eq!(c.t.send_queue(), before),
                }
            }
            7 => {
                let n = usize::from(inp.u16()) % 70_000;
                let q = c.t.recv_queue();
                if let Ok(Some(r)) = c.t.recv(&mut buf[..n]) {
                    assert!(r <= n && r <= q, "recv of {r} for {n}, {q} queued");
                }
            }
            8 => {
                let how =
                    [Shutdown::Read, Shutdown::Write, Shutdown::Both][usize::from(inp.u8() % 3)];
                let _ = c.t.shutdown(how);
            }
            9 => c.t.close(),
            10 => {
                c.t.abort();
                assert_eq!(c.t.state(), State::Closed, "abort closes");
            }
            11 => {
                let k = usize::from(inp.u8() % 4);
                c.t_out(k);
            }
            12 => {
                // The peer takes what we sent (some of it) and answers.
                let n = usize::from(inp.u8());
                let take = n.min(c.to_peer.len());
                let segs: Vec<Seg> = c.to_peer.drain(..take).collect();
                for (r, p) in &segs {
                    let _ = c.p.on_segment(c.now, r, p);
                }
                c.p.on_tick(c.now);
                let mut buf2 = [0u8; 8192];
                let _ = c.p.recv(&mut buf2);
                if op & 0x80 != 0 {
                    let v = outputs(&mut c.p, c.now, usize::MAX);
                    for s in v {
                        if let Some((tv, _)) = s.0.options.timestamps {
                            c.p_tsval = tv;
                        }
                        c.deliver_to_t(&s);
                    }
                } else {
                    c.p_out();
                }
            }
            _ => match inp.u8() % 6 {
                0 => {
                    let _ = c.t.peek(&mut buf[..4096]);
                }
                1 => c.t.set_nodelay(op & 0x80 != 0),
                2 => {
                    let k = (op & 0x80 != 0).then_some(Keepalive {
                        idle: std::time::Duration::from_secs(1),
                        interval: std::time::Duration::from_millis(500),
                        probes: 2,
                    });
                    c.t.set_keepalive(k, c.now);
                }
                3 => {
                    let _ = c.t.take_error();
                }
                4 => {
                    if let Some(s) = c.from_peer.last() {
                        let _ = c.t.accepts_reopen(&s.0);
                    }
                }
                _ => {
                    let n = usize::from(inp.u16()) % 70_000;
                    app_send(&mut c.p, n, 9);
                    c.p_out();
                }
            },
        }
        // The stage polls after every event.
        c.t_out(usize::MAX);
        let _ = c.t.poll_at();
        let _ = (c.t.is_readable(), c.t.send_space(), c.t.stats());
    }
}

/// Seeds for [`tcp_segment`]: every stage with a few dialogues.
pub fn tcp_segment_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for stage in 0..STAGES {
        for (swap, flags) in [(0u8, 0u8), (0x10, 0), (0, 0x0e), (0x10, 0x77)] {
            if stage < 3 && swap != 0 {
                continue;
            }
            let st = stage | swap;
            let name = format!("stage{stage:02}_s{swap:02x}_f{flags:02x}");
            let head = |e: &mut Enc| {
                e.u8(st).u8(flags).u8(flags).u8(0);
            };
            // The peer's segments in order, our answers back to it, time.
            let mut e = Enc::default();
            head(&mut e);
            for k in 0..6 {
                e.u8(2).u8(0).u8(7).u16(0); // deliver and forget the first
                e.u8(12 | 0x80).u8(8); // the peer answers
                e.u8(3).u16(100 * k + 50);
            }
            e.u8(4).u8(4);
            out.push((format!("{name}_dialogue"), e.0));
            // Structured segments: in-window data, an old ACK, a SYN, a
            // RST, a FIN, SACK blocks, timestamps.
            let mut e = Enc::default();
            head(&mut e);
            e.u8(1)
                .u8(0x18)
                .u8(0)
                .u16(0)
                .u16(0)
                .u16(65535)
                .u8(8)
                .u16(1)
                .u16(500)
                .u8(7);
            e.u8(1)
                .u8(0x10)
                .u8(0)
                .u16(0xfff0)
                .u16(0)
                .u16(1024)
                .u8(0)
                .u16(0)
                .u8(0);
            e.u8(1)
                .u8(0x12)
                .u8(0)
                .u16(0)
                .u16(0)
                .u16(65535)
                .u8(0x0f)
                .u16(1460)
                .u8(7)
                .u16(1)
                .u16(0)
                .u8(0);
            e.u8(1)
                .u8(0x10)
                .u8(0)
                .u16(0)
                .u16(0)
                .u16(8000)
                .u8(0x38)
                .u16(1)
                .u16(1448)
                .u16(100)
                .u16(2896)
                .u16(1448)
                .u16(0)
                .u16(0)
                .u8(0);
            e.u8(1)
                .u8(0x11)
                .u8(0)
                .u16(0)
                .u16(0)
                .u16(65535)
                .u8(8)
                .u16(1)
                .u16(0)
                .u8(0);
            e.u8(3).u16(5000);
            e.u8(1)
                .u8(0x04)
                .u8(0)
                .u16(0)
                .u16(0)
                .u16(0)
                .u8(0)
                .u16(0)
                .u8(0);
            e.u8(4).u8(4).u8(5).u8(70);
            out.push((format!("{name}_structured"), e.0));
            // The application: send, receive, shutdown, close, timers.
            let mut e = Enc::default();
            head(&mut e);
            e.u8(6).u16(20000).u8(12 | 0x80).u8(64).u8(7).u16(4096);
            e.u8(4).u8(12 | 0x80).u8(64).u8(4).u8(8).u8(1);
            e.u8(12 | 0x80).u8(64).u8(4).u8(9).u8(12 | 0x80).u8(64);
            e.u8(5 | 0x80).u8(2).u8(4);
            out.push((format!("{name}_app"), e.0));
        }
    }
    // A raw header: a SYN with every option.
    let mut e = Enc::default();
    e.u8(0).u8(0).u8(0).u8(0);
    let mut h = vec![0u8; 40];
    h[0..2].copy_from_slice(&CLIENT_PORT.to_be_bytes());
    h[2..4].copy_from_slice(&SERVER_PORT.to_be_bytes());
    h[4..8].copy_from_slice(&0xffff_f000u32.to_be_bytes());
    h[12] = 10 << 4;
    h[13] = 0x02;
    h[14..16].copy_from_slice(&65535u16.to_be_bytes());
    h[20..40].copy_from_slice(&[
        2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
    ]);
    e.u8(0).u8(h.len() as u8).bytes(&h).u8(4);
    out.push(("raw_syn_to_listener".into(), e.0));
    out
}

// ----------------------------------------------------------------------
// host_rx
// ----------------------------------------------------------------------

const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const LISTEN_PORT: u16 = 80;
const FRAME_MAX: usize = 1514;

/// One end of the wire shared between the second host (during setup) and
/// the harness (after), which records the frames it carries.
#[derive(Clone)]
struct SharedEnd(Arc<Mutex<SharedInner>>);

struct SharedInner {
    end: WireEnd,
    log: Option<Vec<Vec<u8>>>,
}

impl SharedEnd {
    fn lock(&self) -> std::sync::MutexGuard<'_, SharedInner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Device for SharedEnd {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        let mut g = self.lock();
        if let Some(log) = &mut g.log {
            log.push(frame.as_slice().to_vec());
        }
        g.end.transmit(frame, now)
    }
    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        let mut g = self.lock();
        let r = g.end.receive(pool, now);
        if let (Some(log), Ok(Some(m))) = (&mut g.log, &r) {
            log.push(m.as_slice().to_vec());
        }
        r
    }
    fn caps(&self) -> DeviceCaps {
        self.lock().end.caps()
    }
    fn poll_at(&self) -> Option<Instant> {
        self.lock().end.poll_at()
    }
    fn stats(&self) -> DeviceStats {
        self.lock().end.stats()
    }
    fn rx_waiter(&self) -> Option<Arc<dyn RxWaiter>> {
        None
    }
}

/// What the harness knows of the established connection, from the frames
/// on the wire: the next sequence numbers and last timestamps each way.
#[derive(Clone, Copy, Debug, Default)]
struct ConnTrack {
    b_port: u16,
    /// Next sequence number of B (the fuzzer's side).
    b_nxt: u32,
    /// Next sequence number of A (the fuzzed host).
    a_nxt: u32,
    b_tsval: u32,
    a_tsval: u32,
}

/// What the harness reads of a TCP segment in an Ethernet frame.
struct Seen {
    src: Ipv4Addr,
    sport: u16,
    dport: u16,
    seq: u32,
    /// SEG.LEN: data, SYN and FIN.
    len: u32,
    tsval: Option<u32>,
}

fn parse_tcp_frame(f: &[u8]) -> Option<Seen> {
    if f.len() < 14 + 20 + 20 || f[12..14] != [0x08, 0x00] {
        return None;
    }
    let ip = &f[14..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip[9] != 6 || ihl < 20 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]])).min(ip.len());
    let seg = ip.get(ihl..total)?;
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let p = TcpPacket::new_checked(seg, src, dst).ok()?;
    let r = TcpRepr::parse(&p).ok()?;
    Some(Seen {
        src,
        sport: r.src_port,
        dport: r.dst_port,
        seq: r.seq,
        len: p.segment_len() as u32,
        tsval: r.options.timestamps.map(|t| t.0),
    })
}

impl ConnTrack {
    fn see(&mut self, f: &[u8]) {
        let Some(Seen {
            src,
            sport: sp,
            dport: dp,
            seq,
            len,
            tsval: ts,
        }) = parse_tcp_frame(f)
        else {
            return;
        };
        if src == A_IP && sp == LISTEN_PORT && dp == self.b_port {
            let end = seq.wrapping_add(len);
            if (end.wrapping_sub(self.a_nxt) as i32) > 0 {
                self.a_nxt = end;
            }
            if let Some(v) = ts {
                self.a_tsval = v;
            }
        } else if src == B_IP && dp == LISTEN_PORT && sp == self.b_port {
            let end = seq.wrapping_add(len);
            if (end.wrapping_sub(self.b_nxt) as i32) > 0 {
                self.b_nxt = end;
            }
            if let Some(v) = ts {
                self.b_tsval = v;
            }
        }
    }
}

/// A stack sized for a few connections: the default one preallocates for
/// a million paths and a thousand frames, which would cost more than the
/// input itself on every execution.
fn small_stack() -> StackConfig {
    StackConfig {
        pool: PoolConfig {
            headroom: 128,
            classes: vec![
                SizeClass {
                    buf_size: 2048,
                    prealloc: 32,
                    max: 1024,
                },
                SizeClass {
                    buf_size: 72 * 1024,
                    prealloc: 0,
                    max: 8,
                },
            ],
        },
        max_paths: 256,
        max_timers: 1024,
        follow_up_cap: 256,
        rx_cap: 256,
        ..StackConfig::default()
    }
}

/// Buffers of a few segments: the default quarter-megabyte ones would be
/// zeroed (and faulted in) for every connection of every execution, which
/// was a quarter of `host_rx`'s time; window scaling is still negotiated.
fn rig_tcp_config() -> TcpConfig {
    TcpConfig {
        send_buffer: 16 * 1024,
        recv_buffer: 80 * 1024,
        max_ooo_bytes: 16 * 1024,
        ..TcpConfig::default()
    }
}

/// Puts `frame` (cut to `FRAME_MAX`) on the wire as the host under
/// test's peer: the fuzz targets' way in.
fn inject_frame(end: &SharedEnd, pool: &MsgPool, now: Instant, frame: &[u8]) {
    let frame = &frame[..frame.len().min(FRAME_MAX)];
    if let Ok(m) = pool.alloc_copy(frame) {
        let _ = end.lock().end.transmit(m, now);
    }
}

/// Takes every frame the host under test sent off the wire, showing each
/// to `see` (the targets follow what the host said, then drop it).
fn drain_wire(end: &SharedEnd, pool: &MsgPool, now: Instant, mut see: impl FnMut(&[u8])) {
    loop {
        let f = {
            let mut g = end.lock();
            match g.end.receive(pool, now) {
                Ok(Some(m)) => m,
                _ => break,
            }
        };
        see(f.as_slice());
    }
}

struct Rig {
    a: Host,
    end: SharedEnd,
    pool: MsgPool,
    now: Instant,
    udp: [UdpSocket; 2],
    listener: TcpListener,
    streams: Vec<TcpStream>,
    track: ConnTrack,
}

impl Rig {
    fn new() -> Option<Rig> {
        let (a_end, b_end) = wire_pair(WireConfig::default());
        let end = SharedEnd(Arc::new(Mutex::new(SharedInner {
            end: b_end,
            log: Some(Vec::new()),
        })));
        let mut now = Instant::from_millis(1000);
        let mut a =
            Host::new_with_stack(HostConfig::parse("10.0.0.1/24").ok()?, a_end, small_stack())
                .ok()?;
        let mut b = Host::new_with_stack(
            HostConfig::parse("10.0.0.2/24").ok()?,
            end.clone(),
            small_stack(),
        )
        .ok()?;
        a.set_manual_clock(now);
        b.set_manual_clock(now);
        let udp = [
            a.udp_bind("0.0.0.0:7").ok()?,
            a.udp_bind("0.0.0.0:53").ok()?,
        ];
        let listener = a.tcp_listen_with("0.0.0.0:80", 8, rig_tcp_config()).ok()?;
        let c = b
            .tcp_connect_with("0.0.0.0:0", "10.0.0.1:80", rig_tcp_config())
            .ok()?;
        let mut s = None;
        let step = |a: &mut Host, b: &mut Host, now: &mut Instant, ms: u64| {
            *now = *now + Duration::from_millis(ms);
            a.set_manual_clock(*now);
            b.set_manual_clock(*now);
            a.poll();
            b.poll();
        };
        for _ in 0..50 {
            step(&mut a, &mut b, &mut now, 1);
            if s.is_none() {
                s = a.tcp_try_accept(&listener).ok()?;
            }
            if s.is_some() && b.tcp_is_connected(&c).ok()? {
                break;
            }
        }
        let (s, _) = s?;
        // Data both ways, some read.
        let _ = b.tcp_try_send(&c, &pattern(3000, 1));
        let _ = a.tcp_try_send(&s, &pattern(2000, 2));
        let mut buf = [0u8; 1024];
        for _ in 0..10 {
            step(&mut a, &mut b, &mut now, 1);
        }
        let _ = a.tcp_try_recv(&s, &mut buf);
        let _ = b.tcp_try_recv(&c, &mut buf);
        // The delayed ACKs.
        for _ in 0..6 {
            step(&mut a, &mut b, &mut now, 10);
        }
        let b_port = b.tcp_local_addr(&c).ok()?.port();
        drop(b);
        let log = end.lock().log.take().unwrap_or_default();
        let mut track = ConnTrack {
            b_port,
            ..ConnTrack::default()
        };
        for f in &log {
            if let Some(s) = parse_tcp_frame(f) {
                // Start from the SYNs, then follow.
                if s.src == A_IP && s.sport == LISTEN_PORT && track.a_nxt == 0 {
                    track.a_nxt = s.seq;
                }
                if s.src == B_IP && s.sport == b_port && track.b_nxt == 0 {
                    track.b_nxt = s.seq;
                }
            }
            track.see(f);
        }
        Some(Rig {
            a,
            end,
            pool: MsgPool::new(PoolConfig::small(16)),
            now,
            udp,
            listener,
            streams: vec![s],
            track,
        })
    }

    fn inject(&mut self, frame: &[u8]) {
        inject_frame(&self.end, &self.pool, self.now, frame);
    }

    fn poll(&mut self) {
        self.a.set_manual_clock(self.now);
        self.a.poll();
        // What A sent: followed, then dropped.
        let track = &mut self.track;
        drain_wire(&self.end, &self.pool, self.now, |f| track.see(f));
    }
}

fn eth(dst: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend_from_slice(&dst);
    f.extend_from_slice(&WireConfig::default().mac_b);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn a_mac() -> [u8; 6] {
    WireConfig::default().mac_a
}

/// An IPv4 packet B → A (or `dst`) with a correct header checksum, and the
/// L4 checksum filled in when unfragmented.
fn ipv4(proto: u8, id: u16, frag: u16, ttl: u8, dst: Ipv4Addr, l4: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20];
    p[0] = 0x45;
    let total = (20 + l4.len()).min(65535) as u16;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6..8].copy_from_slice(&frag.to_be_bytes());
    p[8] = ttl;
    p[9] = proto;
    p[12..16].copy_from_slice(&B_IP.octets());
    p[16..20].copy_from_slice(&dst.octets());
    p.extend_from_slice(l4);
    let mut f = eth(a_mac(), 0x0800, &p);
    fix_checksums(&mut f);
    f
}

/// Recomputes the IPv4 header checksum and, for an unfragmented TCP, UDP
/// or ICMP packet, the L4 checksum, of an Ethernet frame (what a mutated
/// frame needs to get past the checks).
fn fix_checksums(f: &mut [u8]) {
    if f.len() < 34 || f[12..14] != [0x08, 0x00] {
        return;
    }
    let ihl = usize::from(f[14] & 0x0f) * 4;
    if ihl < 20 || 14 + ihl > f.len() {
        return;
    }
    f[24] = 0;
    f[25] = 0;
    let c = checksum::compute(&[&f[14..14 + ihl]]);
    f[24..26].copy_from_slice(&c);
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    let end = (14 + total).min(f.len());
    if end < 14 + ihl || u16::from_be_bytes([f[20], f[21]]) & 0x3fff != 0 {
        return;
    }
    let src = Ipv4Addr::new(f[26], f[27], f[28], f[29]);
    let dst = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
    let proto = f[23];
    let l4 = &mut f[14 + ihl..end];
    let at = match proto {
        1 => 2,
        6 => 16,
        17 => 6,
        _ => return,
    };
    if l4.len() < at + 2 {
        return;
    }
    l4[at] = 0;
    l4[at + 1] = 0;
    let c = if proto == 1 {
        checksum::compute(&[l4])
    } else {
        let pseudo = pseudo_header(src, dst, proto, l4.len() as u16);
        checksum::compute(&[&pseudo, l4])
    };
    let c = if proto == 17 && c == [0, 0] {
        [0xff, 0xff]
    } else {
        c
    };
    l4[at..at + 2].copy_from_slice(&c);
}

fn tcp_bytes(r: &TcpRepr, payload: &[u8], src: Ipv4Addr, dst: Ipv4Addr) -> Vec<u8> {
    let mut buf = vec![0u8; 60 + payload.len()];
    match r.emit(&mut buf, src, dst, payload) {
        Ok(hl) => {
            buf.truncate(hl);
            buf.extend_from_slice(payload);
            buf
        }
        Err(_) => Vec::new(),
    }
}

fn udp_bytes(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::with_capacity(8 + payload.len());
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn arp_bytes(op: u16, sender_mac: [u8; 6], sender: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&sender_mac);
    a.extend_from_slice(&sender.octets());
    a.extend_from_slice(&[0; 6]);
    a.extend_from_slice(&target.octets());
    a
}

/// The `host_rx` target: see the module's documentation. The input is a
/// list of operations (frames, time, application calls).
pub fn host_rx(data: &[u8]) {
    let Some(mut rig) = Rig::new() else {
        panic!("host_rx setup failed");
    };
    let mut inp = Input { d: data };
    let mut ops = 0;
    let mut buf = vec![0u8; 65_536];
    while !inp.is_empty() && ops < MAX_OPS {
        ops += 1;
        let op = inp.u8();
        match op % 8 {
            0 | 1 => {
                let n = usize::from(inp.u16()) % (FRAME_MAX + 1);
                let mut f = inp.bytes(n).to_vec();
                if op % 8 == 1 {
                    fix_checksums(&mut f);
                }
                rig.inject(&f);
            }
            2 => {
                // A segment on the established connection, relative to
                // what the wire showed of it.
                let t = rig.track;
                let flags = TcpFlags::from_bits(inp.u8());
                let modes = inp.u8();
                let dseq = i32::from(inp.i16());
                let dack = i32::from(inp.i16());
                let seq = if modes & 1 == 0 {
                    t.b_nxt.wrapping_add_signed(dseq)
                } else {
                    inp.u32()
                };
                let ack = if modes & 2 == 0 {
                    t.a_nxt.wrapping_add_signed(dack)
                } else {
                    inp.u32()
                };
                let window = inp.u16();
                let mut options = TcpOptions::default();
                if modes & 4 == 0 {
                    let dv = i32::from(inp.i16());
                    options.timestamps = Some((t.b_tsval.wrapping_add_signed(dv), t.a_tsval));
                }
                if modes & 8 != 0 {
                    let l = t.a_nxt.wrapping_sub(u32::from(inp.u16()));
                    options.set_sack_blocks(&[(l, l.wrapping_add(u32::from(inp.u16())))]);
                }
                let urgent = if modes & 16 != 0 { inp.u16() } else { 0 };
                let len = usize::from(inp.u16()) % 1449;
                let payload = pattern(len, inp.u8());
                let r = TcpRepr {
                    src_port: t.b_port,
                    dst_port: LISTEN_PORT,
                    seq,
                    ack,
                    flags,
                    window,
                    urgent,
                    options,
                };
                let seg = tcp_bytes(&r, &payload, B_IP, A_IP);
                let f = ipv4(6, 1, 0x4000, 64, A_IP, &seg);
                rig.inject(&f);
                rig.track.see(&f);
            }
            3 => {
                // A segment to a port: the listener, a closed port, the
                // connection's; options of a SYN.
                let sport = inp.u16();
                let dport = [LISTEN_PORT, 81, 7, inp.u16()][usize::from(op >> 6)];
                let flags = TcpFlags::from_bits(inp.u8());
                let seq = inp.u32();
                let ack = inp.u32();
                let opt = inp.u8();
                let mut options = syn_options(&mut inp, opt);
                if opt & 8 != 0 {
                    options.timestamps = Some((inp.u32(), inp.u32()));
                }
                let len = usize::from(inp.u16()) % 1449;
                let payload = pattern(len, 3);
                let r = TcpRepr {
                    src_port: sport,
                    dst_port: dport,
                    seq,
                    ack,
                    flags,
                    window: inp.u16(),
                    urgent: 0,
                    options,
                };
                let seg = tcp_bytes(&r, &payload, B_IP, A_IP);
                let f = ipv4(6, 2, 0x4000, 64, A_IP, &seg);
                rig.inject(&f);
            }
            4 => match inp.u8() % 3 {
                0 => rig.now = rig.now + Duration::from_micros(u64::from(inp.u16()) * 10),
                1 => rig.now = rig.now + Duration::from_secs(u64::from(inp.u8())),
                _ => {
                    if let Some(at) = rig.a.stack().poll_at() {
                        if at > rig.now {
                            rig.now = at;
                        }
                    }
                }
            },
            5 => {
                let which = inp.u8();
                let si = usize::from(which >> 4);
                let stream = rig.streams.get(si % rig.streams.len().max(1)).copied();
                match which % 9 {
                    0 => {
                        if let Ok(Some((s, _))) = rig.a.tcp_try_accept(&rig.listener) {
                            if rig.streams.len() < 8 {
                                rig.streams.push(s);
                            }
                        }
                    }
                    1 => {
                        if let Some(s) = stream {
                            let n = usize::from(inp.u16()) % 65_536;
                            let _ = rig.a.tcp_try_recv(&s, &mut buf[..n]);
                        }
                    }
                    2 => {
                        if let Some(s) = stream {
                            let n = usize::from(inp.u16()) % 65_536;
                            let _ = rig.a.tcp_try_send(&s, &buf[..n]);
                        }
                    }
                    3 => {
                        if let Some(s) = stream {
                            let how = [Shutdown::Read, Shutdown::Write, Shutdown::Both]
                                [usize::from(inp.u8() % 3)];
                            let _ = rig.a.tcp_shutdown(&s, how);
                        }
                    }
                    4 => {
                        if let Some(s) = stream {
                            let _ = rig.a.tcp_close(s);
                        }
                    }
                    5 => {
                        if let Some(s) = stream {
                            let _ = rig.a.tcp_abort(s);
                        }
                    }
                    6 => {
                        let u = rig.udp[usize::from(which >> 7)];
                        if let Ok(Some((n, from))) = rig.a.udp_try_recv_from(&u, &mut buf) {
                            let _ = rig.a.send_to(&u, &buf[..n.min(1400)], from);
                        }
                    }
                    7 => {
                        let _ = rig.a.ping(B_IP, inp.u16(), b"ping");
                        let _ = rig.a.echo_replies();
                    }
                    _ => {
                        if let Some(s) = stream {
                            let _ = rig.a.tcp_stats(&s);
                            let _ = rig.a.tcp_take_error(&s);
                            let _ = rig.a.tcp_state(&s);
                        }
                        let _ = rig.a.report();
                    }
                }
            }
            6 => {
                // An IP packet from fields: fragments, any protocol.
                let proto = [1u8, 6, 17, inp.u8()][usize::from(op >> 6)];
                let id = inp.u16();
                let frag = inp.u16();
                let ttl = inp.u8();
                let dst = if inp.u8() & 1 == 0 {
                    A_IP
                } else {
                    Ipv4Addr::new(10, 0, 0, 255)
                };
                let n = usize::from(inp.u16()) % 1481;
                let l4 = inp.bytes(n).to_vec();
                let f = ipv4(proto, id, frag, ttl, dst, &l4);
                rig.inject(&f);
            }
            _ => {
                // ARP.
                let oper = u16::from(inp.u8() % 3);
                let mut mac = WireConfig::default().mac_b;
                mac[5] = inp.u8();
                let sender = Ipv4Addr::from(inp.u32());
                let target = if op & 0x80 != 0 {
                    A_IP
                } else {
                    Ipv4Addr::from(inp.u32())
                };
                let dst = if op & 0x40 != 0 { a_mac() } else { [0xff; 6] };
                let f = eth(dst, 0x0806, &arp_bytes(oper, mac, sender, target));
                rig.inject(&f);
            }
        }
        rig.poll();
    }
    // Time runs out: every timer fires.
    for _ in 0..4 {
        rig.now = rig.now + Duration::from_secs(30);
        rig.poll();
    }
}

/// Seeds for [`host_rx`]: realistic frames of each kind.
pub fn host_rx_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let frame = |e: &mut Enc, f: &[u8]| {
        e.u8(0).u16(f.len() as u16).bytes(f);
    };
    // ARP request for A, and a reply.
    let mut e = Enc::default();
    frame(
        &mut e,
        &eth(
            [0xff; 6],
            0x0806,
            &arp_bytes(1, WireConfig::default().mac_b, B_IP, A_IP),
        ),
    );
    frame(
        &mut e,
        &eth(
            a_mac(),
            0x0806,
            &arp_bytes(2, WireConfig::default().mac_b, B_IP, A_IP),
        ),
    );
    e.u8(7 | 0x80)
        .u8(1)
        .u8(9)
        .u32(u32::from(Ipv4Addr::new(10, 0, 0, 9)));
    out.push(("arp".to_string(), e.0));
    // ICMP echo request, and an error about a UDP datagram.
    let mut e = Enc::default();
    let mut icmp = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1];
    icmp.extend_from_slice(b"abcdefgh");
    frame(&mut e, &ipv4(1, 7, 0, 64, A_IP, &icmp));
    let inner = ipv4(17, 9, 0, 64, B_IP, &udp_bytes(7, 9999, b"x"));
    let mut unreach = vec![3, 3, 0, 0, 0, 0, 0, 0];
    unreach.extend_from_slice(&inner[14..]);
    frame(&mut e, &ipv4(1, 8, 0, 64, A_IP, &unreach));
    out.push(("icmp".to_string(), e.0));
    // UDP to the bound ports, echoed; one to a closed port; fragments.
    let mut e = Enc::default();
    frame(
        &mut e,
        &ipv4(17, 10, 0, 64, A_IP, &udp_bytes(9999, 7, b"hello")),
    );
    e.u8(5).u8(6);
    frame(
        &mut e,
        &ipv4(17, 11, 0, 64, A_IP, &udp_bytes(9999, 53, b"query")),
    );
    e.u8(5).u8(6 | 0x80);
    frame(
        &mut e,
        &ipv4(17, 12, 0, 64, A_IP, &udp_bytes(9999, 4444, b"closed")),
    );
    let big = udp_bytes(9999, 7, &pattern(2000, 5));
    e.u8(6 | 0x80)
        .u16(77)
        .u16(0x2000)
        .u8(64)
        .u8(0)
        .u16(1480)
        .bytes(&big[..1480]);
    e.u8(6 | 0x80)
        .u16(77)
        .u16(185)
        .u8(64)
        .u8(0)
        .u16((big.len() - 1480) as u16)
        .bytes(&big[1480..]);
    e.u8(5).u8(6);
    out.push(("udp".to_string(), e.0));
    // A SYN to the listener with every option, its handshake's ACK
    // guessed, a SYN to a closed port.
    let mut e = Enc::default();
    e.u8(3)
        .u16(5555)
        .u8(0x02)
        .u32(1000)
        .u32(0)
        .u8(0x0f)
        .u16(1460)
        .u8(7)
        .u32(1)
        .u32(0)
        .u16(0)
        .u16(65535);
    e.u8(3)
        .u16(5555)
        .u8(0x10)
        .u32(1001)
        .u32(0)
        .u8(0x08)
        .u32(2)
        .u32(0)
        .u16(0)
        .u16(65535);
    e.u8(3 | 0x40)
        .u16(5556)
        .u8(0x02)
        .u32(1000)
        .u32(0)
        .u8(0)
        .u16(0)
        .u16(65535);
    e.u8(5).u8(0);
    out.push(("tcp_syn".to_string(), e.0));
    // The connection: data in order, an ACK, out of order data, a FIN, the
    // application reading and writing, a RST.
    let mut e = Enc::default();
    e.u8(2)
        .u8(0x18)
        .u8(0)
        .u16(0)
        .u16(0)
        .u16(65535)
        .u16(1)
        .u16(100)
        .u8(1);
    e.u8(5).u8(1).u16(4096);
    e.u8(2)
        .u8(0x10)
        .u8(0)
        .u16(0)
        .u16(0)
        .u16(65535)
        .u16(2)
        .u16(0)
        .u8(0);
    e.u8(2)
        .u8(0x18)
        .u8(0)
        .u16(2000)
        .u16(0)
        .u16(65535)
        .u16(3)
        .u16(500)
        .u8(2);
    e.u8(5).u8(2).u16(3000);
    e.u8(4).u8(0).u16(5000);
    e.u8(2)
        .u8(0x10)
        .u8(8)
        .u16(0)
        .u16(0)
        .u16(65535)
        .u16(4)
        .u16(1448)
        .u16(1448)
        .u16(0)
        .u8(0);
    e.u8(2)
        .u8(0x11)
        .u8(0)
        .u16(100)
        .u16(0)
        .u16(65535)
        .u16(5)
        .u16(0)
        .u8(0);
    e.u8(5).u8(3).u8(1);
    e.u8(4).u8(2);
    e.u8(2)
        .u8(0x04)
        .u8(0)
        .u16(0)
        .u16(0)
        .u16(0)
        .u16(6)
        .u16(0)
        .u8(0);
    out.push(("tcp_conn".to_string(), e.0));
    // The application closing while data flows, timers running out.
    let mut e = Enc::default();
    e.u8(5).u8(2).u16(60000);
    e.u8(4).u8(2).u8(4).u8(2).u8(4).u8(1).u8(3);
    e.u8(5).u8(4);
    e.u8(4).u8(1).u8(70);
    out.push(("tcp_close_timers".to_string(), e.0));
    out
}
