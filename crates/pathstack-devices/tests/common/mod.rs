//! Shared helpers of the privileged tests: the privilege rule, the netns
//! topology guard, and the tshark check.
#![allow(dead_code)] // each test file uses a different subset

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether this process may create namespaces and TAP devices
/// (CAP_NET_ADMIN, bit 12 of the effective capability set).
pub fn has_net_admin() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << 12) != 0)
}

/// The privilege rule: a privileged test runs, or is skipped *loudly* when
/// PATHSTACK_SKIP_PRIVILEGED=1, or fails. It never passes without running.
pub fn privileged(test: &str) -> bool {
    if has_net_admin() {
        return true;
    }
    if std::env::var("PATHSTACK_SKIP_PRIVILEGED").as_deref() == Ok("1") {
        eprintln!(
            "SKIPPED {test}: needs root (CAP_NET_ADMIN) for network namespaces and TAP \
             devices; skipped because PATHSTACK_SKIP_PRIVILEGED=1"
        );
        return false;
    }
    panic!(
        "{test} needs root (CAP_NET_ADMIN) to create network namespaces and TAP devices.\n\
         Run it as root (e.g. `sudo -E cargo test -p pathstack-devices`, after \
         `sudo scripts/install-deps.sh`), or set PATHSTACK_SKIP_PRIVILEGED=1 to skip it explicitly."
    )
}

/// The repository's `scripts/` directory.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// A topology made by `scripts/netns.sh up`, removed by `down` on drop
/// (also when the test fails).
pub struct Topology {
    pub id: String,
    vars: HashMap<String, String>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl Topology {
    /// Creates a topology with a unique ID: this process's id and a counter.
    pub fn up() -> Topology {
        let id = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let out = Command::new("bash")
            .arg(scripts_dir().join("netns.sh"))
            .args(["up", "--id", &id])
            .output()
            .expect("run scripts/netns.sh");
        // Make the guard first, so a failed `up` is still cleaned up.
        let mut topo = Topology {
            id,
            vars: HashMap::new(),
        };
        assert!(
            out.status.success(),
            "netns.sh up failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((k, v)) = line.split_once('=') {
                topo.vars.insert(k.to_string(), v.to_string());
            }
        }
        topo
    }

    /// A value printed by `netns.sh up` (NS_A, TAP_A, PS_A_IP, KERNEL_B_IP, ...).
    pub fn var(&self, key: &str) -> &str {
        self.vars
            .get(key)
            .unwrap_or_else(|| panic!("netns.sh printed no {key}"))
    }

    /// A command run inside namespace `ns_key` ("NS_A" or "NS_B").
    pub fn command_in(&self, ns_key: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.var(ns_key), program]);
        c
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        let ok = Command::new("bash")
            .arg(scripts_dir().join("netns.sh"))
            .args(["down", "--id", &self.id])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            eprintln!("warning: netns.sh down --id {} failed", self.id);
        }
    }
}

/// A file in the temp dir, unique to this process and a tag, removed on
/// drop (also when the test fails).
pub struct TempFile(PathBuf);

impl TempFile {
    pub fn new(tag: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("pathstack-{}-{tag}", std::process::id())))
    }
}

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

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
/// (the test suite installs it: scripts/install-deps.sh), otherwise skips
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

/// A command's status and output, for assertion messages.
pub fn text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `ping` from namespace B to the user-space host on TAP A (`PS_A_IP`);
/// asserts every request was answered.
pub fn kernel_ping(topo: &Topology, args: &[&str], count: u32) {
    let o = topo
        .command_in("NS_B", "ping")
        .args(["-q", "-W", "2", "-c", &count.to_string()])
        .args(args)
        .arg(topo.var("PS_A_IP"))
        .output()
        .expect("run ping");
    let out = text(&o);
    assert!(o.status.success(), "ping {args:?} failed:\n{out}");
    assert!(
        out.contains(&format!("{count} packets transmitted, {count} received")),
        "ping {args:?} lost replies:\n{out}"
    );
}
