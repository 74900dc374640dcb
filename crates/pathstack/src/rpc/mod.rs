//! Remote procedure calls over the x-kernel RPC stack (BLAST, BID,
//! BIDCTL, CHAN, VCHAN, MSELECT; see [`pathstack_rpc`]), on a [`Host`]
//! built with [`HostConfig::rpc`](crate::host::HostConfig::rpc).
//!
//! A server registers procedures by id; a client calls them by peer and
//! id. Calls to one peer run concurrently on a pool of channels (VCHAN,
//! five by default), and every call is executed **at most once**: a call
//! that returns a reply ran exactly once, a call that fails ran zero
//! times or once (CHAN's guarantee, kept across lost, duplicated and
//! reordered frames and across reboots by BID and BIDCTL).
//!
//! ```
//! use pathstack::core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack::host::{Host, HostConfig};
//! use pathstack::rpc::Echo;
//! use pathstack::rpc::RpcNet;
//!
//! let (a, b) = memory_pair(MemoryConfig::default());
//! let rpc = |cidr: &str| HostConfig { rpc: Some(RpcNet::Eth), ..HostConfig::parse(cidr).unwrap() };
//! let mut client = Host::new(rpc("10.0.0.1/24"), a).unwrap();
//! let mut server = Host::new(rpc("10.0.0.2/24"), b).unwrap();
//! server.rpc().server().unwrap().register(1002, Echo).unwrap();
//!
//! let peer = server.rpc().peer().unwrap();
//! let call = client.rpc().start(peer, 1002, b"ping").unwrap();
//! let reply = loop {
//!     client.poll();
//!     server.poll();
//!     if let Some(reply) = client.rpc().poll(&call).unwrap() {
//!         break reply;
//!     }
//! };
//! assert_eq!(reply.as_slice(), b"ping");
//! ```

mod calls;
mod error;
pub(crate) mod state;
mod view;

pub use calls::RpcCall;
pub use error::RpcError;
pub use pathstack_rpc::modules::rpc::{Echo, Procedure};
pub use pathstack_rpc::modules::RpcNet;
pub use pathstack_rpc::{Peer, PeerAddr};
pub use state::RPC_HEADERS;
pub use view::Rpc;

use crate::host::Host;
use pathstack_core::Dir;
use pathstack_rpc::anno::{CallStatus, RpcAnno};
use pathstack_rpc::modules::rpc::RpcServerStage;
use state::RpcState;
use std::time::Duration;

impl Host {
    fn rpc_state(&mut self) -> Result<&mut RpcState, RpcError> {
        self.rpc.as_mut().ok_or(RpcError::NoRpc)
    }

    /// Reads the outcomes that came up the client path into the call
    /// table.
    fn rpc_collect(&mut self) {
        let Some(client) = self.rpc.as_ref().map(|s| s.client) else {
            return;
        };
        while let Some(m) = self.stack_mut().recv(client, Dir::Up) {
            let Some(tag) = m.anno().rpc_tag() else {
                continue;
            };
            let outcome = match tag.status {
                CallStatus::Ok => Ok(m),
                s => Err(s),
            };
            if let Some(st) = self.rpc.as_mut() {
                st.calls.complete(tag.slot, outcome);
            }
        }
    }
}

/// Blocking calls on a host that runs in this thread alone (its peer in
/// another thread or process): each call polls the host until the
/// outcome comes.
pub struct RpcClient<'h> {
    host: &'h mut Host,
}

impl RpcClient<'_> {
    /// Calls procedure `id` on `peer` with `request` and waits for the
    /// reply, at most `timeout` — or the host's CHAN deadline
    /// ([`HostConfig::rpc_call_timeout`](crate::host::HostConfig::rpc_call_timeout),
    /// 30 s by default) if that comes first. On timeout the call is
    /// abandoned (the procedure may still run once on the peer) and the
    /// error is [`RpcError::TimedOut`].
    pub fn call_timeout(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
        timeout: Duration,
    ) -> Result<Vec<u8>, RpcError> {
        let peer = peer.into();
        let call = self.host.rpc().start(peer, id, request)?;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            self.host.poll();
            if let Some(m) = self.host.rpc().poll(&call)? {
                return Ok(m.as_slice().to_vec());
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                self.host.rpc().abandon(call);
                return Err(RpcError::TimedOut { peer, id });
            }
            let _ = self.host.wait(left.min(Duration::from_millis(10)));
        }
    }

    /// [`call_timeout`](Self::call_timeout) with the host's CHAN deadline
    /// alone ([`HostConfig::rpc_call_timeout`](crate::host::HostConfig::rpc_call_timeout),
    /// 30 s by default).
    pub fn call(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
    ) -> Result<Vec<u8>, RpcError> {
        self.call_timeout(peer, id, request, Duration::from_secs(3600))
    }
}

/// Procedure registration on a host's RPC server.
pub struct RpcServer<'h> {
    host: &'h mut Host,
}

impl RpcServer<'_> {
    /// Registers `procedure` under `id`: requests for `id` from any peer
    /// run it, at most once each.
    pub fn register(&mut self, id: u32, procedure: impl Procedure) -> Result<(), RpcError> {
        let server = self.host.rpc_state()?.server;
        self.host
            .stack_mut()
            .with_stage::<RpcServerStage, _>(server, |st, _| st.register(id, Box::new(procedure)))
            .ok_or(RpcError::NoRpc)?
            .map_err(RpcError::from)
    }

    /// Registers a procedure given as a function from request to reply.
    pub fn register_fn(
        &mut self,
        id: u32,
        mut f: impl FnMut(&[u8]) -> Vec<u8> + Send + 'static,
    ) -> Result<(), RpcError> {
        self.register(id, move |req: &[u8], reply: &mut Vec<u8>| {
            reply.extend_from_slice(&f(req))
        })
    }

    /// Removes the procedure registered under `id`; `false` if none was.
    pub fn unregister(&mut self, id: u32) -> Result<bool, RpcError> {
        let server = self.host.rpc_state()?.server;
        self.host
            .stack_mut()
            .with_stage::<RpcServerStage, _>(server, |st, _| st.unregister(id))
            .ok_or(RpcError::NoRpc)
    }

    /// Procedure calls the server ran.
    pub fn calls(&self) -> u64 {
        let Some(server) = self.host.rpc.as_ref().map(|s| s.server) else {
            return 0;
        };
        let Some(p) = self.host.stack().path(server) else {
            return 0;
        };
        (0..p.len())
            .filter_map(|i| p.stage(i))
            .find_map(|st| (st as &dyn std::any::Any).downcast_ref::<RpcServerStage>())
            .map_or(0, RpcServerStage::calls)
    }
}
