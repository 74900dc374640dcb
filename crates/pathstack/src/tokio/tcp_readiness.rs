//! [`TcpInterest`]: what a task waits for on a TCP stream, and whether the
//! stream is ready for it, the test the driver makes after each poll.

use crate::host::Host;
use crate::inet::tcp::State;
use crate::socket::{self, Tcp};

/// What a task waits for on a TCP stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum TcpInterest {
    /// A read that returns something: data, the end of the stream or an
    /// error.
    Read,
    /// A write that takes something (room in the send buffer) or fails.
    Write,
    /// The end of the handshake, either way.
    Connect,
}

impl TcpInterest {
    /// Every interest (to forget a closed stream's waiters).
    pub(super) const ALL: [TcpInterest; 3] =
        [TcpInterest::Read, TcpInterest::Write, TcpInterest::Connect];
}

/// Whether the call a task waits for on `s` would now return rather than
/// block. A stream the host no longer knows is ready: the call fails.
pub(super) fn is_ready(host: &Host, s: &socket::TcpStream, interest: TcpInterest) -> bool {
    match interest {
        TcpInterest::Read => Tcp::of(host).readable(s).unwrap_or(true),
        TcpInterest::Write => Tcp::of(host).writable(s).unwrap_or(true),
        TcpInterest::Connect => {
            !matches!(
                Tcp::of(host).state(s),
                Ok(State::SynSent | State::SynReceived)
            ) || host.tcp_connect_unreachable(s)
        }
    }
}
