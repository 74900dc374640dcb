//! The RPC view of a host: `host.rpc()`, a thin borrow over the host's
//! x-kernel RPC stack (BLAST, BID, CHAN, VCHAN, MSELECT; issue 27 item 2:
//! no `rpc_` prefixes on `Host`).
//!
//! A call either blocks ([`call`](Rpc::call), for a host that runs in this
//! thread alone) or is started and polled ([`start`](Rpc::start),
//! [`poll`](Rpc::poll)); procedures are served with [`serve`](Rpc::serve).

// The view is the public face of the RPC calls; the host's `rpc_*`
// methods behind it are deprecated for applications and stay one release.
#![allow(deprecated)]

use super::{Peer, Procedure, RpcCall, RpcClient, RpcError, RpcServer};
use crate::host::Host;
use pathstack_core::Msg;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// Remote procedure calls on a host: `host.rpc()`.
///
/// `host.rpc()` borrows the host mutably; [`Rpc::of`] makes the view of
/// a shared borrow (`Rpc::of(&host)`), which offers the calls that only
/// look.
pub struct Rpc<H> {
    host: H,
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

    /// How this host is named as an RPC peer: its MAC address on Ethernet, its IPv4 address over IP.
    pub fn peer(&self) -> Result<Peer, RpcError> {
        self.host.rpc_peer()
    }

    /// The largest request (and reply) the RPC stack carries.
    pub fn max_request(&self) -> Result<usize, RpcError> {
        self.host.rpc_max_request()
    }

    /// Calls started and not yet taken or abandoned.
    pub fn in_flight(&self) -> usize {
        self.host.rpc_calls_in_flight()
    }
}

impl<H: DerefMut<Target = Host>> Rpc<H> {
    /// Starts a call of procedure `id` on `peer` without waiting: poll the host and read the outcome with [`poll`](Self::poll).
    pub fn start(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
    ) -> Result<RpcCall, RpcError> {
        self.host.rpc_start(peer, id, request)
    }

    /// The reply to `call` once it came (`None` until then); the call is over after a reply or an error.
    pub fn poll(&mut self, call: &RpcCall) -> Result<Option<Msg>, RpcError> {
        self.host.rpc_poll(call)
    }

    /// Whether `call`'s outcome is there to take with [`poll`](Self::poll).
    pub fn ready(&mut self, call: &RpcCall) -> bool {
        self.host.rpc_ready(call)
    }

    /// Gives up waiting for `call` (the procedure may still run once on the peer).
    pub fn abandon(&mut self, call: RpcCall) {
        self.host.rpc_abandon(call)
    }

    /// Blocking calls on a host that runs in this thread alone.
    pub fn client(&mut self) -> Result<RpcClient<'_>, RpcError> {
        self.host.rpc_client()
    }

    /// The server side, to register and remove procedures.
    pub fn server(&mut self) -> Result<RpcServer<'_>, RpcError> {
        self.host.rpc_server()
    }

    /// Calls procedure `id` on `peer` and waits for the reply, polling the
    /// host, at most the host's CHAN deadline
    /// ([`HostConfig::rpc_call_timeout`](crate::HostConfig::rpc_call_timeout)).
    pub fn call(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
    ) -> Result<Vec<u8>, RpcError> {
        self.host.rpc_client()?.call(peer, id, request)
    }

    /// [`call`](Self::call), waiting at most `timeout`.
    pub fn call_timeout(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, RpcError> {
        self.host
            .rpc_client()?
            .call_timeout(peer, id, request, timeout)
    }

    /// Serves `procedure` under `id`: requests for `id` from any peer run
    /// it, at most once each.
    pub fn serve(&mut self, id: u32, procedure: impl Procedure) -> Result<(), RpcError> {
        self.host.rpc_server()?.register(id, procedure)
    }

    /// Serves a function from request to reply under `id`.
    pub fn serve_fn(
        &mut self,
        id: u32,
        f: impl FnMut(&[u8]) -> Vec<u8> + Send + 'static,
    ) -> Result<(), RpcError> {
        self.host.rpc_server()?.register_fn(id, f)
    }
}
