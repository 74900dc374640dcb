//! The ARP cache of an interface (RFC 826; RFC 1122 §2.3.2): next-hop
//! addresses mapped to MAC addresses, with the packets that wait for a
//! resolution (bounded per address and in total), request retries and
//! give-ups, all driven by the caller's clock. The merge rule is RFC 826's;
//! address conflicts are RFC 5227 §2.4's.
//!
//! Static entries ([`ArpCache::add_static`]) are the administrator's
//! mappings (Linux's `ip neigh add ... nud permanent`): never expired,
//! evicted or changed by what arrives from the wire.
//!
//! The cache is a preallocated table searched linearly: with the default 64
//! entries a scan is a few cache lines, cheaper than hashing, and it never
//! allocates after [`ArpCache::new`]. Use a hash index if you need thousands.

use crate::wire::arp::{ArpDropReason, ArpOp, ArpPacket};
use crate::wire::eth::{multicast_mac, MacAddr};
use pathstack_core::generation::Generation;
use pathstack_core::{DropCounts, Duration, Instant, Msg};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Configuration of an [`ArpCache`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArpConfig {
    /// Most entries (resolved or resolving). Full → the least recently used
    /// entry is evicted, preferring resolved ones.
    pub capacity: usize,
    /// How long a learned mapping is used without being refreshed
    /// (RFC 1122 §2.3.2.1 asks for a timeout; Linux uses ~30 s reachable +
    /// stale time, BSD 20 min; 60 s is the middle ground the issue asks for).
    pub reachable_time: Duration,
    /// Time between requests for the same address (RFC 1122 §2.3.2.1: at
    /// most one request per second per destination).
    pub retry_interval: Duration,
    /// Requests sent before giving up (the first one included).
    pub max_requests: u8,
    /// Packets kept per unresolved address (RFC 1122 §2.3.2.2: SHOULD keep
    /// at least the latest one). When full, the oldest is dropped.
    pub pending_per_addr: usize,
    /// Packets kept over all unresolved addresses. When full, the oldest is dropped.
    pub pending_total: usize,
}

impl Default for ArpConfig {
    /// 64 entries, 60 s reachable, 3 requests 1 s apart, 4 packets per
    /// address and 64 in total waiting.
    fn default() -> Self {
        ArpConfig {
            capacity: 64,
            reachable_time: Duration::from_secs(60),
            retry_interval: Duration::from_secs(1),
            max_requests: 3,
            pending_per_addr: 4,
            pending_total: 64,
        }
    }
}

pathstack_core::drop_reasons! {
    /// Why a packet waiting for ARP resolution was dropped. ARP packets
    /// themselves have [`ArpDropReason`]s.
    #[derive(thiserror::Error)]
    pub enum ResolutionDropReason in "arp" {
        /// A waiting packet was dropped to stay within the pending-queue bounds.
        #[error("ARP pending queue full")]
        QueueFull => "queue_full",
        /// Resolution gave up after the configured number of requests; the waiting packets are dropped.
        #[error("ARP resolution failed")]
        ResolutionFailed => "resolution_failed",
        /// The cache entry was evicted to make room; its waiting packets are dropped.
        #[error("ARP cache entry evicted while resolving")]
        Evicted => "evicted",
        /// The next hop cannot be resolved (0.0.0.0 or a class E address).
        #[error("next hop cannot be resolved")]
        InvalidTarget => "invalid_target",
        /// The packet carries no next hop to resolve (IP sets one on
        /// every datagram it sends), or the ARP module is missing.
        #[error("no next hop to resolve")]
        NoNextHop => "no_next_hop",
    }
}

/// Why [`ArpCache::add_static`] refused an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StaticEntryError {
    /// The address cannot be a neighbour (unspecified, broadcast,
    /// multicast or class E).
    #[error("{0} cannot be a static ARP neighbour")]
    InvalidAddress(Ipv4Addr),
    /// The MAC is not a unicast address.
    #[error("{0} is not a unicast MAC address")]
    InvalidMac(MacAddr),
    /// Static entries would take the last slot of the cache, which must
    /// keep one for resolving other addresses.
    #[error("ARP cache full: {capacity} entries, at most {} of them static", capacity.saturating_sub(1))]
    Full {
        /// The cache's capacity.
        capacity: usize,
    },
}

/// What [`ArpCache::lookup_or_queue`] did with a packet.
#[derive(Debug)]
pub enum Resolution<P = Msg> {
    /// The next hop's MAC is known: send the packet to it now.
    Resolved(MacAddr, P),
    /// The packet waits for a reply. If `send_request`, the caller sends an
    /// ARP request for the address now (later retries come from [`ArpCache::poll`]).
    Queued {
        /// Whether this call started a resolution.
        send_request: bool,
    },
    /// The packet was dropped (and counted).
    Dropped(ResolutionDropReason),
}

/// Spontaneous work reported by [`ArpCache::poll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpEvent {
    /// Send (again) an ARP request for this address.
    SendRequest(Ipv4Addr),
    /// Resolution of `ip` failed; `dropped` waiting packets were discarded
    /// (the caller may send ICMP host unreachable for them, RFC 1122 §2.3.2.2).
    GaveUp {
        /// The address that did not answer.
        ip: Ipv4Addr,
        /// Packets discarded.
        dropped: usize,
    },
}

/// What an incoming ARP packet asks of the caller ([`ArpCache::on_packet`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpInput {
    /// A request for our address: answer it with
    /// [`reply_in_place`](crate::wire::arp::reply_in_place).
    ReplyNeeded,
    /// Learned from, nothing to send.
    Absorbed,
}

#[derive(Clone, Copy, Debug)]
enum State {
    Reachable {
        mac: MacAddr,
        expires_at: Instant,
    },
    Incomplete {
        requests_sent: u8,
        next_request_at: Instant,
    },
    /// Added by [`ArpCache::add_static`]: no expiry, no eviction, no merge.
    Static {
        mac: MacAddr,
    },
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    ip: Ipv4Addr,
    state: State,
    last_used: Instant,
}

/// The ARP cache of one interface, with the queue of packets waiting for
/// resolution (RFC 826; RFC 1122 §2.3.2). All memory is allocated in
/// [`ArpCache::new`]; no call allocates afterwards.
///
/// A waiting packet is a `P`: a [`Msg`], or the holder's own record of a
/// message and what it needs to send it on later (the `ARP` module keeps
/// where the message resumes on its path beside it, not in the message).
#[derive(Debug)]
pub struct ArpCache<P = Msg> {
    cfg: ArpConfig,
    entries: Vec<Option<Entry>>,
    pending: VecDeque<(Ipv4Addr, P)>,
    packet_drops: DropCounts<ArpDropReason>,
    resolution_drops: DropCounts<ResolutionDropReason>,
    /// Bumped by every call that may change what [`ArpCache::lookup`]
    /// answers, so that a path's fast form can keep a link address
    /// without asking again while nothing changed.
    generation: Generation,
}

impl<P> ArpCache<P> {
    /// An empty cache with room for `cfg.capacity` entries and
    /// `cfg.pending_total` waiting packets.
    pub fn new(cfg: ArpConfig) -> Self {
        ArpCache {
            entries: vec![None; cfg.capacity],
            pending: VecDeque::with_capacity(cfg.pending_total),
            packet_drops: DropCounts::new(),
            resolution_drops: DropCounts::new(),
            generation: Generation::new(),
            cfg,
        }
    }

    /// The cache's change counter (see [`pathstack_core::generation`]):
    /// while it stays the same, an answer of [`ArpCache::lookup_until`]
    /// stays right until the instant it named.
    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// [`ArpCache::lookup`], with how long the answer holds if the cache
    /// does not change: until the entry's expiry (`None`: a static entry,
    /// for good).
    pub fn lookup_until(&self, ip: Ipv4Addr, now: Instant) -> Option<(MacAddr, Option<Instant>)> {
        match self.find(ip).and_then(|i| self.entries[i]) {
            Some(Entry {
                state: State::Reachable { mac, expires_at },
                ..
            }) if now < expires_at => Some((mac, Some(expires_at))),
            Some(Entry {
                state: State::Static { mac },
                ..
            }) => Some((mac, None)),
            _ => None,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ArpConfig {
        &self.cfg
    }

    /// ARP packets refused by [`ArpCache::on_packet`] so far, by reason.
    pub fn packet_drops(&self) -> &DropCounts<ArpDropReason> {
        &self.packet_drops
    }

    /// Packets waiting for resolution dropped so far, by reason.
    pub fn resolution_drops(&self) -> &DropCounts<ResolutionDropReason> {
        &self.resolution_drops
    }

    /// Packets currently waiting for resolution.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// The resolved MAC of `ip`, if known and not expired.
    pub fn lookup(&self, ip: Ipv4Addr, now: Instant) -> Option<MacAddr> {
        self.lookup_until(ip, now).map(|(mac, _)| mac)
    }

    /// Maps `ip` to `mac` for good: a static entry (Linux's `nud
    /// permanent`), used without ever sending a request, never expired or
    /// evicted, and not changed by ARP packets from the wire. Replaces
    /// whatever the cache knew of `ip`; packets waiting for `ip` are
    /// handed to `release(mac, msg)` in arrival order.
    ///
    /// For a neighbour whose replies may not reach this cache: several
    /// stacks sharing one address on the queues of a multi-queue TAP each
    /// see only the frames the kernel steers to their queue, and an ARP
    /// reply may go to another stack's queue than the one that asked.
    /// At most `capacity - 1` entries can be static, so that one slot
    /// always remains for resolving other addresses.
    ///
    /// ```
    /// use pathstack_core::Instant;
    /// use pathstack_inet::arp::cache::{ArpCache, ArpConfig};
    /// use pathstack_inet::MacAddr;
    /// let mut cache: ArpCache = ArpCache::new(ArpConfig::default());
    /// let mac = MacAddr([2, 0, 0, 0, 0, 2]);
    /// cache.add_static("10.0.0.2".parse().unwrap(), mac, |_, _| {}).unwrap();
    /// let much_later = Instant::ZERO + pathstack_core::Duration::from_secs(86_400);
    /// assert_eq!(cache.lookup("10.0.0.2".parse().unwrap(), much_later), Some(mac));
    /// ```
    pub fn add_static(
        &mut self,
        ip: Ipv4Addr,
        mac: MacAddr,
        mut release: impl FnMut(MacAddr, P),
    ) -> Result<(), StaticEntryError> {
        self.generation.bump();
        if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() || ip.octets()[0] >= 240 {
            return Err(StaticEntryError::InvalidAddress(ip));
        }
        if !mac.is_unicast() {
            return Err(StaticEntryError::InvalidMac(mac));
        }
        let found = self.find(ip);
        let replaces_static = found
            .and_then(|i| self.entries[i])
            .is_some_and(|e| matches!(e.state, State::Static { .. }));
        if !replaces_static {
            let statics = self
                .entries
                .iter()
                .flatten()
                .filter(|e| matches!(e.state, State::Static { .. }))
                .count();
            if statics + 1 >= self.cfg.capacity {
                return Err(StaticEntryError::Full {
                    capacity: self.cfg.capacity,
                });
            }
        }
        let slot = match found {
            Some(i) => i,
            None => self.free_slot(Instant::ZERO),
        };
        let last_used = self.entries[slot].map_or(Instant::ZERO, |e| e.last_used);
        self.entries[slot] = Some(Entry {
            ip,
            state: State::Static { mac },
            last_used,
        });
        self.drain_pending(ip, |m| release(mac, m));
        Ok(())
    }

    /// Resolves the next hop `ip` for `msg` (an IP datagram without the
    /// Ethernet header), or queues `msg` until a reply arrives.
    ///
    /// Limited broadcast and multicast next hops resolve without ARP
    /// (RFC 1112 §6.4). A directed subnet broadcast must be mapped to
    /// [`MacAddr::BROADCAST`] by the caller, which knows the prefix.
    pub fn lookup_or_queue(&mut self, ip: Ipv4Addr, msg: P, now: Instant) -> Resolution<P> {
        self.generation.bump();
        if ip.is_broadcast() {
            return Resolution::Resolved(MacAddr::BROADCAST, msg);
        }
        if ip.is_multicast() {
            return Resolution::Resolved(multicast_mac(ip), msg);
        }
        if ip.is_unspecified() || ip.octets()[0] >= 240 {
            self.resolution_drops
                .count(ResolutionDropReason::InvalidTarget);
            return Resolution::Dropped(ResolutionDropReason::InvalidTarget);
        }
        if self.cfg.pending_total == 0 || self.cfg.pending_per_addr == 0 || self.cfg.capacity == 0 {
            if let Some(mac) = self.lookup(ip, now) {
                return Resolution::Resolved(mac, msg);
            }
            self.resolution_drops.count(ResolutionDropReason::QueueFull);
            return Resolution::Dropped(ResolutionDropReason::QueueFull);
        }
        let fresh = self.incomplete(now);
        let found = self.find(ip);
        let send_request = match found.and_then(|i| self.entries[i].as_mut()) {
            Some(e) => {
                e.last_used = now;
                match e.state {
                    State::Reachable { mac, expires_at } if now < expires_at => {
                        return Resolution::Resolved(mac, msg);
                    }
                    State::Static { mac } => return Resolution::Resolved(mac, msg),
                    State::Reachable { .. } => {
                        // Expired: resolve again (RFC 1122 §2.3.2.1 timeout).
                        e.state = fresh;
                        true
                    }
                    State::Incomplete { .. } => false,
                }
            }
            None => {
                let slot = self.free_slot(now);
                self.entries[slot] = Some(Entry {
                    ip,
                    state: fresh,
                    last_used: now,
                });
                true
            }
        };
        self.enqueue(ip, msg);
        Resolution::Queued { send_request }
    }

    fn incomplete(&self, now: Instant) -> State {
        State::Incomplete {
            requests_sent: 1,
            next_request_at: now + self.cfg.retry_interval,
        }
    }

    /// Learns from an incoming ARP packet with the RFC 826 merge rule: if
    /// the sender is in the cache its entry is updated (whoever the packet
    /// was for); if the packet is for `own_ip`, the sender is added. Packets
    /// waiting for the sender are handed to `release(mac, msg)` in arrival
    /// order.
    ///
    /// Probes (sender 0.0.0.0, RFC 5227 §2.1.1) teach nothing but are still
    /// answered. A packet from another station claiming `own_ip` is an
    /// address conflict (RFC 5227 §2.4): counted, not learned. The caller
    /// drops frames whose Ethernet source is our own MAC before calling
    /// this, so our own looped-back announcements are not taken for one.
    pub fn on_packet(
        &mut self,
        pkt: &ArpPacket,
        own_ip: Ipv4Addr,
        now: Instant,
        mut release: impl FnMut(MacAddr, P),
    ) -> Result<ArpInput, ArpDropReason> {
        self.generation.bump();
        let result = self.learn(pkt, own_ip, now, &mut release);
        if let Err(reason) = result {
            self.packet_drops.count(reason);
        }
        result
    }

    fn learn(
        &mut self,
        pkt: &ArpPacket,
        own_ip: Ipv4Addr,
        now: Instant,
        release: &mut impl FnMut(MacAddr, P),
    ) -> Result<ArpInput, ArpDropReason> {
        let s = pkt.sender_ip;
        if !pkt.sender_mac.is_unicast() || s.is_broadcast() || s.is_multicast() {
            return Err(ArpDropReason::InvalidSender);
        }
        if s == own_ip && !s.is_unspecified() {
            return Err(ArpDropReason::AddressConflict);
        }
        let learnable = !s.is_unspecified();
        let mut merged = false;
        if learnable {
            if let Some(i) = self.find(s) {
                self.set_reachable(i, pkt.sender_mac, now, release);
                merged = true;
            }
        }
        if pkt.target_ip != own_ip {
            return if merged {
                Ok(ArpInput::Absorbed)
            } else {
                Err(ArpDropReason::NotForUs)
            };
        }
        if learnable && !merged {
            let slot = self.free_slot(now);
            self.entries[slot] = Some(Entry {
                ip: s,
                state: State::Incomplete {
                    requests_sent: 0,
                    next_request_at: now,
                },
                last_used: now,
            });
            self.set_reachable(slot, pkt.sender_mac, now, release);
        }
        Ok(match pkt.op {
            ArpOp::Request => ArpInput::ReplyNeeded,
            ArpOp::Reply => ArpInput::Absorbed,
        })
    }

    fn set_reachable(
        &mut self,
        i: usize,
        mac: MacAddr,
        now: Instant,
        release: &mut impl FnMut(MacAddr, P),
    ) {
        let expires_at = now + self.cfg.reachable_time;
        let Some(e) = self.entries[i].as_mut() else {
            return;
        };
        if matches!(e.state, State::Static { .. }) {
            // The administrator's mapping wins over the wire's (as Linux
            // treats permanent neighbours).
            return;
        }
        let was_incomplete = matches!(e.state, State::Incomplete { .. });
        e.state = State::Reachable { mac, expires_at };
        let ip = e.ip;
        if was_incomplete {
            self.drain_pending(ip, |m| release(mac, m));
        }
    }

    /// Retransmits due requests, gives up on addresses that never answered
    /// (dropping and counting their packets) and forgets expired entries.
    /// Call it at [`ArpCache::poll_at`] or later.
    pub fn poll(&mut self, now: Instant, events: impl FnMut(ArpEvent)) {
        self.poll_with(now, events, drop);
    }

    /// [`ArpCache::poll`], handing each packet dropped because resolution
    /// gave up to `dropped` (counted already) before its
    /// [`ArpEvent::GaveUp`]: the caller tells the packets' senders
    /// (RFC 1122 §2.3.2.2; a host reports an unreachable destination to
    /// its transport layer, §3.2.2.1).
    pub fn poll_with(
        &mut self,
        now: Instant,
        mut events: impl FnMut(ArpEvent),
        mut dropped: impl FnMut(P),
    ) {
        self.generation.bump();
        for i in 0..self.entries.len() {
            let Some(e) = self.entries[i] else { continue };
            match e.state {
                State::Reachable { expires_at, .. } if now >= expires_at => {
                    self.entries[i] = None;
                }
                State::Incomplete {
                    requests_sent,
                    next_request_at,
                } if now >= next_request_at => {
                    if requests_sent < self.cfg.max_requests {
                        self.entries[i] = Some(Entry {
                            state: State::Incomplete {
                                requests_sent: requests_sent + 1,
                                next_request_at: now + self.cfg.retry_interval,
                            },
                            ..e
                        });
                        events(ArpEvent::SendRequest(e.ip));
                    } else {
                        self.entries[i] = None;
                        let n = self.drain_pending(e.ip, &mut dropped);
                        self.resolution_drops
                            .add(ResolutionDropReason::ResolutionFailed, n as u64);
                        events(ArpEvent::GaveUp {
                            ip: e.ip,
                            dropped: n,
                        });
                    }
                }
                _ => {}
            }
        }
    }

    /// The earliest time at which [`ArpCache::poll`] has work, if any.
    pub fn poll_at(&self) -> Option<Instant> {
        self.entries
            .iter()
            .flatten()
            .filter_map(|e| match e.state {
                State::Reachable { expires_at, .. } => Some(expires_at),
                State::Incomplete {
                    next_request_at, ..
                } => Some(next_request_at),
                State::Static { .. } => None,
            })
            .min()
    }

    fn find(&self, ip: Ipv4Addr) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| matches!(e, Some(e) if e.ip == ip))
    }

    /// A free slot, evicting the least recently used entry if the table is
    /// full; resolved entries go before resolving ones, whose waiting
    /// packets would be lost. Static entries are never evicted
    /// ([`ArpCache::add_static`] keeps at least one slot non-static).
    fn free_slot(&mut self, _now: Instant) -> usize {
        if let Some(i) = self.entries.iter().position(Option::is_none) {
            return i;
        }
        let victim = self
            .entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.map(|e| (i, e)))
            .filter(|(_, e)| !matches!(e.state, State::Static { .. }))
            .min_by_key(|(_, e)| (matches!(e.state, State::Incomplete { .. }), e.last_used))
            .map_or(0, |(i, _)| i);
        if let Some(e) = self.entries[victim].take() {
            let dropped = self.drain_pending(e.ip, drop);
            self.resolution_drops
                .add(ResolutionDropReason::Evicted, dropped as u64);
        }
        victim
    }

    /// Queues `msg` for `ip`, dropping the oldest packet of `ip` (or, if the
    /// total bound is hit, the oldest packet overall) to make room, so the
    /// latest packet is always kept (RFC 1122 §2.3.2.2).
    fn enqueue(&mut self, ip: Ipv4Addr, msg: P) {
        let for_ip = self.pending.iter().filter(|(p, _)| *p == ip).count();
        if for_ip >= self.cfg.pending_per_addr {
            if let Some(pos) = self.pending.iter().position(|(p, _)| *p == ip) {
                self.pending.remove(pos);
                self.resolution_drops.count(ResolutionDropReason::QueueFull);
            }
        }
        if self.pending.len() >= self.cfg.pending_total {
            self.pending.pop_front();
            self.resolution_drops.count(ResolutionDropReason::QueueFull);
        }
        // Length is below the capacity reserved in `new`: no allocation.
        self.pending.push_back((ip, msg));
    }

    /// Removes the packets waiting for `ip`, in order, handing each to `f`.
    /// Rotates the queue once so the others keep their order; no allocation.
    fn drain_pending(&mut self, ip: Ipv4Addr, mut f: impl FnMut(P)) -> usize {
        let mut n = 0;
        for _ in 0..self.pending.len() {
            let Some((p, m)) = self.pending.pop_front() else {
                break;
            };
            if p == ip {
                n += 1;
                f(m);
            } else {
                self.pending.push_back((p, m));
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::arp::tests::{pool, OTHER_IP, OWN_IP, OWN_MAC, PEER_IP, PEER_MAC};
    use pathstack_core::{MsgPool, PoolConfig};
    use proptest::prelude::*;

    fn t(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }
    fn reply_from_peer() -> ArpPacket {
        ArpPacket {
            op: ArpOp::Reply,
            sender_mac: PEER_MAC,
            sender_ip: PEER_IP,
            target_mac: OWN_MAC,
            target_ip: OWN_IP,
        }
    }

    #[test]
    fn miss_queues_then_reply_releases_in_order() {
        let pool = pool();
        let mut c: ArpCache = ArpCache::new(ArpConfig::default());
        let r1 = c.lookup_or_queue(PEER_IP, pool.alloc_copy(b"one").unwrap(), t(0));
        assert!(matches!(r1, Resolution::Queued { send_request: true }));
        let r2 = c.lookup_or_queue(PEER_IP, pool.alloc_copy(b"two").unwrap(), t(10));
        assert!(matches!(
            r2,
            Resolution::Queued {
                send_request: false
            }
        ));
        let mut out = Vec::new();
        let v = c.on_packet(&reply_from_peer(), OWN_IP, t(20), |mac, m| {
            out.push((mac, m.as_slice().to_vec()))
        });
        assert_eq!(v, Ok(ArpInput::Absorbed));
        assert_eq!(
            out,
            vec![(PEER_MAC, b"one".to_vec()), (PEER_MAC, b"two".to_vec())]
        );
        assert_eq!(c.pending_len(), 0);
        match c.lookup_or_queue(PEER_IP, pool.alloc_copy(b"3").unwrap(), t(30)) {
            Resolution::Resolved(mac, m) => {
                assert_eq!(mac, PEER_MAC);
                assert_eq!(m.as_slice(), b"3");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn retries_then_gives_up_and_counts() {
        let pool = pool();
        let mut c: ArpCache = ArpCache::new(ArpConfig::default());
        for i in 0..2 {
            c.lookup_or_queue(PEER_IP, pool.alloc(10).unwrap(), t(i));
        }
        let mut ev = Vec::new();
        c.poll(t(999), |e| ev.push(e));
        assert!(ev.is_empty());
        c.poll(t(1000), |e| ev.push(e));
        c.poll(t(2000), |e| ev.push(e));
        assert_eq!(
            ev,
            vec![
                ArpEvent::SendRequest(PEER_IP),
                ArpEvent::SendRequest(PEER_IP)
            ]
        );
        ev.clear();
        c.poll(t(3000), |e| ev.push(e));
        assert_eq!(
            ev,
            vec![ArpEvent::GaveUp {
                ip: PEER_IP,
                dropped: 2
            }]
        );
        assert_eq!(
            c.resolution_drops()
                .get(ResolutionDropReason::ResolutionFailed),
            2
        );
        assert_eq!(pool.stats().live, 0, "dropped packets returned to the pool");
        assert_eq!(c.poll_at(), None);
    }

    #[test]
    fn giving_up_hands_over_the_dropped_packets_before_the_event() {
        let pool = pool();
        let mut c: ArpCache = ArpCache::new(ArpConfig::default());
        for len in [10, 20] {
            c.lookup_or_queue(PEER_IP, pool.alloc(len).unwrap(), t(0));
        }
        let order = std::cell::RefCell::new(Vec::new());
        for ms in [1000, 2000, 3000] {
            c.poll_with(
                t(ms),
                |e| order.borrow_mut().push(format!("{e:?}")),
                |m| order.borrow_mut().push(format!("dropped {}", m.len())),
            );
        }
        let order = order.into_inner();
        assert_eq!(
            order[2..],
            [
                "dropped 10".to_string(),
                "dropped 20".to_string(),
                format!(
                    "{:?}",
                    ArpEvent::GaveUp {
                        ip: PEER_IP,
                        dropped: 2
                    }
                ),
            ]
        );
        assert_eq!(pool.stats().live, 0, "the handed-over packets were freed");
    }

    #[test]
    fn entries_expire() {
        let mut c: ArpCache = ArpCache::new(ArpConfig::default());
        c.on_packet(&reply_from_peer(), OWN_IP, t(0), |_, _| {})
            .unwrap();
        assert_eq!(c.lookup(PEER_IP, t(59_999)), Some(PEER_MAC));
        assert_eq!(c.lookup(PEER_IP, t(60_000)), None);
        assert_eq!(c.poll_at(), Some(t(60_000)));
        c.poll(t(60_000), |_| {});
        assert_eq!(c.poll_at(), None);
    }

    #[test]
    fn rfc826_merge_rule() {
        let mut c: ArpCache = ArpCache::new(ArpConfig::default());
        // Not for us and sender unknown: nothing learned.
        let mut p = reply_from_peer();
        p.target_ip = OTHER_IP;
        assert_eq!(
            c.on_packet(&p, OWN_IP, t(0), |_, _| {}),
            Err(ArpDropReason::NotForUs)
        );
        assert_eq!(c.lookup(PEER_IP, t(0)), None);
        // For us: created.
        c.on_packet(&reply_from_peer(), OWN_IP, t(0), |_, _| {})
            .unwrap();
        // Not for us but sender known: updated (e.g. an announcement after a NIC change).
        let new_mac = MacAddr([2, 0, 0, 0, 0, 9]);
        let ann = ArpPacket::announcement(new_mac, PEER_IP);
        assert_eq!(
            c.on_packet(&ann, OWN_IP, t(1), |_, _| {}),
            Ok(ArpInput::Absorbed)
        );
        assert_eq!(c.lookup(PEER_IP, t(1)), Some(new_mac));
        // A request for us wants a reply.
        let req = ArpPacket::request(PEER_MAC, PEER_IP, OWN_IP);
        assert_eq!(
            c.on_packet(&req, OWN_IP, t(2), |_, _| {}),
            Ok(ArpInput::ReplyNeeded)
        );
        // Probe (sender 0.0.0.0) for us: answered, nothing learned.
        let probe = ArpPacket::request(MacAddr([2, 0, 0, 0, 0, 7]), Ipv4Addr::UNSPECIFIED, OWN_IP);
        assert_eq!(
            c.on_packet(&probe, OWN_IP, t(3), |_, _| {}),
            Ok(ArpInput::ReplyNeeded)
        );
        assert_eq!(c.lookup(Ipv4Addr::UNSPECIFIED, t(3)), None);
        // Someone else claims our address.
        let conflict = ArpPacket::announcement(PEER_MAC, OWN_IP);
        assert_eq!(
            c.on_packet(&conflict, OWN_IP, t(4), |_, _| {}),
            Err(ArpDropReason::AddressConflict)
        );
        assert_eq!(c.packet_drops().get(ArpDropReason::AddressConflict), 1);
    }

    #[test]
    fn pending_bounds_keep_latest() {
        let pool = pool();
        let cfg = ArpConfig {
            pending_per_addr: 2,
            pending_total: 3,
            ..ArpConfig::default()
        };
        let mut c: ArpCache = ArpCache::new(cfg);
        for i in 0..4u8 {
            c.lookup_or_queue(PEER_IP, pool.alloc_copy(&[i]).unwrap(), t(0));
        }
        assert_eq!(c.pending_len(), 2);
        for i in 10..12u8 {
            c.lookup_or_queue(OTHER_IP, pool.alloc_copy(&[i]).unwrap(), t(0));
        }
        assert_eq!(c.pending_len(), 3);
        assert_eq!(c.resolution_drops().get(ResolutionDropReason::QueueFull), 3);
        let mut out = Vec::new();
        c.on_packet(&reply_from_peer(), OWN_IP, t(1), |_, m| {
            out.push(m.as_slice()[0])
        })
        .unwrap();
        // Per-address bound kept 2 and 3; the total bound then pushed out 2.
        assert_eq!(out, vec![3]);
    }

    #[test]
    fn static_entry_resolves_without_request_and_ignores_the_wire() {
        let pool = pool();
        let mut c: ArpCache = ArpCache::new(ArpConfig::default());
        // A packet already waiting for the peer goes out when the static
        // entry is added.
        let r = c.lookup_or_queue(PEER_IP, pool.alloc_copy(b"early").unwrap(), t(0));
        assert!(matches!(r, Resolution::Queued { send_request: true }));
        let mut out = Vec::new();
        c.add_static(PEER_IP, PEER_MAC, |mac, m| {
            out.push((mac, m.as_slice().to_vec()))
        })
        .unwrap();
        assert_eq!(out, vec![(PEER_MAC, b"early".to_vec())]);
        assert_eq!(c.pending_len(), 0);
        // No retry, no expiry: nothing for poll to do, ever.
        assert_eq!(c.poll_at(), None);
        let late = t(10 * 24 * 3600 * 1000);
        let mut events = Vec::new();
        c.poll(late, |e| events.push(e));
        assert!(events.is_empty());
        match c.lookup_or_queue(PEER_IP, pool.alloc_copy(b"x").unwrap(), late) {
            Resolution::Resolved(mac, _) => assert_eq!(mac, PEER_MAC),
            other => panic!("{other:?}"),
        }
        // A reply claiming another MAC for the peer does not change it.
        let spoof = ArpPacket {
            sender_mac: MacAddr([2, 0, 0, 0, 0, 9]),
            ..reply_from_peer()
        };
        assert_eq!(
            c.on_packet(&spoof, OWN_IP, late, |_, _| {}),
            Ok(ArpInput::Absorbed)
        );
        assert_eq!(c.lookup(PEER_IP, late), Some(PEER_MAC));
    }

    #[test]
    fn static_entries_are_never_evicted_and_leave_one_slot() {
        let pool = pool();
        let cfg = ArpConfig {
            capacity: 3,
            ..ArpConfig::default()
        };
        let mut c: ArpCache = ArpCache::new(cfg);
        c.add_static(PEER_IP, PEER_MAC, |_, _| {}).unwrap();
        c.add_static(OTHER_IP, PEER_MAC, |_, _| {}).unwrap();
        assert_eq!(
            c.add_static(Ipv4Addr::new(10, 0, 0, 4), PEER_MAC, |_, _| {}),
            Err(StaticEntryError::Full { capacity: 3 })
        );
        // Replacing an existing static entry needs no new slot.
        c.add_static(OTHER_IP, OWN_MAC, |_, _| {}).unwrap();
        // Resolving other addresses cycles through the one free slot.
        for i in 10..20u8 {
            let ip = Ipv4Addr::new(10, 0, 1, i);
            c.lookup_or_queue(ip, pool.alloc_copy(&[i]).unwrap(), t(u64::from(i)));
        }
        assert_eq!(c.lookup(PEER_IP, t(100)), Some(PEER_MAC));
        assert_eq!(c.lookup(OTHER_IP, t(100)), Some(OWN_MAC));
        assert_eq!(
            c.add_static(Ipv4Addr::BROADCAST, PEER_MAC, |_, _| {}),
            Err(StaticEntryError::InvalidAddress(Ipv4Addr::BROADCAST))
        );
        assert_eq!(
            c.add_static(Ipv4Addr::new(10, 0, 0, 9), MacAddr::BROADCAST, |_, _| {}),
            Err(StaticEntryError::InvalidMac(MacAddr::BROADCAST))
        );
    }

    #[test]
    fn full_cache_evicts_lru_resolved_first() {
        let pool = pool();
        let cfg = ArpConfig {
            capacity: 2,
            ..ArpConfig::default()
        };
        let mut c: ArpCache = ArpCache::new(cfg);
        c.on_packet(&reply_from_peer(), OWN_IP, t(0), |_, _| {})
            .unwrap();
        c.lookup_or_queue(OTHER_IP, pool.alloc(1).unwrap(), t(1));
        let third = Ipv4Addr::new(10, 0, 0, 4);
        assert!(matches!(
            c.lookup_or_queue(third, pool.alloc(1).unwrap(), t(2)),
            Resolution::Queued { send_request: true }
        ));
        assert_eq!(
            c.lookup(PEER_IP, t(2)),
            None,
            "resolved entry evicted first"
        );
        assert_eq!(c.pending_len(), 2);
        let fourth = Ipv4Addr::new(10, 0, 0, 5);
        c.lookup_or_queue(fourth, pool.alloc(1).unwrap(), t(3));
        assert_eq!(c.resolution_drops().get(ResolutionDropReason::Evicted), 1);
        assert_eq!(c.pending_len(), 2);
    }

    #[test]
    fn special_next_hops() {
        let pool = pool();
        let mut c: ArpCache = ArpCache::new(ArpConfig::default());
        assert!(matches!(
            c.lookup_or_queue(Ipv4Addr::BROADCAST, pool.alloc(1).unwrap(), t(0)),
            Resolution::Resolved(MacAddr::BROADCAST, _)
        ));
        match c.lookup_or_queue(Ipv4Addr::new(224, 129, 2, 3), pool.alloc(1).unwrap(), t(0)) {
            Resolution::Resolved(mac, _) => assert_eq!(mac, MacAddr([1, 0, 0x5e, 1, 2, 3])),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            c.lookup_or_queue(Ipv4Addr::UNSPECIFIED, pool.alloc(1).unwrap(), t(0)),
            Resolution::Dropped(ResolutionDropReason::InvalidTarget)
        ));
    }

    proptest! {
        /// Random traffic: bounds always hold, nothing panics, and every
        /// packet is either released, still pending, or counted as dropped.
        #[test]
        fn cache_bounds_hold(ops in proptest::collection::vec((0u8..4, 0u8..6, 0u64..3000), 0..200)) {
            let pool = MsgPool::new(PoolConfig::small(256));
            let cfg = ArpConfig { capacity: 3, pending_per_addr: 2, pending_total: 5, ..ArpConfig::default() };
            let mut c: ArpCache = ArpCache::new(cfg.clone());
            let mut now = 0u64;
            let (mut sent, mut released, mut resolved) = (0u64, 0u64, 0u64);
            for (op, host, dt) in ops {
                now += dt;
                let ip = Ipv4Addr::new(10, 0, 1, host);
                match op {
                    0 => {
                        sent += 1;
                        if let Resolution::Resolved(..) = c.lookup_or_queue(ip, pool.alloc(1).unwrap(), t(now)) { resolved += 1; }
                    }
                    1 => {
                        let p = ArpPacket { op: ArpOp::Reply, sender_mac: MacAddr([2, 0, 0, 0, 1, host]), sender_ip: ip, target_mac: OWN_MAC, target_ip: OWN_IP };
                        let _ = c.on_packet(&p, OWN_IP, t(now), |_, _| released += 1);
                    }
                    2 => c.poll(t(now), |_| {}),
                    _ => {
                        // Refused (Full) when it would take the last slot.
                        let _ = c.add_static(ip, MacAddr([2, 0, 0, 0, 2, host]), |_, _| released += 1);
                    }
                }
                let statics = c.entries.iter().flatten().filter(|e| matches!(e.state, State::Static { .. })).count();
                prop_assert!(statics < cfg.capacity);
                prop_assert!(c.pending_len() <= cfg.pending_total);
                prop_assert!(c.entries.iter().flatten().count() <= cfg.capacity);
                let dropped = c.resolution_drops().get(ResolutionDropReason::QueueFull) + c.resolution_drops().get(ResolutionDropReason::Evicted) + c.resolution_drops().get(ResolutionDropReason::ResolutionFailed);
                prop_assert_eq!(sent, resolved + released + dropped + c.pending_len() as u64);
                prop_assert_eq!(pool.stats().live, c.pending_len());
            }
        }
    }
}
