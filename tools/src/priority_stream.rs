//! The high-priority workload of the priority-inversion experiment
//! (Mosberger's Scout thesis, §5.2 and Table 5.5, where an MPEG video's
//! frame rate was measured under a `ping -f` flood): a stream of UDP
//! messages at a fixed rate, received by an application that does a fixed
//! amount of work per message, whose achieved message rate and latency
//! are measured. `scripts/study-priority.sh` runs it unloaded and under
//! ICMP floods.
//!
//! ```text
//! priority_stream send --to ADDR:PORT [--rate N] [--seconds S] [--size BYTES] [--netns NS]
//! priority_stream recv --stack pathstack --tap NAME --ip ADDR/PREFIX [--netns NS] \
//!     [--port P] [--icmp-priority low|same] [--work-in path|app] [--icmp-queue-len N] \
//!     [--work N] [--json FILE]
//! priority_stream recv --stack linux --bind ADDR:PORT [--netns NS] [--work N] [--json FILE]
//! ```
//!
//! **send** (a Linux socket application, run on the peer's side) sends
//! `--rate` messages per second for `--seconds`, paced in 200 µs steps;
//! each message carries its sequence number, the sender's start time and
//! its own send time (`SystemTime`, nanoseconds: both ends run on one
//! machine, so one clock). At the end it sends an end marker (five times,
//! 10 ms apart, in case one is lost) with the number sent and the
//! sending time, and prints `{"sent", "seconds", "rate"}`.
//!
//! **recv** takes the stream on a pathstack host on a TAP device
//! (`--stack pathstack`) or on a kernel UDP socket (`--stack linux`, the
//! same application on Linux's stack), and for each message does `--work`
//! passes of the application's work: an RFC 1071 Internet checksum of the
//! message and a copy of it into a 64 KiB application buffer.
//!
//! Where that work runs on pathstack is `--work-in`:
//!
//! - `path` (the default): in the stream's path, as Scout's MPEG decoder
//!   ran on the video's path (thesis §5.2): a module of this example,
//!   `STREAMWORK`, sits above UDP (`STREAMWORK / UDP / IP / ETH / DRIVER`),
//!   and its stage does the passes and keeps the record (completion times,
//!   latency) as each message arrives; the application only polls the
//!   stack and reads the record at the end. The path's priority then
//!   covers the work: within a burst the scheduler runs the stream's path,
//!   work included, before ICMP's.
//! - `app`: the stream's path ends in a UDP socket and the application does
//!   the work on what [`UdpSocket::recv_from`](pathstack::socket::UdpSocket::recv_from) returns, after [`Host::poll`]:
//!   whatever the priorities, ICMP's work in that poll comes first (the
//!   first measurement, kept for comparison).
//!
//! It stops at the end marker (or 5 s after the last message) and
//! reports:
//!
//! - `msgs_per_s`: messages whose work was finished within the sender's
//!   window (its start time plus its sending time), per second of that
//!   window: the rate the application kept up with while the stream ran
//!   (a backlog worked off after the sender stopped does not count);
//! - `received`, `sent`, `lost` (never received at all);
//! - `latency_us`: p50/p99/max of receive-and-work completion time minus
//!   send time;
//! - `cpu_busy`: the receiver's CPU time (user + system) over the window's
//!   wall time, to calibrate `--work` so the receiver is near saturation;
//! - for pathstack, the stream's and ICMP's path counters: messages in,
//!   drops, and the scheduling priorities they ran at.
//!
//! `--icmp-priority low` sets the stream's path to priority 1 and leaves
//! ICMP's at 0 (the thesis' setup: the video path at the default priority
//! and ICMP at the next lower one; our default is the lowest, 0, so the
//! stream goes one above instead); `same` puts both at 0.
//!
//! `--icmp-queue-len N` sets the capacity of ICMP's path queues with
//! [`Stack::set_queue_len`]: while a path is ranked, a received burst is
//! classified onto the paths' queues before any of them runs, and an echo
//! request that finds ICMP's queue full is discarded there, before any
//! stage (or the reply's TAP write) costs anything — counted on ICMP's
//! path as `path.source_full`. `--icmp-priority low` without it uses
//! [`icmp_queue_len`]: two slots, by the thesis §5.2.1 rule; `same` keeps
//! the stack's default (64) unless given.
//!
//! `--icmp-priority low` also gives ICMP's path the match of echo requests
//! to the receiver's address ([`IcmpModule::echo_requests_to`],
//! [`Stack::set_device_discard`]): when the path keeps refusing them, the
//! stack has the TAP's kernel filter drop them before they are queued for
//! the process, as Scout's driver discarded at interrupt time (thesis
//! §5.2.1). `--no-device-discard` leaves it out, so every discard happens
//! at classification, after the frame's wake-up and `read(2)`.
//!
//! `--netns NS` enters the named network namespace (`setns(2)` on this
//! thread) before opening the socket, as `ip netns exec NS` would.
#![forbid(unsafe_code)]

use clap::{Parser, Subcommand, ValueEnum};
use hdrhistogram::Histogram;
use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack::core::queue_sizing::queue_len_for;
use pathstack::core::stack::ModuleSetup;
use pathstack::core::{
    Attrs, CoreDropReason, CreateCx, Created, Creation, Cx, Dir, Module, ModuleError, Msg, PathId,
    Route, SchedParams, Stack, Stage, Verdict,
};
use pathstack::devices::{TapDevice, TapOptions, WaitMode};
use pathstack::host::{Below, Host, HostConfig, UpperModule};
use pathstack::inet::modules::IcmpModule;
use pathstack::inet::MacAddr;
use pathstack::socket::ready;
use serde_json::{json, Value};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Parser)]
#[command(about = "A UDP stream with per-message work, for the priority experiment")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand)]
enum Mode {
    /// Send the stream at a fixed rate from a kernel UDP socket.
    Send(SendArgs),
    /// Receive the stream, work on each message, report the rate achieved.
    Recv(RecvArgs),
}

/// What `send` does.
#[derive(Parser, Clone, Debug)]
pub struct SendArgs {
    /// The receiver.
    #[arg(long)]
    pub to: SocketAddr,
    /// Messages per second.
    #[arg(long, default_value_t = 20_000)]
    pub rate: u64,
    /// How long to send.
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Message size in bytes (at least the 32-byte header).
    #[arg(long, default_value_t = 256)]
    pub size: usize,
    /// Enter this network namespace first.
    #[arg(long)]
    pub netns: Option<String>,
}

/// Whose stack receives the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StackKind {
    /// A pathstack host on a TAP device.
    Pathstack,
    /// The Linux kernel's UDP socket.
    Linux,
}

/// ICMP's path priority relative to the stream's (pathstack only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum IcmpPriority {
    /// ICMP one priority below the stream (the thesis' setup).
    Low,
    /// Everything at one priority.
    Same,
}

/// Where the per-message work runs (pathstack only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WorkIn {
    /// In the stream's path: a stage above UDP (Scout's decoder on the path).
    Path,
    /// In the application, on what the UDP socket returns after a poll.
    App,
}

/// What `recv` does.
#[derive(Parser, Clone, Debug)]
pub struct RecvArgs {
    /// pathstack on a TAP, or the Linux kernel's socket.
    #[arg(long, value_enum)]
    pub stack: StackKind,
    /// TAP device (pathstack).
    #[arg(long)]
    pub tap: Option<String>,
    /// Our address and prefix length, e.g. 10.77.1.1/24 (pathstack).
    #[arg(long)]
    pub ip: Option<String>,
    /// UDP port to receive on (pathstack).
    #[arg(long, default_value_t = 5000)]
    pub port: u16,
    /// Address to bind (linux).
    #[arg(long)]
    pub bind: Option<SocketAddr>,
    /// Enter this network namespace first (the TAP is opened in it).
    #[arg(long)]
    pub netns: Option<String>,
    /// ICMP's path priority relative to the stream's (pathstack).
    #[arg(long, value_enum, default_value = "low")]
    pub icmp_priority: IcmpPriority,
    /// Where the work runs: a stage of the stream's path, or the
    /// application after each poll (pathstack).
    #[arg(long, value_enum, default_value = "path")]
    pub work_in: WorkIn,
    /// Capacity of ICMP's path queues (pathstack); default: two slots
    /// with `--icmp-priority low` (thesis §5.2.1), the stack's otherwise.
    #[arg(long)]
    pub icmp_queue_len: Option<usize>,
    /// With `--icmp-priority low`: discard at classification only, never
    /// in the TAP (pathstack).
    #[arg(long)]
    pub no_device_discard: bool,
    /// Passes of checksum + copy per message.
    #[arg(long, default_value_t = 8)]
    pub work: u32,
    /// Give up this long after the last message if no end marker came.
    #[arg(long, default_value_t = 5.0)]
    pub idle_seconds: f64,
    /// Write the result as JSON to this file (`-`: stdout).
    #[arg(long)]
    pub json: Option<PathBuf>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The tool's command line (`send` or `recv`).
pub fn main() -> std::process::ExitCode {
    let r = match Cli::parse().mode {
        Mode::Send(a) => send(&a).map(|v| println!("{v}")),
        Mode::Recv(a) => recv(&a).and_then(|v| write_json(&a.json, &v)),
    };
    match r {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("priority_stream: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn write_json(to: &Option<PathBuf>, v: &Value) -> Result<(), BoxError> {
    match to {
        Some(p) if p.as_os_str() != "-" => std::fs::write(p, format!("{v:#}\n"))?,
        _ => println!("{v:#}"),
    }
    Ok(())
}

// ----- the message -----------------------------------------------------------

/// "PSST": a stream message, not stray traffic.
const MAGIC: u32 = 0x5053_5354;
const KIND_DATA: u32 = 0;
const KIND_END: u32 = 1;
/// magic, kind, seq (or sent count), start ns, send ns (or sending time ns).
const HEADER: usize = 32;

/// One decoded stream message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamMsg {
    /// A data message.
    Data {
        /// Sequence number from 0.
        seq: u64,
        /// The sender's start time, ns since the epoch.
        start_ns: u64,
        /// This message's send time, ns since the epoch.
        sent_ns: u64,
    },
    /// The end marker.
    End {
        /// Data messages sent.
        sent: u64,
        /// The sender's start time, ns since the epoch.
        start_ns: u64,
        /// Sending time, ns.
        duration_ns: u64,
    },
}

impl StreamMsg {
    /// Writes the header into `buf` (at least [`HEADER`] bytes).
    fn write(&self, buf: &mut [u8]) {
        let (kind, a, b, c) = match *self {
            StreamMsg::Data {
                seq,
                start_ns,
                sent_ns,
            } => (KIND_DATA, seq, start_ns, sent_ns),
            StreamMsg::End {
                sent,
                start_ns,
                duration_ns,
            } => (KIND_END, sent, start_ns, duration_ns),
        };
        buf[0..4].copy_from_slice(&MAGIC.to_be_bytes());
        buf[4..8].copy_from_slice(&kind.to_be_bytes());
        buf[8..16].copy_from_slice(&a.to_be_bytes());
        buf[16..24].copy_from_slice(&b.to_be_bytes());
        buf[24..32].copy_from_slice(&c.to_be_bytes());
    }

    /// Decodes a message; `None` for anything that is not one.
    fn parse(buf: &[u8]) -> Option<StreamMsg> {
        let u32_at = |i: usize| -> Option<u32> {
            Some(u32::from_be_bytes(buf.get(i..i + 4)?.try_into().ok()?))
        };
        let u64_at = |i: usize| -> Option<u64> {
            Some(u64::from_be_bytes(buf.get(i..i + 8)?.try_into().ok()?))
        };
        if u32_at(0)? != MAGIC {
            return None;
        }
        let (a, b, c) = (u64_at(8)?, u64_at(16)?, u64_at(24)?);
        match u32_at(4)? {
            KIND_DATA => Some(StreamMsg::Data {
                seq: a,
                start_ns: b,
                sent_ns: c,
            }),
            KIND_END => Some(StreamMsg::End {
                sent: a,
                start_ns: b,
                duration_ns: c,
            }),
            _ => None,
        }
    }
}

/// Wall-clock time in ns since the epoch: comparable between processes.
fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

// ----- send ------------------------------------------------------------------

/// Enters the named network namespace on this thread (`ip netns` keeps
/// them under /run/netns).
pub fn enter_netns(name: &str) -> Result<(), BoxError> {
    let f = std::fs::File::open(format!("/run/netns/{name}"))
        .map_err(|e| format!("network namespace {name}: {e}"))?;
    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("setns({name}): {e}"))?;
    Ok(())
}

/// Sends the stream; returns `{"sent", "seconds", "rate"}`.
pub fn send(a: &SendArgs) -> Result<Value, BoxError> {
    if a.size < HEADER || a.size > 1472 {
        return Err(format!("--size {}: {HEADER} to 1472 bytes", a.size).into());
    }
    if let Some(ns) = &a.netns {
        enter_netns(ns)?;
    }
    let sock = UdpSocket::bind("0.0.0.0:0")?;
    sock.connect(a.to)?;
    let mut buf: Vec<u8> = (0..a.size).map(|i| i as u8).collect();
    let start_ns = wall_ns();
    let start = Instant::now();
    let end = Duration::from_secs_f64(a.seconds);
    let mut sent = 0u64;
    let mut refused = 0u64;
    loop {
        let t = start.elapsed();
        if t >= end {
            break;
        }
        let due = (t.as_secs_f64() * a.rate as f64) as u64;
        while sent < due {
            StreamMsg::Data {
                seq: sent,
                start_ns,
                sent_ns: wall_ns(),
            }
            .write(&mut buf);
            match sock.send(&buf) {
                Ok(_) => {}
                // An ICMP port unreachable from a receiver not yet up
                // comes back on the next send of a connected socket.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => refused += 1,
                Err(e) => return Err(format!("sending message {sent}: {e}").into()),
            }
            sent += 1;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let secs = start.elapsed().as_secs_f64();
    for _ in 0..5 {
        StreamMsg::End {
            sent,
            start_ns,
            duration_ns: (secs * 1e9) as u64,
        }
        .write(&mut buf);
        // The receiver may already have stopped at the first marker.
        let _ = sock.send(&buf);
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(json!({"sent": sent, "seconds": secs, "rate": sent as f64 / secs, "refused": refused}))
}

// ----- the application's work ------------------------------------------------

/// Application buffer size: messages are copied in round-robin.
const APP_BUFFER: usize = 64 * 1024;

/// The per-message work and the measurement.
pub struct Workload {
    passes: u32,
    app: Vec<u8>,
    at: usize,
    /// Folded checksums, so the work cannot be optimised away.
    sum: u64,
    received: u64,
    /// (completion wall ns) of every data message, to count those done
    /// within the sender's window once it is known.
    done_ns: Vec<u64>,
    latency: Histogram<u64>,
    end: Option<(u64, u64, u64)>,
    first_start_ns: Option<u64>,
    last_msg: Instant,
    stray: u64,
}

/// At most this many completions are kept (a minute at 100 k/s): bounded.
const MAX_TRACKED: usize = 6_000_000;

/// RFC 1071 Internet checksum (one's-complement sum of 16-bit words).
fn inet_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl Workload {
    /// `passes` of checksum + copy per message.
    pub fn new(passes: u32) -> Workload {
        Workload {
            passes,
            app: vec![0; APP_BUFFER],
            at: 0,
            sum: 0,
            received: 0,
            done_ns: Vec::new(),
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds"),
            end: None,
            first_start_ns: None,
            last_msg: Instant::now(),
            stray: 0,
        }
    }

    /// Handles one datagram; returns true at the end marker.
    pub fn handle(&mut self, msg: &[u8]) -> bool {
        self.last_msg = Instant::now();
        match StreamMsg::parse(msg) {
            None => {
                self.stray += 1;
                false
            }
            Some(StreamMsg::End {
                sent,
                start_ns,
                duration_ns,
            }) => {
                self.end = Some((sent, start_ns, duration_ns));
                true
            }
            Some(StreamMsg::Data {
                start_ns, sent_ns, ..
            }) => {
                for _ in 0..self.passes {
                    self.sum = self.sum.wrapping_add(u64::from(inet_checksum(msg)));
                    if self.at + msg.len() > self.app.len() {
                        self.at = 0;
                    }
                    self.app[self.at..self.at + msg.len()].copy_from_slice(msg);
                    self.at += msg.len();
                }
                let now = wall_ns();
                self.received += 1;
                self.first_start_ns.get_or_insert(start_ns);
                if self.done_ns.len() < MAX_TRACKED {
                    self.done_ns.push(now);
                }
                let us = now.saturating_sub(sent_ns) / 1000;
                // Beyond the histogram's range: clamp, still counted.
                let _ = self.latency.record(us.clamp(1, 60_000_000));
                false
            }
        }
    }

    /// True when the stream ended or went quiet for `idle` after starting.
    pub fn finished(&self, idle: Duration) -> bool {
        self.end.is_some() || (self.received > 0 && self.last_msg.elapsed() > idle)
    }

    /// Messages received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// The result: rate within the sender's window, latency, counts.
    fn report(&self) -> Value {
        let (sent, start_ns, dur_ns) = match self.end {
            Some(e) => (Some(e.0), e.1, e.2),
            // No marker: the window is from the first start time to the
            // last completion.
            None => {
                let s = self.first_start_ns.unwrap_or(0);
                let last = self.done_ns.last().copied().unwrap_or(s);
                (None, s, last.saturating_sub(s))
            }
        };
        let window_end = start_ns + dur_ns;
        let in_window = self.done_ns.iter().filter(|&&t| t <= window_end).count() as u64;
        let secs = dur_ns as f64 / 1e9;
        let q = |p: f64| self.latency.value_at_quantile(p);
        json!({
            "received": self.received,
            "sent": sent,
            "lost": sent.map(|s| s.saturating_sub(self.received)),
            "end_marker": self.end.is_some(),
            "window_seconds": secs,
            "done_in_window": in_window,
            "msgs_per_s": if secs > 0.0 { in_window as f64 / secs } else { 0.0 },
            "latency_us": {"p50": q(0.5), "p99": q(0.99), "max": self.latency.max()},
            "stray": self.stray,
            "checksum_fold": self.sum,
        })
    }
}

// ----- the work on the path --------------------------------------------------

/// Spec of `STREAMWORK`: the stream's application work as the top stage of
/// its path (the place of Scout's MPEG decoder, thesis §5.2).
pub const STREAM_WORK_SPEC: ModuleSpec = ModuleSpec {
    name: "STREAMWORK",
    doc: "top of the priority stream's path: does the per-message work and keeps the record",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after()],
    params: &[ParamSpec::optional(
        "passes",
        "passes of checksum + copy per message (default 8)",
    )],
    understands: &[],
};

/// The `STREAMWORK` module: how many passes its stages do.
pub struct StreamWorkModule {
    passes: u32,
}

impl StreamWorkModule {
    /// Factory: parameter `passes`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(StreamWorkModule {
            passes: setup.param("passes", 8)?,
        }))
    }
}

impl Module for StreamWorkModule {
    fn spec(&self) -> &'static ModuleSpec {
        &STREAM_WORK_SPEC
    }

    fn create_stage(&mut self, _attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        cx.require_top("STREAMWORK is the top of a path: create the path at it")?;
        Ok(Created::new(
            StreamWorkStage {
                work: Workload::new(self.passes),
            },
            Route::Service(0),
        ))
    }
}

/// The `STREAMWORK` stage: works on each datagram that arrives and keeps
/// the record; the datagram ends here ([`Verdict::Consumed`]), so no
/// socket queue lies between the stack and the work.
pub struct StreamWorkStage {
    work: Workload,
}

impl StreamWorkStage {
    /// The work done and the record kept so far.
    pub fn workload(&self) -> &Workload {
        &self.work
    }
}

impl Stage for StreamWorkStage {
    fn passes(&self, dir: Dir) -> bool {
        // Nothing is sent on the stream's path.
        dir == Dir::Down
    }

    fn process(&mut self, dir: Dir, msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            return Verdict::Next;
        }
        self.work.handle(msg.as_slice());
        Verdict::Consumed
    }
}

/// The length of ICMP's path queues in the ranked configuration, by the
/// thesis §5.2.1 rule ([`queue_len_for`]): twice the round trip ×
/// bandwidth product, at least two slots. The bandwidth is the share of
/// echo service the host means to give, 1,000 requests/s (`ping -i
/// 0.001`'s rate, far above any interactive use); the round trip is that
/// of `ping -f` to the host on the study's topology, ≈ 215 µs (4,640
/// round trips/s, one outstanding); an echo's processing (a TAP read, the
/// path and a TAP write) is ≈ 10 µs. 2 × 215 µs × 1,000/s = 0.43
/// messages: two slots. A flood beyond that is discarded at
/// classification, where it costs no stage work.
pub fn icmp_queue_len() -> usize {
    queue_len_for(
        pathstack::core::Duration::from_micros(215),
        pathstack::core::Duration::from_micros(10),
        1_000.0,
    )
}

// ----- recv ------------------------------------------------------------------

/// CPU time of this process (user + system).
fn cpu_time() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let tv = |t: nix::sys::time::TimeVal| {
                Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
            };
            tv(u.user_time()) + tv(u.system_time())
        }
        Err(_) => Duration::ZERO,
    }
}

/// Receives the stream until its end; returns the result as JSON.
pub fn recv(a: &RecvArgs) -> Result<Value, BoxError> {
    recv_until(a, &|| false)
}

/// [`recv`], also stopping when `stop()` says so.
pub fn recv_until(a: &RecvArgs, stop: &dyn Fn() -> bool) -> Result<Value, BoxError> {
    let idle = Duration::from_secs_f64(a.idle_seconds);
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let mut busy_from = None;
    let (mut v, extra) = match (a.stack, a.work_in) {
        (StackKind::Pathstack, WorkIn::Path) => {
            recv_pathstack_in_path(a, idle, stop, &mut busy_from)?
        }
        (StackKind::Pathstack, WorkIn::App) => {
            let mut w = Workload::new(a.work);
            let extra = recv_pathstack(a, &mut w, idle, stop, &mut busy_from)?;
            (w.report(), extra)
        }
        (StackKind::Linux, _) => {
            let mut w = Workload::new(a.work);
            let extra = recv_linux(a, &mut w, idle, stop, &mut busy_from)?;
            (w.report(), extra)
        }
    };
    let (cpu_start, wall_start) = busy_from.unwrap_or((cpu0, t0));
    let wall = wall_start.elapsed().as_secs_f64();
    v["stack"] = json!(match a.stack {
        StackKind::Pathstack => "pathstack",
        StackKind::Linux => "linux",
    });
    v["work"] = json!(a.work);
    v["cpu_busy"] = json!(if wall > 0.0 {
        (cpu_time() - cpu_start).as_secs_f64() / wall
    } else {
        0.0
    });
    if let Value::Object(m) = extra {
        for (k, x) in m {
            v[k] = x;
        }
    }
    Ok(v)
}

/// One path's counters for the report.
fn path_json(stack: &Stack, id: PathId) -> Value {
    match stack.path(id) {
        None => Value::Null,
        Some(p) => {
            let s = p.stats();
            json!({
                "priority": p.sched().priority,
                "msgs_in_up": s.msgs_in[Dir::Up.index()],
                "msgs_out_down": s.msgs_out[Dir::Down.index()],
                "drops": s.drops.total(),
                // Early discards: refused at classification, no stage ran.
                "source_full": s.drops.get(CoreDropReason::SourceFull),
                // Times the TAP's filter took over the discarding.
                "device_discards": s.device_discards,
                "peak_held_bytes": s.peak_held_bytes,
                "cpu_ns": s.cpu_ns,
            })
        }
    }
}

/// Sets the stream's and ICMP's scheduling priorities and ICMP's queue
/// length as `a` says, and says so on stderr.
fn rank_paths(
    stack: &mut Stack,
    a: &RecvArgs,
    stream: PathId,
    icmp: PathId,
    top: &str,
) -> Result<(), BoxError> {
    // Higher is more important; the default, 0, is the lowest.
    let (stream_prio, icmp_prio) = match a.icmp_priority {
        IcmpPriority::Low => (1, 0),
        IcmpPriority::Same => (0, 0),
    };
    for (path, priority) in [(stream, stream_prio), (icmp, icmp_prio)] {
        stack.set_sched(
            path,
            SchedParams {
                priority,
                ..SchedParams::default()
            },
        )?;
    }
    let icmp_len = match (a.icmp_queue_len, a.icmp_priority) {
        (Some(n), _) => Some(n),
        (None, IcmpPriority::Low) => Some(icmp_queue_len()),
        (None, IcmpPriority::Same) => None,
    };
    if let Some(n) = icmp_len {
        stack.set_queue_len(icmp, n)?;
    }
    let device_discard = a.icmp_priority == IcmpPriority::Low && !a.no_device_discard;
    if device_discard {
        let ip = a.ip.as_deref().ok_or("--stack pathstack needs --ip")?;
        let local = HostConfig::parse(ip)?.addr;
        stack.set_device_discard(icmp, Some(IcmpModule::echo_requests_to(local)))?;
    }
    eprintln!(
        "priority_stream: pathstack on {} ({}), stream on UDP port {} (path #{}, {top}, priority {stream_prio}), \
         ICMP path #{} at priority {icmp_prio}, its queues {}{}",
        a.tap.as_deref().unwrap_or("?"),
        a.ip.as_deref().unwrap_or("?"),
        a.port,
        stream.index(),
        icmp.index(),
        icmp_len.map_or("the stack's default".to_string(), |n| format!("{n} long")),
        if device_discard {
            ", echo requests discarded in the TAP while it refuses them"
        } else {
            ""
        },
    );
    Ok(())
}

/// The stream received by a `STREAMWORK` stage on the stream's path
/// (`--work-in path`): a host with the example's `STREAMWORK` module type
/// above UDP ([`HostConfig::module_types`], [`HostConfig::upper`]), polled
/// until the stage saw the end. Returns the stage's record and the paths' counters.
fn recv_pathstack_in_path(
    a: &RecvArgs,
    idle: Duration,
    stop: &dyn Fn() -> bool,
    busy_from: &mut Option<(Duration, Instant)>,
) -> Result<(Value, Value), BoxError> {
    let (Some(tap), Some(ip)) = (&a.tap, &a.ip) else {
        return Err("--stack pathstack needs --tap and --ip".into());
    };
    let mut cfg = HostConfig::parse(ip)?;
    let mut opts = TapOptions::new();
    if let Some(ns) = &a.netns {
        opts = opts.netns(ns.clone());
    }
    let dev = TapDevice::open(tap, opts)?;
    let waiter = dev.waiter()?;
    // The host `Host::new` builds for a TAP, with UDP and, above it, the
    // stream's work: a module type of this example's, given to the host.
    // Modular paths and no TCP, as the measurement has always run.
    cfg.mac = Some(MacAddr(dev.mac()));
    cfg.tcp = false;
    cfg.specialize = false;
    cfg.module_types
        .register(&STREAM_WORK_SPEC, StreamWorkModule::create);
    cfg.upper.push(
        UpperModule::new("work", STREAM_WORK_SPEC.name)
            .param("passes", a.work)
            .over("down", Below::Udp),
    );
    let mut host = Host::new(cfg, dev)?.with_waiter(waiter, WaitMode::Blocking);
    let icmp = host.icmp_path();
    let stack = host.stack_mut();
    let (work, _) = stack
        .module_of::<StreamWorkModule>()
        .ok_or("no STREAMWORK instance")?;
    // A bound path: any sender to our port (as `host.udp().bind` makes).
    let stream = stack.path_create(
        work,
        Attrs::new().with(&PASSIVE_OPEN, true).with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(a.port)],
                remote: vec![],
            },
        ),
    )?;
    rank_paths(stack, a, stream, icmp, "STREAMWORK on the path")?;
    loop {
        host.poll();
        let w = stream_work(host.stack(), stream)?;
        if busy_from.is_none() && w.received() > 0 {
            *busy_from = Some((cpu_time(), Instant::now()));
        }
        if stop() || w.finished(idle) {
            break;
        }
        host.wait(Duration::from_millis(10))?;
    }
    let stack = host.stack();
    let report = stream_work(stack, stream)?.report();
    Ok((
        report,
        json!({
            "icmp_priority": match a.icmp_priority {
                IcmpPriority::Low => "low",
                IcmpPriority::Same => "same",
            },
            "work_in": "path",
            "paths": {"stream": path_json(stack, stream), "icmp": path_json(stack, icmp)},
        }),
    ))
}

/// The record of the `STREAMWORK` stage at the top of `stream`.
fn stream_work(stack: &Stack, stream: PathId) -> Result<&Workload, BoxError> {
    let top = stack
        .path(stream)
        .and_then(|p| p.stage(0))
        .ok_or("the stream's path has no stages")?;
    let any: &dyn std::any::Any = top;
    any.downcast_ref::<StreamWorkStage>()
        .map(StreamWorkStage::workload)
        .ok_or_else(|| "the stream's path does not start with STREAMWORK".into())
}

/// The stream received on a UDP socket of a [`Host`], the work done by
/// the application after each poll (`--work-in app`).
fn recv_pathstack(
    a: &RecvArgs,
    w: &mut Workload,
    idle: Duration,
    stop: &dyn Fn() -> bool,
    busy_from: &mut Option<(Duration, Instant)>,
) -> Result<Value, BoxError> {
    let (Some(tap), Some(ip)) = (&a.tap, &a.ip) else {
        return Err("--stack pathstack needs --tap and --ip".into());
    };
    let mut cfg = HostConfig::parse(ip)?;
    let mut opts = TapOptions::new();
    if let Some(ns) = &a.netns {
        opts = opts.netns(ns.clone());
    }
    let dev = TapDevice::open(tap, opts)?;
    let waiter = dev.waiter()?;
    cfg.mac = Some(MacAddr(dev.mac()));
    let mut host = Host::new(cfg, dev)?.with_waiter(waiter, WaitMode::Blocking);
    let sock = host.udp().bind(("0.0.0.0", a.port))?;
    let stream = host.udp().path_id(&sock)?;
    let icmp = host.icmp_path();
    rank_paths(host.stack_mut(), a, stream, icmp, "UDP socket")?;
    let mut buf = vec![0u8; 2048];
    while !stop() && !w.finished(idle) {
        host.poll();
        while let Some((n, _)) = ready(sock.recv_from(&mut host, &mut buf))? {
            if busy_from.is_none() {
                *busy_from = Some((cpu_time(), Instant::now()));
            }
            if w.handle(&buf[..n]) {
                break;
            }
        }
        host.wait(Duration::from_millis(10))?;
    }
    Ok(json!({
        "icmp_priority": match a.icmp_priority {
            IcmpPriority::Low => "low",
            IcmpPriority::Same => "same",
        },
        "work_in": "app",
        "paths": {"stream": path_json(host.stack(), stream), "icmp": path_json(host.stack(), icmp)},
    }))
}

fn recv_linux(
    a: &RecvArgs,
    w: &mut Workload,
    idle: Duration,
    stop: &dyn Fn() -> bool,
    busy_from: &mut Option<(Duration, Instant)>,
) -> Result<Value, BoxError> {
    let bind = a.bind.ok_or("--stack linux needs --bind ADDR:PORT")?;
    if let Some(ns) = &a.netns {
        enter_netns(ns)?;
    }
    let sock = UdpSocket::bind(bind).map_err(|e| format!("bind {bind}: {e}"))?;
    sock.set_read_timeout(Some(Duration::from_millis(10)))?;
    eprintln!("priority_stream: linux socket on {bind}");
    let mut buf = vec![0u8; 2048];
    while !stop() && !w.finished(idle) {
        match sock.recv(&mut buf) {
            Ok(n) => {
                if busy_from.is_none() {
                    *busy_from = Some((cpu_time(), Instant::now()));
                }
                w.handle(&buf[..n]);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(format!("recv on {bind}: {e}").into()),
        }
    }
    Ok(json!({}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let mut buf = [0u8; 64];
        for m in [
            StreamMsg::Data {
                seq: 7,
                start_ns: 1,
                sent_ns: 2,
            },
            StreamMsg::End {
                sent: 9,
                start_ns: 3,
                duration_ns: 4,
            },
        ] {
            m.write(&mut buf);
            assert_eq!(StreamMsg::parse(&buf), Some(m));
        }
        assert_eq!(StreamMsg::parse(&buf[..10]), None);
        assert_eq!(StreamMsg::parse(&[0u8; 64]), None);
    }

    #[test]
    fn checksum_is_rfc1071() {
        // RFC 1071 §3's example words sum to ddf2; the checksum is its complement.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(inet_checksum(&data), !0xddf2);
    }
}
