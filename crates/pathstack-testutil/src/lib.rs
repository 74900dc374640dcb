//! Test support shared by the pathstack crates' integration tests; used
//! only as a dev-dependency.
//!
//! * [`counting_alloc`]: a global allocator that counts heap allocations,
//!   for the zero-allocation tests (Scout's buffer refresh: steady-state
//!   packet processing allocates nothing).
//! * The fixtures of the privileged tests: the privilege rule
//!   ([`privileged`]), network-namespace topologies ([`Topology`]),
//!   temporary files ([`TempFile`]) and the tshark checks of captures
//!   ([`assert_tshark_clean`]).
//!
//! The counting allocator needs `unsafe impl GlobalAlloc`; it lives here,
//! with the tests, and not in the libraries, which forbid unsafe code.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod counting_alloc;
mod netns;
mod output;
mod privilege;
mod temp_file;
mod tshark;

pub use netns::{kernel_ping, scripts_dir, Topology};
pub use output::text;
pub use privilege::{has_net_admin, privileged};
pub use temp_file::TempFile;
pub use tshark::{assert_tshark_clean, have_tshark, tshark_frames};
