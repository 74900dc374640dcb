//! What the `rpc_rx` harness knows of host A, read back from the frames
//! A sends: its boot id and B's (which come from the wall clock, so an
//! input cannot name them), the tag of A's last BIDCTL query, the CHAN
//! channels and sequence numbers A used, and A's fragmented BLAST
//! messages.

use crate::input::Input;
use pathstack_rpc::modules::protocol;

/// CHAN headers and BLAST messages of A remembered at most.
const MAX_SEEN: usize = 16;

/// What A sent, as the harness reads it back.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Track {
    pub(crate) a_bid: u32,
    pub(crate) b_bid: u32,
    /// The tag of A's last BIDCTL query.
    pub(crate) a_query_tag: u32,
    /// (chan, flags, seq) of CHAN headers A sent, newest last.
    pub(crate) chans: [(u16, u8, u32); MAX_SEEN],
    pub(crate) n_chans: usize,
    /// (seq, num_frag) of A's fragmented BLAST messages, newest last.
    pub(crate) blasts: [(u32, u16); MAX_SEEN],
    pub(crate) n_blasts: usize,
    /// A's BLAST fragment payload: the length of the first fragment of a
    /// message of several.
    pub(crate) frag_len: Option<usize>,
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

pub(crate) fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

pub(crate) fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// Where a frame's BLAST or BIDCTL message starts: `(is_bidctl, offset)`.
pub(crate) fn rpc_payload(f: &[u8]) -> Option<(bool, usize)> {
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
    pub(crate) fn see(&mut self, f: &[u8]) {
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
            if num_frag > 1 && self.frag_len.is_none() {
                self.frag_len = be32(m, 8).and_then(|l| usize::try_from(l).ok());
            }
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

    pub(crate) fn chan(&self, i: u8) -> (u16, u8, u32) {
        if self.n_chans == 0 {
            (1, 0, 1)
        } else {
            self.chans[usize::from(i) % self.n_chans]
        }
    }

    pub(crate) fn blast(&self, i: u8) -> (u32, u16) {
        if self.n_blasts == 0 {
            (1, 2)
        } else {
            self.blasts[usize::from(i) % self.n_blasts]
        }
    }

    /// The sender's boot id in a frame: a BIDCTL message's source, or the
    /// BID header's source in a short BLAST message or a first fragment.
    pub(crate) fn sender_bid(f: &[u8]) -> Option<u32> {
        let (bidctl, at) = rpc_payload(f)?;
        let m = f.get(at..)?;
        if bidctl {
            return be32(m, 4);
        }
        let (seq, op, mask) = (be32(m, 4)?, *m.get(14)?, be16(m, 18)?);
        (op == 1 && (seq == 0 || mask == 1))
            .then(|| be32(m, 20))
            .flatten()
    }

    /// A boot id from a mode (two bits) and the input: `base`, 0, raw, or
    /// `base` moved by a small step.
    pub(crate) fn bid(base: u32, mode: u8, inp: &mut Input<'_>) -> u32 {
        match mode & 3 {
            0 => base,
            1 => 0,
            2 => inp.u32(),
            _ => base.wrapping_add_signed(i32::from(inp.u8() as i8)),
        }
    }
}
