//! pathstack: a user-space protocol stack built on the *path* abstraction
//! of the Scout operating system (Mosberger, *Scout: A Path-Based Operating
//! System*, PhD thesis, University of Arizona, 1997, ch. 2–3).
//!
//! An application makes a [`Host`] — an Internet host (Ethernet, ARP,
//! IPv4, ICMP, UDP) on one [`Device`] — and talks UDP through it, with the
//! non-blocking sockets of [`socket`] or the async ones of [`tokio`](mod@crate::tokio).
//! Devices are the in-memory wire ([`memory_pair`]: two hosts in one
//! process, for tests and benchmarks) or a Linux TAP interface
//! ([`TapDevice`]); [`Nic`] puts an emulated LANCE adapter between the
//! host and its device.
//!
//! Inside, protocols are *modules* wired into a checked module graph, and
//! traffic runs on *paths*: pre-routed slices through the graph, one
//! *stage* per module, found for arriving frames by a demux-tree
//! classifier. The concepts and contracts are in the repository's
//! `docs/design.md`; the parts are re-exported here as [`core`],
//! [`classify`], [`inet`], [`rpc_protocols`] and [`devices`]. With
//! [`HostConfig::rpc`] the host also runs the x-kernel's RPC stack
//! ([`rpc`]): at-most-once remote procedure calls over Ethernet or IP.
//!
//! # Getting started
//!
//! ## UDP over the in-memory wire
//!
//! Two hosts joined by the in-memory wire, one echoing a datagram back to
//! the other. Nothing here blocks: a receive with nothing queued returns
//! `Ok(None)`, and each host moves its frames when it is polled.
//!
//! ```
//! use pathstack::socket::ready;
//! use pathstack::{memory_pair, Host, MemoryConfig};
//! use std::net::SocketAddr;
//!
//! let (a, b) = memory_pair(MemoryConfig::default());
//! let mut client = Host::new("10.0.0.1/24".parse()?, a)?;
//! let mut server = Host::new("10.0.0.2/24".parse()?, b)?;
//!
//! // Addresses as in std::net: "ip:port", SocketAddr, (IpAddr, u16), ...
//! let echo = server.udp().bind("0.0.0.0:7")?;
//! let sock = client.udp().bind("0.0.0.0:0")?; // an ephemeral port
//! let server_addr: SocketAddr = "10.0.0.2:7".parse()?;
//! sock.send_to(&mut client, b"hello", server_addr)?;
//!
//! // Non-blocking as std's sockets: `WouldBlock` when nothing is there
//! // (`ready` makes that `None`); `Host::poll_ready` waits for many.
//! let mut buf = [0u8; 1500];
//! let mut echoed = false;
//! let reply = loop {
//!     client.poll();
//!     server.poll();
//!     if let Some((n, from)) = ready(echo.recv_from(&mut server, &mut buf))? {
//!         echo.send_to(&mut server, &buf[..n], from)?;
//!         echoed = true;
//!     }
//!     if let Some((n, from)) = ready(sock.recv_from(&mut client, &mut buf))? {
//!         break (n, from);
//!     }
//! };
//! assert!(echoed);
//! assert_eq!(&buf[..reply.0], b"hello");
//! assert_eq!(reply.1, server_addr);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The same with tokio
//!
//! A [`tokio::Net`] owns a host and drives it from a
//! task; its [`UdpSocket`](tokio::UdpSocket)s mirror
//! `tokio::net::UdpSocket`. The stack is single-threaded: use a
//! current-thread runtime.
//!
//! ```
//! use pathstack::tokio::{Net, UdpSocket};
//! use pathstack::{memory_pair, Host, HostConfig, MemoryConfig};
//! use std::net::SocketAddr;
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let (a, b) = memory_pair(MemoryConfig::default());
//!     let client = Net::new(Host::new(HostConfig::parse("10.0.0.1/24")?, a)?);
//!     let server = Net::new(Host::new(HostConfig::parse("10.0.0.2/24")?, b)?);
//!     client.spawn();
//!     server.spawn();
//!
//!     let echo = UdpSocket::bind(&server, "0.0.0.0:7").await?;
//!     tokio::spawn(async move {
//!         let mut buf = [0u8; 1500];
//!         while let Ok((n, peer)) = echo.recv_from(&mut buf).await {
//!             if echo.send_to(&buf[..n], peer).await.is_err() {
//!                 break;
//!             }
//!         }
//!     });
//!
//!     let sock = UdpSocket::bind(&client, "0.0.0.0:0").await?;
//!     let server_addr: SocketAddr = "10.0.0.2:7".parse()?;
//!     sock.send_to(b"hello", server_addr).await?;
//!     let mut buf = [0u8; 64];
//!     let (n, from) = sock.recv_from(&mut buf).await?;
//!     assert_eq!(&buf[..n], b"hello");
//!     assert_eq!(from, server_addr);
//!     Ok(())
//! }
//! ```
//!
//! ## A host on a TAP device
//!
//! On Linux a [`TapDevice`] exchanges Ethernet frames with the kernel, so
//! the kernel (or anything routed through it) can ping the host and talk
//! UDP to it. Opening a TAP needs root (`CAP_NET_ADMIN`), and the kernel
//! side needs an address of its own on the TAP's network before it can
//! reach the host — here, while the program runs:
//! `ip addr add 10.0.0.2/24 dev tap0` (the device comes up when opened),
//! then `ping 10.0.0.1` or `echo hi | socat - UDP:10.0.0.1:7`. The `host`
//! tool does all of this in a private network namespace:
//! `sudo cargo run --release -p pathstack-tools --bin host -- --netns --ping`.
//!
//! ```no_run
//! use pathstack::socket::ready;
//! use pathstack::{Host, HostConfig, TapDevice, TapOptions, WaitMode};
//! use std::time::Duration;
//!
//! let tap = TapDevice::open("tap0", TapOptions::new())?; // created if absent
//! let waiter = tap.waiter()?; // sleeps in epoll until the TAP has a frame
//! let mut host = Host::new(HostConfig::parse("10.0.0.1/24")?, tap)?
//!     .with_waiter(waiter, WaitMode::Blocking);
//!
//! // ARP and ping are answered by the stack itself; this echoes UDP port 7.
//! let echo = host.udp().bind("0.0.0.0:7")?;
//! let mut buf = [0u8; 65_535];
//! loop {
//!     host.poll();
//!     while let Some((n, from)) = ready(echo.recv_from(&mut host, &mut buf))? {
//!         echo.send_to(&mut host, &buf[..n], from)?;
//!     }
//!     host.wait(Duration::from_millis(100))?;
//! }
//! # #[allow(unreachable_code)]
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is where
//!
//! | you want | use |
//! |---|---|
//! | an Internet host on a device, its statistics | [`Host`], [`HostConfig`], [`Host::report`] |
//! | UDP sockets, non-blocking | [`Host::udp`] (the view [`socket::Udp`]), [`socket`] |
//! | UDP sockets, async | [`tokio::Net`], [`tokio::UdpSocket`] |
//! | TCP listeners and streams, non-blocking | [`Host::tcp`] (the view [`socket::Tcp`]), [`socket::tcp`] |
//! | remote procedure calls (x-kernel BLAST/BID/CHAN/VCHAN/MSELECT), sync | [`Host::rpc`] (the view [`rpc::Rpc`]), [`HostConfig::rpc`] |
//! | remote procedure calls, async | [`tokio::RpcClient`] |
//! | two hosts in one process | [`memory_pair`], [`MemoryConfig`] |
//! | a Linux TAP interface | [`TapDevice`], [`TapOptions`], [`WaitMode`] |
//! | a device of your own | implement [`Device`] |
//! | the emulated LANCE adapter | [`Nic`] ([`HostConfig::nic`]) |
//! | your own module at the top of a path | [`HostConfig::upper`] ([`host::UpperModule`]), [`HostConfig::module_types`] |
//! | a module graph from a file | [`Host::from_graph_file`], [`module_specs`] |
//! | the core stack under a host (tools, tests that drive the core) | [`Host::stack`], [`Host::stack_mut`] |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use pathstack_classify as classify;
pub use pathstack_core as core;
pub use pathstack_devices as devices;
pub use pathstack_inet as inet;
/// The x-kernel RPC protocols (BLAST, BID, BIDCTL, CHAN, VCHAN, MSELECT)
/// as modules; [`rpc`] is the calls and procedures on a host.
pub use pathstack_rpc as rpc_protocols;

#[doc(inline)]
pub use host::{Host, HostConfig, HostError};
#[doc(inline)]
pub use nic::Nic;
#[doc(inline)]
pub use pathstack_core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
#[doc(inline)]
pub use pathstack_core::device::{Device, DeviceError};
#[doc(inline)]
pub use pathstack_devices::{TapDevice, TapError, TapOptions, WaitMode};

use pathstack_core::graph::spec::SpecRegistry;
use pathstack_core::stack::ModuleTypes;

pub mod host;
mod host_id;
pub mod nic;
mod path_form;
pub mod rpc;
pub mod socket;
#[cfg(feature = "tokio")]
pub mod tokio;

/// Every module type a pathstack graph may use, with its factory: the
/// core's `DRIVER` module and synthetic modules, the Internet modules and the
/// LANCE driver.
pub fn module_types() -> ModuleTypes {
    let mut t = ModuleTypes::core();
    pathstack_inet::modules::register(&mut t);
    pathstack_devices::lance::register(&mut t);
    pathstack_rpc::modules::register(&mut t);
    t
}

/// The specs of every module type, for checking graph files.
///
/// ```
/// let specs = pathstack::module_specs();
/// assert!(specs.get("DRIVER").is_some());
/// assert!(specs.get("UDP").is_some());
/// ```
pub fn module_specs() -> SpecRegistry {
    module_types().specs()
}
