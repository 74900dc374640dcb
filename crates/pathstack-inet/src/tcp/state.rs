//! The connection states (RFC 9293 §3.3.2, Figure 5).

use std::fmt;

/// One of the eleven states of a TCP connection (RFC 9293 §3.3.2).
/// `Closed` is the state of a connection that has ended (reset, timed
/// out, or closed both ways) and whose owner has not let it go yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// No connection.
    Closed,
    /// Waiting for a SYN (a connection made by a listener, about to see
    /// the SYN that opened it).
    Listen,
    /// Our SYN sent, waiting for the peer's.
    SynSent,
    /// SYN received and answered, waiting for the ACK of ours.
    SynReceived,
    /// Open: data flows both ways.
    Established,
    /// We closed; our FIN is not yet acknowledged.
    FinWait1,
    /// We closed and our FIN is acknowledged; waiting for the peer's FIN.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; waiting for the ACK of our FIN.
    Closing,
    /// The peer closed, then we did; waiting for the ACK of our FIN.
    LastAck,
    /// Both closed; waiting 2·MSL so that old duplicates die
    /// (RFC 9293 §3.4.2).
    TimeWait,
}

impl State {
    /// A synchronized state (RFC 9293 §3.10.7.4): the handshake is over.
    pub fn is_synchronized(self) -> bool {
        !matches!(
            self,
            State::Closed | State::Listen | State::SynSent | State::SynReceived
        )
    }

    /// Whether the application may still send (the FIN is not queued).
    pub fn may_send(self) -> bool {
        matches!(self, State::Established | State::CloseWait)
    }

    /// Whether data from the peer may still arrive (its FIN has not).
    pub fn may_receive(self) -> bool {
        matches!(
            self,
            State::SynReceived | State::Established | State::FinWait1 | State::FinWait2
        )
    }

    /// The name as RFC 9293 writes it.
    pub fn name(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::Listen => "LISTEN",
            State::SynSent => "SYN-SENT",
            State::SynReceived => "SYN-RECEIVED",
            State::Established => "ESTABLISHED",
            State::FinWait1 => "FIN-WAIT-1",
            State::FinWait2 => "FIN-WAIT-2",
            State::CloseWait => "CLOSE-WAIT",
            State::Closing => "CLOSING",
            State::LastAck => "LAST-ACK",
            State::TimeWait => "TIME-WAIT",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
