//! The RPC view of a host: `host.rpc()`, a thin borrow over the host's
//! x-kernel RPC stack (BLAST, BID, CHAN, VCHAN, MSELECT; issue 27 item 2:
//! no `rpc_` prefixes on `Host`).
//!
//! A call either blocks ([`call`](Rpc::call), for a host that runs in this
//! thread alone) or is started and polled ([`start`](Rpc::start),
//! [`poll`](Rpc::poll)); procedures are served with [`serve`](Rpc::serve).

use super::{Peer, Procedure, RpcError};
use crate::host::Host;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// Remote procedure calls on a host: `host.rpc()`.
///
/// `host.rpc()` borrows the host mutably; [`Rpc::of`] makes the view of
/// a shared borrow (`Rpc::of(&host)`), which offers the calls that only
/// look.
pub struct Rpc<H> {
    pub(super) host: H,
}

impl Host {
    /// The host's RPC stack (with [`HostConfig::rpc`](crate::HostConfig::rpc)):
    /// `host.rpc().call(peer, 7, b"ping")`.
    pub fn rpc(&mut self) -> Rpc<&mut Host> {
        Rpc { host: self }
    }
}

impl<H: Deref<Target = Host>> Rpc<H> {
    /// The view of `host`, which may be a shared borrow: `Rpc::of(&host)`.
    pub fn of(host: H) -> Self {
        Rpc { host }
    }
}

impl<H: DerefMut<Target = Host>> Rpc<H> {
    /// Calls procedure `id` on `peer` and waits for the reply, polling the
    /// host, at most the host's CHAN deadline
    /// ([`HostConfig::rpc_call_timeout`](crate::HostConfig::rpc_call_timeout)).
    pub fn call(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
    ) -> Result<Vec<u8>, RpcError> {
        self.client()?.call(peer, id, request)
    }

    /// [`call`](Self::call), waiting at most `timeout`.
    pub fn call_timeout(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, RpcError> {
        self.client()?.call_timeout(peer, id, request, timeout)
    }

    /// Serves `procedure` under `id`: requests for `id` from any peer run
    /// it, at most once each.
    pub fn serve(&mut self, id: u32, procedure: impl Procedure) -> Result<(), RpcError> {
        self.server()?.register(id, procedure)
    }

    /// Serves a function from request to reply under `id`.
    pub fn serve_fn(
        &mut self,
        id: u32,
        f: impl FnMut(&[u8]) -> Vec<u8> + Send + 'static,
    ) -> Result<(), RpcError> {
        self.server()?.register_fn(id, f)
    }
}
