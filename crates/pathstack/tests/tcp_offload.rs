//! Privileged: TAP offloads (`TapOptions::offload`) against the Linux
//! kernel's TCP, over the scripts/netns.sh topology. A pathstack host on
//! TAP_A (NS_A) exchanges 100 MB each way with the kernel of NS_B, with
//! offloads on and off, byte-exact; with them on, a capture on the veth
//! shows the super-segments cut into valid MTU-sized segments.
//!
//! With offloads on, the kernel hands the host merged super-segments of up
//! to 64 KB with partial checksums (GRO/GSO frames never cut up, since the
//! TAP says it takes them), and the host hands the kernel TCP
//! super-segments of up to 64 KB with partial checksums for the kernel to
//! segment and finish.

#[path = "support/ps_driver.rs"]
mod ps_driver;

use pathstack::devices::{TapDevice, TapOptions};
use pathstack::inet::tcp::TcpStats;
use pathstack::Device;
use pathstack_testutil::kernel_tcp::{
    assert_tcp_capture_clean, kernel_client, ClientOptions, KernelSinkServer, NsSysctl, Transfer,
};
use pathstack_testutil::{privileged, tshark_frames, TcpdumpCapture, TempFile, Topology};
use ps_driver::{kernel_b, ps_addr, ps_host, run_client, PsEcho, Running};
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

const MB: u64 = 1024 * 1024;
/// The MSS both ends use on the 1500-byte MTU with timestamps.
const MSS: u64 = 1448;
const LIMIT: Duration = Duration::from_secs(120);

/// The kernel of NS_B sends `len` bytes to a pathstack echo server and
/// reads them back; returns the server's connection counters after
/// checking the echo byte for byte (SHA-256 of the pattern).
///
/// An echo rather than a sink: the kernel client's reader gives up after
/// ten seconds without a byte, and the unoptimised test build of the
/// stack may take longer than that for 100 MB.
fn kernel_to_pathstack(topo: &Topology, offload: bool, len: u64, seed: u64) -> TcpStats {
    let mut host = ps_host(topo, offload, None);
    let app = PsEcho::new(&mut host);
    let run = Running::start(host, app, LIMIT);
    let mut opts = ClientOptions::new(len, seed);
    opts.timeout = LIMIT;
    let r = kernel_client(topo, "NS_B", ps_addr(topo), &opts);
    let (host, app) = run.stop();
    let r = r.unwrap_or_else(|e| panic!("kernel client: {e}\n{}", host.report()));
    assert!(app.errors.is_empty(), "server errors: {:?}", app.errors);
    assert_eq!(app.finished, vec![len], "bytes echoed");
    assert_eq!(r.received, Transfer::pattern(seed, len), "byte-exact echo");
    app.stats[0]
}

/// A pathstack client sends `len` bytes to a kernel sink in NS_B, which
/// checks them by SHA-256; returns the client's connection counters.
fn pathstack_to_kernel(topo: &Topology, offload: bool, len: u64, seed: u64) -> TcpStats {
    let sink = KernelSinkServer::start(topo, "NS_B", SocketAddr::new(kernel_b(topo).into(), 0));
    let (_host, r) = run_client(topo, offload, sink.addr(), len, seed, false, LIMIT);
    assert_eq!(r.received, 0, "a sink sent bytes");
    assert_eq!(
        sink.next(Duration::from_secs(10)).expect("kernel sink"),
        Transfer::pattern(seed, len),
        "byte-exact"
    );
    r.stats
}

/// Both directions, 100 MB each, byte-exact: the kernel's 100 MB echoed
/// by pathstack, and pathstack's 100 MB to a kernel sink; returns the
/// echo server's and the client's counters.
fn hundred_mb_both_ways(offload: bool) -> (TcpStats, TcpStats) {
    let topo = Topology::up();
    let len = 100 * MB;
    let rx = kernel_to_pathstack(&topo, offload, len, 31);
    let tx = pathstack_to_kernel(&topo, offload, len, 32);
    println!("offload {offload}: receiving {rx:?}\nsending {tx:?}");
    (rx, tx)
}

#[test]
fn hundred_mb_both_ways_offload_on() {
    if !privileged("hundred_mb_both_ways_offload_on") {
        return;
    }
    let len = 100 * MB;
    let (echo, tx) = hundred_mb_both_ways(true);
    // The kernel handed over merged super-segments: far fewer segments
    // than MSS-sized ones would take.
    assert!(
        echo.segs_in < len / MSS / 2,
        "no GRO frames received: {} segments for {len} bytes",
        echo.segs_in
    );
    // And we sent super-segments for the kernel to cut up.
    assert!(
        tx.data_segs_out < len / MSS / 2,
        "no TSO super-segments sent: {} data segments for {len} bytes",
        tx.data_segs_out
    );
}

#[test]
fn hundred_mb_both_ways_offload_off() {
    if !privileged("hundred_mb_both_ways_offload_off") {
        return;
    }
    let len = 100 * MB;
    let (echo, tx) = hundred_mb_both_ways(false);
    // Without offloads every segment is at most one MSS.
    assert!(echo.segs_in >= len / MSS, "{echo:?}");
    assert!(echo.data_segs_out >= len / MSS, "{echo:?}");
    assert!(tx.data_segs_out >= len / MSS, "{tx:?}");
}

#[test]
fn offloads_are_negotiated_only_when_asked() {
    if !privileged("offloads_are_negotiated_only_when_asked") {
        return;
    }
    let topo = Topology::up();
    let open = |on: bool| {
        TapDevice::open(
            topo.var("TAP_A"),
            TapOptions::new().netns(topo.var("NS_A")).offload(on),
        )
        .expect("open TAP A")
    };
    let on = open(true);
    let o = on.offloads();
    assert_eq!(o.vnet_hdr_len, 12, "{o:?}");
    let caps = on.caps().offload;
    assert!(
        caps.tx_checksum && caps.rx_checksum && caps.rx_gro,
        "{caps:?}"
    );
    assert_eq!(caps.tso4_max, 65_535);
    drop(on);
    // The same (persistent) TAP reopened without: nothing is left on.
    let off = open(false);
    assert_eq!(off.offloads(), Default::default());
    assert_eq!(off.caps().offload, Default::default());
}

/// A Wireshark configuration directory in which every heuristic
/// dissector on TCP is off, made the one tshark reads
/// (`WIRESHARK_CONFIG_DIR`) while this lives. The pattern payload is
/// pseudo-random: over some 20,000 full segments, one now and then looks
/// enough like Thrift (or another protocol guessed from the payload alone)
/// for tshark to dissect it as such and call it malformed. The TCP and IP
/// checks do not depend on what the payload is taken for.
struct TsharkWithoutTcpHeuristics(std::path::PathBuf);

impl TsharkWithoutTcpHeuristics {
    fn new() -> TsharkWithoutTcpHeuristics {
        let dir = std::env::temp_dir().join(format!("pathstack-wsconf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("make the tshark configuration directory");
        let out = Command::new("tshark")
            .args(["-G", "heuristic-decodes"])
            .output()
            .expect("run tshark -G heuristic-decodes");
        // Lines "tcp<TAB>NAME<TAB>T": the heuristic's short name is
        // NAME_tcp (as `--disable-heuristic` takes it).
        let off: String = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("tcp\t"))
            .filter_map(|l| l.split('\t').next())
            .map(|name| format!("{name}_tcp,0\n"))
            .collect();
        assert!(off.contains("thrift_tcp"), "tshark lists no TCP heuristics");
        std::fs::write(dir.join("heuristic_protos"), off).expect("write heuristic_protos");
        std::env::set_var("WIRESHARK_CONFIG_DIR", &dir);
        TsharkWithoutTcpHeuristics(dir)
    }
}

impl Drop for TsharkWithoutTcpHeuristics {
    fn drop(&mut self) {
        std::env::remove_var("WIRESHARK_CONFIG_DIR");
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Turns off a veth end's transmit checksumming (and with it TSO and GSO).
fn ethtool_tx_off(topo: &Topology, ns_key: &str, iface: &str) {
    let out = topo
        .command_in(ns_key, "ethtool")
        .args(["-K", iface, "tx", "off", "tso", "off", "gso", "off"])
        .output()
        .expect("run ethtool (scripts/install-deps.sh installs it)");
    assert!(
        out.status.success(),
        "ethtool -K {iface}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Offloads on, 8 MB each way, captured on the veth in NS_B: every TCP
/// frame fits the MTU and tshark finds the capture clean, TCP checksums
/// included.
///
/// Where the real segments show: a veth carries GSO super-packets (and
/// partial checksums) untouched from one namespace to the other, so a
/// capture anywhere on the default topology shows 64 KB "frames" with
/// unfinished checksums. Turning off transmit checksumming (which takes
/// TSO and GSO with it) on both veth ends makes the kernel segment and
/// checksum in software at the veth's transmit (`validate_xmit_skb`),
/// before tcpdump's tap sees the frame: the capture on VETH_B then holds
/// what a real wire would carry, and its checksums are the ones our
/// partial sums were finished into. The TAP keeps its offloads: super-
/// segments still go from the host to the kernel (checked by the
/// counters), and the kernel cuts them up on the way to NS_B.
#[test]
fn capture_on_veth_shows_valid_mtu_sized_segments() {
    if !privileged("capture_on_veth_shows_valid_mtu_sized_segments") {
        return;
    }
    let topo = Topology::up();
    // Ports tshark decodes as nothing but TCP (a random kernel port may be
    // one a dissector is registered on, which then calls the pattern
    // bytes malformed).
    let _ports = NsSysctl::set(&topo, "NS_B", "net.ipv4.ip_local_port_range", "45200 45299");
    ethtool_tx_off(&topo, "NS_A", topo.var("VETH_A"));
    ethtool_tx_off(&topo, "NS_B", topo.var("VETH_B"));
    let pcap = TempFile::new("tcp-offload.pcap");
    let len = 8 * MB;
    let (rx, tx) = {
        let _cap = TcpdumpCapture::start(&topo, "NS_B", topo.var("VETH_B"), &pcap);
        let rx = kernel_to_pathstack(&topo, true, len, 41);
        let tx = pathstack_to_kernel(&topo, true, len, 42);
        (rx, tx)
    };
    println!("receiving {rx:?}\nsending {tx:?}");
    assert!(
        tx.data_segs_out < len / MSS / 2,
        "no TSO super-segments sent: {tx:?}"
    );
    let _conf = TsharkWithoutTcpHeuristics::new();
    let checked = std::panic::catch_unwind(|| assert_tcp_capture_clean(&pcap));
    let stats = match checked {
        Ok(s) => s,
        Err(e) => {
            // Keep the evidence: the temporary file goes with the test.
            let keep = std::env::temp_dir().join(format!(
                "pathstack-tcp-offload-failed-{}.pcap",
                std::process::id()
            ));
            std::fs::copy(&*pcap, &keep).expect("keep the capture");
            eprintln!("capture kept as {}", keep.display());
            std::panic::resume_unwind(e);
        }
    };
    println!("capture: {stats:?}");
    let oversized = tshark_frames(&pcap, "frame.len > 1514");
    assert!(oversized.is_empty(), "frames above MTU + 14: {oversized:?}");
    // Both directions' data is in it, in full-sized segments.
    let full = tshark_frames(&pcap, "tcp.len == 1448");
    assert!(
        full.len() as u64 >= 2 * len / MSS * 9 / 10,
        "{} full-sized segments for 2 × {len} bytes",
        full.len()
    );
}
