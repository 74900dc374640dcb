//! Per-path accounting and admission control through the host facade
//! (issue 17 items 3 and 4), between two hosts on the in-memory wire:
//! with `HostConfig::account_cpu` a path that carried traffic is charged
//! processing time, and its message and byte counters match what the
//! sockets sent and received; without it nothing is charged; a host with
//! a path-count budget refuses a further socket with the typed admission
//! error, `io::ErrorKind::QuotaExceeded` through `std::io`, and admits one
//! again once a socket is closed.
//!
//! Privileged, last: the `host` tool's (`tools/src/bin/host.rs`) `--stats SECS --json FILE` on a
//! TAP in a private namespace writes JSON Lines, snapshots then the final
//! report, with the pings' path charged CPU time.

#[path = "support/binaries.rs"]
mod binaries;

use pathstack::core::admission::{Budget, Budgets, Resource};
use pathstack::core::error::PathError;
use pathstack::core::path::PathStats;
use pathstack::host::{Host, HostConfig};
use pathstack::socket::ready;
use pathstack::socket::{SocketError, UdpSocket};
use pathstack::wire_pair;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use std::process::Command;

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
/// Datagrams each test sends, and their payload length.
const COUNT: u64 = 20;
const LEN: usize = 100;
/// UDP (8) and IPv4 (20, no options) headers: what a datagram's payload
/// carries below the socket, before the link header.
const UDP_IP_HEADERS: u64 = 28;

fn host(cidr: &str, dev: pathstack::WireEnd, tune: impl FnOnce(&mut HostConfig)) -> Host {
    let mut cfg = HostConfig::parse(cidr).unwrap();
    tune(&mut cfg);
    Host::new(cfg, dev).unwrap()
}

fn stats(h: &Host, s: &UdpSocket) -> PathStats {
    let id = pathstack::socket::Udp::of(h).path_id(s).unwrap();
    h.stack().path(id).unwrap().stats().clone()
}

/// Sends [`COUNT`] datagrams of [`LEN`] bytes from a socket on A to one
/// on B (the first waits for ARP), receives them all, and returns both
/// hosts and sockets.
fn exchange(account_cpu: bool) -> (Host, UdpSocket, Host, UdpSocket) {
    let (da, db) = wire_pair(Default::default());
    let mut a = host("10.0.0.1/24", da, |c| c.account_cpu = account_cpu);
    let mut b = host("10.0.0.2/24", db, |c| c.account_cpu = account_cpu);
    let srv = b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    let cli = a.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    let payload = [0x5a; LEN];
    let mut got = 0u64;
    let mut buf = [0u8; 2 * LEN];
    for _ in 0..COUNT {
        assert_eq!(
            a.udp()
                .send_to(&cli, &payload, SocketAddrV4::new(B, 7))
                .unwrap(),
            LEN
        );
        for _ in 0..5 {
            a.poll();
            b.poll();
        }
        while let Some((n, from)) = ready(srv.recv_from(&mut b, &mut buf)).unwrap() {
            assert_eq!((n, from.ip()), (LEN, std::net::IpAddr::V4(A)));
            got += 1;
        }
    }
    for _ in 0..20 {
        a.poll();
        b.poll();
        while ready(srv.recv_from(&mut b, &mut buf)).unwrap().is_some() {
            got += 1;
        }
    }
    assert_eq!(got, COUNT, "{}\n{}", a.report(), b.report());
    (a, cli, b, srv)
}

/// Ethernet's header: what a received frame carries beyond IP.
const ETH_HEADER: u64 = 14;

/// The counters both ways match the traffic, whether or not time is
/// accounted.
fn assert_counts(sent: &PathStats, received: &PathStats) {
    let payload = COUNT * LEN as u64;
    // Down on A: every datagram entered at the socket's end with its
    // payload; the driver stage hands each frame to the device (kept, not
    // passed out of an end), the first one after ARP held it.
    assert_eq!((sent.msgs_in, sent.bytes_in), ([COUNT, 0], [payload, 0]));
    assert_eq!(sent.msgs_out, [0, 0]);
    assert!(sent.consumed >= COUNT, "{sent:?}");
    // Up on B: every frame entered with its headers and left at the
    // socket with its payload alone.
    assert_eq!(
        (received.msgs_in, received.bytes_in),
        (
            [0, COUNT],
            [0, COUNT * (LEN as u64 + UDP_IP_HEADERS + ETH_HEADER)]
        )
    );
    assert_eq!(
        (received.msgs_out, received.bytes_out),
        ([0, COUNT], [0, payload])
    );
    // The datagrams waited in B's socket queue until received, holding a
    // pooled buffer each; all were taken out.
    assert_eq!(received.held_bytes, 0, "{received:?}");
    assert!(received.peak_held_bytes >= LEN as u64, "{received:?}");
    assert_eq!((sent.drops.total(), received.drops.total()), (0, 0));
}

#[test]
fn with_cpu_accounting_a_busy_path_is_charged_time_and_counts_its_traffic() {
    let (a, cli, b, srv) = exchange(true);
    let (sent, received) = (stats(&a, &cli), stats(&b, &srv));
    assert_counts(&sent, &received);
    assert!(sent.cpu_ns > 0, "{sent:?}");
    assert!(received.cpu_ns > 0, "{received:?}");
    // A path that carried nothing is charged nothing.
    let idle = {
        let mut h = a;
        let s = h.udp().bind((Ipv4Addr::UNSPECIFIED, 5000)).unwrap();
        for _ in 0..5 {
            h.poll();
        }
        stats(&h, &s)
    };
    assert_eq!((idle.cpu_ns, idle.msgs_in), (0, [0, 0]));
}

#[test]
fn without_cpu_accounting_the_counters_run_and_no_time_is_charged() {
    let (a, cli, b, srv) = exchange(false);
    let (sent, received) = (stats(&a, &cli), stats(&b, &srv));
    assert_counts(&sent, &received);
    assert_eq!((sent.cpu_ns, received.cpu_ns), (0, 0));
}

/// The refusal behind a failed bind: the typed admission error, and
/// `QuotaExceeded` through `std::io`.
fn assert_refused(e: SocketError, scope: &str, limit: u64) {
    match &e {
        SocketError::Path(PathError::Admission(a)) => {
            assert_eq!(
                (a.resource, a.scope, a.limit, a.class.as_str()),
                (Resource::Paths, scope, limit, "udp"),
                "{e}"
            );
        }
        other => panic!("expected an admission refusal, got {other:?}"),
    }
    let io = std::io::Error::from(e);
    assert_eq!(io.kind(), ErrorKind::QuotaExceeded, "{io}");
}

#[test]
fn a_class_path_budget_refuses_a_further_udp_socket_until_one_closes() {
    let (da, _db) = wire_pair(Default::default());
    let udp_two = Budget {
        paths: Some(2),
        ..Budget::default()
    };
    let mut h = host("10.0.0.1/24", da, |c| {
        c.budgets = Budgets::default().with_class("udp", udp_two);
    });
    let first = h.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    let _second = h.udp().bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
    assert_refused(
        h.udp().bind((Ipv4Addr::UNSPECIFIED, 9)).unwrap_err(),
        "class",
        2,
    );
    // Connecting makes a path as well.
    assert_refused(
        h.udp()
            .bind_connected((Ipv4Addr::UNSPECIFIED, 0), SocketAddrV4::new(B, 7))
            .unwrap_err(),
        "class",
        2,
    );
    // Other classes are not held to UDP's budget.
    h.tcp().listen((Ipv4Addr::UNSPECIFIED, 80), 4).unwrap();
    // Closing returns the reservation.
    h.udp().close(first).unwrap();
    h.udp().bind((Ipv4Addr::UNSPECIFIED, 9)).unwrap();
}

#[test]
fn a_stack_path_budget_counts_every_path_of_the_host() {
    // The paths a host makes for itself (ICMP, ARP …) count too: the
    // budget leaves room for them and one socket.
    let (da, _db) = wire_pair(Default::default());
    let own = host("10.0.0.1/24", da, |_| {}).stack().path_ids().count();
    let limit = own + 1;
    let (da, _db) = wire_pair(Default::default());
    let mut h = host("10.0.0.1/24", da, |c| {
        c.budgets = Budgets {
            stack: Budget {
                paths: Some(limit),
                ..Budget::default()
            },
            ..Budgets::default()
        };
    });
    h.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
    assert_refused(
        h.udp().bind((Ipv4Addr::UNSPECIFIED, 9)).unwrap_err(),
        "stack",
        limit as u64,
    );
}

fn host_binary() -> PathBuf {
    binaries::tool_binary("host")
}

#[test]
fn host_example_stats_write_json_lines_with_cpu_time() {
    if !pathstack_testutil::privileged("host_example_stats_write_json_lines_with_cpu_time") {
        return;
    }
    const PINGS: u64 = 3;
    let json = pathstack_testutil::TempFile::new("host-stats.jsonl");
    // A private namespace of its own (`ps-host-<pid>`, removed when it
    // exits); pings to its kernel side are the traffic.
    let out = Command::new(host_binary())
        .args([
            "--netns",
            "--no-tcp-services",
            "--no-udp-services",
            "--ping",
        ])
        .args(["--count", &PINGS.to_string(), "--interval-ms", "200"])
        .args(["--stats", "0.2", "--seconds", "1.5", "--json"])
        .arg(&*json)
        .output()
        .expect("run the host example");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the host example exited with {}:\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&*json).expect("read the JSON Lines");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let (last, snapshots) = lines.split_last().expect("no JSON lines");
    assert_eq!(last["final"], true, "{last}");
    assert!(last["modules"].is_array() && last["ping"]["received"] == PINGS);
    assert!(!snapshots.is_empty(), "no snapshot before the end:\n{text}");
    // The ICMP path's counters only grow, snapshot to snapshot, and end
    // with every request sent and charged time.
    let icmp = |v: &serde_json::Value| -> (u64, u64) {
        let p = v["paths"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["class"] == "icmp"))
            .unwrap_or_else(|| panic!("no icmp path in {v}"));
        (
            p["down_in"].as_u64().unwrap(),
            p["cpu_ns"].as_u64().unwrap(),
        )
    };
    let mut prev = (0, 0, 0.0);
    for v in lines.iter() {
        let (sent, cpu) = icmp(v);
        let at = v["elapsed_s"].as_f64().expect("elapsed_s");
        assert!(
            sent >= prev.0 && cpu >= prev.1 && at >= prev.2,
            "{prev:?} then {v}"
        );
        prev = (sent, cpu, at);
    }
    let (sent, cpu) = icmp(last);
    assert_eq!(sent, PINGS, "{last}");
    assert!(cpu > 0, "{last}");
}
