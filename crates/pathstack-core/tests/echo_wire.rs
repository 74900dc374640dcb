//! End to end over the in-memory wire: classification, the synthetic path,
//! inlined versus modular executors, and both schedulers.

use pathstack_core::synthetic::{EchoPair, HdrDropReason};
use pathstack_core::*;

fn run(sched: SchedKind, inline: bool) -> (Vec<Vec<u8>>, EchoPair) {
    let mut pair = EchoPair::new(sched, inline).unwrap();
    let mut replies = Vec::new();
    for i in 0..50u32 {
        let payload: Vec<u8> = (0..(i as usize * 13 % 300))
            .map(|j| (j as u32 * 7 + i) as u8)
            .collect();
        let burst = 1 + (i as usize % 5);
        let n = pair.round_trip(&payload, burst, |r| replies.push(r.to_vec()));
        assert_eq!(n, burst, "every message of round {i} came back");
    }
    (replies, pair)
}

#[test]
fn echo_round_trips_over_the_wire() {
    let (replies, pair) = run(SchedKind::PerMessage, false);
    assert_eq!(replies.len(), (0..50).map(|i| 1 + i % 5).sum::<usize>());
    let server = pair.server.path(pair.server_path).unwrap();
    assert_eq!(
        server.stats().msgs_in[Dir::Up.index()] as usize,
        replies.len()
    );
    assert!(server.stats().drops.total() == 0);
    assert!(!server.is_inlined());
}

#[test]
fn inlined_and_modular_paths_give_byte_identical_output() {
    for sched in [SchedKind::PerMessage, SchedKind::Ldlp { batch: 8 }] {
        let (std_out, _) = run(sched, false);
        let (pin_out, pair) = run(sched, true);
        assert!(pair.client.path(pair.client_path).unwrap().is_inlined());
        assert!(pair.server.path(pair.server_path).unwrap().is_inlined());
        assert_eq!(std_out, pin_out, "{sched}");
    }
}

#[test]
fn corrupted_frames_are_dropped_with_a_reason() {
    let mut pair = EchoPair::new(SchedKind::PerMessage, false).unwrap();
    // A frame with the right channel but a bad HDR checksum: inject it at
    // the server path's device end.
    let mut m = pair.server.pool().alloc_copy(b"payload").unwrap();
    let sum = pathstack_core::synthetic::internet_checksum(m.as_slice()) ^ 0xffff;
    let h = m.push(8).unwrap();
    h.copy_from_slice(&[2, 0, 0, 7, (sum >> 8) as u8, sum as u8, 0, 0]);
    let h = m.push(8).unwrap();
    h.copy_from_slice(&[1, 0, 0, 15, 0, 0, 0, 0]);
    m.push(4).unwrap().copy_from_slice(&[0, 7, 0, 23]); // LINK: channel 7
                                                        // It runs at once, and the send says why it went no further.
    let sent = pair.server.send(pair.server_path, Dir::Up, m);
    assert!(
        matches!(sent, Err(SendError::Dropped(r)) if r == HdrDropReason::BadChecksum),
        "{sent:?}"
    );
    pair.server.poll(Instant::ZERO);
    let drops = &pair.server.path(pair.server_path).unwrap().stats().drops;
    assert_eq!(drops.total(), 1);
    assert_eq!(drops.get(HdrDropReason::BadChecksum), 1, "{drops:?}");
}

/// The `DRIVER` stage transmits on the device its module names with
/// `Module::device_mut` (no `Any` downcast per frame): every frame the
/// client's path sent down is one the device counted, on both forms.
#[test]
fn the_wire_stage_transmits_on_its_modules_device() {
    use pathstack_core::device::DriverModule;
    for inline in [false, true] {
        let (replies, mut pair) = run(SchedKind::PerMessage, inline);
        let wire = pair.client.module_id("wire").unwrap();
        let sent = pair.client.path(pair.client_path).unwrap().stats().msgs_in[Dir::Down.index()];
        let m = pair.client.module_mut::<DriverModule>(wire).unwrap();
        assert_eq!(m.device_stats().tx_frames, sent, "inline {inline}");
        assert_eq!(sent as usize, replies.len());
        assert!(Module::device_mut(m).is_some());
    }
    // A module that is not a driver has no device to offer.
    let mut pair = EchoPair::new(SchedKind::PerMessage, false).unwrap();
    let echo = pair.client.module_id("echo").unwrap();
    let m = pair
        .client
        .module_mut::<pathstack_core::synthetic::EchoModule>(echo)
        .unwrap();
    assert!(Module::device_mut(m).is_none());
}
