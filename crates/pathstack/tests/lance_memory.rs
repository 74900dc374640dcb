//! Two `Host`s whose NIC is the emulated LANCE (Mosberger, Peterson and
//! O'Malley, *Protocol Latency: MIPS and Reality*, 1995, §2.6), joined
//! by the in-memory wire: ping (small and a fragmented 4,000-byte one, both
//! ways) and UDP round trips (a bound echo path on port 7 answered from a
//! connected and from a bound client path) are all answered with
//! `lance:copy`, `lance:direct` and the two mixed; the same scripted
//! exchange puts byte-identical frames on the wire with either descriptor
//! access strategy; and `direct` touches fewer sparse-memory words than
//! `copy`, which is the point of accessing descriptors in place.

use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::core::device::record::{Recorder, Recording};
use pathstack::core::device::Device;
use pathstack::core::{Dir, PathId};
use pathstack::devices::lance::sparse::AccessCounts;
use pathstack::devices::{Access, LanceModule};
use pathstack::host::{Below, Host, HostConfig, UpperModule};
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use pathstack_inet::InetAnno;
use std::net::Ipv4Addr;

const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const ECHO_PORT: u16 = 7;
const A_BOUND_PORT: u16 = 4444;
const COPY: Nic = Nic::Lance(Access::Copy);
const DIRECT: Nic = Nic::Lance(Access::Direct);
/// Frames recorded per host: far more than the script sends.
const MAX_FRAMES: usize = 100_000;

fn bound_attrs(port: u16) -> Attrs {
    Attrs::new().with(&PASSIVE_OPEN, true).with(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Port(port)],
            remote: vec![],
        },
    )
}

/// A host on `dev` through `nic`, with an `ECHO mode=echo` module `echo7`
/// (the host example's echo service) and an `ECHO mode=sink` module `cli`
/// for client paths.
fn host(addr: &str, nic: Nic, dev: Recorder<MemoryEnd>) -> Host {
    let mut cfg = HostConfig::parse(addr).unwrap();
    // The wire end's own MAC: the LANCE takes its station address from
    // the device, and ETH must use the same one.
    cfg.mac = dev.caps().mac.map(MacAddr);
    cfg.nic = nic;
    cfg.upper = vec![
        UpperModule::new("echo7", "ECHO")
            .param("mode", "echo")
            .over("down", Below::Udp),
        UpperModule::new("cli", "ECHO")
            .param("mode", "sink")
            .over("down", Below::Udp),
    ];
    Host::new(cfg, dev).unwrap_or_else(|e| panic!("host {addr} on {nic}: {e}"))
}

/// Host A (10.0.0.1, client) and host B (10.0.0.2, echo server on port 7).
struct Net {
    a: Host,
    b: Host,
    a_sent: Recording,
    b_sent: Recording,
    /// A's connected path to B:7 (through `cli`).
    a_connected: PathId,
    /// A's bound path on port 4444 (plain UDP).
    a_bound: PathId,
}

impl Net {
    fn new(nic_a: Nic, nic_b: Nic) -> Net {
        let (wa, wb) = memory_pair(MemoryConfig::default());
        let (wa, a_sent) = Recorder::new(wa, MAX_FRAMES);
        let (wb, b_sent) = Recorder::new(wb, MAX_FRAMES);
        let mut a = host("10.0.0.1/24", nic_a, wa);
        let mut b = host("10.0.0.2/24", nic_b, wb);
        let echo = b.stack().module_id("echo7").unwrap();
        b.stack_mut()
            .path_create(echo, bound_attrs(ECHO_PORT))
            .unwrap();
        let cli = a.stack().module_id("cli").unwrap();
        let a_connected = a
            .stack_mut()
            .path_create(
                cli,
                Attrs::new().with(
                    &PARTICIPANTS,
                    Participants {
                        local: vec![AddrPart::Port(0)],
                        remote: vec![AddrPart::Ipv4(B_IP.octets()), AddrPart::Port(ECHO_PORT)],
                    },
                ),
            )
            .unwrap();
        let udp = a.stack().module_id("udp").unwrap();
        let a_bound = a
            .stack_mut()
            .path_create(udp, bound_attrs(A_BOUND_PORT))
            .unwrap();
        Net {
            a,
            b,
            a_sent,
            b_sent,
            a_connected,
            a_bound,
        }
    }

    /// Polls both hosts until `done` holds; fails the test after 10,000
    /// rounds (everything here completes in a handful).
    fn run_until<T>(&mut self, what: &str, mut done: impl FnMut(&mut Net) -> Option<T>) -> T {
        for _ in 0..10_000 {
            self.a.poll();
            self.b.poll();
            if let Some(t) = done(self) {
                return t;
            }
        }
        panic!(
            "{what}: not done\nA:\n{}\nB:\n{}",
            self.a.report(),
            self.b.report()
        );
    }

    /// `from` pings `to`'s address; asserts the reply carries `data`.
    fn ping(&mut self, from_a: bool, seq: u16, data: &[u8]) {
        let dst = if from_a { B_IP } else { A_IP };
        let h = if from_a { &mut self.a } else { &mut self.b };
        h.ping(dst, seq, data).unwrap();
        let reply = self.run_until(&format!("ping {dst} seq {seq}"), |n| {
            let h = if from_a { &mut n.a } else { &mut n.b };
            h.echo_replies().into_iter().next()
        });
        let b = reply.as_slice();
        assert_eq!(b[0], 0, "echo reply type");
        assert_eq!(u16::from_be_bytes([b[6], b[7]]), seq);
        assert_eq!(&b[8..], data, "echoed data of seq {seq}");
    }

    /// A datagram from A's connected path to B:7; asserts the echo.
    fn udp_connected(&mut self, data: &[u8]) {
        let m = self.a.stack().pool().alloc_copy(data).unwrap();
        let p = self.a_connected;
        self.a.stack_mut().send(p, Dir::Down, m).unwrap();
        let got = self.run_until(&format!("UDP echo of {} bytes", data.len()), |n| {
            n.a.stack_mut().recv(p, Dir::Up)
        });
        assert_eq!(got.as_slice(), data);
        assert_eq!(got.anno().peer_port(), Some(ECHO_PORT));
    }

    /// A datagram from A's bound path (port 4444) to B:7; asserts the echo
    /// comes back to port 4444 from B:7.
    fn udp_bound(&mut self, data: &[u8]) {
        let mut m = self.a.stack().pool().alloc_copy(data).unwrap();
        m.anno_mut().set_peer_ip(B_IP);
        m.anno_mut().set_peer_port(ECHO_PORT);
        let p = self.a_bound;
        self.a.stack_mut().send(p, Dir::Down, m).unwrap();
        let got = self.run_until(&format!("bound UDP echo of {} bytes", data.len()), |n| {
            n.a.stack_mut().recv(p, Dir::Up)
        });
        assert_eq!(got.as_slice(), data);
        assert_eq!(got.anno().peer_ip(), Some(B_IP));
        assert_eq!(got.anno().peer_port(), Some(ECHO_PORT));
    }

    fn lance(h: &Host) -> Option<&LanceModule> {
        let id = h.stack().module_id("dev")?;
        h.stack().module::<LanceModule>(id)
    }
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(7) ^ salt).collect()
}

/// What one run of the script left behind.
struct Transcript {
    a_sent: Vec<Vec<u8>>,
    b_sent: Vec<Vec<u8>>,
    a_accesses: Option<AccessCounts>,
    b_accesses: Option<AccessCounts>,
}

/// The scripted exchange: each step waits for its answer before the next,
/// so the frames on the wire do not depend on how polls interleave.
fn script(nic_a: Nic, nic_b: Nic) -> Transcript {
    let mut n = Net::new(nic_a, nic_b);
    for seq in 1..=5 {
        n.ping(true, seq, format!("pathstack {seq}").as_bytes());
    }
    // 4,000 bytes: three fragments each way through both LANCEs.
    n.ping(true, 6, &pattern(4000, 0x5a));
    for seq in 1..=3 {
        n.ping(false, seq, b"from B");
    }
    n.ping(false, 4, &pattern(4000, 0xa5));
    for i in 0..20usize {
        n.udp_connected(&pattern(1 + i * 71 % 1472, i as u8));
    }
    n.udp_connected(&pattern(1472, 1)); // the largest unfragmented datagram
    for i in 0..5usize {
        n.udp_bound(&pattern(1 + i * 300, 0x33));
    }
    for (h, nic) in [(&n.a, nic_a), (&n.b, nic_b)] {
        if let Nic::Lance(access) = nic {
            let l = Net::lance(h).expect("a LANCE module named dev");
            assert_eq!(l.access(), access);
            let s = l.driver_stats();
            assert_eq!(
                s.tx_errors + s.rx_errors + s.rx_no_buffer + s.miss + s.babble + s.merr,
                0,
                "LANCE errors on {nic}: {s:?}"
            );
        }
    }
    let t = Transcript {
        a_sent: n.a_sent.frames(),
        b_sent: n.b_sent.frames(),
        a_accesses: Net::lance(&n.a).map(LanceModule::cpu_accesses),
        b_accesses: Net::lance(&n.b).map(LanceModule::cpu_accesses),
    };
    // 12 pings + 26 datagrams each way, fragments, ARP.
    assert!(t.a_sent.len() >= 12 + 26, "A sent {}", t.a_sent.len());
    assert!(t.b_sent.len() >= 12 + 26, "B sent {}", t.b_sent.len());
    t
}

fn first_difference(x: &[Vec<u8>], y: &[Vec<u8>]) -> String {
    if x.len() != y.len() {
        return format!("{} frames versus {}", x.len(), y.len());
    }
    match x.iter().zip(y).position(|(p, q)| p != q) {
        Some(i) => format!("frame {i} differs:\n{:02x?}\n{:02x?}", x[i], y[i]),
        None => "identical".into(),
    }
}

fn assert_same_frames(label: &str, x: &Transcript, y: &Transcript) {
    assert!(
        x.a_sent == y.a_sent,
        "{label}: A's frames: {}",
        first_difference(&x.a_sent, &y.a_sent)
    );
    assert!(
        x.b_sent == y.b_sent,
        "{label}: B's frames: {}",
        first_difference(&x.b_sent, &y.b_sent)
    );
}

#[test]
fn ping_and_udp_over_lance_copy() {
    script(COPY, COPY);
}

#[test]
fn ping_and_udp_over_lance_direct() {
    script(DIRECT, DIRECT);
}

#[test]
fn ping_and_udp_between_copy_and_direct() {
    script(COPY, DIRECT);
    script(DIRECT, COPY);
}

#[test]
fn copy_and_direct_put_identical_frames_on_the_wire() {
    let copy = script(COPY, COPY);
    let direct = script(DIRECT, DIRECT);
    assert_same_frames("copy vs direct", &copy, &direct);
    let mixed = script(COPY, DIRECT);
    assert_same_frames("copy vs mixed", &copy, &mixed);
}

#[test]
fn direct_touches_fewer_descriptor_words_than_copy() {
    let copy = script(COPY, COPY);
    let direct = script(DIRECT, DIRECT);
    for (who, frames, c, d) in [
        ("A", copy.a_sent.len(), copy.a_accesses, direct.a_accesses),
        ("B", copy.b_sent.len(), copy.b_accesses, direct.b_accesses),
    ] {
        let (c, d) = (c.unwrap(), d.unwrap());
        let words = |a: AccessCounts| a.word_reads + a.word_writes;
        eprintln!(
            "{who}: {frames} frames sent; sparse-memory words copy {} (r {} w {}), direct {} (r {} w {})",
            words(c),
            c.word_reads,
            c.word_writes,
            words(d),
            d.word_reads,
            d.word_writes
        );
        assert!(
            words(d) < words(c),
            "{who}: direct touched {} sparse-memory words, copy {}\ncopy {c:?}\ndirect {d:?}",
            words(d),
            words(c)
        );
        // Descriptors differ in how they are reached, never in the frame
        // data moved through the buffers.
        assert_eq!(c.buffer_bytes_read, d.buffer_bytes_read, "{who}");
        assert_eq!(c.buffer_bytes_written, d.buffer_bytes_written, "{who}");
    }
}

#[test]
fn the_lance_is_transparent_next_to_the_plain_wire_driver() {
    // The same script through `DRIVER`: the LANCE adds nothing to and
    // removes nothing from the frames.
    let wire = script(Nic::Device, Nic::Device);
    let lance = script(DIRECT, DIRECT);
    assert_same_frames("DRIVER vs LANCE", &wire, &lance);
}

/// Datagrams larger than the MTU: IP fragments them, the LANCE rings carry
/// the fragments, and B reassembles before classifying to the port-7 path.
#[test]
fn fragmented_udp_is_echoed_over_the_lance() {
    let mut n = Net::new(COPY, DIRECT);
    n.udp_connected(&pattern(3000, 0x3c));
    n.udp_bound(&pattern(5000, 0xc3));
}
