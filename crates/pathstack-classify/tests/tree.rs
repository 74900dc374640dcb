//! Behaviour of the demux tree through its public API: the establish-chain
//! registration, Table 3.1, ambiguity, pass-through and blocking modules,
//! exact removal, probe counts, twins and tracing.

use pathstack_classify::testing::inet::{self, ETH, IPV4, TCP, UDP};
use pathstack_classify::testing::ops::FilterSpec;
use pathstack_classify::testing::packet::PacketSpec;
use pathstack_classify::{
    Classifier, ClassifyError, Key, KeyMode, Level, ModuleId, PathId, Trace, TraceLevel,
};

const LOCAL: [u8; 4] = [192, 12, 69, 168];
const REMOTE: [u8; 4] = [18, 181, 0, 21];

fn classifier() -> Classifier {
    let mut c = Classifier::new();
    inet::install(&mut c);
    c
}

fn udp(mode: KeyMode, lport: u16, rport: u16) -> FilterSpec {
    FilterSpec::Transport {
        mode,
        tcp: false,
        laddr: LOCAL,
        raddr: REMOTE,
        lport,
        rport,
        counted: false,
    }
}

fn insert(c: &mut Classifier, p: u32, f: &FilterSpec) -> Result<(), ClassifyError> {
    c.insert(PathId(p), f.mode(), &f.levels())
}

/// Thesis Table 3.1: a passive path for UDP port 21 and an active one for
/// one connection to port 21; each packet goes to the right one, in either
/// registration order.
#[test]
fn table_3_1_active_beneath_passive() {
    for passive_first in [true, false] {
        let mut c = classifier();
        let passive = udp(KeyMode::Passive, 21, 0);
        let active = udp(KeyMode::Active, 21, 3949);
        if passive_first {
            insert(&mut c, 1, &passive).unwrap();
            insert(&mut c, 2, &active).unwrap();
        } else {
            insert(&mut c, 2, &active).unwrap();
            insert(&mut c, 1, &passive).unwrap();
        }
        let pkt = |rport| PacketSpec::udp(LOCAL, 21, REMOTE, rport).build();
        assert_eq!(c.classify(ETH, &pkt(3949)), Some(PathId(2)));
        assert_eq!(c.classify(ETH, &pkt(3950)), Some(PathId(1)));
        let other_host = PacketSpec::udp(LOCAL, 21, [1, 2, 3, 4], 3949).build();
        assert_eq!(c.classify(ETH, &other_host), Some(PathId(1)));
        assert_eq!(
            c.classify(ETH, &PacketSpec::udp(LOCAL, 22, REMOTE, 3949).build()),
            None
        );
        assert_eq!(
            c.classify(ETH, &PacketSpec::tcp(LOCAL, 21, REMOTE, 3949).build()),
            None
        );
    }
}

/// Probes per classification over ETH/IPv4/UDP (N = 3), where only ETH's
/// key (the EtherType) is the same in both modes: the tree walk's, without
/// the flow table (tests/flow.rs counts that).
#[test]
fn probe_counts() {
    let mut c = Classifier::new();
    inet::install_tree_only(&mut c);
    insert(&mut c, 1, &udp(KeyMode::Passive, 21, 0)).unwrap();
    insert(&mut c, 2, &udp(KeyMode::Active, 21, 3949)).unwrap();
    // (a) An active path: one probe per level.
    let hit = PacketSpec::udp(LOCAL, 21, REMOTE, 3949).build();
    assert_eq!(c.classify_probes(ETH, &hit), (Some(PathId(2)), 3));
    // (b) A passive path, from a host with no connection here: the active
    // walk misses at IP, the passive walk takes ETH's twin and probes IP
    // and UDP — N + 1 (2N restarting from the root).
    let other_host = PacketSpec::udp(LOCAL, 21, [1, 1, 1, 1], 1).build();
    assert_eq!(c.classify_probes(ETH, &other_host), (Some(PathId(1)), 4));
    assert_eq!(
        c.classify_probes_from_root(ETH, &other_host),
        (Some(PathId(1)), 5)
    );
    // ... and from the connected host, another port: the active walk misses
    // only at UDP, so 3 + 2 = 2N − 1 (2N from the root).
    let listen = PacketSpec::udp(LOCAL, 21, REMOTE, 1).build();
    assert_eq!(c.classify_probes(ETH, &listen), (Some(PathId(1)), 5));
    assert_eq!(
        c.classify_probes_from_root(ETH, &listen),
        (Some(PathId(1)), 6)
    );
    // (c) Misses: nobody listens on the port (ETH twin, IP probed in both
    // modes, UDP passive) ...
    let closed = PacketSpec::udp(LOCAL, 22, [1, 1, 1, 1], 1).build();
    assert_eq!(c.classify_probes(ETH, &closed), (None, 4));
    // ... an IP protocol nobody uses (no IP node in either mode) ...
    let tcp = PacketSpec::tcp(LOCAL, 21, [1, 1, 1, 1], 1).build();
    assert_eq!(c.classify_probes(ETH, &tcp), (None, 3));
    // ... and an EtherType nobody uses: no active node, so no twin to take.
    let mut arp = hit.clone();
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    assert_eq!(c.classify_probes(ETH, &arp), (None, 2));

    // A host with only bound sockets: the active walk misses at once.
    let mut server = Classifier::new();
    inet::install_tree_only(&mut server);
    insert(&mut server, 1, &udp(KeyMode::Passive, 21, 0)).unwrap();
    assert_eq!(
        server.classify_probes(ETH, &other_host),
        (Some(PathId(1)), 4)
    );
}

/// Twins pair the nodes of both modes that have the same keys from the
/// receiving module on, in either registration order, and come apart when
/// one side is removed.
#[test]
fn twins_link_and_unlink() {
    for passive_first in [true, false] {
        let mut c = classifier();
        let eth = Level::demux(ETH, Key::from_array([8, 0]));
        let ip_key = Key::from_array([17]);
        let register = |c: &mut Classifier, p: u32, mode: KeyMode| {
            let e = c.register(PathId(p), mode, None, eth, Some(IPV4)).unwrap();
            let i = c
                .register(PathId(p), mode, Some(e), Level::demux(IPV4, ip_key), None)
                .unwrap();
            (e, i)
        };
        let (first, second) = if passive_first {
            (KeyMode::Passive, KeyMode::Active)
        } else {
            (KeyMode::Active, KeyMode::Passive)
        };
        let (e1, i1) = register(&mut c, 1, first);
        assert_eq!(c.twin(e1), None);
        let (e2, i2) = register(&mut c, 2, second);
        assert_eq!((c.twin(e1), c.twin(e2)), (Some(e2), Some(e1)));
        assert_eq!((c.twin(i1), c.twin(i2)), (Some(i2), Some(i1)));
        // A key only one mode uses has no twin.
        let e3 = c
            .register(
                PathId(3),
                first,
                None,
                Level::demux(ETH, Key::from_array([8, 6])),
                None,
            )
            .unwrap();
        assert_eq!(c.twin(e3), None);
        c.remove(PathId(2)).unwrap();
        assert_eq!((c.twin(e1), c.twin(i1)), (None, None));
        assert_eq!(c.twin(e2), None, "freed nodes have no twin");
    }
}

/// `classify_traced` reports where each header of the found path starts.
#[test]
fn traces_the_found_path() {
    let mut c = classifier();
    insert(&mut c, 1, &udp(KeyMode::Passive, 21, 0)).unwrap();
    insert(&mut c, 2, &udp(KeyMode::Active, 21, 3949)).unwrap();
    let ip = FilterSpec::Ip {
        mode: KeyMode::Active,
        proto: inet::PROTO_UDP,
        laddr: LOCAL,
        raddr: REMOTE,
    };
    insert(&mut c, 3, &ip).unwrap();
    let level = |module, offset, len| TraceLevel {
        module,
        offset,
        len,
    };
    let mut t = Trace::new();
    let spec = PacketSpec {
        ip_options: 2,
        ..PacketSpec::udp(LOCAL, 21, REMOTE, 3949)
    };
    assert_eq!(
        c.classify_traced(ETH, &spec.build(), &mut t),
        Some(PathId(2))
    );
    assert_eq!(t.mode(), Some(KeyMode::Active));
    assert_eq!(
        t.levels(),
        [level(ETH, 0, 14), level(IPV4, 14, 28), level(UDP, 42, 8)]
    );
    assert_eq!(t.end(), 50);
    // The passive path, found after the active walk missed at UDP.
    let other = PacketSpec::udp(LOCAL, 21, [1, 2, 3, 4], 5).build();
    assert_eq!(c.classify_traced(ETH, &other, &mut t), Some(PathId(1)));
    assert_eq!(t.mode(), Some(KeyMode::Passive));
    assert_eq!(
        t.levels(),
        [level(ETH, 0, 14), level(IPV4, 14, 20), level(UDP, 34, 8)]
    );
    // A path that ends above the deepest level walked: only its levels.
    let closed = PacketSpec::udp(LOCAL, 22, REMOTE, 3949).build();
    assert_eq!(c.classify_traced(ETH, &closed, &mut t), Some(PathId(3)));
    assert_eq!(t.levels(), [level(ETH, 0, 14), level(IPV4, 14, 20)]);
    // No path: an empty trace.
    assert_eq!(c.classify_traced(ETH, &[0; 10], &mut t), None);
    assert!(t.levels().is_empty() && t.mode().is_none());
}

#[test]
fn longest_path_wins_and_short_paths_catch_the_rest() {
    let mut c = classifier();
    // Short path ending at IP (e.g. reassembly) and a full UDP path below it.
    let ip = FilterSpec::Ip {
        mode: KeyMode::Active,
        proto: inet::PROTO_UDP,
        laddr: LOCAL,
        raddr: REMOTE,
    };
    insert(&mut c, 1, &ip).unwrap();
    insert(&mut c, 2, &udp(KeyMode::Active, 53, 5353)).unwrap();
    let full = PacketSpec::udp(LOCAL, 53, REMOTE, 5353);
    assert_eq!(c.classify(ETH, &full.build()), Some(PathId(2)));
    // A fragment carries no usable UDP header: IP's path takes it (§3.4.2).
    let frag = PacketSpec {
        fragment: true,
        ..full
    };
    assert_eq!(c.classify(ETH, &frag.build()), Some(PathId(1)));
    // Another port from the same host: only the IP-level path matches.
    assert_eq!(
        c.classify(ETH, &PacketSpec::udp(LOCAL, 54, REMOTE, 5353).build()),
        Some(PathId(1))
    );
    // Truncated UDP header: the walk stops at IP.
    let cut = PacketSpec {
        truncate: 10,
        ..full
    };
    assert_eq!(c.classify(ETH, &cut.build()), Some(PathId(1)));
    // Garbage and empty input classify to nothing, without panicking.
    assert_eq!(c.classify(ETH, &[]), None);
    assert_eq!(c.classify(ETH, &[0xff; 13]), None);
}

#[test]
fn ambiguity_is_refused_naming_the_existing_path() {
    let mut c = classifier();
    insert(&mut c, 1, &udp(KeyMode::Active, 21, 3949)).unwrap();
    let err = insert(&mut c, 2, &udp(KeyMode::Active, 21, 3949)).unwrap_err();
    assert_eq!(
        err,
        ClassifyError::Ambiguous {
            new: PathId(2),
            existing: PathId(1),
            mode: KeyMode::Active
        }
    );
    // The same keys in the other mode are a different filter.
    insert(&mut c, 3, &udp(KeyMode::Passive, 21, 0)).unwrap();
    // Refused inserts leave no trace.
    assert!(!c.contains_path(PathId(2)));
    let nodes = c.node_count();
    let counted = FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: false,
        laddr: LOCAL,
        raddr: REMOTE,
        lport: 80,
        rport: 1,
        counted: true,
    };
    // IP's node for (UDP, LOCAL, REMOTE) already continues to UDP, not COUNT.
    let err = insert(&mut c, 4, &counted).unwrap_err();
    assert_eq!(
        err,
        ClassifyError::NextModuleConflict {
            new: PathId(4),
            existing: PathId(1),
            existing_next: UDP,
            requested: inet::COUNT,
        }
    );
    assert!(err
        .to_string()
        .contains("cannot tell which module refines the decision"));
    assert_eq!(c.node_count(), nodes);
    assert_eq!(
        insert(&mut c, 1, &udp(KeyMode::Active, 1, 1)),
        Err(ClassifyError::PathExists { path: PathId(1) })
    );
}

/// A pass-through module between IP and UDP (thesis §3.4.3.2).
#[test]
fn pass_through_module_is_walked_through() {
    let mut c = classifier();
    let counted = FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: true,
        laddr: LOCAL,
        raddr: REMOTE,
        lport: 80,
        rport: 1234,
        counted: true,
    };
    insert(&mut c, 7, &counted).unwrap();
    assert_eq!(
        c.classify(ETH, &PacketSpec::tcp(LOCAL, 80, REMOTE, 1234).build()),
        Some(PathId(7))
    );
    assert_eq!(
        c.classify(ETH, &PacketSpec::tcp(LOCAL, 80, REMOTE, 1235).build()),
        None
    );
    // ARP path: ETH(0x0806) then the non-demultiplexing ARP module.
    insert(
        &mut c,
        8,
        &FilterSpec::Arp {
            mode: KeyMode::Active,
        },
    )
    .unwrap();
    let arp = PacketSpec {
        payload: pathstack_classify::testing::packet::Payload::Arp,
        ..PacketSpec::tcp(LOCAL, 0, REMOTE, 0)
    };
    assert_eq!(c.classify(ETH, &arp.build()), Some(PathId(8)));
}

/// The establish chain: stage by stage through PREVIOUS_DEMUX_NODE, with
/// a module that stops classification at itself (it decrypts).
#[test]
fn register_along_the_establish_chain() {
    let mut c = classifier();
    let crypt = ModuleId(40);
    let p = PathId(5);
    let eth = c
        .register(
            p,
            KeyMode::Active,
            None,
            Level::demux(ETH, Key::from_array([8, 0])),
            Some(IPV4),
        )
        .unwrap();
    // A stage that passes a node which is not its path's tail is refused.
    let other = c
        .register(
            PathId(6),
            KeyMode::Active,
            None,
            Level::demux(ETH, Key::from_array([8, 6])),
            None,
        )
        .unwrap();
    assert_eq!(
        c.register(
            p,
            KeyMode::Active,
            Some(other),
            Level::pass_through(crypt),
            None
        ),
        Err(ClassifyError::NotChainTail {
            path: p,
            node: other
        })
    );
    // The wrong module after ETH.
    assert_eq!(
        c.register(
            p,
            KeyMode::Active,
            Some(eth),
            Level::pass_through(TCP),
            None
        ),
        Err(ClassifyError::ModuleMismatch {
            path: p,
            expected: IPV4,
            got: TCP
        })
    );
    // Mixing modes within a path.
    assert!(matches!(
        c.register(
            p,
            KeyMode::Passive,
            Some(eth),
            Level::pass_through(IPV4),
            None
        ),
        Err(ClassifyError::MixedModes { .. })
    ));
    let ip_key = Key::from_array([50, 192, 12, 69, 168, 18, 181, 0, 21]); // proto 50 = ESP
    let ip = c
        .register(
            p,
            KeyMode::Active,
            Some(eth),
            Level::demux(IPV4, ip_key),
            Some(crypt),
        )
        .unwrap();
    // The decrypting module ends classification: next = None, it carries the path.
    let end = c
        .register(
            p,
            KeyMode::Active,
            Some(ip),
            Level::pass_through(crypt),
            None,
        )
        .unwrap();
    assert_eq!(c.node(end).unwrap().path, Some(p));
    assert_eq!(c.node(ip).unwrap().next_module, Some(crypt));
    assert_eq!(
        c.register(
            p,
            KeyMode::Active,
            Some(end),
            Level::pass_through(UDP),
            None
        ),
        Err(ClassifyError::ChainEnded { path: p })
    );
    let mut esp = PacketSpec::udp(LOCAL, 1, REMOTE, 2).build();
    esp[14 + 9] = 50;
    assert_eq!(c.classify(ETH, &esp), Some(p));

    // A second chain (the other direction) is allowed, a third is not.
    let back = c
        .register(
            p,
            KeyMode::Active,
            None,
            Level::demux(ModuleId(41), Key::from_array([1])),
            None,
        )
        .unwrap();
    assert_eq!(c.node(back).unwrap().path, Some(p));
    assert_eq!(
        c.register(
            p,
            KeyMode::Active,
            None,
            Level::pass_through(ModuleId(42)),
            None
        ),
        Err(ClassifyError::TooManyChains { path: p })
    );
    assert_eq!(c.chain_count(), 3);

    // Removal is exact: counts drop, empty nodes are freed.
    assert_eq!(c.node(eth).unwrap().num_paths, 1); // path 6 hangs from ETH 0x0806, not 0x0800
    c.remove(p).unwrap();
    assert!(c.node(ip).is_none() && c.node(end).is_none() && c.node(back).is_none());
    assert_eq!(c.node_count(), 1);
    assert_eq!(c.classify(ETH, &esp), None);
    assert_eq!(c.remove(p), Err(ClassifyError::UnknownPath { path: p }));
    c.remove(PathId(6)).unwrap();
    assert_eq!(c.node_count(), 0);
}

#[test]
fn counts_and_next_module_follow_removals() {
    let mut c = classifier();
    insert(&mut c, 1, &udp(KeyMode::Active, 21, 1)).unwrap();
    insert(&mut c, 2, &udp(KeyMode::Active, 21, 2)).unwrap();
    let ip = FilterSpec::Ip {
        mode: KeyMode::Active,
        proto: inet::PROTO_UDP,
        laddr: LOCAL,
        raddr: REMOTE,
    };
    let eth = c
        .register(
            PathId(3),
            KeyMode::Active,
            None,
            Level::demux(ETH, Key::from_array([8, 0])),
            Some(IPV4),
        )
        .unwrap();
    let ipn = c
        .register(PathId(3), KeyMode::Active, Some(eth), ip.levels()[1], None)
        .unwrap();
    let info = c.node(ipn).unwrap();
    assert_eq!(
        (info.num_paths, info.path, info.next_module),
        (3, Some(PathId(3)), Some(UDP))
    );
    c.remove(PathId(1)).unwrap();
    c.remove(PathId(2)).unwrap();
    // No path continues below IP any more: the node forgets UDP.
    let info = c.node(ipn).unwrap();
    assert_eq!((info.num_paths, info.next_module), (1, None));
    assert_eq!(c.node_count(), 2);
    // ... so a path continuing to another module is now fine.
    let counted = FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: false,
        laddr: LOCAL,
        raddr: REMOTE,
        lport: 80,
        rport: 1,
        counted: true,
    };
    insert(&mut c, 4, &counted).unwrap();
}

#[test]
fn long_keys_and_bounds() {
    let mut c = Classifier::with_max_nodes(3);
    let m = ModuleId(9);
    c.set_partial_classifier(
        m,
        Box::new(|msg: &[u8], _| Some((Key::new(msg.get(..20)?)?, 20))),
    )
    .unwrap();
    let long = Key::new(&[7; 20]).unwrap();
    c.insert(PathId(1), KeyMode::Active, &[Level::demux(m, long)])
        .unwrap();
    let long2 = Key::new(&[8; 20]).unwrap();
    c.insert(PathId(2), KeyMode::Active, &[Level::demux(m, long2)])
        .unwrap();
    assert_eq!(c.classify(m, &[7; 30]), Some(PathId(1)));
    assert_eq!(c.classify(m, &[8; 20]), Some(PathId(2)));
    assert_eq!(c.classify(m, &[8; 19]), None);
    c.remove(PathId(1)).unwrap();
    let long3 = Key::new(&[9; 32]).unwrap();
    c.insert(
        PathId(3),
        KeyMode::Active,
        &[Level::demux(ModuleId(10), long3)],
    )
    .unwrap();
    c.insert(
        PathId(4),
        KeyMode::Active,
        &[Level::demux(ModuleId(11), long3)],
    )
    .unwrap();
    assert_eq!(
        c.insert(
            PathId(5),
            KeyMode::Active,
            &[Level::demux(ModuleId(12), long3)]
        ),
        Err(ClassifyError::TableFull { max_nodes: 3 })
    );
    assert_eq!(c.classify(m, &[8; 20]), Some(PathId(2)));
    assert_eq!(
        c.insert(PathId(u32::MAX), KeyMode::Active, &[Level::pass_through(m)]),
        Err(ClassifyError::ReservedId)
    );
    assert_eq!(
        c.insert(
            PathId(6),
            KeyMode::Active,
            &vec![Level::pass_through(m); 17]
        ),
        Err(ClassifyError::TooDeep {
            path: PathId(6),
            max: 16
        })
    );
    assert_eq!(
        c.insert(PathId(6), KeyMode::Active, &[]),
        Err(ClassifyError::EmptyChain { path: PathId(6) })
    );
    assert!(matches!(
        c.set_partial_classifier(ModuleId(1 << 20), Box::new(inet::EthClassifier)),
        Err(ClassifyError::ModuleIdTooLarge { .. })
    ));
}

/// Thousands of paths, removed and re-added in a scrambled order: the edge
/// and tails tables grow (rebuilt from the node slab) and shift entries back
/// on every removal, and each path stays found by its packets, each removed
/// one by none, and by its id for removal.
#[test]
fn many_paths_survive_growth_and_churn() {
    const N: u32 = 3000;
    let mut c = classifier();
    // Several remote hosts, so IP nodes have one child, several, or none.
    let spec = |i: u32| FilterSpec::Transport {
        mode: KeyMode::Active,
        tcp: i % 3 == 0,
        laddr: LOCAL,
        raddr: [10, 0, (i % 7) as u8, (i % 5) as u8],
        lport: 80,
        rport: 1024 + i as u16,
        counted: false,
    };
    let packet = |i: u32| {
        let FilterSpec::Transport {
            tcp, raddr, rport, ..
        } = spec(i)
        else {
            unreachable!()
        };
        let p = if tcp {
            PacketSpec::tcp(LOCAL, 80, raddr, rport)
        } else {
            PacketSpec::udp(LOCAL, 80, raddr, rport)
        };
        p.build()
    };
    for i in 0..N {
        insert(&mut c, i, &spec(i)).unwrap();
    }
    let scrambled = |k: u32| (k * 1999) % N;
    for k in 0..N / 2 {
        c.remove(PathId(scrambled(k))).unwrap();
    }
    c.check_invariants().unwrap();
    for i in 0..N {
        let gone = (0..N / 2).any(|k| scrambled(k) == i);
        let want = (!gone).then_some(PathId(i));
        assert_eq!(c.classify(ETH, &packet(i)), want, "path {i}");
        assert_eq!(c.contains_path(PathId(i)), !gone);
    }
    for k in 0..N / 2 {
        insert(&mut c, scrambled(k), &spec(scrambled(k))).unwrap();
    }
    c.check_invariants().unwrap();
    for i in 0..N {
        assert_eq!(c.classify(ETH, &packet(i)), Some(PathId(i)), "path {i}");
        c.remove(PathId(i)).unwrap();
    }
    assert_eq!((c.node_count(), c.chain_count()), (0, 0));
}

/// The edge and tails tables spread what real stacks register — ports in
/// sequence below one host, hosts in sequence, path ids in sequence — as a
/// random hash would, whatever the classifier's seeds: a hash that maps a
/// sequence linearly onto the slots spreads it perfectly for some seeds and
/// piles it up for others. At these loads (about 0.73) a random hash
/// leaves an entry 1.35 slots from home on average; a linear one left some
/// seeds at 3 to 11.
#[test]
fn tables_spread_sequences_for_any_seed() {
    for hosts in [false, true] {
        for _classifier in 0..20 {
            let mut c = classifier();
            for i in 0..3000u32 {
                let (raddr, rport) = if hosts {
                    ([10, 1, (i >> 8) as u8, i as u8], 5000)
                } else {
                    (REMOTE, 1024 + i as u16)
                };
                let f = FilterSpec::Transport {
                    mode: KeyMode::Active,
                    tcp: true,
                    laddr: LOCAL,
                    raddr,
                    lport: 80,
                    rport,
                    counted: false,
                };
                insert(&mut c, i, &f).unwrap();
            }
            let flows = c.flow_table_displacements();
            assert_eq!(flows.0, 3000, "every connection is a flow");
            for (table, (n, mean, max)) in [
                ("edges", c.table_displacements(false)),
                ("tails", c.table_displacements(true)),
                ("flows", flows),
            ] {
                assert!(
                    mean < 3.0,
                    "{n} entries ({table}, hosts: {hosts}) {mean:.2} slots from home on average, at most {max}"
                );
            }
        }
    }
}
