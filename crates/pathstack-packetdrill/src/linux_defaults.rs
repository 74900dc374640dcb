//! The Linux settings packetdrill's scripts assume, as a [`TcpConfig`].
//!
//! The kernel selftests run every script after `defaults.sh`, which sets
//! sysctls. Those that are TCP behaviour map onto the connection's
//! configuration here; the shim ignores the `sysctl` commands themselves
//! (packetdrill runs them in the shell, where they change the kernel, not
//! pathstack — `scripts/packetdrill.sh` runs packetdrill in a network
//! namespace of its own so that they do not change the machine's).
#![deny(unsafe_code)]

use crate::flags::LINUX_RMEM_MAX;
use pathstack::inet::tcp::{CongestionKind, RtoConfig, TcpConfig};
use std::time::Duration;

/// `defaults.sh` as pathstack's TCP configuration (the out-of-order
/// limit stays at `tcp_rmem`'s default, 540000):
///
/// | sysctl | value | here |
/// |---|---|---|
/// | `tcp_rmem` maximum | 15 MiB | `recv_buffer` ([`LINUX_RMEM_MAX`]: Linux takes its window scale from the most its buffer may grow to, 8 here; pathstack from its buffer) |
/// | `tcp_wmem` default | 262144 | `send_buffer` |
/// | `tcp_timestamps`, `tcp_sack`, window scaling | 1 | on |
/// | `tcp_syn_retries` | 5 | `syn_retries` |
/// | `tcp_congestion_control` | cubic | `congestion` |
/// | `tcp_early_retrans=4`, `tcp_recovery=1` | RACK-TLP | `rack` |
/// | `tcp_ecn` | 0 | (pathstack does not negotiate ECN) |
/// | `TCP_RTO_MIN`, `TCP_TIMEOUT_INIT` | 200 ms, 1 s | `rto` = `RtoConfig::linux()`, with G = 200 ms (below) |
/// | `TCP_DELACK_MIN` | 40 ms | `delayed_ack` |
///
/// Linux ACKs every second full segment outside quick-ACK mode (RFC 5681
/// §4.2): `max_stretch_ack` 2, not the stretch ACKs pathstack sends by
/// default for a receive burst (a script's injected segments each arrive
/// alone anyway).
///
/// Linux's RTO is RFC 6298 §2.3's SRTT + max(G, K·RTTVAR) with its minimum
/// RTO in the place of G: `tcp_rtt_estimator` floors the variance term
/// (`mdev_max_us`) at `tcp_rto_min`, so a 10 ms path times out after
/// 210 ms. pathstack's default bounds the whole RTO instead (§2.4, with
/// 200 ms for 1 s), 200 ms there; the scripts time Linux's (packetdrill
/// `cubic-rto-ss-ca-cwnd-bump`, and the persist timer, which follows the
/// RTO, in `tcp-info-rwnd-limited`), so here G is 200 ms.
pub fn tcp_config() -> TcpConfig {
    TcpConfig {
        recv_buffer: LINUX_RMEM_MAX,
        max_ooo_bytes: 540_000,
        send_buffer: 256 * 1024,
        window_scaling: true,
        timestamps: true,
        sack: true,
        rack: true,
        syn_retries: 5,
        congestion: CongestionKind::Cubic,
        max_stretch_ack: 2,
        // Linux's PRR (`tcp_cwnd_reduction`): SSRB's extra segment only
        // on an ACK that advances SND.UNA (RFC 6937bis SafeACK).
        prr_safe_ack: true,
        // No tail-loss probe in timeout recovery (Linux's `TCP_CA_Loss`).
        probe_after_timeout: false,
        rto: RtoConfig {
            granularity: Duration::from_millis(200),
            ..RtoConfig::linux()
        },
        ..TcpConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack::inet::tcp::RtoEstimator;

    /// Linux's RTO for a 10 ms path: SRTT + max(200 ms, 4·RTTVAR) =
    /// 210 ms (pathstack's default: 200 ms).
    #[test]
    fn the_rto_floors_the_variance_term_as_linux() {
        let mut rto = RtoEstimator::new(tcp_config().rto);
        rto.on_sample(pathstack::core::Duration::from_millis(10));
        assert_eq!(rto.rto(), pathstack::core::Duration::from_millis(210));
        let mut ours = RtoEstimator::new(TcpConfig::default().rto);
        ours.on_sample(pathstack::core::Duration::from_millis(10));
        assert_eq!(ours.rto(), pathstack::core::Duration::from_millis(200));
    }
}
