//! pathstack-devices: real devices for pathstack.
//!
//! - [`TapDevice`]: a Linux TAP interface (`/dev/net/tun`, `IFF_TAP |
//!   IFF_NO_PI`, non-blocking), implementing
//!   [`pathstack_core::device::Device`]; frames are read straight into pool
//!   buffers and written from them, one system call each, with no allocation
//!   per frame. Waiting is blocking ([`TapDevice::wait_readable`], epoll),
//!   busy-polling ([`WaitMode::BusyPoll`]) or async ([`AsyncTap`], tokio,
//!   feature `tokio`, on by default).
//! - [`PcapCapture`]: a device wrapper writing every frame in and out to a
//!   pcap file.
//! - [`lance`]: an emulated Am7990 LANCE with the DEC 3000's sparse shared
//!   memory, and `LANCE`, its driver module ([`lance::LanceModule`]), with
//!   `copy` and `direct` descriptor access.
//! - [`RawResponder`] ([`raw_responder`]): the raw minimal responder (ARP, ICMP echo, UDP
//!   echo, in place): the floor the benchmarks compare pathstack against.
//!
//! Opening a TAP needs `CAP_NET_ADMIN`. `scripts/netns.sh up` builds a test
//! topology (namespaces, veth, bridges, persistent TAPs) and prints its names
//! and addresses; a TAP must be opened inside its namespace, which
//! [`TapOptions::netns`] does:
//!
//! ```no_run
//! use pathstack_core::{Instant, MsgPool, PoolConfig};
//! use pathstack_devices::RawResponder;
//! use pathstack_devices::{PcapCapture, TapDevice, TapOptions, WaitMode};
//! use std::time::Duration;
//!
//! // After `eval "$(scripts/netns.sh up --id 42)"`:
//! let tap = TapDevice::open("psta-42", TapOptions::new().netns("ps-a-42"))?;
//! let mac = tap.mac();
//! let mut dev = PcapCapture::create(tap, "/tmp/floor.pcap")?;
//! let pool = MsgPool::new(PoolConfig::default());
//! let mut floor = RawResponder::new(mac, "10.77.1.1".parse()?);
//! loop {
//!     // Answers `ping 10.77.1.1` from namespace ps-b-42.
//!     floor.serve(&mut dev, &pool, Instant::now())?;
//!     dev.inner().wait(WaitMode::Blocking, Some(Duration::from_millis(100)))?;
//! }
//! # #[allow(unreachable_code)]
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(feature = "tokio")]
mod async_tap;
mod discard_filter;
pub mod lance;
pub mod pcap;
pub mod raw_responder;
mod sys;
pub mod tap;
mod tap_error;
pub mod vnet_hdr;

#[cfg(feature = "tokio")]
pub use async_tap::AsyncTap;
pub use lance::{Access, LanceModule, LANCE_SPEC};
pub use pcap::{CaptureClock, CaptureError, CaptureStats, PcapCapture};
pub use raw_responder::RawResponder;
#[cfg(feature = "tokio")]
pub use sys::register_readable;
pub use tap::{
    host_mac_for, TapDevice, TapError, TapOffloads, TapOptions, TapWaiter, WaitMode, ETH_HEADER_LEN,
};
