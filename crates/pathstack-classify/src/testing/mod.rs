//! Test support (feature `testing`): Ethernet/IPv4/TCP/UDP partial
//! classifiers, a packet builder, filter and operation descriptions, and the
//! differential harness that runs the [`Classifier`](crate::Classifier)
//! against the [`ReferenceClassifier`](crate::ReferenceClassifier).
//!
//! The protocol knowledge here exists only so tests, the fuzz target and
//! the benchmark have realistic headers; the real protocol modules supply
//! their own partial classifiers.

pub mod differential;
pub mod fuzz;
pub mod inet;
pub mod ops;
pub mod packet;
