//! What the BIDCTL engine hands its caller: the actions it asks for (a
//! header to send, a notification) and the events it tells registrants of
//! (spec §5.5). Apart from the engine (`bidctl.rs`) and its per-peer state
//! machine (`bidctl_peer.rs`), which both produce them.

use crate::boot::BootId;
use crate::wire::bidctl::BidctlHeader;
use crate::Peer;
use std::fmt;

/// An opaque identity the module gives each party interested in a peer
/// (e.g. the id of a BID or CHAN path); notifications name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Registrant(pub u64);

impl fmt::Display for Registrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// What BIDCTL tells its registrants (X32 `BIDCTL_FIRST_CONTACT`,
/// `BIDCTL_PEER_REBOOTED` control operations, spec §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BootEvent {
    /// The first handshake with `peer` finished: its BootId is `bid`. BID
    /// sessions to it become active; CHAN (as OSF) resends at once what an
    /// inactive BID dropped.
    FirstContact {
        /// The peer.
        peer: Peer,
        /// Its BootId.
        bid: BootId,
    },
    /// `peer` was confirmed by handshake to have restarted with `new_bid`.
    /// CHAN fails the outstanding calls to it and disables its channels.
    PeerRebooted {
        /// The peer.
        peer: Peer,
        /// Its new BootId.
        new_bid: BootId,
    },
}

/// What the engine asks its caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BidctlAction {
    /// Send this header (the whole message) to `to`.
    Send {
        /// The peer.
        to: Peer,
        /// The message; [`BidctlHeader::to_bytes`] adds the checksum.
        header: BidctlHeader,
    },
    /// Tell `registrant` about `event`.
    Notify {
        /// Who registered for the peer.
        registrant: Registrant,
        /// What happened.
        event: BootEvent,
    },
}
