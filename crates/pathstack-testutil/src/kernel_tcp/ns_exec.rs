//! Running a command inside a namespace (`ip netns exec`), for the
//! fixtures that configure or read the kernel there (nftables, sysctl,
//! `ss`, `/proc/net/snmp`).

use crate::output::text;
use std::io::Write;

pub(super) fn run_with_stdin(ns: &str, argv: &[&str], input: &str) -> std::process::Output {
    use std::process::{Command, Stdio};
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {argv:?} in {ns}: {e}"));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait")
}

/// Runs `argv` in namespace `ns` (its name, not key), returns stdout;
/// panics with the output on failure.
pub(super) fn ns_output(ns: &str, argv: &[&str]) -> String {
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .output()
        .unwrap_or_else(|e| panic!("run {argv:?} in {ns}: {e}"));
    assert!(o.status.success(), "{argv:?} in {ns} failed:\n{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}
