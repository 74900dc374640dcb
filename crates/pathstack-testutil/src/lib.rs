//! Test support shared by the pathstack crates' integration tests; used
//! only as a dev-dependency.
//!
//! * [`counting_alloc`]: a global allocator that counts heap allocations,
//!   for the zero-allocation tests (Scout's buffer refresh: steady-state
//!   packet processing allocates nothing).
//! * The fixtures of the privileged tests: the privilege rule
//!   ([`privileged`]), network-namespace topologies ([`Topology`]),
//!   temporary files ([`TempFile`]), a server's loop on its own thread
//!   ([`LoopThread`]), tcpdump captures in a namespace
//!   ([`TcpdumpCapture`]), random loss of any frame ([`kernel_tcp::Loss::any_frame`]) and the tshark checks of captures
//!   ([`assert_tshark_clean`]).
//! * [`kernel_tcp`]: the Linux kernel's side of the TCP interop tests, run
//!   inside a [`Topology`]'s namespaces: kernel echo, sink and source
//!   servers and a kernel client ([`kernel_tcp::KernelEchoServer`],
//!   [`kernel_tcp::kernel_client`], ...) streaming deterministic payloads
//!   ([`kernel_tcp::pattern_bytes`]) hashed with SHA-256 on the fly; random
//!   loss ([`kernel_tcp::Loss`], nftables) and per-namespace sysctls
//!   ([`kernel_tcp::NsSysctl`]) as guards; the kernel's retransmission
//!   counters (`ss -tin`: [`kernel_tcp::ss_retransmissions`],
//!   `/proc/net/snmp`: [`kernel_tcp::tcp_snmp`]); and tshark's TCP analysis
//!   of a capture ([`kernel_tcp::assert_tcp_capture_clean`]).
//!
//! The counting allocator needs `unsafe impl GlobalAlloc`; it lives here,
//! with the tests, and not in the libraries, which forbid unsafe code.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod counting_alloc;
pub mod kernel_tcp;
mod loop_thread;
mod netns;
mod output;
mod privilege;
mod tcpdump;
mod temp_file;
mod tshark;

pub use loop_thread::{stopped, LoopThread};
pub use netns::{kernel_ping, scripts_dir, Topology};
pub use output::text;
pub use privilege::{has_net_admin, privileged};
pub use tcpdump::TcpdumpCapture;
pub use temp_file::TempFile;
pub use tshark::{assert_tshark_clean, have_tshark, tshark_frames};
