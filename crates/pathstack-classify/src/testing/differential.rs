//! Runs the demux tree and the reference side by side and reports the
//! first disagreement.

use super::inet::{self, ETH};
use super::ops::{Op, MAX_PATHS};
use crate::{
    Classifier, ClassifyError, Key, ModuleId, PathId, ReferenceClassifier, Trace, MAX_DEPTH,
};

/// The classifier under test and its reference, fed the same operations.
pub struct Differential {
    /// The demux tree, with the inet partial classifiers installed.
    pub tree: Classifier,
    /// The naive reference.
    pub reference: ReferenceClassifier,
    frame: Vec<u8>,
    /// Reused traces of the tree and the reference.
    traces: [Trace; 2],
    /// Lookups the flow table answered (each checked against the
    /// reference), so a test can tell that it exercised the flow table.
    pub flow_hits: u64,
    /// Of those, the passive flows' hits while active flows were filed
    /// beside them (answered after the active probe missed).
    pub shadowed_hits: u64,
    /// The last [`RECENT`] messages looked up and where: each lookup also
    /// classifies them as one burst (`Classifier::classify_burst`), whose
    /// answers must be the one-by-one answers (the reference's).
    recent: Vec<(ModuleId, Vec<u8>)>,
    looked_up: usize,
}

/// Messages a burst check replays (a driver's burst is 32).
const RECENT: usize = 16;

impl Default for Differential {
    fn default() -> Self {
        Self::new()
    }
}

impl Differential {
    /// Both classifiers empty.
    pub fn new() -> Self {
        Self::with_classifiers(|_| {})
    }

    /// Both classifiers empty, the tree's partial classifiers the test
    /// ones with `replace` applied after them: a protocol crate installs
    /// its own classifiers and flow layouts for the modules of
    /// [`inet`] (which must extract as [`inet::extract`] does, the
    /// reference's), so that its layouts are checked against the reference
    /// on the same random registrations and frames.
    pub fn with_classifiers(replace: impl FnOnce(&mut Classifier)) -> Self {
        let mut tree = Classifier::new();
        inet::install(&mut tree);
        replace(&mut tree);
        Differential {
            tree,
            reference: ReferenceClassifier::new(),
            frame: Vec::new(),
            traces: [Trace::new(), Trace::new()],
            flow_hits: 0,
            shadowed_hits: 0,
            recent: Vec::new(),
            looked_up: 0,
        }
    }

    /// Applies `op` to both; `Err` describes a disagreement.
    pub fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Insert { path, filter } => {
                let levels = filter.levels();
                let t = self.tree.insert(*path, filter.mode(), &levels);
                let r = self.reference.insert(*path, filter.mode(), &levels);
                if !same_outcome(&t, &r) {
                    return Err(format!(
                        "insert {path} {filter:?}: tree {t:?}, reference {r:?}"
                    ));
                }
                // A refused insert leaves nothing behind.
                if t.is_err()
                    && !matches!(t, Err(ClassifyError::PathExists { .. }))
                    && self.tree.contains_path(*path)
                {
                    return Err(format!("refused insert of {path} left keys behind"));
                }
            }
            Op::Remove(path) => {
                let t = self.tree.remove(*path);
                let r = self.reference.remove(*path);
                if t != r {
                    return Err(format!("remove {path}: tree {t:?}, reference {r:?}"));
                }
            }
            Op::Lookup(spec) => {
                spec.build_into(&mut self.frame);
                let frame = std::mem::take(&mut self.frame);
                let res = self.lookup(ETH, &frame);
                self.frame = frame;
                res.map_err(|e| format!("{e} for {spec:?}"))?;
            }
            Op::LookupRaw { at, bytes } => self.lookup(*at, bytes)?,
            Op::LookupMutated { spec, flips } => {
                spec.build_into(&mut self.frame);
                let mut frame = std::mem::take(&mut self.frame);
                if !frame.is_empty() {
                    let n = frame.len();
                    for &(at, xor) in flips {
                        frame[usize::from(at) % n] ^= xor;
                    }
                }
                let res = self.lookup(ETH, &frame);
                self.frame = frame;
                res.map_err(|e| format!("{e} for {spec:?} changed by {flips:?}"))?;
            }
        }
        if matches!(op, Op::Insert { .. } | Op::Remove(_)) {
            self.tree
                .check_invariants()
                .map_err(|e| format!("after {op:?}: {e}"))?;
            self.check_path_levels()
                .map_err(|e| format!("after {op:?}: {e}"))?;
        }
        if self.reference.is_empty()
            && (self.tree.node_count() != 0 || self.tree.chain_count() != 0)
        {
            return Err(format!(
                "all paths removed but {} nodes and {} chains remain",
                self.tree.node_count(),
                self.tree.chain_count()
            ));
        }
        Ok(())
    }

    fn lookup(&mut self, at: ModuleId, msg: &[u8]) -> Result<(), String> {
        let (t, probes) = self.tree.classify_probes(at, msg);
        let w = self.tree.classify_with(at, msg, inet::extract);
        let r = self.reference.classify_with(at, msg, inet::extract);
        if t != r || w != r {
            return Err(format!(
                "lookup at {at} of {msg:02x?}: tree {t:?}, tree/with {w:?}, reference {r:?}"
            ));
        }
        // A flow hit is the reference's answer (`flow.rs`); a miss leaves
        // the message to the tree, checked above.
        if let Some(f) = self.tree.classify_flow(at, msg) {
            if Some(f) != r {
                return Err(format!(
                    "flow lookup at {at} of {msg:02x?}: flow table {f}, reference {r:?}"
                ));
            }
            self.flow_hits += 1;
            let [t, _] = &mut self.traces;
            self.tree.classify_traced(at, msg, t);
            if t.mode() == Some(crate::KeyMode::Passive)
                && self.tree.flow_count() > self.tree.passive_flow_count()
            {
                self.shadowed_hits += 1;
            }
        }
        if probes as usize > 2 * MAX_DEPTH {
            return Err(format!("{probes} probes exceed the 2N bound"));
        }
        // The passive walk's twins never cost a probe more than restarting
        // from the root would (thesis §3.4.3.1), and never change the answer.
        let (root, root_probes) = self.tree.classify_probes_from_root(at, msg);
        if root != t || probes > root_probes {
            return Err(format!(
                "lookup at {at} of {msg:02x?}: {probes} probes for {t:?}, restarting from the root {root_probes} for {root:?}"
            ));
        }
        // Tracing sees the same levels as the reference's winning filter.
        let [tree_trace, ref_trace] = &mut self.traces;
        let tt = self.tree.classify_traced(at, msg, tree_trace);
        let rt = self
            .reference
            .classify_traced_with(at, msg, inet::extract, ref_trace);
        if tt != r || rt != r || tree_trace != ref_trace {
            return Err(format!(
                "traced lookup at {at} of {msg:02x?}: tree {tt:?} {tree_trace:?}, reference {rt:?} {ref_trace:?}"
            ));
        }
        let tw = self
            .tree
            .classify_traced_with(at, msg, inet::extract, tree_trace);
        if tw != r || tree_trace != ref_trace {
            return Err(format!(
                "traced lookup (with) at {at} of {msg:02x?}: tree {tw:?} {tree_trace:?}, reference {ref_trace:?}"
            ));
        }
        self.check_burst(at, msg)
    }

    /// `msg` among the recent messages, and the recent messages at `at`
    /// classified as one burst: each answer the reference's.
    fn check_burst(&mut self, at: ModuleId, msg: &[u8]) -> Result<(), String> {
        let slot = self.looked_up % RECENT;
        self.looked_up += 1;
        if let Some(r) = self.recent.get_mut(slot) {
            *r = (at, msg.to_vec());
        } else {
            self.recent.push((at, msg.to_vec()));
        }
        let burst: Vec<&[u8]> = self
            .recent
            .iter()
            .filter(|(m, _)| *m == at)
            .map(|(_, b)| b.as_slice())
            .collect();
        let mut out = vec![Some(PathId(u32::MAX)); burst.len()];
        self.tree.classify_burst(at, &burst, &mut out);
        for (m, got) in burst.iter().zip(&out) {
            let r = self.reference.classify_with(at, m, inet::extract);
            if *got != r {
                return Err(format!(
                    "burst lookup at {at} of {m:02x?}: tree {got:?}, reference {r:?}"
                ));
            }
        }
        Ok(())
    }

    /// Every path's levels read back from the tree are the ones the
    /// reference holds for it (what core's `Demux::classify_from` replays),
    /// flows and tree paths alike, and a removed path has none.
    fn check_path_levels(&self) -> Result<(), String> {
        let mut out = [(ModuleId(0), Key::EMPTY); MAX_DEPTH];
        for p in 0..MAX_PATHS {
            let p = PathId(p);
            let t = self.tree.path_levels(p, &mut out).map(|n| &out[..n]);
            let r = self.reference.path_levels(p);
            if t != r {
                return Err(format!("levels of {p}: tree {t:?}, reference {r:?}"));
            }
        }
        Ok(())
    }

    /// Applies all `ops`, stopping at the first disagreement.
    pub fn run(&mut self, ops: &[Op]) -> Result<(), String> {
        for (i, op) in ops.iter().enumerate() {
            self.apply(op).map_err(|e| format!("op {i}: {e}"))?;
        }
        Ok(())
    }
}

/// Runs each sequence of `runs` on a fresh differential from `make` and
/// sums what `count` reads from each (a hit counter) beside the number of
/// frame lookups the runs made: how a test shows that its random runs
/// reach the case it is about, not only that they agree.
pub fn tally(
    runs: impl IntoIterator<Item = Vec<Op>>,
    make: impl Fn() -> Differential,
    count: impl Fn(&Differential) -> u64,
) -> Result<(u64, u64), String> {
    let (mut hits, mut lookups) = (0, 0);
    for ops in runs {
        lookups += ops
            .iter()
            .filter(|o| matches!(o, Op::Lookup(_) | Op::LookupMutated { .. }))
            .count() as u64;
        let mut d = make();
        d.run(&ops)?;
        hits += count(&d);
    }
    Ok((hits, lookups))
}

/// Whether two insert outcomes agree. For a next-module conflict several
/// installed paths may be "the" conflicting one, so only the modules must match.
fn same_outcome(a: &Result<(), ClassifyError>, b: &Result<(), ClassifyError>) -> bool {
    match (a, b) {
        (
            Err(ClassifyError::NextModuleConflict {
                new: n1,
                existing_next: e1,
                requested: r1,
                ..
            }),
            Err(ClassifyError::NextModuleConflict {
                new: n2,
                existing_next: e2,
                requested: r2,
                ..
            }),
        ) => n1 == n2 && e1 == e2 && r1 == r2,
        _ => a == b,
    }
}
