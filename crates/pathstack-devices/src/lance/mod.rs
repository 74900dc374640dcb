//! The emulated LANCE adapter of the DEC 3000 workstations measured on in
//! Mosberger, Peterson and O'Malley, *Protocol Latency: MIPS and Reality*
//! (1995, §2.6): an Am7990 model, its sparse
//! shared memory, and the LANCE driver module with two descriptor access
//! strategies — `copy` (dense copy and write-back, what most drivers did)
//! and `direct` (fields read and written in place through accessors
//! generated from a declarative layout, the USC way).
//!
//! | file | concept |
//! |---|---|
//! | [`csr`] | CSR0–CSR3 and MODE bits |
//! | [`sparse`] | the IOASIC's gap2/gap16 sparse memory |
//! | [`layout`] | [`sparse_layout!`](crate::sparse_layout): typed accessors from a field list |
//! | [`descriptor`] | RMD, TMD and initialization block layouts |
//! | [`plan`] | where the driver puts rings and buffers |
//! | [`chip`] | the Am7990 model with its wire side |
//! | [`access`] | the copy and direct strategies |
//! | [`driver`] | the driver: init, rings, transmit, receive, errors |
//! | [`module`] | `LANCE`, the driver as a path-core module |
//!
//! A stack with the LANCE below the synthetic layers:
//!
//! ```
//! use pathstack_core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack_core::graph::ModuleGraph;
//! use pathstack_core::stack::{ModuleTypes, Stack};
//!
//! let mut types = ModuleTypes::core();
//! pathstack_devices::lance::register(&mut types);
//! let graph = ModuleGraph::from_text(
//!     "name=link module=LINK; name=nic module=LANCE device=0 access=copy promisc=true;
//!      @ link.down<>nic.up;",
//!     None,
//!     &types.specs(),
//! )?;
//! let (a, _b) = memory_pair(MemoryConfig::default());
//! let stack = Stack::builder(graph, types).device(a).build()?;
//! let nic = stack.module_id("nic").unwrap();
//! let lance = stack.module::<pathstack_devices::lance::LanceModule>(nic).unwrap();
//! assert!(lance.driver().is_running());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod access;
pub mod chip;
pub mod csr;
pub mod descriptor;
pub mod driver;
pub mod layout;
pub mod module;
pub mod plan;
pub mod sparse;

pub use access::{Access, ParseAccessError};
pub use chip::{Am7990, ChipConfig, ChipStats, RunReport};
pub use driver::{DriverStats, LanceConfig, LanceDriver, LanceDropReason, LanceError, RxEvent};
pub use module::{register, LanceModule, LanceParams, LanceStage, LANCE_SPEC};
pub use plan::{MemoryPlan, PlanError};
pub use sparse::SparseMemory;
