//! Path-inlining rules for the Internet paths: the module sequences this
//! crate's stages form, so a caller names only what it puts above and
//! below them.
//!
//! Path-inlining replaces the dynamically dispatched stages of a path whose
//! module sequence matches with one executor monomorphized over the
//! concrete stage types (Mosberger, *Scout: A Path-Based Operating System*,
//! 1997, §3.3.8 path optimization and §4.2.3 path-inlining).

use super::fast::transport::TransportFast;
use super::fast::udp::UdpFast;
use super::{
    ArpStage, EthStage, IpStage, TcpConnStage, UdpStage, ARP_SPEC, ETH_SPEC, IP_SPEC, TCP_SPEC,
    UDP_SPEC,
};
use pathstack_core::rules::Rule;
use pathstack_core::Stage;

/// The path-inlining rule for UDP paths `top / UDP / IP / ARP / ETH /
/// driver`: `Top` is the stage type of the module above UDP, whose module
/// type is `top_type`, and `Driver` the stage type of the device driver
/// under ETH, whose module type is `driver_type`. The rule is named
/// `inline top/UDP/IP/ARP/ETH/driver`.
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_core::synthetic::{EchoStage, ECHO_SPEC};
/// use pathstack_inet::modules::inline;
/// let rule = inline::udp_rule::<EchoStage, DriverStage>(ECHO_SPEC.name, DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "inline ECHO/UDP/IP/ARP/ETH/DRIVER");
/// ```
pub fn udp_rule<Top: Stage, Driver: Stage>(
    top_type: &'static str,
    driver_type: &'static str,
) -> Rule {
    Rule::inline::<(Top, UdpStage, IpStage, ArpStage, EthStage, Driver)>(
        format!("inline {top_type}/UDP/IP/ARP/ETH/{driver_type}"),
        &udp_sequence(top_type, driver_type),
    )
}

/// The specialization rule for UDP paths `top / UDP / IP / ARP / ETH /
/// driver`, as [`udp_rule`] names them: the stages are path-inlined and
/// the common case runs in the fused fast form [`UdpFast`] (all three
/// headers written at once from a template of the path's peer, a
/// received frame checked in one pass), the rest through the inlined
/// stages (`pathstack_core::fused`). The rule is named `specialize
/// top/UDP/IP/ARP/ETH/driver`; it applies to a modular or an inlined path.
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_core::synthetic::{EchoStage, ECHO_SPEC};
/// use pathstack_inet::modules::inline;
/// let rule = inline::udp_fast_rule::<EchoStage, DriverStage>(ECHO_SPEC.name, DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "specialize ECHO/UDP/IP/ARP/ETH/DRIVER");
/// ```
pub fn udp_fast_rule<Top: Stage, Driver: Stage>(
    top_type: &'static str,
    driver_type: &'static str,
) -> Rule {
    Rule::specialize::<(Top, UdpStage, IpStage, ArpStage, EthStage, Driver), UdpFast>(
        format!("specialize {top_type}/UDP/IP/ARP/ETH/{driver_type}"),
        &udp_sequence(top_type, driver_type),
    )
}

/// The path-inlining rule for TCP connection paths `TCP / IP / ARP / ETH /
/// driver` (the paths `TCP` opens for a connection, active or accepted):
/// `Driver` is the stage type of the device driver under ETH, whose module
/// type is `driver_type`. The rule is named `inline TCP/IP/ARP/ETH/driver`.
/// A host applies it to a connection's path with
/// `Stack::add_rule` and `Stack::path_optimize` (the path id from
/// `Host::tcp_path_id`); the connection goes on as before, its control
/// block moved into the inlined executor with the other stages.
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_inet::modules::inline;
/// let rule = inline::tcp_rule::<DriverStage>(DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "inline TCP/IP/ARP/ETH/DRIVER");
/// ```
pub fn tcp_rule<Driver: Stage>(driver_type: &'static str) -> Rule {
    Rule::inline::<(TcpConnStage, IpStage, ArpStage, EthStage, Driver)>(
        format!("inline TCP/IP/ARP/ETH/{driver_type}"),
        &tcp_sequence(driver_type),
    )
}

/// The specialization rule for TCP connection paths `TCP / IP / ARP / ETH
/// / driver`, as [`tcp_rule`] names them: the stages are path-inlined and
/// the links under TCP run in the fused fast form [`TransportFast`] (a
/// segment's IP and Ethernet headers written at once from a template of
/// the peer, a received frame's checked in one pass), the rest through
/// the inlined stages. The rule is named `specialize
/// TCP/IP/ARP/ETH/driver`; it applies to a modular or an inlined path.
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_inet::modules::inline;
/// let rule = inline::tcp_fast_rule::<DriverStage>(DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "specialize TCP/IP/ARP/ETH/DRIVER");
/// ```
pub fn tcp_fast_rule<Driver: Stage>(driver_type: &'static str) -> Rule {
    Rule::specialize::<(TcpConnStage, IpStage, ArpStage, EthStage, Driver), TransportFast>(
        format!("specialize TCP/IP/ARP/ETH/{driver_type}"),
        &tcp_sequence(driver_type),
    )
}

/// The specialization rule for UDP socket paths `UDP / IP / ARP / ETH /
/// driver` (the paths a host opens for a bound or connected socket, whose
/// top is UDP itself): the stages are path-inlined and the links under
/// UDP run in the fused fast form [`TransportFast`], as under a TCP
/// connection; UDP's own stage writes and checks its header. The rule is
/// named `specialize UDP/IP/ARP/ETH/driver`.
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_inet::modules::inline;
/// let rule = inline::udp_socket_fast_rule::<DriverStage>(DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "specialize UDP/IP/ARP/ETH/DRIVER");
/// ```
pub fn udp_socket_fast_rule<Driver: Stage>(driver_type: &'static str) -> Rule {
    Rule::specialize::<(UdpStage, IpStage, ArpStage, EthStage, Driver), TransportFast>(
        format!("specialize UDP/IP/ARP/ETH/{driver_type}"),
        &[
            UDP_SPEC.name,
            IP_SPEC.name,
            ARP_SPEC.name,
            ETH_SPEC.name,
            driver_type,
        ],
    )
}

/// The module types of a UDP path `top / UDP / IP / ARP / ETH / driver`.
fn udp_sequence(top_type: &'static str, driver_type: &'static str) -> [&'static str; 6] {
    [
        top_type,
        UDP_SPEC.name,
        IP_SPEC.name,
        ARP_SPEC.name,
        ETH_SPEC.name,
        driver_type,
    ]
}

/// The module types of a TCP connection path `TCP / IP / ARP / ETH /
/// driver`.
fn tcp_sequence(driver_type: &'static str) -> [&'static str; 5] {
    [
        TCP_SPEC.name,
        IP_SPEC.name,
        ARP_SPEC.name,
        ETH_SPEC.name,
        driver_type,
    ]
}
