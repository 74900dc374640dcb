//! Proportional Rate Reduction (RFC 6937): how much a sender in loss
//! recovery may send per ACK, so that the window comes down to ssthresh
//! smoothly over one round trip instead of all at once (which stalls the
//! ACK clock) or not until recovery ends (RFC 6582's step 6, which, when
//! the ACK ending recovery acknowledges the whole flight, leaves cwnd at
//! one or two segments: issue 28's first cause).
//!
//! While pipe > ssthresh, sending follows the data delivered in
//! proportion ssthresh / RecoverFS; below ssthresh, pipe grows back
//! towards ssthresh by the data delivered (the conservative reduction
//! bound, PRR-CRB), plus one segment per ACK (the slow-start reduction
//! bound, PRR-SSRB) unless the ACK is known unsafe. RFC 6937bis
//! (draft-ietf-tcpm-prr-rfc6937bis, "SafeACK") and Linux
//! (`tcp_cwnd_reduction`: `sndcnt++` only with FLAG_SND_UNA_ADVANCED and
//! no newly lost segment) give the extra segment only to an ACK that
//! advances SND.UNA and finds no new loss. pathstack withholds it from
//! the ACK that enters recovery (it found the loss), so the fast
//! retransmission goes alone as Linux's does (packetdrill
//! `prr-ss-ack-below-snd_una-cubic`), and keeps RFC 6937's SSRB on the
//! ACKs within recovery (`Recovery::on_ack` says why). Recovery then
//! ends with cwnd = ssthresh (RFC 6937 §3).

/// The PRR state of one recovery phase (RFC 6937 §3's variables, in
/// octets).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// RecoverFS: FlightSize when recovery began.
    recover_fs: u32,
    /// prr_delivered: octets delivered to the receiver since then.
    delivered: u32,
    /// prr_out: octets sent since then.
    out: u32,
    /// prr_out when the last ACK arrived: the per-ACK bound of PRR-SSRB
    /// is spent by what is sent after that ACK.
    out_at_ack: u32,
    /// DeliveredData of the last ACK.
    last_delivered: u32,
    /// The last ACK may have PRR-SSRB's extra segment (not known unsafe,
    /// RFC 6937bis SafeACK).
    safe: bool,
}

impl Prr {
    /// Recovery begins with `flight_size` octets outstanding (RFC 6937
    /// §3 "Initialization on entering recovery").
    pub fn start(flight_size: u32) -> Self {
        Prr {
            recover_fs: flight_size,
            ..Prr::default()
        }
    }

    /// An ACK in recovery delivered `delivered` octets: the change in
    /// SND.UNA plus the change in SACKed octets (DeliveredData);
    /// `safe`: PRR-SSRB's extra segment applies to it.
    pub fn on_ack(&mut self, delivered: u32, safe: bool) {
        self.delivered = self.delivered.saturating_add(delivered);
        self.last_delivered = delivered;
        self.out_at_ack = self.out;
        self.safe = safe;
    }

    /// `len` octets were sent (new data or a retransmission).
    pub fn on_sent(&mut self, len: u32) {
        self.out = self.out.saturating_add(len);
    }

    /// prr_delivered.
    pub fn delivered(&self) -> u32 {
        self.delivered
    }

    /// prr_out.
    pub fn out(&self) -> u32 {
        self.out
    }

    /// sndcnt: the octets that may be sent now, given the current pipe
    /// (RFC 6675 §4) and ssthresh (RFC 6937 §3 "On every ACK during
    /// recovery", with PRR-SSRB). What was sent since the last ACK is
    /// already counted, so asking again after each segment gives what is
    /// left of the ACK's allowance.
    pub fn sndcnt(&self, pipe: u32, ssthresh: u32, smss: u32) -> u32 {
        if pipe > ssthresh {
            // Proportional: CEIL(prr_delivered · ssthresh / RecoverFS) − prr_out,
            // the share rounded up to whole segments as Linux's count in
            // packets does (`tcp_cwnd_reduction`): in octets, half a
            // segment's allowance would wait for the next ACK and shift
            // every send by one ACK.
            let fs = u64::from(self.recover_fs.max(1));
            let smss = u64::from(smss.max(1));
            let share = (u64::from(self.delivered) * u64::from(ssthresh)).div_ceil(fs);
            let allowed = share.div_ceil(smss) * smss;
            u32::try_from(allowed)
                .unwrap_or(u32::MAX)
                .saturating_sub(self.out)
        } else {
            // PRR-CRB: MAX(prr_delivered − prr_out, DeliveredData), one
            // MSS more on a safe ACK (PRR-SSRB), within ssthresh − pipe.
            let since_ack = self.out - self.out_at_ack;
            let bonus = if self.safe { smss } else { 0 };
            let limit = self
                .delivered
                .saturating_sub(self.out_at_ack)
                .max(self.last_delivered)
                .saturating_add(bonus)
                .saturating_sub(since_ack);
            (ssthresh - pipe).min(limit)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;

    /// Segments one ACK lets go: asks `sndcnt` after each segment sent,
    /// with pipe growing by what is sent, as the sender's loop does.
    fn send_per_ack(p: &mut Prr, pipe: &mut u32, ssthresh: u32) -> u32 {
        let mut n = 0;
        while p.sndcnt(*pipe, ssthresh, MSS) >= MSS {
            p.on_sent(MSS);
            *pipe += MSS;
            n += 1;
        }
        n
    }

    /// RFC 6937 §3's first example: cwnd 20 segments, one loss, ssthresh
    /// 10 (halved, as Reno). After the fast retransmission PRR sends one
    /// segment for every two delivered, "never sends more than one segment
    /// per ACK", and pipe ends at ssthresh, where RFC 6582 step 6 with its
    /// inflation would have sent nothing for half the ACKs and then bursts.
    #[test]
    fn one_loss_sends_one_segment_per_two_acks() {
        let ssthresh = 10 * MSS;
        let mut p = Prr::start(20 * MSS);
        // The entering ACK (the third duplicate) delivers one segment;
        // 19 remain in flight after the hole's segment is marked lost:
        // pipe = 19 − 1 (lost) … the example's pipe column starts at 19.
        let mut pipe = 19 * MSS;
        p.on_ack(MSS, false);
        // The fast retransmission is sent regardless of PRR (RFC 6675
        // §5 step 4.3) and counted in prr_out.
        p.on_sent(MSS);
        pipe += MSS;
        let mut sent = Vec::new();
        for _ in 0..19 {
            // Each duplicate ACK: one segment left the network.
            pipe -= MSS;
            p.on_ack(MSS, false);
            sent.push(send_per_ack(&mut p, &mut pipe, ssthresh));
        }
        // ceil(k · 10 / 20) − prr_out: 1 per 2 ACKs while pipe > ssthresh;
        // the 18th ACK finds pipe at ssthresh (PRR-SSRB: nothing), the
        // 19th one below it (one segment, back to ssthresh).
        assert_eq!(
            sent,
            [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1]
        );
        assert_eq!(p.delivered(), 20 * MSS);
        assert_eq!(p.out(), 10 * MSS, "the retransmission and nine new");
        assert_eq!(pipe, 10 * MSS, "pipe has come down to ssthresh");
    }

    /// RFC 6937 §3's second example (heavy loss), with partial ACKs
    /// (safe: SND.UNA advances, no new loss): once pipe is below
    /// ssthresh, PRR-SSRB grows it by at most DeliveredData + one segment
    /// per ACK (slow start), not to ssthresh at once.
    #[test]
    fn below_ssthresh_slow_starts_back() {
        let ssthresh = 10 * MSS;
        let mut p = Prr::start(20 * MSS);
        // Many losses: pipe has fallen to 4 segments.
        let mut pipe = 4 * MSS;
        p.on_ack(MSS, true);
        assert_eq!(
            send_per_ack(&mut p, &mut pipe, ssthresh),
            2,
            "delivered + 1"
        );
        pipe -= MSS;
        p.on_ack(MSS, true);
        assert_eq!(send_per_ack(&mut p, &mut pipe, ssthresh), 2);
        assert_eq!(pipe, 7 * MSS);
        // An ACK delivering three segments: 3 + 1, within ssthresh − pipe.
        pipe -= 3 * MSS;
        p.on_ack(3 * MSS, true);
        assert_eq!(send_per_ack(&mut p, &mut pipe, ssthresh), 4);
        assert_eq!(pipe, 8 * MSS);
        // Never beyond ssthresh.
        pipe -= 4 * MSS;
        p.on_ack(4 * MSS, true);
        assert_eq!(send_per_ack(&mut p, &mut pipe, ssthresh), 5);
        assert_eq!(pipe, 9 * MSS);
        p.on_ack(0, true);
        assert_eq!(send_per_ack(&mut p, &mut pipe, ssthresh), 1);
        assert_eq!(pipe, ssthresh);
        assert_eq!(send_per_ack(&mut p, &mut pipe, ssthresh), 0);
    }

    /// RFC 6937bis SafeACK: below ssthresh, an unsafe ACK (one that
    /// found a loss) lets out only what it delivered (PRR-CRB); a safe
    /// one, one segment more (PRR-SSRB).
    #[test]
    fn ssrb_only_on_a_safe_ack() {
        let ssthresh = 10 * MSS;
        let mut p = Prr::start(20 * MSS);
        let mut pipe = 4 * MSS;
        p.on_ack(MSS, false);
        assert_eq!(send_per_ack(&mut p, &mut pipe, ssthresh), 1, "unsafe: CRB");
        pipe -= 2 * MSS;
        p.on_ack(2 * MSS, true);
        assert_eq!(send_per_ack(&mut p, &mut pipe, ssthresh), 3, "safe: SSRB");
    }

    proptest::proptest! {
        /// Whatever the ACKs deliver, PRR never lets pipe pass ssthresh
        /// from below, and sends at most one segment beyond what was
        /// delivered plus what the proportional phase held back.
        #[test]
        fn never_beyond_ssthresh_from_below(
            acks in proptest::collection::vec((0u32..4, proptest::bool::ANY), 1..60),
            ss in 2u32..40,
            fs in 1u32..80,
        ) {
            let ssthresh = ss * MSS;
            let mut p = Prr::start(fs * MSS);
            let mut pipe = fs * MSS;
            for (d, safe) in acks {
                let d = (d * MSS).min(pipe);
                pipe -= d;
                p.on_ack(d, safe);
                let before = pipe;
                send_per_ack(&mut p, &mut pipe, ssthresh);
                if before <= ssthresh {
                    proptest::prop_assert!(pipe <= ssthresh);
                    let held = p.delivered().saturating_sub(p.out() - (pipe - before));
                    proptest::prop_assert!(pipe - before <= held.max(d) + MSS);
                }
            }
        }
    }
}
