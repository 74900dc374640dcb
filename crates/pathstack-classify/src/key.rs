//! The partial key one module extracts from its header.

use std::fmt;

/// A partial demux key: up to [`Key::MAX_LEN`] bytes, stored inline so that
/// extracting and looking one up never allocates.
///
/// The bytes past `len` are always zero, so the derived `Eq`/`Hash` compare
/// exactly the key. The empty key is what a module that does not demultiplex
/// contributes (thesis §3.4.3: "the key k simply has zero length").
///
/// Keys are built and read as whole 64-bit words (aligned, bytes first):
/// a key crosses a dynamic call from the partial classifier to the walk
/// through memory, and writing it byte by byte but hashing it word by word
/// would stall on store-to-load forwarding at every level.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C, align(8))]
pub struct Key {
    pub(crate) bytes: [u8; Key::MAX_LEN],
    /// A whole word, not a `u8`: a byte store followed by the word-sized
    /// copy of the struct's tail also defeats store forwarding.
    pub(crate) len: u64,
}

impl Key {
    /// Longest key a module may supply: an IPv4 5-tuple is 13 bytes, IPv6
    /// addresses plus protocol 33; 32 covers every header we classify on
    /// while keeping the key a few cache-line halves.
    pub const MAX_LEN: usize = 32;

    /// The zero-length key of a pass-through module.
    pub const EMPTY: Key = Key {
        bytes: [0; Key::MAX_LEN],
        len: 0,
    };

    /// A key holding `bytes`, or `None` when longer than [`Key::MAX_LEN`].
    #[inline]
    pub fn new(bytes: &[u8]) -> Option<Key> {
        if bytes.len() > Self::MAX_LEN {
            return None;
        }
        let mut k = Key::EMPTY;
        k.bytes[..bytes.len()].copy_from_slice(bytes);
        k.len = bytes.len() as u64;
        Some(k)
    }

    /// A key from a fixed-size array; checked at compile time to fit.
    #[inline(always)]
    pub fn from_array<const N: usize>(a: [u8; N]) -> Key {
        const { assert!(N <= Key::MAX_LEN, "key longer than Key::MAX_LEN") };
        // Assemble whole words in registers, then store each once.
        let mut words = [0u64; Key::MAX_LEN / 8];
        for (w, chunk) in words.iter_mut().zip(a.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        Key::from_words(words, N as u64)
    }

    #[inline(always)]
    fn from_words(words: [u64; Key::MAX_LEN / 8], len: u64) -> Key {
        let mut k = Key::EMPTY;
        for (dst, w) in k.bytes.chunks_exact_mut(8).zip(words) {
            dst.copy_from_slice(&w.to_le_bytes());
        }
        k.len = len;
        k
    }

    /// The key as four little-endian words (zero padded).
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.bytes[i * 8..i * 8 + 8]);
        u64::from_le_bytes(b)
    }

    /// The key bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Whether this is the empty (pass-through) key.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for Key {
    fn default() -> Self {
        Key::EMPTY
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key(")?;
        for b in self.as_bytes() {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_rejects_long_keys_and_pads_with_zero() {
        assert!(Key::new(&[0; 33]).is_none());
        let k = Key::new(&[1, 2, 3]).unwrap();
        assert_eq!(k.as_bytes(), &[1, 2, 3]);
        assert_eq!(k, Key::from_array([1, 2, 3]));
        assert_ne!(
            k,
            Key::new(&[1, 2, 3, 0]).unwrap(),
            "length is part of the key"
        );
        assert!(Key::EMPTY.is_empty());
        assert_eq!(format!("{k:?}"), "Key(010203)");
    }
}
