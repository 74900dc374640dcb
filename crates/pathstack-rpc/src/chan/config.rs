//! CHAN's tunables, with the x-kernel's values as defaults (spec §6.3).

use crate::blast::ETH_FRAGMENT_LEN;
use crate::wire::blast::MAX_FRAGS;
use pathstack_core::time::Duration;

/// Client retransmission timer, first interval: 5 s (X32 `chan_client.c`).
pub const CLIENT_INITIAL_TIMEOUT: Duration = Duration::from_secs(5);
/// Server retransmission timer, first interval: 8 s (X32 `chan_server.c`).
pub const SERVER_INITIAL_TIMEOUT: Duration = Duration::from_secs(8);
/// Cap of both back-offs: 60 s (X32 `chan_internal.h`; OSF comments say
/// "32 s"/"20 s" next to it, §12 item 11).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Default bound on a request or reply CHAN keeps a copy of: what BLAST
/// carries over Ethernet (16 fragments × 1480 B, spec §3.3; more with a
/// wider BLAST mask) less the BID (12 B) and CHAN (16 B) headers (spec
/// §10 `MAX_SIZE` = 16·F − 36 also takes off MSELECT's 8 B, which CHAN
/// counts as user data).
pub const DEFAULT_MAX_MESSAGE: usize = MAX_FRAGS * ETH_FRAGMENT_LEN - 12 - 16;
/// Default bound on the peers a client table tracks.
pub const DEFAULT_MAX_PEERS: usize = 1024;
/// Default bound on the channel numbers (open, disabled or dormant) per
/// (peer, protocol number) on the client.
pub const DEFAULT_MAX_CHANNELS_PER_PEER: usize = 1024;
/// Default bound on the server channels (live and dormant) of a server
/// table, over all peers.
pub const DEFAULT_MAX_SERVER_CHANNELS: usize = 4096;
/// Default bound on the protocol numbers a server table serves.
pub const DEFAULT_MAX_PROTOCOLS: usize = 16;

/// Settings of a [`crate::chan::ClientTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// First retransmission interval of a call (`CHAN_SET_TIMEOUT`).
    pub initial_timeout: Duration,
    /// Cap of the doubling back-off (`CHAN_SET_MAX_TIMEOUT`).
    pub max_timeout: Duration,
    /// Peers tracked at once.
    pub max_peers: usize,
    /// Channel numbers per (peer, protocol number).
    pub max_channels_per_peer: usize,
    /// Largest request a call accepts; OSF fails a larger call at once
    /// instead of letting the transport refuse it (spec §6.4). The stage
    /// sets it from the transport's maximum packet less the CHAN header.
    pub max_request: usize,
    /// CHAN's optimal packet (the transport's less the header): a saved
    /// request larger than this is not resent whole on a timer, only
    /// probed (OSF, spec §6.6 rule 3). `None`: no such limit.
    pub opt_packet: Option<usize>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            initial_timeout: CLIENT_INITIAL_TIMEOUT,
            max_timeout: MAX_TIMEOUT,
            max_peers: DEFAULT_MAX_PEERS,
            max_channels_per_peer: DEFAULT_MAX_CHANNELS_PER_PEER,
            max_request: DEFAULT_MAX_MESSAGE,
            opt_packet: None,
        }
    }
}

/// Settings of a [`crate::chan::ServerTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerConfig {
    /// First retransmission interval of a reply.
    pub initial_timeout: Duration,
    /// Cap of the doubling back-off.
    pub max_timeout: Duration,
    /// Server channels (live and dormant) over all peers; a request that
    /// would need one more is dropped ([`crate::wire::chan::ChanDropReason::TableFull`]).
    pub max_channels: usize,
    /// Protocol numbers served at once.
    pub max_protocols: usize,
    /// Largest reply [`crate::chan::ServerTable::reply`] accepts (the
    /// transport's maximum less the CHAN header).
    pub max_reply: usize,
    /// CHAN's optimal packet, as [`ClientConfig::opt_packet`].
    pub opt_packet: Option<usize>,
    /// Resend the saved reply at once when a duplicate request arrives in
    /// WAIT, instead of waiting for the server timer or a NEGATIVE_ACK.
    /// Faster recovery of a lost reply, but not what the x-kernel does:
    /// off by default (§12 item 12).
    pub resend_reply_on_duplicate: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            initial_timeout: SERVER_INITIAL_TIMEOUT,
            max_timeout: MAX_TIMEOUT,
            max_channels: DEFAULT_MAX_SERVER_CHANNELS,
            max_protocols: DEFAULT_MAX_PROTOCOLS,
            max_reply: DEFAULT_MAX_MESSAGE,
            opt_packet: None,
            resend_reply_on_duplicate: false,
        }
    }
}
