//! The kernel-side TCP fixtures of `pathstack_testutil::kernel_tcp`,
//! checked kernel ↔ kernel across a topology before the pathstack ↔ kernel
//! interop tests rely on them: byte-exact echo, that `Loss` really loses
//! (the kernel retransmits), and that `NsSysctl` sets and restores.
//! Privileged: needs root for the namespaces.

use pathstack_testutil::kernel_tcp::{
    assert_tcp_capture_clean_offloaded, kernel_client, ns_sysctl, ss_retransmissions, tcp_snmp,
    ClientOptions, KernelEchoServer, KernelSinkServer, KernelSourceServer, Loss, NsSysctl,
    Transfer,
};
use pathstack_testutil::{
    have_tshark, privileged, tshark_frames, TcpdumpCapture, TempFile, Topology,
};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

const MB: u64 = 1 << 20;

fn addr(topo: &Topology, key: &str) -> SocketAddr {
    let ip: IpAddr = topo.var(key).parse().expect("an IP address");
    SocketAddr::new(ip, 0)
}

#[test]
fn kernel_echo_1mb_byte_exact() {
    if !privileged("kernel_echo_1mb_byte_exact") {
        return;
    }
    let t0 = Instant::now();
    let topo = Topology::up();
    let echo = KernelEchoServer::start(&topo, "NS_A", addr(&topo, "KERNEL_A_IP"));
    let pcap = TempFile::new("kernel-echo.pcap");
    let capture = TcpdumpCapture::start(&topo, "NS_B", topo.var("BR_B"), &pcap);

    // Two clients at once: the server serves connections concurrently.
    let opts = ClientOptions::new(MB, 1);
    let opts2 = ClientOptions::new(MB / 2 + 3, 2);
    let (r1, r2) = std::thread::scope(|s| {
        let a = s.spawn(|| kernel_client(&topo, "NS_B", echo.addr(), &opts));
        let b = s.spawn(|| kernel_client(&topo, "NS_B", echo.addr(), &opts2));
        (a.join().unwrap(), b.join().unwrap())
    });
    let (r1, r2) = (r1.expect("client 1"), r2.expect("client 2"));
    assert_eq!(r1.received, Transfer::pattern(1, MB), "echo of client 1");
    assert_eq!(
        r2.received,
        Transfer::pattern(2, MB / 2 + 3),
        "echo of client 2"
    );
    let mut echoed = [
        echo.next(Duration::from_secs(5)).expect("echo conn"),
        echo.next(Duration::from_secs(5)).expect("echo conn"),
    ];
    echoed.sort();
    assert_eq!(echoed, [MB / 2 + 3, MB]);
    assert_eq!(echo.accepted(), 2);
    capture.stop();
    let stats = assert_tcp_capture_clean_offloaded(&pcap);
    eprintln!(
        "echo: 1 MB in {:?}, 0.5 MB in {:?}; capture on BR_B: {stats:?}",
        r1.elapsed, r2.elapsed
    );

    // The source server and the pattern digest agree.
    let source =
        KernelSourceServer::start(&topo, "NS_A", addr(&topo, "KERNEL_A_IP"), 3 * MB + 1, 9);
    let r = kernel_client(&topo, "NS_B", source.addr(), &ClientOptions::new(0, 0))
        .expect("client of the source");
    assert_eq!(r.received, Transfer::pattern(9, 3 * MB + 1));
    assert_eq!(
        source.next(Duration::from_secs(5)).expect("source conn"),
        3 * MB + 1
    );
    eprintln!("kernel_echo_1mb_byte_exact took {:?}", t0.elapsed());
}

#[test]
fn loss_makes_the_kernel_retransmit() {
    if !privileged("loss_makes_the_kernel_retransmit") {
        return;
    }
    let t0 = Instant::now();
    let topo = Topology::up();
    let sink = KernelSinkServer::start(&topo, "NS_A", addr(&topo, "KERNEL_A_IP"));
    let before = tcp_snmp(&topo, "NS_B");
    let loss = Loss::new(&topo, "NS_B", 5);

    let len = 10 * MB;
    let opts = ClientOptions {
        ss_before_close: true,
        ..ClientOptions::new(len, 42)
    };
    let r = kernel_client(&topo, "NS_B", sink.addr(), &opts).expect("lossy transfer");
    let got = sink.next(Duration::from_secs(20)).expect("sink");
    assert_eq!(
        got,
        Transfer::pattern(42, len),
        "the sink got the bytes sent"
    );
    assert_eq!(r.received.bytes, 0);

    let after = tcp_snmp(&topo, "NS_B");
    let dropped = loss.dropped();
    let ss = r.ss.expect("ss -tin showed the client's connection");
    eprintln!(
        "10 MB at 5% loss in {:?}: {dropped} frames dropped by nft; ss: retrans {}/{} \
         bytes_retrans {} lost {} sacked {} data_segs_out {}; snmp RetransSegs +{} OutSegs +{}",
        r.elapsed,
        ss.retrans_now,
        ss.retrans_total,
        ss.bytes_retrans,
        ss.lost,
        ss.sacked,
        ss.data_segs_out,
        after.retrans_segs - before.retrans_segs,
        after.out_segs - before.out_segs,
    );
    assert!(dropped > 0, "the loss rule dropped nothing");
    assert!(
        ss.retrans_total > 0 && ss.bytes_retrans > 0,
        "no retransmissions in ss: {ss:?}"
    );
    assert!(
        after.retrans_segs > before.retrans_segs,
        "RetransSegs did not grow"
    );

    // Removed on drop: the table is gone.
    let table = loss.table().to_string();
    drop(loss);
    let o = topo
        .command_in("NS_B", "nft")
        .args(["list", "table", "bridge", &table])
        .output()
        .expect("run nft");
    assert!(!o.status.success(), "table {table} survived its guard");
    // Without loss, a further transfer has no retransmissions from drops;
    // (the ss of the finished connection is gone, so check the list works).
    let _ = ss_retransmissions(&topo, "NS_B");
    eprintln!("loss_makes_the_kernel_retransmit took {:?}", t0.elapsed());
}

#[test]
fn sysctl_guard_sets_and_restores() {
    if !privileged("sysctl_guard_sets_and_restores") {
        return;
    }
    let t0 = Instant::now();
    let topo = Topology::up();
    let key = "net.ipv4.tcp_sack";
    let orig = ns_sysctl(&topo, "NS_B", key);
    {
        let guard = NsSysctl::set(&topo, "NS_B", key, "0");
        let _ts = NsSysctl::set(&topo, "NS_B", "net.ipv4.tcp_timestamps", "0");
        assert_eq!(guard.old(), orig);
        assert_eq!(ns_sysctl(&topo, "NS_B", key), "0");
        assert_eq!(ns_sysctl(&topo, "NS_B", "net.ipv4.tcp_timestamps"), "0");
        // Namespace A is untouched.
        assert_eq!(ns_sysctl(&topo, "NS_A", key), orig);

        // A connection from B has neither SACK nor timestamps.
        let sink = KernelSinkServer::start(&topo, "NS_A", addr(&topo, "KERNEL_A_IP"));
        let pcap = TempFile::new("kernel-nosack.pcap");
        let capture = TcpdumpCapture::start(&topo, "NS_B", topo.var("BR_B"), &pcap);
        let opts = ClientOptions {
            ss_before_close: true,
            ..ClientOptions::new(256 * 1024, 5)
        };
        let r = kernel_client(&topo, "NS_B", sink.addr(), &opts).expect("transfer");
        assert_eq!(
            sink.next(Duration::from_secs(5)).expect("sink"),
            Transfer::pattern(5, 256 * 1024)
        );
        capture.stop();
        let ss = r.ss.expect("ss -tin showed the client's connection");
        // (The ss here prints no option flags at all, so this alone proves
        // little; the SYN below does.)
        assert!(!ss.sack && !ss.timestamps, "SACK or timestamps on: {ss:?}");
        if have_tshark() {
            let syn = format!(
                "tcp.flags.syn == 1 && tcp.flags.ack == 0 && ip.src == {}",
                topo.var("KERNEL_B_IP")
            );
            assert_eq!(tshark_frames(&pcap, &syn).len(), 1, "one SYN from B");
            let opts = tshark_frames(
                &pcap,
                &format!("({syn}) && (tcp.options.sack_perm || tcp.options.timestamp.tsval)"),
            );
            assert!(
                opts.is_empty(),
                "B's SYN offers SACK or timestamps: frames {opts:?}"
            );
        }
        // MSS 1460 on a 1500 MTU: no 12-byte timestamp option.
        assert_eq!(
            ss.fields.get("mss").map(String::as_str),
            Some("1460"),
            "{ss:?}"
        );
    }
    assert_eq!(ns_sysctl(&topo, "NS_B", key), orig, "restored on drop");
    assert_eq!(ns_sysctl(&topo, "NS_B", "net.ipv4.tcp_timestamps"), "1");
    eprintln!("sysctl_guard_sets_and_restores took {:?}", t0.elapsed());
}
