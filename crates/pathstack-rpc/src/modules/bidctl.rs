//! `BIDCTL` on paths (spec §5): the per-peer boot-id state machines, on a
//! path of their own (BIDCTL / ETH, or BIDCTL / IP / ARP / ETH). The
//! engine ([`Bidctl`]) lives in the module, where BID and CHAN stages
//! reach it through their graph connection
//! ([`Cx::linked_module`](pathstack_core::stage::Cx::linked_module)) to
//! read a peer's boot id or register interest in a peer. What the engine
//! asks for — packets to send, `FIRST_CONTACT` and `PEER_REBOOTED` notices
//! for registrants — is put on paths by whoever ran it: the BIDCTL stage,
//! the module's poll (timers), or a BID or CHAN stage ([`BidctlModule::drain`]).
//!
//! A notice reaches a registered CHAN stage as an empty message entering
//! that stage from below, with the peer and a [`BootNotice`] in its
//! annotations (the x-kernel's control call on each registrant).

use super::sends::{self, Sends};
use super::RpcNet;
use crate::anno::{BootNotice, RpcAnno, RpcTag};
use crate::boot::{
    wall_clock_now, Bidctl, BidctlAction, BidctlConfig, BootEvent, BootGeneration, BootId,
    Registrant,
};
use crate::wire::bidctl::{BidctlDropReason, BidctlHeader};
use crate::Peer;
use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use pathstack_core::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, EstablishCx, Stage, Verdict};
use pathstack_core::{Dir, Instant, Msg, MsgPool, PathId};
use pathstack_inet::MacAddr;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

use super::protocol;

/// Spec of `BIDCTL`.
pub const BIDCTL_SPEC: ModuleSpec = ModuleSpec {
    name: "BIDCTL",
    doc: "BIDCTL: per-peer boot-id agreement and reboot detection for BID and CHAN",
    services: ServiceSpec::OVER_ONE,
    params: &[
        ParamSpec::optional(
            "net",
            "the network below: eth (EtherType 0x3006, default) or ip (protocol 205)",
        ),
        ParamSpec::optional(
            "bcast",
            "announce the boot id by broadcast once at start (default true, spec §5.4)",
        ),
        ParamSpec::optional("max_peers", "most peers tracked at once (default 1024)"),
    ],
    understands: &[],
};

/// The last boot id this process handed out: every `BIDCTL` instance (a
/// restarted host in the same process too) gets a larger one, so that a
/// reboot within one second of the last is still a new incarnation
/// (spec §5.3 asks for ids that differ on every boot, monotone preferred).
static LAST_BOOT_ID: AtomicU32 = AtomicU32::new(0);

fn next_boot_id() -> BootId {
    let secs = BootId::from_wall_clock(wall_clock_now()).0.max(1);
    let mut last = LAST_BOOT_ID.load(Ordering::Relaxed);
    loop {
        let id = secs.max(last.wrapping_add(1)).max(1);
        match LAST_BOOT_ID.compare_exchange(last, id, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return BootId(id),
            Err(l) => last = l,
        }
    }
}

/// The `BIDCTL` module: the engine, its own path, and the registrants.
pub struct BidctlModule {
    net: RpcNet,
    bcast: bool,
    max_peers: usize,
    engine: Option<Bidctl>,
    own: Option<(PathId, usize)>,
    /// Who may be notified: (path, position of the registered stage).
    registrants: Vec<(PathId, usize)>,
    /// The engine's requests, waiting to be put on paths (reused).
    actions: Vec<BidctlAction>,
    /// The boot broadcast is still to be sent.
    bcast_pending: bool,
    /// Bumped by every call that may change what the engine knows about a
    /// peer, so that BID stages may cache a peer's boot id and check it
    /// with one comparison ([`BidctlModule::known_bids`]); shared with
    /// the BID stages that hold it ([`BidctlModule::generation_cell`]).
    generation: BootGeneration,
    send_failures: u64,
}

impl BidctlModule {
    /// Factory: parameters `net`, `bcast`, `max_peers`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(BidctlModule {
            net: RpcNet::param(setup)?,
            bcast: setup.param("bcast", true)?,
            max_peers: setup.param("max_peers", crate::boot::DEFAULT_MAX_PEERS)?,
            engine: None,
            own: None,
            registrants: Vec::new(),
            actions: Vec::new(),
            bcast_pending: false,
            generation: BootGeneration::new(),
            send_failures: 0,
        }))
    }

    /// The engine (present once the module has started).
    pub fn engine(&self) -> Option<&Bidctl> {
        self.engine.as_ref()
    }

    /// This host's boot id.
    pub fn local_bid(&self) -> BootId {
        self.engine.as_ref().map_or(BootId(0), Bidctl::local_bid)
    }

    /// This host's boot id and `peer`'s (or [`BootId::UNKNOWN`]), with the
    /// generation they are valid for: while [`BidctlModule::generation`]
    /// returns the same number, neither changed.
    pub fn known_bids(&self, peer: Peer) -> (BootId, BootId, u64) {
        let peer_bid = self
            .engine
            .as_ref()
            .and_then(|e| e.peer_view(peer))
            .map_or(BootId(0), |v| v.bid);
        (self.local_bid(), peer_bid, self.generation.current())
    }

    /// The generation of what the engine knows (see
    /// [`BidctlModule::known_bids`]).
    pub fn generation(&self) -> u64 {
        self.generation.current()
    }

    /// The generation cell itself, for a BID stage to hold: it reads the
    /// generation without reaching this module on every message.
    pub fn generation_cell(&self) -> &BootGeneration {
        &self.generation
    }

    /// The peer's boot id, [`BootId::UNKNOWN`] until the first handshake;
    /// a `hint` other than the known id starts a query (spec §5.5).
    /// Whatever the engine wants sent waits in the module until
    /// [`BidctlModule::drain`].
    pub fn peer_bid(&mut self, peer: Peer, hint: BootId, now: Instant) -> BootId {
        self.generation.bump();
        let Some(e) = self.engine.as_mut() else {
            return BootId(0);
        };
        e.peer_bid(peer, hint, now, &mut self.actions)
            .unwrap_or(BootId(0))
    }

    /// Registers the stage at `position` of `path` for the notices about
    /// `peer` (idempotent).
    pub fn register(&mut self, peer: Peer, path: PathId, position: usize, now: Instant) {
        self.generation.bump();
        let idx = match self.registrants.iter().position(|&r| r == (path, position)) {
            Some(i) => i,
            None => {
                self.registrants.push((path, position));
                self.registrants.len() - 1
            }
        };
        if let Some(e) = self.engine.as_mut() {
            let r = Registrant(idx as u64);
            if e.registrants(peer).all(|x| x != r) {
                let _ = e.register(peer, r, now, &mut self.actions);
            }
        }
    }

    /// Turns what the engine asked for into messages and where they go:
    /// `(path, from, dir, msg)` for [`Ops::send_on`](pathstack_core::Ops::send_on). Packets are sent
    /// before notices, so that the peer hears our RESPONSE before CHAN
    /// resends a request on `FIRST_CONTACT`.
    pub fn drain(&mut self, pool: &MsgPool, into: &mut Sends) {
        let Some((own, pos)) = self.own else {
            self.actions.clear();
            return;
        };
        for a in self.actions.iter() {
            if let BidctlAction::Send { to, header } = a {
                match pool.alloc_copy(&header.to_bytes()) {
                    Ok(mut m) => {
                        m.anno_mut().set_rpc_peer(*to);
                        into.push((own, pos, Dir::Down, m));
                    }
                    Err(_) => self.send_failures += 1,
                }
            }
        }
        for a in self.actions.drain(..) {
            let BidctlAction::Notify { registrant, event } = a else {
                continue;
            };
            let Some(&(path, at)) = self.registrants.get(registrant.0 as usize) else {
                continue;
            };
            let (peer, notice) = match event {
                BootEvent::FirstContact { peer, .. } => (peer, BootNotice::FirstContact),
                BootEvent::PeerRebooted { peer, .. } => (peer, BootNotice::PeerRebooted),
            };
            match pool.alloc(0) {
                Ok(mut m) => {
                    let an = m.anno_mut();
                    an.set_rpc_peer(peer);
                    an.set_rpc_tag(RpcTag {
                        notice,
                        ..RpcTag::slot(0)
                    });
                    // Entering the registered stage from below: sent from
                    // the stage under it, upwards.
                    into.push((path, at + 1, Dir::Up, m));
                }
                Err(_) => self.send_failures += 1,
            }
        }
    }

    fn broadcast_peer(&self) -> Peer {
        match self.net {
            RpcNet::Eth => Peer::mac(MacAddr([0xff; 6])),
            RpcNet::Ip => Peer::ipv4(Ipv4Addr::BROADCAST),
        }
    }
}

impl Module for BidctlModule {
    fn spec(&self) -> &'static ModuleSpec {
        &BIDCTL_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        let config = BidctlConfig {
            max_peers: self.max_peers,
            ..BidctlConfig::default()
        };
        // A new engine: every boot id read before is stale.
        self.generation.bump();
        self.engine = Some(Bidctl::new(
            config,
            next_boot_id(),
            wall_clock_now(),
            cx.now(),
        ));
        self.bcast_pending = self.bcast;
        cx.request_path(Attrs::new().with(&keys::PASSIVE_OPEN, true), 0);
        Ok(())
    }

    fn path_created(&mut self, _tag: u64, _result: Result<PathId, &PathError>) {}

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        cx.require_top("BIDCTL carries no data paths (control realm, spec §5.1)")?;
        attrs.insert(
            &keys::PROT_ID,
            self.net
                .lower_prot_id(protocol::ETHERTYPE_BIDCTL, protocol::IP_BIDCTL),
        );
        Ok(Created::new(
            BidctlStage { out: Vec::new() },
            Route::Service(1),
        ))
    }

    fn polls_when_due(&self) -> bool {
        true
    }

    fn poll_at(&self) -> Option<Instant> {
        if self.bcast_pending && self.own.is_some() {
            return Some(Instant::ZERO);
        }
        self.engine.as_ref().and_then(Bidctl::poll_at)
    }

    fn poll(&mut self, cx: &mut ModCx<'_>) -> usize {
        let now = cx.now();
        if self.bcast_pending && self.own.is_some() {
            self.bcast_pending = false;
            if let Some(e) = self.engine.as_ref() {
                let header = e.boot_broadcast();
                let to = self.broadcast_peer();
                self.actions.push(BidctlAction::Send { to, header });
            }
        }
        if let Some(e) = self.engine.as_mut() {
            if e.poll_at().is_some_and(|t| t <= now) {
                self.generation.bump();
                e.on_time(now, &mut self.actions);
            }
        }
        let pool = cx.pool().clone();
        let mut out = Sends::new();
        self.drain(&pool, &mut out);
        let (n, failed) = sends::from_module(cx, out);
        self.send_failures += failed;
        n
    }

    fn stats(&self) -> Vec<(String, u64)> {
        vec![
            ("local_bid".into(), u64::from(self.local_bid().0)),
            (
                "peers".into(),
                self.engine.as_ref().map_or(0, |e| e.len()) as u64,
            ),
            ("send_failures".into(), self.send_failures),
        ]
    }
}

/// The stage of BIDCTL's own path: packets from peers into the engine.
pub struct BidctlStage {
    out: Sends,
}

impl Stage for BidctlStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            // The engine's packets (already whole headers).
            return Verdict::Next;
        }
        let h = match BidctlHeader::parse(msg.as_slice()) {
            Ok((h, _)) => h,
            Err(e) => return Verdict::Drop(e.into()),
        };
        let Some(from) = msg.anno().rpc_peer() else {
            return Verdict::Drop(BidctlDropReason::Truncated.into());
        };
        let now = cx.now();
        let pool = cx.pool().clone();
        let Some(m) = cx.module::<BidctlModule>() else {
            return Verdict::Drop(BidctlDropReason::Truncated.into());
        };
        let r = match m.engine.as_mut() {
            Some(e) => {
                m.generation.bump();
                e.on_packet(now, from, &h, &mut m.actions)
            }
            None => Err(BidctlDropReason::TableFull),
        };
        m.drain(&pool, &mut self.out);
        sends::from_stage(cx, &mut self.out);
        match r {
            Ok(()) => Verdict::Consumed,
            Err(e) => Verdict::Drop(e.into()),
        }
    }

    fn establish(&mut self, _aux: &mut Attrs, cx: &mut EstablishCx<'_>) -> Result<(), PathError> {
        let (path, pos) = (cx.path(), cx.position());
        if let Some(m) = cx.module::<BidctlModule>() {
            m.own = Some((path, pos));
        }
        Ok(())
    }
}
