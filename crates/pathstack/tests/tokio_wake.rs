//! The tokio driver on the in-memory wire sleeps until a frame arrives (the
//! wire wakes its task) instead of polling every millisecond. Asserted by
//! what the driver does — how often it polls the host — not by timing, so
//! a loaded machine cannot make it flaky; `examples/tokio_wire_wake.rs`
//! measures the time.
#![cfg(feature = "tokio")]

use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::host::Host;
use pathstack::tokio::{Net, UdpSocket};
use std::time::Duration;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);
const ROUNDS: u32 = 200;

fn host(cidr: &str, end: MemoryEnd) -> Host {
    Host::new(cidr.parse().unwrap(), end).unwrap()
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Echoes every datagram on `net`'s port 7 until the task is dropped.
async fn echo_server(net: &Net) -> tokio::task::JoinHandle<()> {
    let echo = UdpSocket::bind(net, "0.0.0.0:7").await.unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 64];
        while let Ok((n, peer)) = echo.recv_from(&mut buf).await {
            echo.send_to(&buf[..n], peer).await.unwrap();
        }
    })
}

/// `ROUNDS` sequential echoes through `sock`, each checked.
async fn echoes(sock: &UdpSocket) {
    let mut buf = [0u8; 64];
    for i in 0..ROUNDS {
        sock.send(&i.to_be_bytes()).await.unwrap();
        let n = timeout(LIMIT, sock.recv(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("echo {i} never came back"))
            .unwrap();
        assert_eq!(&buf[..n], &i.to_be_bytes());
    }
}

#[test]
fn an_idle_wire_driver_does_not_poll_and_an_echo_costs_a_few_polls() {
    current_thread().block_on(async {
        let (a, b) = memory_pair(MemoryConfig::default());
        let client = Net::new(host("10.0.0.1/24", a));
        let server = Net::new(host("10.0.0.2/24", b));
        let _srv = echo_server(&server).await;
        let sock = UdpSocket::bind(&client, "0.0.0.0:0").await.unwrap();
        sock.connect("10.0.0.2:7").await.unwrap();
        // A warm-up echo resolves ARP; after it no timer is due soon.
        sock.send(b"warm-up").await.unwrap();
        timeout(LIMIT, sock.recv(&mut [0u8; 64]))
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;

        let polls = || client.driver_polls() + server.driver_polls();
        let before = polls();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let idle = polls() - before;
        // Polling every millisecond would be ~600 polls of the two
        // drivers; asleep, they wake only for the 1 s safety net.
        assert!(idle <= 10, "idle drivers polled {idle} times in 300 ms");

        let before = polls();
        echoes(&sock).await;
        let per_echo = (polls() - before) / u64::from(ROUNDS);
        // An echo is two arrivals and two sends: each driver wakes a few
        // times, polls until the device is empty and sleeps again (the
        // old driver spun 64 rounds after each).
        assert!(per_echo <= 16, "{per_echo} driver polls per echo");
    });
}

#[test]
fn nets_on_two_threads_wake_each_other() {
    let (a, b) = memory_pair(MemoryConfig::default());
    let (up_tx, up_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        current_thread().block_on(async move {
            let net = Net::new(host("10.0.0.2/24", b));
            let srv = echo_server(&net).await;
            up_tx.send(()).unwrap();
            let _ = timeout(Duration::from_secs(60), stop_rx).await;
            srv.abort();
            net.driver_polls()
        })
    });
    up_rx.recv().unwrap();
    let client_polls = current_thread().block_on(async {
        let net = Net::new(host("10.0.0.1/24", a));
        let sock = UdpSocket::bind(&net, "0.0.0.0:0").await.unwrap();
        sock.connect("10.0.0.2:7").await.unwrap();
        echoes(&sock).await;
        net.driver_polls()
    });
    stop_tx.send(()).unwrap();
    let server_polls = server.join().unwrap();
    // Each driver sleeps until the other's frame wakes it: about two polls
    // per side and echo (the arrival, then one that finds the device
    // empty). Polling every millisecond made it 12 here, more on a loaded
    // machine, as the waits grow.
    let per_echo = (client_polls + server_polls) / u64::from(ROUNDS);
    assert!(
        per_echo <= 8,
        "{client_polls} + {server_polls} driver polls for {ROUNDS} echoes"
    );
}
