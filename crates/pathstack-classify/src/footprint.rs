//! Where a classifier's heap bytes go, part by part
//! ([`Classifier::footprint`](crate::Classifier::footprint)).
//!
//! Issue 26 holds the classifier to 64 heap bytes a path. The bench
//! (`benches/classifier.rs`, `bytes_per_path`) measures the whole with a
//! counting allocator; this says which part holds them — the demux nodes,
//! their path counts, the edge and tails tables (the id table that finds
//! a path's chains for removal), the flow table — so a change to one is
//! seen in its own figure. Every part is counted from its capacity, so the
//! growth slack a part carries is in its figure, as the allocator sees it.

/// Heap bytes of one classifier by part; [`total`](Self::total) is
/// [`Classifier::heap_bytes`](crate::Classifier::heap_bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// The 32-byte demux nodes (the slab's vector).
    pub nodes: usize,
    /// The 4-byte path count of every node (a side array).
    pub counts: usize,
    /// What few nodes have, in sparse maps: the children of nodes with
    /// several, twins, spilled long keys.
    pub sparse: usize,
    /// The edge table: a 4-byte slot per node, over its load factor.
    pub edges: usize,
    /// The tails table (path id to the chain's last node, for removal):
    /// a 4-byte slot per complete chain, over its load factor.
    pub tails: usize,
    /// Chains still being registered and the receiving modules' children.
    pub open: usize,
    /// The flow table: its entries' slots, home bits, leaf index (a
    /// leafless path's slot by its id, `flow_slots.rs`), gathers and
    /// chains.
    pub flows: usize,
}

impl Footprint {
    /// All of them: the classifier's heap bytes.
    pub fn total(&self) -> usize {
        self.nodes + self.counts + self.sparse + self.edges + self.tails + self.open + self.flows
    }

    /// `self − before`, part by part (saturating), for the bytes some
    /// paths added.
    pub fn since(&self, before: &Footprint) -> Footprint {
        Footprint {
            nodes: self.nodes.saturating_sub(before.nodes),
            counts: self.counts.saturating_sub(before.counts),
            sparse: self.sparse.saturating_sub(before.sparse),
            edges: self.edges.saturating_sub(before.edges),
            tails: self.tails.saturating_sub(before.tails),
            open: self.open.saturating_sub(before.open),
            flows: self.flows.saturating_sub(before.flows),
        }
    }
}
