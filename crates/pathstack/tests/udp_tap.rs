//! Privileged: the UDP echo (port 7, RFC 862) and discard (port 9, RFC 863)
//! services of the `host` example, in-process on a TAP device in namespace
//! A, used by the Linux kernel of namespace B through `socat`: every echo
//! comes back byte for byte, discard swallows and counts, a datagram to a
//! closed port is refused with ICMP port unreachable (socat sees
//! ECONNREFUSED), and the capture reads clean in tshark.
//!
//! The services are set up exactly as `tools/src/bin/host.rs` does: an
//! `ECHO mode=echo` module at the top of a passive UDP path bound to port 7
//! (the echo happens inside the path), and a passive UDP path bound to
//! port 9 whose sink the poll loop empties. A last test does the echo
//! with the tokio socket API instead (`pathstack::tokio`, `AsyncFd` on the
//! TAP descriptor).

use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::synthetic::EchoStage;
use pathstack::core::{Dir, PathId};
use pathstack::devices::{PcapCapture, TapDevice, TapOptions, WaitMode};
use pathstack::host::{Below, Host, HostConfig, UpperModule};
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use pathstack_testutil::{
    assert_tshark_clean, privileged, stopped, text, LoopThread, TempFile, Topology,
};
use std::io::Write;
use std::process::{Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[path = "support/host_loop.rs"]
mod host_loop;
use host_loop::host_loop_with;

const ECHO_PORT: u16 = 7;
const DISCARD_PORT: u16 = 9;
const CLOSED_PORT: u16 = 12_345;

fn bound(port: u16) -> Attrs {
    Attrs::new().with(&PASSIVE_OPEN, true).with(
        &PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Port(port)],
            remote: vec![],
        },
    )
}

/// The host with its services' paths, its poll loop on a thread.
struct Served {
    /// Datagrams the discard service took from its path.
    discarded: Arc<AtomicU64>,
    host: LoopThread<Host>,
    echo: PathId,
}

impl Served {
    /// Opens the services on `host` and starts its poll loop.
    fn start(mut host: Host) -> Served {
        let echo_module = host.stack().module_id("echo7").expect("echo module");
        let udp = host.stack().module_id("udp").expect("UDP module");
        let echo = host
            .stack_mut()
            .path_create(echo_module, bound(ECHO_PORT))
            .expect("echo path");
        let discard = host
            .stack_mut()
            .path_create(udp, bound(DISCARD_PORT))
            .expect("discard path");
        let discarded = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&discarded);
        let host = host_loop_with(host, move |host| {
            while host.stack_mut().recv(discard, Dir::Up).is_some() {
                count.fetch_add(1, Ordering::Relaxed);
            }
        });
        Served {
            discarded,
            host,
            echo,
        }
    }

    /// Stops the loop and returns the host.
    fn join(self) -> Host {
        self.host.join()
    }
}

/// TAP A of `topo`, opened in its namespace, and a host configuration
/// for the address reserved for it.
fn tap_a(topo: &Topology) -> (TapDevice, HostConfig) {
    let tap = TapDevice::open(topo.var("TAP_A"), TapOptions::new().netns(topo.var("NS_A")))
        .expect("open TAP A");
    let mut cfg = HostConfig::parse(&format!("{}/24", topo.var("PS_A_IP"))).unwrap();
    cfg.mac = Some(MacAddr(tap.mac()));
    (tap, cfg)
}

/// A host on TAP A of a fresh topology, with the services running.
fn served(topo: &Topology, pcap: &TempFile, nic: Nic) -> Served {
    let (tap, mut cfg) = tap_a(topo);
    let waiter = tap.waiter().expect("waiter");
    cfg.nic = nic;
    cfg.upper.push(
        UpperModule::new("echo7", "ECHO")
            .param("mode", "echo")
            .over("down", Below::Udp),
    );
    let capture = PcapCapture::create(tap, &**pcap).expect("pcap");
    let host = Host::new(cfg, capture)
        .expect("host")
        .with_waiter(waiter, WaitMode::Blocking);
    let s = Served::start(host);
    std::thread::sleep(Duration::from_millis(200));
    s
}

/// One datagram from the kernel of namespace B to `port` of the host with
/// `socat`, which then waits 0.5 s for an answer; `timeout` bounds the
/// whole run so a hang fails fast.
fn socat(topo: &Topology, port: u16, data: &[u8]) -> Output {
    let mut child = topo
        .command_in("NS_B", "timeout")
        .args([
            "5",
            "socat",
            "-b",
            "65536",
            "-t",
            "0.5",
            "-",
            &format!("UDP:{}:{port}", topo.var("PS_A_IP")),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run socat");
    // One write below PIPE_BUF (4,096 bytes) is read by socat at once, so
    // the payload leaves as one datagram.
    assert!(data.len() <= 4096);
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(data).expect("write to socat");
    drop(stdin);
    child.wait_with_output().expect("socat output")
}

fn assert_echoed(topo: &Topology, data: &[u8]) {
    let o = socat(topo, ECHO_PORT, data);
    assert!(
        o.status.success(),
        "socat to port 7 with {} bytes:\n{}",
        data.len(),
        text(&o)
    );
    assert!(
        o.stdout == data,
        "echo of {} bytes came back as {} bytes:\n{}",
        data.len(),
        o.stdout.len(),
        text(&o)
    );
}

/// Datagrams the `ECHO` stage at the top of `path` turned around.
fn echoed(host: &Host, path: PathId) -> u64 {
    let stage = host
        .stack()
        .path(path)
        .and_then(|p| p.stage(0))
        .expect("echo stage");
    let stage: &dyn std::any::Any = stage;
    stage
        .downcast_ref::<EchoStage>()
        .expect("an ECHO stage")
        .echoed()
}

fn payload(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13) ^ salt)
        .collect()
}

fn stat(report: &str, key: &str) -> u64 {
    report
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .filter_map(|n| n.parse::<u64>().ok())
        .sum()
}

fn echo_discard_and_refuse(nic: Nic) {
    let topo = Topology::up();
    let pcap = TempFile::new(&format!("udp-tap-{}.pcap", nic.name().replace(':', "-")));
    let s = served(&topo, &pcap, nic);

    let mut sizes = vec![b"hello\n".to_vec()];
    for (i, len) in [1usize, 18, 100, 512, 1000, 1400, 1472]
        .into_iter()
        .enumerate()
    {
        sizes.push(payload(len, i as u8));
    }
    for data in &sizes {
        assert_echoed(&topo, data);
    }

    for _ in 0..3 {
        let o = socat(&topo, DISCARD_PORT, b"into the void\n");
        assert!(o.status.success(), "socat to port 9:\n{}", text(&o));
        assert!(o.stdout.is_empty(), "discard answered:\n{}", text(&o));
    }

    let o = socat(&topo, CLOSED_PORT, b"anyone?\n");
    let out = text(&o);
    assert!(
        !o.status.success() && out.contains("Connection refused"),
        "a closed port must answer with ICMP port unreachable, which socat \
         reports as `Connection refused`:\n{out}"
    );

    let echo = s.echo;
    let discarded = Arc::clone(&s.discarded);
    let host = s.join();
    let report = host.report();
    assert_eq!(discarded.load(Ordering::Relaxed), 3, "discarded\n{report}");
    assert_eq!(
        echoed(&host, echo),
        sizes.len() as u64,
        "datagrams the echo path turned around\n{report}"
    );
    assert_eq!(
        stat(&report, "drop.udp.no_port"),
        1,
        "the closed-port datagram is counted\n{report}"
    );
    drop(host); // flushes the capture
    assert_tshark_clean(&pcap);
}

#[test]
fn linux_kernel_uses_udp_echo_and_discard_on_tap() {
    if !privileged("linux_kernel_uses_udp_echo_and_discard_on_tap") {
        return;
    }
    echo_discard_and_refuse(Nic::Device);
}

#[test]
fn linux_kernel_uses_udp_echo_and_discard_over_the_lance() {
    if !privileged("linux_kernel_uses_udp_echo_and_discard_over_the_lance") {
        return;
    }
    echo_discard_and_refuse(Nic::Lance(pathstack::devices::Access::Direct));
}

/// A 3,000-byte datagram leaves the kernel in three fragments; the host
/// reassembles it, classifies it to the port-7 path again and echoes it,
/// fragmented, back.
#[test]
fn linux_kernel_gets_a_fragmented_udp_echo_on_tap() {
    if !privileged("linux_kernel_gets_a_fragmented_udp_echo_on_tap") {
        return;
    }
    let topo = Topology::up();
    let pcap = TempFile::new("udp-tap-frag.pcap");
    let s = served(&topo, &pcap, Nic::Device);
    for (i, len) in [1473usize, 3000, 4000].into_iter().enumerate() {
        assert_echoed(&topo, &payload(len, 0x80 | i as u8));
    }
    let echo = s.echo;
    let host = s.join();
    assert_eq!(echoed(&host, echo), 3, "{}", host.report());
    drop(host); // flushes the capture
    assert_tshark_clean(&pcap);
}

/// The tokio API on a TAP device: a `pathstack::tokio::Net` whose driver
/// waits on the TAP descriptor through `AsyncFd`, a socket echo server on a
/// current-thread runtime in its own thread, and the kernel of namespace B
/// as the client (small and fragmented datagrams).
#[cfg(feature = "tokio")]
#[test]
fn linux_kernel_uses_a_tokio_socket_echo_on_tap() {
    if !privileged("linux_kernel_uses_a_tokio_socket_echo_on_tap") {
        return;
    }
    let topo = Topology::up();
    let (tap, cfg) = tap_a(&topo);
    // Stopped and joined also when an assertion below fails.
    let server = LoopThread::spawn(move |stop| -> u64 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let net = pathstack::tokio::Net::tap(cfg, tap).expect("net");
            let driver = net.spawn();
            let sock = pathstack::tokio::UdpSocket::bind(
                &net,
                std::net::SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, ECHO_PORT),
            )
            .await
            .expect("bind");
            let mut buf = vec![0u8; 65_536];
            let mut echoed = 0;
            while !stopped(stop) {
                let got =
                    tokio::time::timeout(Duration::from_millis(50), sock.recv_from(&mut buf)).await;
                let Ok(got) = got else { continue };
                let (n, peer) = got.expect("recv_from");
                sock.send_to(&buf[..n], peer).await.expect("send_to");
                echoed += 1;
            }
            driver.abort();
            echoed
        })
    });
    let sizes = [1usize, 6, 512, 1472, 1473, 3000];
    for (i, len) in sizes.into_iter().enumerate() {
        assert_echoed(&topo, &payload(len, 0x40 | i as u8));
    }
    let echoed = server.join();
    assert_eq!(echoed, sizes.len() as u64);
}

/// A TAP deleted under a running `Net` (`ip link del`) ends the driver
/// with the device's failure: a pending receive fails with it
/// (`NetworkDown`) instead of waiting for ever, and so do later calls
/// (issue 27, problem 2).
#[cfg(feature = "tokio")]
#[test]
fn a_deleted_tap_fails_pending_and_later_tokio_calls() {
    if !privileged("a_deleted_tap_fails_pending_and_later_tokio_calls") {
        return;
    }
    let topo = Topology::up();
    let (ns, name) = (topo.var("NS_A").to_string(), topo.var("TAP_A").to_string());
    let (tap, cfg) = tap_a(&topo);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let net = pathstack::tokio::Net::tap(cfg, tap).expect("net");
        let sock = pathstack::tokio::UdpSocket::bind(&net, "0.0.0.0:7")
            .await
            .expect("bind");
        let pending = tokio::spawn(async move {
            let mut buf = [0u8; 64];
            sock.recv_from(&mut buf).await.map(|_| ())
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let deleted = std::process::Command::new("ip")
            .args(["-n", &ns, "link", "del", &name])
            .status()
            .expect("ip link del");
        assert!(deleted.success());
        let e = tokio::time::timeout(Duration::from_secs(5), pending)
            .await
            .expect("the pending receive still waits after the TAP went")
            .expect("task")
            .expect_err("received from a deleted TAP");
        assert_eq!(e.kind(), std::io::ErrorKind::NetworkDown, "{e}");
        assert!(
            matches!(
                net.driver_error(),
                Some(pathstack::tokio::DriverError::Device { .. })
            ),
            "{:?}",
            net.driver_error()
        );
        let e = pathstack::tokio::UdpSocket::bind(&net, "0.0.0.0:9")
            .await
            .expect_err("bound on a dead net");
        assert_eq!(e.kind(), std::io::ErrorKind::NetworkDown, "{e}");
    });
}
