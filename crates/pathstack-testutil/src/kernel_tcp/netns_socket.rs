//! Kernel sockets in a namespace. A socket belongs to the network namespace
//! it was *created* in, whatever thread later uses it: [`kernel_listen`]
//! and [`kernel_connect`] create it on a short-lived thread that has
//! entered the namespace with `setns(2)` ([`spawn_in_netns`]; only that
//! thread moves), and hand it back, with read and write timeouts
//! ([`IO_TIMEOUT`] unless told otherwise) so that a hung peer fails the
//! test instead of hanging it.

use super::payload::annotate;
use crate::Topology;
use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The default read/write timeout of every socket made here: a peer that
/// makes no progress for this long fails the operation.
pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn set_timeouts(s: &TcpStream, t: Duration) -> io::Result<()> {
    s.set_read_timeout(Some(t))?;
    s.set_write_timeout(Some(t))
}

// Sockets in a namespace

/// Runs `f` on a new thread that has first entered the network namespace
/// `ns_key` ("NS_A" or "NS_B") of `topo` with `setns(2)`; only that thread
/// moves. Sockets `f` creates stay in that namespace wherever they are
/// used later.
pub fn spawn_in_netns<T, F>(topo: &Topology, ns_key: &str, f: F) -> JoinHandle<io::Result<T>>
where
    T: Send + 'static,
    F: FnOnce() -> io::Result<T> + Send + 'static,
{
    let path = format!("/run/netns/{}", topo.var(ns_key));
    thread::Builder::new()
        .name(format!("netns-{}", topo.var(ns_key)))
        .spawn(move || {
            let ns = File::open(&path).map_err(|e| annotate(e, format!("open {path}")))?;
            nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET)
                .map_err(|e| io::Error::other(format!("setns({path}): {e}")))?;
            f()
        })
        .expect("spawn a thread")
}

pub(super) fn join<T>(h: JoinHandle<io::Result<T>>) -> io::Result<T> {
    h.join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
}

/// A listening kernel socket bound to `addr` inside namespace `ns_key`
/// (port 0: the kernel picks one; see `local_addr`).
pub fn kernel_listen(topo: &Topology, ns_key: &str, addr: SocketAddr) -> io::Result<TcpListener> {
    join(spawn_in_netns(topo, ns_key, move || {
        TcpListener::bind(addr).map_err(|e| annotate(e, format!("bind {addr}")))
    }))
}

/// A kernel TCP connection from namespace `ns_key` to `addr`, connected
/// within `timeout`, with read/write timeouts of [`IO_TIMEOUT`].
pub fn kernel_connect(
    topo: &Topology,
    ns_key: &str,
    addr: SocketAddr,
    timeout: Duration,
) -> io::Result<TcpStream> {
    join(spawn_in_netns(topo, ns_key, move || {
        let s = TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| annotate(e, format!("connect {addr}")))?;
        set_timeouts(&s, IO_TIMEOUT)?;
        Ok(s)
    }))
}
