//! Privileged: the `host` tool (`tools/src/bin/host.rs`) with `--rpc eth` and `--rpc ip` on a TAP
//! device in namespace A of the `scripts/netns.sh` topology serves the echo
//! procedure (XRPCTEST, id 1002) to a pathstack RPC client on the TAP of
//! namespace B: calls of 0 bytes to a fragmented 5,000 bytes come back
//! exact, and the example counts them in its statistics when it stops.
//!
//! Runs the tool's binary (`target/<profile>/host` of `pathstack-tools`,
//! built here with `cargo build -p pathstack-tools --bin host` when
//! missing).

#[path = "support/binaries.rs"]
mod binaries;

use pathstack::devices::{TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::rpc::{Peer, RpcNet};
use pathstack::rpc_protocols::modules::protocol::XRPCTEST_ID;
use pathstack_testutil::{privileged, Topology};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn host_binary() -> PathBuf {
    binaries::tool_binary("host")
}

/// The example's process; killed if the test fails before stopping it.
struct Example {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Example {
    /// The next line of its standard output that contains `needle`.
    fn line_with(&self, needle: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(20)) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(_) => panic!("the host example printed no line with {needle:?}"),
            }
        }
    }

    /// Stops it with SIGTERM (it prints its statistics) and returns the
    /// rest of its output.
    fn stop(mut self) -> String {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(st.success(), "kill -TERM failed");
        let status = self.child.wait().expect("wait for the host example");
        assert!(status.success(), "the host example exited with {status}");
        // Everything up to the end of its output: the reader thread may
        // not have passed on the last lines yet when the process is gone
        // (the channel closes at end of file).
        let mut rest = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(10)) {
            rest.push(l);
        }
        rest.join("\n")
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(net: RpcNet, net_arg: &str) {
    let topo = Topology::up();
    let mut child = Command::new(host_binary())
        .args([
            "--tap",
            topo.var("TAP_A"),
            "--netns",
            topo.var("NS_A"),
            "--ip",
            &format!("{}/24", topo.var("PS_A_IP")),
            "--rpc",
            net_arg,
            "--no-tcp-services",
            "--seconds",
            "60",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the host example");
    let out = child.stdout.take().expect("piped stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let example = Example { child, lines };
    // "rpc: echo procedure 1002 (XRPCTEST) over ETH, for peers calling PEER"
    let announced = example.line_with("rpc: echo procedure");
    let peer_text = announced.rsplit(' ').next().unwrap_or_default().to_string();
    let peer = match net {
        RpcNet::Eth => Peer::mac(peer_text.parse::<MacAddr>().expect("a MAC address")),
        RpcNet::Ip => Peer::ipv4(peer_text.parse().expect("an IPv4 address")),
    };

    let tap = TapDevice::open(topo.var("TAP_B"), TapOptions::new().netns(topo.var("NS_B")))
        .expect("open TAP B");
    let waiter = tap.waiter().expect("waiter");
    let cfg = HostConfig {
        rpc: Some(net),
        mac: Some(MacAddr(tap.mac())),
        ..HostConfig::parse(&format!("{}/24", topo.var("PS_B_IP"))).unwrap()
    };
    let mut client = Host::new(cfg, tap)
        .expect("client host")
        .with_waiter(waiter, WaitMode::Blocking);
    let sizes = [0usize, 1, 1000, 5000];
    for &n in &sizes {
        let req: Vec<u8> = (0..n).map(|i| (i * 13 + 5) as u8).collect();
        let reply = client
            .rpc()
            .client()
            .unwrap()
            .call_timeout(peer, XRPCTEST_ID, &req, Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("{net_arg}: a {n}-byte call: {e}\n{}", client.report()));
        assert!(reply == req, "{net_arg}: the {n}-byte echo differs");
    }
    let rest = example.stop();
    assert!(
        rest.contains(&format!(
            "rpc echo (procedure {XRPCTEST_ID}): {} calls",
            sizes.len()
        )),
        "{net_arg}: the example's statistics:\n{rest}"
    );
}

#[test]
fn host_example_serves_rpc_echo_over_eth() {
    if !privileged("host_example_serves_rpc_echo_over_eth") {
        return;
    }
    run(RpcNet::Eth, "eth");
}

#[test]
fn host_example_serves_rpc_echo_over_ip() {
    if !privileged("host_example_serves_rpc_echo_over_ip") {
        return;
    }
    run(RpcNet::Ip, "ip");
}
