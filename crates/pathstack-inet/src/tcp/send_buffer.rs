//! The send buffer (RFC 9293 §3.3.1, "Send Sequence Space"): the octets
//! from SND.UNA onwards, both those sent and not yet acknowledged and those
//! written by the user but not yet sent, in a byte ring that grows as the
//! writes need, up to the configured size (see `ring.rs`: nothing until
//! the first write, then doubling; an idle connection holds no ring).
//!
//! A FIN occupies one sequence number after the last data octet
//! (RFC 9293 §3.4, §3.6): [`SendBuffer::close`] marks it, and the buffer
//! reports where it lies ([`SendBuffer::fin_seq`]) and whether it has been
//! acknowledged.

use super::ring::{copy_octets, grown_size, regrown, wrap};
use super::seq::SeqNumber;

/// A bounded ring of outgoing octets starting at SND.UNA.
#[derive(Clone, Debug)]
pub struct SendBuffer {
    /// The ring as allocated so far (grown on demand up to `max`).
    buf: Box<[u8]>,
    /// The configured size: the most octets held.
    max: usize,
    /// Index in `buf` of the octet at SND.UNA.
    head: usize,
    /// Octets held (SND.UNA up to the end of the written data).
    len: usize,
    /// SND.UNA: the sequence number of `buf[head]`.
    una: SeqNumber,
    /// `close()` was called: a FIN follows the data.
    fin: bool,
    /// The FIN has been acknowledged.
    fin_acked: bool,
}

impl SendBuffer {
    /// A buffer of up to `capacity` octets (allocated as the writes need
    /// it; nothing now) whose first data octet has sequence number `una`
    /// (ISS + 1 on a new connection, RFC 9293 §3.4).
    pub fn new(capacity: usize, una: SeqNumber) -> Self {
        // Sequence space arithmetic needs the buffered span below 2^31
        // (RFC 9293 §3.4); RFC 7323 §2.3 caps windows at 2^30 anyway.
        let capacity = capacity.min(1 << 30);
        SendBuffer {
            buf: Box::default(),
            max: capacity,
            head: 0,
            len: 0,
            una,
            fin: false,
            fin_acked: false,
        }
    }

    /// The capacity in octets: the configured size, what the ring may
    /// grow to.
    pub fn capacity(&self) -> usize {
        self.max
    }

    /// The octets the ring holds allocated now.
    pub fn allocated(&self) -> usize {
        self.buf.len()
    }

    /// Octets held (unacknowledged plus unsent), not counting the FIN.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no data octets are held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sets the capacity at run time (`SO_SNDBUF` on a live
    /// connection): never below what the buffer holds (the ring grows on
    /// demand, so a larger capacity allocates nothing now).
    pub fn set_capacity(&mut self, capacity: usize) {
        self.max = capacity.min(1 << 30).max(self.len);
    }

    /// Free space for [`write`](Self::write).
    pub fn free(&self) -> usize {
        if self.fin {
            0
        } else {
            self.max - self.len
        }
    }

    /// SND.UNA: the sequence number of the first held octet.
    pub fn una(&self) -> SeqNumber {
        self.una
    }

    /// The sequence number after the last data octet (where the FIN goes).
    pub fn data_end(&self) -> SeqNumber {
        self.una + self.len as u32
    }

    /// The sequence number after everything held, FIN included: the
    /// largest acknowledgment [`ack_to`](Self::ack_to) accepts.
    pub fn end(&self) -> SeqNumber {
        self.data_end() + u32::from(self.fin && !self.fin_acked)
    }

    /// Appends as much of `data` as fits; returns the octets taken (0 when
    /// full, the would-block case, and always 0 after [`close`](Self::close)).
    #[inline]
    pub fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len();
        // The usual write fits the ring as allocated: one comparison, as
        // with a ring allocated in full (the FIN's check was `free`'s).
        if self.fin || n == 0 || n > self.buf.len() - self.len {
            return self.write_growing(data);
        }
        self.put(&data[..n]);
        n
    }

    /// Whether a [`write`](Self::write) of `n` octets would take them
    /// all into the ring as allocated (no growth, no FIN queued): what a
    /// predicted write asks before it changes anything
    /// (`Tcb::write_predicted`).
    #[inline(always)]
    pub fn fits_allocated(&self, n: usize) -> bool {
        !self.fin && n <= self.buf.len() - self.len
    }

    /// [`write`](Self::write) of `data`, which
    /// [`fits_allocated`](Self::fits_allocated): all of it, in line.
    #[inline(always)]
    pub fn write_fitting(&mut self, data: &[u8]) {
        debug_assert!(self.fits_allocated(data.len()));
        self.put(data);
    }

    /// [`write`](Self::write) when the ring as allocated is too small (or
    /// nothing can be taken): grows it first. Out of line: a write that
    /// finds the ring full while it may still grow is rare.
    #[cold]
    #[inline(never)]
    fn write_growing(&mut self, data: &[u8]) -> usize {
        let mut n = data.len().min(self.free());
        if n == 0 {
            return 0;
        }
        if self.len + n > self.buf.len() {
            n = self.grow(self.len + n);
            if n == 0 {
                return 0;
            }
        }
        self.put(&data[..n]);
        n
    }

    /// Appends `data`, which fits the ring as allocated.
    #[inline(always)]
    fn put(&mut self, data: &[u8]) {
        let n = data.len();
        let cap = self.buf.len();
        let tail = wrap(self.head + self.len, cap);
        let first = n.min(cap - tail);
        copy_octets(&mut self.buf[tail..], &data[..first]);
        // The wrapped part, if any (a call to copy nothing costs too).
        if first < n {
            copy_octets(&mut self.buf, &data[first..n]);
        }
        self.len += n;
    }

    /// Grows the ring so that `needed` octets fit (`needed` ≤ the
    /// configured size); returns how many more octets fit now. When the
    /// allocation fails the ring stays as it is and the write takes what
    /// fits in it (the application sees a short write or would-block, as
    /// with a full buffer). Out of line: it runs a handful of times in a
    /// connection's life.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, needed: usize) -> usize {
        let size = grown_size(self.buf.len(), needed, self.max);
        if let Some(buf) = regrown(&self.buf, self.head, size) {
            self.buf = buf;
            self.head = 0;
        }
        (self.buf.len() - self.len).min(needed - self.len)
    }

    /// Marks the end of the data: a FIN follows the last octet written
    /// (RFC 9293 §3.10.4 CLOSE, "queue this until all preceding SENDs
    /// have been segmentized"). Further writes take nothing.
    pub fn close(&mut self) {
        self.fin = true;
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.fin
    }

    /// The sequence number of the FIN, once closed and until it is
    /// acknowledged.
    pub fn fin_seq(&self) -> Option<SeqNumber> {
        (self.fin && !self.fin_acked).then(|| self.data_end())
    }

    /// Whether the FIN has been acknowledged (RFC 9293 §3.10.7.4, the
    /// FIN-WAIT-1 → FIN-WAIT-2 and CLOSING/LAST-ACK transitions).
    pub fn fin_acked(&self) -> bool {
        self.fin_acked
    }

    /// A cumulative acknowledgment `ack` arrived: releases the octets
    /// before it and returns how many data octets were released. An old
    /// ACK (`ack =< SND.UNA`) or one beyond [`end`](Self::end) releases
    /// nothing (RFC 9293 §3.10.7.4: the caller ignores or answers those;
    /// the buffer never panics on them).
    pub fn ack_to(&mut self, ack: SeqNumber) -> usize {
        if !ack.gt(self.una) || ack.gt(self.end()) {
            return 0;
        }
        let d = (ack - self.una) as usize;
        let data = d.min(self.len);
        if d > self.len {
            // The one extra sequence number is the FIN's.
            self.fin_acked = true;
        }
        self.head = if self.len == data {
            0
        } else {
            wrap(self.head + data, self.buf.len())
        };
        self.len -= data;
        self.una += data as u32;
        data
    }

    /// [`ack_to`](Self::ack_to) for header prediction's ACK of new data
    /// (`tcb/predict.rs`), `newly` octets past SND.UNA: it has found the
    /// ACK within (SND.UNA, SND.NXT] in ESTABLISHED, where no FIN of ours
    /// is queued, so the octets are data held and only the release is
    /// left, in line. Anything else (never, after those checks) goes to
    /// `ack_to`.
    #[inline(always)]
    pub fn ack_predicted(&mut self, newly: u32) {
        let data = newly as usize;
        if data == 0 || data > self.len || self.fin {
            self.ack_to(self.una + newly);
            return;
        }
        self.head = if self.len == data {
            0
        } else {
            wrap(self.head + data, self.buf.len())
        };
        self.len -= data;
        self.una += newly;
    }

    /// Up to `len` octets starting `offset` octets after SND.UNA, for
    /// (re)transmission, as two slices (the second non-empty only when the
    /// range wraps the ring). Clamped to the data held.
    pub fn peek(&self, offset: usize, len: usize) -> (&[u8], &[u8]) {
        if offset >= self.len {
            return (&[], &[]);
        }
        let len = len.min(self.len - offset);
        let cap = self.buf.len();
        let start = wrap(self.head + offset, cap);
        let first = len.min(cap - start);
        (&self.buf[start..start + first], &self.buf[..len - first])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn joined(b: &SendBuffer, off: usize, len: usize) -> Vec<u8> {
        let (a, c) = b.peek(off, len);
        [a, c].concat()
    }

    #[test]
    fn partial_write_then_would_block() {
        let mut b = SendBuffer::new(8, SeqNumber(100));
        assert_eq!(b.write(b"hello"), 5);
        assert_eq!(b.write(b"world"), 3);
        assert_eq!(b.write(b"!"), 0);
        assert_eq!((b.len(), b.free()), (8, 0));
        assert_eq!(joined(&b, 0, 100), b"hellowor");
    }

    /// `SO_SNDBUF` on a live connection: a larger capacity takes more
    /// at once; a smaller one never drops what is queued.
    #[test]
    fn set_capacity_at_run_time() {
        let mut b = SendBuffer::new(8, SeqNumber(100));
        assert_eq!(b.write(b"hello"), 5);
        b.set_capacity(16);
        assert_eq!(b.write(b"0123456789abcdef"), 11);
        assert_eq!((b.len(), b.free()), (16, 0));
        b.set_capacity(4);
        assert_eq!((b.capacity(), b.free()), (16, 0), "what is queued stays");
        assert_eq!(b.ack_to(SeqNumber(110)), 10);
        b.set_capacity(4);
        assert_eq!((b.capacity(), b.free()), (6, 0));
        assert_eq!(joined(&b, 0, 100), b"56789a");
    }

    #[test]
    fn ack_releases_and_peek_wraps() {
        let mut b = SendBuffer::new(8, SeqNumber(u32::MAX - 2));
        b.write(b"abcdefgh");
        assert_eq!(b.ack_to(SeqNumber(u32::MAX - 2) + 5), 5); // across the wrap
        assert_eq!(b.una(), SeqNumber(2));
        assert_eq!(b.write(b"12345"), 5);
        let (x, y) = b.peek(1, 6);
        assert_eq!((x, y), (&b"gh"[..], &b"1234"[..]));
        assert_eq!(joined(&b, 0, 8), b"fgh12345");
        assert_eq!(b.peek(8, 1), (&[][..], &[][..]));
    }

    #[test]
    fn old_and_future_acks_are_ignored() {
        let mut b = SendBuffer::new(16, SeqNumber(1000));
        b.write(b"0123456789");
        assert_eq!(b.ack_to(SeqNumber(999)), 0);
        assert_eq!(b.ack_to(SeqNumber(1000)), 0);
        assert_eq!(b.ack_to(SeqNumber(1011)), 0); // beyond the data
        assert_eq!(b.ack_to(SeqNumber(1000) + (1 << 31)), 0); // unordered
        assert_eq!(b.ack_to(SeqNumber(1004)), 4);
        assert_eq!(b.ack_to(SeqNumber(1002)), 0);
        assert_eq!(b.len(), 6);
    }

    #[test]
    fn fin_takes_one_sequence_number() {
        let mut b = SendBuffer::new(16, SeqNumber(10));
        b.write(b"abc");
        assert_eq!(b.fin_seq(), None);
        b.close();
        assert_eq!(b.write(b"x"), 0);
        assert_eq!(b.fin_seq(), Some(SeqNumber(13)));
        assert_eq!(b.end(), SeqNumber(14));
        assert_eq!(b.ack_to(SeqNumber(13)), 3);
        assert!(!b.fin_acked());
        assert_eq!(b.ack_to(SeqNumber(15)), 0); // beyond the FIN
        assert_eq!(b.ack_to(SeqNumber(14)), 0);
        assert!(b.fin_acked());
        assert_eq!(b.fin_seq(), None);
        assert_eq!(b.end(), SeqNumber(13));
        // Data and FIN acknowledged together.
        let mut b = SendBuffer::new(4, SeqNumber(0));
        b.write(b"ab");
        b.close();
        assert_eq!(b.ack_to(SeqNumber(3)), 2);
        assert!(b.fin_acked() && b.is_empty());
    }

    proptest! {
        /// Against a model (a `Vec` of the unacknowledged stream): writes,
        /// acknowledgments (old, in range, future) and peeks agree.
        #[test]
        fn matches_model(cap in 1usize..64, isn: u32,
                         ops in proptest::collection::vec((0u8..3, 0usize..80, 0usize..80), 0..200)) {
            let mut b = SendBuffer::new(cap, SeqNumber(isn));
            let mut model: Vec<u8> = Vec::new();
            let mut una = SeqNumber(isn);
            let mut next = 0u8;
            for (op, x, y) in ops {
                match op {
                    0 => {
                        let data: Vec<u8> = (0..x).map(|i| next.wrapping_add(i as u8)).collect();
                        let n = b.write(&data);
                        prop_assert_eq!(n, x.min(cap - model.len()));
                        model.extend_from_slice(&data[..n]);
                        next = next.wrapping_add(n as u8);
                    }
                    1 => {
                        let ack = una + (x as u32).wrapping_sub(20);
                        // Header prediction's release (any ACK: it falls
                        // back to `ack_to` where its checks do not hold)
                        // leaves the buffer as `ack_to` does.
                        let mut c = b.clone();
                        c.ack_predicted(ack - una);
                        let released = b.ack_to(ack);
                        prop_assert_eq!(format!("{c:?}"), format!("{b:?}"));
                        let d = ack - una;
                        let expect = if d > 0 && (d as usize) <= model.len() { d as usize } else { 0 };
                        prop_assert_eq!(released, expect);
                        model.drain(..expect);
                        una += expect as u32;
                    }
                    _ => {
                        let got = joined(&b, x, y);
                        let want: &[u8] = if x < model.len() { &model[x..(x + y).min(model.len())] } else { &[] };
                        prop_assert_eq!(&got[..], want);
                    }
                }
                prop_assert_eq!(b.una(), una);
                prop_assert_eq!(b.len(), model.len());
                prop_assert_eq!(b.free(), cap - model.len());
                prop_assert!(b.allocated() <= cap);
                prop_assert!(b.allocated() >= model.len());
            }
        }

        /// Growth keeps every octet and its sequence number: the ring
        /// grows while wrapped (the oldest octet past the ring's middle)
        /// and while full, against a `VecDeque` of the unacknowledged
        /// stream.
        #[test]
        fn grows_while_wrapped_and_full(
            max in 2048usize..20_000,
            isn: u32,
            ops in proptest::collection::vec((any::<bool>(), 1usize..3000), 1..60),
        ) {
            let mut b = SendBuffer::new(max, SeqNumber(isn));
            prop_assert_eq!(b.allocated(), 0); // nothing before the first write
            let mut model = std::collections::VecDeque::new();
            let mut next = 0u8;
            for (write, n) in ops {
                if write {
                    let data: Vec<u8> = (0..n).map(|i| next.wrapping_add(i as u8)).collect();
                    let was = b.allocated();
                    let took = b.write(&data);
                    prop_assert_eq!(took, n.min(max - model.len()));
                    model.extend(&data[..took]);
                    next = next.wrapping_add(took as u8);
                    // Doubling (or exactly what is needed), never beyond max.
                    let now = b.allocated();
                    prop_assert!(now == was || now == max || now >= 2 * was);
                } else {
                    let k = n.min(model.len());
                    prop_assert_eq!(b.ack_to(b.una() + k as u32), k);
                    model.drain(..k);
                }
                let want: Vec<u8> = model.iter().copied().collect();
                prop_assert_eq!(joined(&b, 0, usize::MAX), want);
                prop_assert_eq!(b.data_end(), b.una() + model.len() as u32);
            }
        }
    }

    #[test]
    fn grows_from_nothing_by_doubling() {
        let mut b = SendBuffer::new(256 * 1024, SeqNumber(1));
        assert_eq!((b.allocated(), b.free()), (0, 256 * 1024));
        assert_eq!(b.write(b"x"), 1);
        assert_eq!(b.allocated(), 2048);
        // Wrapped, then full: grows to 4096 and keeps the order.
        b.write(&[7; 2047]);
        b.ack_to(SeqNumber(1001));
        b.write(&[9; 1000]); // wraps
        assert_eq!(b.allocated(), 2048);
        b.write(b"abc");
        assert_eq!(b.allocated(), 4096);
        let all = joined(&b, 0, 5000);
        assert_eq!(all.len(), 2051);
        assert_eq!(&all[2048..], b"abc");
        assert!(all[1048..2048].iter().all(|&x| x == 9));
        // A write larger than double grows to what it needs at once.
        b.write(&[1; 10_000]);
        assert_eq!(b.allocated(), 12_051);
    }
}
