//! The classic BPF program a TAP device attaches (`TUNATTACHFILTER`) to
//! discard the frames the stack asked it to
//! ([`Device::discard`](pathstack_core::device::Device::discard)).
//!
//! The kernel runs a TAP's socket filter on every frame it would queue for
//! the reader (`tun_net_xmit`), so a dropped frame costs no queue slot, no
//! wake-up and no `read(2)`. Written here rather than taken from a crate:
//! the program is a handful of fixed instruction shapes (load, mask,
//! compare, return), and the BPF crates build eBPF or assemble text, not
//! classic programs from [`FrameMatch`]es.
//!
//! The program, per match: load the frame length and skip the match when
//! the frame is too short to hold its fields (an absolute load past the
//! end would end the whole program with 0, dropping the frame); then for
//! each field, load it, mask it, and skip the match on a mismatch; a frame
//! that passes every field returns 0 (drop). After the last match: accept.

use pathstack_core::device::{FieldWidth, FrameMatch};

/// One classic BPF instruction (`struct sock_filter`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

// Instruction classes and modes (linux/bpf_common.h).
const LD: u16 = 0x00;
const ALU: u16 = 0x04;
const JMP: u16 = 0x05;
const RET: u16 = 0x06;
const W: u16 = 0x00;
const H: u16 = 0x08;
const B: u16 = 0x10;
const ABS: u16 = 0x20;
const LEN: u16 = 0x80;
const AND: u16 = 0x50;
const JEQ: u16 = 0x10;
const JGE: u16 = 0x30;
const K: u16 = 0x00;

/// What `ret` returns to keep the whole frame.
const ACCEPT: u32 = u32::MAX;

/// Instructions of one match's block: length check, at most a load, a
/// mask and a compare per field, and the drop.
fn block_len(m: &FrameMatch) -> usize {
    2 + m
        .tests()
        .iter()
        .map(|t| if t.mask == full_mask(t.width) { 2 } else { 3 })
        .sum::<usize>()
        + 1
}

fn full_mask(w: FieldWidth) -> u32 {
    match w {
        FieldWidth::U8 => 0xff,
        FieldWidth::U16 => 0xffff,
        FieldWidth::U32 => u32::MAX,
    }
}

/// The program that drops every frame matching any of `matches` and
/// accepts the rest.
pub(crate) fn discard_program(matches: &[FrameMatch]) -> Vec<Insn> {
    let mut prog = Vec::with_capacity(matches.iter().map(block_len).sum::<usize>() + 1);
    for m in matches {
        let end = prog.len() + block_len(m);
        // A jump's offset counts from the instruction after it; every
        // block is at most 2 + 3 × MAX_TESTS + 1 = 21 instructions, so the
        // offset to the next block fits the 8-bit field.
        let skip = |at: usize| u8::try_from(end - at - 1).expect("block shorter than 256");
        prog.push(Insn {
            code: LD | W | LEN,
            jt: 0,
            jf: 0,
            k: 0,
        });
        let at = prog.len();
        prog.push(Insn {
            code: JMP | JGE | K,
            jt: 0,
            jf: skip(at),
            k: m.min_len() as u32,
        });
        for t in m.tests() {
            let size = match t.width {
                FieldWidth::U8 => B,
                FieldWidth::U16 => H,
                FieldWidth::U32 => W,
            };
            prog.push(Insn {
                code: LD | size | ABS,
                jt: 0,
                jf: 0,
                k: u32::from(t.offset),
            });
            if t.mask != full_mask(t.width) {
                prog.push(Insn {
                    code: ALU | AND | K,
                    jt: 0,
                    jf: 0,
                    k: t.mask,
                });
            }
            let at = prog.len();
            prog.push(Insn {
                code: JMP | JEQ | K,
                jt: 0,
                jf: skip(at),
                k: t.value,
            });
        }
        prog.push(Insn {
            code: RET | K,
            jt: 0,
            jf: 0,
            k: 0,
        });
        debug_assert_eq!(prog.len(), end);
    }
    prog.push(Insn {
        code: RET | K,
        jt: 0,
        jf: 0,
        k: ACCEPT,
    });
    prog
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack_core::device::frame_match::any_matches;
    use proptest::prelude::*;

    /// A classic BPF interpreter for the instructions `discard_program`
    /// emits, with the kernel's rules: an absolute load past the end
    /// returns 0 from the program. The reference for the property below.
    fn run(prog: &[Insn], frame: &[u8]) -> u32 {
        let mut a: u32 = 0;
        let mut pc = 0;
        loop {
            let i = prog[pc];
            pc += 1;
            match i.code {
                c if c == LD | W | LEN => a = frame.len() as u32,
                c if c & 0x07 == LD && c & 0xe0 == ABS => {
                    let n = match c & 0x18 {
                        B => 1,
                        H => 2,
                        _ => 4,
                    };
                    let at = i.k as usize;
                    let Some(bytes) = frame.get(at..at + n) else {
                        return 0;
                    };
                    a = bytes.iter().fold(0, |acc, &b| acc << 8 | u32::from(b));
                }
                c if c == ALU | AND | K => a &= i.k,
                c if c == JMP | JEQ | K => pc += usize::from(if a == i.k { i.jt } else { i.jf }),
                c if c == JMP | JGE | K => pc += usize::from(if a >= i.k { i.jt } else { i.jf }),
                c if c == RET | K => return i.k,
                c => panic!("unexpected instruction {c:#x}"),
            }
        }
    }

    #[test]
    fn icmp_to_an_address_is_dropped_and_the_rest_accepted() {
        let icmp = FrameMatch::new()
            .with_u16(12, 0x0800)
            .with_u8(23, 1)
            .with_u32(30, 0x0a00_0001);
        let prog = discard_program(&[icmp]);
        let mut frame = vec![0u8; 60];
        frame[12..14].copy_from_slice(&[8, 0]);
        frame[23] = 1;
        frame[30..34].copy_from_slice(&[10, 0, 0, 1]);
        assert_eq!(run(&prog, &frame), 0);
        frame[23] = 17;
        assert_eq!(run(&prog, &frame), ACCEPT);
        // Too short for the address: accepted, not dropped by a load
        // past the end.
        assert_eq!(run(&prog, &frame[..20]), ACCEPT);
        assert_eq!(discard_program(&[]).len(), 1);
    }

    fn field_test() -> impl Strategy<Value = (u16, FieldWidth, u32, u32)> {
        (
            0u16..24,
            prop_oneof![
                Just(FieldWidth::U8),
                Just(FieldWidth::U16),
                Just(FieldWidth::U32)
            ],
            any::<u32>(),
            any::<u32>(),
            any::<bool>(),
        )
            .prop_map(|(off, w, mask, value, full)| {
                let m = if full {
                    full_mask(w)
                } else {
                    mask & full_mask(w)
                };
                (off, w, m, value)
            })
    }

    fn frame_match() -> impl Strategy<Value = FrameMatch> {
        prop::collection::vec(field_test(), 0..=FrameMatch::MAX_TESTS).prop_map(|tests| {
            tests
                .into_iter()
                .fold(FrameMatch::new(), |m, (o, w, mask, v)| {
                    m.with(o, w, mask, v)
                })
        })
    }

    proptest! {
        /// The program drops exactly the frames `FrameMatch::matches`
        /// says match one of the matches. Frames are drawn from a small
        /// alphabet, and some copy a match's values, so that matches
        /// happen.
        #[test]
        fn the_program_drops_exactly_the_matching_frames(
            matches in prop::collection::vec(frame_match(), 0..4),
            mut frame in prop::collection::vec(0u8..3, 0..32),
            plant in any::<bool>(),
        ) {
            if plant {
                if let Some(m) = matches.first() {
                    for t in m.tests() {
                        let at = usize::from(t.offset);
                        let n = t.width.bytes();
                        if frame.len() >= at + n {
                            let v = t.value.to_be_bytes();
                            frame[at..at + n].copy_from_slice(&v[4 - n..]);
                        }
                    }
                }
            }
            let prog = discard_program(&matches);
            let dropped = run(&prog, &frame) == 0;
            prop_assert_eq!(dropped, any_matches(&matches, &frame));
        }
    }
}
