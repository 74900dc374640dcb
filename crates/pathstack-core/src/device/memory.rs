//! The in-memory device: two [`Device`]s joined back to back inside one
//! process, a wire in memory ([`memory_pair`]).
//!
//! A frame transmitted on one [`MemoryEnd`] is received, unchanged and in order
//! (its bytes: the annotations the sender's stages left are cleared),
//! on the other. The pooled buffer crosses the wire — moved, never
//! copied — through a bounded ring allocated once, when the wire is made.
//! A slot holds the buffer and the window of its bytes only, not the whole
//! [`Msg`]: the annotations do not cross, so the ring moves 32 bytes a
//! frame instead of 64, and the receiving end builds the message once, in
//! the slot the stack runs it in. So steady-state traffic allocates nothing, and the buffer
//! goes back to the *sender's* pool when the receiver drops it (the pool's
//! free lists are lock-free for exactly this reason, see [`crate::msg`]).
//!
//! Each direction has exactly one writer (the transmitting end) and one
//! reader (the receiving end), so the ring is single-producer
//! single-consumer (`rtrb`): a push is a slot write and one release store,
//! a pop one acquire load (only when its cached view of the ring is
//! exhausted) and one release store — no read-modify-write and no fence,
//! where the multi-producer `crossbeam_queue::ArrayQueue` it replaces paid
//! a compare-and-swap per operation and a `SeqCst` fence on every empty
//! pop (issue 26: the wire is the anchor smoltcp's single-threaded
//! `VecDeque` is measured against).
//!
//! Each end is `Send`: the two stacks of a ping-pong test may run on two
//! threads. A receiving thread that has nothing else to do can sleep in
//! [`MemoryEnd::wait_rx`] instead of spinning, and an async task can await a
//! frame through [`RxWaiter::poll_rx`] (a [`Waker`] slot per end); a
//! transmitter wakes either only when it is actually waiting, so the fast
//! path stays a push, a counter store and the fence of the sleep
//! handshake.
//!
//! ```
//! use pathstack_core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack_core::device::Device;
//! use pathstack_core::{Instant, MsgPool, PoolConfig};
//!
//! let pool = MsgPool::new(PoolConfig::small(4));
//! let (mut a, mut b) = memory_pair(MemoryConfig::default());
//! a.transmit(pool.alloc_copy(b"frame").unwrap(), Instant::ZERO).unwrap();
//! let got = b.receive(&pool, Instant::ZERO).unwrap().unwrap();
//! assert_eq!(got.as_slice(), b"frame");
//! ```

use super::frame_match::any_matches;
use super::{Device, DeviceCaps, DeviceError, DeviceStats, FrameMatch, Received, RxWaiter};
use crate::msg::{Body, Msg, MsgPool};
use crate::time::Instant;
use rtrb::{Consumer, Producer, RingBuffer};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

/// Bytes of link header a wire frame carries in front of its payload
/// (Ethernet II: destination, source, EtherType).
pub const LINK_HEADER: usize = 14;

/// How a wire is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryConfig {
    /// Frames that may wait in each direction before the receiver takes them.
    /// A transmit into a full direction drops the frame
    /// ([`DeviceError::QueueFull`]). At least 1 (0 is taken as 1).
    pub capacity: usize,
    /// Largest frame payload in bytes, without the 14-byte link header.
    pub mtu: usize,
    /// Hardware address reported by end A.
    pub mac_a: [u8; 6],
    /// Hardware address reported by end B.
    pub mac_b: [u8; 6],
}

impl Default for MemoryConfig {
    /// 1,024 frames per direction, a 1,500-byte MTU, and the locally
    /// administered addresses `02:00:00:00:00:01` (A) and `02:00:00:00:00:02` (B).
    fn default() -> Self {
        MemoryConfig {
            capacity: 1024,
            mtu: 1500,
            mac_a: local_mac(1),
            mac_b: local_mac(2),
        }
    }
}

/// A locally administered, unicast hardware address `02:00:xx:xx:xx:xx`
/// carrying `id` in its last four bytes (IEEE 802 "U/L" bit set, "I/G" bit
/// clear), so test wires never collide with a real adapter's address.
pub const fn local_mac(id: u32) -> [u8; 6] {
    let b = id.to_be_bytes();
    [0x02, 0x00, b[0], b[1], b[2], b[3]]
}

/// A count written by one side of a lane only, on its own cache line, so
/// that the transmitter's and the receiver's stores do not contend for one
/// line when the ends run on two threads.
#[repr(align(64))]
#[derive(Default)]
struct Count(AtomicU64);

/// One direction of the wire: how many frames went in and came out (the
/// frames themselves are in the ring, whose two halves the ends own), and
/// what the receiving end needs to sleep until a frame arrives.
struct Lane {
    /// Frames pushed into the ring so far (stored by the transmitter after
    /// each push). With `popped`, what a sleeper or a task waiting on the
    /// lane sees of the ring, which it cannot read itself: the ring's
    /// reading half belongs to the receiving end, inside its stack.
    pushed: Count,
    /// Frames taken out of the ring so far (stored by the receiver).
    popped: Count,
    /// Who waits for a frame on this lane: [`SLEEPER`] while the receiving
    /// end sleeps in `wait_rx` (a transmitter then takes the lock and
    /// notifies), [`TASK`] while a task waits in `poll_rx` (a transmitter
    /// then takes the waker's lock). One word, so that a transmit with
    /// nobody waiting — every transmit of a polling stack — looks once.
    waiting: AtomicU8,
    lock: Mutex<()>,
    ready: Condvar,
    /// The task waiting for a frame (the async driver of the receiving
    /// stack): the other half of the handshake, for tasks instead of
    /// threads.
    task: Mutex<Option<Waker>>,
}

impl Lane {
    fn new() -> Self {
        Lane {
            pushed: Count::default(),
            popped: Count::default(),
            waiting: AtomicU8::new(0),
            lock: Mutex::new(()),
            ready: Condvar::new(),
            task: Mutex::new(None),
        }
    }

    /// Frames in the ring, as far as the counts published so far tell.
    /// `popped` is read first: a pop between the two reads can only make
    /// the answer larger (a spurious wake-up), never hide a frame from a
    /// sleeper on another thread than the receiver.
    fn pending(&self) -> usize {
        let popped = self.popped.0.load(Ordering::Acquire);
        let pushed = self.pushed.0.load(Ordering::Acquire);
        pushed.saturating_sub(popped) as usize
    }

    fn is_empty(&self) -> bool {
        self.pending() == 0
    }

    /// Wakes the receiver of this lane if it is asleep or a task waits.
    #[inline(always)]
    fn wake(&self) {
        // Pairs with the fence in `wait`: either the sleeper sees the frame we
        // just pushed, or we see its flag (Dekker-style handshake).
        //
        // Why this fence cannot simply go (issue 26 asked; measured, it is
        // worth no more than the wall clock's 10 ns resolution on a UDP,
        // TCP or RPC round trip: docs/design.md, "TCP on paths"). The two
        // sides are the store-buffering pattern:
        //
        //   transmitter:  W pushed = n      (release)   ; R waiting
        //   sleeper:      W waiting |= SLEEPER (RMW)    ; R pushed
        //
        // The outcome to exclude is "R waiting = 0 and R pushed < n": the
        // transmitter wakes nobody and the sleeper sleeps on a frame (a
        // wake-up lost until the sleeper's timeout). Each side's write
        // must be ordered before its own read, and release/acquire never
        // orders a write before a later read — on x86 the transmitter's
        // store may still sit in its store buffer while its load of
        // `waiting` runs (TSO allows exactly this store-load reordering).
        // So making the sleeper's announcement a `SeqCst` RMW and the
        // transmitter's read an acquire load after a release push is not
        // enough: the sleeper's side is then ordered, the transmitter's
        // is not, and the outcome above stays possible. Excluding it
        // takes a store-load barrier on *both* sides, or one side forcing
        // it on the other: the protocol that removes this fence is an
        // asymmetric one, the sleeper (rare: only when it is about to
        // block) calling `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`
        // after setting its flag — which runs a full barrier on every CPU
        // running a thread of the process, draining the transmitter's
        // store — and the transmitter keeping only a compiler fence. That
        // is a system call (the device crate's, outside this crate's
        // `forbid(unsafe_code)`), so the fence stays while it measures at
        // nothing.
        fence(Ordering::SeqCst);
        let waiting = self.waiting.load(Ordering::Relaxed);
        if waiting != 0 {
            self.wake_waiting(waiting);
        }
    }

    /// [`Lane::wake`] when someone waits: out of line, so that a
    /// transmit to a polling receiver keeps only the look.
    #[cold]
    #[inline(never)]
    fn wake_waiting(&self, waiting: u8) {
        if waiting & SLEEPER != 0 {
            // Taking the lock orders this notify after the sleeper has
            // started waiting on the condvar, so the wake-up cannot be lost.
            // It is released before notifying: a sleeper woken while we
            // still held it would block on the mutex at once, costing two
            // more futex calls and a second wake-up per frame.
            drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner));
            self.ready.notify_all();
        }
        if waiting & TASK != 0 {
            self.wake_task();
        }
    }

    /// Wakes the waiting task, if any, and forgets it (it registers again
    /// if it still waits).
    fn wake_task(&self) {
        let waker = {
            let mut slot = self.task.lock().unwrap_or_else(PoisonError::into_inner);
            self.waiting.fetch_and(!TASK, Ordering::Relaxed);
            slot.take()
        };
        // Outside the lock: waking may run code that registers again.
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Ready when a frame is queued; otherwise registers `cx`'s task to be
    /// woken by the next transmit.
    fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.is_empty() {
            return Poll::Ready(());
        }
        {
            let mut slot = self.task.lock().unwrap_or_else(PoisonError::into_inner);
            if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                *slot = Some(cx.waker().clone());
            }
            self.waiting.fetch_or(TASK, Ordering::Relaxed);
        }
        // Pairs with the fence in `wake`, as in `wait`: a frame pushed
        // before the transmitter could see our flag is seen here.
        fence(Ordering::SeqCst);
        if self.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    /// Sleeps until a frame is queued, `stop()` holds, or `timeout` passes.
    fn wait(&self, timeout: std::time::Duration, stop: impl Fn() -> bool) -> bool {
        if !self.is_empty() {
            return true;
        }
        let guard = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.waiting.fetch_or(SLEEPER, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        let ready = if self.is_empty() && !stop() {
            let (_guard, _) = self
                .ready
                .wait_timeout_while(guard, timeout, |_| self.is_empty() && !stop())
                .unwrap_or_else(PoisonError::into_inner);
            !self.is_empty()
        } else {
            !self.is_empty()
        };
        self.waiting.fetch_and(!SLEEPER, Ordering::Relaxed);
        ready
    }
}

/// [`Lane::waiting`]: the receiving end sleeps in `wait_rx`.
const SLEEPER: u8 = 1;
/// [`Lane::waiting`]: a task waits in `poll_rx`.
const TASK: u8 = 2;

/// What both ends share: one lane per direction and who is still alive.
struct WireShared {
    /// `lanes[i]` carries frames towards end `i` (0 = A, 1 = B). Each end
    /// also holds its two lanes directly ([`MemoryEnd::rx_lane`],
    /// [`MemoryEnd::tx_lane`]): one load per frame, not an index.
    lanes: [Arc<Lane>; 2],
    /// `alive[i]` is cleared when end `i` is dropped.
    alive: [AtomicBool; 2],
}

/// Makes a wire and returns its two ends, A and B.
///
/// Frames transmitted on A are received on B and the other way round. Both
/// queues are allocated here, at their full capacity.
pub fn memory_pair(config: MemoryConfig) -> (MemoryEnd, MemoryEnd) {
    let capacity = config.capacity.max(1);
    let shared = Arc::new(WireShared {
        lanes: [Arc::new(Lane::new()), Arc::new(Lane::new())],
        alive: [AtomicBool::new(true), AtomicBool::new(true)],
    });
    // The ring towards each end: that end reads it, its peer writes it.
    let (toward_a_tx, toward_a_rx) = RingBuffer::new(capacity);
    let (toward_b_tx, toward_b_rx) = RingBuffer::new(capacity);
    let end = |me: usize, mac: [u8; 6], tx: Producer<Body>, rx: Consumer<Body>| MemoryEnd {
        shared: Arc::clone(&shared),
        me,
        rx_lane: Arc::clone(&shared.lanes[me]),
        tx_lane: Arc::clone(&shared.lanes[1 - me]),
        tx,
        rx,
        pushed: 0,
        popped: 0,
        max_frame: config.mtu + LINK_HEADER,
        caps: DeviceCaps {
            mtu: config.mtu,
            link_header: LINK_HEADER,
            mac: Some(mac),
            offload: super::OffloadCaps::NONE,
        },
        capacity,
        stats: DeviceStats::default(),
        discard: Vec::new(),
    };
    (
        end(0, config.mac_a, toward_b_tx, toward_a_rx),
        end(1, config.mac_b, toward_a_tx, toward_b_rx),
    )
}

/// One end of an in-memory wire (see the [module docs](self)).
///
/// Counters are plain fields owned by the end: only the thread that owns the
/// end transmits and receives on it, so they need no atomics.
pub struct MemoryEnd {
    shared: Arc<WireShared>,
    /// 0 for end A, 1 for end B.
    me: usize,
    /// The lane towards this end (`shared.lanes[me]`).
    rx_lane: Arc<Lane>,
    /// The lane towards the peer (`shared.lanes[1 - me]`).
    tx_lane: Arc<Lane>,
    /// The writing half of the ring towards the peer.
    tx: Producer<Body>,
    /// The reading half of the ring towards this end.
    rx: Consumer<Body>,
    /// Frames pushed on `tx` so far (published in the peer lane's
    /// `pushed`): the `tx_frames` counter too, one add per frame for both.
    pushed: u64,
    /// Frames popped from `rx` so far (published in this lane's `popped`):
    /// with `dropped_discard`, the `rx_frames` counter.
    popped: u64,
    /// The largest frame a transmit takes (MTU and link header).
    max_frame: usize,
    caps: DeviceCaps,
    capacity: usize,
    stats: DeviceStats,
    /// What the stack asked this end to discard on receipt
    /// ([`Device::discard`]); empty on the fast path.
    discard: Vec<FrameMatch>,
}

impl MemoryEnd {
    fn peer(&self) -> usize {
        // `me` is 0 or 1; the mask lets the compiler see the index is in
        // bounds (no check on the per-frame path).
        (self.me ^ 1) & 1
    }

    /// Frames waiting to be received on this end.
    pub fn rx_pending(&self) -> usize {
        self.rx_lane.pending()
    }

    /// Frames sent by this end that the peer has not received yet.
    pub fn tx_in_flight(&self) -> usize {
        self.tx_lane.pending()
    }

    /// Whether the other end still exists.
    pub fn is_connected(&self) -> bool {
        self.shared.alive[self.peer()].load(Ordering::Acquire)
    }

    /// The bound on frames in flight per direction.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Blocks the calling thread until a frame is ready on this end, the peer
    /// is dropped, or `timeout` (real time) passes. Returns whether a frame is
    /// ready. For a thread that drives one stack and has nothing else to do;
    /// the stack itself never blocks.
    pub fn wait_rx(&self, timeout: std::time::Duration) -> bool {
        self.shared.wait_rx(self.me, timeout)
    }
}

/// The per-frame steps of a [`MemoryEnd`] shared by its ways of receiving,
/// and the refusals of a transmit, out of line: the fast lanes keep only
/// the common case (issue 26, the run loop at its minimum).
impl MemoryEnd {
    /// Publishes that one more frame was taken from the ring (what a
    /// sleeper on this end sees of it).
    #[inline(always)]
    fn took_one(&mut self) {
        self.popped += 1;
        self.rx_lane.popped.0.store(self.popped, Ordering::Release);
    }

    /// Hands frame `f` over in `frame` and says whether more are ready.
    #[inline(always)]
    fn deliver(&mut self, f: Body, frame: &mut Msg) -> Received {
        // `rx_frames` is `popped` less the discarded (`stats`).
        self.stats.rx_bytes += f.len() as u64;
        // The bytes cross the wire, the sender's annotations do not: the
        // frame starts with none, as from any device.
        frame.fill_from(f);
        self.more_ready()
    }

    /// Whether more frames are ready after the one just handed over. Only
    /// the peer writes this ring, so what it holds now is all that is
    /// ready: one acquire load.
    #[inline(always)]
    fn more_ready(&self) -> Received {
        if self.rx.is_empty() {
            Received::Last
        } else {
            Received::Frame
        }
    }

    /// [`Device::receive_into`] while the stack asks this end to discard
    /// frames ([`Device::discard`]): the frames that match are dropped
    /// here, as a TAP's kernel filter would, before the stack sees them.
    #[cold]
    #[inline(never)]
    fn receive_past_discards(&mut self, mut f: Body, frame: &mut Msg) -> Received {
        while any_matches(&self.discard, f.as_slice()) {
            self.stats.dropped_discard += 1;
            drop(f.into_msg());
            let Ok(next) = self.rx.pop() else {
                return Received::Nothing;
            };
            self.took_one();
            f = next;
        }
        self.deliver(f, frame)
    }

    /// Why a frame of `len` bytes cannot be sent: too large, or the
    /// peer is gone (counted as an error).
    #[cold]
    #[inline(never)]
    fn refuse(&mut self, len: usize) -> DeviceError {
        self.stats.errors += 1;
        let max = self.max_frame;
        if len > max {
            DeviceError::FrameTooLarge { len, max }
        } else {
            DeviceError::Disconnected
        }
    }

    /// [`Device::transmit_from`], by type: what a driver holding this end
    /// by its type (`device::held`) calls, inlined into the driver
    /// stage's transmit, so that the push needs no virtual call and its
    /// `Result` no trip through memory (issue 26 item 1).
    #[inline(always)]
    pub(crate) fn send_from(&mut self, frame: &mut Msg) -> Result<(), DeviceError> {
        let len = frame.len();
        // The peer's reading half is dropped with it: the ring says so
        // with the flag word it keeps next to the positions a push reads.
        if len > self.max_frame || self.tx.is_abandoned() {
            // The refused frame goes back to its pool now.
            drop(std::mem::take(frame));
            return Err(self.refuse(len));
        }
        match self.tx.push(frame.take_body()) {
            Ok(()) => {
                // `pushed` is the `tx_frames` counter too (`stats`).
                self.pushed += 1;
                self.stats.tx_bytes += len as u64;
                // Published after the push (release), so that whoever
                // sees the count sees the frame in the ring.
                self.tx_lane.pushed.0.store(self.pushed, Ordering::Release);
                self.tx_lane.wake();
                Ok(())
            }
            // The rejected frame is dropped here and its buffer goes home.
            Err(rtrb::PushError::Full(f)) => {
                drop(f.into_msg());
                Err(self.full())
            }
        }
    }

    /// [`Device::receive_into`], by type (as [`MemoryEnd::send_from`]):
    /// the wire never fails to receive, so it says only what it took.
    #[inline(always)]
    pub(crate) fn take_into(&mut self, frame: &mut Msg) -> Received {
        // Taken apart as it leaves the ring: its parts go on in registers
        // into `frame`, not as a value copied through four temporaries
        // (issue 26 item 6).
        let Ok(Body {
            buf,
            pool,
            head,
            tail,
        }) = self.rx.pop()
        else {
            return Received::Nothing;
        };
        self.took_one();
        if !self.discard.is_empty() {
            let f = Body {
                buf,
                pool,
                head,
                tail,
            };
            return self.receive_past_discards(f, frame);
        }
        // `rx_frames` is `popped` less the discarded (`stats`).
        self.stats.rx_bytes += u64::from(tail - head);
        // The bytes cross the wire, the sender's annotations do not: the
        // frame starts with none, as from any device.
        frame.fill_parts(buf, pool, head, tail);
        self.more_ready()
    }

    /// The peer's ring is full: the frame is dropped (counted).
    #[cold]
    #[inline(never)]
    fn full(&mut self) -> DeviceError {
        self.stats.dropped_full += 1;
        DeviceError::QueueFull {
            capacity: self.capacity,
        }
    }
}

impl WireShared {
    /// Sleeps until a frame is ready for end `me`, its peer is dropped, or
    /// `timeout` passes (see [`MemoryEnd::wait_rx`]).
    fn wait_rx(&self, me: usize, timeout: std::time::Duration) -> bool {
        let peer_alive = &self.alive[1 - me];
        self.lanes[me].wait(timeout, || !peer_alive.load(Ordering::Acquire))
    }
}

/// What a thread driving a stack sleeps on for one end of the wire
/// ([`Device::rx_waiter`]): the end's receive lane, shared with the peer
/// that wakes it on transmit.
struct WireWaiter {
    shared: Arc<WireShared>,
    me: usize,
}

impl RxWaiter for WireWaiter {
    fn wait_rx(&self, timeout: std::time::Duration) -> bool {
        self.shared.wait_rx(self.me, timeout)
    }

    fn poll_rx(&self, cx: &mut Context<'_>) -> Option<Poll<()>> {
        Some(self.shared.lanes[self.me & 1].poll(cx))
    }
}

impl Device for MemoryEnd {
    fn transmit(&mut self, mut frame: Msg, now: Instant) -> Result<(), DeviceError> {
        self.transmit_from(&mut frame, now)
    }

    /// The frame's buffer goes into the ring from where it lies (the
    /// trip's slot), which is left empty (`MemoryEnd::send_from`).
    #[inline]
    fn transmit_from(&mut self, frame: &mut Msg, _now: Instant) -> Result<(), DeviceError> {
        self.send_from(frame)
    }

    /// Frames still queued when the peer is dropped are delivered; after that
    /// a disconnected end simply has nothing to receive (`Ok(None)`): check
    /// [`MemoryEnd::is_connected`] to tell the two apart. The frame keeps the
    /// sender's buffer, so `pool` is not used.
    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        let mut frame = Msg::default();
        Ok(match self.receive_into(pool, now, &mut frame)? {
            Received::Nothing => None,
            Received::Frame | Received::Last => Some(frame),
        })
    }

    /// The frame is moved once, from the lane into `frame`, where the
    /// stack runs it, its annotations cleared (the driver's fast lane,
    /// [`Device::receive_into`]; `MemoryEnd::take_into`).
    #[inline]
    fn receive_into(
        &mut self,
        _pool: &MsgPool,
        _now: Instant,
        frame: &mut Msg,
    ) -> Result<Received, DeviceError> {
        Ok(self.take_into(frame))
    }

    fn discard(&mut self, matches: &[FrameMatch]) -> Result<bool, DeviceError> {
        self.discard.clear();
        self.discard.extend_from_slice(matches);
        Ok(true)
    }

    fn caps(&self) -> DeviceCaps {
        self.caps
    }

    fn stats(&self) -> DeviceStats {
        DeviceStats {
            tx_frames: self.pushed,
            rx_frames: self.popped - self.stats.dropped_discard,
            ..self.stats
        }
    }

    fn rx_waiter(&self) -> Option<Arc<dyn RxWaiter>> {
        Some(Arc::new(WireWaiter {
            shared: Arc::clone(&self.shared),
            me: self.me,
        }))
    }
}

impl Drop for MemoryEnd {
    fn drop(&mut self) {
        self.shared.alive[self.me].store(false, Ordering::Release);
        // A peer asleep in `wait_rx` must learn that nothing more will come.
        let peer_lane = &self.tx_lane;
        let _guard = peer_lane
            .lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        peer_lane.ready.notify_all();
        drop(_guard);
        // A waiting task finds nothing, which is right: nothing more comes.
        // Woken, it learns that by asking again.
        peer_lane.wake_task();
        // The frames the peer sent that this end never took go back to
        // their pools (a `Body` has no drop of its own, so that it moves
        // out of the ring without copies). The peer pushes nothing more:
        // it checks that the ring is abandoned first (a push racing this
        // drop from the peer's thread, between its check and its push,
        // leaves a frame that the ring frees to the heap instead of its
        // pool: no memory is lost, the pool counts it live).
        while let Ok(f) = self.rx.pop() {
            drop(f.into_msg());
        }
    }
}

impl std::fmt::Debug for MemoryEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryEnd")
            .field("end", &if self.me == 0 { "A" } else { "B" })
            .field("caps", &self.caps)
            .field("rx_pending", &self.rx_pending())
            .field("connected", &self.is_connected())
            .field("stats", &self.stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::PoolConfig;

    const T0: Instant = Instant::ZERO;

    fn frame(pool: &MsgPool, tag: u32, len: usize) -> Msg {
        let mut m = pool.alloc(len.max(4)).unwrap();
        m.as_mut_slice()[..4].copy_from_slice(&tag.to_be_bytes());
        m
    }

    fn tag(m: &Msg) -> u32 {
        u32::from_be_bytes(m.as_slice()[..4].try_into().unwrap())
    }

    #[test]
    fn frames_cross_both_ways_in_order() {
        let pool = MsgPool::new(PoolConfig::small(64));
        let (mut a, mut b) = memory_pair(MemoryConfig::default());
        for i in 0..10 {
            a.transmit(frame(&pool, i, 60), T0).unwrap();
            b.transmit(frame(&pool, 100 + i, 60), T0).unwrap();
        }
        assert_eq!(b.rx_pending(), 10);
        assert_eq!(a.tx_in_flight(), 10);
        for i in 0..10 {
            assert_eq!(tag(&b.receive(&pool, T0).unwrap().unwrap()), i);
            assert_eq!(tag(&a.receive(&pool, T0).unwrap().unwrap()), 100 + i);
        }
        assert!(a.receive(&pool, T0).unwrap().is_none());
        assert!(b.receive(&pool, T0).unwrap().is_none());
        let s = a.stats();
        assert_eq!(
            (s.tx_frames, s.tx_bytes, s.rx_frames, s.rx_bytes),
            (10, 600, 10, 600)
        );
        assert_eq!(a.caps().mac, Some([2, 0, 0, 0, 0, 1]));
        assert_eq!(b.caps().mac, Some([2, 0, 0, 0, 0, 2]));
        assert_eq!(a.caps().link_header, 14);
    }

    #[test]
    fn message_moves_without_copy_and_buffer_returns_to_sender_pool() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let (mut a, mut b) = memory_pair(MemoryConfig::default());
        for round in 0..100 {
            a.transmit(frame(&pool, round, 64), T0).unwrap();
            assert_eq!(pool.stats().live, 1);
            let got = b.receive(&pool, T0).unwrap().unwrap();
            assert_eq!(tag(&got), round);
            drop(got);
            assert_eq!(pool.stats().live, 0);
        }
        assert_eq!(pool.stats().heap_allocs, 0);
        assert_eq!(pool.stats().allocs, 100);
    }

    #[test]
    fn the_senders_annotations_do_not_cross_the_wire() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let (mut a, mut b) = memory_pair(MemoryConfig::default());
        let mut m = frame(&pool, 7, 64);
        m.anno_mut().set_classified(true);
        assert_ne!(*m.anno(), crate::anno::Anno::default());
        a.transmit(m, T0).unwrap();
        let got = b.receive(&pool, T0).unwrap().unwrap();
        assert_eq!(tag(&got), 7);
        assert_eq!(*got.anno(), crate::anno::Anno::default());
    }

    #[test]
    fn receive_into_says_when_the_frame_is_the_last_one_ready() {
        let pool = MsgPool::new(PoolConfig::small(8));
        let (mut a, mut b) = memory_pair(MemoryConfig::default());
        let mut slot = Msg::default();
        assert_eq!(
            b.receive_into(&pool, T0, &mut slot).unwrap(),
            Received::Nothing
        );
        assert!(!slot.has_buffer(), "nothing written into the slot");
        for tag in 1..=3 {
            a.transmit(frame(&pool, tag, 8), T0).unwrap();
        }
        assert_eq!((a.tx_in_flight(), b.rx_pending()), (3, 3));
        let mut got = Vec::new();
        loop {
            let mut slot = Msg::default();
            let r = b.receive_into(&pool, T0, &mut slot).unwrap();
            assert_ne!(r, Received::Nothing);
            got.push(tag(&slot));
            assert_eq!(b.rx_pending(), 3 - got.len(), "the counts follow the ring");
            if r == Received::Last {
                break;
            }
        }
        assert_eq!(
            got,
            [1, 2, 3],
            "`Last` comes with the last frame, not before"
        );
        assert_eq!((a.tx_in_flight(), b.rx_pending()), (0, 0));
        assert_eq!(b.stats().rx_frames, 3);
    }

    #[test]
    fn full_queue_drops_and_counts() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let cfg = MemoryConfig {
            capacity: 3,
            ..MemoryConfig::default()
        };
        let (mut a, mut b) = memory_pair(cfg);
        for i in 0..3 {
            a.transmit(frame(&pool, i, 10), T0).unwrap();
        }
        let err = a.transmit(frame(&pool, 3, 10), T0).unwrap_err();
        assert!(matches!(err, DeviceError::QueueFull { capacity: 3 }));
        assert_eq!(a.stats().dropped_full, 1);
        assert_eq!(a.stats().tx_frames, 3);
        // The dropped frame's buffer went back to the pool.
        assert_eq!(pool.stats().live, 3);
        assert_eq!(tag(&b.receive(&pool, T0).unwrap().unwrap()), 0);
        a.transmit(frame(&pool, 4, 10), T0).unwrap();
        let tags: Vec<u32> = std::iter::from_fn(|| b.receive(&pool, T0).unwrap())
            .map(|m| tag(&m))
            .collect();
        assert_eq!(tags, [1, 2, 4]);
    }

    #[test]
    fn zero_capacity_is_taken_as_one() {
        let (a, _b) = memory_pair(MemoryConfig {
            capacity: 0,
            ..MemoryConfig::default()
        });
        assert_eq!(a.capacity(), 1);
    }

    #[test]
    fn mtu_bound_includes_link_header() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let cfg = MemoryConfig {
            mtu: 100,
            ..MemoryConfig::default()
        };
        let (mut a, mut b) = memory_pair(cfg);
        a.transmit(pool.alloc(114).unwrap(), T0).unwrap();
        let err = a.transmit(pool.alloc(115).unwrap(), T0).unwrap_err();
        assert!(matches!(
            err,
            DeviceError::FrameTooLarge { len: 115, max: 114 }
        ));
        assert_eq!(a.stats().errors, 1);
        assert_eq!(b.receive(&pool, T0).unwrap().unwrap().len(), 114);
        assert!(b.receive(&pool, T0).unwrap().is_none());
    }

    #[test]
    fn frames_left_in_the_ring_go_home_when_either_end_goes() {
        let pool = MsgPool::new(PoolConfig::small(8));
        let (mut a, mut b) = memory_pair(MemoryConfig::default());
        for t in 0..3 {
            a.transmit(frame(&pool, t, 10), T0).unwrap();
        }
        b.transmit(frame(&pool, 9, 10), T0).unwrap();
        assert_eq!(pool.stats().live, 4);
        // B takes one of A's three; the two it leaves go home with it.
        assert_eq!(tag(&b.receive(&pool, T0).unwrap().unwrap()), 0);
        drop(b);
        assert_eq!(pool.stats().live, 1);
        // The frame B sent and A never took goes home with A.
        drop(a);
        assert_eq!(pool.stats().live, 0);
    }

    #[test]
    fn dropped_peer_disconnects_but_queued_frames_still_arrive() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let (mut a, mut b) = memory_pair(MemoryConfig::default());
        b.transmit(frame(&pool, 7, 10), T0).unwrap();
        a.transmit(frame(&pool, 8, 10), T0).unwrap();
        drop(b);
        assert!(!a.is_connected());
        let err = a.transmit(frame(&pool, 9, 10), T0).unwrap_err();
        assert!(matches!(err, DeviceError::Disconnected));
        assert_eq!(a.stats().errors, 1);
        assert_eq!(tag(&a.receive(&pool, T0).unwrap().unwrap()), 7);
        assert!(a.receive(&pool, T0).unwrap().is_none());
        // Frame 8 was never received: it went home when its receiver, B,
        // was dropped (B gives back what its ring still holds).
        assert_eq!(pool.stats().live, 0);
        assert!(!a.wait_rx(std::time::Duration::from_secs(5)));
        drop(a);
        assert_eq!(pool.stats().live, 0);
    }

    #[test]
    fn wait_rx_wakes_on_peer_drop() {
        let (a, b) = memory_pair(MemoryConfig::default());
        let t = std::thread::spawn(move || a.wait_rx(std::time::Duration::from_secs(30)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(b);
        assert!(!t.join().unwrap());
    }

    #[test]
    fn rx_waiter_wakes_when_the_peer_transmits() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let (mut a, b) = memory_pair(MemoryConfig::default());
        let waiter = b.rx_waiter().expect("the wire can wake a sleeper");
        let t = std::thread::spawn(move || waiter.wait_rx(std::time::Duration::from_secs(30)));
        std::thread::sleep(std::time::Duration::from_millis(20));
        a.transmit(frame(&pool, 1, 10), T0).unwrap();
        assert!(t.join().unwrap(), "woken by the frame, not the timeout");
        assert_eq!(b.rx_pending(), 1);
    }

    /// A waker that counts its wake-ups.
    struct CountWake(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountWake {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn poll_rx_wakes_the_task_when_the_peer_transmits() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let (mut a, mut b) = memory_pair(MemoryConfig::default());
        let waiter = b.rx_waiter().unwrap();
        let count = Arc::new(CountWake(std::sync::atomic::AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        assert_eq!(waiter.poll_rx(&mut cx), Some(Poll::Pending));
        // Registering twice keeps one waker: one transmit, one wake-up.
        assert_eq!(waiter.poll_rx(&mut cx), Some(Poll::Pending));
        a.transmit(frame(&pool, 1, 10), T0).unwrap();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert_eq!(waiter.poll_rx(&mut cx), Some(Poll::Ready(())));
        // A frame that is already there wakes nobody: the task was told.
        a.transmit(frame(&pool, 2, 10), T0).unwrap();
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        while b.receive(&pool, T0).unwrap().is_some() {}
        assert_eq!(waiter.poll_rx(&mut cx), Some(Poll::Pending));
        drop(a);
        assert_eq!(count.0.load(Ordering::SeqCst), 2, "the peer's drop wakes");
    }

    #[test]
    fn ends_are_send() {
        fn is_send<T: Send>() {}
        is_send::<MemoryEnd>();
    }

    /// Two threads ping-pong 10,000 frames; every frame comes back in order
    /// and intact, and buffers are recycled (no heap allocation beyond the pool).
    #[test]
    fn two_threads_ping_pong_10k_frames() {
        const N: u32 = 10_000;
        let pool = MsgPool::new(PoolConfig::small(8));
        let (mut a, mut b) = memory_pair(MemoryConfig {
            capacity: 4,
            ..MemoryConfig::default()
        });
        let echo_pool = pool.clone();
        let echo = std::thread::spawn(move || {
            let mut n = 0;
            while n < N {
                match b.receive(&echo_pool, T0).unwrap() {
                    Some(mut m) => {
                        // Answer in place, as an echo stage would.
                        m.as_mut_slice()[4] ^= 0xFF;
                        b.transmit(m, T0).unwrap();
                        n += 1;
                    }
                    None => {
                        b.wait_rx(std::time::Duration::from_secs(10));
                    }
                }
            }
            b.stats()
        });
        for i in 0..N {
            a.transmit(frame(&pool, i, 64), T0).unwrap();
            let back = loop {
                if let Some(m) = a.receive(&pool, T0).unwrap() {
                    break m;
                }
                assert!(
                    a.wait_rx(std::time::Duration::from_secs(10)),
                    "echo of frame {i} never came back"
                );
            };
            assert_eq!(tag(&back), i);
            assert_eq!(back.as_slice()[4], 0xFF);
            assert_eq!(back.len(), 64);
        }
        let bs = echo.join().unwrap();
        assert_eq!(bs.rx_frames, u64::from(N));
        assert_eq!(bs.tx_frames, u64::from(N));
        assert_eq!(a.stats().rx_frames, u64::from(N));
        let ps = pool.stats();
        assert_eq!(ps.live, 0);
        assert_eq!(ps.heap_allocs, 0);
    }
}
