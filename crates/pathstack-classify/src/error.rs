//! Why a registration or removal was refused.

use thiserror::Error;

use crate::{DemuxNodeRef, KeyMode, ModuleId, PathId};

/// Errors of [`Classifier`](crate::Classifier) and
/// [`ReferenceClassifier`](crate::ReferenceClassifier). Registrations are
/// checked before anything changes: a refused registration leaves the
/// classifier as it was.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClassifyError {
    /// Another path is already reached by exactly the same keys: a packet
    /// matching one would match both with equal specificity, and Scout never
    /// resolves ambiguity at lookup time (thesis §3.4.3, footnote 2).
    #[error("{new} would make classification ambiguous: {existing} is already classified by the same {mode} keys")]
    Ambiguous {
        /// The path being registered.
        new: PathId,
        /// The path already registered with the same keys.
        existing: PathId,
        /// Key mode of both.
        mode: KeyMode,
    },
    /// After the same demux node, another path continues to a different
    /// module: the node can name only one module to refine the decision.
    #[error("{new} continues to {requested} after a demux node where {existing} already continues to {existing_next}; the classifier cannot tell which module refines the decision")]
    NextModuleConflict {
        /// The path being registered.
        new: PathId,
        /// A path already using the node.
        existing: PathId,
        /// The module that path continues to.
        existing_next: ModuleId,
        /// The module the new path wants to continue to.
        requested: ModuleId,
    },
    /// A path registers active keys at one level and passive at another;
    /// the 2N-lookup bound relies on all-active or all-passive paths
    /// (thesis §3.4.3.1).
    #[error(
        "{path} mixes active and passive keys: it was registered {registered} and now {requested}"
    )]
    MixedModes {
        /// The path.
        path: PathId,
        /// Mode of its earlier registrations.
        registered: KeyMode,
        /// Mode of the refused registration.
        requested: KeyMode,
    },
    /// `insert` of a path that already has demux keys.
    #[error("{path} already has demux keys registered; remove it first")]
    PathExists {
        /// The path.
        path: PathId,
    },
    /// `remove` of a path that has no demux keys.
    #[error("{path} has no demux keys registered")]
    UnknownPath {
        /// The path.
        path: PathId,
    },
    /// `register` with a previous node that is not where this path's chain
    /// currently ends (`PREVIOUS_DEMUX_NODE` from another path, or stale).
    #[error("{node:?} is not the last demux node registered by {path}")]
    NotChainTail {
        /// The path.
        path: PathId,
        /// The node passed as previous.
        node: DemuxNodeRef,
    },
    /// `register` after the chain already ended (its last registration had
    /// no next module).
    #[error("{path} already ended its demux chain; no module may refine it further")]
    ChainEnded {
        /// The path.
        path: PathId,
    },
    /// `register` for a module other than the one the previous registration
    /// named as next.
    #[error("{path}: the previous demux node expects {expected} next, but {got} registered")]
    ModuleMismatch {
        /// The path.
        path: PathId,
        /// Module named by the previous node.
        expected: ModuleId,
        /// Module that tried to register.
        got: ModuleId,
    },
    /// A path may start at most two chains: one per classification direction
    /// (thesis §3.4.3, classification from either end of a path).
    #[error("{path} already has demux chains for both directions")]
    TooManyChains {
        /// The path.
        path: PathId,
    },
    /// A chain longer than [`MAX_DEPTH`](crate::MAX_DEPTH) levels; the bound
    /// keeps a lookup at most `2 * MAX_DEPTH` probes.
    #[error("{path} registers more than {max} demux levels")]
    TooDeep {
        /// The path.
        path: PathId,
        /// The limit.
        max: usize,
    },
    /// `insert` with no levels.
    #[error("{path}: a filter needs at least one level")]
    EmptyChain {
        /// The path.
        path: PathId,
    },
    /// The demux node table reached its configured bound.
    #[error("demux node table is full ({max_nodes} nodes)")]
    TableFull {
        /// The bound.
        max_nodes: u32,
    },
    /// `u32::MAX` used as a module or path id (reserved as the "none" marker).
    #[error("id u32::MAX is reserved and cannot name a module or path")]
    ReservedId,
    /// A partial classifier for a module id beyond the registry bound.
    #[error("{module} is beyond the partial-classifier registry bound of {max} modules")]
    ModuleIdTooLarge {
        /// The module.
        module: ModuleId,
        /// The bound.
        max: u32,
    },
}
