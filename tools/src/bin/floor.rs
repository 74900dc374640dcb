//! The floor: the least work a user-space program on a TAP can do per round
//! trip, at both ends. `respond` runs
//! [`pathstack_devices::floor::RawResponder`] (ARP, ICMP echo, UDP echo,
//! rewritten in place); `udp-client` sends hand-built one-byte UDP frames and
//! waits for their echo. Together they give the floor row of
//! `scripts/bench-veth.sh` (raw client ↔ raw responder, symmetric with the
//! other systems, which also run both ends); `respond` alone is the floor of
//! `scripts/bench-ping.sh` (the kernel pings it). `bulk-send` and
//! `bulk-recv` are the TAP floor of `scripts/bench-tcp.sh`: full-size
//! frames through the TAP as fast as it takes or gives them, with no
//! protocol work at all.
//!
//! ```text
//! floor respond    --tap NAME [--netns NS] --ip A [--port P] [--busy-poll]
//! floor udp-client --tap NAME [--netns NS] --ip A --peer B [--peer-mac MAC|arp]
//!                  [--port P] [--rounds N] [--warmup W] [--busy-poll] [--json FILE]
//! floor bulk-send  --tap NAME [--netns NS] --ip A --peer B [--port P] [--seconds S] [--busy-poll] [--gso]
//! floor bulk-recv  --tap NAME [--netns NS] --ip A [--busy-poll]
//! ```
//!
//! `bulk-send` resolves the peer's MAC (ARP), builds one Ethernet/IPv4/UDP
//! frame of 1514 octets (a 1472-octet payload to the peer's port P) and
//! writes it into the TAP for S seconds, each write a pool buffer as
//! pathstack's driver sends; a write the kernel refuses (its queue full) is
//! retried. `bulk-recv` reads every frame the TAP gives, answers ARP for
//! its address (so the kernel can send to it) and counts the frames'
//! octets from the first UDP frame until none has come for a second.
//! Both print `{"frames", "bytes", "seconds", "gbps"}` (Ethernet frame
//! octets, header included) on stdout.
//!
//! `bulk-send --gso` is the floor of a stack with TAP offloads: it opens
//! the TAP with its vnet header and writes one TCP/IPv4 super-segment of
//! 44 × 1448 payload octets per write (63,766-octet frames), with a partial
//! checksum and GSO size 1448, as pathstack's TCP does with `--offload on`
//! — the kernel cuts and checksums them. The segments go to port P of the
//! peer, where no socket listens (the peer answers each with a reset,
//! which nothing reads); the octets are those of the frames written.
//!
//! For example, on the topology of `scripts/netns.sh up --id 42`:
//!
//! ```text
//! taskset -c 0 floor respond --tap psta-42 --netns ps-a-42 --ip 10.77.1.1 &
//! taskset -c 1 floor udp-client --tap pstb-42 --netns ps-b-42 --ip 10.77.1.3 --peer 10.77.1.1 --rounds 20000
//! ```
//!
//! The client resolves the peer's MAC with ARP (RFC 826) unless `--peer-mac`
//! gives it, builds the frame once with etherparse, and per round only sets
//! the payload byte (the round number, modulo 256) and patches the UDP
//! checksum incrementally (RFC 1624). Frames that are not the awaited echo go
//! to a `RawResponder` for the client's own address, so that the client
//! answers ARP and ping like any host would.
#![forbid(unsafe_code)]

use pathstack_tools::rtt;

use clap::{Parser, Subcommand};
use etherparse::{ArpEthIpv4Packet, ArpOperation, PacketBuilder, SlicedPacket};
use pathstack_core::device::Device;
use pathstack_core::{Instant, MsgPool, PoolConfig};
use pathstack_devices::floor::RawResponder;
use pathstack_devices::{TapDevice, TapOptions, WaitMode};
use rtt::{RttRecorder, LOSS_TIMEOUT};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(about = "The raw minimal responder and client on a TAP device (the floor)")]
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
    /// This end's IPv4 address (a prefix length, if given, is ignored).
    #[arg(long, value_parser = parse_ip)]
    ip: Ipv4Addr,
    /// Spin on the device (yielding between empty polls) instead of sleeping in epoll.
    #[arg(long)]
    busy_poll: bool,
}

#[derive(Subcommand)]
enum Mode {
    /// Answer ARP, ping and UDP (echo) for `--ip`, until killed.
    Respond {
        #[command(flatten)]
        tap: TapArgs,
        /// Echo UDP only on this port (default: every port).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Ping-pong one byte over UDP with an echo responder; report RTT percentiles.
    UdpClient {
        #[command(flatten)]
        tap: TapArgs,
        /// The responder's IPv4 address.
        #[arg(long)]
        peer: Ipv4Addr,
        /// The responder's MAC (aa:bb:cc:dd:ee:ff), or `arp` to resolve it.
        #[arg(long, default_value = "arp")]
        peer_mac: String,
        /// The responder's UDP port.
        #[arg(long, default_value_t = 7)]
        port: u16,
        /// Measured round trips.
        #[arg(long, default_value_t = 20_000)]
        rounds: u64,
        /// Round trips before measuring.
        #[arg(long, default_value_t = 1_000)]
        warmup: u64,
        /// Write the result as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Write full-size UDP frames to --peer into the TAP for --seconds.
    BulkSend {
        #[command(flatten)]
        tap: TapArgs,
        /// The receiver's IPv4 address (its MAC is resolved with ARP).
        #[arg(long)]
        peer: Ipv4Addr,
        /// The receiver's UDP port.
        #[arg(long, default_value_t = 9)]
        port: u16,
        /// How long to send.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Write 64 KB TCP super-segments through the vnet header (TSO).
        #[arg(long)]
        gso: bool,
    },
    /// Read and count frames from the TAP until a second passes without one.
    BulkRecv {
        #[command(flatten)]
        tap: TapArgs,
    },
}

fn parse_ip(s: &str) -> Result<Ipv4Addr, String> {
    let addr = s.split('/').next().unwrap_or(s);
    addr.parse()
        .map_err(|e| format!("bad IPv4 address {s:?}: {e}"))
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for byte in &mut mac {
        let part = parts.next().ok_or_else(|| format!("bad MAC {s:?}"))?;
        *byte = u8::from_str_radix(part, 16).map_err(|e| format!("bad MAC {s:?}: {e}"))?;
    }
    if parts.next().is_some() {
        return Err(format!("bad MAC {s:?}: more than 6 bytes"));
    }
    Ok(mac)
}

fn open(args: &TapArgs) -> Result<TapDevice, Box<dyn std::error::Error>> {
    open_with(args, false)
}

fn open_with(args: &TapArgs, offload: bool) -> Result<TapDevice, Box<dyn std::error::Error>> {
    let mut opts = TapOptions::new().offload(offload);
    if let Some(ns) = &args.netns {
        opts = opts.netns(ns.clone());
    }
    Ok(TapDevice::open(&args.tap, opts)?)
}

fn mode(busy_poll: bool) -> WaitMode {
    if busy_poll {
        WaitMode::BusyPoll
    } else {
        WaitMode::Blocking
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match Cli::parse().mode {
        Mode::Respond { tap, port } => respond(&tap, port),
        Mode::UdpClient {
            tap,
            peer,
            peer_mac,
            port,
            rounds,
            warmup,
            json,
        } => {
            let peer_mac = if peer_mac == "arp" {
                None
            } else {
                Some(parse_mac(&peer_mac)?)
            };
            let rec = udp_client(&tap, peer, peer_mac, port, rounds, warmup)?;
            rec.report(json.as_deref())?;
            Ok(())
        }
        Mode::BulkSend {
            tap,
            peer,
            port,
            seconds,
            gso,
        } => bulk_send(&tap, peer, port, seconds, gso),
        Mode::BulkRecv { tap } => bulk_recv(&tap),
    }
}

/// Frame octets in `secs` seconds as the JSON line of the bulk modes.
fn bulk_report(frames: u64, bytes: u64, secs: f64) {
    println!(
        "{}",
        serde_json::json!({
            "frames": frames,
            "bytes": bytes,
            "seconds": secs,
            "gbps": bytes as f64 * 8.0 / secs.max(1e-9) / 1e9,
        })
    );
}

fn bulk_send(
    args: &TapArgs,
    peer: Ipv4Addr,
    port: u16,
    seconds: f64,
    gso: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut dev = open_with(args, gso)?;
    if gso && !dev.offloads().tso4 {
        return Err(format!("{}: the kernel did not accept TSO4 offload", dev.name()).into());
    }
    // The large class holds a super-segment.
    let pool = MsgPool::new(PoolConfig::default());
    let peer_mac = resolve(&mut dev, &pool, args.ip, peer)?;
    let mut frame = Vec::with_capacity(GSO_FRAME);
    let builder =
        PacketBuilder::ethernet2(dev.mac(), peer_mac).ipv4(args.ip.octets(), peer.octets(), 64);
    if gso {
        let payload = vec![0x5au8; GSO_SEGMENTS * GSO_MSS];
        builder
            .tcp(CLIENT_PORT, port, 1, 65535)
            .ack(1)
            .write(&mut frame, &payload)?;
        let tcp_len = (frame.len() - 34) as u16;
        let partial = pseudo_header_sum(args.ip, peer, tcp_len);
        frame[34 + 16..34 + 18].copy_from_slice(&partial.to_be_bytes());
    } else {
        let payload = vec![0x5au8; dev.mtu() - 28];
        builder.udp(CLIENT_PORT, port).write(&mut frame, &payload)?;
    }
    let wait = mode(args.busy_poll);
    let start = std::time::Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let (mut frames, mut bytes) = (0u64, 0u64);
    while std::time::Instant::now() < end {
        let mut msg = pool.alloc_copy(&frame)?;
        if gso {
            msg.anno_mut()
                .set_offload(pathstack_core::device::MsgOffload {
                    tx_csum_offset: 16,
                    tx_gso_size: GSO_MSS as u16,
                    ..Default::default()
                });
        }
        match dev.transmit(msg, Instant::now()) {
            Ok(()) => {
                frames += 1;
                bytes += frame.len() as u64;
            }
            // The kernel's backlog is full: let it drain and write again.
            Err(pathstack_core::DeviceError::QueueFull { .. }) => {
                if wait == WaitMode::BusyPoll {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    bulk_report(frames, bytes, start.elapsed().as_secs_f64());
    Ok(())
}

/// Payload octets per segment the kernel cuts from a super-segment.
const GSO_MSS: usize = 1448;
/// Segments per super-segment: 44 × 1448 + 40 + 14 = 63,766 octets.
const GSO_SEGMENTS: usize = 44;
const GSO_FRAME: usize = GSO_SEGMENTS * GSO_MSS + 54;

/// The folded, uncomplemented sum of the TCP pseudo header (RFC 9293
/// §3.1): what a partial checksum leaves in the field for the device.
fn pseudo_header_sum(src: Ipv4Addr, dst: Ipv4Addr, tcp_len: u16) -> u16 {
    let words = src
        .octets()
        .chunks(2)
        .chain(dst.octets().chunks(2))
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>()
        + 6
        + u32::from(tcp_len);
    let folded = (words & 0xffff) + (words >> 16);
    ((folded & 0xffff) + (folded >> 16)) as u16
}

fn bulk_recv(args: &TapArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut dev = open(args)?;
    let pool = MsgPool::new(PoolConfig::small(64));
    // Answers ARP; its UDP echo is off (port 0 never matches a datagram).
    let mut arp = RawResponder::new(dev.mac(), args.ip).udp_port(Some(0));
    let wait = mode(args.busy_poll);
    println!("floor bulk-recv: ready on {} ({})", dev.name(), args.ip);
    let (mut frames, mut bytes) = (0u64, 0u64);
    let mut first = None;
    let mut last = std::time::Instant::now();
    loop {
        let Some(mut f) = dev.receive_timeout(&pool, wait, Some(Duration::from_secs(1)))? else {
            if first.is_some() {
                break; // a second without a frame: the sender is done
            }
            continue;
        };
        let is_udp =
            f.len() > PAYLOAD && f.as_slice()[12..14] == [0x08, 0x00] && f.as_slice()[IP + 9] == 17;
        if is_udp {
            first.get_or_insert_with(std::time::Instant::now);
            last = std::time::Instant::now();
            frames += 1;
            bytes += f.len() as u64;
        } else if arp.answer_in_place(f.as_mut_slice()).is_ok() {
            dev.transmit(f, Instant::now())?;
        }
    }
    let Some(first) = first else {
        return Err("no UDP frame came".into());
    };
    bulk_report(frames, bytes, (last - first).as_secs_f64());
    Ok(())
}

fn respond(args: &TapArgs, port: Option<u16>) -> Result<(), Box<dyn std::error::Error>> {
    let mut dev = open(args)?;
    let pool = MsgPool::new(PoolConfig::small(64));
    let mut floor = RawResponder::new(dev.mac(), args.ip).udp_port(port);
    let wait = mode(args.busy_poll);
    println!(
        "floor respond: ready on {} ({}, {:02x?})",
        dev.name(),
        args.ip,
        dev.mac()
    );
    loop {
        match floor.serve(&mut dev, &pool, Instant::now()) {
            Ok(pathstack_devices::floor::Served::Idle) => {
                dev.wait(wait, Some(Duration::from_secs(1)))?;
            }
            Ok(_) => {}
            // A refused write (the kernel's backlog is full) loses one
            // answer; the peer notices. Anything else ends the responder.
            Err(pathstack_core::DeviceError::QueueFull { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// One's-complement checksum after one 16-bit word changes from `old` to
/// `new` (RFC 1624, eqn. 3).
fn checksum_update(check: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!check) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Offsets in the Ethernet II / IPv4 (no options) / UDP frame we build.
const IP: usize = 14;
const UDP: usize = IP + 20;
const PAYLOAD: usize = UDP + 8;
/// The client's UDP source port.
const CLIENT_PORT: u16 = 40_007;

/// Resolves `peer`'s MAC: ARP request (RFC 826), retried every 200 ms for 5 s.
fn resolve(
    dev: &mut TapDevice,
    pool: &MsgPool,
    me: Ipv4Addr,
    peer: Ipv4Addr,
) -> Result<[u8; 6], Box<dyn std::error::Error>> {
    let request = ArpEthIpv4Packet {
        operation: ArpOperation::REQUEST,
        sender_mac: dev.mac(),
        sender_ipv4: me.octets(),
        target_mac: [0; 6],
        target_ipv4: peer.octets(),
    };
    let mut frame = Vec::new();
    PacketBuilder::ethernet2(dev.mac(), [0xff; 6])
        .arp(request.into())
        .write(&mut frame)?;
    for _ in 0..25 {
        dev.transmit(pool.alloc_copy(&frame)?, Instant::now())?;
        let deadline = std::time::Instant::now() + Duration::from_millis(200);
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Some(reply) = dev.receive_timeout(pool, WaitMode::Blocking, Some(left))? else {
                break;
            };
            let Ok(p) = SlicedPacket::from_ethernet(reply.as_slice()) else {
                continue;
            };
            let Some(arp) = p.net.as_ref().and_then(|n| n.arp_ref()) else {
                continue;
            };
            if let Ok(a) = arp.to_packet().try_eth_ipv4() {
                if a.operation == ArpOperation::REPLY && a.sender_ipv4 == peer.octets() {
                    return Ok(a.sender_mac);
                }
            }
        }
    }
    Err(format!("no ARP reply from {peer} in 5 s").into())
}

/// Is `f` the echo of our datagram carrying `byte`?
fn is_echo(f: &[u8], me: Ipv4Addr, peer: Ipv4Addr, port: u16, byte: u8) -> bool {
    // Fixed offsets rather than a parser: this is the floor, and anything
    // unexpected (IPv4 options included) just fails the comparison.
    f.len() > PAYLOAD
        && f[12..14] == [0x08, 0x00]
        && f[IP] == 0x45
        && f[IP + 9] == 17
        && f[IP + 12..IP + 16] == peer.octets()
        && f[IP + 16..IP + 20] == me.octets()
        && f[UDP..UDP + 2] == port.to_be_bytes()
        && f[UDP + 2..UDP + 4] == CLIENT_PORT.to_be_bytes()
        && f[UDP + 4..UDP + 6] == 9u16.to_be_bytes()
        && f[PAYLOAD] == byte
}

fn udp_client(
    args: &TapArgs,
    peer: Ipv4Addr,
    peer_mac: Option<[u8; 6]>,
    port: u16,
    rounds: u64,
    warmup: u64,
) -> Result<RttRecorder, Box<dyn std::error::Error>> {
    let mut dev = open(args)?;
    let pool = MsgPool::new(PoolConfig::small(64));
    let me = args.ip;
    let peer_mac = match peer_mac {
        Some(mac) => mac,
        None => resolve(&mut dev, &pool, me, peer)?,
    };
    // Answers ARP and ping for us; never echoes UDP (port 0 is never used).
    let mut host = RawResponder::new(dev.mac(), me).udp_port(Some(0));
    let mut frame = Vec::new();
    PacketBuilder::ethernet2(dev.mac(), peer_mac)
        .ipv4(me.octets(), peer.octets(), 64)
        .udp(CLIENT_PORT, port)
        .write(&mut frame, &[0])?;
    let wait = mode(args.busy_poll);
    let name = if args.busy_poll {
        "floor-busypoll"
    } else {
        "floor"
    };
    let mut rec = RttRecorder::new(name);
    let mut start = std::time::Instant::now();
    for round in 0..warmup + rounds {
        if round == warmup {
            start = std::time::Instant::now();
        }
        let byte = round as u8;
        // The payload byte is the high byte of the last 16-bit word of the
        // UDP checksum's coverage (it sits at an even offset from the UDP
        // header, padded with zero). RFC 768: a computed 0 is sent as 0xffff.
        let old = u16::from(frame[PAYLOAD]) << 8;
        frame[PAYLOAD] = byte;
        let check = u16::from_be_bytes([frame[UDP + 6], frame[UDP + 7]]);
        let mut check = checksum_update(check, old, u16::from(byte) << 8);
        if check == 0 {
            check = 0xffff;
        }
        frame[UDP + 6..UDP + 8].copy_from_slice(&check.to_be_bytes());

        let t0 = std::time::Instant::now();
        let deadline = t0 + LOSS_TIMEOUT;
        match dev.transmit(pool.alloc_copy(&frame)?, Instant::now()) {
            Ok(()) | Err(pathstack_core::DeviceError::QueueFull { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let mut echoed = false;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Some(mut f) = dev.receive_timeout(&pool, wait, Some(left))? else {
                break;
            };
            if is_echo(f.as_slice(), me, peer, port, byte) {
                echoed = true;
                break;
            }
            if host.answer_in_place(f.as_mut_slice()).is_ok() {
                let _ = dev.transmit(f, Instant::now());
            }
        }
        let rtt = t0.elapsed();
        if round >= warmup {
            rec.round(echoed, rtt);
        }
    }
    rec.set_elapsed(start.elapsed());
    Ok(rec)
}
