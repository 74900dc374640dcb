//! The form a host's socket and connection paths run in.
//!
//! A host specializes the paths it opens for sockets (`Stack::path_optimize`
//! with the rules below): a UDP socket's path `UDP / IP / ARP / ETH /
//! driver` and a TCP connection's `TCP / IP / ARP / ETH / driver` run the
//! fused fast form of the links under the transport in front of the
//! path-inlined stages (`pathstack_core::fused`, issue 26), the stages
//! remaining the reference for everything the fast form declines. The
//! differential tests `tests/fused_tcp.rs` and `tests/fused_udp.rs` hold
//! the fast forms to the modular stages' behaviour; `HostConfig::specialize`
//! turns it off (the modular form, for comparison).

use crate::host::Host;
use pathstack_core::device::{DriverStage, DRIVER_SPEC};
use pathstack_core::{PathId, Stack};
use pathstack_devices::lance::{LanceStage, LANCE_SPEC};
use pathstack_inet::modules::inline;

/// Gives `stack` the specialization rules for the paths a host opens, for
/// either driver a host's graph may have (`DRIVER` on the device itself, or
/// the emulated `LANCE`); a rule applies only to a path of its own module
/// sequence.
pub(crate) fn add_rules(stack: &mut Stack) {
    stack.add_rule(inline::udp_socket_fast_rule::<DriverStage>(
        DRIVER_SPEC.name,
    ));
    stack.add_rule(inline::udp_socket_fast_rule::<LanceStage>(LANCE_SPEC.name));
    stack.add_rule(inline::tcp_fast_rule::<DriverStage>(DRIVER_SPEC.name));
    stack.add_rule(inline::tcp_fast_rule::<LanceStage>(LANCE_SPEC.name));
}

impl Host {
    /// Specializes a path the host just opened for a socket or took from a
    /// listener, unless the host runs modular paths. A path no rule fits
    /// (a graph with other modules between the transport and the driver)
    /// stays as it is.
    pub(crate) fn specialize(&mut self, path: PathId) {
        if self.specializes() {
            // A rule applies only to a path of its module sequence, whose
            // stages are then of the rule's types, so rebuilding cannot
            // fail; if it did, the path would keep its stages and work on
            // in its modular form.
            let _ = self.stack_mut().path_optimize(path);
        }
    }
}
