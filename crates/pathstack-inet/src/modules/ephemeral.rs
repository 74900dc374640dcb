//! The ephemeral ports (RFC 6335 §6) UDP and TCP choose a local port
//! from, for a path opened without one, and the order a search tries them.

/// RFC 6335 §6: the dynamic port range, from which UDP and TCP pick a
/// local port for a path opened without one.
pub(crate) const EPHEMERAL: std::ops::RangeInclusive<u16> = 49152..=65535;

/// The ephemeral ports in the order a search starting at `from` tries
/// them: each once, wrapping at the end of the range back to its start
/// (RFC 6335 §6: any order will do; a rotating one reuses a port last).
pub(crate) fn ephemeral_order(from: u16) -> impl Iterator<Item = u16> {
    let from = from.clamp(*EPHEMERAL.start(), *EPHEMERAL.end());
    (from..=*EPHEMERAL.end()).chain(*EPHEMERAL.start()..from)
}

/// Where the next search of [`ephemeral_order`] starts once `p` was taken.
pub(crate) fn ephemeral_after(p: u16) -> u16 {
    if p == *EPHEMERAL.end() {
        *EPHEMERAL.start()
    } else {
        p + 1
    }
}

#[cfg(test)]
mod tests {
    use super::{ephemeral_after, ephemeral_order, EPHEMERAL};
    use proptest::prelude::*;

    proptest! {
        /// A search from any port of the range tries every ephemeral port
        /// once, starting there, and each next search starts just after
        /// the port taken (wrapping), as the search order continues.
        #[test]
        fn ephemeral_order_is_a_rotation(from in EPHEMERAL) {
            let order: Vec<u16> = ephemeral_order(from).collect();
            prop_assert_eq!(order.len(), EPHEMERAL.len());
            prop_assert_eq!(order[0], from);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            prop_assert!(sorted.iter().copied().eq(EPHEMERAL));
            for w in order.windows(2) {
                prop_assert_eq!(ephemeral_after(w[0]), w[1]);
            }
            prop_assert_eq!(ephemeral_after(order[order.len() - 1]), from);
        }
    }
}
