//! Privileged: RPC between two pathstack hosts on TAP devices, each in
//! its own namespace of a [`Topology`] (TAP A ─ bridge ─ veth ─ bridge ─
//! TAP B), with nftables dropping 5% of the frames the bridge of namespace
//! A forwards (both ways, whatever their EtherType). The client calls the
//! echo procedure with requests from 0 bytes to the largest the stack
//! carries (`host.rpc().max_request()`), one at a time, blocking: every reply
//! must come back byte for byte, and the server must have run the
//! procedure exactly once per call (CHAN's at-most-once, spec §6, under
//! BLAST's and CHAN's retransmissions). Each host runs its own polling
//! loop in its own thread. A tcpdump capture of TAP A must read clean in
//! tshark: valid Ethernet (and IPv4 with good header checksums over IP),
//! with BLAST and BIDCTL frames on the EtherTypes 0x3001/0x3006 or the IP
//! protocols 101/205. Over Ethernet and over IP.

use pathstack::devices::{TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::rpc::{Echo, Peer, RpcNet};
use pathstack_testutil::{
    assert_tshark_clean, privileged, tshark_frames, TcpdumpCapture, TempFile, Topology,
};
use std::time::{Duration, Instant};

#[path = "support/host_loop.rs"]
mod host_loop;
use host_loop::host_loop;

/// The echo procedure's id (the x-kernel's XRPCTEST).
const ECHO: u32 = pathstack_rpc::modules::protocol::XRPCTEST_ID;
/// Percentage of frames dropped.
const LOSS_PERCENT: u32 = 5;
/// How long one call may take: CHAN's first retransmission comes after
/// 5 s, and a call may need a few under loss.
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// A host with the RPC stack on the TAP named by `tap_key` in namespace
/// `ns_key`, at the address `ip_key`.
fn tap_host(topo: &Topology, tap_key: &str, ns_key: &str, ip_key: &str, net: RpcNet) -> Host {
    let tap = TapDevice::open(topo.var(tap_key), TapOptions::new().netns(topo.var(ns_key)))
        .unwrap_or_else(|e| panic!("open {}: {e}", topo.var(tap_key)));
    let waiter = tap.waiter().expect("TAP waiter");
    let cfg = HostConfig {
        mac: Some(MacAddr(tap.mac())),
        rpc: Some(net),
        // CHAN's deadline as long as the call's: under loss the first
        // call (ARP, BIDCTL's handshake, then the request) may need
        // several of CHAN's retransmissions, 5, 10, 20 and 40 s apart.
        rpc_call_timeout: CALL_TIMEOUT,
        ..HostConfig::parse(&format!("{}/24", topo.var(ip_key))).unwrap()
    };
    Host::new(cfg, tap)
        .expect("host")
        .with_waiter(waiter, WaitMode::Blocking)
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(salt) ^ (i >> 8) as u8)
        .collect()
}

/// Request sizes from 0 to `max`: the edges of one BLAST fragment (1,480
/// bytes on Ethernet less the 36 bytes of MSELECT, CHAN and BID headers),
/// of two, and spread up to the largest message.
fn sizes(max: usize) -> Vec<usize> {
    let mut v = vec![
        0, 1, 7, 100, 1000, 1443, 1444, 1445, 2000, 2924, 2925, 4000, 6000, 8000, 11_000, 14_000,
        17_000, 20_000, 22_000,
    ];
    v.retain(|&n| n < max);
    v.extend([max - 1, max, 0, 64]);
    v
}

fn rpc_under_loss(net: RpcNet) {
    let started = Instant::now();
    let topo = Topology::up();
    let pcap = TempFile::new(&format!("rpc-tap-{net:?}.pcap"));
    let capture = TcpdumpCapture::start_filtered(&topo, "NS_A", topo.var("TAP_A"), &pcap, "");
    let loss = pathstack_testutil::kernel_tcp::Loss::any_frame(&topo, "NS_A", LOSS_PERCENT);

    let mut server = tap_host(&topo, "TAP_B", "NS_B", "PS_B_IP", net);
    server
        .rpc()
        .server()
        .unwrap()
        .register(ECHO, Echo)
        .expect("register echo");
    let peer: Peer = server.rpc().peer().unwrap();
    let server = host_loop(server);
    let mut client = tap_host(&topo, "TAP_A", "NS_A", "PS_A_IP", net);
    let max = client.rpc().max_request().unwrap();
    let sizes = sizes(max);
    let n_calls = sizes.len() as u64;

    let client_thread = std::thread::spawn(move || {
        let mut times = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let req = pattern(n, i as u8);
            let t = Instant::now();
            let reply = client
                .rpc()
                .client()
                .unwrap()
                .call_timeout(peer, ECHO, &req, CALL_TIMEOUT)
                .unwrap_or_else(|e| panic!("call {i} of {n} bytes: {e}"));
            times.push((n, t.elapsed()));
            assert!(
                reply == req,
                "call {i}: reply of {} bytes differs from the request of {n}",
                reply.len()
            );
        }
        (client, times)
    });
    let joined = client_thread.join();
    let mut server = server.join();
    let (client, times) = joined.expect("client thread");
    let ran = server.rpc().server().unwrap().calls();
    let dropped = loss.dropped();
    drop(loss);
    capture.stop();

    for (n, t) in &times {
        eprintln!("{net:?}: {n:>6} bytes in {t:?}");
    }
    eprintln!(
        "{net:?}: {} calls up to {max} bytes, {dropped} frames dropped, {:?} in all",
        times.len(),
        started.elapsed()
    );
    // At most once, and every call returned: exactly once each.
    assert_eq!(
        ran, n_calls,
        "the procedure ran {ran} times for {n_calls} calls"
    );
    assert!(dropped > 0, "the loss dropped nothing");
    drop(client);

    let frames = assert_tshark_clean(&pcap).expect("tshark is installed (we are root)");
    let (blast, bidctl) = match net {
        RpcNet::Eth => ("eth.type == 0x3001", "eth.type == 0x3006"),
        RpcNet::Ip => ("ip.proto == 101", "ip.proto == 205"),
    };
    let blast = tshark_frames(&pcap, blast).len();
    let bidctl = tshark_frames(&pcap, bidctl).len();
    eprintln!("{net:?}: capture of {frames} frames, {blast} BLAST, {bidctl} BIDCTL");
    // A request and a reply per call at least, and the handshake.
    assert!(
        blast as u64 >= 2 * n_calls,
        "{blast} BLAST frames for {n_calls} calls"
    );
    assert!(bidctl >= 1, "no BIDCTL frame captured");
    if net == RpcNet::Ip {
        let not_ip = tshark_frames(&pcap, "eth.type == 0x3001 || eth.type == 0x3006").len();
        assert_eq!(
            not_ip, 0,
            "RPC frames straight on Ethernet in the IP variant"
        );
    }
}

#[test]
fn rpc_over_eth_under_loss() {
    if !privileged("rpc_over_eth_under_loss") {
        return;
    }
    rpc_under_loss(RpcNet::Eth);
}

#[test]
fn rpc_over_ip_under_loss() {
    if !privileged("rpc_over_ip_under_loss") {
        return;
    }
    rpc_under_loss(RpcNet::Ip);
}
