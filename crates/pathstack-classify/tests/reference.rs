//! The demux tree gives the same answers as the naive reference for random
//! sequences of insert/remove/lookup over Ethernet/IPv4/TCP/UDP filters
//! with wildcards (passive keys) and pass-through modules.

use pathstack_classify::testing::differential::Differential;
use pathstack_classify::testing::inet;
use pathstack_classify::testing::ops::{FilterSpec, Op, ADDRS, MAX_PATHS, PORTS};
use pathstack_classify::testing::packet::{PacketSpec, Payload};
use pathstack_classify::{Key, KeyMode, Level, ModuleId, PathId};
use proptest::prelude::*;

fn mode() -> impl Strategy<Value = KeyMode> {
    prop_oneof![Just(KeyMode::Active), Just(KeyMode::Passive)]
}
fn addr() -> impl Strategy<Value = [u8; 4]> {
    prop::sample::select(&ADDRS[..])
}
fn port() -> impl Strategy<Value = u16> {
    prop::sample::select(&PORTS[..])
}
fn path() -> impl Strategy<Value = PathId> {
    (0..MAX_PATHS).prop_map(PathId)
}

fn filter() -> impl Strategy<Value = FilterSpec> {
    let transport = (
        mode(),
        any::<bool>(),
        addr(),
        addr(),
        port(),
        port(),
        prop::bool::weighted(0.15),
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
        mode(),
        prop::sample::select(vec![1u8, 6, 17]),
        addr(),
        addr(),
    )
        .prop_map(|(mode, proto, laddr, raddr)| FilterSpec::Ip {
            mode,
            proto,
            laddr,
            raddr,
        });
    let raw = (
        mode(),
        prop::collection::vec(
            (
                1u32..=8,
                prop::option::of(prop::collection::vec(0u8..3, 0..3)),
            ),
            1..5,
        ),
    )
        .prop_map(|(mode, lv)| FilterSpec::Raw {
            mode,
            levels: lv
                .into_iter()
                .map(|(m, k)| Level {
                    module: ModuleId(m),
                    key: k.map(|k| Key::new(&k).unwrap()),
                })
                .collect(),
        });
    prop_oneof![
        6 => transport,
        2 => ip,
        1 => mode().prop_map(|mode| FilterSpec::Arp { mode }),
        1 => raw,
    ]
}

fn packet() -> impl Strategy<Value = PacketSpec> {
    let payload = prop_oneof![
        1 => Just(Payload::Arp),
        1 => prop::sample::select(vec![1u8, 6, 17, 89]).prop_map(Payload::Ip),
        4 => Just(Payload::Tcp),
        4 => Just(Payload::Udp),
    ];
    (
        payload,
        addr(),
        addr(),
        port(),
        port(),
        0u8..3,
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

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (path(), filter()).prop_map(|(path, filter)| Op::Insert { path, filter }),
        2 => path().prop_map(Op::Remove),
        5 => packet().prop_map(Op::Lookup),
        1 => ((1u32..=8).prop_map(ModuleId), prop::collection::vec(0u8..3, 0..12))
            .prop_map(|(at, bytes)| Op::LookupRaw { at, bytes }),
    ]
}

/// Raw filters over a few modules where keys collide often: the
/// mode-dependent MIX, the pass-through COUNT and a module nobody knows.
/// Both modes register the same keys, so twins are everywhere, while a
/// message's active and passive MIX keys (and header lengths) differ: the
/// passive walk must check every twin it takes.
fn twin_heavy_op() -> impl Strategy<Value = Op> {
    let level = (
        prop::sample::select(vec![inet::MIX, inet::MIX, inet::COUNT, ModuleId(7)]),
        prop::option::weighted(0.8, 0u8..3),
    )
        .prop_map(|(module, k)| Level {
            module,
            key: k.map(|k| Key::from_array([k])),
        });
    let filter = (mode(), prop::collection::vec(level, 1..5))
        .prop_map(|(mode, levels)| FilterSpec::Raw { mode, levels });
    prop_oneof![
        4 => (path(), filter).prop_map(|(path, filter)| Op::Insert { path, filter }),
        1 => path().prop_map(Op::Remove),
        4 => (
            prop::sample::select(vec![inet::MIX, inet::COUNT]),
            prop::collection::vec(0u8..3, 0..10)
        )
            .prop_map(|(at, bytes)| Op::LookupRaw { at, bytes }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn twin_heavy_tree_agrees_with_reference(ops in prop::collection::vec(twin_heavy_op(), 1..60)) {
        let mut d = Differential::new();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }

    #[test]
    fn tree_agrees_with_reference(ops in prop::collection::vec(op(), 1..80)) {
        let mut d = Differential::new();
        if let Err(e) = d.run(&ops) {
            prop_assert!(false, "{}", e);
        }
    }

    /// After removing everything, the tree is empty again (no leaked nodes).
    #[test]
    fn removing_all_paths_frees_all_nodes(ops in prop::collection::vec(op(), 1..60)) {
        let mut d = Differential::new();
        d.run(&ops).map_err(TestCaseError::fail)?;
        for p in 0..MAX_PATHS {
            let _ = d.tree.remove(PathId(p));
        }
        prop_assert_eq!(d.tree.node_count(), 0);
        prop_assert_eq!(d.tree.chain_count(), 0);
    }
}

/// The test packet builder and the inet partial classifiers read the same
/// fields as an independent parser (etherparse).
#[test]
fn inet_matches_etherparse() {
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};
    for tcp in [true, false] {
        for opts in 0..3 {
            let mut spec = if tcp {
                PacketSpec::tcp([10, 0, 0, 1], 21, [18, 181, 0, 21], 3949)
            } else {
                PacketSpec::udp([10, 0, 0, 1], 21, [18, 181, 0, 21], 3949)
            };
            spec.ip_options = opts;
            spec.tcp_options = opts;
            let frame = spec.build();
            let p = SlicedPacket::from_ethernet(&frame).expect("etherparse parses the frame");
            let Some(NetSlice::Ipv4(ip)) = p.net else {
                panic!("not IPv4")
            };
            assert_eq!(ip.header().destination(), spec.laddr);
            assert_eq!(ip.header().source(), spec.raddr);
            assert_eq!(
                ip.header().header_checksum(),
                ip.header().to_header().calc_header_checksum()
            );
            let (sport, dport) = match p.transport {
                Some(TransportSlice::Tcp(t)) => (t.source_port(), t.destination_port()),
                Some(TransportSlice::Udp(u)) => (u.source_port(), u.destination_port()),
                other => panic!("unexpected transport {other:?}"),
            };
            assert_eq!((dport, sport), (spec.lport, spec.rport));

            // Walk the partial classifiers by hand and compare the keys.
            let (k, used) = inet::extract(inet::ETH, &frame, KeyMode::Active).unwrap();
            assert_eq!((k.as_bytes(), used), (&[0x08, 0x00][..], 14));
            let rest = &frame[14..];
            let (k, used) = inet::extract(inet::IPV4, rest, KeyMode::Active).unwrap();
            assert_eq!(used, usize::from(ip.header().ihl()) * 4);
            assert_eq!(k.as_bytes()[0], if tcp { 6 } else { 17 });
            assert_eq!(&k.as_bytes()[1..5], &spec.laddr);
            assert_eq!(&k.as_bytes()[5..9], &spec.raddr);
            let m = if tcp { inet::TCP } else { inet::UDP };
            let (k, _) = inet::extract(m, &rest[used..], KeyMode::Active).unwrap();
            let mut want = spec.lport.to_be_bytes().to_vec();
            want.extend_from_slice(&spec.rport.to_be_bytes());
            assert_eq!(k.as_bytes(), &want[..]);
            let (k, _) = inet::extract(m, &rest[used..], KeyMode::Passive).unwrap();
            assert_eq!(k.as_bytes(), &spec.lport.to_be_bytes());
        }
    }
}
