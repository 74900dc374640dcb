//! The Identification field of the datagrams a host sends (RFC 791 §3.2;
//! RFC 6864 for what uniqueness is still required).

/// The Identification counter of one sending host (RFC 791 §3.2: unique per
/// source, destination and protocol while the datagram may be alive).
/// A single wrapping counter satisfies that for all destinations at once;
/// RFC 6864 §4.1 relaxes uniqueness for atomic (DF, unfragmented) datagrams.
#[derive(Clone, Debug, Default)]
pub struct IdentCounter {
    next: u16,
}

impl IdentCounter {
    /// A counter starting at `seed` (use something unpredictable per boot,
    /// RFC 6864 §5 / RFC 7739 warn about predictable IDs).
    pub fn new(seed: u16) -> Self {
        IdentCounter { next: seed }
    }
    /// The next identification value.
    pub fn next_ident(&mut self) -> u16 {
        let id = self.next;
        self.next = self.next.wrapping_add(1);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_around() {
        let mut ids = IdentCounter::new(u16::MAX);
        assert_eq!((ids.next_ident(), ids.next_ident()), (u16::MAX, 0));
    }
}
