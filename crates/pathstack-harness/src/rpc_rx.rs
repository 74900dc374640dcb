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
//! | 5 | time passes ([`HostOnWire::pass_time`](crate::host_on_wire::HostOnWire::pass_time)) |
//! | 6 | the application on A: calls (to B or to a silent peer), their outcomes, abandoning, procedures |
//! | 7 | a BLAST header from fields with any payload |
//!
//! Bit 7 of ops 2, 3, 4 and 7 frames the message for the other network.
//!
//! The setup reads A's and B's boot ids and A's fragment length from the
//! frames of the call exchange, not from the stack: the harness sees A as
//! a peer on the wire would.

mod app;
mod boot_ids;
mod message;
mod rig;
mod seeds;
mod track;

pub use seeds::rpc_rx_seeds;

use crate::frames::FRAME_MAX;
use crate::input::{pattern, Input};
use crate::operations::{self, Target};
use app::app;
use message::{blast_header, message};
use pathstack_core::time::Duration;
use pathstack_inet::wire::checksum;
use pathstack_rpc::modules::{protocol, RpcNet};
use rig::Rig;
use track::Track;

/// Calls of A in flight at most (the harness's list, not the stack's).
const MAX_CALLS: usize = 8;
/// The echo procedure's id.
const ECHO: u32 = protocol::XRPCTEST_ID;
/// BLAST's `prot_id` for BID.
const BLAST_BID: u32 = protocol::BID;
/// BID's `hlpNum` for CHAN.
const BID_CHAN: u32 = protocol::CHAN;
/// CHAN's `prot_id` for MSELECT.
const CHAN_MSELECT: u32 = protocol::MSELECT;

impl Target for Rig {
    const MAX_OPS: usize = 256;
    // CHAN gives up on a call after a minute.
    const RUN_OUT_ROUNDS: usize = 6;

    fn apply(&mut self, op: u8, inp: &mut Input<'_>) {
        let rig = self;
        match op % 8 {
            0 | 1 => {
                let n = usize::from(inp.u16()) % (FRAME_MAX + 1);
                let mut f = inp.bytes(n).to_vec();
                if op % 8 == 1 {
                    rig.fix_up(&mut f);
                }
                rig.wire.inject(&f);
            }
            2 => message(rig, op, inp),
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
                rig.wire.inject(&f);
            }
            4 => {
                // BIDCTL from B: flags, boot ids, tags, checksum.
                let t = rig.track;
                let flags = u16::from(inp.u8());
                let mode = inp.u8();
                let src = Track::bid(t.b_bid, mode, inp);
                let dst = Track::bid(t.a_bid, mode >> 2, inp);
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
                rig.wire.inject(&f);
            }
            5 => rig.wire.pass_time(inp),
            6 => app(rig, op, inp),
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
                rig.wire.inject(&f);
            }
        }
    }

    fn settle(&mut self) {
        self.poll();
    }

    fn advance(&mut self, by: Duration) {
        self.wire.now = self.wire.now + by;
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
    let mut inp = Input::new(data);
    let net = if inp.u8() & 1 == 0 {
        RpcNet::Eth
    } else {
        RpcNet::Ip
    };
    let Some(mut rig) = Rig::new(net) else {
        panic!("rpc_rx setup failed");
    };
    operations::run(&mut rig, &mut inp);
    for c in std::mem::take(&mut rig.calls) {
        rig.outcome(&c);
    }
    let runs = rig.wire.a.rpc().server().map_or(0, |s| s.calls());
    RpcRxReach {
        procedure_runs: runs.saturating_sub(rig.setup_runs),
        ..rig.reach
    }
}
