//! The Linux kernel's side of the TCP interop tests (pathstack ↔ kernel
//! over TAP): kernel TCP endpoints run inside a [`Topology`]'s namespaces,
//! deterministic payloads that are hashed while streaming, network
//! conditions (random loss, per-namespace sysctls) and the kernel's own
//! account of a connection (`ss -tin`, `/proc/net/snmp`) and captures
//! (tshark's TCP analysis).
//!
//! # Kernel endpoints in a namespace
//!
//! A socket belongs to the network namespace it was *created* in, whatever
//! thread later uses it. [`kernel_listen`] and [`kernel_connect`] create the
//! socket on a short-lived thread that has entered the namespace with
//! `setns(2)` (only that thread moves; the test process stays where it
//! is), and hand it back. The servers ([`KernelEchoServer`],
//! [`KernelSinkServer`], [`KernelSourceServer`]) and the client
//! ([`kernel_client`]) are built on them. Every socket has read and write
//! timeouts ([`IO_TIMEOUT`] unless told otherwise), so a hung peer fails
//! the test instead of hanging it.
//!
//! # Payloads
//!
//! [`pattern_bytes`] fills a buffer with the bytes at `offset..` of the
//! deterministic stream of `seed`; both ends generate and hash on the fly
//! ([`pattern_sha256`] computes the digest of the first `len` bytes without
//! any socket), so 100 MB never has to sit in memory.

use crate::output::text;
use crate::privilege::has_net_admin;
use crate::tshark::{assert_tshark_clean, have_tshark, tshark_frames};
use crate::Topology;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The default read/write timeout of every socket made here: a peer that
/// makes no progress for this long fails the operation.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// A SHA-256 digest.
pub type Sha256Digest = [u8; 32];

/// Size of the buffers the endpoints stream through.
const CHUNK: usize = 64 * 1024;

// ---------------------------------------------------------------------------
// Payloads

/// Fills `buf` with the bytes at `offset..offset + buf.len()` of the
/// deterministic pseudo-random stream of `seed`.
///
/// Byte `i` of the stream is byte `i % 8` (little endian) of a xorshift-
/// multiply mix of `seed` and the word index `i / 8`, so any window of the
/// stream can be generated without its prefix.
pub fn pattern_bytes(seed: u64, offset: u64, buf: &mut [u8]) {
    #[inline]
    fn word(seed: u64, index: u64) -> [u8; 8] {
        let mut x = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        x ^= x >> 30;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x ^= x >> 27;
        x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^= x >> 31;
        x.to_le_bytes()
    }
    let mut pos = offset;
    let mut out = buf;
    // A leading partial word.
    let skip = (pos % 8) as usize;
    if skip != 0 && !out.is_empty() {
        let w = word(seed, pos / 8);
        let n = (8 - skip).min(out.len());
        out[..n].copy_from_slice(&w[skip..skip + n]);
        out = &mut out[n..];
        pos += n as u64;
    }
    let mut chunks = out.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&word(seed, pos / 8));
        pos += 8;
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let n = rest.len();
        rest.copy_from_slice(&word(seed, pos / 8)[..n]);
    }
}

/// The SHA-256 of the first `len` bytes of the stream of `seed`
/// ([`pattern_bytes`]): what a peer that received them reports.
pub fn pattern_sha256(seed: u64, len: u64) -> Sha256Digest {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    while off < len {
        let n = (len - off).min(CHUNK as u64) as usize;
        pattern_bytes(seed, off, &mut buf[..n]);
        h.update(&buf[..n]);
        off += n as u64;
    }
    h.finalize().into()
}

/// What one end read from a connection: the byte count and their SHA-256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// Bytes read until EOF.
    pub bytes: u64,
    /// SHA-256 of those bytes.
    pub sha256: Sha256Digest,
}

impl Transfer {
    /// The transfer of the first `len` bytes of the stream of `seed`.
    pub fn pattern(seed: u64, len: u64) -> Transfer {
        Transfer {
            bytes: len,
            sha256: pattern_sha256(seed, len),
        }
    }
}

/// Reads `s` until EOF, hashing; fails if the total time exceeds `deadline`.
fn read_to_end_hashed(s: &mut TcpStream, deadline: Option<Instant>) -> io::Result<Transfer> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut bytes = 0u64;
    loop {
        check_deadline(deadline, "reading")?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                bytes += n as u64;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(annotate(e, format!("after reading {bytes} bytes"))),
        }
    }
    Ok(Transfer {
        bytes,
        sha256: h.finalize().into(),
    })
}

/// Writes the first `len` bytes of the stream of `seed` to `s`.
fn write_pattern(
    s: &mut TcpStream,
    seed: u64,
    len: u64,
    deadline: Option<Instant>,
) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    let mut off = 0u64;
    while off < len {
        check_deadline(deadline, "writing")?;
        let n = (len - off).min(CHUNK as u64) as usize;
        pattern_bytes(seed, off, &mut buf[..n]);
        s.write_all(&buf[..n])
            .map_err(|e| annotate(e, format!("after writing {off} of {len} bytes")))?;
        off += n as u64;
    }
    Ok(())
}

fn check_deadline(deadline: Option<Instant>, what: &str) -> io::Result<()> {
    match deadline {
        Some(d) if Instant::now() > d => Err(io::Error::new(
            ErrorKind::TimedOut,
            format!("deadline passed while {what}"),
        )),
        _ => Ok(()),
    }
}

fn annotate(e: io::Error, context: String) -> io::Error {
    if e.kind() == ErrorKind::WouldBlock {
        // What SO_RCVTIMEO / SO_SNDTIMEO report.
        return io::Error::new(
            ErrorKind::TimedOut,
            format!("timed out: the peer made no progress ({context})"),
        );
    }
    io::Error::new(e.kind(), format!("{e} ({context})"))
}

fn set_timeouts(s: &TcpStream, t: Duration) -> io::Result<()> {
    s.set_read_timeout(Some(t))?;
    s.set_write_timeout(Some(t))
}

// ---------------------------------------------------------------------------
// Sockets in a namespace

/// Runs `f` on a new thread that has first entered the network namespace
/// `ns_key` ("NS_A" or "NS_B") of `topo` with `setns(2)`; only that thread
/// moves. Sockets `f` creates stay in that namespace wherever they are
/// used later.
pub fn spawn_in_netns<T, F>(topo: &Topology, ns_key: &str, f: F) -> JoinHandle<io::Result<T>>
where
    T: Send + 'static,
    F: FnOnce() -> io::Result<T> + Send + 'static,
{
    let path = format!("/run/netns/{}", topo.var(ns_key));
    thread::Builder::new()
        .name(format!("netns-{}", topo.var(ns_key)))
        .spawn(move || {
            let ns = File::open(&path).map_err(|e| annotate(e, format!("open {path}")))?;
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                .map_err(|e| io::Error::other(format!("setns({path}): {e}")))?;
            f()
        })
        .expect("spawn a thread")
}

fn join<T>(h: JoinHandle<io::Result<T>>) -> io::Result<T> {
    h.join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
}

/// A listening kernel socket bound to `addr` inside namespace `ns_key`
/// (port 0: the kernel picks one; see `local_addr`).
pub fn kernel_listen(topo: &Topology, ns_key: &str, addr: SocketAddr) -> io::Result<TcpListener> {
    join(spawn_in_netns(topo, ns_key, move || {
        TcpListener::bind(addr).map_err(|e| annotate(e, format!("bind {addr}")))
    }))
}

/// A kernel TCP connection from namespace `ns_key` to `addr`, connected
/// within `timeout`, with read/write timeouts of [`IO_TIMEOUT`].
pub fn kernel_connect(
    topo: &Topology,
    ns_key: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> io::Result<TcpStream> {
    join(spawn_in_netns(topo, ns_key, move || {
        let s = TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| annotate(e, format!("connect {addr}")))?;
        set_timeouts(&s, IO_TIMEOUT)?;
        Ok(s)
    }))
}

// ---------------------------------------------------------------------------
// Servers

/// The machinery shared by the servers: an accept loop on its own thread,
/// one thread per connection, results over a channel, everything stopped
/// on drop.
struct Server<R: Send + 'static> {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<HashMap<u32, TcpStream>>>,
    accept: Option<JoinHandle<()>>,
    results: Mutex<Receiver<io::Result<R>>>,
    accepted: Arc<AtomicU32>,
}

impl<R: Send + 'static> Server<R> {
    fn start<H>(topo: &Topology, ns_key: &str, addr: SocketAddr, handler: H) -> Server<R>
    where
        H: Fn(TcpStream) -> io::Result<R> + Send + Sync + 'static,
    {
        let listener = kernel_listen(topo, ns_key, addr)
            .unwrap_or_else(|e| panic!("kernel listener on {addr} in {ns_key}: {e}"));
        let addr = listener.local_addr().expect("listener address");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(Mutex::new(HashMap::new()));
        let accepted = Arc::new(AtomicU32::new(0));
        let (tx, results) = mpsc::channel();
        let handler = Arc::new(handler);
        let accept = {
            let (stop, conns, accepted) = (stop.clone(), conns.clone(), accepted.clone());
            thread::Builder::new()
                .name(format!("kernel-server-{addr}"))
                .spawn(move || accept_loop(listener, stop, conns, accepted, tx, handler))
                .expect("spawn the accept thread")
        };
        Server {
            addr,
            stop,
            conns,
            accept: Some(accept),
            results: Mutex::new(results),
            accepted,
        }
    }

    fn next(&self, timeout: Duration) -> io::Result<R> {
        match self.results.lock().unwrap().recv_timeout(timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(io::Error::new(
                ErrorKind::TimedOut,
                format!(
                    "no connection to {} finished within {timeout:?} ({} accepted so far)",
                    self.addr,
                    self.accepted.load(Ordering::Relaxed)
                ),
            )),
            Err(RecvTimeoutError::Disconnected) => {
                Err(io::Error::other("the server's accept loop ended"))
            }
        }
    }
}

fn accept_loop<R, H>(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<HashMap<u32, TcpStream>>>,
    accepted: Arc<AtomicU32>,
    tx: Sender<io::Result<R>>,
    handler: Arc<H>,
) where
    R: Send + 'static,
    H: Fn(TcpStream) -> io::Result<R> + Send + Sync + 'static,
{
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, peer)) => {
                let id = accepted.fetch_add(1, Ordering::Relaxed);
                let setup = s
                    .set_nonblocking(false)
                    .and_then(|()| set_timeouts(&s, IO_TIMEOUT))
                    .and_then(|()| s.try_clone());
                let clone = match setup {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        continue;
                    }
                };
                conns.lock().unwrap().insert(id, clone);
                let (tx, handler, conns) = (tx.clone(), handler.clone(), conns.clone());
                let spawned = thread::Builder::new()
                    .name(format!("kernel-conn-{peer}"))
                    .spawn(move || {
                        let r =
                            handler(s).map_err(|e| annotate(e, format!("connection from {peer}")));
                        // Close the connection (also after an error, so the
                        // peer notices): drop the last handle.
                        if let Some(c) = conns.lock().unwrap().remove(&id) {
                            if r.is_err() {
                                let _ = c.shutdown(Shutdown::Both);
                            }
                        }
                        let _ = tx.send(r);
                    });
                if let Err(e) = spawned {
                    eprintln!("kernel server: cannot spawn a connection thread: {e}");
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                thread::sleep(Duration::from_millis(2));
            }
            Err(e) => {
                let _ = tx.send(Err(annotate(e, "accept".into())));
                thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl<R: Send + 'static> Drop for Server<R> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Unblock the connection threads; they end on the error.
        for (_, c) in self.conns.lock().unwrap().drain() {
            let _ = c.shutdown(Shutdown::Both);
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A kernel TCP echo server inside a namespace: accepts any number of
/// connections concurrently (one thread each) and writes back everything
/// it reads until the peer's EOF, then closes. Stopped on drop.
pub struct KernelEchoServer(Server<u64>);

impl KernelEchoServer {
    /// Listens on `addr` (port 0: any) inside namespace `ns_key` of `topo`.
    pub fn start(topo: &Topology, ns_key: &str, addr: SocketAddr) -> KernelEchoServer {
        KernelEchoServer(Server::start(topo, ns_key, addr, |mut s: TcpStream| {
            let mut buf = vec![0u8; CHUNK];
            let mut total = 0u64;
            loop {
                let n = match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(annotate(e, format!("echo read after {total} bytes"))),
                };
                s.write_all(&buf[..n])
                    .map_err(|e| annotate(e, format!("echo write after {total} bytes")))?;
                total += n as u64;
            }
            s.shutdown(Shutdown::Write)?;
            Ok(total)
        }))
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.0.addr
    }

    /// Waits up to `timeout` for the next connection to end; returns the
    /// number of bytes it echoed, or its error.
    pub fn next(&self, timeout: Duration) -> io::Result<u64> {
        self.0.next(timeout)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u32 {
        self.0.accepted.load(Ordering::Relaxed)
    }
}

/// A kernel TCP sink inside a namespace: accepts connections concurrently
/// and reads each until EOF, reporting the byte count and SHA-256 of what
/// it read ([`KernelSinkServer::next`]). Stopped on drop.
pub struct KernelSinkServer(Server<Transfer>);

impl KernelSinkServer {
    /// Listens on `addr` (port 0: any) inside namespace `ns_key` of `topo`.
    pub fn start(topo: &Topology, ns_key: &str, addr: SocketAddr) -> KernelSinkServer {
        KernelSinkServer(Server::start(topo, ns_key, addr, |mut s: TcpStream| {
            read_to_end_hashed(&mut s, None)
        }))
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.0.addr
    }

    /// Waits up to `timeout` for the next connection to reach EOF; returns
    /// what it read, or its error.
    pub fn next(&self, timeout: Duration) -> io::Result<Transfer> {
        self.0.next(timeout)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u32 {
        self.0.accepted.load(Ordering::Relaxed)
    }
}

/// A kernel TCP source inside a namespace: on each connection it sends the
/// first `len` bytes of the stream of `seed` ([`pattern_bytes`]), then
/// closes; it reads and discards whatever the peer sends meanwhile. The
/// receiver checks against [`Transfer::pattern`]`(seed, len)`. Stopped on drop.
pub struct KernelSourceServer(Server<u64>);

impl KernelSourceServer {
    /// Listens on `addr` (port 0: any) inside namespace `ns_key` of `topo`.
    pub fn start(
        topo: &Topology,
        ns_key: &str,
        addr: SocketAddr,
        len: u64,
        seed: u64,
    ) -> KernelSourceServer {
        KernelSourceServer(Server::start(
            topo,
            ns_key,
            addr,
            move |mut s: TcpStream| {
                // Drain the peer so that it never blocks on a full window.
                let mut rd = s.try_clone()?;
                let drain = thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while matches!(rd.read(&mut buf), Ok(n) if n > 0) {}
                });
                write_pattern(&mut s, seed, len, None)?;
                s.shutdown(Shutdown::Write)?;
                let _ = drain.join();
                Ok(len)
            },
        ))
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.0.addr
    }

    /// Waits up to `timeout` for the next connection to be served; returns
    /// the bytes it sent, or its error.
    pub fn next(&self, timeout: Duration) -> io::Result<u64> {
        self.0.next(timeout)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u32 {
        self.0.accepted.load(Ordering::Relaxed)
    }
}

// ---------------------------------------------------------------------------
// Client

/// What [`kernel_client`] does.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Bytes to send: the first `len` bytes of the stream of `seed`.
    pub len: u64,
    /// The stream's seed ([`pattern_bytes`]).
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

// ---------------------------------------------------------------------------
// nftables loss

static NEXT_GUARD: AtomicU32 = AtomicU32::new(0);

/// Random loss of TCP/IPv4 frames in a namespace, removed on drop.
///
/// An nftables table of its own (`bridge` family, name unique to this
/// process) drops `percent`% of the TCP/IPv4 frames, chosen at random
/// (`numgen random mod 100 < P`), at the namespace's bridge on all three
/// hooks: frames delivered to the kernel (input), sent by the kernel
/// (output) and forwarded between the bridge's ports (the TAP and the veth
/// to the other namespace). So in namespace A it drops on the wire between
/// a pathstack host on TAP_A and either kernel; in namespace B it drops
/// between kernel B and everything else.
///
/// Dropping at the bridge, after the IP layer handed the frame to the
/// device, is real loss: the sender's TCP believes the segment was sent and
/// must retransmit. (An `inet` output-hook drop is not: the kernel sees a
/// local send error and simply sends the data again later, with no
/// retransmission counted.) Note that the kernel's segments cross veths
/// and bridges as GSO super-packets of up to 64 KB, so between two kernels
/// one random drop can lose many MSS-sized segments at once; frames to and
/// from a TAP are single segments.
pub struct Loss {
    ns: String,
    table: String,
}

impl Loss {
    /// Installs `percent`% (0-100) random TCP loss in namespace `ns_key`.
    pub fn new(topo: &Topology, ns_key: &str, percent: u32) -> Loss {
        Self::install(
            topo,
            ns_key,
            percent,
            "ip protocol tcp ",
            &[
                ("loss_in", "input"),
                ("loss_fwd", "forward"),
                ("loss_out", "output"),
            ],
        )
    }

    /// Installs `percent`% (0-100) random loss of every frame the bridge
    /// of namespace `ns_key` forwards, whatever its EtherType (between the
    /// TAP and the veth, both ways): for protocols other than TCP, such
    /// as the RPC stack's BLAST and BIDCTL directly on Ethernet.
    pub fn any_frame(topo: &Topology, ns_key: &str, percent: u32) -> Loss {
        Self::install(topo, ns_key, percent, "", &[("loss_fwd", "forward")])
    }

    /// An nftables table (family `bridge`) with one chain per hook, each
    /// dropping `percent`% of the frames `matching` selects.
    fn install(
        topo: &Topology,
        ns_key: &str,
        percent: u32,
        matching: &str,
        hooks: &[(&str, &str)],
    ) -> Loss {
        assert!(percent <= 100, "loss percentage {percent} > 100");
        let table = format!(
            "pst_loss_{}_{}",
            std::process::id(),
            NEXT_GUARD.fetch_add(1, Ordering::Relaxed)
        );
        let rule = format!("{matching}numgen random mod 100 < {percent} counter drop");
        let mut script = format!("table bridge {table} {{\n");
        for (chain, hook) in hooks {
            script += &format!(
                "  chain {chain} {{ type filter hook {hook} priority 0; policy accept; {rule}; }}\n"
            );
        }
        script += "}\n";
        // The guard first, so that a half-made table is removed too.
        let guard = Loss {
            ns: topo.var(ns_key).to_string(),
            table,
        };
        let out = run_with_stdin(&guard.ns, &["nft", "-f", "-"], &script);
        assert!(
            out.status.success(),
            "nft could not install the loss table:\n{script}\n{}",
            text(&out)
        );
        guard
    }

    /// Frames dropped so far (all hooks).
    pub fn dropped(&self) -> u64 {
        let out = ns_output(&self.ns, &["nft", "list", "table", "bridge", &self.table]);
        parse_nft_counter_packets(&out)
    }

    /// The name of the nftables table (family `bridge`).
    pub fn table(&self) -> &str {
        &self.table
    }
}

impl Drop for Loss {
    fn drop(&mut self) {
        // If the namespace is already gone, so is the table.
        let _ = std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "nft",
                "delete",
                "table",
                "bridge",
                &self.table,
            ])
            .output();
    }
}

/// The sum of the `counter packets N` of an `nft list` output.
fn parse_nft_counter_packets(listing: &str) -> u64 {
    let mut sum = 0;
    let mut words = listing.split_whitespace();
    while let Some(w) = words.next() {
        if w == "packets" {
            sum += words
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    sum
}

fn run_with_stdin(ns: &str, argv: &[&str], input: &str) -> std::process::Output {
    use std::process::{Command, Stdio};
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {argv:?} in {ns}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Runs `argv` in namespace `ns` (its name, not key), returns stdout;
/// panics with the output on failure.
fn ns_output(ns: &str, argv: &[&str]) -> String {
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .output()
        .unwrap_or_else(|e| panic!("run {argv:?} in {ns}: {e}"));
    assert!(o.status.success(), "{argv:?} in {ns} failed:\n{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

// ---------------------------------------------------------------------------
// sysctl

/// A `net.*` sysctl set inside a namespace (`ip netns exec NS sysctl -w`),
/// its old value restored on drop. Only `net.*` keys: most of them are
/// per-namespace (`net.ipv4.tcp_sack`, `net.ipv4.tcp_timestamps`,
/// `net.ipv4.tcp_window_scaling`, ...), other keys would change the host.
pub struct NsSysctl {
    ns: String,
    key: String,
    old: String,
}

impl NsSysctl {
    /// Sets `key` to `value` in namespace `ns_key`.
    pub fn set(topo: &Topology, ns_key: &str, key: &str, value: &str) -> NsSysctl {
        assert!(
            key.starts_with("net."),
            "NsSysctl sets only net.* keys, not {key}"
        );
        let ns = topo.var(ns_key).to_string();
        let old = sysctl_get(&ns, key);
        ns_output(&ns, &["sysctl", "-q", "-w", &format!("{key}={value}")]);
        NsSysctl {
            ns,
            key: key.to_string(),
            old,
        }
    }

    /// The value before [`NsSysctl::set`], restored on drop.
    pub fn old(&self) -> &str {
        &self.old
    }
}

impl Drop for NsSysctl {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "exec", &self.ns, "sysctl", "-q", "-w"])
            .arg(format!("{}={}", self.key, self.old))
            .output();
    }
}

/// The value of sysctl `key` in namespace `ns_key` (`sysctl -n`, trimmed).
pub fn ns_sysctl(topo: &Topology, ns_key: &str, key: &str) -> String {
    sysctl_get(topo.var(ns_key), key)
}

fn sysctl_get(ns: &str, key: &str) -> String {
    ns_output(ns, &["sysctl", "-n", key]).trim().to_string()
}

// ---------------------------------------------------------------------------
// ss and /proc/net/snmp

/// One TCP socket as `ss -tin` shows it. Counters `ss` did not print
/// (it omits zeros and fields of states that have none) are 0.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SsInfo {
    /// State column (`ESTAB`, `SYN-SENT`, `FIN-WAIT-1`, ...).
    pub state: String,
    /// Local address as printed (`10.77.1.2:41200`).
    pub local: String,
    /// Peer address as printed.
    pub peer: String,
    /// `retrans:a/b`, a: segments being retransmitted now (unacked).
    pub retrans_now: u64,
    /// `retrans:a/b`, b: the connection's total retransmissions.
    pub retrans_total: u64,
    /// `bytes_retrans`.
    pub bytes_retrans: u64,
    /// `segs_out`.
    pub segs_out: u64,
    /// `data_segs_out`.
    pub data_segs_out: u64,
    /// `lost`: segments the sender currently considers lost.
    pub lost: u64,
    /// `sacked`: segments SACKed (without SACK: the duplicate ACKs counted).
    pub sacked: u64,
    /// `dsack_dups`: retransmissions the receiver reported as duplicates.
    pub dsack_dups: u64,
    /// The option flag `sack` was printed. Note that the `ss` of iproute2
    /// 6.1 on some kernels prints neither `ts` nor `sack`; do not rely on
    /// its presence, only on its absence.
    pub sack: bool,
    /// The option flag `ts` (timestamps) was printed.
    pub timestamps: bool,
    /// Every `key:value` of the info line, as printed.
    pub fields: HashMap<String, String>,
}

/// The TCP sockets of namespace `ns_key` with their retransmission counters:
/// runs `ss -tin` there and parses it ([`parse_ss`]).
pub fn ss_retransmissions(topo: &Topology, ns_key: &str) -> Vec<SsInfo> {
    ss_in(topo.var(ns_key)).unwrap_or_else(|e| panic!("ss -tin in {ns_key}: {e}"))
}

fn ss_in(ns: &str) -> io::Result<Vec<SsInfo>> {
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "ss", "-tin"])
        .output()?;
    if !o.status.success() {
        return Err(io::Error::other(text(&o)));
    }
    Ok(parse_ss(&String::from_utf8_lossy(&o.stdout)))
}

/// Parses the output of `ss -tin` (with or without the header line, with
/// or without the state column): a socket line, then its indented info line.
pub fn parse_ss(output: &str) -> Vec<SsInfo> {
    let mut v: Vec<SsInfo> = Vec::new();
    for line in output.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            if let Some(info) = v.last_mut() {
                parse_ss_info(info, line);
            }
            continue;
        }
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.first() == Some(&"State") || cols.first() == Some(&"Recv-Q") {
            continue; // Header.
        }
        // State Recv-Q Send-Q Local Peer [Process], the state column
        // absent when a state filter was given.
        let has_state = cols.first().is_some_and(|c| c.parse::<u64>().is_err());
        let rest = if has_state { &cols[1..] } else { &cols[..] };
        if rest.len() < 4 {
            continue;
        }
        v.push(SsInfo {
            state: if has_state {
                cols[0].to_string()
            } else {
                String::new()
            },
            local: rest[2].to_string(),
            peer: rest[3].to_string(),
            ..SsInfo::default()
        });
    }
    v
}

fn parse_ss_info(info: &mut SsInfo, line: &str) {
    // Skip the parenthesised groups (`bbr:(bw:...,mrtt:...)`), whose inner
    // keys are not the connection's.
    let mut depth = 0usize;
    let mut flat = String::with_capacity(line.len());
    for ch in line.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => flat.push(ch),
            _ => {}
        }
    }
    for tok in flat.split_whitespace() {
        match tok.split_once(':') {
            Some((k, val)) => {
                info.fields.insert(k.to_string(), val.to_string());
                let num = || val.parse::<u64>().unwrap_or(0);
                match k {
                    "retrans" => {
                        let (a, b) = val.split_once('/').unwrap_or(("0", val));
                        info.retrans_now = a.parse().unwrap_or(0);
                        info.retrans_total = b.parse().unwrap_or(0);
                    }
                    "bytes_retrans" => info.bytes_retrans = num(),
                    "segs_out" => info.segs_out = num(),
                    "data_segs_out" => info.data_segs_out = num(),
                    "lost" => info.lost = num(),
                    "sacked" => info.sacked = num(),
                    "dsack_dups" => info.dsack_dups = num(),
                    _ => {}
                }
            }
            None => match tok {
                "sack" => info.sack = true,
                "ts" => info.timestamps = true,
                _ => {}
            },
        }
    }
}

/// The namespace-wide TCP counters of `/proc/net/snmp` (the `Tcp:` lines;
/// `nstat`'s `TcpOutSegs`, `TcpRetransSegs`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpSnmp {
    /// `OutSegs`: segments sent, retransmissions excluded.
    pub out_segs: u64,
    /// `RetransSegs`: segments retransmitted.
    pub retrans_segs: u64,
    /// `InSegs`: segments received.
    pub in_segs: u64,
    /// `InErrs`: segments received in error.
    pub in_errs: u64,
    /// `OutRsts`: resets sent.
    pub out_rsts: u64,
    /// Every `Tcp:` counter by name.
    pub all: HashMap<String, i64>,
}

/// Reads `/proc/net/snmp` inside namespace `ns_key` (`ip netns exec NS cat`).
pub fn tcp_snmp(topo: &Topology, ns_key: &str) -> TcpSnmp {
    parse_snmp_tcp(&ns_output(topo.var(ns_key), &["cat", "/proc/net/snmp"]))
}

/// Parses the `Tcp:` header and value lines of `/proc/net/snmp`.
pub fn parse_snmp_tcp(snmp: &str) -> TcpSnmp {
    let tcp: Vec<&str> = snmp
        .lines()
        .filter_map(|l| l.strip_prefix("Tcp:"))
        .collect();
    let mut s = TcpSnmp::default();
    if let [names, values, ..] = tcp[..] {
        for (k, v) in names.split_whitespace().zip(values.split_whitespace()) {
            s.all.insert(k.to_string(), v.parse().unwrap_or(0));
        }
    }
    let get = |k: &str| s.all.get(k).copied().unwrap_or(0).max(0) as u64;
    s.out_segs = get("OutSegs");
    s.retrans_segs = get("RetransSegs");
    s.in_segs = get("InSegs");
    s.in_errs = get("InErrs");
    s.out_rsts = get("OutRsts");
    s
}

// ---------------------------------------------------------------------------
// tshark

/// tshark's TCP analysis of a capture, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCaptureStats {
    /// All frames.
    pub frames: usize,
    /// `tcp.analysis.retransmission`.
    pub retransmissions: usize,
    /// `tcp.analysis.fast_retransmission`.
    pub fast_retransmissions: usize,
    /// `tcp.analysis.lost_segment` ("previous segment not captured").
    pub lost_segments: usize,
}

/// Asserts a TCP capture is clean: what [`assert_tshark_clean`] checks
/// (no malformed frame, no bad IP/UDP/ICMP checksum), no bad TCP checksum,
/// and no `tcp.analysis.ack_lost_segment` ("ACKed unseen segment": an ACK
/// for data never sent). Returns tshark's retransmission counts. When
/// tshark is absent: fails under root, otherwise skips with a message and
/// returns None.
///
/// For captures in which every frame carries its final checksum (a TAP, a
/// pathstack pcap). Captures taken on a kernel interface with checksum
/// offload (a veth, a bridge) show partial checksums on the frames the
/// kernel sends: use [`assert_tcp_capture_clean_offloaded`].
pub fn assert_tcp_capture_clean(pcap: &Path) -> Option<TcpCaptureStats> {
    tcp_capture_check(pcap, true)
}

/// [`assert_tcp_capture_clean`] without the TCP checksum check, for
/// captures with checksum offload.
pub fn assert_tcp_capture_clean_offloaded(pcap: &Path) -> Option<TcpCaptureStats> {
    tcp_capture_check(pcap, false)
}

fn tcp_capture_check(pcap: &Path, tcp_checksums: bool) -> Option<TcpCaptureStats> {
    if !have_tshark() {
        if has_net_admin() {
            panic!("tshark is not installed; run scripts/install-deps.sh (we are root, so the check must run)");
        }
        eprintln!(
            "SKIPPED TCP tshark check of {}: tshark not installed and not root",
            pcap.display()
        );
        return None;
    }
    let frames = assert_tshark_clean(pcap)?;
    if tcp_checksums {
        // A field of 0xffff where the sum gives 0x0000 is the same number
        // in one's complement (−0, RFC 1624 §3) and receivers accept it;
        // Linux's software checksum sends it now and then (seen on a
        // kernel ACK), and tshark calls it bad.
        let bad = tcp_frames(
            pcap,
            r#"tcp.checksum.status == "Bad" && tcp.checksum != 0xffff"#,
        );
        assert!(
            bad.is_empty(),
            "bad TCP checksums in {}: frames {bad:?}",
            pcap.display()
        );
    }
    let unseen = tshark_frames(pcap, "tcp.analysis.ack_lost_segment");
    assert!(
        unseen.is_empty(),
        "ACKed unseen segments in {}: frames {unseen:?}",
        pcap.display()
    );
    Some(TcpCaptureStats {
        frames,
        retransmissions: tshark_frames(pcap, "tcp.analysis.retransmission").len(),
        fast_retransmissions: tshark_frames(pcap, "tcp.analysis.fast_retransmission").len(),
        lost_segments: tshark_frames(pcap, "tcp.analysis.lost_segment").len(),
    })
}

/// Like [`tshark_frames`], with TCP checksum validation on.
fn tcp_frames(pcap: &Path, filter: &str) -> Vec<u32> {
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-n", "-o", "tcp.check_checksum:TRUE", "-Y", filter])
        .args(["-T", "fields", "-e", "frame.number"])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark -r {} failed:\n{}",
        pcap.display(),
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_windows_agree() {
        let mut whole = vec![0u8; 1000];
        pattern_bytes(7, 0, &mut whole);
        for (off, len) in [(0, 1), (1, 7), (3, 20), (8, 8), (13, 987), (999, 1)] {
            let mut part = vec![0u8; len];
            pattern_bytes(7, off as u64, &mut part);
            assert_eq!(part, whole[off..off + len], "window {off}+{len}");
        }
        let mut other = vec![0u8; 1000];
        pattern_bytes(8, 0, &mut other);
        assert_ne!(whole, other);
        let mut h = Sha256::new();
        h.update(&whole);
        let d: Sha256Digest = h.finalize().into();
        assert_eq!(pattern_sha256(7, 1000), d);
    }

    // Captured with `ip netns exec ps-b-t1 ss -tin` on this machine
    // (iproute2 6.1, kernel 6.18, bbr), 5% loss installed by `Loss`.
    const SS_LOSSY: &str = "State Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess
ESTAB 0      0          10.77.1.2:39048    10.77.1.4:5004
\t bbr wscale:10,10 rto:204 rtt:0.69/0.46 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:246 ssthresh:136 bytes_sent:20752448 bytes_retrans:752448 bytes_acked:20000001 segs_out:14539 segs_in:808 data_segs_out:14537 bbr:(bw:17376000000bps,mrtt:0.006,pacing_gain:1.25,cwnd_gain:2) send 4129947826bps lastsnd:432 lastrcv:2004 lastack:432 pacing_rate 21502800000bps delivery_rate 3407058816bps delivered:14012 busy:1568ms retrans:0/531 dsack_dups:5 rcv_space:14480 rcv_ssthresh:64088 minrtt:0.006 snd_wnd:2096128
";

    // In recovery (lost, sacked, retrans now > 0), next to a SYN-SENT whose
    // SYN was dropped.
    const SS_RECOVERY: &str = "State    Recv-Q Send-Q  Local Address:Port  Peer Address:PortProcess
SYN-SENT 0      1           10.77.1.2:37940    10.77.1.4:5006
\t bbr rto:1000 mss:524 pmtu:1500 rcvmss:88 advmss:1460 cwnd:10 segs_out:1 bbr:(bw:0bps,mrtt:0) lastsnd:19909432 lastrcv:19909432 lastack:19909432 app_limited unacked:1 rcv_ssthresh:64240
ESTAB    0      1449488     10.77.1.2:51018    10.77.1.4:5005
\t bbr wscale:10,10 rto:204 rtt:0.788/0.455 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:4 ssthresh:229 bytes_sent:67475712 bytes_retrans:3250432 bytes_acked:64209393 segs_out:47147 segs_in:2302 data_segs_out:47145 bbr:(bw:3564307472bps,mrtt:0.006,pacing_gain:1.25,cwnd_gain:2) send 58802030bps lastsnd:80 lastrcv:4480 lastack:80 pacing_rate 4410830504bps delivery_rate 3564307688bps delivered:44971 busy:4460ms unacked:11 retrans:4/2269 lost:5 sacked:6 dsack_dups:99 reordering:135 reord_seen:2 rcv_space:14480 rcv_ssthresh:64088 notsent:1433600 minrtt:0.006 snd_wnd:3016704
";

    // The receiving side (no retransmissions at all), with a state filter
    // (`ss -tin state established`: no state column).
    const SS_RECEIVER_NO_STATE: &str = "Recv-Q Send-Q Local Address:Port  Peer Address:PortProcess
0      0          10.77.1.4:5003    10.77.1.2:42020
\t bbr wscale:10,10 rto:200 rtt:0.036/0.018 ato:40 mss:1448 pmtu:1500 rcvmss:1448 advmss:1448 cwnd:10 bytes_received:20000000 segs_out:1818 segs_in:14405 data_segs_in:14403 bbr:(bw:0bps,mrtt:0.036) send 3217777778bps lastsnd:2004 lastrcv:1864 lastack:1864 pacing_rate 9195929712bps delivered:1 app_limited rcv_rtt:0.519 rcv_space:369968 rcv_ssthresh:2431691 minrtt:0.036 rcv_ooopack:183 snd_wnd:64512
";

    // The classic layout with option flags (cubic, `ts sack`).
    const SS_CUBIC_OPTS: &str = "ESTAB 0 0 192.168.1.5:22 192.168.1.9:50412
\t ts sack cubic wscale:7,7 rto:204 rtt:0.5/0.25 mss:1448 cwnd:10 bytes_acked:1 segs_out:3 segs_in:2 data_segs_out:1 retrans:0/2 lost:1
";

    #[test]
    fn ss_lossy_sender() {
        let v = parse_ss(SS_LOSSY);
        assert_eq!(v.len(), 1);
        let s = &v[0];
        assert_eq!(s.state, "ESTAB");
        assert_eq!(s.local, "10.77.1.2:39048");
        assert_eq!(s.peer, "10.77.1.4:5004");
        assert_eq!((s.retrans_now, s.retrans_total), (0, 531));
        assert_eq!(s.bytes_retrans, 752448);
        assert_eq!(s.segs_out, 14539);
        assert_eq!(s.data_segs_out, 14537);
        assert_eq!((s.lost, s.sacked, s.dsack_dups), (0, 0, 5));
        assert!(!s.sack && !s.timestamps);
        assert_eq!(s.fields["cwnd"], "246");
        // The keys inside bbr:(...) are not the connection's.
        assert!(!s.fields.contains_key("mrtt"));
    }

    #[test]
    fn ss_recovery_and_syn_sent() {
        let v = parse_ss(SS_RECOVERY);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].state, "SYN-SENT");
        assert_eq!(v[0].segs_out, 1);
        assert_eq!(
            (v[0].retrans_total, v[0].bytes_retrans, v[0].lost),
            (0, 0, 0)
        );
        let s = &v[1];
        assert_eq!(s.state, "ESTAB");
        assert_eq!(s.local, "10.77.1.2:51018");
        assert_eq!((s.retrans_now, s.retrans_total), (4, 2269));
        assert_eq!((s.lost, s.sacked, s.dsack_dups), (5, 6, 99));
        assert_eq!(s.bytes_retrans, 3250432);
    }

    #[test]
    fn ss_receiver_without_state_column() {
        let v = parse_ss(SS_RECEIVER_NO_STATE);
        assert_eq!(v.len(), 1);
        let s = &v[0];
        assert_eq!(s.state, "");
        assert_eq!(s.local, "10.77.1.4:5003");
        assert_eq!(s.peer, "10.77.1.2:42020");
        assert_eq!(
            (s.retrans_total, s.bytes_retrans, s.data_segs_out),
            (0, 0, 0)
        );
        assert_eq!(s.segs_out, 1818);
    }

    #[test]
    fn ss_option_flags() {
        let v = parse_ss(SS_CUBIC_OPTS);
        assert_eq!(v.len(), 1);
        assert!(v[0].sack && v[0].timestamps);
        assert_eq!(
            (v[0].retrans_total, v[0].lost, v[0].data_segs_out),
            (2, 1, 1)
        );
    }

    #[test]
    fn snmp_tcp_counters() {
        // `ip netns exec ps-b-t1 cat /proc/net/snmp`, abridged to its Ip and
        // Tcp lines.
        let snmp = "Ip: Forwarding DefaultTTL InReceives
Ip: 2 64 2270
Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 1 0 0 0 0 2266 22666 9 0 0 0
Udp: InDatagrams NoPorts
Udp: 0 0
";
        let s = parse_snmp_tcp(snmp);
        assert_eq!(s.out_segs, 22666);
        assert_eq!(s.retrans_segs, 9);
        assert_eq!(s.in_segs, 2266);
        assert_eq!(s.all["MaxConn"], -1);
    }

    #[test]
    fn nft_counters_sum() {
        let listing = "table bridge t {
\tchain loss_in {
\t\ttype filter hook input priority filter; policy accept;
\t\tip protocol tcp numgen random mod 100 < 5 counter packets 43 bytes 2296 drop
\t}
\tchain loss_out {
\t\tip protocol tcp numgen random mod 100 < 5 counter packets 62 bytes 748432 drop
\t}
}";
        assert_eq!(parse_nft_counter_packets(listing), 105);
    }
}
