//! The body of the cargo-fuzz target `classify`, also run over the committed
//! corpus by `cargo test` so CI exercises it without nightly.

use super::differential::Differential;
use super::ops::decode;

/// Decodes `data` into operations and packets, runs them against both the
/// demux tree and the reference, and panics on the first disagreement.
pub fn run(data: &[u8]) {
    let ops = decode(data);
    let mut d = Differential::new();
    if let Err(e) = d.run(&ops) {
        panic!("classifier and reference disagree: {e}");
    }
}
