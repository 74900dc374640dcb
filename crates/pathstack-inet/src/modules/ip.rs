//! `IP`: IPv4 on a path (RFC 791, RFC 1122 §3.2/3.3) — header checksum and
//! validation, routing (the interface and next hop: the role of Scout's
//! VNET), fragmentation above the MTU, reassembly within hard bounds, and
//! ICMP errors for datagrams no path claims.
//!
//! A path through IP is either *active* (the remote address is fixed when
//! the path is made: key protocol + both addresses) or *passive* (any peer:
//! key protocol only; the peer of each datagram travels in the message's
//! annotations, so replies go back to it). IP also keeps one path of its own
//! per interface (`IP / ARP / ETH / driver`) that the classifier falls back
//! to: fragments of datagrams whose path cannot be known until they are
//! whole, and datagrams for protocols or ports nobody listens on. Its
//! stage reassembles; at its end [`IpModule`] classifies the datagram again
//! and hands it on after the IP stage of the right path (thesis §3.4.2,
//! Figure 3.6), or answers with ICMP destination unreachable.

use super::loopback;
use super::params::{optional, parse_cidr, required};
use super::ETHERTYPE_IPV4;
use crate::anno::InetAnno;
use crate::ip::frag::fragment;
use crate::ip::icmp_suppression::may_send_error;
use crate::ip::ipv4_ident::IdentCounter;
use crate::ip::rate_limit::TokenBucket;
use crate::ip::reassembly::{Reassembler, Reassembly, ReassemblyConfig};
use crate::ip::route::{RouteEntry, RoutingTable};
use crate::wire::checksum;
use crate::wire::icmp::{IcmpError, Quote};
use crate::wire::ipv4::{self, protocol, Ipv4Repr, Ipv4Template, MIN_HEADER_LEN};
use crate::wire::udp::UdpDropReason;
use crate::Ipv4DropReason;
use pathstack_core::attrs::keys::{self, AddrPart};
use pathstack_core::attrs::{AttrKey, Attrs};
use pathstack_core::demux::{DemuxKey, KeyMode, PartialClassifier};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::generation::Generation;
use pathstack_core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack_core::module::{
    CreateCx, Created, Creation, EndRoute, ModCx, Module, Route, RouteCx,
};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, EstablishCx, Stage, Verdict};
use pathstack_core::{Dir, DropReason, Duration, Instant, Msg, PathId};
use std::net::Ipv4Addr;

/// Spec of `IP`.
pub const IP_SPEC: ModuleSpec = ModuleSpec {
    name: "IP",
    doc: "IPv4 (RFC 791): routing, fragmentation, reassembly, ICMP errors for unclaimed datagrams",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::AtLeastOne).init_after(),
    ],
    params: &[
        ParamSpec::required("addr", "address/prefix of each interface, comma-separated in `down` connection order (e.g. 10.0.0.1/24)"),
        ParamSpec::optional("gateway", "default gateway (reached through the interface whose prefix holds it)"),
        ParamSpec::optional("mtu", "MTU of every interface in bytes (default 1500)"),
        ParamSpec::optional("reassembly_timeout_ms", "reassembly timer (default 60000; RFC 791 suggests 15 s, Linux uses 30 s)"),
        ParamSpec::optional("reassembly_datagrams", "datagrams reassembled at once (default 16)"),
        ParamSpec::optional("reassembly_bytes", "fragment bytes held in total (default 1048576)"),
    ],
    understands: &[],
};

/// Which interface an IP-own path serves (set by `IP` itself).
pub const IP_INTERFACE: AttrKey<usize> = AttrKey::pervasive("IP_INTERFACE");

/// The local address IP chose for a path (set by `IP` when it makes its
/// stage): transport stages above need it for their pseudo-header checksum
/// (RFC 768, RFC 793) and read it from the path's attributes.
pub const LOCAL_IPV4: AttrKey<Ipv4Addr> = AttrKey::pervasive("LOCAL_IPV4");

/// Why `IP` refused to make a path: the source of the
/// [`PathError::Refused`] it returns, for callers to downcast
/// ([`PathError::cause`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IpRefusal {
    /// The path does not say which protocol it carries.
    #[error("a path through IP needs PROT_ID = the IP protocol number")]
    NoProtocol,
    /// The local address is not one of this host's.
    #[error("{0} is not an address of this host")]
    NotLocal(Ipv4Addr),
    /// The routing table has no route to the remote address.
    #[error("no route to {0}")]
    NoRoute(Ipv4Addr),
    /// The remote address is reached through another interface than the
    /// local address's.
    #[error("{0} is not reached through the interface of the local address")]
    WrongInterface(Ipv4Addr),
    /// The path names an interface the module does not have.
    #[error("no interface {0}")]
    NoInterface(usize),
    /// The interface has no `down` connection in the module graph.
    #[error("interface {index} ({addr}) has no `down` connection")]
    Unconnected {
        /// The interface's index.
        index: usize,
        /// Its address.
        addr: Ipv4Addr,
    },
}

/// One interface of the IP module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Our address on it.
    pub addr: Ipv4Addr,
    /// Prefix length of the attached network.
    pub prefix_len: u8,
    /// MTU in bytes.
    pub mtu: u16,
}

impl Interface {
    fn mask(&self) -> u32 {
        if self.prefix_len == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(self.prefix_len))
        }
    }
    /// The directed broadcast address of the attached network.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !self.mask())
    }
    /// Whether a datagram to `dst` arriving here is for this host (RFC 1122
    /// §3.3.6: our address, limited or directed broadcast).
    fn accepts(&self, dst: Ipv4Addr) -> bool {
        dst == self.addr || dst.is_broadcast() || (self.prefix_len < 31 && dst == self.broadcast())
    }
    fn is_broadcast(&self, dst: Ipv4Addr) -> bool {
        dst.is_broadcast() || (self.prefix_len < 31 && dst == self.broadcast())
    }
}

/// Counters of the `IP` module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpCounters {
    /// Datagrams sent as fragments.
    pub fragmented: u64,
    /// Fragments sent.
    pub fragments_out: u64,
    /// Datagrams reassembled.
    pub reassembled: u64,
    /// Datagrams handed to another path after reassembly.
    pub rerouted: u64,
    /// Datagrams this host sent to itself, turned around in IP
    /// ([`super::loopback`]).
    pub looped_back: u64,
    /// ICMP errors sent.
    pub icmp_errors_sent: u64,
    /// ICMP errors not sent (RFC 1122 §3.2.2 rules, rate limit).
    pub icmp_errors_suppressed: u64,
}

/// The `IP` module: interfaces, routes, identification, reassembly.
pub struct IpModule {
    ifaces: Vec<Interface>,
    routes: RoutingTable,
    ident: IdentCounter,
    reassembler: Reassembler,
    reassembly_next: Option<Instant>,
    errors: Option<TokenBucket>,
    /// IP's own path per interface.
    own: Vec<Option<PathId>>,
    /// Where ICMP errors are sent: ICMP's passive path, from the stage
    /// above IP, in the down direction.
    icmp: Option<(PathId, usize, Dir)>,
    counters: IpCounters,
}

/// Where a path through IP sends: its interface (by index and as it is),
/// its fixed next hop, and whether its datagrams turn around in IP
/// ([`super::loopback`]).
struct Placement {
    iface: usize,
    f: Interface,
    next_hop: Option<Ipv4Addr>,
    loopback: bool,
}

impl IpModule {
    /// The interface a path to `remote` uses when `remote` is this host
    /// itself: the interface with that address, or for `127.0.0.0/8` the
    /// loopback network (carried as the first interface's path below IP,
    /// which its datagrams never reach) with `local` as our address on it
    /// when that is a loopback address (a connection accepted on
    /// 127.1.2.3 answers from it), else 127.0.0.1.
    fn loopback_iface(
        &self,
        remote: Ipv4Addr,
        local: Option<Ipv4Addr>,
    ) -> Option<(usize, Interface)> {
        if remote.is_loopback() {
            let first = self.ifaces.first()?;
            return Some((
                0,
                Interface {
                    addr: local
                        .filter(Ipv4Addr::is_loopback)
                        .unwrap_or(super::loopback::LOOPBACK_ADDR),
                    prefix_len: 8,
                    mtu: first.mtu,
                },
            ));
        }
        let i = self.ifaces.iter().position(|f| f.addr == remote)?;
        Some((i, self.ifaces[i]))
    }

    /// The stage of a path through IP for `protocol` (`None`: IP's own
    /// path) to `remote`, placed as `place` says.
    fn created(
        &self,
        protocol: Option<u8>,
        remote: Option<Ipv4Addr>,
        place: Placement,
        attrs: &mut Attrs,
        cx: &mut CreateCx<'_>,
    ) -> Creation {
        let Placement {
            iface,
            f,
            next_hop,
            loopback,
        } = place;
        if cx.links(1) <= iface {
            return Err(cx.refuse(IpRefusal::Unconnected {
                index: iface,
                addr: f.addr,
            }));
        }
        attrs.insert(&keys::PROT_ID, u32::from(ETHERTYPE_IPV4));
        attrs.insert(&LOCAL_IPV4, f.addr);
        Ok(Created {
            stage: Box::new(IpStage {
                protocol,
                remote,
                next_hop,
                iface: f,
                iface_index: iface,
                template: protocol
                    .zip(remote)
                    .map(|(p, r)| Ipv4Template::new(f.addr, r, p)),
                routes: self.routes.generation().clone(),
                ident: self.ident.clone(),
                last_route: None,
                loopback,
            }),
            route: Route::Link {
                service: 1,
                link: iface,
            },
        })
    }

    /// Factory: parameters `addr`, `gateway`, `mtu`, `reassembly_*`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let mtu: u16 = setup.param("mtu", 1500u16)?;
        let bad = |key: &str, reason: String| ModuleError::BadParam {
            instance: setup.instance().to_string(),
            key: key.to_string(),
            reason,
        };
        if mtu < crate::ip::route::MIN_MTU {
            return Err(bad(
                "mtu",
                format!("{mtu} is below the IPv4 minimum of 68 (RFC 791)"),
            ));
        }
        let ifaces: Vec<Interface> = required(setup, "addr", |v: &str| {
            v.split(',')
                .map(|a| {
                    parse_cidr(a).map(|(addr, prefix_len)| Interface {
                        addr,
                        prefix_len,
                        mtu,
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })?;
        let gateway = optional(setup, "gateway", str::parse::<Ipv4Addr>)?;
        let mut routes = RoutingTable::new(ifaces.len() + 1);
        for (i, f) in ifaces.iter().enumerate() {
            let prefix = Ipv4Addr::from(u32::from(f.addr) & f.mask());
            routes
                .add(RouteEntry {
                    prefix,
                    prefix_len: f.prefix_len,
                    interface: i,
                    gateway: None,
                    src: f.addr,
                    mtu: f.mtu,
                })
                .map_err(|e| bad("addr", e.to_string()))?;
        }
        if let Some(gw) = gateway {
            let r = routes
                .lookup(gw)
                .ok_or_else(|| bad("gateway", format!("{gw} is on no interface's network")))?;
            routes
                .set_default(gw, r.interface, r.src, r.mtu)
                .map_err(|e| bad("gateway", e.to_string()))?;
        }
        let mut rc = ReassemblyConfig::default();
        rc.timeout = Duration::from_millis(setup.param("reassembly_timeout_ms", 60_000u64)?);
        rc.max_datagrams = setup.param("reassembly_datagrams", rc.max_datagrams)?;
        rc.max_total_bytes = setup.param("reassembly_bytes", rc.max_total_bytes)?;
        let n = ifaces.len();
        Ok(Box::new(IpModule {
            ifaces,
            routes,
            // A per-instance seed (RFC 6864 §5: not predictable across boots
            // would be better still; the address keeps test runs repeatable).
            ident: IdentCounter::new(0x5ca7),
            reassembler: Reassembler::new(rc),
            reassembly_next: None,
            errors: None,
            own: vec![None; n],
            icmp: None,
            counters: IpCounters::default(),
        }))
    }

    /// The interfaces, in `down` connection order.
    pub fn interfaces(&self) -> &[Interface] {
        &self.ifaces
    }
    /// The routing table.
    pub fn routes(&self) -> &RoutingTable {
        &self.routes
    }
    /// The reassembler (in-progress datagrams, bytes held, drop counts).
    pub fn reassembler(&self) -> &Reassembler {
        &self.reassembler
    }
    /// The counters.
    pub fn counters(&self) -> IpCounters {
        self.counters
    }

    /// Sends ICMP error `kind` about `datagram` (IP header first) through
    /// ICMP's path, if the RFC 1122 §3.2.2 rules and the rate limit allow.
    fn send_error(
        &mut self,
        kind: IcmpError,
        datagram: &Msg,
        now: Instant,
        send: impl FnOnce(PathId, usize, Dir, Msg) -> bool,
        pool: &pathstack_core::MsgPool,
    ) {
        let bytes = datagram.as_slice();
        let addr = |at| {
            bytes
                .get(at)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map_or(Ipv4Addr::UNSPECIFIED, Ipv4Addr::from)
        };
        let dst = addr(ipv4::field::DST_ADDR);
        let broadcast =
            datagram.anno().link_broadcast() || self.ifaces.iter().any(|f| f.is_broadcast(dst));
        let allowed = may_send_error(bytes, broadcast).is_ok()
            && self
                .errors
                .get_or_insert_with(|| TokenBucket::icmp_default(now))
                .try_acquire(now);
        let (Some((path, from, dir)), true) = (self.icmp, allowed) else {
            self.counters.icmp_errors_suppressed += 1;
            return;
        };
        let Some(quote) = Quote::from_datagram(bytes) else {
            self.counters.icmp_errors_suppressed += 1;
            return;
        };
        let Ok(mut m) = kind.build(pool, &quote) else {
            self.counters.icmp_errors_suppressed += 1;
            return;
        };
        m.anno_mut().set_peer_ip(addr(ipv4::field::SRC_ADDR));
        if send(path, from, dir, m) {
            self.counters.icmp_errors_sent += 1;
        } else {
            self.counters.icmp_errors_suppressed += 1;
        }
    }
}

pathstack_core::header_demux!(
    /// The IPv4 partial classifier; the key is the header's
    /// ([`ipv4::packet_demux_key`]). A fragment consumes the whole datagram,
    /// so the walk ends at IP and finds IP's own path (or the passive path
    /// of its protocol when that path does not look further, like ICMP's).
    Ipv4Demux,
    crate::wire::ipv4,
    PASSIVE_FLOW_LAYOUT
);

fn addr_part(parts: Option<&mut Vec<AddrPart>>) -> Option<Ipv4Addr> {
    let parts = parts?;
    match parts.last() {
        Some(AddrPart::Ipv4(a)) => {
            let a = Ipv4Addr::from(*a);
            parts.pop();
            Some(a)
        }
        _ => None,
    }
}

impl Module for IpModule {
    fn spec(&self) -> &'static ModuleSpec {
        &IP_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        self.errors = Some(TokenBucket::icmp_default(cx.now()));
        for i in 0..self.ifaces.len() {
            let attrs = Attrs::new()
                .with(&keys::PASSIVE_OPEN, true)
                .with(&IP_INTERFACE, i);
            cx.request_path(attrs, i as u64);
        }
        Ok(())
    }

    fn path_created(&mut self, tag: u64, result: Result<PathId, &PathError>) {
        if let (Ok(p), Some(slot)) = (result, self.own.get_mut(tag as usize)) {
            *slot = Some(p);
        }
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let (protocol, remote, iface, next_hop) = match cx.entry() {
            None => {
                let i = attrs.get(&IP_INTERFACE).copied().unwrap_or(0);
                (None::<u8>, None, i, None)
            }
            Some(_) => {
                let proto = attrs
                    .get(&keys::PROT_ID)
                    .and_then(|&p| u8::try_from(p).ok())
                    .ok_or_else(|| cx.refuse(IpRefusal::NoProtocol))?;
                let (remote, local) = match attrs.get_mut(&keys::PARTICIPANTS) {
                    Some(p) => (
                        addr_part(Some(&mut p.remote)),
                        addr_part(Some(&mut p.local)),
                    ),
                    None => (None, None),
                };
                // A path to this host itself turns its datagrams around
                // in IP (`super::loopback`): it is on the interface whose
                // address it names, or on the loopback network.
                let local = local.filter(|a| !a.is_unspecified());
                if let Some((iface, f)) = remote.and_then(|r| self.loopback_iface(r, local)) {
                    if let Some(a) = local.filter(|a| *a != f.addr) {
                        return Err(cx.refuse(IpRefusal::NotLocal(a)));
                    }
                    let place = Placement {
                        iface,
                        f,
                        next_hop: None,
                        loopback: true,
                    };
                    return self.created(Some(proto), remote, place, attrs, cx);
                }
                let local_iface = match local {
                    Some(a) => Some(
                        self.ifaces
                            .iter()
                            .position(|f| f.addr == a)
                            .ok_or_else(|| cx.refuse(IpRefusal::NotLocal(a)))?,
                    ),
                    None => None,
                };
                match remote {
                    Some(r) => {
                        let route = self
                            .routes
                            .lookup(r)
                            .ok_or_else(|| cx.refuse(IpRefusal::NoRoute(r)))?;
                        if local_iface.is_some_and(|i| i != route.interface) {
                            return Err(cx.refuse(IpRefusal::WrongInterface(r)));
                        }
                        (Some(proto), Some(r), route.interface, Some(route.next_hop))
                    }
                    None => (Some(proto), None, local_iface.unwrap_or(0), None),
                }
            }
        };
        let Some(&f) = self.ifaces.get(iface) else {
            return Err(cx.refuse(IpRefusal::NoInterface(iface)));
        };
        let place = Placement {
            iface,
            f,
            next_hop,
            loopback: false,
        };
        self.created(protocol, remote, place, attrs, cx)
    }

    fn route_end(&mut self, _dir: Dir, msg: &mut Msg, cx: &mut RouteCx<'_>) -> EndRoute {
        // A datagram (header included) fell off IP's own path: a
        // reassembled one, or one no path claimed.
        let own = cx.path();
        if let Some((p, d)) = cx.classify(msg.as_slice()).filter(|(p, _)| *p != own) {
            let ihl = usize::from(msg.as_slice()[0] & 0x0f) * 4;
            if msg.pop(ihl).is_ok() {
                self.counters.rerouted += 1;
                return EndRoute::Continue(p, d);
            }
        }
        let proto = msg.as_slice().get(9).copied().unwrap_or(0);
        let (kind, reason) = if proto == protocol::UDP {
            (
                IcmpError::PortUnreachable,
                DropReason::from(UdpDropReason::NoPort),
            )
        } else {
            (
                IcmpError::ProtocolUnreachable,
                DropReason::from(Ipv4DropReason::NoProtocol),
            )
        };
        let pool = cx.pool().clone();
        let now = cx.now();
        self.send_error(
            kind,
            msg,
            now,
            |p, from, dir, m| cx.send_on(p, from, dir, m).is_ok(),
            &pool,
        );
        EndRoute::Drop(reason)
    }

    fn poll(&mut self, cx: &mut ModCx<'_>) -> usize {
        let now = cx.now();
        if self.reassembly_next.is_none_or(|t| t > now) {
            return 0;
        }
        // RFC 1122 §3.3.2 allows a Time Exceeded (code 1) for a timed-out
        // datagram whose first fragment arrived; the reassembler counts the
        // timeout, and we do not send it (neither does smoltcp).
        let mut n = 0;
        self.reassembler.poll(now, |_| n += 1);
        self.reassembly_next = self.reassembler.poll_at();
        n
    }

    fn polls_when_due(&self) -> bool {
        // `poll` only acts on the deadline `poll_at` reports.
        true
    }

    fn poll_at(&self) -> Option<Instant> {
        self.reassembly_next
    }

    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        Some(Box::new(Ipv4Demux))
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        let mut v = vec![
            ("fragmented".into(), c.fragmented),
            ("fragments_out".into(), c.fragments_out),
            ("reassembled".into(), c.reassembled),
            ("rerouted".into(), c.rerouted),
            ("looped_back".into(), c.looped_back),
            ("icmp_errors_sent".into(), c.icmp_errors_sent),
            ("icmp_errors_suppressed".into(), c.icmp_errors_suppressed),
            (
                "reassembly_in_progress".into(),
                self.reassembler.in_progress() as u64,
            ),
            (
                "reassembly_bytes".into(),
                self.reassembler.bytes_buffered() as u64,
            ),
        ];
        v.extend(
            self.reassembler
                .drops()
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| (format!("reassembly_drop.{r}"), n)),
        );
        v
    }
}

/// The `IP` stage of one path.
pub struct IpStage {
    /// The upper protocol; `None` on IP's own path.
    protocol: Option<u8>,
    /// The fixed peer of an active path.
    remote: Option<Ipv4Addr>,
    /// The fixed next hop of an active path.
    next_hop: Option<Ipv4Addr>,
    iface: Interface,
    /// The interface's index (which of IP's own paths serves it).
    iface_index: usize,
    /// An active path's header, formatted at creation.
    template: Option<Ipv4Template>,
    /// The routing table's change counter, held from the path's creation:
    /// a fast form keeps a next hop while it stays the same.
    routes: Generation,
    /// The module's identification counter, shared (a typed handle taken
    /// at creation: a send does not reach into the module for it).
    ident: IdentCounter,
    /// The last route an unconnected path looked up, kept while the
    /// routing table's generation stays the same: a socket answering one
    /// peer after another asks the module once per peer.
    last_route: Option<CachedRoute>,
    /// Whether this path's peer is this host itself: every datagram turns
    /// around in IP ([`super::loopback`]).
    loopback: bool,
}

/// A next hop an `IP` stage found in the routing table, and the table's
/// generation when it did.
#[derive(Clone, Copy, Debug)]
struct CachedRoute {
    dst: Ipv4Addr,
    next_hop: Ipv4Addr,
    generation: u64,
}

impl IpStage {
    /// Whether `dst` is this host itself (this path's interface address or
    /// the loopback network): such a datagram turns around in IP
    /// ([`super::loopback`]).
    #[inline(always)]
    fn is_local(&self, dst: Ipv4Addr) -> bool {
        dst == self.iface.addr || dst.is_loopback()
    }

    /// The next hop to `dst` in the module's routing table, when the route
    /// leaves from this stage's interface.
    fn lookup_route(&self, dst: Ipv4Addr, cx: &mut Cx<'_, '_>) -> Option<Ipv4Addr> {
        let m = cx.module::<IpModule>()?;
        let r = m.routes.lookup(dst).filter(|r| r.src == self.iface.addr)?;
        Some(r.next_hop)
    }

    /// The next hop to `dst` for a path without a fixed one: the cached
    /// route while the table has not changed, else the module's answer
    /// (only routes through this stage's interface count).
    #[inline(always)]
    fn route_to(&mut self, dst: Ipv4Addr, cx: &mut Cx<'_, '_>) -> Option<Ipv4Addr> {
        let generation = self.routes.current();
        if let Some(c) = self.last_route {
            if c.dst == dst && c.generation == generation {
                return Some(c.next_hop);
            }
        }
        let next_hop = self.lookup_route(dst, cx)?;
        self.last_route = Some(CachedRoute {
            dst,
            next_hop,
            generation,
        });
        Some(next_hop)
    }

    #[inline(always)]
    fn send(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let Some(proto) = self.protocol else {
            return Verdict::Drop(Ipv4DropReason::NoProtocol.into());
        };
        let Some(dst) = self.remote.or(msg.anno().peer_ip()) else {
            return Verdict::Drop(Ipv4DropReason::NoDestination.into());
        };
        if self.loopback || self.is_local(dst) {
            return self.loop_back(msg, proto, dst, cx);
        }
        let next_hop = match self.next_hop {
            Some(h) => h,
            // A directed broadcast of the attached network goes out as a
            // link-layer broadcast (RFC 922 §7, RFC 1122 §3.3.6): the next
            // hop ARP maps to it without asking is the limited broadcast.
            None if self.iface.is_broadcast(dst) => Ipv4Addr::BROADCAST,
            None if dst.is_multicast() => dst,
            None => match self.route_to(dst, cx) {
                Some(h) => h,
                None => return Verdict::Drop(Ipv4DropReason::NoRoute.into()),
            },
        };
        let ident = self.ident.next_ident();
        let len = msg.len();
        // A socket's TTL option (RFC 1122 §3.2.1.7: the transport layer
        // may set the TTL of what it sends). Read before the next hop is
        // written: the two share an annotation word (`crate::anno`).
        let ttl = msg.anno().ttl().unwrap_or(ipv4::DEFAULT_TTL);
        msg.anno_mut().set_next_hop(next_hop);
        // A TCP super-segment for the device to cut up (segmentation
        // offload) must not be fragmented: it may fill a whole datagram.
        let offload = msg.anno().offload();
        let gso = offload.tx_gso_size != 0;
        let mtu = if gso {
            usize::from(u16::MAX)
        } else {
            usize::from(self.iface.mtu)
        };
        // A connected path's header was formatted when the path was made.
        if let Some(t) = &self.template {
            if len + MIN_HEADER_LEN <= mtu {
                return match t.push_onto(msg, ident, ttl) {
                    Ok(()) => Verdict::Next,
                    Err(_) => Verdict::Drop(Ipv4DropReason::NoHeadroom.into()),
                };
            }
        }
        if offload.wants_offload() && len + MIN_HEADER_LEN > mtu {
            // A super-segment longer than any datagram, or a segment with
            // a partial checksum longer than the MTU: TCP sizes both
            // within the limits, so this is a bug above, not a job for
            // fragmentation (the fragments would carry the unfinished
            // checksum to the peer, where no device finishes it).
            return Verdict::Drop(Ipv4DropReason::FragmentationFailed.into());
        }
        let mut repr = Ipv4Repr::new(self.iface.addr, dst, proto, ident, len as u16);
        repr.ttl = ttl;
        if len + MIN_HEADER_LEN <= mtu {
            return match repr.push_onto(msg) {
                Ok(()) => Verdict::Next,
                Err(_) => Verdict::Drop(Ipv4DropReason::NoHeadroom.into()),
            };
        }
        self.send_fragments(msg, cx, &repr)
    }

    /// A datagram to this host itself ([`super::loopback`]): its header
    /// written as for any datagram (from 127.0.0.1 to the loopback
    /// network), then handed to the top of IP's own path, whose second
    /// classification delivers it. Nothing goes below IP.
    #[cold]
    #[inline(never)]
    fn loop_back(
        &mut self,
        msg: &mut Msg,
        proto: u8,
        dst: Ipv4Addr,
        cx: &mut Cx<'_, '_>,
    ) -> Verdict {
        let src = loopback::source_for(dst, self.iface.addr);
        if src != self.iface.addr {
            // The transport summed its pseudo header with the interface's
            // address (the path's `LOCAL_IPV4`).
            loopback::readdress_transport(msg, proto, self.iface.addr, src);
        }
        let Ok(len) = u16::try_from(msg.len() + MIN_HEADER_LEN) else {
            return Verdict::Drop(Ipv4DropReason::FragmentationFailed.into());
        };
        let mut repr = Ipv4Repr::new(
            src,
            dst,
            proto,
            self.ident.next_ident(),
            len - MIN_HEADER_LEN as u16,
        );
        repr.ttl = msg.anno().ttl().unwrap_or(ipv4::DEFAULT_TTL);
        if repr.push_onto(msg).is_err() {
            return Verdict::Drop(Ipv4DropReason::NoHeadroom.into());
        }
        loopback::received_annotations(msg, src, dst);
        let Some(m) = cx.module::<IpModule>() else {
            return Verdict::Drop(Ipv4DropReason::NoRoute.into());
        };
        let Some(own) = m.own.get(self.iface_index).copied().flatten() else {
            return Verdict::Drop(Ipv4DropReason::NoRoute.into());
        };
        m.counters.looped_back += 1;
        // IP's stage is the top of its own path: the datagram starts past
        // it, going up, and leaves by `route_end` (as a reassembled one).
        match cx.send_on(own, 0, Dir::Up, std::mem::take(msg)) {
            Ok(()) => Verdict::Consumed,
            Err(r) => Verdict::Drop(r),
        }
    }

    /// RFC 791 §3.2 fragmentation of a datagram longer than the MTU.
    // OUT (feature `outline`): the 1-byte ping-pong never fragments, so this
    // moves out of line (Mosberger et al., §2.2); STD inlines it as before.
    #[cfg_attr(feature = "outline", cold, inline(never))]
    #[cfg_attr(not(feature = "outline"), inline(always))]
    fn send_fragments(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>, repr: &Ipv4Repr) -> Verdict {
        // RFC 791 §3.2 fragmentation: each fragment continues down the path
        // from here as a message of its own.
        let mut out = 0u64;
        let mut lost = 0u64;
        let r = fragment(msg, repr, self.iface.mtu, |f| {
            if cx.emit(Dir::Down, f).is_ok() {
                out += 1;
            } else {
                lost += 1;
            }
        });
        if let Some(m) = cx.module::<IpModule>() {
            m.counters.fragmented += 1;
            m.counters.fragments_out += out;
        }
        match r {
            Ok(_) if lost == 0 => Verdict::Consumed,
            _ => Verdict::Drop(Ipv4DropReason::FragmentationFailed.into()),
        }
    }

    #[inline(always)]
    fn receive(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let (repr, hlen) = match ipv4::receive(msg) {
            Ok(r) => r,
            Err(e) => return Verdict::Drop(e.into()),
        };
        if !self.iface.accepts(repr.dst) {
            return Verdict::Drop(Ipv4DropReason::NotForUs.into());
        }
        let a = msg.anno_mut();
        a.set_peer_ip(repr.src);
        a.set_local_ip(repr.dst);
        let fragment = repr.more_frags || repr.frag_offset != 0;
        let repr = if fragment {
            match self.receive_fragment(msg, cx, repr, hlen) {
                Ok(whole) => whole,
                Err(verdict) => return verdict,
            }
        } else {
            if self.protocol.is_some() && msg.pop(hlen).is_err() {
                return Verdict::Drop(Ipv4DropReason::Truncated.into());
            }
            repr
        };
        match self.protocol {
            // The classifier keyed this path on the protocol (parse once).
            Some(p) if !msg.anno().classified() && p != repr.protocol => {
                Verdict::Drop(Ipv4DropReason::WrongProtocol.into())
            }
            // IP's own path: the header stays for `IpModule::route_end`.
            _ => Verdict::Next,
        }
    }

    /// A fragment: into the reassembler (RFC 791 §3.2); `Ok` with the whole
    /// datagram's header when it completes one, else the verdict.
    // OUT (feature `outline`): the 1-byte ping-pong never receives a
    // fragment, so this moves out of line; STD inlines it as before.
    #[cfg_attr(feature = "outline", cold, inline(never))]
    #[cfg_attr(not(feature = "outline"), inline(always))]
    fn receive_fragment(
        &mut self,
        msg: &mut Msg,
        cx: &mut Cx<'_, '_>,
        repr: Ipv4Repr,
        hlen: usize,
    ) -> Result<Ipv4Repr, Verdict> {
        let now = cx.now();
        if msg.pop(hlen).is_err() {
            return Err(Verdict::Drop(Ipv4DropReason::Truncated.into()));
        }
        let anno = *msg.anno();
        let payload = std::mem::take(msg);
        let Some(m) = cx.module::<IpModule>() else {
            return Err(Verdict::Drop(Ipv4DropReason::NoRoute.into()));
        };
        let result = m.reassembler.input(&repr, payload, now);
        m.reassembly_next = m.reassembler.poll_at();
        match result {
            Reassembly::Complete(whole, payload) => {
                m.counters.reassembled += 1;
                *msg = payload;
                *msg.anno_mut() = anno;
                // A protocol's path got this fragment by the protocol alone
                // (a later fragment has no transport header to tell its
                // connection or socket by; all fragments share one
                // reassembler), so the whole datagram may belong to another
                // path: it goes to the end of IP's own path, whose second
                // classification finds the right one (thesis §3.4.2), as
                // a datagram reassembled there does.
                let own = match self.protocol {
                    Some(_) => m.own.get(self.iface_index).copied().flatten(),
                    None => None,
                };
                if self.protocol.is_none() || own.is_some() {
                    // Back to a datagram for the second classification.
                    let mut h = whole;
                    if h.push_onto(msg).is_err() {
                        return Err(Verdict::Drop(Ipv4DropReason::NoHeadroom.into()));
                    }
                }
                if let Some(own) = own {
                    // IP's stage is the top of its own path: the datagram
                    // starts past it, going up, and leaves by `route_end`.
                    return Err(match cx.send_on(own, 0, Dir::Up, std::mem::take(msg)) {
                        Ok(()) => Verdict::Consumed,
                        Err(r) => Verdict::Drop(r),
                    });
                }
                Ok(whole)
            }
            Reassembly::Held => Err(Verdict::Consumed),
            Reassembly::Dropped(r) => Err(Verdict::Drop(r.into())),
        }
    }
}

impl IpStage {
    /// Fast form, down: the destination of a datagram with annotations
    /// `anno`, as `send` takes it.
    #[inline(always)]
    pub fn fast_dst(&self, anno: &pathstack_core::Anno) -> Option<Ipv4Addr> {
        self.remote.or(anno.peer_ip())
    }

    /// Fast form, down: whether `send` would send a datagram of `len`
    /// payload bytes with annotations `anno` whole with a plain header (a
    /// protocol above, no offload asked, within the MTU).
    #[inline(always)]
    pub(crate) fn fast_sendable(&self, len: usize, anno: &pathstack_core::Anno) -> bool {
        let offload = anno.offload();
        // A path to this host itself turns around in `send`.
        !self.loopback
            && self.protocol.is_some()
            && !offload.wants_offload()
            && offload.tx_gso_size == 0
            && len + MIN_HEADER_LEN <= usize::from(self.iface.mtu)
    }

    /// Fast form, down: the next hop of a datagram to `dst` as `send`
    /// finds it, when that is a unicast destination with a route from
    /// this interface (`None`, decline, otherwise). The answer holds while
    /// [`IpStage::fast_generation`] stays the same. Takes no
    /// identification yet: the fast form takes it with
    /// [`IpStage::fast_ident`] once nothing can fail.
    #[inline(always)]
    pub(crate) fn fast_route(&self, dst: Ipv4Addr, cx: &mut Cx<'_, '_>) -> Option<Ipv4Addr> {
        if let Some(h) = self.next_hop {
            return Some(h);
        }
        if self.iface.is_broadcast(dst) || dst.is_multicast() {
            return None;
        }
        // To this host itself: `send` turns it around.
        if self.is_local(dst) {
            return None;
        }
        self.lookup_route(dst, cx)
    }

    /// Fast form: the routing table's generation now (see
    /// [`pathstack_core::generation`]).
    #[inline(always)]
    pub(crate) fn fast_generation(&self) -> u64 {
        self.routes.current()
    }

    /// Fast form, down: the identification of the next datagram, from the
    /// module's counter as `send` takes it.
    #[inline(always)]
    pub(crate) fn fast_ident(&self) -> u16 {
        self.ident.next_ident()
    }

    /// Fast form, down: the header template for datagrams to `dst` (an
    /// active path's own, formatted at creation, when `dst` is its peer);
    /// `None` on IP's own path.
    #[inline(always)]
    pub(crate) fn fast_template(&self, dst: Ipv4Addr) -> Option<Ipv4Template> {
        match self.template {
            Some(t) if self.remote == Some(dst) => Some(t),
            _ => Some(Ipv4Template::new(self.iface.addr, dst, self.protocol?)),
        }
    }

    /// Fast form, up: the source, destination and total length of the
    /// datagram at the front of `ip`, in a frame the classifier matched to
    /// this path, when `receive` would take it as a whole datagram for
    /// this path: a 20-byte header (no options) whose checksum verifies,
    /// not a fragment, a valid source, our own unicast address as
    /// destination, a total length within the bytes. `None` (decline)
    /// otherwise. The protocol is not compared: it is the path's demux
    /// key, which the match proved, and `receive` skips it for a
    /// classified frame too (parse once, issue 26 item 3); the
    /// destination is, as `receive` compares it whatever the match (a
    /// passive path's key is the protocol alone).
    ///
    /// Also the running sum ([`checksum::partial`]) of the two addresses,
    /// summed anyway for the header checksum: the part of a transport's
    /// pseudo header that comes from IP (RFC 768, RFC 9293 §3.1), so the
    /// transport need not build and sum the pseudo header again.
    #[inline(always)]
    pub(crate) fn fast_accept(&self, ip: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr, usize, u64)> {
        let h: &[u8; MIN_HEADER_LEN] = ip.first_chunk()?;
        let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
        let src = Ipv4Addr::new(h[12], h[13], h[14], h[15]);
        let dst = Ipv4Addr::new(h[16], h[17], h[18], h[19]);
        // RFC 791 §3.1: version 4, IHL 5; MF clear and offset 0 (whole).
        let whole = h[0] == 0x45 && u16::from_be_bytes([h[6], h[7]]) & 0x3fff == 0;
        // RFC 1071 §2(C): the header's sum is that of its two parts.
        let (fixed, addrs) = h.split_at(12);
        let addr_sum = checksum::partial(addrs);
        let ok = whole
            // A path with a protocol above IP (IP's own keeps its header).
            && self.protocol.is_some()
            && total >= MIN_HEADER_LEN
            && total <= ip.len()
            && dst == self.iface.addr
            && ipv4::is_valid_source(src)
            && checksum::verifies(checksum::partial(fixed) + addr_sum);
        ok.then_some((src, dst, total, addr_sum))
    }
}

impl Stage for IpStage {
    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            self.send(msg, cx)
        } else {
            self.receive(msg, cx)
        }
    }

    fn establish(&mut self, _aux: &mut Attrs, cx: &mut EstablishCx<'_>) -> Result<(), PathError> {
        // ICMP's passive path is where IP sends its errors from.
        if self.protocol == Some(protocol::ICMP) && self.remote.is_none() {
            // The stage above IP on a path is the one created before it.
            let above = cx.position().checked_sub(1);
            let path = cx.path();
            if let (Some(from), Some(m)) = (above, cx.module::<IpModule>()) {
                m.icmp = Some((path, from, Dir::Down));
            }
        }
        Ok(())
    }

    fn destroy(&mut self, cx: &mut Cx<'_, '_>) {
        let path = cx.path();
        if let Some(m) = cx.module::<IpModule>() {
            if m.icmp.is_some_and(|(p, _, _)| p == path) {
                m.icmp = None;
            }
        }
    }

    fn demux_key(&self, mode: KeyMode) -> DemuxKey {
        let Some(proto) = self.protocol else {
            // IP's own path ends the walk at the EtherType.
            return DemuxKey::Stop(None);
        };
        DemuxKey::Key(ipv4::path_demux_key(
            mode,
            proto,
            self.iface.addr,
            self.remote,
        ))
    }
}
