//! Privileged: a pathstack host on a TAP device and the Linux kernel in a
//! peer namespace (scripts/netns.sh topology). The kernel pings the host
//! (100 pings 1 ms apart; 4,000- and 60,000-byte pings that need
//! fragmentation and reassembly both ways), `arping` resolves it, the host
//! pings the kernel, and the pcap of the session reads clean in tshark.

use pathstack::devices::{PcapCapture, TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack_testutil::{assert_tshark_clean, kernel_ping, privileged, text, TempFile, Topology};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn linux_kernel_and_pathstack_host_on_tap() {
    if !privileged("linux_kernel_and_pathstack_host_on_tap") {
        return;
    }
    let topo = Topology::up();
    let pcap = TempFile::new("host-tap.pcap");
    let tap = TapDevice::open(topo.var("TAP_A"), TapOptions::new().netns(topo.var("NS_A")))
        .expect("open TAP A");
    let waiter = tap.waiter().expect("waiter");
    let mut cfg = HostConfig::parse(&format!("{}/24", topo.var("PS_A_IP"))).unwrap();
    cfg.mac = Some(MacAddr(tap.mac()));
    let capture = PcapCapture::create(tap, &*pcap).expect("pcap");
    let host = Host::new(cfg, capture)
        .expect("host")
        .with_waiter(waiter, WaitMode::Blocking);

    // The host runs on its own thread while the kernel talks to it.
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let runner = std::thread::spawn(move || {
        let mut host = host;
        while !flag.load(Ordering::Relaxed) {
            host.poll();
            host.wait(Duration::from_millis(10)).expect("wait");
        }
        host
    });
    std::thread::sleep(Duration::from_millis(200));

    kernel_ping(&topo, &["-i", "0.001"], 100);
    kernel_ping(&topo, &["-s", "4000", "-i", "0.05"], 3);
    kernel_ping(&topo, &["-s", "60000", "-i", "0.05"], 3);

    let o = topo
        .command_in("NS_B", "arping")
        .args([
            "-c",
            "3",
            "-w",
            "3",
            "-I",
            topo.var("BR_B"),
            topo.var("PS_A_IP"),
        ])
        .output()
        .expect("run arping");
    let out = text(&o);
    assert!(o.status.success(), "arping failed:\n{out}");
    assert!(out.contains("3 packets received"), "arping:\n{out}");

    stop.store(true, Ordering::Relaxed);
    let mut host = runner.join().expect("host thread");

    // The host pings the kernel of namespace B, small and large.
    let kernel: Ipv4Addr = topo.var("KERNEL_B_IP").parse().unwrap();
    let big: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    let mut answered = Vec::new();
    for seq in 1..=5u16 {
        let data: &[u8] = if seq == 5 { &big } else { b"pathstack" };
        host.ping(kernel, seq, data).unwrap();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            host.poll();
            let got = host.echo_replies();
            if let Some(r) = got.iter().find(|r| r.as_slice()[0] == 0) {
                let b = r.as_slice();
                assert_eq!(u16::from_be_bytes([b[6], b[7]]), seq);
                assert_eq!(&b[8..], data, "echoed data");
                answered.push(seq);
                break;
            }
            host.wait(Duration::from_millis(10)).unwrap();
        }
    }
    let report = host.report();
    assert_eq!(answered, vec![1, 2, 3, 4, 5], "kernel answered\n{report}");
    let replies_sent = report
        .split_whitespace()
        .find_map(|w| w.strip_prefix("echo_replies_sent="))
        .and_then(|n| n.parse::<u64>().ok());
    assert_eq!(
        replies_sent,
        Some(106),
        "the host answered 100 + 3 + 3 pings\n{report}"
    );
    drop(host); // flushes the capture
    let frames = assert_tshark_clean(&pcap);
    if let Some(n) = frames {
        // 106 requests + 106 replies, fragments of the large ones, ARP.
        assert!(n > 2 * 106, "only {n} frames captured");
    }
}
