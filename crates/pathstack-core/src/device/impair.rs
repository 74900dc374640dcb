//! Seeded link impairments — loss, duplication, reordering, delay — around any
//! [`Device`].
//!
//! The machines we test on have no `netem` (the kernel's network emulator), so
//! impairments are done here, in the stack's own device layer. [`Impaired`]
//! wraps a device and applies an [`ImpairConfig`] to every transmitted frame
//! (and, optionally, a second one to every received frame). Each frame, in
//! order:
//!
//! 1. is **lost** with probability `loss` (dropped, counted in
//!    [`ImpairStats::dropped_impaired`]);
//! 2. is **duplicated** with probability `duplicate` (the copy comes from the
//!    frame's own pool through [`Msg::try_clone`], so no heap allocation);
//!    original and copy go through the next steps separately;
//! 3. is **held back** with probability `reorder` and delivered right after
//!    the next frame (so the two swap places), or after `reorder_timeout` if
//!    no next frame comes;
//! 4. is **delayed** by `delay` plus a uniform `0..=jitter`. Jitter alone can
//!    reorder frames, as on a real multi-path network.
//!
//! Nothing here reads a clock: time is the `now` handed to
//! [`Device::transmit`], [`Device::receive`] and [`Impaired::poll`]. A held
//! frame is released on the first of those calls with `now >= due`, and
//! [`Device::poll_at`] reports the earliest due time. **The stack must keep
//! calling `receive` (or `poll`) — at the latest at `poll_at()` — for held
//! frames to drain**; the stack's poll loop does this anyway.
//!
//! Held frames are bounded by `max_held`; a frame that would have to be held
//! beyond it is dropped and counted ([`ImpairStats::dropped_held`]).
//!
//! The random numbers come from a SplitMix64 generator written out below
//! rather than from `rand::rngs::SmallRng`: `SmallRng`'s algorithm is
//! documented as not portable (it differs between 32- and 64-bit targets and
//! may change between `rand` releases), and the whole point of a seed here is
//! that a failure seen once can be replayed anywhere from the seed alone.
//!
//! ```
//! use pathstack_core::device::impair::{ImpairConfig, Impaired};
//! use pathstack_core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack_core::device::Device;
//! use pathstack_core::{Duration, Instant, MsgPool, PoolConfig};
//!
//! let pool = MsgPool::new(PoolConfig::small(8));
//! let (a, mut b) = memory_pair(MemoryConfig::default());
//! let cfg = ImpairConfig { delay: Duration::from_millis(5), ..ImpairConfig::default() };
//! let mut a = Impaired::new(a, cfg).unwrap();
//! a.transmit(pool.alloc_copy(b"late").unwrap(), Instant::ZERO).unwrap();
//! assert_eq!(a.poll_at(), Some(Instant::from_millis(5)));
//! assert!(b.receive(&pool, Instant::ZERO).unwrap().is_none());
//! a.poll(Instant::from_millis(5));
//! assert_eq!(b.receive(&pool, Instant::from_millis(5)).unwrap().unwrap().as_slice(), b"late");
//! ```

use super::{Device, DeviceError, DeviceStats};
use crate::msg::{Msg, MsgPool};
use crate::time::{Duration, Instant};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use thiserror::Error;

/// Frames pulled from the inner device per `receive` call when all of them
/// are lost or held by a receive-side impairment. Keeps one call bounded
/// even if the inner device has an endless supply; the rest wait for the
/// next call.
const RX_PULL_BUDGET: usize = 64;

/// The impairments applied to one direction of a device.
///
/// All probabilities are per frame, independent, and must lie in `0.0..=1.0`.
/// The default is a perfect link (everything zero) that may hold up to 1,024
/// frames.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImpairConfig {
    /// Seed of the random generator: the same seed, the same frames and the
    /// same `now`s give the same result, on every platform.
    pub seed: u64,
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame is sent twice.
    pub duplicate: f64,
    /// Probability that a frame is held back and delivered after the next one.
    pub reorder: f64,
    /// Longest time a frame held back for reordering waits for a next frame
    /// to overtake it; then it goes out on its own (so the last frame of a
    /// burst — a ping with no successor — is late, not lost).
    pub reorder_timeout: Duration,
    /// Fixed delay added to every frame.
    pub delay: Duration,
    /// Upper bound of a uniformly distributed extra delay (`0..=jitter`),
    /// drawn per frame.
    pub jitter: Duration,
    /// Most frames held at once for delay or reordering; a frame that would
    /// exceed it is dropped and counted in [`ImpairStats::dropped_held`].
    pub max_held: usize,
}

impl Default for ImpairConfig {
    fn default() -> Self {
        ImpairConfig {
            seed: 0,
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_timeout: Duration::from_millis(1),
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            max_held: 1024,
        }
    }
}

/// An [`ImpairConfig`] that cannot be used.
#[derive(Clone, Copy, Debug, Error, PartialEq)]
pub enum ImpairError {
    /// A probability is outside `0.0..=1.0` (or not a number).
    #[error("impairment `{knob}` is a probability and must lie within 0.0..=1.0, got {value}")]
    Probability {
        /// The offending field of [`ImpairConfig`].
        knob: &'static str,
        /// Its value.
        value: f64,
    },
    /// An impairment needs to hold frames but `max_held` is 0, so it would
    /// silently drop every affected frame instead.
    #[error("impairment `{knob}` holds frames back, but max_held is 0")]
    NoRoomToHold {
        /// The impairment that needs room.
        knob: &'static str,
    },
}

impl ImpairConfig {
    /// Checks the probabilities and that held frames have room.
    pub fn validate(&self) -> Result<(), ImpairError> {
        for (knob, value) in [
            ("loss", self.loss),
            ("duplicate", self.duplicate),
            ("reorder", self.reorder),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ImpairError::Probability { knob, value });
            }
        }
        if self.max_held == 0 {
            let needs = if self.reorder > 0.0 {
                Some("reorder")
            } else if self.delay > Duration::ZERO {
                Some("delay")
            } else if self.jitter > Duration::ZERO {
                Some("jitter")
            } else {
                None
            };
            if let Some(knob) = needs {
                return Err(ImpairError::NoRoomToHold { knob });
            }
        }
        Ok(())
    }
}

/// What the impairments of one direction did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImpairStats {
    /// Frames that entered the impairment.
    pub offered: u64,
    /// Frames lost on purpose (`loss`).
    pub dropped_impaired: u64,
    /// Extra copies made (`duplicate`).
    pub duplicated: u64,
    /// Duplications skipped because the pool had no buffer for the copy.
    pub duplicate_failed: u64,
    /// Held-back frames that were overtaken by the next frame (`reorder`).
    pub reordered: u64,
    /// Frames held for `delay`/`jitter`.
    pub delayed: u64,
    /// Frames dropped because `max_held` frames were already held.
    pub dropped_held: u64,
    /// Frames the inner device refused when they were handed to it
    /// (transmit side only; the inner device counts them too).
    pub inner_errors: u64,
}

/// SplitMix64 (Steele, Lea, Flood 2014; the seeding generator of xoshiro):
/// tiny, fast, statistically fine for picking impairments, and — unlike
/// `SmallRng` — the same sequence on every platform and every `rand` release.
#[derive(Clone, Debug)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)` with 53 bits of precision, so `u < p` is never true
    /// for `p == 0` and always true for `p == 1`.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..=max` (modulo bias is below 2^-40 for any delay that
    /// matters).
    fn upto(&mut self, max: u64) -> u64 {
        let u = self.next_u64();
        match max.checked_add(1) {
            Some(n) => u % n,
            None => u,
        }
    }
}

/// A frame waiting for its due time.
struct Held {
    due: Instant,
    /// Arrival order, so frames due at the same time keep their order.
    seq: u64,
    frame: Msg,
}

impl Held {
    fn key(&self) -> (Instant, u64) {
        (self.due, self.seq)
    }
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.key().cmp(&self.key())
    }
}

/// The impairments of one direction: the decisions and the held frames.
struct Impairment {
    cfg: ImpairConfig,
    rng: SplitMix64,
    /// Frames delayed, earliest due first. Allocated at `max_held` up front.
    delayed: BinaryHeap<Held>,
    /// The frame held back for reordering and when it goes out regardless.
    held_back: Option<(Msg, Instant)>,
    seq: u64,
    stats: ImpairStats,
}

impl Impairment {
    fn new(cfg: ImpairConfig) -> Result<Self, ImpairError> {
        cfg.validate()?;
        Ok(Impairment {
            cfg,
            rng: SplitMix64(cfg.seed),
            delayed: BinaryHeap::with_capacity(cfg.max_held),
            held_back: None,
            seq: 0,
            stats: ImpairStats::default(),
        })
    }

    fn held(&self) -> usize {
        self.delayed.len() + usize::from(self.held_back.is_some())
    }

    fn poll_at(&self) -> Option<Instant> {
        let delayed = self.delayed.peek().map(|h| h.due);
        let back = self.held_back.as_ref().map(|(_, t)| *t);
        match (delayed, back) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs one new frame through loss, duplication, reordering and delay;
    /// whatever may go out now is handed to `out`.
    fn offer(&mut self, frame: Msg, now: Instant, out: &mut impl FnMut(Msg)) {
        self.stats.offered += 1;
        // Draw both numbers for every frame, so that the loss decisions of a
        // run do not change when only the duplication rate does.
        let lose = self.rng.next_f64() < self.cfg.loss;
        let dup = self.rng.next_f64() < self.cfg.duplicate;
        if lose {
            self.stats.dropped_impaired += 1;
            return;
        }
        let copy = if dup {
            match frame.try_clone() {
                Ok(c) => {
                    self.stats.duplicated += 1;
                    Some(c)
                }
                Err(_) => {
                    self.stats.duplicate_failed += 1;
                    None
                }
            }
        } else {
            None
        };
        self.place(frame, now, out);
        if let Some(c) = copy {
            self.place(c, now, out);
        }
        // A frame due right now (zero jitter draw) need not wait a call.
        self.release_due(now, out);
    }

    /// Reordering, then delay, for one frame.
    fn place(&mut self, frame: Msg, now: Instant, out: &mut impl FnMut(Msg)) {
        if self.rng.next_f64() < self.cfg.reorder && self.held_back.is_none() {
            if self.held() >= self.cfg.max_held {
                self.stats.dropped_held += 1;
                return;
            }
            self.held_back = Some((frame, now + self.cfg.reorder_timeout));
            return;
        }
        self.delay(frame, now, out);
        // This frame overtook the one held back; the held one follows it.
        if let Some((back, _)) = self.held_back.take() {
            self.stats.reordered += 1;
            self.delay(back, now, out);
        }
    }

    fn delay(&mut self, frame: Msg, now: Instant, out: &mut impl FnMut(Msg)) {
        let (delay, jitter) = (self.cfg.delay, self.cfg.jitter);
        if delay == Duration::ZERO && jitter == Duration::ZERO {
            out(frame);
            return;
        }
        let extra = Duration::from_nanos(self.rng.upto(jitter.as_nanos()));
        if self.held() >= self.cfg.max_held {
            self.stats.dropped_held += 1;
            return;
        }
        self.stats.delayed += 1;
        self.seq += 1;
        self.delayed.push(Held {
            due: now + delay + extra,
            seq: self.seq,
            frame,
        });
    }

    /// Hands every held frame whose time has come to `out`, earliest first.
    fn release_due(&mut self, now: Instant, out: &mut impl FnMut(Msg)) {
        if matches!(self.held_back, Some((_, t)) if t <= now) {
            if let Some((back, _)) = self.held_back.take() {
                self.delay(back, now, out);
            }
        }
        while self.delayed.peek().is_some_and(|h| h.due <= now) {
            if let Some(h) = self.delayed.pop() {
                out(h.frame);
            }
        }
    }
}

/// A device with seeded impairments on transmit (and optionally receive);
/// see the [module docs](self).
pub struct Impaired<D: Device> {
    inner: D,
    tx: Impairment,
    rx: Option<Impairment>,
    /// Received frames released by the receive impairment, not yet returned.
    /// Bounded by the receive `max_held` plus the three frames one arrival
    /// can release (itself, its copy, a frame it overtook).
    ready: VecDeque<Msg>,
}

impl<D: Device> Impaired<D> {
    /// Wraps `inner`, impairing the frames it transmits.
    pub fn new(inner: D, tx: ImpairConfig) -> Result<Self, ImpairError> {
        Ok(Impaired {
            inner,
            tx: Impairment::new(tx)?,
            rx: None,
            ready: VecDeque::new(),
        })
    }

    /// Wraps `inner`, impairing the frames it transmits with `tx` and the
    /// frames it receives with `rx`.
    pub fn with_receive(inner: D, tx: ImpairConfig, rx: ImpairConfig) -> Result<Self, ImpairError> {
        let rx = Impairment::new(rx)?;
        Ok(Impaired {
            inner,
            tx: Impairment::new(tx)?,
            ready: VecDeque::with_capacity(rx.cfg.max_held + 3),
            rx: Some(rx),
        })
    }

    /// Releases every held frame that is due at `now`: transmitted frames go
    /// to the inner device, received ones wait for the next `receive`.
    /// Returns how many frames were released.
    pub fn poll(&mut self, now: Instant) -> usize {
        let mut n = self.release_tx(now).0;
        if let Some(rx) = &mut self.rx {
            let ready = &mut self.ready;
            let cap = ready.capacity();
            let mut dropped = 0;
            rx.release_due(now, &mut |m| {
                n += 1;
                push_bounded(ready, cap, &mut dropped, m);
            });
            rx.stats.dropped_held += dropped;
        }
        n
    }

    /// Frames currently held (both directions), plus received frames
    /// released but not yet returned by `receive`.
    pub fn held(&self) -> usize {
        self.tx.held() + self.rx.as_ref().map_or(0, Impairment::held) + self.ready.len()
    }

    /// What the transmit impairments did.
    pub fn tx_stats(&self) -> ImpairStats {
        self.tx.stats
    }

    /// What the receive impairments did (all zero without a receive config).
    pub fn rx_stats(&self) -> ImpairStats {
        self.rx
            .as_ref()
            .map_or_else(ImpairStats::default, |r| r.stats)
    }

    /// The wrapped device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The wrapped device, mutably.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// Unwraps the device; frames still held are dropped.
    pub fn into_inner(self) -> D {
        self.inner
    }

    /// Releases due transmit frames into the inner device; returns how many
    /// and the first error the inner device reported.
    fn release_tx(&mut self, now: Instant) -> (usize, Option<DeviceError>) {
        let mut sink = TxSink::new(&mut self.inner, now);
        self.tx.release_due(now, &mut |m| sink.send(m));
        self.tx.stats.inner_errors += sink.errors;
        (sink.sent, sink.first_error)
    }
}

/// Pushes into the ready queue unless it is at its bound (then the frame is
/// dropped and counted, like any frame beyond `max_held`).
fn push_bounded(ready: &mut VecDeque<Msg>, cap: usize, dropped: &mut u64, m: Msg) {
    if ready.len() < cap {
        ready.push_back(m);
    } else {
        *dropped += 1;
    }
}

/// Hands frames to the inner device and remembers how that went.
struct TxSink<'a, D: Device> {
    inner: &'a mut D,
    now: Instant,
    sent: usize,
    errors: u64,
    first_error: Option<DeviceError>,
}

impl<'a, D: Device> TxSink<'a, D> {
    fn new(inner: &'a mut D, now: Instant) -> Self {
        TxSink {
            inner,
            now,
            sent: 0,
            errors: 0,
            first_error: None,
        }
    }

    fn send(&mut self, m: Msg) {
        self.sent += 1;
        if let Err(e) = self.inner.transmit(m, self.now) {
            self.errors += 1;
            self.first_error.get_or_insert(e);
        }
    }
}

impl<D: Device> Device for Impaired<D> {
    /// Releases due held frames, then impairs `frame`. Lost or held frames
    /// are a success, as on a real link. If the inner device refuses any
    /// frame handed to it during this call (a released one or this one), the
    /// first such error is returned; every refusal is counted in
    /// [`ImpairStats::inner_errors`].
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        let mut sink = TxSink::new(&mut self.inner, now);
        self.tx.release_due(now, &mut |m| sink.send(m));
        self.tx.offer(frame, now, &mut |m| sink.send(m));
        self.tx.stats.inner_errors += sink.errors;
        match sink.first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Releases due held transmit frames (so calling `receive` regularly is
    /// enough to drain them), then returns the next received frame after the
    /// receive impairments, if any.
    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        // Errors of released transmit frames are counted in tx_stats; they
        // are not this receive's business.
        let _ = self.release_tx(now);
        let Some(rx) = &mut self.rx else {
            return self.inner.receive(pool, now);
        };
        let ready = &mut self.ready;
        let cap = ready.capacity();
        let mut dropped = 0;
        rx.release_due(now, &mut |m| push_bounded(ready, cap, &mut dropped, m));
        let mut pulled = 0;
        let result = loop {
            if let Some(m) = ready.pop_front() {
                break Ok(Some(m));
            }
            if pulled == RX_PULL_BUDGET {
                break Ok(None);
            }
            match self.inner.receive(pool, now) {
                Ok(Some(f)) => {
                    pulled += 1;
                    rx.offer(f, now, &mut |m| push_bounded(ready, cap, &mut dropped, m));
                }
                other => break other,
            }
        };
        rx.stats.dropped_held += dropped;
        result
    }

    /// The earliest due time of any held frame, or of the inner device.
    fn poll_at(&self) -> Option<Instant> {
        [
            self.inner.poll_at(),
            self.tx.poll_at(),
            self.rx.as_ref().and_then(Impairment::poll_at),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The inner device's counters, plus the frames the impairments dropped:
    /// losses in `dropped_impaired`, frames beyond `max_held` in
    /// `dropped_full`. Per-impairment detail is in [`Impaired::tx_stats`] and
    /// [`Impaired::rx_stats`].
    fn stats(&self) -> DeviceStats {
        let mut s = self.inner.stats();
        for i in std::iter::once(&self.tx).chain(self.rx.as_ref()) {
            s.dropped_impaired += i.stats.dropped_impaired;
            s.dropped_full += i.stats.dropped_held;
        }
        s
    }

    // The inner device's: `caps`; `rx_waiter` (a delayed frame is a timer
    // of the stack, `Device::poll_at`, not something to sleep on);
    // `discard` (frames it discards never reach the receive-side
    // impairments). Not `receive_into`: it would bypass the impairments.
    crate::forward_device!((inner) caps, rx_waiter, discard);
}

impl<D: Device + std::fmt::Debug> std::fmt::Debug for Impaired<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Impaired")
            .field("inner", &self.inner)
            .field("tx", &self.tx.cfg)
            .field("rx", &self.rx.as_ref().map(|r| r.cfg))
            .field("held", &self.held())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
    use crate::msg::PoolConfig;

    const T0: Instant = Instant::ZERO;

    fn ms(n: u64) -> Instant {
        Instant::from_millis(n)
    }

    fn frame(pool: &MsgPool, tag: u32) -> Msg {
        pool.alloc_copy(&tag.to_be_bytes()).unwrap()
    }

    fn tag(m: &Msg) -> u32 {
        u32::from_be_bytes(m.as_slice()[..4].try_into().unwrap())
    }

    fn drain(end: &mut MemoryEnd, pool: &MsgPool, now: Instant) -> Vec<u32> {
        std::iter::from_fn(|| end.receive(pool, now).unwrap())
            .map(|m| tag(&m))
            .collect()
    }

    fn impaired(cfg: ImpairConfig) -> (Impaired<MemoryEnd>, MemoryEnd) {
        let (a, b) = memory_pair(MemoryConfig {
            capacity: 1 << 16,
            ..MemoryConfig::default()
        });
        (Impaired::new(a, cfg).unwrap(), b)
    }

    /// Sends tags `0..n`, one every `step`, polling as it goes; returns what
    /// arrived, in order, after everything held has drained.
    fn run(cfg: ImpairConfig, n: u32, step: Duration) -> (Vec<u32>, ImpairStats) {
        let pool = MsgPool::new(PoolConfig::small(4096));
        let (mut a, mut b) = impaired(cfg);
        let mut got = Vec::new();
        let mut now = T0;
        for i in 0..n {
            a.transmit(frame(&pool, i), now).unwrap();
            got.extend(drain(&mut b, &pool, now));
            now = now + step;
        }
        while let Some(t) = a.poll_at() {
            a.poll(t);
            got.extend(drain(&mut b, &pool, t));
        }
        assert_eq!(a.held(), 0);
        (got, a.tx_stats())
    }

    fn everything(seed: u64) -> ImpairConfig {
        ImpairConfig {
            seed,
            loss: 0.1,
            duplicate: 0.1,
            reorder: 0.1,
            delay: Duration::from_micros(50),
            jitter: Duration::from_micros(200),
            ..ImpairConfig::default()
        }
    }

    #[test]
    fn same_seed_same_output() {
        let step = Duration::from_micros(30);
        let (a, sa) = run(everything(42), 2000, step);
        let (b, sb) = run(everything(42), 2000, step);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        let (c, _) = run(everything(43), 2000, step);
        assert_ne!(a, c);
        // Every impairment actually fired.
        assert!(sa.dropped_impaired > 0 && sa.duplicated > 0 && sa.reordered > 0);
        assert!(sa.delayed > 0);
        // Jitter reordered the output.
        assert!(a.windows(2).any(|w| w[0] > w[1]));
    }

    #[test]
    fn loss_rate_is_stable_and_plausible() {
        let cfg = ImpairConfig {
            seed: 7,
            loss: 0.1,
            ..ImpairConfig::default()
        };
        let (got, s) = run(cfg, 10_000, Duration::ZERO);
        assert_eq!(s.offered, 10_000);
        assert_eq!(got.len() as u64 + s.dropped_impaired, 10_000);
        // Binomial(10000, 0.1): mean 1000, sd 30; the band is ±5 sd.
        assert!((850..=1150).contains(&s.dropped_impaired), "{s:?}");
        // Pinned: SplitMix64 is portable, so this exact count must never move.
        assert_eq!(s.dropped_impaired, LOSS_SEED7_10K);
        // Losses leave the order of the survivors alone.
        assert!(got.windows(2).all(|w| w[0] < w[1]));
    }
    const LOSS_SEED7_10K: u64 = 1022;

    #[test]
    fn duplication_sends_consecutive_copies_from_the_pool() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let (mut a, mut b) = impaired(ImpairConfig {
            duplicate: 1.0,
            ..ImpairConfig::default()
        });
        for i in 0..4 {
            a.transmit(frame(&pool, i), T0).unwrap();
        }
        assert_eq!(drain(&mut b, &pool, T0), [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(a.tx_stats().duplicated, 4);
        let ps = pool.stats();
        assert_eq!((ps.live, ps.heap_allocs), (0, 0));
    }

    #[test]
    fn duplication_without_buffer_is_skipped_and_counted() {
        let pool = MsgPool::new(PoolConfig::small(1));
        let (mut a, mut b) = impaired(ImpairConfig {
            duplicate: 1.0,
            ..ImpairConfig::default()
        });
        a.transmit(frame(&pool, 5), T0).unwrap();
        assert_eq!(a.tx_stats().duplicate_failed, 1);
        assert_eq!(drain(&mut b, &pool, T0), [5]);
    }

    #[test]
    fn reorder_swaps_neighbours() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let (mut a, mut b) = impaired(ImpairConfig {
            reorder: 1.0,
            ..ImpairConfig::default()
        });
        for i in 0..6 {
            a.transmit(frame(&pool, i), T0).unwrap();
        }
        assert_eq!(drain(&mut b, &pool, T0), [1, 0, 3, 2, 5, 4]);
        assert_eq!(a.tx_stats().reordered, 3);
        assert_eq!(a.held(), 0);
    }

    #[test]
    fn frame_held_back_without_successor_goes_out_after_timeout() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let (mut a, mut b) = impaired(ImpairConfig {
            reorder: 1.0,
            reorder_timeout: Duration::from_millis(3),
            ..ImpairConfig::default()
        });
        a.transmit(frame(&pool, 9), T0).unwrap();
        assert_eq!(a.poll_at(), Some(ms(3)));
        assert_eq!(a.poll(Instant::from_nanos(2_999_999)), 0);
        assert!(drain(&mut b, &pool, T0).is_empty());
        assert_eq!(a.poll(ms(3)), 1);
        assert_eq!(drain(&mut b, &pool, ms(3)), [9]);
        assert_eq!(a.tx_stats().reordered, 0);
        assert_eq!(a.poll_at(), None);
    }

    #[test]
    fn delay_holds_until_due_and_poll_at_reports_it() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let (mut a, mut b) = impaired(ImpairConfig {
            delay: Duration::from_millis(10),
            ..ImpairConfig::default()
        });
        a.transmit(frame(&pool, 1), T0).unwrap();
        a.transmit(frame(&pool, 2), ms(4)).unwrap();
        assert_eq!(a.poll_at(), Some(ms(10)));
        assert_eq!(a.held(), 2);
        assert_eq!(a.poll(ms(9)), 0);
        assert!(drain(&mut b, &pool, ms(9)).is_empty());
        // A receive call drains due transmit frames too.
        assert!(a.receive(&pool, ms(10)).unwrap().is_none());
        assert_eq!(drain(&mut b, &pool, ms(10)), [1]);
        assert_eq!(a.poll_at(), Some(ms(14)));
        // So does the next transmit, before its own frame is considered.
        a.transmit(frame(&pool, 3), ms(20)).unwrap();
        assert_eq!(drain(&mut b, &pool, ms(20)), [2]);
        assert_eq!(a.poll_at(), Some(ms(30)));
        assert_eq!(a.tx_stats().delayed, 3);
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let pool = MsgPool::new(PoolConfig::small(128));
        let (mut a, _b) = impaired(ImpairConfig {
            seed: 3,
            delay: Duration::from_millis(1),
            jitter: Duration::from_millis(2),
            ..ImpairConfig::default()
        });
        for i in 0..100 {
            a.transmit(frame(&pool, i), T0).unwrap();
        }
        let mut released = 0;
        let mut now = T0;
        while let Some(t) = a.poll_at() {
            assert!(t >= ms(1) && t <= ms(3), "{t}");
            assert!(t >= now);
            now = t;
            released += a.poll(t);
        }
        assert_eq!(released, 100);
    }

    #[test]
    fn max_held_bounds_held_frames() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let (mut a, mut b) = impaired(ImpairConfig {
            delay: Duration::from_secs(1),
            max_held: 3,
            ..ImpairConfig::default()
        });
        for i in 0..5 {
            a.transmit(frame(&pool, i), T0).unwrap();
        }
        assert_eq!(a.held(), 3);
        assert_eq!(a.tx_stats().dropped_held, 2);
        assert_eq!(a.stats().dropped_full, 2);
        assert_eq!(pool.stats().live, 3);
        a.poll(Instant::from_millis(1000));
        assert_eq!(drain(&mut b, &pool, T0), [0, 1, 2]);
    }

    #[test]
    fn receive_side_impairment() {
        let pool = MsgPool::new(PoolConfig::small(64));
        let (a, mut b) = memory_pair(MemoryConfig::default());
        let mut a = Impaired::with_receive(
            a,
            ImpairConfig::default(),
            ImpairConfig {
                duplicate: 1.0,
                delay: Duration::from_millis(2),
                ..ImpairConfig::default()
            },
        )
        .unwrap();
        for i in 0..3 {
            b.transmit(frame(&pool, i), T0).unwrap();
        }
        assert!(a.receive(&pool, T0).unwrap().is_none());
        assert_eq!(a.held(), 6);
        assert_eq!(a.poll_at(), Some(ms(2)));
        let got: Vec<u32> = std::iter::from_fn(|| a.receive(&pool, ms(2)).unwrap())
            .map(|m| tag(&m))
            .collect();
        assert_eq!(got, [0, 0, 1, 1, 2, 2]);
        assert_eq!(a.rx_stats().duplicated, 3);
        assert_eq!(a.tx_stats(), ImpairStats::default());
    }

    #[test]
    fn receive_side_total_loss_is_bounded_per_call() {
        let pool = MsgPool::new(PoolConfig::small(256));
        let (a, mut b) = memory_pair(MemoryConfig::default());
        let mut a = Impaired::with_receive(
            a,
            ImpairConfig::default(),
            ImpairConfig {
                loss: 1.0,
                ..ImpairConfig::default()
            },
        )
        .unwrap();
        for i in 0..100 {
            b.transmit(frame(&pool, i), T0).unwrap();
        }
        assert!(a.receive(&pool, T0).unwrap().is_none());
        assert_eq!(a.rx_stats().dropped_impaired, RX_PULL_BUDGET as u64);
        assert!(a.receive(&pool, T0).unwrap().is_none());
        assert_eq!(a.rx_stats().dropped_impaired, 100);
        assert_eq!(a.stats().dropped_impaired, 100);
    }

    #[test]
    fn inner_errors_are_reported_and_counted() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let (a, b) = memory_pair(MemoryConfig::default());
        let mut a = Impaired::new(
            a,
            ImpairConfig {
                delay: Duration::from_millis(1),
                ..ImpairConfig::default()
            },
        )
        .unwrap();
        a.transmit(frame(&pool, 1), T0).unwrap();
        drop(b);
        assert_eq!(a.poll(ms(1)), 1);
        assert_eq!(a.tx_stats().inner_errors, 1);
        a.transmit(frame(&pool, 2), ms(1)).unwrap();
        let err = a.transmit(frame(&pool, 3), ms(5)).unwrap_err();
        assert!(matches!(err, DeviceError::Disconnected));
        assert_eq!(a.tx_stats().inner_errors, 2);
    }

    #[test]
    fn config_is_validated() {
        let bad = |c: ImpairConfig| Impaired::new(memory_pair(MemoryConfig::default()).0, c).err();
        assert_eq!(
            bad(ImpairConfig {
                loss: 1.5,
                ..ImpairConfig::default()
            }),
            Some(ImpairError::Probability {
                knob: "loss",
                value: 1.5
            })
        );
        assert!(matches!(
            bad(ImpairConfig {
                reorder: f64::NAN,
                ..ImpairConfig::default()
            }),
            Some(ImpairError::Probability {
                knob: "reorder",
                ..
            })
        ));
        assert_eq!(
            bad(ImpairConfig {
                duplicate: -0.1,
                ..ImpairConfig::default()
            }),
            Some(ImpairError::Probability {
                knob: "duplicate",
                value: -0.1
            })
        );
        assert_eq!(
            bad(ImpairConfig {
                delay: Duration::from_millis(1),
                max_held: 0,
                ..ImpairConfig::default()
            }),
            Some(ImpairError::NoRoomToHold { knob: "delay" })
        );
        assert_eq!(
            bad(ImpairConfig {
                loss: 1.0,
                max_held: 0,
                ..ImpairConfig::default()
            }),
            None
        );
        let msg = ImpairError::Probability {
            knob: "loss",
            value: 2.0,
        }
        .to_string();
        assert!(msg.contains("`loss`") && msg.contains("0.0..=1.0"), "{msg}");
    }

    #[test]
    fn splitmix_matches_reference_vector() {
        // First outputs for seed 0 of the reference implementation
        // (Vigna, splitmix64.c).
        let mut r = SplitMix64(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut r = SplitMix64(0);
        let u = r.next_f64();
        assert!((0.0..1.0).contains(&u));
    }
}
