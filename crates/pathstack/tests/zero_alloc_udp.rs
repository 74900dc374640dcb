//! The main job allocates nothing in steady state: a 1-byte UDP ping-pong
//! between two Internet hosts on the in-memory wire (the `pingpong`
//! example's ECHO/UDP/IP/ARP/ETH/DRIVER paths, the server's ECHO turning the
//! datagram around in its path) makes zero heap allocations per round trip
//! after warm-up, for both schedulers and all three path forms (modular,
//! inlined, specialized).
//!
//! One test in this binary: the allocation counter is process-wide.

use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::synthetic::{EchoStage, ECHO_SPEC};
use pathstack::core::{Dir, PathId, SchedKind};
use pathstack::host::{Below, Host, HostConfig, UpperModule};
use pathstack::inet::modules::inline;
use pathstack::inet::MacAddr;

use pathstack_testutil::counting_alloc;

#[global_allocator]
static GLOBAL: counting_alloc::CountingAlloc = counting_alloc::CountingAlloc;

const PORT: u16 = 7;

fn host(
    addr: &str,
    mac: u8,
    sched: SchedKind,
    mode: &str,
    dev: impl pathstack::core::Device + 'static,
) -> Host {
    let mut c = HostConfig::parse(addr).unwrap();
    c.mac = Some(MacAddr([2, 0, 0, 0, 0, mac]));
    c.sched = sched;
    c.upper = vec![UpperModule::new("app", "ECHO")
        .param("mode", mode)
        .over("down", Below::Udp)];
    Host::new(c, dev).unwrap()
}

/// How a path runs: modular, path-inlined, or specialized (inlined with
/// the fused fast form in front).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Form {
    Std,
    Inlined,
    Specialized,
}

fn app_path(h: &mut Host, local: u16, remote: Option<[u8; 4]>, form: Form) -> PathId {
    let app = h.stack().module_id("app").unwrap();
    let mut attrs = Attrs::new();
    let remote = match remote {
        Some(ip) => vec![AddrPart::Ipv4(ip), AddrPart::Port(PORT)],
        None => {
            attrs.insert(&PASSIVE_OPEN, true);
            vec![]
        }
    };
    attrs.insert(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Port(local)],
            remote,
        },
    );
    let p = h.stack_mut().path_create(app, attrs).unwrap();
    let rule = match form {
        Form::Std => return p,
        Form::Inlined => {
            inline::udp_rule::<EchoStage, DriverStage>(ECHO_SPEC.name, DRIVER_SPEC.name)
        }
        Form::Specialized => {
            inline::udp_fast_rule::<EchoStage, DriverStage>(ECHO_SPEC.name, DRIVER_SPEC.name)
        }
    };
    h.stack_mut().add_rule(rule);
    assert!(!h.stack_mut().path_optimize(p).unwrap().is_empty());
    p
}

/// One round trip; whether the answer came back.
fn round_trip(client: &mut Host, server: &mut Host, cpath: PathId) -> bool {
    let m = client.stack().pool().alloc_copy(b"x").unwrap();
    client.stack_mut().send(cpath, Dir::Down, m).unwrap();
    for _ in 0..8 {
        client.poll();
        server.poll();
        client.poll();
        if let Some(reply) = client.stack_mut().recv(cpath, Dir::Up) {
            return reply.as_slice() == b"x";
        }
    }
    false
}

#[test]
fn udp_ping_pong_makes_no_heap_allocations_after_warm_up() {
    for sched in [SchedKind::PerMessage, SchedKind::Ldlp { batch: 32 }] {
        for form in [Form::Std, Form::Inlined, Form::Specialized] {
            let (a, b) = memory_pair(MemoryConfig::default());
            let mut client = host("10.0.0.1/24", 1, sched, "sink", a);
            let mut server = host("10.0.0.2/24", 2, sched, "echo", b);
            app_path(&mut server, PORT, None, form);
            let cpath = app_path(&mut client, 0, Some([10, 0, 0, 2]), form);
            // Warm-up: ARP resolution, pool buffers, queues, timers.
            for _ in 0..1_000 {
                assert!(round_trip(&mut client, &mut server, cpath));
            }
            let before = counting_alloc::allocations();
            let rounds = 5_000;
            let mut answered = 0;
            for _ in 0..rounds {
                answered += usize::from(round_trip(&mut client, &mut server, cpath));
            }
            let allocs = counting_alloc::allocations() - before;
            assert_eq!(
                answered, rounds,
                "{sched:?} {form:?}: every round trip answered"
            );
            assert_eq!(
                allocs, 0,
                "{sched:?} {form:?}: {allocs} heap allocations in {rounds} UDP round trips"
            );
        }
    }
}
