//! Async UDP sockets and TCP streams on a [`Host`](crate::host::Host)
//! driven by a tokio task (feature `tokio`, on by default).
//!
//! A [`Net`] owns the host and its driver, a task that starts when the
//! net is made inside a runtime (outside one: [`Net::spawn`] or
//! [`Net::run`] later). The driver polls the stack, wakes the socket
//! tasks whose paths received datagrams, and sleeps until there is
//! something to do: a frame arrives (the TAP file descriptor turns
//! readable through tokio's `AsyncFd`, or the in-memory wire wakes the
//! driver's task), the stack's next timer is due
//! ([`Stack::poll_at`](pathstack_core::Stack::poll_at)), or a socket
//! queued data. [`UdpSocket`]'s methods mirror `tokio::net::UdpSocket`'s,
//! [`TcpListener`]'s, [`TcpStream`]'s and [`TcpSocket`]'s those of
//! tokio's TCP types (and the stream is tokio's `AsyncRead`/`AsyncWrite`,
//! so hyper, `tokio-util` codecs and `tokio::io::copy` use it unchanged). A send or write runs
//! the stack at once in the sending task, so data leaves without waiting
//! for the driver.
//!
//! After each poll the driver wakes only the tasks whose wait is over: a
//! UDP receiver whose socket has a datagram, a TCP reader whose stream has
//! data (or its end, or an error), a TCP writer whose send buffer has
//! room, a connect whose handshake is done, an accept whose listener has
//! a connection. Each wait list is bounded.
//!
//! The stack is single-threaded (one stack per core): use a
//! current-thread runtime. [`Net`] is `Send` and `Sync` (the host sits
//! behind a mutex that is never held across an `await`), so
//! `tokio::spawn` works too, but the tasks then take turns on the stack.
//!
//! On the in-memory wire, which has no file descriptor, the driver awaits
//! the wire's waker instead: the transmitting end wakes it, so it sleeps
//! until a frame arrives, the next timer is due or a socket sends. Only on
//! a device that offers neither does it poll (see [`Net::new`]).
//!
//! A UDP echo over the in-memory wire, both hosts in one runtime:
//!
//! ```
//! use pathstack::core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack::host::Host;
//! use pathstack::tokio::{Net, UdpSocket};
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> std::io::Result<()> {
//!     let (a, b) = memory_pair(MemoryConfig::default());
//!     // Made in the runtime, each net starts its driver.
//!     let client = Net::new(Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap());
//!     let server = Net::new(Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap());
//!
//!     let echo = UdpSocket::bind(&server, "0.0.0.0:7").await?;
//!     tokio::spawn(async move {
//!         let mut buf = [0u8; 1500];
//!         while let Ok((n, peer)) = echo.recv_from(&mut buf).await {
//!             echo.send_to(&buf[..n], peer).await.unwrap();
//!         }
//!     });
//!
//!     let sock = UdpSocket::bind(&client, "0.0.0.0:0").await?;
//!     sock.connect("10.0.0.2:7").await?;
//!     sock.send(b"hello").await?;
//!     let mut buf = [0u8; 64];
//!     let n = sock.recv(&mut buf).await?;
//!     assert_eq!(&buf[..n], b"hello");
//!     Ok(())
//! }
//! ```
//!
//! An HTTP exchange with hyper on both ends takes no more than the streams:
//!
//! ```
//! use bytes::Bytes;
//! use http_body_util::{BodyExt, Full};
//! use hyper_util::rt::TokioIo;
//! use pathstack::core::device::memory::{memory_pair, MemoryConfig};
//! use pathstack::host::Host;
//! use pathstack::tokio::{Net, TcpListener, TcpStream};
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let (a, b) = memory_pair(MemoryConfig::default());
//!     let client = Net::new(Host::new("10.0.0.1/24".parse()?, a)?);
//!     let server = Net::new(Host::new("10.0.0.2/24".parse()?, b)?);
//!
//!     let listener = TcpListener::bind(&server, "0.0.0.0:80").await?;
//!     tokio::spawn(async move {
//!         let (stream, _peer) = listener.accept().await.unwrap();
//!         let hello = hyper::service::service_fn(|_req| async {
//!             Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(Bytes::from("hi"))))
//!         });
//!         hyper::server::conn::http1::Builder::new()
//!             .serve_connection(TokioIo::new(stream), hello)
//!             .await
//!             .unwrap();
//!     });
//!
//!     let stream = TcpStream::connect(&client, "10.0.0.2:80").await?;
//!     let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
//!     tokio::spawn(conn);
//!     let req = hyper::Request::get("/").header("host", "10.0.0.2").body(Full::new(Bytes::new()))?;
//!     let body = send.send_request(req).await?.into_body().collect().await?.to_bytes();
//!     assert_eq!(body, "hi");
//!     Ok(())
//! }
//! ```
//!
//! # Do not block the runtime
//!
//! The stack is a task of your runtime: the [`Net`]'s driver answers ARP,
//! acknowledges TCP data, retransmits and fires timers only when the
//! runtime polls it. With kernel sockets the kernel does that work
//! whatever your tasks do; here a task that blocks its worker thread
//! (`std::thread::sleep`, a blocking read, a long computation, a
//! `std::sync::Mutex` held across a wait) stalls the stack for as long as
//! the driver's task waits behind it: on a `current_thread` runtime every
//! socket of every net stops, ARP requests go unanswered and peers'
//! retransmission timers run. Use `tokio::task::spawn_blocking` (or
//! `block_in_place` on a multi-thread runtime) for blocking work, keep
//! [`Net::with_host`] closures short, and prefer a multi-thread runtime
//! for a server that does heavy work between awaits.
//!
//! Or take the stack off your runtime: [`Net::on_own_thread`] runs the
//! driver on a thread and runtime of its own, so the stack keeps answering
//! while your runtime is blocked. Its sockets are used from your runtime
//! as any others (they wait on wakers; a `tokio::time::timeout` around a
//! call runs on your runtime); only your tasks stall.
//!
//! # Errors
//!
//! A socket call never waits for a driver that is not there: made outside
//! a runtime and not spawned, or after the driver ended (a panic, a
//! device error, [`Net::shutdown`], its runtime shutting down), pending
//! and later calls fail with a [`DriverError`] saying which. The network's
//! errors reach the sockets as in the synchronous API
//! ([`crate::socket`]): no route fails a send with `NetworkUnreachable`;
//! a connected socket reports `HostUnreachable` after ARP gave up and
//! `ConnectionRefused` after an ICMP port unreachable on its next call
//! (a waiting receive wakes with it), or through
//! [`UdpSocket::take_error`]. A TCP stream's errors are its connection's
//! ([`TcpError`](crate::inet::tcp::TcpError)), with Linux's kinds: a
//! refused connect is `ConnectionRefused`, a reset `ConnectionReset`,
//! unanswered retransmissions `TimedOut`, a write after shutdown
//! `BrokenPipe`.
//!
//! # Porting from `tokio::net::UdpSocket`
//!
//! [`UdpSocket`] has tokio's methods with tokio's signatures and
//! semantics: `bind` and `connect` take any `tokio::net::ToSocketAddrs`,
//! `connect` is a call on a bound socket, and there are `send`/`recv`,
//! `send_to`/`recv_from`, `peek_from`, `try_send_to`/`try_recv_from`,
//! `try_send`/`try_recv`, `readable`/`writable`,
//! `poll_send_to`/`poll_recv_from`/`poll_send`/`poll_recv`,
//! `local_addr`/`peer_addr`, `set_ttl`/`ttl` and
//! `set_broadcast`/`broadcast`. Every async method is cancel safe, as
//! tokio's are. A program ports by changing its `use` line and the
//! sockets' construction: `examples/tokio_echo_port.rs` and its twin
//! `examples/tokio_echo_twin.rs` differ only there (a test checks it).
//! What remains different, and why:
//!
//! - **Construction**: `UdpSocket::bind(&net, addr)`. A socket belongs to
//!   a user-space host, not to the kernel, so it names its [`Net`].
//! - **IPv4 only**: an IPv6 address fails with an "address family not
//!   supported" error of kind `InvalidInput` (the stack has no IPv6).
//! - **`connect`** moves the socket to a path keyed by both ends: the
//!   datagrams queued before it are discarded (Linux keeps them), and the
//!   port of a connected socket can be bound again by another socket
//!   (Linux refuses without `SO_REUSEADDR`).
//! - **`writable`** says the socket's send queue has room; a send may
//!   still wait for a free message buffer.
//! - **Extra**: [`UdpSocket::recv_from_trunc`] says whether a datagram was
//!   truncated (`MSG_TRUNC`), which tokio cannot tell.
//! - **Missing**: no file descriptor (`as_raw_fd`, `from_std`,
//!   `into_std`), no multicast membership or options, no `set_tos`,
//!   `peek_sender`, `try_peek_from`/`poll_peek_from`, `ready(Interest)`,
//!   `try_io` or the `*_buf` variants: nothing in the stack backs them yet.
//!
//! # Porting from `tokio::net::TcpStream` and `TcpListener`
//!
//! [`TcpStream`] is tokio's `AsyncRead` and `AsyncWrite` (`poll_shutdown`
//! sends a FIN; `poll_flush` has nothing to do, as for tokio's), and has
//! `connect`, `split` (borrowed halves) and `into_split` (owned halves,
//! with `reunite`, and a write half that shuts the writing side when
//! dropped unless `forget` is called), `readable`/`writable`,
//! `poll_read_ready`/`poll_write_ready`, `try_read`/`try_write`/
//! `try_write_vectored`,
//! `peek`/`poll_peek`, `local_addr`/`peer_addr`, `set_nodelay`/`nodelay`
//! and `take_error`, with tokio's signatures. [`TcpListener`] has `bind`
//! (backlog 1024, as tokio's), `accept`, `poll_accept` and `local_addr`.
//! Addresses are any `tokio::net::ToSocketAddrs`, each resolved address
//! tried in turn. Every async method is cancel safe (a cancelled read took
//! nothing, a cancelled write queued nothing, a cancelled accept took no
//! connection, a cancelled connect leaves none behind); the streams are
//! `Send` and `Sync`. What differs, and why:
//!
//! - **Construction**: `TcpListener::bind(&net, addr)` and
//!   `TcpStream::connect(&net, addr)`: a socket belongs to a user-space
//!   host, so it names its [`Net`].
//! - **IPv4 only**, as for UDP.
//! - **Extra**: [`TcpStream::connect_with`] takes the connection's
//!   options ([`TcpConfig`](crate::inet::tcp::TcpConfig): buffers, SYN
//!   retries, timers), which tokio sets through `TcpSocket`.
//! - **Dropping** a stream with unread data resets the connection
//!   (RFC 2525 §2.17, as Linux does); otherwise it closes with a FIN, and
//!   the stack keeps the connection through the close handshake and
//!   TIME-WAIT.
//! - **[`TcpSocket`]** sets options before a connect or listen, as
//!   tokio's: `bind` (taking the port at once, with Linux's
//!   `SO_REUSEADDR` rules), buffer sizes, `nodelay`, `keepalive`,
//!   `linger`, `set_ttl` (on the SYN already); the stream has
//!   `set_linger`, `set_ttl`/`ttl` and `set_keepalive` too.
//! - **Missing**: no file descriptor (`as_raw_fd`, `from_std`,
//!   `into_std`), no `ready(Interest)`, `try_io` or
//!   `try_read_vectored`/`try_read_buf`.
//!
//! On a TAP device, give the driver the device's file descriptor with
//! [`Net::tap`] (or [`Net::with_fd`]); see `examples/udp_echo.rs` and,
//! for an HTTP server with hyper, `tools/src/http.rs` (the `http` tool: `cargo run --release -p pathstack-tools --bin http`).

mod driver;
mod net;
mod own_thread;
mod rpc;
mod tcp_listener;
mod tcp_readiness;
mod tcp_socket;
mod tcp_split;
mod tcp_stream;
mod udp;
mod waiters;

pub use driver::DriverError;
pub use net::Net;
pub use rpc::RpcClient;
pub use tcp_listener::TcpListener;
pub use tcp_socket::{TcpSocket, MAX_BACKLOG};
pub use tcp_split::{OwnedReadHalf, OwnedWriteHalf, ReadHalf, ReuniteError, WriteHalf};
pub use tcp_stream::TcpStream;
pub use udp::UdpSocket;
