//! This crate's partial classifiers and flow layouts (ETH, IPv4, UDP, TCP;
//! active and passive) in the classifier's differential harness: random
//! bound and connected UDP sockets, TCP listeners and connections on
//! overlapping ports and addresses, short IP paths, and random frames,
//! valid and changed. The classifier with its flow table must answer as
//! the reference (the tree's semantics, thesis §3.4.3) does at every
//! lookup, the flow table's own answers included.

use pathstack_classify::testing::differential::{tally, Differential};
use pathstack_classify::testing::inet::{ETH, IPV4, TCP, UDP};
use pathstack_classify::testing::ops::{FilterSpec, Op, ADDRS, MAX_PATHS, PORTS};
use pathstack_classify::testing::packet::{PacketSpec, Payload};
use pathstack_classify::PathId;
use pathstack_core::demux::{FlowLayout, Key, KeyMode, PartialClassifier};
use pathstack_inet::wire::{eth, ipv4, tcp, udp};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

/// A wire format's `packet_demux_key`.
type Extract = fn(&[u8], KeyMode) -> Option<(Key, usize)>;

/// A module's partial classifier as the module builds it: its wire
/// format's `packet_demux_key` and flow layouts.
struct Wire {
    extract: Extract,
    active: FlowLayout,
    passive: FlowLayout,
}

impl PartialClassifier for Wire {
    fn extract(&self, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
        (self.extract)(msg, mode)
    }
    fn flow_layout(&self) -> Option<FlowLayout> {
        Some(self.active)
    }
    fn passive_flow_layout(&self) -> Option<FlowLayout> {
        Some(self.passive)
    }
}

fn differential() -> Differential {
    Differential::with_classifiers(|c| {
        let ours = [
            (
                ETH,
                eth::packet_demux_key as Extract,
                eth::FLOW_LAYOUT,
                eth::FLOW_LAYOUT,
            ),
            (
                IPV4,
                ipv4::packet_demux_key,
                ipv4::FLOW_LAYOUT,
                ipv4::PASSIVE_FLOW_LAYOUT,
            ),
            (
                TCP,
                tcp::packet_demux_key,
                tcp::FLOW_LAYOUT,
                tcp::PASSIVE_FLOW_LAYOUT,
            ),
            (
                UDP,
                udp::packet_demux_key,
                udp::FLOW_LAYOUT,
                udp::PASSIVE_FLOW_LAYOUT,
            ),
        ];
        for (m, extract, active, passive) in ours {
            c.set_partial_classifier(
                m,
                Box::new(Wire {
                    extract,
                    active,
                    passive,
                }),
            )
            .expect("small module ids");
        }
    })
}

/// Two addresses and two ports: bound sockets, listeners and connections
/// collide on ports and hosts often.
const POOL: usize = 2;

fn frame() -> impl Strategy<Value = PacketSpec> {
    (
        prop::sample::select(vec![
            Payload::Tcp,
            Payload::Udp,
            Payload::Ip(17),
            Payload::Arp,
        ]),
        prop::sample::select(&ADDRS[..POOL]),
        prop::sample::select(&ADDRS[..POOL]),
        prop::sample::select(&PORTS[..POOL]),
        prop::sample::select(&PORTS[..POOL]),
        prop_oneof![6 => Just(0u8), 1 => 1u8..3],
        0u8..3,
        prop::bool::weighted(0.1),
        prop_oneof![8 => Just(0u16), 1 => 0u16..60],
    )
        .prop_map(
            |(payload, laddr, raddr, lport, rport, ip_options, tcp_options, fragment, truncate)| {
                PacketSpec {
                    payload,
                    laddr,
                    raddr,
                    lport,
                    rport,
                    ip_options,
                    tcp_options,
                    fragment,
                    truncate,
                }
            },
        )
}

/// Registrations and frames, paths active and passive in the ratio
/// `active : passive`. A passive transport path is a bound UDP socket or
/// a TCP listener; an active one a connected socket or a connection.
fn op(active: u32, passive: u32) -> impl Strategy<Value = Op> {
    let mode = prop_oneof![active => Just(KeyMode::Active), passive => Just(KeyMode::Passive)];
    let transport = (
        mode.clone(),
        any::<bool>(),
        prop::sample::select(&ADDRS[..POOL]),
        prop::sample::select(&ADDRS[..POOL]),
        prop::sample::select(&PORTS[..POOL]),
        prop::sample::select(&PORTS[..POOL]),
    )
        .prop_map(
            |(mode, tcp, laddr, raddr, lport, rport)| FilterSpec::Transport {
                mode,
                tcp,
                laddr,
                raddr,
                lport,
                rport,
                counted: false,
            },
        );
    let ip = (
        mode,
        prop::sample::select(vec![1u8, 6, 17]),
        prop::sample::select(&ADDRS[..POOL]),
    )
        .prop_map(|(mode, proto, laddr)| FilterSpec::Ip {
            mode,
            proto,
            laddr,
            raddr: ADDRS[1],
        });
    let filter = prop_oneof![6 => transport, 1 => ip];
    let path = (0..MAX_PATHS).prop_map(PathId);
    // Byte changes aimed at guards, keys, TCP flags and length fields.
    let flips = prop::collection::vec((0u16..64, 1u8..=255), 0..3);
    prop_oneof![
        4 => (path.clone(), filter).prop_map(|(path, filter)| Op::Insert { path, filter }),
        1 => path.prop_map(Op::Remove),
        4 => frame().prop_map(Op::Lookup),
        4 => (frame(), flips).prop_map(|(spec, flips)| Op::LookupMutated { spec, flips }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// Mostly connections and connected sockets, listeners and bound
    /// sockets beside them.
    #[test]
    fn active_and_passive_flows_agree_with_the_reference(ops in prop::collection::vec(op(2, 1), 1..80)) {
        let mut d = differential();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }

    /// Mostly bound sockets and listeners, so that their flows are
    /// shadowed and unshadowed as the few active paths take the
    /// EtherType's first node and leave it.
    #[test]
    fn passive_flows_agree_with_the_reference(ops in prop::collection::vec(op(1, 6), 1..80)) {
        let mut d = differential();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// With passive paths alone the runs above do reach the flow table: bound
/// sockets' and listeners' frames are flow hits (each checked against the
/// reference), not only tree walks.
#[test]
fn bound_sockets_and_listeners_are_flow_hits() {
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(op(0, 1), 40..80);
    let runs = (0..64).map(|_| strategy.new_tree(&mut runner).unwrap().current());
    let (hits, lookups) = tally(runs, differential, |d| d.flow_hits).unwrap();
    assert!(
        hits * 10 > lookups,
        "{hits} flow hits in {lookups} frame lookups"
    );
}

/// With listeners and bound sockets beside connections and connected
/// sockets, the passive flows answer beside the active ones: a frame from
/// a new peer is a flow hit after the active probe missed (each checked
/// against the reference).
#[test]
fn listeners_beside_connections_are_flow_hits() {
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(op(1, 1), 40..80);
    let runs = (0..64).map(|_| strategy.new_tree(&mut runner).unwrap().current());
    let (hits, lookups) = tally(runs, differential, |d| d.shadowed_hits).unwrap();
    assert!(
        hits * 20 > lookups,
        "{hits} passive flow hits beside active flows in {lookups} frame lookups"
    );
}
