//! Cancellation safety of every async method of
//! `pathstack::tokio::UdpSocket`, as a property: a proptest-chosen script
//! of sends and receives, each cancelled in a proptest-chosen way (polled
//! once and dropped, dropped after some scheduling rounds, cut by a
//! timer, or awaited), loses no datagram and duplicates none. Every
//! datagram a send reported sent is received exactly once, in order; a
//! send that was cancelled sent nothing (the same datagram is offered
//! again later); a receive that was cancelled took nothing; `peek_from`,
//! `readable` and `writable` take nothing even when they complete.
#![cfg(feature = "tokio")]

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::host::Host;
use pathstack::tokio::{Net, UdpSocket};
use proptest::prelude::*;
use std::future::{poll_fn, Future};
use std::io;
use std::net::SocketAddr;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;
use tokio::io::ReadBuf;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(10);

/// Datagrams sent but not yet received, at most: well below every queue
/// on the way (wire, socket), so that nothing is dropped for want of room
/// and a loss can only be the cancellation's.
const MAX_IN_FLIGHT: u32 = 8;

/// How an operation's future is cancelled (or not).
#[derive(Clone, Copy, Debug)]
enum Cancel {
    /// Polled once, then dropped.
    PollOnce,
    /// Dropped after the task yielded this many times (the drivers run
    /// in between, so a datagram may arrive while the future waits).
    AfterYields(u8),
    /// Dropped when a timer of this many microseconds fires.
    Timer(u16),
    /// Awaited to completion.
    Never,
}

/// One operation of the script.
#[derive(Clone, Copy, Debug)]
enum Op {
    SendTo,
    Send,
    PollSendTo,
    Writable,
    RecvFrom,
    Recv,
    RecvFromTrunc,
    PeekFrom,
    Readable,
    PollRecvFrom,
}

fn cancel() -> impl Strategy<Value = Cancel> {
    prop_oneof![
        3 => Just(Cancel::PollOnce),
        2 => (0u8..6).prop_map(Cancel::AfterYields),
        1 => (0u16..300).prop_map(Cancel::Timer),
        2 => Just(Cancel::Never),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::SendTo),
        Just(Op::Send),
        Just(Op::PollSendTo),
        Just(Op::Writable),
        Just(Op::RecvFrom),
        Just(Op::Recv),
        Just(Op::RecvFromTrunc),
        Just(Op::PeekFrom),
        Just(Op::Readable),
        Just(Op::PollRecvFrom),
    ]
}

/// Runs `f` the way `how` says: its output if it completed, `None` if it
/// was cancelled.
async fn run<F: Future>(f: F, how: Cancel) -> Option<F::Output> {
    let mut f = pin!(f);
    match how {
        Cancel::PollOnce => {
            poll_fn(|cx| {
                Poll::Ready(match f.as_mut().poll(cx) {
                    Poll::Ready(v) => Some(v),
                    Poll::Pending => None,
                })
            })
            .await
        }
        Cancel::AfterYields(n) => {
            tokio::select! {
                biased;
                v = &mut f => Some(v),
                () = async {
                    for _ in 0..n {
                        tokio::task::yield_now().await;
                    }
                } => None,
            }
        }
        Cancel::Timer(us) => timeout(Duration::from_micros(u64::from(us)), f).await.ok(),
        Cancel::Never => Some(
            timeout(LIMIT, f)
                .await
                .expect("an awaited operation completes"),
        ),
    }
}

/// Datagram `seq`: the number and its complement, 8 bytes, so that a
/// 4-byte buffer truncates it.
fn datagram(seq: u32) -> [u8; 8] {
    let mut d = [0u8; 8];
    d[..4].copy_from_slice(&seq.to_be_bytes());
    d[4..].copy_from_slice(&(!seq).to_be_bytes());
    d
}

fn seq_of(d: &[u8]) -> u32 {
    u32::from_be_bytes(d[..4].try_into().unwrap())
}

/// The two ends: `cli` on one net sends, `srv` on the other receives;
/// both connected to each other (so that `send` and `recv` apply), ARP
/// resolved by a warm-up datagram.
async fn ends() -> (Net, Net, UdpSocket, UdpSocket) {
    let (da, db) = memory_pair(MemoryConfig::default());
    let a = Net::new(Host::new("10.0.0.1/24".parse().unwrap(), da).unwrap());
    let b = Net::new(Host::new("10.0.0.2/24".parse().unwrap(), db).unwrap());
    let srv = UdpSocket::bind(&b, "0.0.0.0:7").await.unwrap();
    let cli = UdpSocket::bind(&a, "0.0.0.0:0").await.unwrap();
    cli.send_to(b"warm-up", "10.0.0.2:7").await.unwrap();
    let mut buf = [0u8; 16];
    let (_, from) = timeout(LIMIT, srv.recv_from(&mut buf))
        .await
        .unwrap()
        .unwrap();
    srv.connect(from).await.unwrap();
    cli.connect("10.0.0.2:7").await.unwrap();
    (a, b, cli, srv)
}

/// What the script has done so far.
struct Tally {
    /// Datagrams sent (the next one to send).
    sent: u32,
    /// Datagrams received (the next one expected).
    received: u32,
}

impl Tally {
    /// Checks that a received datagram is the next expected, whole.
    fn took(&mut self, d: &[u8], from: Option<SocketAddr>, cli: SocketAddr) {
        assert_eq!(
            seq_of(d),
            self.received,
            "datagram lost or duplicated (sent {})",
            self.sent
        );
        if d.len() == 8 {
            assert_eq!(d, datagram(self.received));
        }
        if let Some(from) = from {
            assert_eq!(from, cli);
        }
        self.received += 1;
    }
}

async fn script(ops: Vec<(Op, Cancel)>) {
    let (_a, _b, cli, srv) = ends().await;
    let cli_addr = cli.local_addr().unwrap();
    let srv_addr = srv.local_addr().unwrap();
    let mut t = Tally {
        sent: 0,
        received: 0,
    };
    for (op, how) in ops {
        let in_flight = t.sent - t.received;
        // A receive that waits with nothing in flight would wait for ever:
        // cancel it instead (after the scheduling rounds that let a late
        // datagram arrive).
        let how = match how {
            Cancel::Never if in_flight == 0 => Cancel::AfterYields(3),
            how => how,
        };
        let d = datagram(t.sent);
        let mut buf = [0u8; 8];
        match op {
            // A full window sends nothing: the queues stay below capacity.
            Op::SendTo | Op::Send | Op::PollSendTo if in_flight >= MAX_IN_FLIGHT => {}
            Op::SendTo => {
                if let Some(r) = run(cli.send_to(&d, srv_addr), how).await {
                    assert_eq!(r.unwrap(), 8);
                    t.sent += 1;
                }
            }
            Op::Send => {
                if let Some(r) = run(cli.send(&d), how).await {
                    assert_eq!(r.unwrap(), 8);
                    t.sent += 1;
                }
            }
            Op::PollSendTo => {
                let f = poll_fn(|cx| cli.poll_send_to(cx, &d, srv_addr));
                if let Some(r) = run(f, how).await {
                    assert_eq!(r.unwrap(), 8);
                    t.sent += 1;
                }
            }
            Op::Writable => {
                if let Some(r) = run(cli.writable(), how).await {
                    r.unwrap();
                }
            }
            Op::RecvFrom => {
                if let Some(r) = run(srv.recv_from(&mut buf), how).await {
                    let (n, from) = r.unwrap();
                    t.took(&buf[..n], Some(from), cli_addr);
                }
            }
            Op::Recv => {
                if let Some(r) = run(srv.recv(&mut buf), how).await {
                    let n = r.unwrap();
                    t.took(&buf[..n], None, cli_addr);
                }
            }
            Op::RecvFromTrunc => {
                let mut small = [0u8; 4];
                if let Some(r) = run(srv.recv_from_trunc(&mut small), how).await {
                    let info = r.unwrap();
                    assert!(info.truncated());
                    assert_eq!((info.len, info.datagram_len), (4, 8));
                    t.took(&small, Some(info.from), cli_addr);
                }
            }
            Op::PeekFrom => {
                if let Some(r) = run(srv.peek_from(&mut buf), how).await {
                    let (n, from) = r.unwrap();
                    // The next datagram, left in place.
                    assert_eq!((n, from), (8, cli_addr));
                    assert_eq!(buf, datagram(t.received));
                }
            }
            Op::Readable => {
                if let Some(r) = run(srv.readable(), how).await {
                    r.unwrap();
                    assert!(t.sent > t.received, "readable with nothing sent");
                }
            }
            Op::PollRecvFrom => {
                let mut rb = ReadBuf::new(&mut buf);
                let f = poll_fn(|cx| srv.poll_recv_from(cx, &mut rb));
                if let Some(r) = run(f, how).await {
                    let from = r.unwrap();
                    t.took(rb.filled(), Some(from), cli_addr);
                }
            }
        }
    }
    // Everything sent arrives, once.
    let mut buf = [0u8; 8];
    while t.received < t.sent {
        let (n, from) = timeout(LIMIT, srv.recv_from(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("datagram {} of {} lost", t.received, t.sent))
            .unwrap();
        t.took(&buf[..n], Some(from), cli_addr);
    }
    // And nothing more: no datagram sent twice by a cancelled send.
    tokio::time::sleep(Duration::from_millis(2)).await;
    let e = srv.try_recv_from(&mut buf).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "a duplicate arrived");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn cancelled_operations_lose_and_duplicate_nothing(
        ops in prop::collection::vec((op(), cancel()), 1..80),
    ) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(script(ops));
    }
}
