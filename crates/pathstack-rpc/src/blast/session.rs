//! One BLAST session: a peer and an upper protocol number, both ways.

use crate::blast::config::BlastConfig;
use crate::blast::instance::BlastInstance;
use crate::blast::receiver::Receiver;
use crate::blast::sender::Sender;
use crate::blast::{BlastOutput, BlastPushError, BlastStats, Pushed, Received};
use crate::wire::blast::{BlastDropReason, BlastHeader, BlastOp};
use pathstack_core::time::{Duration, Instant};

/// The BLAST engine of one session (x-kernel: a BLAST session keyed by
/// lower session and `prot_id`). See the [module docs](crate::blast).
#[derive(Debug)]
pub struct BlastSession {
    prot_id: u32,
    config: BlastConfig,
    sender: Sender,
    receiver: Receiver,
    stats: BlastStats,
}

impl BlastSession {
    /// A session for upper protocol `prot_id` (BID = 21).
    pub fn new(prot_id: u32, config: BlastConfig) -> Self {
        BlastSession {
            prot_id,
            sender: Sender::default(),
            receiver: Receiver::new(&config),
            config,
            stats: BlastStats::default(),
        }
    }

    /// The upper protocol number.
    pub fn prot_id(&self) -> u32 {
        self.prot_id
    }

    /// The configuration.
    pub fn config(&self) -> &BlastConfig {
        &self.config
    }

    /// Sends `message` (spec §3.4): [`Pushed::Short`] with the header to
    /// push in place if shorter than F (nothing else happens), else
    /// fragments to `out` and [`Pushed::Fragmented`] with the receipt.
    ///
    /// # Errors
    ///
    /// [`BlastPushError::TooLarge`] beyond
    /// [`BlastConfig::max_message`] (`MAX_FRAGS · F`);
    /// [`BlastPushError::WouldBlock`] when the instance already holds its
    /// maximum of messages. Either way nothing was sent or kept.
    pub fn push(
        &mut self,
        inst: &mut BlastInstance,
        now: Instant,
        message: &[u8],
        out: &mut impl BlastOutput,
    ) -> Result<Pushed, BlastPushError> {
        self.sender.push(
            inst,
            &self.config,
            self.prot_id,
            now,
            message,
            out,
            &mut self.stats,
        )
    }

    /// Handles a received packet for this session, as parsed by
    /// [`BlastHeader::parse`]. `payload` is what follows the header; only
    /// its first `len` bytes count (parse already trimmed it).
    ///
    /// # Errors
    ///
    /// The packet's drop reason, for the stage to count: a NACK for a
    /// message no longer held, a RETRANSMIT for a finished one, a full
    /// reassembly table, a fragment too long or disagreeing with its
    /// message. Nothing was sent or kept for it.
    pub fn receive(
        &mut self,
        inst: &mut BlastInstance,
        now: Instant,
        header: &BlastHeader,
        payload: &[u8],
        out: &mut impl BlastOutput,
    ) -> Result<Received, BlastDropReason> {
        // Parse trimmed the payload to `len`; trim here too, so that an
        // untrimmed payload (link padding) can never enter a message.
        let payload = match header.op {
            BlastOp::Nack => &payload[..0],
            BlastOp::Send | BlastOp::Retransmit => {
                let len = header.payload_len().ok_or(BlastDropReason::BadLength)?;
                payload.get(..len).ok_or(BlastDropReason::BadLength)?
            }
        };
        if header.is_short() {
            // Parse already refused a short NACK or RETRANSMIT; a short
            // message goes up at once, with no state (§3.5).
            return match header.op {
                BlastOp::Send => Ok(Received::Short { len: payload.len() }),
                _ => Err(BlastDropReason::BadOp),
            };
        }
        match header.op {
            BlastOp::Nack => self.sender.on_nack(
                &self.config,
                self.prot_id,
                now,
                header,
                out,
                &mut self.stats,
            ),
            BlastOp::Send | BlastOp::Retransmit => self.receiver.on_fragment(
                inst,
                &self.config,
                self.prot_id,
                now,
                header,
                payload,
                out,
                &mut self.stats,
            ),
        }
        .map(|()| Received::Absorbed)
    }

    /// Runs the timers due by `now`: frees messages whose HOLD ended, and
    /// for each partial message whose receive timer fired sends a NACK
    /// (doubling the interval, capped at 1 s) or, after
    /// [`NACK_LIMIT`](crate::blast::NACK_LIMIT) NACKs, discards it.
    pub fn on_time(&mut self, inst: &mut BlastInstance, now: Instant, out: &mut impl BlastOutput) {
        self.sender.on_time(inst, now);
        self.receiver
            .on_time(inst, &self.config, now, out, &mut self.stats);
    }

    /// The earliest time [`BlastSession::on_time`] has work, if any.
    pub fn poll_at(&self) -> Option<Instant> {
        match (self.sender.poll_at(), self.receiver.poll_at()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// FREERESOURCES: CHAN has its acknowledgement, so the message with
    /// `ticket` is freed now rather than at HOLD expiry. Whether it was
    /// still held.
    pub fn free_resources(&mut self, inst: &mut BlastInstance, ticket: u32) -> bool {
        self.sender.free(inst, ticket)
    }

    /// CHAN_RETRANSMIT: whether CHAN should resend the whole message with
    /// `ticket` itself. `false` while BLAST is repairing it: NACKs arrived
    /// since the last query (the count is reset); `true` otherwise, and
    /// for a message no longer held (spec §3.4 item 6).
    pub fn chan_retransmit(&mut self, ticket: u32) -> bool {
        self.sender.chan_retransmit(ticket)
    }

    /// Frees everything the session holds and returns its outstanding
    /// slots to `inst`. Call it before dropping the session.
    pub fn close(&mut self, inst: &mut BlastInstance) {
        self.sender.close(inst);
        self.receiver.close(inst);
    }

    /// Fragmented messages this session holds for retransmission.
    pub fn held_messages(&self) -> usize {
        self.sender.held()
    }

    /// Partial messages being reassembled (at most
    /// [`BlastConfig::max_reassemblies`]).
    pub fn reassemblies(&self) -> usize {
        self.receiver.reassemblies()
    }

    /// Bytes the partial messages reserve (at most
    /// [`BlastConfig::max_reassembly_bytes`]).
    pub fn reassembly_bytes(&self) -> usize {
        self.receiver.reserved()
    }

    /// The session's current per-fragment receive allowance (10 ms,
    /// doubled by each back-off).
    pub fn per_packet(&self) -> Duration {
        self.receiver.per_packet()
    }

    /// The session's counters.
    pub fn stats(&self) -> &BlastStats {
        &self.stats
    }
}
