//! The pathstack side of the TCP interop tests against the Linux kernel
//! (`tcp_linux`, `tcp_offload`): a pathstack host on TAP_A of the
//! scripts/netns.sh topology (NS_A, PS_A_IP), run on its own thread (poll,
//! its application's step, wait up to 1 ms), and the applications it runs
//! ([`App`]): an echo server for any number of connections ([`PsEcho`]), a
//! sink that checks every byte against the pattern stream ([`PsSink`]), and
//! a client that sends a pattern while reading, an echo it checks or
//! nothing from a sink ([`PsClient`]). The kernel side is
//! `pathstack_testutil::kernel_tcp`.
//!
//! Included by each of those tests with
//! `#[path = "support/ps_driver.rs"] mod ps_driver;`; not every test uses
//! every item.
#![allow(dead_code)]

use pathstack::devices::{PcapCapture, TapDevice, TapOptions, WaitMode};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::tcp::{Shutdown, TcpStats};
use pathstack::inet::MacAddr;
use pathstack::socket::ready;
use pathstack::socket::{TcpListener, TcpStream};
use pathstack_testutil::kernel_tcp::pattern_bytes;
use pathstack_testutil::Topology;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How much an application reads or writes at once.
pub const CHUNK: usize = 64 * 1024;
/// The port of the pathstack servers. Not 7000 and the like: tshark would
/// decode the payload as some protocol registered on the port (7000 is
/// Gryphon) and call it malformed.
pub const PS_PORT: u16 = 45111;

/// A pathstack host on TAP_A, with the TAP's offloads
/// ([`TapOptions::offload`]) or without, optionally captured to `pcap`.
/// For debugging, `TCP_LINUX_PCAP=prefix` captures every host of a test
/// run to `prefix.N`, N counting the hosts made.
pub fn ps_host(topo: &Topology, offload: bool, pcap: Option<&Path>) -> Host {
    static HOSTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = HOSTS.fetch_add(1, Ordering::Relaxed);
    let debug_pcap = std::env::var("TCP_LINUX_PCAP")
        .ok()
        .map(|p| std::path::PathBuf::from(format!("{p}.{n}")));
    let pcap = pcap.or(debug_pcap.as_deref());
    let tap = TapDevice::open(
        topo.var("TAP_A"),
        TapOptions::new().netns(topo.var("NS_A")).offload(offload),
    )
    .expect("open TAP A");
    if offload {
        // This kernel has offered them since 2.6.27; a kernel that
        // refused would make every "on" figure an "off" figure.
        assert!(
            tap.offloads().csum && tap.offloads().tso4,
            "offloads not negotiated: {:?}",
            tap.offloads()
        );
    }
    let waiter = tap.waiter().expect("waiter");
    let mut cfg = HostConfig::parse(&format!("{}/24", topo.var("PS_A_IP"))).unwrap();
    cfg.mac = Some(MacAddr(tap.mac()));
    let host = match pcap {
        Some(p) => Host::new(cfg, PcapCapture::create(tap, p).expect("pcap")),
        None => Host::new(cfg, tap),
    };
    host.expect("host").with_waiter(waiter, WaitMode::Blocking)
}

/// Where the pathstack servers listen: PS_A_IP, [`PS_PORT`].
pub fn ps_addr(topo: &Topology) -> SocketAddr {
    SocketAddr::V4(SocketAddrV4::new(
        topo.var("PS_A_IP").parse().unwrap(),
        PS_PORT,
    ))
}

/// The address of the kernel of NS_B.
pub fn kernel_b(topo: &Topology) -> Ipv4Addr {
    topo.var("KERNEL_B_IP").parse().unwrap()
}

/// The application a host thread runs between polls.
pub trait App: Send + 'static {
    /// Does what can be done now; true when finished.
    fn step(&mut self, h: &mut Host) -> bool;
}

/// A host running an [`App`] on its own thread.
pub struct Running<A> {
    pub stop: Arc<AtomicBool>,
    pub handle: JoinHandle<(Host, A)>,
}

impl<A: App> Running<A> {
    /// Runs `app` on `host` until it finishes, [`Running::stop`] or `limit`.
    pub fn start(host: Host, app: A, limit: Duration) -> Running<A> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("pathstack-host".into())
            .spawn(move || {
                let (mut host, mut app) = (host, app);
                let deadline = Instant::now() + limit;
                while !flag.load(Ordering::Relaxed) && Instant::now() < deadline {
                    host.poll();
                    if app.step(&mut host) {
                        break;
                    }
                    host.poll();
                    host.wait(Duration::from_millis(1)).expect("wait");
                }
                (host, app)
            })
            .expect("spawn the host thread");
        Running { stop, handle }
    }

    /// Waits for the app to finish (or its time limit).
    pub fn join(self) -> (Host, A) {
        self.handle.join().expect("host thread panicked")
    }

    /// Stops the host and hands it back.
    pub fn stop(self) -> (Host, A) {
        self.stop.store(true, Ordering::Relaxed);
        self.join()
    }
}

/// One connection of [`PsEcho`]: what was read and not yet written back.
pub struct EchoConn {
    pub s: TcpStream,
    pub buf: Vec<u8>,
    pub len: usize,
    pub off: usize,
    pub eof: bool,
    pub echoed: u64,
}

/// A pathstack echo server: accepts any number of connections, writes back
/// what it reads (reading more only once the last read is written back),
/// closes after the peer's EOF once everything is echoed.
pub struct PsEcho {
    pub l: TcpListener,
    pub conns: Vec<EchoConn>,
    /// Bytes echoed by each finished connection.
    pub finished: Vec<u64>,
    /// The counters of each finished connection (in the order of
    /// `finished`), taken just before its close.
    pub stats: Vec<TcpStats>,
    pub errors: Vec<String>,
    pub accepted: usize,
}

impl PsEcho {
    pub fn new(h: &mut Host) -> PsEcho {
        let l = h
            .tcp()
            .listen(("0.0.0.0", PS_PORT), 128)
            .expect("tcp_listen");
        PsEcho {
            l,
            conns: Vec::new(),
            finished: Vec::new(),
            stats: Vec::new(),
            errors: Vec::new(),
            accepted: 0,
        }
    }

    /// Serves `c`; false once it is finished (closed or failed).
    fn serve(
        h: &mut Host,
        c: &mut EchoConn,
        finished: &mut Vec<u64>,
        stats: &mut Vec<TcpStats>,
        errors: &mut Vec<String>,
    ) -> bool {
        loop {
            if c.off < c.len {
                match ready(c.s.write(h, &c.buf[c.off..c.len])) {
                    Ok(Some(n)) => c.off += n,
                    Ok(None) => return true,
                    Err(e) => {
                        errors.push(format!("echo send after {}: {e}", c.echoed));
                        let _ = h.tcp().abort(c.s);
                        return false;
                    }
                }
                continue;
            }
            if c.eof {
                stats.push(h.tcp().stats(&c.s).expect("stats"));
                h.tcp().close(c.s).expect("close");
                finished.push(c.echoed);
                return false;
            }
            match ready(c.s.read(h, &mut c.buf)) {
                Ok(Some(0)) => c.eof = true,
                Ok(Some(n)) => {
                    c.len = n;
                    c.off = 0;
                    c.echoed += n as u64;
                }
                Ok(None) => return true,
                Err(e) => {
                    errors.push(format!("echo recv after {}: {e}", c.echoed));
                    let _ = h.tcp().abort(c.s);
                    return false;
                }
            }
        }
    }
}

impl App for PsEcho {
    fn step(&mut self, h: &mut Host) -> bool {
        while let Some((s, _peer)) = ready(self.l.accept(h)).expect("accept") {
            self.accepted += 1;
            self.conns.push(EchoConn {
                s,
                buf: vec![0; CHUNK],
                len: 0,
                off: 0,
                eof: false,
                echoed: 0,
            });
        }
        let (finished, stats, errors) = (&mut self.finished, &mut self.stats, &mut self.errors);
        self.conns
            .retain_mut(|c| PsEcho::serve(h, c, finished, stats, errors));
        false
    }
}

/// Where `a` and `b` (of one length) first differ; a memcmp first, as
/// the test crate is built without optimisation.
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    if a == b {
        return None;
    }
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// What a pathstack sink read from one connection.
#[derive(Debug)]
pub struct SinkResult {
    pub bytes: u64,
    /// Offset of the first byte that differs from the pattern.
    pub mismatch: Option<u64>,
    pub elapsed: Duration,
}

/// A pathstack sink: accepts connections, reads each to EOF checking every
/// byte against the pattern of `seed`, then closes. It never finishes:
/// stop its host when the peer is done.
pub struct PsSink {
    pub l: TcpListener,
    pub seed: u64,
    pub conns: Vec<(TcpStream, u64, Option<u64>, Instant)>,
    pub results: Vec<SinkResult>,
    pub errors: Vec<String>,
    pub buf: Vec<u8>,
    pub want: Vec<u8>,
}

impl PsSink {
    pub fn new(h: &mut Host, seed: u64) -> PsSink {
        let l = h
            .tcp()
            .listen(("0.0.0.0", PS_PORT), 128)
            .expect("tcp_listen");
        PsSink {
            l,
            seed,
            conns: Vec::new(),
            results: Vec::new(),
            errors: Vec::new(),
            buf: vec![0; CHUNK],
            want: vec![0; CHUNK],
        }
    }
}

impl App for PsSink {
    fn step(&mut self, h: &mut Host) -> bool {
        while let Some((s, _)) = ready(self.l.accept(h)).expect("accept") {
            self.conns.push((s, 0, None, Instant::now()));
        }
        let mut i = 0;
        while i < self.conns.len() {
            let (s, off, mismatch, start) = &mut self.conns[i];
            let done = loop {
                match ready(s.read(h, &mut self.buf)) {
                    Ok(Some(0)) => {
                        self.results.push(SinkResult {
                            bytes: *off,
                            mismatch: *mismatch,
                            elapsed: start.elapsed(),
                        });
                        h.tcp().close(*s).expect("close");
                        break true;
                    }
                    Ok(Some(n)) => {
                        if mismatch.is_none() {
                            pattern_bytes(self.seed, *off, &mut self.want[..n]);
                            if let Some(j) = first_difference(&self.buf[..n], &self.want[..n]) {
                                *mismatch = Some(*off + j as u64);
                            }
                        }
                        *off += n as u64;
                    }
                    Ok(None) => break false,
                    Err(e) => {
                        self.errors.push(format!("sink recv after {off}: {e}"));
                        let _ = h.tcp().abort(*s);
                        break true;
                    }
                }
            };
            if done {
                self.conns.swap_remove(i);
            } else {
                i += 1;
            }
        }
        // The host keeps running after the close (our FIN may need
        // retransmitting): the test stops it once the kernel is done.
        false
    }
}

/// What a pathstack client saw.
#[derive(Debug)]
pub struct ClientResult {
    pub received: u64,
    /// Offset of the first received byte that differs from the pattern.
    pub mismatch: Option<u64>,
    /// The connection's counters just before it was closed.
    pub stats: TcpStats,
    pub elapsed: Duration,
}

/// A pathstack client: connects, sends `len` bytes of the pattern of
/// `seed` while reading, shuts down its write side, reads to the peer's
/// EOF and closes. With `echo` it checks what it reads is the pattern.
pub struct PsClient {
    pub s: TcpStream,
    pub seed: u64,
    pub len: u64,
    pub echo: bool,
    pub sent: u64,
    pub chunk: Vec<u8>,
    pub chunk_start: u64,
    pub chunk_len: usize,
    pub shut: bool,
    pub received: u64,
    pub mismatch: Option<u64>,
    pub buf: Vec<u8>,
    pub want: Vec<u8>,
    pub start: Instant,
    pub result: Option<Result<ClientResult, String>>,
}

impl PsClient {
    pub fn new(h: &mut Host, peer: SocketAddr, len: u64, seed: u64, echo: bool) -> PsClient {
        let s = h.tcp().connect(peer).expect("tcp_connect");
        PsClient {
            s,
            seed,
            len,
            echo,
            sent: 0,
            chunk: vec![0; CHUNK],
            chunk_start: 0,
            chunk_len: 0,
            shut: false,
            received: 0,
            mismatch: None,
            buf: vec![0; CHUNK],
            want: vec![0; CHUNK],
            start: Instant::now(),
            result: None,
        }
    }

    fn fail(&mut self, h: &mut Host, what: String) -> bool {
        let _ = h.tcp().abort(self.s);
        self.result = Some(Err(what));
        true
    }
}

impl App for PsClient {
    fn step(&mut self, h: &mut Host) -> bool {
        if self.result.is_some() {
            return true;
        }
        // Send what fits.
        while self.sent < self.len {
            let end = self.chunk_start + self.chunk_len as u64;
            if self.sent == end {
                self.chunk_start = end;
                self.chunk_len = (self.len - end).min(CHUNK as u64) as usize;
                pattern_bytes(self.seed, end, &mut self.chunk[..self.chunk_len]);
            }
            let from = (self.sent - self.chunk_start) as usize;
            match ready(self.s.write(h, &self.chunk[from..self.chunk_len])) {
                Ok(Some(n)) => self.sent += n as u64,
                Ok(None) => break,
                Err(e) => return self.fail(h, format!("send after {}: {e}", self.sent)),
            }
        }
        if self.sent == self.len && !self.shut {
            if let Err(e) = h.tcp().shutdown(&self.s, Shutdown::Write) {
                return self.fail(h, format!("shutdown: {e}"));
            }
            self.shut = true;
        }
        // Read what came.
        loop {
            match ready(self.s.read(h, &mut self.buf)) {
                Ok(Some(0)) => {
                    if !self.shut {
                        return self.fail(h, format!("EOF after sending {}", self.sent));
                    }
                    let stats = h.tcp().stats(&self.s).expect("stats");
                    h.tcp().close(self.s).expect("close");
                    self.result = Some(Ok(ClientResult {
                        received: self.received,
                        mismatch: self.mismatch,
                        stats,
                        elapsed: self.start.elapsed(),
                    }));
                    return true;
                }
                Ok(Some(n)) => {
                    if self.mismatch.is_none() {
                        if self.echo {
                            pattern_bytes(self.seed, self.received, &mut self.want[..n]);
                            if let Some(j) = first_difference(&self.buf[..n], &self.want[..n]) {
                                self.mismatch = Some(self.received + j as u64);
                            }
                        } else {
                            self.mismatch = Some(self.received);
                        }
                    }
                    self.received += n as u64;
                }
                Ok(None) => return false,
                Err(e) => {
                    return self.fail(
                        h,
                        format!(
                            "recv after sending {} receiving {}: {e}",
                            self.sent, self.received
                        ),
                    )
                }
            }
        }
    }
}

/// Runs a pathstack client to `peer` on a host of [`ps_host`] (with the
/// TAP's offloads or without) to completion; panics on failure.
pub fn run_client(
    topo: &Topology,
    offload: bool,
    peer: SocketAddr,
    len: u64,
    seed: u64,
    echo: bool,
    limit: Duration,
) -> (Host, ClientResult) {
    let mut host = ps_host(topo, offload, None);
    let app = PsClient::new(&mut host, peer, len, seed, echo);
    let (host, app) = Running::start(host, app, limit).join();
    let r = match app.result {
        Some(Ok(r)) => r,
        Some(Err(e)) => panic!("pathstack client of {len} bytes to {peer}: {e}\n{}", host.report()),
        None => panic!(
            "pathstack client of {len} bytes to {peer} did not finish in {limit:?}: sent {} received {}\n{}",
            app.sent,
            app.received,
            host.report()
        ),
    };
    (host, r)
}

/// A connection's state and counters, for failure messages.
pub fn conn_debug(h: &Host, s: &TcpStream) -> String {
    format!(
        "state {:?} send_space {:?} readable {:?} stats {:?}",
        pathstack::socket::Tcp::of(h).state(s),
        pathstack::socket::Tcp::of(h).send_space(s),
        pathstack::socket::Tcp::of(h).readable(s),
        pathstack::socket::Tcp::of(h).stats(s)
    )
}
