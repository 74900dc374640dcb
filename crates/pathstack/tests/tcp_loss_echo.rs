//! Privileged measurement, `--ignored`: issue 28's echo goal, "10 MiB echo
//! at 1 % and at 5 % random loss in ≤ 2× Linux's time, in the same run of
//! the same harness".
//!
//! Kernel B's client (`kernel_tcp::kernel_client`, NS_B) sends 10 MiB and
//! reads the echo back, once to pathstack's echo server on TAP_A and once
//! to a kernel echo server in NS_A (kernel A, on the same bridge), under
//! 0, 1 and 5 % random loss of TCP frames at NS_A's bridge
//! (`kernel_tcp::Loss`, both directions: for pathstack between the TAP and
//! the veth, for kernel A between the kernel and the veth). The two
//! systems alternate (which goes first alternates too), each loss rate is
//! run `TCP_LOSS_ECHO_RUNS` times (default 3), and the table gives medians
//! and the median of the per-run ratios, with the load average beside:
//! the machine is shared, and only a ratio within one run means much.
//!
//! ```text
//! cargo test --release -p pathstack --test tcp_loss_echo -- --ignored --nocapture
//! ```
//!
//! Each line also gives where the time went on the pathstack side: its
//! echo connection's counters (timeouts, recoveries, TLPs, retransmitted
//! segments; the echo server is a sender too) and kernel B's
//! retransmissions (`RetransSegs`, the client's side).

#[path = "support/ps_driver.rs"]
mod ps_driver;

use pathstack_testutil::kernel_tcp::{
    kernel_client, tcp_snmp, ClientOptions, KernelEchoServer, Loss, Transfer,
};
use pathstack_testutil::{privileged, Topology};
use ps_driver::{ps_addr, ps_host, PsEcho, Running};
use std::net::SocketAddr;
use std::time::Duration;

const LEN: u64 = 10 * 1024 * 1024;
const LOSSES: [u32; 3] = [0, 1, 5];

/// The 1-minute load average (`/proc/loadavg`).
fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|w| w.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// One run at one loss rate: milliseconds, and the load after it.
#[derive(Clone, Copy)]
struct Figures {
    pathstack: f64,
    offload: f64,
    linux: f64,
    load: f64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The kernel's own account of its recovery in namespace `ns_key`
/// (`/proc/net/netstat`, `TcpExt:`): retransmission timeouts, tail-loss
/// probes, SACK recoveries, spurious-RTO undos.
fn kernel_recovery(topo: &Topology, ns_key: &str) -> [u64; 4] {
    let o = topo
        .command_in(ns_key, "cat")
        .arg("/proc/net/netstat")
        .output()
        .expect("read /proc/net/netstat");
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("TcpExt:")).collect();
    let mut out = [0; 4];
    if let [names, values] = lines[..] {
        for (k, v) in names.split_whitespace().zip(values.split_whitespace()) {
            let i = match k {
                "TCPTimeouts" => 0,
                "TCPLossProbes" => 1,
                "TCPSackRecovery" => 2,
                "TCPSpuriousRTOs" => 3,
                _ => continue,
            };
            out[i] = v.parse().unwrap_or(0);
        }
    }
    out
}

/// `after - before` of [`kernel_recovery`], printed.
fn kernel_recovery_delta(before: [u64; 4], after: [u64; 4]) -> String {
    format!(
        "timeouts {} tlp {} sack_recoveries {} spurious_rto {}",
        after[0] - before[0],
        after[1] - before[1],
        after[2] - before[2],
        after[3] - before[3]
    )
}

/// One 10 MiB echo through pathstack's server under `percent`% loss: ms.
/// `offload`: the TAP's offloads on (TSO/GRO: pathstack's frames are
/// super-packets like the kernel's, so one drop loses many segments).
fn pathstack_echo(topo: &Topology, offload: bool, percent: u32, seed: u64) -> f64 {
    let mut host = ps_host(topo, offload, None);
    let app = PsEcho::new(&mut host);
    let run = Running::start(host, app, Duration::from_secs(120));
    std::thread::sleep(Duration::from_millis(50));
    let before = tcp_snmp(topo, "NS_B");
    let rec_before = kernel_recovery(topo, "NS_B");
    let loss = Loss::new(topo, "NS_A", percent);
    let mut opts = ClientOptions::new(LEN, seed);
    opts.timeout = Duration::from_secs(90);
    let r = kernel_client(topo, "NS_B", ps_addr(topo), &opts);
    let dropped = loss.dropped();
    drop(loss);
    let after = tcp_snmp(topo, "NS_B");
    let rec_b = kernel_recovery_delta(rec_before, kernel_recovery(topo, "NS_B"));
    // The server's close follows the client's EOF; give it a moment so
    // that its counters are taken.
    std::thread::sleep(Duration::from_millis(20));
    let (host, app) = run.stop();
    let r = r.unwrap_or_else(|e| panic!("pathstack echo at {percent}%: {e}\n{}", host.report()));
    assert_eq!(r.received, Transfer::pattern(seed, LEN), "pathstack's echo");
    let ms = r.elapsed.as_secs_f64() * 1e3;
    let s = app.stats.first();
    let name = if offload { "ps-offload" } else { "pathstack " };
    println!(
        "  {name} {percent}%: {ms:.0} ms (load {:.2}); nft dropped {dropped}; kernel B RetransSegs {} \
         ({rec_b}); pathstack's echo conn: {}",
        load(),
        after.retrans_segs - before.retrans_segs,
        s.map_or("no counters".into(), |s| format!(
            "segs_out {} retrans {} (timeouts {}, timeout_retrans {}, tlp {}, recoveries {}, \
             rack_lost {}, lost_retransmits {}, dsack_undos {}), dup_acks_in {}",
            s.segs_out,
            s.retrans_segs,
            s.timeouts,
            s.timeout_retrans_segs,
            s.tlp_probes,
            s.recoveries,
            s.rack_lost_segs,
            s.lost_retransmits,
            s.dsack_undos,
            s.dup_acks_in
        )),
    );
    ms
}

/// One 10 MiB echo through kernel A's server under `percent`% loss: ms.
fn linux_echo(topo: &Topology, server: &KernelEchoServer, percent: u32, seed: u64) -> f64 {
    let before_a = tcp_snmp(topo, "NS_A");
    let before_b = tcp_snmp(topo, "NS_B");
    let (rec_a, rec_b) = (kernel_recovery(topo, "NS_A"), kernel_recovery(topo, "NS_B"));
    let loss = Loss::new(topo, "NS_A", percent);
    let mut opts = ClientOptions::new(LEN, seed);
    opts.timeout = Duration::from_secs(90);
    let r = kernel_client(topo, "NS_B", server.addr(), &opts).expect("Linux echo");
    let dropped = loss.dropped();
    drop(loss);
    let (after_a, after_b) = (tcp_snmp(topo, "NS_A"), tcp_snmp(topo, "NS_B"));
    let rec_a = kernel_recovery_delta(rec_a, kernel_recovery(topo, "NS_A"));
    let rec_b = kernel_recovery_delta(rec_b, kernel_recovery(topo, "NS_B"));
    assert_eq!(r.received, Transfer::pattern(seed, LEN), "Linux's echo");
    assert_eq!(
        server.next(Duration::from_secs(5)).expect("kernel echo"),
        LEN
    );
    let ms = r.elapsed.as_secs_f64() * 1e3;
    println!(
        "  Linux      {percent}%: {ms:.0} ms (load {:.2}); nft dropped {dropped} (frames: GSO \
         super-packets); RetransSegs kernel A {} ({rec_a}) kernel B {} ({rec_b})",
        load(),
        after_a.retrans_segs - before_a.retrans_segs,
        after_b.retrans_segs - before_b.retrans_segs,
    );
    ms
}

#[test]
#[ignore = "measurement (privileged, ~1 min): run with --release --ignored --nocapture"]
fn echo_10mib_under_loss_beside_linux() {
    if !privileged("echo_10mib_under_loss_beside_linux") {
        return;
    }
    let runs: usize = std::env::var("TCP_LOSS_ECHO_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let topo = Topology::up();
    let ka: std::net::IpAddr = topo.var("KERNEL_A_IP").parse().unwrap();
    let server = KernelEchoServer::start(&topo, "NS_A", SocketAddr::new(ka, 0));
    // [loss][run]
    let mut figures: Vec<Vec<Figures>> = vec![Vec::new(); LOSSES.len()];
    for run in 0..runs {
        for (i, &percent) in LOSSES.iter().enumerate() {
            println!("run {}/{runs}, {percent}% loss:", run + 1);
            let seed = 1000 + 10 * run as u64 + percent as u64;
            let (ps, off, linux) = if run % 2 == 0 {
                let ps = pathstack_echo(&topo, false, percent, seed);
                let off = pathstack_echo(&topo, true, percent, seed);
                (ps, off, linux_echo(&topo, &server, percent, seed))
            } else {
                let linux = linux_echo(&topo, &server, percent, seed);
                let off = pathstack_echo(&topo, true, percent, seed);
                (pathstack_echo(&topo, false, percent, seed), off, linux)
            };
            figures[i].push(Figures {
                pathstack: ps,
                offload: off,
                linux,
                load: load(),
            });
        }
    }
    println!(
        "\n10 MiB echo, kernel B client, medians of {runs} runs (goal at 1 % and 5 %: \
         pathstack/Linux ≤ 2; pathstack = offloads off, single-segment frames; \
         offload = TSO/GRO on the TAP, frames as large as the kernel's)"
    );
    println!(
        "| loss | pathstack ms | offload ms | Linux ms | ratio | offload ratio | runs (ps/offload/Linux ms, load) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (i, &percent) in LOSSES.iter().enumerate() {
        let f = &figures[i];
        let col = |g: fn(&Figures) -> f64| {
            let mut v: Vec<f64> = f.iter().map(g).collect();
            median(&mut v)
        };
        let each: Vec<String> = f
            .iter()
            .map(|x| {
                format!(
                    "{:.0}/{:.0}/{:.0} ({:.2})",
                    x.pathstack, x.offload, x.linux, x.load
                )
            })
            .collect();
        println!(
            "| {percent} % | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {} |",
            col(|x| x.pathstack),
            col(|x| x.offload),
            col(|x| x.linux),
            col(|x| x.pathstack / x.linux),
            col(|x| x.offload / x.linux),
            each.join(", ")
        );
    }
}
