//! Privileged: one pathstack host per queue of a multi-queue TAP
//! (`TapOptions::multi_queue`), the kernel spreading TCP connections over
//! the queues. Brings up its own `scripts/netns.sh` topology (torn down on
//! drop) and replaces its TAP_A with a multi-queue TAP of the same name on
//! the same bridge; both hosts have PS_A_IP and the same MAC and listen on
//! the same port, each on its own thread. Kernel B opens 8 connections,
//! each sending its own pattern stream, and every byte is checked on the
//! host that received it.
//!
//! Why the connections spread, and stay put: the kernel picks the queue of
//! a frame to user space in `tun_select_queue`. A frame of a flow some
//! queue has written (the TUN driver's flow table, updated on every write)
//! goes to that queue; any other frame goes by its flow hash, scaled to
//! the number of queues. So a SYN lands on a queue by hash, that queue's
//! host answers it, and from then on the connection's frames come to that
//! host. ARP replies, however, are steered by hash like any other frame
//! and may reach the other host: so each host gets kernel B's MAC as a
//! static neighbour (`Host::add_neighbor`) and never has to ask.

use pathstack::devices::{TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::socket::TcpStream;
use pathstack_testutil::kernel_tcp::{kernel_client, pattern_bytes, ClientOptions};
use pathstack_testutil::{privileged, Topology};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const MB: u64 = 1024 * 1024;
const CONNS: u64 = 8;
/// Further small connections, at most, while one host has none yet.
const EXTRA: u64 = 32;
const LEN: u64 = 4 * MB;
const PORT: u16 = 45211;
/// The seeds of the connections' streams: connection i sends the stream
/// of `SEED_BASE + i`, and the host finds out which by its first octets.
const SEED_BASE: u64 = 0x6d71_0000;

/// Runs `ip ARGS` and asserts it succeeded; its stdout.
fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Replaces the topology's TAP_A with a persistent multi-queue TAP of the
/// same name, on the same bridge (netns.sh's teardown deletes it by name).
fn make_tap_a_multi_queue(topo: &Topology) {
    let (ns, tap, br) = (topo.var("NS_A"), topo.var("TAP_A"), topo.var("BR_A"));
    ip(&["-n", ns, "link", "del", tap]);
    ip(&[
        "-n",
        ns,
        "tuntap",
        "add",
        "dev",
        tap,
        "mode",
        "tap",
        "multi_queue",
    ]);
    ip(&["-n", ns, "link", "set", tap, "master", br]);
    ip(&["-n", ns, "link", "set", tap, "up"]);
}

/// The MAC of kernel B's address: that of bridge BR_B, which holds it.
fn kernel_b_mac(topo: &Topology) -> MacAddr {
    let out = ip(&[
        "-n",
        topo.var("NS_B"),
        "-o",
        "link",
        "show",
        topo.var("BR_B"),
    ]);
    let mac = out
        .split_whitespace()
        .skip_while(|w| *w != "link/ether")
        .nth(1)
        .expect("link/ether in ip link show");
    mac.parse().expect("a MAC address")
}

/// A host on one more queue of TAP_A.
fn queue_host(topo: &Topology, peer: (Ipv4Addr, MacAddr)) -> Host {
    let tap = TapDevice::open(
        topo.var("TAP_A"),
        TapOptions::new().netns(topo.var("NS_A")).multi_queue(true),
    )
    .expect("open a queue of TAP A");
    let waiter = tap.waiter().expect("waiter");
    let mut cfg = HostConfig::parse(&format!("{}/24", topo.var("PS_A_IP"))).unwrap();
    cfg.mac = Some(MacAddr(tap.mac()));
    let mut host = Host::new(cfg, tap)
        .expect("host")
        .with_waiter(waiter, WaitMode::Blocking);
    host.add_neighbor(peer.0, peer.1).expect("static neighbour");
    host
}

/// A connection being checked: which stream it carries (once known from
/// its first 8 octets) and how far it has been checked.
struct Incoming {
    stream: TcpStream,
    /// The first octets, until there are 8 to identify the stream by.
    head: Vec<u8>,
    seed: Option<u64>,
    checked: u64,
}

/// Which of the connections' streams begins with `head` (8 octets).
fn identify(head: &[u8]) -> Option<u64> {
    (0..CONNS + EXTRA).map(|i| SEED_BASE + i).find(|&seed| {
        let mut want = [0u8; 8];
        pattern_bytes(seed, 0, &mut want);
        head[..8] == want
    })
}

/// Checks `data` at the connection's current offset; panics on the first
/// octet that differs.
fn check(c: &mut Incoming, data: &[u8]) {
    if c.seed.is_none() {
        c.head.extend_from_slice(data);
        if c.head.len() < 8 {
            return;
        }
        let seed = identify(&c.head)
            .unwrap_or_else(|| panic!("a connection began with {:02x?}", &c.head[..8]));
        c.seed = Some(seed);
        let head = std::mem::take(&mut c.head);
        return check_at(c, seed, &head);
    }
    let seed = c.seed.expect("identified");
    check_at(c, seed, data);
}

fn check_at(c: &mut Incoming, seed: u64, data: &[u8]) {
    let mut want = vec![0u8; data.len()];
    pattern_bytes(seed, c.checked, &mut want);
    if let Some(i) = data.iter().zip(&want).position(|(a, b)| a != b) {
        panic!(
            "stream {seed:#x}: octet {} is {:#04x}, expected {:#04x}",
            c.checked + i as u64,
            data[i],
            want[i]
        );
    }
    c.checked += data.len() as u64;
}

/// Runs one host until `stop`; returns (seed, octets) of each connection
/// it served to EOF, counting them in `served` as they end.
fn serve(
    mut host: Host,
    ready: &Barrier,
    stop: &AtomicBool,
    served: &AtomicUsize,
) -> Vec<(u64, u64)> {
    let l = host.tcp().listen(("0.0.0.0", PORT), 16).expect("listen");
    ready.wait();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut open: Vec<Incoming> = Vec::new();
    let mut done = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        assert!(Instant::now() < deadline, "the transfers did not end");
        host.poll();
        while let Some((stream, _)) = pathstack::socket::ready(l.accept(&mut host)).expect("accept")
        {
            open.push(Incoming {
                stream,
                head: Vec::new(),
                seed: None,
                checked: 0,
            });
        }
        let mut i = 0;
        while i < open.len() {
            let mut eof = false;
            while let Some(n) =
                pathstack::socket::ready(open[i].stream.read(&mut host, &mut buf)).expect("recv")
            {
                if n == 0 {
                    eof = true;
                    break;
                }
                check(&mut open[i], &buf[..n]);
            }
            if eof {
                let c = open.swap_remove(i);
                let seed = c.seed.expect("a connection ended before 8 octets");
                done.push((seed, c.checked));
                host.tcp().close(c.stream).expect("close");
                served.fetch_add(1, Ordering::Relaxed);
            } else {
                i += 1;
            }
        }
        host.wait(Duration::from_millis(5)).expect("wait");
    }
    // Let the last FINs out.
    for _ in 0..50 {
        host.poll();
        host.wait(Duration::from_millis(2)).expect("wait");
    }
    done
}

#[test]
fn eight_kernel_connections_spread_over_two_stacks_on_two_queues() {
    if !privileged("eight_kernel_connections_spread_over_two_stacks_on_two_queues") {
        return;
    }
    let topo = Arc::new(Topology::up());
    make_tap_a_multi_queue(&topo);
    let peer = (
        topo.var("KERNEL_B_IP").parse().unwrap(),
        kernel_b_mac(&topo),
    );
    // Both queues are attached before the first SYN, so the hash spreads
    // the connections over two queues.
    let hosts = [queue_host(&topo, peer), queue_host(&topo, peer)];
    let ready = Arc::new(Barrier::new(hosts.len() + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let served: Arc<[AtomicUsize; 2]> = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let servers: Vec<_> = hosts
        .into_iter()
        .enumerate()
        .map(|(i, h)| {
            let (ready, stop, served) =
                (Arc::clone(&ready), Arc::clone(&stop), Arc::clone(&served));
            std::thread::spawn(move || serve(h, &ready, &stop, &served[i]))
        })
        .collect();
    ready.wait();
    let addr = SocketAddr::new(topo.var("PS_A_IP").parse().unwrap(), PORT);
    let send = |seed: u64, len: u64| {
        let topo = Arc::clone(&topo);
        std::thread::spawn(move || {
            let mut opts = ClientOptions::new(len, seed);
            opts.timeout = Duration::from_secs(90);
            kernel_client(&topo, "NS_B", addr, &opts)
        })
    };
    let clients: Vec<_> = (0..CONNS).map(|i| send(SEED_BASE + i, LEN)).collect();
    let mut lens = Vec::new();
    for (i, c) in clients.into_iter().enumerate() {
        let r = c.join().expect("client thread").expect("kernel client");
        assert_eq!(r.sent, LEN);
        assert_eq!(r.received.bytes, 0, "the hosts send nothing back");
        lens.push((SEED_BASE + i as u64, LEN));
    }
    // 8 flows hashed over 2 queues all land on one with probability
    // 2 * 2^-8 (under 1%): Linux picks each connection's source port at
    // random and the hash covers it. So while one host has none, further
    // small connections follow (one at a time, each a new hash draw); 32
    // of them all missing it is a 2^-40 chance, so a failure here is a
    // steering bug, not bad luck.
    let mut extra = 0;
    while served.iter().any(|n| n.load(Ordering::Relaxed) == 0) && extra < EXTRA {
        let seed = SEED_BASE + CONNS + extra;
        let r = send(seed, 64 * 1024)
            .join()
            .expect("client thread")
            .expect("kernel client");
        assert_eq!(r.received.bytes, 0);
        lens.push((seed, 64 * 1024));
        extra += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let per_host: Vec<Vec<(u64, u64)>> = servers
        .into_iter()
        .map(|s| s.join().expect("host thread"))
        .collect();
    let mut got: Vec<(u64, u64)> = per_host.iter().flatten().copied().collect();
    got.sort_unstable();
    lens.sort_unstable();
    assert_eq!(got, lens, "every stream arrived exactly once and whole");
    for (i, h) in per_host.iter().enumerate() {
        assert!(
            !h.is_empty(),
            "host {i} got no connection: {:?}",
            per_host.iter().map(Vec::len).collect::<Vec<_>>()
        );
    }
    eprintln!(
        "connections per host: {:?} ({extra} extra)",
        per_host.iter().map(Vec::len).collect::<Vec<_>>()
    );
}
