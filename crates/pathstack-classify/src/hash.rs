//! How demux edges are hashed.
//!
//! SipHash (std's default) would cost more than the rest of a lookup for
//! our 1–13-byte keys. foldhash is several times faster and, unlike FxHash,
//! is *seeded per classifier* from process-level randomness, so an attacker
//! on the wire cannot precompute a set of 5-tuples that collide in our
//! table. It is not a cryptographic PRF, so a determined adaptive attacker
//! measuring timing could still degrade one table; the exposure is bounded
//! because only keys that are *registered* (paths someone established)
//! occupy the table: packets from the wire only probe it, and a probe of a
//! missing key costs one hash-bucket scan, not an insertion.

use std::hash::{BuildHasher, Hasher};

use crate::Key;

/// Per-classifier seeded hasher of `(parent, flags, key)` edges.
#[derive(Clone, Default)]
pub(crate) struct EdgeHasher(foldhash::fast::RandomState);

impl EdgeHasher {
    #[inline]
    pub(crate) fn edge(&self, parent: u32, flags: u8, key: &Key) -> u64 {
        let mut h = self.0.build_hasher();
        h.write_u64(u64::from(parent) | (u64::from(flags) << 32) | (key.len << 40));
        // Whole zero-padded words: no length-dependent loop, no byte loads.
        h.write_u64(key.word(0));
        h.write_u64(key.word(1));
        if key.len > 16 {
            h.write_u64(key.word(2));
            h.write_u64(key.word(3));
        }
        h.finish()
    }

    #[inline]
    pub(crate) fn path(&self, path: u32) -> u64 {
        self.0.hash_one(path)
    }
}
