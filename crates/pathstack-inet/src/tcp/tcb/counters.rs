//! A connection's counters, kept where their use puts them (issue 28
//! item 4: ≤ 2 KB per idle connection end).
//!
//! The counters every segment of an established, loss-free connection
//! moves (segments, octets, header prediction's hits) are inline; the
//! ones only a loss, a probe, a challenge or an ICMP message moves are in
//! a box made the first time one of them moves. A connection that never
//! loses a segment — nearly every one of a million idle ones — carries
//! 8 octets for them instead of 136, and the predicted paths never touch
//! the box. [`Counters::snapshot`] puts the two back together as the
//! public [`TcpStats`].

use super::TcpStats;

/// The counters of one connection: the hot ones inline, the rest boxed
/// on first need.
#[derive(Clone, Default)]
pub(super) struct Counters {
    /// [`TcpStats::segs_in`].
    pub segs_in: u64,
    /// [`TcpStats::segs_out`].
    pub segs_out: u64,
    /// [`TcpStats::data_segs_out`].
    pub data_segs_out: u64,
    /// [`TcpStats::bytes_acked`].
    pub bytes_acked: u64,
    /// [`TcpStats::bytes_received`].
    pub bytes_received: u64,
    /// [`TcpStats::predicted_acks`].
    pub predicted_acks: u64,
    /// [`TcpStats::predicted_data`].
    pub predicted_data: u64,
    /// [`TcpStats::predicted_sends`].
    pub predicted_sends: u64,
    /// The rare counters (the inline ones' fields in it stay 0), made
    /// when the first of them moves.
    rare: Option<Box<TcpStats>>,
}

impl Counters {
    /// The rare counters, made (zeroed) on first need.
    #[cold]
    pub fn rare(&mut self) -> &mut TcpStats {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The rare counters as they are, without making them.
    pub fn rare_ref(&self) -> Option<&TcpStats> {
        self.rare.as_deref()
    }

    /// All the counters, as [`TcpStats`].
    pub fn snapshot(&self) -> TcpStats {
        TcpStats {
            segs_in: self.segs_in,
            segs_out: self.segs_out,
            data_segs_out: self.data_segs_out,
            bytes_acked: self.bytes_acked,
            bytes_received: self.bytes_received,
            predicted_acks: self.predicted_acks,
            predicted_data: self.predicted_data,
            predicted_sends: self.predicted_sends,
            ..self.rare_ref().copied().unwrap_or_default()
        }
    }
}

/// Shown as the [`TcpStats`] they make: whether the rare box is made yet
/// is no part of the connection's state (the differential tests compare
/// control blocks by their `Debug` form).
impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.snapshot().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rare_counters_are_made_on_first_need_and_read_back() {
        let mut c = Counters {
            segs_in: 3,
            ..Counters::default()
        };
        assert!(c.rare_ref().is_none());
        assert_eq!(c.snapshot().timeouts, 0);
        c.rare().timeouts += 2;
        let s = c.snapshot();
        assert_eq!((s.segs_in, s.timeouts), (3, 2));
        assert!(c.rare_ref().is_some());
    }
}
