//! Two hosts on the in-memory wire, each behind a tokio [`Net`], for the
//! tokio API tests (`tokio_tcp`, `tokio_udp`): host A at [`A`], host B at
//! [`B`], both on 10.0.0.0/24.
//!
//! Included by each of those tests with
//! `#[path = "support/wire_nets.rs"] mod wire_nets;`; not every test uses
//! every item.
#![allow(dead_code)]

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::host::{Host, HostConfig};
use pathstack::tokio::Net;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

/// How long a step of a test may take before it counts as hung.
pub const LIMIT: Duration = Duration::from_secs(20);

/// `f` within [`LIMIT`], or the test fails saying what hung.
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no progress in {LIMIT:?}"))
}

/// Host A's address.
pub const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
/// Host B's address.
pub const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// `ip`:`port` as a socket address.
pub fn addr(ip: Ipv4Addr, port: u16) -> SocketAddr {
    SocketAddrV4::new(ip, port).into()
}

/// Hosts A and B on a wire of the default configuration; each [`Net`]'s
/// driver starts with it (inside the runtime).
pub fn nets() -> (Net, Net) {
    let (da, db) = memory_pair(MemoryConfig::default());
    let net = |ip: Ipv4Addr, dev| {
        let cfg = HostConfig::parse(&format!("{ip}/24")).expect("a host address");
        Net::new(Host::new(cfg, dev).expect("host"))
    };
    (net(A, da), net(B, db))
}
