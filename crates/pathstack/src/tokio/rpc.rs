//! Remote procedure calls on a [`Net`]: [`RpcClient::call`] is an
//! `async fn` that sends the request at once and waits for the outcome
//! while the driver runs the stack; procedures are registered with
//! [`RpcClient::register`] and run inside the stack, as in the sync API
//! ([`crate::rpc`]).
//!
//! ```
//! use pathstack::core::device::wire::{wire_pair, WireConfig};
//! use pathstack::host::{Host, HostConfig};
//! use pathstack::rpc::{Echo, RpcNet};
//! use pathstack::tokio::{Net, RpcClient};
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), pathstack::rpc::RpcError> {
//!     let (a, b) = wire_pair(WireConfig::default());
//!     let rpc = |cidr: &str| HostConfig { rpc: Some(RpcNet::Eth), ..cidr.parse().unwrap() };
//!     let client = RpcClient::new(&Net::new(Host::new(rpc("10.0.0.1/24"), a).unwrap()));
//!     let server = RpcClient::new(&Net::new(Host::new(rpc("10.0.0.2/24"), b).unwrap()));
//!     server.register(1002, Echo)?;
//!     let peer = server.local_peer()?;
//!     // Many calls in flight at once: they share the peer's channels.
//!     let (x, y) = tokio::join!(client.call(peer, 1002, b"x"), client.call(peer, 1002, b"y"));
//!     assert_eq!((x?, y?), (b"x".to_vec(), b"y".to_vec()));
//!     Ok(())
//! }
//! ```

use super::net::Net;
use crate::host::Host;
use crate::rpc::{Procedure, RpcCall, RpcError};
use pathstack_rpc::Peer;
use std::future::poll_fn;
use std::task::Poll;

/// The RPC stack of a [`Net`]'s host: calls out and procedures in.
#[derive(Clone, Debug)]
pub struct RpcClient {
    net: Net,
}

/// Abandons a call whose future was dropped before its outcome came.
struct Pending<'a> {
    net: &'a Net,
    call: Option<RpcCall>,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            let mut st = self.net.inner.lock();
            st.forget_call(&call);
            st.host.rpc().abandon(call);
        }
    }
}

impl RpcClient {
    /// The RPC stack of `net`'s host (built with
    /// [`HostConfig::rpc`](crate::host::HostConfig::rpc)).
    pub fn new(net: &Net) -> RpcClient {
        RpcClient { net: net.clone() }
    }

    fn with_host<R>(&self, f: impl FnOnce(&mut Host) -> R) -> R {
        self.net.with_host(f)
    }

    /// How this host is named as a peer.
    pub fn local_peer(&self) -> Result<Peer, RpcError> {
        self.with_host(|h| h.rpc().peer())
    }

    /// Registers `procedure` under `id` on this host's server.
    pub fn register(&self, id: u32, procedure: impl Procedure) -> Result<(), RpcError> {
        self.with_host(|h| h.rpc().server()?.register(id, procedure))
    }

    /// Calls procedure `id` on `peer` with `request` and returns the
    /// reply. The request leaves at once; many calls may be in flight.
    ///
    /// Cancel safety: if the future is dropped before it completes, the
    /// call is abandoned — the procedure may still run once on the peer,
    /// and its reply is thrown away.
    pub async fn call(
        &self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
    ) -> Result<Vec<u8>, RpcError> {
        let peer = peer.into();
        let call = {
            let mut st = self.net.inner.lock();
            st.check_driver().map_err(|e| RpcError::Failed {
                peer,
                id,
                reason: e.to_string(),
            })?;
            let call = st.host.rpc().start(peer, id, request)?;
            st.poll();
            if st.kick_due() {
                drop(st);
                self.net.inner.kick.notify_one();
            }
            call
        };
        let mut pending = Pending {
            net: &self.net,
            call: Some(call),
        };
        let outcome = poll_fn(|cx| {
            let mut st = self.net.inner.lock();
            if let Err(e) = st.check_driver() {
                return Poll::Ready(Err(RpcError::Failed {
                    peer,
                    id,
                    reason: e.to_string(),
                }));
            }
            match st.host.rpc().poll(&call) {
                Ok(Some(reply)) => Poll::Ready(Ok(reply.as_slice().to_vec())),
                Ok(None) => {
                    st.wait_call(call, cx.waker());
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e)),
            }
        })
        .await;
        // Read (or failed): nothing to abandon.
        if outcome.is_ok() || !matches!(outcome, Err(RpcError::Failed { .. })) {
            pending.call = None;
        }
        outcome
    }
}
