//! Declarative layouts of 16-bit-word structures and the typed accessors
//! generated from them: pathstack's counterpart of the Universal Stub
//! Compiler (USC, O'Malley et al., SIGCOMM '94) as used for the LANCE in
//! Mosberger, Peterson and O'Malley, *Protocol Latency: MIPS and Reality*, 1995, §2.6.
//!
//! The point USC made is that a structure's *layout* (which bits of which
//! word hold which field) can be described independently of the *memory*
//! it lives in (dense host memory, or the DEC 3000's sparse gap2 memory).
//! [`sparse_layout!`](crate::sparse_layout) takes the field list once and
//! generates a wrapper `Name<W>` whose getters and setters work on any word
//! storage `W`:
//!
//! - [`Gap2Mut`] / [`Gap2Ref`]: the structure *in place* in
//!   [`SparseMemory`] — a getter reads one 16-bit word, a setter rewrites
//!   one word (the `direct` strategy);
//! - [`Dense`]: a copy in ordinary memory, loaded from and stored back to
//!   sparse memory as a whole (the `copy` strategy most drivers used).
//!
//! Every field is checked at compile time to fit in its word.

use super::sparse::{Agent, SparseMemory};
use std::marker::PhantomData;

/// A bit field of a 16-bit word inside a word structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Index of the 16-bit word.
    pub word: usize,
    /// Lowest bit.
    pub shift: u32,
    /// Number of bits.
    pub width: u32,
}

impl Field {
    /// Bits `lo..hi` of word `word`.
    pub const fn new(word: usize, lo: u32, hi: u32) -> Self {
        Field {
            word,
            shift: lo,
            width: hi - lo,
        }
    }

    /// The field's bits within its word.
    #[inline]
    pub const fn mask(self) -> u16 {
        (((1u32 << self.width) - 1) << self.shift) as u16
    }

    /// `value` placed in the field's bits (excess high bits are cut off).
    #[inline]
    pub const fn put(self, value: u16) -> u16 {
        ((value as u32) << self.shift) as u16 & self.mask()
    }

    /// The field's value in `word`.
    #[inline]
    pub const fn get(self, word: u16) -> u16 {
        (word & self.mask()) >> self.shift
    }

    /// `word` with the field replaced by `value`.
    #[inline]
    pub const fn replace(self, word: u16, value: u16) -> u16 {
        (word & !self.mask()) | self.put(value)
    }
}

/// Readable storage of a word structure.
pub trait Words {
    /// Word `index` of the structure.
    fn word(&self, index: usize) -> u16;
}

/// Writable storage of a word structure.
pub trait WordsMut: Words {
    /// Sets word `index` of the structure.
    fn set_word(&mut self, index: usize, value: u16);
}

/// A dense copy of an `N`-word structure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dense<const N: usize>(pub [u16; N]);

impl<const N: usize> Default for Dense<N> {
    fn default() -> Self {
        Dense([0; N])
    }
}

impl<const N: usize> Dense<N> {
    /// Copies the structure at gap2 LANCE address `base` out of sparse memory.
    #[inline]
    pub fn load<A: Agent>(mem: &SparseMemory, base: u32) -> Self {
        let mut words = [0u16; N];
        for (i, w) in words.iter_mut().enumerate() {
            *w = mem.read_word::<A>(base + 2 * i as u32);
        }
        Dense(words)
    }

    /// Writes the whole structure back to gap2 LANCE address `base`.
    #[inline]
    pub fn store<A: Agent>(&self, mem: &mut SparseMemory, base: u32) {
        for (i, w) in self.0.iter().enumerate() {
            mem.write_word::<A>(base + 2 * i as u32, *w);
        }
    }
}

impl<const N: usize> Words for Dense<N> {
    #[inline]
    fn word(&self, index: usize) -> u16 {
        self.0.get(index).copied().unwrap_or(0)
    }
}

impl<const N: usize> WordsMut for Dense<N> {
    #[inline]
    fn set_word(&mut self, index: usize, value: u16) {
        if let Some(w) = self.0.get_mut(index) {
            *w = value;
        }
    }
}

/// A structure in place in sparse gap2 memory, read and written by `A`.
#[derive(Debug)]
pub struct Gap2Mut<'a, A: Agent> {
    mem: &'a mut SparseMemory,
    base: u32,
    agent: PhantomData<A>,
}

impl<'a, A: Agent> Gap2Mut<'a, A> {
    /// The structure at gap2 LANCE address `base`. Accesses outside the
    /// memory read zero and write nothing; check the range first.
    #[inline]
    pub fn new(mem: &'a mut SparseMemory, base: u32) -> Self {
        Gap2Mut {
            mem,
            base,
            agent: PhantomData,
        }
    }
}

impl<A: Agent> Words for Gap2Mut<'_, A> {
    #[inline]
    fn word(&self, index: usize) -> u16 {
        self.mem.read_word::<A>(self.base + 2 * index as u32)
    }
}

impl<A: Agent> WordsMut for Gap2Mut<'_, A> {
    #[inline]
    fn set_word(&mut self, index: usize, value: u16) {
        self.mem
            .write_word::<A>(self.base + 2 * index as u32, value);
    }
}

/// A structure in place in sparse gap2 memory, read-only.
#[derive(Clone, Copy, Debug)]
pub struct Gap2Ref<'a, A: Agent> {
    mem: &'a SparseMemory,
    base: u32,
    agent: PhantomData<A>,
}

impl<'a, A: Agent> Gap2Ref<'a, A> {
    /// The structure at gap2 LANCE address `base`.
    #[inline]
    pub fn new(mem: &'a SparseMemory, base: u32) -> Self {
        Gap2Ref {
            mem,
            base,
            agent: PhantomData,
        }
    }
}

impl<A: Agent> Words for Gap2Ref<'_, A> {
    #[inline]
    fn word(&self, index: usize) -> u16 {
        self.mem.read_word::<A>(self.base + 2 * index as u32)
    }
}

/// Generates a typed word structure from a declarative field list.
///
/// ```
/// use pathstack_devices::sparse_layout;
/// use pathstack_devices::lance::layout::{Dense, Gap2Mut};
/// use pathstack_devices::lance::sparse::{Cpu, SparseMemory};
///
/// sparse_layout! {
///     /// A two-word example.
///     pub struct Pair / pair_fields (2 words) {
///         /// A flag.
///         flag / set_flag / FLAG: bool @ 0[15..16];
///         /// A 12-bit count.
///         count / set_count / COUNT: u16 @ 1[0..12];
///     }
/// }
///
/// let mut mem = SparseMemory::new(64).unwrap();
/// // In place, in sparse memory: one word read or written per access.
/// let mut p = Pair(Gap2Mut::<Cpu>::new(&mut mem, 8));
/// p.set_count(300);
/// p.set_flag(true);
/// assert_eq!(mem.cpu_bytes()[16..18], 0x8000u16.to_le_bytes());
/// // As a dense copy.
/// let d = Pair::<Dense<2>>::load::<Cpu>(&mem, 8);
/// assert!(d.flag());
/// assert_eq!(d.count(), 300);
/// assert_eq!(pair_fields::COUNT.mask(), 0x0fff);
/// ```
///
/// Each field line is `getter / setter / CONST: type @ word[lo..hi];` with
/// `type` one of `bool` (one bit), `u8` (at most 8 bits) or `u16`. The
/// macro generates:
///
/// - `struct Name<W>(pub W)`, the structure over storage `W`;
/// - a module of [`Field`] constants (for composing whole words);
/// - getters for `W: Words`, setters for `W: WordsMut`, `word`/`set_word`
///   for raw access;
/// - `Name::<Dense<N>>::load` / `store` (the copy strategy) and
///   `Name::<Gap2Mut<A>>::at` / `Name::<Gap2Ref<A>>::at_ref` (in place).
#[macro_export]
macro_rules! sparse_layout {
    (@bits bool) => { 1u32 };
    (@bits u8) => { 8u32 };
    (@bits u16) => { 16u32 };
    (@from bool, $e:expr) => { $e != 0 };
    (@from u8, $e:expr) => { $e as u8 };
    (@from u16, $e:expr) => { $e };
    (@into bool, $e:expr) => { u16::from($e) };
    (@into u8, $e:expr) => { u16::from($e) };
    (@into u16, $e:expr) => { $e };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident / $fields:ident ($words:literal words) {
            $(
                $(#[$fmeta:meta])*
                $get:ident / $set:ident / $konst:ident : $kind:ident @ $w:literal [ $lo:literal .. $hi:literal ];
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        $vis struct $name<W>(pub W);

        #[doc = concat!("Field positions of [`", stringify!($name), "`].")]
        #[allow(dead_code)]
        $vis mod $fields {
            $(
                $(#[$fmeta])*
                pub const $konst: $crate::lance::layout::Field =
                    $crate::lance::layout::Field::new($w, $lo, $hi);
            )*
            // The layout is checked when it is compiled: every field lies
            // inside a word of the structure and fits its Rust type.
            $(
                const _: () = assert!($w < $words && $lo < $hi && $hi <= 16);
                const _: () = assert!(
                    $crate::sparse_layout!(@bits $kind) >= $hi - $lo,
                    "field wider than its type"
                );
            )*
        }

        #[allow(dead_code)]
        impl<W> $name<W> {
            /// Number of 16-bit words of the structure.
            pub const WORDS: usize = $words;
            /// The storage.
            pub fn into_inner(self) -> W {
                self.0
            }
        }

        #[allow(dead_code)]
        impl<W: $crate::lance::layout::Words> $name<W> {
            /// Raw word `index`.
            #[inline]
            pub fn word(&self, index: usize) -> u16 {
                self.0.word(index)
            }
            $(
                $(#[$fmeta])*
                #[inline]
                pub fn $get(&self) -> $kind {
                    let f = $fields::$konst;
                    $crate::sparse_layout!(@from $kind, f.get(self.0.word(f.word)))
                }
            )*
        }

        #[allow(dead_code)]
        impl<W: $crate::lance::layout::WordsMut> $name<W> {
            /// Sets raw word `index`.
            #[inline]
            pub fn set_word(&mut self, index: usize, value: u16) {
                self.0.set_word(index, value);
            }
            $(
                #[doc = concat!("Sets `", stringify!($get), "` (read-modify-write of its word).")]
                #[inline]
                pub fn $set(&mut self, value: $kind) {
                    let f = $fields::$konst;
                    let w = self.0.word(f.word);
                    self.0.set_word(f.word, f.replace(w, $crate::sparse_layout!(@into $kind, value)));
                }
            )*
        }

        #[allow(dead_code)]
        impl $name<$crate::lance::layout::Dense<$words>> {
            /// All zero.
            pub fn zeroed() -> Self {
                $name($crate::lance::layout::Dense([0; $words]))
            }
            /// Copies the structure at gap2 LANCE address `base` into dense memory.
            #[inline]
            pub fn load<A: $crate::lance::sparse::Agent>(
                mem: &$crate::lance::sparse::SparseMemory,
                base: u32,
            ) -> Self {
                $name($crate::lance::layout::Dense::load::<A>(mem, base))
            }
            /// Writes the whole structure back to gap2 LANCE address `base`.
            #[inline]
            pub fn store<A: $crate::lance::sparse::Agent>(
                &self,
                mem: &mut $crate::lance::sparse::SparseMemory,
                base: u32,
            ) {
                self.0.store::<A>(mem, base)
            }
        }

        #[allow(dead_code)]
        impl<'a, A: $crate::lance::sparse::Agent> $name<$crate::lance::layout::Gap2Mut<'a, A>> {
            /// The structure in place at gap2 LANCE address `base`.
            #[inline]
            pub fn at(mem: &'a mut $crate::lance::sparse::SparseMemory, base: u32) -> Self {
                $name($crate::lance::layout::Gap2Mut::new(mem, base))
            }
        }

        #[allow(dead_code)]
        impl<'a, A: $crate::lance::sparse::Agent> $name<$crate::lance::layout::Gap2Ref<'a, A>> {
            /// The structure in place at gap2 LANCE address `base`, read-only.
            #[inline]
            pub fn at_ref(mem: &'a $crate::lance::sparse::SparseMemory, base: u32) -> Self {
                $name($crate::lance::layout::Gap2Ref::new(mem, base))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lance::sparse::{Cpu, Dma};

    crate::sparse_layout! {
        /// Test layout.
        pub struct Probe / probe (3 words) {
            /// Whole word.
            all / set_all / ALL: u16 @ 0[0..16];
            /// Top bit of word 1.
            top / set_top / TOP: bool @ 1[15..16];
            /// Low byte of word 1.
            low / set_low / LOW: u8 @ 1[0..8];
            /// Middle of word 2.
            mid / set_mid / MID: u16 @ 2[4..12];
        }
    }

    #[test]
    fn fields_read_and_write_only_their_bits() {
        let mut d = Probe::<Dense<3>>::zeroed();
        d.set_all(0xffff);
        d.set_low(0xab);
        d.set_top(true);
        d.set_mid(0x1ff); // 9 bits into an 8-bit field: cut to 0xff
        assert_eq!(d.0 .0, [0xffff, 0x80ab, 0x0ff0]);
        d.set_top(false);
        assert_eq!(d.word(1), 0x00ab);
        assert_eq!(d.low(), 0xab);
        assert_eq!(d.mid(), 0xff);
    }

    #[test]
    fn in_place_and_dense_agree() {
        let mut mem = SparseMemory::new(64).unwrap();
        {
            let mut p = Probe::<Gap2Mut<Cpu>>::at(&mut mem, 16);
            p.set_low(7);
            p.set_top(true);
            p.set_mid(3);
        }
        let d = Probe::<Dense<3>>::load::<Dma>(&mem, 16);
        assert_eq!((d.low(), d.top(), d.mid()), (7, true, 3));
        let r = Probe::<Gap2Ref<Dma>>::at_ref(&mem, 16);
        assert_eq!(r.word(1), 0x8007);
        // In-place setters are one read and one write per field.
        assert_eq!(mem.counts::<Cpu>().word_reads, 3);
        assert_eq!(mem.counts::<Cpu>().word_writes, 3);
    }

    #[test]
    fn field_masks() {
        assert_eq!(probe::MID.mask(), 0x0ff0);
        assert_eq!(probe::TOP.put(1), 0x8000);
        assert_eq!(probe::ALL.mask(), 0xffff);
        assert_eq!(probe::LOW.replace(0xff00, 0x12), 0xff12);
    }
}
