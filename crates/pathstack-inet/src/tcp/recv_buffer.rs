//! The receive buffer (RFC 9293 §3.3.1 "Receive Sequence Space",
//! §3.10.7.4 SEGMENT ARRIVES): an in-order byte ring plus an out-of-order
//! queue kept in the same ring at each octet's offset from RCV.NXT, with
//! its ranges in a small fixed array (bounded in octets and in ranges; no
//! allocation per segment).
//!
//! It also computes the advertised window from the free space (RFC 9293
//! §3.8.6, with receiver silly-window avoidance §3.8.6.2.2), never moving
//! the advertised right edge back (RFC 9293 §3.8.6, RFC 7323 §2.4), and
//! the SACK blocks of outgoing ACKs (RFC 2018 §4) with D-SACK (RFC 2883).

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
    ranges: [Range; MAX_OOO_RANGES],
    n_ranges: usize,
    ooo_bytes: usize,
    stamp: u64,
    dsack: Option<(SeqNumber, SeqNumber)>,
    stats: RecvStats,
}

impl RecvBuffer {
    /// A buffer expecting `rcv_nxt` (IRS + 1) next; the ring is allocated
    /// here, once. The initial window (the one a SYN carries, never
    /// scaled, RFC 7323 §2.2) counts as advertised.
    pub fn new(cfg: RecvConfig, rcv_nxt: SeqNumber) -> Self {
        let mut cfg = cfg;
        cfg.capacity = cfg.capacity.min(1 << 30);
        cfg.max_ooo_ranges = cfg.max_ooo_ranges.min(MAX_OOO_RANGES);
        cfg.window_shift = cfg.window_shift.min(14); // RFC 7323 §2.3
        let initial = cfg.capacity.min(65535) as u32;
        RecvBuffer {
            cfg,
            buf: vec![0; cfg.capacity].into_boxed_slice(),
            read_pos: 0,
            readable: 0,
            rcv_nxt,
            adv_right: rcv_nxt + initial,
            ranges: [Range::default(); MAX_OOO_RANGES],
            n_ranges: 0,
            ooo_bytes: 0,
            stamp: 0,
            dsack: None,
            stats: RecvStats::default(),
        }
    }

    /// The configuration (after capping).
    pub fn config(&self) -> &RecvConfig {
        &self.cfg
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
    pub fn stats(&self) -> &RecvStats {
        &self.stats
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

    /// The right edge the free space allows: RCV.NXT plus the ring space
    /// not holding readable data. Nondecreasing (RCV.NXT advances exactly
    /// as readable data grows).
    fn space_edge(&self) -> SeqNumber {
        self.rcv_nxt + (self.buf.len() - self.readable) as u32
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
            let step = ((self.buf.len() / 2) as u32).min(self.cfg.mss);
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
        if e <= 0 {
            // Wholly old: a duplicate (RFC 2883 §4.1.1).
            out.duplicate = true;
            self.stats.duplicates += 1;
            self.dsack = Some((seq, seq + (e - s) as u32));
            return out;
        }
        if s >= wnd {
            out.dropped = true;
            self.stats.out_of_window += 1;
            return out;
        }
        if s < 0 {
            // Partly old: report the old part (RFC 2883 §4.1.2 analogue).
            out.duplicate = true;
            self.dsack = Some((seq, self.rcv_nxt));
        }
        let ts = s.max(0) as u32;
        let te = e.min(wnd) as u32;
        self.stats.trimmed_bytes += (e - i64::from(te)) as u64;
        let payload = &data[(i64::from(ts) - s) as usize..(i64::from(te) - s) as usize];
        let (a, b) = (self.rcv_nxt + ts, self.rcv_nxt + te);
        self.stamp += 1;

        // Octets already queued out of order: a duplicate if wholly covered.
        if let Some(i) =
            (0..self.n_ranges).find(|&i| self.ranges[i].start.le(a) && b.le(self.ranges[i].end))
        {
            out.duplicate = true;
            self.stats.duplicates += 1;
            self.dsack = Some((a, b));
            self.ranges[i].stamp = self.stamp;
            return out;
        }
        if ts > 0 {
            // Out of order: merge with overlapping and adjacent ranges.
            let (mut ma, mut mb, mut absorbed, mut absorbed_bytes) = (a, b, 0, 0usize);
            for r in &self.ranges[..self.n_ranges] {
                if r.start.le(b) && a.le(r.end) {
                    if !out.duplicate && r.start.lt(b) && a.lt(r.end) {
                        out.duplicate = true;
                        self.dsack = Some((r.start.max(a), r.end.min(b)));
                    }
                    ma = ma.min(r.start);
                    mb = mb.max(r.end);
                    absorbed += 1;
                    absorbed_bytes += (r.end - r.start) as usize;
                }
            }
            if self.n_ranges - absorbed + 1 > self.cfg.max_ooo_ranges {
                self.stats.ooo_ranges_full += 1;
                return Inserted {
                    dropped: true,
                    ..Inserted::default()
                };
            }
            let new_bytes = self.ooo_bytes - absorbed_bytes + (mb - ma) as usize;
            if new_bytes > self.cfg.max_ooo_bytes {
                self.stats.ooo_bytes_full += 1;
                return Inserted {
                    dropped: true,
                    ..Inserted::default()
                };
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
        self.store(0, payload);
        let mut end = b;
        while let Some(i) = (0..self.n_ranges).find(|&i| self.ranges[i].start.le(end)) {
            let r = self.ranges[i];
            if r.start.lt(b) && self.dsack.is_none() {
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

    fn remove_range(&mut self, i: usize) {
        self.n_ranges -= 1;
        self.ranges[i] = self.ranges[self.n_ranges];
    }

    /// Copies `data` into the ring `offset` octets after RCV.NXT.
    fn store(&mut self, offset: usize, data: &[u8]) {
        let cap = self.buf.len();
        let at = (self.read_pos + self.readable + offset) % cap;
        let first = data.len().min(cap - at);
        self.buf[at..at + first].copy_from_slice(&data[..first]);
        self.buf[..data.len() - first].copy_from_slice(&data[first..]);
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
        self.readable -= n;
        self.read_pos = if self.readable == 0 {
            0
        } else {
            (self.read_pos + n) % self.buf.len()
        };
        n
    }

    /// Copies readable octets into `out` and consumes them; returns how
    /// many (0 when nothing is readable, the would-block case).
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let (a, b) = self.peek();
        let n1 = a.len().min(out.len());
        out[..n1].copy_from_slice(&a[..n1]);
        let n2 = b.len().min(out.len() - n1);
        out[n1..n1 + n2].copy_from_slice(&b[..n2]);
        self.consume(n1 + n2)
    }

    /// Fills `blocks` with the SACK blocks of the next ACK (RFC 2018 §4)
    /// as `(left, right)` edges and returns how many: a pending D-SACK
    /// first, reported once (RFC 2883 §4), then the range holding the most
    /// recently received segment, then the others by recency. A caller with
    /// less option space (timestamps on: 3 blocks) uses a prefix.
    pub fn sack_blocks(&mut self, blocks: &mut [(u32, u32); 4]) -> usize {
        let mut n = 0;
        if let Some((a, b)) = self.dsack.take() {
            blocks[0] = (a.0, b.0);
            n = 1;
        }
        let mut last = u64::MAX;
        while n < 4 {
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
