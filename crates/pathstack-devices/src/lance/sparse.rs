//! The LANCE's shared memory as the DEC 3000 CPU sees it (IOASIC layout).
//!
//! The Am7990 has a 16-bit bus; the TURBOchannel of the DEC 3000 is 32 bits
//! wide, so the IOASIC spreads the LANCE's memory sparsely over twice as many
//! CPU bytes (Mosberger, Peterson and O'Malley, *Protocol Latency: MIPS and Reality*, 1995, §2.6). Two
//! interleavings are in use:
//!
//! - **gap2** — single-word DMA (initialization block, descriptors): the
//!   LANCE's 16-bit word at LANCE address `L` (even) sits at CPU byte offset
//!   `2·L`, followed by a 16-bit gap.
//! - **gap16** — burst DMA (packet buffers): 16 data bytes, then a 16-byte
//!   gap; LANCE byte `L` sits at CPU offset `(L / 16)·32 + L % 16`.
//!
//! These are the layouts NetBSD's `lance_copytobuf_gap2` /
//! `lance_copytobuf_gap16` handle. Both map LANCE address `L` to about `2·L`,
//! so a 16-byte LANCE block must hold either descriptors or buffer data,
//! never both (the [`MemoryPlan`](super::plan::MemoryPlan) keeps them apart).
//!
//! The memory is a plain byte vector shared by the CPU (the driver) and the
//! chip's DMA engine; every access says which of the two makes it (the
//! [`Agent`] type parameter), so the accesses each side makes can be counted
//! — that count is what the copy-versus-direct comparison of *Protocol
//! Latency: MIPS and Reality* (§2.6) is about.

use std::cell::Cell;
use thiserror::Error;

/// Largest LANCE address space: the Am7990 drives 24 address lines.
pub const LANCE_ADDRESS_SPACE: u32 = 1 << 24;

/// A DMA or CPU access outside the shared memory.
#[derive(Clone, Copy, Debug, Error, PartialEq, Eq)]
#[error("LANCE address range {start:#08x}+{len} lies outside the {size}-byte shared memory")]
pub struct SparseError {
    /// First LANCE address of the access.
    pub start: u32,
    /// Bytes accessed.
    pub len: u32,
    /// Size of the LANCE address space the memory covers.
    pub size: u32,
}

/// Who accesses the shared memory: the CPU ([`Cpu`]) or the chip ([`Dma`]).
pub trait Agent {
    /// Index of this agent's counters.
    const INDEX: usize;
}

/// The host CPU (the driver).
#[derive(Clone, Copy, Debug)]
pub struct Cpu;
/// The chip's DMA engine.
#[derive(Clone, Copy, Debug)]
pub struct Dma;

impl Agent for Cpu {
    const INDEX: usize = 0;
}
impl Agent for Dma {
    const INDEX: usize = 1;
}

/// Accesses one agent made to the shared memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessCounts {
    /// 16-bit words read in the gap2 area (init block, descriptors).
    pub word_reads: u64,
    /// 16-bit words written in the gap2 area.
    pub word_writes: u64,
    /// Buffer bytes read in the gap16 area.
    pub buffer_bytes_read: u64,
    /// Buffer bytes written in the gap16 area.
    pub buffer_bytes_written: u64,
}

/// Counters behind `&self` reads: a word read through a shared view still
/// counts. `Cell` keeps the memory `Send` (one stack per thread).
#[derive(Debug, Default)]
struct Counters {
    word_reads: Cell<u64>,
    word_writes: Cell<u64>,
    buffer_bytes_read: Cell<u64>,
    buffer_bytes_written: Cell<u64>,
}

fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

/// The sparse shared memory of one LANCE adapter.
#[derive(Debug)]
pub struct SparseMemory {
    bytes: Vec<u8>,
    /// LANCE address space covered, a multiple of 16.
    size: u32,
    counters: [Counters; 2],
}

/// CPU byte offset of the gap2 word holding LANCE address `l` (rounded down
/// to its word).
#[inline]
pub const fn gap2_offset(l: u32) -> usize {
    ((l & !1) as usize) * 2
}

/// CPU byte offset of LANCE byte `l` in the gap16 layout.
#[inline]
pub const fn gap16_offset(l: u32) -> usize {
    ((l as usize) >> 4) * 32 + (l as usize & 0xf)
}

impl SparseMemory {
    /// Memory covering `lance_bytes` of LANCE address space (rounded up to
    /// 16; at most [`LANCE_ADDRESS_SPACE`]), all zero. The CPU sees twice as
    /// many bytes.
    pub fn new(lance_bytes: u32) -> Result<Self, SparseError> {
        let size = lance_bytes.div_ceil(16).saturating_mul(16);
        if size > LANCE_ADDRESS_SPACE || size == 0 {
            return Err(SparseError {
                start: 0,
                len: lance_bytes,
                size: LANCE_ADDRESS_SPACE,
            });
        }
        Ok(SparseMemory {
            bytes: vec![0; size as usize * 2],
            size,
            counters: Default::default(),
        })
    }

    /// Size of the LANCE address space covered.
    pub fn lance_size(&self) -> u32 {
        self.size
    }

    /// The whole region as the CPU sees it (data and gaps).
    pub fn cpu_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether `[start, start + len)` lies inside the memory.
    #[inline]
    pub fn contains(&self, start: u32, len: u32) -> bool {
        start.checked_add(len).is_some_and(|end| end <= self.size)
    }

    /// Checks `[start, start + len)`.
    pub fn check(&self, start: u32, len: u32) -> Result<(), SparseError> {
        if self.contains(start, len) {
            Ok(())
        } else {
            Err(SparseError {
                start,
                len,
                size: self.size,
            })
        }
    }

    /// Accesses made so far by agent `A`.
    pub fn counts<A: Agent>(&self) -> AccessCounts {
        let c = &self.counters[A::INDEX];
        AccessCounts {
            word_reads: c.word_reads.get(),
            word_writes: c.word_writes.get(),
            buffer_bytes_read: c.buffer_bytes_read.get(),
            buffer_bytes_written: c.buffer_bytes_written.get(),
        }
    }

    /// Reads the gap2 word at LANCE address `l` (even). Outside the memory
    /// it reads as zero: callers check ranges first ([`SparseMemory::check`]),
    /// so this never happens, and it must not panic if it did.
    #[inline]
    pub fn read_word<A: Agent>(&self, l: u32) -> u16 {
        bump(&self.counters[A::INDEX].word_reads, 1);
        let off = gap2_offset(l);
        match self.bytes.get(off..off + 2) {
            Some(b) => u16::from_le_bytes([b[0], b[1]]),
            None => 0,
        }
    }

    /// Writes the gap2 word at LANCE address `l` (even); ignored outside the
    /// memory (see [`SparseMemory::read_word`]).
    #[inline]
    pub fn write_word<A: Agent>(&mut self, l: u32, value: u16) {
        bump(&self.counters[A::INDEX].word_writes, 1);
        let off = gap2_offset(l);
        if let Some(b) = self.bytes.get_mut(off..off + 2) {
            b.copy_from_slice(&value.to_le_bytes());
        }
    }

    /// Copies `data` into the gap16 buffer area starting at LANCE address `l`.
    pub fn copy_to_gap16<A: Agent>(&mut self, l: u32, data: &[u8]) -> Result<(), SparseError> {
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        self.check(l, len)?;
        bump(
            &self.counters[A::INDEX].buffer_bytes_written,
            data.len() as u64,
        );
        let mut at = l;
        let mut rest = data;
        while !rest.is_empty() {
            let in_block = 16 - (at as usize & 0xf);
            let n = in_block.min(rest.len());
            let off = gap16_offset(at);
            // In range: checked above, and gap16_offset(end-1) < 2·size.
            if let Some(dst) = self.bytes.get_mut(off..off + n) {
                dst.copy_from_slice(&rest[..n]);
            }
            rest = &rest[n..];
            at += n as u32;
        }
        Ok(())
    }

    /// Copies from the gap16 buffer area starting at LANCE address `l` into
    /// `out`.
    pub fn copy_from_gap16<A: Agent>(&self, l: u32, out: &mut [u8]) -> Result<(), SparseError> {
        let len = u32::try_from(out.len()).unwrap_or(u32::MAX);
        self.check(l, len)?;
        bump(&self.counters[A::INDEX].buffer_bytes_read, out.len() as u64);
        let mut at = l;
        let mut done = 0;
        while done < out.len() {
            let in_block = 16 - (at as usize & 0xf);
            let n = in_block.min(out.len() - done);
            let off = gap16_offset(at);
            if let Some(src) = self.bytes.get(off..off + n) {
                out[done..done + n].copy_from_slice(src);
            }
            done += n;
            at += n as u32;
        }
        Ok(())
    }

    /// Reads one gap16 buffer byte (the chip's byte-swapped DMA path).
    pub(crate) fn gap16_byte(&self, l: u32) -> u8 {
        self.bytes.get(gap16_offset(l)).copied().unwrap_or(0)
    }

    /// Writes one gap16 buffer byte (the chip's byte-swapped DMA path).
    pub(crate) fn set_gap16_byte(&mut self, l: u32, v: u8) {
        if let Some(b) = self.bytes.get_mut(gap16_offset(l)) {
            *b = v;
        }
    }

    /// Counts buffer bytes moved byte by byte (the byte-swapped DMA path).
    pub(crate) fn count_buffer<A: Agent>(&self, read: u64, written: u64) {
        let c = &self.counters[A::INDEX];
        bump(&c.buffer_bytes_read, read);
        bump(&c.buffer_bytes_written, written);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap2_words_sit_at_twice_their_address_with_a_gap() {
        let mut m = SparseMemory::new(64).unwrap();
        m.write_word::<Cpu>(6, 0xbeef);
        assert_eq!(&m.cpu_bytes()[12..16], &[0xef, 0xbe, 0, 0]);
        assert_eq!(m.read_word::<Dma>(6), 0xbeef);
        assert_eq!(m.counts::<Cpu>().word_writes, 1);
        assert_eq!(m.counts::<Dma>().word_reads, 1);
    }

    #[test]
    fn gap16_puts_sixteen_bytes_then_a_gap() {
        let mut m = SparseMemory::new(64).unwrap();
        let data: Vec<u8> = (1..=20).collect();
        m.copy_to_gap16::<Cpu>(8, &data).unwrap();
        // LANCE 8..16 -> CPU 8..16; LANCE 16..28 -> CPU 32..44.
        assert_eq!(&m.cpu_bytes()[8..16], &data[..8]);
        assert_eq!(&m.cpu_bytes()[16..32], &[0; 16]);
        assert_eq!(&m.cpu_bytes()[32..44], &data[8..]);
        let mut back = [0u8; 20];
        m.copy_from_gap16::<Dma>(8, &mut back).unwrap();
        assert_eq!(&back[..], &data[..]);
    }

    #[test]
    fn out_of_range_accesses_are_refused() {
        let mut m = SparseMemory::new(32).unwrap();
        assert!(m.copy_to_gap16::<Cpu>(30, &[0; 4]).is_err());
        assert!(m.check(u32::MAX, 2).is_err());
        assert_eq!(m.read_word::<Cpu>(1000), 0);
        assert!(SparseMemory::new(LANCE_ADDRESS_SPACE + 16).is_err());
    }
}
