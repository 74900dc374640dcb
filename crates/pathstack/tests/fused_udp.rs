//! The fused fast forms of UDP paths against the modular stages they stand
//! in front of (issue 26, item 8): `inline::udp_fast_rule` on paths with an
//! application module above UDP, and `inline::udp_socket_fast_rule` on
//! the host's own socket paths (`HostConfig::specialize`).
//!
//! Two identical hosts — one with its UDP paths specialized, one modular —
//! live through the same random history: application sends of every size
//! (fragmenting ones too), received frames valid and mutated (truncated,
//! bytes flipped, IP options, fragments, bad or absent checksums, wrong
//! ports, addresses and MACs, broadcasts, trailing padding), ARP replies
//! that change the peer's link address, and time passing far enough for
//! neighbour entries to expire. After every step both hosts must have put
//! the same frames on the wire, delivered the same datagrams with the same
//! annotations, and counted the same on every path and module: the fast
//! form handles exactly what the stages would, or declines.

use pathstack::core::attrs::keys::{
    AddrPart, Participants, MEM_BUDGET, PARTICIPANTS, PASSIVE_OPEN,
};
use pathstack::core::attrs::Attrs;
use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::core::device::{DriverStage, DRIVER_SPEC};
use pathstack::core::synthetic::{EchoStage, ECHO_SPEC};
use pathstack::core::{Device, Dir, Duration, Instant, Msg, PathId, SchedKind};
use pathstack::host::{Below, Host, HostConfig, UpperModule};
use pathstack::inet::modules::inline;
use pathstack::inet::MacAddr;
use pathstack::socket::ready;
use pathstack::socket::Udp;
use pathstack::socket::UdpSocket;
use proptest::prelude::*;

#[path = "support/frames.rs"]
mod frames;
use frames::{checksum, ipv4_frame};

const US: [u8; 4] = [10, 0, 0, 1];
const PEER: [u8; 4] = [10, 0, 0, 2];
const OTHER: [u8; 4] = [10, 0, 0, 3];
const MAC_US: [u8; 6] = [2, 0, 0, 0, 0, 1];
const PEER_MACS: [[u8; 6]; 2] = [[2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 0x22]];
/// The connected path: our port, the peer's port.
const CONNECTED: (u16, u16) = (5000, 7);
/// The bound (echo) path's port.
const BOUND: u16 = 9;
/// The host's sockets: a bound one's port, a connected one's port and its
/// peer's port.
const SOCK_BOUND: u16 = 53;
const SOCK_CONNECTED: (u16, u16) = (6000, 8);

/// A host with a sink above a connected UDP path and an echo above a
/// bound one, and the wire end the test talks to it through.
struct World {
    host: Host,
    wire: MemoryEnd,
    connected: PathId,
    bound: PathId,
    /// The host's bound socket (it echoes what it hears) and its connected
    /// one, in the form `HostConfig::specialize` gives them.
    sock_bound: UdpSocket,
    sock_connected: UdpSocket,
    now: Instant,
}

fn path(h: &mut Host, app: &str, attrs: Attrs) -> PathId {
    let app = h.stack().module_id(app).unwrap();
    h.stack_mut().path_create(app, attrs).unwrap()
}

impl World {
    fn new(specialized: bool) -> World {
        World::with_burst(specialized, None)
    }

    /// [`World::new`] with the driver taking at most `rx_burst` frames
    /// per poll.
    fn with_burst(specialized: bool, rx_burst: Option<usize>) -> World {
        World::build(specialized, rx_burst, None)
    }

    /// [`World::with_burst`] with the connected path's memory budget
    /// (`MEM_BUDGET`) set to `mem_budget` bytes.
    fn build(specialized: bool, rx_burst: Option<usize>, mem_budget: Option<u64>) -> World {
        let (a, b) = memory_pair(MemoryConfig::default());
        let mut c = HostConfig::parse("10.0.0.1/24").unwrap();
        c.mac = Some(MacAddr(MAC_US));
        c.specialize = specialized;
        c.rx_burst = rx_burst;
        c.upper = vec![
            UpperModule::new("sink", "ECHO")
                .param("mode", "sink")
                .over("down", Below::Udp),
            UpperModule::new("echo", "ECHO")
                .param("mode", "echo")
                .over("down", Below::Udp),
        ];
        let mut host = Host::new(c, a).unwrap();
        let mut connected_attrs = Attrs::new().with(
            &PARTICIPANTS,
            Participants {
                local: vec![AddrPart::Port(CONNECTED.0)],
                remote: vec![AddrPart::Ipv4(PEER), AddrPart::Port(CONNECTED.1)],
            },
        );
        if let Some(b) = mem_budget {
            connected_attrs = connected_attrs.with(&MEM_BUDGET, b);
        }
        let connected = path(&mut host, "sink", connected_attrs);
        let bound = path(
            &mut host,
            "echo",
            Attrs::new().with(&PASSIVE_OPEN, true).with(
                &PARTICIPANTS,
                Participants {
                    local: vec![AddrPart::Port(BOUND)],
                    remote: vec![],
                },
            ),
        );
        if specialized {
            let s = host.stack_mut();
            s.add_rule(inline::udp_fast_rule::<EchoStage, DriverStage>(
                ECHO_SPEC.name,
                DRIVER_SPEC.name,
            ));
            for p in [connected, bound] {
                assert_eq!(s.path_optimize(p).unwrap().len(), 1);
                assert!(s.path(p).unwrap().is_specialized());
            }
        }
        let sock_bound = host.udp().bind(("0.0.0.0", SOCK_BOUND)).unwrap();
        let sock_connected = host
            .udp()
            .bind_connected(
                ("0.0.0.0", SOCK_CONNECTED.0),
                (std::net::Ipv4Addr::from(PEER), SOCK_CONNECTED.1),
            )
            .unwrap();
        for sock in [&sock_bound, &sock_connected] {
            let p = host.udp().path_id(sock).unwrap();
            assert_eq!(host.stack().path(p).unwrap().is_specialized(), specialized);
        }
        let now = host.now();
        World {
            host,
            wire: b,
            connected,
            bound,
            sock_bound,
            sock_connected,
            now,
        }
    }

    /// Advances the clock by `d` and polls.
    fn poll(&mut self, d: Duration) {
        self.now = self.now + d;
        self.host.set_manual_clock(self.now);
        self.host.stack_mut().poll(self.now);
    }

    fn apply(&mut self, step: &Step) {
        match step {
            Step::Send { len, ttl } => {
                let payload: Vec<u8> = (0..*len).map(|i| i as u8 ^ 0x5a).collect();
                let mut m = self.host.stack().pool().alloc_copy(&payload).unwrap();
                if let Some(t) = ttl {
                    pathstack::inet::anno::InetAnno::set_ttl(m.anno_mut(), *t);
                }
                // Refusals (a dropping stage) are compared through the
                // counters below.
                let _ = self.host.stack_mut().send(self.connected, Dir::Down, m);
                // And the same on the connected socket (refusals compared
                // through the counters).
                let _ = self.host.udp().send(&self.sock_connected, &payload);
            }
            Step::Frame(bytes) => {
                let m = self.host.stack().pool().alloc_copy(bytes).unwrap();
                self.wire.transmit(m, self.now).unwrap();
            }
            Step::Wait(ms) => self.poll(Duration::from_millis(*ms)),
        }
        self.poll(Duration::from_micros(10));
        // The bound socket's application echoes what it heard.
        let mut buf = [0u8; 2048];
        while let Ok(Some((n, from))) = ready(self.sock_bound.recv_from(&mut self.host, &mut buf)) {
            let _ = self.host.udp().send_to(&self.sock_bound, &buf[..n], from);
        }
        self.poll(Duration::from_micros(10));
    }

    /// Puts `frames` into the ring towards the host, without polling.
    fn arrive(&mut self, frames: &[Vec<u8>]) {
        for f in frames {
            let m = self.host.stack().pool().alloc_copy(f).unwrap();
            self.wire.transmit(m, self.now).unwrap();
        }
    }

    /// The frames the host put on the wire.
    fn frames_out(&mut self) -> Vec<Vec<u8>> {
        let pool = self.host.stack().pool();
        let mut frames = Vec::new();
        while let Some(f) = self.wire.receive(pool, self.now).unwrap() {
            frames.push(f.as_slice().to_vec());
        }
        frames
    }

    /// Every module's counters and drops.
    fn module_counters(&self) -> Vec<String> {
        let s = self.host.stack();
        let mut counters = Vec::new();
        for m in 0.. {
            let id = pathstack::core::ModuleId(m);
            let Some(stats) = s.module_stats(id) else {
                break;
            };
            counters.push(format!("{stats:?} {:?}", s.module_drops(id)));
        }
        counters
    }

    /// Everything observable: the frames out, the datagrams delivered with
    /// their annotations, and every counter.
    fn observe(&mut self) -> Observed {
        let pool = self.host.stack().pool();
        let mut frames = Vec::new();
        while let Some(f) = self.wire.receive(pool, self.now).unwrap() {
            frames.push(f.as_slice().to_vec());
        }
        let mut delivered = Vec::new();
        while let Some(m) = self.host.stack_mut().recv(self.connected, Dir::Up) {
            delivered.push(describe(&m));
        }
        while let Ok(Some(m)) = self.host.udp().recv_msg(&self.sock_connected) {
            delivered.push(describe(&m));
        }
        let s = self.host.stack();
        let mut counters = Vec::new();
        let socks = [&self.sock_bound, &self.sock_connected]
            .map(|k| Udp::of(&self.host).path_id(k).unwrap());
        for p in [self.connected, self.bound].into_iter().chain(socks) {
            let st = s.path(p).unwrap().stats();
            counters.push(format!(
                "in {:?} out {:?} consumed {} drops {:?}",
                st.msgs_in, st.msgs_out, st.consumed, st.drops
            ));
        }
        for m in 0.. {
            let id = pathstack::core::ModuleId(m);
            let Some(stats) = s.module_stats(id) else {
                break;
            };
            counters.push(format!("{stats:?} {:?}", s.module_drops(id)));
        }
        Observed {
            frames,
            delivered,
            counters,
        }
    }
}

fn describe(m: &Msg) -> String {
    use pathstack::inet::anno::InetAnno;
    let a = m.anno();
    format!(
        "{:?} peer {:?}:{:?} local {:?} link {:?}",
        m.as_slice(),
        a.peer_ip(),
        a.peer_port(),
        a.local_ip(),
        a.link_dst()
    )
}

#[derive(Debug, PartialEq)]
struct Observed {
    frames: Vec<Vec<u8>>,
    delivered: Vec<String>,
    counters: Vec<String>,
}

#[derive(Clone, Debug)]
enum Step {
    /// The sink's application sends `len` bytes on the connected path.
    Send { len: usize, ttl: Option<u8> },
    /// A frame arrives.
    Frame(Vec<u8>),
    /// Time passes (ARP entries expire after a minute).
    Wait(u64),
}

/// How a received frame is made wrong.
#[derive(Clone, Debug)]
enum Mutation {
    None,
    Flip {
        at: usize,
        xor: u8,
    },
    Truncate(usize),
    Pad(usize),
    IpOptions,
    Fragment {
        more: bool,
        offset: u16,
    },
    NoUdpChecksum,
    DstMac([u8; 6]),
    DstIp([u8; 4]),
    Ttl(u8),
    /// Another IP protocol, the header's checksum right: the UDP path's
    /// key does not match, so no UDP stage, fast or modular, may take it
    /// (the fast form leaves the protocol to the classifier's match).
    Protocol(u8),
    /// Another EtherType, the rest intact: as `Protocol`, for ETH's key.
    EtherType([u8; 2]),
}

/// A UDP datagram from `src` to us as the wire would carry it, then
/// `mutation`.
fn frame(
    src_mac: [u8; 6],
    src: [u8; 4],
    ports: (u16, u16),
    payload: &[u8],
    mutation: &Mutation,
) -> Vec<u8> {
    let options: &[u8] = match mutation {
        Mutation::IpOptions => &[1, 1, 1, 0],
        _ => &[],
    };
    let ihl = 20 + options.len();
    let ulen = (8 + payload.len()) as u16;
    let mut udp = Vec::new();
    udp.extend_from_slice(&ports.0.to_be_bytes());
    udp.extend_from_slice(&ports.1.to_be_bytes());
    udp.extend_from_slice(&ulen.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let dst_ip = match mutation {
        Mutation::DstIp(d) => *d,
        _ => US,
    };
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst_ip);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&ulen.to_be_bytes());
    let c = match mutation {
        Mutation::NoUdpChecksum => 0,
        _ => match checksum(&[&pseudo, &udp]) {
            0 => 0xffff,
            c => c,
        },
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0u8; ihl];
    ip[0] = 0x40 | (ihl / 4) as u8;
    ip[2..4].copy_from_slice(&((ihl + udp.len()) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    if let Mutation::Fragment { more, offset } = mutation {
        let v = (u16::from(*more) << 13) | (offset & 0x1fff);
        ip[6..8].copy_from_slice(&v.to_be_bytes());
    }
    ip[8] = match mutation {
        Mutation::Ttl(t) => *t,
        _ => 64,
    };
    ip[9] = match mutation {
        Mutation::Protocol(p) => *p,
        _ => 17,
    };
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst_ip);
    ip[20..].copy_from_slice(options);
    let c = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let dst_mac = match mutation {
        Mutation::DstMac(m) => *m,
        _ => MAC_US,
    };
    let mut f = ipv4_frame(dst_mac, src_mac, &ip, &udp);
    match mutation {
        Mutation::Flip { at, xor } => {
            let i = at % f.len();
            f[i] ^= xor.max(&1);
        }
        Mutation::Truncate(n) => f.truncate(n % f.len()),
        Mutation::Pad(n) => f.resize(f.len() + n, 0xee),
        Mutation::EtherType(t) => f[12..14].copy_from_slice(t),
        _ => {}
    }
    f
}

/// An ARP reply (RFC 826) telling us that `ip` is at `mac`.
fn arp_reply(mac: [u8; 6], ip: [u8; 4]) -> Vec<u8> {
    frames::arp(2, MAC_US, mac, ip, MAC_US, US)
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        6 => Just(Mutation::None),
        2 => (0usize..100, any::<u8>()).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        1 => (0usize..100).prop_map(Mutation::Truncate),
        1 => (1usize..40).prop_map(Mutation::Pad),
        1 => Just(Mutation::IpOptions),
        1 => (any::<bool>(), 0u16..4).prop_map(|(more, offset)| Mutation::Fragment { more, offset }),
        1 => Just(Mutation::NoUdpChecksum),
        1 => prop_oneof![Just([0xff; 6]), Just([2, 0, 0, 0, 0, 9]), Just([1, 0, 0x5e, 0, 0, 1])]
            .prop_map(Mutation::DstMac),
        1 => prop_oneof![Just([10, 0, 0, 255]), Just([10, 0, 0, 9]), Just([255; 4])]
            .prop_map(Mutation::DstIp),
        1 => (0u8..3).prop_map(Mutation::Ttl),
        1 => prop_oneof![Just(6u8), Just(1), Just(99)].prop_map(Mutation::Protocol),
        1 => prop_oneof![Just([0x86, 0xdd]), Just([0x08, 0x06]), Just([0x88, 0xb5])]
            .prop_map(Mutation::EtherType),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let datagram = (
        0usize..2,
        prop_oneof![Just(PEER), Just(OTHER), Just([224, 0, 0, 1])],
        prop_oneof![
            Just(CONNECTED.1),
            Just(BOUND),
            Just(CONNECTED.0),
            Just(1234u16)
        ],
        prop_oneof![Just(CONNECTED.0), Just(BOUND), Just(4321u16)],
        proptest::collection::vec(any::<u8>(), 0..80),
        mutation(),
    )
        .prop_map(|(mac, src, sport, dport, payload, m)| {
            Step::Frame(frame(PEER_MACS[mac], src, (sport, dport), &payload, &m))
        });
    prop_oneof![
        4 => (
            prop_oneof![4 => 0usize..64, 1 => 1400usize..1600],
            proptest::option::weighted(0.1, 1u8..=255)
        )
            .prop_map(|(len, ttl)| Step::Send { len, ttl }),
        8 => datagram,
        1 => (0usize..2, prop_oneof![Just(PEER), Just(OTHER)])
            .prop_map(|(m, ip)| Step::Frame(arp_reply(PEER_MACS[m], ip))),
        1 => prop_oneof![Just(1u64), Just(30_000), Just(90_000)].prop_map(Step::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn specialized_udp_paths_behave_as_the_modular_stages(
        steps in proptest::collection::vec(step(), 1..60)
    ) {
        let mut fused = World::new(true);
        let mut modular = World::new(false);
        // The peers are known from the start half the time: the fast form
        // then runs from the first datagram.
        for w in [&mut fused, &mut modular] {
            w.apply(&Step::Frame(arp_reply(PEER_MACS[0], PEER)));
            w.apply(&Step::Frame(arp_reply(PEER_MACS[0], OTHER)));
        }
        for (i, s) in steps.iter().enumerate() {
            fused.apply(s);
            modular.apply(s);
            let (f, m) = (fused.observe(), modular.observe());
            prop_assert_eq!(f, m, "after step {} ({:?})", i, s);
        }
    }
}

/// The common case takes the fast form: in a steady exchange every
/// datagram goes through it, and the frames,
/// deliveries and counters are the modular host's.
#[test]
fn a_steady_exchange_is_byte_identical() {
    let mut fused = World::new(true);
    let mut modular = World::new(false);
    for w in [&mut fused, &mut modular] {
        w.apply(&Step::Frame(arp_reply(PEER_MACS[0], PEER)));
        w.apply(&Step::Frame(arp_reply(PEER_MACS[1], OTHER)));
        // The host's own ARP announcement.
        w.observe();
    }
    for i in 0..200 {
        let steps = [
            Step::Send {
                len: i % 50,
                ttl: None,
            },
            Step::Frame(frame(
                PEER_MACS[0],
                PEER,
                (CONNECTED.1, CONNECTED.0),
                &[i as u8; 3],
                &Mutation::None,
            )),
            Step::Frame(frame(
                PEER_MACS[1],
                OTHER,
                (4000, BOUND),
                &[i as u8; 20],
                &Mutation::None,
            )),
            Step::Frame(frame(
                PEER_MACS[0],
                PEER,
                (SOCK_CONNECTED.1, SOCK_CONNECTED.0),
                &[i as u8; 5],
                &Mutation::None,
            )),
            Step::Frame(frame(
                PEER_MACS[1],
                OTHER,
                (4001, SOCK_BOUND),
                &[i as u8; 12],
                &Mutation::None,
            )),
        ];
        for s in &steps {
            fused.apply(s);
            modular.apply(s);
            let (f, m) = (fused.observe(), modular.observe());
            assert_eq!(f, m, "round {i}, {s:?}");
            // A send puts two datagrams on the wire (the connected path's
            // and the connected socket's), a datagram to the bound path or
            // the bound socket one (its echo), one to the connected socket
            // none.
            let sent = match s {
                Step::Send { .. } => 2,
                Step::Frame(f)
                    if f[36..38] == BOUND.to_be_bytes()
                        || f[36..38] == SOCK_BOUND.to_be_bytes() =>
                {
                    1
                }
                _ => 0,
            };
            assert_eq!(f.frames.len(), sent, "round {i}, {s:?}");
        }
    }
    // Every send and every datagram of the steady exchange took the fast
    // form.
    let s = fused.host.stack();
    assert_eq!(
        s.path(fused.connected).unwrap().fast_hits(),
        Some([200, 200])
    );
    assert_eq!(s.path(fused.bound).unwrap().fast_hits(), Some([200, 200]));
    for sock in [&fused.sock_bound, &fused.sock_connected] {
        let p = Udp::of(&fused.host).path_id(sock).unwrap();
        assert_eq!(s.path(p).unwrap().fast_hits(), Some([200, 200]));
    }
    assert_eq!(
        modular
            .host
            .stack()
            .path(modular.bound)
            .unwrap()
            .fast_hits(),
        None
    );
}

/// Both forms hold the neighbour's link address on the path (the fast
/// form in its template, the modular `ARP` stage in its last answer): an
/// ARP reply that moves the peer to another link address must reach the
/// next datagram in either.
#[test]
fn a_moved_neighbour_is_sent_to_at_its_new_address() {
    for specialized in [true, false] {
        let mut w = World::new(specialized);
        let sent_to = |w: &mut World| {
            w.apply(&Step::Send { len: 4, ttl: None });
            let frames = w.observe().frames;
            let macs: Vec<&[u8]> = frames
                .iter()
                .filter(|f| f.len() > 14 && f[12..14] == [0x08, 0x00])
                .map(|f| &f[..6])
                .collect();
            // The test path and the connected socket, both to the peer.
            assert_eq!(macs.len(), 2, "specialized {specialized}");
            assert!(
                macs.iter().all(|m| *m == macs[0]),
                "specialized {specialized}"
            );
            <[u8; 6]>::try_from(macs[0]).unwrap()
        };
        w.apply(&Step::Frame(arp_reply(PEER_MACS[0], PEER)));
        w.observe();
        assert_eq!(sent_to(&mut w), PEER_MACS[0]);
        assert_eq!(sent_to(&mut w), PEER_MACS[0]);
        w.apply(&Step::Frame(arp_reply(PEER_MACS[1], PEER)));
        w.observe();
        assert_eq!(sent_to(&mut w), PEER_MACS[1], "specialized {specialized}");
    }
}

/// A datagram from the peer to the connected path, carrying `payload`.
fn to_connected(payload: &[u8], mutation: &Mutation) -> Vec<u8> {
    frame(
        PEER_MACS[0],
        PEER,
        (CONNECTED.1, CONNECTED.0),
        payload,
        mutation,
    )
}

/// A datagram from the other host to the bound (echo) path.
fn to_bound(payload: &[u8]) -> Vec<u8> {
    frame(PEER_MACS[1], OTHER, (4000, BOUND), payload, &Mutation::None)
}

/// Whether frame `f` is a UDP datagram (over IPv4 without options)
/// carrying `payload` (a short one is padded behind it).
fn carries(f: &[u8], payload: &[u8]) -> bool {
    f.get(42..).is_some_and(|p| p.starts_with(payload))
}

/// Both hosts with their peers' link addresses known, the host's own ARP
/// announcement taken off the wire.
fn known_peers(w: &mut World) {
    w.apply(&Step::Frame(arp_reply(PEER_MACS[0], PEER)));
    w.apply(&Step::Frame(arp_reply(PEER_MACS[1], OTHER)));
    w.observe();
}

/// The wire lane (`device::rx_lane`): on the per-message way the stack
/// takes the frames of a driver's ring itself, counted against the
/// driver's burst. Frames that wait in the ring together — for the fast
/// form, mutated ones for the modular stages (a bad UDP checksum, IP
/// options, a wrong port), ones for no path — are taken at most a burst
/// per poll, and each runs as the driver would have handed it over: both
/// forms put out, deliver and count the same.
#[test]
fn frames_waiting_together_in_the_ring_are_taken_burst_by_burst() {
    // The UDP checksum's first byte: Ethernet 14, IP 20, UDP 6.
    let bad_checksum = Mutation::Flip { at: 40, xor: 1 };
    let ring: Vec<Vec<u8>> = (0..10u8)
        .map(|i| match i % 5 {
            0 => to_connected(&[i; 3], &Mutation::None),
            1 => to_connected(&[i; 3], &bad_checksum),
            2 => frame(
                PEER_MACS[0],
                PEER,
                (CONNECTED.1, 4321),
                &[i; 3],
                &Mutation::None,
            ),
            3 => to_bound(&[i; 7]),
            _ => to_connected(&[i; 3], &Mutation::IpOptions),
        })
        .collect();
    for burst in [1usize, 3, 64] {
        let mut fused = World::with_burst(true, Some(burst));
        let mut modular = World::with_burst(false, Some(burst));
        let mut seen = Vec::new();
        for w in [&mut fused, &mut modular] {
            known_peers(w);
            w.arrive(&ring);
            // One poll takes one burst; the rest waits in the ring.
            let mut left = ring.len();
            while left > 0 {
                w.poll(Duration::from_micros(10));
                let now_left = w.wire.tx_in_flight();
                assert_eq!(left - now_left, burst.min(left), "burst {burst}");
                left = now_left;
            }
            seen.push(w.observe());
        }
        assert_eq!(seen[0], seen[1], "burst {burst}");
        // The connected path's valid datagrams delivered, those with a bad
        // checksum not; the bound path's two echoed.
        let delivered = |i: u8| {
            let p = format!("{:?}", [i; 3]);
            seen[0].delivered.iter().any(|d| d.starts_with(&p))
        };
        assert!(delivered(0) && delivered(5), "burst {burst}");
        assert!(!delivered(1) && !delivered(6), "burst {burst}");
        for i in [3u8, 8] {
            assert!(
                seen[0].frames.iter().any(|f| carries(f, &[i; 7])),
                "burst {burst}"
            );
        }
        let s = fused.host.stack();
        // The fast form took the valid ones (the connected path's options
        // frame and its bad checksum went to the stages).
        assert_eq!(s.path(fused.connected).unwrap().fast_hits(), Some([0, 2]));
        assert_eq!(s.path(fused.bound).unwrap().fast_hits(), Some([2, 2]));
    }
}

/// A frame the lane takes for a path whose input is queued waits behind
/// that input (per-path order, `trip.rs`): the lane takes frames off the
/// ring, it does not run them past the path's queue.
#[test]
fn a_frame_for_a_queued_path_waits_its_turn() {
    let mut outs = Vec::new();
    for specialized in [true, false] {
        let mut w = World::new(specialized);
        known_peers(&mut w);
        // The application hands the bound path a received frame to run at
        // the next poll; then a second one arrives on the wire.
        let first = w
            .host
            .stack()
            .pool()
            .alloc_copy(&to_bound(b"first"))
            .unwrap();
        w.host.stack_mut().enqueue(w.bound, Dir::Up, first).unwrap();
        w.arrive(&[to_bound(b"second")]);
        w.poll(Duration::from_micros(10));
        let out = w.frames_out();
        // Both echoed, in the order they reached the path.
        assert_eq!(out.len(), 2, "specialized {specialized}");
        assert!(carries(&out[0], b"first"), "specialized {specialized}");
        assert!(carries(&out[1], b"second"), "specialized {specialized}");
        outs.push((out, w.observe()));
    }
    assert_eq!(outs[0], outs[1]);
}

/// A path deleted while its frames wait in the ring: the lane takes them
/// and they find no path, as through the driver's `receive` — nothing is
/// delivered, both forms answer and count the same, and the frames after
/// them run as usual.
#[test]
fn a_path_torn_down_while_its_frames_are_in_the_ring() {
    let mut outs = Vec::new();
    for specialized in [true, false] {
        let mut w = World::new(specialized);
        known_peers(&mut w);
        w.arrive(&[
            to_connected(b"one", &Mutation::None),
            to_connected(b"two", &Mutation::None),
            to_bound(b"after"),
        ]);
        w.host.stack_mut().path_delete(w.connected).unwrap();
        w.poll(Duration::from_micros(10));
        assert_eq!(w.wire.tx_in_flight(), 0);
        assert!(w.host.stack_mut().recv(w.connected, Dir::Up).is_none());
        let out = w.frames_out();
        // The bound path's echo of the frame behind them went out.
        assert!(
            out.iter().any(|f| carries(f, b"after")),
            "specialized {specialized}"
        );
        outs.push((out, w.module_counters()));
    }
    assert_eq!(outs[0], outs[1]);
}

/// The lane (`stack/lane.rs`) leaves a path whose memory budget is spent
/// to the general trip, which discards its input before any stage sees it
/// (thesis §5.2.3): datagrams left in the sink queue hold the connected
/// path's budget, the frames after them are refused and counted, and once
/// the application takes them the lane runs the path again. Both forms
/// deliver, put out and count the same.
#[test]
fn a_path_over_its_budget_takes_the_general_way() {
    let mut outs = Vec::new();
    for specialized in [true, false] {
        // Two 2 KiB frame buffers: the third datagram finds the budget spent.
        let mut w = World::build(specialized, None, Some(4096));
        known_peers(&mut w);
        let burst: Vec<Vec<u8>> = (0..5u8)
            .map(|i| to_connected(&[i; 3], &Mutation::None))
            .collect();
        w.arrive(&burst);
        w.poll(Duration::from_micros(10));
        let held: Vec<String> =
            std::iter::from_fn(|| w.host.stack_mut().recv(w.connected, Dir::Up))
                .map(|m| describe(&m))
                .collect();
        assert_eq!(held.len(), 2, "specialized {specialized}");
        let drops = format!(
            "{:?}",
            w.host.stack().path(w.connected).unwrap().stats().drops
        );
        // The three behind them discarded before any stage saw them.
        assert!(
            drops.contains("(DropReason(\"path.over_memory_budget\"), 3)"),
            "{drops}"
        );
        // The budget given back, the lane runs the path again.
        w.arrive(&[to_connected(b"later", &Mutation::None)]);
        w.poll(Duration::from_micros(10));
        let o = w.observe();
        assert!(
            o.delivered
                .iter()
                .any(|d| d.starts_with(&format!("{:?}", b"later"))),
            "specialized {specialized}"
        );
        if specialized {
            // The two held and the later one by the fast form.
            let hits = w.host.stack().path(w.connected).unwrap().fast_hits();
            assert_eq!(hits, Some([0, 3]));
        }
        outs.push((held, o));
    }
    assert_eq!(outs[0], outs[1]);
}

/// Under LDLP the lane is closed (every entry is looked at for batching,
/// `crate::sched`): frames and sends take the general trip; switched back
/// to per-message scheduling, the lane opens again and the fast form takes
/// them. Both forms put out, deliver and count the same throughout.
#[test]
fn ldlp_closes_the_lane_and_per_message_opens_it_again() {
    let mut outs = Vec::new();
    for specialized in [true, false] {
        let mut w = World::new(specialized);
        known_peers(&mut w);
        let ring: Vec<Vec<u8>> = (0..6u8)
            .map(|i| {
                if i % 2 == 0 {
                    to_connected(&[i; 3], &Mutation::None)
                } else {
                    to_bound(&[i; 7])
                }
            })
            .collect();
        w.host
            .stack_mut()
            .set_scheduler(SchedKind::Ldlp { batch: 4 });
        w.arrive(&ring);
        w.apply(&Step::Send { len: 5, ttl: None });
        let under_ldlp = w.observe();
        let hits_ldlp = w.host.stack().path(w.connected).unwrap().fast_hits();
        w.host.stack_mut().set_scheduler(SchedKind::PerMessage);
        w.arrive(&ring);
        w.apply(&Step::Send { len: 5, ttl: None });
        let per_message = w.observe();
        let hits_pm = w.host.stack().path(w.connected).unwrap().fast_hits();
        assert_eq!(under_ldlp.frames.len(), per_message.frames.len());
        if specialized {
            // Per-message, the lane's frames and send went by the fast form.
            let (a, b) = (hits_ldlp.unwrap(), hits_pm.unwrap());
            assert_eq!(b[0] - a[0], 1, "{a:?} {b:?}");
            assert_eq!(b[1] - a[1], 3, "{a:?} {b:?}");
        }
        outs.push((under_ldlp, per_message));
    }
    assert_eq!(outs[0], outs[1]);
}
