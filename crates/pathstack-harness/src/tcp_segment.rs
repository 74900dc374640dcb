//! The `tcp_segment` target: a TCP control block ([`Tcb`](pathstack_inet::tcp::Tcb)) driven into
//! one of the connection states by a scripted exchange with a second
//! control block, then fed segments (raw header bytes, structured headers
//! relative to its sequence numbers, the peer's own segments replayed and
//! mutated), time, and application calls, decoded from the fuzz input;
//! every segment it emits is checked ([`conn`]).
//!
//! Layout: the stage byte (bit 4: the fuzzed block is the server), our
//! configuration flags, the peer's, the buffer and MSS sizes, then
//! operations ([`crate::operations`]), `op % 14` choosing among raw,
//! structured and replayed segments, time, the application's calls, what
//! the emitter refuses and what the peer takes and answers.

mod conn;
mod seeds;
mod segments;

pub use seeds::tcp_segment_seeds;
pub(crate) use segments::syn_options;

use crate::input::Input;
use crate::operations::{self, Target};
use conn::{app_send, outputs, setup, tcp_config, Conn, Seg};
use pathstack_core::time::Duration;
use pathstack_inet::tcp::{Keepalive, Shutdown, State};
use pathstack_inet::wire::tcp::TcpFlags;
use segments::{raw_segment, structured_segment};

/// The fuzzed connection, and the application's buffer.
struct Fuzzed {
    c: Conn,
    buf: Vec<u8>,
}

impl Target for Fuzzed {
    const MAX_OPS: usize = 512;
    // The control block's timers fire as the input moves time; no run-out.
    const RUN_OUT_ROUNDS: usize = 0;

    fn apply(&mut self, op: u8, inp: &mut Input<'_>) {
        match op % 14 {
            0 => {
                let n = usize::from(inp.u8());
                // The stage's demux hands a connection only segments of
                // its ports: the raw bytes get them.
                if let Some(s) = raw_segment(inp.bytes(n), self.c.t.ports()) {
                    self.c.deliver_to_t(&s);
                }
            }
            1 => {
                let s = structured_segment(inp, &self.c);
                self.c.deliver_to_t(&s);
            }
            2 => {
                let k = usize::from(inp.u8());
                let how = inp.u8();
                let d = inp.i16();
                if self.c.from_peer.is_empty() {
                    return;
                }
                let mut s = self.c.from_peer[k % self.c.from_peer.len()].clone();
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
                        let i = k % self.c.from_peer.len();
                        s = self.c.from_peer.remove(i);
                    }
                }
                self.c.deliver_to_t(&s);
            }
            3 => {
                self.c.now = self.c.now + Duration::from_micros(u64::from(inp.u16()) * 10);
                self.c.t.on_tick(self.c.now);
            }
            4 => {
                if let Some(at) = self.c.t.poll_at() {
                    if at > self.c.now {
                        self.c.now = at;
                    }
                }
                self.c.t.on_tick(self.c.now);
            }
            5 => {
                let s = u64::from(inp.u8());
                let unit = if op & 0x80 != 0 { 60 } else { 1 };
                self.c.now = self.c.now + Duration::from_secs(s * unit);
                self.c.t.on_tick(self.c.now);
            }
            6 => {
                let n = usize::from(inp.u16()) % 70_000;
                let before = self.c.t.send_queue();
                match self.c.t.send(&self.buf[..n]) {
                    Ok(Some(w)) => {
                        assert!(w <= n);
                        assert_eq!(
                            self.c.t.send_queue(),
                            before + w,
                            "send queues what it took"
                        );
                    }
                    Ok(None) | Err(_) => assert_eq!(self.c.t.send_queue(), before),
                }
            }
            7 => {
                let n = usize::from(inp.u16()) % 70_000;
                let q = self.c.t.recv_queue();
                if let Ok(Some(r)) = self.c.t.recv(&mut self.buf[..n]) {
                    assert!(r <= n && r <= q, "recv of {r} for {n}, {q} queued");
                }
            }
            8 => {
                let how =
                    [Shutdown::Read, Shutdown::Write, Shutdown::Both][usize::from(inp.u8() % 3)];
                let _ = self.c.t.shutdown(how);
            }
            9 => self.c.t.close(),
            10 => {
                self.c.t.abort();
                assert_eq!(self.c.t.state(), State::Closed, "abort closes");
            }
            11 => {
                let k = usize::from(inp.u8() % 4);
                self.c.t_out(k);
            }
            12 => {
                // The peer takes what we sent (some of it) and answers.
                let n = usize::from(inp.u8());
                let take = n.min(self.c.to_peer.len());
                let segs: Vec<Seg> = self.c.to_peer.drain(..take).collect();
                for (r, p) in &segs {
                    let _ = self.c.p.on_segment(self.c.now, r, p);
                }
                self.c.p.on_tick(self.c.now);
                let mut buf2 = [0u8; 8192];
                let _ = self.c.p.recv(&mut buf2);
                if op & 0x80 != 0 {
                    let v = outputs(&mut self.c.p, self.c.now, usize::MAX);
                    for s in v {
                        if let Some((tv, _)) = s.0.options.timestamps {
                            self.c.p_tsval = tv;
                        }
                        self.c.deliver_to_t(&s);
                    }
                } else {
                    self.c.p_out();
                }
            }
            _ => match inp.u8() % 6 {
                0 => {
                    let _ = self.c.t.peek(&mut self.buf[..4096]);
                }
                1 => self.c.t.set_nodelay(op & 0x80 != 0),
                2 => {
                    let k = (op & 0x80 != 0).then_some(Keepalive {
                        idle: std::time::Duration::from_secs(1),
                        interval: std::time::Duration::from_millis(500),
                        probes: 2,
                    });
                    self.c.t.set_keepalive(k, self.c.now);
                }
                3 => {
                    let _ = self.c.t.take_error();
                }
                4 => {
                    if let Some(s) = self.c.from_peer.last() {
                        let _ = self.c.t.accepts_reopen(&s.0);
                    }
                }
                _ => {
                    let n = usize::from(inp.u16()) % 70_000;
                    app_send(&mut self.c.p, n, 9);
                    self.c.p_out();
                }
            },
        }
    }

    fn settle(&mut self) {
        // The stage polls after every event.
        self.c.t_out(usize::MAX);
        let _ = self.c.t.poll_at();
        let _ = (
            self.c.t.is_readable(),
            self.c.t.send_space(),
            self.c.t.stats(),
        );
    }

    fn advance(&mut self, by: Duration) {
        self.c.now = self.c.now + by;
        self.c.t.on_tick(self.c.now);
    }
}

/// The `tcp_segment` target: see the module's documentation.
pub fn tcp_segment(data: &[u8]) {
    let mut inp = Input::new(data);
    let stage = inp.u8();
    let tflags = inp.u8();
    let pflags = inp.u8();
    let size = inp.u8();
    let c = setup(stage, tcp_config(tflags, size), tcp_config(pflags, size));
    let mut fuzzed = Fuzzed {
        c,
        buf: vec![0u8; 70_000],
    };
    operations::run(&mut fuzzed, &mut inp);
}

/// The state the scripted setup reaches for `stage` with the default
/// configuration (for the seed test).
pub fn tcp_stage_state(stage: u8) -> State {
    let cfg = tcp_config(0, 0);
    setup(stage, cfg, cfg).t.state()
}
