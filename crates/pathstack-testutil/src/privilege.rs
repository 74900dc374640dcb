//! The privilege rule of the tests that need network namespaces and TAP
//! devices: such a test runs, or is skipped *loudly* when
//! `PATHSTACK_SKIP_PRIVILEGED=1`, or fails. It never passes without running.

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

/// The privilege rule for the test named `test`: `true` when it may run;
/// `false`, with a message, when it is skipped because
/// `PATHSTACK_SKIP_PRIVILEGED=1`; panics otherwise.
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
