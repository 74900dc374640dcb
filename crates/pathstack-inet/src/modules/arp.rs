//! `ARP`: address resolution on a path (RFC 826), with the gratuitous
//! announcement at start (RFC 5227 §2.3).
//!
//! `ARP` stands between IP and ETH. On an IP path its stage resolves the
//! next hop IP chose (the [`InetAnno::next_hop`]) to a MAC
//! for ETH; a packet whose next hop is not yet known is parked in the
//! module's bounded queue, an ARP request goes out on ARP's own path, and
//! the packet resumes on its own path, right after the ARP stage, when the
//! reply arrives (or is dropped, counted, after the last retry).
//! ARP's own path (`ARP / ETH / driver`, EtherType 0x0806) carries
//! requests, replies and announcements.

use super::params::{optional, required};
use super::ETHERTYPE_ARP;
use crate::anno::InetAnno;
use crate::arp::cache::{
    ArpCache, ArpConfig, ArpEvent, ArpInput, Resolution, ResolutionDropReason, StaticEntryError,
};
use crate::wire::arp::{ArpDropReason, ArpPacket, PACKET_LEN};
use crate::wire::eth::MacAddr;
use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::generation::Generation;
use pathstack_core::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use pathstack_core::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Instant, Msg, MsgPool, PathFault, PathId};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Spec of `ARP`.
pub const ARP_SPEC: ModuleSpec = ModuleSpec {
    name: "ARP",
    doc: "ARP (RFC 826): resolves next hops for IP paths, answers requests, announces at start (RFC 5227)",
    services: ServiceSpec::OVER_ONE,
    params: &[
        ParamSpec::required("ip", "the interface's IPv4 address"),
        ParamSpec::required("mac", "the interface's MAC address"),
        ParamSpec::optional("entries", "cache size (default 64)"),
        ParamSpec::optional("pending", "packets waiting for resolution over all addresses (default 256)"),
        ParamSpec::optional("pending_per_addr", "packets waiting for one address (default 48: a 64 KiB datagram in fragments)"),
        ParamSpec::optional("announce", "send a gratuitous announcement at start: true (default) or false"),
    ],
    understands: &[],
};

/// Counters of the `ARP` module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArpCounters {
    /// Requests sent (first tries and retries).
    pub requests_sent: u64,
    /// Replies sent to requests for our address.
    pub replies_sent: u64,
    /// Gratuitous announcements sent.
    pub announcements_sent: u64,
    /// Packets that waited for a reply and went on.
    pub released: u64,
    /// Resolutions given up after the last retry.
    pub gave_up: u64,
    /// Messages ARP could not send (no buffer, follow-up list full).
    pub send_failures: u64,
    /// Paths told of a failed resolution (one per dropped packet).
    pub faulted: u64,
}

/// A packet waiting for its next hop's address, with where it resumes:
/// its path, the position right after the ARP stage that parked it, and
/// the direction it travelled in.
///
/// The resume point is ARP's state, kept beside the message it holds, not
/// in the message: it is needed only while ARP holds the message, and
/// every message carrying room for it would make every message larger
/// (a [`Msg`] is at most 64 bytes).
#[derive(Debug)]
pub struct Parked {
    msg: Msg,
    path: PathId,
    position: usize,
    dir: Dir,
}

impl Parked {
    /// The waiting message.
    pub fn msg(&self) -> &Msg {
        &self.msg
    }

    /// The path the message resumes on.
    pub fn path(&self) -> PathId {
        self.path
    }
}

/// The `ARP` module of one interface: the cache and ARP's own path.
pub struct ArpModule {
    ip: Ipv4Addr,
    mac: MacAddr,
    cache: ArpCache<Parked>,
    /// ARP's own path and the direction that leads down it.
    own: Option<(PathId, Dir)>,
    announce: bool,
    /// When `poll` has timed work: a retry, an expiry, the announcement.
    next_work: Option<Instant>,
    /// Packets released by a reply, waiting to be resumed (bounded by the
    /// cache's pending limit; preallocated).
    released: VecDeque<Parked>,
    counters: ArpCounters,
}

impl ArpModule {
    /// Factory: parameters `ip`, `mac`, `entries`, `pending`, `announce`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let ip = required(setup, "ip", str::parse::<Ipv4Addr>)?;
        let mac = required(setup, "mac", str::parse::<MacAddr>)?;
        let mut cfg = ArpConfig::default();
        cfg.capacity = setup.param("entries", cfg.capacity)?;
        // A whole 64 KiB datagram at MTU 1500 is 45 fragments; all of them
        // may wait for one resolution (Linux keeps up to 208 KiB per
        // neighbour, `unres_qlen_bytes`).
        cfg.pending_per_addr = setup.param("pending_per_addr", 48usize)?;
        cfg.pending_total = setup.param("pending", 256usize)?;
        let announce = optional(setup, "announce", str::parse::<bool>)?.unwrap_or(true);
        Ok(Box::new(ArpModule {
            ip,
            mac,
            released: VecDeque::with_capacity(cfg.pending_total),
            cache: ArpCache::new(cfg),
            own: None,
            announce,
            next_work: None,
            counters: ArpCounters::default(),
        }))
    }

    /// The cache (read-only: lookups, drop counts).
    pub fn cache(&self) -> &ArpCache<Parked> {
        &self.cache
    }

    /// Adds a static neighbour: `ip` is `mac` for good, never asked for,
    /// never expired, not changed by the wire (see
    /// [`ArpCache::add_static`], which says when it is refused). Packets
    /// already waiting for `ip` resume at the next poll.
    pub fn add_static(&mut self, ip: Ipv4Addr, mac: MacAddr) -> Result<(), StaticEntryError> {
        let released = &mut self.released;
        self.cache.add_static(ip, mac, |mac, mut parked| {
            parked.msg.anno_mut().set_link_dst(mac.0);
            // Bounded: the cache held at most `pending_total` packets,
            // the capacity `released` was made with.
            released.push_back(parked);
        })?;
        self.refresh_next_work();
        Ok(())
    }

    /// The counters.
    pub fn counters(&self) -> ArpCounters {
        self.counters
    }

    /// ARP's own path, once created.
    pub fn own_path(&self) -> Option<PathId> {
        self.own.map(|(p, _)| p)
    }

    fn packet(&self, pool: &MsgPool, pkt: &ArpPacket, dst: MacAddr) -> Option<Msg> {
        let mut m = pool.alloc(PACKET_LEN).ok()?;
        pkt.emit(m.as_mut_slice())?;
        m.anno_mut().set_link_dst(dst.0);
        Some(m)
    }

    fn request(&self, pool: &MsgPool, target: Ipv4Addr) -> Option<Msg> {
        self.packet(
            pool,
            &ArpPacket::request(self.mac, self.ip, target),
            MacAddr::BROADCAST,
        )
    }

    fn refresh_next_work(&mut self) {
        let announce = (self.announce && self.own.is_some()).then_some(Instant::ZERO);
        self.next_work = match (announce, self.cache.poll_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Sends `msg` down ARP's own path from the ARP stage (position 0).
    fn send_own(&mut self, cx: &mut ModCx<'_>, msg: Option<Msg>) -> bool {
        let (Some((path, down)), Some(m)) = (self.own, msg) else {
            self.counters.send_failures += 1;
            return false;
        };
        let ok = cx.send_on(path, 0, down, m).is_ok();
        if !ok {
            self.counters.send_failures += 1;
        }
        ok
    }
}

impl Module for ArpModule {
    fn spec(&self) -> &'static ModuleSpec {
        &ARP_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        cx.request_path(Attrs::new().with(&keys::PASSIVE_OPEN, true), 0);
        Ok(())
    }

    fn path_created(&mut self, _tag: u64, result: Result<PathId, &PathError>) {
        if let Ok(p) = result {
            // ARP's stage is the top (`end[0]`) of its own path.
            self.own = Some((p, Dir::Down));
            self.refresh_next_work();
        }
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let role = match cx.entry() {
            None => {
                attrs.insert(&keys::PROT_ID, u32::from(ETHERTYPE_ARP));
                Role::Own
            }
            Some(_) => {
                if attrs.get(&keys::PROT_ID).is_none() {
                    return Err(cx.refuse("a path through ARP needs PROT_ID (the EtherType above)"));
                }
                Role::Resolver
            }
        };
        Ok(Created::new(
            ArpStage {
                role,
                cache: self.cache.generation().clone(),
                last: None,
            },
            Route::Service(1),
        ))
    }

    fn poll(&mut self, cx: &mut ModCx<'_>) -> usize {
        let now = cx.now();
        let mut work = 0;
        // Packets released outside any stage (by `add_static`) resume
        // here, each on its own path right after the ARP stage.
        while let Some(p) = self.released.pop_front() {
            if cx.send_on(p.path, p.position, p.dir, p.msg).is_ok() {
                self.counters.released += 1;
            } else {
                self.counters.send_failures += 1;
            }
            work += 1;
        }
        if self.next_work.is_none_or(|t| t > now) {
            return work;
        }
        if self.announce && self.own.is_some() {
            let a = ArpPacket::announcement(self.mac, self.ip);
            let m = self.packet(cx.pool(), &a, MacAddr::BROADCAST);
            if self.send_own(cx, m) {
                self.counters.announcements_sent += 1;
            }
            self.announce = false;
            work += 1;
        }
        let mut events: [Option<ArpEvent>; 16] = [None; 16];
        let mut n = 0;
        let mut more = 0u64;
        // RFC 1122 §2.3.2.2: the packets that waited are dropped; their
        // paths learn why (a connected socket reports `HostUnreachable` on
        // its next call, as Linux's `EHOSTUNREACH`).
        let gave_up = PathFault::new(
            std::io::ErrorKind::HostUnreachable,
            ResolutionDropReason::ResolutionFailed,
        );
        let mut faulted = 0u64;
        let dropped = |p: Parked| {
            cx.set_fault(p.path, gave_up);
            faulted += 1;
        };
        self.cache.poll_with(
            now,
            |e| {
                if n < events.len() {
                    events[n] = Some(e);
                    n += 1;
                } else if let ArpEvent::SendRequest(_) = e {
                    // More retries due at once than fit here: they go out on a
                    // later poll would be wrong (the cache counted them sent);
                    // count them as failures instead of allocating.
                    more += 1;
                }
            },
            dropped,
        );
        self.counters.faulted += faulted;
        self.counters.send_failures += more;
        for e in events.into_iter().take(n).flatten() {
            work += 1;
            match e {
                ArpEvent::SendRequest(ip) => {
                    let m = self.request(cx.pool(), ip);
                    if self.send_own(cx, m) {
                        self.counters.requests_sent += 1;
                    }
                }
                ArpEvent::GaveUp { .. } => self.counters.gave_up += 1,
            }
        }
        self.refresh_next_work();
        work
    }

    fn polls_when_due(&self) -> bool {
        // `poll` only acts on the deadline `poll_at` reports.
        true
    }

    fn poll_at(&self) -> Option<Instant> {
        if self.released.is_empty() {
            self.next_work
        } else {
            // Packets a static entry released wait for `poll`: now.
            Some(Instant::ZERO)
        }
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let c = self.counters;
        let mut v = vec![
            ("requests_sent".into(), c.requests_sent),
            ("replies_sent".into(), c.replies_sent),
            ("announcements_sent".into(), c.announcements_sent),
            ("released".into(), c.released),
            ("gave_up".into(), c.gave_up),
            ("send_failures".into(), c.send_failures),
            ("faulted".into(), c.faulted),
            ("pending".into(), self.cache.pending_len() as u64),
        ];
        let packets = self.cache.packet_drops().iter();
        let waiting = self.cache.resolution_drops().iter();
        v.extend(
            packets
                .chain(waiting)
                .filter(|(_, n)| *n > 0)
                .map(|(r, n)| (format!("cache_drop.{r}"), n)),
        );
        v
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Top of ARP's own path: ARP packets.
    Own,
    /// On an IP path: resolve next hops.
    Resolver,
}

/// The `ARP` stage: ARP's own path end, or the resolver on an IP path.
pub struct ArpStage {
    role: Role,
    /// The cache's change counter, held from the path's creation: a fast
    /// form keeps a link address while it stays the same.
    cache: Generation,
    /// The last link address this resolver found, kept as the fast forms
    /// keep theirs (while the cache's generation stays the same and the
    /// entry has not expired): the path holds what the module decided for
    /// it, and a send does not reach into the module (thesis §2.2).
    last: Option<Neighbour>,
}

/// A link address an `ARP` stage found in the cache, until when it holds,
/// and the cache's generation when it did.
#[derive(Clone, Copy, Debug)]
struct Neighbour {
    ip: Ipv4Addr,
    mac: MacAddr,
    until: Option<Instant>,
    generation: u64,
}

impl ArpStage {
    /// An ARP packet arrived on ARP's own path.
    fn input(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let now = cx.now();
        let pkt = match ArpPacket::parse(msg.as_slice()) {
            Ok(p) => p,
            Err(e) => return Verdict::Drop(e.into()),
        };
        let Some(m) = cx.module::<ArpModule>() else {
            return Verdict::Drop(ResolutionDropReason::NoNextHop.into());
        };
        let released = &mut m.released;
        let input = m.cache.on_packet(&pkt, m.ip, now, |mac, mut parked| {
            parked.msg.anno_mut().set_link_dst(mac.0);
            released.push_back(parked);
        });
        let (own_ip, own_mac) = (m.ip, m.mac);
        m.refresh_next_work();
        // Resume the packets that waited, each on its own path right after
        // the ARP stage that parked it.
        while let Some(p) = cx
            .module::<ArpModule>()
            .and_then(|m| m.released.pop_front())
        {
            let resumed = cx.send_on(p.path, p.position, p.dir, p.msg).is_ok();
            if let Some(m) = cx.module::<ArpModule>() {
                if resumed {
                    m.counters.released += 1;
                } else {
                    m.counters.send_failures += 1;
                }
            }
        }
        match input {
            Ok(ArpInput::ReplyNeeded) => {
                match crate::wire::arp::reply_in_place(msg, own_mac, own_ip) {
                    Ok(requester) => {
                        msg.anno_mut().set_link_dst(requester.0);
                        if let Some(m) = cx.module::<ArpModule>() {
                            m.counters.replies_sent += 1;
                        }
                        Verdict::Back
                    }
                    Err(e) => Verdict::Drop(e.into()),
                }
            }
            Ok(ArpInput::Absorbed) => Verdict::Consumed,
            Err(e) => Verdict::Drop(e.into()),
        }
    }

    /// An IP packet on its way down: find the next hop's MAC.
    #[inline(always)]
    fn resolve(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let now = cx.now();
        let Some(next_hop) = msg.anno().next_hop() else {
            return Verdict::Drop(ResolutionDropReason::NoNextHop.into());
        };
        let generation = self.cache.current();
        if let Some(n) = self.last {
            if n.ip == next_hop && n.generation == generation && n.until.is_none_or(|t| now < t) {
                msg.anno_mut().set_link_dst(n.mac.0);
                return Verdict::Next;
            }
        }
        let Some(m) = cx.module::<ArpModule>() else {
            return Verdict::Drop(ResolutionDropReason::NoNextHop.into());
        };
        // The fast path: a cached mapping, nothing moves.
        if let Some((mac, until)) = m.cache.lookup_until(next_hop, now) {
            self.last = Some(Neighbour {
                ip: next_hop,
                mac,
                until,
                generation,
            });
            msg.anno_mut().set_link_dst(mac.0);
            return Verdict::Next;
        }
        self.resolve_miss(msg, cx, next_hop, now)
    }

    /// The cache miss of [`ArpStage::resolve`]: the message waits for the
    /// reply and a request goes out (first packet to a next hop only).
    // OUT (feature `outline`): never taken in the steady ping-pong, so it
    // moves out of line (Mosberger et al., §2.2); STD inlines it as before.
    #[cfg_attr(feature = "outline", cold, inline(never))]
    #[cfg_attr(not(feature = "outline"), inline(always))]
    fn resolve_miss(
        &mut self,
        msg: &mut Msg,
        cx: &mut Cx<'_, '_>,
        next_hop: Ipv4Addr,
        now: Instant,
    ) -> Verdict {
        let (path, position) = (cx.path(), cx.position());
        let pool = cx.pool().clone();
        let Some(m) = cx.module::<ArpModule>() else {
            return Verdict::Drop(ResolutionDropReason::NoNextHop.into());
        };
        let parked = Parked {
            msg: std::mem::take(msg),
            path,
            position,
            dir: Dir::Down,
        };
        let (verdict, request) = match m.cache.lookup_or_queue(next_hop, parked, now) {
            Resolution::Resolved(mac, back) => {
                *msg = back.msg;
                msg.anno_mut().set_link_dst(mac.0);
                (Verdict::Next, None)
            }
            Resolution::Queued { send_request } => {
                let req = send_request
                    .then(|| m.own.zip(m.request(&pool, next_hop)))
                    .flatten();
                (Verdict::Consumed, req)
            }
            Resolution::Dropped(r) => (Verdict::Drop(r.into()), None),
        };
        m.refresh_next_work();
        if let Some(((own, own_down), req)) = request {
            let sent = cx.send_on(own, 0, own_down, req).is_ok();
            if let Some(m) = cx.module::<ArpModule>() {
                if sent {
                    m.counters.requests_sent += 1;
                } else {
                    m.counters.send_failures += 1;
                }
            }
        }
        verdict
    }
}

impl ArpStage {
    /// Fast form, down: the cached link address of `next_hop`, as
    /// `resolve` finds it without moving anything, with how long that
    /// answer holds while [`ArpStage::fast_generation`] stays the same
    /// (`None`: for good); `None` (decline) on a miss, which `resolve`
    /// handles (the message waits for a reply).
    #[inline(always)]
    pub(crate) fn fast_resolve(
        &self,
        next_hop: Ipv4Addr,
        cx: &mut Cx<'_, '_>,
    ) -> Option<(MacAddr, Option<Instant>)> {
        if self.role != Role::Resolver {
            return None;
        }
        let now = cx.now();
        cx.module::<ArpModule>()?.cache.lookup_until(next_hop, now)
    }

    /// Fast form: the cache's generation now (see
    /// [`pathstack_core::generation`]).
    #[inline(always)]
    pub(crate) fn fast_generation(&self) -> u64 {
        self.cache.current()
    }
}

impl Stage for ArpStage {
    fn passes(&self, dir: Dir) -> bool {
        // A resolver does its work on the way down only.
        self.role == Role::Resolver && dir != Dir::Down
    }

    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        match (self.role, dir == Dir::Down) {
            (Role::Resolver, true) => self.resolve(msg, cx),
            (Role::Resolver, false) => Verdict::Next,
            (Role::Own, false) => self.input(msg, cx),
            (Role::Own, true) => {
                if msg.anno().link_dst().is_none() {
                    return Verdict::Drop(ArpDropReason::NoBuffer.into());
                }
                Verdict::Next
            }
        }
    }
}
