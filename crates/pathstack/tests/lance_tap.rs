//! Privileged: a pathstack host whose NIC is the emulated LANCE
//! (Mosberger, Peterson and O'Malley, *Protocol Latency: MIPS and Reality*,
//! 1995, §2.6) attached to a TAP device in namespace A; the Linux kernel
//! of namespace B pings it (30 pings 10 ms apart and three 4,000-byte ones
//! that fragment both ways), with `lance:copy` and with `lance:direct`.
//! Every request is answered, the driver counts no error, and tshark finds
//! nothing malformed in the capture taken between the chip and the TAP.

use pathstack::devices::{Access, LanceModule, PcapCapture, TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use pathstack_testutil::{assert_tshark_clean, kernel_ping, privileged, TempFile, Topology};
use std::time::Duration;

#[path = "support/host_loop.rs"]
mod host_loop;
use host_loop::host_loop;

fn stat(report: &str, key: &str) -> Option<u64> {
    report
        .split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|n| n.parse().ok())
}

fn kernel_pings_a_lance_host_on_tap(access: Access) {
    let topo = Topology::up();
    let pcap = TempFile::new(&format!("lance-tap-{access}.pcap"));
    let tap = TapDevice::open(topo.var("TAP_A"), TapOptions::new().netns(topo.var("NS_A")))
        .expect("open TAP A");
    let waiter = tap.waiter().expect("waiter");
    let mut cfg = HostConfig::parse(&format!("{}/24", topo.var("PS_A_IP"))).unwrap();
    // The LANCE takes its station address from the device (the TAP's);
    // ETH uses the same one.
    cfg.mac = Some(MacAddr(tap.mac()));
    cfg.nic = Nic::Lance(access);
    let capture = PcapCapture::create(tap, &*pcap).expect("pcap");
    let host = Host::new(cfg, capture)
        .expect("host")
        .with_waiter(waiter, WaitMode::Blocking);
    let runner = host_loop(host);
    std::thread::sleep(Duration::from_millis(200));

    kernel_ping(&topo, &["-i", "0.01"], 30);
    kernel_ping(&topo, &["-s", "4000", "-i", "0.05"], 3);

    let host = runner.join();
    let report = host.report();
    assert_eq!(
        stat(&report, "echo_replies_sent"),
        Some(33),
        "the host answered 30 + 3 pings\n{report}"
    );
    let id = host.stack().module_id("dev").expect("driver instance");
    let lance = host
        .stack()
        .module::<LanceModule>(id)
        .expect("the driver is the LANCE");
    assert_eq!(lance.access(), access);
    let s = lance.driver_stats();
    assert_eq!(
        s.tx_errors + s.rx_errors + s.rx_no_buffer + s.miss + s.babble + s.merr,
        0,
        "LANCE errors: {s:?}\n{report}"
    );
    // 33 requests in and 33 replies out, the large ones in 3 fragments.
    assert!(s.rx_frames >= 30 + 9, "{s:?}");
    assert!(s.tx_frames >= 30 + 9, "{s:?}");
    drop(host); // flushes the capture
    if let Some(n) = assert_tshark_clean(&pcap) {
        assert!(n >= 2 * (30 + 9), "only {n} frames captured");
    }
}

#[test]
fn linux_kernel_pings_a_lance_copy_host_on_tap() {
    if !privileged("linux_kernel_pings_a_lance_copy_host_on_tap") {
        return;
    }
    kernel_pings_a_lance_host_on_tap(Access::Copy);
}

#[test]
fn linux_kernel_pings_a_lance_direct_host_on_tap() {
    if !privileged("linux_kernel_pings_a_lance_direct_host_on_tap") {
        return;
    }
    kernel_pings_a_lance_host_on_tap(Access::Direct);
}
