//! The demux tree (thesis §3.4.3, Figures 3.8, 3.9 and 3.11).

use crate::flow::{FlowMode, FlowTable, Placement};
use crate::flow_probe::Probed;
use crate::hash::{EdgeHasher, NodeTable, MAX_NODES};
use crate::limits::{MAX_CLASSIFIED_MODULES, MAX_DEPTH};
use crate::node::{edge_word, Family, NodeSlab, Probe, EDGE_MASK, NONE, PASSIVE, ROOT};
use crate::trace::Recorder;
use crate::{
    ClassifyError, DemuxNodeInfo, DemuxNodeRef, FlowLayout, Footprint, Key, KeyMode, Level,
    ModuleId, PartialClassifier, PathId, Trace,
};

/// Default bound on live demux nodes (16 Mi nodes = 576 MiB of nodes and
/// path counts), which is also the most a classifier can hold: the edge
/// table names a node in 24 bits.
pub const DEFAULT_MAX_NODES: u32 = MAX_NODES;

/// What a lookup counts its probes into: a `u32` for
/// [`Classifier::classify_probes`], nothing (`()`) for the other lookups,
/// so the walk they inline keeps no counter.
trait Probes {
    fn add(&mut self, n: u32);
}

impl Probes for () {
    #[inline(always)]
    fn add(&mut self, _: u32) {}
}

impl Probes for u32 {
    #[inline(always)]
    fn add(&mut self, n: u32) {
        *self += n;
    }
}

/// Where a walk leaves the nodes it passes: the active walk's, for the
/// passive walk's twins (an array indexed by depth); nowhere for the
/// passive walk (`()`).
trait Trail {
    fn pass(&mut self, depth: usize, node: u32);
}

impl Trail for () {
    #[inline(always)]
    fn pass(&mut self, _: usize, _: u32) {}
}

impl Trail for [u32; MAX_DEPTH] {
    #[inline(always)]
    fn pass(&mut self, depth: usize, node: u32) {
        if let Some(slot) = self.get_mut(depth) {
            *slot = node;
        }
    }
}

/// Where one walk ended.
#[derive(Clone, Copy)]
struct WalkEnd {
    /// Path of the deepest node reached that has one, or `NONE`.
    best: u32,
    /// Depth of that node.
    best_depth: usize,
    /// How many nodes the walk passed (the depth of the deepest).
    depth: usize,
}

/// A chain of nodes one path registered, named by its last node. A path has
/// one chain per direction it is classified in, at most two.
///
/// A *complete* chain (its last level registered with no next module) ends
/// at a node that carries its path, so it is found from the path by the
/// `tails` table of those nodes, and a node says whose tail it is: no
/// chain record is kept. Only a chain still being registered level by
/// level is kept as a record, in `open`.
#[derive(Clone, Copy)]
struct Chain {
    path: u32,
    tail: u32,
}

/// Scout's modular packet classifier: a tree of demux nodes kept in one
/// hash table keyed by *(previous node, mode, partial key)*. See the crate
/// documentation for the exact semantics.
pub struct Classifier {
    slab: NodeSlab,
    /// Demux edges → node index; hashed by `(parent, flags, key)` of the
    /// node. At most 3/4 full: a lookup that misses scans to an empty slot.
    edges: NodeTable,
    /// The first-level nodes below each receiving module, per mode (index
    /// `2 × module + passive`, for modules below [`MAX_CLASSIFIED_MODULES`]):
    /// the only-child shortcut of the nodes (see `node.rs`) for the root,
    /// and a walk from a module nothing is registered at ends unprobed.
    roots: Vec<Family>,
    /// The last nodes of complete chains, hashed by the path id they carry:
    /// what finds a path's chains for exact removal. Read only by
    /// registration, so up to 7/8 full.
    tails: NodeTable,
    /// Chains still being registered (see [`Chain`]); usually empty.
    open: Vec<Chain>,
    hasher: EdgeHasher,
    partials: Vec<Option<Box<dyn PartialClassifier>>>,
    /// Each installed partial classifier's flow layouts, active and
    /// passive, read when it was installed (indexed like `partials`).
    layouts: Vec<[Option<FlowLayout>; 2]>,
    /// Paths with a key and a layout at every level, by their keys where
    /// they lie in a message (`flow.rs`): what `classify` probes first.
    flows: FlowTable,
    max_nodes: u32,
}

impl Default for Classifier {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classifier")
            .field("nodes", &self.slab.live_count())
            .field("chains", &self.chain_count())
            .field("max_nodes", &self.max_nodes)
            .finish()
    }
}

/// Where in `Classifier::roots` the first-level nodes below `module` (in
/// the mode of `flags`) are counted; `None` for modules too large to have
/// a slot, whose first level is always looked up in the table.
#[inline]
fn root_slot(module: u32, flags: u8) -> Option<usize> {
    (module < MAX_CLASSIFIED_MODULES).then(|| 2 * module as usize + usize::from(flags & PASSIVE))
}

/// The edge a node hangs from: its parent (node or receiving module) and flags.
#[inline]
fn edge_of(prev: Option<u32>, module: ModuleId, mode: KeyMode) -> (u32, u8) {
    let m = if mode == KeyMode::Passive { PASSIVE } else { 0 };
    match prev {
        Some(p) => (p, m),
        None => (module.0, m | ROOT),
    }
}

impl Classifier {
    /// An empty classifier bounded to [`DEFAULT_MAX_NODES`] demux nodes.
    pub fn new() -> Self {
        Self::with_max_nodes(DEFAULT_MAX_NODES)
    }

    /// An empty classifier that refuses to grow beyond `max_nodes` nodes
    /// (at most [`DEFAULT_MAX_NODES`], the most the edge table can name).
    pub fn with_max_nodes(max_nodes: u32) -> Self {
        Classifier {
            slab: NodeSlab::default(),
            edges: NodeTable::new(6),
            roots: Vec::new(),
            tails: NodeTable::new(7),
            open: Vec::new(),
            hasher: EdgeHasher::default(),
            partials: Vec::new(),
            layouts: Vec::new(),
            flows: FlowTable::default(),
            max_nodes: max_nodes.min(MAX_NODES),
        }
    }

    /// Installs `module`'s partial classifier, used by [`classify`](Self::classify).
    /// A module without one is a pass-through: empty key, no bytes consumed.
    pub fn set_partial_classifier(
        &mut self,
        module: ModuleId,
        pc: Box<dyn PartialClassifier>,
    ) -> Result<(), ClassifyError> {
        if module.0 >= MAX_CLASSIFIED_MODULES {
            return Err(ClassifyError::ModuleIdTooLarge {
                module,
                max: MAX_CLASSIFIED_MODULES,
            });
        }
        let i = module.0 as usize;
        if self.partials.len() <= i {
            self.partials.resize_with(i + 1, || None);
            self.layouts.resize(i + 1, [None; 2]);
        }
        self.layouts[i] = [pc.flow_layout(), pc.passive_flow_layout()];
        self.partials[i] = Some(pc);
        // Which paths are flows, and how their keys are gathered, may have
        // changed with the layout.
        self.rebuild_flows();
        Ok(())
    }

    /// Number of paths the flow table finds with one probe.
    pub fn flow_count(&self) -> usize {
        self.flows.len()
    }

    /// How many of those are passive paths (found after the active
    /// flows' probe missed).
    pub fn passive_flow_count(&self) -> usize {
        self.flows.passive_len()
    }

    /// `module`'s flow layout: its partial classifier's, or the empty one
    /// of a module without a partial classifier (empty key, no bytes).
    #[cfg(feature = "testing")]
    fn layout(&self, module: ModuleId, passive: bool, root: ModuleId) -> Option<FlowLayout> {
        layout_of(&self.partials, &self.layouts, module, passive, root)
    }

    /// The modules and keys of the chain ending at live node `tail`, from
    /// the receiving module, into `out`; returns how many.
    fn chain_levels(&self, tail: u32, out: &mut [(ModuleId, Key); MAX_DEPTH]) -> usize {
        let depth = usize::from(self.slab.get(tail).depth());
        let mut idx = tail;
        for d in (0..depth).rev() {
            let n = self.slab.get(idx);
            // A node's module is the one its parent names next (the
            // receiving module for a first level).
            let module = if n.flags() & ROOT != 0 {
                n.parent()
            } else {
                self.slab.get(n.parent()).next_module
            };
            out[d] = (ModuleId(module), self.slab.key(idx));
            idx = n.parent();
        }
        depth
    }

    /// How the path ending at `tail` would be filed as a flow, if it ends
    /// a path (`flow.rs`, point 3): active; passive when its first node
    /// has no active twin, so the active walk finds no node for the
    /// receiving module's key (which does not depend on the mode where a
    /// passive flow's layouts apply, [`layout_of`]); shadowed when it has
    /// one, so the active walk may find a path.
    fn flow_mode(&self, tail: u32) -> Option<FlowMode> {
        let n = self.slab.get(tail);
        if n.path == NONE {
            return None;
        }
        if n.flags() & PASSIVE == 0 {
            return Some(FlowMode::Active);
        }
        let mut idx = tail;
        while self.slab.get(idx).flags() & ROOT == 0 {
            idx = self.slab.get(idx).parent();
        }
        Some(if self.slab.twin(idx) == NONE {
            FlowMode::Passive
        } else {
            FlowMode::Shadowed
        })
    }

    /// Files the path ending at `tail` in the flow table if it belongs
    /// there: an active path with a layout at every level whose last node
    /// names no next module, so no longer active path can match its
    /// messages (`flow.rs`, point 2). The caller knows it is not filed.
    fn flow_add(&mut self, tail: u32) {
        let Some(mode) = self.flow_mode(tail) else {
            return;
        };
        if self.slab.get(tail).next_module != NONE {
            return;
        }
        let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
        let depth = self.chain_levels(tail, &mut levels);
        let path = self.slab.get(tail).path;
        let passive = mode.passive();
        if passive && !worth_a_passive_flow(&levels[..depth]) {
            return;
        }
        let (partials, layouts) = (&self.partials, &self.layouts);
        let root = levels[0].0;
        self.flows.insert(
            path,
            &levels[..depth],
            mode,
            |m| layout_of(partials, layouts, m, passive, root),
            &self.hasher,
        );
    }

    /// Takes the path ending at `tail` out of the flow table, if filed.
    fn flow_drop(&mut self, tail: u32) {
        let Some(mode) = self.flow_mode(tail) else {
            return;
        };
        let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
        let depth = self.chain_levels(tail, &mut levels);
        let path = self.slab.get(tail).path;
        self.flows
            .remove(path, &levels[..depth], mode, &self.hasher);
    }

    /// Refiles every path from the tree (after a layout changed, or an
    /// active first node came or went). Leafless paths get their last
    /// node back first: the table is rebuilt from the tree, and with a
    /// layout changed they may be no flows any more. (They stay leafy:
    /// this is rare — a layout installed, the first connection of an
    /// EtherType beside a listener.)
    fn rebuild_flows(&mut self) {
        for p in self.flows.leaf_paths() {
            self.grow_leaf(p);
        }
        self.flows.clear();
        let tails: Vec<u32> = self
            .slab
            .live_indices()
            .filter(|&i| self.slab.get(i).path != NONE)
            .collect();
        for t in tails {
            self.flow_add(t);
        }
    }

    /// Number of live demux nodes.
    pub fn node_count(&self) -> usize {
        self.slab.live_count() as usize
    }

    /// Heap bytes held by the tree (node slab and its side maps, spilled
    /// keys and the tables, from their capacities; the partial classifiers
    /// are not counted).
    pub fn heap_bytes(&self) -> usize {
        self.footprint().total()
    }

    /// [`heap_bytes`](Self::heap_bytes) part by part: where a path's
    /// bytes go.
    pub fn footprint(&self) -> Footprint {
        let (nodes, counts, sparse) = self.slab.footprint();
        Footprint {
            nodes,
            counts,
            sparse,
            edges: self.edges.heap_bytes(),
            tails: self.tails.heap_bytes(),
            open: self.open.capacity() * std::mem::size_of::<Chain>()
                + self.roots.capacity() * std::mem::size_of::<Family>(),
            flows: self.flows.heap_bytes(),
        }
    }

    /// Number of registered chains (one per path and classified direction).
    pub fn chain_count(&self) -> usize {
        self.tails.len() + self.open.len() + self.flows.leaf_len()
    }

    /// Whether `path` has any demux keys registered.
    pub fn contains_path(&self, path: PathId) -> bool {
        self.complete_tail(path.0, self.hasher.path(path.0))
            .is_some()
            || self.open.iter().any(|c| c.path == path.0)
            || self.has_leaf(path.0)
    }

    /// Whether `path` is leafless: its last level is its flow entry.
    fn has_leaf(&self, path: u32) -> bool {
        self.flows.has_leaf(path)
    }

    /// Files the last level of `path`, at `module` with `key` below
    /// active node `parent`, as a leafless flow if it can be one: the
    /// path's only chain, a non-empty key, and a layout at every level.
    /// Returns what `register` returns for it, the node above (there is
    /// no node of its own to name).
    ///
    /// Why (issue 26): most paths of a busy host are connections, each
    /// the one path of its last node, and that node (32 bytes, its path
    /// count, its edge and tails slots over their load factors) held
    /// more than half of a path's bytes. The flow entry already holds
    /// every key of the path, and the flow probe finds the path before
    /// any walk: the tree needs the node only for the walk (which asks
    /// the flow table where a probe misses below a node with the
    /// `LEAFLESS` mark), for removal (the flow table's leaf index finds
    /// the entry by path) and for a longer path continuing below it
    /// (which gives the node back first, `grow_leaf`).
    fn file_leafless(
        &mut self,
        path: PathId,
        parent: u32,
        module: ModuleId,
        key: &Key,
        below: Option<Below>,
    ) -> Option<DemuxNodeRef> {
        // A keyless last level (a stop, thesis §3.4.3.2) keeps its node,
        // which the caller may inspect through the returned reference.
        if key.is_empty() {
            return None;
        }
        let path_hash = self.hasher.path(path.0);
        if self.complete_tail(path.0, path_hash).is_some()
            || self.open.iter().filter(|c| c.path == path.0).count() != 1
        {
            return None;
        }
        let open = self
            .open
            .iter()
            .position(|c| c.path == path.0 && c.tail == parent)?;
        let below = match below {
            Some(b) => b,
            None => self.below(parent, module, key)?,
        };
        let Below {
            levels,
            depth,
            placed,
        } = below;
        let (partials, layouts) = (&self.partials, &self.layouts);
        let root = levels[0].0;
        let filed = self.flows.insert_as(
            path.0,
            &levels[..=depth],
            placed,
            FlowMode::Active,
            |m| layout_of(partials, layouts, m, false, root),
            &self.hasher,
            true,
        );
        if !filed {
            return None;
        }
        self.open.swap_remove(open);
        self.slab.mark_leafless(parent, true);
        Some(DemuxNodeRef(parent))
    }

    /// The levels (module, key) of a complete chain of `path`, from the
    /// receiving module, into `out`; how many, or `None` when `path` has no
    /// complete chain. A level registered without a key reads back as the
    /// empty key (the walk treats both alike). With two chains (one per
    /// direction) the one found first.
    ///
    /// The tree is the record of what a path registered, so a caller that
    /// re-classifies below a module of the path (core's `Demux::
    /// classify_from`: IP reassembly, ICMP errors) reads the keys back here
    /// instead of keeping its own copy per path (issue 26: a path's bytes).
    /// Not per-message: one probe of the tails table and a walk up the
    /// chain; for a leafless path, a probe of the flow table's leaf index
    /// and its entry's keys unfolded.
    pub fn path_levels(
        &self,
        path: PathId,
        out: &mut [(ModuleId, Key); MAX_DEPTH],
    ) -> Option<usize> {
        match self.complete_tail(path.0, self.hasher.path(path.0)) {
            Some(tail) => Some(self.chain_levels(tail, out)),
            None => self.flows.leaf_levels(path.0, out).map(|(n, _)| n),
        }
    }

    /// The node of the active chain of `levels` (from the receiving
    /// module), if the tree has it.
    fn node_at(&self, levels: &[(ModuleId, Key)]) -> Option<u32> {
        let (&(root, ref key), below) = levels.split_first()?;
        let (parent, flags) = edge_of(None, root, KeyMode::Active);
        let mut idx = self.find_edge(parent, flags, key)?;
        for (_, key) in below {
            idx = self.find_edge(idx, 0, key)?;
        }
        Some(idx)
    }

    /// The leafless path whose last level, at `module` with `key`, hangs
    /// below active node `parent`: the flow table's entry for the chain's
    /// keys. Out of line: only a walk that missed below a node with the
    /// [`LEAFLESS`](crate::node) mark, or a registration there, asks.
    #[inline(never)]
    #[cold]
    fn leaf_below(&self, parent: u32, module: ModuleId, key: &Key) -> Option<u32> {
        let below = self.below(parent, module, key)?;
        self.flows.path_at(&below.placed, &self.hasher)
    }

    /// The active chain of levels ending at `module` with `key` below
    /// node `parent`, and where the flow table files it: what a
    /// registration there asks twice — whether a leafless path already
    /// ends there, then where to file its own — worked out once.
    fn below(&self, parent: u32, module: ModuleId, key: &Key) -> Option<Below> {
        let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
        let depth = self.chain_levels(parent, &mut levels);
        *levels.get_mut(depth)? = (module, *key);
        let placed = self.flows.place(&levels[..=depth], FlowMode::Active);
        Some(Below {
            levels,
            depth,
            placed,
        })
    }

    /// Gives leafless `path` its last node back (a leafy flow from now
    /// on), so that the tree alone describes it again: before a
    /// registration continues below its last level or adds a chain to
    /// it, and before the flow table is rebuilt from the tree. Returns
    /// the node.
    fn grow_leaf(&mut self, path: u32) -> Option<u32> {
        let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
        let depth = self.flows.remove_leaf(path, &mut levels, &self.hasher)?;
        let (module, key) = levels[depth - 1];
        let parent = self.node_at(&levels[..depth - 1]);
        debug_assert!(parent.is_some(), "leafless path {path} lost its parent");
        let parent = parent?;
        debug_assert_eq!(self.slab.get(parent).next_module, module.0);
        // Not a first node, so never one that refiles.
        let (idx, _) = self.new_node(parent, 0, depth as u8, &key);
        self.slab.add_path(idx);
        self.reserve_tail();
        self.slab.get_mut(idx).path = path;
        self.tails.insert(self.hasher.path(path), idx);
        self.flow_add(idx);
        Some(idx)
    }

    /// A new node with edge `(parent, flags, key)` at `depth`: in the
    /// edge table, its parent's children, and twinned (no path yet, and
    /// not counted live until the caller adds one: it must, before
    /// anything that may rebuild the edge table from the live nodes).
    /// `true` beside it when the passive flows must be refiled once it
    /// is live.
    fn new_node(&mut self, parent: u32, flags: u8, depth: u8, key: &Key) -> (u32, bool) {
        self.reserve_edge();
        let idx = self.slab.alloc(parent, flags, depth, key);
        let h = self.hasher.edge(&Probe::new(parent, flags, key));
        self.edges.insert(h, idx);
        self.child_changed(parent, flags, idx, true);
        // Keep the twin invariant: parents exist before their
        // children, so whichever of two twins comes second finds
        // the first here, under its parent's twin.
        let mut refile = false;
        if let Some(t) = self.expected_twin(idx) {
            self.slab.link_twins(idx, t);
            // An active first node over a passive one: the active
            // walk may now take the passive flows' messages.
            refile = flags & (ROOT | PASSIVE) == ROOT && self.flows.passive_len() > 0;
        }
        (idx, refile)
    }

    /// The last node of a complete chain of `path` (hashed `h`), if any.
    fn complete_tail(&self, path: u32, h: u64) -> Option<u32> {
        let slab = &self.slab;
        self.tails.find(h, |i| slab.get(i).path == path)
    }

    /// The last nodes of `path`'s complete chains (at most two).
    fn complete_tails(&self, path: u32, h: u64) -> [Option<u32>; 2] {
        let slab = &self.slab;
        let first = self.complete_tail(path, h);
        let second = first.and_then(|f| self.tails.find(h, |i| i != f && slab.get(i).path == path));
        [first, second]
    }

    /// Inspects the node `r` names, or `None` if it has been freed.
    pub fn node(&self, r: DemuxNodeRef) -> Option<DemuxNodeInfo> {
        self.slab.live(r)?;
        Some(self.slab.info(r.0))
    }

    // ----------------------------------------------------------------
    // Lookup
    // ----------------------------------------------------------------

    /// Finds the path for `msg` arriving at `module`, using the installed
    /// partial classifiers. Never allocates; one probe per level for an
    /// active path, `N + 1` for a typical passive one (see the crate docs).
    // Always inlined: a hit is the compiled probe and little else, and as
    // a call of its own its prologue and epilogue were 17 instructions a
    // frame (issue 26 item 5); the miss ways stay out of line.
    #[inline(always)]
    pub fn classify(&self, module: ModuleId, msg: &[u8]) -> Option<PathId> {
        // The module's compiled flow probe first (`flow_probe.rs`): inlined
        // here, and small, so that a hit sets up no more than it uses; the
        // general flow lookup and the walks stay out of line.
        match self.flows.probe(module, msg, &self.hasher) {
            Probed::Hit(p) => Some(PathId(p)),
            Probed::Miss => self.classify_walked(module, msg),
            Probed::General => self.classify_general(module, msg, u32::MAX),
            Probed::Rest(probed) => self.classify_rest(module, msg, probed),
        }
    }

    /// [`classify`](Self::classify) for a burst of messages arriving at
    /// `module`, as a driver receives them (DPDK's `rte_hash_lookup_bulk`,
    /// LDLP's batches): `out[i]` becomes `classify(module, msgs[i])`, for
    /// the first `min(msgs.len(), out.len())` messages. First every
    /// message's flow slot is read (its compiled probe's key hashed, the
    /// home bit and the slot loaded): the loads do not depend on each
    /// other, so the processor has their cache misses in flight together
    /// instead of one after another; the lookups that follow find the
    /// slots in the cache. At a million paths a lookup's slot is a cache
    /// (and TLB) miss; one burst pays about one miss's latency for all of
    /// them (issue 26). Never allocates.
    pub fn classify_burst(&self, module: ModuleId, msgs: &[&[u8]], out: &mut [Option<PathId>]) {
        let mut touched = 0u64;
        for msg in msgs.iter().take(out.len()) {
            touched ^= self.flows.touch(module, msg, &self.hasher);
        }
        // Keeps the loads: their values are not otherwise used.
        std::hint::black_box(touched);
        for (msg, o) in msgs.iter().zip(out.iter_mut()) {
            *o = self.classify(module, msg);
        }
    }

    /// [`classify`](Self::classify) after the miss of the module's first
    /// gather (`probed`): its second by the compiled probe, else the
    /// general flow lookup past the first; then the walks. Out of line:
    /// a listener's or a bound socket's message beside connections.
    #[inline(never)]
    fn classify_rest(&self, module: ModuleId, msg: &[u8], probed: u32) -> Option<PathId> {
        match self.flows.probe_second(module, msg, &self.hasher) {
            Probed::Hit(p) => Some(PathId(p)),
            Probed::Miss => self.classify_walked(module, msg),
            Probed::General | Probed::Rest(_) => self.classify_general(module, msg, probed),
        }
    }

    /// [`classify`](Self::classify) where the module's probe does not
    /// apply or missed with other gathers left (`probed`, the gather it
    /// probed, or `u32::MAX`): the general flow lookup, then the walks.
    #[inline(never)]
    fn classify_general(&self, module: ModuleId, msg: &[u8], probed: u32) -> Option<PathId> {
        if let Some(p) = self.lookup_flow_after(module, msg, &mut (), &mut (), probed) {
            return Some(p);
        }
        self.classify_walked(module, msg)
    }

    /// The walks of [`classify`](Self::classify), out of line: inlined,
    /// their stack frame (the trail of nodes) and the registers they keep
    /// across the partial classifiers' calls were set up and saved on every
    /// call, a flow table hit included (about 45 instructions a frame in
    /// the ping-pong, `docs/design.md`).
    #[inline(never)]
    fn classify_walked(&self, module: ModuleId, msg: &[u8]) -> Option<PathId> {
        self.lookup(module, msg, self.installed(), &mut (), &mut ())
    }

    /// Like [`classify`](Self::classify), also returning how many probes
    /// (edge lookups, by the table or a node's only child) were made, for
    /// checking the probe bounds.
    #[inline]
    pub fn classify_probes(&self, module: ModuleId, msg: &[u8]) -> (Option<PathId>, u32) {
        let mut probes = 0;
        if let Some(p) = self.lookup_flow(module, msg, &mut (), &mut probes) {
            return (Some(p), probes);
        }
        let p = self.lookup(module, msg, self.installed(), &mut (), &mut probes);
        (p, probes)
    }

    /// Like [`classify`](Self::classify), also filling `trace` with the
    /// module, header offset and header length of every level of the path
    /// found (thesis §3.4.3: the partial classifiers have already found
    /// those headers), so the path's stages can skip parsing them again.
    /// Never allocates; `trace` is emptied when no path is found.
    #[inline]
    pub fn classify_traced(
        &self,
        module: ModuleId,
        msg: &[u8],
        trace: &mut Trace,
    ) -> Option<PathId> {
        if let Some(p) = self.lookup_flow(module, msg, trace, &mut ()) {
            return Some(p);
        }
        self.lookup(module, msg, self.installed(), trace, &mut ())
    }

    /// [`classify_traced`](Self::classify_traced) with caller-supplied
    /// partial classifiers, as in [`classify_with`](Self::classify_with).
    #[inline]
    pub fn classify_traced_with<E>(
        &self,
        module: ModuleId,
        msg: &[u8],
        extract: E,
        trace: &mut Trace,
    ) -> Option<PathId>
    where
        E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
    {
        self.lookup(module, msg, extract, trace, &mut ())
    }

    /// Whether `module` has a partial classifier (modules without one
    /// contribute the empty key and consume no bytes).
    pub fn has_partial_classifier(&self, module: ModuleId) -> bool {
        matches!(self.partials.get(module.0 as usize), Some(Some(_)))
    }

    /// Finds the path for `msg` as if it had arrived at `root` with the
    /// headers of the modules in `prefix` already taken off: those modules'
    /// keys are taken from `prefix` instead of from the message, the rest
    /// come from the partial classifiers as in [`classify`](Self::classify).
    ///
    /// For a message a module rebuilt above the receiving end, such as a
    /// datagram IP reassembled from fragments: the trees are rooted at the
    /// receiving module (thesis §3.4), and the link-level keys the fragments
    /// matched are the ones the whole datagram would have matched.
    pub fn classify_prefixed(
        &self,
        root: ModuleId,
        prefix: &[(ModuleId, Key)],
        msg: &[u8],
    ) -> Option<PathId> {
        let partials = &self.partials;
        self.classify_with(root, msg, |m: ModuleId, rest: &[u8], mode| {
            if let Some((_, k)) = prefix.iter().find(|(pm, _)| *pm == m) {
                return Some((*k, 0));
            }
            match partials.get(m.0 as usize) {
                Some(Some(pc)) => pc.extract(rest, mode),
                _ => Some((Key::EMPTY, 0)),
            }
        })
    }

    /// Finds the path for `msg` with partial classifiers supplied by the
    /// caller: `extract(module, rest, mode)` plays
    /// [`PartialClassifier::extract`] for every module, including
    /// pass-through ones (which return `Some((Key::EMPTY, 0))`). Lets the
    /// caller give classifiers per-message context (e.g. the receiving
    /// interface) and lets the compiler inline them.
    #[inline]
    pub fn classify_with<E>(&self, module: ModuleId, msg: &[u8], extract: E) -> Option<PathId>
    where
        E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
    {
        self.lookup(module, msg, extract, &mut (), &mut ())
    }

    /// The installed partial classifiers as one `extract` function.
    #[inline]
    fn installed(&self) -> impl Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)> + '_ {
        let partials = &self.partials;
        move |m: ModuleId, rest: &[u8], mode| match partials.get(m.0 as usize) {
            Some(Some(pc)) => pc.extract(rest, mode),
            _ => Some((Key::EMPTY, 0)),
        }
    }

    /// The flow table's answer for `msg` arriving at `module` (`flow.rs`):
    /// the tree's answer when it is `Some`; `None` sends the message down
    /// the tree. Only for the installed partial classifiers, which the
    /// layouts describe (not for `classify_with`'s).
    #[inline(always)]
    fn lookup_flow<R, P>(
        &self,
        module: ModuleId,
        msg: &[u8],
        rec: &mut R,
        probes: &mut P,
    ) -> Option<PathId>
    where
        R: Recorder,
        P: Probes,
    {
        self.lookup_flow_after(module, msg, rec, probes, u32::MAX)
    }

    /// [`lookup_flow`](Self::lookup_flow) passing over gather `probed`
    /// (`u32::MAX`: none), whose compiled probe missed.
    #[inline(always)]
    fn lookup_flow_after<R, P>(
        &self,
        module: ModuleId,
        msg: &[u8],
        rec: &mut R,
        probes: &mut P,
        probed: u32,
    ) -> Option<PathId>
    where
        R: Recorder,
        P: Probes,
    {
        if self.flows.len() == 0 {
            return None;
        }
        let (hit, probed) = self.flows.lookup_after(module, msg, &self.hasher, probed);
        probes.add(probed);
        let (path, chain) = hit?;
        if R::RECORDS {
            let levels = chain.levels();
            let last = chain.admits(msg).unwrap_or(0);
            for (d, l) in levels.iter().enumerate() {
                let end = levels
                    .get(d + 1)
                    .map_or(usize::from(l.offset) + last, |n| usize::from(n.offset));
                rec.level(
                    d,
                    l.module,
                    usize::from(l.offset),
                    end - usize::from(l.offset),
                );
            }
            let mode = if chain.passive() {
                KeyMode::Passive
            } else {
                KeyMode::Active
            };
            rec.finish(Some(mode), levels.len());
        }
        Some(PathId(path))
    }

    /// The lookup behind every `classify*`: the path, with the levels
    /// recorded in `rec` and the probes counted in `probes`.
    #[inline]
    fn lookup<E, R, P>(
        &self,
        module: ModuleId,
        msg: &[u8],
        extract: E,
        rec: &mut R,
        probes: &mut P,
    ) -> Option<PathId>
    where
        E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
        R: Recorder,
        P: Probes,
    {
        // Active first; any active match beats every passive one, so the
        // passive walk runs only when the active one found no path
        // (thesis §3.4.3.1, all-active or all-passive paths).
        let mut trail = [NONE; MAX_DEPTH];
        let a = self.walk(
            module,
            msg,
            KeyMode::Active,
            &extract,
            &[],
            &mut trail,
            probes,
            rec,
        );
        if a.best != NONE {
            rec.finish(Some(KeyMode::Active), a.best_depth);
            return Some(PathId(a.best));
        }
        self.lookup_passive(module, msg, &extract, rec, probes, &trail[..a.depth])
    }

    /// The passive half of [`lookup`](Self::lookup), out of line: the
    /// active walk, inlined into every caller, stays short, and keeps to
    /// itself the registers a walk needs across the partial classifiers'
    /// calls.
    ///
    /// The passive walk takes over the active walk's prefix instead of
    /// probing it again: the twins of the nodes the active walk passed
    /// (`trail`, from the root) are the passive nodes it reaches wherever
    /// its keys equal the active ones (an EtherType, a pass-through level).
    /// Each is checked against the passive key before it is used, so this
    /// is an optimisation only.
    #[inline(never)]
    fn lookup_passive<E, R, P>(
        &self,
        module: ModuleId,
        msg: &[u8],
        extract: &E,
        rec: &mut R,
        probes: &mut P,
        trail: &[u32],
    ) -> Option<PathId>
    where
        E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
        R: Recorder,
        P: Probes,
    {
        let p = self.walk(
            module,
            msg,
            KeyMode::Passive,
            extract,
            trail,
            &mut (),
            probes,
            rec,
        );
        if p.best != NONE {
            rec.finish(Some(KeyMode::Passive), p.best_depth);
            return Some(PathId(p.best));
        }
        rec.finish(None, 0);
        None
    }

    /// One walk down the tree in one mode (Figure 3.9, iterated instead of
    /// nested). The twin of `twins_of[d]`, where given, is a guess at the
    /// node of depth `d + 1`, taken instead of a probe when it carries
    /// exactly the edge the probe would look up; the first missing twin or
    /// wrong guess ends the guessing (every node below has a parent the
    /// walk cannot be at). The walk leaves the nodes it passes in `trail`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn walk<E, R, P, T>(
        &self,
        module: ModuleId,
        msg: &[u8],
        mode: KeyMode,
        extract: &E,
        mut twins_of: &[u32],
        trail: &mut T,
        probes: &mut P,
        rec: &mut R,
    ) -> WalkEnd
    where
        E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
        R: Recorder,
        P: Probes,
        T: Trail,
    {
        let (root, flags) = edge_of(None, module, mode);
        // The edge word being looked up, but for the key length: the walk
        // keeps it, not parent and flags apart, to spare a register.
        let mut from = edge_word(root, flags, 0);
        let child_flags = u64::from(flags & !ROOT) << 32;
        // Counted locally and added once: a store through `probes` at
        // every level would be one more memory round trip per level.
        let mut probed = 0;
        let mut m = module;
        let mut rest = msg;
        let mut end = WalkEnd {
            best: NONE,
            best_depth: 0,
            depth: 0,
        };
        // The only child of the node the walk is at (see `node.rs`), or
        // `NONE` to look the edge up in the table.
        let mut only = NONE;
        if let Some(f) = root_slot(module.0, flags).map(|i| self.roots.get(i)) {
            match f {
                Some(f) if !f.is_empty() => only = f.only(),
                // Nothing hangs from this module in this mode: the lookup
                // of the first edge can only miss.
                _ => {
                    probes.add(1);
                    return end;
                }
            }
        }
        let slab = &self.slab;
        let mut depth = 0;
        loop {
            // Borrow the key where the partial classifier left it: moving it
            // out would copy it with wider loads than the stores that wrote
            // it, stalling store forwarding on every level.
            let extracted = extract(m, rest, mode);
            let Some((key, used)) = &extracted else {
                break;
            };
            let Some(next_rest) = rest.get(*used..) else {
                break;
            };
            rec.level(depth, m, msg.len() - rest.len(), *used);
            let probe = Probe {
                edge: from | (key.len << 40),
                key,
            };
            let guess = match twins_of.split_first() {
                Some((&active, more)) => {
                    twins_of = more;
                    slab.twin(active)
                }
                None => NONE,
            };
            let idx = match guess {
                // The edge table holds one node per edge, so a guess with
                // this edge is the node the probe would find.
                g if g != NONE && slab.matches(g, &probe) => g,
                _ => {
                    twins_of = &[];
                    // One edge lookup, whether the only child answers it
                    // or the table does.
                    probed += 1;
                    let hit = if only != NONE {
                        // The node's only child: no other edge leaves it,
                        // so a mismatch is a miss.
                        slab.matches(only, &probe).then_some(only)
                    } else {
                        let h = self.hasher.edge(&probe);
                        self.edges.find(h, |i| slab.matches(i, &probe))
                    };
                    let Some(idx) = hit else {
                        // A leafless path's last level is no node: below
                        // an active node marked for one, its flow entry
                        // answers (a message the flow probe missed, such
                        // as one with IPv4 options, or `classify_with`).
                        let at = from as u32;
                        if depth > 0 && child_flags == 0 && slab.has_leafless(at) {
                            if let Some(p) = self.leaf_below(at, m, key) {
                                end.best = p;
                                end.best_depth = depth + 1;
                            }
                        }
                        break;
                    };
                    idx
                }
            };
            trail.pass(depth, idx);
            depth += 1;
            end.depth = depth;
            let n = slab.get(idx);
            if n.path != NONE {
                end.best = n.path;
                end.best_depth = depth;
            }
            if n.next_module == NONE {
                break;
            }
            m = ModuleId(n.next_module);
            from = u64::from(idx) | child_flags;
            only = n.only;
            rest = next_rest;
        }
        probes.add(probed);
        end
    }

    /// The twin of node `r`: the node of the other mode with the same key
    /// below the twin of `r`'s parent (or at the same receiving module).
    /// `None` if there is none or `r` has been freed.
    pub fn twin(&self, r: DemuxNodeRef) -> Option<DemuxNodeRef> {
        self.slab.live(r)?;
        let t = self.slab.twin(r.0);
        (t != NONE).then_some(DemuxNodeRef(t))
    }

    /// The flow table's answer alone (`None` where it would send the
    /// message down the tree), for checking it against the reference.
    #[cfg(feature = "testing")]
    pub fn classify_flow(&self, module: ModuleId, msg: &[u8]) -> Option<PathId> {
        self.lookup_flow(module, msg, &mut (), &mut ())
    }

    /// The lookup without twins: the passive walk probes from the root, as
    /// in thesis §3.4.3.1. For tests that compare probe counts.
    #[cfg(feature = "testing")]
    pub fn classify_probes_from_root(&self, module: ModuleId, msg: &[u8]) -> (Option<PathId>, u32) {
        let mut probes = 0;
        if let Some(p) = self.lookup_flow(module, msg, &mut (), &mut probes) {
            return (Some(p), probes);
        }
        let extract = self.installed();
        let mut walk = |mode| {
            self.walk(
                module,
                msg,
                mode,
                &extract,
                &[],
                &mut (),
                &mut probes,
                &mut (),
            )
            .best
        };
        let mut best = walk(KeyMode::Active);
        if best == NONE {
            best = walk(KeyMode::Passive);
        }
        ((best != NONE).then_some(PathId(best)), probes)
    }

    /// How far the entries of the edge table (`tails == false`) or of the
    /// tails table sit from their home slots: `(entries, mean
    /// displacement, largest)` — what a probe for a present entry scans
    /// past, for checking that the hashes spread real keys.
    #[cfg(feature = "testing")]
    pub fn table_displacements(&self, tails: bool) -> (usize, f64, usize) {
        let (slab, hasher) = (&self.slab, &self.hasher);
        let (n, sum, max) = if tails {
            self.tails
                .displacements(|i| Self::tail_hash(slab, hasher, i))
        } else {
            self.edges
                .displacements(|i| Self::edge_hash(slab, hasher, i))
        };
        (n, sum as f64 / n.max(1) as f64, max)
    }

    /// [`table_displacements`](Self::table_displacements) for the flow
    /// table's gathers.
    #[cfg(feature = "testing")]
    pub fn flow_table_displacements(&self) -> (usize, f64, usize) {
        let (n, sum, max) = self.flows.displacements();
        (n, sum as f64 / n.max(1) as f64, max)
    }

    /// Checks the tree's internal invariants (edge table, counts, twins);
    /// for the differential tests and the fuzz target.
    #[cfg(feature = "testing")]
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut live = 0;
        let mut tails = 0;
        for i in self.slab.live_indices() {
            live += 1;
            let n = self.slab.get(i);
            let key = self.slab.key(i);
            if self.find_edge(n.parent(), n.flags(), &key) != Some(i) {
                return Err(format!("node {i} is not found by its own edge"));
            }
            if n.flags() & ROOT == 0 && self.slab.live(DemuxNodeRef(n.parent())).is_none() {
                return Err(format!("node {i} hangs from a freed parent"));
            }
            // The recorded children, hence the only child, are the live
            // nodes below this one.
            let mut kids = Family::default();
            for c in self.slab.live_indices() {
                let cn = self.slab.get(c);
                if cn.flags() & ROOT == 0 && cn.parent() == i {
                    kids.add(c);
                }
            }
            if kids != self.slab.children(i) || n.only != kids.only() {
                return Err(format!("node {i} has stale children or only child"));
            }
            let want = self.expected_twin(i).unwrap_or(NONE);
            let got = self.slab.twin(i);
            if got != want {
                return Err(format!("node {i} has twin {got}, expected {want}"));
            }
            if got != NONE && self.slab.twin(got) != i {
                return Err(format!("twin of node {i} is not symmetric"));
            }
            // A node that carries a path is the tail of that path's
            // complete chain, found by the path id.
            if n.path != NONE {
                tails += 1;
                if self.tails.find(self.hasher.path(n.path), |t| t == i) != Some(i) {
                    return Err(format!("node {i} ends path {} but is not its tail", n.path));
                }
            }
        }
        if tails != self.tails.len() {
            return Err(format!("{tails} path ends, {} tails", self.tails.len()));
        }
        for c in &self.open {
            if self.slab.live(DemuxNodeRef(c.tail)).is_none() {
                return Err(format!("open chain of path {} at a freed node", c.path));
            }
        }
        if !self.slab.side_maps_consistent() {
            return Err("a side map names a freed node or a node without the property".into());
        }
        for (slot, f) in self.roots.iter().enumerate() {
            let mut kids = Family::default();
            for c in self.slab.live_indices() {
                let cn = self.slab.get(c);
                if cn.flags() & ROOT != 0 && root_slot(cn.parent(), cn.flags()) == Some(slot) {
                    kids.add(c);
                }
            }
            if kids != *f {
                return Err(format!("root slot {slot} has stale children"));
            }
        }
        // The flow table holds exactly the paths that belong there, each
        // under the key a fresh layout gives it.
        let mut flows = 0;
        for i in self.slab.live_indices() {
            let n = self.slab.get(i);
            if n.path == NONE {
                continue;
            }
            let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
            let depth = self.chain_levels(i, &mut levels);
            let levels = &levels[..depth];
            let passive = n.flags() & PASSIVE != 0;
            let layout = |m| self.layout(m, passive, levels[0].0);
            let Some(mode) = self.flow_mode(i) else {
                continue;
            };
            let filed = self
                .flows
                .contains(n.path, levels, mode, layout, &self.hasher);
            let belongs = (!passive || worth_a_passive_flow(levels))
                && n.next_module == NONE
                && crate::flow::FlowPlan::new(levels, layout).is_ok();
            if filed != belongs {
                return Err(format!(
                    "path {} ending at node {i}: in the flow table {filed}, belongs there {belongs}",
                    n.path
                ));
            }
            flows += usize::from(filed);
        }
        // Each leafless path: its only chain, its last level a flow
        // entry below a live active node that is marked for it and names
        // its module next, with no node of its own.
        let leaves = self.flows.leaf_paths();
        for &p in &leaves {
            let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
            let Some((depth, mode)) = self.flows.leaf_levels(p, &mut levels) else {
                return Err(format!("leafless path {p} not found by its path"));
            };
            let (module, key) = levels[depth - 1];
            let parent = (depth >= 2)
                .then(|| self.node_at(&levels[..depth - 1]))
                .flatten();
            let Some(parent) = parent.filter(|_| mode == FlowMode::Active) else {
                return Err(format!("leafless path {p} has no active node above it"));
            };
            if !self.slab.has_leafless(parent)
                || self.slab.get(parent).next_module != module.0
                || self.find_edge(parent, 0, &key).is_some()
            {
                return Err(format!(
                    "leafless path {p}: node {parent} does not lead to it"
                ));
            }
            if self.complete_tail(p, self.hasher.path(p)).is_some()
                || self.open.iter().any(|c| c.path == p)
            {
                return Err(format!("leafless path {p} has another chain"));
            }
            let placed = self.flows.place(&levels[..depth], FlowMode::Active);
            if self.flows.path_at(&placed, &self.hasher) != Some(p) {
                return Err(format!("leafless path {p} not found by its keys"));
            }
        }
        if flows + leaves.len() != self.flows.len() {
            return Err(format!(
                "{flows} flows filed and {} leafless, table holds {}",
                leaves.len(),
                self.flows.len()
            ));
        }
        // The active chains counted at each receiving module are those
        // whose first nodes hang from it.
        let mut chains_at = vec![0u32; self.flows.active_chains().len()];
        for i in self.slab.live_indices() {
            let n = self.slab.get(i);
            if n.flags() & (ROOT | PASSIVE) == ROOT && n.parent() < MAX_CLASSIFIED_MODULES {
                match chains_at.get_mut(n.parent() as usize) {
                    Some(c) => *c += self.slab.num_paths(i),
                    None => return Err(format!("active first node {i} at an uncounted module")),
                }
            }
        }
        if chains_at != self.flows.active_chains() {
            return Err(format!(
                "active chains per module {chains_at:?}, counted {:?}",
                self.flows.active_chains()
            ));
        }
        if live != self.slab.live_count() || live as usize != self.edges.len() {
            return Err(format!(
                "{live} live nodes, live count {}, {} edges",
                self.slab.live_count(),
                self.edges.len()
            ));
        }
        Ok(())
    }

    /// The node with edge `(parent, flags, key)`.
    fn find_edge(&self, parent: u32, flags: u8, key: &Key) -> Option<u32> {
        let probe = Probe::new(parent, flags, key);
        let slab = &self.slab;
        self.edges
            .find(self.hasher.edge(&probe), |i| slab.matches(i, &probe))
    }

    /// The hash live node `idx` is in the edge table under.
    fn edge_hash(slab: &NodeSlab, hasher: &EdgeHasher, idx: u32) -> u64 {
        let n = slab.get(idx);
        let key = slab.key(idx);
        hasher.edge(&Probe {
            edge: n.edge & EDGE_MASK,
            key: &key,
        })
    }

    /// The hash live node `idx`, the tail of a complete chain, is in the
    /// tails table under: its path's.
    fn tail_hash(slab: &NodeSlab, hasher: &EdgeHasher, idx: u32) -> u64 {
        hasher.path(slab.get(idx).path)
    }

    /// Room in the edge table for one more node, rebuilt from the slab if
    /// it has to grow (before the node is allocated, so not counted twice).
    fn reserve_edge(&mut self) {
        if self.edges.is_full() {
            let (slab, hasher) = (&self.slab, &self.hasher);
            let n = self.edges.grown();
            self.edges.rebuild(
                n,
                slab.live_indices()
                    .map(|i| (Self::edge_hash(slab, hasher, i), i)),
            );
        }
    }

    /// Room in the tails table for one more complete chain, rebuilt from
    /// the nodes that carry a path if it has to grow (before the new tail
    /// gets its path, so not counted twice).
    fn reserve_tail(&mut self) {
        if self.tails.is_full() {
            let (slab, hasher) = (&self.slab, &self.hasher);
            let n = self.tails.grown();
            self.tails.rebuild(
                n,
                slab.live_indices()
                    .filter(|&i| slab.get(i).path != NONE)
                    .map(|i| (Self::tail_hash(slab, hasher, i), i)),
            );
        }
    }

    /// The node that should be `idx`'s twin (the twin invariant, in the
    /// crate docs): the other mode's node with the same key, under the twin
    /// of `idx`'s parent or at the same receiving module.
    fn expected_twin(&self, idx: u32) -> Option<u32> {
        let n = self.slab.get(idx);
        let parent = if n.flags() & ROOT != 0 {
            n.parent()
        } else {
            match self.slab.twin(n.parent()) {
                NONE => return None,
                t => t,
            }
        };
        self.find_edge(parent, n.flags() ^ PASSIVE, &self.slab.key(idx))
    }

    // ----------------------------------------------------------------
    // Registration
    // ----------------------------------------------------------------

    /// Registers one level of `path` (Figure 3.8, `updateDemuxNode`): called
    /// by each stage along the establish chain with the node the previous
    /// stage returned (`PREVIOUS_DEMUX_NODE`), or `None` for the first
    /// demultiplexing module (the receiving end).
    ///
    /// `next_module` is the module after `level.module` on the path, or
    /// `None` if classification ends here — at the path's end, or at a
    /// module that stops classification at itself (e.g. one that decrypts)
    /// by not passing `PREVIOUS_DEMUX_NODE` on. When it is `None`, `path`
    /// becomes the path of the returned node — except for a *leafless*
    /// path (an active flow path whose last level, with a non-empty key,
    /// is filed as its flow entry instead of a node; see the crate docs):
    /// then the returned node is the one above that level, and passing it
    /// on is refused with [`ClassifyError::ChainEnded`] as for a last node.
    ///
    /// Refused, with nothing changed, if it would make classification
    /// ambiguous ([`ClassifyError::Ambiguous`],
    /// [`ClassifyError::NextModuleConflict`]) or breaks the chain rules.
    pub fn register(
        &mut self,
        path: PathId,
        mode: KeyMode,
        prev: Option<DemuxNodeRef>,
        level: Level,
        next_module: Option<ModuleId>,
    ) -> Result<DemuxNodeRef, ClassifyError> {
        self.register_level(path, mode, prev, level, next_module, false)
    }

    /// [`register`](Self::register); `new_path` when the caller knows
    /// `path` has no chain at all.
    fn register_level(
        &mut self,
        path: PathId,
        mode: KeyMode,
        prev: Option<DemuxNodeRef>,
        level: Level,
        next_module: Option<ModuleId>,
        new_path: bool,
    ) -> Result<DemuxNodeRef, ClassifyError> {
        if path.0 == NONE || level.module.0 == NONE || next_module.is_some_and(|m| m.0 == NONE) {
            return Err(ClassifyError::ReservedId);
        }
        let path_hash = self.hasher.path(path.0);
        // A leafless path registering again (a second chain, or past its
        // end) gets its last node back: the rules below read the tree. A
        // caller holding the node above it (what its last registration
        // returned) is taken to mean that last node.
        let mut prev = prev;
        if !new_path && self.has_leaf(path.0) {
            if let Some(leaf) = self.grow_leaf(path.0) {
                if prev.is_some_and(|r| r.0 == self.slab.get(leaf).parent()) {
                    prev = Some(DemuxNodeRef(leaf));
                }
            }
        }
        // Mode consistency and the chain being extended. All of a path's
        // chains share its mode, so an open one (the chain being extended,
        // when a filter is registered level by level) answers for all, and
        // the complete ones are looked up only for a new chain or when no
        // open chain tells the mode.
        let mut existing_chains = 0;
        let mut tail_ok = false;
        let mut tails = [NONE; 4];
        if !new_path {
            for c in self.open.iter().filter(|c| c.path == path.0) {
                tails[existing_chains] = c.tail;
                existing_chains += 1;
            }
            if prev.is_none() || existing_chains == 0 {
                for t in self.complete_tails(path.0, path_hash).into_iter().flatten() {
                    tails[existing_chains] = t;
                    existing_chains += 1;
                }
            }
        }
        for &tail in &tails[..existing_chains] {
            let registered = self.slab.info(tail).mode;
            if registered != mode {
                return Err(ClassifyError::MixedModes {
                    path,
                    registered,
                    requested: mode,
                });
            }
            if prev == Some(DemuxNodeRef(tail)) {
                tail_ok = true;
            }
        }
        // A node that carries the path is the tail of its complete chain,
        // which cannot be extended (`ChainEnded`, below).
        if let Some(r) = prev.filter(|_| !tail_ok) {
            tail_ok = self.slab.live(r).is_some_and(|n| n.path == path.0);
        }
        let depth = match prev {
            None => {
                if existing_chains >= 2 {
                    return Err(ClassifyError::TooManyChains { path });
                }
                1
            }
            Some(r) => {
                if !tail_ok {
                    return Err(ClassifyError::NotChainTail { path, node: r });
                }
                let p = self.slab.get(r.0);
                if p.path == path.0 {
                    return Err(ClassifyError::ChainEnded { path });
                }
                if p.next_module != level.module.0 {
                    return Err(ClassifyError::ModuleMismatch {
                        path,
                        expected: ModuleId(p.next_module),
                        got: level.module,
                    });
                }
                if p.depth() as usize >= MAX_DEPTH {
                    return Err(ClassifyError::TooDeep {
                        path,
                        max: MAX_DEPTH,
                    });
                }
                p.depth() + 1
            }
        };

        let key = level.key_or_empty();
        let (parent, flags) = edge_of(prev.map(|r| r.0), level.module, mode);
        let mut found = self.find_edge(parent, flags, &key);
        // A leafless path may end at these keys: the same path again is
        // ambiguous; a longer one needs its last node back first. The
        // chain and its placement are kept for the filing below.
        let mut below = None;
        if found.is_none() && flags == 0 && self.slab.has_leafless(parent) {
            below = self.below(parent, level.module, &key);
            let q = below
                .as_ref()
                .and_then(|b| self.flows.path_at(&b.placed, &self.hasher));
            if let Some(q) = q {
                if next_module.is_none() {
                    return Err(ClassifyError::Ambiguous {
                        new: path,
                        existing: PathId(q),
                        mode,
                    });
                }
                found = self.grow_leaf(q);
            }
        }

        // Check for ambiguity before changing anything.
        if let Some(idx) = found {
            let n = self.slab.get(idx);
            match next_module {
                None if n.path != NONE => {
                    return Err(ClassifyError::Ambiguous {
                        new: path,
                        existing: PathId(n.path),
                        mode,
                    });
                }
                Some(m) if n.next_module != NONE && n.next_module != m.0 => {
                    return Err(ClassifyError::NextModuleConflict {
                        new: path,
                        existing: self.continuing_path(idx),
                        existing_next: ModuleId(n.next_module),
                        requested: m,
                    });
                }
                _ => {}
            }
        } else if self.slab.live_count() as usize + self.flows.leaf_len() >= self.max_nodes as usize
        {
            return Err(ClassifyError::TableFull {
                max_nodes: self.max_nodes,
            });
        }

        // A new active last level below a node: filed as a leafless
        // flow where it can be, its flow entry standing for its node.
        if found.is_none() && next_module.is_none() && prev.is_some() && flags == 0 {
            if let Some(r) = self.file_leafless(path, parent, level.module, &key, below) {
                return Ok(r);
            }
        }
        let (idx, refile) = match found {
            Some(idx) => (idx, false),
            None => self.new_node(parent, flags, depth, &key),
        };
        self.slab.add_path(idx);
        if refile {
            self.rebuild_flows();
        }
        if flags & (ROOT | PASSIVE) == ROOT {
            self.flows.count_active_chain(ModuleId(parent), true);
        }
        // The chain record: a chain that is still open moves its tail down;
        // one that ends here is found by its tail's path from now on.
        let open = prev.and_then(|r| {
            self.open
                .iter()
                .position(|c| c.path == path.0 && c.tail == r.0)
        });
        match next_module {
            None => {
                if let Some(i) = open {
                    self.open.swap_remove(i);
                }
                self.reserve_tail();
                self.slab.get_mut(idx).path = path.0;
                self.tails.insert(path_hash, idx);
                self.flow_add(idx);
            }
            Some(m) => {
                // A path ending here now has a longer one below it: its
                // messages may belong to that one, so it is no flow now.
                let n = self.slab.get(idx);
                if n.path != NONE && n.next_module == NONE {
                    self.flow_drop(idx);
                }
                self.slab.get_mut(idx).next_module = m.0;
                match open {
                    Some(i) => self.open[i].tail = idx,
                    None => self.open.push(Chain {
                        path: path.0,
                        tail: idx,
                    }),
                }
            }
        }
        Ok(DemuxNodeRef(idx))
    }

    /// Registers a whole filter for `path` at once: `levels[0]` is the
    /// receiving module, each later level the next module on the path.
    /// All-or-nothing: on error nothing of `path` stays registered.
    pub fn insert(
        &mut self,
        path: PathId,
        mode: KeyMode,
        levels: &[Level],
    ) -> Result<(), ClassifyError> {
        check_filter(path, levels)?;
        if self.contains_path(path) {
            return Err(ClassifyError::PathExists { path });
        }
        let mut prev = None;
        for (i, level) in levels.iter().enumerate() {
            let next = levels.get(i + 1).map(|l| l.module);
            // The path has no chain yet (checked above), so the first
            // level need not look for one again.
            match self.register_level(path, mode, prev, *level, next, i == 0) {
                Ok(r) => prev = Some(r),
                Err(e) => {
                    // Roll back the levels already registered.
                    let _ = self.remove(path);
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Removes every demux key `path` registered: decrements the counts
    /// along each of its chains and frees nodes no path uses any more.
    pub fn remove(&mut self, path: PathId) -> Result<(), ClassifyError> {
        let path_hash = self.hasher.path(path.0);
        // A leafless path: its flow entry out, then its chain from the
        // node above it up.
        if self.flows.leaf_len() > 0 {
            let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
            if let Some(depth) = self.flows.remove_leaf(path.0, &mut levels, &self.hasher) {
                let parent = self.node_at(&levels[..depth - 1]);
                debug_assert!(parent.is_some(), "leafless path {path} lost its parent");
                if let Some(parent) = parent {
                    if self.unwind(Chain {
                        path: path.0,
                        tail: parent,
                    }) {
                        self.rebuild_flows();
                    }
                }
                return Ok(());
            }
        }
        let mut chains = [None; 4];
        let mut n = 0;
        // Complete chains leave the tails table, each taken out of the slot
        // it is found in, while their tails still carry the path (what the
        // table's backward shift rehashes by).
        while n < 2 {
            let (slab, hasher) = (&self.slab, &self.hasher);
            let Some(slot) = self
                .tails
                .find_slot(path_hash, |i| slab.get(i).path == path.0)
            else {
                break;
            };
            let tail = self
                .tails
                .remove_at(slot, |i| Self::tail_hash(slab, hasher, i));
            // Out of the flow table while the tail still carries the path.
            self.flow_drop(tail);
            chains[n] = Some(Chain { path: path.0, tail });
            n += 1;
        }
        while let Some(i) = self.open.iter().position(|c| c.path == path.0) {
            // At most two chains per path (`TooManyChains`).
            chains[n] = Some(self.open.swap_remove(i));
            n += 1;
        }
        if n == 0 {
            return Err(ClassifyError::UnknownPath { path });
        }
        // Complete chains first: an open chain may stop at the node where
        // a complete one of the same path ends, whose path is then cleared.
        let mut refile = false;
        for chain in chains.into_iter().flatten() {
            refile |= self.unwind(chain);
        }
        if refile {
            self.rebuild_flows();
        }
        Ok(())
    }

    /// `child`, hanging from `parent` with `flags`, was added (`add`) or is
    /// being freed: keeps the parent's (or receiving module's) only child.
    fn child_changed(&mut self, parent: u32, flags: u8, child: u32, add: bool) {
        if flags & ROOT == 0 {
            self.slab.child_changed(parent, child, add);
        } else if let Some(i) = root_slot(parent, flags) {
            if self.roots.len() <= i {
                self.roots.resize(i + 1, Family::default());
            }
            self.roots[i].changed(child, add);
        }
    }

    /// Walks one chain from its tail up to the root, undoing its
    /// registrations; `true` if it freed an active first node with a
    /// passive twin, whose passive paths may be flows now (the caller
    /// refiles them once every chain is unwound).
    fn unwind(&mut self, chain: Chain) -> bool {
        let mut refile = false;
        let mut idx = chain.tail;
        loop {
            let n = self.slab.get_mut(idx);
            let (parent, flags) = (n.parent(), n.flags());
            if idx == chain.tail && n.path == chain.path {
                n.path = NONE;
            }
            if flags & (ROOT | PASSIVE) == ROOT {
                self.flows.count_active_chain(ModuleId(parent), false);
            }
            if self.slab.drop_path(idx) == 0 {
                let (slab, hasher) = (&self.slab, &self.hasher);
                let h = Self::edge_hash(slab, hasher, idx);
                let removed = self
                    .edges
                    .remove(h, idx, |i| Self::edge_hash(slab, hasher, i));
                debug_assert!(removed, "node {idx} missing from the edge table");
                self.child_changed(parent, flags, idx, false);
                refile |= flags & (ROOT | PASSIVE) == ROOT && self.slab.twin(idx) != NONE;
                self.slab.free(idx);
            } else if self.slab.continuing(idx) == 0 {
                self.slab.get_mut(idx).next_module = NONE;
                // No path continues below: no leafless one either.
                self.slab.mark_leafless(idx, false);
                // A path ending here has no longer one below it any more.
                if self.slab.get(idx).path != NONE {
                    self.flow_add(idx);
                }
            }
            if flags & ROOT != 0 {
                break refile;
            }
            idx = parent;
        }
    }

    /// Some path that continues below node `idx` (for naming it in an
    /// error). Only runs on the error path, so a scan is fine.
    fn continuing_path(&self, idx: u32) -> PathId {
        let complete = self.slab.live_indices().filter_map(|i| {
            let path = self.slab.get(i).path;
            (path != NONE).then_some(Chain { path, tail: i })
        });
        // A leafless path continues below the node above its entry.
        let leaves = self.flows.leaf_paths().into_iter().filter_map(|p| {
            let mut levels = [(ModuleId(NONE), Key::EMPTY); MAX_DEPTH];
            let (depth, _) = self.flows.leaf_levels(p, &mut levels)?;
            let tail = self.node_at(&levels[..depth.checked_sub(1)?])?;
            Some(Chain { path: p, tail })
        });
        for c in complete.chain(self.open.iter().copied()).chain(leaves) {
            let mut i = c.tail;
            let mut at_tail = true;
            loop {
                let n = self.slab.get(i);
                if i == idx && !(at_tail && n.path == c.path) {
                    return PathId(c.path);
                }
                if n.flags() & ROOT != 0 {
                    break;
                }
                i = n.parent();
                at_tail = false;
            }
        }
        PathId(NONE)
    }
}

/// Fewest keyed levels a passive path needs to be filed as a flow.
///
/// A passive flow's gather is probed by every message that reaches its
/// receiving module, and most of a host's passive paths are short (ARP's
/// EtherType, IP's protocol paths to ICMP): there the probe saves a walk
/// of one or two levels to the few messages that take it and costs one
/// probe to all the others (a UDP round trip paid about 170 instructions
/// more with them filed). A listener or an RPC path three or more levels
/// deep saves a probe per level beyond that.
const MIN_PASSIVE_FLOW_LEVELS: usize = 3;

/// Whether a passive chain of `levels` is deep enough to be filed.
fn worth_a_passive_flow(levels: &[(ModuleId, Key)]) -> bool {
    levels.iter().filter(|(_, k)| !k.is_empty()).count() >= MIN_PASSIVE_FLOW_LEVELS
}

/// `module`'s flow layout for a path of the given mode among `partials`
/// and their `layouts`: the partial classifier's, or the empty one of a
/// module without one. For a passive path, the receiving module `root`
/// has one only where its passive layout is its active one: then a
/// message the layout applies to has the same key in both modes, and
/// whether an active node has that key tells whether the active walk can
/// find anything (`flow.rs`, point 3).
fn layout_of(
    partials: &[Option<Box<dyn PartialClassifier>>],
    layouts: &[[Option<FlowLayout>; 2]],
    module: ModuleId,
    passive: bool,
    root: ModuleId,
) -> Option<FlowLayout> {
    match partials.get(module.0 as usize) {
        Some(Some(_)) => {
            let [active, passive_layout] = *layouts.get(module.0 as usize)?;
            if !passive {
                active
            } else if module == root {
                passive_layout.filter(|p| Some(*p) == active)
            } else {
                passive_layout
            }
        }
        _ => Some(FlowLayout::PASS_THROUGH),
    }
}

/// The checks `insert` makes before touching the tree (shared with the
/// reference so both refuse the same filters in the same order).
pub(crate) fn check_filter(path: PathId, levels: &[Level]) -> Result<(), ClassifyError> {
    if path.0 == NONE || levels.iter().any(|l| l.module.0 == NONE) {
        return Err(ClassifyError::ReservedId);
    }
    if levels.is_empty() {
        return Err(ClassifyError::EmptyChain { path });
    }
    if levels.len() > MAX_DEPTH {
        return Err(ClassifyError::TooDeep {
            path,
            max: MAX_DEPTH,
        });
    }
    Ok(())
}

/// A chain of levels below a node and its flow placement
/// ([`Classifier::below`]).
struct Below {
    levels: [(ModuleId, Key); MAX_DEPTH],
    depth: usize,
    placed: Placement,
}
