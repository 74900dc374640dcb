//! The EDF demonstration of thesis §5.2.2.2 (`pathstack_tools::edf`, the `edf` tool): eight
//! videos at 10 frames/s and one at 30 on a virtual clock with a fixed
//! processing cost per frame. With EDF and deadlines computed from the
//! output queues no display deadline is missed; with one shared
//! round-robin priority the fast video misses many.

use pathstack_core::Duration;
use pathstack_tools::edf::{simulate, thesis_load, Policy};

#[test]
fn edf_meets_every_deadline_where_round_robin_misses() {
    let videos = thesis_load();
    let last = videos.len() - 1;
    let cost = Duration::from_millis(8);
    let e = simulate(&videos, Policy::Edf, cost).unwrap();
    let r = simulate(&videos, Policy::RoundRobin, cost).unwrap();
    // Every display deadline of the fast video was reached in both runs.
    for o in [&e, &r] {
        assert_eq!(o.shown[last] + o.missed[last], videos[last].frames);
    }
    assert_eq!(e.missed, vec![0; videos.len()], "EDF misses nothing");
    // Round robin gives the fast video a ninth of the CPU while the slow
    // ones' output queues have room: it misses a large share.
    assert!(
        r.missed[last] > videos[last].frames / 5,
        "round robin missed only {} of {}",
        r.missed[last],
        videos[last].frames
    );
    // Deterministic on the virtual clock.
    assert_eq!(simulate(&videos, Policy::RoundRobin, cost).unwrap(), r);
}
