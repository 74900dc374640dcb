//! Scout's modular packet classifier (Mosberger, *Scout*, 1997, §3.4):
//! finds the path for an arriving message with a tree of demux nodes built
//! from *partial classifiers* that each module supplies. The crate knows no
//! protocol: modules and paths are opaque ids, keys opaque bytes.
//!
//! # Model
//!
//! * A **partial classifier** ([`PartialClassifier`]) is a module's
//!   "extract key k from m" (Figure 3.9): given the message at that module's
//!   header and a [`KeyMode`], it returns the module's partial [`Key`] and
//!   the length of its header. A module without one does not demultiplex:
//!   it contributes the empty key and consumes no bytes.
//! * A **filter** is what one path registers: one [`Level`] (module + key)
//!   per module the classification passes, starting at the receiving module,
//!   all in one mode. Stages register their level one by one along the
//!   establish chain with [`Classifier::register`], passing the
//!   [`DemuxNodeRef`] the previous stage got (`PREVIOUS_DEMUX_NODE`);
//!   [`Classifier::insert`] registers a whole filter at once.
//! * **Demux nodes** live in one hash table keyed by *(previous node, mode,
//!   partial key)*; filters that agree on a prefix share its nodes. Each node
//!   counts the paths it represents, holds the path that ends at it, and
//!   names the next module that refines the decision.
//!
//! # Lookup semantics
//!
//! A filter **matches** a message arriving at module `m` when its first
//! level is at `m` and at every level the key the module extracts (in the
//! filter's mode) equals the filter's key. [`Classifier::classify`] returns:
//!
//! 1. the **longest** (most levels, i.e. *most specific*) matching filter
//!    among *active* filters, if any matches; otherwise
//! 2. the longest matching filter among *passive* filters; otherwise `None`.
//!
//! An active path therefore wins over a passive one whatever their lengths;
//! this is the all-active-or-all-passive restriction of the thesis
//! (§3.4.3.1), which also makes the case of its Table 3.1 (an active
//! connection beneath a listening one on the same port) come out right both
//! ways.
//!
//! Ambiguity is refused when a filter is registered, never resolved at
//! lookup: two paths with the same mode and the same keys at every level
//! ([`ClassifyError::Ambiguous`]), or two paths that agree up to a node and
//! then continue to different modules ([`ClassifyError::NextModuleConflict`]).
//! With these two rules no two filters of one mode can match the same message
//! with equal length, so "the longest" is always unique.
//!
//! A module that transforms data it cannot cheaply undo in a classifier
//! (decryption) stops classification at itself: it registers with
//! `next_module = None` and does not pass `PREVIOUS_DEMUX_NODE` on
//! (thesis §3.4.3.2); its node then carries the path.
//!
//! [`ReferenceClassifier`] implements the same semantics naively (a list of
//! filters); the tests and the fuzz target check that both always agree.
//!
//! # The walks, and what they cost
//!
//! The active and the passive filters form two trees, one node per *(parent,
//! mode, key)*. [`Classifier::classify`] walks the active tree from the
//! receiving module, one edge lookup (a *probe*) per level, remembering the deepest node
//! that has a path, until a key is missing, a partial classifier gives up or
//! no module refines further. Only if that walk found no path does the
//! passive walk run — and it does not probe again the levels both walks share.
//!
//! **Twin invariant.** Every live node `x` knows its *twin*: the live node of
//! the other mode with the same key whose parent is the twin of `x`'s parent
//! (for a first level: which hangs from the same receiving module); `None`
//! if there is none. The registration that creates the second of two twins
//! links them (parents exist before their children, so its parent's twin is
//! already known), freeing a node unlinks it. So along any chain of nodes,
//! the twins form the other mode's chain with the same keys: where the
//! passive keys of a message equal its active keys — a level whose key is
//! mode-independent, like the EtherType, or a pass-through level — the
//! passive walk is at the twin of the active walk's node. It therefore takes
//! each twin of the active walk's chain instead of a probe, after checking
//! that the twin carries exactly the edge *(current passive node, passive
//! key)* it would have probed for (one node compare; the edge table holds
//! one node per edge, so a matching twin *is* the probe's answer). At the
//! first level where the twin is missing or its key differs from the passive
//! key, the walk switches to probing. Correctness never depends on the twins:
//! a twin is only a guess the walk verifies. The active walk leaves the
//! nodes it passes in a trail on the stack (a store a level), so the
//! passive walk reads their twins as it goes down instead of climbing back
//! up the tree first.
//!
//! With `N` levels of which the first `s` have twins that match, a message
//! for a passive path costs the active walk's probes plus `N − s`: **`N + 1`
//! probes** when the active walk misses at level `s + 1` — the common case of
//! a bound socket receiving from a peer it has no connection with — and
//! at most `2N − s` when an active path shares more of the message's keys
//! (the active walk then misses deeper). An active path costs `N` probes; a
//! message that matches nothing costs the active walk's probes plus the
//! passive levels below `s`. The thesis's scheme (§3.4.3.1, Table 3.2:
//! "almost twice as expensive") restarts the passive walk at the root: `2N`.
//!
//! Twins rather than nodes shared by both modes, because a shared node would
//! need a path, a next module and counts per mode (the two trees may end
//! different paths at, and continue to different modules after, the same
//! keys), and the classifier would have to be told which modules' keys are
//! mode-independent. Twins keep the 32-byte node and learn nothing from the
//! modules; a node that has one is marked, and finds it in a sparse map
//! (see `node.rs`) read only when the active walk failed, so nodes without
//! a twin — a path's leaf, usually — cost nothing for them. The passive
//! walk still calls each level's partial classifier in passive mode: only
//! the module knows whether its passive key equals its active key for this
//! message.
//!
//! A probe touches the edge table only below a node with several children:
//! a node with one child names it, and the probe is a compare of that
//! child's edge, a mismatch being a definite miss (most levels of a real
//! stack: one IP node below ETH, one UDP node below a connection's IP
//! node). Probe counts, and the bounds above, count both kinds alike.
//!
//! **Flow table.** Before any walk, [`Classifier::classify`] (and
//! `classify_probes`, `classify_traced`) probes a flow table once: an
//! active path whose every module describes where its key lies
//! ([`PartialClassifier::flow_layout`], [`FlowLayout`]) is found by its keys
//! at fixed offsets of the message, one probe instead of `N`; every other
//! message takes the walks above after that probe. Why a hit is always the
//! walk's answer is argued in `flow.rs`. [`Classifier::classify_with`] and
//! `classify_prefixed` use caller-supplied classifiers the layouts do not
//! describe, so they always walk.
//!
//! **Leafless paths.** An active flow path whose last level would be a
//! new node below another keeps no node for that level: its flow entry
//! stands for it (issue 26: the node, its count and its two table slots
//! were most of a path's heap bytes). The tree stays the authority: the
//! node above carries a mark, and a walk whose probe below a marked node
//! misses asks the flow table for the path with the keys it extracted
//! (a frame the flow probe turned away, such as one with IPv4 options, or
//! `classify_with`); registration finds such a path the same way before
//! it adds a node there (the same keys again are ambiguous; a longer path
//! continuing below gives it its node back first, as does a second chain
//! of the path or a rebuild of the flow table); removal and
//! [`Classifier::path_levels`] find its entry by its id in the flow
//! table's leaf index and read its keys back from the entry. A level
//! registered as the last of a path that way returns the node above it.
//!
//! [`Classifier::classify_traced`] also reports, per level of the path it
//! found, the module and where its header starts and ends in the message
//! ([`Trace`]), so the path's stages need not parse the headers again.
//!
//! # Example
//!
//! The Table 3.1 situation, with toy one-byte headers: a passive path 1
//! listening on port 21 and an active path 2 for one connection to port 21.
//!
//! ```
//! use pathstack_classify::{Classifier, Key, KeyMode, Level, ModuleId, PathId};
//!
//! const IP: ModuleId = ModuleId(1);
//! const UDP: ModuleId = ModuleId(2);
//! // Toy headers: IP = [proto, raddr], UDP = [lport, rport].
//! let mut c = Classifier::new();
//! c.set_partial_classifier(IP, Box::new(|m: &[u8], mode| {
//!     let h = m.get(..2)?;
//!     let key = match mode {
//!         KeyMode::Active => Key::new(h)?,       // protocol and remote address
//!         KeyMode::Passive => Key::new(&h[..1])?, // protocol only
//!     };
//!     Some((key, 2))
//! }))?;
//! c.set_partial_classifier(UDP, Box::new(|m: &[u8], mode| {
//!     let h = m.get(..2)?;
//!     let key = match mode {
//!         KeyMode::Active => Key::new(h)?,
//!         KeyMode::Passive => Key::new(&h[..1])?,
//!     };
//!     Some((key, 2))
//! }))?;
//!
//! c.insert(PathId(1), KeyMode::Passive, &[
//!     Level::demux(IP, Key::from_array([17])),
//!     Level::demux(UDP, Key::from_array([21])),
//! ])?;
//! // The establish chain registers level by level through PREVIOUS_DEMUX_NODE.
//! let ip = c.register(PathId(2), KeyMode::Active, None,
//!     Level::demux(IP, Key::from_array([17, 99])), Some(UDP))?;
//! c.register(PathId(2), KeyMode::Active, Some(ip),
//!     Level::demux(UDP, Key::from_array([21, 49])), None)?;
//!
//! assert_eq!(c.classify(IP, &[17, 99, 21, 49]), Some(PathId(2))); // the connection
//! assert_eq!(c.classify(IP, &[17, 99, 21, 50]), Some(PathId(1))); // same host, other port
//! assert_eq!(c.classify(IP, &[17, 7, 21, 3]), Some(PathId(1)));   // another host
//! assert_eq!(c.classify(IP, &[17, 7, 22, 3]), None);              // nobody listens
//! // 2 active probes (the second misses) + 2 passive: both levels' keys
//! // differ between the modes, so the passive walk cannot use a twin.
//! assert_eq!(c.classify_probes(IP, &[17, 99, 21, 50]), (Some(PathId(1)), 4));
//! // Another host: the active walk misses at once, 1 + 2 probes.
//! assert_eq!(c.classify_probes(IP, &[17, 7, 21, 3]), (Some(PathId(1)), 3));
//!
//! // A second listener on port 21 would be ambiguous.
//! let err = c.insert(PathId(3), KeyMode::Passive, &[
//!     Level::demux(IP, Key::from_array([17])),
//!     Level::demux(UDP, Key::from_array([21])),
//! ]).unwrap_err();
//! assert_eq!(err.to_string(),
//!     "path #3 would make classification ambiguous: path #1 is already classified by the same passive keys");
//!
//! c.remove(PathId(2))?;
//! assert_eq!(c.classify(IP, &[17, 99, 21, 49]), Some(PathId(1)));
//! # Ok::<(), pathstack_classify::ClassifyError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod classifier;
mod error;
mod flow;
mod flow_probe;
mod flow_slots;
mod fold;
mod footprint;
mod hash;
mod header_len;
mod id;
mod key;
mod level;
mod limits;
mod node;
mod partial;
mod reference;
mod trace;

#[cfg(feature = "testing")]
pub mod testing;

pub use classifier::{Classifier, DEFAULT_MAX_NODES};
pub use error::ClassifyError;
pub use flow::{FlowLayout, MAX_GUARDS, MAX_KEY_SPANS};
pub use footprint::Footprint;
pub use header_len::HeaderLen;
pub use id::{KeyMode, ModuleId, PathId};
pub use key::Key;
pub use level::Level;
pub use limits::{MAX_CLASSIFIED_MODULES, MAX_DEPTH};
pub use node::{DemuxNodeInfo, DemuxNodeRef};
pub use partial::PartialClassifier;
pub use reference::ReferenceClassifier;
pub use trace::{Trace, TraceLevel};
