//! Errors of path operations and of building a stack.

use crate::ids::{Dir, ModuleId, PathId};
use std::error::Error as StdError;
use thiserror::Error;

/// A module's own error behind a refused or failed path: kept whole (not
/// as text) so that a caller can downcast it to the module's type, as the
/// socket layer does to tell a port in use from other refusals.
pub type Cause = Box<dyn StdError + Send + Sync>;

/// Why a path operation failed.
#[derive(Debug, Error)]
pub enum PathError {
    /// A module refused to create its stage.
    #[error("module `{module}` refused the path: {source}")]
    Refused {
        /// Instance name of the module.
        module: String,
        /// What was wrong with the request, as the module's own error.
        #[source]
        source: Cause,
    },
    /// A module routed the path through a service that has no connection.
    #[error("module `{module}` routed through service `{service}`, which is not connected")]
    NotConnected {
        /// Instance name.
        module: String,
        /// Service name.
        service: String,
    },
    /// PATHNAME named a module that is not connected to the current one.
    #[error("PATHNAME names `{wanted}`, but `{module}` is not connected to it")]
    PathnameUnreachable {
        /// Instance name where routing stood.
        module: String,
        /// Instance name PATHNAME asked for.
        wanted: String,
    },
    /// The route grew past the stage limit (a routing loop).
    #[error("path exceeds {limit} stages (routing loop through `{module}`?)")]
    TooLong {
        /// The limit.
        limit: usize,
        /// Instance name of the module that would have added one more stage.
        module: String,
    },
    /// A stage's establish callback failed.
    #[error("establishing the stage of `{module}` failed: {source}")]
    Establish {
        /// Instance name.
        module: String,
        /// Why, as the stage's own error.
        #[source]
        source: Cause,
    },
    /// The classifier rejected a registration (it would be ambiguous).
    #[error("demux registration failed: {0}")]
    Demux(String),
    /// A path end cannot be extended (its module makes no routing decision).
    #[error("the {end:?} end of {path} at `{module}` cannot be extended")]
    CannotExtend {
        /// The path.
        path: PathId,
        /// Which end.
        end: Dir,
        /// Instance name at that end.
        module: String,
    },
    /// The path does not exist (deleted, or an id from another stack).
    #[error("no such path: {0}")]
    NoSuchPath(PathId),
    /// The module does not exist.
    #[error("no such module: {0:?}")]
    NoSuchModule(ModuleId),
    /// The stack's path table is full.
    #[error("path table full ({0} paths)")]
    TableFull(usize),
    /// A scheduling-parameter change broke the thesis §3.5.1 rules.
    #[error("scheduling change refused: {0}")]
    Sched(#[from] crate::sched::SchedError),
    /// An operation on a message failed.
    #[error(transparent)]
    Msg(#[from] crate::msg::MsgError),
    /// Admission control refused the path: it would take its class or
    /// the stack past a budget (thesis §5.2.3).
    #[error(transparent)]
    Admission(#[from] crate::admission::AdmissionError),
}

impl PathError {
    /// A [`PathError::Refused`] from a module, for `create_stage`
    /// implementations. `reason` is best the module's own error type; text
    /// (`&str`, `String`) is accepted where no caller needs to tell the
    /// cases apart.
    pub fn refused(module: &str, reason: impl Into<Cause>) -> Self {
        PathError::Refused {
            module: module.to_string(),
            source: reason.into(),
        }
    }

    /// The module's own error behind a [`PathError::Refused`] or
    /// [`PathError::Establish`], if it is an `E`.
    pub fn cause<E: StdError + 'static>(&self) -> Option<&E> {
        match self {
            PathError::Refused { source, .. } | PathError::Establish { source, .. } => {
                source.downcast_ref::<E>()
            }
            _ => None,
        }
    }
}

/// Why a module could not be created or initialized.
#[derive(Debug, Error)]
pub enum ModuleError {
    /// An instance parameter has a bad value.
    #[error("instance `{instance}`: parameter `{key}`: {reason}")]
    BadParam {
        /// Instance name.
        instance: String,
        /// Parameter name.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// The stack was built with no factory for this module type.
    #[error("no implementation registered for module type `{0}`")]
    UnknownType(String),
    /// Initialization failed.
    #[error("initializing `{instance}` failed: {reason}")]
    Init {
        /// Instance name.
        instance: String,
        /// Why.
        reason: String,
    },
    /// A path the module asked for at initialization could not be made.
    #[error("path requested by `{instance}` at initialization: {source}")]
    InitPath {
        /// Instance name.
        instance: String,
        /// The path error.
        #[source]
        source: PathError,
    },
}

/// Why a stack could not be built.
#[derive(Debug, Error)]
pub enum StackError {
    /// The module graph has errors.
    #[error("module graph: {0}")]
    Graph(#[from] crate::graph::GraphErrors),
    /// A module could not be created or initialized.
    #[error(transparent)]
    Module(#[from] ModuleError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Error)]
    #[error("port {0} taken")]
    struct Taken(u16);

    #[test]
    fn a_refusal_keeps_the_modules_error() {
        let e = PathError::refused("udp", Taken(7));
        assert_eq!(e.cause::<Taken>(), Some(&Taken(7)));
        assert_eq!(e.to_string(), "module `udp` refused the path: port 7 taken");
        let source = StdError::source(&e).map(ToString::to_string);
        assert_eq!(source.as_deref(), Some("port 7 taken"));
        // Text is accepted too, but cannot be mistaken for a typed cause.
        assert!(PathError::refused("udp", "no").cause::<Taken>().is_none());
    }

    #[test]
    fn a_failed_establishment_keeps_its_cause() {
        let e = PathError::Establish {
            module: "ip".into(),
            source: Box::new(Taken(9)),
        };
        assert_eq!(e.cause::<Taken>(), Some(&Taken(9)));
        assert!(PathError::NoSuchModule(ModuleId(3))
            .cause::<Taken>()
            .is_none());
    }
}
