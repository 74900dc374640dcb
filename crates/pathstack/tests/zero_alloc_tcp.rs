//! TCP allocates nothing per segment in steady state: after a warm-up, a
//! bulk transfer between two hosts on the in-memory wire (data one way,
//! ACKs the other, through the socket calls, the connection paths, IP,
//! ARP, ETH and the wire) makes zero heap allocations. The timer wheel is
//! sized when the connection opens; the send and receive rings and the
//! SACK scoreboard grow to the flight's size during the warm-up (issue 28
//! item 3: they start empty) and keep it; segments live in the stack's
//! message pool. The same again with both connection paths
//! path-inlined (`inline::tcp_rule`), then specialized
//! (`inline::tcp_fast_rule`, the PIN form: the fused fast form of the
//! links under TCP).
//!
//! One test in this binary: the allocation counter is process-wide.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::{Duration, Instant};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::inline;
use pathstack::socket::ready;
use pathstack::socket::TcpStream;
use pathstack_testutil::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

/// Moves `bytes` from `c` (on `a`) to `s` (on `b`) on a simulated clock.
fn bulk(a: &mut Host, b: &mut Host, c: &TcpStream, s: &TcpStream, now: &mut Instant, bytes: usize) {
    let chunk = [0x5au8; 16 * 1024];
    let mut buf = [0u8; 16 * 1024];
    let (mut sent, mut got) = (0, 0);
    while got < bytes {
        if sent < bytes {
            let k = (bytes - sent).min(chunk.len());
            if let Some(n) = ready(c.write(a, &chunk[..k])).unwrap() {
                sent += n;
            }
        }
        while let Some(n) = ready(s.read(b, &mut buf)).unwrap() {
            assert!(n > 0, "no EOF expected");
            got += n;
        }
        a.stack_mut().poll(*now);
        b.stack_mut().poll(*now);
        *now = *now + Duration::from_micros(20);
    }
}

/// 16 MB of [`bulk`]: the allocations it made and the data segments it
/// sent.
fn measured_bulk(
    a: &mut Host,
    b: &mut Host,
    c: &TcpStream,
    s: &TcpStream,
    now: &mut Instant,
) -> (u64, u64) {
    let segs_before = a.tcp().stats(c).unwrap().data_segs_out;
    let before = counting_alloc::allocations();
    bulk(a, b, c, s, now, 16 << 20);
    let allocs = counting_alloc::allocations() - before;
    (
        allocs,
        a.tcp().stats(c).unwrap().data_segs_out - segs_before,
    )
}

#[test]
fn bulk_transfer_allocates_nothing_per_segment() {
    let (wa, wb) = memory_pair(MemoryConfig::default());
    // Modular first: the test takes the connection through the forms.
    let host = |cidr: &str, d| {
        let mut c = HostConfig::parse(cidr).unwrap();
        c.specialize = false;
        Host::new(c, d).unwrap()
    };
    let mut a = host("10.0.0.1/24", wa);
    let mut b = host("10.0.0.2/24", wb);
    let l = b.tcp().listen("0.0.0.0:5001", 4).unwrap();
    let c = a.tcp().connect("10.0.0.2:5001").unwrap();
    let mut now = Instant::ZERO + Duration::from_millis(1);
    let s = loop {
        a.stack_mut().poll(now);
        b.stack_mut().poll(now);
        now = now + Duration::from_micros(20);
        if let Some((s, _)) = ready(l.accept(&mut b)).unwrap() {
            break s;
        }
    };
    // Warm-up: ARP resolved, the windows open, every queue at its size.
    bulk(&mut a, &mut b, &c, &s, &mut now, 8 << 20);
    let (allocs, segs) = measured_bulk(&mut a, &mut b, &c, &s, &mut now);
    assert!(segs > 10_000, "{segs} segments measured");
    assert_eq!(allocs, 0, "{allocs} allocations for {segs} data segments");

    // PIN: the same connection with both of its paths inlined — A's by
    // `path_optimize_count` (what a host runs on each connection made),
    // which applies the rules as `path_optimize` does, naming none.
    for (i, (h, st)) in [(&mut a, &c), (&mut b, &s)].into_iter().enumerate() {
        let path = h.tcp().path_id(st).unwrap();
        h.stack_mut()
            .add_rule(inline::tcp_rule::<DriverStage>(DRIVER_SPEC.name));
        if i == 0 {
            assert_eq!(h.stack_mut().path_optimize_count(path).unwrap(), 1);
            assert!(h.stack().path(path).unwrap().is_inlined());
            assert_eq!(h.stack_mut().path_optimize_count(path).unwrap(), 0);
        } else {
            assert_eq!(h.stack_mut().path_optimize(path).unwrap().len(), 1);
        }
    }
    bulk(&mut a, &mut b, &c, &s, &mut now, 1 << 20);
    let (allocs, segs) = measured_bulk(&mut a, &mut b, &c, &s, &mut now);
    assert!(segs > 10_000, "{segs} segments measured (inlined)");
    assert_eq!(
        allocs, 0,
        "{allocs} allocations for {segs} data segments (inlined)"
    );

    // Specialized: the inlined paths with the fast form in front.
    let mut paths = Vec::new();
    for (h, st) in [(&mut a, &c), (&mut b, &s)] {
        let path = h.tcp().path_id(st).unwrap();
        h.stack_mut()
            .add_rule(inline::tcp_fast_rule::<DriverStage>(DRIVER_SPEC.name));
        assert!(!h.stack_mut().path_optimize(path).unwrap().is_empty());
        paths.push(path);
    }
    bulk(&mut a, &mut b, &c, &s, &mut now, 1 << 20);
    let hits = a.stack().path(paths[0]).unwrap().fast_hits().unwrap();
    let (allocs, segs) = measured_bulk(&mut a, &mut b, &c, &s, &mut now);
    assert!(segs > 10_000, "{segs} segments measured (PIN)");
    let after = a.stack().path(paths[0]).unwrap().fast_hits().unwrap();
    assert!(
        after[0] - hits[0] >= segs,
        "the data segments went through the fast form: {hits:?} -> {after:?}"
    );
    assert_eq!(
        allocs, 0,
        "{allocs} allocations for {segs} data segments (PIN)"
    );
}
