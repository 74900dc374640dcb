//! Random loss of every kind of frame (not only TCP, as
//! [`kernel_tcp::Loss`](crate::kernel_tcp::Loss)) on the bridge of one of
//! a [`Topology`]'s namespaces, by nftables.

use crate::output::text;
use crate::Topology;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// An nftables table (family `bridge`) in one namespace that drops
/// `percent`% of the frames the bridge forwards, whatever their
/// EtherType (`numgen random mod 100 < percent`): between the TAP and the
/// veth of that namespace, both ways. Removed on drop.
pub struct FrameLoss {
    ns: String,
    table: String,
}

impl FrameLoss {
    /// Installs the loss in namespace `ns_key` ("NS_A" or "NS_B").
    pub fn new(topo: &Topology, ns_key: &str, percent: u32) -> FrameLoss {
        assert!(percent <= 100, "loss percentage {percent} > 100");
        let table = format!(
            "pst_frame_loss_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let script = format!(
            "table bridge {table} {{\n  chain loss_fwd {{ type filter hook forward priority 0; policy accept; \
             numgen random mod 100 < {percent} counter drop; }}\n}}\n"
        );
        // The guard first, so that a half-made table is removed too.
        let guard = FrameLoss {
            ns: topo.var(ns_key).to_string(),
            table,
        };
        let mut child = Command::new("ip")
            .args(["netns", "exec", &guard.ns, "nft", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run nft");
        child
            .stdin
            .take()
            .expect("nft's stdin")
            .write_all(script.as_bytes())
            .expect("write the nft script");
        let out = child.wait_with_output().expect("wait for nft");
        assert!(
            out.status.success(),
            "nft could not install the loss table:\n{script}\n{}",
            text(&out)
        );
        guard
    }

    /// Frames dropped so far.
    pub fn dropped(&self) -> u64 {
        let out = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "nft",
                "list",
                "table",
                "bridge",
                &self.table,
            ])
            .output()
            .expect("run nft list");
        assert!(out.status.success(), "nft list failed: {}", text(&out));
        let listing = String::from_utf8_lossy(&out.stdout);
        let mut words = listing.split_whitespace();
        let mut sum = 0;
        while let Some(w) = words.next() {
            if w == "packets" {
                sum += words
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
        sum
    }
}

impl Drop for FrameLoss {
    fn drop(&mut self) {
        // If the namespace is already gone, so is the table.
        let _ = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "nft",
                "delete",
                "table",
                "bridge",
                &self.table,
            ])
            .output();
    }
}
