//! The driver's two ways of touching descriptors (Mosberger, Peterson and O'Malley, *Protocol Latency: MIPS and Reality*, 1995, §2.6):
//!
//! - [`Access::Copy`] — what most LANCE drivers for DEC machines did (e.g.
//!   NetBSD's `am7990_rint`/`am7990_start` with `copyfromdesc` and
//!   `copytodesc`): copy the whole descriptor from sparse memory into a
//!   dense struct, modify it there, copy all of it back — four word reads
//!   and four word writes for any change, even of one bit.
//! - [`Access::Direct`] — the USC way: read and write only the fields
//!   needed, in place in sparse memory, through the accessors
//!   [`sparse_layout!`](crate::sparse_layout) generated from the descriptor
//!   layout.
//!
//! Both write the same descriptor contents; only the number of sparse
//! memory accesses differs (counted in
//! [`SparseMemory::counts`](super::sparse::SparseMemory::counts)).

use super::descriptor::{bcnt_word, rmd, tmd, Rmd, RmdDense, Tmd, TmdDense};
use super::layout::{Gap2Mut, Gap2Ref};
use super::sparse::{Cpu, SparseMemory};
use std::str::FromStr;
use thiserror::Error;

/// How the driver reads and writes descriptors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Access {
    /// Copy each descriptor to dense memory, modify, copy back.
    Copy,
    /// Read and write descriptor fields in place in sparse memory.
    #[default]
    Direct,
}

impl Access {
    /// The name used in parameters (`copy` or `direct`).
    pub fn name(self) -> &'static str {
        match self {
            Access::Copy => "copy",
            Access::Direct => "direct",
        }
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown descriptor access strategy.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error(
    "unknown descriptor access `{0}`: use `copy` (copy each descriptor to dense memory and back) \
     or `direct` (read and write fields in place in sparse memory)"
)]
pub struct ParseAccessError(pub String);

impl FromStr for Access {
    type Err = ParseAccessError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "copy" => Ok(Access::Copy),
            "direct" => Ok(Access::Direct),
            _ => Err(ParseAccessError(s.to_string())),
        }
    }
}

/// A receive descriptor as the driver finds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RxStatus {
    pub own: bool,
    pub stp: bool,
    pub enp: bool,
    /// The RMD1 error bits (ERR, FRAM, OFLO, CRC, BUFF) as they are in the word.
    pub errors: u16,
    /// MCNT; read only when ENP is set without ERR.
    pub mcnt: u16,
}

/// A transmit descriptor as the driver finds it when reclaiming.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TxStatus {
    pub own: bool,
    /// TMD3's error bits (BUFF, UFLO, LCOL, LCAR, RTRY) when ERR is set.
    pub errors: u16,
}

const RMD1_ERRORS: u16 =
    rmd::ERR.mask() | rmd::FRAM.mask() | rmd::OFLO.mask() | rmd::CRC.mask() | rmd::BUFF.mask();
const TMD3_ERRORS: u16 =
    tmd::BUFF.mask() | tmd::UFLO.mask() | tmd::LCOL.mask() | tmd::LCAR.mask() | tmd::RTRY.mask();

/// Descriptor operations of the driver, one implementation per strategy.
pub(crate) trait DescriptorAccess {
    /// Sets up a receive descriptor for buffer `buf` of `len` bytes and
    /// gives it to the chip.
    fn rx_setup(mem: &mut SparseMemory, at: u32, buf: u32, len: usize);
    /// Reads a receive descriptor's status.
    fn rx_status(mem: &SparseMemory, at: u32) -> RxStatus;
    /// Gives a harvested receive descriptor (buffer high address `hadr`)
    /// back to the chip.
    fn rx_return(mem: &mut SparseMemory, at: u32, hadr: u8);
    /// Sets up a transmit descriptor for buffer `buf`, owned by the host.
    fn tx_setup(mem: &mut SparseMemory, at: u32, buf: u32);
    /// Fills a transmit descriptor (buffer high address `hadr`) for `len`
    /// bytes and gives it to the chip.
    fn tx_fill(mem: &mut SparseMemory, at: u32, hadr: u8, len: usize, stp: bool, enp: bool);
    /// Reads a transmit descriptor's status.
    fn tx_status(mem: &SparseMemory, at: u32) -> TxStatus;
}

/// The copy strategy.
pub(crate) struct CopyAccess;
/// The direct (in place) strategy.
pub(crate) struct DirectAccess;

impl DescriptorAccess for CopyAccess {
    fn rx_setup(mem: &mut SparseMemory, at: u32, buf: u32, len: usize) {
        let mut d = RmdDense::load::<Cpu>(mem, at);
        d.set_buffer_address(buf);
        d.set_byte_count(len);
        d.set_word(3, 0);
        d.set_word(1, (d.word(1) & rmd::HADR.mask()) | rmd::OWN.mask());
        d.store::<Cpu>(mem, at);
    }

    #[inline]
    fn rx_status(mem: &SparseMemory, at: u32) -> RxStatus {
        let d = RmdDense::load::<Cpu>(mem, at);
        RxStatus {
            own: d.own(),
            stp: d.stp(),
            enp: d.enp(),
            errors: d.word(1) & RMD1_ERRORS,
            mcnt: d.mcnt(),
        }
    }

    #[inline]
    fn rx_return(mem: &mut SparseMemory, at: u32, _hadr: u8) {
        // As NetBSD's am7990_rint: copy in, reset the status, copy out.
        let mut d = RmdDense::load::<Cpu>(mem, at);
        d.set_word(1, (d.word(1) & rmd::HADR.mask()) | rmd::OWN.mask());
        d.store::<Cpu>(mem, at);
    }

    fn tx_setup(mem: &mut SparseMemory, at: u32, buf: u32) {
        let mut d = TmdDense::load::<Cpu>(mem, at);
        d.set_buffer_address(buf);
        d.set_word(1, d.word(1) & tmd::HADR.mask());
        d.set_word(2, bcnt_word(0));
        d.set_word(3, 0);
        d.store::<Cpu>(mem, at);
    }

    #[inline]
    fn tx_fill(mem: &mut SparseMemory, at: u32, _hadr: u8, len: usize, stp: bool, enp: bool) {
        let mut d = TmdDense::load::<Cpu>(mem, at);
        d.set_byte_count(len);
        d.set_word(3, 0);
        d.set_word(
            1,
            (d.word(1) & tmd::HADR.mask())
                | tmd::OWN.mask()
                | tmd::STP.put(u16::from(stp))
                | tmd::ENP.put(u16::from(enp)),
        );
        d.store::<Cpu>(mem, at);
    }

    #[inline]
    fn tx_status(mem: &SparseMemory, at: u32) -> TxStatus {
        let d = TmdDense::load::<Cpu>(mem, at);
        TxStatus {
            own: d.own(),
            errors: if d.err() { d.word(3) & TMD3_ERRORS } else { 0 },
        }
    }
}

impl DescriptorAccess for DirectAccess {
    fn rx_setup(mem: &mut SparseMemory, at: u32, buf: u32, len: usize) {
        let mut d = Rmd::<Gap2Mut<Cpu>>::at(mem, at);
        d.set_ladr(buf as u16);
        d.set_byte_count(len);
        d.set_word(3, 0);
        d.set_word(1, rmd::HADR.put((buf >> 16) as u16) | rmd::OWN.mask());
    }

    #[inline]
    fn rx_status(mem: &SparseMemory, at: u32) -> RxStatus {
        let d = Rmd::<Gap2Ref<Cpu>>::at_ref(mem, at);
        let w1 = d.word(1);
        let enp = w1 & rmd::ENP.mask() != 0;
        let errors = w1 & RMD1_ERRORS;
        RxStatus {
            own: w1 & rmd::OWN.mask() != 0,
            stp: w1 & rmd::STP.mask() != 0,
            enp,
            errors,
            // MCNT is only looked at when it is valid.
            mcnt: if enp && errors == 0 { d.mcnt() } else { 0 },
        }
    }

    #[inline]
    fn rx_return(mem: &mut SparseMemory, at: u32, hadr: u8) {
        // One word: OWN set, status cleared, the address byte kept.
        Rmd::<Gap2Mut<Cpu>>::at(mem, at)
            .set_word(1, rmd::HADR.put(u16::from(hadr)) | rmd::OWN.mask());
    }

    fn tx_setup(mem: &mut SparseMemory, at: u32, buf: u32) {
        let mut d = Tmd::<Gap2Mut<Cpu>>::at(mem, at);
        d.set_ladr(buf as u16);
        d.set_word(1, tmd::HADR.put((buf >> 16) as u16));
        d.set_word(2, bcnt_word(0));
        d.set_word(3, 0);
    }

    #[inline]
    fn tx_fill(mem: &mut SparseMemory, at: u32, hadr: u8, len: usize, stp: bool, enp: bool) {
        let mut d = Tmd::<Gap2Mut<Cpu>>::at(mem, at);
        d.set_word(2, bcnt_word(len));
        d.set_word(3, 0);
        // TMD1 last: it carries OWN.
        d.set_word(
            1,
            tmd::HADR.put(u16::from(hadr))
                | tmd::OWN.mask()
                | tmd::STP.put(u16::from(stp))
                | tmd::ENP.put(u16::from(enp)),
        );
    }

    #[inline]
    fn tx_status(mem: &SparseMemory, at: u32) -> TxStatus {
        let d = Tmd::<Gap2Ref<Cpu>>::at_ref(mem, at);
        let w1 = d.word(1);
        TxStatus {
            own: w1 & tmd::OWN.mask() != 0,
            errors: if w1 & tmd::ERR.mask() != 0 {
                d.word(3) & TMD3_ERRORS
            } else {
                0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_parses_and_explains_mistakes() {
        assert_eq!("copy".parse::<Access>(), Ok(Access::Copy));
        assert_eq!(" Direct ".parse::<Access>(), Ok(Access::Direct));
        let e = "dense".parse::<Access>().unwrap_err().to_string();
        assert!(e.contains("`dense`") && e.contains("`copy`") && e.contains("`direct`"));
        assert_eq!(Access::default(), Access::Direct);
    }

    fn both_write_the_same(copy: impl Fn(&mut SparseMemory), direct: impl Fn(&mut SparseMemory)) {
        let mut a = SparseMemory::new(256).unwrap();
        let mut b = SparseMemory::new(256).unwrap();
        // Something in the descriptor already, as after a chip write-back.
        for m in [&mut a, &mut b] {
            for w in 0..4 {
                m.write_word::<Cpu>(64 + 2 * w, 0x5a5a);
            }
        }
        copy(&mut a);
        direct(&mut b);
        assert_eq!(a.cpu_bytes(), b.cpu_bytes());
    }

    #[test]
    fn strategies_write_identical_descriptors() {
        both_write_the_same(
            |m| CopyAccess::tx_fill(m, 64, 0x5a, 60, true, false),
            |m| DirectAccess::tx_fill(m, 64, 0x5a, 60, true, false),
        );
        both_write_the_same(
            |m| CopyAccess::tx_setup(m, 64, 0x01_2340),
            |m| DirectAccess::tx_setup(m, 64, 0x01_2340),
        );
        both_write_the_same(
            |m| CopyAccess::rx_setup(m, 64, 0x01_2340, 1536),
            |m| DirectAccess::rx_setup(m, 64, 0x01_2340, 1536),
        );
    }

    #[test]
    fn direct_touches_fewer_words() {
        let mut a = SparseMemory::new(256).unwrap();
        let mut b = SparseMemory::new(256).unwrap();
        CopyAccess::tx_fill(&mut a, 64, 0, 60, true, true);
        DirectAccess::tx_fill(&mut b, 64, 0, 60, true, true);
        let (ca, cb) = (a.counts::<Cpu>(), b.counts::<Cpu>());
        assert_eq!((ca.word_reads, ca.word_writes), (4, 4));
        assert_eq!((cb.word_reads, cb.word_writes), (0, 3));
        // Reading a status with ENP: copy reads all four words, direct
        // reads RMD1 and then MCNT.
        let _ = CopyAccess::rx_status(&a, 64);
        let _ = DirectAccess::rx_status(&b, 64);
        assert_eq!(a.counts::<Cpu>().word_reads, 8);
        assert_eq!(b.counts::<Cpu>().word_reads, 2);
    }
}
