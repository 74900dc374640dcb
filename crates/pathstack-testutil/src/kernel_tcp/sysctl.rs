//! Per-namespace `net.*` sysctls: set as a guard ([`NsSysctl`], the old
//! value restored on drop) or read ([`ns_sysctl`]).

use super::ns_exec::ns_output;
use crate::Topology;
// sysctl

/// A `net.*` sysctl set inside a namespace (`ip netns exec NS sysctl -w`),
/// its old value restored on drop. Only `net.*` keys: most of them are
/// per-namespace (`net.ipv4.tcp_sack`, `net.ipv4.tcp_timestamps`,
/// `net.ipv4.tcp_window_scaling`, ...), other keys would change the host.
pub struct NsSysctl {
    ns: String,
    key: String,
    old: String,
}

impl NsSysctl {
    /// Sets `key` to `value` in namespace `ns_key`.
    pub fn set(topo: &Topology, ns_key: &str, key: &str, value: &str) -> NsSysctl {
        assert!(
            key.starts_with("net."),
            "NsSysctl sets only net.* keys, not {key}"
        );
        let ns = topo.var(ns_key).to_string();
        let old = sysctl_get(&ns, key);
        ns_output(&ns, &["sysctl", "-q", "-w", &format!("{key}={value}")]);
        NsSysctl {
            ns,
            key: key.to_string(),
            old,
        }
    }

    /// The value before [`NsSysctl::set`], restored on drop.
    pub fn old(&self) -> &str {
        &self.old
    }
}

impl Drop for NsSysctl {
    fn drop(&mut self) {
        let _ = std::process::Command::new("ip")
            .args(["netns", "exec", &self.ns, "sysctl", "-q", "-w"])
            .arg(format!("{}={}", self.key, self.old))
            .output();
    }
}

/// The value of sysctl `key` in namespace `ns_key` (`sysctl -n`, trimmed).
pub fn ns_sysctl(topo: &Topology, ns_key: &str, key: &str) -> String {
    sysctl_get(topo.var(ns_key), key)
}

fn sysctl_get(ns: &str, key: &str) -> String {
    ns_output(ns, &["sysctl", "-n", key]).trim().to_string()
}
