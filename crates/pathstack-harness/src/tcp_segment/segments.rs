//! Segments for the fuzzed control block built from the input: from
//! structured fields relative to the connection's sequence numbers, or
//! from raw header bytes through the wire parser.

use super::conn::{Conn, Seg};
use crate::frames::{A_IP, B_IP};
use crate::input::{pattern, Input};
use pathstack_inet::wire::checksum;
use pathstack_inet::wire::ipv4::protocol;
use pathstack_inet::wire::tcp::{TcpFlags, TcpOptions, TcpPacket, TcpRepr};

/// The SYN options `opt`'s low bits ask for: MSS (bit 0) and window
/// scale (bit 1) read from `inp`, SACK-permitted (bit 2).
pub(crate) fn syn_options(inp: &mut Input<'_>, opt: u8) -> TcpOptions {
    let mut options = TcpOptions::default();
    if opt & 1 != 0 {
        options.mss = Some(inp.u16());
    }
    if opt & 2 != 0 {
        options.window_scale = Some(inp.u8());
    }
    options.sack_permitted = opt & 4 != 0;
    options
}

/// One segment built from structured fields relative to the connection.
pub(crate) fn structured_segment(inp: &mut Input<'_>, c: &Conn) -> Seg {
    let flags = TcpFlags::from_bits(inp.u8());
    let modes = inp.u8();
    let dseq = i32::from(inp.i16());
    let dack = i32::from(inp.i16());
    let seq = match modes & 3 {
        0 => c.t.rcv_nxt().0.wrapping_add_signed(dseq),
        1 => c.t.rcv_nxt().0.wrapping_add_signed(dseq * 1024),
        2 => c.p.snd_nxt().0.wrapping_add_signed(dseq),
        _ => inp.u32(),
    };
    let ack = match (modes >> 2) & 3 {
        0 => c.t.snd_una().0.wrapping_add_signed(dack),
        1 => c.t.snd_nxt().0.wrapping_add_signed(dack),
        2 => c.t.snd_una().0.wrapping_add_signed(dack * 1024),
        _ => inp.u32(),
    };
    let window = inp.u16();
    let urgent = if modes & 0x10 != 0 { inp.u16() } else { 0 };
    let opt = inp.u8();
    let mut options = syn_options(inp, opt);
    if opt & 8 != 0 {
        let dv = i32::from(inp.i16());
        let tsval = if modes & 0x20 != 0 {
            inp.u32()
        } else {
            c.p_tsval.wrapping_add_signed(dv)
        };
        options.timestamps = Some((tsval, c.t_tsval));
    }
    let nblocks = usize::from((opt >> 4) & 7);
    if nblocks > 0 {
        let mut blocks = [(0u32, 0u32); 4];
        for b in blocks.iter_mut().take(nblocks.min(4)) {
            let l = c.t.snd_una().0.wrapping_add(u32::from(inp.u16()));
            *b = (l, l.wrapping_add(u32::from(inp.u16())));
        }
        options.set_sack_blocks(&blocks[..nblocks.min(4)]);
    }
    let len = usize::from(inp.u16() % 4096);
    let payload = pattern(len, inp.u8());
    (
        TcpRepr {
            src_port: c.t.ports().1,
            dst_port: c.t.ports().0,
            seq,
            ack,
            flags,
            window,
            urgent,
            options,
        },
        payload,
    )
}

/// Raw header bytes (ports and checksum filled in) through
/// [`TcpPacket::new_checked`] and [`TcpRepr::parse`].
pub(crate) fn raw_segment(bytes: &[u8], (local, remote): (u16, u16)) -> Option<Seg> {
    let mut buf = bytes.to_vec();
    if buf.len() < 20 {
        buf.resize(20, 0);
    }
    buf[0..2].copy_from_slice(&remote.to_be_bytes());
    buf[2..4].copy_from_slice(&local.to_be_bytes());
    buf[16] = 0;
    buf[17] = 0;
    let len = u16::try_from(buf.len()).ok()?;
    let pseudo = checksum::pseudo_header_v4(B_IP, A_IP, protocol::TCP, len);
    let c = checksum::compute(&[&pseudo, &buf]);
    buf[16..18].copy_from_slice(&c);
    let p = TcpPacket::new_checked(&buf[..], B_IP, A_IP).ok()?;
    let r = TcpRepr::parse(&p).ok()?;
    Some((r, p.payload().to_vec()))
}
