//! `RPC`: the application's end of the RPC stack (the x-kernel's XRPCTEST
//! role). It makes two paths when it starts: the *client* path, on which
//! the application sends calls down and reads their outcomes from the
//! sink, and the passive *server* path, whose stage runs the registered
//! [`Procedure`]s on the requests that arrive and turns each request
//! around as its reply, in the same run (no queue, no copy for an echo).
//!
//! A call going down carries its peer ([`RpcAnno::rpc_peer`]), its
//! procedure id ([`RpcAnno::procedure`]) and its call slot
//! ([`RpcTag::slot`]); its outcome comes up with the same slot and a
//! [`CallStatus`].

use crate::anno::{CallStatus, RpcAnno, RpcTag};
use pathstack_core::attrs::{keys, AttrKey, Attrs};
use pathstack_core::error::{ModuleError, PathError};
use pathstack_core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack_core::module::{CreateCx, Created, Creation, ModCx, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg, PathId};

/// Spec of `RPC`.
pub const RPC_SPEC: ModuleSpec = ModuleSpec {
    name: "RPC",
    doc: "the RPC application end: a client path for calls, a server path running procedures",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after()],
    params: &[
        ParamSpec::optional(
            "max_calls",
            "most calls in flight on the client path (default 1024)",
        ),
        ParamSpec::optional(
            "max_procedures",
            "most procedures the server registers (default 256)",
        ),
    ],
    understands: &[],
};

/// Which of its two paths `RPC` is making (set by `RPC` itself).
pub const RPC_ROLE: AttrKey<RpcRole> = AttrKey::pervasive("RPC_ROLE");

/// The role of a path made at `RPC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RpcRole {
    /// Calls out, outcomes in.
    Client,
    /// Requests in, replies out (passive).
    Server,
}

/// A procedure the server runs: the reply to `request` goes into `reply`
/// (empty on entry; a buffer reused from call to call). A reply longer
/// than the stack carries (the same bound as a request) is not sent: the
/// call then fails on the client with its deadline.
///
/// Any `FnMut(&[u8], &mut Vec<u8>) + Send` is a procedure.
///
/// ```
/// use pathstack_rpc::modules::rpc::Procedure;
/// let mut upper = |req: &[u8], reply: &mut Vec<u8>| reply.extend(req.iter().map(u8::to_ascii_uppercase));
/// let mut out = Vec::new();
/// upper.call(b"hi", &mut out);
/// assert_eq!(out, b"HI");
/// ```
pub trait Procedure: Send + 'static {
    /// Answers `request`.
    fn call(&mut self, request: &[u8], reply: &mut Vec<u8>);
    /// Whether the reply is always the request itself: the stage then
    /// turns the request around as it is, without copying it.
    fn echoes(&self) -> bool {
        false
    }
}

impl<F: FnMut(&[u8], &mut Vec<u8>) + Send + 'static> Procedure for F {
    fn call(&mut self, request: &[u8], reply: &mut Vec<u8>) {
        self(request, reply)
    }
}

/// The echo procedure of the x-kernel's RPC test: the reply is the
/// request.
#[derive(Clone, Copy, Debug, Default)]
pub struct Echo;

impl Procedure for Echo {
    fn call(&mut self, request: &[u8], reply: &mut Vec<u8>) {
        reply.extend_from_slice(request);
    }
    fn echoes(&self) -> bool {
        true
    }
}

/// Why a procedure could not be registered.
#[derive(Clone, Copy, Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegisterError {
    /// A procedure with the id is already registered.
    #[error("procedure {0} is already registered")]
    Exists(u32),
    /// The server's table is at its bound.
    #[error("the server already has {0} procedures (max_procedures)")]
    Full(usize),
}

/// The `RPC` module: its two paths.
pub struct RpcModule {
    client: Option<PathId>,
    server: Option<PathId>,
    max_calls: usize,
    max_procedures: usize,
}

impl RpcModule {
    /// Factory: parameters `max_calls`, `max_procedures`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(RpcModule {
            client: None,
            server: None,
            max_calls: setup.param("max_calls", 1024usize)?,
            max_procedures: setup.param("max_procedures", 256usize)?,
        }))
    }

    /// The client path: send calls on it `Dir::Down`, read outcomes from
    /// its `Dir::Up` sink.
    pub fn client_path(&self) -> Option<PathId> {
        self.client
    }

    /// The server path (its stage is an [`RpcServerStage`]).
    pub fn server_path(&self) -> Option<PathId> {
        self.server
    }

    /// Most calls in flight on the client path.
    pub fn max_calls(&self) -> usize {
        self.max_calls
    }
}

impl Module for RpcModule {
    fn spec(&self) -> &'static ModuleSpec {
        &RPC_SPEC
    }

    fn init(&mut self, cx: &mut ModCx<'_>) -> Result<(), ModuleError> {
        // The client's sink holds every outcome until the application
        // reads it: as many as calls may be in flight. The client path
        // serves every peer (each call names its own), so like the
        // server's it is classified without the peer's address: passive.
        let client = Attrs::new()
            .with(&RPC_ROLE, RpcRole::Client)
            .with(&keys::PASSIVE_OPEN, true)
            .with(&keys::QUEUE_LEN, self.max_calls);
        cx.request_path(client, 0);
        let server = Attrs::new()
            .with(&RPC_ROLE, RpcRole::Server)
            .with(&keys::PASSIVE_OPEN, true);
        cx.request_path(server, 1);
        Ok(())
    }

    /// `route_end` is the default: an outcome past the client's top
    /// goes to the client path's sink queue, where the application reads
    /// it; the server's stage turns every request around, so nothing
    /// leaves its top but a message the application itself queued there.
    /// The stack then leaves the top end with no routing call (issue 26,
    /// the `leave` of the RPC round trip).
    fn ends_in_sink(&self) -> bool {
        true
    }

    fn path_created(&mut self, tag: u64, result: Result<PathId, &PathError>) {
        if let Ok(p) = result {
            if tag == 0 {
                self.client = Some(p);
            } else {
                self.server = Some(p);
            }
        }
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        cx.require_top("RPC is the top of its paths")?;
        let stage: Box<dyn Stage> = match attrs.get(&RPC_ROLE) {
            Some(RpcRole::Server) => Box::new(RpcServerStage {
                procedures: Vec::new(),
                max_procedures: self.max_procedures,
                reply: Vec::new(),
                calls: 0,
            }),
            _ => Box::new(RpcClientStage),
        };
        Ok(Created {
            stage,
            route: Route::Service(0),
        })
    }
}

/// The top of the client path: calls pass down and outcomes up to the
/// sink untouched (the application keeps its calls' table).
pub struct RpcClientStage;

impl Stage for RpcClientStage {
    fn process(&mut self, _dir: Dir, _msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        Verdict::Next
    }
    fn passes(&self, _dir: Dir) -> bool {
        true
    }
}

/// The top of the server path: the registered procedures.
pub struct RpcServerStage {
    /// The procedures by id, sorted: a call finds its procedure by a
    /// binary search of a short array (one comparison for a server with
    /// one procedure) rather than a tree walk; bounded by
    /// `max_procedures`. Each with whether it echoes, asked once when it
    /// is registered ([`Procedure::echoes`] says "always"): a call then
    /// makes no virtual call to learn it.
    procedures: Vec<(u32, bool, Box<dyn Procedure>)>,
    max_procedures: usize,
    /// The reply buffer, reused from call to call.
    reply: Vec<u8>,
    calls: u64,
}

impl RpcServerStage {
    /// Registers `procedure` under `id`.
    pub fn register(
        &mut self,
        id: u32,
        procedure: Box<dyn Procedure>,
    ) -> Result<(), RegisterError> {
        let Err(at) = self.procedures.binary_search_by_key(&id, |&(i, _, _)| i) else {
            return Err(RegisterError::Exists(id));
        };
        if self.procedures.len() >= self.max_procedures {
            return Err(RegisterError::Full(self.max_procedures));
        }
        self.procedures
            .insert(at, (id, procedure.echoes(), procedure));
        Ok(())
    }

    /// Removes the procedure registered under `id`; `false` if none was.
    pub fn unregister(&mut self, id: u32) -> bool {
        match self.procedures.binary_search_by_key(&id, |&(i, _, _)| i) {
            Ok(at) => {
                self.procedures.remove(at);
                true
            }
            Err(_) => false,
        }
    }

    /// Procedure calls run so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Replaces the contents of `msg` with the reply buffer, in place when
    /// it fits, else in a new message large enough (annotations kept).
    fn write_reply(&mut self, msg: &mut Msg, cx: &Cx<'_, '_>) -> bool {
        msg.truncate(0);
        if msg.extend_from_slice(&self.reply).is_ok() {
            return true;
        }
        let Ok(mut m) = cx.pool().alloc_empty(self.reply.len()) else {
            return false;
        };
        *m.anno_mut() = *msg.anno();
        if m.extend_from_slice(&self.reply).is_err() {
            return false;
        }
        *msg = m;
        true
    }
}

impl Stage for RpcServerStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            return Verdict::Next;
        }
        let Some(tag) = msg.anno().rpc_tag() else {
            return Verdict::Drop(RpcDropReason::Untagged.into());
        };
        let id = msg.anno().procedure().unwrap_or(0);
        let found = self.procedures.binary_search_by_key(&id, |&(i, _, _)| i);
        let status = match found.ok().and_then(|at| self.procedures.get_mut(at)) {
            Some((_, echoes, p)) => {
                self.calls += 1;
                if !*echoes {
                    self.reply.clear();
                    p.call(msg.as_slice(), &mut self.reply);
                    if !self.write_reply(msg, cx) {
                        return Verdict::Drop(RpcDropReason::NoBuffer.into());
                    }
                }
                CallStatus::Ok
            }
            // MSELECT answers an unknown id with SEL_FAIL (§8): an empty
            // reply, so that CHAN still completes the exchange.
            None => {
                msg.truncate(0);
                CallStatus::NoSuchProcedure
            }
        };
        msg.anno_mut().set_rpc_tag(RpcTag { status, ..tag });
        Verdict::Back
    }

    fn passes(&self, dir: Dir) -> bool {
        dir == Dir::Down
    }
}

pathstack_core::drop_reasons! {
    /// Why the `RPC` module dropped a message.
    #[derive(thiserror::Error)]
    pub enum RpcDropReason in "rpc" {
        /// A request reached the server without its channel tag (a bug
        /// in a stage below).
        #[error("request without a channel tag")]
        Untagged => "untagged",
        /// No buffer for a reply larger than the request's.
        #[error("no buffer for the reply")]
        NoBuffer => "no_buffer",
    }
}
