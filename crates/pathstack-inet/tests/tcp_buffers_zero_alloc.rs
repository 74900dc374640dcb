//! The TCP send and receive buffers allocate nothing from the heap once
//! constructed: a bulk transfer through them, with segments reordered,
//! duplicated and dropped (out-of-order queue, SACK and D-SACK blocks,
//! window updates, acknowledgments, retransmission peeks), makes zero
//! allocations after warm-up.
//!
//! One test in this binary (the global allocator is the binary's).

use pathstack_inet::tcp::{RecvBuffer, RecvConfig, SendBuffer, SeqNumber};
use pathstack_testutil::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

const MSS: usize = 1000;

/// One round: the sender writes, "transmits" four segments in the order
/// 1, 3, 2 (dup of 1), 0, 3 and the receiver reads and acknowledges.
fn round(tx: &mut SendBuffer, rx: &mut RecvBuffer, app: &[u8], seg: &mut [u8], sink: &mut [u8]) {
    let written = tx.write(app);
    assert_eq!(written, app.len());
    let una = tx.una();
    for i in [1usize, 3, 2, 1, 0, 3] {
        let (a, b) = tx.peek(i * MSS, MSS);
        let n = a.len() + b.len();
        seg[..a.len()].copy_from_slice(a);
        seg[a.len()..n].copy_from_slice(b);
        rx.insert(una + (i * MSS) as u32, &seg[..n]);
        let mut blocks = [(0, 0); 4];
        let _ = rx.sack_blocks(&mut blocks);
    }
    let mut total = 0;
    loop {
        let n = rx.read(sink);
        if n == 0 {
            break;
        }
        total += n;
    }
    assert_eq!(total, app.len());
    let _ = rx.window_field();
    assert_eq!(tx.ack_to(rx.rcv_nxt()), app.len());
}

#[test]
fn bulk_transfer_through_the_buffers_allocates_nothing() {
    let isn = SeqNumber(u32::MAX - 10_000); // the sequence space wraps
    let mut tx = SendBuffer::new(64 * 1024, isn);
    let cfg = RecvConfig {
        capacity: 64 * 1024,
        mss: MSS as u32,
        window_shift: 2,
        ..RecvConfig::default()
    };
    let mut rx = RecvBuffer::new(cfg, isn);
    let app: Vec<u8> = (0..4 * MSS).map(|i| i as u8).collect();
    let mut seg = vec![0u8; MSS];
    let mut sink = vec![0u8; 1500];
    for _ in 0..100 {
        round(&mut tx, &mut rx, &app, &mut seg, &mut sink);
    }
    // Counted on this thread only: the test harness's own threads may
    // allocate meanwhile.
    counting_alloc::take_thread_allocations();
    counting_alloc::count_on_this_thread(true);
    for _ in 0..2_000 {
        round(&mut tx, &mut rx, &app, &mut seg, &mut sink);
    }
    counting_alloc::count_on_this_thread(false);
    let allocs = counting_alloc::take_thread_allocations();
    assert_eq!(allocs, 0, "{allocs} allocations over 2,000 rounds");
    assert!(rx.stats().duplicates > 0);
}
