//! `BID` on paths (spec §4): every message is stamped with both hosts'
//! boot ids, and a message from or for another incarnation is dropped
//! before it reaches CHAN. The boot ids come from BIDCTL, which the stage
//! asks through its `ctl` connection; the stage keeps the last peer's
//! boot ids on its path (the thesis' PIN caching) together with BIDCTL's
//! generation cell ([`BootGeneration`]), resolved from BIDCTL once. While
//! that generation has not moved, BIDCTL has learnt nothing (no reboot,
//! no new peer), so an established call reads one number and asks
//! nothing; after anything BIDCTL learns, the next message asks again.
//! Nothing cached here outlives what BIDCTL knows.
//!
//! BID also keeps a path of its own (BID / BLAST / ETH) for the *empty*
//! BID messages a peer sends back when our message named its previous
//! incarnation, and for BID traffic no path claims.

use super::bidctl::BidctlModule;
use super::sends::{self, Sends};
use crate::anno::RpcAnno;
use crate::boot::{BidFilter, BidRxVerdict, BootGeneration, BootId};
use crate::wire::bid::{BidDropReason, BidHeader, HEADER_LEN};
use pathstack_core::attrs::{keys, AttrKey, Attrs};
use pathstack_core::demux::{DemuxKey, Key, KeyMode, PartialClassifier};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use pathstack_core::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg, PathId};

use super::protocol;

/// Spec of `BID`.
pub const BID_SPEC: ModuleSpec = ModuleSpec {
    name: "BID",
    doc: "BID: boot-id stamps on every message; drops messages of another incarnation",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after(),
        ServiceSpec::new("ctl", ServiceType::AIO, Count::ExactlyOne).init_after(),
    ],
    params: &[],
    understands: &["BID_OWN"],
};

/// Service index of BID's connection to BIDCTL.
const CTL: usize = 2;

/// Marks the path BID makes for itself (set by `BID`).
const BID_OWN: AttrKey<bool> = AttrKey::limited("BID_OWN");

/// The `BID` module (its state is BIDCTL's).
pub struct BidModule;

impl BidModule {
    /// Factory (no parameters).
    pub fn create(_: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(BidModule))
    }
}

pathstack_core::header_demux!(
    /// The BID partial classifier: the upper protocol number.
    BidDemux,
    crate::wire::bid
);

impl Module for BidModule {
    fn spec(&self) -> &'static ModuleSpec {
        &BID_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        super::own_path::request_own_path(cx, &BID_OWN);
        Ok(())
    }

    fn path_created(&mut self, _tag: u64, _result: Result<PathId, &PathError>) {}

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let own = attrs.get(&BID_OWN) == Some(&true);
        let hlp_num = match attrs.get(&keys::PROT_ID) {
            Some(&p) => p,
            None if own => 0,
            None => return Err(cx.refuse("a path through BID needs the upper PROT_ID")),
        };
        attrs.insert(&keys::PROT_ID, protocol::BID);
        Ok(Created::new(
            BidStage {
                own,
                hlp_num,
                held: None,
                out: Vec::new(),
            },
            Route::Service(1),
        ))
    }

    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        Some(Box::new(BidDemux))
    }
}

/// The boot ids a BID stage last read for a peer.
#[derive(Clone, Copy, Debug)]
struct BidCache {
    peer: crate::Peer,
    generation: u64,
    local: BootId,
    peer_bid: BootId,
    /// The header a message to the peer carries, made when the ids were
    /// read (`None` while the peer's is unknown: `send` drops), so the
    /// fast form copies it rather than building it per message (the
    /// thesis' PIN kept its headers on the path, §4.2.2).
    header: Option<[u8; HEADER_LEN]>,
    /// The ids a message from the peer names, in wire order: the peer's
    /// (source), then ours (destination).
    expect: [u8; 8],
}

/// The `BID` stage of an RPC path, or of BID's own path.
pub struct BidStage {
    own: bool,
    hlp_num: u32,
    /// BIDCTL's generation cell, held from the first message on, with the
    /// last peer's boot ids, valid for one BIDCTL generation: one field,
    /// so the fast form tests one option, not two.
    held: Option<(BootGeneration, BidCache)>,
    /// BIDCTL's requests to put on paths (reused).
    out: Sends,
}

impl BidStage {
    /// This host's and `peer`'s boot ids as the path holds them, if
    /// BIDCTL's generation has not moved since they were read (one
    /// comparison, no module reached; the thesis' path-specific caching).
    #[inline(always)]
    fn held(&self, peer: crate::Peer) -> Option<(BootId, BootId)> {
        self.held_cache(peer).map(|c| (c.local, c.peer_bid))
    }

    /// This host's and `peer`'s boot ids: those held, else read from
    /// BIDCTL (and held, with its generation cell the first time).
    #[inline(always)]
    fn bids(&mut self, cx: &mut Cx<'_, '_>, peer: crate::Peer) -> Option<(BootId, BootId)> {
        match self.held(peer) {
            Some(b) => Some(b),
            None => self.refresh(cx, peer),
        }
    }

    /// Reads `peer`'s boot ids from BIDCTL and holds them: after BIDCTL
    /// learnt something, or for another peer (out of line: not the
    /// established case).
    #[inline(never)]
    fn refresh(&mut self, cx: &mut Cx<'_, '_>, peer: crate::Peer) -> Option<(BootId, BootId)> {
        let ctl = cx.linked_module::<BidctlModule>(CTL, 0)?;
        let cell = match self.held.take() {
            Some((cell, _)) => cell,
            None => ctl.generation_cell().clone(),
        };
        let (local, peer_bid, generation) = ctl.known_bids(peer);
        let header = BidFilter::new(local, self.hlp_num)
            .send_header(peer_bid)
            .ok()
            .map(|h| h.to_bytes());
        let mut expect = [0u8; 8];
        expect[..4].copy_from_slice(&peer_bid.0.to_be_bytes());
        expect[4..].copy_from_slice(&local.0.to_be_bytes());
        let cache = BidCache {
            peer,
            generation,
            local,
            peer_bid,
            header,
            expect,
        };
        self.held = Some((cell, cache));
        Some((local, peer_bid))
    }

    /// The boot ids the path holds for `peer`, as [`BidStage::held`].
    #[inline(always)]
    fn held_cache(&self, peer: crate::Peer) -> Option<&BidCache> {
        match &self.held {
            Some((g, c)) if c.peer == peer && c.generation == g.current() => Some(c),
            _ => None,
        }
    }

    /// Fast form, down: the header `send` would push on a message to
    /// `peer`, when the path holds both boot ids and the peer's is known
    /// (`None`, decline, when `send` would ask BIDCTL or drop).
    #[inline(always)]
    pub(crate) fn fast_header(&self, peer: crate::Peer) -> Option<[u8; HEADER_LEN]> {
        self.held_cache(peer)?.header
    }

    /// Fast form, up: whether `receive` would deliver a message from
    /// `peer` with header `h` (the path holds both boot ids, which the
    /// header names, spec §4.3) without asking BIDCTL.
    #[inline(always)]
    pub(crate) fn fast_accepts(&self, peer: crate::Peer, h: &[u8; HEADER_LEN]) -> bool {
        let Some(c) = self.held_cache(peer).filter(|_| !self.own) else {
            return false;
        };
        c.peer_bid.is_known() && h[..8] == c.expect
    }

    /// Asks BIDCTL about `peer` with `hint` and sends what it asks for.
    fn consult(&mut self, cx: &mut Cx<'_, '_>, peer: crate::Peer, hint: BootId) {
        let now = cx.now();
        let pool = cx.pool().clone();
        if let Some(ctl) = cx.linked_module::<BidctlModule>(CTL, 0) {
            ctl.peer_bid(peer, hint, now);
            ctl.drain(&pool, &mut self.out);
        }
        sends::from_stage(cx, &mut self.out);
    }

    fn send(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let Some(peer) = msg.anno().rpc_peer() else {
            return Verdict::Drop(BidDropReason::InactiveSend.into());
        };
        let Some((local, peer_bid)) = self.bids(cx, peer) else {
            return Verdict::Drop(BidDropReason::InactiveSend.into());
        };
        match BidFilter::new(local, self.hlp_num).send_header(peer_bid) {
            Ok(h) => match msg.push(HEADER_LEN) {
                Ok(b) => {
                    h.emit(b);
                    Verdict::Next
                }
                Err(_) => Verdict::Drop(BidDropReason::Truncated.into()),
            },
            Err(e) => {
                // Not known yet: BIDCTL starts its handshake; CHAN sends
                // the message again on FIRST_CONTACT (OSF, spec §6.4).
                self.consult(cx, peer, BootId(0));
                Verdict::Drop(e.into())
            }
        }
    }

    fn receive(&mut self, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let h = match BidHeader::parse(msg.as_slice()) {
            Ok((h, _)) => h,
            Err(e) => return Verdict::Drop(e.into()),
        };
        let Some(peer) = msg.anno().rpc_peer() else {
            return Verdict::Drop(BidDropReason::Inactive.into());
        };
        let Some((local, peer_bid)) = self.bids(cx, peer) else {
            return Verdict::Drop(BidDropReason::Inactive.into());
        };
        let verdict = BidFilter::new(local, h.hlp_num).receive(peer_bid, &h);
        let reason = verdict.drop_reason();
        match verdict {
            BidRxVerdict::Deliver => {
                if msg.pop(HEADER_LEN).is_err() {
                    return Verdict::Drop(BidDropReason::Truncated.into());
                }
                if self.own {
                    // An empty BID message (or one for a protocol without
                    // a path): its boot ids were all it had to say.
                    return if msg.is_empty() {
                        Verdict::Consumed
                    } else {
                        Verdict::Drop(BidDropReason::UnknownProtocol.into())
                    };
                }
                return Verdict::Next;
            }
            BidRxVerdict::DropAndAnswerEmpty(answer) => {
                if let Ok(mut m) = cx.pool().alloc_copy(&answer.to_bytes()) {
                    m.anno_mut().set_rpc_peer(peer);
                    let _ = cx.emit(Dir::Down, m);
                }
            }
            BidRxVerdict::DropAndHint(hint) => self.consult(cx, peer, hint),
            // The first message from a peer BIDCTL has not met: start
            // the handshake with its boot id as the hint.
            BidRxVerdict::DropInactive => self.consult(cx, peer, h.src_bid),
        }
        Verdict::Drop(reason.unwrap_or(BidDropReason::Inactive).into())
    }
}

impl Stage for BidStage {
    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            self.send(msg, cx)
        } else {
            self.receive(msg, cx)
        }
    }

    fn demux_key(&self, _mode: KeyMode) -> DemuxKey {
        if self.own {
            DemuxKey::Stop(None)
        } else {
            DemuxKey::Key(Key::from_array(self.hlp_num.to_be_bytes()))
        }
    }
}
