//! pathstack: a user-space protocol stack built on the path abstraction of
//! the Scout operating system. This facade re-exports the crates and knows
//! every module type that exists.
//!
//! ```
//! let specs = pathstack::module_specs();
//! assert!(specs.get("WIRE").is_some());
//! ```
#![forbid(unsafe_code)]

pub use pathstack_classify as classify;
pub use pathstack_core as core;
pub use pathstack_devices as devices;
pub use pathstack_inet as inet;

use pathstack_core::graph::spec::SpecRegistry;
use pathstack_core::stack::ModuleTypes;

pub mod host;
pub mod nic;
pub mod socket;
#[cfg(feature = "tokio")]
pub mod tokio;

/// Every module type a pathstack graph may use, with its factory: the
/// core's `WIRE` driver and synthetic modules, the Internet modules and the
/// LANCE driver.
pub fn module_types() -> ModuleTypes {
    let mut t = ModuleTypes::core();
    pathstack_inet::modules::register(&mut t);
    pathstack_devices::lance::register(&mut t);
    t
}

/// The specs of every module type, for checking graph files.
pub fn module_specs() -> SpecRegistry {
    module_types().specs()
}
