//! `VCHAN` on paths (spec §7): a pool of CHAN channels per peer, so that
//! concurrent calls to one server run in parallel. On the client path its
//! stage gives each call going down an idle channel (the most recently
//! freed first) or parks it, in order, until one is free; an outcome
//! coming up gives its channel back and names the call again. The pools
//! live on the client path, in its stage (the thesis' PIN cached the pool
//! on the path; issue 26 item 7: what a call reads and changes is the
//! path's own, so the fast form reaches no VCHAN module and downcasts
//! nothing for it) — one client path per `RPC` above, so one set of pools
//! per VCHAN as before. The stage holds its peer's pool by handle, so a
//! call and its outcome reach the pool without a lookup by peer; a
//! retired pool's handle no longer matches, and the next call finds (or
//! opens) the new pool by peer. The module keeps the configuration the
//! stage's pools are made with. The pools' channels are opened in CHAN's
//! client table, which the stage reaches through its `down` connection.
//!
//! A peer that rebooted disables every channel to it (spec §6.4): its pool
//! is dropped, calls waiting in it fail with the reboot, its channels are
//! closed (CHAN forgets a disabled channel and frees its number), and the
//! next call opens a new pool on new channels starting at seq 2 (C9; the
//! x-kernel left disabled channels in the pool for callers to reopen, §12
//! item 14). That holds whether the reboot failed a call in flight or was
//! learnt while the pool was idle (a boot broadcast, D5): the pool keeps
//! CHAN's reboot count and looks at its channels when that count moved.
//!
//! On the server path VCHAN does nothing: server channels deliver
//! straight to MSELECT (§7).

use super::chan::ChanModule;
use super::rpc::{RpcRole, RPC_ROLE};
use crate::anno::{CallStatus, RpcAnno, RpcTag};
use crate::boot::BootGeneration;
use crate::chan::{ChannelKey, ClientState, ClientTable};
use crate::handle_table::{Handle, HandleCache, HandleTable};
use crate::vchan::{Acquired, VchanConfig, VchanPool, WaitTicket};
use crate::Peer;
use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::error::ModuleError;
use pathstack_core::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use pathstack_core::module::{CreateCx, Created, Creation, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg};
use std::collections::VecDeque;

/// Spec of `VCHAN`.
pub const VCHAN_SPEC: ModuleSpec = ModuleSpec {
    name: "VCHAN",
    doc: "VCHAN: a pool of CHAN channels per peer for concurrent calls",
    services: ServiceSpec::OVER_ONE,
    params: &[
        ParamSpec::optional("concurrency", "channels per peer (default 5, spec §7)"),
        ParamSpec::optional(
            "max_waiting",
            "calls per peer that may wait for a channel (default 1024)",
        ),
        ParamSpec::optional("max_peers", "most peers with a pool (default 1024)"),
    ],
    understands: &[],
};

/// Service index of VCHAN's connection to CHAN.
const DOWN: usize = 1;

/// One peer's pool, the calls its channels carry, and the calls waiting
/// in it.
struct PeerPool {
    pool: VchanPool,
    /// (channel, call slot) of each lent channel: at most the pool's
    /// channels, searched linearly (no hashing on the fast path).
    lent: Vec<(u16, u16)>,
    waiting: VecDeque<(WaitTicket, Msg)>,
    /// CHAN's reboot count ([`ChanModule::reboot_generation`]) when this
    /// pool last knew its channels were usable.
    reboots: u64,
}

impl PeerPool {
    /// The call slot of lent channel `chan`, which is given back.
    fn take_lent(&mut self, chan: u16) -> Option<u16> {
        let i = self.lent.iter().position(|&(c, _)| c == chan)?;
        Some(self.lent.swap_remove(i).1)
    }
}

/// The `VCHAN` module: the configuration of its client path's pools.
pub struct VchanModule {
    config: VchanConfig,
    max_peers: usize,
}

/// The pools of a client path's VCHAN stage: one per peer.
struct Pools {
    config: VchanConfig,
    /// Most peers with a pool, retired ones included.
    max_peers: usize,
    /// The current pool of each peer, reachable by handle.
    current: HandleTable<Peer, PeerPool>,
    /// Pools of peers that rebooted, kept until the outcomes of the calls
    /// their channels carried have come up (each names its channel).
    retired: Vec<(Peer, PeerPool)>,
}

impl VchanModule {
    /// Factory: parameters `concurrency`, `max_waiting`, `max_peers`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let d = VchanConfig::default();
        let config = VchanConfig {
            concurrency: setup.param("concurrency", d.concurrency)?,
            max_waiting: setup.param("max_waiting", d.max_waiting)?,
            ..d
        };
        Ok(Box::new(VchanModule {
            config,
            max_peers: setup.param("max_peers", 1024usize)?,
        }))
    }
}

impl Pools {
    /// The call slot carried by `peer`'s channel `chan`, which is given
    /// back (to a retired pool's bookkeeping, or to be released by the
    /// caller). A retired pool's channel is closed in `table` now that its
    /// call has ended.
    fn take_lent(&mut self, peer: Peer, chan: u16, table: &mut ClientTable) -> Option<u16> {
        if let Some(slot) = self.current.get_mut(&peer).and_then(|p| p.take_lent(chan)) {
            return Some(slot);
        }
        let i = self
            .retired
            .iter()
            .position(|(p, pool)| *p == peer && pool.lent.iter().any(|&(c, _)| c == chan))?;
        let retired = &mut self.retired[i].1;
        let slot = retired.take_lent(chan);
        if let Some(key) = retired.pool.channels().find(|k| k.chan == chan) {
            // Disabled by the reboot, and its call has ended: forgotten.
            let _ = table.close(key);
        }
        if retired.lent.is_empty() {
            self.retired.swap_remove(i);
        }
        slot
    }

    /// `peer` rebooted, which disabled every channel of its pool (spec
    /// §6.4): the pool goes. Its channels without a call are closed now,
    /// the others when their calls' outcomes come up (the pool is kept
    /// retired until then). Returns the calls that waited in it, which
    /// fail with the reboot.
    fn retire(&mut self, peer: Peer, table: &mut ClientTable) -> Vec<Msg> {
        let Some(mut p) = self.current.remove(&peer) else {
            return Vec::new();
        };
        for key in p.pool.channels() {
            if !p.lent.iter().any(|&(c, _)| c == key.chan) {
                // A channel still in WAIT refuses (Busy): its call's
                // outcome, failed by the reboot, is on its way up.
                let _ = table.close(key);
            }
        }
        let failed = p.waiting.drain(..).map(|(_, m)| m).collect();
        if !p.lent.is_empty() {
            self.retired.push((peer, p));
        }
        failed
    }
}

impl Module for VchanModule {
    fn spec(&self) -> &'static ModuleSpec {
        &VCHAN_SPEC
    }

    fn create_stage(&mut self, attrs: &mut Attrs, _cx: &mut CreateCx<'_>) -> Creation {
        let server = attrs.get(&RPC_ROLE) == Some(&RpcRole::Server);
        // VCHAN passes its caller's protocol number to CHAN (§7).
        let prot_id = attrs.get(&keys::PROT_ID).copied().unwrap_or(0);
        Ok(Created::new(
            VchanStage {
                server,
                prot_id,
                held: HandleCache::default(),
                reboots: None,
                pools: Pools {
                    config: self.config,
                    max_peers: self.max_peers,
                    current: HandleTable::default(),
                    retired: Vec::new(),
                },
            },
            Route::Service(DOWN),
        ))
    }
}

/// The `VCHAN` stage.
pub struct VchanStage {
    server: bool,
    prot_id: u32,
    /// The pool of the peer this path last called, by handle.
    held: HandleCache<Peer, PeerPool, 1>,
    /// CHAN's count of peer reboots ([`ChanModule::reboot_generation`]),
    /// held from the first call on.
    reboots: Option<BootGeneration>,
    /// The pools (on the server path: none, ever).
    pools: Pools,
}

impl VchanStage {
    /// The pool of `peer`, if one exists.
    pub fn pool(&self, peer: Peer) -> Option<&VchanPool> {
        self.pools.current.get(&peer).map(|p| &p.pool)
    }

    /// Statistics lines (what the module showed while it held the
    /// pools): pools, calls lent, calls waiting.
    pub fn stats(&self) -> Vec<(String, u64)> {
        let pools = || self.pools.current.values();
        vec![
            ("pools".into(), self.pools.current.len() as u64),
            (
                "calls_lent".into(),
                pools().map(|p| p.lent.len() as u64).sum(),
            ),
            (
                "calls_waiting".into(),
                pools().map(|p| p.waiting.len() as u64).sum(),
            ),
        ]
    }
}

/// A pool held by a VCHAN stage.
type PoolHandle = Handle<PeerPool>;

/// Turns `msg` into the failed outcome of its call.
fn fail(msg: &mut Msg, slot: u16, status: CallStatus) {
    msg.truncate(0);
    msg.anno_mut().set_rpc_tag(RpcTag {
        status,
        ..RpcTag::slot(slot)
    });
}

/// Sends the calls that waited in a rebooted peer's pool back up, failed
/// with the reboot.
fn fail_rebooted(failed: Vec<Msg>, cx: &mut Cx<'_, '_>) {
    for mut m in failed {
        let s = m.anno().rpc_tag().map_or(0, |t| t.slot);
        fail(&mut m, s, CallStatus::PeerRebooted);
        let _ = cx.emit(Dir::Up, m);
    }
}

/// Gives the call a channel of its pool `p`; `Err`: all are busy and the
/// call has a place in the pool's queue.
fn lend(p: &mut PeerPool, tag: RpcTag, msg: &mut Msg) -> Result<Verdict, WaitTicket> {
    match p.pool.acquire() {
        Ok(Acquired::Channel(key)) => {
            p.lent.push((key.chan, tag.slot));
            msg.anno_mut().set_rpc_tag(RpcTag::slot(key.chan));
            Ok(Verdict::Next)
        }
        Ok(Acquired::Queued(ticket)) => Err(ticket),
        Err(_) => {
            fail(msg, tag.slot, CallStatus::Busy);
            Ok(Verdict::Back)
        }
    }
}

/// Parks the call in its pool (held as `at`) until a channel is free
/// (fair: first come, first served); the message waits here, not in the
/// caller.
fn park(
    ticket: WaitTicket,
    (pools, at): (&mut Pools, PoolHandle),
    tag: RpcTag,
    peer: Peer,
    msg: &mut Msg,
    cx: &mut Cx<'_, '_>,
) -> Verdict {
    let Ok(m) = cx.pool().alloc(0) else {
        fail(msg, tag.slot, CallStatus::Busy);
        return Verdict::Back;
    };
    let parked = std::mem::replace(msg, m);
    if let Some((_, p)) = pools.current.find_mut(Some(at), &peer) {
        p.waiting.push_back((ticket, parked));
    }
    Verdict::Consumed
}

impl VchanStage {
    /// A call going down: the established case first — the pool this
    /// path holds, its channels not disabled since it last looked (CHAN's
    /// reboot count, held too) — reached with no module access and no
    /// lookup by peer; anything else (first call to a peer, another
    /// peer, a reboot somewhere) goes through [`VchanStage::call_resolve`].
    fn call(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let (Some(tag), Some(peer)) = (msg.anno().rpc_tag(), msg.anno().rpc_peer()) else {
            return Verdict::Drop(crate::wire::chan::ChanDropReason::NoChannel.into());
        };
        let (Some(held), Some(reboots)) = (self.held.get(0, &peer), self.reboots.as_ref()) else {
            return self.call_resolve(tag, peer, msg, cx);
        };
        let reboots = reboots.current();
        let lent = match self.pools.current.find_mut(Some(held), &peer) {
            Some((at, p)) if at == held && p.reboots == reboots => lend(p, tag, msg),
            _ => return self.call_resolve(tag, peer, msg, cx),
        };
        lent.unwrap_or_else(|ticket| park(ticket, (&mut self.pools, held), tag, peer, msg, cx))
    }

    /// A call whose pool is not held (or may be stale): finds or opens
    /// `peer`'s pool in the module and holds it, with CHAN's reboot
    /// count.
    #[inline(never)]
    fn call_resolve(
        &mut self,
        tag: RpcTag,
        peer: Peer,
        msg: &mut Msg,
        cx: &mut Cx<'_, '_>,
    ) -> Verdict {
        let prot_id = self.prot_id;
        let Some(chan) = cx.linked_module::<ChanModule>(DOWN, 0) else {
            return Verdict::Drop(crate::wire::chan::ChanDropReason::NoChannel.into());
        };
        let v = &mut self.pools;
        let cell = chan.reboot_generation();
        let reboots = cell.current();
        if self.reboots.is_none() {
            self.reboots = Some(cell.clone());
        }
        let full = v.current.len() + v.retired.len() >= v.max_peers;
        let config = v.config;
        let held = self.held.get(0, &peer);
        let at = match v.current.find_mut(held, &peer) {
            // A peer rebooted since this pool last looked (the rare case;
            // one comparison per call otherwise).
            Some((_, p)) if p.reboots != reboots => {
                return self.call_after_reboot(peer, msg, cx);
            }
            Some((at, _)) => at,
            None => {
                let pool = if full {
                    None
                } else {
                    VchanPool::new(chan.client_table(), peer, prot_id, config).ok()
                };
                let Some(pool) = pool else {
                    fail(msg, tag.slot, CallStatus::Busy);
                    return Verdict::Back;
                };
                chan.note_new_peer(peer);
                v.current.insert(
                    peer,
                    PeerPool {
                        pool,
                        lent: Vec::new(),
                        waiting: VecDeque::new(),
                        reboots,
                    },
                )
            }
        };
        self.held.put(0, peer, at);
        let Some((_, p)) = self.pools.current.find_mut(Some(at), &peer) else {
            return Verdict::Drop(crate::wire::chan::ChanDropReason::NoChannel.into());
        };
        lend(p, tag, msg)
            .unwrap_or_else(|ticket| park(ticket, (&mut self.pools, at), tag, peer, msg, cx))
    }

    /// `call` found that a peer rebooted since `peer`'s pool last looked:
    /// if it was `peer` (its channels are disabled), the pool is retired
    /// and the calls waiting in it fail with the reboot; either way the
    /// pool is up to date when the call is made again.
    fn call_after_reboot(&mut self, peer: Peer, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let failed = {
            let Some(chan) = cx.linked_module::<ChanModule>(DOWN, 0) else {
                return Verdict::Drop(crate::wire::chan::ChanDropReason::NoChannel.into());
            };
            let generation = chan.reboot_generation().current();
            let table = chan.client_table();
            let v = &mut self.pools;
            let Some(p) = v.current.get_mut(&peer) else {
                return self.call(msg, cx);
            };
            if p.pool
                .channels()
                .any(|k| table.state(k) == Some(ClientState::Disabled))
            {
                v.retire(peer, table)
            } else {
                p.reboots = generation;
                Vec::new()
            }
        };
        fail_rebooted(failed, cx);
        self.call(msg, cx)
    }

    fn outcome(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let (Some(tag), Some(peer)) = (msg.anno().rpc_tag(), msg.anno().rpc_peer()) else {
            return Verdict::Drop(crate::wire::chan::ChanDropReason::NoChannel.into());
        };
        // The common case, one pool lookup: a call of the current pool
        // ended; its channel goes back, to the longest waiter if any.
        let p = match self.pools.current.find_mut(self.held.get(0, &peer), &peer) {
            Some((_, p)) if tag.status != CallStatus::PeerRebooted => p,
            _ => return self.outcome_rare(peer, tag, msg, cx),
        };
        let Some(slot) = p.take_lent(tag.slot) else {
            return self.outcome_rare(peer, tag, msg, cx);
        };
        msg.anno_mut().set_rpc_tag(RpcTag { slot, ..tag });
        let key = ChannelKey {
            peer,
            prot_id: self.prot_id,
            chan: tag.slot,
        };
        let mut next = None;
        if let Ok(Some((ticket, key2))) = p.pool.release(key) {
            if let Some(i) = p.waiting.iter().position(|(t, _)| *t == ticket) {
                if let Some((_, mut m)) = p.waiting.remove(i) {
                    if let Some(t) = m.anno().rpc_tag() {
                        p.lent.push((key2.chan, t.slot));
                    }
                    m.anno_mut().set_rpc_tag(RpcTag::slot(key2.chan));
                    next = Some(m);
                }
            }
        }
        if let Some(m) = next {
            let _ = cx.emit(Dir::Down, m);
        }
        Verdict::Next
    }

    /// The outcome of a call failed by its peer's reboot, or of a call of
    /// a retired pool (module docs).
    fn outcome_rare(
        &mut self,
        peer: Peer,
        tag: RpcTag,
        msg: &mut Msg,
        cx: &mut Cx<'_, '_>,
    ) -> Verdict {
        let Some(chan) = cx.linked_module::<ChanModule>(DOWN, 0) else {
            return Verdict::Drop(crate::wire::chan::ChanDropReason::NoChannel.into());
        };
        let table = chan.client_table();
        let v = &mut self.pools;
        let current = v
            .current
            .get(&peer)
            .is_some_and(|p| p.lent.iter().any(|&(c, _)| c == tag.slot));
        let Some(slot) = v.take_lent(peer, tag.slot, table) else {
            // A second outcome for a channel already given back.
            return Verdict::Drop(crate::wire::chan::ChanDropReason::Unsolicited.into());
        };
        msg.anno_mut().set_rpc_tag(RpcTag { slot, ..tag });
        // Every channel of the pool is disabled: the next call opens a new
        // pool. Only the pool that carried this call goes (a retired
        // pool's later outcomes must not retire a new one).
        let failed = if current && tag.status == CallStatus::PeerRebooted {
            v.retire(peer, table)
        } else {
            Vec::new()
        };
        fail_rebooted(failed, cx);
        Verdict::Next
    }
}

impl VchanStage {
    /// Fast form, down: what `call` does with a call in `slot` to `peer`
    /// in the established case — the pool this path holds, no
    /// reboot since it last looked, a channel idle — with `send` (CHAN's
    /// step) run on the channel before it is lent: if `send` declines,
    /// nothing is lent and `None` comes back; else the channel is lent
    /// as `call` lends it and `send`'s result returned with the channel
    /// (the caller tags the message with it). `None` (decline) for
    /// anything else (on the server path VCHAN passes: the caller knows).
    #[inline(always)]
    pub(crate) fn fast_call<R>(
        &mut self,
        peer: Peer,
        slot: u16,
        send: impl FnOnce(u16) -> Option<R>,
    ) -> Option<(R, u16)> {
        let held = self.held.get(0, &peer)?;
        let reboots = self.reboots.as_ref()?.current();
        let p = self.pools.current.held_mut(held, &peer)?;
        if p.reboots != reboots {
            return None;
        }
        let chan = p.pool.next_idle()?.chan;
        let r = send(chan)?;
        // Lends the channel `next_idle` named, as `acquire` would (one
        // is idle: nothing ran in between).
        if !p.pool.lend_idle() {
            return None;
        }
        p.lent.push((chan, slot));
        Some((r, chan))
    }

    /// Fast form, up: what `outcome` does with the outcome of the call on
    /// channel `chan` of `peer`'s held pool in the established
    /// case (a call of the held pool ended, no call waiting for a
    /// channel), with `take` (CHAN's step) run first: if `take`
    /// declines, nothing is given back and `None` comes back; else the
    /// channel is given back as `outcome` gives it back and the call's
    /// slot returned (the caller tags the message with it).
    #[inline(always)]
    pub(crate) fn fast_outcome(
        &mut self,
        peer: Peer,
        chan: u16,
        take: impl FnOnce() -> bool,
    ) -> Option<u16> {
        let held = self.held.get(0, &peer)?;
        let p = self.pools.current.held_mut(held, &peer)?;
        // Found once: the call's slot and where it is kept.
        let i = p.lent.iter().position(|&(c, _)| c == chan)?;
        if p.pool.waiting() != 0 || !take() {
            return None;
        }
        let slot = p.lent.swap_remove(i).1;
        // No call waits: the channel goes idle (or parked), nothing to
        // send, as in `outcome`.
        let _ = p.pool.release_idle(chan);
        Some(slot)
    }
}

impl Stage for VchanStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        match (dir, self.server) {
            (_, true) => Verdict::Next,
            (Dir::Down, false) => self.call(msg, cx),
            (Dir::Up, false) => self.outcome(msg, cx),
        }
    }

    fn passes(&self, _dir: Dir) -> bool {
        self.server
    }
}
