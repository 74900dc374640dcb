//! The Am7990 LANCE model.
//!
//! The chip is reached through RAP/RDP ([`Am7990::write_rap`],
//! [`Am7990::read_rdp`], [`Am7990::write_rdp`]) and works on the shared
//! [`SparseMemory`] the host also owns: the host passes that memory to
//! [`Am7990::run`], which stands for the chip's DMA engine getting the bus.
//! `run` carries out a pending INIT, sends every frame of the transmit ring
//! the chip owns, and takes frames from its wire side (any [`Device`]) into
//! the receive ring. Interrupts are status bits: [`Am7990::irq`] is the
//! interrupt line (INTR and INEA), which a driver polls.
//!
//! What is modelled (Am7990 data sheet): CSR0's command bits (INIT, STRT,
//! STOP, TDMD), its write-one-to-clear status bits (BABL, CERR, MISS, MERR,
//! RINT, TINT, IDON), the ERR and INTR summaries, INEA; CSR1/CSR2 (the
//! initialization block address) and CSR3 (BSWP, ACON, BCON), writable only
//! while stopped; the initialization block (MODE's PROM, DTX, DRX; PADR;
//! LADRF; the rings); rings of 2^n descriptors with the OWN handshake;
//! frames spanning several buffers (STP … ENP) on both sides; MCNT
//! including the 4-byte FCS the chip appends on receive; MISS when the
//! current receive descriptor is not the chip's; BUFF/UFLO when a chain runs
//! into a descriptor the chip does not own; BABL for frames longer than
//! 1518 bytes; MERR for DMA outside the shared memory; address filtering
//! (PADR, broadcast, LADRF hash, PROM).
//!
//! Emulation choices, where no wire exists to model: frames are neither
//! padded nor checked for a minimum length (the in-memory wire has no
//! collision fragments); a wire-side error while sending is reported as
//! RTRY (the wire's queue is full, like a busy medium) or LCAR (anything
//! else); CERR follows [`ChipConfig::heartbeat`] (a transceiver without SQE
//! test makes every transmission end with CERR, as on real hardware); the
//! loopback bits of MODE are stored but not acted upon. After STOP the chip
//! must be initialized again (STRT alone leaves it idle).

use super::csr::{csr0, csr3, mode, rap};
use super::descriptor::{
    ladrf_bit, rmd, tmd, InitBlock, Rmd, Tmd, DESCRIPTOR_BYTES, INIT_BLOCK_BYTES,
};
use super::layout::{Gap2Mut, Gap2Ref};
use super::sparse::{Dma, SparseMemory};
use pathstack_core::device::{Device, DeviceCaps, DeviceError};
use pathstack_core::msg::{Msg, MsgPool};
use pathstack_core::time::Instant;

/// Longest frame the transmitter sends without babbling, without the FCS
/// (1518 on the wire).
pub const MAX_FRAME: usize = 1514;
/// Bytes of the frame check sequence the chip appends on receive.
pub const FCS_LEN: usize = 4;
/// Largest MCNT (12 bits).
const MAX_MCNT: usize = 0x0fff;

/// How the adapter around the chip is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChipConfig {
    /// The transceiver answers each transmission with an SQE heartbeat.
    /// Without it, every transmission ends with CERR.
    pub heartbeat: bool,
}

impl Default for ChipConfig {
    fn default() -> Self {
        ChipConfig { heartbeat: true }
    }
}

/// What the model counted (not visible to a driver on real hardware).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChipStats {
    /// Frames handed to the wire.
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames placed in the receive ring.
    pub rx_frames: u64,
    /// Bytes of those frames (without FCS).
    pub rx_bytes: u64,
    /// Frames lost because the current receive descriptor was the host's (MISS).
    pub missed: u64,
    /// Frames rejected by the address filter.
    pub filtered: u64,
    /// Frames the transmitter cut off as too long (BABL).
    pub babble: u64,
    /// Receive frames cut short by BUFF or OFLO.
    pub rx_buffer_errors: u64,
    /// Transmit frames abandoned by BUFF/UFLO.
    pub tx_buffer_errors: u64,
    /// Frames the wire refused (RTRY or LCAR).
    pub wire_tx_errors: u64,
    /// Errors receiving from the wire.
    pub wire_rx_errors: u64,
    /// DMA accesses outside the shared memory (MERR).
    pub memory_errors: u64,
    /// Transmit descriptors the chip owned without STP at a frame start; it
    /// gave them back untouched.
    pub tx_skipped: u64,
    /// Completed initializations.
    pub inits: u64,
}

/// What one [`Am7990::run`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunReport {
    /// Frames taken from the transmit ring (sent or not).
    pub transmitted: usize,
    /// Frames taken from the wire (stored, missed or filtered).
    pub received: usize,
}

/// A descriptor ring as the chip tracks it.
#[derive(Clone, Copy, Debug, Default)]
struct Ring {
    base: u32,
    len: usize,
    next: usize,
}

impl Ring {
    fn addr(&self, i: usize) -> u32 {
        self.base + DESCRIPTOR_BYTES * (i & (self.len - 1)) as u32
    }
    fn step(&self, i: usize) -> usize {
        (i + 1) & (self.len - 1)
    }
}

/// The Am7990 model with its wire side.
pub struct Am7990 {
    wire: Box<dyn Device>,
    config: ChipConfig,
    rap: u16,
    /// CSR0 without the summary bits ERR and INTR (computed when read).
    csr0: u16,
    csr1: u16,
    csr2: u16,
    csr3: u16,
    init_pending: bool,
    initialized: bool,
    mode: u16,
    padr: [u8; 6],
    ladrf: u64,
    rx: Ring,
    tx: Ring,
    stats: ChipStats,
}

impl std::fmt::Debug for Am7990 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Am7990")
            .field("csr0", &super::csr::Csr0(self.csr0()))
            .field("csr3", &self.csr3)
            .field("padr", &self.padr)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Am7990 {
    /// A chip in its reset state (STOP set) whose wire side is `wire`.
    pub fn new(wire: Box<dyn Device>, config: ChipConfig) -> Self {
        Am7990 {
            wire,
            config,
            rap: 0,
            csr0: csr0::STOP,
            csr1: 0,
            csr2: 0,
            csr3: 0,
            init_pending: false,
            initialized: false,
            mode: 0,
            padr: [0; 6],
            ladrf: 0,
            rx: Ring::default(),
            tx: Ring::default(),
            stats: ChipStats::default(),
        }
    }

    /// Writes the register address port.
    pub fn write_rap(&mut self, value: u16) {
        self.rap = value & rap::MASK;
    }

    /// Reads the register address port.
    pub fn read_rap(&self) -> u16 {
        self.rap
    }

    /// Reads the register RAP selects.
    pub fn read_rdp(&self) -> u16 {
        match self.rap {
            rap::CSR0 => self.csr0(),
            rap::CSR1 => self.csr1,
            rap::CSR2 => self.csr2,
            _ => self.csr3,
        }
    }

    /// Writes the register RAP selects. CSR1–CSR3 ignore writes unless the
    /// chip is stopped.
    pub fn write_rdp(&mut self, value: u16) {
        let stopped = self.csr0 & csr0::STOP != 0;
        match self.rap {
            rap::CSR0 => self.write_csr0(value),
            rap::CSR1 if stopped => self.csr1 = value & !1,
            rap::CSR2 if stopped => self.csr2 = value & 0x00ff,
            rap::CSR3 if stopped => self.csr3 = value & csr3::MASK,
            _ => {}
        }
    }

    /// CSR0 with the ERR and INTR summaries.
    pub fn csr0(&self) -> u16 {
        let mut v = self.csr0;
        if v & csr0::ERR_BITS != 0 {
            v |= csr0::ERR;
        }
        if v & csr0::INTR_BITS != 0 {
            v |= csr0::INTR;
        }
        v
    }

    /// The interrupt line: INTR with INEA.
    pub fn irq(&self) -> bool {
        let v = self.csr0();
        v & csr0::INTR != 0 && v & csr0::INEA != 0
    }

    /// The station address loaded by the last INIT.
    pub fn padr(&self) -> [u8; 6] {
        self.padr
    }

    /// The model's counters.
    pub fn stats(&self) -> ChipStats {
        self.stats
    }

    /// The wire side's capabilities.
    pub fn wire_caps(&self) -> DeviceCaps {
        self.wire.caps()
    }

    /// The wire side.
    pub fn wire(&self) -> &dyn Device {
        &*self.wire
    }

    /// When the wire side has a delayed frame due, if ever.
    pub fn poll_at(&self) -> Option<Instant> {
        self.wire.poll_at()
    }

    fn write_csr0(&mut self, v: u16) {
        if v & csr0::STOP != 0 {
            self.stop();
            return;
        }
        self.csr0 &= !(v & csr0::W1C);
        if v & csr0::INIT != 0 {
            self.csr0 = (self.csr0 | csr0::INIT) & !csr0::STOP;
            self.init_pending = true;
        }
        if v & csr0::STRT != 0 {
            self.csr0 = (self.csr0 | csr0::STRT) & !csr0::STOP;
            if self.initialized && !self.init_pending {
                self.start();
            }
        }
        if self.csr0 & csr0::STOP == 0 {
            self.csr0 = (self.csr0 & !csr0::INEA) | (v & csr0::INEA);
            if v & csr0::TDMD != 0 && self.csr0 & csr0::TXON != 0 {
                self.csr0 |= csr0::TDMD;
            }
        }
    }

    /// STOP: everything off, all other CSR0 bits and CSR3 cleared, the
    /// initialization forgotten.
    fn stop(&mut self) {
        self.csr0 = csr0::STOP;
        self.csr3 = 0;
        self.init_pending = false;
        self.initialized = false;
        self.rx.next = 0;
        self.tx.next = 0;
    }

    fn start(&mut self) {
        if self.mode & mode::DTX == 0 {
            self.csr0 |= csr0::TXON;
        }
        if self.mode & mode::DRX == 0 {
            self.csr0 |= csr0::RXON;
        }
    }

    /// A DMA access failed: MERR, and the chip turns itself off.
    fn memory_error(&mut self) {
        self.stats.memory_errors += 1;
        self.csr0 = (self.csr0 | csr0::MERR) & !(csr0::TXON | csr0::RXON | csr0::TDMD);
    }

    /// Lets the chip work: a pending INIT, then the transmit ring, then up to
    /// `rx_budget` frames from the wire. `pool` provides the buffers the
    /// wire side needs (frames assembled for sending, TAP reads).
    pub fn run(
        &mut self,
        mem: &mut SparseMemory,
        pool: &MsgPool,
        now: Instant,
        rx_budget: usize,
    ) -> RunReport {
        let mut report = RunReport::default();
        if self.init_pending {
            self.initialize(mem);
        }
        if self.csr0 & csr0::TXON != 0 {
            self.csr0 &= !csr0::TDMD;
            report.transmitted = self.transmit_ring(mem, pool, now);
        }
        if self.csr0 & csr0::RXON != 0 {
            report.received = self.receive_from_wire(mem, pool, now, rx_budget);
        }
        report
    }

    fn initialize(&mut self, mem: &mut SparseMemory) {
        self.init_pending = false;
        let iadr = u32::from(self.csr2) << 16 | u32::from(self.csr1);
        if !mem.contains(iadr, INIT_BLOCK_BYTES) {
            self.memory_error();
            return;
        }
        let ib = InitBlock::<Gap2Ref<Dma>>::at_ref(mem, iadr);
        self.mode = ib.mode();
        self.padr = ib.padr();
        self.ladrf = ib.ladrf();
        // RDRA/TDRA are quadword aligned: the chip ignores the low three bits.
        let rx = Ring {
            base: ib.rdra() & !7,
            len: 1 << ib.rlen(),
            next: 0,
        };
        let tx = Ring {
            base: ib.tdra() & !7,
            len: 1 << ib.tlen(),
            next: 0,
        };
        for r in [rx, tx] {
            if !mem.contains(r.base, DESCRIPTOR_BYTES * r.len as u32) {
                self.memory_error();
                return;
            }
        }
        self.rx = rx;
        self.tx = tx;
        self.initialized = true;
        self.stats.inits += 1;
        self.csr0 |= csr0::IDON;
        if self.csr0 & csr0::STRT != 0 {
            self.start();
        }
    }

    /// Sends every complete frame of the transmit ring the chip owns.
    fn transmit_ring(&mut self, mem: &mut SparseMemory, pool: &MsgPool, now: Instant) -> usize {
        let mut frames = 0;
        // Each pass gives back at least one descriptor; a ring's worth of
        // passes is the most there can be.
        for _ in 0..self.tx.len {
            let first = self.tx.next;
            let t = Tmd::<Gap2Ref<Dma>>::at_ref(mem, self.tx.addr(first));
            if !t.own() {
                break;
            }
            if !t.stp() {
                self.stats.tx_skipped += 1;
                Tmd::<Gap2Mut<Dma>>::at(mem, self.tx.addr(first)).set_own(false);
                self.tx.next = self.tx.step(first);
                continue;
            }
            frames += 1;
            if !self.transmit_frame(mem, pool, now, first) {
                break;
            }
        }
        frames
    }

    /// Sends the frame starting at descriptor `first`. Returns whether the
    /// transmitter is still on.
    fn transmit_frame(
        &mut self,
        mem: &mut SparseMemory,
        pool: &MsgPool,
        now: Instant,
        first: usize,
    ) -> bool {
        // The FIFO: a pool buffer big enough for a legal frame.
        let mut frame = pool.alloc_empty(MAX_FRAME).ok();
        let mut idx = first;
        let mut used = 1;
        let mut babble = false;
        let complete = loop {
            let t = Tmd::<Gap2Ref<Dma>>::at_ref(mem, self.tx.addr(idx));
            let (addr, len, enp) = (t.buffer_address(), t.byte_count(), t.enp());
            if !mem.contains(addr, len as u32) {
                self.memory_error();
                return false;
            }
            match frame.as_mut() {
                Some(f) if f.len() + len <= MAX_FRAME => {
                    if self.read_buffer(mem, addr, len, f).is_err() {
                        self.memory_error();
                        return false;
                    }
                }
                _ => babble = true,
            }
            if enp {
                break true;
            }
            let next = self.tx.step(idx);
            let next_owned = Tmd::<Gap2Ref<Dma>>::at_ref(mem, self.tx.addr(next)).own();
            if used == self.tx.len || !next_owned {
                break false;
            }
            idx = next;
            used += 1;
        };
        let mut on = true;
        let mut tmd3 = 0u16;
        if !complete {
            // Chaining ran into a host-owned descriptor: the frame is cut
            // short; the chip reports BUFF and UFLO and turns its
            // transmitter off until it is initialized again.
            self.stats.tx_buffer_errors += 1;
            tmd3 = tmd::BUFF.mask() | tmd::UFLO.mask();
            self.csr0 &= !csr0::TXON;
            on = false;
        } else if babble || frame.is_none() {
            // Longer than 1518 bytes on the wire, or no FIFO buffer: cut off.
            self.stats.babble += u64::from(babble);
            if babble {
                self.csr0 |= csr0::BABL;
            } else {
                tmd3 = tmd::LCAR.mask();
                self.stats.wire_tx_errors += 1;
            }
        } else if let Some(f) = frame.take() {
            let n = f.len();
            match self.wire.transmit(f, now) {
                Ok(()) => {
                    self.stats.tx_frames += 1;
                    self.stats.tx_bytes += n as u64;
                    if !self.config.heartbeat {
                        self.csr0 |= csr0::CERR;
                    }
                }
                Err(e) => {
                    self.stats.wire_tx_errors += 1;
                    tmd3 = match e {
                        DeviceError::QueueFull { .. } => tmd::RTRY.mask(),
                        _ => tmd::LCAR.mask(),
                    };
                }
            }
        }
        // Status goes into the last descriptor used; OWN is cleared from the
        // last descriptor back to the first, so the host never sees a
        // partly returned frame.
        let mut k = idx;
        loop {
            let mut t = Tmd::<Gap2Mut<Dma>>::at(mem, self.tx.addr(k));
            if k == idx && tmd3 != 0 {
                t.set_word(3, tmd3);
                t.set_err(true);
            }
            t.set_own(false);
            if k == first {
                break;
            }
            k = (k + self.tx.len - 1) & (self.tx.len - 1);
        }
        self.tx.next = self.tx.step(idx);
        self.csr0 |= csr0::TINT;
        on
    }

    /// Appends `len` bytes of the buffer at LANCE address `addr` to `frame`.
    fn read_buffer(
        &self,
        mem: &SparseMemory,
        addr: u32,
        len: usize,
        frame: &mut Msg,
    ) -> Result<(), ()> {
        let dst = frame.append(len).map_err(|_| ())?;
        if self.csr3 & csr3::BSWP != 0 {
            // Big-endian byte order on the 16-bit bus: LANCE byte L is the
            // host's byte L ^ 1.
            for (i, b) in dst.iter_mut().enumerate() {
                *b = mem.gap16_byte((addr + i as u32) ^ 1);
            }
            mem.count_buffer::<Dma>(len as u64, 0);
            Ok(())
        } else {
            mem.copy_from_gap16::<Dma>(addr, dst).map_err(|_| ())
        }
    }

    /// Writes `data` to the buffer at LANCE address `addr`.
    fn write_buffer(&self, mem: &mut SparseMemory, addr: u32, data: &[u8]) -> bool {
        if self.csr3 & csr3::BSWP != 0 {
            if !mem.contains(addr, data.len() as u32) {
                return false;
            }
            for (i, b) in data.iter().enumerate() {
                mem.set_gap16_byte((addr + i as u32) ^ 1, *b);
            }
            mem.count_buffer::<Dma>(0, data.len() as u64);
            true
        } else {
            mem.copy_to_gap16::<Dma>(addr, data).is_ok()
        }
    }

    /// Whether the address filter passes a frame (PROM, PADR, broadcast,
    /// LADRF hash for multicast).
    fn accepts(&self, frame: &[u8]) -> bool {
        if self.mode & mode::PROM != 0 {
            return true;
        }
        let Some(dst) = frame.get(..6) else {
            return false;
        };
        let dst: [u8; 6] = [dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]];
        if dst == self.padr || dst == [0xff; 6] {
            return true;
        }
        dst[0] & 1 != 0 && self.ladrf & (1u64 << ladrf_bit(&dst)) != 0
    }

    fn receive_from_wire(
        &mut self,
        mem: &mut SparseMemory,
        pool: &MsgPool,
        now: Instant,
        budget: usize,
    ) -> usize {
        let mut n = 0;
        while n < budget {
            let frame = match self.wire.receive(pool, now) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => {
                    self.stats.wire_rx_errors += 1;
                    break;
                }
            };
            n += 1;
            if !self.accepts(frame.as_slice()) {
                self.stats.filtered += 1;
                continue;
            }
            if !self.store_frame(mem, frame.as_slice()) {
                break;
            }
        }
        n
    }

    /// Puts one frame (plus its FCS) into the receive ring. Returns whether
    /// the receiver is still on.
    fn store_frame(&mut self, mem: &mut SparseMemory, frame: &[u8]) -> bool {
        let first = self.rx.next;
        if !Rmd::<Gap2Ref<Dma>>::at_ref(mem, self.rx.addr(first)).own() {
            self.stats.missed += 1;
            self.csr0 |= csr0::MISS;
            return true;
        }
        let fcs = crc32fast::hash(frame).to_le_bytes();
        let total = frame.len() + FCS_LEN;
        let mut written = 0;
        let mut idx = first;
        let mut used = 1;
        // (ENP reached, error bits for the last descriptor)
        let (enp, err_bits) = loop {
            let r = Rmd::<Gap2Ref<Dma>>::at_ref(mem, self.rx.addr(idx));
            let (addr, cap) = (r.buffer_address(), r.byte_count());
            if total > MAX_MCNT {
                // MCNT cannot describe it: the FIFO overflows.
                break (false, rmd::OFLO.mask());
            }
            let chunk = cap.min(total - written);
            // The chunk covers frame bytes and possibly some FCS bytes.
            let data_end = (written + chunk).min(frame.len());
            let mut ok = true;
            if written < data_end {
                ok &= self.write_buffer(mem, addr, &frame[written..data_end]);
            }
            let fcs_from = written.max(frame.len()) - frame.len();
            let fcs_to = written + chunk - frame.len().min(written + chunk);
            if fcs_from < fcs_to {
                let at = addr + (written.max(frame.len()) - written) as u32;
                ok &= self.write_buffer(mem, at, &fcs[fcs_from..fcs_to]);
            }
            if !ok {
                self.memory_error();
                return false;
            }
            written += chunk;
            if written == total {
                break (true, 0);
            }
            let next = self.rx.step(idx);
            let next_owned = Rmd::<Gap2Ref<Dma>>::at_ref(mem, self.rx.addr(next)).own();
            if used == self.rx.len || !next_owned {
                break (false, rmd::BUFF.mask());
            }
            idx = next;
            used += 1;
        };
        if enp {
            self.stats.rx_frames += 1;
            self.stats.rx_bytes += frame.len() as u64;
        } else {
            self.stats.rx_buffer_errors += 1;
        }
        // Status into every descriptor of the chain, OWN cleared from the
        // last back to the first (the STP descriptor is returned last).
        let mut k = idx;
        loop {
            let mut r = Rmd::<Gap2Mut<Dma>>::at(mem, self.rx.addr(k));
            let hadr = r.hadr();
            let mut w1 = rmd::HADR.put(u16::from(hadr));
            if k == first {
                w1 |= rmd::STP.mask();
            }
            if k == idx {
                if enp {
                    w1 |= rmd::ENP.mask();
                    r.set_mcnt(total as u16);
                } else {
                    w1 |= err_bits | rmd::ERR.mask();
                }
            }
            r.set_word(1, w1);
            if k == first {
                break;
            }
            k = (k + self.rx.len - 1) & (self.rx.len - 1);
        }
        self.rx.next = self.rx.step(idx);
        self.csr0 |= csr0::RINT;
        true
    }
}
