//! The hash maps behind the RPC tables — BIDCTL's peers, CHAN's channels,
//! BLAST's sessions, VCHAN's pools — which a zero-byte call looks up about
//! ten times per round trip: std's `HashMap` with foldhash instead of
//! SipHash, which cost a third of a round trip's instructions. foldhash is
//! seeded per process ("minimally DoS-resistant"); the keys come from the
//! wire (peer addresses, channel numbers), and every table is bounded, so
//! a crafted key set can lengthen a lookup but not grow a table.
//!
//! The map itself is the core's ([`pathstack_core::fast_map`]), which
//! the tables of a connection open use for the same reason.

pub use pathstack_core::fast_map::FastMap;
