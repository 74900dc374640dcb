//! [`Net`]: a host owned by a tokio driver task.

use super::driver::{DriverError, DriverState};
use super::tcp_readiness::{self, TcpInterest};
use super::waiters::Waiters;
use crate::host::{Host, HostConfig, HostError};
use crate::socket;
use pathstack_core::device::RxWaiter;
use pathstack_devices::{TapDevice, TapError};
use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use ::tokio::io::unix::AsyncFd;
use ::tokio::runtime::Handle;
use ::tokio::sync::{watch, Notify};
use ::tokio::task::{AbortHandle, JoinHandle};

/// Rounds a driver that cannot be told of arrivals (a device with neither
/// a descriptor nor a waker) yields to other tasks after its last work
/// before it falls back to sleeping: a peer on the same runtime usually
/// answers within a few task switches, and yielding costs far less than a
/// timer round (tokio's timers tick in milliseconds).
const SPIN_ROUNDS: u32 = 64;

/// How often the driver polls a device that cannot tell it of arrivals.
const MEMORY_POLL: Duration = Duration::from_millis(1);

/// The longest the driver sleeps with nothing at all to wait for, as a
/// safety net against a lost wake-up.
const MAX_IDLE: Duration = Duration::from_secs(1);

/// A [`Host`] run by a tokio task: the handle sockets are made on. Clones
/// share the host.
///
/// The net owns its driver, the task that polls the host: made inside a
/// tokio runtime, the net starts it there at once (made outside one, call
/// [`Net::spawn`] or await [`Net::run`] inside one later). Sockets are
/// served only while it runs: before it starts, and after it ends
/// (a panic, a device error, [`Net::shutdown`], its runtime shutting
/// down), every pending and later socket call fails with a
/// [`DriverError`] that says why, rather than wait for ever. The driver
/// ends by itself shortly (within a second) after the last clone of its
/// net is dropped. See the [module docs](super).
#[derive(Clone)]
pub struct Net {
    pub(super) inner: Arc<Inner>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("arrival", &self.inner.arrival)
            .finish_non_exhaustive()
    }
}

pub(super) struct Inner {
    state: Mutex<State>,
    /// The driver's wake-up call: a socket queued a datagram (the stack's
    /// next timer may have moved).
    pub(super) kick: Notify,
    /// Turns true when the driver ends; closed when the net itself goes
    /// away (the last `Net` dropped). A watch, not a `Notify`, so that a
    /// waiter holds no reference to the net (holding one would keep the
    /// net, and so its driver, alive) and an end before it subscribed is
    /// not missed.
    pub(super) ended: watch::Sender<bool>,
    /// How the driver learns that a frame arrived.
    arrival: Arrival,
    /// Times the driver polled the host (see [`Net::driver_polls`]).
    polls: AtomicU64,
}

/// How the driver learns that the device has a frame.
enum Arrival {
    /// The device's file descriptor turns readable (a TAP).
    Fd(AsyncFd<OwnedFd>),
    /// The device wakes the driver's task (the in-memory wire's
    /// [`RxWaiter::poll_rx`]).
    Waker(Arc<dyn RxWaiter>),
    /// It cannot: the driver polls.
    Poll,
}

impl std::fmt::Debug for Arrival {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Arrival::Fd(_) => "fd",
            Arrival::Waker(_) => "waker",
            Arrival::Poll => "poll",
        })
    }
}

pub(super) struct State {
    pub(super) host: Host,
    /// Receivers waiting per socket.
    readers: HashMap<socket::UdpSocket, Waiters>,
    /// Senders waiting for queue room or a buffer: woken after every poll.
    writers: Waiters,
    /// Tasks waiting on a TCP stream, per stream and interest: woken after
    /// a poll that made the stream ready for it. At most three entries
    /// per stream of the host's (bounded) table.
    tcp: HashMap<(socket::TcpStream, TcpInterest), Waiters>,
    /// Tasks waiting for a listener's next connection.
    acceptors: HashMap<socket::TcpListener, Waiters>,
    /// Tasks waiting for a remote procedure call's outcome (at most the
    /// host's calls in flight).
    calls: HashMap<crate::rpc::RpcCall, Waiters>,
    /// Whether a driver runs.
    driver: DriverState,
    /// The stack's next deadline when the driver last polled it: what the
    /// driver sleeps until (at most [`MAX_IDLE`]), unless kicked.
    driver_wakes_at: Option<pathstack_core::Instant>,
    /// How to stop the spawned driver.
    abort: Option<AbortHandle>,
}

impl State {
    /// Runs the stack once, wakes the receivers whose sockets have a
    /// datagram (or were closed) and every waiting sender. Returns the
    /// work done.
    pub(super) fn poll(&mut self) -> usize {
        let work = self.host.poll();
        self.wake_ready();
        work
    }

    /// Wakes the receivers whose sockets have a datagram (or were closed),
    /// every waiting sender, and the tasks whose stream, listener or call
    /// is ready.
    fn wake_ready(&mut self) {
        let host = &mut self.host;
        self.readers.retain(|s, waiters| {
            let ready = host.udp().pending(s) > 0
                || host.udp().local_addr(s).is_err()
                || host.pending_error(s).is_some();
            if ready {
                waiters.wake_all();
            }
            !ready
        });
        self.writers.wake_all();
        self.wake_tcp();
        self.wake_calls();
    }

    /// Wakes the tasks whose call has its outcome.
    fn wake_calls(&mut self) {
        if self.calls.is_empty() {
            return;
        }
        let host = &mut self.host;
        self.calls.retain(|call, waiters| {
            let ready = host.rpc().ready(call);
            if ready {
                waiters.wake_all();
            }
            !ready
        });
    }

    /// Registers `waker` to be woken when `call` has its outcome.
    pub(super) fn wait_call(&mut self, call: crate::rpc::RpcCall, waker: &Waker) {
        self.calls.entry(call).or_default().register(waker);
    }

    /// Forgets the tasks waiting on `call` (it was read or abandoned).
    pub(super) fn forget_call(&mut self, call: &crate::rpc::RpcCall) {
        self.calls.remove(call);
    }

    /// Wakes the tasks whose TCP stream or listener is now ready for what
    /// they wait for. Only streams with a waiting task are looked at, and
    /// a task is woken only when its call would now return (or fail), so
    /// a bulk transfer does not wake its idle peers on every segment.
    fn wake_tcp(&mut self) {
        let host = &mut self.host;
        if !self.tcp.is_empty() {
            self.tcp.retain(|(s, interest), waiters| {
                let ready = tcp_readiness::is_ready(&*host, s, *interest);
                if ready {
                    waiters.wake_all();
                }
                !ready
            });
        }
        if !self.acceptors.is_empty() {
            self.acceptors.retain(|l, waiters| {
                // A closed listener (an error) wakes its tasks to fail.
                let ready = host.tcp().accept_pending(l).map_or(true, |n| n > 0);
                if ready {
                    waiters.wake_all();
                }
                !ready
            });
        }
    }

    /// Runs what a stream's call left pending in the stack (under LDLP;
    /// the call's own segments, a write's data or a read's window update,
    /// already left through the device in the call) and wakes what that
    /// made ready. It does not read the device: the driver does, and a
    /// read here finds it empty almost always (a system call for nothing,
    /// two per request in an HTTP exchange). Returns whether the driver
    /// must be kicked ([`kick_due`](Self::kick_due)).
    pub(super) fn run_after_call(&mut self) -> bool {
        if self.host.stack_mut().run_pending() > 0 {
            self.wake_ready();
        }
        self.kick_due()
    }

    /// Whether the stack's next deadline is now earlier than the one the
    /// driver sleeps until (a write armed the retransmission timer, a read
    /// the delayed ACK's): then the driver must be kicked to sleep less,
    /// and it is taken as told.
    pub(super) fn kick_due(&mut self) -> bool {
        let at = self.host.poll_at();
        let earlier = at.is_some_and(|a| self.driver_wakes_at.is_none_or(|d| a < d));
        if earlier {
            self.driver_wakes_at = at;
        }
        earlier
    }

    /// Registers `waker` to be woken when `s` is ready for `interest`.
    pub(super) fn wait_tcp(&mut self, s: socket::TcpStream, interest: TcpInterest, waker: &Waker) {
        self.tcp.entry((s, interest)).or_default().register(waker);
    }

    /// Registers `waker` to be woken when `l` has a connection to accept.
    pub(super) fn wait_accept(&mut self, l: socket::TcpListener, waker: &Waker) {
        self.acceptors.entry(l).or_default().register(waker);
    }

    /// Wakes and forgets the tasks waiting on a closed TCP stream.
    pub(super) fn forget_tcp(&mut self, s: socket::TcpStream) {
        for interest in TcpInterest::ALL {
            if let Some(mut w) = self.tcp.remove(&(s, interest)) {
                w.wake_all();
            }
        }
    }

    /// Wakes and forgets the tasks waiting on a closed listener.
    pub(super) fn forget_listener(&mut self, l: socket::TcpListener) {
        if let Some(mut w) = self.acceptors.remove(&l) {
            w.wake_all();
        }
    }

    /// Registers `waker` to be woken when `s` has a datagram.
    pub(super) fn wait_readable(&mut self, s: socket::UdpSocket, waker: &Waker) {
        self.readers.entry(s).or_default().register(waker);
    }

    /// Registers `waker` to be woken after the next poll of the stack.
    pub(super) fn wait_progress(&mut self, waker: &Waker) {
        self.writers.register(waker);
    }

    /// Ok while the driver runs; why not otherwise.
    pub(super) fn check_driver(&self) -> io::Result<()> {
        Ok(self.driver.check()?)
    }

    /// Records that the driver ended (the first reason stays) and wakes
    /// every waiting task, so that it fails instead of waiting for ever.
    fn end_driver(&mut self, why: DriverError) {
        if !matches!(self.driver, DriverState::Ended(_)) {
            self.driver = DriverState::Ended(why);
        }
        self.abort = None;
        self.readers.values_mut().for_each(Waiters::wake_all);
        self.readers.clear();
        self.writers.wake_all();
        self.tcp.values_mut().for_each(Waiters::wake_all);
        self.tcp.clear();
        self.acceptors.values_mut().for_each(Waiters::wake_all);
        self.acceptors.clear();
        self.calls.values_mut().for_each(Waiters::wake_all);
        self.calls.clear();
    }

    /// Wakes and forgets the receivers of a closed socket.
    pub(super) fn forget(&mut self, s: socket::UdpSocket) {
        if let Some(mut w) = self.readers.remove(&s) {
            w.wake_all();
        }
    }
}

impl Net {
    /// A net on `host` whose driver has no file descriptor to wait on.
    /// On a device that can wake a task ([`RxWaiter::poll_rx`]: the
    /// in-memory wire) the driver sleeps until a frame arrives, the
    /// stack's next timer is due or a socket sends; on any other it polls,
    /// yielding to other tasks for a few rounds after the last work and
    /// then every millisecond. A TAP should use [`Net::tap`] or
    /// [`Net::with_fd`]. Inside a tokio runtime the driver starts at once.
    pub fn new(host: Host) -> Net {
        let arrival = match host.rx_waiter() {
            // Asked with a waker that does nothing, only to learn whether
            // the device can wake a task; the driver registers its own.
            Some(rx)
                if rx
                    .poll_rx(&mut Context::from_waker(Waker::noop()))
                    .is_some() =>
            {
                Arrival::Waker(rx)
            }
            _ => Arrival::Poll,
        };
        Self::make(host, arrival)
    }

    /// A net on `host` whose driver waits for `fd` (the host's TAP device,
    /// duplicated with [`AsFd::as_fd`] and
    /// [`BorrowedFd::try_clone_to_owned`](std::os::fd::BorrowedFd::try_clone_to_owned)
    /// before the device went into the host) to turn readable.
    ///
    /// Fails with [`io::ErrorKind::Unsupported`] outside a tokio runtime
    /// (registering the descriptor needs the runtime's I/O driver).
    ///
    /// # Panics
    ///
    /// In a tokio runtime built without I/O, as tokio's `AsyncFd` does.
    pub fn with_fd(host: Host, fd: OwnedFd) -> io::Result<Net> {
        no_runtime_is_an_error()?;
        // tokio 1.54 deprecates its safe constructors (tokio PR 8587); the
        // unsafe registration lives in pathstack-devices with its proof.
        let fd = pathstack_devices::register_readable(fd)?;
        Ok(Self::make(host, Arrival::Fd(fd)))
    }

    /// An Internet host on TAP device `tap` (see [`Host::new`]) whose
    /// driver waits for the device's descriptor.
    ///
    /// Fails outside a tokio runtime, as [`Net::with_fd`] does (the error
    /// converts into an [`io::Error`] of kind `Unsupported`).
    ///
    /// # Panics
    ///
    /// In a tokio runtime built without I/O, as tokio's `AsyncFd` does.
    pub fn tap(cfg: HostConfig, tap: TapDevice) -> Result<Net, HostError> {
        let name = tap.name().to_string();
        no_runtime_is_an_error().map_err(|source| TapError::Wait {
            name: name.clone(),
            source,
        })?;
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

    fn make(host: Host, arrival: Arrival) -> Net {
        let net = Net {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    host,
                    readers: HashMap::new(),
                    writers: Waiters::default(),
                    tcp: HashMap::new(),
                    acceptors: HashMap::new(),
                    calls: HashMap::new(),
                    driver: DriverState::NotStarted,
                    driver_wakes_at: None,
                    abort: None,
                }),
                kick: Notify::new(),
                ended: watch::Sender::new(false),
                arrival,
                polls: AtomicU64::new(0),
            }),
        };
        if let Ok(rt) = Handle::try_current() {
            net.start(&rt);
        }
        net
    }

    /// Spawns the driver on `rt` unless one has started; returns its task.
    fn start(&self, rt: &Handle) -> Option<JoinHandle<io::Result<()>>> {
        let mut st = self.inner.lock();
        if !matches!(st.driver, DriverState::NotStarted) {
            return None;
        }
        st.driver = DriverState::Running;
        // The task holds the net weakly, so that dropping the last `Net`
        // ends it (a strong reference would keep the host alive for ever).
        let task = rt.spawn(drive(Arc::downgrade(&self.inner)));
        st.abort = Some(task.abort_handle());
        Some(task)
    }

    /// Why the net's sockets cannot be served now (`None` while its driver
    /// runs).
    pub fn driver_error(&self) -> Option<DriverError> {
        self.inner.lock().driver.check().err()
    }

    /// How many times the driver has polled the host. It polls after each
    /// wake-up (a frame, a timer, a socket's send), so on a quiet network
    /// this stands still: a figure for tests and tuning.
    pub fn driver_polls(&self) -> u64 {
        self.inner.polls.load(Ordering::Relaxed)
    }

    /// Stops the driver for good: every pending and later socket call
    /// fails with [`DriverError::Stopped`].
    pub fn shutdown(&self) {
        let task = {
            let mut st = self.inner.lock();
            let task = st.abort.take();
            st.end_driver(DriverError::Stopped);
            task
        };
        // Outside the lock: the task's end takes it too.
        if let Some(task) = task {
            task.abort();
        }
        self.inner.ended.send_replace(true);
    }

    /// Runs `f` on the host (for its statistics, ping, the stack). Do not
    /// block in `f`: the driver and every socket wait for it (see the
    /// module's [blocking section](crate::tokio#do-not-block-the-runtime)).
    pub fn with_host<R>(&self, f: impl FnOnce(&mut Host) -> R) -> R {
        f(&mut self.inner.lock().host)
    }

    /// Runs the stack once, as the driver does, and wakes the sockets that
    /// received. Returns the work done.
    pub fn poll(&self) -> usize {
        self.inner.poll().0
    }

    /// Starts the driver on the current runtime if it has not started (a
    /// net made outside a runtime), and returns a task that ends when the
    /// driver does, with its result: `Ok` when it was stopped, the
    /// device's error when waiting on the device failed. Aborting the
    /// returned task does not stop the driver: [`Net::shutdown`] does.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn spawn(&self) -> JoinHandle<io::Result<()>> {
        let rt = Handle::current();
        if let Some(task) = self.start(&rt) {
            return task;
        }
        // A driver that has already ended (shut down, failed, panicked)
        // will not run again: say so rather than report a clean stop.
        if let Err(e) = self.inner.lock().driver.check() {
            if !matches!(e, DriverError::AlreadyRunning | DriverError::NotStarted) {
                return rt.spawn(async move { Err(e.into()) });
            }
        }
        // Waits on the watch alone, holding the net only weakly: a strong
        // reference held across the wait would keep the net, and so its
        // driver, alive after the application dropped its last `Net`.
        let mut ended = self.inner.ended.subscribe();
        let weak = Arc::downgrade(&self.inner);
        rt.spawn(async move {
            // An error means the net itself is gone: its driver ended with
            // it, cleanly.
            if ended.wait_for(|ended| *ended).await.is_err() {
                return Ok(());
            }
            let Some(inner) = weak.upgrade() else {
                return Ok(());
            };
            let why = inner.lock().driver.check();
            match why {
                Ok(()) => Ok(()),
                Err(DriverError::Device { kind, message }) => Err(io::Error::new(kind, message)),
                Err(DriverError::Panicked) => Err(DriverError::Panicked.into()),
                Err(_) => Ok(()),
            }
        })
    }

    /// Runs the driver in the calling task (for a net made outside a
    /// runtime; one made inside has its driver running already, and this
    /// fails with [`DriverError::AlreadyRunning`]): polls the stack and
    /// wakes sockets, then waits for the device, the next timer or a
    /// socket's send. Returns only when waiting on the device fails.
    /// Dropping the future stops the driver for good.
    pub async fn run(&self) -> io::Result<()> {
        {
            let mut st = self.inner.lock();
            match &st.driver {
                DriverState::NotStarted => st.driver = DriverState::Running,
                DriverState::Running => return Err(DriverError::AlreadyRunning.into()),
                DriverState::Ended(e) => return Err(e.clone().into()),
            }
        }
        let _end = EndGuard(Arc::downgrade(&self.inner));
        let mut idle = 0u32;
        loop {
            self.inner.step(&mut idle).await?;
        }
    }
}

/// The spawned driver: steps while a `Net` exists.
fn drive(net: Weak<Inner>) -> impl std::future::Future<Output = io::Result<()>> + Send {
    // Made before the future first runs: a runtime that shuts down before
    // it ever polled the task still drops the guard with the future.
    let end = EndGuard(net.clone());
    async move {
        let _end = end;
        let mut idle = 0u32;
        while let Some(inner) = net.upgrade() {
            inner.step(&mut idle).await?;
        }
        Ok(())
    }
}

/// Records the driver's end when the driver's future goes away: returned
/// (a device error), dropped (aborted, its runtime shut down) or unwound
/// (a panic).
struct EndGuard(Weak<Inner>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        let Some(inner) = self.0.upgrade() else {
            return;
        };
        let why = if std::thread::panicking() {
            DriverError::Panicked
        } else {
            DriverError::Stopped
        };
        inner.lock().end_driver(why);
        inner.ended.send_replace(true);
    }
}

impl Inner {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while the host was borrowed leaves it as consistent as
        // the stack itself guarantees after a panicking stage; keep going.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One round of the driver: polls the stack and wakes sockets, then
    /// waits for the device, the next timer or a socket's send. A device
    /// error ends the driver (recorded, so that sockets learn why).
    async fn step(&self, idle: &mut u32) -> io::Result<()> {
        let (work, next_timer) = self.poll();
        self.polls.fetch_add(1, Ordering::Relaxed);
        // A device that failed for good (a deleted TAP) ends the driver:
        // every pending and later call fails with it rather than waiting
        // for frames that will never come (issue 27, problem 2).
        let failed = self.lock().host.device_failure().cloned();
        if let Some(f) = failed {
            let (kind, message) = (f.kind, f.to_string());
            self.lock().end_driver(DriverError::Device {
                kind,
                message: message.clone(),
            });
            return Err(io::Error::new(kind, message));
        }
        if work > 0 {
            // A device gives at most a burst per poll: keep polling until
            // it is empty, letting the woken sockets run between.
            *idle = 0;
            ::tokio::task::yield_now().await;
            return Ok(());
        }
        let timeout = next_timer.unwrap_or(MAX_IDLE).min(MAX_IDLE);
        match &self.arrival {
            Arrival::Fd(fd) => {
                ::tokio::select! {
                    r = fd.readable() => match r {
                        // Edge-triggered readiness: forget it, then poll
                        // until the device is empty (above).
                        Ok(mut ready) => ready.clear_ready(),
                        Err(e) => {
                            self.lock().end_driver(DriverError::Device {
                                kind: e.kind(),
                                message: e.to_string(),
                            });
                            return Err(e);
                        }
                    },
                    () = ::tokio::time::sleep(timeout) => {}
                    () = self.kick.notified() => {}
                }
            }
            Arrival::Waker(rx) => {
                // Pending also if the device stops offering wakers: the
                // timer below then bounds the wait.
                let arrived = std::future::poll_fn(|cx| rx.poll_rx(cx).unwrap_or(Poll::Pending));
                ::tokio::select! {
                    () = arrived => {}
                    () = ::tokio::time::sleep(timeout) => {}
                    () = self.kick.notified() => {}
                }
            }
            Arrival::Poll if *idle < SPIN_ROUNDS => {
                *idle += 1;
                ::tokio::task::yield_now().await;
            }
            Arrival::Poll => {
                ::tokio::select! {
                    () = ::tokio::time::sleep(timeout.min(MEMORY_POLL)) => {}
                    () = self.kick.notified() => { *idle = 0; }
                }
            }
        }
        Ok(())
    }

    /// The state, if a driver runs; why not otherwise (what every socket
    /// call checks first, so that none waits for a driver that is gone).
    pub(super) fn live(&self) -> io::Result<MutexGuard<'_, State>> {
        let st = self.lock();
        st.check_driver()?;
        Ok(st)
    }

    /// Polls the stack (waking the sockets' waiting tasks). Returns the
    /// work done and the time until the next timer.
    fn poll(&self) -> (usize, Option<Duration>) {
        let mut st = self.lock();
        let work = st.poll();
        let at = st.host.poll_at();
        st.driver_wakes_at = at;
        let now = st.host.now();
        let until = at.map(|t| Duration::from_nanos(t.saturating_since(now).as_nanos()));
        (work, until)
    }
}

/// An error, not tokio's panic, when a net that waits on a descriptor is
/// made outside a runtime (issue 27, problem 9).
fn no_runtime_is_an_error() -> io::Result<()> {
    Handle::try_current().map(drop).map_err(|_| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "a Net that waits on a device's descriptor must be made inside a tokio runtime with I/O enabled",
        )
    })
}
