//! BLAST's sending half of a session: fragmenting, holding the fragments
//! and resending the ones a NACK reports missing (spec §3.4, x-kernel
//! `blast_output.c`, `blast_control.c`).

use crate::blast::config::BlastConfig;
use crate::blast::instance::BlastInstance;
use crate::blast::{BlastOutput, BlastPushError, BlastStats, PushReceipt, Pushed};
use crate::wire::blast::{BlastDropReason, BlastHeader, BlastOp};
use pathstack_core::time::Instant;

/// One fragmented message held for retransmission.
#[derive(Debug)]
struct SendRecord {
    seq: u32,
    num_frag: u16,
    /// The whole message; fragment `i` is `[(i−1)·F, min(i·F, len))`.
    bytes: Vec<u8>,
    /// When the HOLD timer frees the record.
    hold_until: Instant,
    /// NACKs received since the last `chan_retransmit` query.
    nacks: u32,
}

/// The messages one session holds for retransmission. Their number is
/// bounded by the instance's outstanding-message slots.
#[derive(Debug, Default)]
pub(crate) struct Sender {
    records: Vec<SendRecord>,
}

impl Sender {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        inst: &mut BlastInstance,
        cfg: &BlastConfig,
        prot_id: u32,
        now: Instant,
        message: &[u8],
        out: &mut impl BlastOutput,
        stats: &mut BlastStats,
    ) -> Result<Pushed, BlastPushError> {
        let len = message.len();
        let f = cfg.fragment_len;
        if len > cfg.max_message() {
            return Err(BlastPushError::TooLarge {
                len,
                max: cfg.max_message(),
            });
        }
        if len < f {
            // The short path (§3.4 item 1): no seq, no record, no timer, and
            // no receipt, so CHAN sees "not expensive". `len < F` fits u32.
            return Ok(Pushed::Short(BlastHeader::short(prot_id, len as u32)));
        }
        if !inst.has_slot() {
            return Err(BlastPushError::WouldBlock {
                outstanding: inst.outstanding(),
            });
        }
        inst.acquire_slot();
        let seq = inst.take_seq(|s| self.records.iter().any(|r| r.seq == s));
        let num_frag = len.div_ceil(f) as u16; // ≤ MAX_FRAGS: len ≤ MAX_FRAGS·F
        let mut bytes = inst.take_buffer();
        bytes.extend_from_slice(message);
        let record = SendRecord {
            seq,
            num_frag,
            bytes,
            hold_until: now + cfg.hold,
            nacks: 0,
        };
        for i in 1..=num_frag {
            let (header, payload) = record.fragment(prot_id, f, i, BlastOp::Send);
            out.send(&header, payload);
        }
        stats.messages_fragmented += 1;
        stats.fragments_sent += u64::from(num_frag);
        self.records.push(record);
        Ok(Pushed::Fragmented(PushReceipt {
            ticket: seq,
            expensive: true,
        }))
    }

    /// A NACK from the receiver (§3.4 item 4): resend what it lacks.
    pub(crate) fn on_nack(
        &mut self,
        cfg: &BlastConfig,
        prot_id: u32,
        now: Instant,
        nack: &BlastHeader,
        out: &mut impl BlastOutput,
        stats: &mut BlastStats,
    ) -> Result<(), BlastDropReason> {
        // The x-kernel also ignores a NACK while HOLD is not armed (still
        // sending); here the fragments leave within `push`, so HOLD is
        // always armed while the record exists.
        let record = self
            .records
            .iter_mut()
            .find(|r| r.seq == nack.seq)
            .ok_or(BlastDropReason::NackUnknownSeq)?;
        if nack.num_frag != record.num_frag {
            return Err(BlastDropReason::InconsistentFragment);
        }
        record.nacks = record.nacks.saturating_add(1);
        record.hold_until = now + cfg.hold;
        stats.nacks_received += 1;
        for i in 1..=record.num_frag {
            if nack.mask & (1 << (i - 1)) == 0 {
                let (header, payload) =
                    record.fragment(prot_id, cfg.fragment_len, i, BlastOp::Retransmit);
                out.send(&header, payload);
                stats.fragments_retransmitted += 1;
            }
        }
        Ok(())
    }

    /// Frees the records whose HOLD ended by `now` (§3.4 item 5).
    pub(crate) fn on_time(&mut self, inst: &mut BlastInstance, now: Instant) {
        let mut i = 0;
        while i < self.records.len() {
            if self.records[i].hold_until <= now {
                let r = self.records.swap_remove(i);
                inst.release_slot();
                inst.recycle(r.bytes);
            } else {
                i += 1;
            }
        }
    }

    pub(crate) fn poll_at(&self) -> Option<Instant> {
        self.records.iter().map(|r| r.hold_until).min()
    }

    /// FREERESOURCES: frees the message at once. Whether it was held.
    pub(crate) fn free(&mut self, inst: &mut BlastInstance, ticket: u32) -> bool {
        match self.records.iter().position(|r| r.seq == ticket) {
            Some(i) => {
                let r = self.records.swap_remove(i);
                inst.release_slot();
                inst.recycle(r.bytes);
                true
            }
            None => false,
        }
    }

    /// CHAN_RETRANSMIT (§3.4 item 6).
    pub(crate) fn chan_retransmit(&mut self, ticket: u32) -> bool {
        match self.records.iter_mut().find(|r| r.seq == ticket) {
            // Unknown: the x-kernel returns −1, which CHAN takes as "yes".
            None => true,
            Some(r) if r.nacks > 0 => {
                r.nacks = 0;
                false
            }
            Some(_) => true,
        }
    }

    pub(crate) fn held(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn close(&mut self, inst: &mut BlastInstance) {
        for r in self.records.drain(..) {
            inst.release_slot();
            inst.recycle(r.bytes);
        }
    }
}

impl SendRecord {
    /// Fragment `i` (1-based) with its header.
    fn fragment(&self, prot_id: u32, f: usize, i: u16, op: BlastOp) -> (BlastHeader, &[u8]) {
        let start = (usize::from(i) - 1) * f;
        let end = (start + f).min(self.bytes.len());
        let payload = &self.bytes[start..end];
        let header = BlastHeader {
            prot_id,
            seq: self.seq,
            len: payload.len() as u32, // ≤ F
            num_frag: self.num_frag,
            op,
            mask: 1 << (i - 1),
        };
        (header, payload)
    }
}
