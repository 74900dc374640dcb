//! "No allocation per frame", checked with a counting global allocator: the
//! floor responder serving a kernel ping through a captured TAP device must
//! not touch the heap. Needs root (see `pathstack_testutil::privileged`).

use pathstack_core::{Instant, MsgPool, PoolConfig};
use pathstack_devices::raw_responder::{RawResponder, Served};
use pathstack_devices::{PcapCapture, TapDevice, TapOptions};
use pathstack_testutil::{counting_alloc, privileged, TempFile, Topology};
use std::process::Stdio;
use std::time::Duration;

// Only the measured calls count: counting is switched on around them, on
// this thread only (`counting_alloc::count_on_this_thread`).
#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

#[test]
fn serving_frames_through_tap_and_capture_allocates_nothing() {
    if !privileged("serving_frames_through_tap_and_capture_allocates_nothing") {
        return;
    }
    // Self-check: the counter sees an allocation made while counting.
    counting_alloc::count_on_this_thread(true);
    drop(std::hint::black_box(Vec::<u8>::with_capacity(8)));
    counting_alloc::count_on_this_thread(false);
    assert_eq!(
        counting_alloc::take_thread_allocations(),
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
        counting_alloc::count_on_this_thread(true);
        let r = floor.serve(&mut dev, &pool, Instant::now());
        let ready = dev.inner().wait_readable(Some(Duration::from_millis(20)));
        counting_alloc::count_on_this_thread(false);
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
        counting_alloc::thread_allocations(),
        0,
        "heap allocations while serving frames"
    );
}
