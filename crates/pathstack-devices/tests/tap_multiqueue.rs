//! Multi-queue TAP (`TapOptions::multi_queue`, `IFF_MULTI_QUEUE`) against
//! the real kernel. Needs root (CAP_NET_ADMIN); see
//! `pathstack_testutil::privileged`.
//!
//! Each test makes its own `scripts/netns.sh` topology (removed in a Drop
//! guard) and opens a TAP of a fresh name inside its namespace A; the TAP is
//! not persistent, so it goes away with its last queue. Frames written go
//! only to that TAP's kernel side, inside the namespace.

use pathstack_core::device::Device;
use pathstack_core::{Instant, MsgPool, PoolConfig};
use pathstack_devices::{TapDevice, TapError, TapOptions};
use pathstack_testutil::{privileged, Topology};

/// `ip -d link show NAME` in namespace A (the kernel's view of the TAP).
fn link_details(topo: &Topology, name: &str) -> String {
    let out = topo
        .command_in("NS_A", "ip")
        .args(["-d", "link", "show", "dev", name])
        .output()
        .expect("run ip");
    assert!(out.status.success(), "ip link show {name} failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Frames the kernel side of TAP `name` received from user space.
fn kernel_rx_packets(topo: &Topology, name: &str) -> u64 {
    let out = topo
        .command_in("NS_A", "cat")
        .arg(format!("/sys/class/net/{name}/statistics/rx_packets"))
        .output()
        .expect("run cat");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("rx_packets is a number")
}

/// A broadcast Ethernet frame from `src` (an IPv4 EtherType and 46 zero
/// bytes: the kernel counts it, then finds no IPv4 header in it).
fn broadcast_frame(pool: &MsgPool, src: [u8; 6]) -> pathstack_core::Msg {
    let mut f = vec![0xffu8; 6];
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x00]);
    f.resize(60, 0);
    pool.alloc_copy(&f).expect("pool buffer")
}

#[test]
fn two_opens_with_multi_queue_are_two_working_queues() {
    if !privileged("two_opens_with_multi_queue_are_two_working_queues") {
        return;
    }
    let topo = Topology::up();
    let name = format!("pstq-{}", topo.id);
    let opts = TapOptions::new().netns(topo.var("NS_A")).multi_queue(true);
    let mut q0 = TapDevice::open(&name, opts.clone()).expect("first queue");
    let mut q1 = TapDevice::open(&name, opts).expect("second queue");
    let details = link_details(&topo, &name);
    assert!(
        details.contains("multi_queue") && details.contains("numqueues 2"),
        "the kernel shows one interface with two queues: {details}"
    );
    assert_eq!(q0.name(), q1.name());
    assert_eq!(q0.kernel_mac(), q1.kernel_mac());
    // Each queue's descriptor carries frames to the kernel on its own.
    let pool = MsgPool::new(PoolConfig::small(16));
    let before = kernel_rx_packets(&topo, &name);
    q0.transmit(broadcast_frame(&pool, q0.mac()), Instant::ZERO)
        .expect("write on queue 0");
    assert_eq!(kernel_rx_packets(&topo, &name), before + 1);
    q1.transmit(broadcast_frame(&pool, q1.mac()), Instant::ZERO)
        .expect("write on queue 1");
    assert_eq!(kernel_rx_packets(&topo, &name), before + 2);
    // Closing one queue leaves the other (and the interface) in place.
    drop(q0);
    let details = link_details(&topo, &name);
    assert!(details.contains("numqueues 1"), "{details}");
    q1.transmit(broadcast_frame(&pool, q1.mac()), Instant::ZERO)
        .expect("write on the remaining queue");
    assert_eq!(kernel_rx_packets(&topo, &name), before + 3);
}

#[test]
fn opens_that_disagree_on_multi_queue_fail_cleanly() {
    if !privileged("opens_that_disagree_on_multi_queue_fail_cleanly") {
        return;
    }
    let topo = Topology::up();
    let ns = topo.var("NS_A");
    let name = format!("pstq-{}", topo.id);
    let multi = TapOptions::new().netns(ns).multi_queue(true);
    let single = TapOptions::new().netns(ns);
    let _q0 = TapDevice::open(&name, multi).expect("multi-queue TAP");
    // A plain open of a multi-queue interface: the kernel refuses it.
    match TapDevice::open(&name, single.clone()) {
        Err(TapError::Ioctl {
            op: "TUNSETIFF",
            source,
            ..
        }) => {
            assert_eq!(source.raw_os_error(), Some(libc::EINVAL), "{source}")
        }
        other => panic!("expected TUNSETIFF to fail, got {other:?}"),
    }
    // A multi-queue open of a single-queue interface (TAP_A of the
    // topology, made by `ip tuntap add` without multi_queue): refused too.
    let plain = topo.var("TAP_A");
    match TapDevice::open(plain, TapOptions::new().netns(ns).multi_queue(true)) {
        Err(
            e @ TapError::Ioctl {
                op: "TUNSETIFF", ..
            },
        ) => {
            assert!(
                e.to_string().contains(plain),
                "the error names the TAP: {e}"
            )
        }
        other => panic!("expected TUNSETIFF to fail, got {other:?}"),
    }
    // And two plain opens of one interface: the second finds it busy.
    let _p0 = TapDevice::open(plain, single.clone()).expect("plain TAP");
    match TapDevice::open(plain, single) {
        Err(TapError::Ioctl {
            op: "TUNSETIFF",
            source,
            ..
        }) => {
            assert_eq!(source.kind(), std::io::ErrorKind::ResourceBusy, "{source}")
        }
        other => panic!("expected EBUSY, got {other:?}"),
    }
}
