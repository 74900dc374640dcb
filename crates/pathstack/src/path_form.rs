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

use pathstack_core::device::{WireStage, WIRE_SPEC};
use pathstack_core::Stack;
use pathstack_devices::lance::{LanceStage, LANCE_SPEC};
use pathstack_inet::modules::inline;

/// Gives `stack` the specialization rules for the paths a host opens, for
/// either driver a host's graph may have (`WIRE` on the device itself, or
/// the emulated `LANCE`); a rule applies only to a path of its own module
/// sequence.
pub(crate) fn add_rules(stack: &mut Stack) {
    stack.add_rule(inline::udp_socket_fast_rule::<WireStage>(WIRE_SPEC.name));
    stack.add_rule(inline::udp_socket_fast_rule::<LanceStage>(LANCE_SPEC.name));
    stack.add_rule(inline::tcp_fast_rule::<WireStage>(WIRE_SPEC.name));
    stack.add_rule(inline::tcp_fast_rule::<LanceStage>(LANCE_SPEC.name));
}
