//! A [`Session`]: one host under one packetdrill script, shared by
//! packetdrill's two threads.
//!
//! packetdrill makes a blocking system call (a script line whose time is a
//! range, `0...0.5 read(...)`) on a thread of its own while its main
//! thread goes on injecting and sniffing packets and sleeping. So the
//! session is a mutex around the host, and a call that must wait (a
//! blocking `accept`, `connect`, `read`, `write`, `poll`) waits on a
//! condition variable that every call of the other thread signals. A
//! call that blocks on the main thread — where no other call can come to
//! change anything — instead moves the clock on to the host's next timer
//! itself, as the kernel's sleeping caller would see time pass.
#![deny(unsafe_code)]

use crate::errno::Errno;
use crate::fd_table::FdTable;
use crate::flags::ShimFlags;
use crate::link::{Link, Sniffed};
use crate::linux_defaults;
use crate::timeline::{Timeline, EPOCH_OFFSET};
use pathstack::inet::tcp::TcpConfig;
use pathstack::inet::MacAddr;
use pathstack::{Host, HostConfig};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::{self, ThreadId};
use std::time::Duration;

/// The longest a blocking call or a sniff moves the clock on by itself
/// before giving up: beyond Linux's longest retransmission backoff (120 s)
/// and its 60 s TIME-WAIT, so that whatever a script may wait for by a
/// timer comes, and a script waiting for what never comes ends.
pub const MAX_VIRTUAL_WAIT: Duration = Duration::from_secs(300);
/// The longest (real time) a call blocked on packetdrill's system-call
/// thread waits for the main thread to change anything. A script that
/// blocks a call and then does nothing else would otherwise hang; the
/// call then fails with `EAGAIN`.
pub const MAX_REAL_WAIT: Duration = Duration::from_secs(10);
/// The longest (real time) a change waits for a blocked call to try
/// again (`Session::with`).
pub const TURN_WAIT: Duration = Duration::from_millis(200);
/// The smallest step of the clock: packetdrill's resolution.
pub const TICK: Duration = Duration::from_micros(1);

/// What the sniffer returns when the host will never send anything more:
/// not an IP packet (version 0), so that packetdrill fails the script with
/// "Unsupported IP version" and shows these bytes, instead of waiting
/// forever (its shared-object netdev has no timeout, `so_testing.c`).
pub const NOTHING_MORE: &[u8] =
    b"\0pathstack: nothing sent, and no timer left within 300 s of waiting";

/// The result of one try of a call that may block.
pub enum Attempt<T> {
    /// The call completed (or failed).
    Done(Result<T, Errno>),
    /// It would block: try again when something changed.
    Blocked,
}

/// The state behind the session's lock.
pub struct Inner {
    /// The host, its wire and the clock.
    pub net: Timeline,
    /// The descriptors.
    pub fds: FdTable,
    /// The configuration a new socket starts with.
    pub defaults: TcpConfig,
    /// Calls waiting on packetdrill's system-call thread.
    blocked: usize,
    /// Changes made while a call was blocked, and the last of them a
    /// blocked call has tried again after (`Session::with`).
    changes: u64,
    seen: u64,
}

/// One host under test and the descriptors of its sockets.
pub struct Session {
    inner: Mutex<Inner>,
    progress: Condvar,
    /// Signalled when a blocked call has tried again (`seen` moved).
    turn: Condvar,
    main_thread: ThreadId,
    flags: ShimFlags,
}

impl Session {
    /// A host on `flags.local_ip` with Linux's defaults, at time zero. The
    /// calling thread is taken as packetdrill's main thread (the one that
    /// calls `packetdrill_interface_init`).
    pub fn new(flags: ShimFlags) -> Result<Session, String> {
        let (link, host_end) = Link::new(flags.tso);
        let gateway = flags.gateway();
        let defaults = TcpConfig {
            recv_buffer: flags.rcvbuf,
            timestamps: flags.timestamps,
            sack: flags.sack,
            slow_start_after_idle: flags.idle_restart,
            window_scaling: flags.window_scaling,
            ..linux_defaults::tcp_config()
        };
        let base = HostConfig::parse(&format!("{}/{}", flags.local_ip, flags.prefix_len))
            .map_err(|e| e.to_string())?;
        let cfg = HostConfig {
            gateway: Some(gateway),
            tcp_seed: Some(flags.seed),
            tcp_config: Some(defaults),
            ..base
        };
        let mut host = Host::new(cfg, host_end).map_err(|e| e.to_string())?;
        host.add_neighbor(gateway, MacAddr(link.our_mac()))
            .map_err(|e| e.to_string())?;
        Ok(Session {
            inner: Mutex::new(Inner {
                net: Timeline::new(host, link),
                fds: FdTable::default(),
                defaults,
                blocked: 0,
                changes: 0,
                seen: 0,
            }),
            progress: Condvar::new(),
            turn: Condvar::new(),
            main_thread: thread::current().id(),
            flags,
        })
    }

    /// The options the session was made with.
    pub fn flags(&self) -> &ShimFlags {
        &self.flags
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Nothing here panics while holding the lock; should it, the
        // state is still the host's own and the next call may go on.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the state, then lets the host do what became due and
    /// wakes any blocked call.
    ///
    /// With a call blocked on the other thread, waits (a bounded real
    /// time) until it has tried again: packetdrill's main thread spins on
    /// `gettimeofday`, and the lock is not fair, so the blocked call could
    /// otherwise miss the moment of the change and complete late on the
    /// session's clock (`blocking-read.pkt` failed that way on a loaded
    /// machine).
    pub fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        let mut g = self.lock();
        let r = f(&mut g);
        g.net.settle();
        if g.blocked > 0 {
            g.changes += 1;
            let target = g.changes;
            self.progress.notify_all();
            let deadline = std::time::Instant::now() + TURN_WAIT;
            while g.blocked > 0 && g.seen < target {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                g = self
                    .turn
                    .wait_timeout(g, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            drop(g);
            return r;
        }
        drop(g);
        self.progress.notify_all();
        r
    }

    /// Tries `attempt` until it is done: once if `!blocking` (`EAGAIN`
    /// when it would block), else after each change another thread makes,
    /// or — on the main thread — at each of the host's timers up to
    /// `deadline` (session time) or [`MAX_VIRTUAL_WAIT`] from now.
    pub fn run<T>(
        &self,
        blocking: bool,
        deadline: Option<Duration>,
        mut attempt: impl FnMut(&mut Inner) -> Attempt<T>,
    ) -> Result<T, Errno> {
        let mut g = self.lock();
        let give_up = g.net.now() + MAX_VIRTUAL_WAIT;
        loop {
            let r = attempt(&mut g);
            g.net.settle();
            g.seen = g.changes;
            self.turn.notify_all();
            self.progress.notify_all();
            match r {
                Attempt::Done(r) => return r,
                Attempt::Blocked if !blocking => return Err(Errno::AGAIN),
                Attempt::Blocked => {}
            }
            if thread::current().id() == self.main_thread {
                let now = g.net.now();
                let limit = deadline.map_or(give_up, |d| d.min(give_up));
                let target = match g.net.next_timer() {
                    Some(t) => t.min(limit),
                    None if deadline.is_some() => limit,
                    None => return Err(Errno::AGAIN),
                };
                if now >= limit {
                    return Err(Errno::AGAIN);
                }
                g.net.advance_to(target.max(now + TICK));
            } else {
                g.blocked += 1;
                let (ng, waited) = self
                    .progress
                    .wait_timeout(g, MAX_REAL_WAIT)
                    .unwrap_or_else(|e| e.into_inner());
                g = ng;
                g.blocked -= 1;
                if waited.timed_out() {
                    return Err(Errno::AGAIN);
                }
            }
        }
    }

    /// `gettimeofday`: the clock plus [`EPOCH_OFFSET`], after moving it on
    /// by a microsecond (packetdrill spins on this call).
    pub fn gettimeofday(&self) -> Duration {
        self.with(|s| {
            let t = s.net.now() + TICK;
            s.net.advance_to(t);
            EPOCH_OFFSET + t
        })
    }

    /// `usleep`: moves the clock on by `d`, the host polled at each timer.
    pub fn usleep(&self, d: Duration) {
        self.with(|s| {
            let t = s.net.now() + d;
            s.net.advance_to(t);
        })
    }

    /// `netdev_send`: packetdrill's IP packet to the host, now. `false`
    /// when it was dropped (not IPv4).
    pub fn netdev_send(&self, packet: &[u8]) -> bool {
        let trace = self.flags.trace;
        self.with(|s| {
            if trace {
                eprintln!(
                    "pathstack-packetdrill: {:?} in  {} bytes",
                    s.net.now(),
                    packet.len()
                );
            }
            s.net.inject(packet)
        })
    }

    /// `netdev_receive`: the next packet the host sent and when (time as
    /// `gettimeofday` gives it). When none waits, the clock moves on to
    /// the host's next timer until one is sent; first, while a call blocks
    /// on the other thread, that call is let run (it may be about to send,
    /// a blocking write whose window just opened). With no timer left
    /// within [`MAX_VIRTUAL_WAIT`], [`NOTHING_MORE`].
    pub fn netdev_receive(&self) -> Sniffed {
        let mut g = self.lock();
        let give_up = g.net.now() + MAX_VIRTUAL_WAIT;
        let mut yielded = false;
        loop {
            if let Some(mut p) = g.net.link.take_sniffed() {
                if self.flags.trace {
                    eprintln!(
                        "pathstack-packetdrill: {:?} out {} bytes",
                        p.at,
                        p.packet.len()
                    );
                }
                p.at += EPOCH_OFFSET;
                return p;
            }
            if g.blocked > 0 && !yielded {
                drop(g);
                self.progress.notify_all();
                thread::sleep(Duration::from_millis(2));
                g = self.lock();
                yielded = true;
                continue;
            }
            let now = g.net.now();
            match g.net.next_timer() {
                Some(t) if t <= give_up => {
                    g.net.advance_to(t.max(now + TICK));
                    yielded = false;
                    self.progress.notify_all();
                }
                _ => {
                    return Sniffed {
                        packet: NOTHING_MORE.to_vec(),
                        at: g.net.now() + EPOCH_OFFSET,
                    }
                }
            }
        }
    }
}
