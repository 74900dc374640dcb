//! The octet rings' common steps (the send ring, the receive ring): a
//! position wrapped to the ring, and copies in and out without a call for
//! the short ones.
//!
//! A position is almost always already inside the ring or one lap past
//! its end; `%` by a capacity known only at run time is a division with
//! its checks on every segment and every read (about 11 instructions),
//! where a comparison decides the usual case.
//!
//! A request/response exchange moves a few octets per segment through
//! three copies (the application's write into the send ring, the
//! segment's data into the receive ring, the read out of it), and a
//! `copy_from_slice` of a length known only at run time is a call to the
//! C library's `memcpy`, whose dispatch costs more than the copy of a few
//! octets (about 15 instructions a call, issue 26: three calls per
//! segment in the 1-byte ping-pong). Up to eight octets are copied here
//! in line, with two possibly overlapping fixed-width moves (the way
//! `memcpy` itself treats short lengths); longer copies go to `memcpy`.
//!
//! A ring grows on demand (issue 28 item 3): it holds nothing until its
//! first octet, then [`FIRST_RING`] octets, doubling up to the configured
//! size as the data held needs, and never shrinks. An idle connection
//! then costs no ring at all, and opening one allocates and zeroes
//! nothing (a 256 KiB ring zeroed at connect was a large part of a
//! connection's set-up, and the 8 KiB each side a small configuration
//! still cost stayed with every idle connection). Growing copies what the
//! ring holds into the new one oldest octet first, so the positions of
//! the octets relative to the oldest are kept; only the new half is
//! zeroed (safe Rust initializes what it hands out, and the half is
//! written before it is read). Doubling keeps the copies to fewer than
//! two per octet of the largest size reached, all in the first window's
//! worth of traffic: a connection in steady state allocates nothing.

/// The size of a ring's first allocation: one Ethernet MSS (1460) fits,
/// so a request/response exchange's first message does, and it is a
/// power of two, so doubling reaches the configured powers of two
/// exactly.
pub(crate) const FIRST_RING: usize = 2048;

/// The size a ring of `current` octets grows to when `needed` octets must
/// fit: at least double (and at least [`FIRST_RING`]), at most `max` —
/// never less than `current`.
pub(crate) fn grown_size(current: usize, needed: usize, max: usize) -> usize {
    // Never below `current`: a buffer's maximum may be lowered at run
    // time (`SO_SNDBUF`/`SO_RCVBUF`) below what its ring already holds
    // allocated, and `regrown` must not cut the ring.
    needed
        .max(current * 2)
        .max(FIRST_RING)
        .min(max.max(current))
}

/// A ring of `size` octets holding what `old` holds, `old[start]` (the
/// oldest octet) first: `old`'s octets in ring order at the start, the
/// rest zero. Allocated with `try_reserve_exact`, so an allocation that
/// fails is `None` for the caller to handle, not an abort; the old ring is
/// copied in, not zeroed first. `size` must be at least `old.len()`.
pub(crate) fn regrown(old: &[u8], start: usize, size: usize) -> Option<Box<[u8]>> {
    let mut v = Vec::new();
    v.try_reserve_exact(size).ok()?;
    v.extend_from_slice(&old[start..]);
    v.extend_from_slice(&old[..start]);
    v.resize(size, 0);
    Some(v.into_boxed_slice())
}

/// `pos % cap`: the position `pos` wrapped to a ring of `cap` octets,
/// the division done only when `pos` is past the ring's end.
#[inline(always)]
pub(crate) fn wrap(pos: usize, cap: usize) -> usize {
    if pos < cap {
        pos
    } else {
        pos % cap
    }
}

/// Copies `src` into the start of `dst`, as
/// `dst[..src.len()].copy_from_slice(src)` does (and panics as it does
/// when `dst` is shorter: the callers size both from the same count).
#[inline(always)]
pub(crate) fn copy_octets(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    let dst = &mut dst[..n];
    match n {
        0 => {}
        1 => dst[0] = src[0],
        2..=3 => {
            dst[..2].copy_from_slice(&src[..2]);
            dst[n - 2..].copy_from_slice(&src[n - 2..]);
        }
        4..=8 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_octets, grown_size, regrown, wrap, FIRST_RING};
    use proptest::prelude::*;

    proptest! {
        /// `wrap` is `%`, inside the ring, one lap past and beyond.
        #[test]
        fn wraps_as_remainder(cap in 1usize..10_000, pos in 0usize..40_000) {
            prop_assert_eq!(wrap(pos, cap), pos % cap);
        }

        /// The same octets as `copy_from_slice`, every length around the
        /// in-line cases, the rest of `dst` untouched.
        #[test]
        fn copies_as_copy_from_slice(
            src in proptest::collection::vec(any::<u8>(), 0..40),
            extra in 0usize..5,
            fill in any::<u8>(),
        ) {
            let mut ours = vec![fill; src.len() + extra];
            let mut std = ours.clone();
            copy_octets(&mut ours, &src);
            std[..src.len()].copy_from_slice(&src);
            prop_assert_eq!(ours, std);
        }
    }

    #[test]
    fn grows_by_doubling_within_bounds() {
        assert_eq!(grown_size(0, 1, 1 << 18), FIRST_RING);
        assert_eq!(grown_size(0, 1, 100), 100); // a small configured size
        assert_eq!(
            grown_size(FIRST_RING, FIRST_RING + 1, 1 << 18),
            2 * FIRST_RING
        );
        assert_eq!(grown_size(4096, 20_000, 1 << 18), 20_000); // a long write at once
        assert_eq!(grown_size(1 << 17, (1 << 17) + 1, 200_000), 200_000);
        // A maximum lowered below the ring (SO_SNDBUF at run time).
        assert_eq!(grown_size(8192, 100, 4096), 8192);
    }

    proptest! {
        /// The grown ring holds the old one's octets oldest first and
        /// zeros after them.
        #[test]
        fn regrown_rotates_and_extends(
            old in proptest::collection::vec(1u8..=255, 1..64),
            start_pick in any::<usize>(),
            extra in 0usize..64,
        ) {
            let start = start_pick % old.len();
            let new = regrown(&old, start, old.len() + extra).unwrap();
            let mut want: Vec<u8> = old[start..].iter().chain(&old[..start]).copied().collect();
            want.resize(old.len() + extra, 0);
            prop_assert_eq!(&new[..], &want[..]);
        }
    }

    #[test]
    #[should_panic]
    fn a_short_destination_panics_as_copy_from_slice() {
        copy_octets(&mut [0u8; 2], &[1, 2, 3]);
    }
}
