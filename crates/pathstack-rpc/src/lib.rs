//! pathstack-rpc: the place for the x-kernel RPC protocols (BLAST, BID, CHAN,
//! VCHAN, MSELECT) on pathstack paths. Empty for now: no module is written
//! yet, and no other crate depends on it.
#![forbid(unsafe_code)]
