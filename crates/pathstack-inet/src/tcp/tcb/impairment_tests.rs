//! Two control blocks over an impaired in-memory link: random loss (up
//! to 10 %), duplication, reordering and delay jitter, all seeded from
//! the proptest input; random transfer sizes both ways, congestion
//! control, extensions and buffer sizes. Every byte must arrive, both
//! ends must close cleanly, and no error may appear.
//!
//! The default case count keeps the test short in debug builds; run more
//! with, for example:
//!
//! ```text
//! PROPTEST_CASES=1000 cargo test -p pathstack-inet --release --lib tcp::tcb::impairment_tests
//! ```
//!
//! The retransmission-storm check ([`retransmissions_per_loss_at_5_percent`])
//! sends 1 MB over a link losing 5 % of the segments and bounds the
//! segments retransmitted per data segment lost.

use super::*;
use crate::tcp::congestion::{CongestionControl, CongestionKind};
use pathstack_core::time::Duration;
use proptest::prelude::*;

type Seg = (TcpRepr, Vec<u8>);

/// What the link does to segments, per mille, and its delays.
#[derive(Clone, Copy, Debug)]
struct Impairment {
    loss: u32,
    dup: u32,
    reorder: u32,
    delay_us: u64,
    jitter_us: u64,
}

/// A deterministic impaired link (xorshift64*).
struct Link {
    imp: Impairment,
    rng: u64,
    /// In flight per direction (0: a → b): (delivery time, order, segment).
    q: [Vec<(Instant, u64, Seg)>; 2],
    order: u64,
    /// Data-carrying (or SYN/FIN) segments lost, per direction.
    lost_data: [u64; 2],
    lost: [u64; 2],
}

impl Link {
    fn new(imp: Impairment, seed: u64) -> Link {
        Link {
            imp,
            rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            q: [Vec::new(), Vec::new()],
            order: 0,
            lost_data: [0; 2],
            lost: [0; 2],
        }
    }
    fn next(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn chance(&mut self, per_mille: u32) -> bool {
        per_mille > 0 && self.next() % 1000 < u64::from(per_mille)
    }
    fn send(&mut self, dir: usize, now: Instant, s: Seg) {
        if self.chance(self.imp.loss) {
            self.lost[dir] += 1;
            if !s.1.is_empty() || s.0.flags.intersects(TcpFlags::SYN | TcpFlags::FIN) {
                self.lost_data[dir] += 1;
            }
            return;
        }
        let copies = if self.chance(self.imp.dup) { 2 } else { 1 };
        for _ in 0..copies {
            let mut d = self.imp.delay_us;
            if self.imp.jitter_us > 0 {
                d += self.next() % self.imp.jitter_us;
            }
            if self.chance(self.imp.reorder) {
                // Held back: later segments overtake it.
                d += self.imp.delay_us.max(1000);
            }
            self.order += 1;
            self.q[dir].push((now + Duration::from_micros(d), self.order, s.clone()));
        }
    }
    /// Takes what is due at `now` in direction `dir`, in delivery order.
    fn due(&mut self, dir: usize, now: Instant) -> Vec<Seg> {
        let q = &mut self.q[dir];
        q.sort_by_key(|(at, o, _)| (*at, *o));
        let n = q.iter().take_while(|(at, _, _)| *at <= now).count();
        q.drain(..n).map(|(_, _, s)| s).collect()
    }
    fn next_delivery(&self) -> Option<Instant> {
        self.q.iter().flatten().map(|(at, _, _)| *at).min()
    }
}

fn byte(i: usize, salt: u8) -> u8 {
    ((i.wrapping_mul(2_654_435_761) >> 13) as u8) ^ salt
}

/// The outcome of one transfer.
struct Outcome {
    a: TcpStats,
    b: TcpStats,
    lost_data: [u64; 2],
    /// Link time from the SYN to both ends closed.
    elapsed: Duration,
}

/// Sends `n` octets a → b and `m` octets b → a over `link`, each side
/// shutting down its writing half once all is written; checks delivery,
/// the final states and that no error appeared.
fn transfer(
    cfg_a: TcpConfig,
    cfg_b: TcpConfig,
    n: usize,
    m: usize,
    link: &mut Link,
) -> Result<Outcome, String> {
    transfer_observed(cfg_a, cfg_b, n, m, link, &mut |_, _| {})
}

/// [`transfer`], showing end a (the sender of `n`) to `observe` after
/// every step, at the step's link time.
fn transfer_observed(
    cfg_a: TcpConfig,
    cfg_b: TcpConfig,
    n: usize,
    m: usize,
    link: &mut Link,
    observe: &mut dyn FnMut(Instant, &Tcb),
) -> Result<Outcome, String> {
    let t0 = Instant::ZERO;
    let mut ends = [
        Tcb::connect(cfg_a, 40000, 80, SeqNumber(0xffff_0000), 11, t0),
        Tcb::listen(cfg_b, 80, 40000, SeqNumber(123_456), 99, t0),
    ];
    let total = [n, m];
    let mut sent = [0usize; 2];
    let mut shut = [false; 2];
    let mut got: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
    let mut eof = [false; 2];
    let mut chunk = vec![0u8; 16 * 1024];
    let mut buf = vec![0u8; 16 * 1024];
    let limit = t0 + Duration::from_secs(1200);
    let mut now = t0;
    let mut iterations = 0u64;
    loop {
        iterations += 1;
        if iterations > 5_000_000 {
            return Err("too many iterations".into());
        }
        // Segments due, then timers, then the application, then output.
        for (dir, i) in [(0usize, 1usize), (1, 0)] {
            for (r, p) in link.due(dir, now) {
                let _ = ends[i].on_segment(now, &r, &p);
            }
        }
        for (i, t) in ends.iter_mut().enumerate() {
            t.on_tick(now);
            if t.state().is_synchronized() || t.state() == State::SynReceived {
                while sent[i] < total[i] {
                    let k = (total[i] - sent[i]).min(chunk.len());
                    for (j, c) in chunk[..k].iter_mut().enumerate() {
                        *c = byte(sent[i] + j, i as u8);
                    }
                    match t.send(&chunk[..k]) {
                        Ok(Some(w)) => sent[i] += w,
                        Ok(None) => break,
                        Err(e) => return Err(format!("end {i} send: {e:?}")),
                    }
                }
                if sent[i] == total[i] && !shut[i] && t.state().is_synchronized() {
                    t.shutdown(Shutdown::Write)
                        .map_err(|e| format!("shutdown: {e:?}"))?;
                    shut[i] = true;
                }
            }
            while !eof[i]
                && !matches!(
                    t.state(),
                    State::Listen | State::SynSent | State::SynReceived
                )
            {
                match t.recv(&mut buf) {
                    Ok(Some(0)) => eof[i] = true,
                    Ok(Some(k)) => got[i].extend_from_slice(&buf[..k]),
                    Ok(None) => break,
                    Err(e) => return Err(format!("end {i} recv: {e:?} in {}", t.state())),
                }
            }
            if let Some(e) = t.error() {
                return Err(format!("end {i} error {e:?} in {}", t.state()));
            }
            let mut out: Vec<Seg> = Vec::new();
            t.poll_output(now, &mut |s| {
                let mut p = s.payload.to_vec();
                p.extend_from_slice(s.payload2);
                out.push((s.repr, p));
                true
            });
            for s in out {
                if std::env::var_os("TCB_TRACE").is_some() {
                    eprintln!(
                        "{:?} {}→ {:?} seq {} ack {} win {} len {} {:?} [{} {}]",
                        now,
                        i,
                        s.0.flags,
                        s.0.seq,
                        s.0.ack,
                        s.0.window,
                        s.1.len(),
                        s.0.options.sack_blocks(),
                        t.state(),
                        t.snd_wnd()
                    );
                }
                link.send(i, now, s);
            }
        }
        observe(now, &ends[0]);
        let done = ends
            .iter()
            .all(|t| matches!(t.state(), State::TimeWait | State::Closed))
            && eof[0]
            && eof[1];
        if done {
            break;
        }
        if now >= limit {
            return Err(format!(
                "time limit: a {} {:?} b {} {:?}, got {}/{} and {}/{}",
                ends[0].state(),
                ends[0].stats(),
                ends[1].state(),
                ends[1].stats(),
                got[1].len(),
                n,
                got[0].len(),
                m
            ));
        }
        // The next event.
        let mut next = link.next_delivery();
        if ends.iter().any(|t| t.wants_output()) {
            next = Some(now);
        }
        for t in &ends {
            next = match (next, t.poll_at()) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            };
        }
        let next = next.unwrap_or(limit);
        now = if next > now {
            next
        } else {
            now + Duration::from_micros(1)
        };
    }
    if got[1].len() != n || got[1].iter().enumerate().any(|(i, &c)| c != byte(i, 0)) {
        return Err(format!(
            "a → b: {} of {} octets, or content differs",
            got[1].len(),
            n
        ));
    }
    if got[0].len() != m || got[0].iter().enumerate().any(|(i, &c)| c != byte(i, 1)) {
        return Err(format!(
            "b → a: {} of {} octets, or content differs",
            got[0].len(),
            m
        ));
    }
    for t in &ends {
        if t.error().is_some() {
            return Err(format!("error {:?}", t.error()));
        }
    }
    Ok(Outcome {
        a: ends[0].stats(),
        b: ends[1].stats(),
        lost_data: link.lost_data,
        elapsed: now.saturating_since(t0),
    })
}

fn config() -> impl Strategy<Value = TcpConfig> {
    (
        prop_oneof![Just(CongestionKind::NewReno), Just(CongestionKind::Cubic)],
        any::<[bool; 5]>(),
        prop_oneof![Just(16 * 1024usize), Just(64 * 1024), Just(256 * 1024)],
        prop_oneof![
            Just(8 * 1024usize),
            Just(64 * 1024),
            Just(200 * 1024),
            Just(512 * 1024)
        ],
    )
        .prop_map(|(cc, [ws, ts, sack, rack, nodelay], snd, rcv)| TcpConfig {
            congestion: cc,
            window_scaling: ws,
            timestamps: ts,
            sack,
            rack,
            nodelay,
            send_buffer: snd,
            recv_buffer: rcv,
            max_ooo_bytes: rcv,
            ..TcpConfig::default()
        })
}

fn impairment() -> impl Strategy<Value = Impairment> {
    (0u32..=100, 0u32..=20, 0u32..=50, 100u64..5_000, 0u64..2_000).prop_map(
        |(loss, dup, reorder, delay_us, jitter_us)| Impairment {
            loss,
            dup,
            reorder,
            delay_us,
            jitter_us,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 48,
        ..ProptestConfig::default()
    })]

    /// Byte-exact delivery both ways under impairment, clean close, no
    /// error, whatever the congestion control, extensions and buffers.
    #[test]
    fn impaired_transfer_delivers_everything(
        cfg_a in config(),
        cfg_b in config(),
        n in 0usize..300_000,
        m in 0usize..300_000,
        imp in impairment(),
        seed in any::<u64>(),
    ) {
        let mut link = Link::new(imp, seed);
        if let Err(e) = transfer(cfg_a, cfg_b, n, m, &mut link) {
            prop_assert!(false, "{e}");
        }
    }
}

/// Retransmitted segments per data segment lost, 1 MB a → b at 5 % loss
/// (both ways), 10 ms one way, default configuration: the sum over the
/// seeds.
fn storm_ratio(seeds: &[u64]) -> f64 {
    let (mut rtx, mut lost) = (0u64, 0u64);
    for &seed in seeds {
        let mut link = Link::new(
            Impairment {
                loss: 50,
                dup: 0,
                reorder: 0,
                delay_us: 10_000,
                jitter_us: 0,
            },
            seed,
        );
        let o = transfer(
            TcpConfig::default(),
            TcpConfig::default(),
            1_000_000,
            0,
            &mut link,
        )
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        rtx += o.a.retrans_segs;
        lost += o.lost_data[0];
        let _ = o.b;
    }
    rtx as f64 / lost.max(1) as f64
}

/// A retransmission storm check: at 5 % loss, no more than 1.5 segments
/// are retransmitted per data segment lost.
#[test]
fn retransmissions_per_loss_at_5_percent() {
    let r = storm_ratio(&[1, 2, 3, 4, 5, 6]);
    println!("retransmitted / lost at 5 % loss: {r:.3}");
    assert!(r <= 1.5, "retransmitted / lost = {r:.3}");
}

/// A case proptest found (kept as a regression test).
#[test]
fn regression_stall_no_sack_small_window() {
    let cfg_a = TcpConfig {
        send_buffer: 16384,
        recv_buffer: 65536,
        max_ooo_bytes: 65536,
        window_scaling: false,
        timestamps: false,
        sack: false,
        rack: true,
        congestion: CongestionKind::NewReno,
        ..TcpConfig::default()
    };
    let cfg_b = TcpConfig {
        recv_buffer: 8192,
        max_ooo_bytes: 8192,
        rack: false,
        ..cfg_a
    };
    let imp = Impairment {
        loss: 89,
        dup: 3,
        reorder: 37,
        delay_us: 1317,
        jitter_us: 1475,
    };
    let mut link = Link::new(imp, 11047730336286120778);
    if let Err(e) = transfer(cfg_a, cfg_b, 27172, 232140, &mut link) {
        panic!("{e}");
    }
}

/// Where a sender's time goes at 5 % (and 1 %) random loss both ways (issue 28
/// item 1; docs/design.md "Under loss: where the time goes"): 10 MB a → b
/// over a link of 50 µs one way (a veth's order), default configuration,
/// on link time, so the figures do not depend on the machine's load.
/// Prints the sender's counters, and the median time per loss rate; run with
/// `cargo test -p pathstack-inet --release --lib loss_study -- --ignored --nocapture`.
/// `LOSS_STUDY_SEEDS=N` runs seeds 1..=N (3 by default): one seed's time
/// turns on where its few timeouts fall, so a change to recovery is judged
/// on the median of many.
#[test]
#[ignore = "a study: prints figures, asserts only that the transfer completes"]
fn loss_study_10mb_at_5_percent() {
    let seeds: u64 = std::env::var("LOSS_STUDY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(3);
    for loss in [50u32, 10] {
        let mut times = Vec::new();
        for seed in 1..=seeds {
            times.push(loss_study_one(loss, seed));
        }
        times.sort_by(f64::total_cmp);
        println!(
            "loss {:.1} %: median {:.3} s over {seeds} seeds (min {:.3}, max {:.3})",
            f64::from(loss) / 10.0,
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    }
}

/// One run of the loss study: prints the sender's counters, returns the
/// transfer's time in seconds.
fn loss_study_one(loss: u32, seed: u64) -> f64 {
    {
        let mut link = Link::new(
            Impairment {
                loss,
                dup: 0,
                reorder: 0,
                delay_us: 50,
                jitter_us: 0,
            },
            seed,
        );
        let mut tr = RecoveryTrace::default();
        let o = transfer_observed(
            TcpConfig::default(),
            TcpConfig::default(),
            10_000_000,
            0,
            &mut link,
            &mut |now, t| tr.observe(now, t),
        )
        .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let a = o.a;
        let secs = o.elapsed.as_nanos() as f64 / 1e9;
        println!(
            "loss {:.1} % seed {seed}: {:.3} s ({:.1} Mbit/s), data segs {} lost {} retrans {} \
             (timeout {}, rack-lost {}, lost retrans {}), timeouts {} ({:.1}/s), \
             silent before timeouts {:.3} s ({:.0} %), recoveries {}, tlp {} (repaired {}), \
             dsack undos {}, eifel undos {}",
            f64::from(loss) / 10.0,
            secs,
            10e6 * 8.0 / secs / 1e6,
            a.data_segs_out,
            o.lost_data[0],
            a.retrans_segs,
            a.timeout_retrans_segs,
            a.rack_lost_segs,
            a.lost_retransmits,
            a.timeouts,
            a.timeouts as f64 / secs,
            a.timeout_idle_ns as f64 / 1e9,
            100.0 * a.timeout_idle_ns as f64 / 1e9 / secs,
            a.recoveries,
            a.tlp_probes,
            a.tlp_loss_repaired,
            a.dsack_undos,
            a.eifel_undos,
        );
        tr.print(secs, o.lost_data[0]);
        secs
    }
}

/// What the loss study sees of the sender's congestion state, step by
/// step: window reductions against losses, and cwnd, ssthresh and pipe
/// (in segments) at recovery entry and exit and on average within
/// recovery (issue 28 item 1: RFC 6675 §5 allows one reduction per
/// window of data; the flight in recovery should stay near ssthresh).
#[derive(Default)]
struct RecoveryTrace {
    last: Option<Instant>,
    in_recovery: bool,
    entries: u64,
    /// Sums at entry: cwnd, ssthresh, pipe (segments).
    at_entry: [f64; 3],
    /// Sums at exit: cwnd, ssthresh.
    at_exit: [f64; 2],
    exits: u64,
    /// Time in recovery (s) and the integral of pipe over it (segment·s).
    recovery_s: f64,
    pipe_s: f64,
    /// The integral of cwnd over all the time (segment·s).
    cwnd_s: f64,
    total_s: f64,
    reductions: u32,
}

impl RecoveryTrace {
    fn observe(&mut self, now: Instant, t: &Tcb) {
        let smss = f64::from(t.cc.window().smss());
        let pipe = f64::from(t.sb.pipe()) / smss;
        let cwnd = f64::from(t.cc.cwnd()) / smss;
        let ssthresh = f64::from(t.cc.ssthresh().min(1 << 30)) / smss;
        if let Some(l) = self.last {
            let dt = now.saturating_since(l).as_nanos() as f64 / 1e9;
            self.total_s += dt;
            self.cwnd_s += dt * cwnd;
            if self.in_recovery {
                self.recovery_s += dt;
                self.pipe_s += dt * pipe;
            }
        }
        self.last = Some(now);
        let r = t.recovery.in_recovery();
        if r && !self.in_recovery {
            self.entries += 1;
            self.at_entry[0] += cwnd;
            self.at_entry[1] += ssthresh;
            self.at_entry[2] += pipe;
        } else if !r && self.in_recovery {
            self.exits += 1;
            self.at_exit[0] += cwnd;
            self.at_exit[1] += ssthresh;
        }
        self.in_recovery = r;
        self.reductions = t.cc.window().reductions();
    }

    fn print(&self, secs: f64, lost: u64) {
        let e = self.entries.max(1) as f64;
        let x = self.exits.max(1) as f64;
        println!(
            "    reductions {} ({:.1}/s, {:.2} data losses each); in recovery {:.0} % of the time, \
             mean pipe there {:.1} segs; mean cwnd {:.1}; at entry cwnd {:.1} ssthresh {:.1} \
             pipe {:.1}; at exit cwnd {:.1} ssthresh {:.1}",
            self.reductions,
            f64::from(self.reductions) / secs,
            lost as f64 / f64::from(self.reductions.max(1)),
            100.0 * self.recovery_s / self.total_s.max(1e-9),
            self.pipe_s / self.recovery_s.max(1e-9),
            self.cwnd_s / self.total_s.max(1e-9),
            self.at_entry[0] / e,
            self.at_entry[1] / e,
            self.at_entry[2] / e,
            self.at_exit[0] / x,
            self.at_exit[1] / x,
        );
    }
}
