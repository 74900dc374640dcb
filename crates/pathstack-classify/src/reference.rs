//! A deliberately naive classifier with the same semantics as
//! [`Classifier`](crate::Classifier): a list of filters, each matched on
//! its own. The proptest and the fuzz target check that both always agree.

use crate::classifier::check_filter;
use crate::trace::Recorder;
use crate::{ClassifyError, Key, KeyMode, Level, ModuleId, PathId, Trace};

/// One installed filter.
#[derive(Clone, Debug)]
struct Filter {
    path: PathId,
    mode: KeyMode,
    levels: Vec<(ModuleId, Key)>,
}

/// The specification the demux tree is checked against: linear in the
/// number of filters and levels, no sharing, no hashing.
///
/// * A filter *matches* a message arriving at module `m` when its first
///   level is `m` and, level by level, the key extracted in the filter's mode
///   equals the filter's key (the empty key for pass-through levels).
/// * The answer is the longest matching active filter, else the longest
///   matching passive filter, else none.
/// * `insert` refuses a filter that has the same mode and levels as an
///   installed one (`Ambiguous`), or that shares its first `d ≥ 1` levels with
///   an installed one of the same mode and then continues to a different
///   module (`NextModuleConflict`); when several apply, the one found at the
///   shallowest level wins, as in the tree's top-down insertion.
#[derive(Clone, Debug, Default)]
pub struct ReferenceClassifier {
    filters: Vec<Filter>,
}

impl ReferenceClassifier {
    /// An empty reference classifier.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of installed filters.
    pub fn len(&self) -> usize {
        self.filters.len()
    }

    /// Whether no filter is installed.
    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The levels `path` registered (a pass-through level's key read as
    /// empty), as [`Classifier::path_levels`](crate::Classifier::path_levels)
    /// gives them back; `None` when `path` has no filter.
    pub fn path_levels(&self, path: PathId) -> Option<&[(ModuleId, Key)]> {
        let f = self.filters.iter().find(|f| f.path == path)?;
        Some(&f.levels)
    }

    /// Installs `path`'s filter, with the same checks and errors as
    /// [`Classifier::insert`](crate::Classifier::insert).
    pub fn insert(
        &mut self,
        path: PathId,
        mode: KeyMode,
        levels: &[Level],
    ) -> Result<(), ClassifyError> {
        check_filter(path, levels)?;
        if self.filters.iter().any(|f| f.path == path) {
            return Err(ClassifyError::PathExists { path });
        }
        let new: Vec<(ModuleId, Key)> = levels
            .iter()
            .map(|l| (l.module, l.key_or_empty()))
            .collect();
        let mut first: Option<(usize, ClassifyError)> = None;
        for g in self.filters.iter().filter(|g| g.mode == mode) {
            let d = new
                .iter()
                .zip(&g.levels)
                .take_while(|(a, b)| a == b)
                .count();
            let found = if d == new.len() && d == g.levels.len() {
                Some((
                    d - 1,
                    ClassifyError::Ambiguous {
                        new: path,
                        existing: g.path,
                        mode,
                    },
                ))
            } else if d >= 1 && d < new.len() && d < g.levels.len() && new[d].0 != g.levels[d].0 {
                Some((
                    d - 1,
                    ClassifyError::NextModuleConflict {
                        new: path,
                        existing: g.path,
                        existing_next: g.levels[d].0,
                        requested: new[d].0,
                    },
                ))
            } else {
                None
            };
            if let Some((depth, e)) = found {
                if first.as_ref().is_none_or(|(d0, _)| depth < *d0) {
                    first = Some((depth, e));
                }
            }
        }
        if let Some((_, e)) = first {
            return Err(e);
        }
        self.filters.push(Filter {
            path,
            mode,
            levels: new,
        });
        Ok(())
    }

    /// Removes `path`'s filter.
    pub fn remove(&mut self, path: PathId) -> Result<(), ClassifyError> {
        let before = self.filters.len();
        self.filters.retain(|f| f.path != path);
        if self.filters.len() == before {
            Err(ClassifyError::UnknownPath { path })
        } else {
            Ok(())
        }
    }

    /// The path for `msg` arriving at `module`; `extract` as in
    /// [`Classifier::classify_with`](crate::Classifier::classify_with).
    pub fn classify_with<E>(&self, module: ModuleId, msg: &[u8], extract: E) -> Option<PathId>
    where
        E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
    {
        self.best(module, msg, &extract).map(|f| f.path)
    }

    /// Like [`classify_with`](Self::classify_with), filling `trace` as
    /// [`Classifier::classify_traced`](crate::Classifier::classify_traced)
    /// does: the winning filter's levels, each with the offset and length
    /// its module's classifier reports in the filter's mode.
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
        let Some(f) = self.best(module, msg, &extract) else {
            trace.finish(None, 0);
            return None;
        };
        let mut offset = 0;
        for (depth, &(m, _)) in f.levels.iter().enumerate() {
            // The filter matched, so every level extracts and fits.
            let (_, used) = extract(m, msg.get(offset..)?, f.mode)?;
            trace.level(depth, m, offset, used);
            offset += used;
        }
        trace.finish(Some(f.mode), f.levels.len());
        Some(f.path)
    }

    /// The longest matching active filter, else the longest passive one.
    fn best<E>(&self, module: ModuleId, msg: &[u8], extract: &E) -> Option<&Filter>
    where
        E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
    {
        [KeyMode::Active, KeyMode::Passive]
            .into_iter()
            .find_map(|mode| {
                self.filters
                    .iter()
                    .filter(|f| f.mode == mode && matches(f, module, msg, extract))
                    .max_by_key(|f| f.levels.len())
            })
    }
}

fn matches<E>(f: &Filter, module: ModuleId, msg: &[u8], extract: &E) -> bool
where
    E: Fn(ModuleId, &[u8], KeyMode) -> Option<(Key, usize)>,
{
    if f.levels[0].0 != module {
        return false;
    }
    let mut rest = msg;
    for &(m, k) in &f.levels {
        let Some((key, used)) = extract(m, rest, f.mode) else {
            return false;
        };
        let Some(next) = rest.get(used..) else {
            return false;
        };
        if key != k {
            return false;
        }
        rest = next;
    }
    true
}
