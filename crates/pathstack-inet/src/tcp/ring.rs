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
    use super::{copy_octets, wrap};
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
    #[should_panic]
    fn a_short_destination_panics_as_copy_from_slice() {
        copy_octets(&mut [0u8; 2], &[1, 2, 3]);
    }
}
