//! Kernel TCP servers in a namespace: echo ([`KernelEchoServer`]), sink
//! ([`KernelSinkServer`]) and source ([`KernelSourceServer`]), each an
//! accept loop on its own thread with one thread per connection, stopped
//! on drop.

use super::netns_socket::{kernel_listen, set_timeouts, IO_TIMEOUT};
use super::payload::{annotate, read_to_end_hashed, write_pattern, Transfer, CHUNK};
use crate::Topology;
use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;
// Servers

/// The machinery shared by the servers: an accept loop on its own thread,
/// one thread per connection, results over a channel, everything stopped
/// on drop. Each server dereferences to it for what they all answer
/// (address, next result, connections accepted); `R` is what serving one
/// connection yields.
pub struct KernelServer<R: Send + 'static> {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<HashMap<u32, TcpStream>>>,
    accept: Option<JoinHandle<()>>,
    results: Mutex<Receiver<io::Result<R>>>,
    accepted: Arc<AtomicU32>,
}

impl<R: Send + 'static> KernelServer<R> {
    fn start<H>(topo: &Topology, ns_key: &str, addr: SocketAddr, handler: H) -> KernelServer<R>
    where
        H: Fn(TcpStream) -> io::Result<R> + Send + Sync + 'static,
    {
        let listener = kernel_listen(topo, ns_key, addr)
            .unwrap_or_else(|e| panic!("kernel listener on {addr} in {ns_key}: {e}"));
        let addr = listener.local_addr().expect("listener address");
        listener
            .set_nonblocking(true)
            .expect("nonblocking listener");
        let stop = Arc::new(AtomicBool::new(false));
        let conns = Arc::new(Mutex::new(HashMap::new()));
        let accepted = Arc::new(AtomicU32::new(0));
        let (tx, results) = mpsc::channel();
        let handler = Arc::new(handler);
        let accept = {
            let (stop, conns, accepted) = (stop.clone(), conns.clone(), accepted.clone());
            thread::Builder::new()
                .name(format!("kernel-server-{addr}"))
                .spawn(move || accept_loop(listener, stop, conns, accepted, tx, handler))
                .expect("spawn the accept thread")
        };
        KernelServer {
            addr,
            stop,
            conns,
            accept: Some(accept),
            results: Mutex::new(results),
            accepted,
        }
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits up to `timeout` for the next connection to be served (echoed
    /// to its end, read to EOF, sent its stream); returns what serving it
    /// yielded, or its error.
    pub fn next(&self, timeout: Duration) -> io::Result<R> {
        match self.results.lock().unwrap().recv_timeout(timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(io::Error::new(
                ErrorKind::TimedOut,
                format!(
                    "no connection to {} finished within {timeout:?} ({} accepted so far)",
                    self.addr,
                    self.accepted.load(Ordering::Relaxed)
                ),
            )),
            Err(RecvTimeoutError::Disconnected) => {
                Err(io::Error::other("the server's accept loop ended"))
            }
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u32 {
        self.accepted.load(Ordering::Relaxed)
    }
}

fn accept_loop<R, H>(
    listener: TcpListener,
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<HashMap<u32, TcpStream>>>,
    accepted: Arc<AtomicU32>,
    tx: Sender<io::Result<R>>,
    handler: Arc<H>,
) where
    R: Send + 'static,
    H: Fn(TcpStream) -> io::Result<R> + Send + Sync + 'static,
{
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, peer)) => {
                let id = accepted.fetch_add(1, Ordering::Relaxed);
                let setup = s
                    .set_nonblocking(false)
                    .and_then(|()| set_timeouts(&s, IO_TIMEOUT))
                    .and_then(|()| s.try_clone());
                let clone = match setup {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        continue;
                    }
                };
                conns.lock().unwrap().insert(id, clone);
                let (tx, handler, conns) = (tx.clone(), handler.clone(), conns.clone());
                let spawned = thread::Builder::new()
                    .name(format!("kernel-conn-{peer}"))
                    .spawn(move || {
                        let r =
                            handler(s).map_err(|e| annotate(e, format!("connection from {peer}")));
                        // Close the connection (also after an error, so the
                        // peer notices): drop the last handle.
                        if let Some(c) = conns.lock().unwrap().remove(&id) {
                            if r.is_err() {
                                let _ = c.shutdown(Shutdown::Both);
                            }
                        }
                        let _ = tx.send(r);
                    });
                if let Err(e) = spawned {
                    eprintln!("kernel server: cannot spawn a connection thread: {e}");
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => {
                thread::sleep(Duration::from_millis(2));
            }
            Err(e) => {
                let _ = tx.send(Err(annotate(e, "accept".into())));
                thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

impl<R: Send + 'static> Drop for KernelServer<R> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Unblock the connection threads; they end on the error.
        for (_, c) in self.conns.lock().unwrap().drain() {
            let _ = c.shutdown(Shutdown::Both);
        }
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A kernel TCP echo server inside a namespace: accepts any number of
/// connections concurrently (one thread each) and writes back everything
/// it reads until the peer's EOF, then closes. Stopped on drop.
pub struct KernelEchoServer(KernelServer<u64>);

impl KernelEchoServer {
    /// Listens on `addr` (port 0: any) inside namespace `ns_key` of `topo`.
    pub fn start(topo: &Topology, ns_key: &str, addr: SocketAddr) -> KernelEchoServer {
        KernelEchoServer(KernelServer::start(
            topo,
            ns_key,
            addr,
            |mut s: TcpStream| {
                let mut buf = vec![0u8; CHUNK];
                let mut total = 0u64;
                loop {
                    let n = match s.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => n,
                        Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                        Err(e) => {
                            return Err(annotate(e, format!("echo read after {total} bytes")))
                        }
                    };
                    s.write_all(&buf[..n])
                        .map_err(|e| annotate(e, format!("echo write after {total} bytes")))?;
                    total += n as u64;
                }
                s.shutdown(Shutdown::Write)?;
                Ok(total)
            },
        ))
    }
}

/// A kernel TCP sink inside a namespace: accepts connections concurrently
/// and reads each until EOF, reporting the byte count and SHA-256 of what
/// it read ([`KernelServer::next`]). Stopped on drop.
pub struct KernelSinkServer(KernelServer<Transfer>);

impl KernelSinkServer {
    /// Listens on `addr` (port 0: any) inside namespace `ns_key` of `topo`.
    pub fn start(topo: &Topology, ns_key: &str, addr: SocketAddr) -> KernelSinkServer {
        KernelSinkServer(KernelServer::start(
            topo,
            ns_key,
            addr,
            |mut s: TcpStream| read_to_end_hashed(&mut s, None),
        ))
    }
}

/// A kernel TCP source inside a namespace: on each connection it sends the
/// first `len` bytes of the stream of `seed` ([`pattern_bytes`](super::pattern_bytes)), then
/// closes; it reads and discards whatever the peer sends meanwhile. The
/// receiver checks against [`Transfer::pattern`]`(seed, len)`. Stopped on drop.
pub struct KernelSourceServer(KernelServer<u64>);

impl KernelSourceServer {
    /// Listens on `addr` (port 0: any) inside namespace `ns_key` of `topo`.
    pub fn start(
        topo: &Topology,
        ns_key: &str,
        addr: SocketAddr,
        len: u64,
        seed: u64,
    ) -> KernelSourceServer {
        KernelSourceServer(KernelServer::start(
            topo,
            ns_key,
            addr,
            move |mut s: TcpStream| {
                // Drain the peer so that it never blocks on a full window.
                let mut rd = s.try_clone()?;
                let drain = thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while matches!(rd.read(&mut buf), Ok(n) if n > 0) {}
                });
                write_pattern(&mut s, seed, len, None)?;
                s.shutdown(Shutdown::Write)?;
                let _ = drain.join();
                Ok(len)
            },
        ))
    }
}

impl std::ops::Deref for KernelEchoServer {
    type Target = KernelServer<u64>;
    fn deref(&self) -> &KernelServer<u64> {
        &self.0
    }
}

impl std::ops::Deref for KernelSinkServer {
    type Target = KernelServer<Transfer>;
    fn deref(&self) -> &KernelServer<Transfer> {
        &self.0
    }
}

impl std::ops::Deref for KernelSourceServer {
    type Target = KernelServer<u64>;
    fn deref(&self) -> &KernelServer<u64> {
        &self.0
    }
}
