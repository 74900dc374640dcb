//! The flow table in front of the demux tree: one probe for an established
//! path's message, always the tree's (and the reference's) answer, kept
//! consistent through registrations, removals and longer paths.

use pathstack_classify::testing::differential::{tally, Differential};
use pathstack_classify::testing::inet::{self, ETH, IPV4, MIX, TCP, UDP};
use pathstack_classify::testing::ops::{FilterSpec, Op, ADDRS, MAX_PATHS, PORTS};
use pathstack_classify::testing::packet::{PacketSpec, Payload};
use pathstack_classify::{
    Classifier, Footprint, Key, KeyMode, Level, ModuleId, PartialClassifier, PathId, Trace,
    TraceLevel,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

const LOCAL: [u8; 4] = [192, 12, 69, 168];
const REMOTE: [u8; 4] = [18, 181, 0, 21];

fn classifier() -> Classifier {
    let mut c = Classifier::new();
    inet::install(&mut c);
    c
}

fn transport(mode: KeyMode, tcp: bool, lport: u16, rport: u16) -> FilterSpec {
    FilterSpec::Transport {
        mode,
        tcp,
        laddr: LOCAL,
        raddr: REMOTE,
        lport,
        rport,
        counted: false,
    }
}

fn insert(c: &mut Classifier, p: u32, f: &FilterSpec) {
    c.insert(PathId(p), f.mode(), &f.levels()).unwrap();
}

/// An established UDP socket's and TCP connection's frames take one probe
/// (a listener beside them changes nothing); frames the layouts do not
/// describe take the flow probe and then the tree's walk, and still reach
/// the tree's path.
#[test]
fn one_probe_for_an_established_path() {
    let mut c = classifier();
    insert(&mut c, 1, &transport(KeyMode::Passive, false, 21, 0));
    insert(&mut c, 2, &transport(KeyMode::Active, false, 21, 3949));
    insert(&mut c, 3, &transport(KeyMode::Active, true, 80, 3949));
    insert(&mut c, 4, &transport(KeyMode::Passive, true, 80, 0));
    assert_eq!(c.flow_count(), 4, "the two active paths and both listeners");

    // UDP and TCP flows' keys are gathered from the same spans: one
    // table, one probe for either.
    let udp = PacketSpec::udp(LOCAL, 21, REMOTE, 3949);
    assert_eq!(c.classify_probes(ETH, &udp.build()), (Some(PathId(2)), 1));
    let tcp = PacketSpec::tcp(LOCAL, 80, REMOTE, 3949);
    assert_eq!(c.classify_probes(ETH, &tcp.build()), (Some(PathId(3)), 1));
    // TCP options (timestamps, say) do not move the ports: still one probe.
    let with_options = PacketSpec {
        tcp_options: 3,
        ..tcp
    };
    assert_eq!(
        c.classify_probes(ETH, &with_options.build()),
        (Some(PathId(3)), 1)
    );
    // IPv4 options: the flow probes miss (the active gather's, then the
    // two passive gathers'), the tree walks ETH, IP, UDP.
    let ip_options = PacketSpec {
        ip_options: 2,
        ..udp
    };
    assert_eq!(
        c.classify_probes(ETH, &ip_options.build()),
        (Some(PathId(2)), 1 + 2 + 3)
    );
    // A fragment ends at IP in the tree, where no path ends: nothing.
    let fragment = PacketSpec {
        fragment: true,
        ..udp
    };
    assert_eq!(c.classify(ETH, &fragment.build()), None);
    assert_eq!(c.classify_flow(ETH, &fragment.build()), None);
    // A truncated TCP header (its data offset, 32 bytes, reaches beyond
    // the frame): the tree's walk fails at TCP, where the listener is too.
    let mut cut = with_options.build();
    cut.truncate(14 + 20 + 28);
    assert_eq!(c.classify_flow(ETH, &cut), None);
    assert_eq!(c.classify(ETH, &cut), None);
    // Another remote port: the bound socket, found by its passive flow
    // after the active flows' probe missed (at most one probe more per
    // passive gather: UDP's and TCP's passive windows differ).
    let other = PacketSpec::udp(LOCAL, 21, REMOTE, 3950).build();
    let (found, probes) = c.classify_probes(ETH, &other);
    assert_eq!(found, Some(PathId(1)));
    assert!((2..=3).contains(&probes), "{probes} probes");
    assert_eq!(c.classify_flow(ETH, &other), Some(PathId(1)));
}

/// A flow's trace is the tree's: each level's module, offset and length.
#[test]
fn flow_hits_trace_like_the_walk() {
    let mut c = classifier();
    insert(&mut c, 3, &transport(KeyMode::Active, true, 80, 3949));
    let f = PacketSpec {
        tcp_options: 3,
        ip_options: 0,
        ..PacketSpec::tcp(LOCAL, 80, REMOTE, 3949)
    }
    .build();
    let mut t = Trace::new();
    assert_eq!(c.classify_traced(ETH, &f, &mut t), Some(PathId(3)));
    let lv = |module, offset, len| TraceLevel {
        module,
        offset,
        len,
    };
    assert_eq!(
        t.levels(),
        [lv(ETH, 0, 14), lv(IPV4, 14, 20), lv(TCP, 34, 32)]
    );
    assert_eq!(t.mode(), Some(KeyMode::Active));
}

/// A path with a longer active path below its last level is no flow while
/// that path lives: a message for the longer one must reach it.
#[test]
fn a_longer_path_takes_the_shorter_one_out() {
    let mix = |keys: &[u8]| -> Vec<Level> {
        keys.iter()
            .map(|&k| Level::demux(MIX, Key::from_array([k])))
            .collect()
    };
    for longer_first in [false, true] {
        let mut c = classifier();
        let (short, long) = (mix(&[1]), mix(&[1, 2]));
        if longer_first {
            c.insert(PathId(2), KeyMode::Active, &long).unwrap();
            c.insert(PathId(1), KeyMode::Active, &short).unwrap();
        } else {
            c.insert(PathId(1), KeyMode::Active, &short).unwrap();
            assert_eq!(c.flow_count(), 1);
            c.insert(PathId(2), KeyMode::Active, &long).unwrap();
        }
        c.check_invariants().unwrap();
        assert_eq!(c.flow_count(), 1, "only the longer path is a flow");
        assert_eq!(c.classify(MIX, &[1, 2]), Some(PathId(2)));
        assert_eq!(c.classify(MIX, &[1, 3]), Some(PathId(1)));
        assert_eq!(c.classify_flow(MIX, &[1, 3]), None);
        c.remove(PathId(2)).unwrap();
        c.check_invariants().unwrap();
        assert_eq!(c.flow_count(), 1, "the shorter path is a flow again");
        assert_eq!(c.classify_probes(MIX, &[1, 2]), (Some(PathId(1)), 1));
        // An open chain below it (a path still being registered) counts
        // as a longer path too.
        let n = c
            .register(
                PathId(5),
                KeyMode::Active,
                None,
                Level::demux(MIX, Key::from_array([1])),
                Some(MIX),
            )
            .unwrap();
        assert_eq!(c.flow_count(), 0);
        c.register(
            PathId(5),
            KeyMode::Active,
            Some(n),
            Level::demux(MIX, Key::from_array([4])),
            None,
        )
        .unwrap();
        assert_eq!(c.flow_count(), 1);
        assert_eq!(c.classify_probes(MIX, &[1, 4]), (Some(PathId(5)), 1));
        c.remove(PathId(5)).unwrap();
        c.remove(PathId(1)).unwrap();
        assert_eq!(c.flow_count(), 0);
        c.check_invariants().unwrap();
    }
}

/// Passive paths, paths with a pass-through level that has a key nobody
/// extracts, and paths through a module whose classifier has no layout
/// are left to the tree.
#[test]
fn only_active_paths_with_layouts_are_flows() {
    let mut c = classifier();
    insert(&mut c, 1, &transport(KeyMode::Passive, false, 21, 0));
    assert_eq!(c.flow_count(), 1, "the bound socket");
    // IP registered with its passive-shaped key in active mode: the walk
    // can never match it, nor may the flow table.
    let ip_short = [
        Level::demux(ETH, Key::from_array([8, 0])),
        Level::demux(IPV4, Key::from_array([17])),
    ];
    c.insert(PathId(2), KeyMode::Active, &ip_short).unwrap();
    assert_eq!(c.flow_count(), 1, "the bound socket, shadowed");
    // An active path at ETH is no flow: the flow table cannot tell that
    // the active walk finds nothing, so the bound socket's frame walks.
    let bound = PacketSpec::udp(LOCAL, 21, REMOTE, 3950).build();
    assert_eq!(c.classify_flow(ETH, &bound), None);
    assert_eq!(c.classify(ETH, &bound), Some(PathId(1)));
    c.check_invariants().unwrap();
    // A module nobody installed a classifier for is a pass-through level.
    let counted = FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: false,
        laddr: LOCAL,
        raddr: REMOTE,
        lport: 21,
        rport: 3949,
        counted: true,
    };
    insert(&mut c, 3, &counted);
    assert_eq!(c.flow_count(), 2);
    let f = PacketSpec::udp(LOCAL, 21, REMOTE, 3949).build();
    assert_eq!(c.classify_probes(ETH, &f), (Some(PathId(3)), 1));

    // A classifier installed without a layout takes its paths out; one
    // with a layout puts them back.
    c.set_partial_classifier(UDP, Box::new(inet::TreeOnly(inet::UDP_CLASSIFIER)))
        .unwrap();
    assert_eq!(c.flow_count(), 0);
    c.check_invariants().unwrap();
    // ETH, IP, the pass-through level, UDP.
    assert_eq!(c.classify_probes(ETH, &f), (Some(PathId(3)), 4));
    c.set_partial_classifier(UDP, Box::new(inet::UDP_CLASSIFIER))
        .unwrap();
    assert_eq!(c.flow_count(), 2);
    c.check_invariants().unwrap();
    assert_eq!(c.classify_probes(ETH, &f), (Some(PathId(3)), 1));
    // With the short active path gone every active path is a flow, and
    // the bound socket's frame is its flow's.
    c.remove(PathId(2)).unwrap();
    assert_eq!(c.classify_flow(ETH, &bound), Some(PathId(1)));
    c.check_invariants().unwrap();
}

/// Many connections in and out, in any order: the flow table holds exactly
/// the live active ones (the invariant check rebuilds what it should hold).
#[test]
fn flows_follow_registrations_and_removals() {
    let mut c = classifier();
    let conn = |i: u32| FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: i % 3 != 0,
        laddr: LOCAL,
        raddr: [10, 1, (i >> 8) as u8, i as u8],
        lport: 80,
        rport: 1024 + i as u16,
        counted: false,
    };
    let frame = |i: u32| {
        let spec = PacketSpec {
            payload: if i % 3 != 0 {
                Payload::Tcp
            } else {
                Payload::Udp
            },
            ..PacketSpec::tcp(LOCAL, 80, [10, 1, (i >> 8) as u8, i as u8], 1024 + i as u16)
        };
        spec.build()
    };
    let mut live = vec![false; 600];
    for round in 0..3u32 {
        for i in 0..600u32 {
            if (i * 7 + round) % 3 != 0 {
                if live[i as usize] {
                    c.remove(PathId(i)).unwrap();
                } else {
                    insert(&mut c, i, &conn(i));
                }
                live[i as usize] = !live[i as usize];
            }
        }
        c.check_invariants().unwrap();
        assert_eq!(c.flow_count(), live.iter().filter(|&&l| l).count());
        for i in 0..600u32 {
            let want = live[i as usize].then_some(PathId(i));
            let (got, probes) = c.classify_probes(ETH, &frame(i));
            assert_eq!(got, want, "connection {i}, round {round}");
            if want.is_some() {
                assert_eq!(probes, 1);
            }
        }
    }
}

/// A layout never disagrees with its classifier: wherever it applies, at
/// any offset of frames with options, fragments, truncation and changed
/// bytes, the classifier's active key and header length are the layout's.
#[test]
fn layouts_agree_with_their_classifiers() {
    let mut runner = TestRunner::default();
    runner
        .run(&(packet(ADDRS.len()), flips()), |(spec, flips)| {
            let mut f = spec.build();
            mutate(&mut f, &flips);
            let classifiers: [&dyn PartialClassifier; 5] = [
                &inet::EthClassifier,
                &inet::Ipv4Classifier,
                &inet::TCP_CLASSIFIER,
                &inet::UDP_CLASSIFIER,
                &inet::MixClassifier,
            ];
            for pc in classifiers {
                let layouts = [
                    (KeyMode::Active, pc.flow_layout()),
                    (KeyMode::Passive, pc.passive_flow_layout()),
                ];
                for (mode, layout) in layouts {
                    let layout = layout.expect("every inet classifier has both layouts");
                    for at in 0..=f.len() {
                        if let Some(got) = layout.extract(&f[at..]) {
                            prop_assert_eq!(Some(got), pc.extract(&f[at..], mode));
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Frames over the first `pool` addresses and ports (few, so that they
/// often belong to the paths registered from the same pools).
fn packet(pool: usize) -> impl Strategy<Value = PacketSpec> {
    (
        prop::sample::select(vec![
            Payload::Tcp,
            Payload::Tcp,
            Payload::Tcp,
            Payload::Udp,
            Payload::Udp,
            Payload::Udp,
            Payload::Ip(17),
            Payload::Arp,
        ]),
        prop::sample::select(&ADDRS[..pool]),
        prop::sample::select(&ADDRS[..pool]),
        prop::sample::select(&PORTS[..pool]),
        prop::sample::select(&PORTS[..pool]),
        prop_oneof![6 => Just(0u8), 1 => 1u8..4],
        0u8..4,
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

/// Byte changes aimed at the first 64 bytes of a frame: guards, keys,
/// length fields.
fn flips() -> impl Strategy<Value = Vec<(u16, u8)>> {
    prop::collection::vec((0u16..64, 1u8..=255), 0..3)
}

fn mutate(f: &mut [u8], flips: &[(u16, u8)]) {
    let n = f.len();
    if n > 0 {
        for &(at, xor) in flips {
            f[usize::from(at) % n] ^= xor;
        }
    }
}

/// Addresses and ports the flow operations draw from.
const POOL: usize = 2;

/// Operations where flows dominate: active connections sharing hosts and
/// ports with listeners and short IP paths, and frames for them, valid
/// and changed.
fn flow_op() -> impl Strategy<Value = Op> {
    flow_op_with(3, 1)
}

/// [`flow_op`] with paths active and passive in the ratio
/// `active : passive`.
fn flow_op_with(active: u32, passive: u32) -> impl Strategy<Value = Op> {
    let mode = prop_oneof![active => Just(KeyMode::Active), passive => Just(KeyMode::Passive)];
    let transport = (
        mode.clone(),
        any::<bool>(),
        prop::sample::select(&ADDRS[..POOL]),
        prop::sample::select(&ADDRS[..POOL]),
        prop::sample::select(&PORTS[..POOL]),
        prop::sample::select(&PORTS[..POOL]),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(mode, tcp, laddr, raddr, lport, rport, counted)| FilterSpec::Transport {
                mode,
                tcp,
                laddr,
                raddr,
                lport,
                rport,
                counted,
            },
        );
    let ip = (
        mode,
        prop::sample::select(vec![1u8, 6, 17]),
        prop::sample::select(&ADDRS[..POOL]),
        prop::sample::select(&ADDRS[..POOL]),
    )
        .prop_map(|(mode, proto, laddr, raddr)| FilterSpec::Ip {
            mode,
            proto,
            laddr,
            raddr,
        });
    let filter = prop_oneof![5 => transport, 1 => ip];
    let path = (0..MAX_PATHS).prop_map(PathId);
    prop_oneof![
        4 => (path.clone(), filter).prop_map(|(path, filter)| Op::Insert { path, filter }),
        1 => path.prop_map(Op::Remove),
        4 => packet(POOL).prop_map(Op::Lookup),
        4 => (packet(POOL), flips()).prop_map(|(spec, flips)| Op::LookupMutated { spec, flips }),
        1 => (
            prop::sample::select(vec![MIX, ModuleId(7)]),
            prop::collection::vec(0u8..3, 0..6)
        )
            .prop_map(|(at, bytes)| Op::LookupRaw { at, bytes }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Random paths (active and passive, shared prefixes) and random and
    /// changed frames: the classifier with its flow table answers as the
    /// reference does, every flow hit included (`Differential` checks the
    /// flow table's own answer against the reference at every lookup).
    #[test]
    fn flow_table_agrees_with_reference(ops in prop::collection::vec(flow_op(), 1..80)) {
        let mut d = Differential::new();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }

    /// As many active paths as passive ones: listeners and bound sockets
    /// beside connections on the same ports, so that passive flows answer
    /// beside active ones and must yield to them.
    #[test]
    fn mixed_flows_agree_with_reference(ops in prop::collection::vec(flow_op_with(1, 1), 1..80)) {
        let mut d = Differential::new();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }

    /// Mostly passive paths, so that passive flows come and go as the
    /// few active ones take the EtherType's first node and leave it.
    #[test]
    fn passive_flows_agree_with_reference(ops in prop::collection::vec(flow_op_with(1, 6), 1..80)) {
        let mut d = Differential::new();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// A passive path is a flow beside active ones: a bound socket beside a
/// connected one, a listener beside its connections. The active flows are
/// probed first (an active match wins); the passive flow answers when
/// every active path at the receiving module is a flow and each active
/// chain either admits the frame (its miss is the walk's) or cannot take
/// it (another protocol in a byte all its flows share).
#[test]
fn passive_flows_stay_beside_active_ones() {
    let mut c = classifier();
    insert(&mut c, 1, &transport(KeyMode::Passive, false, 21, 0));
    insert(&mut c, 4, &transport(KeyMode::Passive, true, 80, 0));
    assert_eq!(c.flow_count(), 2, "two listeners, nothing active");
    let syn = PacketSpec::tcp(LOCAL, 80, REMOTE, 3949).build();
    // UDP's and TCP's passive keys (the local port alone) lie in windows
    // placed apart (a UDP header ends sooner): two gathers, two probes
    // at most, where the walk takes three levels' probes.
    let (found, probes) = c.classify_probes(ETH, &syn);
    assert_eq!(found, Some(PathId(4)));
    assert!(probes <= 2, "{probes} probes");
    assert_eq!(c.classify_flow(ETH, &syn), Some(PathId(4)));
    let mut trace = Trace::new();
    c.classify_traced(ETH, &syn, &mut trace);
    assert_eq!(trace.mode(), Some(KeyMode::Passive));
    c.check_invariants().unwrap();

    // A connected UDP socket under 0x0800 beside the bound one, and a
    // connection the listener accepted: all four are flows.
    insert(&mut c, 2, &transport(KeyMode::Active, false, 21, 3949));
    insert(&mut c, 3, &transport(KeyMode::Active, true, 80, 3949));
    assert_eq!(c.flow_count(), 4);
    c.check_invariants().unwrap();
    let udp = PacketSpec::udp(LOCAL, 21, REMOTE, 3949).build();
    assert_eq!(c.classify_probes(ETH, &udp), (Some(PathId(2)), 1));
    assert_eq!(c.classify_probes(ETH, &syn), (Some(PathId(3)), 1));
    // Another peer: the active probe misses, the passive one finds the
    // bound socket or the listener.
    for (lport, tcp, want, conn_path) in [(21, false, 1, 2), (80, true, 4, 3)] {
        let spec = if tcp {
            PacketSpec::tcp(LOCAL, lport, REMOTE, 4000)
        } else {
            PacketSpec::udp(LOCAL, lport, REMOTE, 4000)
        };
        let f = spec.build();
        let (found, probes) = c.classify_probes(ETH, &f);
        assert_eq!(found, Some(PathId(want)));
        assert!((2..=3).contains(&probes), "{probes} probes");
        assert_eq!(c.classify_flow(ETH, &f), Some(PathId(want)));
        c.classify_traced(ETH, &f, &mut trace);
        assert_eq!(trace.mode(), Some(KeyMode::Passive));
        // The connection's own frames with IPv4 options: no flow admits
        // them, the walk finds the connection, not the listener.
        let opt = PacketSpec {
            ip_options: 1,
            ..spec
        };
        assert_eq!(c.classify_flow(ETH, &opt.build()), None);
        let conn = PacketSpec { rport: 3949, ..opt };
        assert_eq!(c.classify(ETH, &conn.build()), Some(PathId(conn_path)));
    }
    // A TCP connection's frame whose data offset reaches past its end:
    // the connection's chain does not admit it, and the connection's
    // keys are the frame's, so the listener's flow may not answer.
    let mut cut = PacketSpec {
        tcp_options: 3,
        ..PacketSpec::tcp(LOCAL, 80, REMOTE, 3949)
    }
    .build();
    cut.truncate(14 + 20 + 28);
    assert_eq!(c.classify_flow(ETH, &cut), None);
    assert_eq!(c.classify(ETH, &cut), None);

    // An active path that is no flow (IP's, with its passive-shaped key)
    // at the receiving module: the passive flows stay filed but only the
    // tree answers for their frames.
    let ip_short = [
        Level::demux(ETH, Key::from_array([8, 0])),
        Level::demux(IPV4, Key::from_array([17])),
    ];
    c.insert(PathId(6), KeyMode::Active, &ip_short).unwrap();
    assert_eq!(c.flow_count(), 4);
    let other = PacketSpec::udp(LOCAL, 21, REMOTE, 4000).build();
    assert_eq!(c.classify_flow(ETH, &other), None);
    assert_eq!(c.classify(ETH, &other), Some(PathId(1)));
    c.check_invariants().unwrap();
    c.remove(PathId(6)).unwrap();
    assert_eq!(c.classify_flow(ETH, &other), Some(PathId(1)));

    // The active paths go: the passive flows are unshadowed again.
    c.remove(PathId(2)).unwrap();
    c.remove(PathId(3)).unwrap();
    assert_eq!(c.flow_count(), 2, "the listeners");
    assert_eq!(c.classify(ETH, &udp), Some(PathId(1)));
    assert_eq!(c.classify_flow(ETH, &udp), Some(PathId(1)));
    c.check_invariants().unwrap();

    // A passive path of fewer than three keyed levels is left to the
    // walk (its gather would cost every other frame a probe).
    let ip_only = [
        Level::demux(ETH, Key::from_array([8, 0])),
        Level::demux(IPV4, Key::from_array([6])),
    ];
    c.remove(PathId(4)).unwrap();
    assert_eq!(c.flow_count(), 1);
    c.insert(PathId(5), KeyMode::Passive, &ip_only).unwrap();
    assert_eq!(c.flow_count(), 1, "IP's TCP path is too short");
    assert_eq!(c.classify(ETH, &syn), Some(PathId(5)));
    // The listener below IP's TCP path: a flow, and the IP path names a
    // next module now.
    insert(&mut c, 4, &transport(KeyMode::Passive, true, 80, 0));
    assert_eq!(c.flow_count(), 2, "both listeners");
    assert_eq!(c.classify_flow(ETH, &syn), Some(PathId(4)));
    assert_eq!(c.classify(ETH, &syn), Some(PathId(4)));
    c.check_invariants().unwrap();
}

/// The differential test above does reach the flow table: over a fixed
/// set of runs, a good share of lookups are flow hits.
#[test]
fn differential_runs_hit_flows() {
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(flow_op(), 40..80);
    let runs = (0..64).map(|_| strategy.new_tree(&mut runner).unwrap().current());
    let (hits, lookups) = tally(runs, Differential::new, |d| d.flow_hits).unwrap();
    assert!(
        hits * 25 > lookups,
        "{hits} flow hits in {lookups} frame lookups"
    );
}

/// The mixed differential test reaches passive flows beside active ones
/// (a listener's or bound socket's frame beside its connections).
#[test]
fn mixed_runs_hit_passive_flows_beside_active_ones() {
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(flow_op_with(1, 1), 40..80);
    let runs = (0..64).map(|_| strategy.new_tree(&mut runner).unwrap().current());
    let (hits, lookups) = tally(runs, Differential::new, |d| d.shadowed_hits).unwrap();
    assert!(
        hits * 10 > lookups,
        "{hits} passive flow hits beside active flows in {lookups} frame lookups"
    );
}

/// The passive differential test reaches passive flows: with passive paths
/// alone, every flow hit is a passive path's.
#[test]
fn passive_runs_hit_flows() {
    let mut runner = TestRunner::deterministic();
    let strategy = prop::collection::vec(flow_op_with(0, 1), 40..80);
    let runs = (0..64).map(|_| strategy.new_tree(&mut runner).unwrap().current());
    let (hits, lookups) = tally(runs, Differential::new, |d| d.flow_hits).unwrap();
    assert!(
        hits * 25 > lookups,
        "{hits} flow hits in {lookups} frame lookups"
    );
}

/// The footprint accounts for every heap byte the classifier counts, and
/// the bytes a connection adds land where `docs/design.md` says a flow
/// path's go: a leafless path keeps no node, so no path count, edge or
/// tails slot either — only its flow entry and its slot in the flow
/// table's leaf index (issue 26's bytes-per-path goal is judged part by
/// part).
#[test]
fn footprint_parts_add_up_to_the_heap_bytes() {
    let mut c = classifier();
    assert_eq!(c.footprint(), Footprint::default());
    insert(&mut c, 0, &transport(KeyMode::Active, true, 80, 1024));
    let before = c.footprint();
    assert_eq!(before.total(), c.heap_bytes());
    const M: u16 = 4000;
    for i in 1..=M {
        insert(
            &mut c,
            u32::from(i),
            &transport(KeyMode::Active, true, 80, 1024 + i),
        );
    }
    let after = c.footprint();
    assert_eq!(after.total(), c.heap_bytes());
    let d = after.since(&before);
    let m = usize::from(M);
    // At least the part of each that the new paths fill (the tables hold
    // at most 7/8 and 13/16 of their slots, so at least their entries).
    assert_eq!(c.flow_count(), m + 1);
    assert_eq!((d.nodes, d.counts, d.edges, d.tails), (0, 0, 0, 0), "{d:?}");
    assert!(d.flows >= m * (16 + 4) - before.flows, "{d:?}");
    assert_eq!(d.total(), after.total() - before.total());
    // Removing the paths takes nothing more, and the parts still add up.
    for i in 1..=M {
        c.remove(PathId(u32::from(i))).unwrap();
    }
    assert!(c.footprint().total() <= after.total());
    assert_eq!(c.footprint().total(), c.heap_bytes());
}

/// Leafless paths (`classifier.rs`, `file_leafless`): an active flow
/// path's last level is its flow entry, not a node. The tree still
/// answers for it wherever the flow probe cannot — a frame with IPv4
/// options, `classify_with` — reads its levels back, removes it, and
/// gives it its node back when a longer path continues below it or it
/// registers again; a listener with the same prefix is unaffected.
#[test]
fn leafless_paths_keep_every_answer() {
    let mut c = classifier();
    insert(&mut c, 1, &transport(KeyMode::Passive, true, 80, 0));
    let listener_nodes = c.node_count();
    let conn = transport(KeyMode::Active, true, 80, 3949);
    insert(&mut c, 2, &conn);
    c.check_invariants().unwrap();
    // ETH's active node and the connection's IP node, no TCP node.
    assert_eq!(c.node_count(), listener_nodes + 2);
    assert_eq!((c.flow_count(), c.chain_count()), (2, 2));
    let tcp = PacketSpec::tcp(LOCAL, 80, REMOTE, 3949);
    let other = PacketSpec::tcp(LOCAL, 80, REMOTE, 3950);
    let ip_options = PacketSpec {
        ip_options: 2,
        ..tcp
    };
    for (spec, want) in [(tcp, 2), (other, 1), (ip_options, 2)] {
        let f = spec.build();
        assert_eq!(c.classify(ETH, &f), Some(PathId(want)), "{spec:?}");
        assert_eq!(c.classify_with(ETH, &f, inet::extract), Some(PathId(want)));
        let mut t = Trace::new();
        assert_eq!(c.classify_traced(ETH, &f, &mut t), Some(PathId(want)));
        assert_eq!(t.levels().len(), 3);
    }
    // The frame with IPv4 options misses the flow probe; the walk misses
    // below the IP node and asks the flow table.
    assert_eq!(c.classify_flow(ETH, &ip_options.build()), None);
    let mut levels = [(ModuleId(0), Key::EMPTY); pathstack_classify::MAX_DEPTH];
    let n = c.path_levels(PathId(2), &mut levels).unwrap();
    let want: Vec<_> = conn
        .levels()
        .iter()
        .map(|l| (l.module, l.key_or_empty()))
        .collect();
    assert_eq!(&levels[..n], &want[..]);
    // The same keys again: ambiguous, nothing changed.
    assert!(c
        .insert(PathId(3), KeyMode::Active, &conn.levels())
        .is_err());
    c.check_invariants().unwrap();
    // A longer path below its last level (a module past TCP without a
    // classifier) gives it its node back.
    let mut longer = conn.levels();
    longer.push(Level::pass_through(ModuleId(7)));
    c.insert(PathId(3), KeyMode::Active, &longer).unwrap();
    c.check_invariants().unwrap();
    assert_eq!(c.node_count(), listener_nodes + 4);
    assert_eq!(c.classify(ETH, &tcp.build()), Some(PathId(3)));
    c.remove(PathId(3)).unwrap();
    c.check_invariants().unwrap();
    assert_eq!(c.classify_probes(ETH, &tcp.build()), (Some(PathId(2)), 1));
    // Removed, and its id reused for other keys, then the old keys
    // again under another id: each answers as registered.
    c.remove(PathId(2)).unwrap();
    c.check_invariants().unwrap();
    assert_eq!(c.node_count(), listener_nodes);
    assert_eq!(c.classify(ETH, &tcp.build()), Some(PathId(1)));
    assert_eq!(c.path_levels(PathId(2), &mut levels), None);
    insert(&mut c, 2, &transport(KeyMode::Active, true, 80, 3950));
    insert(&mut c, 4, &conn);
    c.check_invariants().unwrap();
    assert_eq!(c.node_count(), listener_nodes + 2);
    assert_eq!(c.classify(ETH, &other.build()), Some(PathId(2)));
    assert_eq!(c.classify(ETH, &ip_options.build()), Some(PathId(4)));
    // Registered level by level: the last registration returns the node
    // above the entry; going on from it is past the chain's end.
    let levels5 = transport(KeyMode::Active, false, 53, 3949).levels();
    let mut prev = None;
    for (i, l) in levels5.iter().enumerate() {
        let next = levels5.get(i + 1).map(|l| l.module);
        prev = Some(
            c.register(PathId(5), KeyMode::Active, prev, *l, next)
                .unwrap(),
        );
    }
    assert_eq!(c.flow_count(), 4);
    assert_eq!(
        c.register(
            PathId(5),
            KeyMode::Active,
            prev,
            Level::pass_through(MIX),
            None
        ),
        Err(pathstack_classify::ClassifyError::ChainEnded { path: PathId(5) })
    );
    c.check_invariants().unwrap();
    for p in [1, 2, 4, 5] {
        c.remove(PathId(p)).unwrap();
        c.check_invariants().unwrap();
    }
    assert_eq!((c.node_count(), c.chain_count(), c.flow_count()), (0, 0, 0));
}

/// Few keys, many removals and longer (counted) paths: leafless paths
/// come and go, get their nodes back under longer paths and lose them
/// again on re-registration, beside listeners on the same ports; ids are
/// reused for other keys. The reference is the judge.
fn leafless_op() -> impl Strategy<Value = Op> {
    let mode = prop_oneof![3 => Just(KeyMode::Active), 1 => Just(KeyMode::Passive)];
    let transport = (
        mode,
        any::<bool>(),
        prop::sample::select(&PORTS[..2]),
        prop::bool::weighted(0.4),
    )
        .prop_map(|(mode, tcp, rport, counted)| FilterSpec::Transport {
            mode,
            tcp,
            laddr: ADDRS[0],
            raddr: ADDRS[1],
            lport: PORTS[0],
            rport,
            counted,
        });
    // The same, one level longer: a module past the transport without a
    // classifier.
    let longer = transport.clone().prop_map(|f| FilterSpec::Raw {
        mode: f.mode(),
        levels: f
            .levels()
            .into_iter()
            .chain([Level::pass_through(ModuleId(7))])
            .collect(),
    });
    let filter = prop_oneof![3 => transport, 1 => longer];
    let path = (0..6u32).prop_map(PathId);
    prop_oneof![
        4 => (path.clone(), filter).prop_map(|(path, filter)| Op::Insert { path, filter }),
        3 => path.prop_map(Op::Remove),
        3 => packet(2).prop_map(Op::Lookup),
        2 => (packet(2), flips()).prop_map(|(spec, flips)| Op::LookupMutated { spec, flips }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// See [`leafless_op`].
    #[test]
    fn leafless_paths_agree_with_reference(ops in prop::collection::vec(leafless_op(), 1..80)) {
        let mut d = Differential::new();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// A burst over a table too big for the cache (50,000 connections: the
/// slots spill, so `classify_burst` loads them early), with a listener,
/// a bound host's other ports and unknown hosts mixed in, truncated and
/// empty frames among them: every answer is `classify`'s, one by one,
/// and an `out` shorter than the burst is filled as far as it goes.
#[test]
fn burst_answers_are_one_by_one_answers() {
    let mut c = classifier();
    insert(&mut c, 1_000_000, &transport(KeyMode::Passive, true, 80, 0));
    // 1,000 hosts × 50 ports.
    let n = 50_000;
    for i in 0..n {
        let host = i / 50;
        let f = FilterSpec::Transport {
            mode: KeyMode::Active,
            tcp: true,
            laddr: LOCAL,
            raddr: [10, 1, (host >> 8) as u8, host as u8],
            lport: 80,
            rport: 1024 + (i % 50) as u16,
            counted: false,
        };
        insert(&mut c, i, &f);
    }
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut frames: Vec<Vec<u8>> = (0..200)
        .map(|k| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let host = (x >> 8) as u32 % 1100;
            let rport = 1024 + (x >> 40) as u16 % 60;
            let raddr = [10, 1, (host >> 8) as u8, host as u8];
            let mut f = PacketSpec {
                payload: Payload::Tcp,
                ..PacketSpec::tcp(LOCAL, 80, raddr, rport)
            }
            .build();
            if k % 17 == 0 {
                f.truncate((x >> 20) as usize % f.len());
            }
            f
        })
        .collect();
    frames.push(Vec::new());
    let msgs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    let want: Vec<Option<PathId>> = msgs.iter().map(|m| c.classify(ETH, m)).collect();
    assert!(want.iter().filter(|p| p.is_some_and(|p| p.0 < n)).count() > 100);
    assert!(
        want.contains(&Some(PathId(1_000_000))),
        "the listener's too"
    );
    for burst in [1, 7, 32, msgs.len()] {
        for (chunk, expect) in msgs.chunks(burst).zip(want.chunks(burst)) {
            let mut out = vec![Some(PathId(u32::MAX)); chunk.len()];
            c.classify_burst(ETH, chunk, &mut out);
            assert_eq!(out, expect, "burst of {burst}");
        }
    }
    let mut short = [None; 3];
    c.classify_burst(ETH, &msgs, &mut short);
    assert_eq!(short[..], want[..3]);
    let mut long = vec![Some(PathId(u32::MAX)); 5];
    c.classify_burst(ETH, &msgs[..2], &mut long);
    assert_eq!(long[..2], want[..2]);
    assert_eq!(long[2..], [Some(PathId(u32::MAX)); 3], "left alone");
}
