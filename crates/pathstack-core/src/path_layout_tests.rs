//! What one path costs in the path table, part by part (issue 28 item 4:
//! a million idle connections are a million paths, each a slot of the
//! table, `Slab<Option<Path>>`, grown by doubling). The size is pinned so
//! that a field added to every path is a decision, not an accident.
//!
//! `cargo test -p pathstack-core --lib path_layout -- --nocapture`

use crate::admission::Reservation;
use crate::attrs::Attrs;
use crate::path::{Path, PathStats};
use crate::path_queues::PathQueues;
use crate::rate::EventRate;
use crate::sched::SchedParams;
use crate::stage_view::StageView;
use std::mem::size_of;

#[test]
fn path_layout() {
    let parts: [(&str, usize); 8] = [
        ("Path (all of it)", size_of::<Path>()),
        ("  StageView", size_of::<StageView>()),
        ("    Attrs", size_of::<Attrs>()),
        ("    SchedParams", size_of::<SchedParams>()),
        (
            "  PathQueues (bounds; queues boxed)",
            size_of::<PathQueues>(),
        ),
        ("  PathStats", size_of::<PathStats>()),
        ("  Reservation", size_of::<Reservation>()),
        ("  EventRate (boxed, PathDeadline)", size_of::<EventRate>()),
    ];
    for (name, size) in parts {
        println!("{name:<36} {size:>6} B");
    }
    // 696 octets before the deadline's state, the device match and the
    // class name went out of line, 544 before the source queues and the
    // refusal counters went into a box made on first use (issue 28 item 4).
    assert!(size_of::<Path>() <= 448, "{}", size_of::<Path>());
}
