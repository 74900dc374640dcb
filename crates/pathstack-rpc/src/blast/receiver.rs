//! BLAST's receiving half of a session: reassembly records keyed by
//! `seq`, the receive timer with its NACKs, and the per-session back-off
//! (spec §3.5, x-kernel `blast_input.c`, `blast_timer.c`).

use crate::blast::config::BlastConfig;
use crate::blast::instance::BlastInstance;
use crate::blast::{BlastOutput, BlastStats};
use crate::wire::blast::{BlastDropReason, BlastHeader, BlastOp, Mask, MAX_FRAGS};
use pathstack_core::time::{Duration, Instant};

/// One message being reassembled.
#[derive(Debug)]
struct RecvRecord {
    seq: u32,
    num_frag: u16,
    /// The header of the first fragment that arrived; NACKs are copies of
    /// it (so their `len` is that fragment's, §3.5).
    first: BlastHeader,
    /// Fragments received.
    mask: Mask,
    /// Fragment `i` lies at `(i−1)·F` in `bytes`, `lens[i−1]` long.
    lens: [usize; MAX_FRAGS],
    /// `num_frag · F` bytes reserved.
    bytes: Vec<u8>,
    /// The current receive timer interval.
    wait: Duration,
    /// When the receive timer fires.
    deadline: Instant,
    nacks_sent: u8,
    can_change_backoff: bool,
}

/// The messages one session is reassembling, bounded in count and bytes.
#[derive(Debug)]
pub(crate) struct Receiver {
    records: Vec<RecvRecord>,
    /// The session's per-fragment allowance: grows by back-off, never
    /// shrinks (§12 item 8: the x-kernel admits it never decays).
    per_packet: Duration,
    /// Bytes the records reserve together.
    reserved: usize,
}

fn mul(d: Duration, n: u64) -> Duration {
    Duration::from_nanos(d.as_nanos().saturating_mul(n))
}

impl Receiver {
    pub(crate) fn new(cfg: &BlastConfig) -> Self {
        Receiver {
            records: Vec::new(),
            per_packet: cfg.per_packet,
            reserved: 0,
        }
    }

    pub(crate) fn per_packet(&self) -> Duration {
        self.per_packet
    }

    pub(crate) fn reassemblies(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn reserved(&self) -> usize {
        self.reserved
    }

    /// A fragment (SEND or RETRANSMIT, seq ≠ 0) with its payload already
    /// trimmed to `len`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_fragment(
        &mut self,
        inst: &mut BlastInstance,
        cfg: &BlastConfig,
        prot_id: u32,
        now: Instant,
        h: &BlastHeader,
        payload: &[u8],
        out: &mut impl BlastOutput,
        stats: &mut BlastStats,
    ) -> Result<(), BlastDropReason> {
        let f = cfg.fragment_len;
        let i = h.fragment().ok_or(BlastDropReason::BadMask)?;
        let n = usize::from(h.num_frag);
        if i > n || n > MAX_FRAGS {
            return Err(BlastDropReason::BadMask);
        }
        if payload.len() > f {
            return Err(BlastDropReason::FragmentTooLong);
        }
        let idx = match self.records.iter().position(|r| r.seq == h.seq) {
            Some(idx) if self.records[idx].num_frag != h.num_frag => {
                return Err(BlastDropReason::InconsistentFragment)
            }
            Some(idx) => idx,
            None => {
                if h.op == BlastOp::Retransmit {
                    // "Already finished" (x-kernel): delivered or discarded.
                    return Err(BlastDropReason::RetransmitUnknownSeq);
                }
                let reserve = n * f;
                if self.records.len() >= cfg.max_reassemblies
                    || self.reserved + reserve > cfg.max_reassembly_bytes
                {
                    return Err(BlastDropReason::ReassemblyFull);
                }
                let mut bytes = inst.take_buffer();
                bytes.resize(reserve, 0);
                // Armed once per message, not restarted by later
                // fragments (§3.5; §12 item 7).
                let wait = mul(self.per_packet, n as u64);
                self.reserved += reserve;
                self.records.push(RecvRecord {
                    seq: h.seq,
                    num_frag: h.num_frag,
                    first: *h,
                    mask: 0,
                    lens: [0; MAX_FRAGS],
                    bytes,
                    wait,
                    deadline: now + wait,
                    nacks_sent: 0,
                    can_change_backoff: true,
                });
                self.records.len() - 1
            }
        };
        let rec = &mut self.records[idx];
        // A duplicate overwrites the stored copy (§3.6).
        let at = (i - 1) * f;
        rec.bytes[at..at + payload.len()].copy_from_slice(payload);
        rec.lens[i - 1] = payload.len();
        rec.mask |= h.mask;
        stats.fragments_received += 1;
        if rec.nacks_sent > 0 && h.op == BlastOp::Send && rec.can_change_backoff {
            // An original fragment after our NACK: the sender is slower
            // than we allowed; allow twice as long, once per message and
            // for good (§3.5, §11.2 B7).
            self.per_packet = mul(self.per_packet, 2).min(cfg.max_per_packet);
            rec.can_change_backoff = false;
        }
        if rec.mask == BlastHeader::full_mask(rec.num_frag) {
            let mut rec = self.records.swap_remove(idx);
            self.reserved -= n * f;
            // Join in place: fragment k moves left to the end of k − 1
            // (never right, each being at most F long).
            let mut end = 0;
            for k in 0..n {
                let len = rec.lens[k];
                rec.bytes.copy_within(k * f..k * f + len, end);
                end += len;
            }
            rec.bytes.truncate(end);
            stats.messages_reassembled += 1;
            out.deliver(prot_id, &rec.bytes);
            inst.recycle(rec.bytes);
            return Ok(());
        }
        if i == n && rec.nacks_sent == 0 && cfg.last_frag_nacks {
            // BLAST_LAST_FRAG_NACKS: the last fragment with holes left
            // means loss, not slowness; NACK now and restart the timer.
            rec.can_change_backoff = false;
            rec.deadline = now + rec.wait;
            Self::nack(rec, out, stats);
        }
        Ok(())
    }

    /// Receive timers that fired by `now`: NACK again (up to the limit)
    /// with a doubled interval, or discard the partial message.
    pub(crate) fn on_time(
        &mut self,
        inst: &mut BlastInstance,
        cfg: &BlastConfig,
        now: Instant,
        out: &mut impl BlastOutput,
        stats: &mut BlastStats,
    ) {
        let mut i = 0;
        while i < self.records.len() {
            let rec = &mut self.records[i];
            if rec.deadline > now {
                i += 1;
                continue;
            }
            if rec.nacks_sent < cfg.nack_limit {
                Self::nack(rec, out, stats);
                rec.wait = mul(rec.wait, 2).min(cfg.max_wait);
                rec.deadline = now + rec.wait;
                i += 1;
            } else {
                let rec = self.records.swap_remove(i);
                self.reserved -= usize::from(rec.num_frag) * cfg.fragment_len;
                inst.recycle(rec.bytes);
                stats.messages_discarded += 1;
            }
        }
    }

    fn nack(rec: &mut RecvRecord, out: &mut impl BlastOutput, stats: &mut BlastStats) {
        let nack = BlastHeader {
            op: BlastOp::Nack,
            mask: rec.mask,
            ..rec.first
        };
        out.send(&nack, &[]);
        rec.nacks_sent += 1;
        stats.nacks_sent += 1;
    }

    pub(crate) fn poll_at(&self) -> Option<Instant> {
        self.records.iter().map(|r| r.deadline).min()
    }

    pub(crate) fn close(&mut self, inst: &mut BlastInstance) {
        for r in self.records.drain(..) {
            inst.recycle(r.bytes);
        }
        self.reserved = 0;
    }
}
