//! `MSELECT` (spec §8): Sprite RPC's addressing. A call going down gets
//! the 8-byte header `{id, SEL_OK}` (the id from the message's
//! [`RpcAnno::procedure`]); a request coming up has its header popped and
//! its id annotated for the server's procedures; a reply's status
//! `SEL_FAIL` becomes the call's [`CallStatus::NoSuchProcedure`]. On the
//! server the reply carries `SEL_FAIL` when no procedure has the id (the
//! `RPC` server stage says so in the status), so that the caller gets an
//! explicit failure while CHAN still completes the exchange.
//!
//! MSELECT does not demultiplex paths: every request reaches the one
//! server path, whose `RPC` stage holds the procedures by id (the
//! x-kernel's openEnable registrations per id).

use crate::anno::{CallStatus, RpcAnno, RpcTag};
use crate::wire::mselect::{MselectDropReason, MselectHeader, HEADER_LEN, SEL_FAIL, SEL_OK};
use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::error::ModuleError;
use pathstack_core::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use pathstack_core::module::{CreateCx, Created, Creation, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg};

use super::protocol;
use super::rpc::{RpcRole, RPC_ROLE};

/// Spec of `MSELECT`.
pub const MSELECT_SPEC: ModuleSpec = ModuleSpec {
    name: "MSELECT",
    doc: "MSELECT: procedure selection by id, with a status in every reply",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after(),
    ],
    params: &[],
    understands: &[],
};

/// The `MSELECT` module (no shared state).
pub struct MselectModule;

impl MselectModule {
    /// Factory (no parameters).
    pub fn create(_: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(MselectModule))
    }
}

impl Module for MselectModule {
    fn spec(&self) -> &'static ModuleSpec {
        &MSELECT_SPEC
    }

    fn create_stage(&mut self, attrs: &mut Attrs, _cx: &mut CreateCx<'_>) -> Creation {
        let server = attrs.get(&RPC_ROLE) == Some(&RpcRole::Server);
        // CHAN's header names MSELECT as the protocol above it.
        attrs.insert(&keys::PROT_ID, protocol::MSELECT);
        Ok(Created::new(MselectStage { server }, Route::Service(1)))
    }
}

/// The `MSELECT` stage of the client or the server path.
pub struct MselectStage {
    server: bool,
}

impl MselectStage {
    /// Fast form, down: the header `process` would push on a call (or
    /// reply) annotated with procedure `id` (without one it drops the
    /// message: the fast form declines) and a tag whose status is `Ok`
    /// (`ok`; else `SEL_FAIL`). `process` then clears
    /// the id ([`RpcAnno::clear_procedure`]).
    #[inline(always)]
    pub(crate) fn fast_header(&self, id: u32, ok: bool) -> [u8; HEADER_LEN] {
        let status = if ok { SEL_OK } else { SEL_FAIL };
        MselectHeader { id, status }.to_bytes()
    }

    /// Fast form, up: the header of a request or reply whose call went
    /// well below (its tag's status `Ok`), when `process` would take it
    /// (`None`, decline, where it would drop it).
    #[inline(always)]
    pub(crate) fn fast_accept(&self, packet: &[u8]) -> Option<MselectHeader> {
        MselectHeader::parse(packet).ok().map(|(h, _)| h)
    }

    /// Fast form, up: the annotations `process` writes for header `h` on
    /// a message whose tag (status `Ok`) is `tag`: the procedure id on
    /// the server, a failed selection's status on the client.
    #[inline(always)]
    pub(crate) fn fast_annotate(
        &self,
        h: &MselectHeader,
        tag: RpcTag,
        a: &mut pathstack_core::Anno,
    ) {
        if self.server {
            a.set_procedure(h.id);
        } else if h.status == SEL_FAIL {
            a.set_rpc_tag(RpcTag {
                status: CallStatus::NoSuchProcedure,
                ..tag
            });
        }
    }
}

impl Stage for MselectStage {
    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        let tag = msg.anno().rpc_tag();
        if dir == Dir::Down {
            let Some(id) = msg.anno().procedure() else {
                return Verdict::Drop(MselectDropReason::NoProcedure.into());
            };
            // The word is IP's time to live and next hop below (see
            // `crate::anno`): clear it once read.
            msg.anno_mut().clear_procedure();
            let ok = tag.is_none_or(|t| t.status == CallStatus::Ok);
            let h = MselectHeader {
                id,
                status: if ok { SEL_OK } else { SEL_FAIL },
            };
            match msg.push(HEADER_LEN) {
                Ok(b) => h.emit(b),
                Err(_) => return Verdict::Drop(MselectDropReason::NoHeadroom.into()),
            }
            return Verdict::Next;
        }
        // An outcome from below without a reply (a call CHAN or VCHAN
        // failed) has no header: pass it to the caller as it is.
        if tag.is_some_and(|t| t.status != CallStatus::Ok) {
            return Verdict::Next;
        }
        let h = match MselectHeader::parse(msg.as_slice()) {
            Ok((h, _)) => h,
            Err(e) => return Verdict::Drop(e.into()),
        };
        if msg.pop(HEADER_LEN).is_err() {
            return Verdict::Drop(MselectDropReason::Truncated.into());
        }
        let a = msg.anno_mut();
        if self.server {
            a.set_procedure(h.id);
        } else if h.status == SEL_FAIL {
            let t = tag.unwrap_or(RpcTag::slot(0));
            a.set_rpc_tag(RpcTag {
                status: CallStatus::NoSuchProcedure,
                ..t
            });
        }
        Verdict::Next
    }

    fn passes(&self, _dir: Dir) -> bool {
        false
    }
}
