//! Privileged: the machinery of the priority experiment
//! (`scripts/study-priority.sh`, thesis Table 5.5), short: the stream of
//! `pathstack_tools::priority_stream` from a kernel UDP socket in namespace B
//! reaches the tool's receiver — a pathstack host on TAP A with its
//! stream path above ICMP's, or a kernel socket in namespace A — while
//! `ping -f` floods the receiver from namespace B; every ping answered
//! was counted on the host's ICMP path, and the paths ran at the
//! priorities asked for. The work runs either in the application
//! (`--work-in app`) or in a `STREAMWORK` stage at the top of the stream's
//! path (`--work-in path`, the study's default), where ICMP's path may also
//! get a short queue so that a flood is discarded at classification; the
//! early-discard counter is then reported on ICMP's path. Performance is
//! the study's business, not this test's: nothing here is timed.
//!
//! The example's code runs in-process (receiver and sender in threads; a
//! thread that needs a namespace enters it with `setns(2)`, which moves
//! only that thread).

use pathstack_tools::priority_stream;

use pathstack_testutil::{privileged, text, Topology};
use priority_stream::{IcmpPriority, RecvArgs, SendArgs, StackKind, WorkIn};
use serde_json::Value;
use std::net::SocketAddr;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PORT: u16 = 5000;
const PINGS: u32 = 300;

fn recv_args(stack: StackKind, topo: &Topology, prio: IcmpPriority, work_in: WorkIn) -> RecvArgs {
    RecvArgs {
        stack,
        tap: Some(topo.var("TAP_A").to_string()),
        ip: Some(format!("{}/24", topo.var("PS_A_IP"))),
        port: PORT,
        bind: Some(SocketAddr::new(
            topo.var("KERNEL_A_IP").parse().unwrap(),
            PORT,
        )),
        netns: Some(topo.var("NS_A").to_string()),
        icmp_priority: prio,
        work_in,
        icmp_queue_len: None,
        no_device_discard: false,
        work: 4,
        idle_seconds: 3.0,
        json: None,
    }
}

/// `ping -f` from namespace B at `target`, PINGS requests.
fn flood(topo: &Topology, target: &str) -> Child {
    topo.command_in("NS_B", "ping")
        .args(["-f", "-q", "-W", "2", "-c", &PINGS.to_string(), target])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run ping -f")
}

/// Replies ping reports in its summary.
fn ping_replies(child: Child) -> u64 {
    let o = child.wait_with_output().expect("ping -f");
    let out = text(&o);
    let received = out
        .split(" packets transmitted, ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no ping summary in:\n{out}"));
    received
}

/// Runs the receiver in a thread, the flood and the stream; returns the
/// receiver's report, what the sender sent, and the pings answered.
fn run(topo: &Topology, args: RecvArgs, target: &str) -> (Value, Value, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let receiver = std::thread::spawn(move || {
        // A bound on a broken run: the stream takes about two seconds.
        let give_up = Instant::now() + Duration::from_secs(30);
        priority_stream::recv_until(&args, &|| {
            flag.load(Ordering::Relaxed) || Instant::now() > give_up
        })
    });
    // The host opens its TAP and binds; ARP needs it up before the first send.
    std::thread::sleep(Duration::from_millis(500));
    let ping = flood(topo, target);
    let send = SendArgs {
        to: SocketAddr::new(target.parse().unwrap(), PORT),
        rate: 2000,
        seconds: 1.5,
        size: 256,
        netns: Some(topo.var("NS_B").to_string()),
    };
    let sent = std::thread::spawn(move || priority_stream::send(&send))
        .join()
        .expect("sender thread")
        .expect("send the stream");
    let replies = ping_replies(ping);
    let report = receiver.join().expect("receiver thread");
    stop.store(true, Ordering::Relaxed);
    (report.expect("receive the stream"), sent, replies)
}

fn check_stream(report: &Value, sent: &Value) {
    let n = sent["sent"].as_u64().expect("sent count");
    assert!(n > 0, "nothing sent: {sent}");
    assert_eq!(report["end_marker"], true, "no end marker: {report:#}");
    assert_eq!(report["sent"].as_u64(), Some(n), "{report:#}");
    let received = report["received"].as_u64().unwrap();
    assert!(received > 0, "stream not received: {report:#}");
    assert_eq!(
        received + report["lost"].as_u64().unwrap(),
        n,
        "received + lost != sent: {report:#}"
    );
    assert_eq!(report["stray"], 0, "{report:#}");
}

#[test]
fn pathstack_counts_the_flood_on_the_icmp_path() {
    if !privileged("pathstack_counts_the_flood_on_the_icmp_path") {
        return;
    }
    let topo = Topology::up();
    let target = topo.var("PS_A_IP").to_string();
    let args = recv_args(StackKind::Pathstack, &topo, IcmpPriority::Low, WorkIn::App);
    let (report, sent, replies) = run(&topo, args, &target);
    check_stream(&report, &sent);
    assert_eq!(report["work_in"], "app", "{report:#}");
    let icmp = &report["paths"]["icmp"];
    let stream = &report["paths"]["stream"];
    assert_eq!(icmp["priority"], 0, "{report:#}");
    assert_eq!(stream["priority"], 1, "{report:#}");
    assert!(replies > 0, "no ping answered: {report:#}");
    // Every answered echo request went up ICMP's path.
    assert!(
        icmp["msgs_in_up"].as_u64().unwrap() >= replies,
        "{replies} pings answered, ICMP path counted {}",
        icmp["msgs_in_up"]
    );
    // The stream's datagrams went up the stream's path, not ICMP's.
    assert!(stream["msgs_in_up"].as_u64().unwrap() >= report["received"].as_u64().unwrap());
}

#[test]
fn pathstack_single_priority_puts_both_paths_at_zero() {
    if !privileged("pathstack_single_priority_puts_both_paths_at_zero") {
        return;
    }
    let topo = Topology::up();
    let target = topo.var("PS_A_IP").to_string();
    let args = recv_args(
        StackKind::Pathstack,
        &topo,
        IcmpPriority::Same,
        WorkIn::Path,
    );
    let (report, sent, replies) = run(&topo, args, &target);
    check_stream(&report, &sent);
    assert_eq!(report["work_in"], "path", "{report:#}");
    // Default queues: nothing to discard early at this rate.
    assert_eq!(report["paths"]["stream"]["source_full"], 0, "{report:#}");
    assert_eq!(report["paths"]["icmp"]["priority"], 0, "{report:#}");
    assert_eq!(report["paths"]["stream"]["priority"], 0, "{report:#}");
    assert!(report["paths"]["icmp"]["msgs_in_up"].as_u64().unwrap() >= replies);
}

#[test]
fn pathstack_in_path_work_with_a_short_icmp_queue() {
    if !privileged("pathstack_in_path_work_with_a_short_icmp_queue") {
        return;
    }
    let topo = Topology::up();
    let target = topo.var("PS_A_IP").to_string();
    let mut args = recv_args(StackKind::Pathstack, &topo, IcmpPriority::Low, WorkIn::Path);
    args.icmp_queue_len = Some(1);
    let (report, sent, replies) = run(&topo, args, &target);
    // The STREAMWORK stage did the work and kept the record: every
    // datagram it counted went up the stream's path.
    check_stream(&report, &sent);
    assert_eq!(report["work_in"], "path", "{report:#}");
    let icmp = &report["paths"]["icmp"];
    let stream = &report["paths"]["stream"];
    assert_eq!(icmp["priority"], 0, "{report:#}");
    assert_eq!(stream["priority"], 1, "{report:#}");
    assert!(
        stream["msgs_in_up"].as_u64().unwrap() >= report["received"].as_u64().unwrap(),
        "{report:#}"
    );
    // The early-discard counter is there to read (how many it counts
    // depends on how the flood's frames bunch into bursts: not asserted).
    let discarded = icmp["source_full"]
        .as_u64()
        .unwrap_or_else(|| panic!("no early-discard count on ICMP's path: {report:#}"));
    assert!(replies > 0, "no ping answered: {report:#}");
    // An answered echo request went up ICMP's path; a discarded one was
    // never answered, so answered + discarded never exceeds what was sent.
    assert!(
        icmp["msgs_in_up"].as_u64().unwrap() >= replies,
        "{report:#}"
    );
    assert!(
        replies + discarded <= u64::from(PINGS),
        "{replies} answered + {discarded} discarded > {PINGS} sent: {report:#}"
    );
}

#[test]
fn linux_receiver_takes_the_stream_under_the_flood() {
    if !privileged("linux_receiver_takes_the_stream_under_the_flood") {
        return;
    }
    let topo = Topology::up();
    let target = topo.var("KERNEL_A_IP").to_string();
    let args = recv_args(StackKind::Linux, &topo, IcmpPriority::Low, WorkIn::Path);
    let (report, sent, replies) = run(&topo, args, &target);
    check_stream(&report, &sent);
    assert_eq!(report["stack"], "linux");
    assert!(replies > 0, "the kernel answered no ping");
}
