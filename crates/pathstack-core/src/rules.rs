//! Transformation rules: `(guard, transform)` pairs that `path_optimize`
//! applies until no guard holds (thesis §2.4, §3.3.8, ch. 4).
//!
//! The main rule is path-inlining: when a path's module sequence matches a
//! known one and its stages have known concrete types, the dynamically
//! dispatched stages are replaced by one monomorphized executor.
//!
//! ```
//! use pathstack_core::rules::Rule;
//! use pathstack_core::device::DriverStage;
//! use pathstack_core::synthetic::{EchoStage, HdrStage, LinkStage};
//! // ECHO / HDR / HDR / LINK / DRIVER paths run inlined.
//! let rule = Rule::inline::<(EchoStage, HdrStage, HdrStage, LinkStage, DriverStage)>(
//!     "inline echo/hdr/hdr/link/wire",
//!     &["ECHO", "HDR", "HDR", "LINK", "DRIVER"],
//! );
//! assert_eq!(rule.name(), "inline echo/hdr/hdr/link/wire");
//! ```

use crate::error::PathError;
use crate::exec::{DynExec, Exec, Inlined, StageTuple};
use crate::fused::{FastForm, Specialized};
use crate::path::Path;
use crate::stage::Stage;
use crate::vacant_exec::VacantExec;

/// How an executor is built over a path's stages (giving them back when
/// their types do not fit).
type BuildExec = fn(Vec<Box<dyn Stage>>) -> Result<Box<dyn Exec>, Vec<Box<dyn Stage>>>;

/// Why [`RuleTarget::inline`] refused a path: its stages are not of the
/// tuple's types.
#[derive(Debug, thiserror::Error)]
#[error("stage types do not match the inlined sequence {tuple}")]
pub struct StageTypesMismatch {
    /// The stage tuple's type name.
    pub tuple: &'static str,
}

/// What a guard sees of a path.
pub struct RuleView<'a> {
    /// The path.
    pub path: &'a Path,
    /// Module type names of the stages, from `end[0]` to `end[1]`.
    pub module_types: &'a [&'static str],
}

/// What a transform may change in a path.
pub struct RuleTarget<'a> {
    pub(crate) path: &'a mut Path,
}

impl RuleTarget<'_> {
    /// The path.
    pub fn path(&self) -> &Path {
        self.path
    }

    /// Replaces the path's executor with the inlined executor over `T`.
    /// Fails, leaving the path as it was, if the stage types do not match.
    pub fn inline<T: StageTuple>(&mut self) -> Result<(), PathError> {
        self.rebuild(T::into_exec, std::any::type_name::<T>())
    }

    /// Replaces the path's executor with the specialized executor: the
    /// stages `T` inlined, with the fused fast form `F` in front of their
    /// middle ([`Specialized`]). Fails, leaving the path as it was, if the
    /// stage types do not match.
    pub fn specialize<T, F>(&mut self) -> Result<(), PathError>
    where
        T: StageTuple,
        F: FastForm<T>,
        Inlined<T>: Exec,
    {
        self.rebuild(Specialized::<T, F>::build, std::any::type_name::<T>())
    }

    /// Rebuilds the path's executor over its stages with `build`.
    fn rebuild(&mut self, build: BuildExec, tuple: &'static str) -> Result<(), PathError> {
        let exec = std::mem::replace(&mut self.path.exec, Box::new(VacantExec));
        match build(exec.into_stages()) {
            Ok(built) => {
                self.path.exec = built;
                Ok(())
            }
            Err(stages) => {
                self.path.exec = Box::new(DynExec::new(stages));
                Err(PathError::Refused {
                    module: format!("{}", self.path.view.id),
                    source: Box::new(StageTypesMismatch { tuple }),
                })
            }
        }
    }

    /// Puts the path back on the modular, dynamically dispatched executor.
    pub fn deinline(&mut self) {
        if self.path.exec.is_inlined() {
            let exec = std::mem::replace(&mut self.path.exec, Box::new(VacantExec));
            self.path.exec = Box::new(DynExec::new(exec.into_stages()));
        }
    }
}

type Guard = Box<dyn Fn(&RuleView<'_>) -> bool + Send>;
type Transform = Box<dyn Fn(&mut RuleTarget<'_>) -> Result<(), PathError> + Send>;

/// A path transformation rule.
pub struct Rule {
    name: String,
    guard: Guard,
    transform: Transform,
}

impl Rule {
    /// A rule from a guard and a transform. The transform must make the
    /// guard false, or `path_optimize` stops after its iteration bound.
    pub fn new(
        name: impl Into<String>,
        guard: impl Fn(&RuleView<'_>) -> bool + Send + 'static,
        transform: impl Fn(&mut RuleTarget<'_>) -> Result<(), PathError> + Send + 'static,
    ) -> Self {
        Rule {
            name: name.into(),
            guard: Box::new(guard),
            transform: Box::new(transform),
        }
    }

    /// The path-inlining rule for paths whose modules have the types
    /// `module_types` (in order from `end[0]`) and whose stages are the
    /// tuple `T`.
    pub fn inline<T: StageTuple>(name: impl Into<String>, module_types: &[&'static str]) -> Self {
        let seq: Vec<&'static str> = module_types.to_vec();
        Rule::new(
            name,
            move |v| {
                !v.path.is_inlined()
                    && v.module_types == seq.as_slice()
                    && stages_match::<T>(v.path)
            },
            |t| t.inline::<T>(),
        )
    }

    /// The specialization rule for paths whose modules have the types
    /// `module_types` (in order from `end[0]`) and whose stages are the
    /// tuple `T`: their common case runs in the fused fast form `F`, the
    /// rest through the inlined stages ([`Specialized`]). Applies to a
    /// modular or a merely inlined path.
    pub fn specialize<T, F>(name: impl Into<String>, module_types: &[&'static str]) -> Self
    where
        T: StageTuple,
        F: FastForm<T>,
        Inlined<T>: Exec,
    {
        let seq: Vec<&'static str> = module_types.to_vec();
        Rule::new(
            name,
            move |v| {
                !v.path.is_specialized()
                    && v.module_types == seq.as_slice()
                    && stages_match::<T>(v.path)
            },
            |t| t.specialize::<T, F>(),
        )
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn guard(&self, v: &RuleView<'_>) -> bool {
        (self.guard)(v)
    }

    pub(crate) fn apply(&self, t: &mut RuleTarget<'_>) -> Result<(), PathError> {
        (self.transform)(t)
    }
}

fn stages_match<T: StageTuple>(path: &Path) -> bool {
    if path.len() != T::LEN {
        return false;
    }
    // By position, not collected: a rule's guard runs for every path made
    // (issue 28 item 4: a `Vec` per guard was an allocation per path).
    T::matches_at(path.len(), |i| path.exec.stage(i))
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("name", &self.name).finish()
    }
}
