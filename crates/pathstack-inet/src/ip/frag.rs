//! IPv4 fragmentation on output (RFC 791 §2.3 "Fragmentation", §3.2
//! "Fragmentation and reassembly" procedure; RFC 1122 §3.3.3).
//!
//! A payload longer than the MTU allows is cut into pieces whose lengths
//! (except the last) are multiples of 8 bytes; each piece gets a copy of the
//! header with its offset (in 8-byte units on the wire) and the MF flag set
//! on all but the last. This stack emits no IP options, so every fragment
//! carries the same 20-byte basic header and the RFC 791 "copied" flag of
//! options never comes into play.
//!
//! Buffers: fragments are emitted in ascending offset order. Fragment *k*
//! (all but the last) is a new message from the payload's own pool holding
//! a copy of its piece; the last fragment reuses the payload's buffer, its
//! header pushed into the space the earlier pieces occupied. So each payload
//! byte is copied at most once and nothing comes from the heap.

use crate::wire::ipv4::{Ipv4EmitError, Ipv4Repr, MIN_HEADER_LEN};
use pathstack_core::{Msg, MsgError};

/// Why a payload could not be sent as (fragmented) datagrams.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FragError {
    /// DF is set and the datagram exceeds the MTU. The caller answers with
    /// ICMP fragmentation needed carrying `mtu` (RFC 1191 §4) when
    /// forwarding, or reports EMSGSIZE to a local sender.
    #[error("datagram needs fragmentation but DF is set (MTU {mtu})")]
    DontFragment {
        /// The MTU that was exceeded.
        mtu: u16,
    },
    /// The MTU leaves no room for 8 payload bytes after the header.
    #[error("MTU {0} too small to fragment")]
    MtuTooSmall(u16),
    /// The payload plus header exceeds 65,535 bytes.
    #[error("payload of {0} bytes does not fit one IPv4 datagram")]
    TooLong(usize),
    /// The pool could not provide a buffer. Fragments already handed out
    /// are incomplete without the rest: the datagram is lost (the receiver
    /// times out its reassembly).
    #[error("no buffer for a fragment: {0}")]
    Msg(#[from] MsgError),
}

impl From<Ipv4EmitError> for FragError {
    fn from(e: Ipv4EmitError) -> Self {
        match e {
            Ipv4EmitError::PayloadTooLong(n) => FragError::TooLong(n),
            Ipv4EmitError::Msg(m) => FragError::Msg(m),
        }
    }
}

/// Sends `payload` (an upper-layer PDU, no IP header) as one datagram with
/// `header`, or as fragments if it exceeds `mtu`; each finished datagram
/// (IP header pushed) is handed to `out` in ascending offset order. Returns
/// the number of datagrams.
///
/// `header.frag_offset` and `header.more_frags` are honoured, so a fragment
/// can be fragmented again (RFC 791: the offsets add up and MF stays set if
/// the original had it). On success `payload` is left empty
/// (`Msg::default()`); on `DontFragment`, `MtuTooSmall` or `TooLong` it is
/// untouched, so the caller can quote it in an ICMP error.
pub fn fragment(
    payload: &mut Msg,
    header: &Ipv4Repr,
    mtu: u16,
    mut out: impl FnMut(Msg),
) -> Result<usize, FragError> {
    let len = payload.len();
    let mtu_us = usize::from(mtu);
    if len + MIN_HEADER_LEN > crate::wire::ipv4::MAX_DATAGRAM_LEN {
        return Err(FragError::TooLong(len));
    }
    if len + MIN_HEADER_LEN <= mtu_us {
        let mut h = *header;
        h.push_onto(payload)?;
        out(std::mem::take(payload));
        return Ok(1);
    }
    if header.dont_frag {
        return Err(FragError::DontFragment { mtu });
    }
    // RFC 791: every fragment but the last carries a multiple of 8 bytes.
    let chunk = mtu_us.saturating_sub(MIN_HEADER_LEN) / 8 * 8;
    if chunk == 0 {
        return Err(FragError::MtuTooSmall(mtu));
    }
    let base = usize::from(header.frag_offset);
    if base + len > crate::wire::ipv4::MAX_DATAGRAM_LEN - MIN_HEADER_LEN {
        return Err(FragError::TooLong(base + len));
    }
    let last_start = (len - 1) / chunk * chunk;
    let mut count = 0;
    let mut off = 0;
    while off < last_start {
        // `split_off(len)` allocates an empty message from the payload's
        // own pool (Msg exposes no pool handle); the piece is copied into it.
        let mut piece = payload.split_off(payload.len())?;
        piece.extend_from_slice(&payload.as_slice()[off..off + chunk])?;
        let mut h = *header;
        h.frag_offset = (base + off) as u16;
        h.more_frags = true;
        h.push_onto(&mut piece)?;
        out(piece);
        count += 1;
        off += chunk;
    }
    let mut last = std::mem::take(payload);
    last.pop(last_start)?;
    let mut h = *header;
    h.frag_offset = (base + last_start) as u16;
    h.more_frags = header.more_frags;
    h.push_onto(&mut last)?;
    out(last);
    Ok(count + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4::{protocol, tests::A, tests::B, Ipv4Packet};
    use pathstack_core::{MsgPool, PoolConfig};
    use proptest::prelude::*;

    fn header() -> Ipv4Repr {
        Ipv4Repr::new(A, B, protocol::UDP, 42, 0)
    }

    fn collect(payload: &[u8], h: &Ipv4Repr, mtu: u16) -> Result<Vec<Vec<u8>>, FragError> {
        let pool = MsgPool::new(PoolConfig::default());
        let mut m = pool.alloc_copy(payload).unwrap();
        let mut v = Vec::new();
        fragment(&mut m, h, mtu, |f| v.push(f.as_slice().to_vec()))?;
        assert_eq!(pool.stats().heap_allocs, 0);
        Ok(v)
    }

    #[test]
    fn small_payload_is_one_datagram() {
        let v = collect(b"hello", &header(), 1500).unwrap();
        assert_eq!(v.len(), 1);
        let p = Ipv4Packet::new_checked(&v[0]).unwrap();
        assert!(!p.is_fragment());
        assert_eq!(p.payload(), b"hello");
    }

    #[test]
    fn rfc791_offsets_and_flags() {
        let data: Vec<u8> = (0..4000u32).map(|i| i as u8).collect();
        let v = collect(&data, &header(), 1500).unwrap();
        let got: Vec<(usize, bool, usize)> = v
            .iter()
            .map(|f| {
                let p = Ipv4Packet::new_checked(f).unwrap();
                assert_eq!(p.ident(), 42);
                assert!(f.len() <= 1500);
                (p.frag_offset(), p.more_frags(), p.payload().len())
            })
            .collect();
        assert_eq!(
            got,
            vec![(0, true, 1480), (1480, true, 1480), (2960, false, 1040)]
        );
        // On the wire the offset is in 8-byte units: 1480 / 8 = 185.
        assert_eq!(&v[1][6..8], &[0x20, 185]);
        let joined: Vec<u8> = v.iter().flat_map(|f| f[20..].to_vec()).collect();
        assert_eq!(joined, data);
    }

    #[test]
    fn dont_fragment_is_refused_and_payload_kept() {
        let pool = MsgPool::new(PoolConfig::default());
        let mut m = pool.alloc(2000).unwrap();
        let mut h = header();
        h.dont_frag = true;
        assert_eq!(
            fragment(&mut m, &h, 1500, |_| {}),
            Err(FragError::DontFragment { mtu: 1500 })
        );
        assert_eq!(m.len(), 2000);
        assert_eq!(
            fragment(&mut m, &header(), 27, |_| {}),
            Err(FragError::MtuTooSmall(27))
        );
    }

    #[test]
    fn refragmenting_a_fragment_keeps_offsets_and_mf() {
        let mut h = header();
        h.frag_offset = 1480;
        h.more_frags = true;
        let v = collect(&[7u8; 1480], &h, 576).unwrap();
        let last = Ipv4Packet::new_checked(v.last().unwrap()).unwrap();
        assert!(last.more_frags(), "MF of the original survives");
        assert_eq!(Ipv4Packet::new_checked(&v[0]).unwrap().frag_offset(), 1480);
        assert_eq!(
            Ipv4Packet::new_checked(&v[1]).unwrap().frag_offset(),
            1480 + 552
        );
    }

    proptest! {
        /// Any payload and MTU: fragments fit the MTU, are in order, carry
        /// multiples of 8 bytes except the last, and concatenate to the payload.
        #[test]
        fn fragments_reassemble_by_concatenation(len in 0usize..9000, mtu in 68u16..3000) {
            let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let v = collect(&data, &header(), mtu).unwrap();
            let mut next = 0;
            for (i, f) in v.iter().enumerate() {
                prop_assert!(f.len() <= usize::from(mtu));
                let p = Ipv4Packet::new_checked(f).unwrap();
                prop_assert_eq!(p.frag_offset(), next);
                let last = i + 1 == v.len();
                prop_assert_eq!(p.more_frags(), !last);
                if !last { prop_assert_eq!(p.payload().len() % 8, 0); }
                prop_assert_eq!(p.payload(), &data[next..next + p.payload().len()]);
                next += p.payload().len();
            }
            prop_assert_eq!(next, len);
        }
    }
}
