//! tshark's verdict on a pcap capture: an independent dissector checks
//! that every frame we wrote is well formed and every checksum verifies.

use crate::privilege::has_net_admin;
use std::path::Path;
use std::process::Command;

/// Whether tshark is installed.
pub fn have_tshark() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// tshark's view of a capture: runs `tshark -r FILE` with checksum
/// validation on and the display filter `filter`, returning the matching
/// frame numbers. Fails the test if tshark cannot read the file.
pub fn tshark_frames(path: &Path, filter: &str) -> Vec<u32> {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args([
            "-n",
            // Heuristic dissectors guess an application protocol from the
            // payload; the tests' random payloads sometimes look like
            // Thrift and are then reported malformed. The check is about
            // the headers we build, so those guesses are turned off.
            "--disable-heuristic",
            "thrift_tcp",
            "--disable-heuristic",
            "thrift_udp",
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-Y",
            filter,
            "-T",
            "fields",
            "-e",
            "frame.number",
        ])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark -r {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Asserts tshark reads `path` with no malformed frame and no bad checksum;
/// returns the number of frames. When tshark is absent: fails under root
/// (the test suite installs it: `scripts/install-deps.sh`), otherwise skips
/// this check with a message and returns None.
pub fn assert_tshark_clean(path: &Path) -> Option<usize> {
    if !have_tshark() {
        if has_net_admin() {
            panic!("tshark is not installed; run scripts/install-deps.sh (we are root, so the check must run)");
        }
        eprintln!(
            "SKIPPED tshark check of {}: tshark not installed and not root",
            path.display()
        );
        return None;
    }
    let all = tshark_frames(path, "frame");
    let malformed = tshark_frames(path, "_ws.malformed || _ws.expert.severity >= error");
    assert!(
        malformed.is_empty(),
        "malformed frames in {}: {malformed:?}",
        path.display()
    );
    let bad = tshark_frames(
        path,
        r#"ip.checksum.status == "Bad" || udp.checksum.status == "Bad" || icmp.checksum.status == "Bad""#,
    );
    assert!(
        bad.is_empty(),
        "bad checksums in {}: {bad:?}",
        path.display()
    );
    Some(all.len())
}
