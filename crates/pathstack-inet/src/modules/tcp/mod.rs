//! `TCP` (RFC 9293) on paths: a path per connection and per listener.
//!
//! - A **connection** is an active path TCP/IP/ARP/ETH/driver keyed by
//!   both addresses and both ports; its stage ([`TcpConnStage`]) holds the
//!   connection's [`Tcb`](crate::tcp::Tcb) and turns segments into calls
//!   of it and its output into messages down the path.
//! - A **listener** is a passive path keyed by the local port; its stage
//!   ([`TcpListenStage`]) answers SYNs. A SYN it takes opens the
//!   connection's own path (Scout's passive open, thesis §3.3.2: the path
//!   is made by the module when the first message asks for it) and the SYN
//!   is replayed on it, so from the third segment on the classifier finds
//!   the connection directly. The SYN queue (connections in SYN-RECEIVED)
//!   and the accept queue (established, not yet accepted) are bounded by
//!   the listen backlog; when the SYN queue is full, the listener answers
//!   with SYN cookies (RFC 4987 §3.6) and opens the path when a valid
//!   cookie's ACK arrives.
//! - TCP's own path (TCP/IP/…, passive, protocol 6) catches the segments
//!   no connection or listener takes and answers them with a reset
//!   (RFC 9293 §3.10.7.1), as IP's path answers UDP with ICMP.
//!
//! Paths are made at `TCP` with `PARTICIPANTS` as for UDP (local
//! `[.., Port]`, remote `[.., Ipv4, Port]`), `PASSIVE_OPEN` for a
//! listener, and the options in [`TCP_CONFIG`], [`TCP_TTL`] and
//! [`TCP_BACKLOG`].

mod bound;
mod conn;
mod listen;
mod read_would_block;
mod reset;

pub use bound::BoundPorts;
pub use conn::TcpConnStage;
pub use listen::TcpListenStage;
pub use read_would_block::ReadWouldBlock;
pub use reset::TcpResetStage;

use super::ephemeral::{ephemeral_after, ephemeral_order, EPHEMERAL};
use super::params::transport_ends;
use crate::tcp::{FourTuple, IsnGenerator, SeqNumber, SynCookies, TcpConfig, TcpOffload};
use pathstack_core::attrs::keys;
use pathstack_core::attrs::{AttrKey, Attrs};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::fast_map::FastMap;
use pathstack_core::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use pathstack_core::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::{Instant, PathId};
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// Spec of `TCP`.
pub const TCP_SPEC: ModuleSpec = ModuleSpec {
    name: "TCP",
    doc:
        "TCP (RFC 9293): a path per connection and per listener, SYN cookies, SACK, RACK-TLP, CUBIC",
    services: ServiceSpec::OVER_ONE,
    params: &[
        ParamSpec::optional("mss", "the MSS announced: the interface MTU less 40 (default 1460)"),
        ParamSpec::optional("max_connections", "most connection and listener paths at once (default 65536)"),
        ParamSpec::optional("csum_offload", "leave TCP checksums partial for the device to finish (default false; set from the device's offloads)"),
        ParamSpec::optional("tso_max", "largest IPv4 datagram the device segments, TSO (default 0: none; needs csum_offload)"),
        ParamSpec::optional("syncookies", "answer with SYN cookies when a SYN queue is full (default true)"),
        ParamSpec::optional("seed", "derive the ISN and SYN-cookie secrets from this number instead of drawing them at random: \
                  deterministic simulation and reproducible tests only, the secrets become guessable (default: random)"),
    ],
    understands: &["TCP_CONFIG", "TCP_TTL", "TCP_BACKLOG", "TCP_OPEN"],
};

/// A path's connection options (the socket options); the module's
/// defaults when absent.
pub const TCP_CONFIG: AttrKey<TcpConfig> = AttrKey::limited("TCP_CONFIG");
/// The IP time to live of a path's segments from its first (`IP_TTL`
/// set on a socket before it connects or listens: the SYN, or a
/// listener's SYN-ACKs and its connections' segments, carry it; RFC 1122
/// §3.2.1.7 lets the transport set it); IP's default when absent.
pub const TCP_TTL: AttrKey<u8> = AttrKey::limited("TCP_TTL");
/// A listener's backlog: the most connections in its SYN queue and,
/// separately, in its accept queue (Linux bounds both by it).
pub const TCP_BACKLOG: AttrKey<u32> = AttrKey::limited("TCP_BACKLOG");
/// Set by a listener on the path it opens for a connection: what opened
/// it (internal to the module).
pub const TCP_OPEN: AttrKey<PassiveOpen> = AttrKey::limited("TCP_OPEN");

/// How a listener opened a connection's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassiveOpen {
    /// A SYN, replayed on the new path (SYN queue).
    Syn,
    /// The ACK of a SYN cookie, replayed on the new path (RFC 4987).
    Cookie(crate::tcp::CookieOpen),
}

/// Why `TCP` refused to make a path ([`PathError::cause`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TcpRefusal {
    /// A connection without a remote address and port.
    #[error("a TCP connection needs a remote address and port in PARTICIPANTS (or PASSIVE_OPEN for a listener)")]
    NoRemote,
    /// Another listener holds the port.
    #[error("TCP port {0} is already listening")]
    PortInUse(u16),
    /// A connection with this 4-tuple exists.
    #[error("a TCP connection {0}:{1} → {2}:{3} exists already")]
    TupleInUse(Ipv4Addr, u16, Ipv4Addr, u16),
    /// Every ephemeral port is in use towards that peer.
    #[error("no ephemeral port left")]
    NoEphemeralPort,
    /// The connection table is at its `max_connections` bound.
    #[error("TCP connection table full ({0} paths)")]
    TableFull(usize),
}

/// A listener's queues.
#[derive(Debug, Default)]
pub struct Listener {
    /// Most connections in each queue.
    pub backlog: usize,
    /// Connections in SYN-RECEIVED.
    pub syn_queue: usize,
    /// Established connections waiting for `accept`.
    pub accept_queue: VecDeque<PathId>,
    /// SYN-ACKs sent as cookies.
    pub cookies_sent: u64,
    /// Connections opened by a cookie's ACK.
    pub cookies_accepted: u64,
    /// SYNs dropped because both queues were full (or cookies are off).
    pub overflows: u64,
    /// The listener's path.
    pub path: Option<PathId>,
}

/// Counters of the module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCounters {
    /// Connections established (both directions).
    pub established: u64,
    /// Passive opens (paths a listener opened).
    pub passive_opens: u64,
    /// Active opens.
    pub active_opens: u64,
    /// Resets sent for segments no connection took.
    pub resets_sent: u64,
    /// Connections that ended with an error.
    pub failed: u64,
}

/// The `TCP` module: ports, listeners and the secrets of ISNs and cookies.
pub struct TcpModule {
    defaults: TcpConfig,
    /// The configuration last handed to a connection, shared by every
    /// connection made with an equal one (`share`).
    shared: Arc<TcpConfig>,
    /// Listeners, 4-tuples and port use: foldhash-keyed, as an open
    /// looks each up (`pathstack_core::fast_map`).
    listeners: FastMap<u16, Listener>,
    /// Connections per 4-tuple, and per local port (ephemeral choice).
    tuples: FastMap<(u16, Ipv4Addr, u16), Option<PathId>>,
    port_use: FastMap<u16, u32>,
    /// Ports of sockets bound and not yet connected or listening.
    bound: BoundPorts,
    max_paths: usize,
    next_ephemeral: u16,
    isn: IsnGenerator,
    cookies: Option<SynCookies>,
    /// TCP's own path (resets for strays).
    path: Option<PathId>,
    pub(crate) counters: TcpCounters,
}

/// The two secrets, ISN's and the cookies': drawn at random, or both
/// derived from `seed` (the `seed` parameter) so that a simulated host
/// opens its connections with the same sequence numbers on every run.
/// The two are independent either way (`syn_cookie`: a separate key, as
/// Linux's `syncookie_secret`): from a seed, each is SipHash-2-4 of the
/// seed under its own label, so knowing one tells nothing of the other
/// without the seed.
fn secrets(seed: Option<u64>) -> ([u8; 16], [u8; 16]) {
    let Some(seed) = seed else {
        return (random_secret(), random_secret());
    };
    let derive = |label: &[u8]| {
        let mut out = [0u8; 16];
        for (i, chunk) in out.chunks_mut(8).enumerate() {
            let mut h = siphasher::sip::SipHasher24::new_with_keys(seed, i as u64);
            h.write(label);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
        out
    };
    (derive(b"isn"), derive(b"syn cookie"))
}

/// 16 random bytes from the standard library's per-process random hasher
/// keys (no extra dependency; the secrets need not be cryptographically
/// generated to defeat off-path guessing, RFC 6528 §3 asks for a secret
/// that is hard to guess).
fn random_secret() -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    out
}

impl TcpModule {
    /// Factory: parameters `mss`, `max_connections`, `syncookies`,
    /// `csum_offload`, `tso_max`, `seed`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let defaults = TcpConfig {
            mss: setup.param("mss", 1460u16)?,
            offload: TcpOffload {
                checksum: setup.param("csum_offload", false)?,
                tso_max: setup.param("tso_max", 0u32)?,
            },
            ..TcpConfig::default()
        };
        let cookies = setup.param("syncookies", true)?;
        let seed = match setup.params().get("seed") {
            None => None,
            Some(_) => Some(setup.param("seed", 0u64)?),
        };
        let (isn_secret, cookie_secret) = secrets(seed);
        Ok(Box::new(TcpModule {
            defaults,
            shared: Arc::new(defaults),
            listeners: FastMap::default(),
            tuples: FastMap::default(),
            port_use: FastMap::default(),
            bound: BoundPorts::default(),
            max_paths: setup.param("max_connections", 65_536usize)?,
            next_ephemeral: *EPHEMERAL.start(),
            isn: IsnGenerator::new(isn_secret),
            cookies: cookies.then(|| SynCookies::new(cookie_secret)),
            path: None,
            counters: TcpCounters::default(),
        }))
    }

    /// `cfg` as an `Arc` shared with the connections made before with
    /// an equal configuration: a million connections of one listener
    /// hold one copy between them, not 208 octets each (issue 28 item
    /// 4). One configuration is remembered, the last one seen: a host's
    /// connections nearly all have the listener's or the defaults.
    fn share(&mut self, cfg: TcpConfig) -> Arc<TcpConfig> {
        if *self.shared != cfg {
            self.shared = Arc::new(cfg);
        }
        Arc::clone(&self.shared)
    }

    /// The defaults of new connections (the MSS from the graph).
    pub fn defaults(&self) -> &TcpConfig {
        &self.defaults
    }

    /// A listener's queues.
    pub fn listener(&self, port: u16) -> Option<&Listener> {
        self.listeners.get(&port)
    }

    /// Takes the oldest connection waiting in `port`'s accept queue.
    pub fn take_accepted(&mut self, port: u16) -> Option<PathId> {
        self.listeners.get_mut(&port)?.accept_queue.pop_front()
    }

    /// The module's counters.
    pub fn counters(&self) -> TcpCounters {
        self.counters
    }

    /// TCP's own path.
    pub fn path(&self) -> Option<PathId> {
        self.path
    }

    /// Connections and listeners.
    pub fn paths_in_use(&self) -> usize {
        self.tuples.len() + self.listeners.len()
    }

    /// Connections (in any state, TIME-WAIT included) whose local port
    /// is `port`: what a listener without `SO_REUSEADDR` may not bind
    /// over (the facade's `TcpSocket::set_reuseaddr`).
    pub fn connections_on_port(&self, port: u16) -> u32 {
        self.port_use.get(&port).copied().unwrap_or(0)
    }

    /// The ISS of a connection (RFC 6528).
    pub(crate) fn iss(&self, t: &FourTuple, now: Instant) -> SeqNumber {
        self.isn.isn(t, now)
    }

    pub(crate) fn cookies(&self) -> Option<&SynCookies> {
        self.cookies.as_ref()
    }

    pub(crate) fn listener_mut(&mut self, port: u16) -> Option<&mut Listener> {
        self.listeners.get_mut(&port)
    }

    fn ephemeral(&mut self, remote: Ipv4Addr, rport: u16) -> Option<u16> {
        self.next_free_port(|m, p| !m.tuples.contains_key(&(p, remote, rport)))
    }

    /// The next ephemeral port that no listener and no bound socket holds
    /// and that `free` accepts.
    fn next_free_port(&mut self, free: impl Fn(&Self, u16) -> bool) -> Option<u16> {
        let p = ephemeral_order(self.next_ephemeral)
            .find(|&p| !self.listeners.contains_key(&p) && !self.bound.holds(p) && free(self, p))?;
        self.next_ephemeral = ephemeral_after(p);
        Some(p)
    }

    /// The ports bound sockets hold.
    pub fn bound(&self) -> &BoundPorts {
        &self.bound
    }

    /// Holds `port` for a socket bound to it that has not connected or
    /// listened yet (`bind(2)`; with `SO_REUSEADDR` if `reuse`), as
    /// Linux decides ([`BoundPorts`]); port 0 takes a free ephemeral port
    /// at once. The port held; it is given back with
    /// [`unbind_port`](Self::unbind_port).
    pub fn bind_port(&mut self, port: u16, reuse: bool) -> Result<u16, TcpRefusal> {
        if self.paths_in_use() + self.bound.len() >= self.max_paths {
            return Err(TcpRefusal::TableFull(self.max_paths));
        }
        let port = if port == 0 {
            // A port nothing uses: no connection either (Linux's bind
            // looks for an empty bind bucket first).
            self.next_free_port(|m, p| m.connections_on_port(p) == 0)
                .ok_or(TcpRefusal::NoEphemeralPort)?
        } else {
            let in_use = self.listeners.contains_key(&port)
                || self.bound.conflicts(port, reuse)
                || (!reuse && self.connections_on_port(port) > 0);
            if in_use {
                return Err(TcpRefusal::PortInUse(port));
            }
            port
        };
        self.bound.take(port, reuse);
        Ok(port)
    }

    /// A bound socket lets go of `port`: it closed, or its connection or
    /// listener is about to take it.
    pub fn unbind_port(&mut self, port: u16) {
        self.bound.give_back(port);
    }

    /// A connection path is gone: its tuple and port are free.
    pub(crate) fn release_conn(&mut self, lport: u16, remote: Ipv4Addr, rport: u16, path: PathId) {
        if matches!(self.tuples.get(&(lport, remote, rport)), Some(&Some(p)) if p == path)
            || matches!(self.tuples.get(&(lport, remote, rport)), Some(None))
        {
            self.tuples.remove(&(lport, remote, rport));
        }
        if let Some(n) = self.port_use.get_mut(&lport) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.port_use.remove(&lport);
            }
        }
    }

    /// A connection's path exists: its tuple names it.
    pub(crate) fn record_conn(&mut self, lport: u16, remote: Ipv4Addr, rport: u16, path: PathId) {
        self.tuples.insert((lport, remote, rport), Some(path));
    }

    /// The path of a connection, if one exists.
    pub fn connection(&self, lport: u16, remote: Ipv4Addr, rport: u16) -> Option<PathId> {
        self.tuples.get(&(lport, remote, rport)).copied().flatten()
    }

    /// A listener path is gone: its queues go with it (the connections
    /// waiting in them are the listener stage's to abort).
    pub(crate) fn release_listener(&mut self, port: u16) -> Option<Listener> {
        self.listeners.remove(&port)
    }
}

impl Module for TcpModule {
    fn spec(&self) -> &'static ModuleSpec {
        &TCP_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        // TCP's own path: resets for segments nobody takes.
        cx.request_path(Attrs::new().with(&keys::PASSIVE_OPEN, true), u64::MAX);
        Ok(())
    }

    fn path_created(&mut self, tag: u64, result: Result<PathId, &PathError>) {
        if tag == u64::MAX {
            if let Ok(p) = result {
                self.path = Some(p);
            }
        }
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let passive = attrs.get(&keys::PASSIVE_OPEN) == Some(&true);
        let (local, remote, remote_ip) = transport_ends(attrs);
        let mut cfg = attrs.get(&TCP_CONFIG).copied().unwrap_or(self.defaults);
        let ttl = attrs.get(&TCP_TTL).copied();
        // The device's, not the application's (see `TcpOffload`).
        cfg.offload = self.defaults.offload;
        attrs.insert(&keys::PROT_ID, u32::from(crate::wire::ipv4::protocol::TCP));
        if self.paths_in_use() >= self.max_paths {
            return Err(cx.refuse(TcpRefusal::TableFull(self.max_paths)));
        }
        if passive && local.is_none() {
            // TCP's own path.
            return Ok(Created::new(TcpResetStage, Route::Service(1)));
        }
        if passive {
            let port = local
                .filter(|&p| p != 0)
                .map_or_else(|| self.ephemeral(Ipv4Addr::UNSPECIFIED, 0), Some);
            let Some(port) = port else {
                return Err(cx.refuse(TcpRefusal::NoEphemeralPort));
            };
            // A socket bound to the port without `SO_REUSEADDR` keeps
            // it from any listener ([`BoundPorts`]).
            if self.listeners.contains_key(&port) || self.bound.holds_exclusively(port) {
                return Err(cx.refuse(TcpRefusal::PortInUse(port)));
            }
            let backlog = attrs
                .get(&TCP_BACKLOG)
                .copied()
                .unwrap_or(128)
                .clamp(1, 65_535);
            self.listeners.insert(
                port,
                Listener {
                    backlog: backlog as usize,
                    ..Listener::default()
                },
            );
            return Ok(Created::new(
                TcpListenStage::new(port, cfg, ttl),
                Route::Service(1),
            ));
        }
        let (Some(rport), Some(rip)) = (remote, remote_ip) else {
            return Err(cx.refuse(TcpRefusal::NoRemote));
        };
        let open = attrs.get(&TCP_OPEN).copied();
        let lport = match local.filter(|&p| p != 0) {
            // An active open from a port a bound socket holds for itself
            // (Linux's implicit bind in `connect` fails the same way).
            Some(p) if open.is_none() && self.bound.holds_exclusively(p) => {
                return Err(cx.refuse(TcpRefusal::PortInUse(p)));
            }
            Some(p) => p,
            None => self
                .ephemeral(rip, rport)
                .ok_or_else(|| cx.refuse(TcpRefusal::NoEphemeralPort))?,
        };
        if self.tuples.contains_key(&(lport, rip, rport)) {
            return Err(cx.refuse(TcpRefusal::TupleInUse(
                Ipv4Addr::UNSPECIFIED,
                lport,
                rip,
                rport,
            )));
        }
        *self.port_use.entry(lport).or_default() += 1;
        // The path id is known once the path exists: the stage's
        // `establish` records it.
        self.tuples.insert((lport, rip, rport), None);
        let mut stage = TcpConnStage::new(self.share(cfg), lport, rip, rport, open);
        stage.set_ttl(ttl);
        match open {
            Some(_) => self.counters.passive_opens += 1,
            None => self.counters.active_opens += 1,
        }
        Ok(Created::new(stage, Route::Service(1)))
    }

    fn partial_classifier(&self) -> Option<Box<dyn pathstack_core::demux::PartialClassifier>> {
        Some(Box::new(TcpDemux))
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        vec![
            ("connections".into(), self.tuples.len() as u64),
            ("listeners".into(), self.listeners.len() as u64),
            ("established".into(), c.established),
            ("active_opens".into(), c.active_opens),
            ("passive_opens".into(), c.passive_opens),
            ("resets_sent".into(), c.resets_sent),
            ("failed".into(), c.failed),
        ]
    }
}

pathstack_core::header_demux!(
    /// TCP's partial classifier: the ports of the header
    /// ([`crate::wire::tcp::packet_demux_key`]). Passive: the destination
    /// port, so a listener's segments are found with one probe while no
    /// active path shares their EtherType (`flow.rs` of the classifier,
    /// point 3); non-SYN segments too, as the walk finds them.
    TcpDemux,
    crate::wire::tcp,
    PASSIVE_FLOW_LAYOUT
);

/// The 4-tuple of a connection as the ISN and cookie hashes take it.
pub(crate) fn four_tuple(lip: Ipv4Addr, lport: u16, rip: Ipv4Addr, rport: u16) -> FourTuple {
    FourTuple {
        local_ip: IpAddr::V4(lip),
        local_port: lport,
        remote_ip: IpAddr::V4(rip),
        remote_port: rport,
    }
}

#[cfg(test)]
mod tests {
    use super::secrets;
    #[test]
    fn a_seed_gives_the_same_two_independent_secrets() {
        let (isn, cookie) = secrets(Some(7));
        assert_eq!(secrets(Some(7)), (isn, cookie));
        assert_ne!(isn, cookie);
        let (isn8, cookie8) = secrets(Some(8));
        assert!(isn8 != isn && cookie8 != cookie);
        // Without a seed, each host draws its own (two draws agreeing is a
        // 2^-128 chance).
        assert_ne!(secrets(None), secrets(None));
    }
}
