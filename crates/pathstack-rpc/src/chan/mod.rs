//! CHAN: Sprite RPC's request/reply channel with Birrell–Nelson implicit
//! acknowledgement and at-most-once execution (spec §6).
//!
//! Two sans-IO engines, one per side, each owning its per-peer channel
//! table:
//!
//! * [`ClientTable`]: client channels (`FREE`, `WAIT`, `DISABLED`,
//!   dormant; spec §6.4). [`ClientTable::open`] allocates a channel number
//!   per (peer, protocol number), reusing dormant channels first (C12);
//!   [`ClientTable::call`] starts a call.
//! * [`ServerTable`]: server channels (`IDLE`, `EXECUTE`, `WAIT`, dormant;
//!   spec §6.5), created on the first request of a channel and revived
//!   from dormancy. [`ServerTable::reply`] answers a call it handed out.
//!
//! # Driving the engines
//!
//! The engines never read a clock nor touch a message. Their inputs:
//!
//! * a received packet, already parsed with
//!   [`ChanHeader::parse`](crate::wire::chan::ChanHeader::parse) (length
//!   rule applied) and demultiplexed on `FROM_CLIENT`: set → the server
//!   table, clear → the client table (X32 `chan.c`);
//! * calls from above ([`ClientTable::call`], [`ServerTable::reply`]) and
//!   the transport's answers: the [`TransportReceipt`] of each push
//!   (`record_receipt`) and, when a resend is forced, BLAST's
//!   `CHAN_RETRANSMIT(ticket)` verdict through a [`TransportQuery`];
//! * time: `poll_at()` is the earliest instant the engine needs
//!   `on_time(now, …)` called.
//!
//! They answer with return values (the header to push for a call or a
//! reply) and by appending [`ChanAction`]s to a caller-provided `Vec`, in
//! the order they must be carried out. A received packet the engine
//! refuses returns `Err(ChanDropReason)` for the stage to count.
//!
//! # Zero copies on the fast path
//!
//! [`ClientTable::call`] returns the 16-byte header for the stage to push
//! in place on the caller's message, and keeps its own copy of the
//! request in the channel's buffer (cleared, never freed, so a channel in
//! steady state does not allocate); a resend says
//! [`Payload::SavedCopy`] and the stage reads the bytes with
//! `saved_copy`. A received reply or request is answered with
//! [`ChanAction::Reply`] / [`ChanAction::Execute`] carrying the length of
//! the payload to keep: the stage pops the header and trims its message.
//!
//! # At-most-once
//!
//! The server hands a request to the procedure ([`ChanAction::Execute`])
//! only in `IDLE` for a seq strictly above the channel's stored one, and
//! stores that seq first; every retransmission carries the same seq, so
//! it is *current* or *old* from then on and is never executed again
//! (spec §6.7). A reply is accepted only for the [`ServerCall`] token of
//! the channel's current execution, so a reply computed before a client
//! reboot is discarded (C10). Success of a call therefore means "executed
//! exactly once"; every failure ([`CallError`]) means "executed zero or
//! one times".

mod client;
mod config;
mod retransmit;
mod saved;
mod server;

#[cfg(test)]
mod at_most_once_tests;
#[cfg(test)]
mod held_tests;
#[cfg(test)]
mod test_transport;
#[cfg(test)]
mod tests;

pub(crate) use client::ClientChannel;
pub use client::{ClientState, ClientTable};
pub use config::*;
pub(crate) use server::ServerChannel;
pub use server::{ReplyError, ServerCall, ServerState, ServerTable};

use crate::wire::chan::ChanHeader;
use crate::Peer;
use std::io;

/// Names a channel: the peer, the upper protocol number and the channel
/// number (CHAN's demultiplexing key with the lower session as the peer,
/// spec §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChannelKey {
    /// The remote host.
    pub peer: Peer,
    /// The upper protocol number (MSELECT = 20).
    pub prot_id: u32,
    /// The channel number (≥ 1).
    pub chan: u16,
}

impl ChannelKey {
    /// The channel a packet from `peer` with CHAN header `header` is on.
    #[inline(always)]
    pub fn of(peer: Peer, header: &ChanHeader) -> Self {
        ChannelKey {
            peer,
            prot_id: header.prot_id,
            chan: header.chan,
        }
    }
}

/// What the transport reported about a message CHAN pushed: the
/// side-channel record of spec §2 (BLAST's push receipt). The default
/// (nothing filled in) is what BLAST leaves for a short message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportReceipt {
    /// The transport delivers reliably: CHAN retransmits headers only and
    /// arms no timer for this message.
    pub reliable: bool,
    /// The transport fragmented the message (BLAST) and keeps a copy: CHAN
    /// resends it whole only when forced and BLAST agrees.
    pub expensive: bool,
    /// The transport's handle for the message (the BLAST seq), given back
    /// in [`ChanAction::FreeResources`] and [`TransportQuery`].
    pub ticket: Option<u32>,
}

/// The transport's answer to `CHAN_RETRANSMIT(ticket)`: should CHAN resend
/// the whole message, or is BLAST still repairing it with NACKs (spec §3.4
/// item 6, §6.6 rule 2)? Asked only on forced resends (answers to a
/// NEGATIVE_ACK). Closures `FnMut(u32) -> bool` implement it.
pub trait TransportQuery {
    /// `true`: resend the whole message; `false`: BLAST is repairing it,
    /// send the header only.
    fn chan_retransmit(&mut self, ticket: u32) -> bool;
}

impl<F: FnMut(u32) -> bool> TransportQuery for F {
    fn chan_retransmit(&mut self, ticket: u32) -> bool {
        self(ticket)
    }
}

/// What follows a header the engine asks to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Nothing: a control packet (ACK, NACK, probe), `len` 0.
    None,
    /// The channel's saved copy (`saved_copy`), as a new transport
    /// message; the stage then reports the new push's receipt with
    /// `record_receipt`.
    SavedCopy,
}

/// Something a CHAN engine asks its stage to do, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChanAction {
    /// Send `header` (and the payload it names) to `key.peer`.
    Send {
        /// The channel.
        key: ChannelKey,
        /// The CHAN header to push.
        header: ChanHeader,
        /// What follows it.
        payload: Payload,
    },
    /// Client: the call on `key` succeeded; the received packet's payload
    /// (its first `len` bytes) is the reply.
    Reply {
        /// The channel.
        key: ChannelKey,
        /// Payload bytes to keep.
        len: usize,
    },
    /// Client: the call on `key` failed.
    CallFailed {
        /// The channel.
        key: ChannelKey,
        /// Why.
        error: CallError,
    },
    /// Server: hand the received packet's payload (its first `len` bytes)
    /// to the upper protocol, and answer with [`ServerTable::reply`]
    /// quoting `call`.
    Execute {
        /// The token of this execution.
        call: ServerCall,
        /// Payload bytes to keep.
        len: usize,
    },
    /// The message with this transport ticket was acknowledged: the
    /// transport may free its copy (`FREERESOURCES`, spec §3.4 item 5).
    FreeResources {
        /// The transport's ticket.
        ticket: u32,
    },
}

/// Why a client call failed, or could not start. Every failure after the
/// request left means "executed zero or one times" (spec §6.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The channel already has a call outstanding (one call per channel,
    /// C11).
    #[error("channel busy with another call")]
    Busy,
    /// The channel was disabled by an earlier peer reboot; open a new one
    /// (spec §6.4, §12 item 14).
    #[error("channel disabled by a peer reboot")]
    Disabled,
    /// The server rebooted during the call: it may or may not have run.
    #[error("server rebooted during the call (maybe executed)")]
    PeerRebooted,
    /// The call's deadline passed without a reply: it may or may not have
    /// run, and may still run later; the channel's seq moves on, so it is
    /// never run twice.
    #[error("call timed out (maybe executed)")]
    TimedOut,
    /// The caller aborted the call (`CHAN_ABORT_CALL`): maybe executed.
    #[error("call aborted (maybe executed)")]
    Aborted,
    /// No open channel with this key.
    #[error("no such channel")]
    NoChannel,
    /// The request exceeds the transport's maximum (OSF, spec §6.4).
    #[error("request of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// The request's length.
        len: usize,
        /// The limit.
        max: usize,
    },
}

impl CallError {
    /// The [`io::ErrorKind`] that fits.
    pub fn kind(self) -> io::ErrorKind {
        match self {
            CallError::Busy => io::ErrorKind::ResourceBusy,
            CallError::Disabled => io::ErrorKind::NotConnected,
            CallError::PeerRebooted => io::ErrorKind::ConnectionReset,
            CallError::TimedOut => io::ErrorKind::TimedOut,
            CallError::Aborted => io::ErrorKind::Interrupted,
            CallError::NoChannel => io::ErrorKind::NotFound,
            CallError::TooLarge { .. } => io::ErrorKind::InvalidInput,
        }
    }
}

impl From<CallError> for io::Error {
    fn from(e: CallError) -> Self {
        io::Error::new(e.kind(), e)
    }
}

/// Why a table refused to open a channel or enable a protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// All channel numbers for (peer, protocol) are in use or dormant.
    #[error("all {max} CHAN channels to {peer} for protocol {prot_id} in use")]
    TooManyChannels {
        /// The peer.
        peer: Peer,
        /// The protocol number.
        prot_id: u32,
        /// The bound.
        max: usize,
    },
    /// The table tracks its maximum of peers.
    #[error("CHAN client table full ({max} peers)")]
    TooManyPeers {
        /// The bound.
        max: usize,
    },
    /// The server serves its maximum of protocol numbers.
    #[error("CHAN server already serves {max} protocol numbers")]
    TooManyProtocols {
        /// The bound.
        max: usize,
    },
    /// Closing a channel with a call or reply outstanding.
    #[error("CHAN channel busy")]
    Busy,
    /// No channel with this key.
    #[error("no such CHAN channel")]
    NoChannel,
}

impl From<TableError> for io::Error {
    fn from(e: TableError) -> Self {
        let kind = match e {
            TableError::Busy => io::ErrorKind::ResourceBusy,
            TableError::NoChannel => io::ErrorKind::NotFound,
            _ => io::ErrorKind::OutOfMemory,
        };
        io::Error::new(kind, e)
    }
}
