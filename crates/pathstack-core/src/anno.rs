//! Per-message annotations: a small, protocol-neutral area in which a stage
//! leaves facts for its neighbours on the same message.
//!
//! The core does not know what the facts are. As with Click's packet
//! annotations (`DST_IP_ANNO` and friends live at offsets the elements
//! agree on) and x-kernel's message attributes, the protocol family lays
//! out the area: it declares typed [`AnnoKey`]s and [`AnnoFlag`]s over the
//! words and flag bits, and gives them readable accessors (the Internet
//! family's are `pathstack_inet::InetAnno`). The core keeps only what it
//! owns itself: where a parked message resumes, and whether the message
//! was classified onto the path it is on (parse once, see
//! [`Anno::classified`]).

use crate::device::offload::MsgOffload;
use crate::ids::{Dir, PathId};
use std::marker::PhantomData;

/// Number of 32-bit words in the annotation area.
pub const ANNO_WORDS: usize = 7;

/// Number of flag bits in the annotation area.
pub const ANNO_FLAGS: u8 = 8;

/// A value that fits in annotation words.
pub trait AnnoValue: Copy {
    /// How many words the value takes.
    const WORDS: usize;
    /// Writes the value into `w` (`WORDS` long).
    fn store(self, w: &mut [u32]);
    /// Reads the value back from `w` (`WORDS` long).
    fn load(w: &[u32]) -> Self;
}

impl AnnoValue for u32 {
    const WORDS: usize = 1;
    #[inline]
    fn store(self, w: &mut [u32]) {
        w[0] = self;
    }
    #[inline]
    fn load(w: &[u32]) -> Self {
        w[0]
    }
}

impl AnnoValue for u16 {
    const WORDS: usize = 1;
    #[inline]
    fn store(self, w: &mut [u32]) {
        w[0] = u32::from(self);
    }
    #[inline]
    fn load(w: &[u32]) -> Self {
        w[0] as u16
    }
}

impl AnnoValue for [u8; 4] {
    const WORDS: usize = 1;
    #[inline]
    fn store(self, w: &mut [u32]) {
        w[0] = u32::from_ne_bytes(self);
    }
    #[inline]
    fn load(w: &[u32]) -> Self {
        w[0].to_ne_bytes()
    }
}

impl AnnoValue for [u8; 6] {
    const WORDS: usize = 2;
    #[inline]
    fn store(self, w: &mut [u32]) {
        w[0] = u32::from_ne_bytes([self[0], self[1], self[2], self[3]]);
        w[1] = u32::from(u16::from_ne_bytes([self[4], self[5]]));
    }
    #[inline]
    fn load(w: &[u32]) -> Self {
        let [a, b, c, d] = w[0].to_ne_bytes();
        let [e, f] = (w[1] as u16).to_ne_bytes();
        [a, b, c, d, e, f]
    }
}

/// A typed slot of the annotation area: `T` stored from word `word` on.
///
/// ```
/// use pathstack_core::anno::{Anno, AnnoKey};
/// const HOP: AnnoKey<[u8; 4]> = AnnoKey::new(2);
/// let mut a = Anno::default();
/// assert_eq!(a.get(HOP), None);
/// a.set(HOP, [10, 0, 0, 1]);
/// assert_eq!(a.get(HOP), Some([10, 0, 0, 1]));
/// ```
pub struct AnnoKey<T> {
    word: u8,
    _value: PhantomData<fn() -> T>,
}

impl<T> Clone for AnnoKey<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for AnnoKey<T> {}

impl<T: AnnoValue> AnnoKey<T> {
    /// The slot starting at word `word`. A slot that does not fit in the
    /// area fails to compile when the key is a `const`, as keys are meant
    /// to be.
    pub const fn new(word: u8) -> Self {
        assert!(
            word as usize + T::WORDS <= ANNO_WORDS,
            "annotation key past the end of the area"
        );
        AnnoKey {
            word,
            _value: PhantomData,
        }
    }

    #[inline]
    fn range(self) -> std::ops::Range<usize> {
        self.word as usize..self.word as usize + T::WORDS
    }
}

/// A flag bit of the annotation area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnnoFlag(u8);

impl AnnoFlag {
    /// Flag bit `bit` (below [`ANNO_FLAGS`]; checked when the flag is a `const`).
    pub const fn new(bit: u8) -> Self {
        assert!(bit < ANNO_FLAGS, "annotation flag past the end of the area");
        AnnoFlag(bit)
    }
}

/// Per-message annotations: a few facts a stage sets for its neighbours on
/// the same message. They let one path serve many peers: a passive path's
/// IP stage learns the peer of each datagram on the way up and answers it
/// on the way down.
///
/// Annotations travel with the message (also when it is turned around with
/// [`Verdict::Back`](crate::stage::Verdict::Back)); a new message starts
/// with every slot empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anno {
    words: [u32; ANNO_WORDS],
    /// Bit `w`: a value starts at word `w`.
    present: u8,
    flags: u8,
    classified: bool,
    /// Where a parked message resumes: a stage that holds a message back
    /// (ARP waiting for a reply) records its path, its position and the
    /// direction the message was travelling in.
    pub resume: Option<(PathId, u32, Dir)>,
    /// Offload facts between the stages and the device (checksum and
    /// segmentation offload; see [`crate::device::offload`]). All zero
    /// unless a device with offloads is in use.
    pub offload: MsgOffload,
}

impl Anno {
    /// The value in slot `key`, if one was set.
    #[inline]
    pub fn get<T: AnnoValue>(&self, key: AnnoKey<T>) -> Option<T> {
        (self.present >> key.word & 1 == 1).then(|| T::load(&self.words[key.range()]))
    }

    /// Sets slot `key` to `value`.
    #[inline]
    pub fn set<T: AnnoValue>(&mut self, key: AnnoKey<T>, value: T) {
        value.store(&mut self.words[key.range()]);
        self.present |= 1 << key.word;
    }

    /// Empties slot `key`.
    #[inline]
    pub fn clear<T: AnnoValue>(&mut self, key: AnnoKey<T>) {
        self.present &= !(1 << key.word);
    }

    /// Whether `flag` is set.
    #[inline]
    pub fn flag(&self, flag: AnnoFlag) -> bool {
        self.flags >> flag.0 & 1 == 1
    }

    /// Sets or clears `flag`.
    #[inline]
    pub fn set_flag(&mut self, flag: AnnoFlag, on: bool) {
        self.flags = (self.flags & !(1 << flag.0)) | (u8::from(on) << flag.0);
    }

    /// Whether the message was classified onto the path it is travelling
    /// up (parse once, thesis §3.4): the classifier walked every demux key
    /// the path registered and each matched the message's headers. A stage
    /// that keyed the path on header fields (an EtherType, a protocol
    /// number, ports) then need not compare them again. Set by the stack
    /// when it hands a classified message to its path; cleared when the
    /// message turns around or is sent down.
    #[inline]
    pub fn classified(&self) -> bool {
        self.classified
    }

    #[inline]
    pub(crate) fn set_classified(&mut self, on: bool) {
        self.classified = on;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const A: AnnoKey<u32> = AnnoKey::new(0);
    const B: AnnoKey<[u8; 6]> = AnnoKey::new(1);
    const C: AnnoKey<u16> = AnnoKey::new(3);
    const F: AnnoFlag = AnnoFlag::new(3);

    #[test]
    fn slots_start_empty_and_clear() {
        let mut a = Anno::default();
        assert_eq!(
            (a.get(A), a.get(B), a.get(C), a.flag(F)),
            (None, None, None, false)
        );
        a.set(C, 0);
        assert_eq!(a.get(C), Some(0), "zero is a value, not absence");
        a.clear(C);
        assert_eq!(a.get(C), None);
    }

    proptest! {
        #[test]
        fn slots_keep_their_values_apart(x: u32, mac: [u8; 6], port: u16, f: bool) {
            let mut a = Anno::default();
            a.set(A, x);
            a.set(B, mac);
            a.set(C, port);
            a.set_flag(F, f);
            prop_assert_eq!(a.get(A), Some(x));
            prop_assert_eq!(a.get(B), Some(mac));
            prop_assert_eq!(a.get(C), Some(port));
            prop_assert_eq!(a.flag(F), f);
            a.set_flag(F, !f);
            prop_assert_eq!(a.flag(F), !f);
            prop_assert_eq!(a.get(B), Some(mac));
        }
    }
}
