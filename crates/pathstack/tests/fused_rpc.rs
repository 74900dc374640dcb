//! The fused fast form of the RPC paths (`pathstack_rpc::modules::inline::
//! fast_rules`: BID, BLAST and the link under CHAN) against the modular
//! stages it stands in front of (issue 26, item 1), over ETH and over IP.
//!
//! Two worlds live through the same random history. Each has a host `A`
//! — its `RPC` client and server paths specialized in one world, modular
//! in the other — and a modular peer `B`, joined through the test, which
//! relays their frames and may lose, duplicate, replay or mutate (flip a
//! byte, truncate, pad, re-address) any frame on its way to `A`. `A` calls
//! `B` (zero-byte to fragmenting requests: its client path) and `B` calls
//! `A` (its server path), and time passes far enough for CHAN's
//! retransmissions. After every step both worlds' `A` must have put the
//! same frames on the wire, finished the same calls the same way, and
//! counted the same on every path and module: the fast form handles
//! exactly what the stages would, or declines.
//!
//! The boot ids of the hosts come from the wall clock and a process-wide
//! counter, so they differ between the worlds: frames are compared with
//! each world's boot ids replaced by the same markers, and BIDCTL's frames
//! (which also carry a wall-clock query tag; not on the fast form's
//! paths) by their length only.

use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::{Device, Duration, Instant, PathId};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::rpc::RpcCall;
use pathstack::rpc::{Echo, Peer, RpcNet};
use pathstack::rpc_protocols::modules::bidctl::BidctlModule;
use pathstack::rpc_protocols::modules::inline;
use pathstack::rpc_protocols::modules::protocol::XRPCTEST_ID;
use pathstack::rpc_protocols::modules::rpc::RpcModule;
use pathstack::rpc_protocols::modules::vchan::VchanStage;
use proptest::prelude::*;
use std::any::Any;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];
/// Where `A`'s markers replace boot ids in compared frames.
const MARKS: [[u8; 4]; 2] = [[0xB0, 0x07, 0x1D, 0xA0], [0xB0, 0x07, 0x1D, 0xB0]];

/// `A` (specialized or modular), its modular peer `B`, and the test's
/// ends of the two wires.
struct World {
    net: RpcNet,
    a: Host,
    b: Host,
    /// The wire end facing `A` (what `A` sends comes out here).
    to_a: MemoryEnd,
    /// The wire end facing `B`.
    to_b: MemoryEnd,
    now: Instant,
    /// `A`'s and `B`'s calls in flight, in the order started.
    calls: Vec<(char, RpcCall)>,
    /// What `B` sent `A` so far (for replays).
    from_b: Vec<Vec<u8>>,
    /// What the test handed `A` but did not compare yet: the frames `A`
    /// put out and the outcomes of its calls and of `B`'s.
    out_a: Vec<String>,
    outcomes: Vec<String>,
}

fn rpc_paths(h: &Host) -> (PathId, PathId) {
    let s = h.stack();
    let rpc = s.module::<RpcModule>(s.module_id("rpc").unwrap()).unwrap();
    (rpc.client_path().unwrap(), rpc.server_path().unwrap())
}

fn boot_id(h: &Host) -> [u8; 4] {
    let s = h.stack();
    let ctl = s
        .module::<BidctlModule>(s.module_id("bidctl").unwrap())
        .unwrap();
    ctl.local_bid().0.to_be_bytes()
}

impl World {
    fn new(net: RpcNet, specialized: bool) -> World {
        let (a_dev, to_a) = memory_pair(MemoryConfig::default());
        let (b_dev, to_b) = memory_pair(MemoryConfig::default());
        let cfg = |cidr: &str, mac: [u8; 6]| HostConfig {
            rpc: Some(net),
            udp: false,
            tcp: false,
            mac: Some(MacAddr(mac)),
            ..HostConfig::parse(cidr).unwrap()
        };
        let mut a = Host::new(cfg("10.0.0.1/24", MAC_A), a_dev).unwrap();
        let mut b = Host::new(cfg("10.0.0.2/24", MAC_B), b_dev).unwrap();
        for h in [&mut a, &mut b] {
            h.rpc()
                .server()
                .unwrap()
                .register(XRPCTEST_ID, Echo)
                .unwrap();
        }
        if specialized {
            let s = a.stack_mut();
            for r in inline::fast_rules::<DriverStage>(net, DRIVER_SPEC.name) {
                s.add_rule(r);
            }
            let (c, sv) = rpc_paths(&a);
            for p in [c, sv] {
                assert_eq!(a.stack_mut().path_optimize(p).unwrap().len(), 1);
                assert!(a.stack().path(p).unwrap().is_specialized());
            }
        }
        let now = a.now();
        let mut w = World {
            net,
            a,
            b,
            to_a,
            to_b,
            now,
            calls: Vec::new(),
            from_b: Vec::new(),
            out_a: Vec::new(),
            outcomes: Vec::new(),
        };
        w.poll(Duration::from_micros(1));
        w
    }

    fn peer(&self, of_b: bool) -> Peer {
        let h = if of_b { &self.b } else { &self.a };
        pathstack::rpc::Rpc::of(h).peer().unwrap()
    }

    /// Advances the clock by `d` and polls both hosts.
    fn poll(&mut self, d: Duration) {
        self.now = self.now + d;
        for h in [&mut self.a, &mut self.b] {
            h.set_manual_clock(self.now);
            h.stack_mut().poll(self.now);
        }
    }

    /// Takes the frames `A` sent (recorded for comparison) and hands
    /// them to `B`.
    fn a_to_b(&mut self) {
        let pool = self.a.stack().pool().clone();
        let bids = [boot_id(&self.a), boot_id(&self.b)];
        while let Some(f) = self.to_a.receive(&pool, self.now).unwrap() {
            self.out_a.push(normalize(self.net, f.as_slice(), bids));
            let _ = self.to_b.transmit(f, self.now);
        }
    }

    /// Hands `A` a frame.
    fn hand_to_a(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let m = self.a.stack().pool().alloc_copy(bytes).unwrap();
        let _ = self.to_a.transmit(m, self.now);
    }

    /// The frames `B` sent, taken off its wire.
    fn b_frames(&mut self) -> Vec<Vec<u8>> {
        let pool = self.b.stack().pool().clone();
        let mut v = Vec::new();
        while let Some(f) = self.to_b.receive(&pool, self.now).unwrap() {
            v.push(f.as_slice().to_vec());
        }
        v
    }

    /// Relays frames both ways until neither host sends more (at most
    /// `rounds` exchanges), `B`'s frames through `fate`.
    fn relay(&mut self, rounds: usize, fate: &Fate) {
        for round in 0..rounds {
            self.a_to_b();
            self.poll(Duration::from_micros(10));
            let frames = self.b_frames();
            if frames.is_empty() && round > 0 {
                break;
            }
            for (i, f) in frames.into_iter().enumerate() {
                self.from_b.push(f.clone());
                match fate {
                    Fate::Pass => self.hand_to_a(&f),
                    _ if i > 0 || round > 0 => self.hand_to_a(&f),
                    Fate::Lose => {}
                    Fate::Twice => {
                        self.hand_to_a(&f);
                        self.hand_to_a(&f);
                    }
                    Fate::Mutate(m) => self.hand_to_a(&m.apply(&f)),
                }
            }
            self.poll(Duration::from_micros(10));
        }
        self.a_to_b();
    }

    fn apply(&mut self, step: &Step) {
        match step {
            Step::Call { by_b, len } => {
                let payload: Vec<u8> = (0..*len).map(|i| (i * 7 + 1) as u8).collect();
                let peer = self.peer(!by_b);
                let h = if *by_b { &mut self.b } else { &mut self.a };
                match h.rpc().start(peer, XRPCTEST_ID, &payload) {
                    Ok(c) => self.calls.push((if *by_b { 'b' } else { 'a' }, c)),
                    Err(e) => self.outcomes.push(format!("start: {e}")),
                }
                self.poll(Duration::from_micros(10));
            }
            Step::Relay(fate) => self.relay(6, fate),
            Step::Replay(i) => {
                if !self.from_b.is_empty() {
                    let f = self.from_b[i % self.from_b.len()].clone();
                    self.hand_to_a(&f);
                }
                self.poll(Duration::from_micros(10));
                self.a_to_b();
            }
            Step::Wait(ms) => {
                self.poll(Duration::from_millis(*ms));
                self.relay(6, &Fate::Pass);
            }
        }
        self.collect();
    }

    /// Records the outcomes of the calls that ended.
    fn collect(&mut self) {
        let mut left = Vec::new();
        for (who, c) in std::mem::take(&mut self.calls) {
            let h = if who == 'b' { &mut self.b } else { &mut self.a };
            match h.rpc().poll(&c) {
                Ok(None) => left.push((who, c)),
                Ok(Some(m)) => self
                    .outcomes
                    .push(format!("{who}: reply {:?}", m.as_slice())),
                Err(e) => self.outcomes.push(format!("{who}: {e}")),
            }
        }
        self.calls = left;
    }

    /// Everything observable of `A` since the last look.
    fn observe(&mut self) -> Observed {
        let s = self.a.stack();
        let mut counters = Vec::new();
        let (c, sv) = rpc_paths(&self.a);
        for p in [c, sv] {
            let st = s.path(p).unwrap().stats();
            counters.push(format!(
                "in {:?} out {:?} consumed {} drops {:?}",
                st.msgs_in, st.msgs_out, st.consumed, st.drops
            ));
        }
        // VCHAN's pools live on the client path, in its stage (position
        // 2): the calls lent and waiting there, as the fast form left
        // them, are the modular stage's.
        let vchan = s
            .path(c)
            .and_then(|p| p.stage(2))
            .and_then(|st| (st as &dyn Any).downcast_ref::<VchanStage>())
            .expect("the client path's VCHAN stage");
        counters.push(format!("vchan {:?}", vchan.stats()));
        for m in 0.. {
            let id = pathstack::core::ModuleId(m);
            let Some(stats) = s.module_stats(id) else {
                break;
            };
            // BIDCTL's boot id differs between the worlds (module docs).
            let stats: Vec<_> = stats.iter().filter(|(k, _)| k != "local_bid").collect();
            counters.push(format!("{stats:?} {:?}", s.module_drops(id)));
        }
        // BLAST's timers send per session, in its hash map's order, which
        // differs between the worlds (foldhash's per-instance seed): the
        // frames of one step are compared as a set.
        let mut frames = std::mem::take(&mut self.out_a);
        frames.sort();
        Observed {
            frames,
            outcomes: std::mem::take(&mut self.outcomes),
            counters,
        }
    }

    /// The fast form's hits on `A`'s client and server paths.
    fn hits(&self) -> [Option<[u64; 2]>; 2] {
        let (c, s) = rpc_paths(&self.a);
        [c, s].map(|p| self.a.stack().path(p).unwrap().fast_hits())
    }
}

/// A frame as compared: BIDCTL's by length, the rest with the boot ids
/// of `A` and `B` (`bids`) replaced by markers.
fn normalize(net: RpcNet, f: &[u8], bids: [[u8; 4]; 2]) -> String {
    let bidctl = match net {
        RpcNet::Eth => f.get(12..14) == Some(&[0x30, 0x06]),
        RpcNet::Ip => f.get(12..14) == Some(&[0x08, 0x00]) && f.get(23) == Some(&205),
    };
    if bidctl {
        return format!("BIDCTL frame of {} bytes", f.len());
    }
    let mut v = f.to_vec();
    // BLAST's timers send per session in hash-map order (see `observe`):
    // over IP the identification (and so the checksum) of those frames
    // (fragments, NACKs: a sequence number) follows that order.
    let blast_own = net == RpcNet::Ip && v.len() >= 42 && v[23] == 101 && v[38..42] != [0; 4];
    if blast_own {
        v[18..20].fill(0);
        v[24..26].fill(0);
    }
    let mut i = 0;
    while i + 4 <= v.len() {
        match bids.iter().position(|b| v[i..i + 4] == *b) {
            Some(k) => {
                v[i..i + 4].copy_from_slice(&MARKS[k]);
                i += 4;
            }
            None => i += 1,
        }
    }
    format!("{v:?}")
}

#[derive(Debug, PartialEq)]
struct Observed {
    frames: Vec<String>,
    outcomes: Vec<String>,
    counters: Vec<String>,
}

/// What happens to the first frame `B` sends in a relay.
#[derive(Clone, Debug)]
enum Fate {
    Pass,
    Lose,
    Twice,
    Mutate(Mutation),
}

/// How a frame to `A` is made wrong.
#[derive(Clone, Debug)]
enum Mutation {
    /// A byte flipped (the headers are the first 90 or so bytes).
    Flip {
        at: usize,
        xor: u8,
    },
    Truncate(usize),
    Pad(usize),
    /// Sent to another station, or broadcast.
    DstMac([u8; 6]),
}

impl Mutation {
    fn apply(&self, f: &[u8]) -> Vec<u8> {
        let mut f = f.to_vec();
        match self {
            Mutation::Flip { at, xor } => {
                let i = at % f.len();
                f[i] ^= (*xor).max(1);
            }
            Mutation::Truncate(n) => f.truncate(n % f.len()),
            Mutation::Pad(n) => f.resize(f.len() + n, 0xee),
            Mutation::DstMac(m) => f[..6].copy_from_slice(m),
        }
        f
    }
}

#[derive(Clone, Debug)]
enum Step {
    /// `A` calls `B` (or `B` calls `A`) with `len` bytes.
    Call { by_b: bool, len: usize },
    /// Frames go both ways until the hosts are quiet, the first of `B`'s
    /// through the fate.
    Relay(Fate),
    /// One of `B`'s earlier frames reaches `A` again.
    Replay(usize),
    /// Time passes (CHAN retransmits after 1 s), then a relay.
    Wait(u64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => (0usize..100, any::<u8>()).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        1 => (0usize..100).prop_map(Mutation::Truncate),
        1 => (1usize..40).prop_map(Mutation::Pad),
        1 => prop_oneof![Just([0xff; 6]), Just([2, 0, 0, 0, 0, 9])].prop_map(Mutation::DstMac),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (
            any::<bool>(),
            prop_oneof![6 => 0usize..64, 1 => 1400usize..3000]
        )
            .prop_map(|(by_b, len)| Step::Call { by_b, len }),
        4 => Just(Step::Relay(Fate::Pass)),
        1 => Just(Step::Relay(Fate::Lose)),
        1 => Just(Step::Relay(Fate::Twice)),
        3 => mutation().prop_map(|m| Step::Relay(Fate::Mutate(m))),
        1 => any::<usize>().prop_map(Step::Replay),
        1 => prop_oneof![Just(1u64), Just(1_200), Just(6_000)].prop_map(Step::Wait),
    ]
}

/// The worlds after the first call from each side (the boot-id
/// handshake done), compared.
fn worlds(net: RpcNet) -> (World, World) {
    let mut fused = World::new(net, true);
    let mut modular = World::new(net, false);
    for w in [&mut fused, &mut modular] {
        for by_b in [false, true] {
            w.apply(&Step::Call { by_b, len: 0 });
            w.apply(&Step::Wait(1_200));
        }
    }
    let (f, m) = (fused.observe(), modular.observe());
    assert_eq!(f, m, "{net:?}: the first calls");
    assert_eq!(f.outcomes, ["a: reply []", "b: reply []"], "{net:?}");
    (fused, modular)
}

fn differential(net: RpcNet, steps: &[Step]) -> Result<(), TestCaseError> {
    let (mut fused, mut modular) = worlds(net);
    for (i, s) in steps.iter().enumerate() {
        fused.apply(s);
        modular.apply(s);
        let (f, m) = (fused.observe(), modular.observe());
        prop_assert_eq!(f, m, "{:?}: after step {} ({:?})", net, i, s);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn specialized_rpc_paths_over_eth_behave_as_the_modular_stages(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        differential(RpcNet::Eth, &steps)?;
    }

    #[test]
    fn specialized_rpc_paths_over_ip_behave_as_the_modular_stages(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        differential(RpcNet::Ip, &steps)?;
    }
}

/// The common case takes the fast form: in a steady exchange of short
/// calls both ways every call, request and reply of `A`'s goes through
/// it, and the frames, outcomes and counters are the modular `A`'s.
#[test]
fn a_steady_exchange_takes_the_fast_form_and_is_byte_identical() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        let (mut fused, mut modular) = worlds(net);
        let rounds = 100u64;
        let mut before = fused.hits();
        for i in 0..=rounds as usize {
            // The first call after the handshakes may find BID's boot
            // ids stale (BIDCTL learnt of `B`'s server channel), and
            // decline: counted from the second on.
            if i == 1 {
                before = fused.hits();
            }
            let steps = [
                Step::Call {
                    by_b: false,
                    len: i % 60,
                },
                Step::Relay(Fate::Pass),
                Step::Call {
                    by_b: true,
                    len: (i * 3) % 60,
                },
                Step::Relay(Fate::Pass),
            ];
            for s in &steps {
                fused.apply(s);
                modular.apply(s);
                let (f, m) = (fused.observe(), modular.observe());
                assert_eq!(f, m, "{net:?} round {i}, {s:?}");
                if matches!(s, Step::Relay(_)) {
                    assert_eq!(f.outcomes.len(), 1, "{net:?} round {i}: {f:?}");
                }
            }
        }
        let after = fused.hits();
        let gained = |k: usize| {
            let ([d0, u0], [d1, u1]) = (before[k].unwrap(), after[k].unwrap());
            [d1 - d0, u1 - u0]
        };
        // The client path: each call down, each reply up; the server
        // path: each request up, each reply down.
        assert_eq!(gained(0), [rounds, rounds], "{net:?} client path");
        assert_eq!(gained(1), [rounds, rounds], "{net:?} server path");
        assert_eq!(modular.hits(), [None, None]);
    }
}

/// The timers a fast call or reply arms are CHAN's: after a quiet spell
/// (no timer pending), a call whose reply is lost, a reply whose
/// acknowledgement never comes, and a call whose request `B` answers
/// twice are recovered (or refused) by `A` exactly as by the modular
/// stages, on both networks.
#[test]
fn recovery_after_a_quiet_spell_is_the_modular_one() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        let (mut fused, mut modular) = worlds(net);
        let quiet = [Step::Wait(6_000), Step::Wait(6_000), Step::Wait(6_000)];
        let script: Vec<Step> = [
            &quiet[..],
            &[
                Step::Call {
                    by_b: false,
                    len: 3,
                },
                Step::Relay(Fate::Lose),
                Step::Wait(1_200),
                Step::Wait(1_200),
            ],
            &quiet[..],
            &[
                Step::Call { by_b: true, len: 5 },
                Step::Relay(Fate::Pass),
                Step::Wait(1_200),
                Step::Wait(6_000),
            ],
            &quiet[..],
            &[
                Step::Call {
                    by_b: false,
                    len: 0,
                },
                Step::Relay(Fate::Twice),
                Step::Replay(usize::MAX),
                Step::Wait(1_200),
            ],
        ]
        .concat();
        for (i, s) in script.iter().enumerate() {
            fused.apply(s);
            modular.apply(s);
            let (f, m) = (fused.observe(), modular.observe());
            assert_eq!(f, m, "{net:?} step {i}, {s:?}");
        }
        // Some of it took the fast form (after a quiet spell the first
        // message to a peer may find BID's boot ids stale and decline).
        let [c, sv] = fused.hits();
        let [c, sv] = [c.unwrap(), sv.unwrap()];
        assert!(c[0] >= 1 && sv[1] >= 1, "{net:?}: {c:?} {sv:?}");
    }
}
