//! pathstack-core: the path abstraction of the Scout operating system.
//!
//! The concepts are those of Mosberger, *Scout: A Path-Based Operating System*, 1997 (ch. 2 and 3). In short:
//! protocols are [`module`]s wired into a checked [`graph`]; traffic runs on
//! [`path`]s, pre-routed slices through the graph made of one [`stage`] per
//! module, found for arriving messages by the [`demux`] classifier;
//! [`msg`] buffers come from a bounded pool; [`sched`]ulers run paths per
//! message or in LDLP batches; [`rules`] optimize paths (path-inlining).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admission;
pub mod anno;
pub mod attrs;
pub mod demux;
pub mod device;
pub mod drop_reason;
pub mod error;
pub mod exec;
pub mod fast_map;
pub mod fault;
pub mod fused;
pub mod generation;
pub mod graph;
mod header_demux;
pub mod ids;
pub mod module;
pub mod module_handle;
mod module_setup;
pub mod msg;
pub mod ops;
mod param_access;
pub mod path;
mod path_deadline;
mod path_queues;
mod path_table;
pub mod queue_sizing;
pub mod rate;
pub mod rules;
#[doc(hidden)]
pub mod runtime;
pub mod sched;
mod send_lane;
pub mod slab;
pub mod stack;
pub mod stage;
pub mod stage_ref;
mod stage_view;
pub mod synthetic;
pub mod time;
mod vacant_exec;

pub mod timer;

pub use anno::Anno;
pub use attrs::{AttrKey, Attrs, Scope};
pub use device::{Device, DeviceError};
pub use drop_reason::{CoreDropReason, DropCounts, DropReason, DropTally};
pub use error::{ModuleError, PathError, StackError};
pub use fault::PathFault;
pub use ids::{Dir, ModuleId, PathId};
pub use module::{CreateCx, Created, Creation, EndRoute, ModCx, Module, Route};
pub use msg::{Msg, MsgError, MsgPool, PoolConfig};
pub use ops::Ops;
pub use path::{Path, QueueKind};
pub use sched::{SchedError, SchedKind, SchedParams};
pub use stack::{End, ModuleTypes, SendError, Stack, StackBuilder, StackConfig};
pub use stage::{Cx, Stage, Verdict};
pub use stage_ref::StageRef;
pub use time::{Duration, Instant};
