//! The headers of the RPC protocols, one file per header: its byte layout,
//! parse and emit, and tests against the specification's byte vectors.
//!
//! Every multi-byte integer is big-endian; pad and unused bytes are sent
//! as zero and ignored on receipt (the canonical layout: the x-kernel's
//! ILP32 C structs after `hton*`).

pub mod bid;
pub mod bidctl;
pub mod blast;
pub mod chan;
pub mod mselect;
