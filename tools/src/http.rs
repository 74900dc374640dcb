//! An HTTP/1.1 server written with hyper on pathstack's tokio TCP streams,
//! on a TAP device: hyper 1.x serves each accepted
//! [`pathstack::tokio::TcpStream`] through `hyper_util`'s `TokioIo`,
//! exactly as it would a `tokio::net::TcpStream`.
//!
//! ```text
//! cargo run --release -p pathstack-tools --bin http -- --tap NAME --ip ADDR/PREFIX \
//!     [--netns NS] [--port 80] [--gateway ADDR] [--seconds S]
//! ```
//!
//! It serves
//!
//! - `/`: a small HTML page;
//! - `/bytes/N`: `N` pseudo-random bytes, the same for the same `N`
//!   ([`fill`]), streamed in chunks of [`CHUNK`] bytes (the body is never
//!   whole in memory, so `N` may be any size), with `Content-Length: N`.
//!
//! The TAP device is created if absent (as root); with `--netns` it is
//! opened inside that network namespace (see `scripts/netns.sh`). From the
//! peer side:
//!
//! ```text
//! curl http://10.77.1.1/
//! curl -o /dev/null -w '%{speed_download}\n' http://10.77.1.1/bytes/1073741824
//! ```
//!
//! On SIGINT/SIGTERM (or after `--seconds`) it prints how many connections
//! it served and the stack's statistics.

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use pathstack::tokio::{Net, TcpListener};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};

/// Bytes per chunk of a `/bytes/N` body: a multiple of 8 (see [`fill`]).
pub const CHUNK: usize = 64 * 1024;

/// The page at `/`.
pub const PAGE: &str = "<!DOCTYPE html>
<html>
<head><title>pathstack</title></head>
<body>
<h1>Hello from pathstack</h1>
<p>This page came over a user-space TCP/IP stack, served by hyper.</p>
<p><a href=\"/bytes/1048576\">A megabyte of pseudo-random bytes</a></p>
</body>
</html>
";

/// The body type of every response.
type Body = BoxBody<Bytes, Infallible>;

/// Fills `buf` with the bytes of `/bytes/{n}` from `offset` on. Byte `i`
/// is byte `i % 8` (little-endian) of SplitMix64's output for word
/// `i / 8` of a sequence seeded by `n`, so any range can be made on its
/// own: the body is generated chunk by chunk.
pub fn fill(n: u64, offset: u64, buf: &mut [u8]) {
    let skip = (offset % 8) as usize;
    let mut w = offset / 8;
    let mut rest = buf;
    if skip != 0 {
        // The end of the word `offset` falls in.
        let head = (8 - skip).min(rest.len());
        rest[..head].copy_from_slice(&word(n, w).to_le_bytes()[skip..skip + head]);
        rest = &mut rest[head..];
        w += 1;
    }
    fill_words(n, w, rest);
}

/// [`fill`] from word `w` on (`buf` starts on a word boundary).
fn fill_words(n: u64, mut w: u64, buf: &mut [u8]) {
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&word(n, w).to_le_bytes());
        w += 1;
    }
    let tail = chunks.into_remainder();
    let last = word(n, w).to_le_bytes();
    tail.copy_from_slice(&last[..tail.len()]);
}

/// SplitMix64 (Steele, Lea, Flood 2014) of word `w` of body `n`.
fn word(n: u64, w: u64) -> u64 {
    let mut z = n
        .wrapping_mul(0xA24B_AED4_963E_E407)
        .wrapping_add(w.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A response with a fixed body.
fn full(status: StatusCode, kind: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

/// `n` bytes of [`fill`], made a chunk at a time as hyper asks for them.
fn bytes_body(n: u64) -> Response<Body> {
    let chunks = stream::unfold(0u64, move |offset| async move {
        if offset >= n {
            return None;
        }
        let len = (n - offset).min(CHUNK as u64) as usize;
        let mut chunk = vec![0u8; len];
        fill(n, offset, &mut chunk);
        let frame: Result<_, Infallible> = Ok(Frame::data(Bytes::from(chunk)));
        Some((frame, offset + len as u64))
    });
    let mut r = Response::new(BodyExt::boxed(StreamBody::new(chunks)));
    let headers = r.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    // Set, so that hyper sends the length rather than chunked encoding.
    headers.insert(CONTENT_LENGTH, HeaderValue::from(n));
    r
}

/// Answers one request.
pub async fn respond(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    if req.method() != Method::GET {
        return Ok(full(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "only GET\n",
        ));
    }
    let path = req.uri().path();
    Ok(if path == "/" {
        full(StatusCode::OK, "text/html; charset=utf-8", PAGE)
    } else if let Some(n) = path.strip_prefix("/bytes/") {
        match n.parse::<u64>() {
            Ok(n) => bytes_body(n),
            Err(_) => full(
                StatusCode::BAD_REQUEST,
                "text/plain",
                "/bytes/N wants a byte count\n",
            ),
        }
    } else {
        full(StatusCode::NOT_FOUND, "text/plain", "not found\n")
    })
}

/// Serves HTTP/1.1 (keep-alive) on `port` of `net` until `stop` resolves:
/// a task per connection. Returns how many connections it accepted.
pub async fn serve(net: &Net, port: u16, stop: impl Future<Output = ()>) -> io::Result<u64> {
    let listener = TcpListener::bind(net, SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port)).await?;
    tokio::pin!(stop);
    let mut accepted = 0u64;
    loop {
        let (stream, peer) = tokio::select! {
            got = listener.accept() => got?,
            () = &mut stop => return Ok(accepted),
        };
        accepted += 1;
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(respond));
            if let Err(e) = conn.await {
                eprintln!("http: connection from {peer}: {e}");
            }
        });
    }
}
