//! Finding an example's binary from an integration test, for the tests
//! that run an example as a process (`rpc_host_tap`, `host_accounting`).
//!
//! Included with `#[path = "support/example_bin.rs"] mod example_bin;`.

use std::path::PathBuf;
use std::process::Command;

/// The binary of example `name` beside this test's (`…/deps/..`), built
/// with `cargo build --example NAME` (in the test's profile) when missing.
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("the test runs from target/<profile>/deps");
    let bin = dir.join("examples").join(name);
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut c = Command::new(cargo);
        c.args(["build", "-q", "-p", "pathstack", "--example", name]);
        if dir.ends_with("release") {
            c.arg("--release");
        }
        let st = c.status().expect("run cargo build --example");
        assert!(st.success(), "cargo build --example {name} failed");
    }
    assert!(bin.exists(), "{} was not built", bin.display());
    bin
}
