//! The tokio TCP streams end to end over the in-memory wire, with the
//! ecosystem unchanged: `tokio::io::copy` over a split, a `tokio-util`
//! codec, hyper's client and server; then a multi-threaded runtime,
//! errors (refused, reset, driver gone), the non-blocking calls, a large
//! byte-exact transfer and shutdown. Every wait is under
//! `tokio::time::timeout`, so a lost wake-up fails the test instead of
//! hanging it.
#![cfg(feature = "tokio")]

#[path = "support/wire_nets.rs"]
mod wire_nets;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use pathstack::tokio::{DriverError, Net, TcpListener, TcpStream};
use std::convert::Infallible;
use std::io::{self, ErrorKind};
use std::net::Ipv4Addr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;
use tokio_util::codec::{Framed, LinesCodec};
use wire_nets::{addr, nets, within, A, B};

/// A connected pair: (client on `a`, server's accepted stream on `b`).
async fn pair(a: &Net, b: &Net, port: u16) -> (TcpStream, TcpStream) {
    let l = TcpListener::bind(b, addr(Ipv4Addr::UNSPECIFIED, port))
        .await
        .unwrap();
    let (c, s) = within("connect and accept", async {
        tokio::join!(TcpStream::connect(a, addr(B, port)), l.accept())
    })
    .await;
    let (c, (s, peer)) = (c.unwrap(), s.unwrap());
    assert_eq!(peer, c.local_addr().unwrap());
    assert_eq!(peer.ip(), A);
    assert_eq!(s.peer_addr().unwrap(), peer);
    assert_eq!(s.local_addr().unwrap(), addr(B, port));
    (c, s)
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect()
}

#[tokio::test]
async fn echo_with_tokio_io_copy_over_split() {
    let (a, b) = nets();
    let l = TcpListener::bind(&b, "0.0.0.0:7").await.unwrap();
    assert_eq!(l.local_addr().unwrap(), addr(Ipv4Addr::UNSPECIFIED, 7));
    let server = tokio::spawn(async move {
        let (mut s, _) = l.accept().await?;
        let (mut r, mut w) = s.split();
        let n = tokio::io::copy(&mut r, &mut w).await?;
        w.shutdown().await?;
        io::Result::Ok(n)
    });
    let mut c = within("connect", TcpStream::connect(&a, "10.0.0.2:7"))
        .await
        .unwrap();
    assert_eq!(c.peer_addr().unwrap(), addr(B, 7));
    let data = pattern(300_000);
    let (mut r, mut w) = c.split();
    let (sent, got) = within("echo", async {
        tokio::join!(
            async {
                w.write_all(&data).await?;
                w.shutdown().await
            },
            async {
                let mut got = Vec::new();
                r.read_to_end(&mut got).await.map(|_| got)
            }
        )
    })
    .await;
    sent.unwrap();
    assert!(got.unwrap() == data, "the echo differs");
    assert_eq!(
        within("server", server).await.unwrap().unwrap(),
        data.len() as u64
    );
}

#[tokio::test]
async fn lines_codec_round_trip() {
    let (a, b) = nets();
    let (c, s) = pair(&a, &b, 4000).await;
    let server = tokio::spawn(async move {
        let mut lines = Framed::new(s, LinesCodec::new());
        while let Some(line) = lines.next().await {
            let line = line.map_err(io::Error::other)?;
            lines
                .send(line.to_uppercase())
                .await
                .map_err(io::Error::other)?;
        }
        io::Result::Ok(())
    });
    let mut lines = Framed::new(c, LinesCodec::new());
    for i in 0..100 {
        let msg = format!("line number {i}");
        lines.send(msg.clone()).await.unwrap();
        let back = within("a line back", lines.next()).await.unwrap().unwrap();
        assert_eq!(back, msg.to_uppercase());
    }
    drop(lines);
    within("server end", server).await.unwrap().unwrap();
}

async fn hello(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = format!("{} {}", req.method(), req.uri().path());
    Ok(Response::new(Full::new(Bytes::from(body))))
}

#[tokio::test]
async fn hyper_client_against_hyper_server() {
    let (a, b) = nets();
    let l = TcpListener::bind(&b, "0.0.0.0:80").await.unwrap();
    tokio::spawn(async move {
        loop {
            let (s, _) = l.accept().await.unwrap();
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(s), hyper::service::service_fn(hello)),
            );
        }
    });
    let stream = within("connect", TcpStream::connect(&a, addr(B, 80)))
        .await
        .unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    // Several requests on the one connection (keep-alive).
    for i in 0..20 {
        let req = Request::get(format!("/page/{i}"))
            .header("host", "10.0.0.2")
            .body(Full::new(Bytes::new()))
            .unwrap();
        let resp = within("a response", send.send_request(req)).await.unwrap();
        assert_eq!(resp.status(), 200);
        let body = within("the body", resp.into_body().collect())
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(body, format!("GET /page/{i}").as_bytes());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_move_into_tasks_of_a_multi_threaded_runtime() {
    let (a, b) = nets();
    let l = TcpListener::bind(&b, "0.0.0.0:9000").await.unwrap();
    let server = tokio::spawn(async move {
        let mut served = Vec::new();
        for _ in 0..8 {
            let (s, _) = l.accept().await?;
            served.push(tokio::spawn(async move {
                let (mut r, mut w) = s.into_split();
                tokio::io::copy(&mut r, &mut w).await
            }));
        }
        let mut total = 0;
        for t in served {
            total += t.await.map_err(io::Error::other)??;
        }
        io::Result::Ok(total)
    });
    let mut clients = Vec::new();
    for k in 0..8usize {
        let a = a.clone();
        clients.push(tokio::spawn(async move {
            let s = TcpStream::connect(&a, addr(B, 9000)).await?;
            let (mut r, mut w) = s.into_split();
            let data = pattern(100_000 + k * 1000);
            let expect = data.clone();
            let writer = tokio::spawn(async move {
                w.write_all(&data).await?;
                // Dropping the owned write half shuts the side down.
                drop(w);
                io::Result::Ok(())
            });
            let mut got = Vec::new();
            r.read_to_end(&mut got).await?;
            writer.await.map_err(io::Error::other)??;
            assert!(got == expect, "client {k}: the echo differs");
            io::Result::Ok(got.len())
        }));
    }
    let mut sent = 0;
    for c in clients {
        sent += within("a client", c).await.unwrap().unwrap();
    }
    let echoed = within("the server", server).await.unwrap().unwrap();
    assert_eq!(echoed, sent as u64);
}

#[tokio::test]
async fn a_connect_to_a_closed_port_is_refused() {
    let (a, _b) = nets();
    let e = within("connect", TcpStream::connect(&a, addr(B, 1234)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
}

/// Nobody answers ARP for the address: the connect fails with
/// `HostUnreachable` once ARP gives up (about 3 s, as Linux's), not after
/// the two minutes of SYN retransmissions (issue 27, problem 1).
#[tokio::test]
async fn a_connect_to_an_absent_neighbour_is_host_unreachable() {
    let (a, _b) = nets();
    let started = std::time::Instant::now();
    let absent = Ipv4Addr::new(10, 0, 0, 9);
    let e = timeout(
        Duration::from_secs(10),
        TcpStream::connect(&a, addr(absent, 80)),
    )
    .await
    .expect("still connecting after 10 s")
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::HostUnreachable, "{e}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

/// A server and its client on one net, through 127.0.0.1 (issue 27,
/// problem 3): the connection turns around in IP, as over Linux's `lo`.
#[tokio::test]
async fn a_client_reaches_a_server_on_its_own_host_through_localhost() {
    let (a, _b) = nets();
    let l = TcpListener::bind(&a, "0.0.0.0:8080").await.unwrap();
    let server = tokio::spawn(async move {
        let (mut s, peer) = l.accept().await.unwrap();
        let mut buf = vec![0u8; 5];
        s.read_exact(&mut buf).await.unwrap();
        s.write_all(&buf).await.unwrap();
        peer
    });
    let mut c = within("connect", TcpStream::connect(&a, "127.0.0.1:8080"))
        .await
        .unwrap();
    c.write_all(b"hello").await.unwrap();
    let mut back = [0u8; 5];
    within("echo", c.read_exact(&mut back)).await.unwrap();
    assert_eq!(&back, b"hello");
    let peer = within("server", server).await.unwrap();
    assert_eq!(peer, c.local_addr().unwrap());
    assert_eq!(peer.ip(), Ipv4Addr::LOCALHOST);
}

/// Keepalive set on the stream itself (issue 27, problem 7): a peer that
/// stops answering ends the connection with `TimedOut` after the probes.
#[tokio::test]
async fn keepalive_on_the_stream_finds_a_silent_peer() {
    let (a, b) = nets();
    let (mut c, _s) = pair(&a, &b, 4100).await;
    c.set_keepalive(Some(pathstack::inet::tcp::Keepalive {
        idle: Duration::from_millis(200),
        interval: Duration::from_millis(100),
        probes: 2,
    }))
    .unwrap();
    // The peer's host stops: nothing answers the probes any more.
    b.shutdown();
    let mut buf = [0u8; 1];
    let e = timeout(Duration::from_secs(5), c.read(&mut buf))
        .await
        .expect("keepalive never gave up")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
}

#[tokio::test]
async fn a_reset_surfaces_as_connection_reset() {
    let (a, b) = nets();
    let (mut c, s) = pair(&a, &b, 4001).await;
    c.write_all(b"unread").await.unwrap();
    // The server waits for the data, then closes without reading it: a
    // reset (RFC 2525 §2.17), not a FIN.
    within("the data", s.readable()).await.unwrap();
    drop(s);
    let mut buf = [0u8; 16];
    let e = within("the reset", c.read(&mut buf)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
}

#[tokio::test]
async fn peek_try_read_try_write_readable_writable() {
    let (a, b) = nets();
    let (c, s) = pair(&a, &b, 4002).await;
    let mut buf = [0u8; 64];
    assert_eq!(
        s.try_read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    within("writable", c.writable()).await.unwrap();
    assert_eq!(c.try_write(b"hello").unwrap(), 5);
    within("readable", s.readable()).await.unwrap();
    let n = within("peek", s.peek(&mut buf)).await.unwrap();
    assert_eq!(&buf[..n], b"hello");
    // Peeking left it in place.
    let n = s.try_read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"hello");
    assert_eq!(
        s.try_read(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    // try_write until the send buffer is full: then WouldBlock, and
    // writable waits until the peer's reads make room.
    let chunk = [7u8; 16 * 1024];
    let mut queued = 0usize;
    loop {
        match c.try_write(&chunk) {
            Ok(n) => queued += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("try_write: {e}"),
        }
        // Each write runs the stack, which sends what the peer's window
        // allows and takes its ACKs: the buffer fills once that window
        // (the unread receive buffer) and the send buffer are full.
        if queued > 64 << 20 {
            panic!("the send buffer never filled");
        }
    }
    assert!(queued > 0);
    let drain = async {
        let mut s = s;
        let mut got = 0usize;
        let mut buf = vec![0u8; 64 * 1024];
        while got < queued {
            got += s.read(&mut buf).await.unwrap();
        }
        s
    };
    let (_s, w) = within("drain and writable", async {
        tokio::join!(drain, c.writable())
    })
    .await;
    w.unwrap();
    assert!(c.try_write(b"more").unwrap() > 0);
    assert!(!c.nodelay().unwrap());
    c.set_nodelay(true).unwrap();
    assert!(c.nodelay().unwrap());
    assert!(c.take_error().unwrap().is_none());
}

#[tokio::test]
async fn eight_megabytes_arrive_byte_exact() {
    let (a, b) = nets();
    let (mut c, mut s) = pair(&a, &b, 4003).await;
    let data = pattern(8 << 20);
    let writer = async {
        c.write_all(&data).await.unwrap();
        c.shutdown().await.unwrap();
        c
    };
    let reader = async {
        let mut got = Vec::with_capacity(data.len());
        s.read_to_end(&mut got).await.unwrap();
        got
    };
    let (_c, got) = within("8 MB", async { tokio::join!(writer, reader) }).await;
    assert_eq!(got.len(), data.len());
    assert!(got == data, "the bytes differ");
}

#[tokio::test]
async fn shutdown_delivers_end_of_stream_and_the_other_way_still_works() {
    let (a, b) = nets();
    let (mut c, mut s) = pair(&a, &b, 4004).await;
    c.write_all(b"request").await.unwrap();
    c.shutdown().await.unwrap();
    let mut got = Vec::new();
    within("EOF", s.read_to_end(&mut got)).await.unwrap();
    assert_eq!(got, b"request");
    // Half-closed: the server can still answer, and its drop ends the
    // client's stream.
    s.write_all(b"response").await.unwrap();
    drop(s);
    let mut back = Vec::new();
    within("response and EOF", c.read_to_end(&mut back))
        .await
        .unwrap();
    assert_eq!(back, b"response");
    // Writing after the shutdown is a broken pipe, as on Linux.
    let e = c.write_all(b"x").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
}

#[tokio::test]
async fn owned_halves_reunite_only_with_their_own() {
    let (a, b) = nets();
    let (c1, _s1) = pair(&a, &b, 4005).await;
    let (c2, _s2) = pair(&a, &b, 4006).await;
    let (r1, w1) = c1.into_split();
    let (r2, w2) = c2.into_split();
    let err = r1.reunite(w2).unwrap_err();
    let (r1, w2) = (err.0, err.1);
    let c1 = r1.reunite(w1).unwrap();
    let c2 = w2.reunite(r2).unwrap();
    assert_ne!(c1.local_addr().unwrap(), c2.local_addr().unwrap());
}

#[tokio::test]
async fn a_stopped_driver_fails_pending_and_later_calls() {
    let (a, b) = nets();
    let (_c, mut s) = pair(&a, &b, 4007).await;
    let mut buf = [0u8; 8];
    let read = s.read(&mut buf);
    tokio::pin!(read);
    // The read waits …
    assert!(timeout(Duration::from_millis(50), &mut read).await.is_err());
    b.shutdown();
    // … and fails once the driver is gone.
    let e = within("the read", read).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe);
    let inner = e.get_ref().and_then(|e| e.downcast_ref::<DriverError>());
    assert_eq!(inner, Some(&DriverError::Stopped));
    let e = TcpListener::bind(&b, "0.0.0.0:1").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe);
}

/// Counts its wake-ups.
struct CountingWaker(std::sync::atomic::AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_waiting_reader_is_woken_by_its_own_data_not_by_other_traffic() {
    let (a, b) = nets();
    let (quiet_c, quiet_s) = pair(&a, &b, 4008).await;
    let (mut busy_c, mut busy_s) = pair(&a, &b, 4009).await;
    let count = std::sync::Arc::new(CountingWaker(Default::default()));
    let waker = std::task::Waker::from(count.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    assert!(quiet_s.poll_read_ready(&mut cx).is_pending());
    assert!(quiet_c.poll_write_ready(&mut cx).is_ready(), "room to send");
    // A megabyte on the other connection: many polls, no wake-up here.
    let data = pattern(1 << 20);
    let (_, got) = within("the busy transfer", async {
        tokio::join!(
            async {
                busy_c.write_all(&data).await.unwrap();
                busy_c.shutdown().await.unwrap();
            },
            async {
                let mut got = Vec::new();
                busy_s.read_to_end(&mut got).await.unwrap();
                got
            }
        )
    })
    .await;
    assert_eq!(got.len(), data.len());
    assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Its own byte wakes it, once.
    quiet_c.try_write(b"!").unwrap();
    within("the wake-up", async {
        while count.0.load(std::sync::atomic::Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    assert_eq!(count.0.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(quiet_s.poll_read_ready(&mut cx).is_ready());
}

#[test]
fn streams_listeners_and_halves_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<TcpStream>();
    send_sync::<TcpListener>();
    send_sync::<pathstack::tokio::OwnedReadHalf>();
    send_sync::<pathstack::tokio::OwnedWriteHalf>();
    send_sync::<pathstack::tokio::ReadHalf<'static>>();
    send_sync::<pathstack::tokio::WriteHalf<'static>>();
}

#[tokio::test]
async fn vectored_writes_keep_the_order_of_their_slices() {
    let (a, b) = nets();
    let (mut c, mut s) = pair(&a, &b, 4010).await;
    let parts = [pattern(10), Vec::new(), pattern(70_000), b"tail".to_vec()];
    let want: Vec<u8> = parts.concat();
    let writer = async {
        let mut slices: Vec<io::IoSlice<'_>> = parts.iter().map(|p| io::IoSlice::new(p)).collect();
        let mut slices = &mut slices[..];
        assert!(tokio::io::AsyncWrite::is_write_vectored(&c));
        while !slices.is_empty() {
            let n = c.write_vectored(slices).await.unwrap();
            assert!(n > 0);
            io::IoSlice::advance_slices(&mut slices, n);
        }
        c.shutdown().await.unwrap();
    };
    let reader = async {
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got
    };
    let ((), got) = within("vectored", async { tokio::join!(writer, reader) }).await;
    assert!(got == want, "the bytes differ");
}

#[tokio::test]
async fn a_connect_nobody_answers_times_out() {
    let (a, _b) = nets();
    let fast = std::time::Duration::from_millis(100);
    let d = pathstack::inet::tcp::TcpConfig::default();
    let cfg = pathstack::inet::tcp::TcpConfig {
        syn_retries: 1,
        rto: pathstack::inet::tcp::RtoConfig {
            initial: fast,
            min: fast,
            ..d.rto
        },
        ..d
    };
    // Nobody has 10.0.0.9: the SYN and its one retransmission go
    // unanswered.
    let e = within(
        "connect",
        TcpStream::connect_with(&a, addr(Ipv4Addr::new(10, 0, 0, 9), 80), Some(cfg)),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
}
