//! Filters and operations over realistic Ethernet/IPv4/TCP/UDP header
//! combinations, with a byte decoder for the fuzz target.
//!
//! Field values come from small pools so that random sequences hit shared
//! prefixes, active-under-passive overlaps (thesis Table 3.1) and ambiguous
//! registrations often.

use super::inet::{self, ARP, COUNT, ETH, IPV4, TCP, UDP};
use super::packet::{PacketSpec, Payload};
use crate::{Key, KeyMode, Level, ModuleId, PathId};

/// IPv4 addresses used by generated filters and packets.
pub const ADDRS: [[u8; 4]; 4] = [
    [10, 0, 0, 1],
    [10, 0, 0, 2],
    [192, 12, 69, 168],
    [18, 181, 0, 21],
];
/// Ports used by generated filters and packets.
pub const PORTS: [u16; 4] = [21, 80, 3949, 3950];
/// Path ids used by generated operations.
pub const MAX_PATHS: u32 = 8;

/// A path's filter, described by protocol fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FilterSpec {
    /// ETH(0x0806) → ARP (pass-through end).
    Arp {
        /// Key mode.
        mode: KeyMode,
    },
    /// A short path ending at IP (ICMP, or reassembly of fragments).
    Ip {
        /// Key mode: passive matches `proto` only.
        mode: KeyMode,
        /// IP protocol.
        proto: u8,
        /// Local address (active only).
        laddr: [u8; 4],
        /// Remote address (active only).
        raddr: [u8; 4],
    },
    /// ETH → IPv4 → (COUNT) → TCP/UDP.
    Transport {
        /// Key mode: passive matches protocol and local port only.
        mode: KeyMode,
        /// TCP, else UDP.
        tcp: bool,
        /// Local address (active only).
        laddr: [u8; 4],
        /// Remote address (active only).
        raddr: [u8; 4],
        /// Local port.
        lport: u16,
        /// Remote port (active only).
        rport: u16,
        /// Insert the pass-through COUNT module between IP and the transport.
        counted: bool,
    },
    /// Arbitrary levels, for combinations no protocol would register.
    Raw {
        /// Key mode.
        mode: KeyMode,
        /// The levels.
        levels: Vec<Level>,
    },
}

impl FilterSpec {
    /// The filter's key mode.
    pub fn mode(&self) -> KeyMode {
        match self {
            FilterSpec::Arp { mode }
            | FilterSpec::Ip { mode, .. }
            | FilterSpec::Transport { mode, .. }
            | FilterSpec::Raw { mode, .. } => *mode,
        }
    }

    /// The filter's levels, as the modules on the path would register them.
    pub fn levels(&self) -> Vec<Level> {
        let eth = |t: u16| Level::demux(ETH, Key::from_array(t.to_be_bytes()));
        let ip = |mode: KeyMode, proto: u8, l: [u8; 4], r: [u8; 4]| {
            let key = match mode {
                KeyMode::Active => {
                    Key::from_array([proto, l[0], l[1], l[2], l[3], r[0], r[1], r[2], r[3]])
                }
                KeyMode::Passive => Key::from_array([proto]),
            };
            Level::demux(IPV4, key)
        };
        match self {
            FilterSpec::Arp { .. } => vec![eth(inet::ETHERTYPE_ARP), Level::pass_through(ARP)],
            FilterSpec::Ip {
                mode,
                proto,
                laddr,
                raddr,
            } => vec![eth(inet::ETHERTYPE_IPV4), ip(*mode, *proto, *laddr, *raddr)],
            FilterSpec::Transport {
                mode,
                tcp,
                laddr,
                raddr,
                lport,
                rport,
                counted,
            } => {
                let (proto, m) = if *tcp {
                    (inet::PROTO_TCP, TCP)
                } else {
                    (inet::PROTO_UDP, UDP)
                };
                let (l, r) = (lport.to_be_bytes(), rport.to_be_bytes());
                let key = match mode {
                    KeyMode::Active => Key::from_array([l[0], l[1], r[0], r[1]]),
                    KeyMode::Passive => Key::from_array(l),
                };
                let mut v = vec![eth(inet::ETHERTYPE_IPV4), ip(*mode, proto, *laddr, *raddr)];
                if *counted {
                    v.push(Level::pass_through(COUNT));
                }
                v.push(Level::demux(m, key));
                v
            }
            FilterSpec::Raw { levels, .. } => levels.clone(),
        }
    }
}

/// One step of a differential run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Register `filter` for `path`.
    Insert {
        /// The path.
        path: PathId,
        /// Its filter.
        filter: FilterSpec,
    },
    /// Remove a path's keys.
    Remove(PathId),
    /// Classify a well-formed (possibly truncated) frame arriving at ETH.
    Lookup(PacketSpec),
    /// Classify arbitrary bytes arriving at any module.
    LookupRaw {
        /// Receiving module.
        at: ModuleId,
        /// The message.
        bytes: Vec<u8>,
    },
    /// Look up the frame `spec` builds with bytes changed: `(position,
    /// xor)`, each position taken modulo the frame's length (a guard
    /// byte, a key byte or a length field of a frame a flow would take).
    LookupMutated {
        /// The frame before the changes.
        spec: PacketSpec,
        /// The changes.
        flips: Vec<(u16, u8)>,
    },
}

/// Reads fuzzer bytes; every read past the end yields `None`.
struct Reader<'a> {
    data: &'a [u8],
}

impl Reader<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (&b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let n = n.min(self.data.len());
        let (a, b) = self.data.split_at(n);
        self.data = b;
        Some(a)
    }
}

fn mode(b: u8) -> KeyMode {
    if b & 1 == 0 {
        KeyMode::Active
    } else {
        KeyMode::Passive
    }
}

/// Module ids a raw level or raw lookup may use (including one no
/// classifier knows, 7, and the mode-dependent [`MIX`](inet::MIX), 8).
fn module(b: u8) -> ModuleId {
    ModuleId(1 + u32::from(b % 8))
}

/// Decodes arbitrary bytes into operations; never fails, never panics.
pub fn decode(data: &[u8]) -> Vec<Op> {
    let mut r = Reader { data };
    let mut ops = Vec::new();
    while let Some(op) = decode_one(&mut r) {
        ops.push(op);
    }
    ops
}

fn decode_one(r: &mut Reader<'_>) -> Option<Op> {
    let tag = r.u8()?;
    let path = PathId(u32::from(tag >> 4) % MAX_PATHS);
    Some(match tag % 8 {
        0 | 1 => {
            let f = r.u8()?;
            let a = r.u8()?;
            let p = r.u8()?;
            Op::Insert {
                path,
                filter: FilterSpec::Transport {
                    mode: mode(f),
                    tcp: f & 2 != 0,
                    counted: f & 0x1c == 0x1c,
                    laddr: ADDRS[usize::from(a & 3)],
                    raddr: ADDRS[usize::from((a >> 2) & 3)],
                    lport: PORTS[usize::from(p & 3)],
                    rport: PORTS[usize::from((p >> 2) & 3)],
                },
            }
        }
        2 => {
            let f = r.u8()?;
            let a = r.u8()?;
            let filter = if f & 2 != 0 {
                FilterSpec::Arp { mode: mode(f) }
            } else {
                let protos = [inet::PROTO_ICMP, inet::PROTO_TCP, inet::PROTO_UDP, 89];
                FilterSpec::Ip {
                    mode: mode(f),
                    proto: protos[usize::from((f >> 2) & 3)],
                    laddr: ADDRS[usize::from(a & 3)],
                    raddr: ADDRS[usize::from((a >> 2) & 3)],
                }
            };
            Op::Insert { path, filter }
        }
        3 => {
            let f = r.u8()?;
            let n = 1 + usize::from((f >> 1) % 4);
            let mut levels = Vec::with_capacity(n);
            for _ in 0..n {
                let b = r.u8()?;
                let key = match b >> 5 {
                    0 => None,
                    len => Key::new(r.take(usize::from(len % 4))?),
                };
                levels.push(Level {
                    module: module(b),
                    key,
                });
            }
            Op::Insert {
                path,
                filter: FilterSpec::Raw {
                    mode: mode(f),
                    levels,
                },
            }
        }
        4 => Op::Remove(path),
        5 | 6 => {
            let f = r.u8()?;
            let a = r.u8()?;
            let p = r.u8()?;
            let o = r.u8()?;
            let payload = match f & 7 {
                0 => Payload::Arp,
                1 => Payload::Ip(inet::PROTO_ICMP),
                2 | 3 => Payload::Udp,
                _ => Payload::Tcp,
            };
            Op::Lookup(PacketSpec {
                payload,
                laddr: ADDRS[usize::from(a & 3)],
                raddr: ADDRS[usize::from((a >> 2) & 3)],
                lport: PORTS[usize::from(p & 3)],
                rport: PORTS[usize::from((p >> 2) & 3)],
                ip_options: (o & 3) * ((f >> 3) & 1),
                tcp_options: (o >> 2) & 3,
                fragment: f & 0x30 == 0x30,
                truncate: if f & 0xc0 == 0xc0 {
                    u16::from(o >> 4) * 3
                } else {
                    0
                },
            })
        }
        _ => {
            let b = r.u8()?;
            let len = usize::from(r.u8()? % 80);
            Op::LookupRaw {
                at: module(b),
                bytes: r.take(len)?.to_vec(),
            }
        }
    })
}
