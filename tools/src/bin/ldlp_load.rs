//! Blackwell's LDLP benchmark (*Speeding up Protocols for Small Messages*,
//! §4) on pathstack: messages from an open-loop Poisson source received
//! through a stack under the per-message scheduler or LDLP.
//!
//! ```text
//! ldlp_load --stack synthetic|udp --sched per-message|ldlp:N cost  --burst B --msgs N
//! ldlp_load --stack synthetic|udp --sched per-message|ldlp:N load  --rates R1,R2,.. [--clock cpu|wall|model --cost-table ..]
//! ```
//!
//! Two receivers:
//! - `synthetic`: Blackwell's five-layer stack, `ECHO (sink) / WORK ×5 /
//!   LINK / WIRE`, each `WORK` layer with `--code` bytes of its own code
//!   and `--data` bytes of data ([`work_graph`]);
//! - `udp`: the real UDP receive path of a [`Host`]
//!   (`UDP / IP / ETH / WIRE`), datagrams to a bound socket.
//!
//! Frames are `--size`-byte payloads (552 in the paper), built once by a
//! sending stack of the same kind and then copied into the receiver's
//! message pool and transmitted into the wire for every arrival, the way
//! an adaptor DMAs a frame into a buffer.
//!
//! # Design of the measurement
//!
//! The stack takes its time from the caller, so the load generator runs
//! on a *virtual clock*: it never sleeps and its own work is never
//! counted as the stack's.
//!
//! - **The adaptor.** Arrivals are Poisson at the given rate (exponential
//!   gaps from a seeded generator, so every scheduler sees the same
//!   arrival sequence). An arrival is transmitted into the wire, whose
//!   receive queue holds at most `--buffer` frames (500, the paper's
//!   buffering; Blackwell §3.1 buffers "in the adaptor hardware"); an
//!   arrival that finds it full is dropped and counted.
//! - **One poll is one batch.** The wire driver takes at most a limit of
//!   frames per poll (`rx_burst`: `N` for `ldlp:N`; for per-message
//!   `--rx-burst`, default 1), so a poll carries `min(backlog, limit)`
//!   messages through the stack — the paper's "take all available
//!   messages, up to the batch size". LDLP runs them stage-major, so all
//!   of them leave the stack when the poll's work ends; per-message runs
//!   them one after another, each to completion, so the `j`-th of `n`
//!   leaves after `j/n` of the poll's service time (exact under the model
//!   clock, where each costs the same; an even split of a measured poll
//!   otherwise). The path's own queues never hold more than one poll's
//!   frames, so their bound (`QUEUE_LEN`, default 64) is not what limits
//!   buffering; the 500-frame wire is.
//! - **Service time.** The virtual clock advances by the service time of
//!   each poll: with `--clock cpu`, the thread CPU time the poll took on
//!   this machine (`CLOCK_THREAD_CPUTIME_ID`: time the thread was
//!   descheduled does not count, but caches shared with other programs
//!   still add noise); `--clock wall`, its wall-clock time; with `--clock
//!   model`, `n × S(n)` for a poll of `n`, where `S(n)` is a per-message
//!   cost at `n` frames per poll given by `--cost-table` (the study script
//!   derives it from cachegrind counts of `cost` runs: a 100 MHz CPU, one
//!   cycle per instruction and 20 cycles per cache miss, Blackwell's §4
//!   machine). Latency is completion − arrival in virtual time; messages
//!   leave in arrival order (one path, FIFO), so each completion is
//!   matched to the oldest outstanding arrival.
//! - **Counting** (`cost`): `--msgs` messages in polls of `--burst`
//!   frames on a fake clock, for cachegrind's difference method (two
//!   message counts; the difference cancels start-up). The count includes
//!   copying each frame into the wire (the adaptor's work), the same for
//!   both schedulers.
//!
//! `load` prints one JSON object per rate: offered and completed
//! messages, drops, throughput (completed per virtual second), capacity
//! (completed per busy second), latency mean and p99 (µs), and the
//! histogram of batch sizes formed.
//!
//! ```text
//! cargo run --release -p pathstack-tools --bin ldlp_load -- --sched ldlp:8 load --rates 2000,4000
//! ```

use clap::{Parser, Subcommand};
use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS};
use pathstack::core::attrs::Attrs;
use pathstack::core::device::wire::{local_mac, wire_pair, WireConfig, WireEnd};
use pathstack::core::device::Device;
use pathstack::core::graph::ModuleGraph;
use pathstack::core::synthetic::{block_stride, work_graph};
use pathstack::core::Instant as VInstant;
use pathstack::core::{Dir, ModuleTypes, MsgPool, PathId, SchedKind, Stack, StackConfig};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::socket::UdpSocket;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::time::Instant;

type BoxError = Box<dyn std::error::Error>;

#[derive(Parser, Debug)]
#[command(about = "Blackwell's LDLP benchmark: Poisson arrivals into a receive stack")]
struct Args {
    /// `synthetic` (five WORK layers) or `udp` (the host's UDP receive path).
    #[arg(long, default_value = "synthetic")]
    stack: String,
    /// `per-message`, `ldlp` (batch 32) or `ldlp:N`.
    #[arg(long, default_value = "per-message")]
    sched: SchedKind,
    /// Code working set per WORK layer, bytes.
    #[arg(long, default_value_t = 6144)]
    code: usize,
    /// Data working set per WORK layer, bytes.
    #[arg(long, default_value_t = 256)]
    data: usize,
    /// WORK layers.
    #[arg(long, default_value_t = 5)]
    layers: usize,
    /// Payload bytes per message.
    #[arg(long, default_value_t = 552)]
    size: usize,
    /// Per-message only: most frames the driver takes per poll (default
    /// 1); each runs to completion in turn. LDLP's poll takes its batch
    /// limit.
    #[arg(long)]
    rx_burst: Option<usize>,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand, Debug)]
enum Mode {
    /// Receives `--msgs` messages in polls of `--burst` frames (for cachegrind).
    Cost {
        /// Frames handed to the stack per poll (the batch size for LDLP).
        #[arg(long, default_value_t = 1)]
        burst: usize,
        /// Messages counted.
        #[arg(long, default_value_t = 1000)]
        msgs: usize,
        /// Messages before counting starts (caches and tables warm).
        #[arg(long, default_value_t = 256)]
        warmup: usize,
    },
    /// Open-loop Poisson load at each rate; one JSON line per rate.
    Load {
        /// Arrival rates, messages per second, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        rates: Vec<f64>,
        /// Virtual seconds of arrivals per rate.
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Share of the run (from the start) whose latencies are not recorded.
        #[arg(long, default_value_t = 0.1)]
        warm_share: f64,
        /// Frames the adaptor (wire) buffers.
        #[arg(long, default_value_t = 500)]
        buffer: usize,
        /// `cpu` (thread CPU time of each poll), `wall` (its wall-clock
        /// time) or `model` (--cost-table).
        #[arg(long, default_value = "cpu")]
        clock: String,
        /// Per-message service time in ns at n frames per poll, `n:ns,...`
        /// (linear between the points given; the last beyond).
        #[arg(long, default_value = "")]
        cost_table: String,
        /// Seed of the arrival process.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// The most frames the driver takes per poll.
fn poll_limit(args: &Args) -> Result<usize, BoxError> {
    match (args.sched, args.rx_burst) {
        (SchedKind::PerMessage, b) => Ok(b.unwrap_or(1).max(1)),
        (SchedKind::Ldlp { batch }, None) => Ok(batch),
        (SchedKind::Ldlp { .. }, Some(_)) => {
            Err("--rx-burst is for per-message: LDLP's poll takes its batch limit".into())
        }
    }
}

/// The scheduler's name in the output: `per-message/B` when its driver
/// takes `B > 1` frames per poll.
fn sched_label(args: &Args) -> String {
    match (args.sched, args.rx_burst) {
        (SchedKind::PerMessage, Some(b)) if b > 1 => format!("per-message/{b}"),
        (s, _) => s.to_string(),
    }
}

/// The calling thread's CPU time in ns: unlike the wall clock it does not
/// advance while the thread is descheduled (the machine is shared).
fn thread_cpu_ns() -> Result<u64, BoxError> {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)?;
    Ok(t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

/// Where the service time of a poll comes from.
enum Clock {
    /// Wall-clock time of the poll.
    Wall,
    /// Thread CPU time of the poll.
    Cpu,
    /// `n × S(n)` from a cost table.
    Model(Vec<(f64, f64)>),
}

impl Clock {
    fn name(&self) -> &'static str {
        match self {
            Clock::Wall => "wall",
            Clock::Cpu => "cpu",
            Clock::Model(_) => "model",
        }
    }
}

/// A stack receiving frames from the raw end of a wire.
trait Receiver {
    /// The pool frames are copied into.
    fn pool(&self) -> &MsgPool;
    /// Polls at virtual time `now`.
    fn poll(&mut self, now: VInstant);
    /// Takes the messages delivered to the application; returns how many.
    fn drain(&mut self) -> usize;
}

/// The synthetic stack and its sink path.
struct Synthetic {
    stack: Stack,
    path: PathId,
}

fn synthetic_stack(
    args: &Args,
    mode: &str,
    rx_burst: usize,
    dev: WireEnd,
) -> Result<(Stack, PathId), BoxError> {
    let types = ModuleTypes::core();
    let text = work_graph(args.layers, args.code, args.data, mode, rx_burst);
    let graph = ModuleGraph::from_text(&text, Some("ldlp.graph"), &types.specs())?;
    let mut stack = Stack::builder(graph, types)
        .device(dev)
        .config(StackConfig {
            sched: args.sched,
            ..StackConfig::default()
        })
        .build()?;
    let echo = stack.module_id("echo").ok_or("graph has no echo")?;
    let attrs = Attrs::new().with(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Id(7)],
            remote: vec![],
        },
    );
    let path = stack.path_create(echo, attrs)?;
    Ok((stack, path))
}

impl Receiver for Synthetic {
    fn pool(&self) -> &MsgPool {
        self.stack.pool()
    }
    fn poll(&mut self, now: VInstant) {
        self.stack.poll(now);
    }
    fn drain(&mut self) -> usize {
        let mut n = 0;
        while self.stack.recv(self.path, Dir::Up).is_some() {
            n += 1;
        }
        n
    }
}

/// A host with a UDP socket bound to port 7.
struct Udp {
    host: Host,
    socket: UdpSocket,
}

impl Receiver for Udp {
    fn pool(&self) -> &MsgPool {
        self.host.stack().pool()
    }
    fn poll(&mut self, now: VInstant) {
        self.host.set_manual_clock(now);
        self.host.poll();
    }
    fn drain(&mut self) -> usize {
        let mut n = 0;
        while let Ok(Some(_)) = self.host.udp().recv_msg(&self.socket) {
            n += 1;
        }
        n
    }
}

/// A receiver, the raw wire end arrivals go into, and the frame to send.
type Rig = (Box<dyn Receiver>, WireEnd, Vec<u8>);

/// Builds the receiver on one end of a wire of `buffer` frames; returns
/// it, the raw end arrivals are transmitted into, and the frame to send.
fn build(args: &Args, rx_burst: usize, buffer: usize) -> Result<Rig, BoxError> {
    let payload: Vec<u8> = (0..args.size).map(|i| (i * 7 + 3) as u8).collect();
    let (a, raw) = wire_pair(WireConfig {
        capacity: buffer,
        ..WireConfig::default()
    });
    // The template frame comes from a sender of the same kind on a wire of
    // its own, read off that wire's far end.
    let (s, mut s_far) = wire_pair(WireConfig {
        mac_a: local_mac(3),
        mac_b: local_mac(4),
        ..WireConfig::default()
    });
    let frame_pool = MsgPool::new(Default::default());
    let (recv, frame): (Box<dyn Receiver>, _) = match args.stack.as_str() {
        "synthetic" => {
            let (stack, path) = synthetic_stack(args, "sink", rx_burst, a)?;
            let (mut tx, tpath) = synthetic_stack(args, "sink", 1, s)?;
            let m = tx.pool().alloc_copy(&payload)?;
            tx.send(tpath, Dir::Down, m)?;
            // Under LDLP the send waits in the path's queue for a poll.
            tx.poll(VInstant::from_nanos(1));
            (
                Box::new(Synthetic { stack, path }),
                take_frame(&mut s_far, &frame_pool)?,
            )
        }
        "udp" => {
            let mut c = HostConfig::parse("10.0.0.1/24")?;
            c.sched = args.sched;
            c.rx_burst = Some(rx_burst);
            c.tcp = false;
            let mut host = Host::new(c, a)?;
            let socket = host.udp().bind("0.0.0.0:7")?;
            let mut c = HostConfig::parse("10.0.0.2/24")?;
            c.tcp = false;
            let mut tx = Host::new(c, s)?;
            tx.add_neighbor("10.0.0.1".parse()?, MacAddr(WireConfig::default().mac_a))?;
            let ts = tx.udp().bind_connected("0.0.0.0:9000", "10.0.0.1:7")?;
            tx.udp().send(&ts, &payload)?;
            tx.poll();
            // The sender's start-up frames (ARP announcement) come first:
            // the datagram is the IPv4 frame.
            let frame = loop {
                let f = take_frame(&mut s_far, &frame_pool)?;
                if f.get(12..14) == Some(&[0x08, 0x00][..]) {
                    break f;
                }
            };
            (Box::new(Udp { host, socket }), frame)
        }
        other => return Err(format!("--stack {other}: expected synthetic or udp").into()),
    };
    Ok((recv, raw, frame))
}

fn take_frame(end: &mut WireEnd, pool: &MsgPool) -> Result<Vec<u8>, BoxError> {
    let f = end
        .receive(pool, VInstant::ZERO)?
        .ok_or("the sender produced no frame")?;
    Ok(f.as_slice().to_vec())
}

/// Copies the frame into the receiver's pool and onto the wire; `false`
/// when the adaptor buffer is full (the frame is dropped).
fn arrive(recv: &dyn Receiver, raw: &mut WireEnd, frame: &[u8]) -> Result<bool, BoxError> {
    let m = recv.pool().alloc_copy(frame)?;
    Ok(raw.transmit(m, VInstant::ZERO).is_ok())
}

fn cost(args: &Args, burst: usize, msgs: usize, warmup: usize) -> Result<(), BoxError> {
    let burst = burst.max(1);
    if poll_limit(args)? < burst && matches!(args.sched, SchedKind::Ldlp { .. }) {
        return Err(format!("--burst {burst} is above the LDLP batch limit").into());
    }
    // The driver takes exactly the frames given per poll.
    let (mut recv, mut raw, frame) = build(args, burst, burst.max(64))?;
    let mut now = 0u64;
    let mut done = 0usize;
    let total = warmup + msgs;
    let mut sent = 0usize;
    while done < total {
        let n = burst.min(total - sent);
        for _ in 0..n {
            if !arrive(recv.as_ref(), &mut raw, &frame)? {
                return Err("the wire refused a frame".into());
            }
        }
        sent += n;
        now += 1_000;
        recv.poll(VInstant::from_nanos(now));
        let got = recv.drain();
        if got != n {
            return Err(format!("poll delivered {got} of {n} messages").into());
        }
        done += got;
    }
    println!(
        "{{\"stack\":\"{}\",\"sched\":\"{}\",\"burst\":{burst},\"msgs\":{msgs},\"block_stride\":{}}}",
        args.stack,
        sched_label(args),
        block_stride()
    );
    Ok(())
}

/// `n:ns,...` → sorted points.
fn parse_table(s: &str) -> Result<Vec<(f64, f64)>, BoxError> {
    let mut v = Vec::new();
    for p in s.split(',').filter(|p| !p.is_empty()) {
        let (n, ns) = p
            .split_once(':')
            .ok_or_else(|| format!("cost table entry `{p}`: expected n:ns"))?;
        v.push((n.trim().parse::<f64>()?, ns.trim().parse::<f64>()?));
    }
    if v.is_empty() {
        return Err("--clock model needs --cost-table".into());
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(v)
}

/// Per-message cost at batch `n`, linear between the table's points.
fn cost_at(table: &[(f64, f64)], n: f64) -> f64 {
    let first = table[0];
    if n <= first.0 {
        return first.1;
    }
    for w in table.windows(2) {
        let ((n0, c0), (n1, c1)) = (w[0], w[1]);
        if n <= n1 {
            return c0 + (c1 - c0) * (n - n0) / (n1 - n0);
        }
    }
    table[table.len() - 1].1
}

struct LoadRun<'a> {
    args: &'a Args,
    seconds: f64,
    warm_share: f64,
    buffer: usize,
    clock: Clock,
    seed: u64,
}

impl LoadRun<'_> {
    fn run(&self, rate: f64) -> Result<String, BoxError> {
        let limit = poll_limit(self.args)?;
        let sequential = self.args.sched == SchedKind::PerMessage;
        let (mut recv, mut raw, frame) = build(self.args, limit, self.buffer)?;
        let mut rng = SmallRng::seed_from_u64(self.seed);
        let end = (self.seconds * 1e9) as u64;
        let warm = (self.seconds * self.warm_share * 1e9) as u64;
        let gap = |rng: &mut SmallRng| -> u64 {
            let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
            (-u.ln() / rate * 1e9) as u64
        };
        let mut next = gap(&mut rng);
        let mut t: u64 = 0;
        let mut outstanding: VecDeque<u64> = VecDeque::new();
        let (mut offered, mut dropped, mut completed, mut busy) = (0u64, 0u64, 0u64, 0u64);
        let mut lat: Vec<u64> = Vec::new();
        let mut hist = vec![0u64; limit + 1];
        loop {
            while next <= t && next < end {
                offered += 1;
                if arrive(recv.as_ref(), &mut raw, &frame)? {
                    outstanding.push_back(next);
                } else {
                    dropped += 1;
                }
                next += gap(&mut rng);
            }
            if outstanding.is_empty() {
                if next >= end {
                    break;
                }
                t = next;
                continue;
            }
            let (w0, c0) = (Instant::now(), thread_cpu_ns()?);
            recv.poll(VInstant::from_nanos(t));
            let n = recv.drain();
            let (wall, cpu) = (w0.elapsed().as_nanos() as u64, thread_cpu_ns()? - c0);
            if n == 0 {
                return Err("a poll with frames waiting delivered nothing".into());
            }
            let service = match &self.clock {
                Clock::Wall => wall,
                Clock::Cpu => cpu,
                Clock::Model(tab) => (n as f64 * cost_at(tab, n as f64)).round() as u64,
            }
            .max(1);
            busy += service;
            hist[n.min(limit)] += 1;
            for j in 1..=n as u64 {
                let Some(a) = outstanding.pop_front() else {
                    return Err("more messages delivered than arrived".into());
                };
                completed += 1;
                let done = if sequential {
                    t + service * j / n as u64
                } else {
                    t + service
                };
                if a >= warm {
                    lat.push(done - a);
                }
            }
            t += service;
        }
        lat.sort_unstable();
        let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64;
        let p99 = lat
            .get(((lat.len() as f64 * 0.99) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0);
        let batches: u64 = hist.iter().sum();
        Ok(serde_json::json!({
            "stack": self.args.stack,
            "sched": sched_label(self.args),
            "limit": limit,
            "code": self.args.code,
            "data": self.args.data,
            "clock": self.clock.name(),
            "rate": rate,
            "offered": offered,
            "dropped": dropped,
            "completed": completed,
            "throughput": completed as f64 / (t.max(1) as f64 / 1e9),
            "capacity": completed as f64 / (busy.max(1) as f64 / 1e9),
            "lat_mean_us": mean / 1e3,
            "lat_p99_us": p99 as f64 / 1e3,
            "mean_batch": completed as f64 / batches.max(1) as f64,
            "batch_hist": hist,
        })
        .to_string())
    }
}

fn main() -> Result<(), BoxError> {
    let args = Args::parse();
    if args.layers == 0 || args.layers > 16 {
        return Err("--layers must be 1 to 16".into());
    }
    match &args.mode {
        Mode::Cost {
            burst,
            msgs,
            warmup,
        } => cost(&args, *burst, *msgs, *warmup),
        Mode::Load {
            rates,
            seconds,
            warm_share,
            buffer,
            clock,
            cost_table,
            seed,
        } => {
            let clock = match clock.as_str() {
                "cpu" => Clock::Cpu,
                "wall" => Clock::Wall,
                "model" => Clock::Model(parse_table(cost_table)?),
                other => return Err(format!("--clock {other}: expected cpu, wall or model").into()),
            };
            let run = LoadRun {
                args: &args,
                seconds: *seconds,
                warm_share: *warm_share,
                buffer: *buffer,
                clock,
                seed: *seed,
            };
            for &r in rates {
                if r.is_nan() || r <= 0.0 {
                    return Err(format!("rate {r}: must be positive").into());
                }
                println!("{}", run.run(r)?);
            }
            Ok(())
        }
    }
}
