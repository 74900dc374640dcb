//! The hyper server of `pathstack_tools::http` (`tools/src/http.rs`), as a user writes it (hyper's
//! defaults, Nagle on), against a hyper client on a second pathstack host
//! over the in-memory wire. Both hosts delay their ACKs (40 ms, Linux's
//! minimum), as a Linux client does: a response that left in two pieces,
//! the second held by Nagle until the first was acknowledged, cost a
//! delayed-ACK timer per request (issue 25: 22 requests/s per
//! connection). Here 200 sequential requests on one keep-alive connection
//! must take well under a second.
#![cfg(feature = "tokio")]

use pathstack_tools::http;

#[path = "support/wire_nets.rs"]
mod wire_nets;

use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;
use pathstack::tokio::TcpStream;
use std::time::{Duration, Instant};
use tokio::time::timeout;
use wire_nets::{addr, nets, B};

const REQUESTS: usize = 200;

/// The delayed-ACK timer both hosts run with (`TcpConfig::delayed_ack`).
const DELAYED_ACK: Duration = Duration::from_millis(40);

#[tokio::test]
async fn sequential_requests_on_one_connection_never_wait_for_a_delayed_ack() {
    let (a, b) = nets();
    let delack = pathstack::inet::tcp::TcpConfig::default().delayed_ack;
    assert_eq!(
        delack, DELAYED_ACK,
        "the hosts delay their ACKs as Linux does"
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        http::serve(&b, 80, async {
            let _ = stop_rx.await;
        })
        .await
    });
    let stream = timeout(Duration::from_secs(10), TcpStream::connect(&a, addr(B, 80)))
        .await
        .expect("connect in time")
        .expect("connect");
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);

    let mut slowest = Duration::ZERO;
    let start = Instant::now();
    for i in 0..REQUESTS {
        let t = Instant::now();
        let req = Request::get("/")
            .header("host", "10.0.0.2")
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        let resp = timeout(Duration::from_secs(10), send.send_request(req))
            .await
            .unwrap_or_else(|_| panic!("request {i}: no response in 10 s"))
            .expect("a response");
        assert_eq!(resp.status(), 200, "request {i}");
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        assert_eq!(body, http::PAGE.as_bytes(), "request {i}");
        slowest = slowest.max(t.elapsed());
    }
    let took = start.elapsed();
    // Before the fix every request waited for a delayed ACK: 200 × 40 ms
    // = 8 s. Three seconds is far above what the exchange needs
    // (milliseconds in all; about a second in a debug build on a machine
    // loaded tenfold) and still fails if more than a third of the requests
    // wait for the timer.
    assert!(
        took < Duration::from_secs(3),
        "{REQUESTS} requests took {took:?} (slowest {slowest:?}): they wait for delayed ACKs"
    );
    stop_tx.send(()).unwrap();
    let accepted = server.await.unwrap().expect("serve");
    assert_eq!(accepted, 1, "one keep-alive connection");
}
