//! EDF against round robin for periodic realtime paths (thesis §5.2.2.2):
//! see [`pathstack_tools::edf`].
//!
//! ```text
//! cargo run -p pathstack-tools --bin edf [-- --cost-us N] [--json]
//! ```
#![forbid(unsafe_code)]

fn main() {
    pathstack_tools::edf::main()
}
