//! BID and BIDCTL: boot identifiers, the per-peer agreement on them, and
//! the filter that keeps messages of a rebooted peer's earlier incarnation
//! away from CHAN (spec §4, §5).
//!
//! * [`BootId`], [`query_tag`]: the identifiers (spec §5.3).
//! * [`Bidctl`]: the BIDCTL engine, a bounded table of per-peer state
//!   machines (INIT/OPEN/NORMAL/QUERY, spec §5.5) that confirms every
//!   BootId by handshake — a single mangled or stray packet never reports
//!   a reboot — and tells registrants of the [`BootEvent`]s
//!   `FirstContact` and `PeerRebooted`. Sans-IO: entry points take `now`
//!   and append [`BidctlAction`]s (headers to send, notifications) to a
//!   caller's `Vec`; [`Bidctl::poll_at`] / [`Bidctl::on_time`] drive its
//!   timers. Stages read [`Bidctl::peer_view`] (BootId and reboot epoch)
//!   on their fast path instead of waiting to be called.
//! * [`BidFilter`]: BID's per-message decision (spec §4.3), pure.
//!
//! The timing constants are X32's (`bidctl_i.h`, spec §5.4).

mod bid_filter;
mod bidctl;
mod bidctl_event;
mod bidctl_peer;
mod boot_id;
mod generation;
#[cfg(test)]
mod tests;

pub use bid_filter::{BidFilter, BidRxVerdict};
pub use bidctl::{Bidctl, BidctlConfig, BidctlError, PeerView};
pub use bidctl_event::{BidctlAction, BootEvent, Registrant};
pub use bidctl_peer::BidctlState;
pub use boot_id::{query_tag, wall_clock_now, BootId};
pub use generation::BootGeneration;

use pathstack_core::time::Duration;

/// First retransmission interval of the opening QUERY (spec §5.4
/// `OPEN_TIMEOUT`).
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// First retransmission interval of a QUERY about a known peer (spec §5.4
/// `QUERY_TIMEOUT`).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// Cap of the doubling retransmission interval (spec §5.4). There is no
/// retry limit (spec §12 item 11).
pub const MAX_QUERY_TIMEOUT: Duration = Duration::from_secs(60);
/// The global tick (spec §5.4 `TIMER_INTERVAL`).
pub const TIMER_INTERVAL: Duration = Duration::from_secs(60);
/// Silent ticks between keepalives to a registered peer in NORMAL (spec
/// §5.4 `KEEPALIVE`).
pub const KEEPALIVE_TICKS: u32 = 5;
/// Silent ticks after which an unregistered peer's state is forgotten
/// (spec §5.4 `IDLE_LIMIT`).
pub const IDLE_LIMIT_TICKS: u32 = 10;
/// Longest delay before a boot broadcast is acted on (spec §5.4
/// `BCAST_QUERY_DELAY`).
pub const BCAST_QUERY_DELAY: Duration = Duration::from_millis(3000);
/// Default bound of the BIDCTL peer table.
pub const DEFAULT_MAX_PEERS: usize = 1024;
/// Default bound of distinct registrants per peer.
pub const DEFAULT_MAX_REGISTRANTS_PER_PEER: usize = 64;

/// The delay before a boot broadcast is handled, from a random number:
/// `BCAST_QUERY_DELAY × ((random mod 100) + 1) / 100`, i.e. 30 ms to 3 s
/// in steps of 30 ms (spec §5.4; X32 uses the clock's microseconds as
/// `random`).
///
/// ```
/// use pathstack_core::time::Duration;
/// use pathstack_rpc::boot::bcast_query_delay;
///
/// assert_eq!(bcast_query_delay(0), Duration::from_millis(30));
/// assert_eq!(bcast_query_delay(99), Duration::from_millis(3000));
/// assert_eq!(bcast_query_delay(100), Duration::from_millis(30));
/// ```
pub fn bcast_query_delay(random: u32) -> Duration {
    Duration::from_nanos(BCAST_QUERY_DELAY.as_nanos() * (u64::from(random % 100) + 1) / 100)
}
