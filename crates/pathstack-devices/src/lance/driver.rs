//! The LANCE driver: initializes the chip, owns the descriptor rings and
//! their buffers, transmits, receives and counts errors.
//!
//! [`LanceDriver`] owns both the [`Am7990`] and the [`SparseMemory`] they
//! share, so no reference counting is needed: the chip works on the memory
//! only when the driver lets it ([`Am7990::run`], standing for the chip's
//! DMA engine getting the bus — right after a transmit demand, and when the
//! driver polls). [`LanceModule`](super::LanceModule) puts this driver into
//! a module graph.
//!
//! Every descriptor access goes through one of two strategies
//! ([`Access`]): `copy` or `direct` (see [`access`](super::access)). The
//! rest of the driver is the same code for both, monomorphized once per
//! strategy.

use super::access::{Access, CopyAccess, DescriptorAccess, DirectAccess, RxStatus, TxStatus};
use super::chip::{Am7990, ChipConfig, ChipStats, FCS_LEN, MAX_FRAME};
use super::csr::{csr0, mode, rap, Csr0};
use super::descriptor::InitBlockDense;
use super::plan::{MemoryPlan, PlanError};
use super::sparse::{AccessCounts, Cpu, SparseError, SparseMemory};
use pathstack_core::device::Device;
use pathstack_core::msg::{Msg, MsgPool};
use pathstack_core::time::Instant;
use thiserror::Error;

pathstack_core::drop_reasons! {
    /// Why the driver dropped a frame or counted an error.
    pub enum LanceDropReason in "lance" {
        /// MISS: a frame arrived while the chip owned no receive descriptor.
        Miss => "miss",
        /// BABL: the transmitter cut off a frame longer than 1518 bytes.
        Babble => "babble",
        /// CERR: no SQE heartbeat after a transmission (the frame was sent).
        Cerr => "cerr",
        /// MERR: a DMA access failed; the driver restarts the chip.
        Merr => "merr",
        /// The transmit ring has no room for the frame.
        TxRingFull => "tx_ring_full",
        /// The frame is longer than 1514 bytes (1518 with FCS).
        TxTooLong => "tx_too_long",
        /// The frame is empty.
        TxEmpty => "tx_empty",
        /// The chip is not running.
        TxDown => "tx_down",
        /// The chip gave back a transmit descriptor with ERR (LCAR, RTRY,
        /// LCOL, BUFF, UFLO), or a restart discarded frames in flight.
        TxError => "tx_error",
        /// A received frame came back with ERR (BUFF, OFLO, CRC, FRAM).
        RxError => "rx_error",
        /// A receive chain did not start with STP or end with ENP, or MCNT
        /// does not fit its buffers.
        RxBadChain => "rx_bad_chain",
        /// No pool buffer for a received frame.
        RxNoBuffer => "rx_no_buffer",
    }
}

/// How a [`LanceDriver`] is set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LanceConfig {
    /// Descriptor access strategy.
    pub access: Access,
    /// Receive ring entries (2^n, 1..=128).
    pub rx_ring: usize,
    /// Transmit ring entries (2^n, 1..=128).
    pub tx_ring: usize,
    /// Bytes per buffer (a multiple of 16, 64..=4080); frames longer than a
    /// buffer span several.
    pub buf_size: usize,
    /// Station address; `None` takes the wire side's, or
    /// [`DEFAULT_MAC`] if it has none.
    pub mac: Option<[u8; 6]>,
    /// Receive every frame (MODE.PROM).
    pub promiscuous: bool,
    /// The adapter around the chip.
    pub chip: ChipConfig,
}

/// The station address used when neither the configuration nor the wire
/// side gives one (locally administered).
pub const DEFAULT_MAC: [u8; 6] = [0x02, 0x00, 0x4c, 0x41, 0x4e, 0x45];

impl Default for LanceConfig {
    /// Direct access, 16-entry rings, 1,536-byte buffers.
    fn default() -> Self {
        LanceConfig {
            access: Access::Direct,
            rx_ring: 16,
            tx_ring: 16,
            buf_size: 1536,
            mac: None,
            promiscuous: false,
            chip: ChipConfig::default(),
        }
    }
}

/// What went wrong setting up or starting the adapter.
#[derive(Debug, Error)]
pub enum LanceError {
    /// The rings or buffers cannot be laid out.
    #[error("LANCE memory layout: {0}")]
    Plan(#[from] PlanError),
    /// The shared memory cannot be made.
    #[error("LANCE shared memory: {0}")]
    Memory(#[from] SparseError),
    /// INIT did not end with IDON.
    #[error("LANCE initialization failed: CSR0 = {csr0}")]
    InitFailed {
        /// CSR0 after the attempt.
        csr0: Csr0,
    },
    /// STRT did not turn the transmitter and receiver on.
    #[error("LANCE did not start: CSR0 = {csr0}")]
    StartFailed {
        /// CSR0 after the attempt.
        csr0: Csr0,
    },
}

/// What the driver hands out while polling.
#[derive(Debug)]
pub enum RxEvent {
    /// A received frame (without FCS).
    Frame(Msg),
    /// Something was dropped or an error counted.
    Drop(LanceDropReason),
}

/// The driver's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverStats {
    /// Frames queued for transmission.
    pub tx_frames: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames received and handed out.
    pub rx_frames: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Frames refused because the transmit ring was full.
    pub tx_ring_full: u64,
    /// Frames refused as empty, too long, or with the chip down.
    pub tx_refused: u64,
    /// Transmit descriptors returned with ERR, or lost by a restart.
    pub tx_errors: u64,
    /// Received frames dropped for ERR or a bad chain.
    pub rx_errors: u64,
    /// Received frames dropped for lack of a pool buffer.
    pub rx_no_buffer: u64,
    /// MISS interrupts (each stands for one or more missed frames).
    pub miss: u64,
    /// BABL interrupts.
    pub babble: u64,
    /// CERR indications.
    pub cerr: u64,
    /// MERR interrupts.
    pub merr: u64,
    /// Restarts after MERR or a transmitter turned off.
    pub restarts: u64,
    /// Interrupt conditions serviced (CSR0 reads with INTR set).
    pub interrupts: u64,
}

/// The LANCE driver with its chip and shared memory.
pub struct LanceDriver {
    chip: Am7990,
    mem: SparseMemory,
    plan: MemoryPlan,
    access: Access,
    mac: [u8; 6],
    promiscuous: bool,
    running: bool,
    /// Next receive descriptor to look at.
    rx_next: usize,
    /// Next transmit descriptor to fill.
    tx_head: usize,
    /// Oldest transmit descriptor not yet reclaimed.
    tx_tail: usize,
    /// Transmit descriptors filled and not reclaimed.
    tx_busy: usize,
    /// Transmit errors found outside `poll`, reported by the next `poll`.
    tx_errors_unreported: u64,
    stats: DriverStats,
}

impl std::fmt::Debug for LanceDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanceDriver")
            .field("access", &self.access)
            .field("plan", &self.plan)
            .field("mac", &self.mac)
            .field("running", &self.running)
            .field("chip", &self.chip)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Runs `$body` with `$A` bound to the strategy type of `$self.access`.
macro_rules! with_access {
    ($self:ident, $A:ident => $body:expr) => {
        match $self.access {
            Access::Copy => {
                type $A = CopyAccess;
                $body
            }
            Access::Direct => {
                type $A = DirectAccess;
                $body
            }
        }
    };
}

impl LanceDriver {
    /// A driver for a chip whose wire side is `wire`. The chip stays stopped
    /// until [`LanceDriver::start`].
    pub fn new(wire: Box<dyn Device>, config: LanceConfig) -> Result<Self, LanceError> {
        let plan = MemoryPlan::new(config.rx_ring, config.tx_ring, config.buf_size)?;
        let mem = SparseMemory::new(plan.size)?;
        let mac = config
            .mac
            .or_else(|| wire.caps().mac)
            .unwrap_or(DEFAULT_MAC);
        Ok(LanceDriver {
            chip: Am7990::new(wire, config.chip),
            mem,
            plan,
            access: config.access,
            mac,
            promiscuous: config.promiscuous,
            running: false,
            rx_next: 0,
            tx_head: 0,
            tx_tail: 0,
            tx_busy: 0,
            tx_errors_unreported: 0,
            stats: DriverStats::default(),
        })
    }

    /// The station address.
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }
    /// The descriptor access strategy.
    pub fn access(&self) -> Access {
        self.access
    }
    /// The memory layout.
    pub fn plan(&self) -> &MemoryPlan {
        &self.plan
    }
    /// The chip.
    pub fn chip(&self) -> &Am7990 {
        &self.chip
    }
    /// The chip's model counters.
    pub fn chip_stats(&self) -> ChipStats {
        self.chip.stats()
    }
    /// The shared memory.
    pub fn memory(&self) -> &SparseMemory {
        &self.mem
    }
    /// The driver's own accesses to shared memory (descriptor words, buffer bytes).
    pub fn cpu_accesses(&self) -> AccessCounts {
        self.mem.counts::<Cpu>()
    }
    /// The driver's counters.
    pub fn stats(&self) -> DriverStats {
        self.stats
    }
    /// Whether the chip is running.
    pub fn is_running(&self) -> bool {
        self.running
    }
    /// When the wire side has a delayed frame due.
    pub fn poll_at(&self) -> Option<Instant> {
        self.chip.poll_at()
    }

    /// Stops the chip (CSR0.STOP). Frames in the transmit ring are lost.
    pub fn stop(&mut self) {
        self.chip.write_rap(rap::CSR0);
        self.chip.write_rdp(csr0::STOP);
        self.running = false;
    }

    /// Initializes and starts the chip: writes the initialization block and
    /// the rings, points CSR1/CSR2 at the block, sets INIT, waits for IDON,
    /// then sets STRT and INEA. May be called again to restart.
    pub fn start(&mut self, pool: &MsgPool, now: Instant) -> Result<(), LanceError> {
        with_access!(self, A => self.start_with::<A>(pool, now))
    }

    fn start_with<A: DescriptorAccess>(
        &mut self,
        pool: &MsgPool,
        now: Instant,
    ) -> Result<(), LanceError> {
        self.stop();
        let p = self.plan;
        let mut ib = InitBlockDense::zeroed();
        ib.set_mode(if self.promiscuous { mode::PROM } else { 0 });
        ib.set_padr(self.mac);
        ib.set_ladrf(0);
        ib.set_rx_ring(p.rx_ring, p.rlen());
        ib.set_tx_ring(p.tx_ring, p.tlen());
        ib.store::<Cpu>(&mut self.mem, p.init_block);
        for i in 0..p.rx_len {
            A::rx_setup(&mut self.mem, p.rmd(i), p.rx_buf(i), p.buf_size);
        }
        for i in 0..p.tx_len {
            A::tx_setup(&mut self.mem, p.tmd(i), p.tx_buf(i));
        }
        let chip = &mut self.chip;
        chip.write_rap(rap::CSR1);
        chip.write_rdp(p.init_block as u16);
        chip.write_rap(rap::CSR2);
        chip.write_rdp((p.init_block >> 16) as u16);
        // CSR3 = 0: little-endian buffers (the Alpha's order), as DEC's
        // drivers for the IOASIC LANCE set it.
        chip.write_rap(rap::CSR3);
        chip.write_rdp(0);
        // RAP stays at CSR0 from here on, so servicing an interrupt is one
        // RDP read and one RDP write.
        chip.write_rap(rap::CSR0);
        chip.write_rdp(csr0::INIT);
        chip.run(&mut self.mem, pool, now, 0);
        let v = self.chip.read_rdp();
        if v & csr0::IDON == 0 {
            return Err(LanceError::InitFailed { csr0: Csr0(v) });
        }
        self.chip.write_rdp(csr0::IDON | csr0::STRT | csr0::INEA);
        let v = self.chip.read_rdp();
        if v & (csr0::TXON | csr0::RXON) != csr0::TXON | csr0::RXON {
            return Err(LanceError::StartFailed { csr0: Csr0(v) });
        }
        // Frames that were in the transmit ring are gone.
        self.stats.tx_errors += self.tx_busy as u64;
        self.tx_errors_unreported += self.tx_busy as u64;
        self.rx_next = 0;
        self.tx_head = 0;
        self.tx_tail = 0;
        self.tx_busy = 0;
        self.running = true;
        Ok(())
    }

    /// Queues `frame` (a whole link-layer frame, without FCS) for
    /// transmission: copies it into as many transmit buffers as it needs,
    /// hands their descriptors to the chip (the first one last) and sets
    /// TDMD. On error nothing was queued.
    pub fn transmit(
        &mut self,
        frame: &[u8],
        pool: &MsgPool,
        now: Instant,
    ) -> Result<(), LanceDropReason> {
        with_access!(self, A => self.transmit_with::<A>(frame, pool, now))
    }

    #[inline]
    fn transmit_with<A: DescriptorAccess>(
        &mut self,
        frame: &[u8],
        pool: &MsgPool,
        now: Instant,
    ) -> Result<(), LanceDropReason> {
        let refuse = |s: &mut DriverStats, r| {
            s.tx_refused += 1;
            Err(r)
        };
        if !self.running {
            return refuse(&mut self.stats, LanceDropReason::TxDown);
        }
        let len = frame.len();
        if len == 0 {
            return refuse(&mut self.stats, LanceDropReason::TxEmpty);
        }
        if len > MAX_FRAME {
            return refuse(&mut self.stats, LanceDropReason::TxTooLong);
        }
        let p = self.plan;
        let need = len.div_ceil(p.buf_size);
        if p.tx_len - self.tx_busy < need {
            self.reclaim::<A>();
            if p.tx_len - self.tx_busy < need {
                self.stats.tx_ring_full += 1;
                return Err(LanceDropReason::TxRingFull);
            }
        }
        for (k, chunk) in frame.chunks(p.buf_size).enumerate() {
            if self
                .mem
                .copy_to_gap16::<Cpu>(p.tx_buf(self.tx_head + k), chunk)
                .is_err()
            {
                // The plan lies inside the memory; this cannot happen.
                return refuse(&mut self.stats, LanceDropReason::TxError);
            }
        }
        // Descriptors from the last to the first: the chip must not see the
        // frame's start (OWN on the STP descriptor) before its end is ready.
        for k in (0..need).rev() {
            let i = self.tx_head + k;
            let chunk = (len - k * p.buf_size).min(p.buf_size);
            A::tx_fill(
                &mut self.mem,
                p.tmd(i),
                (p.tx_buf(i) >> 16) as u8,
                chunk,
                k == 0,
                k == need - 1,
            );
        }
        self.tx_head = (self.tx_head + need) & (p.tx_len - 1);
        self.tx_busy += need;
        self.stats.tx_frames += 1;
        self.stats.tx_bytes += len as u64;
        self.chip.write_rdp(csr0::TDMD | csr0::INEA);
        // The chip answers the transmit demand at once.
        self.chip.run(&mut self.mem, pool, now, 0);
        Ok(())
    }

    /// Services the chip: lets it send and receive, acknowledges its
    /// interrupt conditions, reclaims sent descriptors, and hands each
    /// received frame (at most `budget`) and each counted error to `on`.
    /// Restarts the chip after MERR. Returns the frames handed out.
    pub fn poll(
        &mut self,
        pool: &MsgPool,
        now: Instant,
        budget: usize,
        on: &mut dyn FnMut(RxEvent),
    ) -> usize {
        with_access!(self, A => self.poll_with::<A>(pool, now, budget, on))
    }

    fn poll_with<A: DescriptorAccess>(
        &mut self,
        pool: &MsgPool,
        now: Instant,
        budget: usize,
        on: &mut dyn FnMut(RxEvent),
    ) -> usize {
        if !self.running {
            return 0;
        }
        let mut delivered = 0;
        let mut taken = 0;
        loop {
            let room = budget
                .saturating_sub(delivered)
                .min(self.rx_frames_per_run());
            let report = self.chip.run(&mut self.mem, pool, now, room);
            taken += report.received;
            let v = self.service_interrupt(on);
            if v & csr0::TINT != 0 {
                self.reclaim::<A>();
            }
            if self.tx_errors_unreported > 0 {
                for _ in 0..std::mem::take(&mut self.tx_errors_unreported) {
                    on(RxEvent::Drop(LanceDropReason::TxError));
                }
            }
            if v & csr0::RINT != 0 {
                delivered += self.harvest::<A>(pool, on);
            }
            if v & (csr0::TXON | csr0::RXON) != csr0::TXON | csr0::RXON {
                // MERR, or a transmit chain error turned the chip (partly)
                // off: start it again.
                self.stats.restarts += 1;
                if self.start_with::<A>(pool, now).is_err() {
                    self.running = false;
                }
                break;
            }
            if report.received == 0 || delivered >= budget || taken >= budget {
                break;
            }
        }
        delivered
    }

    /// How many frames the chip may take from the wire in one run: as many
    /// as the receive ring holds at the longest frame's buffer count, so a
    /// burst never runs the ring dry (MISS) while the driver has buffers to
    /// give back; at least one.
    fn rx_frames_per_run(&self) -> usize {
        let per_frame = (MAX_FRAME + FCS_LEN).div_ceil(self.plan.buf_size);
        (self.plan.rx_len / per_frame).max(1)
    }

    /// Reads CSR0 and acknowledges what it reports (keeping INEA set);
    /// counts MISS, BABL, CERR and MERR. Returns the CSR0 read.
    #[inline]
    fn service_interrupt(&mut self, on: &mut dyn FnMut(RxEvent)) -> u16 {
        let v = self.chip.read_rdp();
        let ack = v & csr0::W1C;
        if ack == 0 {
            return v;
        }
        self.chip.write_rdp(ack | csr0::INEA);
        if v & csr0::INTR != 0 {
            self.stats.interrupts += 1;
        }
        if v & csr0::ERR != 0 {
            let s = &mut self.stats;
            for (bit, count, r) in [
                (csr0::MISS, &mut s.miss, LanceDropReason::Miss),
                (csr0::BABL, &mut s.babble, LanceDropReason::Babble),
                (csr0::CERR, &mut s.cerr, LanceDropReason::Cerr),
                (csr0::MERR, &mut s.merr, LanceDropReason::Merr),
            ] {
                if v & bit != 0 {
                    *count += 1;
                    on(RxEvent::Drop(r));
                }
            }
        }
        v
    }

    /// Takes back the transmit descriptors the chip is done with.
    #[inline]
    fn reclaim<A: DescriptorAccess>(&mut self) {
        let p = self.plan;
        while self.tx_busy > 0 {
            let TxStatus { own, errors } = A::tx_status(&self.mem, p.tmd(self.tx_tail));
            if own {
                break;
            }
            if errors != 0 {
                self.stats.tx_errors += 1;
                self.tx_errors_unreported += 1;
            }
            self.tx_tail = (self.tx_tail + 1) & (p.tx_len - 1);
            self.tx_busy -= 1;
        }
    }

    /// Gives receive descriptors `first ..= last` (ring order) back to the chip.
    #[inline]
    fn give_back<A: DescriptorAccess>(&mut self, first: usize, count: usize) {
        let p = self.plan;
        for k in 0..count {
            let i = first + k;
            A::rx_return(&mut self.mem, p.rmd(i), (p.rx_buf(i) >> 16) as u8);
        }
    }

    /// Hands out every frame the chip has returned in the receive ring and
    /// gives the descriptors back.
    fn harvest<A: DescriptorAccess>(
        &mut self,
        pool: &MsgPool,
        on: &mut dyn FnMut(RxEvent),
    ) -> usize {
        let p = self.plan;
        let mask = p.rx_len - 1;
        let mut delivered = 0;
        let mut seen = 0;
        'frames: while seen < p.rx_len {
            let first = self.rx_next;
            let st = A::rx_status(&self.mem, p.rmd(first));
            if st.own {
                break;
            }
            if !st.stp {
                // Not the start of a frame: give it back.
                self.give_back::<A>(first, 1);
                self.rx_next = (first + 1) & mask;
                seen += 1;
                self.stats.rx_errors += 1;
                on(RxEvent::Drop(LanceDropReason::RxBadChain));
                continue;
            }
            // Find the frame's last descriptor.
            let mut end: RxStatus = st;
            let mut count = 1;
            while !end.enp && end.errors == 0 {
                if count == p.rx_len {
                    break;
                }
                let next = A::rx_status(&self.mem, p.rmd(first + count));
                if next.own {
                    // The chip is still filling this frame.
                    break 'frames;
                }
                if next.stp {
                    // A new frame starts before this one ended.
                    self.give_back::<A>(first, count);
                    self.rx_next = (first + count) & mask;
                    seen += count;
                    self.stats.rx_errors += 1;
                    on(RxEvent::Drop(LanceDropReason::RxBadChain));
                    continue 'frames;
                }
                end = next;
                count += 1;
            }
            let mcnt = usize::from(end.mcnt);
            if end.errors != 0 {
                self.stats.rx_errors += 1;
                on(RxEvent::Drop(LanceDropReason::RxError));
            } else if !end.enp || mcnt < FCS_LEN || mcnt - FCS_LEN > count * p.buf_size {
                self.stats.rx_errors += 1;
                on(RxEvent::Drop(LanceDropReason::RxBadChain));
            } else {
                let len = mcnt - FCS_LEN;
                match self.copy_out(first, len, pool) {
                    Some(m) => {
                        self.stats.rx_frames += 1;
                        self.stats.rx_bytes += len as u64;
                        delivered += 1;
                        on(RxEvent::Frame(m));
                    }
                    None => {
                        self.stats.rx_no_buffer += 1;
                        on(RxEvent::Drop(LanceDropReason::RxNoBuffer));
                    }
                }
            }
            self.give_back::<A>(first, count);
            self.rx_next = (first + count) & mask;
            seen += count;
        }
        delivered
    }

    /// Copies a received frame of `len` bytes, starting in receive buffer
    /// `first`, into a pool message.
    #[inline]
    fn copy_out(&self, first: usize, len: usize, pool: &MsgPool) -> Option<Msg> {
        let p = self.plan;
        let mut m = pool.alloc_empty(len).ok()?;
        let dst = m.append(len).ok()?;
        for (k, chunk) in dst.chunks_mut(p.buf_size).enumerate() {
            self.mem
                .copy_from_gap16::<Cpu>(p.rx_buf(first + k), chunk)
                .ok()?;
        }
        Some(m)
    }
}
