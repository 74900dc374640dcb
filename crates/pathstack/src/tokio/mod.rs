//! Async UDP sockets on a [`Host`](crate::host::Host) driven by a tokio
//! task (feature `tokio`, on by default).
//!
//! A [`Net`] owns the host. Its driver ([`Net::run`], or [`Net::spawn`])
//! polls the stack, wakes the socket tasks whose paths received datagrams,
//! and sleeps until there is something to do: the TAP file descriptor
//! turns readable (tokio's `AsyncFd`), the stack's next timer is due
//! ([`Stack::poll_at`](pathstack_core::Stack::poll_at)), or a socket
//! queued a datagram. [`UdpSocket`]'s methods mirror
//! `tokio::net::UdpSocket`'s; a send runs the stack at once in the
//! sending task, so a datagram leaves without waiting for the driver.
//!
//! The stack is single-threaded (one stack per core): use a
//! current-thread runtime. [`Net`] is `Send` and `Sync` (the host sits
//! behind a mutex that is never held across an `await`), so
//! `tokio::spawn` works too, but the tasks then take turns on the stack.
//!
//! Without a file descriptor to wait on — the in-memory wire — the driver
//! cannot learn that a frame arrived, so it polls: it yields to the other
//! tasks for a few rounds after the last work, then polls every
//! millisecond (see [`Net::new`]).
//!
//! A UDP echo over the in-memory wire, both hosts in one runtime:
//!
//! ```
//! use pathstack::core::device::wire::{wire_pair, WireConfig};
//! use pathstack::host::{Host, HostConfig};
//! use pathstack::tokio::{Net, UdpSocket};
//! use std::net::SocketAddr;
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> std::io::Result<()> {
//!     let (a, b) = wire_pair(WireConfig::default());
//!     let client = Net::new(Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap());
//!     let server = Net::new(Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap());
//!     client.spawn();
//!     server.spawn();
//!
//!     let echo = UdpSocket::bind(&server, "0.0.0.0:7".parse::<SocketAddr>().unwrap()).await?;
//!     tokio::spawn(async move {
//!         let mut buf = [0u8; 1500];
//!         while let Ok((n, peer)) = echo.recv_from(&mut buf).await {
//!             echo.send_to(&buf[..n], peer).await.unwrap();
//!         }
//!     });
//!
//!     let sock = UdpSocket::bind(&client, "0.0.0.0:0".parse::<SocketAddr>().unwrap()).await?;
//!     sock.send_to(b"hello", "10.0.0.2:7".parse::<SocketAddr>().unwrap()).await?;
//!     let mut buf = [0u8; 64];
//!     let (n, from) = sock.recv_from(&mut buf).await?;
//!     assert_eq!(&buf[..n], b"hello");
//!     assert_eq!(from.to_string(), "10.0.0.2:7");
//!     Ok(())
//! }
//! ```
//!
//! On a TAP device, give the driver the device's file descriptor with
//! [`Net::tap`] (or [`Net::with_fd`]); see `examples/udp_echo.rs`.

mod net;
mod udp;
mod waiters;

pub use net::Net;
pub use udp::UdpSocket;
