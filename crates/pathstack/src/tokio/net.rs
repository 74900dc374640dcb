//! [`Net`]: a host owned by a tokio driver task.

use super::waiters::Waiters;
use crate::host::{Host, HostConfig, HostError};
use crate::socket;
use pathstack_devices::{TapDevice, TapError};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::Duration;

use ::tokio::io::unix::AsyncFd;
use ::tokio::sync::Notify;

/// Rounds the in-memory driver yields to other tasks after its last work
/// before it falls back to sleeping: a peer on the same runtime usually
/// answers within a few task switches, and yielding costs far less than a
/// timer round (tokio's timers tick in milliseconds).
const SPIN_ROUNDS: u32 = 64;

/// How often the driver polls when it has no descriptor to wait on.
const MEMORY_POLL: Duration = Duration::from_millis(1);

/// The longest the driver sleeps with nothing at all to wait for, as a
/// safety net against a lost wake-up.
const MAX_IDLE: Duration = Duration::from_secs(1);

/// A [`Host`] run by a tokio task: the handle sockets are made on. Clones
/// share the host. Sockets only receive while its driver ([`Net::run`] or
/// [`Net::spawn`]) runs. See the [module docs](super).
#[derive(Clone)]
pub struct Net {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("fd", &self.inner.fd.is_some())
            .finish_non_exhaustive()
    }
}

pub(super) struct Inner {
    state: Mutex<State>,
    /// The driver's wake-up call: a socket queued a datagram (the stack's
    /// next timer may have moved).
    pub(super) kick: Notify,
    fd: Option<AsyncFd<OwnedFd>>,
}

pub(super) struct State {
    pub(super) host: Host,
    /// Receivers waiting per socket.
    readers: HashMap<socket::UdpSocket, Waiters>,
    /// Senders waiting for queue room or a buffer: woken after every poll.
    writers: Waiters,
}

impl State {
    /// Runs the stack once, wakes the receivers whose sockets have a
    /// datagram (or were closed) and every waiting sender. Returns the
    /// work done.
    pub(super) fn poll(&mut self) -> usize {
        let work = self.host.poll();
        let host = &self.host;
        self.readers.retain(|s, waiters| {
            let ready = host.udp_pending(s) > 0
                || host.local_addr(s).is_err()
                || host.pending_error(s).is_some();
            if ready {
                waiters.wake_all();
            }
            !ready
        });
        self.writers.wake_all();
        work
    }

    /// Registers `waker` to be woken when `s` has a datagram.
    pub(super) fn wait_readable(&mut self, s: socket::UdpSocket, waker: &Waker) {
        self.readers.entry(s).or_default().register(waker);
    }

    /// Registers `waker` to be woken after the next poll of the stack.
    pub(super) fn wait_progress(&mut self, waker: &Waker) {
        self.writers.register(waker);
    }

    /// Wakes and forgets the receivers of a closed socket.
    pub(super) fn forget(&mut self, s: socket::UdpSocket) {
        if let Some(mut w) = self.readers.remove(&s) {
            w.wake_all();
        }
    }
}

impl Net {
    /// A net on `host` whose driver has no file descriptor to wait on (the
    /// in-memory wire): it polls, yielding to other tasks for a few rounds
    /// after the last work and then every millisecond. Correct for any
    /// device, but a TAP should use [`Net::tap`] or [`Net::with_fd`].
    pub fn new(host: Host) -> Net {
        Self::make(host, None)
    }

    /// A net on `host` whose driver waits for `fd` (the host's TAP device,
    /// duplicated with [`AsFd::as_fd`] and
    /// [`BorrowedFd::try_clone_to_owned`](std::os::fd::BorrowedFd::try_clone_to_owned)
    /// before the device went into the host) to turn readable.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with I/O enabled, as tokio's `AsyncFd` does.
    pub fn with_fd(host: Host, fd: OwnedFd) -> io::Result<Net> {
        // tokio 1.54 deprecates its safe constructors (tokio PR 8587); the
        // unsafe registration lives in pathstack-devices with its proof.
        let fd = pathstack_devices::register_readable(fd)?;
        Ok(Self::make(host, Some(fd)))
    }

    /// An Internet host on TAP device `tap` (see [`Host::new`]) whose
    /// driver waits for the device's descriptor.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime with I/O enabled, as tokio's `AsyncFd` does.
    pub fn tap(cfg: HostConfig, tap: TapDevice) -> Result<Net, HostError> {
        let name = tap.name().to_string();
        let wait_err = |source| TapError::Wait {
            name: name.clone(),
            source,
        };
        // A duplicate refers to the same open file, so it turns readable
        // exactly when the device the stack owns has a frame.
        let fd = tap.as_fd().try_clone_to_owned().map_err(wait_err)?;
        let host = Host::new(cfg, tap)?;
        Ok(Self::with_fd(host, fd).map_err(wait_err)?)
    }

    fn make(host: Host, fd: Option<AsyncFd<OwnedFd>>) -> Net {
        Net {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    host,
                    readers: HashMap::new(),
                    writers: Waiters::default(),
                }),
                kick: Notify::new(),
                fd,
            }),
        }
    }

    /// Runs `f` on the host (for its statistics, ping, the stack). Do not
    /// block in `f`: the driver and every socket wait for it.
    pub fn with_host<R>(&self, f: impl FnOnce(&mut Host) -> R) -> R {
        f(&mut self.inner.lock().host)
    }

    /// Runs the stack once, as the driver does, and wakes the sockets that
    /// received. Returns the work done.
    pub fn poll(&self) -> usize {
        self.inner.poll().0
    }

    /// Spawns the driver ([`Net::run`]) on the current runtime. It runs
    /// until it fails or is aborted through the handle.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn spawn(&self) -> ::tokio::task::JoinHandle<io::Result<()>> {
        let net = self.clone();
        ::tokio::spawn(async move { net.run().await })
    }

    /// The driver: polls the stack and wakes sockets, then waits for the
    /// device, the next timer or a socket's send. Returns only when
    /// waiting on the device fails.
    pub async fn run(&self) -> io::Result<()> {
        let inner = &*self.inner;
        let mut idle = 0u32;
        loop {
            let (work, next_timer) = inner.poll();
            if work > 0 {
                // A device gives at most a burst per poll: keep polling
                // until it is empty, letting the woken sockets run between.
                idle = 0;
                ::tokio::task::yield_now().await;
                continue;
            }
            let timeout = next_timer.unwrap_or(MAX_IDLE).min(MAX_IDLE);
            match &inner.fd {
                Some(fd) => {
                    ::tokio::select! {
                        r = fd.readable() => {
                            // Edge-triggered readiness: forget it, then
                            // poll until the device is empty (above).
                            r?.clear_ready();
                        }
                        () = ::tokio::time::sleep(timeout) => {}
                        () = inner.kick.notified() => {}
                    }
                }
                None if idle < SPIN_ROUNDS => {
                    idle += 1;
                    ::tokio::task::yield_now().await;
                }
                None => {
                    ::tokio::select! {
                        () = ::tokio::time::sleep(timeout.min(MEMORY_POLL)) => {}
                        () = inner.kick.notified() => { idle = 0; }
                    }
                }
            }
        }
    }
}

impl Inner {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the host was borrowed leaves it as consistent as
        // the stack itself guarantees after a panicking stage; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Polls the stack (waking the sockets' waiting tasks). Returns the
    /// work done and the time until the next timer.
    fn poll(&self) -> (usize, Option<Duration>) {
        let mut st = self.lock();
        let work = st.poll();
        (work, st.host.until_timer())
    }
}
