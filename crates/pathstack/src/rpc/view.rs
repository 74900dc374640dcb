//! The RPC view of a host: `host.rpc()`, a thin borrow over the host's
//! x-kernel RPC stack (BLAST, BID, CHAN, VCHAN, MSELECT; issue 27 item 2:
//! no `rpc_` prefixes on `Host`).
//!
//! A call either blocks ([`call`](Rpc::call), for a host that runs in this
//! thread alone) or is started and polled ([`start`](Rpc::start),
//! [`poll`](Rpc::poll)); procedures are served with [`serve`](Rpc::serve).

use super::calls::Taken;
use super::{Peer, Procedure, RpcCall, RpcClient, RpcError, RpcNet, RpcServer};
use crate::host::Host;
use pathstack_core::{Dir, Msg, SendError};
use pathstack_rpc::anno::{CallStatus, RpcAnno, RpcTag};
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

    /// How this host is named as an RPC peer: its MAC address when the
    /// RPC stack runs on Ethernet, its IPv4 address over IP.
    pub fn peer(&self) -> Result<Peer, RpcError> {
        let net = self.host.rpc.as_ref().ok_or(RpcError::NoRpc)?.net;
        Ok(match net {
            RpcNet::Eth => Peer::mac(self.host.mac().ok_or(RpcError::NoRpc)?),
            RpcNet::Ip => Peer::ipv4(self.host.addr().ok_or(RpcError::NoRpc)?),
        })
    }

    /// The largest request (and reply) the RPC stack carries: 16 BLAST
    /// fragments less the headers above BLAST (23,644 bytes on Ethernet
    /// with a 1500-byte MTU, 23,324 over IP).
    pub fn max_request(&self) -> Result<usize, RpcError> {
        Ok(self.host.rpc.as_ref().ok_or(RpcError::NoRpc)?.max_request)
    }

    /// Calls started and not yet taken or abandoned.
    pub fn in_flight(&self) -> usize {
        self.host.rpc.as_ref().map_or(0, |s| s.calls.in_use())
    }
}

impl<H: DerefMut<Target = Host>> Rpc<H> {
    /// Starts a call of procedure `id` on `peer` with `request`, without
    /// waiting: poll the host and read the outcome with
    /// [`Rpc::poll`](crate::rpc::Rpc::poll).
    pub fn start(
        &mut self,
        peer: impl Into<Peer>,
        id: u32,
        request: &[u8],
    ) -> Result<RpcCall, RpcError> {
        let peer = peer.into();
        let host = self.host.id();
        let st = self.host.rpc_state()?;
        if request.len() > st.max_request {
            return Err(RpcError::TooLarge {
                len: request.len(),
                max: st.max_request,
            });
        }
        let max = st.calls.max();
        let (slot, generation) = st.calls.open(peer, id).ok_or(RpcError::Busy(max))?;
        let client = st.client;
        let mut m = match self.host.stack().pool().alloc_copy(request) {
            Ok(m) => m,
            Err(_) => {
                self.host.rpc_state()?.calls.cancel(slot);
                return Err(RpcError::NoBuffer);
            }
        };
        let a = m.anno_mut();
        a.set_rpc_peer(peer);
        a.set_procedure(id);
        a.set_rpc_tag(RpcTag::slot(slot));
        let now = self.host.now();
        let stack = self.host.stack_mut();
        stack.set_now(now);
        match stack.send(client, Dir::Down, m) {
            // Dropped below CHAN (the peer's boot id not known yet, a full
            // device queue): CHAN holds the request and sends it again.
            Ok(()) | Err(SendError::Dropped(_)) => {}
            Err(_) => {
                self.host.rpc_state()?.calls.cancel(slot);
                return Err(RpcError::Busy(max));
            }
        }
        self.host.rpc_collect();
        Ok(RpcCall {
            slot,
            generation,
            host,
        })
    }

    /// The outcome of `call`: `Ok(None)` while it is in flight, the reply
    /// once it came (the handle is then spent), or why it failed.
    pub fn poll(&mut self, call: &RpcCall) -> Result<Option<Msg>, RpcError> {
        if call.host != self.host.id() {
            return Err(RpcError::NoSuchCall);
        }
        self.host.rpc_collect();
        let st = self.host.rpc_state()?;
        match st.calls.take(call.slot, call.generation) {
            Taken::Pending => Ok(None),
            Taken::Unknown => Err(RpcError::NoSuchCall),
            Taken::Done { outcome: Ok(m), .. } => Ok(Some(m)),
            Taken::Done {
                peer,
                id,
                outcome: Err(s),
            } => Err(match s {
                CallStatus::NoSuchProcedure => RpcError::NoSuchProcedure { peer, id },
                CallStatus::PeerRebooted => RpcError::PeerRebooted { peer, id },
                CallStatus::TimedOut => RpcError::TimedOut { peer, id },
                // The facade checks the size first: this is CHAN's own,
                // smaller bound (a build whose limits disagree).
                CallStatus::TooLarge => RpcError::Failed {
                    peer,
                    id,
                    reason: "the request is larger than the channel carries".into(),
                },
                CallStatus::Busy => RpcError::Busy(st.calls.max()),
                CallStatus::Ok | CallStatus::Failed => RpcError::Failed {
                    peer,
                    id,
                    reason: "the channel to the peer is disabled".into(),
                },
            }),
        }
    }

    /// Whether [`Rpc::poll`](crate::rpc::Rpc::poll) would now return something other than
    /// `Ok(None)` for `call` (its outcome came, or it is no call of this
    /// host), without taking it.
    pub fn ready(&mut self, call: &RpcCall) -> bool {
        if call.host != self.host.id() {
            return true;
        }
        self.host.rpc_collect();
        self.host
            .rpc
            .as_ref()
            .is_none_or(|st| st.calls.is_done(call.slot, call.generation))
    }

    /// Gives up waiting for `call`: its outcome is thrown away when it
    /// comes. The procedure may still run once on the peer.
    pub fn abandon(&mut self, call: RpcCall) {
        if call.host == self.host.id() {
            if let Some(st) = self.host.rpc.as_mut() {
                st.calls.abandon(call.slot, call.generation);
            }
        }
    }

    /// The client side of the host's RPC stack, for blocking calls.
    pub fn client(&mut self) -> Result<RpcClient<'_>, RpcError> {
        self.host.rpc_state()?;
        Ok(RpcClient {
            host: &mut self.host,
        })
    }

    /// The server side of the host's RPC stack, to register procedures.
    pub fn server(&mut self) -> Result<RpcServer<'_>, RpcError> {
        self.host.rpc_state()?;
        Ok(RpcServer {
            host: &mut self.host,
        })
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
