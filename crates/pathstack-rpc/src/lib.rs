//! pathstack-rpc: the x-kernel RPC protocol family — BLAST, BID, BIDCTL,
//! CHAN, VCHAN and MSELECT — as modules on pathstack paths.
//!
//! Three layers, as in `pathstack-inet`:
//!
//! * [`wire`]: one typed view per header (parse and emit side by side,
//!   checked lengths, never a panic), with the byte layouts of the x-kernel
//!   v3.2 sources: ILP32 C structs, integers big-endian.
//! * The protocol engines, with no I/O of their own, driven by packets,
//!   calls and time and tested alone: fragmentation with selective
//!   retransmission ([`blast`]), boot identifiers and the per-peer BIDCTL
//!   state machine ([`boot`]), request/reply channels with at-most-once
//!   execution ([`chan`]), the channel pool ([`vchan`]) and procedure
//!   selection ([`mselect`]).
//! * The modules and their stages on pathstack-core's Module/Stage API,
//!   which wrap the engines and own the shared tables.
//!
//! The protocols follow O'Malley & Peterson, *A Dynamic Network
//! Architecture* (ACM TOCS 10(2), 1992) as implemented in the x-kernel 3.2,
//! and their use in Mosberger, *Scout: A Path-Based Operating System*,
//! 1997, §4.1.2.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod anno;
pub mod blast;
pub mod boot;
pub mod chan;
mod handle_table;
pub mod hash_map;
pub mod modules;
pub mod mselect;
pub mod peer;
pub mod vchan;
pub mod wire;

pub use peer::{Peer, PeerAddr};
