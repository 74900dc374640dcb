//! The generation of what BIDCTL knows about boot ids, shared with the BID
//! stages that cache them (the thesis' PIN version kept the peer's boot id
//! on the path; Mosberger §4.2.2).
//!
//! BIDCTL bumps the number whenever something it knows about a peer may
//! change — a packet, a timer, a query, a registration — and a BID stage
//! that read a peer's boot ids at generation `g` may use them for as long
//! as the number is still `g`. The stage holds a clone of the cell,
//! resolved from BIDCTL the first time its path carries a message, so an
//! established call reads one number instead of reaching BIDCTL through
//! the module graph. A peer's reboot is always learnt by BIDCTL (a BID
//! hint it is asked about, a BIDCTL packet), which bumps the number first:
//! no stage uses a boot id older than the one BIDCTL holds (spec §4.3).
//!
//! An `Arc` because stages and modules must be `Send`; the stack is run by
//! one thread at a time, so `Relaxed` suffices: the cell carries no data
//! other threads read, only the fact that something changed, and the
//! module that changed it is reached through the same `&mut` run.

/// The generation of what BIDCTL knows: the core's shared change counter
/// ([`pathstack_core::generation::Generation`]), as the IP and ARP stages
/// hold theirs.
pub type BootGeneration = pathstack_core::generation::Generation;
