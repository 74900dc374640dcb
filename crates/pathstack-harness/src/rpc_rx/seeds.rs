//! The `rpc_rx` seeds: on each network, B's frames of the setup replayed,
//! BIDCTL handshakes and a reboot, replies to A's calls, requests to A's
//! server, NACKs, A's own calls, and raw BLAST headers.

use super::boot_ids::set_boot_ids;
use super::rig::Rig;
use crate::input::Enc;
use pathstack_rpc::modules::RpcNet;

/// A recorded frame with its boot ids and BIDCTL tags (which come from
/// the wall clock) replaced by fixed values, so that the seeds are the
/// same on every run; the fix-up of the replaying operation puts the
/// rig's in.
fn placeholders(f: &[u8]) -> Vec<u8> {
    let mut f = f.to_vec();
    set_boot_ids(&mut f, 1, 2, |m| {
        m[12..16].copy_from_slice(&3u32.to_be_bytes());
        m[16..20].copy_from_slice(&4u32.to_be_bytes());
    });
    f
}

/// Seeds for [`rpc_rx`](super::rpc_rx): on each network, B's frames of the setup's
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
        // A 4,000-byte request on channel 0, seq +2, under BLAST seq 11,
        // only the fragments `want` names (bmode 2), as RETRANSMIT when
        // `bmode` adds 8.
        let fragmented = |e: &mut Enc, bmode: u8, want: u16| {
            e.u8(2).u8(0).u8(0).u8(0).u8(2).u16(4000).u8(0);
            e.u8(bmode).u16(11).u16(want);
        };
        fragmented(&mut e, 2, 0xfffd);
        e.u8(5).u8(1).u16(300);
        fragmented(&mut e, 2 | 8, 0x0002);
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
