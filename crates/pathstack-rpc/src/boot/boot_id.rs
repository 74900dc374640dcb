//! Boot identifiers and query tags (spec §5.3, from the x-kernel's
//! `bidctl_id.c`).
//!
//! A [`BootId`] names one incarnation of a host: the seconds of the wall
//! clock when its RPC stack started. A query tag names one BIDCTL query:
//! the wall clock at the time of the query, at 256 µs resolution. Both
//! are derived from a time the caller passes in; nothing here reads a
//! clock except [`wall_clock_now`], the one helper a module calls at
//! start-up.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One incarnation of a host (spec §5.3). `0` means "unknown": the value
/// BIDCTL and BID hold for a peer before the first handshake, and the
/// `dstBid` of a QUERY or BCAST. Being the start-up second, it differs
/// between boots unless a host restarts within the same second (as in X32)
/// or its clock goes back.
///
/// On the wire a BootId is an opaque four-byte token; pathstack encodes it
/// big-endian (spec §12 item 5: X32 copies it raw, so only hosts of the
/// same byte order agreed; the canonical pathstack format fixes an order).
///
/// ```
/// use pathstack_rpc::boot::BootId;
/// use std::time::Duration;
///
/// let id = BootId::from_wall_clock(Duration::from_secs(0x2F5E_1000));
/// assert_eq!(id, BootId(0x2F5E_1000));
/// assert!(id.is_known());
/// assert!(!BootId::UNKNOWN.is_known());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BootId(pub u32);

impl BootId {
    /// "Not known yet" (spec §5.3).
    pub const UNKNOWN: BootId = BootId(0);

    /// Whether this is a real BootId (not [`BootId::UNKNOWN`]).
    pub const fn is_known(self) -> bool {
        self.0 != 0
    }

    /// The BootId of a stack started at wall-clock time `since_epoch`
    /// (time since the Unix epoch): its seconds, truncated to 32 bits
    /// (spec §5.3: "seconds of the clock at protocol init"). Seconds that
    /// truncate to 0 give 1, because 0 means "unknown".
    pub fn from_wall_clock(since_epoch: Duration) -> BootId {
        match since_epoch.as_secs() as u32 {
            0 => BootId(1),
            s => BootId(s),
        }
    }

    /// The BootId of a stack started at wall-clock time `t` (see
    /// [`BootId::from_wall_clock`]); a time before the Unix epoch counts as
    /// the epoch. Modules call it with `SystemTime::now()` at start-up.
    pub fn from_system_time(t: SystemTime) -> BootId {
        BootId::from_wall_clock(t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
    }

    /// The four bytes that go on the wire (big-endian, spec §12 item 5).
    pub const fn to_be_bytes(self) -> [u8; 4] {
        self.0.to_be_bytes()
    }

    /// The BootId in four wire bytes (big-endian, spec §12 item 5).
    pub const fn from_be_bytes(b: [u8; 4]) -> BootId {
        BootId(u32::from_be_bytes(b))
    }
}

impl fmt::Display for BootId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

/// The query tag for wall-clock time `since_epoch`:
/// `(sec << 16) | ((usec >> 8) & 0xFFFF)` in 32-bit arithmetic (spec
/// §5.3). It changes every 256 µs and wraps after about 18 hours; it only
/// has to tell this query's RESPONSE from a stale one.
///
/// ```
/// use pathstack_rpc::boot::query_tag;
/// use std::time::Duration;
///
/// // 0x2F5E seconds and 0x0ABC × 256 µs: the tag of spec §11.1.
/// let t = query_tag(Duration::new(0x2F5E, 0x0ABC * 256 * 1000));
/// assert_eq!(t, 0x2F5E_0ABC);
/// ```
pub fn query_tag(since_epoch: Duration) -> u32 {
    let sec = since_epoch.as_secs() as u32;
    let usec = since_epoch.subsec_micros();
    (sec << 16) | ((usec >> 8) & 0xFFFF)
}

/// The wall clock as time since the Unix epoch, for a module to derive its
/// [`BootId`] and the BIDCTL engine's tag clock at start-up. A clock set
/// before 1970 reads as zero.
pub fn wall_clock_now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_id_is_the_seconds_and_never_zero() {
        assert_eq!(
            BootId::from_wall_clock(Duration::new(1_700_000_000, 999_999_999)),
            BootId(1_700_000_000)
        );
        assert_eq!(BootId::from_wall_clock(Duration::ZERO), BootId(1));
        assert_eq!(
            BootId::from_wall_clock(Duration::from_secs(1 << 32)),
            BootId(1)
        );
        assert!(BootId::from_wall_clock(wall_clock_now()).is_known());
        let t = UNIX_EPOCH + Duration::from_secs(0x2F5E_1000);
        assert_eq!(BootId::from_system_time(t), BootId(0x2F5E_1000));
    }

    #[test]
    fn query_tag_changes_every_256_microseconds() {
        let base = Duration::from_secs(0x2F5E);
        assert_eq!(query_tag(base), 0x2F5E_0000);
        assert_eq!(query_tag(base + Duration::from_micros(255)), 0x2F5E_0000);
        assert_eq!(query_tag(base + Duration::from_micros(256)), 0x2F5E_0001);
        // The seconds shift out of the top: sec 0x1_0001 gives 0x0001 …
        assert_eq!(query_tag(Duration::from_secs(0x1_0001)), 0x0001_0000);
    }

    #[test]
    fn boot_id_wire_bytes_are_big_endian() {
        assert_eq!(BootId(0x2F5E_1000).to_be_bytes(), [0x2f, 0x5e, 0x10, 0x00]);
        assert_eq!(
            BootId::from_be_bytes([0x2f, 0x5e, 0x20, 0x00]),
            BootId(0x2F5E_2000)
        );
    }
}
