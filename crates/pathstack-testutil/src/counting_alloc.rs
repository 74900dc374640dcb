//! A global allocator that counts heap allocations, for the
//! zero-allocation tests.
//!
//! A test binary has one global allocator, and it must be declared in the
//! binary itself; each zero-allocation test is therefore its own test
//! binary (one `#[test]`: the counters are process-wide, and the tests of
//! one binary run on parallel threads) and starts with
//!
//! ```
//! use pathstack_testutil::counting_alloc;
//!
//! #[global_allocator]
//! static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;
//! # fn main() {
//! let before = counting_alloc::allocations();
//! let v = std::hint::black_box(Vec::<u8>::with_capacity(8));
//! assert_eq!(counting_alloc::allocations() - before, 1);
//! # drop(v);
//! # }
//! ```
//!
//! Two counters: [`allocations`] counts every allocation of the process;
//! [`thread_allocations`] counts only those made by threads that switched
//! counting on with [`count_on_this_thread`] (for a test whose harness or
//! helper threads allocate while the measured loop runs).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The counting allocator: forwards every call to [`System`] and counts
/// allocations and reallocations (deallocations are not counted).
pub struct CountingAlloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static THREAD_ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` and without destructor: reading it never allocates and never
    // fails, even while the thread is being torn down.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

impl CountingAlloc {
    fn count(&self) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        if COUNTING.with(Cell::get) {
            THREAD_ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

// SAFETY: forwards every call unchanged to the system allocator; the
// counting touches only atomics and a const-initialised thread-local
// without destructor, neither of which allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.count();
        // SAFETY: same contract as ours, passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with layout `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.count();
        // SAFETY: same contract as ours, passed through.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Heap allocations (and reallocations) made by the process so far.
pub fn allocations() -> u64 {
    ALLOCS.load(Ordering::Relaxed)
}

/// Switches counting for [`thread_allocations`] on or off for the calling
/// thread.
pub fn count_on_this_thread(on: bool) {
    COUNTING.with(|c| c.set(on));
}

/// Allocations made so far by threads while their counting was on
/// ([`count_on_this_thread`]).
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCS.load(Ordering::Relaxed)
}

/// Returns [`thread_allocations`] and resets it to zero.
pub fn take_thread_allocations() -> u64 {
    THREAD_ALLOCS.swap(0, Ordering::Relaxed)
}
