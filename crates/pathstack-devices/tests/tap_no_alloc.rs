//! "No allocation per frame", checked with a counting global allocator: the
//! floor responder serving a kernel ping through a captured TAP device must
//! not touch the heap. Needs root (see `common::privileged`).

mod common;

use common::{privileged, TempFile, Topology};
use pathstack_core::{Instant, MsgPool, PoolConfig};
use pathstack_devices::floor::{RawResponder, Served};
use pathstack_devices::{PcapCapture, TapDevice, TapOptions};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Counts allocations made by threads that switched counting on.
struct CountingAlloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards every call unchanged to the system allocator; the
// counting touches only an atomic and a const-initialised thread-local
// without destructor, neither of which allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours, passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours, passed through.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours, passed through.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn serving_frames_through_tap_and_capture_allocates_nothing() {
    if !privileged("serving_frames_through_tap_and_capture_allocates_nothing") {
        return;
    }
    // Self-check: the counter sees an allocation made while counting.
    COUNTING.with(|c| c.set(true));
    drop(std::hint::black_box(Vec::<u8>::with_capacity(8)));
    COUNTING.with(|c| c.set(false));
    assert_eq!(
        ALLOCS.swap(0, Ordering::Relaxed),
        1,
        "counting allocator is not counting"
    );

    let topo = Topology::up();
    let tap = TapDevice::open(topo.var("TAP_A"), TapOptions::new().netns(topo.var("NS_A")))
        .expect("open TAP A");
    let pcap = TempFile::new("no-alloc.pcap");
    let mac = tap.mac();
    let mut dev = PcapCapture::create(tap, &pcap).expect("create pcap");
    let pool = MsgPool::new(PoolConfig::small(16));
    let mut floor = RawResponder::new(mac, topo.var("PS_A_IP").parse().unwrap());

    let mut ping = topo
        .command_in("NS_B", "ping")
        .args(["-c", "5", "-i", "0.2", "-W", "2", topo.var("PS_A_IP")])
        .stdout(Stdio::null())
        .spawn()
        .expect("start ping");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut served = 0u64;
    let status = loop {
        COUNTING.with(|c| c.set(true));
        let r = floor.serve(&mut dev, &pool, Instant::now());
        let ready = dev.inner().wait_readable(Some(Duration::from_millis(20)));
        COUNTING.with(|c| c.set(false));
        match r.expect("serve") {
            Served::Answered(_) => served += 1,
            Served::Idle | Served::Ignored(_) => {}
        }
        ready.expect("wait");
        if let Some(status) = ping.try_wait().expect("ping status") {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "ping did not finish");
    };
    drop(dev);
    assert!(status.success(), "ping through the floor responder failed");
    assert!(floor.stats().icmp_replies >= 5, "{:?}", floor.stats());
    assert!(served >= 6);
    assert_eq!(
        ALLOCS.load(Ordering::Relaxed),
        0,
        "heap allocations while serving frames"
    );
}
