//! packetdrill's shared-object interface onto a pathstack host.
//!
//! [packetdrill](https://github.com/google/packetdrill) tests a TCP stack
//! with scripts of system calls and the packets they must cause. Run with
//! `--so_filename=libpathstack_packetdrill.so`, it drives a stack of ours
//! instead of the kernel's: it `dlopen`s this library, calls
//! [`packetdrill_interface_init`], and from then on makes every socket
//! call, every injected packet (`netdev_send`), every sniff of an outgoing
//! packet (`netdev_receive`) and every reading or passing of time
//! (`gettimeofday`, `usleep`) through the function table that call fills
//! (`struct packetdrill_interface` of packetdrill's `packetdrill.h`).
//!
//! Behind the table is one [`Session`]: a [`pathstack::Host`] on one end of
//! the in-memory wire, whose other end the shim holds
//! ([`Link`](link::Link): it adds and strips the Ethernet header, since
//! packetdrill's packets are bare IP datagrams, and answers ARP), a
//! table of small-integer file descriptors ([`FdTable`](fd_table::FdTable)),
//! and a clock that only packetdrill moves ([`Timeline`](timeline::Timeline)):
//! time advances when packetdrill sleeps or reads the time, and the host is
//! polled at every timer on the way, so a script's timings (RTOs, delayed
//! ACKs, TIME-WAIT) are exact and a run is reproducible.
//!
//! The Linux settings the scripts assume (the kernel selftests'
//! `defaults.sh`) are mapped onto [`TcpConfig`](pathstack::inet::tcp::TcpConfig)
//! where they are behaviour ([`linux_defaults`]); `docs/packetdrill.md`
//! says how to build packetdrill, where the scripts come from (both are GPL
//! code written elsewhere and never part of this repository), and what
//! `scripts/packetdrill.sh` reports.
//!
//! # Why this crate has `unsafe`
//!
//! The project allows `unsafe` only in the device crate's system calls.
//! This crate is the second exception, and for the same reason: its
//! interface *is* a C ABI of raw pointers (buffers, `sockaddr`s, `iovec`s,
//! `pollfd` arrays, `errno`) that no safe Rust can receive. All of it is in
//! one file, [`ffi`], every block with a `// SAFETY:` comment; it turns the
//! pointers into slices and plain values at once and calls the safe
//! [`Session`]. Everything else is `#![deny(unsafe_code)]` by module.
//!
//! Unsupported calls (epoll, pipe, splice, UDP sockets, IPv6, Linux-only
//! socket options) return `-1` with `errno` set to `EOPNOTSUPP` (or what
//! Linux returns for the case, such as `EAFNOSUPPORT`), which packetdrill
//! reports as a mismatch of the script's expected result.

mod calls;
pub mod errno;
pub mod fd_table;
pub mod ffi;
pub mod flags;
pub mod link;
pub mod linux_defaults;
pub mod poll;
pub mod session;
pub mod sockopt;
pub mod timeline;
pub mod tun_device;

pub use errno::Errno;
pub use ffi::{packetdrill_interface_init, PacketdrillInterface};
pub use flags::ShimFlags;
pub use session::Session;
