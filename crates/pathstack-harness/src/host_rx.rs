//! The `host_rx` target: Ethernet frames into a whole host (A) with UDP
//! sockets, a TCP listener and an established connection, set up over the
//! in-memory wire with a second host (B) before the input is read; then B
//! is gone and the input speaks for it.
//!
//! The input is a list of operations ([`crate::operations`]):
//!
//! | op % 8 | operation |
//! |---|---|
//! | 0 | a raw frame (length, bytes) |
//! | 1 | a raw frame with its IPv4 and transport checksums fixed |
//! | 2 | a segment on the established connection, sequence numbers and timestamps relative to what the wire showed of it |
//! | 3 | a segment to a port (the listener, a closed port, the connection's, any), SYN options |
//! | 4 | time passes ([`HostOnWire::pass_time`]) |
//! | 5 | the application on A: accept, read, write, shut down, close, abort, UDP echo, ping, statistics |
//! | 6 | an IPv4 packet from fields: fragments, any protocol |
//! | 7 | ARP |

mod conn_track;
mod seeds;

pub use seeds::host_rx_seeds;

use crate::frames::{a_mac, arp_bytes, eth, fix_checksums, ipv4, tcp_bytes, A_IP, B_IP, FRAME_MAX};
use crate::host_on_wire::HostOnWire;
use crate::host_pair::HostPair;
use crate::input::{pattern, Input};
use crate::operations::{self, Target};
use crate::tcp_segment::syn_options;
use conn_track::{parse_tcp_frame, ConnTrack, LISTEN_PORT};
use pathstack::host::HostConfig;
use pathstack::socket::{TcpListener, TcpStream, UdpSocket};
use pathstack_core::device::wire::WireConfig;
use pathstack_core::time::Duration;
use pathstack_inet::tcp::{Shutdown, TcpConfig};
use pathstack_inet::wire::tcp::{TcpFlags, TcpOptions, TcpRepr};
use std::net::Ipv4Addr;

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

/// Host A with its sockets, and what the harness knows of the connection.
struct Rig {
    wire: HostOnWire,
    udp: [UdpSocket; 2],
    listener: TcpListener,
    streams: Vec<TcpStream>,
    track: ConnTrack,
    /// The application's buffer for reads and writes.
    buf: Vec<u8>,
}

impl Rig {
    fn new() -> Option<Rig> {
        let mut hosts = HostPair::new(|cidr| HostConfig::parse(cidr).ok())?;
        let (a, b) = (&mut hosts.a, &mut hosts.b);
        let udp = [
            a.udp().bind("0.0.0.0:7").ok()?,
            a.udp().bind("0.0.0.0:53").ok()?,
        ];
        let listener = a
            .tcp()
            .listen_with("0.0.0.0:80", 8, rig_tcp_config())
            .ok()?;
        let c = b
            .tcp()
            .connect_with("0.0.0.0:0", "10.0.0.1:80", rig_tcp_config())
            .ok()?;
        let mut s = None;
        for _ in 0..50 {
            hosts.step(1);
            if s.is_none() {
                s = pathstack::socket::ready(listener.accept(&mut hosts.a)).ok()?;
            }
            if s.is_some() && hosts.b.tcp().is_connected(&c).ok()? {
                break;
            }
        }
        let (s, _) = s?;
        // Data both ways, some read.
        let _ = c.write(&mut hosts.b, &pattern(3000, 1));
        let _ = s.write(&mut hosts.a, &pattern(2000, 2));
        let mut buf = [0u8; 1024];
        for _ in 0..10 {
            hosts.step(1);
        }
        let _ = s.read(&mut hosts.a, &mut buf);
        let _ = c.read(&mut hosts.b, &mut buf);
        // The delayed ACKs.
        for _ in 0..6 {
            hosts.step(10);
        }
        let b_port = hosts.b.tcp().local_addr(&c).ok()?.port();
        let (wire, log) = hosts.part();
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
            wire,
            udp,
            listener,
            streams: vec![s],
            track,
            buf: vec![0u8; 65_536],
        })
    }
}

impl Target for Rig {
    const MAX_OPS: usize = 512;
    const RUN_OUT_ROUNDS: usize = 4;

    fn apply(&mut self, op: u8, inp: &mut Input<'_>) {
        match op % 8 {
            0 | 1 => {
                let n = usize::from(inp.u16()) % (FRAME_MAX + 1);
                let mut f = inp.bytes(n).to_vec();
                if op % 8 == 1 {
                    fix_checksums(&mut f);
                }
                self.wire.inject(&f);
            }
            2 => {
                // A segment on the established connection, relative to
                // what the wire showed of it.
                let t = self.track;
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
                self.wire.inject(&f);
                self.track.see(&f);
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
                let mut options = syn_options(inp, opt);
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
                self.wire.inject(&f);
            }
            4 => self.wire.pass_time(inp),
            5 => {
                let which = inp.u8();
                let si = usize::from(which >> 4);
                let stream = self.streams.get(si % self.streams.len().max(1)).copied();
                match which % 9 {
                    0 => {
                        if let Ok((s, _)) = self.listener.accept(&mut self.wire.a) {
                            if self.streams.len() < 8 {
                                self.streams.push(s);
                            }
                        }
                    }
                    1 => {
                        if let Some(s) = stream {
                            let n = usize::from(inp.u16()) % 65_536;
                            let _ = s.read(&mut self.wire.a, &mut self.buf[..n]);
                        }
                    }
                    2 => {
                        if let Some(s) = stream {
                            let n = usize::from(inp.u16()) % 65_536;
                            let _ = s.write(&mut self.wire.a, &self.buf[..n]);
                        }
                    }
                    3 => {
                        if let Some(s) = stream {
                            let how = [Shutdown::Read, Shutdown::Write, Shutdown::Both]
                                [usize::from(inp.u8() % 3)];
                            let _ = self.wire.a.tcp().shutdown(&s, how);
                        }
                    }
                    4 => {
                        if let Some(s) = stream {
                            let _ = self.wire.a.tcp().close(s);
                        }
                    }
                    5 => {
                        if let Some(s) = stream {
                            let _ = self.wire.a.tcp().abort(s);
                        }
                    }
                    6 => {
                        let u = self.udp[usize::from(which >> 7)];
                        if let Ok((n, from)) = u.recv_from(&mut self.wire.a, &mut self.buf) {
                            let _ = self
                                .wire
                                .a
                                .udp()
                                .send_to(&u, &self.buf[..n.min(1400)], from);
                        }
                    }
                    7 => {
                        let _ = self.wire.a.ping(B_IP, inp.u16(), b"ping");
                        let _ = self.wire.a.echo_replies();
                    }
                    _ => {
                        if let Some(s) = stream {
                            let _ = self.wire.a.tcp().stats(&s);
                            let _ = self.wire.a.tcp().take_error(&s);
                            let _ = self.wire.a.tcp().state(&s);
                        }
                        let _ = self.wire.a.report();
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
                self.wire.inject(&f);
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
                self.wire.inject(&f);
            }
        }
    }

    fn settle(&mut self) {
        // What A sent: followed, then dropped.
        let track = &mut self.track;
        self.wire.poll(|f| track.see(f));
    }

    fn advance(&mut self, by: Duration) {
        self.wire.now = self.wire.now + by;
    }
}

/// The `host_rx` target: see the module's documentation.
pub fn host_rx(data: &[u8]) {
    let Some(mut rig) = Rig::new() else {
        panic!("host_rx setup failed");
    };
    operations::run(&mut rig, &mut Input::new(data));
}
