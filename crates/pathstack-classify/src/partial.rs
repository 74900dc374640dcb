//! The partial classifier a demultiplexing module supplies (thesis §3.4.3,
//! Figure 3.9 line 2: "extract key k from m").

use crate::{FlowLayout, Key, KeyMode};

/// Extracts one module's partial key from the message at that module's
/// header.
///
/// `msg` is the whole remaining message, starting at this module's header,
/// so a module may look past its own header if it must. It returns the key
/// for `mode` and how many bytes its header occupies, i.e. where the next
/// module's header starts. `None` means the message cannot be classified
/// here (too short, wrong version, ...): the walk stops at this level and
/// the longest path found so far is used. A returned length larger than
/// `msg.len()` is treated like `None`, so a buggy classifier cannot make the
/// walk read out of bounds.
///
/// Modules that do not demultiplex need no partial classifier: a module
/// without one contributes the empty key and consumes nothing (thesis
/// §3.4.3.2, a byte-counting filter between TCP and IP).
///
/// Implementations must not allocate: they run once or twice per level for
/// every received packet.
pub trait PartialClassifier: Send {
    /// The partial key of `msg` for `mode` and the length of this module's header.
    fn extract(&self, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)>;

    /// Where this module's active key lies in its header when the header
    /// has its common fixed shape, so that an established path through it
    /// is found with one probe of the flow table instead of a walk
    /// (`flow.rs`). `None` (the default) keeps every path through the
    /// module on the tree walk.
    ///
    /// The layout must agree with [`extract`](Self::extract): wherever it
    /// applies, `extract(.., KeyMode::Active)` returns the key and header
    /// length it reads (see [`FlowLayout`]). Read once, when the partial
    /// classifier is installed.
    fn flow_layout(&self) -> Option<FlowLayout> {
        None
    }

    /// Where this module's *passive* key lies, under the same contract
    /// with `extract(.., KeyMode::Passive)`: what lets a passive path (a
    /// server's, RPC's paths that serve every peer) be a flow too. `None`
    /// (the default) keeps passive paths through the module on the walk.
    ///
    /// A passive path is only filed while no active path can take its
    /// messages; the classifier shows that from the receiving module's
    /// key, so there the passive layout must equal the active one (the
    /// key does not depend on the mode, as an EtherType does not).
    fn passive_flow_layout(&self) -> Option<FlowLayout> {
        None
    }
}

impl<F> PartialClassifier for F
where
    F: Fn(&[u8], KeyMode) -> Option<(Key, usize)> + Send,
{
    fn extract(&self, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
        self(msg, mode)
    }
}
