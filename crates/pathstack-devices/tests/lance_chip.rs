//! The Am7990 model against the data sheet's behaviour, driven by hand the
//! way a driver would: init block and descriptors written into sparse
//! memory, registers through RAP/RDP, frames over the in-memory wire.

use pathstack_core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack_core::device::Device;
use pathstack_core::{Instant, MsgPool, PoolConfig};
use pathstack_devices::lance::csr::{csr0, csr3, mode, rap};
use pathstack_devices::lance::descriptor::{InitBlockDense, Rmd, RmdDense, Tmd, TmdDense};
use pathstack_devices::lance::layout::Gap2Mut;
use pathstack_devices::lance::sparse::{Cpu, SparseMemory};
use pathstack_devices::lance::{Am7990, ChipConfig, MemoryPlan};

const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x10];
const PEER: [u8; 6] = [0x02, 0, 0, 0, 0, 0x20];

/// A chip, its memory and the far end of its wire.
struct Board {
    chip: Am7990,
    mem: SparseMemory,
    plan: MemoryPlan,
    pool: MsgPool,
    peer: MemoryEnd,
    now: Instant,
}

impl Board {
    fn new(rx: usize, tx: usize, buf: usize) -> Self {
        Self::with(rx, tx, buf, ChipConfig::default(), 0)
    }

    fn with(rx: usize, tx: usize, buf: usize, config: ChipConfig, mode_bits: u16) -> Self {
        let (a, b) = memory_pair(MemoryConfig::default());
        let plan = MemoryPlan::new(rx, tx, buf).unwrap();
        let mut mem = SparseMemory::new(plan.size).unwrap();
        let mut ib = InitBlockDense::zeroed();
        ib.set_mode(mode_bits);
        ib.set_padr(MAC);
        ib.set_rx_ring(plan.rx_ring, plan.rlen());
        ib.set_tx_ring(plan.tx_ring, plan.tlen());
        ib.store::<Cpu>(&mut mem, plan.init_block);
        for i in 0..rx {
            let mut d = RmdDense::zeroed();
            d.set_buffer_address(plan.rx_buf(i));
            d.set_byte_count(buf);
            d.store::<Cpu>(&mut mem, plan.rmd(i));
        }
        for i in 0..tx {
            let mut d = TmdDense::zeroed();
            d.set_buffer_address(plan.tx_buf(i));
            d.store::<Cpu>(&mut mem, plan.tmd(i));
        }
        let mut chip = Am7990::new(Box::new(a), config);
        chip.write_rap(rap::CSR1);
        chip.write_rdp(plan.init_block as u16);
        chip.write_rap(rap::CSR2);
        chip.write_rdp((plan.init_block >> 16) as u16);
        chip.write_rap(rap::CSR0);
        Board {
            chip,
            mem,
            plan,
            pool: MsgPool::new(PoolConfig::small(256)),
            peer: b,
            now: Instant::ZERO,
        }
    }

    fn csr0(&mut self) -> u16 {
        self.chip.write_rap(rap::CSR0);
        self.chip.read_rdp()
    }

    fn write_csr0(&mut self, v: u16) {
        self.chip.write_rap(rap::CSR0);
        self.chip.write_rdp(v);
    }

    fn run(&mut self) -> pathstack_devices::lance::RunReport {
        self.chip.run(&mut self.mem, &self.pool, self.now, 64)
    }

    /// INIT, IDON acknowledged, STRT with INEA.
    fn start(&mut self) {
        self.write_csr0(csr0::INIT);
        self.run();
        assert_ne!(self.csr0() & csr0::IDON, 0);
        self.write_csr0(csr0::IDON | csr0::STRT | csr0::INEA);
    }

    fn give_rx(&mut self, i: usize) {
        let a = self.plan.rmd(i);
        Rmd::<Gap2Mut<Cpu>>::at(&mut self.mem, a).set_own(true);
    }

    fn rmd(&self, i: usize) -> RmdDense {
        RmdDense::load::<Cpu>(&self.mem, self.plan.rmd(i))
    }

    fn tmd(&self, i: usize) -> TmdDense {
        TmdDense::load::<Cpu>(&self.mem, self.plan.tmd(i))
    }

    /// Puts `data` in transmit buffer `i` and fills its descriptor (OWN set
    /// as given).
    fn fill_tx(&mut self, i: usize, data: &[u8], stp: bool, enp: bool, own: bool) {
        let p = self.plan;
        self.mem.copy_to_gap16::<Cpu>(p.tx_buf(i), data).unwrap();
        let mut d = Tmd::<Gap2Mut<Cpu>>::at(&mut self.mem, p.tmd(i));
        d.set_byte_count(data.len());
        d.set_word(3, 0);
        d.set_stp(stp);
        d.set_enp(enp);
        d.set_err(false);
        d.set_own(own);
    }

    fn rx_bytes(&self, i: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.mem
            .copy_from_gap16::<Cpu>(self.plan.rx_buf(i), &mut v)
            .unwrap();
        v
    }

    fn send_from_peer(&mut self, frame: &[u8]) {
        let m = self.pool.alloc_copy(frame).unwrap();
        self.peer.transmit(m, self.now).unwrap();
    }

    fn peer_frames(&mut self) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        while let Some(m) = self.peer.receive(&self.pool, self.now).unwrap() {
            v.push(m.as_slice().to_vec());
        }
        v
    }
}

fn frame_to(dst: [u8; 6], len: usize, seed: u8) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&PEER);
    f.extend_from_slice(&[0x88, 0xb5]);
    while f.len() < len {
        f.push(seed.wrapping_add(f.len() as u8));
    }
    f
}

fn fcs(frame: &[u8]) -> [u8; 4] {
    crc32fast::hash(frame).to_le_bytes()
}

#[test]
fn reset_state_is_stopped_and_only_stopped_chip_takes_csr1_to_3() {
    let mut b = Board::new(4, 4, 1536);
    assert_eq!(b.csr0(), csr0::STOP);
    b.chip.write_rap(rap::CSR3);
    b.chip.write_rdp(0xffff);
    assert_eq!(b.chip.read_rdp(), csr3::BSWP | csr3::ACON | csr3::BCON);
    b.chip.write_rap(rap::CSR2);
    b.chip.write_rdp(0xff12);
    assert_eq!(b.chip.read_rdp(), 0x0012, "CSR2 holds 8 address bits");
    b.chip.write_rdp(0);
    b.start();
    // Running: CSR1..3 ignore writes.
    b.chip.write_rap(rap::CSR1);
    b.chip.write_rdp(0x4444);
    assert_eq!(b.chip.read_rdp(), b.plan.init_block as u16);
    // RAP decodes two bits.
    b.chip.write_rap(0xfffc);
    assert_eq!(b.chip.read_rap(), rap::CSR0);
}

#[test]
fn init_reads_the_block_and_raises_idon() {
    let mut b = Board::new(8, 4, 1536);
    b.write_csr0(csr0::INIT);
    assert_eq!(b.csr0() & csr0::IDON, 0, "IDON comes when the chip has run");
    assert_eq!(b.csr0() & csr0::STOP, 0, "INIT clears STOP");
    b.run();
    let v = b.csr0();
    assert_ne!(v & csr0::IDON, 0);
    assert_ne!(v & csr0::INTR, 0, "IDON interrupts");
    assert_eq!(v & csr0::ERR, 0);
    assert!(!b.chip.irq(), "no interrupt line without INEA");
    assert_eq!(v & (csr0::TXON | csr0::RXON), 0, "not started yet");
    assert_eq!(b.chip.padr(), MAC);
    b.write_csr0(csr0::INEA);
    assert!(b.chip.irq());
    b.write_csr0(csr0::IDON | csr0::INEA);
    assert_eq!(b.csr0() & (csr0::IDON | csr0::INTR), 0);
    assert!(!b.chip.irq());
    b.write_csr0(csr0::STRT | csr0::INEA);
    assert_eq!(
        b.csr0() & (csr0::TXON | csr0::RXON | csr0::STRT),
        csr0::TXON | csr0::RXON | csr0::STRT
    );
    assert_eq!(b.chip.stats().inits, 1);
}

#[test]
fn init_and_strt_together_start_after_initialization() {
    let mut b = Board::new(4, 4, 1536);
    b.write_csr0(csr0::INIT | csr0::STRT | csr0::INEA);
    assert_eq!(b.csr0() & csr0::TXON, 0);
    b.run();
    let v = b.csr0();
    assert_ne!(v & csr0::IDON, 0);
    assert_eq!(v & (csr0::TXON | csr0::RXON), csr0::TXON | csr0::RXON);
}

#[test]
fn init_block_outside_memory_is_a_memory_error() {
    let mut b = Board::new(4, 4, 1536);
    b.chip.write_rap(rap::CSR2);
    b.chip.write_rdp(0x00ff);
    b.write_csr0(csr0::INIT | csr0::INEA);
    b.run();
    let v = b.csr0();
    assert_eq!(v & csr0::IDON, 0);
    assert_ne!(v & csr0::MERR, 0);
    assert_ne!(v & csr0::ERR, 0);
    assert_ne!(v & csr0::INTR, 0);
    assert!(b.chip.irq());
    assert_eq!(b.chip.stats().memory_errors, 1);
}

#[test]
fn transmit_hands_the_frame_to_the_wire_and_returns_the_descriptor() {
    let mut b = Board::new(4, 4, 1536);
    b.start();
    let f = frame_to(PEER, 60, 1);
    b.fill_tx(0, &f, true, true, true);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    assert_ne!(
        b.csr0() & csr0::TDMD,
        0,
        "TDMD reads set until the chip acts"
    );
    let r = b.run();
    assert_eq!(r.transmitted, 1);
    assert_eq!(b.csr0() & csr0::TDMD, 0);
    assert_eq!(b.peer_frames(), vec![f]);
    let t = b.tmd(0);
    assert!(!t.own() && !t.err() && t.stp() && t.enp());
    let v = b.csr0();
    assert_ne!(v & csr0::TINT, 0);
    assert!(b.chip.irq());
    // Write 1 to clear TINT; writing 0 to others leaves them.
    b.write_csr0(csr0::TINT | csr0::INEA);
    assert_eq!(b.csr0() & (csr0::TINT | csr0::INTR), 0);
    assert_eq!(b.chip.stats().tx_frames, 1);
}

#[test]
fn transmitter_waits_for_own_and_a_host_owned_descriptor_stops_it() {
    let mut b = Board::new(4, 4, 1536);
    b.start();
    // Filled but not handed over: the chip leaves it alone.
    b.fill_tx(0, &frame_to(PEER, 60, 2), true, true, false);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    assert_eq!(b.run().transmitted, 0);
    assert!(b.peer_frames().is_empty());
    // OWN set last: now it goes.
    let a = b.plan.tmd(0);
    Tmd::<Gap2Mut<Cpu>>::at(&mut b.mem, a).set_own(true);
    assert_eq!(b.run().transmitted, 1);
    assert_eq!(b.peer_frames().len(), 1);
}

#[test]
fn transmit_ring_wraps_around() {
    let mut b = Board::new(4, 4, 1536);
    b.start();
    let mut sent = Vec::new();
    for round in 0..3u8 {
        for i in 0..4 {
            let f = frame_to(PEER, 60 + i, round * 4 + i as u8);
            b.fill_tx(i, &f, true, true, true);
            sent.push(f);
        }
        b.write_csr0(csr0::TDMD | csr0::INEA);
        assert_eq!(b.run().transmitted, 4);
    }
    assert_eq!(b.peer_frames(), sent);
}

#[test]
fn frame_spanning_three_transmit_buffers_goes_out_whole() {
    let mut b = Board::new(4, 4, 64);
    b.start();
    let f = frame_to(PEER, 150, 3);
    // Chain STP..ENP over buffers 0, 1, 2: OWN on the first set last.
    b.fill_tx(2, &f[128..], false, true, true);
    b.fill_tx(1, &f[64..128], false, false, true);
    b.fill_tx(0, &f[..64], true, false, true);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    assert_eq!(b.run().transmitted, 1);
    assert_eq!(b.peer_frames(), vec![f]);
    for i in 0..3 {
        assert!(!b.tmd(i).own());
    }
}

#[test]
fn chain_into_a_host_owned_descriptor_is_buff_and_uflo_and_stops_the_transmitter() {
    let mut b = Board::new(4, 4, 64);
    b.start();
    let f = frame_to(PEER, 100, 4);
    b.fill_tx(1, &f[64..], false, true, false); // not handed over
    b.fill_tx(0, &f[..64], true, false, true);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    b.run();
    assert!(b.peer_frames().is_empty());
    let t = b.tmd(0);
    assert!(!t.own() && t.err() && t.buff() && t.uflo());
    let v = b.csr0();
    assert_eq!(v & csr0::TXON, 0, "the transmitter turns off");
    assert_ne!(v & csr0::RXON, 0);
    assert_ne!(v & csr0::TINT, 0);
}

#[test]
fn frame_longer_than_1518_bytes_babbles() {
    let mut b = Board::new(4, 4, 1024);
    b.start();
    let f = frame_to(PEER, 1600, 5);
    b.fill_tx(1, &f[1024..], false, true, true);
    b.fill_tx(0, &f[..1024], true, false, true);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    b.run();
    assert!(b.peer_frames().is_empty());
    let v = b.csr0();
    assert_ne!(v & csr0::BABL, 0);
    assert_ne!(v & csr0::ERR, 0);
    assert_ne!(v & csr0::INTR, 0);
    assert_eq!(b.chip.stats().babble, 1);
    assert!(!b.tmd(0).own() && !b.tmd(1).own());
    // W1C on BABL alone clears ERR and leaves TINT.
    b.write_csr0(csr0::BABL | csr0::INEA);
    let v = b.csr0();
    assert_eq!(v & (csr0::BABL | csr0::ERR), 0);
    assert_ne!(v & (csr0::TINT | csr0::INTR), 0);
}

#[test]
fn missing_heartbeat_sets_cerr_which_is_an_error_but_no_interrupt() {
    let mut b = Board::with(4, 4, 1536, ChipConfig { heartbeat: false }, 0);
    b.start();
    b.write_csr0(csr0::INEA); // nothing pending
    b.fill_tx(0, &frame_to(PEER, 60, 6), true, true, true);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    b.run();
    assert_eq!(b.peer_frames().len(), 1, "the frame is sent anyway");
    b.write_csr0(csr0::TINT | csr0::INEA);
    let v = b.csr0();
    assert_ne!(v & csr0::CERR, 0);
    assert_ne!(v & csr0::ERR, 0);
    assert_eq!(v & csr0::INTR, 0, "CERR does not interrupt");
    assert!(!b.chip.irq());
}

#[test]
fn wire_refusing_a_frame_is_reported_in_tmd3() {
    let (a, _b) = memory_pair(MemoryConfig {
        capacity: 1,
        ..MemoryConfig::default()
    });
    let mut board = Board::new(4, 4, 1536);
    board.chip = Am7990::new(Box::new(a), ChipConfig::default());
    board.chip.write_rap(rap::CSR1);
    board.chip.write_rdp(board.plan.init_block as u16);
    board.chip.write_rap(rap::CSR0);
    board.start();
    for i in 0..2 {
        board.fill_tx(i, &frame_to(PEER, 60, 7), true, true, true);
    }
    board.write_csr0(csr0::TDMD | csr0::INEA);
    board.run();
    assert!(!board.tmd(0).err());
    let t = board.tmd(1);
    assert!(t.err() && t.rtry(), "a full wire is a retry error");
    assert_eq!(board.chip.stats().wire_tx_errors, 1);
}

#[test]
fn receive_stores_frame_with_fcs_and_mcnt() {
    let mut b = Board::new(4, 4, 1536);
    b.start();
    b.give_rx(0);
    b.give_rx(1);
    let f = frame_to(MAC, 60, 8);
    b.send_from_peer(&f);
    assert_eq!(b.run().received, 1);
    let r = b.rmd(0);
    assert!(!r.own() && !r.err() && r.stp() && r.enp());
    assert_eq!(usize::from(r.mcnt()), 64, "MCNT counts the FCS");
    let mut want = f.clone();
    want.extend_from_slice(&fcs(&f));
    assert_eq!(b.rx_bytes(0, 64), want);
    // A frame followed by its FCS leaves the CRC-32 residue (IEEE 802.3).
    assert_eq!(crc32fast::hash(&want), 0x2144_df1c);
    let v = b.csr0();
    assert_ne!(v & csr0::RINT, 0);
    assert!(b.chip.irq());
    assert!(b.rmd(1).own(), "the next descriptor is untouched");
}

#[test]
fn frame_spanning_receive_buffers_sets_stp_first_and_enp_last() {
    let mut b = Board::new(4, 4, 64);
    b.start();
    for i in 0..4 {
        b.give_rx(i);
    }
    let f = frame_to(MAC, 130, 9); // 134 bytes with FCS: 64 + 64 + 6
    b.send_from_peer(&f);
    b.run();
    let (r0, r1, r2) = (b.rmd(0), b.rmd(1), b.rmd(2));
    assert!(r0.stp() && !r0.enp() && !r0.own());
    assert!(!r1.stp() && !r1.enp() && !r1.own());
    assert!(!r2.stp() && r2.enp() && !r2.own());
    assert_eq!(r2.mcnt(), 134);
    let mut got = b.rx_bytes(0, 64);
    got.extend(b.rx_bytes(1, 64));
    got.extend(b.rx_bytes(2, 6));
    let mut want = f.clone();
    want.extend_from_slice(&fcs(&f));
    assert_eq!(got, want);
    assert!(b.rmd(3).own());
}

#[test]
fn fcs_split_across_buffers_lands_whole() {
    let mut b = Board::new(4, 4, 64);
    b.start();
    for i in 0..4 {
        b.give_rx(i);
    }
    let f = frame_to(MAC, 62, 10); // 66 bytes with FCS: 64 + 2
    b.send_from_peer(&f);
    b.run();
    assert_eq!(b.rmd(1).mcnt(), 66);
    let mut got = b.rx_bytes(0, 64);
    got.extend(b.rx_bytes(1, 2));
    assert_eq!(&got[..62], &f[..]);
    assert_eq!(&got[62..], &fcs(&f));
}

#[test]
fn no_receive_descriptor_is_miss_and_the_frame_is_lost() {
    let mut b = Board::new(2, 2, 1536);
    b.start();
    // The host gave the chip nothing.
    b.send_from_peer(&frame_to(MAC, 60, 11));
    b.run();
    let v = b.csr0();
    assert_ne!(v & csr0::MISS, 0);
    assert_ne!(v & csr0::ERR, 0);
    assert_ne!(v & csr0::INTR, 0);
    assert_eq!(v & csr0::RINT, 0);
    assert_eq!(b.chip.stats().missed, 1);
    // The next frame, with a descriptor given, lands in descriptor 0.
    b.write_csr0(csr0::MISS | csr0::INEA);
    assert_eq!(b.csr0() & (csr0::ERR | csr0::INTR), 0);
    b.give_rx(0);
    let f = frame_to(MAC, 70, 12);
    b.send_from_peer(&f);
    b.run();
    assert_eq!(b.rmd(0).mcnt(), 74);
    assert_eq!(b.rx_bytes(0, 70), f);
}

#[test]
fn chain_into_a_host_owned_receive_descriptor_is_buff() {
    let mut b = Board::new(4, 4, 64);
    b.start();
    b.give_rx(0); // only one buffer for a 200-byte frame
    b.send_from_peer(&frame_to(MAC, 200, 13));
    b.run();
    let r = b.rmd(0);
    assert!(!r.own() && r.err() && r.buff() && r.stp() && !r.enp());
    assert_ne!(b.csr0() & csr0::RINT, 0);
    assert_eq!(b.chip.stats().rx_buffer_errors, 1);
}

#[test]
fn receive_ring_wraps_around() {
    let mut b = Board::new(2, 2, 1536);
    b.start();
    for i in 0..2 {
        b.give_rx(i);
    }
    for n in 0..6u8 {
        let f = frame_to(MAC, 60 + usize::from(n), n);
        b.send_from_peer(&f);
        b.run();
        let i = usize::from(n) % 2;
        let r = b.rmd(i);
        assert!(!r.own() && r.stp() && r.enp(), "frame {n}");
        assert_eq!(b.rx_bytes(i, f.len()), f);
        b.give_rx(i);
    }
    assert_eq!(b.chip.stats().rx_frames, 6);
    assert_eq!(b.chip.stats().missed, 0);
}

#[test]
fn address_filter_takes_own_broadcast_and_hashed_multicast_only() {
    let mut b = Board::new(8, 2, 1536);
    // LADRF with the bit of 01:00:5e:00:00:01 set, nothing else.
    let group = [0x01, 0x00, 0x5e, 0, 0, 1];
    let bit = pathstack_devices::lance::descriptor::ladrf_bit(&group);
    let mut ib = InitBlockDense::load::<Cpu>(&b.mem, b.plan.init_block);
    ib.set_ladrf(1u64 << bit);
    ib.store::<Cpu>(&mut b.mem, b.plan.init_block);
    b.start();
    for i in 0..8 {
        b.give_rx(i);
    }
    let other_group = (0u8..=255)
        .map(|x| [0x01, 0x00, 0x5e, 0, 1, x])
        .find(|g| pathstack_devices::lance::descriptor::ladrf_bit(g) != bit)
        .unwrap();
    for dst in [MAC, PEER, [0xff; 6], group, other_group] {
        b.send_from_peer(&frame_to(dst, 60, 14));
    }
    b.run();
    let s = b.chip.stats();
    assert_eq!((s.rx_frames, s.filtered), (3, 2));
}

#[test]
fn promiscuous_mode_takes_everything() {
    let mut b = Board::with(4, 2, 1536, ChipConfig::default(), mode::PROM);
    b.start();
    for i in 0..4 {
        b.give_rx(i);
    }
    b.send_from_peer(&frame_to(PEER, 60, 15));
    b.send_from_peer(&[1, 2, 3]); // shorter than an address
    b.run();
    assert_eq!(b.chip.stats().rx_frames, 2);
    assert_eq!(b.rmd(1).mcnt(), 7);
}

#[test]
fn disabled_receiver_and_transmitter_stay_off() {
    let mut b = Board::with(2, 2, 1536, ChipConfig::default(), mode::DRX | mode::DTX);
    b.start();
    assert_eq!(b.csr0() & (csr0::RXON | csr0::TXON), 0);
}

#[test]
fn byte_swap_mode_swaps_buffer_bytes_in_each_word() {
    let mut b = Board::new(2, 2, 1536);
    b.chip.write_rap(rap::CSR3);
    b.chip.write_rdp(csr3::BSWP);
    b.chip.write_rap(rap::CSR0);
    b.start();
    b.give_rx(0);
    let f = frame_to(MAC, 60, 16);
    b.send_from_peer(&f);
    b.run();
    let got = b.rx_bytes(0, 60);
    let swapped: Vec<u8> = (0..60).map(|i| f[i ^ 1]).collect();
    assert_eq!(got, swapped);
    // Transmit reads the same way: the swapped buffer goes out as `f`.
    b.fill_tx(0, &swapped, true, true, true);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    b.run();
    assert_eq!(b.peer_frames(), vec![f]);
}

#[test]
fn stop_resets_and_restart_needs_init() {
    let mut b = Board::new(2, 2, 1536);
    b.start();
    b.give_rx(0);
    b.send_from_peer(&frame_to(MAC, 60, 17));
    b.run();
    b.chip.write_rap(rap::CSR3);
    assert_eq!(b.chip.read_rdp(), 0);
    // STOP wins over everything written with it and clears CSR0.
    b.write_csr0(csr0::STOP | csr0::STRT | csr0::INIT | csr0::INEA);
    assert_eq!(b.csr0(), csr0::STOP);
    assert!(!b.chip.irq());
    // Stopped: frames are not taken from the wire.
    b.send_from_peer(&frame_to(MAC, 60, 18));
    assert_eq!(b.run().received, 0);
    // STRT alone after STOP leaves the chip idle.
    b.write_csr0(csr0::STRT | csr0::INEA);
    assert_eq!(b.csr0() & (csr0::TXON | csr0::RXON), 0);
    b.write_csr0(csr0::STOP);
    // INIT + STRT: ring pointers start again at descriptor 0.
    for i in 0..2 {
        b.give_rx(i);
    }
    b.start();
    b.run();
    assert!(b.rmd(0).enp() && !b.rmd(0).own());
    assert_eq!(b.chip.stats().inits, 2);
    assert_eq!(b.chip.stats().rx_frames, 2);
}

#[test]
fn summaries_follow_their_bits() {
    let mut b = Board::with(1, 1, 1536, ChipConfig { heartbeat: false }, 0);
    b.start();
    // MISS (no descriptor) and CERR (no heartbeat) and TINT.
    b.send_from_peer(&frame_to(MAC, 60, 19));
    b.fill_tx(0, &frame_to(PEER, 60, 20), true, true, true);
    b.write_csr0(csr0::TDMD | csr0::INEA);
    b.run();
    let v = b.csr0();
    for bit in [csr0::MISS, csr0::CERR, csr0::TINT, csr0::ERR, csr0::INTR] {
        assert_ne!(v & bit, 0, "{bit:#x}");
    }
    // Clear MISS: ERR stays for CERR, INTR stays for TINT.
    b.write_csr0(csr0::MISS | csr0::INEA);
    let v = b.csr0();
    assert_ne!(v & csr0::ERR, 0);
    assert_ne!(v & csr0::INTR, 0);
    // Clear TINT: INTR goes (CERR does not interrupt), ERR stays.
    b.write_csr0(csr0::TINT | csr0::INEA);
    let v = b.csr0();
    assert_eq!(v & csr0::INTR, 0);
    assert_ne!(v & csr0::ERR, 0);
    // Clear CERR: both gone. Writing the summaries themselves does nothing.
    b.write_csr0(csr0::CERR | csr0::ERR | csr0::INTR | csr0::INEA);
    let v = b.csr0();
    assert_eq!(v & (csr0::ERR | csr0::INTR | csr0::W1C), 0);
    assert_ne!(v & csr0::INEA, 0);
    // Writing 0 to INEA takes the line away even with INTR pending.
    b.send_from_peer(&frame_to(MAC, 60, 21));
    b.run();
    assert!(b.chip.irq());
    b.write_csr0(0);
    assert!(!b.chip.irq());
    assert_ne!(b.csr0() & csr0::INTR, 0);
}
