//! What a host keeps for its RPC stack: the client and server paths, the
//! network, the size bound and the call table. Apart from the calls so
//! that the host holds it without an import cycle (issue 27 item 8).

use super::calls::CallTable;
use pathstack_core::PathId;
use pathstack_rpc::modules::blast::BlastModule;
use pathstack_rpc::modules::rpc::RpcModule;
use pathstack_rpc::modules::RpcNet;
use pathstack_rpc::wire::blast::HEADER_LEN as BLAST_HEADER_LEN;

/// What a host keeps for its RPC stack.
pub(crate) struct RpcState {
    pub(crate) client: PathId,
    pub(crate) server: PathId,
    pub(crate) net: RpcNet,
    pub(crate) max_request: usize,
    pub(crate) calls: CallTable,
}

impl RpcState {
    /// The RPC stack of `stack`, if its graph has one (`RPC` instance
    /// `rpc`, `BLAST` instance `blast`).
    pub(crate) fn find(stack: &pathstack_core::stack::Stack) -> Option<RpcState> {
        let rpc = stack.module::<RpcModule>(stack.module_id("rpc")?)?;
        let blast = stack.module::<BlastModule>(stack.module_id("blast")?)?;
        Some(RpcState {
            client: rpc.client_path()?,
            server: rpc.server_path()?,
            net: blast.net(),
            // BLAST's bound, unless a reassembled message would not fit
            // the pool's largest buffer behind the short BLAST header the
            // module delivers it with (with the 64-bit BLAST mask, 64·F is
            // more than the default 72 KiB).
            max_request: blast
                .max_message_len()
                .min(stack.pool().max_payload().saturating_sub(BLAST_HEADER_LEN))
                .saturating_sub(RPC_HEADERS),
            calls: CallTable::new(rpc.max_calls()),
        })
    }
}

/// The bytes the layers above BLAST add to a request: MSELECT 8, CHAN
/// 16, BID 12 (spec §9).
pub const RPC_HEADERS: usize = 8 + 16 + 12;
