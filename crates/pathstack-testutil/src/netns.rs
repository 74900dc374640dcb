//! Network-namespace topologies made by the repository's
//! `scripts/netns.sh`, and the kernel's `ping` run inside them.

use crate::output::text;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The repository's `scripts/` directory.
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts")
}

/// A topology made by `scripts/netns.sh up`, removed by `down` on drop
/// (also when the test fails).
pub struct Topology {
    /// The topology's unique ID (`netns.sh --id`).
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
