//! BLAST messages from B built from the input's fields: the RPC message
//! (BID, CHAN, MSELECT and data) short or in fragments, and bare BLAST
//! headers.

use super::rig::Rig;
use super::track::Track;
use super::{BID_CHAN, BLAST_BID, CHAN_MSELECT, ECHO};
use crate::input::{pattern, Input};

/// A BLAST header's bytes.
pub(crate) fn blast_header(seq: u32, len: usize, num_frag: u16, op: u8, mask: u16) -> [u8; 20] {
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
pub(crate) fn message(rig: &mut Rig, op: u8, inp: &mut Input<'_>) {
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
        rig.wire.inject(&f);
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
        rig.wire.inject(&f);
    }
}
