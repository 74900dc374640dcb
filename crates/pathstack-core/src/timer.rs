//! A hashed timing wheel for the stack's spontaneous work: retransmissions,
//! ARP cache aging, reassembly timeouts (Scout thesis §5: a path does work not
//! only when a message arrives but also when a timer fires).
//!
//! The wheel is Varghese & Lauck's *hashed timing wheel* ("Hashed and
//! Hierarchical Timing Wheels", SOSP 1987, scheme 6): time is cut into ticks,
//! and a timer lives in slot `tick(deadline) mod slots`. Each slot is a doubly
//! linked list, by index, through a slab of entries allocated once, when the
//! wheel is made; free entries form a free list through the same links. So
//! arming, cancelling and firing never allocate, and the number of armed
//! timers is bounded by `capacity` ([`TimerError::Full`] beyond it).
//!
//! Each entry keeps its absolute deadline, and each slot list is sorted by
//! (deadline, arming order). So a timer more than one revolution away simply
//! waits in its slot until the walk reaches its tick, timers fire in deadline
//! order even within one tick, and ties fire in the order they were armed.
//! The deadline is exact: the tick only decides where a timer is filed, never
//! when it fires.
//!
//! Time is the caller's `now` (see [`crate::time`]); nothing here reads a clock.
//!
//! ```
//! use pathstack_core::timer::TimerWheel;
//! use pathstack_core::{Duration, Instant};
//!
//! let mut wheel = TimerWheel::new(Duration::from_millis(1), 256, 1024);
//! let rto = wheel.arm(Instant::from_millis(200), "retransmit").unwrap();
//! wheel.arm(Instant::from_millis(50), "arp-age").unwrap();
//! assert_eq!(wheel.next_deadline(), Some(Instant::from_millis(50)));
//! assert!(wheel.cancel(rto));
//! let mut fired = Vec::new();
//! wheel.expire(Instant::from_millis(300), |t| fired.push(t));
//! assert_eq!(fired, ["arp-age"]);
//! assert!(!wheel.cancel(rto)); // stale handles are harmless
//! ```

use crate::time::{Duration, Instant};
use std::cell::Cell;
use thiserror::Error;

/// The end of a list.
const NIL: u32 = u32::MAX;

/// `due_at` of a wheel with no timer armed.
const NEVER: Instant = Instant::from_nanos(u64::MAX);

/// Names one armed timer, to cancel it.
///
/// A handle carries the generation of its slab entry: once the timer has
/// fired or been cancelled and the entry is reused, the old handle no longer
/// matches, so a stale handle can never cancel somebody else's timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimerHandle {
    index: u32,
    generation: u32,
}

/// What went wrong arming a timer.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
pub enum TimerError {
    /// Every entry of the wheel is armed.
    #[error("timer wheel full: all {capacity} timers are armed")]
    Full {
        /// The wheel's bound on armed timers.
        capacity: usize,
    },
}

/// One slab entry: an armed timer, or a free entry (`payload` is `None`).
#[derive(Clone, Debug)]
struct Entry<T> {
    at: Instant,
    /// Arming order, to break ties between equal deadlines.
    seq: u64,
    payload: Option<T>,
    generation: u32,
    prev: u32,
    /// Next in the slot list, or in the free list when free.
    next: u32,
    slot: u32,
}

/// A hashed timing wheel of timers carrying a `T` (see the [module docs](self)).
///
/// `T` is the owner's token, e.g. `(PathId, stage index, user token)`; it is
/// handed back when the timer fires.
#[derive(Clone, Debug)]
pub struct TimerWheel<T: Copy> {
    tick_ns: u64,
    entries: Vec<Entry<T>>,
    /// `slots - 1`: the slot count is a power of two, so a tick's slot is
    /// a mask, not a division (the deadline walk takes one per tick).
    slot_mask: u64,
    heads: Vec<u32>,
    tails: Vec<u32>,
    /// One bit per slot, set while the slot's list is not empty, so that
    /// the deadline walk skips empty slots 64 at a time. A host asks for
    /// its next deadline after the earliest timer went (a connection's
    /// SYN timer cancelled, a delayed ACK sent) and the next one is often
    /// a second away: walking the 1,024 heads one by one was ~5,000
    /// instructions a time, one per connection of the TAP connection-rate
    /// row (issue 28).
    occupied: Vec<u64>,
    free: u32,
    len: usize,
    /// The tick the expiry walk has reached. Invariant: every armed timer has
    /// `tick(at) >= cursor`, except timers armed for an earlier tick, which
    /// are filed in the cursor's slot (they sort first there).
    cursor: u64,
    seq: u64,
    /// No armed timer is due before this (a lower bound; `u64::MAX` ns
    /// when none is armed), so that [`TimerWheel::due`] on an idle wheel
    /// is one comparison.
    due_at: Cell<Instant>,
    /// Whether `due_at` is the earliest deadline itself, not only a bound:
    /// then [`TimerWheel::next_deadline`] is one load. Arming keeps it
    /// exact; removing the earliest timer makes it a bound until the next
    /// walk, which stores what it found. A host asks for its next deadline
    /// on every poll (to know how long to sleep), far more often than the
    /// earliest timer changes, and the walk may cover a revolution.
    due_exact: Cell<bool>,
}

impl<T: Copy> TimerWheel<T> {
    /// Makes a wheel of `slots` slots of `tick` each, for at most `capacity`
    /// timers, and allocates all of it now.
    ///
    /// One revolution (`tick × slots`) should cover the common timeouts
    /// (e.g. 1 ms × 1,024 for RTOs up to a second); longer timers still fire
    /// on time, they just share slots with nearer ones. A zero `tick` or
    /// `slots` is taken as 1, and `slots` is rounded up to a power of two;
    /// `capacity` is limited to `u32::MAX - 1`.
    pub fn new(tick: Duration, slots: usize, capacity: usize) -> Self {
        let slots = slots.clamp(1, 1 << 31).next_power_of_two();
        let capacity = capacity.min(NIL as usize - 1);
        let entries = (0..capacity)
            .map(|i| Entry {
                at: Instant::ZERO,
                seq: 0,
                payload: None,
                generation: 0,
                prev: NIL,
                next: if i + 1 < capacity { i as u32 + 1 } else { NIL },
                slot: NIL,
            })
            .collect();
        TimerWheel {
            tick_ns: tick.as_nanos().max(1),
            entries,
            slot_mask: slots as u64 - 1,
            heads: vec![NIL; slots],
            tails: vec![NIL; slots],
            occupied: vec![0; slots.div_ceil(64)],
            free: if capacity > 0 { 0 } else { NIL },
            len: 0,
            cursor: 0,
            seq: 0,
            due_at: Cell::new(NEVER),
            due_exact: Cell::new(true),
        }
    }

    /// Whether a timer may be due at `now`: `false` means none is, so
    /// [`TimerWheel::expire`] need not be called. One comparison.
    #[inline]
    pub fn due(&self, now: Instant) -> bool {
        now >= self.due_at.get()
    }

    /// Number of armed timers.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no timer is armed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Most timers that can be armed at once.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// The length of one tick.
    pub fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_ns)
    }

    /// The number of slots.
    pub fn slots(&self) -> usize {
        self.heads.len()
    }

    fn tick_of(&self, at: Instant) -> u64 {
        at.as_nanos() / self.tick_ns
    }

    fn slot_of(&self, tick: u64) -> usize {
        (tick & self.slot_mask) as usize
    }

    /// Arms a timer that fires with `payload` once `now >= at`. A deadline in
    /// the past fires at the next [`TimerWheel::expire`].
    pub fn arm(&mut self, at: Instant, payload: T) -> Result<TimerHandle, TimerError> {
        if self.free == NIL {
            return Err(TimerError::Full {
                capacity: self.capacity(),
            });
        }
        let idx = self.free;
        let i = idx as usize;
        self.free = self.entries[i].next;
        // Filing a past deadline under the cursor keeps the invariant that
        // the walk never has to look behind itself.
        let slot = self.slot_of(self.tick_of(at).max(self.cursor));
        self.seq += 1;
        let e = &mut self.entries[i];
        e.at = at;
        e.seq = self.seq;
        e.payload = Some(payload);
        e.slot = slot as u32;
        let generation = e.generation;
        // Sorted insert from the tail: a new timer has the largest `seq`, so
        // it goes after every entry with a deadline not later than its own.
        // Timers are mostly armed in increasing deadline order, so this
        // usually stops at once.
        let mut after = self.tails[slot];
        while after != NIL && self.entries[after as usize].at > at {
            after = self.entries[after as usize].prev;
        }
        let next = if after == NIL {
            self.heads[slot]
        } else {
            self.entries[after as usize].next
        };
        self.entries[i].prev = after;
        self.entries[i].next = next;
        if after == NIL {
            self.heads[slot] = idx;
            self.occupied[slot / 64] |= 1 << (slot % 64);
        } else {
            self.entries[after as usize].next = idx;
        }
        if next == NIL {
            self.tails[slot] = idx;
        } else {
            self.entries[next as usize].prev = idx;
        }
        self.len += 1;
        if at < self.due_at.get() {
            // Below the bound, so below every other timer: the earliest.
            self.due_at.set(at);
            self.due_exact.set(true);
        }
        Ok(TimerHandle {
            index: idx,
            generation,
        })
    }

    /// Whether `h` names a timer that is still armed.
    pub fn is_armed(&self, h: TimerHandle) -> bool {
        self.entries
            .get(h.index as usize)
            .is_some_and(|e| e.generation == h.generation && e.payload.is_some())
    }

    /// Cancels the timer `h` names. Returns `false` if it already fired, was
    /// cancelled, or the handle is stale.
    pub fn cancel(&mut self, h: TimerHandle) -> bool {
        if !self.is_armed(h) {
            return false;
        }
        self.unlink(h.index);
        self.release(h.index);
        true
    }

    /// The earliest deadline of any armed timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        if self.len == 0 {
            return None;
        }
        if self.due_exact.get() {
            return Some(self.due_at.get());
        }
        let found = self.walk_to_earliest();
        if let Some(at) = found {
            self.due_at.set(at);
            self.due_exact.set(true);
        }
        found
    }

    /// The earliest deadline, found by walking the slots from the cursor.
    fn walk_to_earliest(&self) -> Option<Instant> {
        // Walk one revolution from the cursor: the first slot whose head is
        // due in the tick being looked at holds the earliest timer (every
        // earlier slot's timers are at least a revolution later). Only
        // occupied slots are looked at: from the cursor's slot to the end,
        // then from the start to the cursor's slot.
        let slots = self.heads.len();
        let start = self.slot_of(self.cursor);
        for (lo, hi) in [(start, slots), (0, start)] {
            let mut from = lo;
            while let Some(slot) = self.first_occupied(from, hi) {
                let step = (slot + slots - start) & self.slot_mask as usize;
                let tick = self.cursor.saturating_add(step as u64);
                let at = self.entries[self.heads[slot] as usize].at;
                if self.tick_of(at) <= tick {
                    return Some(at);
                }
                from = slot + 1;
            }
        }
        self.earliest_head()
    }

    /// The first occupied slot in `from..to`, if any.
    fn first_occupied(&self, from: usize, to: usize) -> Option<usize> {
        let mut word = from / 64;
        if from >= to {
            return None;
        }
        // The first word without the slots below `from`.
        let mut bits = self.occupied[word] & (u64::MAX << (from % 64));
        loop {
            if bits != 0 {
                let slot = word * 64 + bits.trailing_zeros() as usize;
                return (slot < to).then_some(slot);
            }
            word += 1;
            if word * 64 >= to {
                return None;
            }
            bits = self.occupied[word];
        }
    }

    /// The earliest deadline among slot heads (each list is sorted, so this
    /// is the earliest of all). Costs one pass over the occupancy bits.
    fn earliest_head(&self) -> Option<Instant> {
        let mut earliest = None;
        let mut from = 0;
        while let Some(slot) = self.first_occupied(from, self.heads.len()) {
            let at = self.entries[self.heads[slot] as usize].at;
            earliest = Some(earliest.map_or(at, |e: Instant| e.min(at)));
            from = slot + 1;
        }
        earliest
    }

    /// Removes and returns the payload of the earliest timer with
    /// `at <= now`, if any. Timers come out in deadline order, ties in arming
    /// order. Handlers may arm new timers between calls; one armed for a
    /// time `<= now` comes out of this same drain.
    pub fn pop_expired(&mut self, now: Instant) -> Option<T> {
        let now_tick = self.tick_of(now);
        if self.len == 0 {
            self.cursor = self.cursor.max(now_tick);
            return None;
        }
        let revolution = self.heads.len() as u64;
        let mut idle = 0u64;
        loop {
            let head = self.heads[self.slot_of(self.cursor)];
            if head != NIL {
                let e = &self.entries[head as usize];
                if e.at <= now && self.tick_of(e.at) <= self.cursor {
                    let payload = e.payload;
                    self.unlink(head);
                    self.release(head);
                    return payload;
                }
            }
            // Never walk past `now`: timers armed later for this tick must
            // still find the cursor at or before their slot.
            if self.cursor >= now_tick {
                return None;
            }
            self.cursor += 1;
            idle += 1;
            if idle >= revolution {
                // A whole revolution with nothing due: after a long idle
                // spell, jump straight to the earliest timer instead of
                // walking every tick in between.
                idle = 0;
                let first = self.earliest_head().map_or(u64::MAX, |at| self.tick_of(at));
                if first > now_tick {
                    self.cursor = now_tick;
                    return None;
                }
                self.cursor = self.cursor.max(first);
            }
        }
    }

    /// Fires every timer with `at <= now`, in deadline order (ties in arming
    /// order), handing each payload to `fire`. Returns how many fired.
    pub fn expire(&mut self, now: Instant, mut fire: impl FnMut(T)) -> usize {
        let mut n = 0;
        while let Some(p) = self.pop_expired(now) {
            fire(p);
            n += 1;
        }
        if self.len == 0 {
            self.due_at.set(NEVER);
            self.due_exact.set(true);
        } else {
            self.next_deadline();
        }
        n
    }

    fn unlink(&mut self, idx: u32) {
        let (prev, next, slot) = {
            let e = &self.entries[idx as usize];
            (e.prev, e.next, e.slot as usize)
        };
        if self.entries[idx as usize].at <= self.due_at.get() {
            // Perhaps the earliest: `due_at` is a bound now, not exact.
            self.due_exact.set(false);
        }
        if prev == NIL {
            self.heads[slot] = next;
            if next == NIL {
                self.occupied[slot / 64] &= !(1 << (slot % 64));
            }
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NIL {
            self.tails[slot] = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
    }

    fn release(&mut self, idx: u32) {
        let e = &mut self.entries[idx as usize];
        e.payload = None;
        // A new generation makes every outstanding handle to this entry stale.
        e.generation = e.generation.wrapping_add(1);
        e.prev = NIL;
        e.slot = NIL;
        e.next = self.free;
        self.free = idx;
        self.len -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ns(n: u64) -> Instant {
        Instant::from_nanos(n)
    }

    fn fired<T: Copy>(w: &mut TimerWheel<T>, now: Instant) -> Vec<T> {
        let mut v = Vec::new();
        w.expire(now, |t| v.push(t));
        v
    }

    #[test]
    fn fires_in_deadline_order_ties_in_arming_order() {
        let mut w = TimerWheel::new(Duration::from_nanos(10), 8, 16);
        // Several in one tick (20..30), several in one slot across revolutions.
        for (at, id) in [
            (25, 'a'),
            (21, 'b'),
            (25, 'c'),
            (105, 'd'),
            (21, 'e'),
            (3, 'f'),
        ] {
            w.arm(ns(at), id).unwrap();
        }
        assert_eq!(w.len(), 6);
        assert_eq!(w.next_deadline(), Some(ns(3)));
        assert!(fired(&mut w, ns(2)).is_empty());
        assert_eq!(fired(&mut w, ns(21)), ['f', 'b', 'e']);
        assert_eq!(w.next_deadline(), Some(ns(25)));
        assert_eq!(fired(&mut w, ns(1000)), ['a', 'c', 'd']);
        assert!(w.is_empty());
        assert_eq!(w.next_deadline(), None);
    }

    #[test]
    fn deadline_is_exact_within_a_tick() {
        let mut w = TimerWheel::new(Duration::from_millis(1), 4, 4);
        w.arm(ns(1_500_000), 1).unwrap();
        assert!(fired(&mut w, ns(1_499_999)).is_empty());
        assert_eq!(fired(&mut w, ns(1_500_000)), [1]);
    }

    #[test]
    fn cancel_and_stale_handles() {
        let mut w = TimerWheel::new(Duration::from_nanos(10), 4, 2);
        let a = w.arm(ns(50), 'a').unwrap();
        let b = w.arm(ns(60), 'b').unwrap();
        assert!(w.is_armed(a));
        assert!(w.cancel(a));
        assert!(!w.is_armed(a));
        assert!(!w.cancel(a), "cancelling twice");
        // The entry `a` used is reused by `c`: the old handle must not touch it.
        let c = w.arm(ns(70), 'c').unwrap();
        assert!(!w.cancel(a));
        assert!(w.is_armed(c));
        assert_eq!(fired(&mut w, ns(65)), ['b']);
        assert!(!w.cancel(b), "already fired");
        assert_eq!(fired(&mut w, ns(70)), ['c']);
        assert!(!w.cancel(c));
        assert!(w.is_empty());
    }

    #[test]
    fn far_future_timers_fire_on_time_not_a_revolution_early() {
        // One revolution is 8 × 10 ns = 80 ns.
        let mut w = TimerWheel::new(Duration::from_nanos(10), 8, 8);
        w.arm(ns(15), "near").unwrap();
        w.arm(ns(15 + 80 * 3), "three-revs").unwrap();
        w.arm(ns(1_000_000_015), "a-second").unwrap();
        let mut now = 0;
        let mut log = Vec::new();
        while now <= 300 {
            for t in fired(&mut w, ns(now)) {
                log.push((now, t));
            }
            now += 5;
        }
        assert_eq!(log, [(15, "near"), (255, "three-revs")]);
        assert_eq!(w.next_deadline(), Some(ns(1_000_000_015)));
        assert_eq!(fired(&mut w, ns(1_000_000_014)), Vec::<&str>::new());
        assert_eq!(fired(&mut w, ns(1_000_000_015)), ["a-second"]);
    }

    #[test]
    fn long_idle_jump_fires_everything_in_order() {
        let mut w = TimerWheel::new(Duration::from_micros(1), 64, 100);
        for i in 0..100u64 {
            // Spread over ~10 seconds, armed out of order.
            let at = (i * 7919 % 100) * 100_000_000;
            w.arm(ns(at), at).unwrap();
        }
        let out = fired(&mut w, Instant::from_millis(3_600_000));
        assert_eq!(out.len(), 100);
        assert!(out.windows(2).all(|p| p[0] <= p[1]));
    }

    #[test]
    fn past_deadline_fires_at_next_expire() {
        let mut w = TimerWheel::new(Duration::from_nanos(10), 8, 8);
        w.arm(ns(500), 1).unwrap();
        assert!(fired(&mut w, ns(400)).is_empty());
        w.arm(ns(5), 2).unwrap();
        assert_eq!(w.next_deadline(), Some(ns(5)));
        assert_eq!(fired(&mut w, ns(400)), [2]);
        assert_eq!(fired(&mut w, ns(500)), [1]);
    }

    #[test]
    fn capacity_is_a_hard_bound() {
        let mut w = TimerWheel::new(Duration::from_nanos(10), 4, 3);
        let hs: Vec<_> = (0..3).map(|i| w.arm(ns(100 + i), i).unwrap()).collect();
        assert_eq!(w.arm(ns(1), 9), Err(TimerError::Full { capacity: 3 }));
        assert_eq!(w.len(), 3);
        assert!(w.cancel(hs[1]));
        w.arm(ns(1), 9).unwrap();
        assert_eq!(fired(&mut w, ns(200)), [9, 0, 2]);
        let mut empty = TimerWheel::new(Duration::from_nanos(10), 4, 0);
        assert_eq!(empty.arm(ns(1), ()), Err(TimerError::Full { capacity: 0 }));
        assert_eq!(
            TimerError::Full { capacity: 3 }.to_string(),
            "timer wheel full: all 3 timers are armed"
        );
    }

    #[test]
    fn pop_expired_lets_handlers_rearm() {
        let mut w = TimerWheel::new(Duration::from_nanos(10), 4, 4);
        w.arm(ns(10), 0u32).unwrap();
        let mut log = Vec::new();
        while let Some(n) = w.pop_expired(ns(35)) {
            log.push(n);
            if n < 5 {
                // A periodic timer re-armed from its own handler.
                w.arm(ns(10 * (u64::from(n) + 2)), n + 1).unwrap();
            }
        }
        assert_eq!(log, [0, 1, 2]);
        assert_eq!(w.next_deadline(), Some(ns(40)));
    }

    #[test]
    fn degenerate_sizes_are_clamped() {
        let mut w = TimerWheel::new(Duration::ZERO, 0, 2);
        assert_eq!((w.tick(), w.slots()), (Duration::from_nanos(1), 1));
        w.arm(ns(7), 'x').unwrap();
        w.arm(ns(3), 'y').unwrap();
        assert_eq!(fired(&mut w, ns(10)), ['y', 'x']);
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// Arm at `now + delta` (may reach many revolutions ahead) or, if
        /// `past`, at `now - delta`.
        Arm { delta: u64, past: bool },
        /// Cancel the n-th handle ever returned (live, fired or cancelled).
        Cancel(usize),
        /// Advance time and expire.
        Advance(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..400, prop::bool::weighted(0.1)).prop_map(|(delta, past)| Op::Arm { delta, past }),
            1 => (0u64..5000).prop_map(|delta| Op::Arm { delta, past: false }),
            2 => any::<prop::sample::Index>().prop_map(|i| Op::Cancel(i.index(1 << 16))),
            3 => prop_oneof![0u64..30, 0u64..2000].prop_map(Op::Advance),
        ]
    }

    /// The deadline walk over the occupancy bits finds the earliest timer
    /// across words and around the wheel's end, after the earliest went.
    #[test]
    fn next_deadline_skips_empty_words_and_wraps() {
        let ms = Duration::from_millis(1);
        let mut w = TimerWheel::new(ms, 1024, 16);
        // Move the cursor to tick 900 (slot 900).
        w.arm(Instant::from_millis(900), 0).unwrap();
        assert_eq!(fired(&mut w, Instant::from_millis(900)), vec![0]);
        // Slot 1000 (same revolution), slot 70 of the next revolution
        // (tick 1094, behind the cursor's slot), and one two revolutions on
        // in slot 950.
        let near = w.arm(Instant::from_millis(1000), 1).unwrap();
        let wrapped = w.arm(Instant::from_millis(1094), 2).unwrap();
        w.arm(Instant::from_millis(900 + 2048 + 50), 3).unwrap();
        assert_eq!(w.next_deadline(), Some(Instant::from_millis(1000)));
        assert!(w.cancel(near));
        assert_eq!(w.next_deadline(), Some(Instant::from_millis(1094)));
        assert!(w.cancel(wrapped));
        // Only the far one is left: no slot is due within a revolution.
        assert_eq!(w.next_deadline(), Some(Instant::from_millis(2998)));
        assert_eq!(fired(&mut w, Instant::from_millis(2997)), Vec::<u32>::new());
        assert_eq!(fired(&mut w, Instant::from_millis(2998)), vec![3]);
        assert_eq!(w.next_deadline(), None);
    }

    proptest! {
        /// The wheel behaves exactly like a Vec kept sorted by (deadline,
        /// arming order): same timers fire, in the same order, same bound.
        #[test]
        fn matches_sorted_vec_reference(
            tick in 1u64..40,
            // Small wheels wrap often; large ones span several words of
            // the occupancy bits.
            slots in prop_oneof![1usize..12, 60usize..200],
            capacity in 0usize..24,
            ops in prop::collection::vec(op(), 1..120),
        ) {
            let mut w = TimerWheel::new(Duration::from_nanos(tick), slots, capacity);
            // Reference: (at, seq, id) of armed timers.
            let mut model: Vec<(u64, u64, u32)> = Vec::new();
            let mut handles: Vec<(TimerHandle, u32)> = Vec::new();
            let mut now = 0u64;
            let mut seq = 0u64;
            for op in ops {
                match op {
                    Op::Arm { delta, past } => {
                        let at = if past { now.saturating_sub(delta) } else { now + delta };
                        let id = handles.len() as u32;
                        match w.arm(ns(at), id) {
                            Ok(h) => {
                                prop_assert!(model.len() < capacity);
                                seq += 1;
                                model.push((at, seq, id));
                                handles.push((h, id));
                            }
                            Err(TimerError::Full { .. }) => prop_assert_eq!(model.len(), capacity),
                        }
                    }
                    Op::Cancel(i) => {
                        if handles.is_empty() { continue; }
                        let (h, id) = handles[i % handles.len()];
                        let live = model.iter().position(|e| e.2 == id);
                        prop_assert_eq!(w.cancel(h), live.is_some());
                        if let Some(p) = live { model.remove(p); }
                    }
                    Op::Advance(d) => {
                        now += d;
                        model.sort_unstable();
                        let due: Vec<u32> = model.iter().filter(|e| e.0 <= now).map(|e| e.2).collect();
                        model.retain(|e| e.0 > now);
                        prop_assert_eq!(fired(&mut w, ns(now)), due);
                    }
                }
                prop_assert_eq!(w.len(), model.len());
                prop_assert_eq!(w.next_deadline(), model.iter().map(|e| ns(e.0)).min());
            }
        }
    }
}
