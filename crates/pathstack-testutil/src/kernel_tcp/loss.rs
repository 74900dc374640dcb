//! Random loss of TCP/IPv4 frames in a namespace ([`Loss`], nftables),
//! a guard removed on drop.

use super::ns_exec::{ns_output, run_with_stdin};
use crate::output::text;
use crate::Topology;
use std::sync::atomic::{AtomicU32, Ordering};
// nftables loss

static NEXT_GUARD: AtomicU32 = AtomicU32::new(0);

/// Random loss of TCP/IPv4 frames in a namespace, removed on drop.
///
/// An nftables table of its own (`bridge` family, name unique to this
/// process) drops `percent`% of the TCP/IPv4 frames, chosen at random
/// (`numgen random mod 100 < P`), at the namespace's bridge on all three
/// hooks: frames delivered to the kernel (input), sent by the kernel
/// (output) and forwarded between the bridge's ports (the TAP and the veth
/// to the other namespace). So in namespace A it drops on the wire between
/// a pathstack host on TAP_A and either kernel; in namespace B it drops
/// between kernel B and everything else.
///
/// Dropping at the bridge, after the IP layer handed the frame to the
/// device, is real loss: the sender's TCP believes the segment was sent and
/// must retransmit. (An `inet` output-hook drop is not: the kernel sees a
/// local send error and simply sends the data again later, with no
/// retransmission counted.) Note that the kernel's segments cross veths
/// and bridges as GSO super-packets of up to 64 KB, so between two kernels
/// one random drop can lose many MSS-sized segments at once; frames to and
/// from a TAP are single segments.
pub struct Loss {
    ns: String,
    table: String,
}

impl Loss {
    /// Installs `percent`% (0-100) random TCP loss in namespace `ns_key`.
    pub fn new(topo: &Topology, ns_key: &str, percent: u32) -> Loss {
        Self::install(
            topo,
            ns_key,
            percent,
            "ip protocol tcp ",
            &[
                ("loss_in", "input"),
                ("loss_fwd", "forward"),
                ("loss_out", "output"),
            ],
        )
    }

    /// Installs `percent`% (0-100) random loss of every frame the bridge
    /// of namespace `ns_key` forwards, whatever its EtherType (between the
    /// TAP and the veth, both ways): for protocols other than TCP, such
    /// as the RPC stack's BLAST and BIDCTL directly on Ethernet.
    pub fn any_frame(topo: &Topology, ns_key: &str, percent: u32) -> Loss {
        Self::install(topo, ns_key, percent, "", &[("loss_fwd", "forward")])
    }

    /// An nftables table (family `bridge`) with one chain per hook, each
    /// dropping `percent`% of the frames `matching` selects.
    fn install(
        topo: &Topology,
        ns_key: &str,
        percent: u32,
        matching: &str,
        hooks: &[(&str, &str)],
    ) -> Loss {
        assert!(percent <= 100, "loss percentage {percent} > 100");
        let table = format!(
            "pst_loss_{}_{}",
            std::process::id(),
            NEXT_GUARD.fetch_add(1, Ordering::Relaxed)
        );
        let rule = format!("{matching}numgen random mod 100 < {percent} counter drop");
        let mut script = format!("table bridge {table} {{\n");
        for (chain, hook) in hooks {
            script += &format!(
                "  chain {chain} {{ type filter hook {hook} priority 0; policy accept; {rule}; }}\n"
            );
        }
        script += "}\n";
        // The guard first, so that a half-made table is removed too.
        let guard = Loss {
            ns: topo.var(ns_key).to_string(),
            table,
        };
        let out = run_with_stdin(&guard.ns, &["nft", "-f", "-"], &script);
        assert!(
            out.status.success(),
            "nft could not install the loss table:\n{script}\n{}",
            text(&out)
        );
        guard
    }

    /// Frames dropped so far (all hooks).
    pub fn dropped(&self) -> u64 {
        let out = ns_output(&self.ns, &["nft", "list", "table", "bridge", &self.table]);
        parse_nft_counter_packets(&out)
    }

    /// The name of the nftables table (family `bridge`).
    pub fn table(&self) -> &str {
        &self.table
    }
}

impl Drop for Loss {
    fn drop(&mut self) {
        // If the namespace is already gone, so is the table.
        let _ = std::process::Command::new("ip")
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

/// The sum of the `counter packets N` of an `nft list` output.
fn parse_nft_counter_packets(listing: &str) -> u64 {
    let mut sum = 0;
    let mut words = listing.split_whitespace();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nft_counters_sum() {
        let listing = "table bridge t {
\tchain loss_in {
\t\ttype filter hook input priority filter; policy accept;
\t\tip protocol tcp numgen random mod 100 < 5 counter packets 43 bytes 2296 drop
\t}
\tchain loss_out {
\t\tip protocol tcp numgen random mod 100 < 5 counter packets 62 bytes 748432 drop
\t}
}";
        assert_eq!(parse_nft_counter_packets(listing), 105);
    }
}
