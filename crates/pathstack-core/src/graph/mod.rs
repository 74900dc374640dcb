//! The module graph: module instances and the connections between their
//! services (thesis §3.2.3), built with a Rust builder ([`GraphBuilder`]) or
//! from a text file in Scout's `config.graph` syntax
//! ([`ModuleGraph::from_file`]), and checked completely at build time:
//! module types, instance names and parameters, services, service
//! compatibility, connection counts and the `<` initialization order.
//! The text syntax is documented in `graphs/README.md` in the repository.

mod builder;
mod dot;
mod error;
mod init_order;
mod module_graph;
pub mod spec;
mod text;
mod typed;

pub use builder::{GraphBuilder, InstanceBuilder, ServiceRef};
pub use error::{GraphError, GraphErrorKind, GraphErrors, Location};
pub use module_graph::{Connection, Instance, InstanceId, Link, ModuleGraph};
pub use typed::InstanceParams;
