//! `poll`: the readiness of descriptors as Linux's `tcp_poll` reports it.
#![deny(unsafe_code)]

use crate::errno::Errno;
use crate::fd_table::SocketKind;
use crate::session::{Attempt, Inner, Session};
use pathstack::inet::tcp::State;
use std::time::Duration;

/// One entry of `poll`'s array (`struct pollfd` without the pointer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollFd {
    /// The descriptor (negative: ignored, as POSIX says).
    pub fd: i32,
    /// Events asked for.
    pub events: i16,
    /// Events that happened.
    pub revents: i16,
}

/// Events reported whether asked for or not.
const ALWAYS: i16 = libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;

impl Inner {
    /// Every event `fd` has now (Linux's `tcp_poll`): a listener is
    /// readable with a connection to accept; a connection readable with
    /// data or the peer's FIN (`POLLRDHUP` too), writable with send space
    /// once connected, `POLLERR` with an error pending, `POLLHUP` when
    /// closed; a socket that has not connected `POLLOUT | POLLHUP`.
    fn events(&mut self, fd: i32) -> i16 {
        let Ok(sock) = self.fds.get(fd) else {
            return libc::POLLNVAL;
        };
        let mut tcp = self.net.host.tcp();
        match sock.kind {
            SocketKind::Fresh => libc::POLLOUT | libc::POLLHUP,
            SocketKind::Listener(l) => {
                if tcp.accept_pending(&l).unwrap_or(0) > 0 {
                    libc::POLLIN | libc::POLLRDNORM
                } else {
                    0
                }
            }
            SocketKind::Stream(st) => {
                let state = tcp.state(&st).unwrap_or(State::Closed);
                let mut ev = 0;
                if let Err(_e) = tcp.is_connected(&st) {
                    ev |= libc::POLLERR;
                }
                if matches!(state, State::SynSent | State::SynReceived) {
                    return ev;
                }
                if state == State::Closed {
                    ev |= libc::POLLHUP | libc::POLLIN | libc::POLLRDNORM | libc::POLLRDHUP;
                }
                if matches!(
                    state,
                    State::CloseWait | State::LastAck | State::Closing | State::TimeWait
                ) {
                    ev |= libc::POLLIN | libc::POLLRDNORM | libc::POLLRDHUP;
                }
                if tcp.readable(&st).unwrap_or(false) {
                    ev |= libc::POLLIN | libc::POLLRDNORM;
                }
                if state != State::Closed && tcp.writable(&st).unwrap_or(false) {
                    ev |= libc::POLLOUT | libc::POLLWRNORM;
                }
                ev
            }
        }
    }

    fn poll_now(&mut self, fds: &mut [PollFd]) -> usize {
        let mut ready = 0;
        for p in fds.iter_mut() {
            p.revents = if p.fd < 0 {
                0
            } else {
                self.events(p.fd) & (p.events | ALWAYS)
            };
            if p.revents != 0 {
                ready += 1;
            }
        }
        ready
    }
}

impl Session {
    /// `poll(fds, timeout_ms)`: the number of descriptors with events;
    /// waits up to `timeout_ms` (session time; negative: without end)
    /// for one.
    pub fn poll(&self, fds: &mut [PollFd], timeout_ms: i32) -> Result<usize, Errno> {
        let deadline = self.with(|s| {
            u64::try_from(timeout_ms)
                .ok()
                .map(|ms| s.net.now() + Duration::from_millis(ms))
        });
        let r = self.run(timeout_ms != 0, deadline, |s| {
            let n = s.poll_now(fds);
            let expired = deadline.is_some_and(|d| s.net.now() >= d);
            if n > 0 || expired || timeout_ms == 0 {
                Attempt::Done(Ok(n))
            } else {
                Attempt::Blocked
            }
        });
        match r {
            // The wait ended without an event: poll's timeout.
            Err(Errno::AGAIN) => Ok(0),
            r => r,
        }
    }
}
