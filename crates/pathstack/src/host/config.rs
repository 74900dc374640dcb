//! What a host is made of ([`HostConfig`]): its addresses, which
//! protocols its graph has and with what options, and how it is run.

use super::{HostError, UpperModule};
use crate::nic::Nic;
use pathstack_core::admission::Budgets;
use pathstack_core::stack::ModuleTypes;
use pathstack_core::SchedKind;
use pathstack_inet::modules::parse_cidr;
use pathstack_inet::MacAddr;
use std::net::Ipv4Addr;

/// Addresses and choices of a host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// Our address.
    pub addr: Ipv4Addr,
    /// Prefix length of the attached network.
    pub prefix_len: u8,
    /// Default gateway.
    pub gateway: Option<Ipv4Addr>,
    /// MAC address; `None` takes the device's.
    pub mac: Option<MacAddr>,
    /// Scheduler.
    pub sched: SchedKind,
    /// The adapter between ETH and the device (default: the device
    /// itself through `DRIVER`).
    pub nic: Nic,
    /// Whether the graph has `UDP` (instance `udp`, default yes).
    pub udp: bool,
    /// Whether the graph has `TCP` (instance `tcp`, default yes).
    pub tcp: bool,
    /// Derive TCP's secrets (RFC 6528 initial sequence numbers, SYN
    /// cookies) from this seed instead of drawing them at random (`TCP`'s
    /// `seed` parameter): two hosts built alike on a simulated clock then
    /// open their connections with the same sequence numbers and put the
    /// same bytes on the wire. For simulation and reproducible tests only:
    /// a host reachable by others with a known seed has guessable
    /// sequence numbers. Default `None` (random per host).
    pub tcp_seed: Option<u64>,
    /// Most TCP connections (with listeners and bound sockets) at once,
    /// `TCP`'s `max_connections`; `None` (the default): the module's
    /// 65,536. A host holding more (the million-connection bench,
    /// `tcp_million`) raises it, and its stack's `max_paths` with it.
    pub tcp_max_connections: Option<usize>,
    /// The options every TCP connection and listener of the host starts
    /// with when the call gives none (buffer sizes, Nagle, keepalive,
    /// timers; `host.tcp().listen_with`/`connect_with` and the tokio
    /// `connect_with` still set their own). `None` (the default): TCP's
    /// defaults with the MSS of the device's MTU.
    pub tcp_config: Option<pathstack_inet::tcp::TcpConfig>,
    /// Run the host's socket and connection paths specialized (default
    /// yes): the fused fast form of the links under UDP and TCP in front of
    /// the path-inlined stages, which stay the reference for everything
    /// else (`pathstack_core::fused`; `inline::udp_socket_fast_rule`,
    /// `inline::tcp_fast_rule`). `false` keeps them modular, for
    /// comparison; both put the same bytes on the wire.
    pub specialize: bool,
    /// Most frames the driver takes from the device per poll; `None`
    /// keeps the driver's default (64). With 1, each frame is carried up
    /// its path before the device is read again; over TAP with busy
    /// polling this made no measurable difference to the ping-pong RTT
    /// (`pingpong --wire tap --busy-poll --rx-burst 1|64`, ≈ 10–11 µs both).
    pub rx_burst: Option<usize>,
    /// The RPC stack (BLAST, BID, BIDCTL, CHAN, VCHAN, MSELECT and `RPC`;
    /// see [`crate::rpc`]) directly on Ethernet or over IP; `None` (the
    /// default) leaves it out.
    pub rpc: Option<pathstack_rpc::modules::RpcNet>,
    /// How long CHAN retransmits a call that has no reply before it fails
    /// with [`RpcError::TimedOut`](crate::rpc::RpcError::TimedOut) (whole
    /// seconds, rounded up; zero: never, as the x-kernel). Default 30 s.
    /// A call's own timeout
    /// ([`RpcClient::call_timeout`](crate::rpc::RpcClient::call_timeout))
    /// can end it earlier, never later.
    pub rpc_call_timeout: std::time::Duration,
    /// Further module instances above the host's protocols, each with
    /// the services it connects to UDP, TCP, IP or ETH (see
    /// [`UpperModule`]), e.g.
    /// `UpperModule::new("app", "ECHO").param("mode", "echo").over("down", Below::Udp)`.
    /// Their types are the library's ([`crate::module_types`]) or the
    /// host's own ([`HostConfig::module_types`]).
    pub upper: Vec<UpperModule>,
    /// Module types of the user's, beside the library's: what
    /// [`HostConfig::upper`] may instantiate (a protocol or an
    /// application at the top of a path, with its spec and factory).
    /// Empty by default.
    pub module_types: ModuleTypes,
    /// Charge processing time to the paths that spend it
    /// ([`PathStats::cpu_ns`](pathstack_core::path::PathStats::cpu_ns);
    /// [`StackConfig::account_time`](pathstack_core::stack::StackConfig::account_time)). Off by default, because it costs a
    /// clock read per scheduler turn and two per direct run of a path
    /// (a read is about as dear as a short path's whole processing); the
    /// other per-path counters (messages, bytes, held buffers, drops) are
    /// kept either way.
    pub account_cpu: bool,
    /// Admission control: budgets for path count, buffer bytes and CPU
    /// share, per stack and per path class
    /// ([`StackConfig::budgets`](pathstack_core::stack::StackConfig::budgets), see [`pathstack_core::admission`]). A
    /// socket whose path would exceed one is refused with
    /// [`PathError::Admission`](pathstack_core::error::PathError::Admission)
    /// ([`std::io::ErrorKind::QuotaExceeded`] through `std::io`). Default:
    /// no limits.
    ///
    /// ```
    /// use pathstack::core::admission::{Budget, Budgets};
    /// use pathstack::host::{Host, HostConfig};
    /// use pathstack::memory_pair;
    /// // At most one UDP socket (each is a path of class `udp`).
    /// let cfg = HostConfig {
    ///     budgets: Budgets::default()
    ///         .with_class("udp", Budget { paths: Some(1), ..Budget::default() }),
    ///     ..HostConfig::parse("10.0.0.1/24").unwrap()
    /// };
    /// let (a, _b) = memory_pair(Default::default());
    /// let mut h = Host::new(cfg, a).unwrap();
    /// let _s = h.udp().bind("0.0.0.0:7").unwrap();
    /// let e = std::io::Error::from(h.udp().bind("0.0.0.0:9").unwrap_err());
    /// assert_eq!(e.kind(), std::io::ErrorKind::QuotaExceeded);
    /// ```
    pub budgets: Budgets,
}

impl std::str::FromStr for HostConfig {
    type Err = HostError;

    /// A configuration from `ADDR/PREFIX` (see [`HostConfig::parse`]).
    ///
    /// ```
    /// use pathstack::host::HostConfig;
    /// let cfg: HostConfig = "10.0.0.1/24".parse().unwrap();
    /// assert_eq!((cfg.addr.to_string(), cfg.prefix_len), ("10.0.0.1".into(), 24));
    /// assert!("10.0.0.1".parse::<HostConfig>().is_err());
    /// ```
    fn from_str(cidr: &str) -> Result<Self, HostError> {
        Self::parse(cidr)
    }
}

impl HostConfig {
    /// A configuration from `ADDR/PREFIX`, everything else default.
    pub fn parse(cidr: &str) -> Result<Self, HostError> {
        let (addr, prefix_len) = parse_cidr(cidr)?;
        let cfg = HostConfig {
            addr,
            prefix_len,
            gateway: None,
            mac: None,
            sched: SchedKind::PerMessage,
            nic: Nic::Device,
            udp: true,
            tcp: true,
            tcp_seed: None,
            tcp_max_connections: None,
            tcp_config: None,
            specialize: true,
            rx_burst: None,
            rpc: None,
            rpc_call_timeout: pathstack_rpc::modules::chan::DEFAULT_CALL_TIMEOUT,
            upper: Vec::new(),
            module_types: ModuleTypes::new(),
            account_cpu: false,
            budgets: Budgets::default(),
        };
        cfg.check()?;
        Ok(cfg)
    }
}
