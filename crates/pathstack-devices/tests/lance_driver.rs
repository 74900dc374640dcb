//! The LANCE driver with its chip, two adapters joined by the in-memory
//! wire: frames round-trip unchanged over any buffer size, errors are
//! counted with reasons, and the `copy` and `direct` strategies produce the
//! same traffic and the same shared-memory contents while `direct` touches
//! fewer descriptor words.

use pathstack_core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack_core::device::record::{Recorder, Recording};
use pathstack_core::device::{Device, DeviceCaps, DeviceError, DeviceStats};
use pathstack_core::{Instant, Msg, MsgPool, PoolConfig};
use pathstack_devices::lance::driver::{LanceDropReason, RxEvent, DEFAULT_MAC};
use pathstack_devices::lance::sparse::{Cpu, Dma};
use pathstack_devices::lance::{Access, ChipConfig, LanceConfig, LanceDriver};
use proptest::prelude::*;

/// Two drivers on one wire, with what each put on the wire.
struct Link {
    a: LanceDriver,
    b: LanceDriver,
    sent_a: Recording,
    pool: MsgPool,
    now: Instant,
}

impl Link {
    fn new(config: LanceConfig) -> Self {
        let (wa, wb) = memory_pair(MemoryConfig::default());
        let (wa, sent_a) = Recorder::new(wa, 100_000);
        let pool = MsgPool::new(PoolConfig::default());
        let mut a = LanceDriver::new(Box::new(wa), config).unwrap();
        let mut b = LanceDriver::new(Box::new(wb), config).unwrap();
        a.start(&pool, Instant::ZERO).unwrap();
        b.start(&pool, Instant::ZERO).unwrap();
        Link {
            a,
            b,
            sent_a,
            pool,
            now: Instant::ZERO,
        }
    }

    /// Polls `b` until it has nothing more; returns its frames and drops.
    fn drain_b(&mut self) -> (Vec<Vec<u8>>, Vec<LanceDropReason>) {
        let mut frames = Vec::new();
        let mut drops = Vec::new();
        for _ in 0..1000 {
            let n = self.b.poll(&self.pool, self.now, 64, &mut |ev| match ev {
                RxEvent::Frame(m) => frames.push(m.as_slice().to_vec()),
                RxEvent::Drop(r) => drops.push(r),
            });
            if n == 0 {
                break;
            }
        }
        (frames, drops)
    }

    fn poll_a(&mut self) -> Vec<LanceDropReason> {
        let mut drops = Vec::new();
        self.a.poll(&self.pool, self.now, 64, &mut |ev| {
            if let RxEvent::Drop(r) = ev {
                drops.push(r)
            }
        });
        drops
    }
}

fn config(access: Access, buf_size: usize) -> LanceConfig {
    LanceConfig {
        access,
        buf_size,
        rx_ring: 32,
        tx_ring: 32,
        ..LanceConfig::default()
    }
}

/// A frame to the receiver's address (the wire's end B) of `len` bytes.
fn frame(len: usize, fill: u8) -> Vec<u8> {
    let mut f = MemoryConfig::default().mac_b.to_vec();
    f.extend_from_slice(&MemoryConfig::default().mac_a);
    f.extend_from_slice(&[0x88, 0xb5]);
    while f.len() < len {
        f.push(fill.wrapping_mul(31).wrapping_add(f.len() as u8));
    }
    f.truncate(len);
    f
}

#[test]
fn station_address_comes_from_the_wire_side_or_the_default() {
    let link = Link::new(config(Access::Direct, 1536));
    assert_eq!(link.a.mac(), MemoryConfig::default().mac_a);
    assert_eq!(link.a.chip().padr(), MemoryConfig::default().mac_a);
    struct NoMac(MemoryEnd);
    impl Device for NoMac {
        fn transmit(&mut self, f: Msg, now: Instant) -> Result<(), DeviceError> {
            self.0.transmit(f, now)
        }
        fn receive(&mut self, p: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
            self.0.receive(p, now)
        }
        fn caps(&self) -> DeviceCaps {
            DeviceCaps {
                mac: None,
                ..self.0.caps()
            }
        }
        fn stats(&self) -> DeviceStats {
            self.0.stats()
        }
    }
    let (w, _other) = memory_pair(MemoryConfig::default());
    let d = LanceDriver::new(Box::new(NoMac(w)), LanceConfig::default()).unwrap();
    assert_eq!(d.mac(), DEFAULT_MAC);
}

#[test]
fn bad_ring_sizes_are_refused_with_the_reason() {
    let (w, _other) = memory_pair(MemoryConfig::default());
    let e = LanceDriver::new(
        Box::new(w),
        LanceConfig {
            rx_ring: 24,
            ..LanceConfig::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("24") && e.contains("2^n"), "{e}");
}

#[test]
fn transmit_before_start_is_refused() {
    let (w, _other) = memory_pair(MemoryConfig::default());
    let pool = MsgPool::new(PoolConfig::small(4));
    let mut d = LanceDriver::new(Box::new(w), LanceConfig::default()).unwrap();
    assert_eq!(
        d.transmit(&frame(60, 1), &pool, Instant::ZERO),
        Err(LanceDropReason::TxDown)
    );
}

#[test]
fn frames_cross_in_both_directions_many_times_around_the_rings() {
    for access in [Access::Copy, Access::Direct] {
        let mut link = Link::new(LanceConfig {
            rx_ring: 4,
            tx_ring: 4,
            ..config(access, 1536)
        });
        let mut want = Vec::new();
        for i in 0..50u8 {
            let f = frame(60 + usize::from(i) * 7, i);
            link.a.transmit(&f, &link.pool, link.now).unwrap();
            want.push(f);
            if i % 3 == 2 {
                let (got, drops) = link.drain_b();
                assert!(drops.is_empty(), "{drops:?}");
                assert_eq!(got, std::mem::take(&mut want), "{access}");
                assert!(link.poll_a().is_empty());
            }
        }
        let (got, _) = link.drain_b();
        assert_eq!(got, want);
        // And back.
        let mut back = frame(100, 9);
        back[..6].copy_from_slice(&MemoryConfig::default().mac_a);
        link.b.transmit(&back, &link.pool, link.now).unwrap();
        let mut got = Vec::new();
        link.a.poll(&link.pool, link.now, 64, &mut |ev| {
            if let RxEvent::Frame(m) = ev {
                got.push(m.as_slice().to_vec());
            }
        });
        assert_eq!(got, vec![back]);
        assert_eq!(link.a.stats().tx_frames, 50);
        assert_eq!(link.b.stats().rx_frames, 50);
    }
}

#[test]
fn frame_larger_than_the_transmit_ring_is_ring_full() {
    let mut link = Link::new(LanceConfig {
        rx_ring: 32,
        tx_ring: 2,
        ..config(Access::Direct, 64)
    });
    // 3 buffers of 64 needed, the ring has 2.
    assert_eq!(
        link.a.transmit(&frame(150, 1), &link.pool, link.now),
        Err(LanceDropReason::TxRingFull)
    );
    assert_eq!(link.a.stats().tx_ring_full, 1);
    // Two buffers fit, and fit again once reclaimed.
    for i in 0..5 {
        link.a
            .transmit(&frame(128, i), &link.pool, link.now)
            .unwrap();
    }
    assert_eq!(link.drain_b().0.len(), 5);
}

#[test]
fn too_long_and_empty_frames_are_refused() {
    let mut link = Link::new(config(Access::Copy, 1536));
    assert_eq!(
        link.a.transmit(&frame(1515, 1), &link.pool, link.now),
        Err(LanceDropReason::TxTooLong)
    );
    assert_eq!(
        link.a.transmit(&[], &link.pool, link.now),
        Err(LanceDropReason::TxEmpty)
    );
    link.a
        .transmit(&frame(1514, 1), &link.pool, link.now)
        .unwrap();
    assert_eq!(link.drain_b().0, vec![frame(1514, 1)]);
    assert_eq!(link.a.stats().tx_refused, 2);
}

#[test]
fn missing_heartbeat_is_counted_as_cerr_and_the_frame_still_arrives() {
    let mut link = Link::new(LanceConfig {
        chip: ChipConfig { heartbeat: false },
        ..config(Access::Direct, 1536)
    });
    link.a
        .transmit(&frame(60, 2), &link.pool, link.now)
        .unwrap();
    assert_eq!(link.poll_a(), vec![LanceDropReason::Cerr]);
    assert_eq!(link.a.stats().cerr, 1);
    assert_eq!(link.drain_b().0.len(), 1);
}

#[test]
fn frame_too_big_for_the_receive_ring_is_an_rx_error_and_traffic_goes_on() {
    let mut link = Link::new(LanceConfig {
        rx_ring: 4,
        tx_ring: 8,
        ..config(Access::Copy, 64)
    });
    link.a
        .transmit(&frame(400, 3), &link.pool, link.now)
        .unwrap();
    link.a
        .transmit(&frame(100, 4), &link.pool, link.now)
        .unwrap();
    let (got, drops) = link.drain_b();
    assert_eq!(drops, vec![LanceDropReason::RxError]);
    assert_eq!(got, vec![frame(100, 4)]);
    assert_eq!(link.b.stats().rx_errors, 1);
    assert_eq!(link.b.chip_stats().rx_buffer_errors, 1);
}

#[test]
fn frames_for_other_stations_are_filtered_unless_promiscuous() {
    let mut f = frame(60, 5);
    f[..6].copy_from_slice(&[0x02, 9, 9, 9, 9, 9]);
    let mut link = Link::new(config(Access::Direct, 1536));
    link.a.transmit(&f, &link.pool, link.now).unwrap();
    assert!(link.drain_b().0.is_empty());
    assert_eq!(link.b.chip_stats().filtered, 1);
    let mut link = Link::new(LanceConfig {
        promiscuous: true,
        ..config(Access::Direct, 1536)
    });
    link.a.transmit(&f, &link.pool, link.now).unwrap();
    assert_eq!(link.drain_b().0, vec![f]);
}

#[test]
fn stop_then_start_again_carries_traffic() {
    let mut link = Link::new(config(Access::Copy, 1536));
    link.a
        .transmit(&frame(60, 6), &link.pool, link.now)
        .unwrap();
    assert_eq!(link.drain_b().0.len(), 1);
    link.b.stop();
    assert!(!link.b.is_running());
    link.a
        .transmit(&frame(61, 7), &link.pool, link.now)
        .unwrap();
    assert!(link.drain_b().0.is_empty(), "a stopped chip takes nothing");
    link.b.start(&link.pool, link.now).unwrap();
    // The frame waited on the wire (it has a queue, a real cable has not).
    assert_eq!(link.drain_b().0, vec![frame(61, 7)]);
    assert_eq!(link.b.chip_stats().inits, 2);
}

/// Runs the same traffic over a link with `access`; returns what went on
/// the wire, what arrived, the final shared memory of both ends, and the
/// descriptor words each driver read and wrote.
fn run_traffic(access: Access, frames: &[Vec<u8>], buf: usize) -> Trace {
    let mut link = Link::new(LanceConfig {
        rx_ring: 8,
        tx_ring: 8,
        promiscuous: true,
        ..config(access, buf)
    });
    let mut received = Vec::new();
    for chunk in frames.chunks(3) {
        for f in chunk {
            link.a.transmit(f, &link.pool, link.now).unwrap();
        }
        received.extend(link.drain_b().0);
        link.poll_a();
    }
    let sent = link.sent_a.frames();
    let words = |d: &LanceDriver| {
        let c = d.memory().counts::<Cpu>();
        c.word_reads + c.word_writes
    };
    Trace {
        sent,
        received,
        mem_a: link.a.memory().cpu_bytes().to_vec(),
        mem_b: link.b.memory().cpu_bytes().to_vec(),
        dma_words: link.a.memory().counts::<Dma>().word_reads
            + link.b.memory().counts::<Dma>().word_reads,
        cpu_words: words(&link.a) + words(&link.b),
    }
}

struct Trace {
    sent: Vec<Vec<u8>>,
    received: Vec<Vec<u8>>,
    mem_a: Vec<u8>,
    mem_b: Vec<u8>,
    dma_words: u64,
    cpu_words: u64,
}

#[test]
fn copy_and_direct_make_identical_traffic_and_memory_but_direct_touches_fewer_words() {
    let frames: Vec<Vec<u8>> = (0..40u8)
        .map(|i| frame(14 + usize::from(i) * 37 % 1500, i))
        .collect();
    let copy = run_traffic(Access::Copy, &frames, 256);
    let direct = run_traffic(Access::Direct, &frames, 256);
    assert_eq!(copy.sent, frames);
    assert_eq!(copy.received, frames);
    assert_eq!(direct.sent, copy.sent);
    assert_eq!(direct.received, copy.received);
    assert!(copy.mem_a == direct.mem_a, "sender memory differs");
    assert!(copy.mem_b == direct.mem_b, "receiver memory differs");
    assert_eq!(copy.dma_words, direct.dma_words, "the chip works the same");
    assert!(
        direct.cpu_words * 2 < copy.cpu_words,
        "direct {} vs copy {} descriptor words",
        direct.cpu_words,
        copy.cpu_words
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_frames_round_trip(
        lens in proptest::collection::vec(1usize..=1514, 1..12),
        seed in any::<u8>(),
        buf_pick in 0usize..4,
        direct in any::<bool>(),
    ) {
        let buf = [64, 128, 512, 1536][buf_pick];
        let access = if direct { Access::Direct } else { Access::Copy };
        let mut link = Link::new(LanceConfig {
            rx_ring: 64,
            tx_ring: 128,
            promiscuous: true,
            ..config(access, buf)
        });
        let frames: Vec<Vec<u8>> = lens
            .iter()
            .enumerate()
            .map(|(i, &l)| (0..l).map(|k| (k as u8) ^ seed ^ (i as u8)).collect())
            .collect();
        let mut got = Vec::new();
        for f in &frames {
            match link.a.transmit(f, &link.pool, link.now) {
                Ok(()) => {}
                Err(LanceDropReason::TxRingFull) => {
                    got.extend(link.drain_b().0);
                    link.poll_a();
                    link.a.transmit(f, &link.pool, link.now).unwrap();
                }
                Err(r) => panic!("{r:?}"),
            }
        }
        let (rest, drops) = link.drain_b();
        got.extend(rest);
        prop_assert!(drops.is_empty(), "{:?}", drops);
        prop_assert_eq!(got, frames);
    }
}
