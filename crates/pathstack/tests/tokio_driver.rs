//! The tokio `Net` owns its driver: made in a runtime it starts it; made
//! outside one its sockets fail with a clear error until it is spawned;
//! when the driver ends (shut down, aborted, its runtime gone) pending and
//! later calls fail with the reason instead of waiting for ever. And the
//! asynchronous socket errors reach tokio sockets too. Every wait is under
//! a timeout.
#![cfg(feature = "tokio")]

use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::core::device::{DeviceCaps, DeviceStats};
use pathstack::core::{Device, DeviceError, Instant, Msg, MsgPool};
use pathstack::host::Host;
use pathstack::tokio::{DriverError, Net, UdpSocket};
use std::io::{self, ErrorKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(5);

fn host(cidr: &str, end: MemoryEnd) -> Host {
    Host::new(cidr.parse().unwrap(), end).unwrap()
}

fn driver_error(e: &io::Error) -> Option<&DriverError> {
    e.get_ref()?.downcast_ref::<DriverError>()
}

/// Two nets on a wire, made in the current runtime (so driven).
fn two_nets() -> (Net, Net) {
    let (a, b) = memory_pair(MemoryConfig::default());
    (
        Net::new(host("10.0.0.1/24", a)),
        Net::new(host("10.0.0.2/24", b)),
    )
}

/// A task waiting to receive on `sock`, started and parked.
async fn pending_recv(sock: UdpSocket) -> tokio::task::JoinHandle<io::Result<()>> {
    let task = tokio::spawn(async move {
        let mut buf = [0u8; 8];
        sock.recv_from(&mut buf).await.map(|_| ())
    });
    tokio::task::yield_now().await;
    task
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn made_outside_a_runtime_fails_clearly_until_spawned() {
    let (a, _b) = memory_pair(MemoryConfig::default());
    let net = Net::new(host("10.0.0.1/24", a));
    assert_eq!(net.driver_error(), Some(DriverError::NotStarted));
    current_thread().block_on(async {
        let e = UdpSocket::bind(&net, "0.0.0.0:7").await.unwrap_err();
        assert_eq!(driver_error(&e), Some(&DriverError::NotStarted));
        assert_eq!(e.kind(), ErrorKind::NotConnected);
        assert!(e.to_string().contains("call Net::spawn"), "{e}");
        net.spawn();
        assert_eq!(net.driver_error(), None);
        UdpSocket::bind(&net, "0.0.0.0:7").await.unwrap();
    });
}

#[tokio::test(flavor = "current_thread")]
async fn made_in_a_runtime_it_runs_without_spawn() {
    let (na, nb) = two_nets();
    let srv = UdpSocket::bind(&nb, "0.0.0.0:7").await.unwrap();
    let cli = UdpSocket::bind(&na, "0.0.0.0:0").await.unwrap();
    cli.send_to(b"hi", "10.0.0.2:7").await.unwrap();
    let mut buf = [0u8; 8];
    let (n, _) = timeout(LIMIT, srv.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf[..n], b"hi");
    // One driver only: running another is refused.
    let e = na.run().await.unwrap_err();
    assert_eq!(driver_error(&e), Some(&DriverError::AlreadyRunning));
}

#[tokio::test(flavor = "current_thread")]
async fn shutdown_fails_a_pending_recv_and_later_calls() {
    let (a, _b) = memory_pair(MemoryConfig::default());
    let net = Net::new(host("10.0.0.1/24", a));
    let sock = UdpSocket::bind(&net, "0.0.0.0:7").await.unwrap();
    let pending = pending_recv(sock).await;
    net.shutdown();
    let e = timeout(LIMIT, pending).await.unwrap().unwrap().unwrap_err();
    assert_eq!(driver_error(&e), Some(&DriverError::Stopped));
    assert_eq!(e.kind(), ErrorKind::BrokenPipe);
    let e = UdpSocket::bind(&net, "0.0.0.0:8").await.unwrap_err();
    assert_eq!(driver_error(&e), Some(&DriverError::Stopped));
}

#[test]
fn an_aborted_driver_fails_a_pending_recv() {
    let (a, _b) = memory_pair(MemoryConfig::default());
    let net = Net::new(host("10.0.0.1/24", a)); // outside a runtime
    current_thread().block_on(async {
        let driver = net.spawn();
        let sock = UdpSocket::bind(&net, "0.0.0.0:7").await.unwrap();
        let pending = pending_recv(sock).await;
        driver.abort();
        let e = timeout(LIMIT, pending).await.unwrap().unwrap().unwrap_err();
        assert_eq!(driver_error(&e), Some(&DriverError::Stopped), "{e}");
    });
}

#[test]
fn a_driver_whose_runtime_ended_fails_later_calls() {
    let (a, _b) = memory_pair(MemoryConfig::default());
    let rt = current_thread();
    let net = rt.block_on(async { Net::new(host("10.0.0.1/24", a)) });
    assert_eq!(net.driver_error(), None);
    drop(rt);
    assert_eq!(net.driver_error(), Some(DriverError::Stopped));
    current_thread().block_on(async {
        let e = UdpSocket::bind(&net, "0.0.0.0:7").await.unwrap_err();
        assert!(e.to_string().contains("runtime ended"), "{e}");
    });
}

/// How [`BreaksOnCue`] breaks.
#[derive(Clone, Copy)]
enum Break {
    /// Its receive panics: a driver that panics.
    Panic,
    /// Its receive fails as a deleted interface's does: a device gone.
    Gone,
}

/// The in-memory wire, which breaks as `how` says once `cue` is set.
struct BreaksOnCue {
    end: MemoryEnd,
    cue: Arc<AtomicBool>,
    how: Break,
}

impl Device for BreaksOnCue {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        self.end.transmit(frame, now)
    }
    fn receive(&mut self, pool: &MsgPool, now: Instant) -> Result<Option<Msg>, DeviceError> {
        if self.cue.load(Ordering::Relaxed) {
            match self.how {
                Break::Panic => panic!("the device broke (on cue)"),
                Break::Gone => return Err(DeviceError::Gone("unplugged on cue".into())),
            }
        }
        self.end.receive(pool, now)
    }
    fn caps(&self) -> DeviceCaps {
        self.end.caps()
    }
    fn stats(&self) -> DeviceStats {
        self.end.stats()
    }
}

/// A net on a device that breaks as `how` says when the returned flag is
/// set.
fn breaking_net(how: Break) -> (Net, Arc<AtomicBool>) {
    let (a, _b) = memory_pair(MemoryConfig::default());
    let cue = Arc::new(AtomicBool::new(false));
    let dev = BreaksOnCue {
        end: a,
        cue: Arc::clone(&cue),
        how,
    };
    let net = Net::new(Host::new("10.0.0.1/24".parse().unwrap(), dev).unwrap());
    (net, cue)
}

#[tokio::test(flavor = "current_thread")]
async fn a_panicked_driver_fails_a_pending_recv() {
    let (net, cue) = breaking_net(Break::Panic);
    let sock = UdpSocket::bind(&net, "0.0.0.0:7").await.unwrap();
    let pending = pending_recv(sock).await;
    cue.store(true, Ordering::Relaxed);
    let e = timeout(LIMIT, pending).await.unwrap().unwrap().unwrap_err();
    assert_eq!(driver_error(&e), Some(&DriverError::Panicked), "{e}");
    assert!(e.to_string().contains("panicked"), "{e}");
}

#[tokio::test(flavor = "current_thread")]
async fn async_errors_reach_tokio_sockets() {
    let (na, _nb) = two_nets();
    let sock = UdpSocket::bind(&na, "0.0.0.0:0").await.unwrap();
    // No route: at once.
    let e = sock.send_to(b"x", "192.0.2.1:9").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NetworkUnreachable);
    // Port unreachable: the waiting receive of a connected socket fails.
    sock.connect("10.0.0.2:9").await.unwrap();
    sock.send(b"anyone?").await.unwrap();
    let mut buf = [0u8; 8];
    let e = timeout(LIMIT, sock.recv(&mut buf))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
    assert_eq!(sock.take_error().unwrap().map(|e| e.kind()), None);
}

/// A net that waits on a descriptor, made outside a runtime, is an error
/// the caller can handle, not tokio's panic (issue 27, problem 9).
#[test]
fn a_net_on_a_descriptor_outside_a_runtime_is_an_error() {
    let (a, _b) = memory_pair(MemoryConfig::default());
    let fd = std::os::fd::OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
    let Err(e) = Net::with_fd(host("10.0.0.1/24", a), fd) else {
        panic!("a net made outside a runtime");
    };
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("tokio runtime"), "{e}");
}

/// `spawn` on a net whose driver was shut down reports that, instead of
/// a clean `Ok` as if it had run and stopped.
#[test]
fn spawn_after_shutdown_reports_the_stop() {
    let rt = current_thread();
    rt.block_on(async {
        let (a, _b) = two_nets();
        a.shutdown();
        let e = timeout(LIMIT, a.spawn())
            .await
            .unwrap()
            .unwrap()
            .unwrap_err();
        assert_eq!(driver_error(&e), Some(&DriverError::Stopped), "{e}");
    });
}

/// A device that fails for good ends the driver with its failure: the
/// pending receive and every later call report it (`NetworkDown`), and
/// the sync host's `wait` too (issue 27, problem 2).
#[tokio::test(flavor = "current_thread")]
async fn a_failed_device_ends_the_driver_with_its_error() {
    let (net, cue) = breaking_net(Break::Gone);
    let sock = UdpSocket::bind(&net, "0.0.0.0:7").await.unwrap();
    let pending = pending_recv(sock).await;
    cue.store(true, Ordering::Relaxed);
    let e = timeout(LIMIT, pending).await.unwrap().unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NetworkDown, "{e}");
    assert!(
        matches!(
            net.driver_error(),
            Some(DriverError::Device {
                kind: ErrorKind::NetworkDown,
                ..
            })
        ),
        "{:?}",
        net.driver_error()
    );
    let e = net
        .with_host(|h| h.wait(Duration::from_millis(1)))
        .unwrap_err();
    assert_eq!(io::Error::from(e).kind(), ErrorKind::NetworkDown);
}
