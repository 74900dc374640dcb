//! What can be wrong with a module graph, and where.
//!
//! The thesis (§3.2.3, §3.2.3.1) notes that Scout checked neither service
//! compatibility nor connection counts at build time and left both to module
//! creation at boot; we check everything when the graph is built and report
//! every problem at once, each with the file and line of the items involved.

use std::fmt;

use super::spec::{Count, ServiceType};

/// A position in a graph description.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// The file the text came from, if it came from a file.
    pub file: Option<String>,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column, given for syntax errors where the line alone is vague.
    pub column: Option<u32>,
}

impl Location {
    /// A location at `line` of `file`.
    pub fn new(file: Option<&str>, line: u32) -> Self {
        Location {
            file: file.map(str::to_owned),
            line,
            column: None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{file}:{}", self.line)?,
            None => write!(f, "line {}", self.line)?,
        }
        if let Some(col) = self.column {
            write!(f, ":{col}")?;
        }
        Ok(())
    }
}

/// Joins names for a message, or says "none".
fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// " (lines 3, 4)", " (line 3)" or nothing when no line is known.
fn lines_note(lines: &[u32]) -> String {
    match lines {
        [] => String::new(),
        [one] => format!(" (line {one})"),
        many => {
            let l: Vec<String> = many.iter().map(u32::to_string).collect();
            format!(" (lines {})", l.join(", "))
        }
    }
}

fn first_declared(line: &Option<u32>) -> String {
    match line {
        Some(l) => format!("first declared at line {l}"),
        None => "declared twice".to_owned(),
    }
}

/// The kinds of graph errors, with the items involved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GraphErrorKind {
    /// The text does not follow the `config.graph` grammar.
    #[error("syntax error: {message}")]
    Syntax {
        /// What was expected and what was found.
        message: String,
    },
    /// The graph file could not be read.
    #[error("cannot read graph file: {message}")]
    Io {
        /// The operating system's reason.
        message: String,
    },
    /// An instance name that a connection could not refer to.
    #[error("invalid instance name `{name}` (use letters, digits, `_` and `-`)")]
    InvalidName {
        /// The name as given.
        name: String,
    },
    /// `module=` names a type that is not in the registry.
    #[error("unknown module type `{module}` for instance `{instance}` (known types: {})", list(.known))]
    UnknownModuleType {
        /// The instance being declared.
        instance: String,
        /// The unknown type name.
        module: String,
        /// The types the registry does know.
        known: Vec<String>,
    },
    /// Two instances share a name (the error sits at the second one).
    #[error("duplicate instance `{name}` ({})", first_declared(.first_line))]
    DuplicateInstance {
        /// The shared name.
        name: String,
        /// Line of the first declaration, when known.
        first_line: Option<u32>,
    },
    /// A connection names an instance that was never declared.
    #[error("unknown instance `{name}` in connection `{connection}`")]
    UnknownInstance {
        /// The undeclared name.
        name: String,
        /// The connection as written.
        connection: String,
    },
    /// A connection names a service its module type does not have.
    #[error("unknown service `{instance}.{service}` (module type {module} has services: {})", list(.available))]
    UnknownService {
        /// The instance.
        instance: String,
        /// Its module type.
        module: String,
        /// The unknown service name.
        service: String,
        /// The services the type does have.
        available: Vec<String>,
    },
    /// An instance sets a parameter its module type does not accept.
    #[error("unknown parameter `{key}` for instance `{instance}` (module type {module} accepts: {})", list(.accepted))]
    UnknownParam {
        /// The instance.
        instance: String,
        /// Its module type.
        module: String,
        /// The parameter name.
        key: String,
        /// The parameters the type accepts.
        accepted: Vec<String>,
    },
    /// An instance sets the same parameter twice.
    #[error("parameter `{key}` of instance `{instance}` is given more than once")]
    DuplicateParam {
        /// The instance.
        instance: String,
        /// The parameter name.
        key: String,
    },
    /// An instance lacks a parameter its module type requires.
    #[error("instance `{instance}` of type {module} lacks required parameter `{key}` ({doc})")]
    MissingParam {
        /// The instance.
        instance: String,
        /// Its module type.
        module: String,
        /// The missing parameter.
        key: String,
        /// What the parameter means.
        doc: String,
    },
    /// Each side of a connection must provide what the other expects
    /// (thesis §3.2.3.1, with interface subtyping from §3.3.5).
    #[error("incompatible services: `{a}` is {a_type} but `{b}` is {b_type} (each must provide what the other expects)")]
    IncompatibleServices {
        /// One side, as `instance.service`.
        a: String,
        /// Its `<provides, expects>` type.
        a_type: ServiceType,
        /// The other side.
        b: String,
        /// Its type.
        b_type: ServiceType,
    },
    /// A service has a number of connections its spec does not allow.
    #[error("service `{service}` ({module}) takes {constraint} connection{} but has {actual}{}",
        if matches!(.constraint, Count::AtMostOne | Count::ExactlyOne) { "" } else { "s" },
        lines_note(.lines))]
    ConnectionCount {
        /// The service, as `instance.service`.
        service: String,
        /// The instance's module type.
        module: String,
        /// The declared constraint.
        constraint: Count,
        /// How many connections it has.
        actual: usize,
        /// Lines of those connections, where known.
        lines: Vec<u32>,
    },
    /// The `<` markers ask for an impossible initialization order
    /// (thesis §3.2.3.2: they must form a partial order).
    #[error("cycle in `<` initialization order: {} (each is initialized after the next){}",
        .instances.join(" -> "), lines_note(.lines))]
    InitCycle {
        /// The instances on the cycle, each to be initialized after the next;
        /// the first is repeated at the end.
        instances: Vec<String>,
        /// Lines of the connections forming the cycle, where known.
        lines: Vec<u32>,
    },
}

/// One problem in a module graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphError {
    /// Where it is, when the graph came from text (or the builder was told).
    pub location: Option<Location>,
    /// What it is.
    pub kind: GraphErrorKind,
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: {}", self.kind),
            None => write!(f, "{}", self.kind),
        }
    }
}

impl std::error::Error for GraphError {}

/// Every problem found in a module graph, in source order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphErrors(pub Vec<GraphError>);

impl GraphErrors {
    /// The errors, in source order.
    pub fn iter(&self) -> std::slice::Iter<'_, GraphError> {
        self.0.iter()
    }
    /// How many errors there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Whether there are none (a built graph never returns an empty set).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'a> IntoIterator for &'a GraphErrors {
    type Item = &'a GraphError;
    type IntoIter = std::slice::Iter<'a, GraphError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for GraphErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for GraphErrors {}
