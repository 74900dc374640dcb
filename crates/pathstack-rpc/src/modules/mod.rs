//! The RPC modules on the path core: `RPC` (the application's end: calls
//! and procedures, the x-kernel's XRPCTEST), `MSELECT`, `VCHAN`, `CHAN`,
//! `BID`, `BIDCTL` and `BLAST`.
//!
//! Thin wrappers, as in `pathstack-inet`: the protocol logic lives in the
//! engines of this crate; a module here owns what its paths share (BLAST's
//! send and reassembly tables, BIDCTL's per-peer state machines), and its
//! stage does the per-message work of one path.
//!
//! An RPC host has these paths (client and server serve every peer; the
//! peer of each message travels in its annotations):
//!
//! ```text
//!  client: RPC / MSELECT / VCHAN / CHAN / BID / BLAST / ETH / driver   (calls out, replies in)
//!  server: RPC / MSELECT / VCHAN / CHAN / BID / BLAST / ETH / driver   (requests in, replies out; passive)
//!  BID:    BID / BLAST / ETH / driver     (empty BID messages, unclaimed BID traffic)
//!  BLAST:  BLAST / ETH / driver           (fragments, NACKs, retransmissions; reassembly)
//!  BIDCTL: BIDCTL / ETH / driver          (boot-id queries, responses, keepalives)
//! ```
//!
//! Over IP (`graphs/rpc-ip.graph`) ETH is replaced by IP / ARP / ETH.
//!
//! Modules that are not on a path but must be asked something — BIDCTL by
//! BID and CHAN — are reached through the graph connection that names
//! them ([`Cx::linked_module`](pathstack_core::stage::Cx::linked_module)).

pub mod bid;
pub mod bidctl;
pub mod blast;
pub mod chan;
mod chan_actions;
pub mod fast;
mod graph;
pub mod inline;
pub mod mselect;
mod net;
mod own_path;
pub mod rpc;
mod sends;
mod server_channels;
pub mod vchan;

pub use graph::RpcGraph;
pub use net::RpcNet;

use pathstack_core::stack::ModuleTypes;

/// The x-kernel's protocol numbers (`etc/prottbl.std`), which the RPC
/// headers carry to name the protocol above (implicit numbering: the upper
/// protocol's absolute id), and the EtherTypes and IP protocol numbers the
/// x-kernel used below.
pub mod protocol {
    /// BLAST's absolute id.
    pub const BLAST: u32 = 8;
    /// CHAN's absolute id (BID's `hlpNum` on the RPC stack).
    pub const CHAN: u32 = 13;
    /// VCHAN's absolute id.
    pub const VCHAN: u32 = 15;
    /// MSELECT's absolute id (CHAN's `prot_id` on the RPC stack).
    pub const MSELECT: u32 = 20;
    /// BID's absolute id (BLAST's `prot_id` on the RPC stack).
    pub const BID: u32 = 21;
    /// BIDCTL's absolute id.
    pub const BIDCTL: u32 = 22;
    /// The EtherType BLAST runs on.
    pub const ETHERTYPE_BLAST: u16 = 0x3001;
    /// The EtherType BIDCTL runs on.
    pub const ETHERTYPE_BIDCTL: u16 = 0x3006;
    /// The IP protocol number BLAST runs on.
    pub const IP_BLAST: u8 = 101;
    /// The IP protocol number BIDCTL runs on.
    pub const IP_BIDCTL: u8 = 205;
    /// The procedure id of the x-kernel's RPC test (`xrpctest`), which the
    /// echo procedure answers by default.
    pub const XRPCTEST_ID: u32 = 1002;
}

/// Registers `RPC`, `MSELECT`, `VCHAN`, `CHAN`, `BID`, `BIDCTL`, `BLAST`.
pub fn register(types: &mut ModuleTypes) {
    types.register(&rpc::RPC_SPEC, rpc::RpcModule::create);
    types.register(&mselect::MSELECT_SPEC, mselect::MselectModule::create);
    types.register(&vchan::VCHAN_SPEC, vchan::VchanModule::create);
    types.register(&chan::CHAN_SPEC, chan::ChanModule::create);
    types.register(&bid::BID_SPEC, bid::BidModule::create);
    types.register(&bidctl::BIDCTL_SPEC, bidctl::BidctlModule::create);
    types.register(&blast::BLAST_SPEC, blast::BlastModule::create);
}
