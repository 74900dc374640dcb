//! Two RPC hosts on the in-memory wire, driven on a hand-set clock, for
//! the path-level RPC tests (`rpc_calls`, `rpc_scenarios`, `rpc_boot`,
//! `rpc_at_most_once`, `rpc_reboot`, `rpc_injected`).
//!
//! * [`Tapped`] wraps a host's device: it records every frame the host
//!   transmits (time, sender, bytes) in a shared [`WireLog`] and drops
//!   the frames its [`DropRule`]s select, so a test can read the exact
//!   bytes on the wire and lose chosen frames.
//! * [`SharedEnd`] is a wire end several [`Host`]s can be built on one
//!   after another (a host owns its device): a host "reboots" by being
//!   dropped and built again on the same end.
//! * [`Rig`] is the client host (end A, `10.0.0.1`) and the server host
//!   (end B, `10.0.0.2`), both on one manual clock. [`Rig::run_for`]
//!   polls both until nothing is left to do, then jumps the clock to the
//!   earlier host's next timer, so a timer fires at exactly its time and
//!   a five-second retransmission costs a few polls, not five seconds.
//!
//! Included by each of those tests with
//! `#[path = "support/rpc_rig.rs"] mod rpc_rig;`; not every test uses
//! every item.
#![allow(dead_code)]

use pathstack::core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack::core::device::{Device, DeviceError};
use pathstack::core::time::{Duration, Instant};
use pathstack::core::{Msg, MsgPool};
use pathstack::host::{Host, HostConfig};
use pathstack::rpc::{Echo, Peer, RpcCall, RpcError, RpcNet};
use pathstack::rpc_protocols::modules::bidctl::BidctlModule;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Which host sent a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The client host (wire end A).
    Client,
    /// The server host (wire end B).
    Server,
}

/// One frame a host transmitted.
#[derive(Clone, Debug)]
pub struct Frame {
    /// The sender's clock when it transmitted the frame.
    pub at: Instant,
    /// The sender.
    pub from: Side,
    /// The whole Ethernet frame.
    pub bytes: Vec<u8>,
    /// Whether a [`DropRule`] dropped it (it never reached the peer).
    pub dropped: bool,
}

/// Selects frames (given the whole Ethernet frame).
pub type FrameFilter = Box<dyn Fn(&[u8]) -> bool + Send>;

/// Drops frames sent by `from` that `matches` selects: it lets the first
/// `skip` matching frames through, then drops the next `count`.
pub struct DropRule {
    /// Whose frames.
    pub from: Side,
    /// Which frames (the whole Ethernet frame).
    pub matches: FrameFilter,
    /// Matching frames still to let through.
    pub skip: usize,
    /// Matching frames still to drop after those.
    pub count: usize,
}

/// The frames both hosts sent, and the rules that drop some of them.
#[derive(Default)]
pub struct WireLog {
    /// Every frame, in the order sent.
    pub frames: Vec<Frame>,
    /// The drop rules, each applied to every frame.
    pub rules: Vec<DropRule>,
}

/// A shared [`WireLog`].
pub type Log = Arc<Mutex<WireLog>>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A device that records what its host transmits and drops what the
/// log's rules select (see the module docs).
pub struct Tapped<D> {
    inner: D,
    side: Side,
    log: Log,
}

impl<D: Device> Tapped<D> {
    /// `inner`, tapped for host `side`, into `log`.
    pub fn new(inner: D, side: Side, log: Log) -> Self {
        Tapped { inner, side, log }
    }
}

impl<D: Device> Device for Tapped<D> {
    fn transmit(&mut self, frame: Msg, now: Instant) -> Result<(), DeviceError> {
        let dropped = {
            let mut log = lock(&self.log);
            let mut dropped = false;
            for r in log.rules.iter_mut() {
                if r.from != self.side || !(r.matches)(frame.as_slice()) {
                    continue;
                }
                if r.skip > 0 {
                    r.skip -= 1;
                } else if r.count > 0 {
                    r.count -= 1;
                    dropped = true;
                }
            }
            log.frames.push(Frame {
                at: now,
                from: self.side,
                bytes: frame.as_slice().to_vec(),
                dropped,
            });
            dropped
        };
        if dropped {
            // Lost on the wire: the sender cannot tell.
            return Ok(());
        }
        self.inner.transmit(frame, now)
    }
    pathstack::core::forward_device!((inner) receive, receive_into, discard, caps, poll_at, stats, rx_waiter);
}

/// A wire end that outlives the hosts built on it (see the module docs).
#[derive(Clone)]
pub struct SharedEnd(pub Arc<Mutex<MemoryEnd>>);

impl SharedEnd {
    fn end(&self) -> MutexGuard<'_, MemoryEnd> {
        lock(&self.0)
    }
}

impl Device for SharedEnd {
    pathstack::core::forward_device!((end()) transmit, receive, caps, poll_at, stats);
}

/// The client's address.
pub const CLIENT_IP: &str = "10.0.0.1";
/// The server's address.
pub const SERVER_IP: &str = "10.0.0.2";
/// The clock when the rig starts.
pub const T0: Instant = Instant::from_millis(1000);
/// The x-kernel's RPC test procedure id (spec §0.3).
pub const XRPCTEST: u32 = 1002;

/// A host with the RPC stack on `net` at `ip`, on `device`.
pub fn rpc_host(net: RpcNet, ip: &str, device: impl Device + 'static) -> Host {
    let cfg = HostConfig {
        rpc: Some(net),
        ..HostConfig::parse(&format!("{ip}/24")).expect("address")
    };
    Host::new(cfg, device).expect("RPC host")
}

/// `h` serves [`XRPCTEST`] as an echo.
pub fn serve_echo(h: &mut Host) {
    h.rpc()
        .server()
        .expect("an RPC host")
        .register(XRPCTEST, Echo)
        .expect("XRPCTEST not yet registered");
}

/// Executions of a counting echo, per request.
pub type Counts = Arc<Mutex<std::collections::HashMap<Vec<u8>, u32>>>;

/// Registers on `h` an echo that counts its executions per request (how
/// the reboot tests see at-most-once semantics).
pub fn counting_echo(h: &mut Host) -> Counts {
    let counts: Counts = Arc::default();
    let c = counts.clone();
    h.rpc()
        .server()
        .expect("an RPC host")
        .register_fn(XRPCTEST, move |req: &[u8]| {
            *c.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(req.to_vec())
                .or_default() += 1;
            req.to_vec()
        })
        .expect("XRPCTEST not yet registered");
    counts
}

/// How many times the counting echo ran `req`.
pub fn count(c: &Counts, req: &[u8]) -> u32 {
    c.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(req)
        .copied()
        .unwrap_or(0)
}

/// A host's BIDCTL boot id.
pub fn boot_id(h: &Host) -> u32 {
    let s = h.stack();
    s.module_id("bidctl")
        .and_then(|id| s.module::<BidctlModule>(id))
        .expect("BIDCTL")
        .local_bid()
        .0
}

/// A module counter of `h` (`Host --stats` shows the same).
pub fn module_stat(h: &Host, module: &str, counter: &str) -> u64 {
    let s = h.stack();
    let m = s.module_id(module).expect("the module");
    s.module_stats(m)
        .unwrap_or_default()
        .into_iter()
        .find(|(k, _)| k == counter)
        .map_or(0, |(_, n)| n)
}

/// The one's-complement sum of `bytes` in 16-bit words, folded (BIDCTL's
/// checksum field is its complement, spec §5.2; a header whose sum is
/// `0xffff` is intact).
pub fn ones_sum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Fills in the checksum of a BIDCTL header (spec §5.2).
pub fn seal_bidctl(header: &mut [u8; 20]) {
    header[2..4].copy_from_slice(&[0, 0]);
    let sum = ones_sum(header);
    header[2..4].copy_from_slice(&(!sum).to_be_bytes());
}

/// The client and server hosts on one wire and one clock (module docs).
pub struct Rig {
    /// The calling host (end A).
    pub client: Host,
    /// The serving host (end B), `None` while it is "down".
    pub server: Option<Host>,
    /// The shared clock.
    pub now: Instant,
    /// What both hosts sent.
    pub log: Log,
    /// The network below BLAST.
    pub net: RpcNet,
    client_end: SharedEnd,
    server_end: SharedEnd,
    /// What the server's device is wrapped in, again at every reboot.
    wrap_server: Box<dyn Fn(SharedEnd) -> Box<dyn Device>>,
}

/// The layer offsets of an RPC frame on `net`: where BLAST's header starts.
pub fn blast_at(net: RpcNet) -> usize {
    match net {
        RpcNet::Eth => 14,
        RpcNet::Ip => 34,
    }
}

impl Rig {
    /// Both hosts on a fresh wire of the default configuration.
    pub fn new(net: RpcNet) -> Rig {
        Self::with_devices(
            net,
            |d| Box::new(d) as Box<dyn Device>,
            |d| Box::new(d) as Box<dyn Device>,
        )
    }

    /// Both hosts on a fresh wire, the server serving [`XRPCTEST`] as an
    /// echo.
    pub fn with_echo(net: RpcNet) -> Rig {
        let mut r = Self::new(net);
        serve_echo(r.server());
        r
    }

    /// Both hosts, each device wrapped by `wrap_client` / `wrap_server`
    /// under the tap (e.g. in an impairment wrapper; the server's again
    /// when it comes up after a reboot).
    pub fn with_devices(
        net: RpcNet,
        wrap_client: impl FnOnce(SharedEnd) -> Box<dyn Device>,
        wrap_server: impl Fn(SharedEnd) -> Box<dyn Device> + 'static,
    ) -> Rig {
        let (a, b) = memory_pair(MemoryConfig::default());
        let client_end = SharedEnd(Arc::new(Mutex::new(a)));
        let server_end = SharedEnd(Arc::new(Mutex::new(b)));
        let log: Log = Arc::default();
        let mut client = rpc_host(
            net,
            CLIENT_IP,
            Tapped::new(wrap_client(client_end.clone()), Side::Client, log.clone()),
        );
        let mut server = rpc_host(
            net,
            SERVER_IP,
            Tapped::new(wrap_server(server_end.clone()), Side::Server, log.clone()),
        );
        client.set_manual_clock(T0);
        server.set_manual_clock(T0);
        Rig {
            client,
            server: Some(server),
            now: T0,
            log,
            net,
            client_end,
            server_end,
            wrap_server: Box::new(wrap_server),
        }
    }

    /// The server host.
    pub fn server(&mut self) -> &mut Host {
        self.server.as_mut().expect("the server is up")
    }

    /// How the client names the server.
    pub fn server_peer(&mut self) -> Peer {
        self.server
            .as_mut()
            .expect("the server is up")
            .rpc()
            .peer()
            .expect("peer")
    }

    /// How the server names the client.
    pub fn client_peer(&mut self) -> Peer {
        self.client.rpc().peer().expect("peer")
    }

    /// Polls both hosts at the current time until neither has work left.
    pub fn settle(&mut self) {
        for _ in 0..10_000 {
            self.client.set_manual_clock(self.now);
            let mut work = self.client.poll();
            if let Some(s) = self.server.as_mut() {
                s.set_manual_clock(self.now);
                work += s.poll();
            }
            if work == 0 {
                return;
            }
        }
        panic!("the hosts never settled at {}", self.now);
    }

    /// When the earlier of the two hosts has timed work.
    fn next_timer(&self) -> Option<Instant> {
        let c = self.client.until_timer().map(|d| self.now + d.into());
        let s = self
            .server
            .as_ref()
            .and_then(Host::until_timer)
            .map(|d| self.now + d.into());
        match (c, s) {
            (Some(c), Some(s)) => Some(c.min(s)),
            (c, s) => c.or(s),
        }
    }

    /// Runs both hosts for `d` of stack time, timer by timer.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        self.run_until(end, |_| false);
    }

    /// Runs both hosts until `done` says so (checked after each settled
    /// step) or the clock reaches `end`. Returns whether `done` said so.
    pub fn run_until(&mut self, end: Instant, mut done: impl FnMut(&mut Rig) -> bool) -> bool {
        loop {
            self.settle();
            if done(self) {
                return true;
            }
            if self.now >= end {
                return false;
            }
            // Never step backwards, and always forwards: a timer due now
            // that did no work must not stall the loop.
            let next = self
                .next_timer()
                .unwrap_or(end)
                .max(self.now + Duration::from_micros(1))
                .min(end);
            self.now = next;
        }
    }

    /// The host on `side`.
    pub fn host(&mut self, side: Side) -> &mut Host {
        match side {
            Side::Client => &mut self.client,
            Side::Server => self.server(),
        }
    }

    /// Waits (in stack time, at most `limit`) for the outcome of `call`.
    pub fn finish(&mut self, call: &RpcCall, limit: Duration) -> Option<Result<Vec<u8>, RpcError>> {
        self.finish_on(Side::Client, call, limit)
    }

    /// Waits (in stack time, at most `limit`) for the outcome of `call`,
    /// made by the host on `side`.
    pub fn finish_on(
        &mut self,
        side: Side,
        call: &RpcCall,
        limit: Duration,
    ) -> Option<Result<Vec<u8>, RpcError>> {
        let end = self.now + limit;
        let mut out = None;
        self.run_until(end, |r| match r.host(side).rpc().poll(call) {
            Ok(None) => false,
            Ok(Some(m)) => {
                out = Some(Ok(m.as_slice().to_vec()));
                true
            }
            Err(e) => {
                out = Some(Err(e));
                true
            }
        });
        out
    }

    /// One call from the client, waited for at most a minute of stack time.
    pub fn call(&mut self, id: u32, request: &[u8]) -> Result<Vec<u8>, RpcError> {
        let peer = self.server_peer();
        let call = self.client.rpc().start(peer, id, request)?;
        self.finish(&call, Duration::from_secs(60))
            .unwrap_or_else(|| panic!("no outcome of the call to {id} within 60 s"))
    }

    /// Adds a drop rule.
    pub fn drop_frames(
        &self,
        from: Side,
        skip: usize,
        count: usize,
        matches: impl Fn(&[u8]) -> bool + Send + 'static,
    ) {
        lock(&self.log).rules.push(DropRule {
            from,
            matches: Box::new(matches),
            skip,
            count,
        });
    }

    /// The frames sent so far.
    pub fn frames(&self) -> Vec<Frame> {
        lock(&self.log).frames.clone()
    }

    /// Forgets the frames sent so far (and the drop rules).
    pub fn clear_log(&self) {
        let mut l = lock(&self.log);
        l.frames.clear();
        l.rules.clear();
    }

    /// Puts `frame` on the wire as if `from` had sent it (not recorded,
    /// never dropped): the other host receives it on its next poll.
    pub fn inject(&self, from: Side, frame: &[u8]) {
        let pool = MsgPool::new(pathstack::core::PoolConfig::small(4));
        let m = pool.alloc_copy(frame).expect("a buffer");
        let end = match from {
            Side::Client => &self.client_end,
            Side::Server => &self.server_end,
        };
        lock(&end.0)
            .transmit(m, self.now)
            .expect("room on the wire");
    }

    /// The server goes down: its host is dropped (frames it has not read
    /// stay on the wire end).
    pub fn server_down(&mut self) {
        self.server = None;
    }

    /// The server comes up again: a new host on the same wire end (in
    /// the same wrapper), with a new boot id.
    pub fn server_up(&mut self) -> &mut Host {
        let mut s = rpc_host(
            self.net,
            SERVER_IP,
            Tapped::new(
                (self.wrap_server)(self.server_end.clone()),
                Side::Server,
                self.log.clone(),
            ),
        );
        s.set_manual_clock(self.now);
        self.server.insert(s)
    }

    /// The client reboots: its host is replaced by a new one on the same
    /// wire end, with a new boot id (calls in flight are lost with it).
    pub fn reboot_client(&mut self) {
        let mut c = rpc_host(
            self.net,
            CLIENT_IP,
            Tapped::new(self.client_end.clone(), Side::Client, self.log.clone()),
        );
        c.set_manual_clock(self.now);
        // The old host (and its stack) goes only now, after the new one
        // exists: its device is the shared end, so the wire stays up.
        self.client = c;
    }
}

/// A frame of the RPC stack, split at its layers (spec §3.2, §4.2, §6.2,
/// §8): only what a test needs to find and check frames.
#[derive(Clone, Copy, Debug)]
pub struct RpcFrame<'a> {
    /// The BLAST header (20 bytes).
    pub blast: &'a [u8],
    /// What follows BLAST's header, cut to BLAST's `len` (no padding).
    pub body: &'a [u8],
}

impl<'a> RpcFrame<'a> {
    /// BLAST's `seq` (0: a short message).
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes(self.blast[4..8].try_into().unwrap())
    }
    /// BLAST's `op` (1 SEND, 2 NACK, 3 RETRANSMIT).
    pub fn op(&self) -> u8 {
        self.blast[14]
    }
    /// BLAST's mask.
    pub fn mask(&self) -> u16 {
        u16::from_be_bytes([self.blast[18], self.blast[19]])
    }
    /// BLAST's `num_frag`.
    pub fn num_frag(&self) -> u16 {
        u16::from_be_bytes([self.blast[12], self.blast[13]])
    }
    /// The BID header of a short message.
    pub fn bid(&self) -> Option<&'a [u8]> {
        (self.seq() == 0).then(|| self.body.get(..12)).flatten()
    }
    /// The CHAN header of a short message.
    pub fn chan(&self) -> Option<&'a [u8]> {
        (self.seq() == 0).then(|| self.body.get(12..28)).flatten()
    }
    /// CHAN's flags of a short message.
    pub fn chan_flags(&self) -> Option<u8> {
        self.chan().map(|c| c[3])
    }
    /// CHAN's seq of a short message.
    pub fn chan_seq(&self) -> Option<u32> {
        self.chan()
            .map(|c| u32::from_be_bytes(c[8..12].try_into().unwrap()))
    }
    /// What follows CHAN's header in a short message (MSELECT and data).
    pub fn chan_body(&self) -> Option<&'a [u8]> {
        (self.seq() == 0).then(|| self.body.get(28..)).flatten()
    }
}

/// The BLAST part of `frame`, if it is one of the RPC stack's on `net`
/// (EtherType 0x3001, or IPv4 protocol 101).
pub fn rpc_frame(frame: &[u8], net: RpcNet) -> Option<RpcFrame<'_>> {
    let at = blast_at(net);
    let ok = match net {
        RpcNet::Eth => frame.get(12..14)? == [0x30, 0x01],
        RpcNet::Ip => frame.get(12..14)? == [0x08, 0x00] && *frame.get(23)? == 101,
    };
    if !ok {
        return None;
    }
    let blast = frame.get(at..at + 20)?;
    let len = u32::from_be_bytes(blast[8..12].try_into().unwrap()) as usize;
    let rest = frame.get(at + 20..)?;
    let body = if blast[14] == 2 {
        &rest[..0]
    } else {
        rest.get(..len)?
    };
    Some(RpcFrame { blast, body })
}

/// The BIDCTL header of `frame`, if it is one on `net` (EtherType 0x3006,
/// or IPv4 protocol 205).
pub fn bidctl_frame(frame: &[u8], net: RpcNet) -> Option<&[u8]> {
    let ok = match net {
        RpcNet::Eth => frame.get(12..14)? == [0x30, 0x06],
        RpcNet::Ip => frame.get(12..14)? == [0x08, 0x00] && *frame.get(23)? == 205,
    };
    let at = blast_at(net);
    ok.then(|| frame.get(at..at + 20)).flatten()
}

/// `b` as spaced hex, for messages.
pub fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Bytes `0..len` of a pattern that differs per `salt`.
pub fn pattern(len: usize, salt: u32) -> Vec<u8> {
    (0..len)
        .map(|i| {
            ((i as u32)
                .wrapping_mul(31)
                .wrapping_add(salt.wrapping_mul(7919))
                >> 1) as u8
        })
        .collect()
}
