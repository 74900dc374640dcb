//! Building a host: its module graph declared on a [`GraphBuilder`] from
//! the typed configuration (no graph text in between), or read from a
//! graph file; then the stack, and the host's protocols found in it by
//! their type.

use super::{Below, Host, HostConfig, HostError, HostId};
use crate::nic::Nic;
use crate::socket::linger_table::TcpLingers;
use crate::socket::registrations::Registrations;
use crate::socket::table::UdpSockets;
use crate::socket::tcp_table::TcpSockets;
use pathstack_core::device::{DeviceCaps, DriverParams};
use pathstack_core::graph::spec::SpecRegistry;
use pathstack_core::graph::{GraphBuilder, GraphErrors, ModuleGraph};
use pathstack_core::stack::{Stack, StackConfig};
use pathstack_core::{Device, SchedKind};
use pathstack_devices::lance::LanceParams;
use pathstack_devices::WaitMode;
use pathstack_inet::modules::{
    ArpParams, EthParams, IcmpModule, IpModule, IpParams, TcpModule, TcpParams, UdpModule,
    ICMP_SPEC, UDP_SPEC,
};
use pathstack_inet::MacAddr;

/// `TCP`'s parameters for a host: segments sized for the interface's MTU
/// (less the 40 bytes of IP and TCP headers), the seed if the
/// configuration gives one, and what the device offloads (see
/// `pathstack_core::device::offload`): partial checksums when it finishes
/// them, super-segments when it segments them. Offloads only when the
/// frames go straight to the device (`Nic::Device`): an emulated adapter
/// in between copies frames and knows nothing of offloads.
fn tcp_params(cfg: &HostConfig, caps: &DeviceCaps, mtu: u16) -> TcpParams {
    let o = caps.offload;
    let offload = cfg.nic == Nic::Device && o.tx_checksum;
    TcpParams {
        mss: Some(mtu.saturating_sub(40)),
        csum_offload: offload,
        tso_max: if offload {
            u32::try_from(o.tso4_max).unwrap_or(u32::MAX)
        } else {
            0
        },
        seed: cfg.tcp_seed,
        max_connections: cfg.tcp_max_connections,
    }
}

/// The host's module graph, declared on a [`GraphBuilder`] from the
/// typed configuration: ICMP and the configured protocols (UDP, TCP, the
/// RPC stack, the user's [`HostConfig::upper`]) over IP over ARP over ETH
/// over the driver. Instances are declared in the order the graph files
/// write them (`graphs/host.graph`), which is also the order the stack
/// initializes ties in.
pub(super) fn host_graph(
    cfg: &HostConfig,
    caps: &DeviceCaps,
    mac: MacAddr,
    specs: &SpecRegistry,
) -> Result<ModuleGraph, GraphErrors> {
    // IPv4 over Ethernet: at most 1500 bytes (RFC 894), less if the
    // device says so.
    let mtu = u16::try_from(caps.mtu).unwrap_or(1500).min(1500);
    let mut b = GraphBuilder::new(specs);
    b.instance("icmp", ICMP_SPEC.name);
    b.connect(("icmp", "down"), ("ip", "up"));
    if cfg.udp {
        b.instance("udp", UDP_SPEC.name);
        b.connect(("udp", "down"), ("ip", "up"));
    }
    if cfg.tcp {
        b.typed("tcp", &tcp_params(cfg, caps, mtu));
        b.connect(("tcp", "down"), ("ip", "up"));
    }
    if let Some(net) = cfg.rpc {
        let below = match net {
            pathstack_rpc::modules::RpcNet::Eth => "eth",
            pathstack_rpc::modules::RpcNet::Ip => "ip",
        };
        pathstack_rpc::modules::RpcGraph::declare(&mut b, net, below, mtu, cfg.rpc_call_timeout);
    }
    for m in &cfg.upper {
        let mut i = b.instance(m.name.as_str(), m.module.as_str());
        for (k, v) in &m.params {
            i = i.param(k.as_str(), v);
        }
        for (service, below) in &m.over {
            let below = match below {
                Below::Udp => "udp",
                Below::Tcp => "tcp",
                Below::Ip => "ip",
                Below::Eth => "eth",
                Below::Instance(name) => name.as_str(),
            };
            b.connect((m.name.as_str(), service.as_str()), (below, "up"));
        }
    }
    b.typed(
        "ip",
        &IpParams {
            addr: cfg.addr,
            prefix_len: cfg.prefix_len,
            mtu,
            gateway: cfg.gateway,
        },
    );
    b.typed("arp", &ArpParams { ip: cfg.addr, mac });
    b.typed("eth", &EthParams { mac });
    match cfg.nic {
        Nic::Device => b.typed(
            "dev",
            &DriverParams {
                device: 0,
                rx_burst: cfg.rx_burst,
            },
        ),
        // The adapter's address filter must accept the frames ETH expects.
        Nic::Lance(access) => b.typed(
            "dev",
            &LanceParams {
                device: 0,
                access,
                mac: Some(mac.0),
                rx_burst: cfg.rx_burst,
            },
        ),
    };
    b.connect(("ip", "down"), ("arp", "up"));
    b.connect(("arp", "down"), ("eth", "up"));
    b.connect(("eth", "down"), ("dev", "up"));
    b.build()
}

impl Host {
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
    /// use pathstack::memory_pair;
    /// let small = StackConfig {
    ///     pool: PoolConfig::small(64),
    ///     max_paths: 64,
    ///     max_timers: 256,
    ///     ..StackConfig::default()
    /// };
    /// let (a, _b) = memory_pair(Default::default());
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
        let mut types = crate::module_types();
        types.extend(&cfg.module_types);
        let graph = host_graph(&cfg, &caps, mac, &types.specs())?;
        let mut host = Self::from_stack_parts(graph, types, stack, cfg.specialize, device)?;
        host.tcp_sockets.config = cfg.tcp_config;
        Ok(host)
    }

    /// Builds a host from a graph file in the `config.graph` syntax (see
    /// `graphs/host.graph`) on `device` (device 0 of the graph). The graph
    /// needs an `ICMP` instance (for [`Host::ping`]); sockets need a `UDP`
    /// (or `TCP`) instance; the host's address is that of the first
    /// interface of the `IP` instance. Instances are found by their type,
    /// so the file may name them as it likes (the first of a type is the
    /// host's).
    ///
    /// ```
    /// use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    /// use pathstack::host::Host;
    /// let (a, _b) = memory_pair(MemoryConfig::default());
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
        let types = crate::module_types();
        let graph = ModuleGraph::from_text(text, Some(source), &types.specs())?;
        Self::from_stack_parts(graph, types, config, specialize, device)
    }

    /// The host on a checked `graph` of `types`: the stack, and the
    /// host's protocols found in it by type (ICMP, IP, UDP, TCP, the RPC
    /// stack), whatever their instance names.
    fn from_stack_parts(
        graph: ModuleGraph,
        types: pathstack_core::stack::ModuleTypes,
        config: StackConfig,
        specialize: bool,
        device: impl Device + 'static,
    ) -> Result<Host, HostError> {
        let rx_waiter = device.rx_waiter();
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
            .module_of::<IcmpModule>()
            .and_then(|(_, icmp)| icmp.path())
            .ok_or(HostError::NoIcmp)?;
        let iface = stack
            .module_of::<IpModule>()
            .and_then(|(_, ip)| ip.interfaces().first())
            .copied();
        let udp = stack.module_of::<UdpModule>().map(|(id, _)| id);
        let tcp = stack.module_of::<TcpModule>().map(|(id, _)| id);
        let sockets = UdpSockets::new(HostId::next(), udp, iface);
        let tcp_sockets = TcpSockets::new(tcp, None);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::UpperModule;
    use pathstack_core::device::OffloadCaps;

    fn caps(offload: OffloadCaps) -> DeviceCaps {
        DeviceCaps {
            mtu: 1500,
            link_header: 14,
            mac: None,
            offload,
        }
    }

    /// TCP's offload parameters for `cfg` on a device with `caps`.
    fn offload(cfg: &HostConfig, caps: &DeviceCaps) -> (bool, u32) {
        let p = tcp_params(cfg, caps, 1500);
        (p.csum_offload, p.tso_max)
    }

    #[test]
    fn tcp_offload_follows_the_device_and_only_without_an_adapter() {
        let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
        assert_eq!(offload(&cfg, &caps(OffloadCaps::NONE)), (false, 0));
        let tap = OffloadCaps {
            tx_checksum: true,
            rx_checksum: true,
            tso4_max: 65_535,
            rx_gro: true,
        };
        assert_eq!(offload(&cfg, &caps(tap)), (true, 65_535));
        let csum_only = OffloadCaps {
            tso4_max: 0,
            rx_gro: false,
            ..tap
        };
        assert_eq!(offload(&cfg, &caps(csum_only)), (true, 0));
        // The emulated LANCE copies frames: no offloads through it.
        cfg.nic = Nic::Lance(pathstack_devices::Access::Copy);
        assert_eq!(offload(&cfg, &caps(tap)), (false, 0));
    }

    /// The graph text the host wrote before it used the builder (the
    /// reference: `HostGraph` with every typed value formatted by hand),
    /// for the configurations the equivalence test tries.
    fn text_graph(cfg: &HostConfig, caps: &DeviceCaps, mac: MacAddr) -> String {
        use pathstack_inet::modules::HostGraph;
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
            let o = caps.offload;
            let mut off = String::new();
            if cfg.nic == Nic::Device && o.tx_checksum {
                off.push_str(" csum_offload=true");
                if o.tso4_max > 0 {
                    off.push_str(&format!(" tso_max={}", o.tso4_max));
                }
            }
            let seed = cfg.tcp_seed.map_or(String::new(), |s| format!(" seed={s}"));
            let max = cfg
                .tcp_max_connections
                .map_or(String::new(), |n| format!(" max_connections={n}"));
            g.upper.push((
                format!("name=tcp module=TCP mss={}{off}{seed}{max};", g.mtu - 40),
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
        g.to_text()
    }

    /// A graph as comparable data: instances (name, type, parameters),
    /// connections (both ends by name, `<` markers), initialization order.
    type Shape = (
        Vec<(String, String, Vec<(String, String)>)>,
        Vec<(String, String, [bool; 2])>,
        Vec<String>,
    );

    fn shape(g: &ModuleGraph) -> Shape {
        let instances = g
            .instances()
            .iter()
            .map(|i| {
                let params = i.params.iter().map(|(k, v)| (k.clone(), v.clone()));
                (i.name.clone(), i.spec.name.to_string(), params.collect())
            })
            .collect();
        let connections = g
            .connections()
            .iter()
            .map(|c| (g.link_name(c.ends[0]), g.link_name(c.ends[1]), c.marked))
            .collect();
        let order = g
            .init_order()
            .iter()
            .map(|&i| g.instance(i).name.clone())
            .collect();
        (instances, connections, order)
    }

    #[test]
    fn the_built_graph_is_the_one_the_text_gave() {
        let specs = crate::module_specs();
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let tap = OffloadCaps {
            tx_checksum: true,
            rx_checksum: true,
            tso4_max: 65_535,
            rx_gro: true,
        };
        let base = HostConfig::parse("10.0.0.1/24").unwrap();
        let configs = [
            (base.clone(), caps(OffloadCaps::NONE)),
            (
                HostConfig {
                    gateway: Some("10.0.0.254".parse().unwrap()),
                    tcp_seed: Some(7),
                    rx_burst: Some(1),
                    ..base.clone()
                },
                caps(tap),
            ),
            (
                HostConfig {
                    udp: false,
                    nic: Nic::Lance(pathstack_devices::Access::Direct),
                    rpc: Some(pathstack_rpc::modules::RpcNet::Ip),
                    rpc_call_timeout: std::time::Duration::from_millis(2500),
                    ..base.clone()
                },
                DeviceCaps {
                    mtu: 9000,
                    ..caps(tap)
                },
            ),
            (
                HostConfig {
                    tcp: false,
                    rpc: Some(pathstack_rpc::modules::RpcNet::Eth),
                    ..base.clone()
                },
                DeviceCaps {
                    mtu: 1400,
                    ..caps(OffloadCaps::NONE)
                },
            ),
        ];
        for (cfg, caps) in configs {
            let built = host_graph(&cfg, &caps, mac, &specs).unwrap();
            let text = text_graph(&cfg, &caps, mac);
            let parsed = ModuleGraph::from_text(&text, None, &specs).unwrap();
            assert_eq!(shape(&built), shape(&parsed), "{text}");
        }
    }

    #[test]
    fn the_default_host_is_graphs_host_graph_with_tcp() {
        // `graphs/host.graph` is the default host without TCP.
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../graphs/host.graph");
        let specs = crate::module_specs();
        let from_file = ModuleGraph::from_file(file, &specs).unwrap();
        let cfg = HostConfig {
            tcp: false,
            ..HostConfig::parse("10.0.0.1/24").unwrap()
        };
        let mac = MacAddr([2, 0, 0, 0, 0, 1]);
        let built = host_graph(&cfg, &caps(OffloadCaps::NONE), mac, &specs).unwrap();
        assert_eq!(shape(&built), shape(&from_file));
    }

    #[test]
    fn upper_modules_connect_to_the_protocols_named_by_kind() {
        let specs = crate::module_specs();
        let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
        cfg.upper = vec![
            UpperModule::new("app", "ECHO")
                .param("mode", "echo")
                .over("down", Below::Udp),
            UpperModule::new("tap", "ECHO")
                .param("mode", "sink")
                .over("down", Below::Ip),
        ];
        let g = host_graph(
            &cfg,
            &caps(OffloadCaps::NONE),
            MacAddr([2, 0, 0, 0, 0, 1]),
            &specs,
        )
        .unwrap();
        let (instances, connections, _) = shape(&g);
        assert!(instances.contains(&(
            "app".into(),
            "ECHO".into(),
            vec![("mode".into(), "echo".into())]
        )));
        assert!(connections.contains(&("app.down".into(), "udp.up".into(), [false; 2])));
        assert!(connections.contains(&("tap.down".into(), "ip.up".into(), [false; 2])));
        // A type the host does not know is a graph error, not a panic.
        cfg.upper = vec![UpperModule::new("x", "NOSUCH").over("down", Below::Udp)];
        assert!(host_graph(
            &cfg,
            &caps(OffloadCaps::NONE),
            MacAddr([2, 0, 0, 0, 0, 1]),
            &specs
        )
        .is_err());
    }

    /// The SYN a host with TCP seed `seed` sends to 10.0.0.2:80 from port
    /// 40000 at a fixed time, its neighbour known.
    fn syn(seed: Option<u64>) -> Vec<u8> {
        use pathstack_core::device::memory::{memory_pair, MemoryConfig};
        use pathstack_core::Device;
        let (a, mut b) = memory_pair(MemoryConfig::default());
        let cfg = HostConfig {
            mac: Some(MacAddr([2, 0, 0, 0, 0, 1])),
            tcp_seed: seed,
            ..HostConfig::parse("10.0.0.1/24").unwrap()
        };
        let mut h = Host::new(cfg, a).unwrap();
        h.set_manual_clock(pathstack_core::Instant::from_millis(5));
        h.add_neighbor("10.0.0.2".parse().unwrap(), MacAddr([2, 0, 0, 0, 0, 2]))
            .unwrap();
        let _s = h
            .tcp()
            .connect_with("0.0.0.0:40000", "10.0.0.2:80", Default::default());
        h.stack_mut().poll(pathstack_core::Instant::from_millis(5));
        let pool = h.stack().pool().clone();
        std::iter::from_fn(|| {
            b.receive(&pool, pathstack_core::Instant::from_millis(5))
                .unwrap()
        })
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
