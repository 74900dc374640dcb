//! What one connection end's control block costs, part by part (issue 28
//! item 4: the goal is ≤ 2 KB per idle connection end, all of it — the
//! control block, its rings, the path and its stages, the classifier
//! entry, the socket table's slot). This prints the control block's share;
//! `tcp_million` (pathstack-tools) measures the rest on whole hosts.
//!
//! `cargo test -p pathstack-inet --lib layout -- --ignored --nocapture`

use super::Tcb;
use crate::tcp::config::TcpConfig;
use crate::tcp::congestion::AnyCongestion;
use crate::tcp::rack::{Rack, Tlp};
use crate::tcp::recovery::Recovery;
use crate::tcp::recv_buffer::RecvBuffer;
use crate::tcp::rto::RtoEstimator;
use crate::tcp::sack_scoreboard::Scoreboard;
use crate::tcp::send_buffer::SendBuffer;
use crate::tcp::seq::SeqNumber;
use crate::tcp::timers::Timers;
use crate::tcp::TcpStats;
use crate::wire::tcp::TcpRepr;
use pathstack_core::time::Instant;
use std::mem::size_of;

/// The heap octets an idle established connection's parts hold beyond
/// the control block itself: the rings' allocations and the scoreboard's.
fn idle_heap(t: &Tcb) -> usize {
    t.snd.allocated() + t.rcv.allocated() + t.sb.allocated_bytes()
}

#[test]
#[ignore = "a measurement: prints the control block's layout"]
fn control_block_layout() {
    let parts: [(&str, usize); 16] = [
        ("Tcb (all of it)", size_of::<Tcb>()),
        (
            "  Arc<TcpConfig> (shared)",
            size_of::<std::sync::Arc<TcpConfig>>(),
        ),
        ("  (TcpConfig itself)", size_of::<TcpConfig>()),
        ("  SendBuffer", size_of::<SendBuffer>()),
        ("  RecvBuffer", size_of::<RecvBuffer>()),
        ("  Scoreboard", size_of::<Scoreboard>()),
        ("  Recovery (with PRR)", size_of::<Recovery>()),
        ("  AnyCongestion", size_of::<AnyCongestion>()),
        ("  RtoEstimator", size_of::<RtoEstimator>()),
        ("  Rack", size_of::<Rack>()),
        ("  Tlp", size_of::<Tlp>()),
        ("  Timers", size_of::<Timers>()),
        (
            "  Counters (rare ones boxed)",
            size_of::<super::counters::Counters>(),
        ),
        ("  (TcpStats, all)", size_of::<TcpStats>()),
        (
            "  Option<Box<TcpRepr>> (rst_out)",
            size_of::<Option<Box<TcpRepr>>>(),
        ),
        ("  Instant", size_of::<Instant>()),
    ];
    for (name, size) in parts {
        println!("{name:<32} {size:>6} B");
    }
    let (a, b, _) = super::tests::established(TcpConfig::default());
    println!(
        "{:<32} {:>6} B",
        "heap, established, active end",
        idle_heap(&a)
    );
    println!(
        "{:<32} {:>6} B",
        "heap, established, passive end",
        idle_heap(&b)
    );
    let t = Tcb::connect(TcpConfig::default(), 1, 2, SeqNumber(7), 0, Instant::ZERO);
    println!("{:<32} {:>6} B", "heap, SYN-SENT", idle_heap(&t));
}

/// An idle established connection has made none of its cold state: no
/// rare counters, no receive drop counters. The handshake goes the
/// general way through both; making either would cost every one of a
/// million idle ends its box (issue 28 item 4).
#[test]
fn an_idle_established_connection_makes_no_cold_state() {
    let (a, b, _) = super::tests::established(TcpConfig::default());
    for t in [&a, &b] {
        assert!(t.stats.rare_ref().is_none(), "rare counters made");
        assert!(t.rcv.stats_made().is_none(), "receive drop counters made");
        assert_eq!(t.recv_stats(), Default::default());
    }
}

/// The control block's size, bounded so that a field added inline shows
/// here (issue 28 item 4: 1,360 octets before its cold parts went into
/// boxes and its configuration was shared, 944 after).
#[test]
fn control_block_stays_small() {
    let n = size_of::<Tcb>();
    assert!(n <= 960, "Tcb is {n} octets");
}
