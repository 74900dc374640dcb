//! TAP tests against the real kernel. They need root (CAP_NET_ADMIN); see
//! `pathstack_testutil::privileged` for the rule (never a silent pass).
//!
//! Each test makes its own topology with `scripts/netns.sh up --id <pid>-<n>`
//! (namespaces ps-a-ID / ps-b-ID joined by a veth pair, a bridge and a TAP in
//! each) and removes it in a Drop guard. The TAP is opened inside namespace
//! A through `TapOptions::netns`, which enters the namespace with `setns` on
//! a short-lived thread of its own; the test threads never change namespace.
//! Traffic only flows inside those namespaces.

use pathstack_core::device::{Device, DeviceError};
use pathstack_core::{Instant, Msg, MsgPool, PoolConfig};
use pathstack_devices::raw_responder::{RawResponder, Served};
use pathstack_devices::{PcapCapture, TapDevice, TapOptions, WaitMode};
use pathstack_testutil::{assert_tshark_clean, privileged, tshark_frames, TempFile, Topology};
use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn ip(s: &str) -> [u8; 4] {
    s.parse::<Ipv4Addr>().expect("IPv4 address").octets()
}

/// Whether `f` is an ARP request from `sender` asking for `target` (RFC 826
/// layout after a 14-byte Ethernet header).
fn is_arp_request(f: &[u8], sender: [u8; 4], target: [u8; 4]) -> bool {
    f.len() >= 42
        && f[0..6] == [0xff; 6]
        && f[12..14] == [0x08, 0x06]
        && f[20..22] == [0, 1]
        && f[28..32] == sender
        && f[38..42] == target
}

/// Starts `ping` in namespace B towards host A in the background; it keeps
/// the kernel of B sending ARP requests for A's address.
fn background_ping(topo: &Topology, count: &str) -> Child {
    topo.command_in("NS_B", "ping")
        .args(["-c", count, "-i", "0.3", "-W", "1", topo.var("PS_A_IP")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ping")
}

/// Stops a background child we started (by its handle, i.e. its pid).
fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Reads frames until an ARP request for PS_A_IP from KERNEL_B_IP arrives
/// (or 5 s pass).
fn expect_arp(topo: &Topology, tap: &mut TapDevice, pool: &MsgPool, mode: WaitMode) -> Msg {
    let sender = ip(topo.var("KERNEL_B_IP"));
    let target = ip(topo.var("PS_A_IP"));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let frame = tap
            .receive_timeout(pool, mode, Some(left))
            .expect("receive from TAP")
            .unwrap_or_else(|| panic!("no ARP request for {target:?} on the TAP within 5 s"));
        if is_arp_request(frame.as_slice(), sender, target) {
            return frame;
        }
    }
}

fn open_tap_a(topo: &Topology) -> TapDevice {
    TapDevice::open(topo.var("TAP_A"), TapOptions::new().netns(topo.var("NS_A")))
        .expect("open TAP A inside namespace A")
}

#[test]
fn kernel_arp_request_reaches_the_tap_blocking() {
    if !privileged("kernel_arp_request_reaches_the_tap_blocking") {
        return;
    }
    let topo = Topology::up();
    let mut tap = open_tap_a(&topo);
    assert_eq!(tap.name(), topo.var("TAP_A"));
    assert_eq!(tap.mtu(), 1500);
    assert_ne!(tap.mac(), tap.kernel_mac());
    let pool = MsgPool::new(PoolConfig::small(8));
    // Nothing is queued yet: a non-blocking read reports "nothing", not an error.
    assert!(tap.receive(&pool, Instant::now()).unwrap().is_none());
    let ping = background_ping(&topo, "5");
    let frame = expect_arp(&topo, &mut tap, &pool, WaitMode::Blocking);
    stop(ping);
    assert!(frame.len() >= 42);
    assert!(tap.stats().rx_frames >= 1);
    assert_eq!(tap.stats().errors, 0);
    drop(frame);
    drop(tap);
    // All buffers went back to the pool.
    assert_eq!(pool.stats().live, 0);
}

#[test]
fn kernel_arp_request_reaches_the_tap_busy_poll() {
    if !privileged("kernel_arp_request_reaches_the_tap_busy_poll") {
        return;
    }
    let topo = Topology::up();
    let mut tap = open_tap_a(&topo);
    let pool = MsgPool::new(PoolConfig::small(8));
    let ping = background_ping(&topo, "5");
    expect_arp(&topo, &mut tap, &pool, WaitMode::BusyPoll);
    stop(ping);
}

#[test]
fn wait_readable_times_out_when_nothing_arrives() {
    if !privileged("wait_readable_times_out_when_nothing_arrives") {
        return;
    }
    let topo = Topology::up();
    let mut tap = open_tap_a(&topo);
    let pool = MsgPool::new(PoolConfig::small(8));
    // The kernel may still send a frame or two on a fresh interface (seen
    // as a rare failure under parallel tests): a wake-up must then have a
    // frame behind it, which is drained before waiting again.
    let mut timed_out = false;
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        if !tap.wait_readable(Some(Duration::from_millis(50))).unwrap() {
            assert!(t0.elapsed() >= Duration::from_millis(50));
            timed_out = true;
            break;
        }
        assert!(
            tap.receive(&pool, Instant::now()).unwrap().is_some(),
            "woke up readable with nothing to read"
        );
    }
    assert!(timed_out, "a quiet TAP never timed out");
    assert!(tap.wait(WaitMode::BusyPoll, None).unwrap());
}

#[test]
fn mtu_option_and_oversized_frames() {
    if !privileged("mtu_option_and_oversized_frames") {
        return;
    }
    let topo = Topology::up();
    let mut tap = TapDevice::open(
        topo.var("TAP_A"),
        TapOptions::new().netns(topo.var("NS_A")).mtu(1400),
    )
    .expect("open TAP A with MTU 1400");
    assert_eq!(tap.mtu(), 1400);
    assert_eq!(tap.caps().mtu, 1400);
    let pool = MsgPool::new(PoolConfig::small(4));
    let err = tap
        .transmit(pool.alloc(1400 + 14 + 1).unwrap(), Instant::now())
        .unwrap_err();
    assert!(
        matches!(err, DeviceError::FrameTooLarge { max: 1414, .. }),
        "{err}"
    );
    assert_eq!(tap.stats().errors, 1);
    // A runt the kernel refuses is an error, not a panic.
    let err = tap.transmit(pool.alloc(3).unwrap(), Instant::now());
    if let Err(e) = err {
        assert!(matches!(e, DeviceError::Io { .. }), "{e}");
    }
    assert_eq!(tap.query_mtu().unwrap(), 1400);
}

/// Runs the floor responder on TAP A (captured to `pcap`) while namespace B
/// pings host A three times and sends one UDP datagram to it. Returns
/// (ping succeeded, UDP reply, responder).
fn floor_session(topo: &Topology, pcap: &std::path::Path) -> (bool, String, RawResponder) {
    let tap = open_tap_a(topo);
    let mac = tap.mac();
    let mut dev = PcapCapture::create(tap, pcap).expect("create pcap");
    let host_ip: Ipv4Addr = topo.var("PS_A_IP").parse().unwrap();
    let stop_flag = Arc::new(AtomicBool::new(false));
    let stop_seen = Arc::clone(&stop_flag);
    let server = std::thread::spawn(move || {
        let pool = MsgPool::new(PoolConfig::small(64));
        let mut floor = RawResponder::new(mac, host_ip);
        while !stop_seen.load(Ordering::Relaxed) {
            match floor.serve(&mut dev, &pool, Instant::now()) {
                Ok(Served::Idle) => {
                    dev.inner()
                        .wait_readable(Some(Duration::from_millis(20)))
                        .expect("wait on TAP");
                }
                Ok(_) => {}
                Err(e) => panic!("floor responder: {e}"),
            }
        }
        dev.flush().expect("flush pcap");
        // The device keeps one spare receive buffer; it goes back on drop.
        drop(dev);
        (floor, pool.stats())
    });

    let ping_ok = topo
        .command_in("NS_B", "ping")
        .args(["-c", "3", "-i", "0.2", "-W", "2", topo.var("PS_A_IP")])
        .stdout(Stdio::null())
        .status()
        .expect("run ping")
        .success();
    let mut socat = topo
        .command_in("NS_B", "socat")
        .args(["-t", "2", "-T", "3", "-"])
        .arg(format!("UDP:{}:7", topo.var("PS_A_IP")))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start socat");
    {
        use std::io::Write;
        let mut stdin = socat.stdin.take().unwrap();
        stdin.write_all(b"hello pathstack\n").unwrap();
    }
    let out = socat.wait_with_output().expect("socat");
    stop_flag.store(true, Ordering::Relaxed);
    let (floor, pool_stats) = server.join().expect("responder thread");
    assert_eq!(pool_stats.live, 0, "every buffer returned to the pool");
    assert_eq!(
        pool_stats.heap_allocs, 0,
        "no buffer beyond the preallocated ones"
    );
    (
        ping_ok,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        floor,
    )
}

#[test]
fn floor_responder_answers_kernel_ping_and_udp() {
    if !privileged("floor_responder_answers_kernel_ping_and_udp") {
        return;
    }
    let topo = Topology::up();
    let pcap = TempFile::new("floor-session.pcap");
    let (ping_ok, udp_reply, floor) = floor_session(&topo, &pcap);
    assert!(
        ping_ok,
        "ping -c 3 from namespace B to the floor responder failed"
    );
    assert_eq!(udp_reply, "hello pathstack\n");
    let s = floor.stats();
    assert!(s.arp_replies >= 1, "{s:?}");
    assert!(s.icmp_replies >= 3, "{s:?}");
    assert_eq!(s.udp_echoes, 1, "{s:?}");
}

#[test]
fn pcap_of_a_tap_session_is_clean_in_tshark() {
    if !privileged("pcap_of_a_tap_session_is_clean_in_tshark") {
        return;
    }
    let topo = Topology::up();
    let pcap = TempFile::new("tshark-session.pcap");
    let (ping_ok, _, floor) = floor_session(&topo, &pcap);
    assert!(ping_ok);
    let frames = assert_tshark_clean(&pcap).expect("tshark runs under root");
    let count = |filter: &str| tshark_frames(&pcap, filter).len();
    let s = floor.stats();
    // Every frame in and out: requests and replies both recorded.
    assert!(frames as u64 >= 2 * (s.arp_replies + s.icmp_replies + s.udp_echoes));
    assert_eq!(count("icmp.type == 8") as u64, s.icmp_replies);
    assert_eq!(count("icmp.type == 0") as u64, s.icmp_replies);
    assert!(count("arp.opcode == 2") >= 1);
    assert_eq!(count("udp.port == 7"), 2);
}

#[cfg(feature = "tokio")]
#[test]
fn async_tap_receives_the_arp_request() {
    if !privileged("async_tap_receives_the_arp_request") {
        return;
    }
    let topo = Topology::up();
    let tap = open_tap_a(&topo);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sender = ip(topo.var("KERNEL_B_IP"));
    let target = ip(topo.var("PS_A_IP"));
    let ping = background_ping(&topo, "5");
    let tap = rt.block_on(async {
        let mut tap = pathstack_devices::AsyncTap::new(tap).expect("register with tokio");
        let pool = MsgPool::new(PoolConfig::small(8));
        tokio::time::timeout(Duration::from_secs(5), tap.readable())
            .await
            .expect("readable within 5 s")
            .expect("readable");
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(5), tap.receive(&pool))
                .await
                .expect("a frame within 5 s")
                .expect("receive");
            if is_arp_request(frame.as_slice(), sender, target) {
                break;
            }
        }
        tap.into_inner()
    });
    stop(ping);
    assert!(tap.stats().rx_frames >= 1);
}

#[test]
fn open_creates_an_absent_tap_that_goes_away_on_drop() {
    if !privileged("open_creates_an_absent_tap_that_goes_away_on_drop") {
        return;
    }
    let topo = Topology::up();
    let name = format!("pstx-{}", topo.id);
    let shows = |name: &str| {
        Command::new("ip")
            .args(["-n", topo.var("NS_A"), "link", "show", "dev", name])
            .stderr(Stdio::null())
            .output()
            .unwrap()
            .status
            .success()
    };
    assert!(!shows(&name));
    let tap = TapDevice::open(&name, TapOptions::new().netns(topo.var("NS_A"))).unwrap();
    assert!(shows(&name), "TAP {name} created inside namespace A");
    drop(tap);
    assert!(
        !shows(&name),
        "a TAP we created (not persistent) goes away with its fd"
    );
}

/// Cleanup works: after a topology is dropped nothing with its ID is left.
#[test]
fn topology_guard_cleans_up() {
    if !privileged("topology_guard_cleans_up") {
        return;
    }
    let topo = Topology::up();
    let id = topo.id.clone();
    let tap = open_tap_a(&topo);
    drop(tap);
    drop(topo);
    let netns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let links = Command::new("ip").args(["-o", "link"]).output().unwrap();
    let suffix = format!("-{id}");
    for out in [&netns.stdout, &links.stdout] {
        let text = String::from_utf8_lossy(out);
        assert!(
            !text
                .split_whitespace()
                .any(|w| w.trim_end_matches(':').ends_with(&suffix)),
            "leftovers of topology {id}: {text}"
        );
    }
}

/// The interface's `tx_dropped` counter (frames the kernel did not queue
/// for the TAP's reader), read inside namespace A.
fn tap_tx_dropped(topo: &Topology) -> u64 {
    let path = format!("/sys/class/net/{}/statistics/tx_dropped", topo.var("TAP_A"));
    let out = topo
        .command_in("NS_A", "cat")
        .arg(&path)
        .output()
        .expect("read tx_dropped");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("no counter in {path}: {out:?}"))
}

#[test]
fn a_discard_filter_drops_matching_frames_in_the_kernel() {
    if !privileged("a_discard_filter_drops_matching_frames_in_the_kernel") {
        return;
    }
    use pathstack_core::device::FrameMatch;
    let topo = Topology::up();
    let mut tap = open_tap_a(&topo);
    let pool = MsgPool::new(PoolConfig::small(8));
    let sender = ip(topo.var("KERNEL_B_IP"));
    let target = ip(topo.var("PS_A_IP"));
    // ARP requests for A's address: EtherType ARP, opcode request, target
    // protocol address (RFC 826 layout after the Ethernet header).
    let arp_for_a = FrameMatch::new()
        .with_u16(12, 0x0806)
        .with_u16(20, 1)
        .with_u32(38, u32::from_be_bytes(target));
    assert!(tap.discard(&[arp_for_a]).expect("attach the filter"));
    let dropped_before = tap_tx_dropped(&topo);
    let ping = background_ping(&topo, "8");
    // Two seconds of B asking for A: none of it reaches the reader.
    let until = std::time::Instant::now() + Duration::from_secs(2);
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        if let Some(f) = tap
            .receive_timeout(&pool, WaitMode::Blocking, Some(left))
            .expect("receive from TAP")
        {
            assert!(
                !is_arp_request(f.as_slice(), sender, target),
                "an ARP request passed the discard filter"
            );
        }
    }
    let dropped = tap_tx_dropped(&topo) - dropped_before;
    assert!(
        dropped >= 2,
        "the kernel dropped {dropped} frames, want the ARP requests"
    );
    // Without the filter they come through again.
    assert!(tap.discard(&[]).expect("detach the filter"));
    expect_arp(&topo, &mut tap, &pool, WaitMode::Blocking);
    stop(ping);
}
