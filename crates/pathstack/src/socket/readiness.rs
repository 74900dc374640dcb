//! A readiness wait over many sockets of a [`Host`], as `mio::Poll` (or
//! `poll(2)`) gives one over many file descriptors: register each socket
//! with a [`Token`] and an [`Interest`], then [`Host::poll_ready`] runs
//! the stack until at least one of them is ready or the timeout passes,
//! and fills [`Events`] with the ready ones.
//!
//! What is ready, per socket:
//!
//! - a UDP socket: readable with a datagram queued (or a pending error);
//!   writable while its send queue has room;
//! - a TCP stream: readable with data, the end of the stream or an
//!   error; writable once connected with room in the send buffer (a
//!   connect in progress turns writable when the handshake completes, as
//!   a non-blocking `connect` does); an error when the connection failed
//!   (refused, reset, timed out, its peer unreachable);
//! - a TCP listener: readable with a connection waiting to be accepted.
//!
//! Unlike mio's, readiness is *level*-triggered, as `poll(2)`'s: a socket
//! stays in the events while it is ready, so a caller that did not drain
//! it hears of it again (nothing can be lost between two waits). A
//! closed socket's registration goes with it. The registrations are
//! bounded ([`MAX_REGISTRATIONS`]), and so are the events of one wait
//! (the capacity of [`Events`]).

pub use super::registrations::{Interest, Source, Token};
use super::{SocketError, Tcp, Udp};
use crate::host::Host;
use pathstack_inet::tcp::State;
use std::io;
use std::time::Duration;

/// The most sockets one host watches for readiness.
pub const MAX_REGISTRATIONS: usize = 4096;

/// A ready socket: its token and what it is ready for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    token: Token,
    readable: bool,
    writable: bool,
    error: bool,
    read_closed: bool,
}

impl Event {
    /// The token the socket was registered with.
    pub fn token(&self) -> Token {
        self.token
    }

    /// A receive (or accept) would not block.
    pub fn is_readable(&self) -> bool {
        self.readable
    }

    /// A send would not block.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// The socket has an error to report (the next call returns it).
    pub fn is_error(&self) -> bool {
        self.error
    }

    /// A TCP stream's peer has finished sending (its FIN is read next).
    pub fn is_read_closed(&self) -> bool {
        self.read_closed
    }
}

/// The ready sockets of one [`Host::poll_ready`], at most its capacity
/// (as `mio::Events`).
#[derive(Debug)]
pub struct Events {
    list: Vec<Event>,
    capacity: usize,
}

impl Events {
    /// Room for `capacity` events per wait (at least one); the sockets
    /// ready beyond it are reported by the next wait.
    pub fn with_capacity(capacity: usize) -> Events {
        let capacity = capacity.clamp(1, MAX_REGISTRATIONS);
        Events {
            list: Vec::with_capacity(capacity),
            capacity,
        }
    }

    /// The events, in registration order.
    pub fn iter(&self) -> std::slice::Iter<'_, Event> {
        self.list.iter()
    }

    /// Whether no socket was ready.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// How many sockets were ready.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Forgets the events.
    pub fn clear(&mut self) {
        self.list.clear();
    }
}

impl<'a> IntoIterator for &'a Events {
    type Item = &'a Event;
    type IntoIter = std::slice::Iter<'a, Event>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

/// What a socket is ready for now; `None` when it is gone (closed).
fn readiness(host: &Host, source: Source) -> Option<(bool, bool, bool, bool)> {
    match source {
        Source::Udp(s) => {
            let writable = Udp::of(host).writable(&s).ok()?;
            let error = host.pending_error(&s).is_some();
            let readable = Udp::of(host).pending(&s) > 0 || error;
            Some((readable, writable, error, false))
        }
        Source::Tcp(s) => {
            let state = Tcp::of(host).state(&s).ok()?;
            let failed = host.conn(&s, |c| c.tcb().error().is_some()).ok()?;
            let error = failed || host.tcp_connect_unreachable(&s);
            let readable = Tcp::of(host).readable(&s).ok()? || error;
            let connecting = matches!(state, State::SynSent | State::SynReceived);
            let writable = error || (!connecting && Tcp::of(host).writable(&s).ok()?);
            let read_closed = readable && !error && Tcp::of(host).recv_queue(&s).ok()? == 0;
            Some((readable, writable, error, read_closed))
        }
        Source::Listener(l) => {
            let waiting = Tcp::of(host).accept_pending(&l).ok()?;
            Some((waiting > 0, false, false, false))
        }
    }
}

/// The readiness wait of a host.
impl Host {
    /// Watches `source` for `interest`, reported with `token` by
    /// [`poll_ready`](Self::poll_ready). A socket is registered once
    /// ([`SocketError::AlreadyRegistered`]; change it with
    /// [`reregister`](Self::reregister)); at most [`MAX_REGISTRATIONS`]
    /// are.
    pub fn register(
        &mut self,
        source: impl Into<Source>,
        token: Token,
        interest: Interest,
    ) -> Result<(), SocketError> {
        let source = source.into();
        self.check_source(source)?;
        if self.readiness.find(source).is_some() {
            return Err(SocketError::AlreadyRegistered);
        }
        if self.readiness.list.len() >= MAX_REGISTRATIONS {
            return Err(SocketError::TooManyRegistrations(MAX_REGISTRATIONS));
        }
        self.readiness.list.push((source, token, interest));
        Ok(())
    }

    /// Changes the token and interest of a registered socket.
    pub fn reregister(
        &mut self,
        source: impl Into<Source>,
        token: Token,
        interest: Interest,
    ) -> Result<(), SocketError> {
        let source = source.into();
        let i = self
            .readiness
            .find(source)
            .ok_or(SocketError::NotRegistered)?;
        self.readiness.list[i] = (source, token, interest);
        Ok(())
    }

    /// Stops watching a socket (closing it does too).
    pub fn deregister(&mut self, source: impl Into<Source>) -> Result<(), SocketError> {
        let i = self
            .readiness
            .find(source.into())
            .ok_or(SocketError::NotRegistered)?;
        self.readiness.list.remove(i);
        Ok(())
    }

    /// A handle of this host's that is open.
    fn check_source(&self, source: Source) -> Result<(), SocketError> {
        match source {
            Source::Udp(s) => Udp::of(self).local_addr(&s).map(drop),
            Source::Tcp(s) => Tcp::of(self).state(&s).map(drop),
            Source::Listener(l) => Tcp::of(self).listener_addr(&l).map(drop),
        }
    }

    /// Runs the host until at least one registered socket is ready for
    /// its interest (or has an error) or `timeout` passes (`None`: no
    /// limit), then fills `events` with the ready ones (as many as it
    /// holds) and returns how many. The host polls its device and waits
    /// on it in between ([`Host::wait`]), so every socket of the host
    /// makes progress meanwhile. With nothing registered it returns
    /// after the timeout, having run the host.
    ///
    /// Fails when the host cannot wait (its device failed).
    pub fn poll_ready(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
    ) -> io::Result<usize> {
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        loop {
            let work = self.poll();
            self.collect_ready(events);
            if !events.is_empty() {
                return Ok(events.len());
            }
            let left = match deadline {
                Some(d) => d.saturating_duration_since(std::time::Instant::now()),
                // No limit: wait in slices (the device wakes the host).
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return Ok(0);
            }
            if work == 0 {
                self.wait(left)?;
            }
        }
    }

    /// Puts the ready registered sockets into `events`; forgets those
    /// that were closed.
    fn collect_ready(&mut self, events: &mut Events) {
        events.clear();
        let mut i = 0;
        while i < self.readiness.list.len() {
            let (source, token, interest) = self.readiness.list[i];
            let Some((r, w, error, read_closed)) = readiness(self, source) else {
                self.readiness.list.remove(i);
                continue;
            };
            i += 1;
            let readable = r && interest.is_readable();
            let writable = w && interest.is_writable();
            if (readable || writable || error) && events.list.len() < events.capacity {
                events.list.push(Event {
                    token,
                    readable,
                    writable,
                    error,
                    read_closed: read_closed && interest.is_readable(),
                });
            }
        }
    }
}
