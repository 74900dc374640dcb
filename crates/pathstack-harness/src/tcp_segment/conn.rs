//! The `tcp_segment` connection: the fuzzed control block and its peer,
//! driven by a scripted exchange into one of the connection states (the
//! stage), with the checks every segment the fuzzed block emits passes.

use crate::frames::{A_IP, B_IP};
use crate::input::pattern;
use pathstack_core::time::{Duration, Instant};
use pathstack_inet::tcp::{
    CongestionKind, Keepalive, OutSegment, SeqNumber, Shutdown, State, Tcb, TcpConfig,
};
use pathstack_inet::wire::tcp::{TcpPacket, TcpRepr};

/// A segment: header and payload.
pub(crate) type Seg = (TcpRepr, Vec<u8>);

pub(crate) const CLIENT_PORT: u16 = 40000;
pub(crate) const SERVER_PORT: u16 = 80;
/// Segments kept for replay at most.
const MAX_KEPT: usize = 64;

/// The stages a [`tcp_segment`](super::tcp_segment) input starts from
/// (its first byte).
pub(crate) const STAGES: u8 = 12;

/// The connection's configuration from a flags byte and a size byte.
pub(crate) fn tcp_config(flags: u8, size: u8) -> TcpConfig {
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
fn check_out(t: &Tcb, seg: &OutSegment<'_>) -> Seg {
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
        .emit(&mut buf, A_IP, B_IP, &payload)
        .expect("an emitted segment fits a header");
    buf.truncate(hl);
    buf.extend_from_slice(&payload);
    let p = TcpPacket::new_checked(&buf[..], A_IP, B_IP).expect("own segment checks");
    let back = TcpRepr::parse(&p).expect("own segment parses");
    assert_eq!(back, seg.repr, "own segment reads back the same");
    (seg.repr, payload)
}

/// Runs `poll_output` with the checks; `refuse_after` makes the emitter
/// refuse (no buffer) after that many segments.
pub(crate) fn outputs(t: &mut Tcb, now: Instant, refuse_after: usize) -> Vec<Seg> {
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
        let seg = OutSegment {
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
pub(crate) fn app_send(t: &mut Tcb, n: usize, salt: u8) {
    let data = pattern(n, salt);
    if let Ok(Some(w)) = t.send(&data) {
        assert!(w <= n);
    }
}

/// The fuzzed connection and its peer.
pub(crate) struct Conn {
    pub(crate) t: Tcb,
    pub(crate) p: Tcb,
    pub(crate) now: Instant,
    /// What `t` emitted, not yet given to the peer.
    pub(crate) to_peer: Vec<Seg>,
    /// What the peer emitted and `t` has not seen (or may see again).
    pub(crate) from_peer: Vec<Seg>,
    /// The last timestamps each side sent.
    pub(crate) t_tsval: u32,
    pub(crate) p_tsval: u32,
}

impl Conn {
    pub(crate) fn keep(list: &mut Vec<Seg>, segs: Vec<Seg>, ts: &mut u32) {
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
    pub(crate) fn t_out(&mut self, refuse_after: usize) {
        let v = outputs(&mut self.t, self.now, refuse_after);
        Self::keep(&mut self.to_peer, v, &mut self.t_tsval);
    }
    pub(crate) fn p_out(&mut self) {
        let v = outputs(&mut self.p, self.now, usize::MAX);
        Self::keep(&mut self.from_peer, v, &mut self.p_tsval);
    }
    pub(crate) fn deliver_to_t(&mut self, seg: &Seg) {
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
pub(crate) fn setup(stage: u8, tcfg: TcpConfig, pcfg: TcpConfig) -> Conn {
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
