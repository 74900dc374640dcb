//! A `Net` made with `Net::on_own_thread` runs its driver on a thread and
//! runtime of its own: while the application's runtime is blocked, the
//! stack still answers ARP and pings (issue 27, problem 9), where a net
//! driven by the blocked runtime does not (the control). Its sockets are
//! used from other runtimes; errors from making it come back; and its
//! thread ends after a shutdown or the last `Net` dropped. Every wait is
//! bounded.
#![cfg(feature = "tokio")]

#[path = "support/wire_nets.rs"]
mod wire_nets;

use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::host::{Host, HostConfig};
use pathstack::tokio::{DriverError, Net, UdpSocket};
use std::io::{self, ErrorKind};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use wire_nets::{addr, within, A, B};

/// How long the application's task blocks its runtime's thread.
const BLOCK: Duration = Duration::from_millis(500);

/// How long into the block the ping must be answered to count as answered
/// during it: well inside [`BLOCK`], so that a reply sent after the block
/// cannot count.
const DURING: Duration = Duration::from_millis(300);

fn host(ip: Ipv4Addr, end: MemoryEnd) -> Host {
    let cfg = HostConfig::parse(&format!("{ip}/24")).expect("a host address");
    Host::new(cfg, end).expect("host")
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// When host B's ping of A was answered, measured from the start of the
/// block.
#[derive(Debug)]
struct PingOutcome {
    answered_after: Option<Duration>,
}

/// Host B, a synchronous host on a std thread: once told the block has
/// begun, pings A (ARP first: B does not know A's address) and waits for
/// the reply, at most `give_up`, sleeping in [`Host::wait`] between polls.
fn pinger(
    mut b: Host,
    blocking: mpsc::Receiver<Instant>,
    give_up: Duration,
) -> std::thread::JoinHandle<PingOutcome> {
    std::thread::spawn(move || {
        let began = blocking.recv().expect("the block begins");
        b.ping(A, 1, b"are you there").expect("ping");
        loop {
            b.poll();
            if !b.echo_replies().is_empty() {
                return PingOutcome {
                    answered_after: Some(began.elapsed()),
                };
            }
            if began.elapsed() > give_up {
                return PingOutcome {
                    answered_after: None,
                };
            }
            b.wait(Duration::from_millis(10)).expect("wait");
        }
    })
}

/// Blocks the current runtime's thread for [`BLOCK`] in a task of its own
/// (what issue 27's problem 9 is about), while host B pings `a` from a
/// std thread. Returns when B's ping was answered, measured from the
/// start of the block. `a` is kept alive throughout.
async fn ping_while_blocked(a: &Net, b: Host) -> PingOutcome {
    let (tx, rx) = mpsc::channel();
    // Long enough for an ordinary net to answer after the block.
    let b = pinger(b, rx, BLOCK + Duration::from_secs(5));
    tokio::spawn(async move {
        tx.send(Instant::now()).unwrap();
        std::thread::sleep(BLOCK);
    })
    .await
    .unwrap();
    assert!(a.driver_error().is_none(), "{:?}", a.driver_error());
    // Joined off the runtime's thread, so that an ordinary net's driver
    // runs meanwhile.
    within(
        "the pinger",
        tokio::task::spawn_blocking(move || b.join().unwrap()),
    )
    .await
    .unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn a_net_on_its_own_thread_answers_while_the_runtime_blocks() {
    let (da, db) = memory_pair(MemoryConfig::default());
    let ha = host(A, da);
    let a = Net::on_own_thread(move || Ok(Net::new(ha))).unwrap();
    let out = ping_while_blocked(&a, host(B, db)).await;
    let t = out.answered_after.expect("the ping was answered");
    assert!(
        t < DURING,
        "answered only after {t:?}, not during the block"
    );
}

/// The control: the same with a net driven by the blocked runtime. The
/// stack does not answer during the block (ARP goes unanswered), only
/// after it, which shows the test above can fail.
#[tokio::test(flavor = "current_thread")]
async fn a_net_on_the_blocked_runtime_answers_only_after_the_block() {
    let (da, db) = memory_pair(MemoryConfig::default());
    let a = Net::new(host(A, da));
    let out = ping_while_blocked(&a, host(B, db)).await;
    let t = out.answered_after.expect("the ping was answered after all");
    assert!(t >= BLOCK, "answered after {t:?}, during the block");
}

/// Host B serving a UDP echo on port 7 from a std thread until `stop`.
fn echo_server(mut b: Host, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let srv = b.udp().bind((Ipv4Addr::UNSPECIFIED, 7)).unwrap();
        let mut buf = [0u8; 1500];
        while !stop.load(Ordering::Relaxed) {
            b.poll();
            while let Ok((n, peer)) = b.udp().recv_from(&srv, &mut buf) {
                b.udp().send_to(&srv, &buf[..n], peer).unwrap();
            }
            b.wait(Duration::from_millis(10)).unwrap();
        }
    })
}

/// A UDP exchange with host B through a socket of `a`, used from the
/// calling task's runtime, not the net's.
async fn echo_through(a: &Net) {
    let sock = UdpSocket::bind(a, "0.0.0.0:0").await.unwrap();
    sock.connect(addr(B, 7)).await.unwrap();
    for round in 0..3u8 {
        sock.send(&[round; 32]).await.unwrap();
        let mut buf = [0u8; 64];
        let n = within("the echo", sock.recv(&mut buf)).await.unwrap();
        assert_eq!(&buf[..n], &[round; 32]);
    }
}

#[test]
fn its_sockets_work_from_other_runtimes() {
    let (da, db) = memory_pair(MemoryConfig::default());
    let ha = host(A, da);
    let a = Net::on_own_thread(move || Ok(Net::new(ha))).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let server = echo_server(host(B, db), Arc::clone(&stop));
    current_thread().block_on(echo_through(&a));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(echo_through(&a));
    // The net outlives both runtimes: its driver is on its own.
    assert_eq!(a.driver_error(), None);
    stop.store(true, Ordering::Relaxed);
    server.join().unwrap();
}

/// The calling thread's entry under `/proc/self/task`, learned on the
/// thread itself: gone once the thread has ended.
fn this_thread_entry() -> PathBuf {
    // "/proc/thread-self" links to "<pid>/task/<tid>".
    let link = std::fs::read_link("/proc/thread-self").unwrap();
    let tid = link.file_name().unwrap().to_owned();
    PathBuf::from("/proc/self/task").join(tid)
}

/// A net on its own thread, and that thread's `/proc` entry.
fn net_and_thread() -> (Net, PathBuf) {
    let (da, _db) = memory_pair(MemoryConfig::default());
    let ha = host(A, da);
    let (tx, rx) = mpsc::channel();
    let net = Net::on_own_thread(move || {
        let name = std::thread::current().name().map(str::to_owned);
        assert_eq!(name.as_deref(), Some("pathstack-net"));
        tx.send(this_thread_entry()).unwrap();
        Ok(Net::new(ha))
    })
    .unwrap();
    let entry = rx.recv().unwrap();
    assert!(entry.exists(), "{entry:?}");
    (net, entry)
}

/// Waits (bounded) for `entry`'s thread to end.
fn ends(entry: &std::path::Path, within: Duration) -> bool {
    let t0 = Instant::now();
    while entry.exists() {
        if t0.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

#[test]
fn its_thread_ends_after_shutdown() {
    let (net, entry) = net_and_thread();
    net.shutdown();
    assert_eq!(net.driver_error(), Some(DriverError::Stopped));
    // At once, even while the net is still held.
    assert!(ends(&entry, Duration::from_secs(2)), "{entry:?} still runs");
    drop(net);
}

#[test]
fn its_thread_ends_when_the_last_net_is_dropped() {
    let (net, entry) = net_and_thread();
    let clone = net.clone();
    drop(net);
    // A clone keeps it.
    std::thread::sleep(Duration::from_millis(50));
    assert!(entry.exists(), "ended with a clone alive");
    assert_eq!(clone.driver_error(), None);
    drop(clone);
    // The driver notices within a second (its longest idle sleep).
    assert!(ends(&entry, Duration::from_secs(5)), "{entry:?} still runs");
}

#[test]
fn an_error_making_the_net_is_the_calls_error() {
    let e = Net::on_own_thread(|| Err(io::Error::new(ErrorKind::AddrInUse, "taken"))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AddrInUse);
    assert_eq!(e.to_string(), "taken");
}

/// A net that waits on a descriptor needs a runtime with I/O: on its own
/// thread it has one, where made on a plain thread it fails.
#[test]
fn a_descriptor_is_registered_with_the_threads_runtime() {
    let fd = || {
        let (s, _peer) = std::os::unix::net::UnixDatagram::pair().unwrap();
        std::os::fd::OwnedFd::from(s)
    };
    let (da, _db) = memory_pair(MemoryConfig::default());
    let Err(e) = Net::with_fd(host(A, da), fd()) else {
        panic!("a net on a descriptor made outside a runtime");
    };
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let (da, _db) = memory_pair(MemoryConfig::default());
    let ha = host(A, da);
    let net = Net::on_own_thread(move || Net::with_fd(ha, fd())).unwrap();
    assert_eq!(net.driver_error(), None);
    net.shutdown();
}

#[test]
#[should_panic(expected = "made badly")]
fn a_panic_making_the_net_resumes_in_the_caller() {
    let _ = Net::on_own_thread(|| panic!("made badly"));
}

/// The task [`Net::spawn`] returns for a running driver waits on the net
/// without holding it: when the last `Net` goes, the driver and that
/// task end (the thread above waits the same way).
#[tokio::test(flavor = "current_thread")]
async fn a_spawned_watcher_does_not_keep_the_net_alive() {
    let (da, _db) = memory_pair(MemoryConfig::default());
    let net = Net::new(host(A, da));
    let watcher = net.spawn();
    // Both the driver and the watcher are waiting when the net goes.
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(net);
    let ended = tokio::time::timeout(Duration::from_secs(5), watcher).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "the watcher still waits: {ended:?}"
    );
}
