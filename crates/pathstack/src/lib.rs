//! pathstack: the facade crate.
#![forbid(unsafe_code)]
pub use pathstack_core as core;
