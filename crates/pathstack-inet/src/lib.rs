//! pathstack-inet: the Internet protocols of pathstack — Ethernet, ARP,
//! IPv4, ICMP and UDP — as modules on Scout paths.
//!
//! Three layers, one concept per file:
//!
//! * [`wire`]: the header formats, one file per header, each with its byte
//!   layout, its parse and emit, and the demux key its partial classifier
//!   extracts. Header slicing and checksums come from `etherparse`; what is
//!   hand-written says why.
//! * The protocol logic the headers do not decide, independent of the path
//!   machinery and tested alone, in a folder per protocol: for ARP
//!   ([`arp`]) the cache ([`arp::cache`]); for IP ([`ip`]) fragmentation
//!   ([`ip::frag`]) and reassembly ([`ip::reassembly`]), routing
//!   ([`ip::route`]), identification ([`ip::ipv4_ident`]), when not to
//!   send an ICMP error ([`ip::icmp_suppression`]) and the error rate
//!   limit ([`ip::rate_limit`]); for TCP ([`tcp`]), sequence numbers, ISNs, SYN cookies, the RTO, the
//!   send and receive buffers, congestion control, SACK loss recovery,
//!   RACK-TLP, and the connection itself ([`tcp::Tcb`], RFC 9293), driven
//!   by segments, calls and time with no I/O of its own.
//! * [`modules`]: the `ETH`, `ARP`, `IP`, `ICMP`, `UDP` and `TCP` modules and their
//!   stages on pathstack-core's Module/Stage API, which own the shared state
//!   (ARP cache, routing table, reassembler, port table) and wrap the two
//!   layers above; the standard host graph; and the path-inlining rule for
//!   UDP paths ([`modules::inline`]). Module roles follow Mosberger, *Scout:
//!   A Path-Based Operating System*, 1997, §4.1.2 and Figure 5.2.
//!
//! Nothing panics on any input: every malformed case is a typed drop reason
//! with a stable name ([`pathstack_core::drop_reason`]), and every table and queue has a
//! bound fixed at construction.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod anno;
pub mod arp;
pub mod ip;
pub mod modules;
pub mod tcp;
pub mod wire;

pub use anno::InetAnno;
pub use wire::eth::{EthDropReason, EthHeader, MacAddr};
pub use wire::ipv4::{Ipv4DropReason, Ipv4Packet, Ipv4Repr};
