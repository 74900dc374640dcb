//! The partial key one module extracts from its header.

use std::fmt;

/// A partial demux key: up to [`Key::MAX_LEN`] bytes, stored inline so that
/// extracting and looking one up never allocates.
///
/// The bytes past `len` are always zero, so the derived `Eq`/`Hash` compare
/// exactly the key. The empty key is what a module that does not demultiplex
/// contributes (thesis §3.4.3: "the key k simply has zero length").
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    pub(crate) len: u8,
    pub(crate) bytes: [u8; Key::MAX_LEN],
}

impl Key {
    /// Longest key a module may supply: an IPv4 5-tuple is 13 bytes, IPv6
    /// addresses plus protocol 33; 32 covers every header we classify on
    /// while keeping the key a few cache-line halves.
    pub const MAX_LEN: usize = 32;

    /// The zero-length key of a pass-through module.
    pub const EMPTY: Key = Key {
        len: 0,
        bytes: [0; Key::MAX_LEN],
    };

    /// A key holding `bytes`, or `None` when longer than [`Key::MAX_LEN`].
    #[inline]
    pub fn new(bytes: &[u8]) -> Option<Key> {
        if bytes.len() > Self::MAX_LEN {
            return None;
        }
        let mut k = Key::EMPTY;
        k.bytes[..bytes.len()].copy_from_slice(bytes);
        k.len = bytes.len() as u8;
        Some(k)
    }

    /// A key from a fixed-size array; checked at compile time to fit.
    #[inline]
    pub const fn from_array<const N: usize>(a: [u8; N]) -> Key {
        const { assert!(N <= Key::MAX_LEN, "key longer than Key::MAX_LEN") };
        let mut k = Key::EMPTY;
        let mut i = 0;
        while i < N {
            k.bytes[i] = a[i];
            i += 1;
        }
        k.len = N as u8;
        k
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
        assert_ne!(k, Key::new(&[1, 2, 3, 0]).unwrap(), "length is part of the key");
        assert!(Key::EMPTY.is_empty());
        assert_eq!(format!("{k:?}"), "Key(010203)");
    }
}
