//! Messages and the buffer pool.
//!
//! A [`Msg`] is a byte buffer with headroom, so that each stage can `push` its
//! header in front of the payload on the way down and `pop` it on the way up
//! without copying the payload (x-kernel/Scout message semantics). Buffers come
//! from a [`MsgPool`] and go back to it when the message is dropped: this is
//! Scout's buffer *refresh* (MIPS and Reality §2.4), and it is what makes
//! steady-state packet processing allocation-free.
//!
//! The pool has a few size classes (a small one for frames, a large one for
//! reassembled datagrams). Each class has a hard bound on the number of
//! buffers alive at once; when it is reached, allocation fails with
//! [`MsgError::PoolExhausted`] instead of growing without bound.
//!
//! The free lists are lock-free bounded queues (`crossbeam_queue::ArrayQueue`),
//! so a message may be freed on another thread (the in-memory wire moves
//! messages between stacks) without a lock and without allocating.
//!
//! ```
//! use pathstack_core::msg::{MsgPool, PoolConfig};
//! let pool = MsgPool::new(PoolConfig::default());
//! let mut m = pool.alloc_copy(b"payload").unwrap();
//! m.push(4).unwrap().copy_from_slice(b"HDR:");
//! assert_eq!(m.as_slice(), b"HDR:payload");
//! assert_eq!(m.pop(4).unwrap(), b"HDR:");
//! assert_eq!(m.as_slice(), b"payload");
//! ```

use crate::anno::Anno;
use crossbeam_queue::ArrayQueue;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use thiserror::Error;

/// What went wrong with a message operation.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MsgError {
    /// `push` needed more headroom than the buffer has left.
    #[error("not enough headroom: need {need} bytes, have {have}")]
    NoHeadroom {
        /// Bytes requested.
        need: usize,
        /// Bytes available in front of the data.
        have: usize,
    },
    /// `pop`, `split_off` or `truncate_front` asked for more bytes than the message holds.
    #[error("message too short: need {need} bytes, have {have}")]
    TooShort {
        /// Bytes requested.
        need: usize,
        /// Bytes in the message.
        have: usize,
    },
    /// No size class of the pool can hold this many bytes.
    #[error("message of {len} bytes is larger than the largest pool buffer ({max} bytes)")]
    TooLarge {
        /// Bytes requested (including headroom).
        len: usize,
        /// Largest buffer the pool can hand out.
        max: usize,
    },
    /// The message has no buffer (`Msg::default()`), so it cannot grow or be copied.
    #[error("message has no pool buffer (it was taken or never allocated)")]
    Detached,
    /// Every size class that could hold the message is at its bound.
    #[error("buffer pool exhausted: no buffer of {len} bytes available")]
    PoolExhausted {
        /// Bytes requested (including headroom).
        len: usize,
    },
}

/// One size class of a pool: buffers of `buf_size` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeClass {
    /// Size of each buffer in bytes, headroom included.
    pub buf_size: usize,
    /// Buffers allocated when the pool is made.
    pub prealloc: usize,
    /// Most buffers of this class alive at once (the bound).
    pub max: usize,
}

/// How a pool is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Bytes kept free in front of the data of a newly allocated message,
    /// so that headers can be pushed without copying.
    pub headroom: usize,
    /// Size classes, smallest first.
    pub classes: Vec<SizeClass>,
}

impl Default for PoolConfig {
    /// 2 KiB frame buffers (1,024 preallocated, at most 8,192) and 72 KiB
    /// buffers for reassembled datagrams (8 preallocated, at most 64), with
    /// 128 bytes of headroom.
    fn default() -> Self {
        PoolConfig {
            headroom: 128,
            classes: vec![
                SizeClass {
                    buf_size: 2048,
                    prealloc: 1024,
                    max: 8192,
                },
                SizeClass {
                    buf_size: 72 * 1024,
                    prealloc: 8,
                    max: 64,
                },
            ],
        }
    }
}

impl PoolConfig {
    /// A small pool for tests: `n` frame buffers of 2 KiB, no large class.
    pub fn small(n: usize) -> Self {
        PoolConfig {
            headroom: 128,
            classes: vec![SizeClass {
                buf_size: 2048,
                prealloc: n,
                max: n,
            }],
        }
    }
}

struct Class {
    buf_size: usize,
    max: usize,
    free: ArrayQueue<Box<[u8]>>,
    /// Buffers this class has made (preallocated or from the heap), at
    /// most `max`. Those not on the free list are live: counted here,
    /// only when a buffer is made, rather than on every allocation and
    /// free (issue 26: a pool free without the bookkeeping).
    made: AtomicUsize,
}

impl Class {
    /// Buffers of this class handed out now.
    fn live(&self) -> usize {
        self.made
            .load(Ordering::Relaxed)
            .saturating_sub(self.free.len())
    }

    /// A buffer from the heap, if the class has made fewer than `max`.
    fn make(&self) -> Option<Box<[u8]>> {
        self.made
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()?;
        Some(vec![0u8; self.buf_size].into_boxed_slice())
    }
}

pub(crate) struct PoolInner {
    headroom: usize,
    classes: Vec<Class>,
    allocs: AtomicU64,
    heap_allocs: AtomicU64,
    exhausted: AtomicU64,
}

/// A bounded pool of message buffers. Cloning a pool gives another handle to
/// the same buffers.
#[derive(Clone)]
pub struct MsgPool {
    inner: Arc<PoolInner>,
}

/// Counters of a pool, for statistics and for the zero-allocation tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Messages handed out.
    pub allocs: u64,
    /// Buffers that had to come from the heap (pool was empty below its bound).
    pub heap_allocs: u64,
    /// Allocations refused because a class was at its bound.
    pub exhausted: u64,
    /// Buffers currently handed out, over all classes.
    pub live: usize,
}

impl MsgPool {
    /// Makes a pool and preallocates its buffers.
    ///
    /// A message finds its class again by the size of its buffer (it does
    /// not carry the class, to stay within 64 bytes), so classes of equal
    /// size are merged into one, their counts added. A buffer is at most
    /// `u32::MAX` bytes (larger sizes are cut down to it), as a message
    /// keeps its offsets in 32 bits.
    pub fn new(config: PoolConfig) -> Self {
        let mut merged: Vec<SizeClass> = Vec::with_capacity(config.classes.len());
        for c in &config.classes {
            let buf_size = c.buf_size.min(u32::MAX as usize);
            match merged.iter_mut().find(|m| m.buf_size == buf_size) {
                Some(m) => {
                    m.prealloc += c.prealloc;
                    m.max += c.max;
                }
                None => merged.push(SizeClass {
                    buf_size,
                    ..c.clone()
                }),
            }
        }
        let classes = merged
            .iter()
            .map(|c| {
                let free = ArrayQueue::new(c.max.max(1));
                let made = c.prealloc.min(c.max);
                for _ in 0..made {
                    let _ = free.push(vec![0u8; c.buf_size].into_boxed_slice());
                }
                Class {
                    buf_size: c.buf_size,
                    max: c.max,
                    free,
                    made: AtomicUsize::new(made),
                }
            })
            .collect();
        MsgPool {
            inner: Arc::new(PoolInner {
                headroom: config.headroom,
                classes,
                allocs: AtomicU64::new(0),
                heap_allocs: AtomicU64::new(0),
                exhausted: AtomicU64::new(0),
            }),
        }
    }

    /// The headroom given to new messages.
    pub fn headroom(&self) -> usize {
        self.inner.headroom
    }

    /// Largest payload a single message from this pool can hold with full headroom.
    pub fn max_payload(&self) -> usize {
        self.inner
            .classes
            .last()
            .map_or(0, |c| c.buf_size.saturating_sub(self.inner.headroom))
    }

    /// A message of `len` zero bytes, with the pool's headroom in front.
    pub fn alloc(&self, len: usize) -> Result<Msg, MsgError> {
        let mut m = self.alloc_empty(len)?;
        let start = m.tail();
        m.set_tail(start + len);
        m.buf[start..start + len].fill(0);
        Ok(m)
    }

    /// A message holding a copy of `bytes`, with the pool's headroom in front.
    pub fn alloc_copy(&self, bytes: &[u8]) -> Result<Msg, MsgError> {
        let mut m = self.wrap(self.buffer(bytes.len())?);
        let start = m.tail();
        m.buf[start..start + bytes.len()].copy_from_slice(bytes);
        m.set_tail(start + bytes.len());
        Ok(m)
    }

    /// An empty message with room for at least `capacity` bytes after the
    /// headroom (a receive buffer: fill it through [`Msg::tailroom_mut`] and
    /// [`Msg::commit_tail`]).
    pub fn alloc_empty(&self, capacity: usize) -> Result<Msg, MsgError> {
        Ok(self.wrap(self.buffer(capacity)?))
    }

    /// A buffer with room for `capacity` bytes after the headroom, counted
    /// as an allocation. The common case is written out, inlined into each
    /// way of allocating: the frame class holds it and has a buffer free
    /// (issue 26, the pool at its minimum); the rest is out of line.
    #[inline(always)]
    fn buffer(&self, capacity: usize) -> Result<Box<[u8]>, MsgError> {
        let inner = &*self.inner;
        let need = capacity.saturating_add(inner.headroom);
        if let Some(class) = inner.classes.first() {
            if need <= class.buf_size {
                if let Some(buf) = class.free.pop() {
                    inner.allocs.fetch_add(1, Ordering::Relaxed);
                    return Ok(buf);
                }
            }
        }
        self.buffer_slow(need)
    }

    /// [`MsgPool::buffer`] when the frame class has no buffer for `need`
    /// bytes at hand: the smallest class that fits and has one free, or
    /// is below its bound and makes one.
    #[cold]
    #[inline(never)]
    fn buffer_slow(&self, need: usize) -> Result<Box<[u8]>, MsgError> {
        let inner = &*self.inner;
        let max = inner.classes.last().map_or(0, |c| c.buf_size);
        if need > max {
            return Err(MsgError::TooLarge { len: need, max });
        }
        for class in &inner.classes {
            if class.buf_size < need {
                continue;
            }
            let buf = match class.free.pop() {
                Some(b) => b,
                None => match class.make() {
                    Some(b) => {
                        inner.heap_allocs.fetch_add(1, Ordering::Relaxed);
                        b
                    }
                    None => continue,
                },
            };
            inner.allocs.fetch_add(1, Ordering::Relaxed);
            return Ok(buf);
        }
        inner.exhausted.fetch_add(1, Ordering::Relaxed);
        Err(MsgError::PoolExhausted { len: need })
    }

    /// An empty message in `buf`, a buffer of this pool, with the pool's
    /// headroom in front. `buf` holds at least the headroom and fits in
    /// `u32` (see `new`).
    #[inline(always)]
    fn wrap(&self, buf: Box<[u8]>) -> Msg {
        let head = self.inner.headroom as u32;
        Msg {
            buf,
            head,
            tail: head,
            pool: Some(Arc::clone(&self.inner)),
            anno: Anno::default(),
        }
    }

    /// Current counters.
    pub fn stats(&self) -> PoolStats {
        let i = &self.inner;
        PoolStats {
            allocs: i.allocs.load(Ordering::Relaxed),
            heap_allocs: i.heap_allocs.load(Ordering::Relaxed),
            exhausted: i.exhausted.load(Ordering::Relaxed),
            live: i.classes.iter().map(Class::live).sum(),
        }
    }
}

impl fmt::Debug for MsgPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsgPool")
            .field("headroom", &self.inner.headroom)
            .field("stats", &self.stats())
            .finish()
    }
}

/// A message: bytes `[head, tail)` of a pooled buffer, plus its
/// [`Anno`]tations.
///
/// `Msg::default()` is an empty message with no buffer (it never allocates);
/// it is what `std::mem::take` leaves behind when a stage hands a message on.
///
/// At most 64 bytes, one cache line (checked below): a message is moved
/// by value through several layers of every trip (into and out of queues,
/// verdicts, devices), and each move copies the whole struct. So the
/// offsets are 32-bit (no buffer is near 4 GiB), the size class is found
/// again from the buffer's length instead of being carried, and
/// everything else lives in the 32-byte [`Anno`].
#[derive(Default)]
pub struct Msg {
    buf: Box<[u8]>,
    pool: Option<Arc<PoolInner>>,
    /// Start of the data in `buf`; `head <= tail <= buf.len()`.
    head: u32,
    /// End of the data in `buf`.
    tail: u32,
    anno: Anno,
}

// Issue 26: a message moved by value should be one cache line; a field
// added here must make room elsewhere.
const _: () = assert!(std::mem::size_of::<Msg>() <= 64);

impl Msg {
    #[inline(always)]
    fn head(&self) -> usize {
        self.head as usize
    }

    #[inline(always)]
    fn tail(&self) -> usize {
        self.tail as usize
    }

    /// Sets the head; `at <= tail <= buf.len() <= u32::MAX`, so it fits.
    #[inline(always)]
    fn set_head(&mut self, at: usize) {
        self.head = at as u32;
    }

    /// Sets the tail; `at <= buf.len() <= u32::MAX`, so it fits.
    #[inline(always)]
    fn set_tail(&mut self, at: usize) {
        self.tail = at as u32;
    }

    /// The message's annotations.
    #[inline]
    pub fn anno(&self) -> &Anno {
        &self.anno
    }

    /// The message's annotations, writable.
    #[inline]
    pub fn anno_mut(&mut self) -> &mut Anno {
        &mut self.anno
    }

    /// Whether the message holds a buffer (`Msg::default()` holds none).
    #[inline]
    pub(crate) fn has_buffer(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Number of bytes in the message.
    #[inline]
    pub fn len(&self) -> usize {
        (self.tail - self.head) as usize
    }

    /// Whether the message holds no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.tail == self.head
    }

    /// Bytes free in front of the data.
    #[inline]
    pub fn headroom(&self) -> usize {
        self.head()
    }

    /// The size of the buffer the message holds: headroom, data and
    /// tailroom together (0 without a buffer). What a queued message keeps
    /// from others, read in one load rather than summed from the three.
    #[inline]
    pub(crate) fn buffer_len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes free after the data.
    #[inline]
    pub fn tailroom(&self) -> usize {
        self.buf.len() - self.tail()
    }

    /// The message bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.head()..self.tail()]
    }

    /// The message bytes, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let (h, t) = (self.head(), self.tail());
        &mut self.buf[h..t]
    }

    /// Makes room for an `n`-byte header in front and returns it for writing.
    #[inline]
    pub fn push(&mut self, n: usize) -> Result<&mut [u8], MsgError> {
        let have = self.head();
        if n > have {
            return Err(MsgError::NoHeadroom { need: n, have });
        }
        let h = have - n;
        self.set_head(h);
        Ok(&mut self.buf[h..h + n])
    }

    /// Removes the first `n` bytes and returns them.
    #[inline]
    pub fn pop(&mut self, n: usize) -> Result<&[u8], MsgError> {
        if n > self.len() {
            return Err(MsgError::TooShort {
                need: n,
                have: self.len(),
            });
        }
        let start = self.head();
        self.set_head(start + n);
        Ok(&self.buf[start..start + n])
    }

    /// The first `n` bytes, without removing them; `None` if the message is shorter.
    #[inline]
    pub fn peek(&self, n: usize) -> Option<&[u8]> {
        let h = self.head();
        (n <= self.len()).then(|| &self.buf[h..h + n])
    }

    /// Shortens the message to `len` bytes (no effect if it is not longer).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        if len < self.len() {
            self.set_tail(self.head() + len);
        }
    }

    /// Grows the message by `n` bytes at the end and returns them for writing.
    #[inline]
    pub fn append(&mut self, n: usize) -> Result<&mut [u8], MsgError> {
        if n > self.tailroom() {
            self.grow(self.len() + n)?;
        }
        let start = self.tail();
        self.set_tail(start + n);
        Ok(&mut self.buf[start..start + n])
    }

    /// Appends a copy of `bytes`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) -> Result<(), MsgError> {
        self.append(bytes.len())?.copy_from_slice(bytes);
        Ok(())
    }

    /// The free space after the data, for a device to read a frame into.
    /// Follow with [`Msg::commit_tail`].
    // Inline: a device's receive calls it for every frame (issue 26 item 6).
    #[inline]
    pub fn tailroom_mut(&mut self) -> &mut [u8] {
        let t = self.tail();
        &mut self.buf[t..]
    }

    /// Adds `n` bytes written through [`Msg::tailroom_mut`] to the message.
    #[inline]
    pub fn commit_tail(&mut self, n: usize) -> Result<(), MsgError> {
        if n > self.tailroom() {
            return Err(self.tail_too_short(n));
        }
        self.set_tail(self.tail() + n);
        Ok(())
    }

    /// The error of a [`Msg::commit_tail`] past the buffer: out of line,
    /// so that the inlined commit keeps only the common case.
    #[cold]
    #[inline(never)]
    fn tail_too_short(&self, n: usize) -> MsgError {
        MsgError::TooShort {
            need: n,
            have: self.tailroom(),
        }
    }

    /// Splits the message at `at`: `self` keeps `[0, at)` and the returned
    /// message (from the same pool, with full headroom) holds `[at, len)`.
    /// Used for IP fragmentation.
    pub fn split_off(&mut self, at: usize) -> Result<Msg, MsgError> {
        if at > self.len() {
            return Err(MsgError::TooShort {
                need: at,
                have: self.len(),
            });
        }
        let mut rest = self.pool_handle()?.alloc_copy(&self.as_slice()[at..])?;
        rest.anno = self.anno;
        self.set_tail(self.head() + at);
        Ok(rest)
    }

    /// Appends the bytes of `other` (which goes back to its pool). If this
    /// buffer is too small, the data moves into a buffer of a larger class.
    /// Used for reassembly.
    pub fn join(&mut self, other: Msg) -> Result<(), MsgError> {
        self.extend_from_slice(other.as_slice())
    }

    /// A copy of this message (bytes and annotations) in a new buffer of
    /// the same pool.
    pub fn try_clone(&self) -> Result<Msg, MsgError> {
        let mut m = self.pool_handle()?.alloc_copy(self.as_slice())?;
        m.anno = self.anno;
        Ok(m)
    }

    fn pool_handle(&self) -> Result<MsgPool, MsgError> {
        match &self.pool {
            Some(p) => Ok(MsgPool {
                inner: Arc::clone(p),
            }),
            None => Err(MsgError::Detached),
        }
    }

    /// Moves the data into a buffer that can hold `len` bytes after the headroom.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, len: usize) -> Result<(), MsgError> {
        let pool = self.pool_handle()?;
        let mut bigger = pool.alloc_empty(len)?;
        let n = self.len();
        let start = bigger.tail();
        bigger.buf[start..start + n].copy_from_slice(self.as_slice());
        bigger.set_tail(start + n);
        bigger.anno = self.anno;
        std::mem::swap(self, &mut bigger);
        Ok(())
    }
}

impl Drop for Msg {
    // Most messages dropped on a trip hold no buffer (a receive slot
    // whose frame went on, what `mem::take` leaves behind): one comparison,
    // inline, instead of a call (issue 26, the run loop at its minimum).
    #[inline]
    fn drop(&mut self) {
        if self.pool.is_some() {
            self.give_back();
        }
    }
}

impl Msg {
    /// Returns the buffer to its pool's free list.
    #[inline(never)]
    fn give_back(&mut self) {
        if let Some(pool) = self.pool.take() {
            // Class sizes are distinct (`MsgPool::new`), so the buffer's
            // length names its class; the frame class comes first.
            let len = self.buf.len();
            if let Some(class) = pool.classes.iter().find(|c| c.buf_size == len) {
                let buf = std::mem::take(&mut self.buf);
                // The queue has room for all `max` buffers the class may
                // make, so this cannot fail; if it somehow did, the buffer
                // is freed and no longer counted as made.
                if class.free.push(buf).is_err() {
                    class.made.fetch_sub(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// What of a [`Msg`] crosses the in-memory wire: its pooled buffer and the
/// window of it that holds the bytes, without the annotations, which stay
/// with the stack that wrote them (a received frame starts with none, as
/// from any device). Half a message (32 bytes, checked below), so a wire's
/// ring moves half the bytes per frame, and the receiving end builds the
/// message once, where the stack runs it (issue 26: the wire moves less).
///
/// It has no drop of its own, so that the receiving end can take it apart
/// as it leaves the ring and move its parts into the message in registers
/// (`Msg::fill_parts`; issue 26 item 6: a drop-carrying body was copied
/// through four stack temporaries on the way). What gives its buffer back
/// to its pool is [`Body::into_msg`]; a body simply dropped frees its
/// buffer to the heap and its pool goes on counting it live, so the wire
/// gives back every body it does not hand over (a refused push, a
/// discarded frame, its ring when an end goes).
#[derive(Default)]
pub(crate) struct Body {
    pub(crate) buf: Box<[u8]>,
    pub(crate) pool: Option<Arc<PoolInner>>,
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

const _: () = assert!(std::mem::size_of::<Body>() <= 32);

impl Body {
    /// The bytes the body holds.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.buf[self.head as usize..self.tail as usize]
    }

    /// Number of bytes the body holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        (self.tail - self.head) as usize
    }
}

impl Body {
    /// The message this body is, with no annotations: what gives its
    /// buffer back to its pool when it is dropped.
    #[inline]
    pub(crate) fn into_msg(self) -> Msg {
        let Body {
            buf,
            pool,
            head,
            tail,
        } = self;
        Msg {
            buf,
            pool,
            head,
            tail,
            anno: Anno::default(),
        }
    }
}

impl Msg {
    /// The message's buffer and window, taken out: the message is left
    /// empty (no buffer, no pool), its annotations as they were. Taken
    /// from where the message lies (a trip's slot), so the message is not
    /// moved out whole first.
    #[inline(always)]
    pub(crate) fn take_body(&mut self) -> Body {
        Body {
            buf: std::mem::take(&mut self.buf),
            pool: self.pool.take(),
            head: self.head,
            tail: self.tail,
        }
    }

    /// Makes this message the one `body` holds, with no annotations (a
    /// frame as a device hands it over). What the message held before goes
    /// back to its pool; a receive slot holds nothing, so usually nothing
    /// is dropped (`Msg`'s drop glue is an out-of-line call).
    #[inline(always)]
    pub(crate) fn fill_from(&mut self, body: Body) {
        let Body {
            buf,
            pool,
            head,
            tail,
        } = body;
        self.fill_parts(buf, pool, head, tail);
    }

    /// [`Msg::fill_from`] from the body's parts, taken apart where the
    /// body came out of a wire's ring: its fields go on in registers, not
    /// as a 32-byte value copied through the temporaries of every move on
    /// the way (issue 26 item 6; a `Body` has no drop of its own so that
    /// it can be taken apart).
    #[inline(always)]
    pub(crate) fn fill_parts(
        &mut self,
        buf: Box<[u8]>,
        pool: Option<Arc<PoolInner>>,
        head: u32,
        tail: u32,
    ) {
        if self.has_buffer() {
            drop(std::mem::take(self));
        }
        // Empty now (no buffer, no pool): its fields own nothing, so they
        // are overwritten, not dropped.
        std::mem::forget(std::mem::replace(&mut self.buf, buf));
        std::mem::forget(std::mem::replace(&mut self.pool, pool));
        self.head = head;
        self.tail = tail;
        self.anno = Anno::default();
    }
}

impl fmt::Debug for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = &self.as_slice()[..self.len().min(32)];
        f.debug_struct("Msg")
            .field("len", &self.len())
            .field("headroom", &self.head())
            .field("bytes", &shown)
            .finish()
    }
}

impl PartialEq for Msg {
    fn eq(&self, other: &Msg) -> bool {
        self.as_slice() == other.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn push_pop_round_trip() {
        let pool = MsgPool::new(PoolConfig::small(4));
        let mut m = pool.alloc_copy(b"data").unwrap();
        m.push(2).unwrap().copy_from_slice(b"h1");
        m.push(2).unwrap().copy_from_slice(b"h2");
        assert_eq!(m.as_slice(), b"h2h1data");
        assert_eq!(m.pop(2).unwrap(), b"h2");
        assert_eq!(m.pop(2).unwrap(), b"h1");
        assert_eq!(m.as_slice(), b"data");
    }

    #[test]
    fn errors_instead_of_panics() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let mut m = pool.alloc_copy(b"abc").unwrap();
        assert_eq!(m.pop(4), Err(MsgError::TooShort { need: 4, have: 3 }));
        assert!(matches!(m.push(10_000), Err(MsgError::NoHeadroom { .. })));
        assert!(matches!(m.split_off(9), Err(MsgError::TooShort { .. })));
        assert!(matches!(pool.alloc(5000), Err(MsgError::TooLarge { .. })));
        assert_eq!(m.peek(4), None);
    }

    #[test]
    fn pool_is_bounded_and_buffers_return() {
        let pool = MsgPool::new(PoolConfig::small(2));
        let a = pool.alloc(10).unwrap();
        let b = pool.alloc(10).unwrap();
        assert!(matches!(
            pool.alloc(10),
            Err(MsgError::PoolExhausted { .. })
        ));
        assert_eq!(pool.stats().live, 2);
        drop(a);
        let c = pool.alloc(10).unwrap();
        drop((b, c));
        let s = pool.stats();
        assert_eq!(s.live, 0);
        assert_eq!(s.heap_allocs, 0);
        assert_eq!(s.exhausted, 1);
    }

    #[test]
    fn join_grows_into_larger_class() {
        let pool = MsgPool::new(PoolConfig::default());
        let mut a = pool.alloc(1500).unwrap();
        let b = pool.alloc_copy(&[7u8; 1500]).unwrap();
        a.join(b).unwrap();
        assert_eq!(a.len(), 3000);
        assert_eq!(&a.as_slice()[1500..], &[7u8; 1500][..]);
        assert_eq!(a.headroom(), pool.headroom());
    }

    #[test]
    fn a_message_is_one_cache_line() {
        // Also a compile-time assertion next to `Msg`; this one shows the
        // figure when it fails.
        assert!(
            std::mem::size_of::<Msg>() <= 64,
            "{}",
            std::mem::size_of::<Msg>()
        );
        assert_eq!(std::mem::size_of::<Anno>(), 32);
    }

    #[test]
    fn classes_of_equal_size_merge_and_buffers_find_their_class() {
        let size = |buf_size, n| SizeClass {
            buf_size,
            prealloc: n,
            max: n,
        };
        let pool = MsgPool::new(PoolConfig {
            headroom: 16,
            classes: vec![size(256, 1), size(1024, 1), size(256, 1)],
        });
        // Two buffers of 256 bytes (merged class), then one of 1024.
        let a = pool.alloc(10).unwrap();
        let b = pool.alloc(10).unwrap();
        let c = pool.alloc(10).unwrap();
        assert_eq!(c.tailroom(), 1024 - 16 - 10);
        assert!(matches!(
            pool.alloc(10),
            Err(MsgError::PoolExhausted { .. })
        ));
        drop((a, b, c));
        assert_eq!(pool.stats().live, 0);
        let again: Vec<Msg> = (0..3).map(|_| pool.alloc(10).unwrap()).collect();
        assert_eq!(
            pool.stats().heap_allocs,
            0,
            "each buffer went home to its class"
        );
        drop(again);
    }

    #[test]
    fn reused_buffer_is_zeroed_by_alloc() {
        let pool = MsgPool::new(PoolConfig::small(1));
        drop(pool.alloc_copy(&[0xAA; 100]).unwrap());
        let m = pool.alloc(100).unwrap();
        assert!(m.as_slice().iter().all(|&b| b == 0));
    }

    proptest! {
        /// split_off then join gives back the original bytes, for any split point.
        #[test]
        fn split_join_identity(data in proptest::collection::vec(any::<u8>(), 0..4000), at in 0usize..4000) {
            let pool = MsgPool::new(PoolConfig::default());
            let mut m = pool.alloc_copy(&data).unwrap();
            let at = at.min(data.len());
            let rest = m.split_off(at).unwrap();
            prop_assert_eq!(m.as_slice(), &data[..at]);
            prop_assert_eq!(rest.as_slice(), &data[at..]);
            m.join(rest).unwrap();
            prop_assert_eq!(m.as_slice(), &data[..]);
        }

        /// Any sequence of push/pop/truncate/append matches a Vec<u8> model and never panics.
        #[test]
        fn matches_vec_model(ops in proptest::collection::vec((0u8..4, 0usize..200), 0..60)) {
            let pool = MsgPool::new(PoolConfig::default());
            let mut m = pool.alloc(0).unwrap();
            let mut model: Vec<u8> = Vec::new();
            for (i, (op, n)) in ops.into_iter().enumerate() {
                let fill = i as u8;
                match op {
                    0 => match m.push(n) {
                        Ok(h) => { h.fill(fill); let mut v = vec![fill; n]; v.extend_from_slice(&model); model = v; }
                        Err(_) => prop_assert!(n > m.headroom()),
                    },
                    1 => match m.pop(n) {
                        Ok(_) => { model.drain(..n); }
                        Err(_) => prop_assert!(n > model.len()),
                    },
                    2 => { m.truncate(n); model.truncate(n); }
                    _ => { m.append(n).unwrap().fill(fill); model.extend(std::iter::repeat_n(fill, n)); }
                }
                prop_assert_eq!(m.as_slice(), &model[..]);
            }
        }
    }
}
