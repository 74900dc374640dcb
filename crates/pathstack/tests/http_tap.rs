//! Privileged: the hyper server of `pathstack_tools::http` (`tools/src/http.rs`) on pathstack's tokio
//! TCP streams, on a TAP device in namespace A, fetched by `curl` on the
//! Linux kernel of namespace B: the page, a 100 MB body checked by its
//! SHA-256 against the tool's generator, and 200 requests from 20
//! concurrent clients over keep-alive connections (curl reports that it
//! reused each client's one connection, and every body is checked); then
//! 200 sequential requests on one connection, which must not wait for the
//! client's delayed ACKs.
//!
//! The tool's service runs in-process (its `serve` on a current-thread
//! runtime in a thread), so the test needs no separately built binary.
#![cfg(feature = "tokio")]

use pathstack_tools::http;

use pathstack::devices::{TapDevice, TapOptions};
use pathstack::host::HostConfig;
use pathstack::inet::MacAddr;
use pathstack::tokio::Net;
use pathstack_testutil::{privileged, stopped, text, LoopThread, Topology};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const PORT: u16 = 80;
const BIG: u64 = 100 << 20;
const CLIENTS: usize = 20;
const PER_CLIENT: usize = 10;

/// The example's server on TAP A (offloads on or off), on a current-thread
/// runtime in its own thread; `join` stops it and returns how many
/// connections it accepted. Stopped and joined on drop, also when the test
/// fails.
fn start_server(topo: &Topology, offload: bool) -> LoopThread<u64> {
    let opts = TapOptions::new().netns(topo.var("NS_A")).offload(offload);
    let tap = TapDevice::open(topo.var("TAP_A"), opts).expect("open TAP A");
    let mut cfg = HostConfig::parse(&format!("{}/24", topo.var("PS_A_IP"))).unwrap();
    cfg.mac = Some(MacAddr(tap.mac()));
    LoopThread::spawn(move |stop| -> u64 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let net = Net::tap(cfg, tap).expect("net");
            let stop_signal = async {
                while !stopped(stop) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            };
            let accepted = http::serve(&net, PORT, stop_signal).await.expect("serve");
            eprintln!("{}", net.with_host(|h| h.report()));
            accepted
        })
    })
}

/// `curl` in namespace B: silent but for errors, bounded in time, with
/// `args` after.
fn curl(topo: &Topology, args: &[&str]) -> Command {
    let mut c = topo.command_in("NS_B", "curl");
    c.args(["-sS", "--max-time", "120"]).args(args);
    c
}

/// The page, fetched once the server listens (curl retries a refused
/// connect).
fn first_page(topo: &Topology) -> Output {
    let url = url(topo, "/");
    let args = [
        "--retry",
        "20",
        "--retry-connrefused",
        "--retry-delay",
        "1",
        &url,
    ];
    curl(topo, &args).output().expect("run curl")
}

fn url(topo: &Topology, path: &str) -> String {
    format!("http://{}:{PORT}{path}", topo.var("PS_A_IP"))
}

/// The body of `/bytes/{n}` as the tool generates it.
fn expected(n: u64) -> Vec<u8> {
    let mut v = vec![0u8; n as usize];
    http::fill(n, 0, &mut v);
    v
}

fn check(o: &Output, what: &str) {
    assert!(o.status.success(), "{what}: {}", text(o));
}

#[test]
fn curl_fetches_pages_and_bodies_from_hyper_on_tap() {
    if privileged("curl_fetches_pages_and_bodies_from_hyper_on_tap") {
        curl_against_hyper(false);
    }
}

/// The same through a TAP with checksum, TSO and GRO offloads: hyper's
/// writes leave as 64 KB super-segments with partial checksums.
#[test]
fn curl_fetches_pages_and_bodies_from_hyper_on_tap_with_offloads() {
    if privileged("curl_fetches_pages_and_bodies_from_hyper_on_tap_with_offloads") {
        curl_against_hyper(true);
    }
}

/// Issue 25: 200 sequential requests from the kernel's curl on one
/// keep-alive connection. Linux's client delays its ACKs (40 ms at
/// least); a response that left in two segments, the body held by Nagle
/// until the head was acknowledged, waited that long each time (8.8 s in
/// all). Now they take well under a second, offloads off and on.
#[test]
fn sequential_keepalive_requests_from_curl_never_wait_for_a_delayed_ack() {
    if privileged("sequential_keepalive_requests_from_curl_never_wait_for_a_delayed_ack") {
        for offload in [false, true] {
            sequential_requests(offload);
        }
    }
}

fn sequential_requests(offload: bool) {
    const REQUESTS: usize = 200;
    let topo = Topology::up();
    let server = start_server(&topo, offload);
    let o = first_page(&topo);
    check(&o, "the first page");

    let mut cmd = curl(&topo, &["-w", "%{stderr}%{http_code} %{num_connects}\\n"]);
    cmd.args((0..REQUESTS).map(|_| url(&topo, "/")));
    let start = std::time::Instant::now();
    let o = cmd.output().expect("run curl");
    let took = start.elapsed();
    check(&o, "200 pages");
    let pages: String = std::iter::repeat_n(http::PAGE, REQUESTS).collect();
    assert!(o.stdout == pages.as_bytes(), "the pages differ");
    let lines: Vec<String> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), REQUESTS);
    for (i, line) in lines.iter().enumerate() {
        let connects = if i == 0 { 1 } else { 0 };
        assert_eq!(
            *line,
            format!("200 {connects}"),
            "request {i}: one connection, reused"
        );
    }
    assert!(
        took < std::time::Duration::from_secs(1),
        "offload {offload}: {REQUESTS} requests took {took:?}: they wait for delayed ACKs"
    );
    assert_eq!(server.join(), 2, "connections accepted");
}

fn curl_against_hyper(offload: bool) {
    let topo = Topology::up();
    let server = start_server(&topo, offload);

    let o = first_page(&topo);
    check(&o, "the page");
    assert_eq!(String::from_utf8_lossy(&o.stdout), http::PAGE);

    // 100 MB, hashed as it streams out of curl; the status and size on
    // curl's stderr.
    let mut child = curl(
        &topo,
        &[
            "-w",
            "%{stderr}%{http_code} %{size_download}",
            &url(&topo, &format!("/bytes/{BIG}")),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("run curl");
    let mut out = child.stdout.take().expect("stdout");
    let mut hash = Sha256::new();
    let mut got = 0u64;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = out.read(&mut buf).expect("read curl's output");
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
        got += n as u64;
    }
    let o = child.wait_with_output().expect("curl");
    check(&o, "100 MB");
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("200 {BIG}"),
        "status and size"
    );
    assert_eq!(got, BIG);
    let mut want = Sha256::new();
    let mut offset = 0;
    while offset < BIG {
        let len = (BIG - offset).min(buf.len() as u64) as usize;
        http::fill(BIG, offset, &mut buf[..len]);
        want.update(&buf[..len]);
        offset += len as u64;
    }
    assert_eq!(hash.finalize(), want.finalize(), "SHA-256 of the body");

    // 20 clients at once, each fetching 10 bodies over one connection:
    // the bodies arrive concatenated on curl's stdout, one status line per
    // transfer on its stderr.
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let sizes: Vec<u64> = (0..PER_CLIENT)
                .map(|i| (c * 7919 + i * 104_729) as u64 % 300_000)
                .collect();
            let mut args = vec![
                "-w".to_string(),
                "%{stderr}%{http_code} %{num_connects}\\n".to_string(),
            ];
            args.extend(sizes.iter().map(|n| url(&topo, &format!("/bytes/{n}"))));
            let mut cmd = curl(&topo, &[]);
            cmd.args(&args);
            let child = std::thread::spawn(move || cmd.output().expect("run curl"));
            (sizes, child)
        })
        .collect();
    for (c, (sizes, child)) in clients.into_iter().enumerate() {
        let o = child.join().expect("curl thread");
        check(&o, &format!("client {c}"));
        let want: Vec<u8> = sizes.iter().flat_map(|&n| expected(n)).collect();
        assert!(o.stdout == want, "client {c}: the bodies differ");
        let lines: Vec<String> = String::from_utf8_lossy(&o.stderr)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(lines.len(), PER_CLIENT, "client {c}: {lines:?}");
        // One new connection for the first transfer, none after: curl
        // kept the connection alive and reused it.
        for (i, line) in lines.iter().enumerate() {
            let connects = if i == 0 { 1 } else { 0 };
            assert_eq!(*line, format!("200 {connects}"), "client {c} transfer {i}");
        }
    }

    // The page, the big body, and one connection per client.
    assert_eq!(server.join(), 2 + CLIENTS as u64, "connections accepted");
}
