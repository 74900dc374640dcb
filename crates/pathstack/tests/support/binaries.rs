//! Finding the binaries integration tests run as processes: a measurement
//! tool's (`pathstack-tools`, `tools/`: `rpc_host_tap`, `host_accounting`)
//! and an example's (`tokio_port`). Cargo builds a dependency's library
//! for a test, never its binaries, so a missing one is built here.
//!
//! Included with `#[path = "support/binaries.rs"] mod binaries;`.

use std::path::PathBuf;
use std::process::Command;

/// The binary `name` of `pathstack-tools` in this test's profile
/// directory (`target/<profile>/NAME`, the test being in `…/deps`), built
/// with `cargo build -p pathstack-tools --bin NAME` (in the test's
/// profile) when missing.
#[allow(dead_code)]
pub fn tool_binary(name: &str) -> PathBuf {
    built(
        PathBuf::from(name),
        &["-p", "pathstack-tools", "--bin", name],
    )
}

/// The binary of example `name` of `pathstack` (`target/<profile>/examples/NAME`),
/// built with `cargo build -p pathstack --example NAME` when missing.
#[allow(dead_code)]
pub fn example_binary(name: &str) -> PathBuf {
    built(
        PathBuf::from("examples").join(name),
        &["-p", "pathstack", "--example", name],
    )
}

/// `rel` under this test's profile directory, built by `cargo build
/// ARGS` (in the test's profile) when missing.
fn built(rel: PathBuf, args: &[&str]) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("the test runs from target/<profile>/deps");
    let bin = dir.join(rel);
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut c = Command::new(cargo);
        c.args(["build", "-q"]).args(args);
        if dir.ends_with("release") {
            c.arg("--release");
        }
        let st = c.status().expect("run cargo build");
        assert!(st.success(), "cargo build {args:?} failed");
    }
    assert!(bin.exists(), "{} was not built", bin.display());
    bin
}
