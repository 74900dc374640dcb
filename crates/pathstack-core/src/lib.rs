//! pathstack-core: the path abstraction of the Scout operating system.
//!
//! See `DESIGN.md` in the shared folder for the concepts. In short:
//! protocols are [`module`]s wired into a checked [`graph`]; traffic runs on
//! [`path`]s, pre-routed slices through the graph made of one [`stage`] per
//! module; [`msg`] buffers come from a bounded pool; [`sched`]ulers run paths
//! per message or in LDLP batches.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod device;
pub mod graph;
pub mod msg;
pub mod time;

pub use msg::{Msg, MsgError, MsgPool, PoolConfig};
pub use time::{Duration, Instant};
