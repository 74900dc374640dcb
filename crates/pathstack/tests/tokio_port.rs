//! The porting goal of the tokio API: a program written for
//! `tokio::net::UdpSocket` runs on pathstack after changing only its `use`
//! line and the sockets' construction. `examples/tokio_echo_port.rs` (on
//! pathstack) and `examples/tokio_echo_twin.rs` (on the kernel) must
//! differ only in the lines marked for it, and both must run.
#![cfg(feature = "tokio")]

#[path = "support/binaries.rs"]
mod binaries;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The source of example `name`, read as text (the examples are programs
/// of their own, not modules of this test).
fn source(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(format!("{name}.rs"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The program without its module docs and the lines marked as the port.
fn unmarked(source: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in source.lines().filter(|l| !l.starts_with("//!")) {
        match line.trim() {
            "// port: begin" => in_block = true,
            "// port: end" => in_block = false,
            _ if in_block || line.ends_with("// port") => {}
            _ => out.push(line),
        }
    }
    out
}

#[test]
fn the_port_changes_only_the_marked_lines() {
    let (ported, twin) = (source("tokio_echo_port"), source("tokio_echo_twin"));
    let (ported, twin) = (unmarked(&ported), unmarked(&twin));
    assert!(ported.len() > 30, "the comparison saw the program");
    for (i, (p, t)) in ported.iter().zip(&twin).enumerate() {
        assert_eq!(p, t, "unmarked line {i} differs");
    }
    assert_eq!(ported.len(), twin.len());
}

#[test]
fn both_programs_run() {
    for name in ["tokio_echo_port", "tokio_echo_twin"] {
        let mut child = Command::new(binaries::example_binary(name))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the example");
        // 1,000 echoes take milliseconds; a hang fails the test, not the suite.
        let deadline = Instant::now() + Duration::from_secs(20);
        while child.try_wait().expect("the example's status").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{name} did not finish in time");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().expect("the example's output");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{name} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(stdout.trim(), "1000 echoes", "{name}'s round trips");
    }
}
