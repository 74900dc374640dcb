//! The kernel TCP client ([`kernel_client`]): sends a deterministic
//! payload while reading, and reports what came back.

use super::counters::{ss_in, SsInfo};
use super::netns_socket::{kernel_connect, set_timeouts, IO_TIMEOUT};
use super::payload::{read_to_end_hashed, write_pattern, Transfer};
use crate::Topology;
use std::io;
use std::net::{Shutdown, SocketAddr};
use std::thread;
use std::time::{Duration, Instant};
// Client

/// What [`kernel_client`] does.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Bytes to send: the first `len` bytes of the stream of `seed`.
    pub len: u64,
    /// The stream's seed ([`pattern_bytes`](super::pattern_bytes)).
    pub seed: u64,
    /// The whole exchange (connect, send, read to EOF) must end within this.
    pub timeout: Duration,
    /// Run `ss -tin` in the client's namespace after the last byte was
    /// written and before the write side is shut down, and keep this
    /// connection's line ([`ClientReport::ss`]): the sender's retransmission
    /// account, which `ss` no longer shows once the connection has closed.
    pub ss_before_close: bool,
}

impl ClientOptions {
    /// Send `len` bytes of the stream of `seed`, within 30 s, no `ss`.
    pub fn new(len: u64, seed: u64) -> ClientOptions {
        ClientOptions {
            len,
            seed,
            timeout: Duration::from_secs(30),
            ss_before_close: false,
        }
    }
}

/// What [`kernel_client`] saw.
#[derive(Clone, Debug)]
pub struct ClientReport {
    /// The client's own address.
    pub local: SocketAddr,
    /// Bytes sent (always `len` on success).
    pub sent: u64,
    /// What the client read until the server's EOF.
    pub received: Transfer,
    /// `ss -tin`'s line for this connection before the write side was shut
    /// down (when asked for with [`ClientOptions::ss_before_close`] and
    /// found).
    pub ss: Option<SsInfo>,
    /// Connect to EOF.
    pub elapsed: Duration,
}

/// A kernel TCP client in namespace `ns_key`: connects to `addr`, sends
/// `opts.len` deterministic bytes while concurrently reading, shuts down its
/// write side, reads until the server's EOF and reports what it read. An
/// echo server's answer equals [`Transfer::pattern`]`(seed, len)`; a sink
/// answers nothing; a source answers its own pattern.
pub fn kernel_client(
    topo: &Topology,
    ns_key: &str,
    addr: SocketAddr,
    opts: &ClientOptions,
) -> io::Result<ClientReport> {
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let stream = kernel_connect(topo, ns_key, addr, opts.timeout)?;
    let io_timeout = IO_TIMEOUT.min(opts.timeout);
    set_timeouts(&stream, io_timeout)?;
    let local = stream.local_addr()?;
    let mut reader = stream.try_clone()?;
    let read = thread::Builder::new()
        .name(format!("kernel-client-read-{local}"))
        .spawn(move || read_to_end_hashed(&mut reader, Some(deadline)))
        .expect("spawn the client's reader");
    let mut writer = stream;
    let (seed, len) = (opts.seed, opts.len);
    let written = write_pattern(&mut writer, seed, len, Some(deadline));
    let ss = if written.is_ok() && opts.ss_before_close {
        let ns = topo.var(ns_key).to_string();
        ss_in(&ns)
            .ok()
            .and_then(|v| v.into_iter().find(|i| i.local == local.to_string()))
    } else {
        None
    };
    let shut = writer.shutdown(Shutdown::Write);
    if written.is_err() {
        // Unblock the reader too.
        let _ = writer.shutdown(Shutdown::Both);
    }
    let received = read
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("client reader panicked")));
    written?;
    shut?;
    let received = received?;
    Ok(ClientReport {
        local,
        sent: len,
        received,
        ss,
        elapsed: start.elapsed(),
    })
}
