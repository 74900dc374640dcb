//! The receive buffer (RFC 9293 §3.3.1 "Receive Sequence Space",
//! §3.10.7.4 SEGMENT ARRIVES): an in-order byte ring plus an out-of-order
//! queue kept in the same ring at each octet's offset from RCV.NXT, with
//! its ranges in a small fixed array (bounded in octets and in ranges; no
//! allocation per segment). The ring grows as the data it must hold needs
//! (see `ring.rs`: nothing until the first octet, then doubling up to the
//! configured capacity).
//!
//! The window advertised is what the ring may grow to (the configured
//! capacity less the unread octets), not what it holds allocated: the
//! windows on the wire are those of a ring allocated in full at connect,
//! so growing changes no segment. The alternative — advertising only what
//! is allocated and growing ahead of the window — would make the window
//! a sender sees start at 2 KiB and open only as fast as the ring grew,
//! costing a bulk receiver round trips of slow window growth; a receive
//! ring is sized by the peer's flight, which the window bounds anyway. An
//! allocation that fails (`try_reserve`, not an abort) drops the segment
//! that needed it and counts it (`RecvStats::ring_alloc_failed`): the
//! window stays promised and the sender retransmits, as after any drop
//! within the window (RFC 9293 §3.10.7.4 lets a receiver keep only what
//! it can), so the right edge still never moves back.
//!
//! It also computes the advertised window from the free space (RFC 9293
//! §3.8.6, with receiver silly-window avoidance §3.8.6.2.2), never moving
//! the advertised right edge back (RFC 9293 §3.8.6, RFC 7323 §2.4), and
//! the SACK blocks of outgoing ACKs (RFC 2018 §4) with D-SACK (RFC 2883).

use super::ring::{copy_octets, wrap};
use super::seq::SeqNumber;

/// The most out-of-order ranges any buffer keeps.
pub const MAX_OOO_RANGES: usize = 16;

/// Sizes and limits of a [`RecvBuffer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvConfig {
    /// Ring capacity in octets (capped at 2^30, RFC 7323 §2.3).
    pub capacity: usize,
    /// Out-of-order octets held at most.
    pub max_ooo_bytes: usize,
    /// Out-of-order ranges held at most (capped at [`MAX_OOO_RANGES`]).
    pub max_ooo_ranges: usize,
    /// The effective send MSS of the peer, for receiver silly-window
    /// avoidance (RFC 9293 §3.8.6.2.2); 0 turns the avoidance off.
    pub mss: u32,
    /// Our window scale shift (RFC 7323 §2.2); the window advertised is at
    /// most `65535 << shift`.
    pub window_shift: u8,
}

impl Default for RecvConfig {
    /// 64 KiB, out-of-order queue up to the whole buffer in 8 ranges,
    /// MSS 1460, no scaling.
    fn default() -> Self {
        RecvConfig {
            capacity: 65536,
            max_ooo_bytes: 65536,
            max_ooo_ranges: 8,
            mss: 1460,
            window_shift: 0,
        }
    }
}

/// What [`RecvBuffer::insert`] did with a segment's data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inserted {
    /// How far RCV.NXT advanced (octets now readable in order).
    pub advanced: usize,
    /// Some or all of the octets had been received already (a D-SACK is
    /// pending, RFC 2883).
    pub duplicate: bool,
    /// New octets were queued beyond RCV.NXT (an ACK should go out at
    /// once, RFC 5681 §4.2).
    pub out_of_order: bool,
    /// The segment's data was dropped: outside the window or the
    /// out-of-order queue was full (counted in [`RecvStats`]).
    pub dropped: bool,
}

/// Counters of what the receive buffer discarded, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecvStats {
    /// Segments with data wholly outside the receive window (RFC 9293
    /// §3.10.7.4 first check), zero window included.
    pub out_of_window: u64,
    /// Octets trimmed off segment tails beyond the window.
    pub trimmed_bytes: u64,
    /// Segments carrying only octets received already.
    pub duplicates: u64,
    /// Out-of-order segments dropped because the range table was full.
    pub ooo_ranges_full: u64,
    /// Out-of-order segments dropped because the octet limit was reached.
    pub ooo_bytes_full: u64,
    /// Segments dropped because the ring could not grow to hold them (the
    /// allocation failed).
    pub ring_alloc_failed: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Range {
    start: SeqNumber,
    end: SeqNumber,
    /// Arrival order of the newest segment in the range (RFC 2018 §4).
    stamp: u64,
}

/// The receive side of one connection.
#[derive(Clone, Debug)]
pub struct RecvBuffer {
    cfg: RecvConfig,
    /// The ring as allocated so far (grown on demand up to
    /// `cfg.capacity`).
    buf: Box<[u8]>,
    /// Index of the first unread octet.
    read_pos: usize,
    /// Octets readable in order (ending at RCV.NXT).
    readable: usize,
    /// RCV.NXT.
    rcv_nxt: SeqNumber,
    /// The right edge of the last advertised window (RCV.NXT + RCV.WND as
    /// last sent).
    adv_right: SeqNumber,
    /// The out-of-order ranges, the first `n_ranges` in use: no table
    /// until the first segment out of order, then `max_ooo_ranges`
    /// entries, kept (the idle connection's control block is smaller by
    /// the 16-entry array it held inline, issue 28 item 3).
    ranges: Box<[Range]>,
    n_ranges: usize,
    ooo_bytes: usize,
    stamp: u64,
    dsack: Option<(SeqNumber, SeqNumber)>,
    /// The drop counters, made at the first drop: a connection that
    /// never drops anything carries 8 octets for them, not 48 (issue 28
    /// item 4).
    stats: Option<Box<RecvStats>>,
}

impl RecvBuffer {
    /// A buffer expecting `rcv_nxt` (IRS + 1) next; the ring is allocated
    /// when data arrives, not here. The initial window (the one a SYN carries, never
    /// scaled, RFC 7323 §2.2) counts as advertised.
    pub fn new(cfg: RecvConfig, rcv_nxt: SeqNumber) -> Self {
        let mut cfg = cfg;
        cfg.capacity = cfg.capacity.min(1 << 30);
        cfg.max_ooo_ranges = cfg.max_ooo_ranges.min(MAX_OOO_RANGES);
        cfg.window_shift = cfg.window_shift.min(14); // RFC 7323 §2.3
        let initial = cfg.capacity.min(65535) as u32;
        RecvBuffer {
            cfg,
            buf: Box::default(),
            read_pos: 0,
            readable: 0,
            rcv_nxt,
            adv_right: rcv_nxt + initial,
            ranges: Box::default(),
            n_ranges: 0,
            ooo_bytes: 0,
            stamp: 0,
            dsack: None,
            stats: None,
        }
    }

    /// The configuration (after capping).
    pub fn config(&self) -> &RecvConfig {
        &self.cfg
    }

    /// The octets the ring holds allocated now.
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }

    /// RCV.NXT.
    pub fn rcv_nxt(&self) -> SeqNumber {
        self.rcv_nxt
    }

    /// Octets readable in order.
    pub fn len(&self) -> usize {
        self.readable
    }

    /// Whether nothing is readable.
    pub fn is_empty(&self) -> bool {
        self.readable == 0
    }

    /// Octets held out of order.
    pub fn ooo_bytes(&self) -> usize {
        self.ooo_bytes
    }

    /// The drop counters.
    pub fn stats(&self) -> RecvStats {
        self.stats.as_deref().copied().unwrap_or_default()
    }

    /// The drop counters' box, if made (tests of what an idle
    /// connection holds).
    #[cfg(test)]
    pub(crate) fn stats_made(&self) -> Option<&RecvStats> {
        self.stats.as_deref()
    }

    /// The drop counters, to count in: made on first need.
    #[cold]
    fn count(&mut self) -> &mut RecvStats {
        self.stats.get_or_insert_with(Box::default)
    }

    /// The right edge of the last advertised window.
    pub fn advertised_right_edge(&self) -> SeqNumber {
        self.adv_right
    }

    /// The out-of-order ranges `[start, end)`, in no particular order.
    pub fn ooo_ranges(&self) -> impl Iterator<Item = (SeqNumber, SeqNumber)> + '_ {
        self.ranges[..self.n_ranges]
            .iter()
            .map(|r| (r.start, r.end))
    }

    /// Sets the capacity at run time (`SO_RCVBUF` on a live connection):
    /// never so small that the right edge already advertised would move
    /// back (RFC 9293 §3.8.6.2.2: "the receiver ... must not shrink the
    /// window"); the window scale stays the one announced in the SYN, so
    /// the window advertised stays at most `65535 << shift` (RFC 7323
    /// §2.3). Returns the capacity set.
    pub fn set_capacity(&mut self, capacity: usize) -> usize {
        let advertised = (self.adv_right - self.rcv_nxt) as usize;
        let cap = capacity
            .min(1 << 30)
            .max(self.readable + advertised)
            .max(self.ooo_bytes() + self.readable);
        self.cfg.capacity = cap;
        cap
    }

    /// Forgets the D-SACK block not yet reported (the peer's FIN, see
    /// `Tcb::check_fin`).
    pub fn clear_dsack(&mut self) {
        self.dsack = None;
    }

    /// The right edge the free space allows: RCV.NXT plus the capacity
    /// not holding readable data (the capacity the ring may grow to, see
    /// the module's note). Nondecreasing (RCV.NXT advances exactly as
    /// readable data grows).
    fn space_edge(&self) -> SeqNumber {
        self.rcv_nxt + (self.cfg.capacity - self.readable) as u32
    }

    /// The window to advertise now, RCV.WND (RFC 9293 §3.8.6), in octets.
    /// The right edge moves forward only by at least min(capacity/2, MSS)
    /// (receiver SWS avoidance, §3.8.6.2.2) and never back: the result is
    /// never less than what the last advertisement allows. Records the
    /// edge as advertised.
    pub fn window(&mut self) -> u32 {
        let max_win = 65535u32 << self.cfg.window_shift;
        let space = self.space_edge();
        let cap_edge = self.rcv_nxt + max_win;
        let candidate = space.min(cap_edge);
        if candidate.gt(self.adv_right) {
            let step = ((self.cfg.capacity / 2) as u32).min(self.cfg.mss);
            if candidate - self.adv_right >= step {
                self.adv_right = candidate;
            }
        }
        if self.adv_right.lt(self.rcv_nxt) {
            self.adv_right = self.rcv_nxt;
        }
        self.adv_right - self.rcv_nxt
    }

    /// The window field of an outgoing segment with scale `shift` applied
    /// (RFC 7323 §2.3): [`window`](Self::window) shifted right, rounded up
    /// when the free space covers the rounding (so the edge never moves
    /// back), down otherwise. Records the edge actually advertised.
    pub fn window_field(&mut self) -> u16 {
        let wnd = self.window();
        let shift = self.cfg.window_shift;
        let unit = 1u32 << shift;
        let up = wnd.div_ceil(unit).min(65535);
        let field = if (up << shift) <= self.space_edge() - self.rcv_nxt {
            up
        } else {
            wnd >> shift
        };
        let edge = self.rcv_nxt + (field << shift);
        self.adv_right = self.adv_right.max(edge);
        field as u16
    }

    /// A segment's data arrived at `seq` (RFC 9293 §3.10.7.4): trimmed to
    /// the receive window, then either appended at RCV.NXT (with any
    /// out-of-order data it now joins) or queued out of order. A zero-length
    /// `data` does nothing.
    pub fn insert(&mut self, seq: SeqNumber, data: &[u8]) -> Inserted {
        let mut out = Inserted::default();
        if data.is_empty() {
            return out;
        }
        let wnd = i64::from(self.adv_right.max(self.rcv_nxt) - self.rcv_nxt);
        let s = i64::from(seq.signed_diff(self.rcv_nxt));
        let e = s + data.len().min(1 << 31) as i64;
        if e <= 0 && s >= -(1 << 30) {
            // Wholly old: a duplicate (RFC 2883 §4.1.1).
            out.duplicate = true;
            self.count().duplicates += 1;
            self.dsack = Some((seq, seq + (e - s) as u32));
            return out;
        }
        if e <= 0 || s >= wnd {
            // Beyond the window, or so far behind RCV.NXT (more than any
            // window, RFC 7323 §2.3) that it is not a plausible duplicate.
            out.dropped = true;
            self.count().out_of_window += 1;
            return out;
        }
        if s < 0 {
            // Partly old: report the old part (RFC 2883 §4.1.2 analogue).
            out.duplicate = true;
            self.dsack = Some((seq, self.rcv_nxt));
        }
        let ts = s.max(0) as u32;
        let te = e.min(wnd) as u32;
        if e > i64::from(te) {
            self.count().trimmed_bytes += (e - i64::from(te)) as u64;
        }
        let payload = &data[(i64::from(ts) - s) as usize..(i64::from(te) - s) as usize];
        let (a, b) = (self.rcv_nxt + ts, self.rcv_nxt + te);
        self.stamp += 1;

        // Octets already queued out of order: a duplicate if wholly covered.
        if let Some(i) =
            (0..self.n_ranges).find(|&i| self.ranges[i].start.le(a) && b.le(self.ranges[i].end))
        {
            out.duplicate = true;
            self.count().duplicates += 1;
            self.dsack = Some((a, b));
            self.ranges[i].stamp = self.stamp;
            return out;
        }
        if ts > 0 {
            // Out of order: merge with overlapping and adjacent ranges.
            let (mut ma, mut mb, mut absorbed, mut absorbed_bytes) = (a, b, 0, 0usize);
            let mut dup = None;
            for r in &self.ranges[..self.n_ranges] {
                if r.start.le(b) && a.le(r.end) {
                    if dup.is_none() && r.start.lt(b) && a.lt(r.end) {
                        dup = Some((r.start.max(a), r.end.min(b)));
                    }
                    ma = ma.min(r.start);
                    mb = mb.max(r.end);
                    absorbed += 1;
                    absorbed_bytes += (r.end - r.start) as usize;
                }
            }
            if self.n_ranges - absorbed + 1 > self.cfg.max_ooo_ranges {
                self.count().ooo_ranges_full += 1;
                return Inserted {
                    dropped: true,
                    ..Inserted::default()
                };
            }
            let new_bytes = self.ooo_bytes - absorbed_bytes + (mb - ma) as usize;
            if new_bytes > self.cfg.max_ooo_bytes {
                self.count().ooo_bytes_full += 1;
                return Inserted {
                    dropped: true,
                    ..Inserted::default()
                };
            }
            if !self.fits(ts as usize + payload.len()) {
                return self.ring_alloc_failed();
            }
            if dup.is_some() {
                out.duplicate = true;
                self.dsack = dup;
            }
            self.store(ts as usize, payload);
            let mut i = 0;
            while i < self.n_ranges {
                let r = self.ranges[i];
                if r.start.le(b) && a.le(r.end) {
                    self.remove_range(i);
                } else {
                    i += 1;
                }
            }
            if self.ranges.is_empty() {
                self.ranges = vec![Range::default(); self.cfg.max_ooo_ranges].into_boxed_slice();
            }
            self.ranges[self.n_ranges] = Range {
                start: ma,
                end: mb,
                stamp: self.stamp,
            };
            self.n_ranges += 1;
            self.ooo_bytes = new_bytes;
            out.out_of_order = true;
            return out;
        }
        // In order: store, then absorb every range the new data reaches.
        if !self.fits(payload.len()) {
            return self.ring_alloc_failed();
        }
        self.store(0, payload);
        let mut end = b;
        while let Some(i) = (0..self.n_ranges).find(|&i| self.ranges[i].start.le(end)) {
            let r = self.ranges[i];
            if r.start.lt(b) && !out.duplicate {
                out.duplicate = true;
                self.dsack = Some((r.start, r.end.min(b)));
            }
            end = end.max(r.end);
            self.ooo_bytes -= (r.end - r.start) as usize;
            self.remove_range(i);
        }
        let adv = (end - self.rcv_nxt) as usize;
        self.readable += adv;
        self.rcv_nxt = end;
        out.advanced = adv;
        out
    }

    /// The next expected segment's data, `data` starting at RCV.NXT,
    /// with nothing held out of order and all of it within the window:
    /// appended, as [`insert`](Self::insert) would (header prediction's
    /// receive side). Returns the octets taken (all of them). Anything
    /// else goes to `insert`, which this defers to when its conditions
    /// do not hold.
    pub fn append(&mut self, data: &[u8]) -> usize {
        let wnd = self.adv_right.max(self.rcv_nxt) - self.rcv_nxt;
        if self.n_ranges != 0
            || data.is_empty()
            || data.len() as u64 > u64::from(wnd)
            || self.readable + data.len() > self.buf.len()
        {
            // (The last: the ring must grow first, which `insert` does.)
            return self.append_inserted(data);
        }
        self.stamp += 1;
        self.store(0, data);
        self.readable += data.len();
        self.rcv_nxt += data.len() as u32;
        data.len()
    }

    /// [`append`](Self::append) for header prediction (`tcb/predict.rs`),
    /// which has found `data` non-empty, within the window and nothing
    /// held out of order before it asks: only the ring's room is left to
    /// ask, and the copy is in line (issue 26 item 4: the in-order append
    /// of a small segment as a straight copy). When the ring must grow,
    /// `append` does it.
    #[inline(always)]
    pub fn append_predicted(&mut self, data: &[u8]) -> usize {
        if self.n_ranges != 0 || self.readable + data.len() > self.buf.len() {
            return self.append(data);
        }
        self.stamp += 1;
        self.store(0, data);
        self.readable += data.len();
        self.rcv_nxt += data.len() as u32;
        data.len()
    }

    /// [`append`](Self::append) by way of [`insert`](Self::insert), out
    /// of line: with `insert` in it, `append` saved and restored a frame
    /// of registers on every in-order segment (issue 26).
    #[cold]
    #[inline(never)]
    fn append_inserted(&mut self, data: &[u8]) -> usize {
        self.insert(self.rcv_nxt, data).advanced
    }

    /// Whether the ring holds `end` octets after the first unread one,
    /// grown to if it did not (`end` ≤ the capacity: the window bounds
    /// every store).
    #[inline(always)]
    fn fits(&mut self, end: usize) -> bool {
        self.readable + end <= self.buf.len() || self.grow(self.readable + end)
    }

    /// Grows the ring so that `needed` octets from the first unread one
    /// fit; false when the allocation failed. The octets keep their
    /// distance from the first unread one (readable and out-of-order
    /// alike), which now sits at the ring's start. Out of line: it runs a
    /// handful of times in a connection's life.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, needed: usize) -> bool {
        let size = super::ring::grown_size(self.buf.len(), needed, self.cfg.capacity);
        match super::ring::regrown(&self.buf, self.read_pos, size) {
            Some(buf) if size >= needed => {
                self.buf = buf;
                self.read_pos = 0;
                true
            }
            _ => false,
        }
    }

    /// A segment dropped for want of ring: counted, reported dropped.
    #[cold]
    fn ring_alloc_failed(&mut self) -> Inserted {
        self.count().ring_alloc_failed += 1;
        Inserted {
            dropped: true,
            ..Inserted::default()
        }
    }

    fn remove_range(&mut self, i: usize) {
        self.n_ranges -= 1;
        self.ranges[i] = self.ranges[self.n_ranges];
    }

    /// Copies `data` into the ring `offset` octets after RCV.NXT (in
    /// line: the in-order append of every data segment is this).
    #[inline(always)]
    fn store(&mut self, offset: usize, data: &[u8]) {
        let cap = self.buf.len();
        let at = wrap(self.read_pos + self.readable + offset, cap);
        let first = data.len().min(cap - at);
        copy_octets(&mut self.buf[at..], &data[..first]);
        // The wrapped part, if any (a call to copy nothing costs too).
        if first < data.len() {
            copy_octets(&mut self.buf, &data[first..]);
        }
    }

    /// The readable octets as two slices (the second non-empty when they
    /// wrap the ring), without consuming them.
    pub fn peek(&self) -> (&[u8], &[u8]) {
        let cap = self.buf.len();
        let first = self.readable.min(cap - self.read_pos);
        (
            &self.buf[self.read_pos..self.read_pos + first],
            &self.buf[..self.readable - first],
        )
    }

    /// Discards up to `n` readable octets; returns how many.
    pub fn consume(&mut self, n: usize) -> usize {
        let n = n.min(self.readable);
        if n == 0 {
            // Also the buffer of a connection not yet synchronized, which
            // has no ring (capacity 0) to move in.
            return 0;
        }
        self.readable -= n;
        // Out-of-order octets sit at fixed ring positions after the
        // readable ones, so the read position only ever moves forward.
        self.read_pos = wrap(self.read_pos + n, self.buf.len());
        n
    }

    /// Copies readable octets into `out` and consumes them; returns how
    /// many (0 when nothing is readable, the would-block case). In line:
    /// a read of the application's is this and the window's check
    /// (`Tcb::recv`), one step.
    #[inline(always)]
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        // `peek` and `consume` in one: the count first, then at most two
        // copies (the second only when the octets wrap the ring), so a
        // read of a few octets is a few instructions (issue 26: a read of
        // one octet cost about 90).
        let n = self.readable.min(out.len());
        if n == 0 {
            // (Also a buffer with no ring yet, capacity 0, to wrap in.)
            return 0;
        }
        let cap = self.buf.len();
        let first = n.min(cap - self.read_pos);
        copy_octets(out, &self.buf[self.read_pos..self.read_pos + first]);
        if first < n {
            copy_octets(&mut out[first..], &self.buf[..n - first]);
        }
        self.readable -= n;
        // Out-of-order octets sit at fixed ring positions after the
        // readable ones (see `consume`).
        self.read_pos = wrap(self.read_pos + n, cap);
        n
    }

    /// Fills `blocks` with the SACK blocks of the next ACK (RFC 2018 §4)
    /// as `(left, right)` edges and returns how many: a pending D-SACK
    /// first, reported once (RFC 2883 §4), then the range holding the most
    /// recently received segment, then the others by recency. A caller with
    /// less option space (timestamps on: 3 blocks) uses a prefix.
    pub fn sack_blocks(&mut self, blocks: &mut [(u32, u32); 4]) -> usize {
        self.sack_blocks_within(blocks, 4)
    }

    /// The SACK blocks [`sack_blocks`](Self::sack_blocks) would report.
    pub fn pending_sack_blocks(&self) -> usize {
        (self.n_ranges + usize::from(self.dsack.is_some())).min(4)
    }

    /// Like [`sack_blocks`](Self::sack_blocks), at most `max` blocks (the
    /// room a segment's options leave, RFC 2018 §3); a D-SACK is still
    /// reported first and taken.
    pub fn sack_blocks_within(&mut self, blocks: &mut [(u32, u32); 4], max: usize) -> usize {
        let max = max.min(4);
        if max == 0 {
            return 0;
        }
        let mut n = 0;
        if let Some((a, b)) = self.dsack.take() {
            blocks[0] = (a.0, b.0);
            n = 1;
        }
        let mut last = u64::MAX;
        while n < max {
            let best = self.ranges[..self.n_ranges]
                .iter()
                .filter(|r| r.stamp < last)
                .max_by_key(|r| r.stamp);
            match best {
                Some(r) => {
                    blocks[n] = (r.start.0, r.end.0);
                    last = r.stamp;
                    n += 1;
                }
                None => break,
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn cfg(capacity: usize) -> RecvConfig {
        RecvConfig {
            capacity,
            max_ooo_bytes: capacity,
            max_ooo_ranges: 4,
            mss: 0,
            window_shift: 0,
        }
    }

    /// `SO_RCVBUF` on a live connection: the window grows with a larger
    /// buffer; a smaller one never moves the advertised right edge back
    /// (RFC 9293 §3.8.6.2.2), it only stops the edge from advancing.
    #[test]
    fn set_capacity_grows_the_window_and_never_shrinks_the_edge() {
        let mut b = RecvBuffer::new(cfg(8000), SeqNumber(0));
        assert_eq!(b.window(), 8000);
        assert_eq!(b.set_capacity(20_000), 20_000);
        assert_eq!(b.window(), 20_000);
        b.insert(SeqNumber(0), &[1; 5000]);
        assert_eq!(b.window(), 15_000);
        // Shrinking below what is held and offered keeps the edge.
        assert_eq!(b.set_capacity(4000), 20_000);
        assert_eq!(b.window(), 15_000);
        // Once read, the smaller buffer bounds the edge as it advances.
        assert_eq!(read_all(&mut b).len(), 5000);
        assert_eq!(b.set_capacity(4000), 15_000);
        assert_eq!(b.window(), 15_000, "the edge stays at 20000");
    }

    fn read_all(b: &mut RecvBuffer) -> Vec<u8> {
        let mut out = vec![0; b.len() + 3];
        let n = b.read(&mut out);
        out.truncate(n);
        out
    }

    fn sacks(b: &mut RecvBuffer) -> Vec<(u32, u32)> {
        let mut blocks = [(0, 0); 4];
        let n = b.sack_blocks(&mut blocks);
        blocks[..n].to_vec()
    }

    #[test]
    fn in_order_across_the_sequence_wrap() {
        let start = SeqNumber(u32::MAX - 3);
        let mut b = RecvBuffer::new(cfg(16), start);
        let r = b.insert(start, b"abcdef");
        assert_eq!(
            r,
            Inserted {
                advanced: 6,
                ..Inserted::default()
            }
        );
        assert_eq!(b.rcv_nxt(), SeqNumber(2));
        assert_eq!(read_all(&mut b), b"abcdef");
        // Out of order across the wrap too.
        let r = b.insert(SeqNumber(5), b"ij");
        assert!(r.out_of_order && r.advanced == 0);
        assert_eq!(sacks(&mut b), [(5, 7)]);
        assert_eq!(b.insert(SeqNumber(2), b"fgh").advanced, 5);
        assert_eq!(read_all(&mut b), b"fghij");
        assert!(sacks(&mut b).is_empty());
    }

    #[test]
    fn ring_wraps_with_reads_interleaved() {
        let mut b = RecvBuffer::new(cfg(8), SeqNumber(0));
        let mut seq = SeqNumber(0);
        let mut got = vec![];
        for chunk in [&b"abcde"[..], b"fgh", b"ijklm", b"nop"] {
            assert_eq!(b.insert(seq, chunk).advanced, chunk.len());
            seq += chunk.len() as u32;
            got.extend(read_all(&mut b));
            b.window(); // the ACK advertising the freed space
        }
        assert_eq!(got, b"abcdefghijklmnop");
    }

    #[test]
    fn overlapping_and_nested_segments_merge() {
        let mut b = RecvBuffer::new(cfg(64), SeqNumber(100));
        assert!(b.insert(SeqNumber(110), b"KLMNO").out_of_order); // [110,115)
        assert!(b.insert(SeqNumber(120), b"UVW").out_of_order); // [120,123)
                                                                // Bridges both, overlapping the first: merges into [110,123).
        let r = b.insert(SeqNumber(113), b"NOPQRSTU");
        assert!(r.out_of_order && r.duplicate);
        assert_eq!(sacks(&mut b), [(113, 115), (110, 123)]);
        assert_eq!(sacks(&mut b), [(110, 123)]); // D-SACK only once
                                                 // Nested: wholly inside, a duplicate.
        let r = b.insert(SeqNumber(115), b"PQ");
        assert!(r.duplicate && !r.out_of_order && r.advanced == 0);
        assert_eq!(sacks(&mut b), [(115, 117), (110, 123)]);
        // Adjacent on the left: merges without overlap.
        let r = b.insert(SeqNumber(105), b"FGHIJ");
        assert!(r.out_of_order && !r.duplicate);
        assert_eq!(
            b.ooo_ranges().collect::<Vec<_>>(),
            [(SeqNumber(105), SeqNumber(123))]
        );
        // The hole filled by a segment overlapping everything.
        let r = b.insert(SeqNumber(100), b"ABCDEFGHIJKLMNOPQRSTUVWXYZ");
        assert_eq!(r.advanced, 26);
        assert!(r.duplicate);
        assert_eq!(read_all(&mut b), b"ABCDEFGHIJKLMNOPQRSTUVWXYZ");
        assert_eq!(b.ooo_bytes(), 0);
    }

    #[test]
    fn old_and_partly_old_data_report_a_dsack() {
        let mut b = RecvBuffer::new(cfg(32), SeqNumber(1000));
        b.insert(SeqNumber(1000), b"0123456789");
        let r = b.insert(SeqNumber(1002), b"234");
        assert!(r.duplicate && r.advanced == 0);
        assert_eq!(sacks(&mut b), [(1002, 1005)]);
        let r = b.insert(SeqNumber(1008), b"89ab");
        assert!(r.duplicate && r.advanced == 2);
        assert_eq!(sacks(&mut b), [(1008, 1010)]);
        assert!(sacks(&mut b).is_empty());
        assert_eq!(b.stats().duplicates, 1);
    }

    #[test]
    fn trimmed_to_the_window_and_beyond_it_dropped() {
        let mut b = RecvBuffer::new(cfg(8), SeqNumber(0));
        assert_eq!(b.window(), 8);
        let r = b.insert(SeqNumber(4), b"efghijkl");
        assert!(r.out_of_order);
        assert_eq!(b.stats().trimmed_bytes, 4);
        assert_eq!(
            b.ooo_ranges().collect::<Vec<_>>(),
            [(SeqNumber(4), SeqNumber(8))]
        );
        let r = b.insert(SeqNumber(8), b"x");
        assert!(r.dropped);
        assert_eq!(b.stats().out_of_window, 1);
        assert_eq!(b.insert(SeqNumber(0), b"abcd").advanced, 8);
        assert_eq!(read_all(&mut b), b"abcdefgh");
    }

    #[test]
    fn zero_window_accepts_nothing() {
        let mut b = RecvBuffer::new(cfg(4), SeqNumber(7));
        assert_eq!(b.insert(SeqNumber(7), b"abcd").advanced, 4);
        assert_eq!(b.window(), 0);
        let r = b.insert(SeqNumber(11), b"e");
        assert!(r.dropped && r.advanced == 0);
        assert_eq!(b.window_field(), 0);
        // Reading reopens it.
        assert_eq!(read_all(&mut b), b"abcd");
        assert_eq!(b.window(), 4);
        assert_eq!(b.insert(SeqNumber(11), b"e").advanced, 1);
    }

    #[test]
    fn right_edge_never_moves_back_and_sws_avoidance() {
        let mut b = RecvBuffer::new(
            RecvConfig {
                mss: 100,
                ..cfg(1000)
            },
            SeqNumber(0),
        );
        assert_eq!(b.window(), 1000);
        assert_eq!(b.insert(SeqNumber(0), &[1; 600]).advanced, 600);
        assert_eq!(b.window(), 400); // edge fixed at 1000
                                     // Reading 50 octets frees less than one MSS: the edge stays (SWS).
        b.consume(50);
        assert_eq!(b.window(), 400);
        b.consume(60); // 110 freed in all: the edge moves
        assert_eq!(b.window(), 510);
        assert_eq!(b.advertised_right_edge(), SeqNumber(1110));
    }

    #[test]
    fn scaled_window_field_rounds_without_shrinking() {
        let c = RecvConfig {
            window_shift: 4,
            ..cfg(1 << 20)
        };
        let mut b = RecvBuffer::new(c, SeqNumber(0));
        // Before scaling applies, the initial window is 65535 (RFC 7323).
        assert_eq!(b.advertised_right_edge(), SeqNumber(65535));
        // Capped at 65535 << 4.
        assert_eq!(b.window_field(), 65535);
        assert_eq!(b.window(), 65535 << 4);
        b.insert(SeqNumber(0), &[0; 5]);
        // 65535·16 - 5 rounds up to a whole unit: the edge moves forward.
        let f = b.window_field();
        assert_eq!(f, 65535);
        assert!(b.advertised_right_edge().ge(SeqNumber(65535 << 4)));
    }

    #[test]
    fn out_of_order_range_limit_drops_and_counts() {
        let mut b = RecvBuffer::new(cfg(100), SeqNumber(0)); // 4 ranges
        for i in 0..4u32 {
            assert!(b.insert(SeqNumber(10 + 10 * i), b"xx").out_of_order);
        }
        let r = b.insert(SeqNumber(60), b"yy");
        assert!(r.dropped && !r.out_of_order);
        assert_eq!(b.stats().ooo_ranges_full, 1);
        // One merging into an existing range still fits.
        assert!(b.insert(SeqNumber(12), b"zz").out_of_order);
        // Byte limit.
        let mut b = RecvBuffer::new(
            RecvConfig {
                max_ooo_bytes: 5,
                ..cfg(100)
            },
            SeqNumber(0),
        );
        assert!(b.insert(SeqNumber(10), b"abc").out_of_order);
        assert!(b.insert(SeqNumber(20), b"def").dropped);
        assert_eq!(b.stats().ooo_bytes_full, 1);
        assert!(b.insert(SeqNumber(13), b"de").out_of_order);
    }

    #[test]
    fn sack_blocks_most_recent_first() {
        let mut b = RecvBuffer::new(
            RecvConfig {
                max_ooo_ranges: 8,
                ..cfg(200)
            },
            SeqNumber(0),
        );
        for start in [10u32, 30, 50, 70, 90] {
            b.insert(SeqNumber(start), b"ab");
        }
        assert_eq!(sacks(&mut b), [(90, 92), (70, 72), (50, 52), (30, 32)]);
        b.insert(SeqNumber(32), b"c"); // extends the second-oldest range
        assert_eq!(sacks(&mut b), [(30, 33), (90, 92), (70, 72), (50, 52)]);
        // A duplicate: the D-SACK, then the range holding it (RFC 2883 §4).
        b.insert(SeqNumber(50), b"a");
        assert_eq!(sacks(&mut b), [(50, 51), (50, 52), (30, 33), (90, 92)]);
    }

    #[test]
    fn zero_length_and_huge_offsets_do_nothing_harmful() {
        let mut b = RecvBuffer::new(cfg(16), SeqNumber(0));
        assert_eq!(b.insert(SeqNumber(0), b""), Inserted::default());
        assert!(b.insert(SeqNumber(1 << 31), b"a").dropped);
        assert!(b.insert(SeqNumber(u32::MAX), b"ab").duplicate || b.len() == 1);
    }

    /// The stream's octet at absolute offset `i`.
    fn byte(i: u64) -> u8 {
        (i.wrapping_mul(131) >> 3) as u8 ^ i as u8
    }

    proptest! {
        /// Against a reference model, a `BTreeMap` of the octets received
        /// and not yet read: arbitrary segments (in, straddling and beyond
        /// the window, duplicates, reordering) with reads interleaved. The
        /// octets read are exactly the stream's in-order prefix; the
        /// out-of-order ranges are exactly the received octets beyond
        /// RCV.NXT; SACK blocks describe only those (after a D-SACK, which
        /// describes octets received before); the advertised right edge
        /// never moves back.
        #[test]
        fn matches_reference_model(
            isn: u32,
            cap in 1usize..96,
            ranges in 1usize..6,
            shift in 0u8..3,
            ooo_bytes in 0usize..96,
            ops in proptest::collection::vec((0u8..4, 0u64..200, 0usize..40), 1..300),
        ) {
            let c = RecvConfig { capacity: cap, max_ooo_bytes: ooo_bytes, max_ooo_ranges: ranges, mss: 7, window_shift: shift };
            let mut b = RecvBuffer::new(c, SeqNumber(isn));
            let mut model: BTreeMap<u64, u8> = BTreeMap::new();
            let mut read_to = 0u64; // stream offset of the next octet to read
            let mut nxt = 0u64; // stream offset of RCV.NXT
            let mut edge = b.advertised_right_edge();
            let mut out = [0u8; 64];
            let mut dsack_pending = false;
            let seq_of = |off: u64| SeqNumber(isn) + off as u32;
            for (op, x, len) in ops {
                match op {
                    0 | 1 => {
                        // A segment near RCV.NXT: up to 40 octets before it
                        // (old) and up to 160 after (in or beyond the window).
                        // (Op 1: the next segment expected, at RCV.NXT.)
                        let off = if op == 1 { nxt } else { (nxt + x).saturating_sub(40) };
                        let data: Vec<u8> = (off..off + len as u64).map(byte).collect();
                        let wnd_end = nxt + u64::from(b.advertised_right_edge() - b.rcv_nxt());
                        // Header prediction's append, where its checks
                        // hold, leaves the buffer as `insert` does.
                        let predicted = (off == nxt && len > 0 && b.ooo_bytes() == 0 && off + len as u64 <= wnd_end)
                            .then(|| {
                                let mut c = b.clone();
                                let n = c.append_predicted(&data);
                                (c, n)
                            });
                        let r = b.insert(seq_of(off), &data);
                        if let Some((c, n)) = predicted {
                            prop_assert_eq!(n, r.advanced);
                            prop_assert_eq!(format!("{c:?}"), format!("{b:?}"));
                        }
                        dsack_pending |= r.duplicate;
                        if !r.dropped {
                            for i in off.max(nxt)..(off + len as u64).min(wnd_end) {
                                model.insert(i, byte(i));
                            }
                        } else {
                            // Dropped: only when nothing new could be kept.
                            prop_assert!(r.advanced == 0 && !r.out_of_order);
                        }
                        let mut n = nxt;
                        while model.contains_key(&n) { n += 1; }
                        prop_assert_eq!(r.advanced as u64, n - nxt);
                        nxt = n;
                        prop_assert_eq!(b.rcv_nxt(), seq_of(nxt));
                    }
                    2 => {
                        let n = b.read(&mut out[..len]);
                        prop_assert_eq!(n as u64, (nxt - read_to).min(len as u64));
                        for (k, &v) in out[..n].iter().enumerate() {
                            let i = read_to + k as u64;
                            prop_assert_eq!(v, byte(i));
                            prop_assert_eq!(model.remove(&i), Some(v));
                        }
                        read_to += n as u64;
                    }
                    _ => {
                        // Bare windows and scaled window fields, both.
                        let w = if x % 2 == 0 {
                            b.window()
                        } else {
                            let f = u32::from(b.window_field());
                            prop_assert!(b.rcv_nxt() + (f << shift) == b.advertised_right_edge()
                                || (f + 1) << shift > b.advertised_right_edge() - b.rcv_nxt());
                            b.advertised_right_edge() - b.rcv_nxt()
                        };
                        let new_edge = b.rcv_nxt() + w;
                        prop_assert!(new_edge.ge(edge), "edge moved back");
                        edge = new_edge;
                        // The window fits the free space.
                        prop_assert!(w as usize + b.len() <= cap);
                        let mut blocks = [(0, 0); 4];
                        let n = b.sack_blocks(&mut blocks);
                        let ooo: Vec<(SeqNumber, SeqNumber)> = b.ooo_ranges().collect();
                        let skip = usize::from(dsack_pending);
                        dsack_pending = false;
                        prop_assert_eq!(n, (ooo.len() + skip).min(4));
                        if skip == 1 {
                            // The D-SACK names octets received before.
                            let (l, r) = blocks[0];
                            let lo = nxt as i64 + i64::from(SeqNumber(l).signed_diff(seq_of(nxt)));
                            let hi = lo + i64::from(SeqNumber(r) - SeqNumber(l));
                            prop_assert!(lo < hi);
                            for i in lo..hi {
                                prop_assert!(i >= 0 && ((i as u64) < nxt || model.contains_key(&(i as u64))));
                            }
                        }
                        for &(l, r) in &blocks[skip..n] {
                            let (lo, hi) = (nxt + u64::from(SeqNumber(l) - seq_of(nxt)), nxt + u64::from(SeqNumber(r) - seq_of(nxt)));
                            prop_assert!(lo > nxt && lo < hi);
                            for i in lo..hi { prop_assert!(model.contains_key(&i)); }
                            prop_assert!(!model.contains_key(&(lo - 1)) && !model.contains_key(&hi));
                        }
                    }
                }
                // The out-of-order ranges are exactly the model beyond RCV.NXT.
                let mut from_ranges: Vec<u64> = b.ooo_ranges()
                    .flat_map(|(l, r)| { let lo = nxt + u64::from(l - seq_of(nxt)); lo..lo + u64::from(r - l) })
                    .collect();
                from_ranges.sort_unstable();
                let beyond: Vec<u64> = model.range(nxt..).map(|(&k, _)| k).collect();
                prop_assert_eq!(from_ranges, beyond);
                prop_assert!(b.ooo_bytes() <= ooo_bytes);
                prop_assert!(b.ooo_ranges().count() <= ranges);
                prop_assert_eq!(b.len() as u64, nxt - read_to);
            }
            // Finally the whole stream arrives in order: everything is read.
            loop {
                let n = b.read(&mut out);
                for (k, &v) in out[..n].iter().enumerate() {
                    prop_assert_eq!(v, byte(read_to + k as u64));
                }
                read_to += n as u64;
                b.window();
                let w = (b.advertised_right_edge() - b.rcv_nxt()) as usize;
                if read_to >= 400 || w == 0 { break; }
                let data: Vec<u8> = (read_to..read_to + w.min(64) as u64).map(byte).collect();
                let nx = u64::from(b.rcv_nxt() - SeqNumber(isn));
                let data = &data[(nx - read_to) as usize..];
                b.insert(b.rcv_nxt(), data);
            }
        }

        /// The ring grows by doubling from nothing as the data held needs
        /// (in order and out of order, while wrapped and while full) and
        /// keeps every octet where it belongs, against a model of the
        /// stream; the window advertised is the capacity's, as if the
        /// ring were allocated in full.
        #[test]
        fn grows_keeping_every_octet(
            isn: u32,
            cap in 2049usize..20_000,
            ops in proptest::collection::vec((0u8..3, 0usize..4000, 1usize..3000), 1..80),
        ) {
            let c = RecvConfig { capacity: cap, max_ooo_bytes: cap, max_ooo_ranges: 16, mss: 0, window_shift: 0 };
            let mut b = RecvBuffer::new(c, SeqNumber(isn));
            prop_assert_eq!(b.allocated(), 0); // nothing before the first octet
            let mut held: std::collections::BTreeMap<u64, u8> = std::collections::BTreeMap::new();
            let (mut read_to, mut nxt) = (0u64, 0u64);
            let mut out = vec![0u8; 4000];
            for (op, x, len) in ops {
                let was = b.allocated();
                if op < 2 {
                    // In order (op 0) or up to 4000 octets beyond RCV.NXT.
                    let off = if op == 0 { nxt } else { nxt + x as u64 };
                    let data: Vec<u8> = (off..off + len as u64).map(byte).collect();
                    let wnd_end = nxt + u64::from(b.window());
                    let r = b.insert(SeqNumber(isn) + off as u32, &data);
                    if !r.dropped {
                        for i in off..(off + len as u64).min(wnd_end) {
                            held.insert(i, byte(i));
                        }
                    }
                    while held.contains_key(&nxt) { nxt += 1; }
                    prop_assert_eq!(b.rcv_nxt(), SeqNumber(isn) + nxt as u32);
                } else {
                    let n = b.read(&mut out[..len]);
                    prop_assert_eq!(n as u64, (nxt - read_to).min(len as u64));
                    for (k, &v) in out[..n].iter().enumerate() {
                        prop_assert_eq!(v, byte(read_to + k as u64));
                        held.remove(&(read_to + k as u64));
                    }
                    read_to += n as u64;
                }
                let now = b.allocated();
                prop_assert!(now == was || now == cap || now >= 2 * was);
                prop_assert!(now <= cap);
                // The window is the capacity's less the unread octets.
                prop_assert_eq!(b.window() as usize, (cap - b.len()).min(65535));
                prop_assert_eq!(b.stats().ring_alloc_failed, 0);
            }
        }
    }

    #[test]
    fn nothing_allocated_until_data_then_doubling() {
        let c = RecvConfig {
            capacity: 256 * 1024,
            ..RecvConfig::default()
        };
        let mut b = RecvBuffer::new(c, SeqNumber(0));
        assert_eq!(b.allocated(), 0);
        assert_eq!(b.window(), 65535); // the capacity's window, unscaled
        assert_eq!(b.insert(SeqNumber(0), b"a").advanced, 1);
        assert_eq!(b.allocated(), 2048);
        // Out of order 3000 octets on: grows to hold it, then in order.
        assert!(b.insert(SeqNumber(3000), &[5; 100]).out_of_order);
        assert_eq!(b.allocated(), 4096);
        // Read the first octet: the ring wraps once it is written round.
        let mut one = [0u8; 1];
        assert_eq!(b.read(&mut one), 1);
        assert_eq!(b.append(&[7; 2999]), 3099);
        assert_eq!(b.allocated(), 4096);
        let mut out = vec![0u8; 4000];
        assert_eq!(b.read(&mut out), 3099);
        assert!(out[..2999].iter().all(|&x| x == 7) && out[2999..3099].iter().all(|&x| x == 5));
        // Wrapped: 1000 octets unread across the ring's end, then 5000 more.
        assert_eq!(b.append(&[1; 2000]), 2000);
        assert_eq!(b.read(&mut out[..1000]), 1000);
        assert_eq!(b.append(&[2; 5000]), 5000);
        assert_eq!(b.allocated(), 8192);
        assert_eq!(b.read(&mut out), 4000);
        assert!(out[..1000].iter().all(|&x| x == 1) && out[1000..4000].iter().all(|&x| x == 2));
    }
}
