//! IPv4 reassembly (RFC 791 §3.2 "Fragmentation and reassembly"; RFC 1122
//! §3.3.2), hardened against fragment attacks with hard bounds.
//!
//! Policy, decided here and tested below:
//!
//! * **Key**: (source, destination, protocol, identification) — RFC 791 §3.2.
//! * **Timer**: fixed, from the first fragment that arrives, default 60 s.
//!   RFC 791 suggested 15 s and raising it by each fragment's TTL; RFC 1122
//!   §3.3.2 replaced that with a fixed value between 60 and 120 s. We take
//!   the low end: the memory bounds below, not the timer, protect us, and a
//!   short timer limits how long a lost fragment pins a buffer. On expiry, if
//!   fragment zero arrived, [`Reassembler::poll`] reports a quote for an ICMP
//!   Time Exceeded (code 1) to the source (RFC 1122 §3.3.2, RFC 792).
//! * **Overlap** (RFC 5722 applied to IPv4, as RFC 8200 §4.5 does for IPv6):
//!   any fragment overlapping data already received discards the whole
//!   datagram, and its key is remembered until the datagram's timer runs
//!   out, so fragments of it still in flight are dropped too ("the entire
//!   datagram (and any constituent fragments, including those not yet
//!   received) MUST be silently discarded", RFC 5722 §4).
//! * **Exact duplicates** (a fragment lying wholly inside received data with
//!   identical bytes) are dropped alone and the datagram kept: RFC 8200 §4.5
//!   allows this, and networks (and our impairment wire) duplicate packets.
//!   Same range, different bytes is an overlap.
//! * **Bounds**: at most `max_datagrams` datagrams in progress (poisoned keys
//!   included), at most `max_datagram_len` bytes per datagram (65,535 with
//!   the header, the "ping of death" check), at most `max_total_bytes` of
//!   fragment data buffered over all datagrams, and at most [`MAX_RANGES`]
//!   disjoint received ranges per datagram. When a new fragment would break
//!   the datagram-count or byte bound, the **oldest** datagrams are discarded
//!   to make room (as Linux does): a flood can evict legitimate datagrams but
//!   never grow memory, and the newest traffic wins.
//!
//! Memory: each datagram in progress holds exactly one pool buffer (the
//! first fragment's own buffer if it is fragment zero, else a new one), grown
//! into the pool's large class when the data passes the small class; the
//! byte bound counts the span of data held (highest offset received). The
//! table is preallocated; nothing here touches the heap after
//! [`Reassembler::new`].

use crate::wire::icmp::Quote;
use crate::wire::ipv4::{Ipv4Repr, MAX_DATAGRAM_LEN, MIN_HEADER_LEN};
use pathstack_core::{DropCounts, Duration, Instant, Msg};
use std::net::Ipv4Addr;

/// Most disjoint byte ranges tracked per datagram. Adjacent fragments
/// merge into one range, so in-order or reverse-order arrival uses one;
/// only a datagram with more than this many holes at once is dropped.
pub const MAX_RANGES: usize = 64;

pathstack_core::drop_reasons! {
    /// Why a fragment (or a whole datagram in reassembly) was dropped.
    #[derive(thiserror::Error)]
    pub enum ReassemblyDropReason in "reassembly" {
        /// An empty fragment, or a non-last one whose length is not a multiple of 8 (RFC 791). Counts fragments.
        #[error("fragment length not a multiple of 8")]
        BadLength => "bad_length",
        /// Offset + length would exceed the maximum datagram size. Counts fragments.
        #[error("reassembled datagram would exceed the maximum size")]
        TooLarge => "too_large",
        /// Fragment overlaps received data: the datagram is discarded (RFC 5722). Counts datagrams.
        #[error("overlapping fragments")]
        Overlap => "overlap",
        /// Exact duplicate of received data, dropped alone. Counts fragments.
        #[error("duplicate fragment")]
        Duplicate => "duplicate",
        /// Fragment of a datagram already discarded for overlap. Counts fragments.
        #[error("fragment of a discarded datagram")]
        Poisoned => "poisoned",
        /// Fragments disagree on where the datagram ends. Counts datagrams.
        #[error("fragments disagree on the datagram length")]
        Inconsistent => "inconsistent",
        /// More than [`MAX_RANGES`] holes at once. Counts datagrams.
        #[error("too many holes in one datagram")]
        TooManyHoles => "too_many_holes",
        /// Discarded (oldest first) to stay within the datagram-count bound. Counts datagrams.
        #[error("reassembly table full")]
        TableFull => "table_full",
        /// Discarded (oldest first) to stay within the byte bound, or alone
        /// larger than the bound. Counts datagrams.
        #[error("reassembly memory limit")]
        MemoryLimit => "memory_limit",
        /// The buffer pool could not provide or grow a buffer. Counts datagrams.
        #[error("no buffer for reassembly")]
        NoBuffer => "no_buffer",
        /// The reassembly timer expired. Counts datagrams.
        #[error("reassembly timed out")]
        TimedOut => "timed_out",
    }
}

/// Bounds and timer of a [`Reassembler`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReassemblyConfig {
    /// Reassembly timeout, fixed from the first fragment (RFC 1122 §3.3.2).
    pub timeout: Duration,
    /// Most datagrams in progress (including remembered discarded keys).
    pub max_datagrams: usize,
    /// Most bytes of fragment data held over all datagrams.
    pub max_total_bytes: usize,
    /// Largest datagram accepted, header included (≤ 65,535).
    pub max_datagram_len: usize,
}

impl Default for ReassemblyConfig {
    /// 60 s, 16 datagrams, 1 MiB in total, 65,535 bytes per datagram
    /// (16 × 72 KiB fits the large class of `PoolConfig::default()`).
    fn default() -> Self {
        ReassemblyConfig {
            timeout: Duration::from_secs(60),
            max_datagrams: 16,
            max_total_bytes: 1 << 20,
            max_datagram_len: MAX_DATAGRAM_LEN,
        }
    }
}

/// The identity of a datagram being reassembled (RFC 791 §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragKey {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol.
    pub protocol: u8,
    /// Identification.
    pub ident: u16,
}

impl FragKey {
    /// The key of the datagram `header` belongs to.
    pub fn of(header: &Ipv4Repr) -> Self {
        FragKey {
            src: header.src,
            dst: header.dst,
            protocol: header.protocol,
            ident: header.ident,
        }
    }
}

/// What [`Reassembler::input`] did with a fragment.
#[derive(Debug)]
pub enum Reassembly {
    /// The datagram is complete (or was never fragmented): its header (from
    /// fragment zero, MF clear, offset 0, `payload_len` = total) and payload.
    Complete(Ipv4Repr, Msg),
    /// Kept, waiting for more fragments.
    Held,
    /// Dropped and counted.
    Dropped(ReassemblyDropReason),
}

/// A reassembly that timed out after fragment zero arrived: the caller may
/// send ICMP Time Exceeded, code 1, quoting `quote` to `key.src`
/// (RFC 792; RFC 1122 §3.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReassemblyTimeout {
    /// The datagram that timed out.
    pub key: FragKey,
    /// Fragment zero's header (re-emitted without options) and its first 8 data bytes.
    pub quote: Quote,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Range {
    start: usize,
    end: usize,
}

#[derive(Debug)]
struct Active {
    buf: Msg,
    ranges: [Range; MAX_RANGES],
    nranges: usize,
    total: Option<usize>,
    first: Option<Ipv4Repr>,
}

#[derive(Debug)]
enum Body {
    Active(Box<Active>),
    /// Discarded for overlap; later fragments are dropped until the timer expires.
    Poisoned,
}

#[derive(Debug)]
struct Datagram {
    key: FragKey,
    started: Instant,
    body: Body,
}

/// Reassembles fragmented IPv4 datagrams within hard memory bounds.
#[derive(Debug)]
pub struct Reassembler {
    cfg: ReassemblyConfig,
    slots: Vec<Option<Datagram>>,
    /// Boxed range tables, preallocated and recycled so `input` never
    /// allocates. Boxed on purpose: they move between this list and the
    /// slots, and a box moves as a pointer instead of ~1 KiB of ranges.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Active>>,
    bytes: usize,
    completed: u64,
    drops: DropCounts<ReassemblyDropReason>,
}

impl Reassembler {
    /// An empty reassembler; allocates its whole table now.
    pub fn new(cfg: ReassemblyConfig) -> Self {
        let spare = (0..cfg.max_datagrams)
            .map(|_| {
                Box::new(Active {
                    buf: Msg::default(),
                    ranges: [Range { start: 0, end: 0 }; MAX_RANGES],
                    nranges: 0,
                    total: None,
                    first: None,
                })
            })
            .collect();
        Reassembler {
            slots: (0..cfg.max_datagrams).map(|_| None).collect(),
            spare,
            bytes: 0,
            completed: 0,
            drops: DropCounts::new(),
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ReassemblyConfig {
        &self.cfg
    }
    /// Drops by reason.
    pub fn drops(&self) -> &DropCounts<ReassemblyDropReason> {
        &self.drops
    }
    /// Datagrams reassembled so far.
    pub fn completed(&self) -> u64 {
        self.completed
    }
    /// Bytes of fragment data currently held (the bounded quantity).
    pub fn bytes_buffered(&self) -> usize {
        self.bytes
    }
    /// Datagrams in progress, discarded keys still remembered included.
    pub fn in_progress(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Takes one received datagram: `header` as parsed, `payload` its data
    /// (IP header already popped). Unfragmented datagrams come straight back
    /// as [`Reassembly::Complete`].
    pub fn input(&mut self, header: &Ipv4Repr, payload: Msg, now: Instant) -> Reassembly {
        if !header.more_frags && header.frag_offset == 0 {
            return Reassembly::Complete(*header, payload);
        }
        match self.insert(header, payload, now) {
            Ok(r) => r,
            Err(reason) => {
                self.drops.count(reason);
                Reassembly::Dropped(reason)
            }
        }
    }

    fn insert(
        &mut self,
        header: &Ipv4Repr,
        payload: Msg,
        now: Instant,
    ) -> Result<Reassembly, ReassemblyDropReason> {
        use ReassemblyDropReason as R;
        let len = payload.len();
        let off = usize::from(header.frag_offset);
        let end = off + len;
        // RFC 791: all fragments but the last carry multiples of 8 bytes. An
        // empty fragment carries nothing and would make an empty range.
        if len == 0 || (header.more_frags && len % 8 != 0) {
            return Err(R::BadLength);
        }
        if end + MIN_HEADER_LEN > self.cfg.max_datagram_len.min(MAX_DATAGRAM_LEN) {
            return Err(R::TooLarge);
        }
        let key = FragKey::of(header);
        let idx = match self.find(&key) {
            Some(i) => i,
            None => self.open(key, now)?,
        };
        let held = match &self.slots[idx] {
            Some(Datagram {
                body: Body::Active(a),
                ..
            }) => a.buf.len(),
            _ => return Err(R::Poisoned),
        };

        // Consistency of the end (RFC 791: the fragment with MF clear fixes
        // the total length) and overlap with received data (RFC 5722).
        let verdict = {
            let Some(Datagram {
                body: Body::Active(a),
                ..
            }) = &self.slots[idx]
            else {
                return Err(R::Poisoned);
            };
            check(a, header.more_frags, off, end, payload.as_slice())
        };
        match verdict {
            Check::Duplicate => return Err(R::Duplicate),
            Check::Overlap => {
                self.poison(idx);
                return Err(R::Overlap);
            }
            Check::Inconsistent => {
                self.poison(idx);
                return Err(R::Inconsistent);
            }
            Check::Fits => {}
        }

        // Byte bound: make room by discarding the oldest other datagrams.
        let grow = end.saturating_sub(held);
        while self.bytes + grow > self.cfg.max_total_bytes {
            match self.oldest_active(Some(idx)) {
                Some(victim) => {
                    self.discard(victim);
                    self.drops.count(R::MemoryLimit);
                }
                None => {
                    self.discard(idx);
                    return Err(R::MemoryLimit);
                }
            }
        }

        let result = {
            let Some(Datagram {
                body: Body::Active(a),
                ..
            }) = &mut self.slots[idx]
            else {
                return Err(R::Poisoned);
            };
            store(a, header, off, end, payload)
        };
        match result {
            Err(reason) => {
                self.discard(idx);
                Err(reason)
            }
            Ok(()) => {
                self.bytes += grow;
                self.try_complete(idx)
            }
        }
    }

    fn try_complete(&mut self, idx: usize) -> Result<Reassembly, ReassemblyDropReason> {
        let complete = match &self.slots[idx] {
            Some(Datagram {
                body: Body::Active(a),
                ..
            }) => match (a.total, a.first) {
                (Some(total), Some(first))
                    if a.nranges == 1
                        && a.ranges[0]
                            == (Range {
                                start: 0,
                                end: total,
                            }) =>
                {
                    Some((total, first))
                }
                _ => None,
            },
            _ => None,
        };
        let Some((total, mut header)) = complete else {
            return Ok(Reassembly::Held);
        };
        let Some(Datagram {
            body: Body::Active(mut a),
            ..
        }) = self.slots[idx].take()
        else {
            return Ok(Reassembly::Held);
        };
        let mut buf = std::mem::take(&mut a.buf);
        self.bytes -= buf.len();
        buf.truncate(total);
        self.recycle(a);
        header.more_frags = false;
        header.frag_offset = 0;
        header.payload_len = total as u16;
        self.completed += 1;
        Ok(Reassembly::Complete(header, buf))
    }

    /// Discards datagrams whose timer expired; for each one with fragment
    /// zero, reports a [`ReassemblyTimeout`] (for ICMP Time Exceeded).
    pub fn poll(&mut self, now: Instant, mut timed_out: impl FnMut(ReassemblyTimeout)) {
        for i in 0..self.slots.len() {
            let expired = matches!(&self.slots[i], Some(d) if now >= d.started + self.cfg.timeout);
            if !expired {
                continue;
            }
            let Some(d) = self.slots[i].take() else {
                continue;
            };
            if let Body::Active(mut a) = d.body {
                self.drops.count(ReassemblyDropReason::TimedOut);
                if let Some(first) = a.first {
                    let mut hdr = [0u8; MIN_HEADER_LEN];
                    let _ = first.emit(&mut hdr);
                    let data = a.buf.as_slice();
                    let quote = Quote::new(&hdr, &data[..data.len().min(8)]);
                    timed_out(ReassemblyTimeout { key: d.key, quote });
                }
                self.bytes -= a.buf.len();
                a.buf = Msg::default();
                self.recycle(a);
            }
        }
    }

    /// When [`Reassembler::poll`] next has work, if any datagram is in progress.
    pub fn poll_at(&self) -> Option<Instant> {
        self.slots
            .iter()
            .flatten()
            .map(|d| d.started + self.cfg.timeout)
            .min()
    }

    fn find(&self, key: &FragKey) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| matches!(s, Some(d) if d.key == *key))
    }

    /// A slot for a new datagram, discarding the oldest if the table is full.
    fn open(&mut self, key: FragKey, now: Instant) -> Result<usize, ReassemblyDropReason> {
        let idx = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                let victim = self
                    .slots
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.as_ref().map(|d| (i, d.started)))
                    .min_by_key(|(_, t)| *t)
                    .map(|(i, _)| i)
                    .ok_or(ReassemblyDropReason::TableFull)?;
                if matches!(&self.slots[victim], Some(d) if matches!(d.body, Body::Active(_))) {
                    self.drops.count(ReassemblyDropReason::TableFull);
                }
                self.discard(victim);
                victim
            }
        };
        let Some(mut a) = self.spare.pop() else {
            return Err(ReassemblyDropReason::TableFull);
        };
        a.nranges = 0;
        a.total = None;
        a.first = None;
        a.buf = Msg::default();
        self.slots[idx] = Some(Datagram {
            key,
            started: now,
            body: Body::Active(a),
        });
        Ok(idx)
    }

    fn oldest_active(&self, except: Option<usize>) -> Option<usize> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != except)
            .filter_map(|(i, s)| match s {
                Some(d) if matches!(d.body, Body::Active(_)) => Some((i, d.started)),
                _ => None,
            })
            .min_by_key(|(_, t)| *t)
            .map(|(i, _)| i)
    }

    /// Frees the slot and the buffer of datagram `idx`.
    fn discard(&mut self, idx: usize) {
        if let Some(d) = self.slots[idx].take() {
            if let Body::Active(mut a) = d.body {
                self.bytes -= a.buf.len();
                a.buf = Msg::default();
                self.recycle(a);
            }
        }
    }

    /// Frees the buffer of datagram `idx` but remembers its key (RFC 5722).
    fn poison(&mut self, idx: usize) {
        if let Some(d) = self.slots[idx].as_mut() {
            if let Body::Active(mut a) = std::mem::replace(&mut d.body, Body::Poisoned) {
                self.bytes -= a.buf.len();
                a.buf = Msg::default();
                self.recycle(a);
            }
        }
    }

    fn recycle(&mut self, a: Box<Active>) {
        // `spare` was allocated with room for every slot: no reallocation.
        if self.spare.len() < self.spare.capacity() {
            self.spare.push(a);
        }
    }
}

enum Check {
    Fits,
    Duplicate,
    Overlap,
    Inconsistent,
}

fn check(a: &Active, more: bool, off: usize, end: usize, data: &[u8]) -> Check {
    let highest = a.ranges[..a.nranges]
        .iter()
        .map(|r| r.end)
        .max()
        .unwrap_or(0);
    for r in &a.ranges[..a.nranges] {
        if off < r.end && r.start < end {
            let same_bytes =
                r.start <= off && end <= r.end && a.buf.as_slice().get(off..end) == Some(data);
            // A duplicate must agree about the end too: it ends the
            // datagram exactly when it has MF clear.
            let same_end = (a.total == Some(end)) != more;
            return if same_bytes && same_end {
                Check::Duplicate
            } else {
                Check::Overlap
            };
        }
    }
    match (a.total, more) {
        (Some(t), _) if end > t => Check::Inconsistent,
        (Some(t), false) if end != t => Check::Inconsistent,
        (None, false) if highest > end => Check::Inconsistent,
        _ => Check::Fits,
    }
}

/// Copies the fragment into the datagram buffer and records its range.
fn store(
    a: &mut Active,
    header: &Ipv4Repr,
    off: usize,
    end: usize,
    mut payload: Msg,
) -> Result<(), ReassemblyDropReason> {
    // Merge with neighbouring ranges; refuse if a new disjoint range would
    // not fit the table.
    let left = a.ranges[..a.nranges].iter().position(|r| r.end == off);
    let right = a.ranges[..a.nranges].iter().position(|r| r.start == end);
    if left.is_none() && right.is_none() && a.nranges == MAX_RANGES {
        return Err(ReassemblyDropReason::TooManyHoles);
    }
    if a.buf.is_empty() && off == 0 && a.nranges == 0 {
        // Fragment zero arrived first: adopt its buffer, no copy.
        a.buf = payload;
    } else {
        if a.buf.is_empty() && a.nranges == 0 {
            // Msg has no pool handle; an empty split gives a buffer of the
            // fragment's own pool.
            a.buf = payload
                .split_off(payload.len())
                .map_err(|_| ReassemblyDropReason::NoBuffer)?;
        }
        if a.buf.len() < end {
            let grow = end - a.buf.len();
            a.buf
                .append(grow)
                .map_err(|_| ReassemblyDropReason::NoBuffer)?
                .fill(0);
        }
        a.buf.as_mut_slice()[off..end].copy_from_slice(payload.as_slice());
    }
    match (left, right) {
        (Some(l), Some(r)) => {
            a.ranges[l].end = a.ranges[r].end;
            a.ranges[r] = a.ranges[a.nranges - 1];
            a.nranges -= 1;
        }
        (Some(l), None) => a.ranges[l].end = end,
        (None, Some(r)) => a.ranges[r].start = off,
        (None, None) => {
            a.ranges[a.nranges] = Range { start: off, end };
            a.nranges += 1;
        }
    }
    if !header.more_frags {
        a.total = Some(end);
    }
    if off == 0 {
        a.first = Some(*header);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::frag::fragment;
    use crate::wire::ipv4::{protocol, tests::A, tests::B, Ipv4Packet};
    use pathstack_core::{MsgPool, PoolConfig};
    use proptest::prelude::*;

    fn t(s: u64) -> Instant {
        Instant::from_millis(s * 1000)
    }

    /// Fragments of a `len`-byte datagram at `mtu`, as (header, payload bytes).
    fn frags(len: usize, mtu: u16, ident: u16) -> (Vec<u8>, Vec<(Ipv4Repr, Vec<u8>)>) {
        let pool = MsgPool::new(PoolConfig::default());
        let data: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
        let mut m = pool.alloc_copy(&data).unwrap();
        let h = Ipv4Repr::new(A, B, protocol::UDP, ident, 0);
        let mut out = Vec::new();
        fragment(&mut m, &h, mtu, |f| {
            let p = Ipv4Packet::new_checked(f.as_slice()).unwrap();
            out.push((p.repr(), p.payload().to_vec()));
        })
        .unwrap();
        (data, out)
    }

    fn feed(
        r: &mut Reassembler,
        pool: &MsgPool,
        f: &(Ipv4Repr, Vec<u8>),
        now: Instant,
    ) -> Reassembly {
        r.input(&f.0, pool.alloc_copy(&f.1).unwrap(), now)
    }

    #[test]
    fn in_order_and_reverse_order() {
        let pool = MsgPool::new(PoolConfig::default());
        for reverse in [false, true] {
            let (data, mut fs) = frags(4000, 1500, 1);
            if reverse {
                fs.reverse();
            }
            let mut r = Reassembler::new(ReassemblyConfig::default());
            let n = fs.len();
            for (i, f) in fs.iter().enumerate() {
                match feed(&mut r, &pool, f, t(0)) {
                    Reassembly::Complete(h, m) => {
                        assert_eq!(i, n - 1);
                        assert_eq!(m.as_slice(), &data[..]);
                        assert_eq!(h.payload_len as usize, data.len());
                        assert!(!h.more_frags && h.frag_offset == 0);
                    }
                    Reassembly::Held => assert!(i < n - 1),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(r.bytes_buffered(), 0);
            assert_eq!(r.in_progress(), 0);
        }
        assert_eq!(pool.stats().live, 0);
    }

    #[test]
    fn unfragmented_passes_through() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let h = Ipv4Repr::new(A, B, protocol::UDP, 1, 3);
        assert!(matches!(
            r.input(&h, pool.alloc_copy(b"abc").unwrap(), t(0)),
            Reassembly::Complete(_, _)
        ));
    }

    #[test]
    fn overlap_discards_datagram_and_poisons_key() {
        let pool = MsgPool::new(PoolConfig::default());
        let (_, fs) = frags(4000, 1500, 2);
        let mut r = Reassembler::new(ReassemblyConfig::default());
        assert!(matches!(
            feed(&mut r, &pool, &fs[0], t(0)),
            Reassembly::Held
        ));
        // A fragment overlapping the first one by 8 bytes.
        let mut evil = fs[1].clone();
        evil.0.frag_offset -= 8;
        assert!(matches!(
            feed(&mut r, &pool, &evil, t(1)),
            Reassembly::Dropped(ReassemblyDropReason::Overlap)
        ));
        assert_eq!(r.bytes_buffered(), 0);
        // The genuine rest is dropped too (RFC 5722 §4) ...
        for f in &fs[1..] {
            assert!(matches!(
                feed(&mut r, &pool, f, t(2)),
                Reassembly::Dropped(ReassemblyDropReason::Poisoned)
            ));
        }
        // ... until the timer forgets the key.
        r.poll(t(60), |_| panic!("no ICMP for a discarded datagram"));
        assert_eq!(r.in_progress(), 0);
        assert_eq!(pool.stats().live, 0);
    }

    #[test]
    fn exact_duplicate_is_dropped_alone() {
        let pool = MsgPool::new(PoolConfig::default());
        let (data, fs) = frags(3000, 1500, 3);
        let mut r = Reassembler::new(ReassemblyConfig::default());
        assert!(matches!(
            feed(&mut r, &pool, &fs[0], t(0)),
            Reassembly::Held
        ));
        assert!(matches!(
            feed(&mut r, &pool, &fs[0], t(0)),
            Reassembly::Dropped(ReassemblyDropReason::Duplicate)
        ));
        // Same range, different bytes: an overlap attack, not a duplicate.
        let mut changed = fs[0].clone();
        changed.1[100] ^= 0xff;
        assert!(matches!(
            feed(&mut r, &pool, &changed, t(0)),
            Reassembly::Dropped(ReassemblyDropReason::Overlap)
        ));
        // A fresh datagram with the duplicate after completion works normally.
        let (_, fs) = frags(3000, 1500, 4);
        let mut last = None;
        for f in fs.iter().chain(std::iter::once(&fs[1])) {
            last = Some(feed(&mut r, &pool, f, t(0)));
            if let Some(Reassembly::Complete(_, m)) = &last {
                assert_eq!(m.as_slice(), &data[..]);
            }
        }
        // The straggling duplicate opens a new (incomplete) datagram that times out.
        assert!(matches!(last, Some(Reassembly::Held)));
        let mut timeouts = 0;
        r.poll(t(61), |_| timeouts += 1);
        assert_eq!(timeouts, 0, "fragment zero never arrived for it");
    }

    #[test]
    fn timeout_reports_quote_of_fragment_zero() {
        let pool = MsgPool::new(PoolConfig::default());
        let (data, fs) = frags(3000, 1500, 5);
        let mut r = Reassembler::new(ReassemblyConfig::default());
        feed(&mut r, &pool, &fs[0], t(0));
        assert_eq!(r.poll_at(), Some(t(60)));
        r.poll(t(59), |_| panic!("too early"));
        let mut got = Vec::new();
        r.poll(t(60), |e| got.push(e));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].key.ident, 5);
        let q = got[0].quote.as_bytes();
        assert_eq!(q.len(), 28);
        assert_eq!(&q[20..], &data[..8]);
        assert_eq!(
            Ipv4Packet::new_checked(&q[..20]).err(),
            Some(crate::wire::ipv4::Ipv4DropReason::TotalLengthTooLarge)
        );
        assert_eq!(r.drops().get(ReassemblyDropReason::TimedOut), 1);
        assert_eq!(r.bytes_buffered(), 0);
    }

    #[test]
    fn bad_fragments() {
        let pool = MsgPool::new(PoolConfig::default());
        let mut r = Reassembler::new(ReassemblyConfig::default());
        let mut h = Ipv4Repr::new(A, B, protocol::UDP, 6, 0);
        h.more_frags = true;
        assert!(matches!(
            r.input(&h, pool.alloc(12).unwrap(), t(0)),
            Reassembly::Dropped(ReassemblyDropReason::BadLength)
        ));
        // Ping of death: offset 65528 + 16 bytes > 65535.
        h.more_frags = false;
        h.frag_offset = 65528;
        assert!(matches!(
            r.input(&h, pool.alloc(16).unwrap(), t(0)),
            Reassembly::Dropped(ReassemblyDropReason::TooLarge)
        ));
        // Two "last" fragments that disagree.
        h.frag_offset = 800;
        assert!(matches!(
            r.input(&h, pool.alloc(8).unwrap(), t(0)),
            Reassembly::Held
        ));
        h.frag_offset = 1600;
        assert!(matches!(
            r.input(&h, pool.alloc(8).unwrap(), t(0)),
            Reassembly::Dropped(ReassemblyDropReason::Inconsistent)
        ));
    }

    #[test]
    fn table_bound_evicts_oldest() {
        let pool = MsgPool::new(PoolConfig::default());
        let cfg = ReassemblyConfig {
            max_datagrams: 2,
            ..ReassemblyConfig::default()
        };
        let mut r = Reassembler::new(cfg);
        let firsts: Vec<_> = (10..13).map(|id| frags(3000, 1500, id).1).collect();
        for (i, fs) in firsts.iter().enumerate() {
            feed(&mut r, &pool, &fs[0], t(i as u64));
        }
        assert_eq!(r.in_progress(), 2);
        assert_eq!(r.drops().get(ReassemblyDropReason::TableFull), 1);
        // Datagram 10 (oldest) is gone; 11 and 12 can still complete.
        for fs in &firsts[1..] {
            for f in &fs[1..] {
                let _ = feed(&mut r, &pool, f, t(3));
            }
        }
        assert_eq!(r.completed(), 2);
    }

    #[test]
    fn byte_bound_evicts_oldest_and_refuses_oversize() {
        let pool = MsgPool::new(PoolConfig::default());
        let cfg = ReassemblyConfig {
            max_total_bytes: 4000,
            ..ReassemblyConfig::default()
        };
        let mut r = Reassembler::new(cfg);
        let a = frags(3000, 1500, 20).1;
        let b = frags(3000, 1500, 21).1;
        feed(&mut r, &pool, &a[0], t(0));
        feed(&mut r, &pool, &b[0], t(1));
        assert!(r.bytes_buffered() <= 4000);
        feed(&mut r, &pool, &b[1], t(1));
        assert_eq!(r.bytes_buffered(), 2960);
        assert_eq!(r.drops().get(ReassemblyDropReason::MemoryLimit), 1);
        // A datagram larger than the whole budget cannot be held at all.
        let big = frags(6000, 1500, 22).1;
        let mut dropped = false;
        for f in big.iter().rev() {
            if let Reassembly::Dropped(ReassemblyDropReason::MemoryLimit) =
                feed(&mut r, &pool, f, t(2))
            {
                dropped = true;
            }
        }
        assert!(dropped);
        assert!(r.bytes_buffered() <= 4000);
    }

    proptest! {
        /// The reference check: any permutation of the non-overlapping
        /// fragments of a random datagram (with random exact duplicates)
        /// reassembles to the original bytes, exactly once.
        #[test]
        fn permutations_reassemble_to_original(len in 1usize..12_000, mtu in 68u16..1500,
                                               seed in any::<u64>(), dups in 0usize..4) {
            let (data, mut fs) = frags(len, mtu, 7);
            prop_assume!(fs.len() <= 200);
            // Fisher-Yates with a simple LCG, so the permutation is shrinkable via `seed`.
            let mut s = seed;
            for i in (1..fs.len()).rev() {
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                fs.swap(i, (s >> 33) as usize % (i + 1));
            }
            for d in 0..dups.min(fs.len().saturating_sub(1)) {
                let f = fs[d].clone();
                fs.insert(d + 1, f);
            }
            let pool = MsgPool::new(PoolConfig::default());
            let mut r = Reassembler::new(ReassemblyConfig::default());
            let mut done = 0;
            for f in &fs {
                match feed(&mut r, &pool, f, t(0)) {
                    Reassembly::Complete(h, m) => {
                        done += 1;
                        prop_assert_eq!(m.as_slice(), &data[..]);
                        prop_assert_eq!(usize::from(h.payload_len), len);
                    }
                    Reassembly::Held => {}
                    Reassembly::Dropped(ReassemblyDropReason::Duplicate) => {}
                    Reassembly::Dropped(ReassemblyDropReason::TooManyHoles) => prop_assume!(false),
                    Reassembly::Dropped(e) => prop_assert!(false, "unexpected drop {:?}", e),
                }
            }
            // A duplicate arriving after completion opens a new entry: that is fine.
            prop_assert_eq!(done, 1);
        }

        /// Arbitrary bytes made into checksum-valid IPv4 headers (so they get
        /// past the parser) and fed through `ipv4::receive` to the
        /// reassembler: never panics, bounds hold.
        #[test]
        fn arbitrary_datagrams_through_parser(dgrams in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 20..300), 0..100)) {
            let pool = MsgPool::new(PoolConfig::default());
            let cfg = ReassemblyConfig { max_datagrams: 3, max_total_bytes: 2_000, ..ReassemblyConfig::default() };
            let mut r = Reassembler::new(cfg.clone());
            for (i, mut d) in dgrams.into_iter().enumerate() {
                d[0] = 0x45;
                d[12] = 10; // a valid unicast source
                d[6] &= 0x3f; // keep offsets small enough to matter
                let total = d.len() as u16;
                d[2..4].copy_from_slice(&total.to_be_bytes());
                d[10] = 0;
                d[11] = 0;
                let c = crate::wire::checksum::compute(&[&d[..20]]);
                d[10..12].copy_from_slice(&c);
                let mut m = pool.alloc_copy(&d).unwrap();
                let (repr, hl) = crate::wire::ipv4::receive(&mut m).unwrap();
                m.pop(hl).unwrap();
                let _ = r.input(&repr, m, t(i as u64));
                prop_assert!(r.bytes_buffered() <= cfg.max_total_bytes);
                prop_assert!(r.in_progress() <= cfg.max_datagrams);
            }
        }

        /// Random fragments (random keys, offsets, lengths, flags, times):
        /// never panics, and the bounds hold after every input.
        #[test]
        fn random_fragments_respect_bounds(ops in proptest::collection::vec(
            (0u16..6, 0u16..200, (0usize..375, 0usize..32), any::<bool>(), 0u64..5, any::<u8>()), 0..300)) {
            let pool = MsgPool::new(PoolConfig::default());
            let cfg = ReassemblyConfig { max_datagrams: 4, max_total_bytes: 20_000, ..ReassemblyConfig::default() };
            let mut r = Reassembler::new(cfg.clone());
            let mut now = 0;
            for (id, off8, (len8, odd), mf, dt, fill) in ops {
                now += dt;
                // Mostly 8-byte multiples, so fragments are usually valid.
                let len = len8 * 8 + if odd < 8 { odd } else { 0 };
                let mut h = Ipv4Repr::new(A, B, protocol::UDP, id, len as u16);
                h.more_frags = mf;
                h.frag_offset = off8 * 8;
                let res = r.input(&h, pool.alloc_copy(&vec![fill; len]).unwrap(), t(now));
                if let Reassembly::Complete(h, m) = res {
                    prop_assert_eq!(usize::from(h.payload_len), m.len());
                }
                r.poll(t(now), |_| {});
                prop_assert!(r.bytes_buffered() <= cfg.max_total_bytes);
                prop_assert!(r.in_progress() <= cfg.max_datagrams);
                let held: usize = r.slots.iter().flatten().map(|d| match &d.body {
                    Body::Active(a) => a.buf.len(), Body::Poisoned => 0 }).sum();
                prop_assert_eq!(held, r.bytes_buffered());
                prop_assert!(pool.stats().live <= cfg.max_datagrams);
            }
        }
    }
}
