//! [`HostError`]: why a host could not be made or used, and the
//! [`std::io::Error`] each reason becomes, so that `Host::new(..)?` works
//! in a function returning `std::io::Result` (issue 27, problem 4).

use super::ConfigError;
use pathstack_core::msg::MsgError;
use pathstack_core::DropReason;
use pathstack_devices::TapError;
use pathstack_inet::arp::cache::StaticEntryError;
use pathstack_inet::modules::CidrError;
use std::io;
use std::net::Ipv4Addr;

/// Why a host could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The address did not parse.
    #[error(transparent)]
    Address(#[from] CidrError),
    /// The device has no MAC address and none was given.
    #[error("the device has no MAC address; give one (--mac)")]
    NoMac,
    /// The generated graph did not check (a bug, or a bad driver line).
    #[error("host graph: {0}")]
    Graph(#[from] pathstack_core::graph::GraphErrors),
    /// The stack could not be built.
    #[error("building the host stack: {0}")]
    Stack(#[from] pathstack_core::StackError),
    /// The ICMP path is missing (the graph has no ICMP).
    #[error("the host graph has no ICMP path")]
    NoIcmp,
    /// The echo request could not be made (no buffer, or `data` too long
    /// for the pool's largest buffer).
    #[error("making the echo request: {0}")]
    EchoRequest(#[from] MsgError),
    /// The device failed for good (a TAP deleted under the host).
    #[error(transparent)]
    Device(#[from] pathstack_core::device::DeviceFailure),
    /// The configuration names addresses no host can use.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No route leads to the address: it is on no attached network and
    /// the host has no gateway (ping(8) says "Network is unreachable").
    #[error("no route to {0}: it is on no attached network and the host has no gateway")]
    NoRoute(Ipv4Addr),
    /// A stage of the ICMP path dropped the echo request (counted in
    /// [`Host::report`](super::Host::report)).
    #[error("the echo request to {dst} was dropped: {reason}")]
    Dropped {
        /// Where the request was going.
        dst: Ipv4Addr,
        /// Why it was dropped.
        reason: DropReason,
    },
    /// ICMP's source queue is full: earlier requests still wait for the
    /// scheduler.
    #[error("ICMP path source queue full")]
    QueueFull,
    /// Waiting on the TAP device failed.
    #[error(transparent)]
    Wait(#[from] TapError),
    /// The graph has no `ARP` instance named `arp` to hold a static
    /// neighbour ([`Host::add_neighbor`](super::Host::add_neighbor)).
    #[error("the host graph has no ARP instance named \"arp\"")]
    NoArp,
    /// A static neighbour was refused.
    #[error("static neighbour: {0}")]
    Neighbor(#[from] StaticEntryError),
    /// A graph file could not be read.
    #[error("reading graph file {path}: {source}")]
    GraphFile {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl HostError {
    /// The [`io::ErrorKind`] this error becomes.
    pub fn kind(&self) -> io::ErrorKind {
        use io::ErrorKind as K;
        match self {
            // What the caller gave: a configuration, a graph, a parameter.
            HostError::Address(_)
            | HostError::Config(_)
            | HostError::NoMac
            | HostError::Graph(_)
            | HostError::Stack(_) => K::InvalidInput,
            HostError::NoIcmp | HostError::NoArp => K::Unsupported,
            HostError::Neighbor(StaticEntryError::Full { .. }) => K::OutOfMemory,
            HostError::Neighbor(_) => K::InvalidInput,
            HostError::EchoRequest(MsgError::TooLarge { .. }) => K::InvalidInput,
            HostError::EchoRequest(_) => K::OutOfMemory,
            // ping(8)'s "Network is unreachable" (ENETUNREACH).
            HostError::NoRoute(_) => K::NetworkUnreachable,
            HostError::Dropped { .. } => K::Other,
            // Earlier requests still wait: try again after a poll.
            HostError::QueueFull => K::WouldBlock,
            HostError::Wait(t) => t.kind(),
            HostError::Device(f) => f.kind,
            HostError::GraphFile { source, .. } => source.kind(),
        }
    }
}

impl From<HostError> for io::Error {
    fn from(e: HostError) -> Self {
        io::Error::new(e.kind(), e)
    }
}
