//! The fused fast form of TCP connection paths (`inline::tcp_fast_rule`)
//! against the modular stages it stands in front of (issue 26, item 8).
//!
//! Two identical hosts — one with its connection's path specialized, one
//! modular — open a connection with a peer the test speaks for (actively,
//! or passively through a listener), on a simulated clock and with TCP's
//! secrets from the same seed ([`HostConfig::tcp_seed`]), so that both
//! choose the same initial sequence numbers and put the same bytes on the
//! wire. Then both live through the same random history: the peer's
//! segments (in-order data, pure and duplicate ACKs, window updates, SACK
//! blocks, old and future acknowledgements, retransmitted, out-of-order
//! and out-of-window data, old or missing timestamps, URG, PSH, FIN, RST,
//! SYN, ECN flags), made wrong on the way (truncated, bytes flipped, bad
//! checksums, IP and TCP header fields changed under a good checksum, IP
//! options, fragments, wrong ports, addresses and MACs, padding), ICMP
//! errors quoting the connection (fragmentation needed), the
//! application's sends, reads, shutdown and `TCP_NODELAY`, ARP replies and
//! requests that move the peer, and time passing far enough for the
//! timers and for the neighbour entry to expire. After every step both hosts must have
//! put the same frames on the wire byte for byte, delivered the same bytes
//! to the application with the same results, hold the same control block
//! (as far as its accessors show it), and counted the same on the
//! path and every module (drops with their reasons): the fast form
//! handles exactly what the stages would, or declines. The modular host's
//! application writes the way writes went before the stage's own send
//! (its segment emitted into the send lane, `Stack::with_stage_at`), the
//! specialized host's through the socket, whose predicted segment the
//! stage hands to `Stack::send_from_stage`: the same bytes again.
//!
//! The peer's segments are made relative to the connection as the first
//! host holds it (its RCV.NXT, SND.UNA and what it sent), so that most of
//! them are the ones header prediction and the fast form are for; every
//! clean segment of the connection must have gone through the fast form,
//! so the comparison is never vacuous.

use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::{Device, Duration, Instant, PathId};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::{inline, TcpConnStage};
use pathstack::inet::tcp::{Shutdown, State, TcpConfig};
use pathstack::inet::MacAddr;
use pathstack::socket::ready;
use pathstack::socket::{SocketError, TcpStream};
use proptest::prelude::*;

#[path = "support/frames.rs"]
mod frames;
use frames::{checksum, ipv4_frame};

const US: [u8; 4] = [10, 0, 0, 1];
const PEER: [u8; 4] = [10, 0, 0, 2];
const OTHER: [u8; 4] = [10, 0, 0, 3];
const MAC_US: [u8; 6] = [2, 0, 0, 0, 0, 1];
const PEER_MACS: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 0x22]];
/// The connection: our port, the peer's.
const PORTS: (u16, u16) = (40000, 80);
/// TCP's secrets on both hosts.
const SEED: u64 = 0x5eed;

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;
const ECE: u8 = 0x40;
const CWR: u8 = 0x80;

/// The host under test, the wire end the test talks to it through, its
/// connection, and what its application has been told.
struct World {
    host: Host,
    wire: MemoryEnd,
    stream: TcpStream,
    path: PathId,
    now: Instant,
    /// The results of the application's calls since the last look.
    app: Vec<String>,
    /// Frames the host sent that the test read before `observe`.
    sent: Vec<Vec<u8>>,
    /// The application writes through the send lane, as before the
    /// stage's own send (the modular, reference host).
    lane: bool,
}

impl World {
    /// The host, with the connection open: actively (its SYN on the
    /// wire), or passively when `passive` is the peer's offer (the
    /// handshake done: the peer's SYN, the host's SYN-ACK, which stays on
    /// the wire, and the peer's ACK; the connection accepted). The
    /// specialized host's connection path is specialized as soon as the
    /// application holds it.
    fn new(specialized: bool, cfg: TcpConfig, passive: Option<&Offer>) -> World {
        let (a, mut wire) = memory_pair(MemoryConfig::default());
        let mut c = HostConfig::parse("10.0.0.1/24").unwrap();
        c.mac = Some(MacAddr(MAC_US));
        c.tcp_seed = Some(SEED);
        // The modular host is the reference; the specialized one gets its
        // rule below, at a known point of the connection.
        c.specialize = false;
        let mut host = Host::new(c, a).unwrap();
        let now = Instant::ZERO + Duration::from_secs(1);
        host.set_manual_clock(now);
        let to_host = |host: &mut Host, wire: &mut MemoryEnd, f: &[u8]| {
            let m = host.stack().pool().alloc_copy(f).unwrap();
            wire.transmit(m, now).unwrap();
            host.stack_mut().poll(now);
        };
        // The peer is known before the SYN goes.
        to_host(&mut host, &mut wire, &arp_reply(PEER_MACS[0], PEER));
        let mut sent = Vec::new();
        let stream = match passive {
            None => {
                let peer = std::net::SocketAddr::from((PEER, PORTS.1));
                host.tcp()
                    .connect_with(("0.0.0.0", PORTS.0), peer, cfg)
                    .unwrap()
            }
            Some(offer) => {
                let l = host
                    .tcp()
                    .listen_with(("0.0.0.0", PORTS.0), 4, cfg)
                    .unwrap();
                to_host(&mut host, &mut wire, &Peer::syn(offer));
                // The SYN-ACK is kept for `observe`.
                let pool = host.stack().pool().clone();
                while let Some(f) = wire.receive(&pool, now).unwrap() {
                    sent.push(f.as_slice().to_vec());
                }
                let synack = sent.iter().find(|f| parse(f).is_some());
                let peer = Peer::new(synack.expect("a SYN-ACK"), &cfg, offer);
                let ack = peer.segment(&Seg::ack(), &Mutation::None);
                to_host(&mut host, &mut wire, &ack);
                ready(l.accept(&mut host))
                    .unwrap()
                    .expect("the connection")
                    .0
            }
        };
        let path = host.tcp().path_id(&stream).unwrap();
        if specialized {
            let s = host.stack_mut();
            s.add_rule(inline::tcp_fast_rule::<DriverStage>(DRIVER_SPEC.name));
            assert_eq!(
                s.path_optimize(path).unwrap(),
                ["specialize TCP/IP/ARP/ETH/DRIVER"]
            );
            assert!(s.path(path).unwrap().is_specialized());
        }
        let mut w = World {
            host,
            wire,
            stream,
            path,
            now,
            app: Vec::new(),
            sent,
            lane: !specialized,
        };
        w.poll(Duration::from_micros(10));
        w
    }

    /// The application's write the way it went before the stage's own
    /// send (`Stack::send_from_stage`, which the socket's write takes):
    /// the connection's stage reached with `Stack::with_stage_at`, its
    /// segment emitted into the send lane. The reference host writes so,
    /// the other through the socket, and both must put the same bytes on
    /// the wire. (A write the stage cannot take — empty, or the path
    /// gone — goes through the socket, for the socket's own answer.)
    fn write_through_lane(&mut self, data: &[u8]) -> std::io::Result<Option<usize>> {
        let at = self.host.stack().stage_ref::<TcpConnStage>(self.path);
        if let (Some(at), false) = (at, data.is_empty()) {
            let stack = self.host.stack_mut();
            stack.set_now(self.now);
            let r = stack.with_stage_at(at, |c, cx| {
                let r = c.write(data);
                c.after_write(cx);
                r
            });
            if let Some(r) = r {
                return r.map_err(|e| SocketError::Tcp(e).into());
            }
        }
        ready(self.stream.write(&mut self.host, data))
    }

    /// Advances the clock by `d` and polls.
    fn poll(&mut self, d: Duration) {
        self.now = self.now + d;
        self.host.set_manual_clock(self.now);
        self.host.stack_mut().poll(self.now);
    }

    fn frame(&mut self, bytes: &[u8]) {
        let m = self.host.stack().pool().alloc_copy(bytes).unwrap();
        self.wire.transmit(m, self.now).unwrap();
    }

    fn apply(&mut self, step: &Step, peer: &Peer) {
        match step {
            Step::Seg(seg, mutation) => {
                let f = peer.segment(seg, mutation);
                match mutation {
                    Mutation::Split { at, reversed } => {
                        let [a, b] = split(&f, *at);
                        let (a, b) = if *reversed { (b, a) } else { (a, b) };
                        self.frame(&a);
                        self.frame(&b);
                    }
                    _ => self.frame(&f),
                }
            }
            Step::Frame(f) => self.frame(f),
            Step::Icmp { code, mtu, at } => {
                let f = peer.unreachable(*code, *mtu, *at);
                self.frame(&f);
            }
            Step::Send(len) => {
                let data: Vec<u8> = (0..*len).map(|i| (i % 251) as u8).collect();
                let r = if self.lane {
                    self.write_through_lane(&data)
                } else {
                    ready(self.stream.write(&mut self.host, &data))
                };
                self.app.push(format!("send {len}: {r:?}"));
            }
            Step::Recv(max) => {
                let mut buf = vec![0u8; *max];
                let r = ready(self.stream.read(&mut self.host, &mut buf));
                let got = match r {
                    Ok(Some(n)) => format!("{:?}", &buf[..n]),
                    other => format!("{other:?}"),
                };
                self.app.push(format!("recv {max}: {got}"));
            }
            Step::Shutdown => {
                let r = self.host.tcp().shutdown(&self.stream, Shutdown::Write);
                self.app.push(format!("shutdown: {r:?}"));
            }
            Step::Nodelay(on) => {
                let r = self.host.tcp().set_nodelay(&self.stream, *on);
                self.app.push(format!("nodelay: {r:?}"));
            }
            Step::Wait(ms) => self.poll(Duration::from_millis(*ms)),
        }
        self.poll(Duration::from_micros(10));
    }

    /// `f` of the connection's stage; `None` once its path is gone (a SYN
    /// in TIME-WAIT ends it, RFC 6191).
    fn conn<R>(&self, f: impl FnOnce(&TcpConnStage) -> R) -> Option<R> {
        let p = self.host.stack().path(self.path)?;
        let st = (0..p.len())
            .filter_map(|i| p.stage(i))
            .find_map(|s| (s as &dyn std::any::Any).downcast_ref::<TcpConnStage>())?;
        Some(f(st))
    }

    /// Everything observable: the frames out, what the application was
    /// told, the control block, and every counter.
    fn observe(&mut self) -> Observed {
        let pool = self.host.stack().pool();
        let mut frames = std::mem::take(&mut self.sent);
        while let Some(f) = self.wire.receive(pool, self.now).unwrap() {
            frames.push(f.as_slice().to_vec());
        }
        let tcb = self.conn(|c| {
            let t = c.tcb();
            format!(
                "{:?} una {:?} nxt {:?} rcv {:?} wnd {} cwnd {} smss {} srtt {:?} rto {:?} \
                 ext {:?} urg {:?} queues {} {} {} readable {} error {:?} at {:?} {:?} {:?}",
                t.state(),
                t.snd_una(),
                t.snd_nxt(),
                t.rcv_nxt(),
                t.snd_wnd(),
                t.cwnd(),
                t.smss(),
                t.srtt(),
                t.rto(),
                t.extensions(),
                t.urgent_mark(),
                t.recv_queue(),
                t.send_queue(),
                t.send_space(),
                t.is_readable(),
                t.error(),
                t.poll_at(),
                t.stats(),
                t.recv_stats()
            )
        });
        let s = self.host.stack();
        let mut counters = vec![s
            .path(self.path)
            .map(|p| {
                let st = p.stats();
                format!(
                    "in {:?} out {:?} consumed {} drops {:?}",
                    st.msgs_in, st.msgs_out, st.consumed, st.drops
                )
            })
            .unwrap_or_default()];
        for m in 0.. {
            let id = pathstack::core::ModuleId(m);
            let Some(stats) = s.module_stats(id) else {
                break;
            };
            counters.push(format!("{stats:?} {:?}", s.module_drops(id)));
        }
        Observed {
            frames,
            app: std::mem::take(&mut self.app),
            tcb,
            counters,
        }
    }

    /// Frames taken up by the fast form so far; `None` once the path is
    /// gone.
    fn fast_in(&self) -> Option<u64> {
        let p = self.host.stack().path(self.path)?;
        Some(p.fast_hits().map_or(0, |h| h[1]))
    }
}

#[derive(Debug, PartialEq)]
struct Observed {
    frames: Vec<Vec<u8>>,
    app: Vec<String>,
    tcb: Option<String>,
    counters: Vec<String>,
}

#[derive(Clone, Debug)]
enum Step {
    /// A segment of the peer's, then `Mutation`.
    Seg(Seg, Mutation),
    /// A frame as it is (ARP).
    Frame(Vec<u8>),
    /// An ICMP destination unreachable (`code`; 4, fragmentation needed,
    /// with next-hop MTU `mtu`, RFC 1191) quoting one of the host's
    /// segments: the one at SND.UNA + `at` (modulo the flight, or past it).
    Icmp { code: u8, mtu: u16, at: u32 },
    /// The application writes `len` bytes.
    Send(usize),
    /// The application reads up to `len` bytes.
    Recv(usize),
    /// The application shuts the writing side (FIN).
    Shutdown,
    /// `TCP_NODELAY`.
    Nodelay(bool),
    /// Time passes: delayed ACKs, retransmissions, probes, TIME-WAIT, the
    /// neighbour entry's expiry (a minute).
    Wait(u64),
}

/// A segment of the peer's, relative to the connection as it stands.
#[derive(Clone, Debug)]
struct Seg {
    seq: SeqAt,
    len: usize,
    ack: AckAt,
    flags: u8,
    /// The window field (the peer's scaled units); `None` keeps the last
    /// one, as a steady peer does (header prediction wants it unchanged).
    wnd: Option<u16>,
    ts: TsAt,
    /// A SACK block over part of what the host has sent, if SACK was
    /// agreed.
    sack: Option<(u32, u32)>,
    urgent: u16,
}

impl Seg {
    /// A pure ACK of everything, the window and the timestamps as before:
    /// the steady peer's.
    fn ack() -> Seg {
        Seg {
            seq: SeqAt::Next,
            len: 0,
            ack: AckAt::All,
            flags: 0,
            wnd: None,
            ts: TsAt::Fresh,
            sack: None,
            urgent: 0,
        }
    }
}

/// Where the segment's data starts.
#[derive(Clone, Copy, Debug)]
enum SeqAt {
    /// RCV.NXT: in order.
    Next,
    /// Before RCV.NXT: a retransmission (of data, or of nothing).
    Old(u32),
    /// After RCV.NXT: out of order, a hole before it.
    Ahead(u32),
    /// Far outside the window.
    Far(u32),
}

/// What the segment acknowledges.
#[derive(Clone, Copy, Debug)]
enum AckAt {
    /// SND.UNA: a duplicate (or the first) acknowledgement.
    Una,
    /// Part of what is in flight.
    Part(u32),
    /// All the host has sent.
    All,
    /// Older than SND.UNA.
    Old(u32),
    /// Beyond what the host has sent.
    Future(u32),
    /// No ACK flag.
    None,
}

/// The timestamp option (when timestamps were agreed).
#[derive(Clone, Copy, Debug)]
enum TsAt {
    /// The peer's clock moved on; echoes the host's latest.
    Fresh,
    /// The same TSval as the last segment.
    Same,
    /// Older than the last (PAWS).
    Old,
    /// Left out.
    Absent,
}

/// How a segment's frame is made wrong.
#[derive(Clone, Debug)]
enum Mutation {
    None,
    Flip {
        at: usize,
        xor: u8,
    },
    Truncate(usize),
    Pad(usize),
    /// IP options: a no-op and an end of list, or four ends of list
    /// (zeros: the first 20 bytes' sum then verifies alone).
    IpOptions {
        zeros: bool,
    },
    Fragment {
        more: bool,
        offset: u16,
    },
    /// The datagram sent as two fragments, the first of `8 * at` bytes
    /// (at least 8, fewer than all), the second first when `reversed`:
    /// IP reassembles them into the whole segment (RFC 791 §3.2).
    Split {
        at: usize,
        reversed: bool,
    },
    TcpChecksum,
    SrcPort(u16),
    DstPort(u16),
    SrcIp([u8; 4]),
    DstIp([u8; 4]),
    DstMac([u8; 6]),
    /// The ECN bits of the IP header (RFC 3168 CE).
    Ecn(u8),
    /// A byte of the IP header changed, its checksum made right again:
    /// what the fast form's own checks of the header (length, version,
    /// flags, protocol) must agree with IP's on.
    IpField {
        at: usize,
        xor: u8,
    },
    /// A byte of the TCP header changed, its checksum made right again.
    TcpField {
        at: usize,
        xor: u8,
    },
}

/// The peer the test speaks for: what it sent, what it saw of the host,
/// and the connection as the host holds it.
#[derive(Clone, Debug, Default)]
struct Peer {
    mac: [u8; 6],
    iss: u32,
    /// The host's SYN: its ISS and what it offered.
    host_iss: u32,
    /// What the handshake agreed.
    ts: bool,
    sack: bool,
    /// The peer's timestamp clock.
    tsval: u32,
    /// The window field last sent.
    wnd: u16,
    /// The host's latest TSval.
    host_ts: u32,
    /// The end of what the host has sent (SND.MAX).
    host_max: u32,
    /// The connection as the first host holds it.
    rcv_nxt: u32,
    snd_una: u32,
}

/// An ARP reply (RFC 826) telling us that `ip` is at `mac`.
fn arp_reply(mac: [u8; 6], ip: [u8; 4]) -> Vec<u8> {
    arp(2, MAC_US, mac, ip)
}

/// An ARP packet (RFC 826, `op` 1 request, 2 reply) from `ip` at `mac`,
/// to `dst_mac`, asking for or answering us.
fn arp(op: u8, dst_mac: [u8; 6], mac: [u8; 6], ip: [u8; 4]) -> Vec<u8> {
    frames::arp(op, dst_mac, mac, ip, MAC_US, US)
}

/// A TCP segment from the peer as the wire would carry it, then
/// `mutation`.
#[allow(clippy::too_many_arguments)]
fn tcp_frame(
    src_mac: [u8; 6],
    (seq, ack): (u32, u32),
    flags: u8,
    wnd: u16,
    urgent: u16,
    options: &[u8],
    payload: &[u8],
    mutation: &Mutation,
) -> Vec<u8> {
    let (mut sport, mut dport) = (PORTS.1, PORTS.0);
    match mutation {
        Mutation::SrcPort(p) => sport = *p,
        Mutation::DstPort(p) => dport = *p,
        _ => {}
    }
    let mut opts = options.to_vec();
    while opts.len() % 4 != 0 {
        opts.push(0);
    }
    let doff = 20 + opts.len();
    let mut tcp = Vec::new();
    tcp.extend_from_slice(&sport.to_be_bytes());
    tcp.extend_from_slice(&dport.to_be_bytes());
    tcp.extend_from_slice(&seq.to_be_bytes());
    tcp.extend_from_slice(&ack.to_be_bytes());
    tcp.push(((doff / 4) as u8) << 4);
    tcp.push(flags);
    tcp.extend_from_slice(&wnd.to_be_bytes());
    tcp.extend_from_slice(&[0, 0]);
    tcp.extend_from_slice(&urgent.to_be_bytes());
    tcp.extend_from_slice(&opts);
    tcp.extend_from_slice(payload);
    let src = match mutation {
        Mutation::SrcIp(a) => *a,
        _ => PEER,
    };
    let dst = match mutation {
        Mutation::DstIp(a) => *a,
        _ => US,
    };
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
    if let Mutation::TcpField { at, xor } = mutation {
        tcp[at % 20] ^= (*xor).max(1);
    }
    let mut c = checksum(&[&pseudo, &tcp]);
    if let Mutation::TcpChecksum = mutation {
        c ^= 0x0101;
    }
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    let ip_options: &[u8] = match mutation {
        Mutation::IpOptions { zeros: false } => &[1, 1, 1, 0],
        Mutation::IpOptions { zeros: true } => &[0, 0, 0, 0],
        _ => &[],
    };
    let ihl = 20 + ip_options.len();
    let mut ip = vec![0u8; ihl];
    ip[0] = 0x40 | (ihl / 4) as u8;
    if let Mutation::Ecn(e) = mutation {
        ip[1] = e & 3;
    }
    ip[2..4].copy_from_slice(&((ihl + tcp.len()) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    let frag = match mutation {
        Mutation::Fragment { more, offset } => (u16::from(*more) << 13) | (offset & 0x1fff),
        // DF, as a TCP sender sets it (RFC 1191).
        _ => 0x4000,
    };
    ip[6..8].copy_from_slice(&frag.to_be_bytes());
    ip[8] = 64;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    ip[20..].copy_from_slice(ip_options);
    if let Mutation::IpField { at, xor } = mutation {
        // Not the checksum itself (that is `Flip`'s).
        let at = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15, 16, 17, 18, 19][at % 18];
        ip[at] ^= (*xor).max(1);
    }
    let c = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let dst_mac = match mutation {
        Mutation::DstMac(m) => *m,
        _ => MAC_US,
    };
    let mut f = ipv4_frame(dst_mac, src_mac, &ip, &tcp);
    match mutation {
        Mutation::Flip { at, xor } => {
            let i = at % f.len();
            f[i] ^= (*xor).max(1);
        }
        Mutation::Truncate(n) => f.truncate(n % f.len()),
        Mutation::Pad(n) => f.resize((f.len() + n).min(1514), 0xee),
        _ => {}
    }
    f
}

/// Frame `f` (an IPv4 datagram without options) as two fragments, the
/// first carrying `8 * at` bytes of its payload, or the largest multiple of
/// 8 short of all of it.
fn split(f: &[u8], at: usize) -> [Vec<u8>; 2] {
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    let payload = &f[34..14 + total];
    let cut = (8 * at).min((payload.len() - 1) / 8 * 8).max(8);
    let piece = |data: &[u8], offset: usize, more: bool| {
        let mut g = f[..34].to_vec();
        g[16..18].copy_from_slice(&((20 + data.len()) as u16).to_be_bytes());
        let frag = (u16::from(more) << 13) | (offset / 8) as u16;
        g[20..22].copy_from_slice(&frag.to_be_bytes());
        g[24..26].copy_from_slice(&[0, 0]);
        let c = checksum(&[&g[14..34]]);
        g[24..26].copy_from_slice(&c.to_be_bytes());
        g.extend_from_slice(data);
        g.resize(g.len().max(60), 0);
        g
    };
    [
        piece(&payload[..cut], 0, true),
        piece(&payload[cut..], cut, false),
    ]
}

/// What the peer reads of one of the host's frames: a segment of the
/// connection, as (seq, flags, payload length, TSval); `None` for
/// anything else.
fn parse(f: &[u8]) -> Option<(u32, u8, usize, Option<u32>)> {
    if f.len() < 54 || f[12..14] != [0x08, 0x00] || f[23] != 6 {
        return None;
    }
    let ihl = usize::from(f[14] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    let t = &f[14 + ihl..14 + total];
    // The connection's own (not a reset TCP sent for a stray).
    if t[0..4] != [PORTS.0.to_be_bytes(), PORTS.1.to_be_bytes()].concat() {
        return None;
    }
    let seq = u32::from_be_bytes(t[4..8].try_into().unwrap());
    let doff = usize::from(t[12] >> 4) * 4;
    let flags = t[13];
    let mut ts = None;
    let mut o = &t[20..doff];
    while let Some(&kind) = o.first() {
        match kind {
            0 => break,
            1 => o = &o[1..],
            _ => {
                let len = usize::from(*o.get(1)?).max(2);
                if kind == 8 && len == 10 {
                    ts = Some(u32::from_be_bytes(o[2..6].try_into().unwrap()));
                }
                o = o.get(len..)?;
            }
        }
    }
    Some((seq, flags, t.len() - doff, ts))
}

impl Peer {
    /// The peer after the host's SYN (an active open) or SYN-ACK (a
    /// passive one, answering [`Peer::syn`]), `host` the host's options
    /// and `offer` the peer's: the extensions both offered are agreed.
    fn new(host_syn: &[u8], host: &TcpConfig, offer: &Offer) -> Peer {
        let (seq, flags, _, ts) = parse(host_syn).expect("a SYN");
        assert_eq!(flags & SYN, SYN, "the host's SYN");
        Peer {
            mac: PEER_MACS[0],
            iss: offer.iss,
            host_iss: seq,
            ts: host.timestamps && offer.ts,
            sack: host.sack && offer.sack,
            tsval: 1000,
            wnd: offer.wnd,
            host_ts: ts.unwrap_or(0),
            host_max: seq.wrapping_add(1),
            rcv_nxt: offer.iss.wrapping_add(1),
            snd_una: seq,
        }
    }

    /// The options of the peer's SYN or SYN-ACK: those of `offer`, as far
    /// as `host` offered them.
    fn syn_options(offer: &Offer, host: &TcpConfig, tsecr: u32) -> Vec<u8> {
        let mut o = vec![2, 4];
        o.extend_from_slice(&offer.mss.to_be_bytes());
        if let (true, Some(s)) = (host.window_scaling, offer.shift) {
            o.extend_from_slice(&[1, 3, 3, s]);
        }
        if host.sack && offer.sack {
            o.extend_from_slice(&[1, 1, 4, 2]);
        }
        if host.timestamps && offer.ts {
            o.extend_from_slice(&[1, 1, 8, 10]);
            o.extend_from_slice(&1000u32.to_be_bytes());
            o.extend_from_slice(&tsecr.to_be_bytes());
        }
        o
    }

    /// The peer's SYN opening a connection to the listening host, with
    /// everything `offer` holds.
    fn syn(offer: &Offer) -> Vec<u8> {
        let all = TcpConfig::default();
        tcp_frame(
            PEER_MACS[0],
            (offer.iss, 0),
            SYN,
            offer.wnd,
            0,
            &Peer::syn_options(offer, &all, 0),
            &[],
            &Mutation::None,
        )
    }

    /// The SYN-ACK answering the host's SYN.
    fn syn_ack(&self, host: &TcpConfig, offer: &Offer) -> Vec<u8> {
        tcp_frame(
            self.mac,
            (self.iss, self.host_iss.wrapping_add(1)),
            SYN | ACK,
            offer.wnd,
            0,
            &Peer::syn_options(offer, host, self.host_ts),
            &[],
            &Mutation::None,
        )
    }

    /// Learns from the host's frames and its control block.
    fn learn(&mut self, frames: &[Vec<u8>], w: &World) {
        for f in frames {
            if let Some((seq, flags, len, ts)) = parse(f) {
                let end = seq
                    .wrapping_add(len as u32)
                    .wrapping_add(u32::from(flags & (SYN | FIN) != 0));
                if end.wrapping_sub(self.host_max) as i32 > 0 {
                    self.host_max = end;
                }
                if let Some(ts) = ts {
                    self.host_ts = ts;
                }
            }
        }
        if let Some((rcv_nxt, snd_una)) = w.conn(|c| (c.tcb().rcv_nxt().0, c.tcb().snd_una().0)) {
            self.rcv_nxt = rcv_nxt;
            self.snd_una = snd_una;
        }
    }

    /// The frame of `seg` made wrong by `mutation`.
    fn segment(&self, seg: &Seg, mutation: &Mutation) -> Vec<u8> {
        let seq = match seg.seq {
            SeqAt::Next => self.rcv_nxt,
            SeqAt::Old(k) => self.rcv_nxt.wrapping_sub(k),
            SeqAt::Ahead(k) => self.rcv_nxt.wrapping_add(k),
            SeqAt::Far(k) => self.rcv_nxt.wrapping_add(k),
        };
        let flight = self.host_max.wrapping_sub(self.snd_una);
        let (ack, mut flags) = match seg.ack {
            AckAt::Una => (self.snd_una, ACK),
            AckAt::Part(k) => (self.snd_una.wrapping_add(k % flight.max(1)), ACK),
            AckAt::All => (self.host_max, ACK),
            AckAt::Old(k) => (self.snd_una.wrapping_sub(k), ACK),
            AckAt::Future(k) => (self.host_max.wrapping_add(k), ACK),
            AckAt::None => (0, 0),
        };
        flags |= seg.flags;
        let mut o = Vec::new();
        if self.ts {
            let val = match seg.ts {
                TsAt::Fresh => Some(self.tsval.wrapping_add(1)),
                TsAt::Same => Some(self.tsval),
                TsAt::Old => Some(self.tsval.wrapping_sub(100_000)),
                TsAt::Absent => None,
            };
            if let Some(v) = val {
                o.extend_from_slice(&[1, 1, 8, 10]);
                o.extend_from_slice(&v.to_be_bytes());
                o.extend_from_slice(&self.host_ts.to_be_bytes());
            }
        }
        if let (true, Some((a, b))) = (self.sack, seg.sack) {
            if flight > 1 {
                let from = self.snd_una.wrapping_add(1 + a % (flight - 1));
                let to = from.wrapping_add(1 + b % self.host_max.wrapping_sub(from).max(1));
                o.extend_from_slice(&[1, 1, 5, 10]);
                o.extend_from_slice(&from.to_be_bytes());
                o.extend_from_slice(&to.to_be_bytes());
            }
        }
        // Within the MSS the host announced (1460), room left for IP
        // options: the wire carries no frame over 1514 bytes.
        let len = seg.len.min(1456 - o.len());
        let payload: Vec<u8> = (0..len)
            .map(|i| (seq.wrapping_add(i as u32) % 253) as u8)
            .collect();
        tcp_frame(
            self.mac,
            (seq, ack),
            flags,
            seg.wnd.unwrap_or(self.wnd),
            seg.urgent,
            &o,
            &payload,
            mutation,
        )
    }

    /// An ICMP destination unreachable from the peer quoting the host's
    /// segment at SND.UNA + `at` (RFC 792; RFC 5927 §4.1: TCP checks the
    /// quoted sequence number).
    fn unreachable(&self, code: u8, mtu: u16, at: u32) -> Vec<u8> {
        let flight = self.host_max.wrapping_sub(self.snd_una);
        let seq = self.snd_una.wrapping_add(at % (flight + 2));
        let mut quote = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
        quote.extend_from_slice(&US);
        quote.extend_from_slice(&PEER);
        quote.extend_from_slice(&PORTS.0.to_be_bytes());
        quote.extend_from_slice(&PORTS.1.to_be_bytes());
        quote.extend_from_slice(&seq.to_be_bytes());
        let mut icmp = vec![3, code, 0, 0, 0, 0];
        icmp.extend_from_slice(&mtu.to_be_bytes());
        icmp.extend_from_slice(&quote);
        let c = checksum(&[&icmp]);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 1, 0, 0];
        ip.extend_from_slice(&PEER);
        ip.extend_from_slice(&US);
        ip[2..4].copy_from_slice(&((20 + icmp.len()) as u16).to_be_bytes());
        let c = checksum(&[&ip]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        ipv4_frame(MAC_US, self.mac, &ip, &icmp)
    }

    /// The peer's state after `step` went to the hosts.
    fn after(&mut self, step: &Step) {
        match step {
            Step::Seg(seg, _) => {
                if matches!(seg.ts, TsAt::Fresh) {
                    self.tsval = self.tsval.wrapping_add(1);
                }
                self.wnd = seg.wnd.unwrap_or(self.wnd);
            }
            Step::Frame(f) if f[12..14] == [0x08, 0x06] => {
                self.mac.copy_from_slice(&f[6..12]);
            }
            _ => {}
        }
    }
}

/// What the peer takes up of the host's SYN.
#[derive(Clone, Debug)]
struct Offer {
    mss: u16,
    shift: Option<u8>,
    sack: bool,
    ts: bool,
    wnd: u16,
    iss: u32,
}

/// A peer that offers everything (window scaling, SACK, timestamps): the
/// connection of the steady-exchange tests.
const STEADY: Offer = Offer {
    mss: 1460,
    shift: Some(7),
    sack: true,
    ts: true,
    wnd: 65535,
    iss: 77,
};

/// The peer's next in-order segment of `len` octets with `flags` (and
/// ACK), acknowledging all the host sent, with a fresh timestamp.
fn in_order(len: usize, flags: u8) -> Step {
    Step::Seg(
        Seg {
            seq: SeqAt::Next,
            len,
            ack: AckAt::All,
            flags,
            wnd: None,
            ts: TsAt::Fresh,
            sack: None,
            urgent: 0,
        },
        Mutation::None,
    )
}

/// Two hosts, one specialized, with the connection established to the
/// same peer (opened by the hosts, or by the peer when `passive`), and
/// the peer.
fn established(cfg: TcpConfig, offer: &Offer, passive: bool) -> (World, World, Peer) {
    let mut fused = World::new(true, cfg, passive.then_some(offer));
    let mut modular = World::new(false, cfg, passive.then_some(offer));
    let (f, m) = (fused.observe(), modular.observe());
    assert_eq!(f, m, "the SYN or SYN-ACK");
    let syn = f.frames.iter().find(|f| parse(f).is_some()).expect("a SYN");
    let mut peer = Peer::new(syn, &cfg, offer);
    if passive {
        // What the peer's ACK of the SYN-ACK did.
        peer.after(&Step::Seg(Seg::ack(), Mutation::None));
    } else {
        let synack = peer.syn_ack(&cfg, offer);
        for w in [&mut fused, &mut modular] {
            w.frame(&synack);
            w.poll(Duration::from_micros(10));
        }
    }
    let (f, m) = (fused.observe(), modular.observe());
    assert_eq!(f, m, "after the handshake");
    assert_eq!(
        fused.host.tcp().state(&fused.stream).unwrap(),
        State::Established
    );
    peer.learn(&f.frames, &fused);
    (fused, modular, peer)
}

/// Runs `steps` on both hosts, comparing after each; returns the number of
/// clean segments of the connection (each must have taken the fast form).
fn run(fused: &mut World, modular: &mut World, peer: &mut Peer, steps: &[Step]) -> u64 {
    let mut clean = 0;
    for (i, s) in steps.iter().enumerate() {
        let before = fused.fast_in();
        fused.apply(s, peer);
        modular.apply(s, peer);
        let (f, m) = (fused.observe(), modular.observe());
        assert_eq!(f, m, "after step {i} ({s:?})");
        if let (Step::Seg(_, Mutation::None | Mutation::Pad(_) | Mutation::Ecn(_)), Some(b)) =
            (s, before)
        {
            // Whole, for this connection, from its peer: the fast form's
            // (unless it ended the path).
            if let Some(after) = fused.fast_in() {
                assert_eq!(after, b + 1, "step {i} ({s:?}) took the fast form");
                clean += 1;
            }
        }
        peer.learn(&f.frames, fused);
        peer.after(s);
    }
    if let Some(p) = modular.host.stack().path(modular.path) {
        assert_eq!(p.fast_hits(), None);
    }
    clean
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        20 => Just(Mutation::None),
        2 => (0usize..120, any::<u8>()).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        1 => (0usize..120).prop_map(Mutation::Truncate),
        1 => (1usize..40).prop_map(Mutation::Pad),
        1 => any::<bool>().prop_map(|zeros| Mutation::IpOptions { zeros }),
        1 => (1usize..200, any::<bool>()).prop_map(|(at, reversed)| Mutation::Split { at, reversed }),
        1 => (any::<bool>(), 0u16..4).prop_map(|(more, offset)| Mutation::Fragment { more, offset }),
        1 => Just(Mutation::TcpChecksum),
        1 => prop_oneof![Just(81u16), Just(PORTS.0)].prop_map(Mutation::SrcPort),
        1 => prop_oneof![Just(40001u16), Just(PORTS.1)].prop_map(Mutation::DstPort),
        1 => prop_oneof![Just(OTHER), Just([10, 0, 0, 255]), Just([127, 0, 0, 1])]
            .prop_map(Mutation::SrcIp),
        1 => prop_oneof![Just(OTHER), Just([10, 0, 0, 255])].prop_map(Mutation::DstIp),
        1 => prop_oneof![Just([0xff; 6]), Just([2, 0, 0, 0, 0, 9])].prop_map(Mutation::DstMac),
        1 => (1u8..4).prop_map(Mutation::Ecn),
        2 => (0usize..18, prop_oneof![Just(0x01u8), Just(0x80), Just(0x20), any::<u8>()])
            .prop_map(|(at, xor)| Mutation::IpField { at, xor }),
        1 => (0usize..20, any::<u8>()).prop_map(|(at, xor)| Mutation::TcpField { at, xor }),
    ]
}

fn segment() -> impl Strategy<Value = Seg> {
    (
        prop_oneof![
            12 => Just(SeqAt::Next),
            2 => (1u32..3000).prop_map(SeqAt::Old),
            2 => (1u32..3000).prop_map(SeqAt::Ahead),
            1 => prop_oneof![Just(1u32 << 30), Just(3u32 << 30), (1u32 << 20..1 << 21)]
                .prop_map(SeqAt::Far),
        ],
        prop_oneof![
            6 => Just(0usize),
            6 => 1usize..200,
            2 => 1000usize..1461,
        ],
        prop_oneof![
            12 => Just(AckAt::All),
            4 => Just(AckAt::Una),
            3 => any::<u32>().prop_map(AckAt::Part),
            1 => (1u32..100_000).prop_map(AckAt::Old),
            1 => (1u32..100_000).prop_map(AckAt::Future),
            1 => Just(AckAt::None),
        ],
        prop_oneof![
            30 => Just(0u8),
            8 => Just(PSH),
            1 => Just(FIN),
            1 => Just(RST),
            1 => Just(SYN),
            1 => Just(URG),
            1 => Just(ECE | CWR),
            1 => Just(RST | ACK),
        ],
        prop_oneof![
            12 => Just(None),
            2 => Just(Some(65535u16)),
            2 => (0u16..4096).prop_map(Some),
            1 => Just(Some(0u16))
        ],
        prop_oneof![
            12 => Just(TsAt::Fresh),
            3 => Just(TsAt::Same),
            1 => Just(TsAt::Old),
            1 => Just(TsAt::Absent),
        ],
        proptest::option::weighted(0.15, (any::<u32>(), any::<u32>())),
        0u16..300,
    )
        .prop_map(|(seq, len, ack, flags, wnd, ts, sack, urgent)| Seg {
            seq,
            len,
            ack,
            flags,
            wnd,
            ts,
            sack,
            urgent: if flags & URG != 0 { urgent } else { 0 },
        })
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        20 => (segment(), mutation()).prop_map(|(s, m)| Step::Seg(s, m)),
        5 => prop_oneof![4 => 0usize..200, 2 => 1000usize..5000, 1 => 20_000usize..80_000]
            .prop_map(Step::Send),
        3 => prop_oneof![1usize..100, 1000usize..100_000].prop_map(Step::Recv),
        3 => prop_oneof![
            4 => Just(1u64),
            4 => Just(41),
            3 => Just(250),
            1 => Just(3_000),
            1 => Just(90_000)
        ]
        .prop_map(Step::Wait),
        1 => Just(Step::Shutdown),
        1 => any::<bool>().prop_map(Step::Nodelay),
        1 => (0usize..2).prop_map(|m| Step::Frame(arp_reply(PEER_MACS[m], PEER))),
        // A request of the peer's, broadcast: it refreshes (or moves) the
        // peer's entry too (RFC 826 "merge").
        1 => (0usize..2).prop_map(|m| Step::Frame(arp(1, [0xff; 6], PEER_MACS[m], PEER))),
        1 => (
            prop_oneof![3 => Just(4u8), 1 => Just(3), 1 => Just(1)],
            prop_oneof![Just(576u16), Just(1000), Just(1400), Just(1500), Just(68), 0u16..2000],
            any::<u32>()
        )
            .prop_map(|(code, mtu, at)| Step::Icmp { code, mtu, at }),
    ]
}

fn offer() -> impl Strategy<Value = Offer> {
    (
        prop_oneof![Just(1460u16), Just(536), Just(100)],
        proptest::option::of(0u8..15),
        any::<bool>(),
        prop_oneof![3 => Just(true), 1 => Just(false)],
        prop_oneof![Just(65535u16), Just(8192), Just(1000)],
        prop_oneof![any::<u32>(), Just(u32::MAX - 100)],
    )
        .prop_map(|(mss, shift, sack, ts, wnd, iss)| Offer {
            mss,
            shift,
            sack,
            ts,
            wnd,
            iss,
        })
}

fn host_config() -> impl Strategy<Value = TcpConfig> {
    (
        prop_oneof![3 => Just(true), 1 => Just(false)],
        prop_oneof![3 => Just(true), 1 => Just(false)],
        prop_oneof![3 => Just(true), 1 => Just(false)],
        any::<bool>(),
        prop_oneof![Just(256 * 1024usize), Just(4096)],
    )
        .prop_map(
            |(window_scaling, timestamps, sack, nodelay, recv_buffer)| TcpConfig {
                window_scaling,
                timestamps,
                sack,
                nodelay,
                recv_buffer,
                ..TcpConfig::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_specialized_connection_behaves_as_the_modular_stages(
        cfg in host_config(),
        offer in offer(),
        passive in any::<bool>(),
        steps in proptest::collection::vec(step(), 1..60),
    ) {
        let (mut fused, mut modular, mut peer) = established(cfg, &offer, passive);
        run(&mut fused, &mut modular, &mut peer, &steps);
    }
}

/// The common case takes the fast form both ways: in a request/response
/// exchange and a bulk transfer each way, every segment of the connection
/// is the fast form's, and the frames, the bytes delivered, the control
/// block and the counters are the modular host's.
#[test]
fn a_steady_exchange_is_byte_identical() {
    let offer = STEADY;
    let (mut fused, mut modular, mut peer) = established(TcpConfig::default(), &offer, false);
    let seg = in_order;
    let mut steps = Vec::new();
    for i in 0..100 {
        // Request, response, the peer's ACK of it, read.
        steps.extend([
            seg(10 + i % 50, PSH),
            Step::Send(20 + i % 30),
            seg(0, 0),
            Step::Recv(1000),
        ]);
    }
    // Bulk in: the host ACKs every other segment.
    for _ in 0..40 {
        steps.extend([seg(1460, 0), Step::Recv(4000)]);
    }
    // Bulk out, the peer acknowledging all.
    for _ in 0..20 {
        steps.extend([Step::Send(5000), seg(0, 0), seg(0, 0)]);
    }
    let clean = run(&mut fused, &mut modular, &mut peer, &steps);
    assert_eq!(clean, 100 * 2 + 40 + 20 * 2);
    let hits = fused
        .host
        .stack()
        .path(fused.path)
        .unwrap()
        .fast_hits()
        .unwrap();
    let stats = fused.host.tcp().stats(&fused.stream).unwrap();
    // Every segment in (the SYN-ACK too), and every one out but the SYN,
    // which `connect` sent before the path was specialized.
    assert_eq!(hits[1], stats.segs_in, "in: {hits:?} {stats:?}");
    assert_eq!(hits[0], stats.segs_out - 1, "out: {hits:?} {stats:?}");
    assert!(
        stats.predicted_data >= 100 && stats.predicted_acks >= 50,
        "{stats:?}"
    );
    // Every response of the exchange goes out predicted, its header
    // written from the template's fields (`Tcb::poll_predicted_send`),
    // and its frame the same bytes as the modular host's.
    assert!(stats.predicted_sends >= 100, "{stats:?}");
}

/// Short messages of every length around the rings' in-line copies (up
/// to eight octets in line, longer ones by `memcpy`: `tcp::ring`), each
/// way: the specialized host's frames are the modular host's, the data
/// read is the peer's stream in order, and every data segment the host
/// sends carries what was written under a checksum that verifies
/// (RFC 9293 §3.1, the pseudo header included).
#[test]
fn short_messages_of_every_length_arrive_whole() {
    let offer = STEADY;
    let (mut fused, mut modular, mut peer) = established(TcpConfig::default(), &offer, false);
    let seg = in_order;
    let mut next_in: Option<u8> = None;
    let mut sent_data = 0;
    for round in 0..3 {
        for len in 1..=17usize {
            let steps = [seg(len, PSH), Step::Recv(64), Step::Send(len), seg(0, 0)];
            for (i, st) in steps.iter().enumerate() {
                fused.apply(st, &peer);
                modular.apply(st, &peer);
                let (f, m) = (fused.observe(), modular.observe());
                assert_eq!(f, m, "round {round} length {len} step {i}");
                // The read: `len` octets of the peer's stream, each one
                // more (mod 253) than the one before.
                for line in &f.app {
                    if let Some(got) = line.strip_prefix("recv 64: ") {
                        let got: Vec<u8> = got
                            .trim_matches(|c| c == '[' || c == ']')
                            .split(", ")
                            .map(|b| b.parse().unwrap())
                            .collect();
                        assert_eq!(got.len(), len, "{line}");
                        for b in got {
                            if let Some(want) = next_in {
                                assert_eq!(b, want, "{line}");
                            }
                            next_in = Some(((u32::from(b) + 1) % 253) as u8);
                        }
                    }
                }
                for frame in &f.frames {
                    let Some((_, _, n, _)) = parse(frame) else {
                        continue;
                    };
                    let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
                    let t = &frame[34..14 + total];
                    // The pseudo header: addresses, protocol, length.
                    let mut pseudo = [0u8; 12];
                    pseudo[..4].copy_from_slice(&US);
                    pseudo[4..8].copy_from_slice(&PEER);
                    pseudo[9] = 6;
                    pseudo[10..].copy_from_slice(&(t.len() as u16).to_be_bytes());
                    assert_eq!(checksum(&[&pseudo, t]), 0, "round {round} length {len}");
                    if n > 0 {
                        let want: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
                        assert_eq!(&t[t.len() - n..], &want[..], "round {round} length {len}");
                        sent_data += 1;
                    }
                }
                peer.learn(&f.frames, &fused);
                peer.after(st);
            }
        }
    }
    assert_eq!(sent_data, 3 * 17);
    let stats = fused.host.tcp().stats(&fused.stream).unwrap();
    // Every response predicted, and every request but the first (the
    // connection's first segment after the handshake goes the general
    // way, as in the steady exchange above).
    assert!(
        stats.predicted_data >= 3 * 17 - 1 && stats.predicted_sends >= 3 * 17,
        "{stats:?}"
    );
}

/// A segment that arrives in two IP fragments is its connection's once IP
/// has reassembled it (RFC 791 §3.2; RFC 1122 §3.3.2: reassembly MUST be
/// supported), in either order of the fragments.
///
/// Found by the property test's `Split` mutation (both forms alike, so the
/// differential test passed): the fragments were classified to TCP's own
/// catch-all path (a later fragment has no ports), its IP stage
/// reassembled the segment, and its reset stage answered it as a stray
/// with a RST. A datagram reassembled on a protocol's path now goes to
/// IP's own path for the second classification.
#[test]
fn a_segment_in_two_fragments_reaches_its_connection() {
    let offer = STEADY;
    for reversed in [false, true] {
        let (mut w, _, mut peer) = established(TcpConfig::default(), &offer, false);
        let before = w.conn(|c| c.tcb().rcv_nxt()).unwrap();
        let mut seg = Seg::ack();
        seg.len = 40;
        let step = Step::Seg(seg, Mutation::Split { at: 2, reversed });
        w.apply(&step, &peer);
        let o = w.observe();
        peer.learn(&o.frames, &w);
        let after = w.conn(|c| c.tcb().rcv_nxt()).unwrap();
        assert_eq!(after - before, 40, "reversed {reversed}: the data arrived");
        assert!(
            o.frames
                .iter()
                .all(|f| f.len() < 48 || f[23] != 6 || f[47] & RST == 0),
            "reversed {reversed}: no reset"
        );
    }
}
