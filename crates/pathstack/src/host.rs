//! An Internet host on one device: the standard host graph
//! ([`HostGraph`]) or a graph file, a wall clock, a wait strategy, ping,
//! UDP sockets (see [`crate::socket`]), and a statistics report. The `host`
//! example and the TAP integration tests run on it.
//!
//! ```
//! use pathstack::core::device::wire::{wire_pair, WireConfig};
//! use pathstack::host::{Host, HostConfig};
//! let (a, b) = wire_pair(WireConfig::default());
//! let mut h1 = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
//! let mut h2 = Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap();
//! h1.ping("10.0.0.2".parse().unwrap(), 1, b"hi").unwrap();
//! for _ in 0..10 {
//!     h1.poll();
//!     h2.poll();
//! }
//! assert_eq!(h1.echo_replies().len(), 1);
//! ```

mod config_check;
mod error;

pub use config_check::ConfigError;
pub use error::HostError;

pub use crate::host_id::HostId;
use crate::module_types;
use crate::nic::Nic;
use crate::socket::linger_table::TcpLingers;
use crate::socket::registrations::Registrations;
use crate::socket::table::UdpSockets;
use crate::socket::tcp_table::TcpSockets;
use pathstack_core::admission::Budgets;
use pathstack_core::device::RxWaiter;
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::{Stack, StackConfig};
use pathstack_core::{Device, Dir, Instant, Msg, PathId, SchedKind, SendError};
use pathstack_devices::{TapWaiter, WaitMode};
use pathstack_inet::modules::{parse_cidr, ArpModule, HostGraph, IcmpModule, IpModule};
use pathstack_inet::wire::ipv4::Ipv4DropReason;
use pathstack_inet::MacAddr;
use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::Arc;

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
    /// itself through `WIRE`).
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
    /// The options every TCP connection and listener of the host starts
    /// with when the call gives none (buffer sizes, Nagle, keepalive,
    /// timers; `tcp_listen_with`/`tcp_connect_with` and the tokio
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
    /// Further modules above IP or UDP, with their connections (see
    /// [`HostGraph::upper`]), e.g.
    /// `("name=app module=ECHO mode=echo;", "app.down<>udp.up;")`.
    pub upper: Vec<(String, String)>,
    /// Charge processing time to the paths that spend it
    /// ([`PathStats::cpu_ns`](pathstack_core::path::PathStats::cpu_ns);
    /// [`StackConfig::account_time`]). Off by default, because it costs a
    /// clock read per scheduler turn and two per direct run of a path
    /// (a read is about as dear as a short path's whole processing); the
    /// other per-path counters (messages, bytes, held buffers, drops) are
    /// kept either way.
    pub account_cpu: bool,
    /// Admission control: budgets for path count, buffer bytes and CPU
    /// share, per stack and per path class
    /// ([`StackConfig::budgets`], see [`pathstack_core::admission`]). A
    /// socket whose path would exceed one is refused with
    /// [`PathError::Admission`](pathstack_core::error::PathError::Admission)
    /// ([`std::io::ErrorKind::QuotaExceeded`] through `std::io`). Default:
    /// no limits.
    ///
    /// ```
    /// use pathstack::core::admission::{Budget, Budgets};
    /// use pathstack::host::{Host, HostConfig};
    /// use pathstack::wire_pair;
    /// // At most one UDP socket (each is a path of class `udp`).
    /// let cfg = HostConfig {
    ///     budgets: Budgets::default()
    ///         .with_class("udp", Budget { paths: Some(1), ..Budget::default() }),
    ///     ..HostConfig::parse("10.0.0.1/24").unwrap()
    /// };
    /// let (a, _b) = wire_pair(Default::default());
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
            tcp_config: None,
            specialize: true,
            rx_burst: None,
            rpc: None,
            rpc_call_timeout: pathstack_rpc::modules::chan::DEFAULT_CALL_TIMEOUT,
            upper: Vec::new(),
            account_cpu: false,
            budgets: Budgets::default(),
        };
        cfg.check()?;
        Ok(cfg)
    }
}

/// The `TCP` parameters that turn on what the device offloads (see
/// `pathstack_core::device::offload`): partial checksums when it finishes
/// them, super-segments when it segments them. Only when the frames go
/// straight to the device (`Nic::Device`): an emulated adapter in between
/// copies frames and knows nothing of offloads. Empty for devices without
/// offloads, so their graphs stay as they were.
fn tcp_offload_params(cfg: &HostConfig, caps: &pathstack_core::device::DeviceCaps) -> String {
    let o = caps.offload;
    if cfg.nic != Nic::Device || !o.tx_checksum {
        return String::new();
    }
    let mut p = " csum_offload=true".to_string();
    if o.tso4_max > 0 {
        p.push_str(&format!(" tso_max={}", o.tso4_max));
    }
    p
}

/// An Internet host on one device.
pub struct Host {
    stack: Stack,
    icmp: PathId,
    start: std::time::Instant,
    waiter: Option<TapWaiter>,
    mode: WaitMode,
    /// What the device offers to sleep on until a frame arrives (the
    /// in-memory wire's), taken before the device went into the stack.
    rx_waiter: Option<Arc<dyn RxWaiter>>,
    pub(crate) sockets: UdpSockets,
    pub(crate) tcp_sockets: TcpSockets,
    /// The streams' `SO_LINGER` options and the closes they bound.
    pub(crate) tcp_lingers: TcpLingers,
    /// The sockets [`Host::poll_ready`] watches.
    pub(crate) readiness: Registrations,
    /// The RPC stack's paths and calls, when the graph has one.
    pub(crate) rpc: Option<crate::rpc::state::RpcState>,
    /// A clock set by hand instead of the time since the host was made
    /// ([`Host::set_manual_clock`]).
    manual_now: Option<Instant>,
    /// Whether socket and connection paths are specialized
    /// ([`HostConfig::specialize`]).
    specialize: bool,
}

impl Host {
    /// Whether the host specializes its socket and connection paths
    /// ([`HostConfig::specialize`]).
    pub fn specializes(&self) -> bool {
        self.specialize
    }

    /// Builds the host on `device`.
    pub fn new(cfg: HostConfig, device: impl Device + 'static) -> Result<Host, HostError> {
        Self::with_stack_config(cfg, device, StackConfig::default())
    }

    /// [`Host::new`] with the stack sized by `stack` (its message pool,
    /// path and timer tables, queues) instead of the defaults, which
    /// preallocate for a million paths and a thousand frames: a host with
    /// a few sockets, or many hosts in one process (a simulation, a test,
    /// a fuzz target), needs far less. The scheduler, CPU accounting and
    /// budgets stay `cfg`'s ([`HostConfig::sched`],
    /// [`HostConfig::account_cpu`], [`HostConfig::budgets`]).
    ///
    /// ```
    /// use pathstack::core::stack::StackConfig;
    /// use pathstack::core::PoolConfig;
    /// use pathstack::host::{Host, HostConfig};
    /// use pathstack::wire_pair;
    /// let small = StackConfig {
    ///     pool: PoolConfig::small(64),
    ///     max_paths: 64,
    ///     max_timers: 256,
    ///     ..StackConfig::default()
    /// };
    /// let (a, _b) = wire_pair(Default::default());
    /// let cfg = HostConfig::parse("10.0.0.1/24").unwrap();
    /// let mut h = Host::with_stack_config(cfg, a, small).unwrap();
    /// let s = h.udp().bind("0.0.0.0:7").unwrap();
    /// assert_eq!(h.udp().local_addr(&s).unwrap().port(), 7);
    /// ```
    pub fn with_stack_config(
        cfg: HostConfig,
        device: impl Device + 'static,
        stack: StackConfig,
    ) -> Result<Host, HostError> {
        cfg.check()?;
        let stack = StackConfig {
            sched: cfg.sched,
            account_time: cfg.account_cpu,
            budgets: cfg.budgets.clone(),
            ..stack
        };
        let caps = device.caps();
        let mac = cfg.mac.or(caps.mac.map(MacAddr)).ok_or(HostError::NoMac)?;
        let mut g = HostGraph::new(cfg.addr, cfg.prefix_len, mac);
        g.gateway = cfg.gateway;
        g.mtu = u16::try_from(caps.mtu).unwrap_or(1500).min(1500);
        g.driver = cfg.nic.driver_line(0, mac);
        if let Some(n) = cfg.rx_burst {
            g.driver.push_str(&format!(" rx_burst={n}"));
        }
        if cfg.udp {
            g.upper
                .push(("name=udp module=UDP;".into(), "udp.down<>ip.up;".into()));
        }
        if cfg.tcp {
            g.upper.push((
                format!(
                    "name=tcp module=TCP mss={}{}{};",
                    g.mtu.saturating_sub(40),
                    tcp_offload_params(&cfg, &caps),
                    cfg.tcp_seed.map_or(String::new(), |s| format!(" seed={s}"))
                ),
                "tcp.down<>ip.up;".into(),
            ));
        }
        if let Some(net) = cfg.rpc {
            g.upper.extend(pathstack_rpc::modules::RpcGraph::upper(
                net,
                g.mtu,
                cfg.rpc_call_timeout,
            ));
        }
        g.upper.extend(cfg.upper.iter().cloned());
        let mut host =
            Self::from_graph_stack(&g.to_text(), "host.graph", stack, cfg.specialize, device)?;
        host.tcp_sockets.config = cfg.tcp_config;
        Ok(host)
    }

    /// Builds a host from a graph file in the `config.graph` syntax (see
    /// `graphs/host.graph`) on `device` (device 0 of the graph). The graph
    /// needs an `ICMP` instance named `icmp` (for [`Host::ping`]); sockets
    /// need a `UDP` instance named `udp`; the host's address is that of
    /// the first interface of the `IP` instance named `ip`.
    ///
    /// ```
    /// use pathstack::core::device::wire::{wire_pair, WireConfig};
    /// use pathstack::host::Host;
    /// let (a, _b) = wire_pair(WireConfig::default());
    /// let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../graphs/host.graph");
    /// let mut h = Host::from_graph_file(file, a).unwrap();
    /// let s = h.udp().bind("10.0.0.1:7").unwrap();
    /// assert_eq!(h.udp().local_addr(&s).unwrap().to_string(), "10.0.0.1:7");
    /// ```
    pub fn from_graph_file(
        path: impl AsRef<std::path::Path>,
        device: impl Device + 'static,
    ) -> Result<Host, HostError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| HostError::GraphFile {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_graph(
            &text,
            &path.display().to_string(),
            SchedKind::PerMessage,
            device,
        )
    }

    /// Builds a host from graph text (`source` names it in errors) on
    /// `device`, with scheduler `sched`; see [`Host::from_graph_file`].
    pub fn from_graph(
        text: &str,
        source: &str,
        sched: SchedKind,
        device: impl Device + 'static,
    ) -> Result<Host, HostError> {
        let stack = StackConfig {
            sched,
            ..StackConfig::default()
        };
        Self::from_graph_stack(text, source, stack, true, device)
    }

    fn from_graph_stack(
        text: &str,
        source: &str,
        config: StackConfig,
        specialize: bool,
        device: impl Device + 'static,
    ) -> Result<Host, HostError> {
        let rx_waiter = device.rx_waiter();
        let types = module_types();
        let graph = ModuleGraph::from_text(text, Some(source), &types.specs())?;
        let mut stack = Stack::builder(graph, types)
            .device(device)
            .config(config)
            .build()?;
        if specialize {
            // The rules are the stack's, tried in order on every path the
            // host optimizes: a modular host has none, so that rules its
            // user adds apply as they would to any stack.
            crate::path_form::add_rules(&mut stack);
        }
        let icmp = stack
            .module_id("icmp")
            .and_then(|id| stack.module::<IcmpModule>(id))
            .and_then(IcmpModule::path)
            .ok_or(HostError::NoIcmp)?;
        let iface = stack
            .module_id("ip")
            .and_then(|id| stack.module::<IpModule>(id))
            .and_then(|ip| ip.interfaces().first())
            .copied();
        let sockets = UdpSockets::new(HostId::next(), stack.module_id("udp"), iface);
        let tcp_sockets = TcpSockets::new(stack.module_id("tcp"), None);
        let rpc = crate::rpc::state::RpcState::find(&stack);
        Ok(Host {
            stack,
            icmp,
            start: std::time::Instant::now(),
            waiter: None,
            mode: WaitMode::Blocking,
            rx_waiter,
            sockets,
            tcp_sockets,
            tcp_lingers: TcpLingers::default(),
            readiness: Registrations::default(),
            rpc,
            manual_now: None,
            specialize,
        })
    }

    /// The MAC address of the host's interface (of the `ETH` instance
    /// named `eth`).
    pub fn mac(&self) -> Option<MacAddr> {
        let eth = self.stack.module_id("eth")?;
        self.stack
            .module::<pathstack_inet::modules::EthModule>(eth)
            .map(pathstack_inet::modules::EthModule::mac)
    }

    /// The host's identity, which its socket handles carry.
    pub fn id(&self) -> HostId {
        self.sockets.host()
    }

    /// Our address (of the first interface of IP), if the graph has IP.
    pub fn addr(&self) -> Option<Ipv4Addr> {
        self.sockets.addr()
    }

    /// Waits on `waiter` (the TAP device's) between polls, the way `mode` says.
    pub fn with_waiter(mut self, waiter: TapWaiter, mode: WaitMode) -> Self {
        self.waiter = Some(waiter);
        self.mode = mode;
        self
    }

    /// Adds a static neighbour: `ip` is at `mac` for good, never asked for
    /// with ARP, never expired, not changed by ARP packets (Linux's
    /// `ip neigh add IP lladdr MAC nud permanent`). Needs the graph's
    /// `ARP` instance named `arp` (as [`Host::new`] makes).
    ///
    /// Several hosts with the same address on the queues of one
    /// multi-queue TAP (`pathstack_devices::TapOptions::multi_queue`, one
    /// host per core) need it for their peers: the kernel steers a
    /// frame to a queue by its flow, so the ARP reply to one host's
    /// request may reach another host, and the asking one never learns
    /// the address.
    ///
    /// ```
    /// use pathstack::core::device::wire::{wire_pair, WireConfig};
    /// use pathstack::host::{Host, HostConfig};
    /// use pathstack::inet::MacAddr;
    /// let (a, _b) = wire_pair(WireConfig::default());
    /// let mut h = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
    /// h.add_neighbor("10.0.0.2".parse().unwrap(), MacAddr([2, 0, 0, 0, 0, 2])).unwrap();
    /// assert!(h.add_neighbor("10.0.0.3".parse().unwrap(), MacAddr::BROADCAST).is_err());
    /// ```
    pub fn add_neighbor(&mut self, ip: Ipv4Addr, mac: MacAddr) -> Result<(), HostError> {
        let arp = self.stack.module_id("arp").ok_or(HostError::NoArp)?;
        let arp = self
            .stack
            .module_mut::<ArpModule>(arp)
            .ok_or(HostError::NoArp)?;
        arp.add_static(ip, mac)?;
        Ok(())
    }

    /// The core stack under the host: the escape hatch to
    /// [`pathstack_core`] for tools and tests that drive the core (path
    /// statistics, the buffer pool, the module graph). An application
    /// does not need it: the protocol views ([`Host::udp`], [`Host::tcp`],
    /// [`Host::rpc`]) and the host's own calls cover what it does.
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    /// The core stack under the host, writable: the escape hatch to
    /// [`pathstack_core`] (to add specialization rules, create paths,
    /// send and receive on them) for tools and tests that drive the core.
    /// Paths made here are the caller's; the host's sockets do not know
    /// them.
    pub fn stack_mut(&mut self) -> &mut Stack {
        &mut self.stack
    }

    /// ICMP's path.
    pub fn icmp_path(&self) -> PathId {
        self.icmp
    }

    /// The host's clock: time since it was made.
    pub fn now(&self) -> Instant {
        self.manual_now
            .unwrap_or_else(|| Instant::from_nanos(self.start.elapsed().as_nanos() as u64))
    }

    /// Runs the host on a clock set by hand: from now on [`Host::now`] is
    /// `now` until set again, instead of the time since the host was
    /// made. For simulated time and reproducible runs (timers tested
    /// without waiting, an input that must replay the same way, a
    /// measurement that counts instructions): nothing moves this clock
    /// but the caller, who sets it and then [`Host::poll`]s.
    ///
    /// ```
    /// use pathstack::core::time::{Duration, Instant};
    /// use pathstack::host::{Host, HostConfig};
    /// use pathstack::wire_pair;
    /// let (a, _b) = wire_pair(Default::default());
    /// let mut h = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
    /// let t0 = Instant::from_millis(1000);
    /// h.set_manual_clock(t0);
    /// assert_eq!(h.now(), t0);
    /// h.set_manual_clock(t0 + Duration::from_secs(5));
    /// h.poll(); // the timers due in those five seconds fire now
    /// assert_eq!(h.now(), t0 + Duration::from_secs(5));
    /// ```
    pub fn set_manual_clock(&mut self, now: Instant) {
        self.manual_now = Some(now);
    }

    /// Does all work that is ready now. Returns the work done.
    pub fn poll(&mut self) -> usize {
        let now = self.now();
        let work = self.stack.poll(now);
        if self.tcp_lingers.watching() {
            self.linger_expire();
        }
        work
    }

    /// When the host next has timed work: the stack's next timer or a
    /// device's delayed frame ([`Stack::poll_at`]), or the end of a
    /// close's linger time ([`Tcp::set_linger`](crate::socket::Tcp::set_linger)).
    pub fn poll_at(&self) -> Option<Instant> {
        let stack = self.stack.poll_at();
        match self.tcp_lingers.next_deadline() {
            Some(l) => Some(stack.map_or(l, |s| s.min(l))),
            None => stack,
        }
    }

    /// How long until the host has timed work ([`Host::poll_at`]), if it
    /// has any.
    pub fn until_timer(&self) -> Option<std::time::Duration> {
        let now = self.now();
        self.poll_at()
            .map(|t| std::time::Duration::from_nanos(t.saturating_since(now).as_nanos()))
    }

    /// Waits for input or the stack's next timer, at most `max`. It wakes
    /// as soon as a frame arrives: on a TAP device given with
    /// [`Host::with_waiter`] through its file descriptor, on a device that
    /// offers an [`RxWaiter`] (the in-memory wire) through it. A device
    /// with neither cannot say when a frame arrives, so the host sleeps
    /// at most a millisecond and polls again.
    pub fn wait(&self, max: std::time::Duration) -> Result<(), HostError> {
        // A failed device will not wake anyone (a deleted TAP).
        if let Some(f) = self.device_failure() {
            return Err(HostError::Device(f.clone()));
        }
        let timeout = self.until_timer().map_or(max, |t| t.min(max));
        match (&self.waiter, self.mode, &self.rx_waiter) {
            (Some(_), WaitMode::BusyPoll, _) => std::thread::yield_now(),
            (Some(w), WaitMode::Blocking, _) => {
                w.wait_readable(Some(timeout))?;
            }
            (None, _, Some(rx)) => {
                rx.wait_rx(timeout);
            }
            (None, _, None) => std::thread::sleep(timeout.min(std::time::Duration::from_millis(1))),
        }
        Ok(())
    }

    /// How the host's device failed for good, if it did (a TAP deleted
    /// under the host, the other end of the wire gone): the stack keeps
    /// running, but no frame passes any more. [`Host::wait`] reports it,
    /// and a tokio [`Net`](crate::tokio::Net)'s driver ends with it.
    pub fn device_failure(&self) -> Option<&pathstack_core::device::DeviceFailure> {
        self.stack.device_failure()
    }

    /// What the device offers to wait on until a frame arrives (the
    /// in-memory wire's [`RxWaiter`], which can block a thread or wake a
    /// task), if anything: the tokio driver awaits arrival through it.
    pub fn rx_waiter(&self) -> Option<Arc<dyn RxWaiter>> {
        self.rx_waiter.clone()
    }

    /// Sends an echo request to `dst`.
    pub fn ping(&mut self, dst: Ipv4Addr, seq: u16, data: &[u8]) -> Result<(), HostError> {
        let m = IcmpModule::echo_request(self.stack.pool(), dst, 0x7073, seq, data)?;
        // The path runs to completion, so IP's verdict (no route) comes
        // back here rather than as a silently lost request.
        match self.stack.send(self.icmp, Dir::Down, m) {
            Ok(()) => Ok(()),
            Err(SendError::Dropped(reason)) if reason == Ipv4DropReason::NoRoute => {
                Err(HostError::NoRoute(dst))
            }
            Err(SendError::Dropped(reason)) => Err(HostError::Dropped { dst, reason }),
            Err(SendError::QueueFull(_)) => Err(HostError::QueueFull),
            // The ICMP path is gone (deleted through the core).
            Err(SendError::NoPath(_)) => Err(HostError::NoIcmp),
        }
    }

    /// Echo replies (and ICMP errors) received since the last call. The
    /// errors about a connected socket's datagrams have also reached the
    /// socket, as ICMP classified them (see [`crate::socket`]).
    pub fn echo_replies(&mut self) -> Vec<Msg> {
        let mut v = Vec::new();
        while let Some(m) = self.stack.recv(self.icmp, Dir::Up) {
            v.push(m);
        }
        v
    }

    /// Per-module and per-path statistics, one line each, zeros left out.
    pub fn report(&self) -> String {
        report(&self.stack)
    }
}

/// Per-module and per-path statistics of `stack`, one line each, under a
/// legend: module counters and drops by reason (`drop.<layer>.<reason>`),
/// then each path's messages in and out per direction (down: from the
/// application towards the device; up: arrived from the device) and its
/// drops.
pub fn report(stack: &Stack) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "modules (counter=value; drop.<reason>=count, zero counters left out):"
    );
    for i in stack.graph().instances() {
        let Some(m) = stack.module_id(&i.name) else {
            continue;
        };
        let mut line = String::new();
        for (k, n) in stack.module_stats(m).unwrap_or_default() {
            if n > 0 {
                let _ = write!(line, " {k}={n}");
            }
        }
        for (r, n) in stack
            .module_drops(m)
            .map(|d| d.iter().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            let _ = write!(line, " drop.{}={n}", r.as_str());
        }
        let _ = writeln!(out, "  {:<6}{line}", i.name);
    }
    let _ = writeln!(
        out,
        "paths (#id modules; messages in/out travelling down = sent, up = received; drops):"
    );
    for id in stack.path_ids() {
        let Some(p) = stack.path(id) else { continue };
        let names: Vec<&str> = p
            .modules()
            .iter()
            .filter_map(|&m| stack.module_name(m))
            .collect();
        let s = p.stats();
        let mut line = format!(
            "  #{:<3} {:<28} down in/out {}/{}  up in/out {}/{}",
            id.index(),
            names.join("/"),
            s.msgs_in[0],
            s.msgs_out[0],
            s.msgs_in[1],
            s.msgs_out[1]
        );
        for (r, n) in s.drops.iter() {
            let _ = write!(line, " drop.{}={n}", r.as_str());
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathstack_core::device::{DeviceCaps, OffloadCaps};

    fn caps(offload: OffloadCaps) -> DeviceCaps {
        DeviceCaps {
            mtu: 1500,
            link_header: 14,
            mac: None,
            offload,
        }
    }

    #[test]
    fn tcp_offload_follows_the_device_and_only_without_an_adapter() {
        let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
        assert_eq!(tcp_offload_params(&cfg, &caps(OffloadCaps::NONE)), "");
        let tap = OffloadCaps {
            tx_checksum: true,
            rx_checksum: true,
            tso4_max: 65_535,
            rx_gro: true,
        };
        assert_eq!(
            tcp_offload_params(&cfg, &caps(tap)),
            " csum_offload=true tso_max=65535"
        );
        let csum_only = OffloadCaps {
            tso4_max: 0,
            rx_gro: false,
            ..tap
        };
        assert_eq!(
            tcp_offload_params(&cfg, &caps(csum_only)),
            " csum_offload=true"
        );
        // The emulated LANCE copies frames: no offloads through it.
        cfg.nic = Nic::Lance(pathstack_devices::Access::Copy);
        assert_eq!(tcp_offload_params(&cfg, &caps(tap)), "");
    }

    /// The SYN a host with TCP seed `seed` sends to 10.0.0.2:80 from port
    /// 40000 at a fixed time, its neighbour known.
    fn syn(seed: Option<u64>) -> Vec<u8> {
        use pathstack_core::device::wire::{wire_pair, WireConfig};
        use pathstack_core::Device;
        let (a, mut b) = wire_pair(WireConfig::default());
        let cfg = HostConfig {
            mac: Some(MacAddr([2, 0, 0, 0, 0, 1])),
            tcp_seed: seed,
            ..HostConfig::parse("10.0.0.1/24").unwrap()
        };
        let mut h = Host::new(cfg, a).unwrap();
        h.set_manual_clock(Instant::from_millis(5));
        h.add_neighbor("10.0.0.2".parse().unwrap(), MacAddr([2, 0, 0, 0, 0, 2]))
            .unwrap();
        let _s = h
            .tcp()
            .connect_with("0.0.0.0:40000", "10.0.0.2:80", Default::default());
        h.stack_mut().poll(Instant::from_millis(5));
        let pool = h.stack().pool().clone();
        std::iter::from_fn(|| b.receive(&pool, Instant::from_millis(5)).unwrap())
            .map(|f| f.as_slice().to_vec())
            .find(|f| f.len() > 47 && f[23] == 6)
            .expect("a SYN")
    }

    #[test]
    fn a_tcp_seed_makes_hosts_built_alike_send_the_same_syn() {
        assert_eq!(syn(Some(1)), syn(Some(1)));
        // The sequence number (bytes 38..42) is the seed's.
        assert_ne!(syn(Some(1))[38..42], syn(Some(2))[38..42]);
        assert_ne!(syn(None)[38..42], syn(None)[38..42]);
    }
}

#[cfg(test)]
mod neighbor_tests {
    use super::*;
    use pathstack_core::device::wire::{wire_pair, WireConfig};
    use pathstack_core::{MsgPool, PoolConfig};

    /// Every frame waiting at the raw end of the wire: (destination MAC,
    /// EtherType).
    fn frames(end: &mut impl Device, pool: &MsgPool) -> Vec<([u8; 6], [u8; 2])> {
        let mut out = Vec::new();
        while let Some(f) = end.receive(pool, Instant::ZERO).expect("receive") {
            let b = f.as_slice();
            out.push((b[0..6].try_into().unwrap(), [b[12], b[13]]));
        }
        out
    }

    #[test]
    fn a_static_neighbor_releases_a_waiting_datagram_and_needs_no_arp() {
        let pool = MsgPool::new(PoolConfig::small(16));
        let (a, mut peer) = wire_pair(WireConfig::default());
        let mut h = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
        let peer_mac = MacAddr([2, 0, 0, 0, 0, 2]);
        // The echo request waits for ARP; only the request (and the
        // start-up announcement) reach the wire.
        h.ping("10.0.0.2".parse().unwrap(), 1, b"hi").unwrap();
        for _ in 0..5 {
            h.poll();
        }
        let before = frames(&mut peer, &pool);
        assert!(!before.is_empty());
        assert!(
            before.iter().all(|&(_, ty)| ty == [0x08, 0x06]),
            "{before:?}"
        );
        // The static entry releases it, addressed to the given MAC.
        h.add_neighbor("10.0.0.2".parse().unwrap(), peer_mac)
            .unwrap();
        for _ in 0..5 {
            h.poll();
        }
        assert_eq!(frames(&mut peer, &pool), vec![(peer_mac.0, [0x08, 0x00])]);
        // Later datagrams go straight out, with no ARP request.
        h.ping("10.0.0.2".parse().unwrap(), 2, b"hi").unwrap();
        for _ in 0..5 {
            h.poll();
        }
        assert_eq!(frames(&mut peer, &pool), vec![(peer_mac.0, [0x08, 0x00])]);
        assert!(matches!(
            h.add_neighbor("10.0.0.3".parse().unwrap(), MacAddr::BROADCAST),
            Err(HostError::Neighbor(_))
        ));
    }
}
