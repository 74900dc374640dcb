//! pathstack's measurement tools and the code they share.
//!
//! The binaries (`src/bin/`) are what `scripts/` runs: `pingpong_bench`
//! (the ping-pong of every transport, form and scheduler, with the
//! `--count-only` mode the instruction counts use), `host` (the host on a
//! TAP with echo/discard/chargen and RPC), the comparison peers
//! (`smoltcp_peer`, `kernel_*`, `http_kernel_twin`), the load generators
//! (`tcp_bulk`, `ldlp_load`, `priority_stream`, `syn_flood`,
//! `icmp_flood`), the floor (`floor`), `classify_count`, the hyper server
//! `http` and the EDF demonstration `edf` (thesis §5.2.2.2). The short
//! examples that teach the API stay in `examples/`.
//!
//! This library holds what more than one binary, or a binary and a test,
//! use: the round-trip recorder ([`rtt`]), the TCP services of the host
//! ([`tcp_services`]), the raw-socket flooders' common part
//! ([`raw_flood`]), the tokio TAP start-up ([`tap_net`]), the hyper
//! service ([`http`]), and the machinery of [`priority_stream`] and
//! [`edf`] that their tests drive in-process.
#![forbid(unsafe_code)]

pub mod edf;
pub mod http;
pub mod priority_stream;
pub mod raw_flood;
pub mod rtt;
pub mod tap_net;
pub mod tcp_services;
