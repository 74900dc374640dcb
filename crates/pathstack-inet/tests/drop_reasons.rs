//! The drop reasons of the Internet layers: dense indices, and qualified
//! names unique across every enum, since the stack's drop tables count by
//! qualified name and two layers sharing one would merge their counters.

use pathstack_core::drop_reason::Reason;
use pathstack_inet::arp::cache::ResolutionDropReason;
use pathstack_inet::ip::icmp_suppression::ErrorSuppressed;
use pathstack_inet::ip::reassembly::ReassemblyDropReason;
use pathstack_inet::wire::arp::ArpDropReason;
use pathstack_inet::wire::icmp::IcmpDropReason;
use pathstack_inet::wire::tcp::TcpDropReason;
use pathstack_inet::wire::udp::UdpDropReason;
use pathstack_inet::{EthDropReason, Ipv4DropReason};
use std::collections::HashSet;

fn names<R: Reason>() -> Vec<&'static str> {
    for (i, r) in R::ALL.iter().enumerate() {
        assert_eq!(r.index(), i, "{r:?}");
        assert!(r.qualified_name().ends_with(r.as_str()), "{r:?}");
    }
    R::ALL.iter().map(|r| r.qualified_name()).collect()
}

#[test]
fn qualified_names_are_unique_across_layers() {
    let all = [
        names::<EthDropReason>(),
        names::<ArpDropReason>(),
        names::<ResolutionDropReason>(),
        names::<Ipv4DropReason>(),
        names::<ReassemblyDropReason>(),
        names::<IcmpDropReason>(),
        names::<ErrorSuppressed>(),
        names::<UdpDropReason>(),
        names::<TcpDropReason>(),
    ]
    .concat();
    let mut seen = HashSet::new();
    for n in &all {
        assert!(seen.insert(n), "duplicate drop reason name {n}");
    }
}

#[test]
fn names_statistics_key_on_are_stable() {
    assert_eq!(Ipv4DropReason::NoRoute.qualified_name(), "ipv4.no_route");
    assert_eq!(UdpDropReason::NoPort.qualified_name(), "udp.no_port");
    assert_eq!(
        ResolutionDropReason::ResolutionFailed.qualified_name(),
        "arp.resolution_failed"
    );
    assert_eq!(
        ErrorSuppressed::Broadcast.qualified_name(),
        "icmp.error_suppressed.broadcast"
    );
}
