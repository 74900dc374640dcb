//! `CHAN` on paths (spec §6): request/reply channels with at-most-once
//! execution. The client channel table (x-kernel's session map) lives in
//! the module ([`ClientTable`]: VCHAN's pools open their channels in it),
//! and the module's poll runs its retransmission timers; the server
//! path's stage holds the server table itself
//! (`modules::server_channels`, with a stage timer for
//! its retransmissions), since nothing but that stage reaches it. The
//! stage of the client path starts calls and takes replies, the stage of
//! the server path hands requests up and sends the replies that come back
//! down.
//!
//! Outcomes travel as messages: a reply goes up in place (header popped,
//! channel in the [`RpcTag`]); a failed call (deadline, peer reboot) goes
//! up as an empty message whose tag carries the status. BIDCTL's notices
//! come in from below as empty messages with a [`BootNotice`].
//!
//! Two choices the specification leaves (§12): CHAN does not see BLAST's
//! ticket on this path (BLAST sits two stages below and fragments after
//! CHAN has sent), so the push receipt says only whether the message was
//! long enough to be fragmented (`expensive`, from BLAST's fragment size
//! in the path attribute [`BLAST_FRAGMENT_LEN`]); `FREERESOURCES` is then
//! left to BLAST's 1 s hold timer, and a forced resend of a fragmented
//! message is sent whole. And calls have a deadline (`call_timeout`,
//! default 30 s) where the x-kernel retried forever (§12 item 11): a
//! library call must end.

use super::bidctl::BidctlModule;
use super::chan_actions::{self, status_of};
use super::rpc::{RpcRole, RPC_ROLE};
use super::sends::{self, Sends};
use super::server_channels::ServerChannels;
use crate::anno::{BootNotice, RpcAnno, RpcTag};
use crate::boot::BootGeneration;
use crate::chan::ReplyError;
use crate::chan::{
    ChanAction, ChannelKey, ClientChannel, ClientConfig, ClientTable, ServerChannel,
    TransportReceipt,
};
use crate::handle_table::HandleCache;
use crate::wire::chan::{flags, ChanDropReason, ChanHeader, HEADER_LEN};
use crate::Peer;
use pathstack_core::attrs::{keys, AttrKey, Attrs};
use pathstack_core::demux::{DemuxKey, Key, KeyMode, PartialClassifier};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack_core::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use pathstack_core::module_handle::ModuleHandle;
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, EstablishCx, Stage, Verdict};
use pathstack_core::time::Duration;
use pathstack_core::{Dir, Instant, Msg, MsgPool, PathId};

use super::protocol;

/// Spec of `CHAN`.
pub const CHAN_SPEC: ModuleSpec = ModuleSpec {
    name: "CHAN",
    doc: "CHAN: request/reply channels, implicit acknowledgement, at-most-once execution",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after(),
        ServiceSpec::new("ctl", ServiceType::AIO, Count::ExactlyOne).init_after(),
    ],
    params: &[ParamSpec::optional(
        "call_timeout",
        "seconds before a call without a reply fails (default 30; 0: never, as the x-kernel)",
    )],
    understands: &[],
};

/// How long a call may go without a reply before CHAN fails it with
/// [`CallStatus::TimedOut`](crate::anno::CallStatus::TimedOut), unless the graph sets `call_timeout`.
pub const DEFAULT_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Service index of CHAN's connection to BIDCTL.
const CTL: usize = 2;

/// Channels whose handles a CHAN stage holds (direct-mapped by channel
/// number): a VCHAN pool's default five, with room to grow, fit without
/// evicting each other.
const HELD_CHANNELS: usize = 8;

/// BLAST's fragment size F on a path (set by `BLAST` when the path is
/// made; read by CHAN to know which messages BLAST fragments).
pub const BLAST_FRAGMENT_LEN: AttrKey<usize> = AttrKey::pervasive("BLAST_FRAGMENT_LEN");

/// The `CHAN` module: the client channel table (the server path's stage
/// holds the server table).
pub struct ChanModule {
    client: ClientTable,
    call_timeout: Option<Duration>,
    /// Where the client stage is: (path, position).
    client_at: Option<(PathId, usize)>,
    /// Peers whose client channels still need registering with BIDCTL
    /// (VCHAN opened a pool).
    pending_registrations: Vec<Peer>,
    /// The engines' requests (reused).
    actions: Vec<ChanAction>,
    next_due: Option<Instant>,
    send_failures: u64,
    /// Bumped with every peer reboot the client table is told of: VCHAN's
    /// stage holds it to see, with one load per call, whether its pool's
    /// channels may have been disabled ([`ChanModule::reboot_generation`]).
    reboots: BootGeneration,
}

impl ChanModule {
    /// Factory: parameter `call_timeout`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let secs: u64 = setup.param("call_timeout", DEFAULT_CALL_TIMEOUT.as_secs())?;
        Ok(Box::new(ChanModule {
            client: ClientTable::new(ClientConfig::default()),
            call_timeout: (secs > 0).then(|| Duration::from_secs(secs)),
            client_at: None,
            pending_registrations: Vec::new(),
            actions: Vec::new(),
            next_due: None,
            send_failures: 0,
            reboots: BootGeneration::new(),
        }))
    }

    /// The client channel table (VCHAN opens its pools' channels here).
    pub fn client_table(&mut self) -> &mut ClientTable {
        &mut self.client
    }

    /// The cell counting the peer reboots the client table was told of,
    /// for a holder of client channels (VCHAN's pools) to compare once
    /// per call without reaching this module.
    pub fn reboot_generation(&self) -> &BootGeneration {
        &self.reboots
    }

    /// Asks for the client channels to `peer` to be registered with
    /// BIDCTL (done by the client stage on its next message).
    pub fn note_new_peer(&mut self, peer: Peer) {
        if !self.pending_registrations.contains(&peer) {
            self.pending_registrations.push(peer);
        }
    }

    /// Notes a timer armed at `at` by a call or reply; returns whether
    /// that moved the module's deadline earlier (a fast form that reached
    /// the module without marking it then marks it, so the stack's idle
    /// poll learns the new deadline; issue 26 item 5).
    fn armed(&mut self, at: Instant) -> bool {
        let earlier = self.next_due.is_none_or(|d| at < d);
        if earlier {
            self.next_due = Some(at);
        }
        earlier
    }

    fn due(&mut self) {
        self.next_due = self.client.poll_at();
    }

    /// Turns the engines' requests into messages from the client stage
    /// (`chan_actions::drain`); a `Reply` or `Execute` for the packet
    /// being processed is returned instead (only one per packet).
    fn drain(&mut self, pool: &MsgPool, into: &mut Sends) -> Option<ChanAction> {
        let client = &self.client;
        let (own, failed) = chan_actions::drain(
            &mut self.actions,
            |key| client.saved_copy(key),
            self.client_at,
            pool,
            into,
        );
        self.send_failures += failed;
        own
    }
}

/// Whether `anno` carries one of BIDCTL's notices (which the fast forms
/// leave to the stage).
#[inline(always)]
fn is_notice(anno: &pathstack_core::Anno) -> bool {
    anno.has_notice()
}

/// Pushes CHAN's header `h` on a call or reply going down.
fn push_header(msg: &mut Msg, h: &ChanHeader) -> Verdict {
    match msg.push(HEADER_LEN) {
        Ok(b) => {
            h.emit(b);
            Verdict::Next
        }
        Err(_) => Verdict::Drop(ChanDropReason::Truncated.into()),
    }
}

pathstack_core::header_demux!(
    /// The CHAN partial classifier: requests (`FROM_CLIENT`) and replies are
    /// told apart, then the upper protocol number.
    ChanDemux,
    crate::wire::chan
);

impl Module for ChanModule {
    fn spec(&self) -> &'static ModuleSpec {
        &CHAN_SPEC
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let server = attrs.get(&RPC_ROLE) == Some(&RpcRole::Server);
        let prot_id = attrs
            .get(&keys::PROT_ID)
            .copied()
            .ok_or_else(|| cx.refuse("a path through CHAN needs the upper PROT_ID"))?;
        attrs.insert(&keys::PROT_ID, protocol::CHAN);
        let channels = match server {
            true => Some(ServerChannels::new().map_err(|e| cx.refuse(e.to_string()))?),
            false => None,
        };
        Ok(Created::new(
            ChanStage {
                server,
                channels,
                own: cx.own_handle::<ChanModule>(),
                prot_id,
                fragment_len: None,
                clients: HandleCache::default(),
                servers: HandleCache::default(),
                out: Vec::new(),
                bidctl_out: Vec::new(),
            },
            Route::Service(1),
        ))
    }

    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        Some(Box::new(ChanDemux))
    }

    fn polls_when_due(&self) -> bool {
        true
    }

    fn poll_at(&self) -> Option<Instant> {
        self.next_due
    }

    fn poll(&mut self, cx: &mut ModCx<'_>) -> usize {
        let now = cx.now();
        if self.next_due.is_none_or(|t| t > now) {
            return 0;
        }
        self.client.on_time(now, &mut self.actions);
        self.due();
        let pool = cx.pool().clone();
        let mut out = Sends::new();
        self.drain(&pool, &mut out);
        let (n, failed) = sends::from_module(cx, out);
        self.send_failures += failed;
        n
    }

    fn stats(&self) -> Vec<(String, u64)> {
        vec![
            ("client_channels".into(), self.client.len() as u64),
            ("send_failures".into(), self.send_failures),
        ]
    }
}

/// The `CHAN` stage of the client or the server path.
pub struct ChanStage {
    server: bool,
    /// The server path's channels, held by its stage (`None` on the
    /// client path): a request and its reply reach their channel with no
    /// module reached.
    channels: Option<ServerChannels>,
    /// This module, resolved when the path was made: the client path's
    /// fast form reaches it by index ([`pathstack_core::module_handle`]).
    own: ModuleHandle<ChanModule>,
    /// The upper protocol (MSELECT).
    prot_id: u32,
    /// BLAST's fragment size on this path, read once.
    fragment_len: Option<usize>,
    /// Client: the channels this path's calls use, held by handle so a
    /// call and its reply reach their channel without a lookup by peer
    /// (the thesis' PIN kept the channel on the path). A handle the
    /// table no longer honours (the channel was closed, e.g. after a
    /// peer's reboot) costs one lookup by key, which resolves it again.
    clients: HandleCache<ChannelKey, ClientChannel, HELD_CHANNELS>,
    /// Server: the channels this path's requests arrive on, likewise.
    /// A channel in EXECUTE is also where the reply coming back down
    /// finds its call (the channel holds the execution's token).
    servers: HandleCache<ChannelKey, ServerChannel, HELD_CHANNELS>,
    out: Sends,
    bidctl_out: Sends,
}

impl ChanStage {
    /// The receipt BLAST would give for a message of `len` CHAN bytes.
    fn receipt(&mut self, cx: &Cx<'_, '_>, len: usize) -> TransportReceipt {
        let f = *self.fragment_len.get_or_insert_with(|| {
            cx.attrs()
                .get(&BLAST_FRAGMENT_LEN)
                .copied()
                .unwrap_or(usize::MAX)
        });
        // BID's 12 bytes ride with CHAN's message into BLAST.
        TransportReceipt {
            expensive: len + crate::wire::bid::HEADER_LEN >= f,
            ..TransportReceipt::default()
        }
    }

    /// Registers peers with BIDCTL for this stage's notices.
    fn register(&mut self, cx: &mut Cx<'_, '_>, peers: &[Peer]) {
        let (path, pos, now) = (cx.path(), cx.position(), cx.now());
        let pool = cx.pool().clone();
        if let Some(ctl) = cx.linked_module::<BidctlModule>(CTL, 0) {
            for &p in peers {
                ctl.register(p, path, pos, now);
            }
            ctl.drain(&pool, &mut self.bidctl_out);
        }
        sends::from_stage(cx, &mut self.bidctl_out);
    }

    /// Sends what the engines asked for; returns the action about the
    /// packet being processed, if any.
    fn flush(&mut self, cx: &mut Cx<'_, '_>) -> Option<ChanAction> {
        // The common case, every packet of a call in order: the engine's
        // only request is the packet's own reply or execution, with
        // nothing to send; take it without the pool and the drain (half
        // of this function's cost on a zero-byte round trip).
        {
            let m = cx.module::<ChanModule>()?;
            if let [ChanAction::Reply { .. } | ChanAction::Execute { .. }] = m.actions.as_slice() {
                return m.actions.pop();
            }
        }
        let pool = cx.pool().clone();
        let m = cx.module::<ChanModule>()?;
        let own = m.drain(&pool, &mut self.out);
        if !self.out.is_empty() {
            // Retransmissions and probes re-arm timers: look again.
            m.due();
        }
        sends::from_stage(cx, &mut self.out);
        own
    }

    /// [`ChanStage::flush`] of the server path, whose stage holds its
    /// channels: sends what the server engine asked for from this stage,
    /// down its own path, and re-arms the retransmission timer if that
    /// resent anything.
    fn flush_server(&mut self, cx: &mut Cx<'_, '_>) -> Option<ChanAction> {
        let ch = self.channels.as_mut()?;
        if let [ChanAction::Reply { .. } | ChanAction::Execute { .. }] = ch.actions.as_slice() {
            return ch.actions.pop();
        }
        let pool = cx.pool().clone();
        let table = &ch.table;
        // A resend without a buffer is skipped: the channel's timer backs
        // off and sends it again.
        let (own, _) = chan_actions::drain(
            &mut ch.actions,
            |key| table.saved_copy(key),
            Some((cx.path(), cx.position())),
            &pool,
            &mut self.out,
        );
        if !self.out.is_empty() {
            // Retransmissions and probes re-arm timers: look again.
            ch.rearm(cx);
        }
        sends::from_stage(cx, &mut self.out);
        own
    }

    /// Fast form, down: what `call` does with the message `msg` (in two
    /// parts: the header of the protocol above and its payload) to `peer`
    /// on channel `chan` at `now`, done in CHAN's module `m`, and the
    /// header it would push on it; `None`, nothing changed, where it would
    /// do anything else: the channel not held by handle or not FREE, a
    /// message BLAST fragments (its receipt is recorded), the first call
    /// to a peer (BIDCTL registration). Also returns whether the module's
    /// deadline moved earlier (the caller reached it without marking it:
    /// it marks it).
    #[inline(always)]
    pub(crate) fn fast_call(
        &mut self,
        m: &mut ChanModule,
        now: Instant,
        msg: [&[u8]; 2],
        peer: Peer,
        chan: u16,
    ) -> Option<([u8; HEADER_LEN], bool)> {
        let key = self.fast_key(msg, peer, chan)?;
        let held = self.clients.get(usize::from(chan), &key)?;
        if !m.pending_registrations.is_empty() {
            return None;
        }
        let deadline = m.call_timeout.map(|d| now + d);
        let h = m.client.fast_call(held, now, key, msg, deadline)?;
        let first = now + m.client.config().initial_timeout;
        Some((
            h.to_bytes(),
            m.armed(deadline.map_or(first, |d| d.min(first))),
        ))
    }

    /// Fast form, down: what `reply` does with the reply `msg` (as
    /// [`ChanStage::fast_call`]'s) to `peer` on the request's channel
    /// `chan` at `now`, in the channels this (server) stage holds, and the
    /// header it would push; `None`, nothing changed, where it would do
    /// anything else: the channel not held by handle or not executing, a
    /// message BLAST fragments. No module is reached; the stage's timer
    /// is armed again (`cx`, this stage's) only when the reply's
    /// retransmission is the earliest.
    #[inline(always)]
    pub(crate) fn fast_reply(
        &mut self,
        cx: &mut Cx<'_, '_>,
        now: Instant,
        msg: [&[u8]; 2],
        peer: Peer,
        chan: u16,
    ) -> Option<[u8; HEADER_LEN]> {
        let key = self.fast_key(msg, peer, chan)?;
        let held = self.servers.get(usize::from(chan), &key)?;
        let ch = self.channels.as_mut()?;
        let h = ch.table.fast_reply(held, now, key, msg)?;
        let first = now + ch.table.config().initial_timeout;
        ch.armed(cx, first);
        Some(h.to_bytes())
    }

    /// The channel a fast call or reply of `msg` to `peer` travels on,
    /// `chan`; `None` (decline) for a message BLAST would fragment (the
    /// receipt BLAST gives a short message is the default one).
    #[inline(always)]
    fn fast_key(&self, msg: [&[u8]; 2], peer: Peer, chan: u16) -> Option<ChannelKey> {
        let len = msg[0].len() + msg[1].len();
        let f = self.fragment_len?;
        if len + HEADER_LEN + crate::wire::bid::HEADER_LEN >= f {
            return None;
        }
        Some(ChannelKey {
            peer,
            prot_id: self.prot_id,
            chan,
        })
    }

    /// Fast form, up: what `receive` does (in CHAN's module `m`) with a
    /// CHAN message from `peer` (annotated `anno`) whose header is `h`
    /// when it is the reply to the call outstanding on a client channel,
    /// done (the caller parsed the message with [`ChanHeader::parse`]);
    /// `false`, nothing changed, for anything else: BIDCTL's notices, a
    /// channel not held by handle, ACKs, NACKs, probes, duplicates, old
    /// or future seqs, replies that ask for an explicit ACK, a fragmented
    /// request to free. `receive` then annotates the channel `h.chan` and
    /// passes the payload up.
    #[inline(always)]
    pub(crate) fn fast_receive(
        &mut self,
        m: &mut ChanModule,
        h: &ChanHeader,
        peer: Peer,
        anno: &pathstack_core::Anno,
    ) -> bool {
        if is_notice(anno) {
            return false;
        }
        let key = ChannelKey::of(peer, h);
        // Anything queued would go out with this packet's own action.
        if !m.actions.is_empty() {
            return false;
        }
        let Some(held) = self.clients.get(usize::from(h.chan), &key) else {
            return false;
        };
        m.client.fast_reply(held, key, h)
    }

    /// Fast form, up: [`ChanStage::fast_receive`] of the server path, for
    /// the next request on an established channel this stage holds: no
    /// module reached.
    #[inline(always)]
    pub(crate) fn fast_request(
        &mut self,
        h: &ChanHeader,
        peer: Peer,
        anno: &pathstack_core::Anno,
    ) -> bool {
        if is_notice(anno) {
            return false;
        }
        let key = ChannelKey::of(peer, h);
        let Some(ch) = self.channels.as_mut() else {
            return false;
        };
        if !ch.actions.is_empty() {
            return false;
        }
        let Some(held) = self.servers.get(usize::from(h.chan), &key) else {
            return false;
        };
        ch.table.fast_request(held, key, h)
    }

    /// Whether this is the server path's stage.
    #[inline(always)]
    pub(crate) fn is_server(&self) -> bool {
        self.server
    }

    /// CHAN's module, as the fast form reaches it.
    #[inline(always)]
    pub(crate) fn module(&self) -> ModuleHandle<ChanModule> {
        self.own
    }

    /// The channel a call or reply going down travels on: the one its
    /// RPC tag's slot numbers, to the peer it is annotated with.
    fn channel_of(&self, msg: &Msg) -> Option<(RpcTag, ChannelKey)> {
        let (tag, peer) = (msg.anno().rpc_tag()?, msg.anno().rpc_peer()?);
        let key = ChannelKey {
            peer,
            prot_id: self.prot_id,
            chan: tag.slot,
        };
        Some((tag, key))
    }

    fn call(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let Some((tag, key)) = self.channel_of(msg) else {
            return Verdict::Drop(ChanDropReason::NoChannel.into());
        };
        let now = cx.now();
        let receipt = self.receipt(cx, msg.len() + HEADER_LEN);
        let Some(m) = cx.module::<ChanModule>() else {
            return Verdict::Drop(ChanDropReason::NoChannel.into());
        };
        let deadline = m.call_timeout.map(|d| now + d);
        let held = self.clients.get(usize::from(key.chan), &key);
        let header = m
            .client
            .call_held(held, now, key, msg.as_slice(), deadline)
            .map(|(at, h)| {
                if held != Some(at) {
                    self.clients.put(usize::from(key.chan), key, at);
                }
                h
            });
        if header.is_ok() {
            // A call or reply starts with the default receipt (a short
            // message): record only what differs, sparing a table lookup
            // on the zero-byte call.
            if receipt != TransportReceipt::default() {
                m.client.record_receipt(key, receipt);
            }
            let first = now + m.client.config().initial_timeout;
            m.armed(deadline.map_or(first, |d| d.min(first)));
        }
        if !m.pending_registrations.is_empty() {
            let peers = std::mem::take(&mut m.pending_registrations);
            self.register(cx, &peers);
        }
        match header {
            Ok(h) => push_header(msg, &h),
            Err(e) => {
                // The call never left: its outcome goes back up at once.
                msg.truncate(0);
                msg.anno_mut().set_rpc_tag(RpcTag {
                    status: status_of(e),
                    ..tag
                });
                Verdict::Back
            }
        }
    }

    fn reply(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let Some((_, key)) = self.channel_of(msg) else {
            return Verdict::Drop(ChanDropReason::Unsolicited.into());
        };
        let now = cx.now();
        let receipt = self.receipt(cx, msg.len() + HEADER_LEN);
        let Some(ch) = self.channels.as_mut() else {
            return Verdict::Drop(ChanDropReason::NoChannel.into());
        };
        // The execution this reply answers: the channel's current one.
        let held = self.servers.get(usize::from(key.chan), &key);
        let Some(call) = ch.table.executing(held, key) else {
            return Verdict::Drop(ChanDropReason::Unsolicited.into());
        };
        match ch.table.reply(now, call, msg.as_slice()) {
            Ok(h) => {
                if receipt != TransportReceipt::default() {
                    ch.table.record_receipt(call.key, receipt);
                }
                let first = now + ch.table.config().initial_timeout;
                ch.armed(cx, first);
                push_header(msg, &h)
            }
            // The client rebooted while the procedure ran (C10).
            Err(ReplyError::Stale) => Verdict::Drop(ChanDropReason::Disabled.into()),
            // Longer than the path carries: the call fails by its
            // deadline on the client.
            Err(ReplyError::TooLarge { .. }) => Verdict::Drop(ChanDropReason::TooLarge.into()),
        }
    }

    fn notice(&mut self, notice: BootNotice, peer: Peer, cx: &mut Cx<'_, '_>) -> Verdict {
        let now = cx.now();
        if let Some(ch) = self.channels.as_mut() {
            if notice == BootNotice::PeerRebooted {
                ch.table.peer_rebooted(peer, &mut ch.actions);
            }
            self.flush_server(cx);
            return Verdict::Consumed;
        }
        if let Some(m) = cx.module::<ChanModule>() {
            match notice {
                BootNotice::FirstContact => m.client.first_contact(now, peer, &mut m.actions),
                BootNotice::PeerRebooted => {
                    m.client.peer_rebooted(peer, &mut m.actions);
                    m.reboots.bump();
                }
                _ => {}
            }
        }
        self.flush(cx);
        Verdict::Consumed
    }

    fn receive(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let Some(peer) = msg.anno().rpc_peer() else {
            return Verdict::Drop(ChanDropReason::NoChannel.into());
        };
        if let Some(t) = msg.anno().rpc_tag() {
            if t.notice != BootNotice::None {
                return self.notice(t.notice, peer, cx);
            }
        }
        let (h, payload) = match ChanHeader::parse(msg.as_slice()) {
            Ok(x) => x,
            Err(e) => return Verdict::Drop(e.into()),
        };
        let now = cx.now();
        let key = ChannelKey::of(peer, &h);
        let at = usize::from(h.chan);
        let (r, own, new_channel) = if let Some(ch) = self.channels.as_mut() {
            let channels = ch.table.len();
            let held = self.servers.get(at, &key);
            let r = ch
                .table
                .on_packet_held(held, peer, &h, payload, None, &mut ch.actions)
                .map(|reached| {
                    if let Some(r) = reached.filter(|&r| held != Some(r)) {
                        self.servers.put(at, key, r);
                    }
                });
            // A server channel was made (or revived): make sure BIDCTL
            // tells this stage about its peer's reboot (registering is
            // idempotent; a request on an existing channel costs no
            // lookup).
            let new_channel = ch.table.len() > channels;
            (r, self.flush_server(cx), new_channel)
        } else {
            let Some(m) = cx.module::<ChanModule>() else {
                return Verdict::Drop(ChanDropReason::NoChannel.into());
            };
            let held = self.clients.get(at, &key);
            let r = m
                .client
                .on_packet_held(held, now, peer, &h, payload, None, &mut m.actions);
            (r, self.flush(cx), false)
        };
        if new_channel {
            self.register(cx, &[peer]);
        }
        if let Err(e) = r {
            return Verdict::Drop(e.into());
        }
        let (len, slot) = match own {
            Some(ChanAction::Reply { key, len }) => (len, key.chan),
            // The channel, now in EXECUTE, keeps the call's token for the
            // reply.
            Some(ChanAction::Execute { call, len }) => (len, call.key.chan),
            // Handled inside the engine (an ACK, a probe answered).
            _ => return Verdict::Consumed,
        };
        msg.truncate(HEADER_LEN + len);
        if msg.pop(HEADER_LEN).is_err() {
            return Verdict::Drop(ChanDropReason::Truncated.into());
        }
        msg.anno_mut().set_rpc_tag(RpcTag::slot(slot));
        Verdict::Next
    }
}

impl Stage for ChanStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        match (dir, self.server) {
            (Dir::Down, false) => self.call(msg, cx),
            (Dir::Down, true) => self.reply(msg, cx),
            (Dir::Up, _) => self.receive(msg, cx),
        }
    }

    fn establish(&mut self, _aux: &mut Attrs, cx: &mut EstablishCx<'_>) -> Result<(), PathError> {
        // The module sends the client channels' retransmissions from the
        // client stage; the server stage sends its own.
        let (path, pos) = (cx.path(), cx.position());
        if !self.server {
            if let Some(m) = cx.module::<ChanModule>() {
                m.client_at = Some((path, pos));
            }
        }
        Ok(())
    }

    fn on_timer(&mut self, token: u64, cx: &mut Cx<'_, '_>) {
        // The server channels' retransmissions (spec §6.6).
        if self.channels.as_mut().is_some_and(|ch| ch.fired(token, cx)) {
            self.flush_server(cx);
        }
    }

    fn demux_key(&self, _mode: KeyMode) -> DemuxKey {
        let side = if self.server { flags::FROM_CLIENT } else { 0 };
        let p = self.prot_id.to_be_bytes();
        DemuxKey::Key(Key::from_array([side, p[0], p[1], p[2], p[3]]))
    }
}
