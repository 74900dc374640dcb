//! BLAST's constants and per-session configuration (spec §3.3, x-kernel
//! `blast_internal.h`).

use crate::wire::blast::{HEADER_LEN, MAX_FRAGS};
use pathstack_core::time::Duration;

/// Initial per-fragment receive allowance of a session (x-kernel
/// `PER_PACKET`, 10,000 µs).
pub const PER_PACKET: Duration = Duration::from_millis(10);
/// Cap of the per-session allowance after back-off (x-kernel
/// `MAX_PER_PACKET` = `INT_MAX / 2` µs).
pub const MAX_PER_PACKET: Duration = Duration::from_micros(i32::MAX as u64 / 2);
/// How long the sender holds a message's fragments after the last one
/// went out or the last NACK came in (x-kernel `SEND_CONST`, 1 s).
pub const HOLD: Duration = Duration::from_secs(1);
/// Cap of the receive timer as it doubles (x-kernel `MAX_WAIT`, 1 s).
pub const MAX_WAIT: Duration = Duration::from_secs(1);
/// NACKs the receiver sends for one message before it discards the
/// partial message (x-kernel `NACK_LIMIT`).
pub const NACK_LIMIT: u8 = 3;
/// Fragmented messages a BLAST instance holds for retransmission at once
/// (x-kernel `OUTSTANDING_MESSAGES`, a counting semaphore).
pub const OUTSTANDING_MESSAGES: usize = 64;
/// Records (buffers) kept for reuse per instance (x-kernel's mstate free
/// list of 128).
pub const FREE_LIST: usize = 128;
/// Fragment payload over Ethernet: 1500 less the header (1480 with the
/// default 20-byte header, 1476 with the 64-bit mask's 24 bytes).
pub const ETH_FRAGMENT_LEN: usize = 1500 - HEADER_LEN;
/// Partial messages one session reassembles at once. The x-kernel has no
/// bound (its map grows); pathstack bounds every table.
pub const MAX_REASSEMBLIES: usize = 32;

/// How one BLAST session fragments, times and bounds its work.
///
/// ```
/// use pathstack_rpc::blast::BlastConfig;
/// use pathstack_rpc::wire::blast::{HEADER_LEN, MAX_FRAGS};
/// // Default build (16-bit mask, 20-byte header): F = 1480 over
/// // Ethernet, 1460 over IP, and 16 · 1460 = 23,360 bytes at most.
/// assert_eq!(BlastConfig::over_eth().fragment_len, 1500 - HEADER_LEN);
/// assert_eq!(BlastConfig::over_ip(1500).fragment_len, 1480 - HEADER_LEN);
/// assert_eq!(BlastConfig::over_ip(1500).max_message(), MAX_FRAGS * (1480 - HEADER_LEN));
/// if MAX_FRAGS == 16 {
///     assert_eq!(BlastConfig::over_ip(1500).max_message(), 23_360);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlastConfig {
    /// Fragment payload F: the lower layer's packet size minus the
    /// [`HEADER_LEN`] bytes of the header. Messages of fewer bytes go
    /// short (one packet, seq 0); at most [`MAX_FRAGS`] fragments, so at
    /// most `MAX_FRAGS·F` bytes.
    /// Also the largest fragment the receiver accepts.
    pub fragment_len: usize,
    /// Initial per-fragment receive allowance ([`PER_PACKET`]).
    pub per_packet: Duration,
    /// Cap of the allowance after back-off ([`MAX_PER_PACKET`]).
    pub max_per_packet: Duration,
    /// Sender hold time ([`HOLD`]).
    pub hold: Duration,
    /// Cap of the receive timer ([`MAX_WAIT`]).
    pub max_wait: Duration,
    /// NACKs per message before giving up ([`NACK_LIMIT`]).
    pub nack_limit: u8,
    /// NACK at once when the last fragment arrives with holes (x-kernel
    /// `BLAST_LAST_FRAG_NACKS`, on in every X32 build but Mach; spec
    /// §12 item 7 default).
    pub last_frag_nacks: bool,
    /// Partial messages reassembled at once ([`MAX_REASSEMBLIES`]).
    pub max_reassemblies: usize,
    /// Bytes the partial messages may reserve together (each reserves
    /// `num_frag · fragment_len`); default
    /// `MAX_REASSEMBLIES · MAX_FRAGS · F`.
    pub max_reassembly_bytes: usize,
}

impl BlastConfig {
    /// The configuration for a lower layer whose packets carry `lower_mtu`
    /// bytes (x-kernel: `GETOPTPACKET` of the lower session, else
    /// `GETMAXPACKET`), with the §3.3 defaults.
    ///
    /// # Panics
    ///
    /// If `lower_mtu` leaves no byte for a fragment (at most
    /// [`HEADER_LEN`]): a configuration error.
    pub fn for_lower_mtu(lower_mtu: usize) -> Self {
        assert!(
            lower_mtu > HEADER_LEN,
            "lower packet size {lower_mtu} leaves no room for a BLAST fragment"
        );
        let fragment_len = lower_mtu - HEADER_LEN;
        BlastConfig {
            fragment_len,
            per_packet: PER_PACKET,
            max_per_packet: MAX_PER_PACKET,
            hold: HOLD,
            max_wait: MAX_WAIT,
            nack_limit: NACK_LIMIT,
            last_frag_nacks: true,
            max_reassemblies: MAX_REASSEMBLIES,
            max_reassembly_bytes: MAX_REASSEMBLIES * MAX_FRAGS * fragment_len,
        }
    }

    /// BLAST directly over Ethernet (MTU 1500): F = 1480 (1476 with the
    /// 64-bit mask).
    pub fn over_eth() -> Self {
        Self::for_lower_mtu(ETH_FRAGMENT_LEN + HEADER_LEN)
    }

    /// BLAST over IP on a link of `link_mtu` (IP's packet size is the MTU
    /// minus its 20-byte header): F = 1460 on Ethernet (1456 with the
    /// 64-bit mask).
    pub fn over_ip(link_mtu: usize) -> Self {
        Self::for_lower_mtu(link_mtu.saturating_sub(20))
    }

    /// The largest message: `MAX_FRAGS · F` (`16 · F` by default).
    pub const fn max_message(&self) -> usize {
        MAX_FRAGS * self.fragment_len
    }
}

impl Default for BlastConfig {
    /// [`BlastConfig::over_eth`].
    fn default() -> Self {
        Self::over_eth()
    }
}
