//! smoltcp as a comparison peer: the "smoltcp" row of `scripts/bench-veth.sh`
//! and the smoltcp side of the in-memory instruction count.
//!
//! ```text
//! smoltcp_peer tap-echo   --tap NAME [--netns NS] --ip A/24 [--port P] [--busy-poll]
//! smoltcp_peer tap-client --tap NAME [--netns NS] --ip A/24 --peer B [--port P]
//!                         [--rounds N] [--warmup W] [--busy-poll] [--json FILE]
//! smoltcp_peer memory     [--rounds N] [--warmup W]
//! smoltcp_peer memory-tcp [--rounds N] [--warmup W]
//! smoltcp_peer tcp-sink   --tap NAME [--netns NS] --ip A/24 --port P [--buffer B]
//!                         [--busy-poll]
//! smoltcp_peer tcp-source --tap NAME [--netns NS] --ip A/24 --peer ADDR:PORT
//!                         [--seconds S] [--buffer B] [--busy-poll]
//! smoltcp_peer tcp-echo   --tap NAME [--netns NS] --ip A/24 --port P [--sockets K]
//!                         [--idle-port Q --idle-sockets N [--idle-buffer B]] [--busy-poll]
//! ```
//!
//! `tcp-echo` is the smoltcp TCP echo server (RFC 862) of the latency,
//! connection-rate and idle-connection rows of `scripts/bench-tcp.sh`,
//! with the options of `tools/src/bin/tcp_echo.rs`: K sockets listen on P
//! (smoltcp takes one connection per socket; a socket that has closed
//! listens again), 256 KB buffers, Nagle off (`set_nagle_enabled(false)`),
//! echoing what they read. N more sockets with B-octet buffers listen on
//! Q and are never read (the idle connections). smoltcp's interface polls
//! every socket of its set on each poll, which is what the idle row shows.
//!
//! `tcp-sink` and `tcp-source` are the smoltcp rows of
//! `scripts/bench-tcp.sh`, with the options and JSON output of
//! `tools/src/bin/tcp_bulk.rs`: one TCP socket with 1 MiB receive and send
//! buffers (`--buffer`; smoltcp at its fastest, with its window scaled for
//! them; pathstack's default is 256 KB), the sink discarding in place
//! (`recv` with a closure, no copy), CUBIC congestion control (the `socket-tcp-cubic` feature, as pathstack's
//! default), smoltcp's defaults otherwise (no timestamps, Nagle on, its
//! ACK delay of 10 ms, no SACK-based recovery).
//!
//! On a TAP, smoltcp's `phy::Device` is implemented over
//! [`pathstack_devices::TapDevice`] — the same `read(2)`/`write(2)` per frame
//! into pooled buffers that pathstack uses — so that the comparison measures
//! the two stacks and not two device layers (smoltcp's own `TunTapInterface`
//! allocates a `Vec` per frame and cannot open a TAP inside another
//! namespace). Blocking waits sleep in epoll for at most smoltcp's
//! `poll_delay`; `--busy-poll` polls and yields the CPU between polls.
//! Checksums are computed and verified in software both ways (smoltcp's
//! default `ChecksumCapabilities`), as pathstack's UDP does.
//!
//! `memory` joins two smoltcp interfaces in one thread with an in-memory
//! wire (two bounded rings of preallocated frame buffers, no allocation per
//! frame) and ping-pongs one byte over UDP: the workload whose instructions
//! per round trip are counted with cachegrind against pathstack's
//! `pingpong_bench --wire memory`. Run it twice with different `--rounds` and
//! divide the difference of the instruction counts by the difference of the
//! rounds to take out setup and teardown. `memory-tcp` does the same over
//! one TCP connection (B echoes what it reads), Nagle off at both ends
//! (`set_nagle_enabled(false)`), 64 KB buffers, smoltcp's defaults
//! otherwise: the anchor of `pingpong_bench --transport tcp` (TCP_NODELAY) in
//! `scripts/instr.sh`. Its delayed ACK (10 ms) stays on, as pathstack's
//! does (40 ms): each end's ACK rides on its next data, two frames per
//! round trip at both stacks, the strongest anchor. `--no-delayed-ack`
//! ACKs at once (`set_ack_delay(None)`): four frames per round trip.
#![forbid(unsafe_code)]

use pathstack_tools::rtt;

use clap::{Parser, Subcommand};
use pathstack_core::device::Device as _;
use pathstack_core::{Msg, MsgPool, PoolConfig};
use pathstack_devices::{TapDevice, TapOptions};
use rtt::{RttRecorder, LOSS_TIMEOUT};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant as SInstant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr, IpEndpoint, Ipv4Cidr};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(about = "smoltcp 1-byte UDP ping-pong peer (TAP or in-memory)")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

/// Where the TAP is and which address this end has.
#[derive(clap::Args)]
struct TapArgs {
    /// The TAP interface (created if absent).
    #[arg(long)]
    tap: String,
    /// Open the TAP inside this network namespace (`ip netns` name).
    #[arg(long)]
    netns: Option<String>,
    /// This end's address and prefix, e.g. 10.77.1.1/24.
    #[arg(long, value_parser = parse_cidr)]
    ip: Ipv4Cidr,
    /// The UDP port of the echo server.
    #[arg(long, default_value_t = 7)]
    port: u16,
    /// Poll and yield instead of sleeping in epoll.
    #[arg(long)]
    busy_poll: bool,
}

#[derive(Subcommand)]
enum Mode {
    /// UDP echo server on a TAP, until killed.
    TapEcho {
        #[command(flatten)]
        tap: TapArgs,
    },
    /// 1-byte UDP ping-pong with an echo server through a TAP; RTT percentiles.
    TapClient {
        #[command(flatten)]
        tap: TapArgs,
        /// The echo server's IPv4 address.
        #[arg(long)]
        peer: std::net::Ipv4Addr,
        /// Measured round trips.
        #[arg(long, default_value_t = 20_000)]
        rounds: u64,
        /// Round trips before measuring (ARP, caches).
        #[arg(long, default_value_t = 1_000)]
        warmup: u64,
        /// Write the result as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Two interfaces in one thread over an in-memory wire; 1-byte UDP ping-pong.
    Memory {
        /// Measured round trips.
        #[arg(long, default_value_t = 100_000)]
        rounds: u64,
        /// Round trips before measuring.
        #[arg(long, default_value_t = 1_000)]
        warmup: u64,
        /// For instruction counting: no clock reads at all (no per-round
        /// RTT; smoltcp's clock advances 1 us per poll), so that only
        /// smoltcp's own work is counted.
        #[arg(long)]
        count_only: bool,
        /// Write the result as JSON to this file (not with --count-only).
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Two interfaces in one thread over an in-memory wire; 1-byte TCP
    /// ping-pong over one connection, Nagle off.
    MemoryTcp {
        /// Measured round trips.
        #[arg(long, default_value_t = 100_000)]
        rounds: u64,
        /// Round trips before measuring (the handshake is before these).
        #[arg(long, default_value_t = 1_000)]
        warmup: u64,
        /// For instruction counting, as for `memory`.
        #[arg(long)]
        count_only: bool,
        /// ACK every segment at once (`set_ack_delay(None)`): four frames
        /// per round trip instead of two, the ACKs not riding on the data.
        #[arg(long)]
        no_delayed_ack: bool,
        /// Write the result as JSON to this file (not with --count-only).
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// TCP: accept one connection on --port, read until EOF; JSON result.
    TcpSink {
        #[command(flatten)]
        tap: TapArgs,
        /// Receive and send buffer octets (smoltcp scales its window for
        /// them).
        #[arg(long, default_value_t = BULK_BUFFER)]
        buffer: usize,
    },
    /// TCP echo server on --port, with idle listeners on --idle-port.
    TcpEcho {
        #[command(flatten)]
        tap: TapArgs,
        /// Sockets listening on --port (connections served at once).
        #[arg(long, default_value_t = 4)]
        sockets: usize,
        /// A port whose connections are accepted and held idle.
        #[arg(long)]
        idle_port: Option<u16>,
        /// Sockets listening on --idle-port.
        #[arg(long, default_value_t = 0)]
        idle_sockets: usize,
        /// Send and receive buffer octets of each idle socket.
        #[arg(long, default_value_t = 4096)]
        idle_buffer: usize,
    },
    /// TCP: connect to --peer, send for --seconds, close; JSON result.
    TcpSource {
        #[command(flatten)]
        tap: TapArgs,
        /// The sink's address and port.
        #[arg(long)]
        peer: std::net::SocketAddrV4,
        /// How long to send.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Receive and send buffer octets.
        #[arg(long, default_value_t = BULK_BUFFER)]
        buffer: usize,
    },
}

fn parse_cidr(s: &str) -> Result<Ipv4Cidr, String> {
    let (addr, len) = s.split_once('/').unwrap_or((s, "24"));
    let addr: std::net::Ipv4Addr = addr
        .parse()
        .map_err(|e| format!("bad IPv4 address {s:?}: {e}"))?;
    let len: u8 = len
        .parse()
        .ok()
        .filter(|l| *l <= 32)
        .ok_or_else(|| format!("bad prefix length in {s:?}"))?;
    Ok(Ipv4Cidr::new(addr, len))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match Cli::parse().mode {
        Mode::TapEcho { tap } => tap_echo(&tap),
        Mode::TapClient {
            tap,
            peer,
            rounds,
            warmup,
            json,
        } => {
            let rec = tap_client(&tap, peer, rounds, warmup)?;
            rec.report(json.as_deref())?;
            Ok(())
        }
        Mode::TcpSink { tap, buffer } => tcp_sink(&tap, buffer),
        Mode::TcpEcho {
            tap,
            sockets,
            idle_port,
            idle_sockets,
            idle_buffer,
        } => tcp_echo(
            &tap,
            sockets,
            idle_port.map(|p| (p, idle_sockets, idle_buffer)),
        ),
        Mode::TcpSource {
            tap,
            peer,
            seconds,
            buffer,
        } => tcp_source(&tap, peer, seconds, buffer),
        Mode::Memory {
            rounds,
            warmup,
            count_only,
            json,
        } => {
            let rec = memory(rounds, warmup, count_only)?;
            // Without per-round times there are no percentiles to report.
            if !count_only {
                rec.report(json.as_deref())?;
            }
            Ok(())
        }
        Mode::MemoryTcp {
            rounds,
            warmup,
            count_only,
            no_delayed_ack,
            json,
        } => {
            let rec = memory_tcp(rounds, warmup, count_only, !no_delayed_ack)?;
            // Without per-round times there are no percentiles to report.
            if !count_only {
                rec.report(json.as_deref())?;
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------- TAP device

/// smoltcp's view of a [`TapDevice`]: one frame per token, in pool buffers.
struct TapPhy {
    tap: TapDevice,
    pool: MsgPool,
    /// Where a frame goes when the pool is exhausted: smoltcp's `TxToken`
    /// must hand out a buffer, so the frame is built here and dropped.
    scratch: Vec<u8>,
    dropped: u64,
}

struct TapRx(Msg);

struct TapTx<'a> {
    tap: &'a mut TapDevice,
    pool: &'a MsgPool,
    scratch: &'a mut Vec<u8>,
    dropped: &'a mut u64,
}

impl TapPhy {
    fn open(args: &TapArgs) -> Result<TapPhy, Box<dyn std::error::Error>> {
        let mut opts = TapOptions::new();
        if let Some(ns) = &args.netns {
            opts = opts.netns(ns.clone());
        }
        let tap = TapDevice::open(&args.tap, opts)?;
        let scratch = vec![0; tap.mtu() + pathstack_devices::ETH_HEADER_LEN];
        Ok(TapPhy {
            tap,
            pool: MsgPool::new(PoolConfig::small(64)),
            scratch,
            dropped: 0,
        })
    }

    fn tx(&mut self) -> TapTx<'_> {
        TapTx {
            tap: &mut self.tap,
            pool: &self.pool,
            scratch: &mut self.scratch,
            dropped: &mut self.dropped,
        }
    }
}

impl phy::RxToken for TapRx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(self.0.as_slice())
    }
}

impl phy::TxToken for TapTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let now = pathstack_core::Instant::now();
        match self.pool.alloc(len) {
            Ok(mut msg) => {
                let r = f(msg.as_mut_slice());
                // A refused write is counted by the TapDevice; the peer's
                // timeout notices the loss.
                if self.tap.transmit(msg, now).is_err() {
                    *self.dropped += 1;
                }
                r
            }
            Err(_) => {
                *self.dropped += 1;
                let n = len.min(self.scratch.len());
                f(&mut self.scratch[..n])
            }
        }
    }
}

impl phy::Device for TapPhy {
    type RxToken<'a> = TapRx;
    type TxToken<'a> = TapTx<'a>;

    fn receive(&mut self, _: SInstant) -> Option<(TapRx, TapTx<'_>)> {
        match self.tap.receive(&self.pool, pathstack_core::Instant::now()) {
            Ok(Some(frame)) => Some((TapRx(frame), self.tx())),
            // Nothing waiting, or an error the TapDevice has counted.
            Ok(None) | Err(_) => None,
        }
    }

    fn transmit(&mut self, _: SInstant) -> Option<TapTx<'_>> {
        Some(self.tx())
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        // smoltcp's Ethernet MTU includes the 14-byte header.
        caps.max_transmission_unit = self.tap.mtu() + pathstack_devices::ETH_HEADER_LEN;
        caps
    }
}

/// A smoltcp interface with one UDP socket, bound to `port` (0: the
/// client's fixed port 40007).
/// A smoltcp interface on `dev` with the one address `ip`.
fn iface_on<D: phy::Device>(dev: &mut D, mac: [u8; 6], ip: Ipv4Cidr) -> Interface {
    let config = Config::new(EthernetAddress(mac).into());
    let mut iface = Interface::new(config, dev, SInstant::now());
    iface.update_ip_addrs(|addrs| {
        // One address into a fresh interface: there is room.
        let _ = addrs.push(IpCidr::Ipv4(ip));
    });
    iface
}

fn udp_iface<D: phy::Device>(
    dev: &mut D,
    mac: [u8; 6],
    ip: Ipv4Cidr,
    port: u16,
) -> (Interface, SocketSet<'static>, SocketHandle) {
    let iface = iface_on(dev, mac, ip);
    let buffer =
        || udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 16], vec![0u8; 16 * 2048]);
    let mut sock = udp::Socket::new(buffer(), buffer());
    let port = if port == 0 { 40_007 } else { port };
    sock.bind(port)
        .expect("binding a fresh socket to a non-zero port");
    let mut sockets = SocketSet::new(Vec::new());
    let handle = sockets.add(sock);
    (iface, sockets, handle)
}

fn tap_echo(args: &TapArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut phy = TapPhy::open(args)?;
    let mac = phy.tap.mac();
    let (mut iface, mut sockets, h) = udp_iface(&mut phy, mac, args.ip, args.port);
    println!(
        "smoltcp tap-echo: ready on {} ({} port {})",
        phy.tap.name(),
        args.ip,
        args.port
    );
    let mut buf = [0u8; 2048];
    loop {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut sockets);
        let sock = sockets.get_mut::<udp::Socket>(h);
        let mut echoed = false;
        while let Ok((n, meta)) = sock.recv_slice(&mut buf) {
            // A full send buffer loses this echo; the client counts it.
            let _ = sock.send_slice(&buf[..n], meta.endpoint);
            echoed = true;
        }
        if echoed {
            continue; // poll again at once to send the echoes
        }
        if args.busy_poll {
            std::thread::yield_now();
        } else {
            let delay = iface
                .poll_delay(now, &sockets)
                .map_or(Duration::from_secs(1), Duration::from);
            phy.tap.wait_readable(Some(delay))?;
        }
    }
}

fn tap_client(
    args: &TapArgs,
    peer: std::net::Ipv4Addr,
    rounds: u64,
    warmup: u64,
) -> Result<RttRecorder, Box<dyn std::error::Error>> {
    let mut phy = TapPhy::open(args)?;
    let mac = phy.tap.mac();
    let (mut iface, mut sockets, h) = udp_iface(&mut phy, mac, args.ip, 0);
    let peer = IpEndpoint::new(IpAddress::Ipv4(peer), args.port);
    let name = if args.busy_poll {
        "smoltcp-busypoll"
    } else {
        "smoltcp"
    };
    let mut rec = RttRecorder::new(name);
    let mut buf = [0u8; 2048];
    let mut start = std::time::Instant::now();
    for round in 0..warmup + rounds {
        if round == warmup {
            start = std::time::Instant::now();
        }
        let byte = round as u8;
        let t0 = std::time::Instant::now();
        let deadline = t0 + LOSS_TIMEOUT;
        // The buffer holds 16 datagrams; it can only be full if echoes keep
        // being lost, and then this round is lost too.
        let _ = sockets.get_mut::<udp::Socket>(h).send_slice(&[byte], peer);
        let mut echoed = false;
        loop {
            let now = SInstant::now();
            iface.poll(now, &mut phy, &mut sockets);
            let sock = sockets.get_mut::<udp::Socket>(h);
            while let Ok((n, _)) = sock.recv_slice(&mut buf) {
                if n == 1 && buf[0] == byte {
                    echoed = true;
                }
            }
            if echoed {
                break;
            }
            let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) else {
                break;
            };
            if args.busy_poll {
                std::thread::yield_now();
            } else {
                let delay = iface
                    .poll_delay(now, &sockets)
                    .map_or(left, |d| Duration::from(d).min(left));
                phy.tap.wait_readable(Some(delay))?;
            }
        }
        let rtt = t0.elapsed();
        if round >= warmup {
            rec.round(echoed, rtt);
        }
    }
    rec.set_elapsed(start.elapsed());
    if phy.dropped > 0 {
        eprintln!("smoltcp tap-client: {} frames dropped on send", phy.dropped);
    }
    Ok(rec)
}

// ------------------------------------------------------------- TCP bulk

/// The TCP buffers each way of the echo server: pathstack's default.
const TCP_BUFFER: usize = 256 * 1024;

/// The bulk rows' buffers each way: smoltcp at its fastest (issue 28,
/// item 5). smoltcp's window is its receive buffer's free space (scaled
/// for buffers over 64 KB), so a larger buffer keeps more in flight.
const BULK_BUFFER: usize = 1024 * 1024;

/// A smoltcp interface with one TCP socket of `buffer` octets each way.
fn tcp_iface(
    phy: &mut TapPhy,
    ip: Ipv4Cidr,
    buffer: usize,
) -> (Interface, SocketSet<'static>, SocketHandle) {
    let mac = phy.tap.mac();
    let config = Config::new(EthernetAddress(mac).into());
    let mut iface = Interface::new(config, phy, SInstant::now());
    iface.update_ip_addrs(|addrs| {
        let _ = addrs.push(IpCidr::Ipv4(ip));
    });
    let mut sock = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0u8; buffer]),
        tcp::SocketBuffer::new(vec![0u8; buffer]),
    );
    sock.set_congestion_control(tcp::CongestionControl::Cubic);
    let mut sockets = SocketSet::new(Vec::new());
    let handle = sockets.add(sock);
    (iface, sockets, handle)
}

/// Waits after a poll: yields with --busy-poll, else sleeps in epoll until
/// a frame or smoltcp's next timer (at most 10 ms).
fn tcp_wait(
    args: &TapArgs,
    phy: &mut TapPhy,
    iface: &mut Interface,
    sockets: &SocketSet<'_>,
    now: SInstant,
) -> Result<(), Box<dyn std::error::Error>> {
    if args.busy_poll {
        std::thread::yield_now();
        return Ok(());
    }
    let max = Duration::from_millis(10);
    let delay = iface
        .poll_delay(now, sockets)
        .map_or(max, |d| Duration::from(d).min(max));
    phy.tap.wait_readable(Some(delay))?;
    Ok(())
}

fn tcp_report(bytes: u64, secs: f64, dropped: u64) {
    println!(
        "{}",
        serde_json::json!({
            "bytes": bytes,
            "seconds": secs,
            "gbps": bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
            "tx_dropped": dropped,
        })
    );
}

fn tcp_sink(args: &TapArgs, buffer: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut phy = TapPhy::open(args)?;
    let (mut iface, mut sockets, h) = tcp_iface(&mut phy, args.ip, buffer);
    sockets.get_mut::<tcp::Socket>(h).listen(args.port)?;
    println!("smoltcp tcp-sink: ready on {} port {}", args.ip, args.port);
    let mut bytes = 0u64;
    let mut start = None;
    let mut connected = false;
    loop {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut sockets);
        let sock = sockets.get_mut::<tcp::Socket>(h);
        if sock.may_recv() {
            connected = true; // established
        }
        let mut got = false;
        while sock.can_recv() {
            // Discarded in place: smoltcp's zero-copy receive, its fastest.
            let n = sock.recv(|data| (data.len(), data.len()))?;
            if n == 0 {
                break;
            }
            start.get_or_insert_with(std::time::Instant::now);
            bytes += n as u64;
            got = true;
        }
        if connected && !sock.may_recv() {
            // The peer's FIN, everything read.
            sock.close();
            break;
        }
        if got {
            continue; // poll at once: the window update goes out
        }
        tcp_wait(args, &mut phy, &mut iface, &sockets, now)?;
    }
    let secs = start.map_or(0.0, |t| t.elapsed().as_secs_f64());
    // Let the FIN out.
    let until = std::time::Instant::now() + Duration::from_millis(200);
    while std::time::Instant::now() < until
        && sockets.get::<tcp::Socket>(h).state() != tcp::State::Closed
    {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut sockets);
        tcp_wait(args, &mut phy, &mut iface, &sockets, now)?;
    }
    tcp_report(bytes, secs, phy.dropped);
    Ok(())
}

/// A TCP socket with `buffer` octets each way, Nagle off, listening on `port`.
fn echo_socket(buffer: usize, port: u16) -> Result<tcp::Socket<'static>, tcp::ListenError> {
    let mut sock = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0u8; buffer]),
        tcp::SocketBuffer::new(vec![0u8; buffer]),
    );
    sock.set_congestion_control(tcp::CongestionControl::Cubic);
    sock.set_nagle_enabled(false);
    sock.listen(port)?;
    Ok(sock)
}

fn tcp_echo(
    args: &TapArgs,
    sockets: usize,
    idle: Option<(u16, usize, usize)>,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut phy = TapPhy::open(args)?;
    let (mut iface, mut set, first) = tcp_iface(&mut phy, args.ip, TCP_BUFFER);
    set.remove(first);
    let mut echo = Vec::new();
    for _ in 0..sockets.max(1) {
        echo.push(set.add(echo_socket(TCP_BUFFER, args.port)?));
    }
    if let Some((port, n, buffer)) = idle {
        for _ in 0..n {
            set.add(echo_socket(buffer, port)?);
        }
    }
    println!(
        "smoltcp tcp-echo: ready on {} port {} ({} sockets{})",
        args.ip,
        args.port,
        echo.len(),
        idle.map(|(p, n, _)| format!(", {n} idle sockets on port {p}"))
            .unwrap_or_default()
    );
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut set);
        let mut moved = false;
        for &h in &echo {
            let sock = set.get_mut::<tcp::Socket>(h);
            // Echo what fits in the send buffer; the rest waits in the
            // receive buffer (the window closes) until there is room.
            while sock.can_recv() && sock.can_send() {
                let room = sock.send_capacity() - sock.send_queue();
                let want = room.min(buf.len());
                let n = sock.recv_slice(&mut buf[..want])?;
                if n == 0 {
                    break;
                }
                sock.send_slice(&buf[..n])?;
                moved = true;
            }
            if sock.state() == tcp::State::CloseWait && sock.recv_queue() == 0 {
                sock.close();
                moved = true;
            }
            if sock.state() == tcp::State::Closed {
                sock.listen(args.port)?;
            }
        }
        if moved {
            continue; // poll at once: the echo goes out
        }
        tcp_wait(args, &mut phy, &mut iface, &set, now)?;
    }
}

fn tcp_source(
    args: &TapArgs,
    peer: std::net::SocketAddrV4,
    seconds: f64,
    buffer: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut phy = TapPhy::open(args)?;
    let (mut iface, mut sockets, h) = tcp_iface(&mut phy, args.ip, buffer);
    let remote = IpEndpoint::new(IpAddress::Ipv4(*peer.ip()), peer.port());
    let local = 49_152 + (std::process::id() % 16_000) as u16;
    sockets
        .get_mut::<tcp::Socket>(h)
        .connect(iface.context(), remote, local)?;
    let connect_by = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut sockets);
        let sock = sockets.get::<tcp::Socket>(h);
        if sock.may_send() {
            break;
        }
        if !sock.is_open() || std::time::Instant::now() > connect_by {
            return Err("connect failed".into());
        }
        tcp_wait(args, &mut phy, &mut iface, &sockets, now)?;
    }
    let data = vec![0x5au8; 64 * 1024];
    let start = std::time::Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut bytes = 0u64;
    while std::time::Instant::now() < end {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut sockets);
        let sock = sockets.get_mut::<tcp::Socket>(h);
        let mut wrote = false;
        while sock.can_send() {
            let n = sock.send_slice(&data)?;
            if n == 0 {
                break;
            }
            bytes += n as u64;
            wrote = true;
        }
        if !sock.is_open() {
            return Err("the connection failed".into());
        }
        if !wrote {
            tcp_wait(args, &mut phy, &mut iface, &sockets, now)?;
        }
    }
    sockets.get_mut::<tcp::Socket>(h).close();
    // Until the peer's FIN (everything acknowledged before it).
    let close_by = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut sockets);
        let sock = sockets.get_mut::<tcp::Socket>(h);
        while sock.can_recv() {
            if sock.recv_slice(&mut [0u8; 2048])? == 0 {
                break;
            }
        }
        if !sock.may_recv() {
            break;
        }
        if std::time::Instant::now() > close_by {
            return Err("the peer did not close".into());
        }
        tcp_wait(args, &mut phy, &mut iface, &sockets, now)?;
    }
    let secs = start.elapsed().as_secs_f64();
    // Let the last ACK out.
    let until = std::time::Instant::now() + Duration::from_millis(100);
    while std::time::Instant::now() < until {
        let now = SInstant::now();
        iface.poll(now, &mut phy, &mut sockets);
        tcp_wait(args, &mut phy, &mut iface, &sockets, now)?;
    }
    tcp_report(bytes, secs, phy.dropped);
    Ok(())
}

// ---------------------------------------------------------- in-memory wire

/// Frames in flight one way: a bounded ring of preallocated buffers (hand
/// written rather than a `VecDeque<Vec<u8>>`, which would allocate per frame
/// and charge the allocator to smoltcp in the instruction count).
struct Ring {
    bufs: Vec<Box<[u8]>>,
    lens: Vec<usize>,
    head: usize,
    count: usize,
    dropped: u64,
    /// Frames carried, for the frames-per-round-trip check.
    carried: u64,
}

/// Largest frame on the in-memory wire: 1500-byte MTU plus Ethernet header.
const WIRE_FRAME: usize = 1514;

impl Ring {
    fn new(slots: usize) -> Ring {
        Ring {
            bufs: (0..slots).map(|_| vec![0; WIRE_FRAME].into()).collect(),
            lens: vec![0; slots],
            head: 0,
            count: 0,
            dropped: 0,
            carried: 0,
        }
    }
}

/// One end of the wire: receives from `rx`, sends into `tx`.
struct MemoryEnd<'a> {
    rx: &'a mut Ring,
    tx: &'a mut Ring,
}

struct RingRx<'a>(&'a mut Ring);
struct RingTx<'a>(&'a mut Ring);

impl phy::RxToken for RingRx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let ring = self.0;
        let i = ring.head;
        let r = f(&ring.bufs[i][..ring.lens[i]]);
        ring.head = (i + 1) % ring.bufs.len();
        ring.count -= 1;
        r
    }
}

impl phy::TxToken for RingTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let ring = self.0;
        let slots = ring.bufs.len();
        let len = len.min(WIRE_FRAME);
        if ring.count == slots {
            // Full: build the frame in the slot about to be read last and
            // drop it (the token must hand out a buffer).
            ring.dropped += 1;
            let i = (ring.head + slots - 1) % slots;
            let mut spare = std::mem::take(&mut ring.bufs[i]);
            let r = f(&mut spare[..len]);
            ring.bufs[i] = spare;
            return r;
        }
        let i = (ring.head + ring.count) % slots;
        let r = f(&mut ring.bufs[i][..len]);
        ring.lens[i] = len;
        ring.count += 1;
        ring.carried += 1;
        r
    }
}

impl phy::Device for MemoryEnd<'_> {
    type RxToken<'b>
        = RingRx<'b>
    where
        Self: 'b;
    type TxToken<'b>
        = RingTx<'b>
    where
        Self: 'b;

    fn receive(&mut self, _: SInstant) -> Option<(RingRx<'_>, RingTx<'_>)> {
        if self.rx.count == 0 {
            return None;
        }
        Some((RingRx(self.rx), RingTx(self.tx)))
    }

    fn transmit(&mut self, _: SInstant) -> Option<RingTx<'_>> {
        Some(RingTx(self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = WIRE_FRAME;
        caps
    }
}

/// The clock smoltcp is given on the in-memory wire.
enum MemClock {
    /// The real time (what an application would pass).
    Real,
    /// Advances 1 us per reading and never asks the OS (for counting).
    Fake(i64),
}

/// The addresses of the two interfaces of the in-memory modes.
const MEMORY_IP_A: Ipv4Cidr = Ipv4Cidr::new(std::net::Ipv4Addr::new(10, 0, 0, 1), 24);
const MEMORY_IP_B: Ipv4Cidr = Ipv4Cidr::new(std::net::Ipv4Addr::new(10, 0, 0, 2), 24);

impl MemClock {
    /// The fake clock for counting, else the real one.
    fn new(count_only: bool) -> MemClock {
        if count_only {
            MemClock::Fake(0)
        } else {
            MemClock::Real
        }
    }

    fn now(&mut self) -> SInstant {
        match self {
            MemClock::Real => SInstant::now(),
            MemClock::Fake(us) => {
                *us += 1;
                SInstant::from_micros(*us)
            }
        }
    }
}

fn memory(
    rounds: u64,
    warmup: u64,
    count_only: bool,
) -> Result<RttRecorder, Box<dyn std::error::Error>> {
    let mut clock = MemClock::new(count_only);
    let (mut a_to_b, mut b_to_a) = (Ring::new(64), Ring::new(64));
    let (ip_a, ip_b) = (MEMORY_IP_A, MEMORY_IP_B);
    let (mut iface_a, mut socks_a, ha) = {
        let mut end = MemoryEnd {
            rx: &mut b_to_a,
            tx: &mut a_to_b,
        };
        udp_iface(&mut end, [0x02, 0, 0, 0, 0, 1], ip_a, 0)
    };
    let (mut iface_b, mut socks_b, hb) = {
        let mut end = MemoryEnd {
            rx: &mut a_to_b,
            tx: &mut b_to_a,
        };
        udp_iface(&mut end, [0x02, 0, 0, 0, 0, 2], ip_b, 7)
    };
    let peer = IpEndpoint::new(IpAddress::Ipv4(ip_b.address()), 7);
    let mut buf = [0u8; 2048];
    let (rec, elapsed) = memory_rounds("smoltcp-memory", rounds, warmup, count_only, |byte| {
        let _ = socks_a.get_mut::<udp::Socket>(ha).send_slice(&[byte], peer);
        let mut echoed = false;
        // Steady state takes one pass: A sends, B receives and echoes, A
        // receives. The first round takes a few (ARP both ways).
        for _ in 0..16 {
            let mut end_a = MemoryEnd {
                rx: &mut b_to_a,
                tx: &mut a_to_b,
            };
            iface_a.poll(clock.now(), &mut end_a, &mut socks_a);
            let mut end_b = MemoryEnd {
                rx: &mut a_to_b,
                tx: &mut b_to_a,
            };
            iface_b.poll(clock.now(), &mut end_b, &mut socks_b);
            let sb = socks_b.get_mut::<udp::Socket>(hb);
            let mut any = false;
            while let Ok((n, meta)) = sb.recv_slice(&mut buf) {
                let _ = sb.send_slice(&buf[..n], meta.endpoint);
                any = true;
            }
            if any {
                iface_b.poll(clock.now(), &mut end_b, &mut socks_b);
            }
            let mut end_a = MemoryEnd {
                rx: &mut b_to_a,
                tx: &mut a_to_b,
            };
            iface_a.poll(clock.now(), &mut end_a, &mut socks_a);
            let sa = socks_a.get_mut::<udp::Socket>(ha);
            while let Ok((n, _)) = sa.recv_slice(&mut buf) {
                if n == 1 && buf[0] == byte {
                    echoed = true;
                }
            }
            if echoed {
                break;
            }
        }
        echoed
    });
    memory_summary(
        "memory", rounds, warmup, elapsed, &a_to_b, &b_to_a, count_only,
    );
    Ok(rec)
}

/// Runs `warmup + rounds` round trips of `round` (given the round's octet;
/// true when its echo came back), the measured ones timed unless
/// `count_only`: the loop of both in-memory modes. Returns the record and
/// the time the measured rounds took.
fn memory_rounds(
    name: &str,
    rounds: u64,
    warmup: u64,
    count_only: bool,
    mut round: impl FnMut(u8) -> bool,
) -> (RttRecorder, Duration) {
    let mut rec = RttRecorder::new(name);
    let mut start = std::time::Instant::now();
    for r in 0..warmup + rounds {
        if r == warmup {
            start = std::time::Instant::now();
        }
        let t0 = (!count_only).then(std::time::Instant::now);
        let echoed = round(r as u8);
        if r >= warmup {
            match (echoed, t0) {
                (true, Some(t0)) => rec.record(t0.elapsed()),
                (true, None) => {}
                (false, _) => rec.lost(),
            }
        }
    }
    let elapsed = start.elapsed();
    rec.set_elapsed(elapsed);
    (rec, elapsed)
}

/// The summary line of in-memory `mode`: time and frames per round trip,
/// and the frames the wire dropped, if any.
fn memory_summary(
    mode: &str,
    rounds: u64,
    warmup: u64,
    elapsed: Duration,
    a_to_b: &Ring,
    b_to_a: &Ring,
    count_only: bool,
) {
    let dropped = a_to_b.dropped + b_to_a.dropped;
    if dropped > 0 {
        eprintln!("smoltcp {mode}: {dropped} frames dropped on the in-memory wire");
    }
    let total = (warmup + rounds).max(1);
    println!(
        "smoltcp {mode}: {} rounds, {:.0} ns/RT, {:.2} frames/RT{}",
        rounds,
        elapsed.as_nanos() as f64 / rounds.max(1) as f64,
        (a_to_b.carried + b_to_a.carried) as f64 / total as f64,
        if count_only {
            " (count-only: no per-round RTT)"
        } else {
            ""
        }
    );
}

/// Buffer octets each way of the sockets of `memory-tcp`.
const MEMORY_TCP_BUFFER: usize = 64 * 1024;

/// A socket for `memory-tcp`: Nagle off, smoltcp's delayed ACK (10 ms)
/// unless `delayed_ack` is false.
fn memory_tcp_socket(delayed_ack: bool) -> tcp::Socket<'static> {
    let mut sock = tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0u8; MEMORY_TCP_BUFFER]),
        tcp::SocketBuffer::new(vec![0u8; MEMORY_TCP_BUFFER]),
    );
    sock.set_nagle_enabled(false);
    if !delayed_ack {
        sock.set_ack_delay(None);
    }
    sock
}

/// The 1-byte TCP ping-pong of `memory-tcp` (see the module docs): A
/// connects to B's port 7, then each round A writes a byte, B echoes it,
/// A reads it back.
fn memory_tcp(
    rounds: u64,
    warmup: u64,
    count_only: bool,
    delayed_ack: bool,
) -> Result<RttRecorder, Box<dyn std::error::Error>> {
    let mut clock = MemClock::new(count_only);
    let (mut a_to_b, mut b_to_a) = (Ring::new(64), Ring::new(64));
    let (ip_a, ip_b) = (MEMORY_IP_A, MEMORY_IP_B);
    let mut iface_a = iface_on(
        &mut MemoryEnd {
            rx: &mut b_to_a,
            tx: &mut a_to_b,
        },
        [0x02, 0, 0, 0, 0, 1],
        ip_a,
    );
    let mut iface_b = iface_on(
        &mut MemoryEnd {
            rx: &mut a_to_b,
            tx: &mut b_to_a,
        },
        [0x02, 0, 0, 0, 0, 2],
        ip_b,
    );
    let mut socks_a = SocketSet::new(Vec::new());
    let mut socks_b = SocketSet::new(Vec::new());
    let ha = socks_a.add(memory_tcp_socket(delayed_ack));
    let mut server = memory_tcp_socket(delayed_ack);
    server.listen(7)?;
    let hb = socks_b.add(server);
    let peer = IpEndpoint::new(IpAddress::Ipv4(ip_b.address()), 7);
    socks_a
        .get_mut::<tcp::Socket>(ha)
        .connect(iface_a.context(), peer, 40_007)?;
    // One pass of both interfaces; B echoes what it has read.
    let mut pass = |iface_a: &mut Interface,
                    socks_a: &mut SocketSet<'static>,
                    iface_b: &mut Interface,
                    socks_b: &mut SocketSet<'static>,
                    clock: &mut MemClock| {
        let mut end_a = MemoryEnd {
            rx: &mut b_to_a,
            tx: &mut a_to_b,
        };
        iface_a.poll(clock.now(), &mut end_a, socks_a);
        let mut end_b = MemoryEnd {
            rx: &mut a_to_b,
            tx: &mut b_to_a,
        };
        iface_b.poll(clock.now(), &mut end_b, socks_b);
        let sb = socks_b.get_mut::<tcp::Socket>(hb);
        let mut buf = [0u8; 64];
        if let Ok(n) = sb.recv_slice(&mut buf) {
            if n > 0 {
                let _ = sb.send_slice(&buf[..n]);
                iface_b.poll(clock.now(), &mut end_b, socks_b);
            }
        }
        let mut end_a = MemoryEnd {
            rx: &mut b_to_a,
            tx: &mut a_to_b,
        };
        iface_a.poll(clock.now(), &mut end_a, socks_a);
    };
    for _ in 0..64 {
        if socks_a.get::<tcp::Socket>(ha).may_send() {
            break;
        }
        pass(
            &mut iface_a,
            &mut socks_a,
            &mut iface_b,
            &mut socks_b,
            &mut clock,
        );
    }
    if !socks_a.get::<tcp::Socket>(ha).may_send() {
        return Err("smoltcp memory-tcp: the connection did not open".into());
    }
    let (rec, elapsed) = memory_rounds("smoltcp-memory-tcp", rounds, warmup, count_only, |byte| {
        let _ = socks_a.get_mut::<tcp::Socket>(ha).send_slice(&[byte]);
        let mut echoed = false;
        // Steady state takes one pass: A sends, B reads and echoes, A reads.
        for _ in 0..16 {
            pass(
                &mut iface_a,
                &mut socks_a,
                &mut iface_b,
                &mut socks_b,
                &mut clock,
            );
            let mut buf = [0u8; 64];
            if let Ok(n) = socks_a.get_mut::<tcp::Socket>(ha).recv_slice(&mut buf) {
                if n == 1 && buf[0] == byte {
                    echoed = true;
                    break;
                }
            }
        }
        echoed
    });
    memory_summary(
        "memory-tcp",
        rounds,
        warmup,
        elapsed,
        &a_to_b,
        &b_to_a,
        count_only,
    );
    Ok(rec)
}
