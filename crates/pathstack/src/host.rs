//! An Internet host on one device: the standard host graph (declared
//! from [`HostConfig`], see `build.rs`) or a graph file, a wall clock, a wait strategy, ping,
//! UDP sockets (see [`crate::socket`]), and a statistics report. The `host`
//! example and the TAP integration tests run on it.
//!
//! ```
//! use pathstack::core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack::host::{Host, HostConfig};
//! let (a, b) = memory_pair(MemoryConfig::default());
//! let mut h1 = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
//! let mut h2 = Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap();
//! h1.ping("10.0.0.2".parse().unwrap(), 1, b"hi").unwrap();
//! for _ in 0..10 {
//!     h1.poll();
//!     h2.poll();
//! }
//! assert_eq!(h1.echo_replies().len(), 1);
//! ```

mod build;
mod clock;
mod config;
mod config_check;
mod error;
mod report;
mod upper;

pub use config::HostConfig;
pub use config_check::ConfigError;
pub use error::HostError;
pub use report::report;
pub use upper::{Below, UpperModule};

pub use crate::host_id::HostId;
use crate::socket::linger_table::TcpLingers;
use crate::socket::registrations::Registrations;
use crate::socket::table::UdpSockets;
use crate::socket::tcp_table::TcpSockets;
use pathstack_core::device::RxWaiter;
use pathstack_core::stack::Stack;
use pathstack_core::{Dir, Instant, Msg, PathId, SendError};
use pathstack_devices::{TapWaiter, WaitMode};
use pathstack_inet::modules::{ArpModule, EthModule, IcmpModule};
use pathstack_inet::wire::ipv4::Ipv4DropReason;
use pathstack_inet::MacAddr;
use std::net::Ipv4Addr;
use std::sync::Arc;

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

    /// The MAC address of the host's interface (of its `ETH` instance,
    /// whatever its name).
    pub fn mac(&self) -> Option<MacAddr> {
        self.stack
            .module_of::<EthModule>()
            .map(|(_, eth)| eth.mac())
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
    /// `ARP` instance (as [`Host::new`] makes; any name).
    ///
    /// Several hosts with the same address on the queues of one
    /// multi-queue TAP (`pathstack_devices::TapOptions::multi_queue`, one
    /// host per core) need it for their peers: the kernel steers a
    /// frame to a queue by its flow, so the ARP reply to one host's
    /// request may reach another host, and the asking one never learns
    /// the address.
    ///
    /// ```
    /// use pathstack::core::device::memory::{memory_pair, MemoryConfig};
    /// use pathstack::host::{Host, HostConfig};
    /// use pathstack::inet::MacAddr;
    /// let (a, _b) = memory_pair(MemoryConfig::default());
    /// let mut h = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
    /// h.add_neighbor("10.0.0.2".parse().unwrap(), MacAddr([2, 0, 0, 0, 0, 2])).unwrap();
    /// assert!(h.add_neighbor("10.0.0.3".parse().unwrap(), MacAddr::BROADCAST).is_err());
    /// ```
    pub fn add_neighbor(&mut self, ip: Ipv4Addr, mac: MacAddr) -> Result<(), HostError> {
        let (_, arp) = self
            .stack
            .module_of_mut::<ArpModule>()
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
}

#[cfg(test)]
mod neighbor_tests {
    use super::*;
    use pathstack_core::device::memory::{memory_pair, MemoryConfig};
    use pathstack_core::{Device, MsgPool, PoolConfig};

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
        let (a, mut peer) = memory_pair(MemoryConfig::default());
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
