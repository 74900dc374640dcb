//! `BLAST` on paths (spec §3). A short message (shorter than one
//! fragment, every zero-byte call) is handled by the stage of the path it
//! travels on: one header pushed or popped in place, no table, no timer.
//! Everything else — fragments, NACKs, retransmissions — belongs to the
//! module's sessions (one per peer and upper protocol, x-kernel's
//! instance-wide tables):
//!
//! * a long message going down is fragmented by the session; the
//!   fragments leave on the same path, the original is consumed;
//! * fragments, NACKs and retransmissions arriving are not classified
//!   past BLAST (their payload is not the next header) and reach BLAST's
//!   own path, whose stage hands them to the session; a reassembled
//!   message falls off the end of that path and
//!   [`BlastModule::route_end`](Module::route_end) classifies it again,
//!   with a short header in front, onto the path it belongs to (as IP
//!   does with a reassembled datagram, thesis §3.4.2);
//! * the sessions' timers (HOLD, receive) run in the module's poll and
//!   send on BLAST's own path.

use super::RpcNet;
use crate::anno::RpcAnno;
use crate::blast::{
    BlastConfig, BlastInstance, BlastOutput, BlastPushError, BlastSession, Pushed, Received,
};
use crate::hash_map::FastMap;
use crate::wire::blast::{BlastDropReason, BlastHeader, BlastOp, HEADER_LEN, MAX_FRAGS};
use crate::Peer;
use pathstack_core::attrs::{keys, AttrKey, Attrs};
use pathstack_core::demux::{DemuxKey, Key, KeyMode, PartialClassifier};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use pathstack_core::module::{
    CreateCx, Created, Creation, EndRoute, ModCx, Module, Route, RouteCx,
};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, EstablishCx, Stage, Verdict};
use pathstack_core::{Dir, Instant, Msg, MsgPool, PathId};
use std::collections::VecDeque;

use super::protocol;

/// Spec of `BLAST`.
pub const BLAST_SPEC: ModuleSpec = ModuleSpec {
    name: "BLAST",
    doc: "BLAST: fragmentation into up to 16 fragments, NACK-driven selective retransmission",
    services: ServiceSpec::OVER_ONE,
    params: &[
        ParamSpec::optional(
            "net",
            "the network below: eth (EtherType 0x3001, default) or ip (protocol 101)",
        ),
        ParamSpec::optional(
            "mtu",
            "the link MTU the fragments are sized for (default 1500)",
        ),
        ParamSpec::optional(
            "max_sessions",
            "most (peer, protocol) sessions with fragmented traffic (default 1024)",
        ),
    ],
    understands: &["BLAST_OWN"],
};

/// Marks the path BLAST makes for itself (set by `BLAST`).
const BLAST_OWN: AttrKey<bool> = AttrKey::limited("BLAST_OWN");

/// The `BLAST` module: the sessions of fragmented traffic and its own
/// path.
pub struct BlastModule {
    net: RpcNet,
    config: BlastConfig,
    instance: BlastInstance,
    sessions: FastMap<(Peer, u32), BlastSession>,
    max_sessions: usize,
    /// BLAST's own path and the position of its stage.
    own: Option<(PathId, usize)>,
    /// The earliest session deadline, when known (`None`: none pending).
    next_due: Option<Instant>,
    /// Messages the sessions sent, waiting to be put on a path (reused).
    outbox: Vec<Msg>,
    /// Messages that could not be allocated or sent.
    send_failures: u64,
    /// The fragmented messages pushed, oldest first (some may be freed
    /// already by their HOLD timer): what to evict when the instance is
    /// full. Bounded by twice the instance's outstanding messages.
    held: VecDeque<(Peer, u32, u32)>,
    /// Held messages given up early to make room for a new one.
    evicted: u64,
}

impl BlastModule {
    /// Factory: parameters `net`, `mtu`, `max_sessions`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let net = RpcNet::param(setup)?;
        let mtu: usize = setup.param("mtu", 1500usize)?;
        if mtu < HEADER_LEN + net.header_overhead() + 64 {
            return Err(ModuleError::BadParam {
                instance: setup.instance().to_string(),
                key: "mtu".into(),
                reason: format!("{mtu} leaves no room for a BLAST fragment"),
            });
        }
        Ok(Box::new(BlastModule {
            net,
            config: BlastConfig::for_lower_mtu(mtu - net.header_overhead()),
            instance: BlastInstance::new(),
            sessions: FastMap::default(),
            max_sessions: setup.param("max_sessions", 1024usize)?,
            own: None,
            next_due: None,
            outbox: Vec::new(),
            send_failures: 0,
            held: VecDeque::new(),
            evicted: 0,
        }))
    }

    /// The network BLAST runs on.
    pub fn net(&self) -> RpcNet {
        self.net
    }

    /// The fragment payload size F.
    pub fn fragment_len(&self) -> usize {
        self.config.fragment_len
    }

    /// The longest message BLAST carries: [`MAX_FRAGS`] fragments (16 with
    /// the default mask) of F bytes.
    pub fn max_message_len(&self) -> usize {
        MAX_FRAGS * self.config.fragment_len
    }

    /// Runs `f` on the session for (`peer`, `prot_id`), made if there is
    /// room, with the instance; notes its next deadline and counts the
    /// messages it could not allocate (the last element of `f`'s result
    /// tuple is not used for that: `f` returns its own).
    fn with_session<R: FailureCount>(
        &mut self,
        peer: Peer,
        prot_id: u32,
        f: impl FnOnce(&mut BlastSession, &mut BlastInstance) -> R,
    ) -> Option<R> {
        if !self.sessions.contains_key(&(peer, prot_id)) && self.sessions.len() >= self.max_sessions
        {
            return None;
        }
        let config = self.config;
        let s = self
            .sessions
            .entry((peer, prot_id))
            .or_insert_with(|| BlastSession::new(prot_id, config));
        let r = f(s, &mut self.instance);
        let due = s.poll_at();
        self.send_failures += r.failures();
        self.due(due);
        Some(r)
    }

    /// Notes a fragmented message pushed to `peer`.
    fn note_held(&mut self, peer: Peer, prot_id: u32, ticket: u32) {
        if self.held.len() >= 2 * self.instance.max_outstanding() {
            self.held.pop_front();
        }
        self.held.push_back((peer, prot_id, ticket));
    }

    /// Frees the oldest message still held, to make room for a new one
    /// (see [`BlastStage::send`]). Whether one was freed.
    fn evict_oldest(&mut self) -> bool {
        while let Some((peer, prot_id, ticket)) = self.held.pop_front() {
            if let Some(s) = self.sessions.get_mut(&(peer, prot_id)) {
                if s.free_resources(&mut self.instance, ticket) {
                    self.evicted += 1;
                    return true;
                }
            }
        }
        false
    }

    /// Notes a session deadline.
    fn due(&mut self, at: Option<Instant>) {
        if let Some(t) = at {
            self.next_due = Some(self.next_due.map_or(t, |d| d.min(t)));
        }
    }
}

/// Messages a session call could not allocate, from its result.
trait FailureCount {
    fn failures(&self) -> u64;
}

impl<T> FailureCount for (T, u64) {
    fn failures(&self) -> u64 {
        self.1
    }
}

impl<T, U> FailureCount for (T, U, u64) {
    fn failures(&self) -> u64 {
        self.2
    }
}

pathstack_core::header_demux!(
    /// The BLAST partial classifier: a short message is keyed on its upper
    /// protocol and classification goes on past the header; anything else
    /// (fragments, NACKs, retransmissions) ends the walk at BLAST, whose own
    /// path takes it.
    BlastDemux,
    crate::wire::blast
);

impl Module for BlastModule {
    fn spec(&self) -> &'static ModuleSpec {
        &BLAST_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        super::own_path::request_own_path(cx, &BLAST_OWN);
        Ok(())
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let own = attrs.get(&BLAST_OWN) == Some(&true);
        let prot_id = match attrs.get(&keys::PROT_ID) {
            Some(&p) => p,
            None if own => 0,
            None => return Err(cx.refuse("a path through BLAST needs the upper PROT_ID")),
        };
        attrs.insert(
            &keys::PROT_ID,
            self.net
                .lower_prot_id(protocol::ETHERTYPE_BLAST, protocol::IP_BLAST),
        );
        attrs.insert(&super::chan::BLAST_FRAGMENT_LEN, self.config.fragment_len);
        Ok(Created::new(
            BlastStage {
                own,
                prot_id,
                short: BlastHeader::short(prot_id, 0).to_bytes(),
                fragment_len: self.config.fragment_len,
                max_len: self.max_message_len(),
            },
            Route::Service(1),
        ))
    }

    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        Some(Box::new(BlastDemux))
    }

    fn route_end(&mut self, _dir: Dir, msg: &mut Msg, cx: &mut RouteCx<'_>) -> EndRoute {
        // A reassembled message, with a short header in front, fell off
        // BLAST's own path: on to the path of its upper protocol.
        let own = cx.path();
        if let Some((p, d)) = cx.classify(msg.as_slice()).filter(|(p, _)| *p != own) {
            if msg.pop(HEADER_LEN).is_ok() {
                return EndRoute::Continue(p, d);
            }
        }
        EndRoute::Drop(BlastDropReason::NoSession.into())
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
        let pool = cx.pool().clone();
        let mut out = std::mem::take(&mut self.outbox);
        let mut next: Option<Instant> = None;
        for (&(peer, _), s) in self.sessions.iter_mut() {
            if s.poll_at().is_some_and(|t| t <= now) {
                let mut o = Outbox::new(&pool, peer, &mut out);
                s.on_time(&mut self.instance, now, &mut o);
                self.send_failures += o.failures;
            }
            if let Some(t) = s.poll_at() {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        // Sessions with nothing held or pending are forgotten.
        let inst = &mut self.instance;
        self.sessions.retain(|_, s| {
            let idle = s.poll_at().is_none() && s.held_messages() == 0 && s.reassemblies() == 0;
            if idle {
                s.close(inst);
            }
            !idle
        });
        self.next_due = next;
        let n = out.len();
        if let Some((path, pos)) = self.own {
            for m in out.drain(..) {
                if cx.send_on(path, pos, Dir::Down, m).is_err() {
                    self.send_failures += 1;
                }
            }
        }
        out.clear();
        self.outbox = out;
        n
    }

    fn stats(&self) -> Vec<(String, u64)> {
        let mut v = vec![
            ("sessions".into(), self.sessions.len() as u64),
            ("outstanding".into(), self.instance.outstanding() as u64),
            ("send_failures".into(), self.send_failures),
            ("evicted".into(), self.evicted),
        ];
        let mut sum = crate::blast::BlastStats::default();
        for s in self.sessions.values() {
            let t = s.stats();
            sum.messages_fragmented += t.messages_fragmented;
            sum.fragments_retransmitted += t.fragments_retransmitted;
            sum.nacks_sent += t.nacks_sent;
            sum.nacks_received += t.nacks_received;
            sum.messages_reassembled += t.messages_reassembled;
            sum.messages_discarded += t.messages_discarded;
        }
        v.push(("messages_fragmented".into(), sum.messages_fragmented));
        v.push((
            "fragments_retransmitted".into(),
            sum.fragments_retransmitted,
        ));
        v.push(("nacks_sent".into(), sum.nacks_sent));
        v.push(("nacks_received".into(), sum.nacks_received));
        v.push(("messages_reassembled".into(), sum.messages_reassembled));
        v.push(("messages_discarded".into(), sum.messages_discarded));
        v
    }
}

/// Where a session's packets go while it runs: messages from the pool,
/// addressed to the session's peer, collected for the caller to put on a
/// path once the session (borrowed from the module) is done.
struct Outbox<'a> {
    pool: &'a MsgPool,
    peer: Peer,
    sends: &'a mut Vec<Msg>,
    /// A reassembled message, a short header in front.
    delivered: Option<Msg>,
    failures: u64,
}

impl<'a> Outbox<'a> {
    fn new(pool: &'a MsgPool, peer: Peer, sends: &'a mut Vec<Msg>) -> Self {
        Outbox {
            pool,
            peer,
            sends,
            delivered: None,
            failures: 0,
        }
    }
}

impl BlastOutput for Outbox<'_> {
    fn send(&mut self, header: &BlastHeader, payload: &[u8]) {
        let Ok(mut m) = self.pool.alloc(HEADER_LEN + payload.len()) else {
            self.failures += 1;
            return;
        };
        let b = m.as_mut_slice();
        header.emit(&mut b[..HEADER_LEN]);
        b[HEADER_LEN..].copy_from_slice(payload);
        m.anno_mut().set_rpc_peer(self.peer);
        self.sends.push(m);
    }

    fn deliver(&mut self, prot_id: u32, message: &[u8]) {
        let Ok(mut m) = self.pool.alloc_empty(HEADER_LEN + message.len()) else {
            self.failures += 1;
            return;
        };
        let header = BlastHeader::short(prot_id, message.len() as u32).to_bytes();
        if m.extend_from_slice(&header).is_err() || m.extend_from_slice(message).is_err() {
            self.failures += 1;
            return;
        }
        m.anno_mut().set_rpc_peer(self.peer);
        self.delivered = Some(m);
    }
}

/// The `BLAST` stage: on an RPC path (short messages in place, long ones
/// fragmented by the module's session) or on BLAST's own path (fragments,
/// NACKs, retransmissions into the sessions).
pub struct BlastStage {
    own: bool,
    /// The upper protocol (BID) this path carries.
    prot_id: u32,
    /// The short header (§3.4 item 1) of this path's protocol with
    /// length 0: the fast form copies it and fills in the length.
    short: [u8; HEADER_LEN],
    fragment_len: usize,
    max_len: usize,
}

impl BlastStage {
    fn send(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let len = msg.len();
        if len < self.fragment_len {
            // The short path (§3.4 item 1): no state, no timer.
            match msg.push(HEADER_LEN) {
                Ok(b) => BlastHeader::short(self.prot_id, len as u32).emit(b),
                Err(_) => return Verdict::Drop(BlastDropReason::Truncated.into()),
            }
            return Verdict::Next;
        }
        if len > self.max_len {
            return Verdict::Drop(BlastDropReason::FragmentTooLong.into());
        }
        let Some(peer) = msg.anno().rpc_peer() else {
            return Verdict::Drop(BlastDropReason::NoSession.into());
        };
        let pool = cx.pool().clone();
        let now = cx.now();
        let prot_id = self.prot_id;
        let Some(m) = cx.module::<BlastModule>() else {
            return Verdict::Drop(BlastDropReason::NoSession.into());
        };
        let mut out = std::mem::take(&mut m.outbox);
        let mut pushed = m.with_session(peer, prot_id, |s, inst| {
            let mut o = Outbox::new(&pool, peer, &mut out);
            let r = s.push(inst, now, msg.as_slice(), &mut o);
            (r, o.failures)
        });
        // All 64 outstanding messages held (§3.3). The x-kernel blocks the
        // sender until a HOLD timer (1 s) or CHAN's FREERESOURCES frees
        // one; a stage cannot block, and CHAN does not send FREERESOURCES
        // here (see the `chan` module), so a burst of more than 64
        // fragmented messages a second would lose the 65th and wait for
        // CHAN's 5 s retransmission. Instead the oldest held copy is
        // given up: it was most likely acknowledged long ago, and if a
        // NACK for it still comes, CHAN recovers that message.
        if matches!(pushed, Some((Err(BlastPushError::WouldBlock { .. }), _))) && m.evict_oldest() {
            pushed = m.with_session(peer, prot_id, |s, inst| {
                let mut o = Outbox::new(&pool, peer, &mut out);
                let r = s.push(inst, now, msg.as_slice(), &mut o);
                (r, o.failures)
            });
        }
        if let Some((Ok(Pushed::Fragmented(receipt)), _)) = &pushed {
            m.note_held(peer, prot_id, receipt.ticket);
        }
        let verdict = match pushed {
            Some((Ok(Pushed::Fragmented(_)), _)) => Verdict::Consumed,
            Some((Ok(Pushed::Short(h)), _)) => {
                // Cannot happen (the length was checked), but the engine
                // said so: send it short.
                match msg.push(HEADER_LEN) {
                    Ok(b) => {
                        h.emit(b);
                        Verdict::Next
                    }
                    Err(_) => Verdict::Drop(BlastDropReason::Truncated.into()),
                }
            }
            Some((Err(_), _)) => Verdict::Drop(BlastDropReason::OutstandingFull.into()),
            None => Verdict::Drop(BlastDropReason::SessionTableFull.into()),
        };
        for f in out.drain(..) {
            let _ = cx.emit(Dir::Down, f);
        }
        if let Some(m) = cx.module::<BlastModule>() {
            m.outbox = out;
        }
        verdict
    }

    /// Fast form, down: the header `send` would push on a message of
    /// `len` bytes, when it is short (one unfragmented message, §3.4
    /// item 1); `None` (decline) for a message the session fragments.
    #[inline(always)]
    pub(crate) fn fast_header(&self, len: usize) -> Option<[u8; HEADER_LEN]> {
        (!self.own && len < self.fragment_len).then(|| {
            let mut h = self.short;
            h[crate::wire::blast::field::LEN].copy_from_slice(&(len as u32).to_be_bytes());
            h
        })
    }

    /// Fast form, up: the payload length of the short message whose
    /// header is `h`, with `avail` bytes after the header, when
    /// `receive_short` would pass it up (SEND, seq 0, no fragments, no
    /// mask, this path's protocol, its length within the bytes);
    /// `None` (decline) otherwise.
    #[inline(always)]
    pub(crate) fn fast_accept(&self, h: &[u8; HEADER_LEN], avail: usize) -> Option<usize> {
        use crate::wire::blast::field;
        let len = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
        let short = !self.own
            && h[field::PROT_ID] == self.prot_id.to_be_bytes()
            && h[field::SEQ] == [0; 4]
            && h[field::NUM_FRAG] == [0; 2]
            && h[field::OP] == crate::wire::blast::op::SEND
            && h[field::MASK].iter().all(|&b| b == 0)
            && len <= avail;
        short.then_some(len)
    }

    fn receive_short(&mut self, msg: &mut Msg) -> Verdict {
        let (h, payload_len) = match BlastHeader::parse(msg.as_slice()) {
            Ok((h, p)) => (h, p.len()),
            Err(e) => return Verdict::Drop(e.into()),
        };
        if !h.is_short() || h.op != BlastOp::Send {
            return Verdict::Drop(BlastDropReason::BadOp.into());
        }
        // Trim Ethernet padding (B8): keep `len` bytes.
        msg.truncate(HEADER_LEN + payload_len);
        if msg.pop(HEADER_LEN).is_err() {
            return Verdict::Drop(BlastDropReason::Truncated.into());
        }
        Verdict::Next
    }

    fn receive_own(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let (h, payload) = match BlastHeader::parse(msg.as_slice()) {
            Ok(x) => x,
            Err(e) => return Verdict::Drop(e.into()),
        };
        if h.is_short() {
            // A short message no path claimed: no session for its
            // protocol (B6).
            return Verdict::Drop(BlastDropReason::NoSession.into());
        }
        let Some(peer) = msg.anno().rpc_peer() else {
            return Verdict::Drop(BlastDropReason::NoSession.into());
        };
        let pool = cx.pool().clone();
        let now = cx.now();
        let Some(m) = cx.module::<BlastModule>() else {
            return Verdict::Drop(BlastDropReason::NoSession.into());
        };
        if !m.sessions.contains_key(&(peer, h.prot_id)) {
            if let Err(e) = crate::blast::may_open_session(&h) {
                return Verdict::Drop(e.into());
            }
        }
        let mut out = std::mem::take(&mut m.outbox);
        let r = m.with_session(peer, h.prot_id, |s, inst| {
            let mut o = Outbox::new(&pool, peer, &mut out);
            let r = s.receive(inst, now, &h, payload, &mut o);
            (r, o.delivered.take(), o.failures)
        });
        for f in out.drain(..) {
            let _ = cx.emit(Dir::Down, f);
        }
        if let Some(m) = cx.module::<BlastModule>() {
            m.outbox = out;
        }
        match r {
            None => Verdict::Drop(BlastDropReason::SessionTableFull.into()),
            Some((Err(e), _, _)) => Verdict::Drop(e.into()),
            Some((Ok(Received::Short { .. }), _, _)) => {
                Verdict::Drop(BlastDropReason::NoSession.into())
            }
            // Off the end of this path, for `route_end` to classify.
            Some((Ok(Received::Absorbed), Some(whole), _)) => {
                *msg = whole;
                Verdict::Next
            }
            Some((Ok(Received::Absorbed), None, _)) => Verdict::Consumed,
        }
    }
}

impl Stage for BlastStage {
    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        match (dir, self.own) {
            (Dir::Down, _) => self.send(msg, cx),
            (Dir::Up, false) => self.receive_short(msg),
            (Dir::Up, true) => self.receive_own(msg, cx),
        }
    }

    fn establish(&mut self, _aux: &mut Attrs, cx: &mut EstablishCx<'_>) -> Result<(), PathError> {
        if self.own {
            let (path, pos) = (cx.path(), cx.position());
            if let Some(m) = cx.module::<BlastModule>() {
                m.own = Some((path, pos));
            }
        }
        Ok(())
    }

    fn demux_key(&self, _mode: KeyMode) -> DemuxKey {
        if self.own {
            // BLAST's own path ends the walk at the network's key.
            DemuxKey::Stop(None)
        } else {
            let p = self.prot_id.to_be_bytes();
            DemuxKey::Key(Key::from_array(p))
        }
    }
}
