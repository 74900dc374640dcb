//! The BIDCTL engine: the table of per-peer state machines, registration
//! of interest, lookups, the retransmission and tick timers, and the
//! notifications to registrants (spec §5).
//!
//! Sans-IO: the engine reads no clock and sends nothing itself. Every
//! entry point takes `now` and a caller-provided `&mut Vec<BidctlAction>`
//! it appends to (the caller clears and reuses it, so the steady state
//! allocates nothing): headers to send to a peer, and notifications for
//! registrants. [`Bidctl::poll_at`] says when [`Bidctl::on_time`] is due.

use crate::boot::bidctl_event::{BidctlAction, Registrant};
use crate::boot::bidctl_peer::{Cx, PeerState};
use crate::boot::{
    bcast_query_delay, query_tag, BidctlState, BootId, DEFAULT_MAX_PEERS,
    DEFAULT_MAX_REGISTRANTS_PER_PEER, IDLE_LIMIT_TICKS, TIMER_INTERVAL,
};
use crate::hash_map::FastMap;
use crate::wire::bidctl::{flags, BidctlDropReason, BidctlHeader};
use crate::Peer;
use pathstack_core::time::Instant;
use std::io;

/// What other stages may read about a peer cheaply
/// ([`Bidctl::peer_view`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PeerView {
    /// The peer's BootId as confirmed by handshake ([`BootId::UNKNOWN`]
    /// before the first one).
    pub bid: BootId,
    /// How many PEER_REBOOTED this record has seen: a stage that saved the
    /// epoch knows the peer rebooted since if it changed. A record that was
    /// forgotten (unregistered and idle) starts again at 0.
    pub epoch: u64,
    /// Whether the BootId is known (X32: the BID sessions are active).
    pub active: bool,
    /// The state machine's state.
    pub state: BidctlState,
}

/// The bounds of a BIDCTL engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BidctlConfig {
    /// Most peers tracked at once ([`DEFAULT_MAX_PEERS`]).
    pub max_peers: usize,
    /// Most distinct registrants per peer
    /// ([`DEFAULT_MAX_REGISTRANTS_PER_PEER`]).
    pub max_registrants_per_peer: usize,
    /// Seed of the generator that draws the boot-broadcast delays (spec
    /// §5.4 `BCAST_QUERY_DELAY`, which X32 draws from the clock's µs).
    pub random_seed: u64,
    /// This host's own addresses: lookups answer the local BootId and
    /// registrations are no-ops (X32 `VNET_ISMYADDR`), packets from them
    /// are dropped.
    pub local_peers: Vec<Peer>,
}

impl Default for BidctlConfig {
    fn default() -> Self {
        BidctlConfig {
            max_peers: DEFAULT_MAX_PEERS,
            max_registrants_per_peer: DEFAULT_MAX_REGISTRANTS_PER_PEER,
            random_seed: 0x9E37_79B9_7F4A_7C15,
            local_peers: Vec::new(),
        }
    }
}

/// Why a BIDCTL call was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BidctlError {
    /// Every slot of the peer table holds a peer with registrants.
    #[error("BIDCTL peer table full ({max} peers with registrants): cannot track {peer}")]
    TableFull {
        /// The peer that found no slot.
        peer: Peer,
        /// The table's bound.
        max: usize,
    },
    /// The peer has as many distinct registrants as allowed.
    #[error("BIDCTL peer {peer} already has {max} registrants")]
    TooManyRegistrants {
        /// The peer.
        peer: Peer,
        /// The bound.
        max: usize,
    },
    /// Deregistration of someone not registered for the peer.
    #[error("registrant {registrant} is not registered with BIDCTL for {peer}")]
    NotRegistered {
        /// The peer.
        peer: Peer,
        /// The registrant.
        registrant: Registrant,
    },
}

impl From<BidctlError> for io::Error {
    fn from(e: BidctlError) -> Self {
        let kind = match e {
            BidctlError::TableFull { .. } | BidctlError::TooManyRegistrants { .. } => {
                io::ErrorKind::OutOfMemory
            }
            BidctlError::NotRegistered { .. } => io::ErrorKind::NotFound,
        };
        io::Error::new(kind, e)
    }
}

/// The BIDCTL protocol of one host (spec §5): its BootId and one state
/// machine per peer.
///
/// ```
/// use pathstack_core::time::Instant;
/// use pathstack_rpc::boot::{Bidctl, BidctlAction, BidctlConfig, BootId, Registrant};
/// use pathstack_rpc::wire::bidctl::flags;
/// use pathstack_rpc::Peer;
/// use std::net::Ipv4Addr;
/// use std::time::Duration;
///
/// let wall = Duration::from_secs(0x2F5E_1000);
/// let mut bidctl = Bidctl::new(BidctlConfig::default(), BootId::from_wall_clock(wall), wall, Instant::ZERO);
/// let server = Peer::from(Ipv4Addr::new(10, 0, 0, 2));
/// let mut out = Vec::new();
/// bidctl.register(server, Registrant(1), Instant::ZERO, &mut out).unwrap();
/// // The first use of a peer sends a QUERY (spec §5.5 INIT row).
/// assert!(matches!(out[0], BidctlAction::Send { to, header } if to == server && header.flags == flags::QUERY));
/// assert_eq!(bidctl.peer_view(server).unwrap().active, false);
/// ```
#[derive(Debug)]
pub struct Bidctl {
    config: BidctlConfig,
    local_bid: BootId,
    /// Wall-clock time at `started`, for query tags (spec §5.3).
    wall_at_start: std::time::Duration,
    started: Instant,
    peers: FastMap<Peer, PeerState>,
    next_tick: Instant,
    rng: u64,
}

/// The engine's side of every transition at one instant: its own boot
/// id, the time and the tag a new QUERY gets then (spec §5.3).
#[derive(Clone, Copy)]
struct Moment {
    local_bid: BootId,
    now: Instant,
    fresh_tag: u32,
}

impl Moment {
    /// The context of `peer`'s transition, its actions going to `out`.
    fn cx(self, peer: Peer, out: &mut Vec<BidctlAction>) -> Cx<'_> {
        Cx {
            peer,
            local_bid: self.local_bid,
            now: self.now,
            fresh_tag: self.fresh_tag,
            out,
        }
    }
}

impl Bidctl {
    /// An engine with BootId `local_bid` (see
    /// [`BootId::from_wall_clock`]), created at stack time `now` when the
    /// wall clock read `wall_clock` (time since the Unix epoch, e.g.
    /// [`crate::boot::wall_clock_now`]); query tags follow the wall clock
    /// from there on stack time.
    pub fn new(
        config: BidctlConfig,
        local_bid: BootId,
        wall_clock: std::time::Duration,
        now: Instant,
    ) -> Self {
        let rng = if config.random_seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            config.random_seed
        };
        Bidctl {
            config,
            local_bid,
            wall_at_start: wall_clock,
            started: now,
            peers: FastMap::default(),
            next_tick: now + TIMER_INTERVAL,
            rng,
        }
    }

    /// This host's BootId (X32 `BIDCTL_GET_LOCAL_BID`).
    pub fn local_bid(&self) -> BootId {
        self.local_bid
    }

    /// The boot broadcast (spec §5.4): sent once at start-up to the local
    /// broadcast address of the lower protocol, unless disabled, so that
    /// peers holding state for this host learn of its new BootId.
    pub fn boot_broadcast(&self) -> BidctlHeader {
        BidctlHeader {
            flags: flags::BCAST,
            src_bid: self.local_bid,
            dst_bid: BootId::UNKNOWN,
            req_tag: 0,
            rpl_tag: 0,
        }
    }

    /// How many peers the table holds.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// Whether the table holds no peer.
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// The table's bound.
    pub fn capacity(&self) -> usize {
        self.config.max_peers
    }

    fn is_local(&self, peer: Peer) -> bool {
        self.config.local_peers.contains(&peer)
    }

    /// Registers `registrant`'s interest in `peer` (X32 `openEnable` on
    /// BIDCTL): it will get [`BootEvent`](crate::boot::BootEvent)s for the peer, and the peer's
    /// state is kept (with keepalives) while anyone is registered. A
    /// registrant may register several times and must deregister as often.
    /// The first use of a peer starts the handshake (a QUERY in `out`).
    ///
    /// A registrant that registers after the first contact gets no
    /// FIRST_CONTACT: it reads [`Bidctl::peer_bid`] or
    /// [`Bidctl::peer_view`] instead (as X32's BID does).
    pub fn register(
        &mut self,
        peer: Peer,
        registrant: Registrant,
        now: Instant,
        out: &mut Vec<BidctlAction>,
    ) -> Result<(), BidctlError> {
        if self.is_local(peer) {
            return Ok(());
        }
        let max_reg = self.config.max_registrants_per_peer;
        let moment = self.moment(now);
        let st = self.state_for(peer, now)?;
        let count = st.registrants.len();
        match st.registrants.iter_mut().find(|(r, _)| *r == registrant) {
            Some((_, n)) => *n = n.saturating_add(1),
            None if count >= max_reg => {
                return Err(BidctlError::TooManyRegistrants { peer, max: max_reg })
            }
            None => st.registrants.push((registrant, 1)),
        }
        let mut cx = moment.cx(peer, out);
        let _ = st.transition(None, &mut cx);
        Ok(())
    }

    /// Withdraws one registration of `registrant` for `peer` (X32
    /// `openDisable`). A state left without registrants is forgotten after
    /// [`IDLE_LIMIT_TICKS`] silent ticks.
    pub fn deregister(&mut self, peer: Peer, registrant: Registrant) -> Result<(), BidctlError> {
        if self.is_local(peer) {
            return Ok(());
        }
        let not_registered = BidctlError::NotRegistered { peer, registrant };
        let st = self.peers.get_mut(&peer).ok_or(not_registered.clone())?;
        let i = st
            .registrants
            .iter()
            .position(|(r, _)| *r == registrant)
            .ok_or(not_registered)?;
        st.registrants[i].1 -= 1;
        if st.registrants[i].1 == 0 {
            st.registrants.swap_remove(i);
        }
        Ok(())
    }

    /// Who is registered for `peer`.
    pub fn registrants(&self, peer: Peer) -> impl Iterator<Item = Registrant> + '_ {
        self.peers
            .get(&peer)
            .into_iter()
            .flat_map(|st| st.registrants.iter().map(|&(r, _)| r))
    }

    /// The peer's BootId, [`BootId::UNKNOWN`] while not known (X32
    /// `BIDCTL_GET_PEER_BID`, non-blocking). The first use of a peer starts
    /// the handshake. A known `hint` other than the peer's BootId (BID saw
    /// it in a packet) starts a query if none is under way; the answer
    /// comes later as a [`BootEvent::PeerRebooted`](crate::boot::BootEvent::PeerRebooted) (or, for a false
    /// alarm, nothing).
    pub fn peer_bid(
        &mut self,
        peer: Peer,
        hint: BootId,
        now: Instant,
        out: &mut Vec<BidctlAction>,
    ) -> Result<BootId, BidctlError> {
        if self.is_local(peer) {
            return Ok(self.local_bid);
        }
        let moment = self.moment(now);
        let st = self.state_for(peer, now)?;
        let mut cx = moment.cx(peer, out);
        Ok(st.lookup(hint, &mut cx))
    }

    /// What is known about `peer`, without side effects: one hash lookup,
    /// for stages that check on their fast path whether the peer rebooted
    /// (its `epoch` changed) since they last looked. `None` if the engine
    /// holds no state for it. One of this host's own addresses
    /// ([`BidctlConfig::local_peers`]) reads as the local BootId, NORMAL,
    /// epoch 0.
    pub fn peer_view(&self, peer: Peer) -> Option<PeerView> {
        if self.is_local(peer) {
            return Some(PeerView {
                bid: self.local_bid,
                epoch: 0,
                active: true,
                state: BidctlState::Normal,
            });
        }
        self.peers.get(&peer).map(|st| PeerView {
            bid: st.peer_bid,
            epoch: st.epoch,
            active: st.peer_bid.is_known(),
            state: st.fsm,
        })
    }

    /// A checked header `h` received from `from` (spec §5.5). `Err` names
    /// why the packet was dropped; answers (a RESPONSE to a QUERY, a null
    /// message to a stale dstBid) may be in `out` either way. A boot
    /// broadcast is held for its random delay (30 ms – 3 s, spec §5.4) and
    /// handled by [`Bidctl::on_time`].
    pub fn on_packet(
        &mut self,
        now: Instant,
        from: Peer,
        h: &BidctlHeader,
        out: &mut Vec<BidctlAction>,
    ) -> Result<(), BidctlDropReason> {
        if self.is_local(from) {
            return Err(BidctlDropReason::FromLocalHost);
        }
        if h.is_bcast() && !self.peers.contains_key(&from) {
            // Only hosts we talk to care that this one rebooted.
            return Err(BidctlDropReason::BcastFromUnknown);
        }
        let moment = self.moment(now);
        let delay = if h.is_bcast() {
            bcast_query_delay(self.next_random())
        } else {
            pathstack_core::time::Duration::ZERO
        };
        let st = self
            .state_for(from, now)
            .map_err(|_| BidctlDropReason::TableFull)?;
        st.ticks = 0;
        if h.is_bcast() {
            // X32 delays the handling thread, so as not to swamp the
            // rebooted host; a later broadcast replaces a waiting one.
            st.pending_bcast = Some((now + delay, *h));
            return Ok(());
        }
        let mut cx = moment.cx(from, out);
        st.transition(Some(h), &mut cx)
    }

    /// The earliest time [`Bidctl::on_time`] has work: a query to repeat,
    /// a boot broadcast whose delay ends, or the next global tick (so it is
    /// never `None` while the engine exists). A scan of the table (at most
    /// [`BidctlConfig::max_peers`] entries): call it after handling a batch
    /// rather than per message.
    pub fn poll_at(&self) -> Option<Instant> {
        let mut at = self.next_tick;
        for st in self.peers.values() {
            if let Some(d) = st.deadline {
                at = at.min(d);
            }
            if let Some((d, _)) = st.pending_bcast {
                at = at.min(d);
            }
        }
        Some(at)
    }

    /// Runs what is due at `now`: delayed boot broadcasts, query
    /// retransmissions, and the global ticks (keepalives, forgetting idle
    /// unregistered peers).
    pub fn on_time(&mut self, now: Instant, out: &mut Vec<BidctlAction>) {
        let moment = self.moment(now);
        for (&peer, st) in self.peers.iter_mut() {
            let mut cx = moment.cx(peer, &mut *out);
            if let Some((at, h)) = st.pending_bcast {
                if at <= now {
                    st.pending_bcast = None;
                    // A broadcast of the BootId we know is old news.
                    if h.src_bid != st.peer_bid {
                        let _ = st.transition(Some(&h), &mut cx);
                    }
                }
            }
            if st.deadline.is_some_and(|d| d <= now) {
                st.on_timeout(&mut cx);
            }
        }
        // Catch up on missed ticks, but not without end after a long
        // sleep: beyond the idle limit more ticks change nothing.
        let mut ticks = 0;
        while self.next_tick <= now && ticks <= IDLE_LIMIT_TICKS {
            self.peers.retain(|&peer, st| {
                let mut cx = moment.cx(peer, &mut *out);
                st.tick(&mut cx)
            });
            self.next_tick = self.next_tick + TIMER_INTERVAL;
            ticks += 1;
        }
        if self.next_tick <= now {
            self.next_tick = now + TIMER_INTERVAL;
        }
    }

    /// What a peer's transition at `now` is told besides its peer and
    /// where its actions go.
    fn moment(&self, now: Instant) -> Moment {
        Moment {
            local_bid: self.local_bid,
            now,
            fresh_tag: self.fresh_tag(now),
        }
    }

    /// The state for `peer`, created (in INIT, open timer armed) if there
    /// is none. A full table makes room by forgetting the unregistered
    /// peer silent for longest: unregistered states are only caches.
    fn state_for(&mut self, peer: Peer, now: Instant) -> Result<&mut PeerState, BidctlError> {
        if !self.peers.contains_key(&peer) && self.peers.len() >= self.config.max_peers {
            let victim = self
                .peers
                .iter()
                .filter(|(_, st)| !st.is_registered())
                .max_by_key(|(_, st)| st.ticks)
                .map(|(&p, _)| p);
            match victim {
                Some(v) => {
                    self.peers.remove(&v);
                }
                None => {
                    return Err(BidctlError::TableFull {
                        peer,
                        max: self.config.max_peers,
                    })
                }
            }
        }
        Ok(self
            .peers
            .entry(peer)
            .or_insert_with(|| PeerState::new(now)))
    }

    /// The tag a new query gets at `now` (spec §5.3).
    fn fresh_tag(&self, now: Instant) -> u32 {
        let since = std::time::Duration::from_nanos(now.saturating_since(self.started).as_nanos());
        // Only the low bits matter: a wall clock at the end of Duration's
        // range keeps its start value rather than overflow.
        query_tag(
            self.wall_at_start
                .checked_add(since)
                .unwrap_or(self.wall_at_start),
        )
    }

    /// xorshift64* (Vigna): statistical quality is beside the point, the
    /// delay only spreads the answers to a boot broadcast.
    fn next_random(&mut self) -> u32 {
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}
