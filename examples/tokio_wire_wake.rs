//! How fast the tokio driver wakes on the in-memory wire: 1,000 UDP echoes
//! between two `Net`s, first both on one current-thread runtime, then each
//! on its own runtime and thread. The driver awaits the wire's waker, so
//! every round trip costs a few task wake-ups, not a millisecond of
//! polling per hop.
//!
//! ```text
//! cargo run --release --example tokio_wire_wake [-- ROUNDS]
//! ```

use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::host::Host;
use pathstack::tokio::{Net, UdpSocket};
use std::time::{Duration, Instant};
use tokio::time::timeout;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const LIMIT: Duration = Duration::from_secs(5);

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

fn net(cidr: &str, end: MemoryEnd) -> Result<Net, BoxError> {
    Ok(Net::new(Host::new(cidr.parse()?, end)?))
}

/// Serves echoes on `net`'s port 7 until the task is dropped.
async fn serve(net: &Net) -> Result<tokio::task::JoinHandle<()>, BoxError> {
    let echo = UdpSocket::bind(net, "0.0.0.0:7").await?;
    Ok(tokio::spawn(async move {
        let mut buf = [0u8; 64];
        while let Ok((n, peer)) = echo.recv_from(&mut buf).await {
            if echo.send_to(&buf[..n], peer).await.is_err() {
                break;
            }
        }
    }))
}

/// Runs `rounds` echoes from `net` after one warm-up (ARP); returns their
/// time and the client driver's polls.
async fn client(net: &Net, rounds: u32) -> Result<(Duration, u64), BoxError> {
    let sock = UdpSocket::bind(net, "0.0.0.0:0").await?;
    sock.connect("10.0.0.2:7").await?;
    let mut buf = [0u8; 64];
    sock.send(b"warm-up").await?;
    timeout(LIMIT, sock.recv(&mut buf)).await??;
    let polls = net.driver_polls();
    let t0 = Instant::now();
    for i in 0..rounds {
        sock.send(&i.to_be_bytes()).await?;
        let n = timeout(LIMIT, sock.recv(&mut buf)).await??;
        assert_eq!(&buf[..n], &i.to_be_bytes());
    }
    Ok((t0.elapsed(), net.driver_polls() - polls))
}

fn report(what: &str, rounds: u32, (took, polls): (Duration, u64)) {
    println!(
        "{what:<22} {rounds} echoes in {took:.2?} ({:.1} us per round trip, {:.1} client driver polls per echo)",
        took.as_secs_f64() * 1e6 / f64::from(rounds),
        polls as f64 / f64::from(rounds),
    );
}

fn main() -> Result<(), BoxError> {
    let rounds: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1000,
    };

    let one = runtime()?.block_on(async {
        let (a, b) = memory_pair(MemoryConfig::default());
        let (c, s) = (net("10.0.0.1/24", a)?, net("10.0.0.2/24", b)?);
        let srv = serve(&s).await?;
        let r = client(&c, rounds).await;
        srv.abort();
        r
    })?;
    report("one runtime:", rounds, one);

    let (a, b) = memory_pair(MemoryConfig::default());
    let (up_tx, up_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || -> Result<(), BoxError> {
        runtime()?.block_on(async move {
            let s = net("10.0.0.2/24", b)?;
            let srv = serve(&s).await?;
            let _ = up_tx.send(());
            let _ = stop_rx.await;
            srv.abort();
            Ok(())
        })
    });
    if up_rx.recv().is_err() {
        return server.join().map_err(|_| "the server thread panicked")?;
    }
    let two = runtime()?.block_on(async {
        let c = net("10.0.0.1/24", a)?;
        client(&c, rounds).await
    });
    let _ = stop_tx.send(());
    server.join().map_err(|_| "the server thread panicked")??;
    report("two threads:", rounds, two?);
    Ok(())
}
