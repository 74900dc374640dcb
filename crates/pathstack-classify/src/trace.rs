//! Where each classified header starts: what a classification learned
//! about the message, kept so the path's stages need not parse it again.
//!
//! The partial classifiers already find every header of the levels they
//! walk (thesis §3.4.3, Figure 3.9: "extract key k from m" returns the rest
//! of the message for the next module). The thesis notes that systems which
//! classify outside the path "cause a duplication of all demultiplexing
//! decisions"; a [`Trace`] hands the header positions to the path instead.

use crate::{KeyMode, ModuleId, MAX_DEPTH};

/// One level of a classification: the module whose header it is, where
/// that header starts in the message and how long its partial classifier
/// said it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceLevel {
    /// The module at this level.
    pub module: ModuleId,
    /// Byte offset of the module's header in the classified message.
    pub offset: usize,
    /// Header length as returned by the module's partial classifier (`0`
    /// for a pass-through module; the whole rest of the message for, e.g.,
    /// an IPv4 fragment).
    pub len: usize,
}

/// The levels of the path a classification found, filled by
/// [`Classifier::classify_traced`](crate::Classifier::classify_traced).
///
/// A fixed array of [`MAX_DEPTH`] levels, so tracing allocates nothing and
/// one `Trace` can be reused for every message.
/// Two traces are equal when their [`levels`](Self::levels) and
/// [`mode`](Self::mode) are.
#[derive(Clone)]
pub struct Trace {
    levels: [TraceLevel; MAX_DEPTH],
    len: usize,
    mode: Option<KeyMode>,
}

impl PartialEq for Trace {
    fn eq(&self, other: &Self) -> bool {
        self.mode == other.mode && self.levels() == other.levels()
    }
}

impl Eq for Trace {}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("mode", &self.mode)
            .field("levels", &self.levels())
            .finish()
    }
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}

impl Trace {
    /// An empty trace.
    pub const fn new() -> Self {
        const EMPTY: TraceLevel = TraceLevel {
            module: ModuleId(0),
            offset: 0,
            len: 0,
        };
        Trace {
            levels: [EMPTY; MAX_DEPTH],
            len: 0,
            mode: None,
        }
    }

    /// The levels of the found path, from the receiving module on: one per
    /// demux node of the path's chain, each with the offset and length its
    /// partial classifier reported in the mode of the path. Empty when no
    /// path was found.
    ///
    /// Levels that are not in the tree (a pass-through module the core left
    /// out) are not listed; the offset of the next level still accounts for
    /// them, as they consume nothing.
    pub fn levels(&self) -> &[TraceLevel] {
        &self.levels[..self.len]
    }

    /// The mode of the found path, or `None` when no path was found.
    pub fn mode(&self) -> Option<KeyMode> {
        self.mode
    }

    /// Offset of the first byte after the last classified header: where
    /// the data for the module after the path's last level starts.
    pub fn end(&self) -> usize {
        self.levels().last().map_or(0, |l| l.offset + l.len)
    }

    /// Empties the trace.
    pub fn clear(&mut self) {
        self.len = 0;
        self.mode = None;
    }
}

/// What a walk reports per level; `()` records nothing and compiles away,
/// so [`Classifier::classify`](crate::Classifier::classify) pays nothing
/// for tracing.
pub(crate) trait Recorder {
    /// Whether [`level`](Self::level) keeps anything, so a caller can skip
    /// working out what it would report.
    const RECORDS: bool = true;
    /// The walk at level `depth` (0 = the receiving module) read `module`'s
    /// header at `offset`, `len` bytes long.
    fn level(&mut self, depth: usize, module: ModuleId, offset: usize, len: usize);
    /// The classification ended: its path (if any) is in `mode` and ends
    /// at level `depth - 1`.
    fn finish(&mut self, mode: Option<KeyMode>, depth: usize);
}

impl Recorder for () {
    const RECORDS: bool = false;
    #[inline(always)]
    fn level(&mut self, _: usize, _: ModuleId, _: usize, _: usize) {}
    #[inline(always)]
    fn finish(&mut self, _: Option<KeyMode>, _: usize) {}
}

impl Recorder for Trace {
    #[inline]
    fn level(&mut self, depth: usize, module: ModuleId, offset: usize, len: usize) {
        // A walk may read one level below the deepest node (the probe that
        // then misses); no node, hence no path, exists below MAX_DEPTH.
        if let Some(slot) = self.levels.get_mut(depth) {
            *slot = TraceLevel {
                module,
                offset,
                len,
            };
        }
    }

    #[inline]
    fn finish(&mut self, mode: Option<KeyMode>, depth: usize) {
        // The passive walk overwrote the active walk's levels as it went,
        // and a path's levels are all at or above its depth.
        self.mode = mode;
        self.len = if mode.is_some() {
            depth.min(MAX_DEPTH)
        } else {
            0
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_then_truncates_to_the_path() {
        let mut t = Trace::new();
        assert!(t.levels().is_empty() && t.mode().is_none() && t.end() == 0);
        t.level(0, ModuleId(1), 0, 14);
        t.level(1, ModuleId(2), 14, 20);
        t.level(2, ModuleId(4), 34, 8);
        t.level(MAX_DEPTH, ModuleId(9), 0, 0); // ignored, no panic
        t.finish(Some(KeyMode::Passive), 2);
        assert_eq!(t.levels().len(), 2);
        assert_eq!(t.levels()[1].module, ModuleId(2));
        assert_eq!((t.mode(), t.end()), (Some(KeyMode::Passive), 34));
        t.finish(None, 3);
        assert!(t.levels().is_empty() && t.mode().is_none());
        t.finish(Some(KeyMode::Active), 1);
        assert_eq!(t.end(), 14);
        t.clear();
        assert!(t.levels().is_empty());
    }
}
