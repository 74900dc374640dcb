//! Per-message annotations: a small, protocol-neutral area in which a stage
//! leaves facts for its neighbours on the same message.
//!
//! The core does not know what the facts are. As with Click's packet
//! annotations (`DST_IP_ANNO` and friends live at offsets the elements
//! agree on) and x-kernel's message attributes, the protocol family lays
//! out the area: it declares typed [`AnnoKey`]s and [`AnnoFlag`]s over the
//! words and flag bits, and gives them readable accessors (the Internet
//! family's are `pathstack_inet::InetAnno`). The core keeps only what it
//! owns itself: whether the message was classified onto the path it is on
//! (parse once, see [`Anno::classified`]) and the device offload facts
//! ([`Anno::offload`]).
//!
//! The area is small on purpose: the whole [`Msg`](crate::Msg) is at most
//! 64 bytes (one cache line), because a message is moved by value between
//! the layers of every trip. So a word may be *shared* by keys whose
//! values are never needed at the same time (the Internet family's next
//! hop and time to live, say). Sharing is safe by construction: each word
//! records which of its keys (up to three) stored into it last, and a key
//! reads back only its own value — after another key overwrote the word
//! it reads `None`, never the other key's bytes. Whether the sharing loses
//! nothing is then the family's argument, stated where it declares the keys.

use crate::device::offload::MsgOffload;
use std::marker::PhantomData;

/// Number of 32-bit words in the annotation area.
pub const ANNO_WORDS: usize = 6;

/// Number of flag bits in the annotation area.
pub const ANNO_FLAGS: u8 = 8;

/// How many keys may share one word ([`AnnoKey::sharing`]).
pub const ANNO_HOLDERS: u8 = 3;

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

/// Bits of [`Anno`]'s `marks` per word: which key holds the word (0: none).
const HOLDER_BITS: u32 = 2;

/// A typed slot of the annotation area: `T` stored from word `word` on,
/// held by holder number `holder` of those words.
///
/// ```
/// use pathstack_core::anno::{Anno, AnnoKey};
/// const HOP: AnnoKey<[u8; 4]> = AnnoKey::new(2);
/// // A second key on the same word, for a value never needed together
/// // with the first.
/// const TTL: AnnoKey<u32> = AnnoKey::sharing(2, 2);
/// let mut a = Anno::default();
/// assert_eq!(a.get(HOP), None);
/// a.set(TTL, 9);
/// a.set(HOP, [10, 0, 0, 1]);
/// assert_eq!(a.get(HOP), Some([10, 0, 0, 1]));
/// assert_eq!(a.get(TTL), None, "overwritten: gone, never misread");
/// ```
pub struct AnnoKey<T> {
    /// The key's bits in `marks`: its holder number in each of its words.
    mask: u16,
    mark: u16,
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
    /// The slot starting at word `word` (holder 1 of its words). A slot
    /// that does not fit in the area fails to compile when the key is a
    /// `const`, as keys are meant to be.
    pub const fn new(word: u8) -> Self {
        Self::sharing(word, 1)
    }

    /// The slot starting at word `word`, as holder `holder` (1 to
    /// [`ANNO_HOLDERS`]) of its words: keys with different holder numbers
    /// may lie on the same words, and each reads back only what it stored
    /// (see the [module docs](self)).
    pub const fn sharing(word: u8, holder: u8) -> Self {
        assert!(
            word as usize + T::WORDS <= ANNO_WORDS,
            "annotation key past the end of the area"
        );
        assert!(
            holder >= 1 && holder <= ANNO_HOLDERS,
            "annotation holder out of range"
        );
        let mut mask = 0u16;
        let mut mark = 0u16;
        let mut i = 0;
        while i < T::WORDS {
            let shift = (word as u32 + i as u32) * HOLDER_BITS;
            mask |= 0b11 << shift;
            mark |= (holder as u16) << shift;
            i += 1;
        }
        AnnoKey {
            mask,
            mark,
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

/// `marks` bits above the word holders: the core's own facts.
const CLASSIFIED: u16 = 1 << 12;
const RX_CSUM_VERIFIED: u16 = 1 << 13;
// The holders of all words fit below the core's bits.
const _: () = assert!(ANNO_WORDS as u32 * HOLDER_BITS <= 12);

/// Per-message annotations: a few facts a stage sets for its neighbours on
/// the same message. They let one path serve many peers: a passive path's
/// IP stage learns the peer of each datagram on the way up and answers it
/// on the way down.
///
/// Annotations travel with the message (also when it is turned around with
/// [`Verdict::Back`](crate::stage::Verdict::Back)); a new message starts
/// with every slot empty.
///
/// 32 bytes, laid out by hand so that a [`Msg`](crate::Msg) stays within
/// 64: six words, one 16-bit field of holders and core bits, the flags,
/// and the offload facts packed (see [`MsgOffload`] for their meaning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anno {
    words: [u32; ANNO_WORDS],
    /// Bits `2w..2w+2`: which key holds word `w` (0: empty); bit 12:
    /// classified; bit 13: receive checksum verified.
    marks: u16,
    flags: u8,
    tx_csum_offset: u8,
    tx_gso_size: u16,
    rx_gso_size: u16,
}

impl Anno {
    /// The value in slot `key`, if one was set (and no key sharing its
    /// words was set since).
    #[inline]
    pub fn get<T: AnnoValue>(&self, key: AnnoKey<T>) -> Option<T> {
        (self.marks & key.mask == key.mark).then(|| T::load(&self.words[key.range()]))
    }

    /// Sets slot `key` to `value` (displacing any key sharing its words).
    #[inline]
    pub fn set<T: AnnoValue>(&mut self, key: AnnoKey<T>, value: T) {
        value.store(&mut self.words[key.range()]);
        self.marks = (self.marks & !key.mask) | key.mark;
    }

    /// Empties slot `key` (a value another key holds there stays).
    #[inline]
    pub fn clear<T: AnnoValue>(&mut self, key: AnnoKey<T>) {
        if self.marks & key.mask == key.mark {
            self.marks &= !key.mask;
        }
    }

    /// Empties every slot and flag: the annotations of a new message.
    #[inline]
    pub fn reset(&mut self) {
        *self = Anno::default();
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
        self.marks & CLASSIFIED != 0
    }

    #[inline]
    pub(crate) fn set_classified(&mut self, on: bool) {
        self.marks = (self.marks & !CLASSIFIED) | if on { CLASSIFIED } else { 0 };
    }

    /// The offload facts between the stages and the device (checksum and
    /// segmentation offload; see [`crate::device::offload`]). All zero
    /// unless a device with offloads is in use.
    #[inline]
    pub fn offload(&self) -> MsgOffload {
        MsgOffload {
            tx_csum_offset: self.tx_csum_offset,
            tx_gso_size: self.tx_gso_size,
            rx_csum_verified: self.marks & RX_CSUM_VERIFIED != 0,
            rx_gso_size: self.rx_gso_size,
        }
    }

    /// Sets the [offload facts](Anno::offload).
    #[inline]
    pub fn set_offload(&mut self, o: MsgOffload) {
        self.tx_csum_offset = o.tx_csum_offset;
        self.tx_gso_size = o.tx_gso_size;
        self.rx_gso_size = o.rx_gso_size;
        let verified = if o.rx_csum_verified {
            RX_CSUM_VERIFIED
        } else {
            0
        };
        self.marks = (self.marks & !RX_CSUM_VERIFIED) | verified;
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

    /// A second key on word 2 (B's second word), and a third on word 1.
    const S: AnnoKey<u32> = AnnoKey::sharing(2, 2);
    const T: AnnoKey<u16> = AnnoKey::sharing(1, 3);

    #[test]
    fn a_shared_word_reads_back_only_its_last_holder() {
        let mut a = Anno::default();
        a.set(B, [1, 2, 3, 4, 5, 6]);
        a.set(S, 7);
        assert_eq!(a.get(S), Some(7));
        assert_eq!(a.get(B), None, "B's second word was overwritten");
        a.clear(B);
        assert_eq!(a.get(S), Some(7), "clearing B leaves S's value");
        a.set(T, 9);
        a.clear(S);
        assert_eq!((a.get(S), a.get(T), a.get(B)), (None, Some(9), None));
        a.set(B, [6; 6]);
        assert_eq!((a.get(S), a.get(T), a.get(B)), (None, None, Some([6; 6])));
    }

    #[test]
    fn core_facts_stay_apart_from_the_slots() {
        let mut a = Anno::default();
        let o = MsgOffload {
            tx_csum_offset: 16,
            tx_gso_size: 1448,
            rx_csum_verified: true,
            rx_gso_size: 1460,
        };
        a.set_offload(o);
        a.set_classified(true);
        a.set(B, [0xFF; 6]);
        a.set(S, u32::MAX);
        a.clear(S);
        assert_eq!(a.offload(), o);
        assert!(a.classified());
        a.set_classified(false);
        a.set_offload(MsgOffload::default());
        assert_eq!(
            (a.offload(), a.classified()),
            (MsgOffload::default(), false)
        );
        assert_eq!(a.get(B), None);
    }

    proptest! {
        /// Against a model that remembers, per word, the key that wrote it
        /// last: a key reads its own last value while it holds all its
        /// words, `None` otherwise.
        #[test]
        fn sharing_matches_a_last_writer_model(ops in proptest::collection::vec((0u8..4, 0u8..3, any::<u32>()), 0..40)) {
            let mut a = Anno::default();
            // Keys: 0 = A (word 0), 1 = B (words 1-2), 2 = S (word 2), 3 = T (word 1).
            let words = |k: u8| -> &'static [usize] { match k { 0 => &[0], 1 => &[1, 2], 2 => &[2], _ => &[1] } };
            let mut owner: [Option<u8>; ANNO_WORDS] = [None; ANNO_WORDS];
            let mut last = [0u32; 4];
            for (k, op, v) in ops {
                match op {
                    0 => {
                        match k { 0 => a.set(A, v), 1 => a.set(B, [v as u8; 6]), 2 => a.set(S, v), _ => a.set(T, v as u16) }
                        for &w in words(k) { owner[w] = Some(k); }
                        last[k as usize] = v;
                    }
                    1 => {
                        match k { 0 => a.clear(A), 1 => a.clear(B), 2 => a.clear(S), _ => a.clear(T) }
                        if words(k).iter().all(|&w| owner[w] == Some(k)) {
                            for &w in words(k) { owner[w] = None; }
                        }
                    }
                    _ => {}
                }
                for k in 0..4u8 {
                    let held = words(k).iter().all(|&w| owner[w] == Some(k));
                    let v = last[k as usize];
                    match k {
                        0 => prop_assert_eq!(a.get(A), held.then_some(v)),
                        1 => prop_assert_eq!(a.get(B), held.then_some([v as u8; 6])),
                        2 => prop_assert_eq!(a.get(S), held.then_some(v)),
                        _ => prop_assert_eq!(a.get(T), held.then_some(v as u16)),
                    }
                }
            }
        }

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
