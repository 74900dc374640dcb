//! The Am7990's memory structures, described once with
//! [`sparse_layout!`](crate::sparse_layout): the receive and transmit
//! message descriptors (RMD0–3, TMD0–3, four 16-bit words each) and the
//! initialization block (twelve words). Bit positions follow the Am7990
//! data sheet.
//!
//! *Protocol Latency: MIPS and Reality* (Mosberger, Peterson, O'Malley,
//! 1995, §2.6) says DEC's descriptors are ten bytes long; the Am7990's
//! are eight (four words), which is what this model uses — in sparse memory
//! a descriptor spans 16 CPU bytes, so a copy in and out moves 32.
//!
//! Byte counts: BCNT holds the buffer length as a *negative* 12-bit two's
//! complement number with the top four bits of the word set ("ONES"); MCNT
//! (receive) is the plain length of the received frame including its 4-byte
//! FCS, written into the descriptor holding the frame's end (ENP).

use super::layout::{Dense, Words, WordsMut};

/// Bytes of one descriptor in LANCE address space (rings are
/// quadword-aligned arrays of these).
pub const DESCRIPTOR_BYTES: u32 = 8;
/// Bytes of the initialization block in LANCE address space.
pub const INIT_BLOCK_BYTES: u32 = 24;
/// Largest buffer a descriptor can describe (BCNT is 12 bits; 0 means 4096).
pub const MAX_BUFFER: usize = 4096;

crate::sparse_layout! {
    /// Receive message descriptor (RMD0–RMD3).
    pub struct Rmd / rmd (4 words) {
        /// RMD0: low 16 bits of the buffer address.
        ladr / set_ladr / LADR: u16 @ 0[0..16];
        /// OWN: the chip owns the descriptor.
        own / set_own / OWN: bool @ 1[15..16];
        /// ERR: FRAM, OFLO, CRC or BUFF is set.
        err / set_err / ERR: bool @ 1[14..15];
        /// FRAM: framing error (not a multiple of 8 bits, with a bad CRC).
        fram / set_fram / FRAM: bool @ 1[13..14];
        /// OFLO: the receive FIFO overflowed.
        oflo / set_oflo / OFLO: bool @ 1[12..13];
        /// CRC: the frame check sequence was wrong.
        crc / set_crc / CRC: bool @ 1[11..12];
        /// BUFF: the next buffer was not owned while chaining.
        buff / set_buff / BUFF: bool @ 1[10..11];
        /// STP: the buffer holds the start of a frame.
        stp / set_stp / STP: bool @ 1[9..10];
        /// ENP: the buffer holds the end of a frame.
        enp / set_enp / ENP: bool @ 1[8..9];
        /// RMD1: high 8 bits of the buffer address.
        hadr / set_hadr / HADR: u8 @ 1[0..8];
        /// RMD2: buffer length, negative two's complement.
        bcnt / set_bcnt / BCNT: u16 @ 2[0..12];
        /// RMD2: must be ones.
        ones / set_ones / ONES: u8 @ 2[12..16];
        /// RMD3: message length including the FCS (valid with ENP and no ERR).
        mcnt / set_mcnt / MCNT: u16 @ 3[0..12];
    }
}

crate::sparse_layout! {
    /// Transmit message descriptor (TMD0–TMD3).
    pub struct Tmd / tmd (4 words) {
        /// TMD0: low 16 bits of the buffer address.
        ladr / set_ladr / LADR: u16 @ 0[0..16];
        /// OWN: the chip owns the descriptor.
        own / set_own / OWN: bool @ 1[15..16];
        /// ERR: BUFF, UFLO, LCOL, LCAR or RTRY is set in TMD3.
        err / set_err / ERR: bool @ 1[14..15];
        /// MORE: more than one retry was needed.
        more / set_more / MORE: bool @ 1[12..13];
        /// ONE: exactly one retry was needed.
        one / set_one / ONE: bool @ 1[11..12];
        /// DEF: the chip had to defer to other traffic.
        def / set_def / DEF: bool @ 1[10..11];
        /// STP: the buffer holds the start of a frame.
        stp / set_stp / STP: bool @ 1[9..10];
        /// ENP: the buffer holds the end of a frame.
        enp / set_enp / ENP: bool @ 1[8..9];
        /// TMD1: high 8 bits of the buffer address.
        hadr / set_hadr / HADR: u8 @ 1[0..8];
        /// TMD2: buffer length, negative two's complement.
        bcnt / set_bcnt / BCNT: u16 @ 2[0..12];
        /// TMD2: must be ones.
        ones / set_ones / ONES: u8 @ 2[12..16];
        /// BUFF: the next buffer was not owned while chaining.
        buff / set_buff / BUFF: bool @ 3[15..16];
        /// UFLO: the transmit FIFO ran empty before the frame's end.
        uflo / set_uflo / UFLO: bool @ 3[14..15];
        /// LCOL: late collision.
        lcol / set_lcol / LCOL: bool @ 3[12..13];
        /// LCAR: loss of carrier.
        lcar / set_lcar / LCAR: bool @ 3[11..12];
        /// RTRY: sending failed after 16 attempts.
        rtry / set_rtry / RTRY: bool @ 3[10..11];
        /// TDR: time domain reflectometry count.
        tdr / set_tdr / TDR: u16 @ 3[0..10];
    }
}

crate::sparse_layout! {
    /// Initialization block (IADR+00 … IADR+16).
    pub struct InitBlock / init_block (12 words) {
        /// MODE (see [`mode`](crate::lance::csr::mode)).
        mode / set_mode / MODE: u16 @ 0[0..16];
        /// PADR bytes 0 and 1 (byte 0 in the low half).
        padr0 / set_padr0 / PADR0: u16 @ 1[0..16];
        /// PADR bytes 2 and 3.
        padr1 / set_padr1 / PADR1: u16 @ 2[0..16];
        /// PADR bytes 4 and 5.
        padr2 / set_padr2 / PADR2: u16 @ 3[0..16];
        /// LADRF bits 15..0.
        ladrf0 / set_ladrf0 / LADRF0: u16 @ 4[0..16];
        /// LADRF bits 31..16.
        ladrf1 / set_ladrf1 / LADRF1: u16 @ 5[0..16];
        /// LADRF bits 47..32.
        ladrf2 / set_ladrf2 / LADRF2: u16 @ 6[0..16];
        /// LADRF bits 63..48.
        ladrf3 / set_ladrf3 / LADRF3: u16 @ 7[0..16];
        /// RDRA bits 15..0 (bits 2..0 must be zero).
        rdra_lo / set_rdra_lo / RDRA_LO: u16 @ 8[0..16];
        /// RDRA bits 23..16.
        rdra_hi / set_rdra_hi / RDRA_HI: u8 @ 9[0..8];
        /// RLEN: the receive ring has 2^RLEN entries.
        rlen / set_rlen / RLEN: u8 @ 9[13..16];
        /// TDRA bits 15..0 (bits 2..0 must be zero).
        tdra_lo / set_tdra_lo / TDRA_LO: u16 @ 10[0..16];
        /// TDRA bits 23..16.
        tdra_hi / set_tdra_hi / TDRA_HI: u8 @ 11[0..8];
        /// TLEN: the transmit ring has 2^TLEN entries.
        tlen / set_tlen / TLEN: u8 @ 11[13..16];
    }
}

/// A dense copy of a receive descriptor (the copy strategy).
pub type RmdDense = Rmd<Dense<4>>;
/// A dense copy of a transmit descriptor (the copy strategy).
pub type TmdDense = Tmd<Dense<4>>;
/// A dense copy of the initialization block.
pub type InitBlockDense = InitBlock<Dense<12>>;

/// BCNT of a buffer of `len` bytes (1..=4096): `-len` in 12 bits.
#[inline]
pub const fn encode_bcnt(len: usize) -> u16 {
    (0u16.wrapping_sub(len as u16)) & 0x0fff
}

/// Buffer length described by BCNT (0 stands for 4096).
#[inline]
pub const fn decode_bcnt(bcnt: u16) -> usize {
    let b = (bcnt & 0x0fff) as usize;
    if b == 0 {
        MAX_BUFFER
    } else {
        MAX_BUFFER - b
    }
}

/// The whole RMD2/TMD2 word for a buffer of `len` bytes: ONES and BCNT.
#[inline]
pub const fn bcnt_word(len: usize) -> u16 {
    0xf000 | encode_bcnt(len)
}

macro_rules! buffer_helpers {
    ($name:ident) => {
        impl<W: Words> $name<W> {
            /// The 24-bit buffer address (HADR:LADR).
            #[inline]
            pub fn buffer_address(&self) -> u32 {
                (u32::from(self.hadr()) << 16) | u32::from(self.ladr())
            }
            /// The buffer length decoded from BCNT.
            #[inline]
            pub fn byte_count(&self) -> usize {
                decode_bcnt(self.bcnt())
            }
        }
        impl<W: WordsMut> $name<W> {
            /// Sets the 24-bit buffer address (HADR:LADR).
            #[inline]
            pub fn set_buffer_address(&mut self, addr: u32) {
                self.set_ladr(addr as u16);
                self.set_hadr((addr >> 16) as u8);
            }
            /// Sets BCNT (and ONES) for a buffer of `len` bytes.
            #[inline]
            pub fn set_byte_count(&mut self, len: usize) {
                self.set_word(2, bcnt_word(len));
            }
        }
    };
}

buffer_helpers!(Rmd);
buffer_helpers!(Tmd);

impl<W: Words> InitBlock<W> {
    /// PADR, the station address, in transmission order.
    pub fn padr(&self) -> [u8; 6] {
        let [a, b] = self.padr0().to_le_bytes();
        let [c, d] = self.padr1().to_le_bytes();
        let [e, f] = self.padr2().to_le_bytes();
        [a, b, c, d, e, f]
    }
    /// LADRF, the 64-bit logical address (multicast hash) filter.
    pub fn ladrf(&self) -> u64 {
        u64::from(self.ladrf0())
            | u64::from(self.ladrf1()) << 16
            | u64::from(self.ladrf2()) << 32
            | u64::from(self.ladrf3()) << 48
    }
    /// RDRA, the receive ring's address.
    pub fn rdra(&self) -> u32 {
        u32::from(self.rdra_hi()) << 16 | u32::from(self.rdra_lo())
    }
    /// TDRA, the transmit ring's address.
    pub fn tdra(&self) -> u32 {
        u32::from(self.tdra_hi()) << 16 | u32::from(self.tdra_lo())
    }
}

impl<W: WordsMut> InitBlock<W> {
    /// Sets PADR.
    pub fn set_padr(&mut self, mac: [u8; 6]) {
        self.set_padr0(u16::from_le_bytes([mac[0], mac[1]]));
        self.set_padr1(u16::from_le_bytes([mac[2], mac[3]]));
        self.set_padr2(u16::from_le_bytes([mac[4], mac[5]]));
    }
    /// Sets LADRF.
    pub fn set_ladrf(&mut self, f: u64) {
        self.set_ladrf0(f as u16);
        self.set_ladrf1((f >> 16) as u16);
        self.set_ladrf2((f >> 32) as u16);
        self.set_ladrf3((f >> 48) as u16);
    }
    /// Sets RDRA and RLEN (`log2_len` = log2 of the ring length, 0..=7).
    pub fn set_rx_ring(&mut self, addr: u32, log2_len: u8) {
        self.set_rdra_lo(addr as u16);
        self.set_rdra_hi((addr >> 16) as u8);
        self.set_rlen(log2_len);
    }
    /// Sets TDRA and TLEN (`log2_len` = log2 of the ring length, 0..=7).
    pub fn set_tx_ring(&mut self, addr: u32, log2_len: u8) {
        self.set_tdra_lo(addr as u16);
        self.set_tdra_hi((addr >> 16) as u8);
        self.set_tlen(log2_len);
    }
}

/// The LADRF bit a multicast address hashes to: the top six bits of the
/// little-endian Ethernet CRC of the address, without the final inversion
/// (Am7990 data sheet, "Logical Address Filter"; Linux `lance_load_multicast`).
pub fn ladrf_bit(addr: &[u8; 6]) -> u32 {
    // crc32fast computes the standard (inverted) CRC-32; the LANCE uses the
    // register before the final inversion.
    let crc = !crc32fast::hash(addr);
    crc >> 26
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lance::layout::Gap2Mut;
    use crate::lance::sparse::{Cpu, SparseMemory};

    #[test]
    fn bcnt_is_negative_twos_complement() {
        assert_eq!(encode_bcnt(1), 0x0fff);
        assert_eq!(encode_bcnt(1536), 0x0a00);
        assert_eq!(decode_bcnt(0x0a00), 1536);
        assert_eq!(decode_bcnt(0), 4096);
        assert_eq!(bcnt_word(64), 0xffc0);
        for len in 1..=4096 {
            assert_eq!(decode_bcnt(encode_bcnt(len)), len);
        }
    }

    #[test]
    fn descriptor_fields_land_on_the_data_sheet_bits() {
        let mut d = TmdDense::zeroed();
        d.set_buffer_address(0x12_3456);
        d.set_byte_count(60);
        d.set_own(true);
        d.set_stp(true);
        d.set_enp(true);
        d.set_lcar(true);
        assert_eq!(d.0 .0, [0x3456, 0x8312, 0xffc4, 0x0800]);
        assert_eq!(d.buffer_address(), 0x12_3456);
        assert_eq!(d.byte_count(), 60);
    }

    #[test]
    fn init_block_round_trips_in_sparse_memory() {
        let mut mem = SparseMemory::new(64).unwrap();
        let mut ib = InitBlock::<Gap2Mut<Cpu>>::at(&mut mem, 0);
        ib.set_padr([1, 2, 3, 4, 5, 6]);
        ib.set_ladrf(0x0123_4567_89ab_cdef);
        ib.set_rx_ring(0x01_0040, 4);
        ib.set_tx_ring(0x02_0080, 7);
        let d = InitBlockDense::load::<Cpu>(&mem, 0);
        assert_eq!(d.padr(), [1, 2, 3, 4, 5, 6]);
        assert_eq!(d.ladrf(), 0x0123_4567_89ab_cdef);
        assert_eq!((d.rdra(), d.rlen()), (0x01_0040, 4));
        assert_eq!((d.tdra(), d.tlen()), (0x02_0080, 7));
        assert_eq!(d.word(9), 0x8001);
        // PADR byte 0 is the low byte of word 1, at CPU offset 4.
        assert_eq!(&mem.cpu_bytes()[4..8], &[1, 2, 0, 0]);
    }

    #[test]
    fn ladrf_hash_matches_linux() {
        // 01:00:5e:00:00:01 (all-hosts) hashes to bit 0x?? by ether_crc_le >> 26;
        // check against a direct bitwise computation of the same CRC.
        fn ether_crc_le(data: &[u8]) -> u32 {
            let mut crc = 0xffff_ffffu32;
            for &b in data {
                let mut byte = b;
                for _ in 0..8 {
                    let bit = (crc ^ u32::from(byte)) & 1;
                    crc >>= 1;
                    if bit != 0 {
                        crc ^= 0xedb8_8320;
                    }
                    byte >>= 1;
                }
            }
            crc
        }
        for addr in [[1, 0, 0x5e, 0, 0, 1], [0x33, 0x33, 0, 0, 0, 1], [0xff; 6]] {
            assert_eq!(ladrf_bit(&addr), ether_crc_le(&addr) >> 26);
        }
    }
}
