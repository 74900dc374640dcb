//! Two stacks whose NIC is the emulated LANCE, joined by the in-memory
//! wire, running the core's synthetic path ECHO / HDR / HDR / LINK / LANCE
//! (the `PAIR_GRAPH` with `LANCE` in place of `DRIVER`): echoes come back,
//! the path inlines over the LANCE stage, and `copy` and `direct` put the
//! same bytes on the wire.

use pathstack_core::attrs::keys::{AddrPart, Participants, PARTICIPANTS};
use pathstack_core::device::memory::{memory_pair, MemoryConfig};
use pathstack_core::device::record::{Recorder, Recording};
use pathstack_core::device::Device;
use pathstack_core::graph::ModuleGraph;
use pathstack_core::rules::Rule;
use pathstack_core::stack::ModuleTypes;
use pathstack_core::synthetic::{EchoStage, HdrStage, LinkStage, PAIR_GRAPH};
use pathstack_core::{Attrs, Dir, Instant, PathId, Stack};
use pathstack_devices::lance::{register, Access, LanceModule, LanceStage};

/// Frames recorded per side: far more than any test sends.
const MAX_FRAMES: usize = 100_000;

fn graph_text(mode: &str, lance_params: &str) -> String {
    let text = PAIR_GRAPH.replace("{mode}", mode);
    let replaced = text.replace(
        "module=DRIVER device=0",
        &format!("module=LANCE device=0 {lance_params}"),
    );
    assert_ne!(
        text, replaced,
        "PAIR_GRAPH no longer names DRIVER as expected"
    );
    replaced
}

fn inline_rule() -> Rule {
    Rule::inline::<(EchoStage, HdrStage, HdrStage, LinkStage, LanceStage)>(
        "inline ECHO/HDR/HDR/LINK/LANCE",
        &["ECHO", "HDR", "HDR", "LINK", "LANCE"],
    )
}

fn side(mode: &str, lance_params: &str, dev: impl Device + 'static) -> (Stack, PathId) {
    let mut types = ModuleTypes::core();
    register(&mut types);
    let graph = ModuleGraph::from_text(
        &graph_text(mode, lance_params),
        Some("lance_pair.graph"),
        &types.specs(),
    )
    .unwrap();
    let mut stack = Stack::builder(graph, types)
        .device(dev)
        .rule(inline_rule())
        .build()
        .unwrap();
    let echo = stack.module_id("echo").unwrap();
    let attrs = Attrs::new().with(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Id(7)],
            remote: vec![],
        },
    );
    let path = stack.path_create(echo, attrs).unwrap();
    (stack, path)
}

struct Pair {
    client: Stack,
    server: Stack,
    client_path: PathId,
    server_path: PathId,
    client_sent: Recording,
    server_sent: Recording,
    now: Instant,
}

impl Pair {
    fn new(lance_params: &str, inline: bool) -> Self {
        let (a, b) = memory_pair(MemoryConfig::default());
        let (a, client_sent) = Recorder::new(a, MAX_FRAMES);
        let (b, server_sent) = Recorder::new(b, MAX_FRAMES);
        let (mut client, client_path) = side("sink", lance_params, a);
        let (mut server, server_path) = side("echo", lance_params, b);
        if inline {
            assert_eq!(client.path_optimize(client_path).unwrap().len(), 1);
            assert_eq!(server.path_optimize(server_path).unwrap().len(), 1);
        }
        Pair {
            client,
            server,
            client_path,
            server_path,
            client_sent,
            server_sent,
            now: Instant::ZERO,
        }
    }

    /// Sends each payload from the client and runs both stacks until the
    /// replies are back; returns the replies in order.
    fn exchange(&mut self, payloads: &[Vec<u8>]) -> Vec<Vec<u8>> {
        for p in payloads {
            let m = self.client.pool().alloc_copy(p).unwrap();
            self.client
                .send(self.client_path, Dir::Down, m)
                .unwrap_or_else(|_| panic!("client path refused a message"));
        }
        let mut replies = Vec::new();
        for _ in 0..200 {
            self.now = Instant::from_nanos(self.now.as_nanos() + 1_000);
            self.client.poll(self.now);
            self.server.poll(self.now);
            self.client.poll(self.now);
            while let Some(r) = self.client.recv(self.client_path, Dir::Up) {
                replies.push(r.as_slice().to_vec());
            }
            if replies.len() >= payloads.len() {
                break;
            }
        }
        replies
    }

    fn lance(stack: &Stack) -> &LanceModule {
        let id = stack.module_id("wire").unwrap();
        stack.module::<LanceModule>(id).unwrap()
    }

    fn wire_frames(&self) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        (self.client_sent.frames(), self.server_sent.frames())
    }
}

fn payloads(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| (0..(1 + i * 53 % 1400)).map(|k| (k ^ i) as u8).collect())
        .collect()
}

fn stat(stack: &Stack, key: &str) -> u64 {
    let id = stack.module_id("wire").unwrap();
    stack
        .module_stats(id)
        .unwrap()
        .into_iter()
        .find(|(k, _)| k == key)
        .unwrap_or_else(|| panic!("no stat {key}"))
        .1
}

#[test]
fn echoes_come_back_over_the_lance_with_both_strategies() {
    for access in ["copy", "direct"] {
        let mut pair = Pair::new(&format!("access={access} promisc=true"), false);
        assert_eq!(
            Pair::lance(&pair.client).access(),
            access.parse::<Access>().unwrap()
        );
        let sent = payloads(20);
        let got = pair.exchange(&sent);
        assert_eq!(got, sent, "{access}");
        let c = &pair.client;
        assert_eq!(stat(c, "tx_frames"), 20);
        assert_eq!(stat(c, "rx_frames"), 20);
        assert_eq!(stat(&pair.server, "rx_frames"), 20);
        assert_eq!(stat(&pair.server, "tx_frames"), 20);
        assert!(stat(c, "desc_word_reads") > 0 && stat(c, "desc_word_writes") > 0);
        assert_eq!(stat(c, "rx_errors") + stat(c, "tx_errors"), 0);
        assert!(pair.server.path(pair.server_path).is_some());
        assert_eq!(
            Pair::lance(&pair.client).mac(),
            MemoryConfig::default().mac_a,
            "the station address comes from the device"
        );
        // Steady state: the rings and the pools need no heap allocation.
        let heap = |s: &Stack| s.pool().stats().heap_allocs;
        let before = (heap(&pair.client), heap(&pair.server));
        assert_eq!(pair.exchange(&sent), sent);
        assert_eq!((heap(&pair.client), heap(&pair.server)), before);
    }
}

#[test]
fn small_buffers_carry_frames_in_several_descriptors() {
    let mut pair = Pair::new(
        "access=direct promisc=true buf_size=64 rx_ring=128 tx_ring=64",
        false,
    );
    let sent = payloads(12);
    assert_eq!(pair.exchange(&sent), sent);
}

#[test]
fn the_path_inlines_over_the_lance_stage() {
    let mut pair = Pair::new("access=direct promisc=true", true);
    let sent = payloads(8);
    assert_eq!(pair.exchange(&sent), sent);
}

#[test]
fn copy_and_direct_put_identical_frames_on_the_wire() {
    let sent = payloads(30);
    let mut copy = Pair::new("access=copy promisc=true buf_size=512", false);
    let mut direct = Pair::new("access=direct promisc=true buf_size=512", false);
    assert_eq!(copy.exchange(&sent), sent);
    assert_eq!(direct.exchange(&sent), sent);
    let (cc, cs) = copy.wire_frames();
    let (dc, ds) = direct.wire_frames();
    assert_eq!(cc.len(), 30);
    assert_eq!(cc, dc, "client frames differ");
    assert_eq!(cs, ds, "server frames differ");
    for key in [
        "chip_tx_frames",
        "chip_rx_frames",
        "interrupts",
        "buf_bytes_written",
    ] {
        assert_eq!(stat(&copy.client, key), stat(&direct.client, key), "{key}");
        assert_eq!(stat(&copy.server, key), stat(&direct.server, key), "{key}");
    }
    let words = |s: &Stack| stat(s, "desc_word_reads") + stat(s, "desc_word_writes");
    assert!(words(&direct.client) < words(&copy.client));
    assert!(words(&direct.server) < words(&copy.server));
}

#[test]
fn graph_errors_name_the_parameter() {
    let mut types = ModuleTypes::core();
    register(&mut types);
    let graph = ModuleGraph::from_text(
        &graph_text("echo", "access=dense"),
        Some("bad.graph"),
        &types.specs(),
    )
    .unwrap();
    let (a, _b) = memory_pair(MemoryConfig::default());
    let e = Stack::builder(graph, types)
        .device(a)
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("access") && e.contains("`copy`"), "{e}");

    let mut types = ModuleTypes::core();
    register(&mut types);
    let graph = ModuleGraph::from_text(
        &graph_text("echo", "rx_ring=3"),
        Some("bad.graph"),
        &types.specs(),
    )
    .unwrap();
    let (a, _b) = memory_pair(MemoryConfig::default());
    let e = Stack::builder(graph, types)
        .device(a)
        .build()
        .unwrap_err()
        .to_string();
    assert!(e.contains("receive ring of 3"), "{e}");

    let mut types = ModuleTypes::core();
    register(&mut types);
    let graph = ModuleGraph::from_text(
        &graph_text("echo", "mac=02:00:00:00:00:77"),
        None,
        &types.specs(),
    )
    .unwrap();
    let (a, _b) = memory_pair(MemoryConfig::default());
    let stack = Stack::builder(graph, types).device(a).build().unwrap();
    assert_eq!(Pair::lance(&stack).mac(), [2, 0, 0, 0, 0, 0x77]);
}
