//! The RPC stack as shipped: `graphs/rpc.graph` and `graphs/rpc-ip.graph`
//! are what `RpcGraph::to_text` makes and build hosts that call each other
//! (`Host::from_graph_file` finds the stack by its instances `rpc` and
//! `blast`), and the path-inlining rules of `pathstack_rpc::modules::inline`
//! (PIN) apply to the client and server paths of both hosts over ETH and IP
//! without changing what a call returns.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::SchedKind;
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::HostGraph;
use pathstack::inet::MacAddr;
use pathstack::rpc::{Echo, RpcNet};
use pathstack::rpc_protocols::modules::protocol::XRPCTEST_ID;
use pathstack::rpc_protocols::modules::rpc::RpcModule;
use pathstack::rpc_protocols::modules::{inline, RpcGraph};
use std::time::{Duration, Instant};

fn graph_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../graphs")
        .join(name)
}

/// The statements of a graph text: comments and blank space taken out.
fn statements(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// Calls `XRPCTEST_ID` on `server` from `client` with `request` and
/// returns the reply, polling both hosts (at most 5 s).
fn call(client: &mut Host, server: &mut Host, request: &[u8]) -> Vec<u8> {
    let peer = server.rpc().peer().expect("server is an RPC host");
    let c = client
        .rpc()
        .start(peer, XRPCTEST_ID, request)
        .expect("call starts");
    let t0 = Instant::now();
    loop {
        client.poll();
        server.poll();
        if let Some(m) = client.rpc().poll(&c).expect("call succeeds") {
            return m.as_slice().to_vec();
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "no reply within 5 s");
    }
}

#[test]
fn shipped_rpc_graphs_are_what_rpc_graph_makes() {
    let host = HostGraph::new("10.0.0.1".parse().unwrap(), 24, MacAddr([2, 0, 0, 0, 0, 1]));
    for (file, net) in [("rpc.graph", RpcNet::Eth), ("rpc-ip.graph", RpcNet::Ip)] {
        let shipped = std::fs::read_to_string(graph_file(file)).unwrap();
        let made = RpcGraph::new(host.clone(), net).to_text();
        assert_eq!(statements(&shipped), statements(&made), "graphs/{file}");
    }
}

#[test]
fn hosts_from_the_rpc_graph_files_call_each_other() {
    for file in ["rpc.graph", "rpc-ip.graph"] {
        let (a, b) = memory_pair(MemoryConfig::default());
        let mut client = Host::from_graph_file(graph_file(file), a).unwrap();
        // The server: the same graph with the second host's addresses.
        let text = std::fs::read_to_string(graph_file(file))
            .unwrap()
            .replace("10.0.0.1", "10.0.0.2")
            .replace("02:00:00:00:00:01", "02:00:00:00:00:02");
        let mut server = Host::from_graph(&text, file, SchedKind::PerMessage, b).unwrap();
        server
            .rpc()
            .server()
            .unwrap()
            .register(XRPCTEST_ID, Echo)
            .unwrap();
        assert_eq!(call(&mut client, &mut server, b""), b"", "{file}");
        assert_eq!(call(&mut client, &mut server, b"ping"), b"ping", "{file}");
        assert_eq!(server.rpc().server().unwrap().calls(), 2, "{file}");
    }
}

/// Two hosts with the RPC stack over `net`, both hosts' `RPC` paths
/// inlined when `pin`.
fn pair(net: RpcNet, sched: SchedKind, pin: bool) -> (Host, Host) {
    let (a, b) = memory_pair(MemoryConfig::default());
    let cfg = |cidr: &str, n: u8| HostConfig {
        rpc: Some(net),
        sched,
        mac: Some(MacAddr([2, 0, 0, 0, 0, n])),
        ..HostConfig::parse(cidr).unwrap()
    };
    let mut client = Host::new(cfg("10.0.0.1/24", 1), a).unwrap();
    let mut server = Host::new(cfg("10.0.0.2/24", 2), b).unwrap();
    server
        .rpc()
        .server()
        .unwrap()
        .register(XRPCTEST_ID, Echo)
        .unwrap();
    if pin {
        for h in [&mut client, &mut server] {
            for r in inline::rules::<DriverStage>(net, DRIVER_SPEC.name) {
                h.stack_mut().add_rule(r);
            }
            let (cp, sp) = paths(h);
            for p in [cp, sp] {
                let applied = h.stack_mut().path_optimize(p).unwrap();
                assert_eq!(
                    applied.len(),
                    1,
                    "one rule applies to path {p:?}: {applied:?}"
                );
            }
        }
    }
    (client, server)
}

fn paths(h: &Host) -> (pathstack::core::PathId, pathstack::core::PathId) {
    let s = h.stack();
    let rpc = s.module::<RpcModule>(s.module_id("rpc").unwrap()).unwrap();
    (rpc.client_path().unwrap(), rpc.server_path().unwrap())
}

fn inlined(h: &Host) -> [bool; 2] {
    let (c, s) = paths(h);
    [c, s].map(|p| h.stack().path(p).unwrap().is_inlined())
}

#[test]
fn pin_inlines_both_rpc_paths_of_both_hosts_and_calls_still_echo() {
    let sizes = [0usize, 1, 100, 1400, 3000, 23_000];
    for net in [RpcNet::Eth, RpcNet::Ip] {
        for sched in [SchedKind::PerMessage, SchedKind::Ldlp { batch: 32 }] {
            for pin in [false, true] {
                let (mut client, mut server) = pair(net, sched, pin);
                assert_eq!(inlined(&client), [pin; 2], "{net:?} {sched:?} pin={pin}");
                assert_eq!(inlined(&server), [pin; 2], "{net:?} {sched:?} pin={pin}");
                let max = client.rpc().max_request().unwrap();
                for &n in &sizes {
                    let n = n.min(max);
                    let req: Vec<u8> = (0..n).map(|i| (i * 31 + 7) as u8).collect();
                    let reply = call(&mut client, &mut server, &req);
                    assert!(
                        reply == req,
                        "{net:?} {sched:?} pin={pin}: {n}-byte echo differs"
                    );
                }
                assert_eq!(server.rpc().server().unwrap().calls(), sizes.len() as u64);
            }
        }
    }
}

#[test]
fn the_rules_match_only_their_own_network() {
    // Rules for IP do not apply to the paths of an RPC stack on ETH.
    let (mut h, _) = pair(RpcNet::Eth, SchedKind::PerMessage, false);
    for r in inline::rules::<DriverStage>(RpcNet::Ip, DRIVER_SPEC.name) {
        h.stack_mut().add_rule(r);
    }
    let (c, s) = paths(&h);
    assert!(h.stack_mut().path_optimize(c).unwrap().is_empty());
    assert!(h.stack_mut().path_optimize(s).unwrap().is_empty());
    assert_eq!(inlined(&h), [false, false]);
}

/// The instant a call to a peer that never answers ends with `TimedOut`,
/// on a host whose CHAN deadline is `deadline` (`None`: the default),
/// polled on a manual clock in 100 ms steps.
fn silent_peer_times_out_after(net: RpcNet, deadline: Option<Duration>) -> Duration {
    use pathstack::core::Instant as StackInstant;
    use pathstack::rpc::RpcError;
    // The other end of the wire is never polled: nothing answers.
    let (a, _silent) = memory_pair(MemoryConfig::default());
    let mut cfg = HostConfig {
        rpc: Some(net),
        ..HostConfig::parse("10.0.0.1/24").unwrap()
    };
    if let Some(d) = deadline {
        cfg.rpc_call_timeout = d;
    }
    let mut client = Host::new(cfg, a).unwrap();
    let t0 = StackInstant::from_millis(1000);
    client.set_manual_clock(t0);
    let peer = match net {
        RpcNet::Eth => pathstack::rpc::Peer::mac(MacAddr([2, 0, 0, 0, 0, 2])),
        RpcNet::Ip => pathstack::rpc::Peer::ipv4("10.0.0.2".parse().unwrap()),
    };
    let call = client.rpc().start(peer, XRPCTEST_ID, b"anyone?").unwrap();
    for step in 1..=3000u64 {
        let now = t0 + pathstack::core::time::Duration::from_millis(100 * step);
        client.set_manual_clock(now);
        client.poll();
        match client.rpc().poll(&call) {
            Ok(None) => {}
            Err(RpcError::TimedOut { .. }) => return Duration::from_millis(100 * step),
            other => panic!("{net:?}: the call ended with {other:?}"),
        }
    }
    panic!("{net:?}: the call was still waiting after 300 s");
}

#[test]
fn the_host_sets_how_long_chan_tries_a_call() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        assert_eq!(
            silent_peer_times_out_after(net, None),
            Duration::from_secs(30)
        );
        assert_eq!(
            silent_peer_times_out_after(net, Some(Duration::from_secs(75))),
            Duration::from_secs(75)
        );
        // Whole seconds, rounded up.
        assert_eq!(
            silent_peer_times_out_after(net, Some(Duration::from_millis(6_500))),
            Duration::from_secs(7)
        );
    }
}

/// Both RPC paths of a host are flows of its classifier (issue 26, item
/// 5): every level of the ETH or IP / BLAST / BID / CHAN chain has a flow
/// layout for passive paths (RPC's serve every peer), and no active path
/// shares their EtherType, so a short call's frames reach their path with
/// one probe. Against a host without the RPC stack, the flows are the
/// client's and the server's path (BIDCTL's, one or two levels deep, is
/// too short to be filed passive); if either fell back to the tree walk
/// the count would be short.
#[test]
fn both_rpc_paths_are_flows() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        let (mut client, mut server) = pair(net, SchedKind::PerMessage, false);
        assert_eq!(call(&mut client, &mut server, b"x"), b"x");
        let (a, _) = memory_pair(MemoryConfig::default());
        let plain = Host::new(
            HostConfig {
                mac: Some(MacAddr([2, 0, 0, 0, 0, 1])),
                ..HostConfig::parse("10.0.0.1/24").unwrap()
            },
            a,
        )
        .unwrap();
        let without = plain.stack().demux().flow_count();
        for h in [&client, &server] {
            let flows = h.stack().demux().flow_count();
            assert_eq!(
                flows,
                without + 2,
                "{net:?}: the RPC client and server paths"
            );
        }
    }
}
