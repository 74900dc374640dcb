//! The porting goal of the tokio API: a program written for
//! `tokio::net::UdpSocket` runs on pathstack after changing only its `use`
//! line and the sockets' construction. `examples/tokio_echo_port.rs` (on
//! pathstack) and `examples/tokio_echo_twin.rs` (on the kernel) must
//! differ only in the lines marked for it, and both must run.
#![cfg(feature = "tokio")]

#[allow(dead_code)]
#[path = "../../../examples/tokio_echo_port.rs"]
mod ported;

#[allow(dead_code)]
#[path = "../../../examples/tokio_echo_twin.rs"]
mod twin;

const PORTED: &str = include_str!("../../../examples/tokio_echo_port.rs");
const TWIN: &str = include_str!("../../../examples/tokio_echo_twin.rs");

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
    let (ported, twin) = (unmarked(PORTED), unmarked(TWIN));
    assert!(ported.len() > 30, "the comparison saw the program");
    for (i, (p, t)) in ported.iter().zip(&twin).enumerate() {
        assert_eq!(p, t, "unmarked line {i} differs");
    }
    assert_eq!(ported.len(), twin.len());
}

#[tokio::test]
async fn both_programs_run() {
    let limit = std::time::Duration::from_secs(20);
    let n = tokio::time::timeout(limit, ported::run(200)).await;
    assert_eq!(n.expect("pathstack echo in time").unwrap(), 200);
    let n = tokio::time::timeout(limit, twin::run(200)).await;
    assert_eq!(n.expect("kernel echo in time").unwrap(), 200);
}
