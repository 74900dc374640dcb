//! The module graph: module instances and the connections between their
//! services (thesis §3.2.3), built with a Rust builder or from a text file in
//! Scout's `config.graph` syntax, and checked completely at build time.

pub mod spec;
