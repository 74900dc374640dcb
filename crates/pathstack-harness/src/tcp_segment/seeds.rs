//! The `tcp_segment` seeds: every stage with a few dialogues, and a raw
//! SYN with every option.

use super::conn::{CLIENT_PORT, SERVER_PORT, STAGES};
use crate::input::Enc;

/// Seeds for [`tcp_segment`](super::tcp_segment): every stage with a few dialogues.
pub fn tcp_segment_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for stage in 0..STAGES {
        for (swap, flags) in [(0u8, 0u8), (0x10, 0), (0, 0x0e), (0x10, 0x77)] {
            if stage < 3 && swap != 0 {
                continue;
            }
            let st = stage | swap;
            let name = format!("stage{stage:02}_s{swap:02x}_f{flags:02x}");
            let head = |e: &mut Enc| {
                e.u8(st).u8(flags).u8(flags).u8(0);
            };
            // The peer's segments in order, our answers back to it, time.
            let mut e = Enc::default();
            head(&mut e);
            for k in 0..6 {
                e.u8(2).u8(0).u8(7).u16(0); // deliver and forget the first
                e.u8(12 | 0x80).u8(8); // the peer answers
                e.u8(3).u16(100 * k + 50);
            }
            e.u8(4).u8(4);
            out.push((format!("{name}_dialogue"), e.0));
            // Structured segments: in-window data, an old ACK, a SYN, a
            // RST, a FIN, SACK blocks, timestamps.
            let mut e = Enc::default();
            head(&mut e);
            structured(&mut e, 0x18, 0, 0, 65535)
                .u8(8)
                .u16(1)
                .u16(500)
                .u8(7);
            structured(&mut e, 0x10, -16, 0, 1024).u8(0).u16(0).u8(0);
            structured(&mut e, 0x12, 0, 0, 65535)
                .u8(0x0f)
                .u16(1460)
                .u8(7)
                .u16(1)
                .u16(0)
                .u8(0);
            structured(&mut e, 0x10, 0, 0, 8000)
                .u8(0x38)
                .u16(1)
                .u16(1448)
                .u16(100)
                .u16(2896)
                .u16(1448)
                .u16(0)
                .u16(0)
                .u8(0);
            structured(&mut e, 0x11, 0, 0, 65535)
                .u8(8)
                .u16(1)
                .u16(0)
                .u8(0);
            e.u8(3).u16(5000);
            structured(&mut e, 0x04, 0, 0, 0).u8(0).u16(0).u8(0);
            e.u8(4).u8(4).u8(5).u8(70);
            out.push((format!("{name}_structured"), e.0));
            // The application: send, receive, shutdown, close, timers.
            let mut e = Enc::default();
            head(&mut e);
            e.u8(6).u16(20000).u8(12 | 0x80).u8(64).u8(7).u16(4096);
            e.u8(4).u8(12 | 0x80).u8(64).u8(4).u8(8).u8(1);
            e.u8(12 | 0x80).u8(64).u8(4).u8(9).u8(12 | 0x80).u8(64);
            e.u8(5 | 0x80).u8(2).u8(4);
            out.push((format!("{name}_app"), e.0));
        }
    }
    // A raw header: a SYN with every option.
    let mut e = Enc::default();
    e.u8(0).u8(0).u8(0).u8(0);
    let mut h = vec![0u8; 40];
    h[0..2].copy_from_slice(&CLIENT_PORT.to_be_bytes());
    h[2..4].copy_from_slice(&SERVER_PORT.to_be_bytes());
    h[4..8].copy_from_slice(&0xffff_f000u32.to_be_bytes());
    h[12] = 10 << 4;
    h[13] = 0x02;
    h[14..16].copy_from_slice(&65535u16.to_be_bytes());
    h[20..40].copy_from_slice(&[
        2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
    ]);
    e.u8(0).u8(h.len() as u8).bytes(&h).u8(4);
    out.push(("raw_syn_to_listener".into(), e.0));
    out
}

/// Op 1 of the input, a segment from structured fields
/// ([`structured_segment`](super::segments::structured_segment)): its
/// `flags`, its sequence and acknowledgment numbers as offsets from the
/// connection's (modes 0), its `window`; the options byte, their fields
/// and the payload's length and pattern follow as the caller writes them.
fn structured(e: &mut Enc, flags: u8, dseq: i16, dack: i16, window: u16) -> &mut Enc {
    e.u8(1)
        .u8(flags)
        .u8(0)
        .u16(dseq as u16)
        .u16(dack as u16)
        .u16(window)
}
