//! The `rpc_rx` target: frames into a host running the RPC stack (BLAST,
//! BID, BIDCTL, CHAN, VCHAN, MSELECT) as client and server.
//!
//! The setup, before the input is read: host A (fuzzed) and host B on the
//! in-memory wire, both with the echo procedure registered; A calls B and
//! B calls A (BIDCTL handshakes both ways, a fragmented message each
//! way); then A starts two more calls to B, one short and one of several
//! fragments, and B is gone: the harness speaks for B from then on, so
//! frames in the input can answer A's calls in flight, call A's server,
//! and make B reboot.
//!
//! The first input byte chooses the network (bit 0: ETH or IP, the
//! EtherTypes 0x3001/0x3006 or the IP protocols 101/205); the rest is a
//! list of operations. Besides raw frames, the operations build frames
//! from fields so that the fuzzer reaches CHAN and BIDCTL often: boot ids
//! are given relative to A's and B's (which come from the wall clock, so
//! an input cannot name them), CHAN channels and sequence numbers relative
//! to those A sent, BLAST NACKs for A's fragmented messages, and the
//! BIDCTL checksum is computed. Every frame A sends is read back to keep
//! these up to date.
//!
//! | op % 8 | operation |
//! |---|---|
//! | 0 | a raw frame (length, bytes) |
//! | 1 | a raw frame with the rig's boot ids and A's query tag put in and the checksums fixed (recorded frames) |
//! | 2 | an RPC message from B from fields (BID, CHAN, MSELECT, data), short or in BLAST fragments (some, reordered, duplicated) |
//! | 3 | a BLAST NACK (or another op) for one of A's fragmented messages |
//! | 4 | a BIDCTL message from B from fields, checksum computed (or broken) |
//! | 5 | time passes |
//! | 6 | the application on A: calls (to B or to a silent peer), their outcomes, abandoning, procedures |
//! | 7 | a BLAST header from fields with any payload |
//!
//! Bit 7 of ops 2, 3, 4 and 7 frames the message for the other network.

use super::{fix_checksums, pattern, small_stack, Enc, Input, SharedEnd, SharedInner, A_IP};
use crate::host::{Host, HostConfig};
use crate::rpc::{Echo, RpcCall, RpcError, RpcNet};
use pathstack_core::device::wire::{wire_pair, WireConfig};
use pathstack_core::device::Device;
use pathstack_core::time::{Duration, Instant};
use pathstack_core::{MsgPool, PoolConfig};
use pathstack_inet::wire::checksum;
use pathstack_inet::MacAddr;
use pathstack_rpc::modules::bidctl::BidctlModule;
use pathstack_rpc::modules::blast::BlastModule;
use pathstack_rpc::modules::protocol;
use pathstack_rpc::Peer;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};

/// Operations per input at most.
const MAX_OPS: usize = 256;
/// Calls of A in flight at most (the harness's list, not the stack's).
const MAX_CALLS: usize = 8;
/// CHAN headers and BLAST messages of A remembered at most.
const MAX_SEEN: usize = 16;
/// The echo procedure's id.
const ECHO: u32 = protocol::XRPCTEST_ID;
// Largest frame injected: the host targets' bound.
use super::FRAME_MAX;
/// BLAST's `prot_id` for BID.
const BLAST_BID: u32 = protocol::BID;
/// BID's `hlpNum` for CHAN.
const BID_CHAN: u32 = protocol::CHAN;
/// CHAN's `prot_id` for MSELECT.
const CHAN_MSELECT: u32 = protocol::MSELECT;

/// What A sent, as the harness reads it back.
#[derive(Clone, Copy, Debug, Default)]
struct Track {
    a_bid: u32,
    b_bid: u32,
    /// The tag of A's last BIDCTL query.
    a_query_tag: u32,
    /// (chan, flags, seq) of CHAN headers A sent, newest last.
    chans: [(u16, u8, u32); MAX_SEEN],
    n_chans: usize,
    /// (seq, num_frag) of A's fragmented BLAST messages, newest last.
    blasts: [(u32, u16); MAX_SEEN],
    n_blasts: usize,
}

fn push<T: Copy>(list: &mut [T; MAX_SEEN], n: &mut usize, v: T) {
    if *n == MAX_SEEN {
        list.copy_within(1.., 0);
        list[MAX_SEEN - 1] = v;
    } else {
        list[*n] = v;
        *n += 1;
    }
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// Where a frame's BLAST or BIDCTL message starts: `(is_bidctl, offset)`.
fn rpc_payload(f: &[u8]) -> Option<(bool, usize)> {
    match be16(f, 12)? {
        protocol::ETHERTYPE_BLAST => Some((false, 14)),
        protocol::ETHERTYPE_BIDCTL => Some((true, 14)),
        0x0800 => {
            let ihl = usize::from(f.get(14)? & 0x0f) * 4;
            match *f.get(23)? {
                protocol::IP_BLAST => Some((false, 14 + ihl)),
                protocol::IP_BIDCTL => Some((true, 14 + ihl)),
                _ => None,
            }
        }
        _ => None,
    }
}

impl Track {
    /// Reads a frame A sent.
    fn see(&mut self, f: &[u8]) {
        let Some((bidctl, at)) = rpc_payload(f) else {
            return;
        };
        let m = &f[at.min(f.len())..];
        if bidctl {
            if let (Some(flags), Some(tag)) = (be16(m, 0), be32(m, 12)) {
                if flags & 1 != 0 {
                    self.a_query_tag = tag;
                }
            }
            return;
        }
        let (Some(seq), Some(num_frag), Some(&op), Some(mask)) =
            (be32(m, 4), be16(m, 12), m.get(14), be16(m, 18))
        else {
            return;
        };
        if seq != 0 && op == 1 && mask == 1 {
            push(&mut self.blasts, &mut self.n_blasts, (seq, num_frag));
        }
        // The CHAN header is in a short message or the first fragment.
        if op != 2 && (seq == 0 || mask == 1) {
            let c = 20 + 12;
            if let (Some(chan), Some(&flags), Some(cseq)) =
                (be16(m, c), m.get(c + 3), be32(m, c + 8))
            {
                push(&mut self.chans, &mut self.n_chans, (chan, flags, cseq));
            }
        }
    }

    fn chan(&self, i: u8) -> (u16, u8, u32) {
        if self.n_chans == 0 {
            (1, 0, 1)
        } else {
            self.chans[usize::from(i) % self.n_chans]
        }
    }

    fn blast(&self, i: u8) -> (u32, u16) {
        if self.n_blasts == 0 {
            (1, 2)
        } else {
            self.blasts[usize::from(i) % self.n_blasts]
        }
    }

    /// A boot id from a mode (two bits) and the input: `base`, 0, raw, or
    /// `base` moved by a small step.
    fn bid(base: u32, mode: u8, inp: &mut Input<'_>) -> u32 {
        match mode & 3 {
            0 => base,
            1 => 0,
            2 => inp.u32(),
            _ => base.wrapping_add_signed(i32::from(inp.u8() as i8)),
        }
    }
}

struct Rig {
    a: Host,
    end: SharedEnd,
    pool: MsgPool,
    now: Instant,
    net: RpcNet,
    b_peer: Peer,
    calls: Vec<RpcCall>,
    track: Track,
    /// A's BLAST fragment payload.
    frag_len: usize,
    max_request: usize,
    /// What B sent during the setup (the seeds replay it).
    b_frames: Vec<Vec<u8>>,
    ip_id: u16,
    /// Procedure runs on A during the setup.
    setup_runs: u64,
    reach: RpcRxReach,
}

fn rpc_host(net: RpcNet, cidr: &str, dev: impl Device + 'static) -> Option<Host> {
    let cfg = HostConfig {
        rpc: Some(net),
        udp: false,
        tcp: false,
        ..HostConfig::parse(cidr).ok()?
    };
    Host::new_with_stack(cfg, dev, small_stack()).ok()
}

fn local_bid(h: &Host) -> u32 {
    let st = h.stack();
    st.module_id("bidctl")
        .and_then(|id| st.module::<BidctlModule>(id))
        .map_or(0, |m| m.local_bid().0)
}

impl Rig {
    fn new(net: RpcNet) -> Option<Rig> {
        let (a_end, b_end) = wire_pair(WireConfig::default());
        let end = SharedEnd(Arc::new(Mutex::new(SharedInner {
            end: b_end,
            log: Some(Vec::new()),
        })));
        let mut now = Instant::from_millis(1000);
        let mut a = rpc_host(net, "10.0.0.1/24", a_end)?;
        let mut b = rpc_host(net, "10.0.0.2/24", end.clone())?;
        a.rpc_server().ok()?.register(ECHO, Echo).ok()?;
        b.rpc_server().ok()?.register(ECHO, Echo).ok()?;
        let a_peer = a.rpc_peer().ok()?;
        let b_peer = b.rpc_peer().ok()?;
        let step = |a: &mut Host, b: &mut Host, now: &mut Instant| {
            *now = *now + Duration::from_millis(1);
            a.set_manual_clock(*now);
            b.set_manual_clock(*now);
            a.poll();
            b.poll();
        };
        a.set_manual_clock(now);
        b.set_manual_clock(now);
        let ab = a.rpc_start(b_peer, ECHO, &pattern(100, 1)).ok()?;
        let ba = b.rpc_start(a_peer, ECHO, &pattern(3000, 2)).ok()?;
        let (mut ab_done, mut ba_done) = (false, false);
        for _ in 0..2000 {
            step(&mut a, &mut b, &mut now);
            // A handle is spent once its outcome was read.
            if !ab_done {
                ab_done = a.rpc_poll(&ab).ok()?.is_some();
            }
            if !ba_done {
                ba_done = b.rpc_poll(&ba).ok()?.is_some();
            }
            if ab_done && ba_done {
                break;
            }
        }
        if !(ab_done && ba_done) {
            return None;
        }
        let b_bid = local_bid(&b);
        drop(b);
        let calls = vec![
            a.rpc_start(b_peer, ECHO, &pattern(10, 3)).ok()?,
            a.rpc_start(b_peer, ECHO, &pattern(5000, 4)).ok()?,
        ];
        let log = end.lock().log.take().unwrap_or_default();
        let b_mac = WireConfig::default().mac_b;
        let mut track = Track {
            a_bid: local_bid(&a),
            b_bid,
            ..Track::default()
        };
        let mut b_frames = Vec::new();
        for f in log {
            if f.get(6..12) == Some(&b_mac[..]) {
                b_frames.push(f);
            } else {
                track.see(&f);
            }
        }
        let st = a.stack();
        let blast = st
            .module_id("blast")
            .and_then(|id| st.module::<BlastModule>(id))?;
        let frag_len = blast.fragment_len();
        let max_request = a.rpc_max_request().ok()?;
        let setup_runs = a.rpc_server().ok()?.calls();
        let mut rig = Rig {
            a,
            end,
            pool: MsgPool::new(PoolConfig::small(16)),
            now,
            net,
            b_peer,
            calls,
            track,
            frag_len,
            max_request,
            b_frames,
            ip_id: 1,
            setup_runs,
            reach: RpcRxReach::default(),
        };
        rig.poll();
        Some(rig)
    }

    /// Reads `call`'s outcome into the counts; whether it had one.
    fn outcome(&mut self, call: &RpcCall) -> bool {
        match self.a.rpc_poll(call) {
            Ok(None) => false,
            Ok(Some(_)) => {
                self.reach.replies += 1;
                true
            }
            Err(e) => {
                self.reach.failures += 1;
                if matches!(e, RpcError::PeerRebooted { .. }) {
                    self.reach.peer_rebooted += 1;
                }
                true
            }
        }
    }

    fn inject(&mut self, frame: &[u8]) {
        super::inject_frame(&self.end, &self.pool, self.now, frame);
    }

    fn poll(&mut self) {
        self.a.set_manual_clock(self.now);
        self.a.poll();
        let track = &mut self.track;
        super::drain_wire(&self.end, &self.pool, self.now, |f| track.see(f));
    }

    /// A BLAST (`bidctl` false) or BIDCTL message from B to A, on the
    /// rig's network or, with `other`, on the other one.
    fn frame(&mut self, bidctl: bool, other: bool, msg: &[u8]) -> Vec<u8> {
        let ip = (self.net == RpcNet::Ip) != other;
        if ip {
            let proto = if bidctl {
                protocol::IP_BIDCTL
            } else {
                protocol::IP_BLAST
            };
            self.ip_id = self.ip_id.wrapping_add(1);
            super::ipv4(proto, self.ip_id, 0x4000, 64, A_IP, msg)
        } else {
            let ethertype = if bidctl {
                protocol::ETHERTYPE_BIDCTL
            } else {
                protocol::ETHERTYPE_BLAST
            };
            super::eth(super::a_mac(), ethertype, msg)
        }
    }

    /// Puts B's and A's boot ids into a frame (and the answered query's
    /// tag into a BIDCTL response), recomputing the checksums: a recorded
    /// frame then speaks to this rig's incarnations.
    fn fix_up(&self, f: &mut [u8]) {
        if let Some((bidctl, at)) = rpc_payload(f) {
            let t = self.track;
            let at = at.min(f.len());
            let m = &mut f[at..];
            if bidctl && m.len() >= 20 {
                m[4..8].copy_from_slice(&t.b_bid.to_be_bytes());
                if m[8..12] != [0; 4] {
                    m[8..12].copy_from_slice(&t.a_bid.to_be_bytes());
                }
                if m[1] & 2 != 0 {
                    m[16..20].copy_from_slice(&t.a_query_tag.to_be_bytes());
                }
                m[2] = 0;
                m[3] = 0;
                let c = checksum::compute(&[&m[..20]]);
                m[2..4].copy_from_slice(&c);
            } else if !bidctl && m.len() >= 32 {
                let seq = be32(m, 4).unwrap_or(0);
                let mask = be16(m, 18).unwrap_or(0);
                if seq == 0 || mask == 1 {
                    m[20..24].copy_from_slice(&t.b_bid.to_be_bytes());
                    m[24..28].copy_from_slice(&t.a_bid.to_be_bytes());
                }
            }
        }
        fix_checksums(f);
    }
}

/// A BLAST header's bytes.
fn blast_header(seq: u32, len: usize, num_frag: u16, op: u8, mask: u16) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0..4].copy_from_slice(&BLAST_BID.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[8..12].copy_from_slice(&(len as u32).to_be_bytes());
    h[12..14].copy_from_slice(&num_frag.to_be_bytes());
    h[14] = op;
    h[18..20].copy_from_slice(&mask.to_be_bytes());
    h
}

/// An RPC message from B (BID, CHAN, MSELECT and data) from fields of the
/// input, sent as a short BLAST message or as fragments.
fn message(rig: &mut Rig, op: u8, inp: &mut Input<'_>) {
    let t = rig.track;
    let sel = inp.u8();
    let src = Track::bid(t.b_bid, sel, inp);
    let dst = Track::bid(t.a_bid, sel >> 2, inp);
    let hlp = if sel & 0x10 == 0 { BID_CHAN } else { inp.u32() };
    // CHAN: a channel A used (its sequence number moved by a small step,
    // FROM_CLIENT as A's header had it, flipped: an answer) or raw fields.
    let cmode = inp.u8();
    let (chan, a_flags, a_seq) = t.chan(inp.u8());
    let (chan, seq) = if cmode & 1 == 0 {
        (chan, a_seq.wrapping_add_signed(i32::from(inp.u8() as i8)))
    } else {
        (inp.u16(), inp.u32())
    };
    let flags = if cmode & 2 == 0 {
        // USER_MSG, the opposite direction of A's header, and maybe
        // ACK_REQUESTED / NEGATIVE_ACK from the mode byte.
        ((a_flags & 1) ^ 1) | 2 | ((cmode >> 2) & 0x0c)
    } else {
        inp.u8()
    };
    let prot = if cmode & 0x40 == 0 {
        CHAN_MSELECT
    } else {
        inp.u32()
    };
    let body = cmode & 0x80 == 0;
    let n = if body {
        usize::from(inp.u16()) % (rig.max_request + 64)
    } else {
        0
    };
    let salt = inp.u8();
    let mut user = Vec::with_capacity(8 + n);
    if body {
        let id = if salt & 1 == 0 { ECHO } else { inp.u32() };
        let status = match salt >> 6 {
            0 | 1 => 1,
            2 => 2,
            _ => inp.u32(),
        };
        user.extend_from_slice(&id.to_be_bytes());
        user.extend_from_slice(&status.to_be_bytes());
        user.extend_from_slice(&pattern(n, salt));
    }
    let clen = if salt & 2 == 0 {
        user.len() as u32
    } else {
        inp.u32()
    };
    let mut msg = Vec::with_capacity(28 + user.len());
    msg.extend_from_slice(&src.to_be_bytes());
    msg.extend_from_slice(&dst.to_be_bytes());
    msg.extend_from_slice(&hlp.to_be_bytes());
    msg.extend_from_slice(&chan.to_be_bytes());
    msg.push(0);
    msg.push(flags);
    msg.extend_from_slice(&prot.to_be_bytes());
    msg.extend_from_slice(&seq.to_be_bytes());
    msg.extend_from_slice(&clen.to_be_bytes());
    msg.extend_from_slice(&user);
    let other = op & 0x80 != 0;
    let bmode = inp.u8();
    let frag = rig.frag_len.max(1);
    if msg.len() <= frag && bmode & 1 == 0 {
        let mut p = blast_header(0, msg.len(), 0, 1, 0).to_vec();
        p.extend_from_slice(&msg);
        let f = rig.frame(false, other, &p);
        rig.inject(&f);
        return;
    }
    // Fragments: which ones (all by default), in which order, SEND or
    // RETRANSMIT, under which message sequence number.
    let bseq = u32::from(inp.u16()).max(1);
    let nfrag = msg.len().div_ceil(frag).clamp(1, 16);
    let want = if bmode & 2 == 0 { u16::MAX } else { inp.u16() };
    let num_frag = if bmode & 4 == 0 {
        nfrag as u16
    } else {
        u16::from(inp.u8())
    };
    let bop = if bmode & 8 == 0 { 1 } else { 3 };
    let mut order: Vec<usize> = (0..nfrag).collect();
    if bmode & 0x10 != 0 {
        order.reverse();
    }
    if bmode & 0x20 != 0 {
        order.rotate_left(1);
        order.push(0);
    }
    for i in order {
        if want & (1 << i) == 0 {
            continue;
        }
        let part = msg
            .get(i * frag..((i + 1) * frag).min(msg.len()))
            .unwrap_or(&[]);
        let mut p = blast_header(bseq, part.len(), num_frag, bop, 1 << i).to_vec();
        p.extend_from_slice(part);
        let f = rig.frame(false, other, &p);
        rig.inject(&f);
    }
}

/// The `rpc_rx` target: see the module's documentation.
pub fn rpc_rx(data: &[u8]) {
    rpc_rx_reach(data);
}

/// How far an `rpc_rx` input got into the stack: what the corpus test
/// checks the seeds reach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RpcRxReach {
    /// Times A's echo procedure ran for the input's requests (past CHAN's
    /// at-most-once check, the setup's call not counted).
    pub procedure_runs: u64,
    /// A's calls that returned a reply.
    pub replies: usize,
    /// A's calls that failed with a typed error.
    pub failures: usize,
    /// Of those, the ones that failed because B rebooted.
    pub peer_rebooted: usize,
}

/// [`rpc_rx`](fn@rpc_rx), returning how far the input got.
pub fn rpc_rx_reach(data: &[u8]) -> RpcRxReach {
    let mut inp = Input { d: data };
    let net = if inp.u8() & 1 == 0 {
        RpcNet::Eth
    } else {
        RpcNet::Ip
    };
    let Some(mut rig) = Rig::new(net) else {
        panic!("rpc_rx setup failed");
    };
    let mut ops = 0;
    while !inp.is_empty() && ops < MAX_OPS {
        ops += 1;
        let op = inp.u8();
        match op % 8 {
            0 | 1 => {
                let n = usize::from(inp.u16()) % (FRAME_MAX + 1);
                let mut f = inp.bytes(n).to_vec();
                if op % 8 == 1 {
                    rig.fix_up(&mut f);
                }
                rig.inject(&f);
            }
            2 => message(&mut rig, op, &mut inp),
            3 => {
                // A NACK (or any BLAST control packet) for one of A's
                // fragmented messages.
                let (seq, num_frag) = rig.track.blast(inp.u8());
                let mode = inp.u8();
                let seq = if mode & 1 == 0 { seq } else { inp.u32() };
                let num_frag = if mode & 2 == 0 { num_frag } else { inp.u16() };
                let bop = if mode & 4 == 0 { 2 } else { inp.u8() };
                let len = if mode & 8 == 0 { 0 } else { inp.u32() as usize };
                let mask = inp.u16();
                let mut p = blast_header(seq, len, num_frag, bop, mask).to_vec();
                p[0..4].copy_from_slice(
                    &if mode & 16 == 0 { BLAST_BID } else { inp.u32() }.to_be_bytes(),
                );
                if mode & 32 != 0 {
                    let n = usize::from(inp.u8());
                    p.extend_from_slice(inp.bytes(n));
                }
                let f = rig.frame(false, op & 0x80 != 0, &p);
                rig.inject(&f);
            }
            4 => {
                // BIDCTL from B: flags, boot ids, tags, checksum.
                let t = rig.track;
                let flags = u16::from(inp.u8());
                let mode = inp.u8();
                let src = Track::bid(t.b_bid, mode, &mut inp);
                let dst = Track::bid(t.a_bid, mode >> 2, &mut inp);
                let req = if mode & 0x10 == 0 {
                    u32::from(inp.u16())
                } else {
                    inp.u32()
                };
                let rpl = if mode & 0x20 == 0 {
                    t.a_query_tag
                } else {
                    inp.u32()
                };
                let mut m = [0u8; 20];
                m[0..2].copy_from_slice(&flags.to_be_bytes());
                m[4..8].copy_from_slice(&src.to_be_bytes());
                m[8..12].copy_from_slice(&dst.to_be_bytes());
                m[12..16].copy_from_slice(&req.to_be_bytes());
                m[16..20].copy_from_slice(&rpl.to_be_bytes());
                let c = checksum::compute(&[&m]);
                m[2..4].copy_from_slice(&c);
                if mode & 0x40 != 0 {
                    m[2] ^= inp.u8() | 1;
                }
                let mut f = rig.frame(true, op & 0x80 != 0, &m);
                if mode & 0x80 != 0 {
                    // Link padding or a longer message.
                    let n = usize::from(inp.u8());
                    f.extend_from_slice(&pattern(n, 9));
                }
                rig.inject(&f);
            }
            5 => match inp.u8() % 4 {
                0 => rig.now = rig.now + Duration::from_micros(u64::from(inp.u16()) * 10),
                1 => rig.now = rig.now + Duration::from_millis(u64::from(inp.u16())),
                2 => rig.now = rig.now + Duration::from_secs(u64::from(inp.u8())),
                _ => {
                    if let Some(at) = rig.a.stack().poll_at() {
                        if at > rig.now {
                            rig.now = at;
                        }
                    }
                }
            },
            6 => app(&mut rig, op, &mut inp),
            _ => {
                // A BLAST header from fields, any payload.
                let prot = if op & 0x40 == 0 { BLAST_BID } else { inp.u32() };
                let seq = u32::from(inp.u16());
                let num_frag = u16::from(inp.u8());
                let bop = inp.u8() % 5;
                let mask = inp.u16();
                let n = usize::from(inp.u16()) % (FRAME_MAX - 14 - 20 + 1);
                let payload = inp.bytes(n);
                let len = if op & 0x20 == 0 {
                    payload.len()
                } else {
                    inp.u16().into()
                };
                let mut p = blast_header(seq, len, num_frag, bop, mask).to_vec();
                p[0..4].copy_from_slice(&prot.to_be_bytes());
                p.extend_from_slice(payload);
                let f = rig.frame(false, op & 0x80 != 0, &p);
                rig.inject(&f);
            }
        }
        rig.poll();
    }
    // Time runs out: every timer fires (CHAN gives up after a minute).
    for _ in 0..6 {
        rig.now = rig.now + Duration::from_secs(30);
        rig.poll();
    }
    for c in std::mem::take(&mut rig.calls) {
        rig.outcome(&c);
    }
    let runs = rig.a.rpc_server().map_or(0, |s| s.calls());
    RpcRxReach {
        procedure_runs: runs.saturating_sub(rig.setup_runs),
        ..rig.reach
    }
}

/// The application on A: calls, their outcomes, procedures.
fn app(rig: &mut Rig, op: u8, inp: &mut Input<'_>) {
    let which = inp.u8();
    match which % 6 {
        0 | 1 => {
            if rig.calls.len() < MAX_CALLS {
                let n = usize::from(inp.u16()) % (rig.max_request + 2);
                let id = if which & 0x80 == 0 { ECHO } else { inp.u32() };
                // B, or a peer nobody answers for.
                let peer = if which & 0x40 == 0 {
                    rig.b_peer
                } else if rig.net == RpcNet::Eth {
                    Peer::Mac(MacAddr([2, 0, 0, 0, 0, inp.u8()]))
                } else {
                    Peer::Ipv4(Ipv4Addr::new(10, 0, 0, inp.u8()))
                };
                if let Ok(c) = rig.a.rpc_start(peer, id, &pattern(n, op)) {
                    rig.calls.push(c);
                }
            }
        }
        2 => {
            let mut i = 0;
            while i < rig.calls.len() {
                let c = rig.calls[i];
                if rig.outcome(&c) {
                    rig.calls.swap_remove(i);
                } else {
                    i += 1;
                }
            }
        }
        3 => {
            if !rig.calls.is_empty() {
                let i = usize::from(inp.u8()) % rig.calls.len();
                let c = rig.calls.swap_remove(i);
                rig.a.rpc_abandon(c);
            }
        }
        4 => {
            if let Ok(mut s) = rig.a.rpc_server() {
                let _ = s.unregister(ECHO);
            }
        }
        _ => {
            if let Ok(mut s) = rig.a.rpc_server() {
                let _ = s.register(ECHO, Echo);
                let _ = s.calls();
            }
            let _ = rig.a.report();
            let _ = rig.a.rpc_calls_in_flight();
        }
    }
}

/// A recorded frame with its boot ids and BIDCTL tags (which come from
/// the wall clock) replaced by fixed values, so that the seeds are the
/// same on every run; the fix-up of the replaying operation puts the
/// rig's in.
fn placeholders(f: &[u8]) -> Vec<u8> {
    let mut f = f.to_vec();
    if let Some((bidctl, at)) = rpc_payload(&f) {
        let at = at.min(f.len());
        let m = &mut f[at..];
        if bidctl && m.len() >= 20 {
            m[4..8].copy_from_slice(&1u32.to_be_bytes());
            if m[8..12] != [0; 4] {
                m[8..12].copy_from_slice(&2u32.to_be_bytes());
            }
            m[12..16].copy_from_slice(&3u32.to_be_bytes());
            m[16..20].copy_from_slice(&4u32.to_be_bytes());
            m[2] = 0;
            m[3] = 0;
            let c = checksum::compute(&[&m[..20]]);
            m[2..4].copy_from_slice(&c);
        } else if !bidctl && m.len() >= 32 {
            let seq = be32(m, 4).unwrap_or(0);
            let mask = be16(m, 18).unwrap_or(0);
            if seq == 0 || mask == 1 {
                m[20..24].copy_from_slice(&1u32.to_be_bytes());
                m[24..28].copy_from_slice(&2u32.to_be_bytes());
            }
        }
    }
    fix_checksums(&mut f);
    f
}

/// Seeds for [`rpc_rx`]: on each network, B's frames of the setup's
/// call exchange replayed (with this rig's boot ids put in), BIDCTL
/// handshakes and a reboot, replies to A's calls in flight, requests to
/// A's server (short, fragmented, one fragment late), NACKs, and A's own
/// calls.
pub fn rpc_rx_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (tag, net) in [("eth", RpcNet::Eth), ("ip", RpcNet::Ip)] {
        let netb = u8::from(net == RpcNet::Ip);
        let Some(rig) = Rig::new(net) else {
            continue;
        };
        // B's frames of the setup: the BIDCTL handshake, the call, the
        // reply.
        let mut e = Enc::default();
        e.u8(netb);
        for f in &rig.b_frames {
            let f = placeholders(f);
            e.u8(1).u16(f.len() as u16).bytes(&f);
        }
        out.push((format!("{tag}_exchange"), e.0));

        // BIDCTL: a query from B, a response to A's query, a keepalive, a
        // bad checksum, then B reboots (a broadcast with a larger boot id).
        let mut e = Enc::default();
        e.u8(netb);
        e.u8(4).u8(1).u8(0x04).u16(7); // QUERY, dst 0
        e.u8(4).u8(2).u8(0).u16(0); // RESPONSE to A's tag
        e.u8(4).u8(0).u8(0).u16(0); // keepalive
        e.u8(4).u8(1).u8(0x40).u16(8).u8(0x10); // bad checksum
        e.u8(5).u8(2).u8(5);
        e.u8(4).u8(4).u8(0x03 | 0x04).u8(1).u16(0); // BCAST, src B+1, dst 0
        e.u8(5).u8(3);
        e.u8(4).u8(3).u8(0x03).u8(1).u16(9); // QUERY|RESPONSE from B+1
        e.u8(6).u8(2);
        out.push((format!("{tag}_bidctl"), e.0));

        // Replies to A's calls in flight: the CHAN headers A sent, newest
        // first (the 5,000-byte call is fragmented), then an ack request.
        let mut e = Enc::default();
        e.u8(netb);
        for i in (0..rig.track.n_chans as u8).rev() {
            // message: sel 0 (B's and A's bids, CHAN), cmode 0, chan i,
            // seq +0, body n, salt 0, bmode 0.
            e.u8(2).u8(0).u8(0).u8(i).u8(0).u16(10).u8(0).u8(0);
        }
        e.u8(2).u8(0).u8(0).u8(0).u8(0).u16(5000).u8(0).u8(0).u16(7);
        e.u8(2).u8(0).u8(0x80 | 0x10).u8(0).u8(0).u8(0).u8(0); // ACK_REQUESTED, no body
        e.u8(6).u8(2);
        out.push((format!("{tag}_replies"), e.0));

        // Requests to A's server on B's channels (A's replies name them),
        // the next sequence number: short, fragmented with fragment 2
        // late, a duplicate; then NACKs for A's fragmented messages.
        let mut e = Enc::default();
        e.u8(netb);
        for i in 0..rig.track.n_chans as u8 {
            e.u8(2).u8(0).u8(0).u8(i).u8(1).u16(33).u8(0).u8(0);
            e.u8(2).u8(0).u8(0).u8(i).u8(1).u16(33).u8(0).u8(0);
        }
        e.u8(2)
            .u8(0)
            .u8(0)
            .u8(0)
            .u8(2)
            .u16(4000)
            .u8(0)
            .u8(2)
            .u16(11)
            .u16(0xfffd);
        e.u8(5).u8(1).u16(300);
        e.u8(2)
            .u8(0)
            .u8(0)
            .u8(0)
            .u8(2)
            .u16(4000)
            .u8(0)
            .u8(2 | 8)
            .u16(11)
            .u16(0x0002);
        for i in 0..rig.track.n_blasts as u8 {
            e.u8(3).u8(i).u8(0).u16(0x0001);
        }
        e.u8(5).u8(1).u16(2000);
        e.u8(6).u8(2);
        out.push((format!("{tag}_requests"), e.0));

        // A's own calls: to B (answered below from the tracked headers),
        // to a peer that never answers, abandoned, the procedure removed,
        // timers.
        let mut e = Enc::default();
        e.u8(netb);
        e.u8(6).u8(0).u16(0);
        e.u8(6).u8(1).u16(20000);
        e.u8(6).u8(0x40).u16(64).u8(77);
        e.u8(2).u8(0).u8(0).u8(0xff).u8(0).u16(0).u8(0).u8(0);
        e.u8(6).u8(3).u8(1);
        e.u8(6).u8(4);
        e.u8(2).u8(0).u8(0).u8(0).u8(1).u16(12).u8(0).u8(0);
        e.u8(5).u8(2).u8(10);
        e.u8(6).u8(5);
        e.u8(5).u8(3);
        e.u8(6).u8(2);
        out.push((format!("{tag}_calls"), e.0));

        // Raw BLAST headers: a NACK for nothing, a bad op, a fragment of a
        // message too many fragments long.
        let mut e = Enc::default();
        e.u8(netb);
        e.u8(7).u16(5).u8(3).u8(2).u16(1).u16(0);
        e.u8(7).u16(5).u8(3).u8(4).u16(1).u16(8).bytes(&[0; 8]);
        e.u8(7)
            .u16(6)
            .u8(40)
            .u8(1)
            .u16(0x8000)
            .u16(16)
            .bytes(&[1; 16]);
        out.push((format!("{tag}_blast"), e.0));
    }
    out
}
