//! The bodies of the cargo-fuzz targets in the repository's `fuzz/`
//! directory, and their seed corpora: here, outside the product, so that
//! the fuzz targets and the corpus replay test (`tests/fuzz_corpus.rs`)
//! run exactly the same code, and the `pathstack` facade carries none of
//! it. Not published; not a stable API.
//!
//! * [`tcp_segment`](fn@tcp_segment): a TCP control block driven into one
//!   of the connection states by a scripted exchange with a second
//!   control block, then fed segments, time and application calls decoded
//!   from the fuzz input; every segment it emits is checked.
//! * [`host_rx`](fn@host_rx): Ethernet frames into a whole
//!   [`Host`](pathstack::Host) with UDP sockets, a TCP listener and an
//!   established connection, set up over the in-memory wire with a second
//!   host before the input is read.
//! * [`rpc_rx`](fn@rpc_rx): frames into a host running the RPC stack as
//!   client and server, with calls in flight to a peer the harness speaks
//!   for.
//!
//! Each input is a list of operations run by one loop
//! (`operations.rs`). All run on a deterministic clock (the host's
//! [`set_manual_clock`](pathstack::Host::set_manual_clock)), so an input
//! replays the same way; what is random per host (TCP's ISN secret, the
//! RPC boot ids) the harness reads back from the frames on the wire, and
//! the input speaks of it relatively. The hosts are built through the
//! facade's public API alone.
//!
//! The rule they check is the project's: nothing from the wire may panic
//! the stack. [`tcp_segment_seeds`], [`host_rx_seeds`] and
//! [`rpc_rx_seeds`] make the seed corpora.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod frames;
mod host_on_wire;
mod host_pair;
mod host_rx;
mod input;
mod operations;
mod rpc_rx;
mod shared_end;
mod tcp_segment;

pub use host_rx::{host_rx, host_rx_seeds};
pub use rpc_rx::{rpc_rx, rpc_rx_reach, rpc_rx_seeds, RpcRxReach};
pub use tcp_segment::{tcp_segment, tcp_segment_seeds, tcp_stage_state};
