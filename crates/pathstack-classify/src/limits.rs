//! The classifier's fixed bounds: how deep a chain, how many classifying
//! modules, how many windows a flow's keys may span. Apart so that the
//! tree (`classifier.rs`) and the flow table (`flow.rs`, `flow_slots.rs`,
//! `fold.rs`) size their arrays from one place without importing each
//! other.

/// Longest chain of demux levels one path may register. Bounds a lookup to
/// `2 * MAX_DEPTH` probes; real stacks use 3–5 (thesis §3.4.3.1).
pub const MAX_DEPTH: usize = 16;

/// Highest module id (exclusive) that may own a partial classifier: the
/// registry is a directly indexed table so a lookup level costs no hash.
pub const MAX_CLASSIFIED_MODULES: u32 = 4096;

/// Most 8-byte windows of a message a flow's key bytes may lie in: three
/// for Ethernet/IPv4/UDP or TCP (the EtherType; the protocol and the
/// source address; the destination address and the ports), five for the
/// RPC stack over IP (those three with BLAST's protocol number; BID's
/// protocol number and CHAN's side; CHAN's protocol number).
pub(crate) const WORDS: usize = 6;
