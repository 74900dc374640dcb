//! The Linux kernel's side of the TCP interop tests (pathstack ↔ kernel
//! over TAP): kernel TCP endpoints run inside a [`Topology`](crate::Topology)'s namespaces,
//! deterministic payloads that are hashed while streaming, network
//! conditions (random loss, per-namespace sysctls) and the kernel's own
//! account of a connection (`ss -tin`, `/proc/net/snmp`) and captures
//! (tshark's TCP analysis).
//!
//! # Kernel endpoints in a namespace
//!
//! A socket belongs to the network namespace it was *created* in, whatever
//! thread later uses it. [`kernel_listen`] and [`kernel_connect`] create the
//! socket on a short-lived thread that has entered the namespace with
//! `setns(2)` (only that thread moves; the test process stays where it
//! is), and hand it back. The servers ([`KernelEchoServer`],
//! [`KernelSinkServer`], [`KernelSourceServer`]) and the client
//! ([`kernel_client`]) are built on them. Every socket has read and write
//! timeouts ([`IO_TIMEOUT`] unless told otherwise), so a hung peer fails
//! the test instead of hanging it.
//!
//! # Payloads
//!
//! [`pattern_bytes`] fills a buffer with the bytes at `offset..` of the
//! deterministic stream of `seed`; both ends generate and hash on the fly
//! ([`pattern_sha256`] computes the digest of the first `len` bytes without
//! any socket), so 100 MB never has to sit in memory.
//!
//! One file per concern, all re-exported here: `payload` (the streams and
//! their hashes), `netns_socket` (sockets made inside a namespace),
//! `server` and `client` (the kernel endpoints), `loss` (nftables loss),
//! `sysctl`, `counters` (`ss -tin`, `/proc/net/snmp`), `capture` (tshark's
//! TCP analysis), and `ns_exec` (commands in a namespace) under them.

mod capture;
mod client;
mod counters;
mod loss;
mod netns_socket;
mod ns_exec;
mod payload;
mod server;
mod sysctl;

pub use capture::{assert_tcp_capture_clean, assert_tcp_capture_clean_offloaded, TcpCaptureStats};
pub use client::{kernel_client, ClientOptions, ClientReport};
pub use counters::{parse_snmp_tcp, parse_ss, ss_retransmissions, tcp_snmp, SsInfo, TcpSnmp};
pub use loss::Loss;
pub use netns_socket::{kernel_connect, kernel_listen, spawn_in_netns, IO_TIMEOUT};
pub use payload::{pattern_bytes, pattern_sha256, Sha256Digest, Transfer};
pub use server::{KernelEchoServer, KernelServer, KernelSinkServer, KernelSourceServer};
pub use sysctl::{ns_sysctl, NsSysctl};
