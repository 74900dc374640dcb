//! The hash map behind the tables a connection open touches — admission's
//! per-class usage, TCP's listeners, 4-tuples and port use: std's
//! `HashMap` with foldhash instead of SipHash, which cost some 5,300
//! instructions of an open's ~72,000 (both ends, callgrind over
//! `tcp_million`; issue 28 item 4), as it had cost a third of an RPC
//! round trip (pathstack-rpc's `hash_map`). foldhash is seeded per process
//! ("minimally DoS-resistant"); keys such as a TCP 4-tuple come from the
//! wire, and every such table is bounded (`max_connections`, one entry per
//! class with live paths), so a crafted key set can lengthen a lookup but
//! not grow a table.

use std::collections::HashMap;

/// A hash map with the fast, per-process-seeded hasher.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
