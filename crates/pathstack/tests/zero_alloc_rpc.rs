//! The main job allocates nothing in steady state on the RPC stack too: a
//! zero-byte call of the echo procedure (the x-kernel's XRPCTEST, as
//! `pingpong_bench --transport rpc` makes it) between two hosts running
//! RPC / MSELECT / VCHAN / CHAN / BID / BLAST over ETH on the in-memory
//! wire makes zero heap allocations per round trip after warm-up, for
//! both schedulers and both forms (modular, specialized): the channels
//! held on the paths, CHAN's kept copies and the server path's
//! retransmission timer reuse what the first calls made.
//!
//! One test in this binary: the allocation counter is process-wide.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::{Dir, PathId, SchedKind};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::rpc::{Echo, Peer, RpcNet};
use pathstack::rpc_protocols::anno::{CallStatus, RpcAnno, RpcTag};
use pathstack::rpc_protocols::modules::inline;
use pathstack::rpc_protocols::modules::protocol::XRPCTEST_ID;
use pathstack::rpc_protocols::modules::rpc::RpcModule;

use pathstack_testutil::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

fn host(
    addr: &str,
    mac: u8,
    sched: SchedKind,
    dev: impl pathstack::core::Device + 'static,
) -> Host {
    let mut c = HostConfig::parse(addr).unwrap();
    c.mac = Some(MacAddr([2, 0, 0, 0, 0, mac]));
    c.sched = sched;
    c.udp = false;
    c.tcp = false;
    c.rpc = Some(RpcNet::Eth);
    Host::new(c, dev).unwrap()
}

/// The `RPC` client and server paths of `h`.
fn rpc_paths(h: &Host) -> (PathId, PathId) {
    let s = h.stack();
    let rpc = s
        .module_id("rpc")
        .and_then(|id| s.module::<RpcModule>(id))
        .unwrap();
    (rpc.client_path().unwrap(), rpc.server_path().unwrap())
}

/// Specializes both RPC paths of `h` (the fused fast form in front).
fn specialize(h: &mut Host) {
    for r in inline::fast_rules::<DriverStage>(RpcNet::Eth, DRIVER_SPEC.name) {
        h.stack_mut().add_rule(r);
    }
    let (client, server) = rpc_paths(h);
    for p in [client, server] {
        assert!(!h.stack_mut().path_optimize(p).unwrap().is_empty());
    }
}

/// One zero-byte call of the echo procedure in slot `slot`; whether its
/// outcome came back `Ok` and empty. The first call waits for BIDCTL's
/// handshake (CHAN holds it and sends it on the first contact).
fn call(client: &mut Host, server: &mut Host, path: PathId, peer: Peer, slot: u16) -> bool {
    let mut m = client.stack().pool().alloc_copy(&[]).unwrap();
    let a = m.anno_mut();
    a.set_rpc_peer(peer);
    a.set_procedure(XRPCTEST_ID);
    a.set_rpc_tag(RpcTag::slot(slot));
    let _ = client.stack_mut().send(path, Dir::Down, m);
    for _ in 0..10_000 {
        client.poll();
        server.poll();
        client.poll();
        if let Some(r) = client.stack_mut().recv(path, Dir::Up) {
            return r.anno().rpc_tag().is_some_and(|t| {
                t.slot == slot && t.status == CallStatus::Ok && r.as_slice().is_empty()
            });
        }
    }
    false
}

#[test]
fn rpc_ping_pong_makes_no_heap_allocations_after_warm_up() {
    for sched in [SchedKind::PerMessage, SchedKind::Ldlp { batch: 32 }] {
        for specialized in [false, true] {
            let (a, b) = memory_pair(MemoryConfig::default());
            let mut client = host("10.0.0.1/24", 1, sched, a);
            let mut server = host("10.0.0.2/24", 2, sched, b);
            server
                .rpc()
                .server()
                .unwrap()
                .register(XRPCTEST_ID, Echo)
                .unwrap();
            if specialized {
                specialize(&mut client);
                specialize(&mut server);
            }
            let peer = server.rpc().peer().unwrap();
            let path = rpc_paths(&client).0;
            // Warm-up: the boot-id handshake, the pools, channels and
            // their kept copies, message buffers, queues, timers.
            let mut slot = 0u16;
            let start = counting_alloc::allocations();
            for _ in 0..1_000 {
                slot = slot.wrapping_add(1);
                assert!(call(&mut client, &mut server, path, peer, slot));
            }
            let before = counting_alloc::allocations();
            // The counter sees this process's allocations (the first calls
            // make the pools and channels): a zero below is not vacuous.
            assert!(before > start, "{sched:?}: the warm-up allocated");
            let rounds = 5_000;
            let mut answered = 0;
            for _ in 0..rounds {
                slot = slot.wrapping_add(1);
                answered += usize::from(call(&mut client, &mut server, path, peer, slot));
            }
            let allocs = counting_alloc::allocations() - before;
            let form = if specialized {
                "specialized"
            } else {
                "modular"
            };
            assert_eq!(answered, rounds, "{sched:?} {form}: every call answered");
            assert_eq!(
                allocs, 0,
                "{sched:?} {form}: {allocs} heap allocations in {rounds} RPC round trips"
            );
        }
    }
}
