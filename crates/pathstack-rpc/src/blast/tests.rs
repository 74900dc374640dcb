//! The §11.2 scenarios B1–B10 at engine level: two hosts, each a
//! [`BlastInstance`] and a [`BlastSession`], wired through an in-test link
//! that drops, duplicates and reorders, on a simulated clock. Frames are
//! compared byte for byte with the §11.1 vectors (F = 1460, BLAST over IP),
//! moved into the layout of the build's mask width. The tests run in each
//! build (default, `blast-mask32`, `blast-mask64`); where a scenario is
//! about the mask's width (B4) it uses [`MAX_FRAGS`].

use super::*;
use crate::wire::blast::test_vectors::{hex, vector};
use crate::wire::blast::{field, BlastHeader, BlastOp, Mask, HEADER_LEN, MAX_FRAGS};
use pathstack_core::time::{Duration, Instant};
use proptest::prelude::*;

const PROT: u32 = 21;
/// F over IP on Ethernet with the 20-byte header; kept in every build so
/// that the §11.1 vectors hold (the 64-bit mask's 24-byte header would
/// make it 1456 over IP).
const F: usize = 1460;

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// A message whose bytes differ from fragment to fragment and within one.
fn message(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// F = 1460 in every build: what [`BlastConfig::over_ip`] gives on
/// Ethernet with the 20-byte header.
fn ip_config() -> BlastConfig {
    BlastConfig::for_lower_mtu(F + HEADER_LEN)
}

#[test]
fn f_over_ip_is_1460_with_the_20_byte_header() {
    assert_eq!(BlastConfig::over_ip(1500).fragment_len, 1480 - HEADER_LEN);
    if HEADER_LEN == 20 {
        assert_eq!(BlastConfig::over_ip(1500), ip_config());
    }
}

/// What a session sent and delivered.
#[derive(Default)]
struct Out {
    frames: Vec<Vec<u8>>,
    delivered: Vec<(u32, Vec<u8>)>,
}

impl BlastOutput for Out {
    fn send(&mut self, header: &BlastHeader, payload: &[u8]) {
        let mut frame = vec![0; HEADER_LEN];
        header.emit(&mut frame);
        frame.extend_from_slice(payload);
        self.frames.push(frame);
    }
    fn deliver(&mut self, prot_id: u32, message: &[u8]) {
        self.delivered.push((prot_id, message.to_vec()));
    }
}

/// One end of the link.
struct Host {
    inst: BlastInstance,
    s: BlastSession,
    out: Out,
}

impl Host {
    fn new(cfg: BlastConfig) -> Self {
        Host {
            inst: BlastInstance::new(),
            s: BlastSession::new(PROT, cfg),
            out: Out::default(),
        }
    }

    fn push(&mut self, now: Instant, msg: &[u8]) -> Result<Pushed, BlastPushError> {
        self.s.push(&mut self.inst, now, msg, &mut self.out)
    }

    /// Frames sent since the last call.
    fn take(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.out.frames)
    }

    /// Receives a frame as the stage would: parse (trim to `len`), then
    /// the engine; a short message is delivered in place.
    fn recv(&mut self, now: Instant, frame: &[u8]) -> Result<Received, BlastDropReason> {
        let (h, payload) = BlastHeader::parse(frame)?;
        let r = self
            .s
            .receive(&mut self.inst, now, &h, payload, &mut self.out)?;
        if let Received::Short { len } = r {
            assert_eq!(len, payload.len());
            self.out.delivered.push((h.prot_id, payload.to_vec()));
        }
        Ok(r)
    }

    fn tick(&mut self, now: Instant) {
        self.s.on_time(&mut self.inst, now, &mut self.out);
    }
}

/// One nanosecond before `t`, for the "not yet" checks.
fn before(t: Instant) -> Instant {
    Instant::from_nanos(t.as_nanos() - 1)
}

fn header(frame: &[u8]) -> BlastHeader {
    BlastHeader::parse(frame).unwrap().0
}

/// Carries `frames` to `to` at `now`, except those whose fragment number
/// (1-based) is in `drop`. Every frame must be accepted.
fn carry(to: &mut Host, now: Instant, frames: &[Vec<u8>], drop: &[usize]) {
    for f in frames {
        if drop.contains(&header(f).fragment().unwrap_or(0)) {
            continue;
        }
        assert_eq!(to.recv(now, f), Ok(Received::Absorbed));
    }
}

/// The §11.1 vectors for seq 7 of 12 fragments at F = 1460.
const FRAG1: &str = "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 01 00 00 00 00 01";
const FRAG3: &str = "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 01 00 00 00 00 04";
const FRAG12: &str = "00 00 00 15 00 00 00 07 00 00 01 44 00 0c 01 00 00 00 08 00";
const NACK_3_MISSING: &str = "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 02 00 00 00 0f fb";
const RETRANSMIT_3: &str = "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 03 00 00 00 00 04";

/// Pushes the 16,384-byte message of B1–B3 as seq 7 and checks its
/// fragments against the vectors.
fn push_16k(a: &mut Host, now: Instant) -> (Vec<u8>, Vec<Vec<u8>>) {
    a.inst.set_next_seq(7);
    let msg = message(16_384);
    assert_eq!(
        a.push(now, &msg),
        Ok(Pushed::Fragmented(PushReceipt {
            ticket: 7,
            expensive: true
        }))
    );
    let frames = a.take();
    assert_eq!(frames.len(), 12);
    assert_eq!(frames[0][..HEADER_LEN], vector(FRAG1)[..]);
    assert_eq!(frames[2][..HEADER_LEN], vector(FRAG3)[..]);
    assert_eq!(frames[11][..HEADER_LEN], vector(FRAG12)[..]);
    for (k, f) in frames.iter().enumerate() {
        let end = ((k + 1) * F).min(msg.len());
        assert_eq!(&f[HEADER_LEN..], &msg[k * F..end], "fragment {}", k + 1);
    }
    assert_eq!(frames[11].len(), HEADER_LEN + 324);
    assert_eq!(a.s.poll_at(), Some(now + HOLD));
    (msg, frames)
}

#[test]
fn b1_drop_fragment_3_nack_then_only_fragment_3_resent() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    let (msg, frames) = push_16k(&mut a, ms(0));
    carry(&mut b, ms(0), &frames, &[3]);
    // Fragment 12 with a hole and no NACK yet: one NACK at once.
    let nacks = b.take();
    assert_eq!(nacks, vec![vector(NACK_3_MISSING)]);
    assert_eq!(
        b.s.poll_at(),
        Some(ms(120)),
        "receive timer re-armed 120 ms"
    );
    assert_eq!(a.recv(ms(1), &nacks[0]), Ok(Received::Absorbed));
    assert_eq!(a.s.poll_at(), Some(ms(1001)), "hold re-armed 1 s");
    let resent = a.take();
    assert_eq!(resent.len(), 1, "only fragment 3");
    assert_eq!(resent[0][..HEADER_LEN], vector(RETRANSMIT_3)[..]);
    assert_eq!(&resent[0][HEADER_LEN..], &msg[2 * F..3 * F]);
    assert_eq!(b.recv(ms(2), &resent[0]), Ok(Received::Absorbed));
    assert_eq!(b.out.delivered, vec![(PROT, msg)]);
    assert_eq!(b.s.poll_at(), None);
    // Exactly once: nothing more happens at either end.
    b.tick(ms(5_000));
    a.tick(ms(1_000));
    assert_eq!(a.inst.outstanding(), 1);
    a.tick(ms(1_001));
    assert_eq!(a.inst.outstanding(), 0);
    assert_eq!(b.out.delivered.len(), 1);
    assert!(a.take().is_empty() && b.take().is_empty());
}

#[test]
fn b1_without_last_frag_nacks_nack_leaves_at_120_ms() {
    let cfg = BlastConfig {
        last_frag_nacks: false,
        ..ip_config()
    };
    let (mut a, mut b) = (Host::new(cfg), Host::new(cfg));
    let (msg, frames) = push_16k(&mut a, ms(0));
    carry(&mut b, ms(0), &frames, &[3]);
    assert!(b.take().is_empty(), "no NACK on the last fragment");
    assert_eq!(b.s.poll_at(), Some(ms(120)), "12 × 10 ms");
    b.tick(before(ms(120)));
    assert!(b.take().is_empty());
    b.tick(ms(120));
    let nacks = b.take();
    assert_eq!(nacks, vec![vector(NACK_3_MISSING)]);
    a.recv(ms(120), &nacks[0]).unwrap();
    let resent = a.take();
    assert_eq!(resent.len(), 1);
    assert_eq!(resent[0][..HEADER_LEN], vector(RETRANSMIT_3)[..]);
    b.recv(ms(121), &resent[0]).unwrap();
    assert_eq!(b.out.delivered, vec![(PROT, msg)]);
}

#[test]
fn b2_drop_last_fragment_nack_at_120_ms_only_fragment_12_resent() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    let (msg, frames) = push_16k(&mut a, ms(0));
    carry(&mut b, ms(0), &frames, &[12]);
    assert!(
        b.take().is_empty(),
        "no early NACK without the last fragment"
    );
    b.tick(before(ms(120)));
    assert!(b.take().is_empty());
    b.tick(ms(120));
    let nacks = b.take();
    assert_eq!(
        nacks,
        vec![vector(
            "00 00 00 15 00 00 00 07 00 00 05 b4 00 0c 02 00 00 00 07 ff"
        )]
    );
    a.recv(ms(120), &nacks[0]).unwrap();
    let resent = a.take();
    assert_eq!(resent.len(), 1);
    assert_eq!(
        resent[0][..HEADER_LEN],
        vector("00 00 00 15 00 00 00 07 00 00 01 44 00 0c 03 00 00 00 08 00")[..]
    );
    b.recv(ms(120), &resent[0]).unwrap();
    assert_eq!(b.out.delivered, vec![(PROT, msg)]);
}

/// B3: fragment 3 and every retransmission of it lost. Returns the times
/// of the NACKs and of the discard, relative to the receiver's clock.
fn b3(cfg: BlastConfig, arrival: Instant) -> (Vec<Instant>, Instant, Host) {
    let (mut a, mut b) = (Host::new(cfg), Host::new(cfg));
    let (_, frames) = push_16k(&mut a, ms(0));
    carry(&mut b, arrival, &frames, &[3]);
    let mut nack_times = Vec::new();
    let mut now = arrival;
    loop {
        for n in b.take() {
            nack_times.push(now);
            assert_eq!(header(&n).mask, 0x0ffb);
            a.recv(now, &n).unwrap();
            let resent = a.take();
            assert_eq!(resent.len(), 1);
            assert_eq!(header(&resent[0]).mask, 0x0004); // lost again
        }
        let t =
            b.s.poll_at()
                .expect("the receiver keeps a timer until it gives up");
        b.tick(before(t));
        assert!(b.take().is_empty(), "nothing before the timer");
        now = t;
        b.tick(now);
        if b.s.reassemblies() == 0 {
            break;
        }
    }
    assert!(b.take().is_empty(), "no fourth NACK");
    assert!(b.out.delivered.is_empty());
    assert_eq!(b.s.stats().messages_discarded, 1);
    assert_eq!(b.s.poll_at(), None);
    // The sender frees its copy 1 s after the last NACK it saw.
    let last = *nack_times.last().unwrap();
    assert_eq!(a.s.poll_at(), Some(last + HOLD));
    a.tick(before(last + HOLD));
    assert_eq!(a.inst.outstanding(), 1);
    a.tick(last + HOLD);
    assert_eq!(a.inst.outstanding(), 0);
    assert_eq!(a.s.poll_at(), None);
    (nack_times, now, a)
}

#[test]
fn b3_every_retransmission_lost_without_last_frag_nacks() {
    let cfg = BlastConfig {
        last_frag_nacks: false,
        ..ip_config()
    };
    let (nacks, discard, _) = b3(cfg, ms(0));
    assert_eq!(nacks, vec![ms(120), ms(360), ms(840)]);
    assert_eq!(discard, ms(1_800));
}

#[test]
fn b3_every_retransmission_lost_with_last_frag_nacks() {
    let t12 = ms(5);
    let (nacks, discard, a) = b3(ip_config(), t12);
    assert_eq!(nacks, vec![t12, ms(125), ms(365)]);
    assert_eq!(discard, ms(845));
    assert_eq!(a.s.stats().nacks_received, 3);
}

#[test]
fn b4_length_boundaries() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    // F − 1: short, seq 0, nothing held, no seq used.
    let short = message(F - 1);
    assert_eq!(
        a.push(ms(0), &short),
        Ok(Pushed::Short(BlastHeader::short(PROT, (F - 1) as u32)))
    );
    assert!(a.take().is_empty(), "the stage sends the short message");
    assert_eq!(
        (a.s.poll_at(), a.inst.outstanding(), a.inst.next_seq()),
        (None, 0, 1)
    );
    let mut frame = BlastHeader::short(PROT, (F - 1) as u32).to_bytes().to_vec();
    frame.extend_from_slice(&short);
    assert_eq!(b.recv(ms(0), &frame), Ok(Received::Short { len: F - 1 }));
    assert_eq!(b.s.poll_at(), None);
    // F: one fragment, seq ≠ 0.
    let one = message(F);
    let Ok(Pushed::Fragmented(receipt)) = a.push(ms(0), &one) else {
        panic!("F bytes take the fragmented path");
    };
    assert_ne!(receipt.ticket, 0);
    let frames = a.take();
    assert_eq!(frames.len(), 1);
    let h = header(&frames[0]);
    assert_eq!(
        (h.seq, h.num_frag, h.mask, h.len),
        (receipt.ticket, 1, 1, F as u32)
    );
    carry(&mut b, ms(0), &frames, &[]);
    // MAX_FRAGS·F: MAX_FRAGS fragments, masks covering the full mask
    // (16·F and 0xFFFF in the default build).
    let full = message(MAX_FRAGS * F);
    assert!(matches!(a.push(ms(0), &full), Ok(Pushed::Fragmented(_))));
    let frames = a.take();
    assert_eq!(frames.len(), MAX_FRAGS);
    let union = frames.iter().fold(0, |m: Mask, f| m | header(f).mask);
    assert_eq!(union, Mask::MAX);
    assert_eq!(header(&frames[MAX_FRAGS - 1]).mask, 1 << (MAX_FRAGS - 1));
    // Hold back the last fragment: the NACK reports all others, after
    // MAX_FRAGS × 10 ms.
    carry(&mut b, ms(0), &frames, &[MAX_FRAGS]);
    let t = ms(10 * MAX_FRAGS as u64);
    b.tick(before(t));
    assert!(b.take().is_empty());
    b.tick(t);
    assert_eq!(header(&b.take()[0]).mask, Mask::MAX >> 1);
    carry(&mut b, t, &frames[MAX_FRAGS - 1..], &[]);
    assert_eq!(
        b.out.delivered,
        vec![(PROT, short), (PROT, one), (PROT, full)]
    );
    // MAX_FRAGS·F + 1: refused, nothing sent or used.
    let seq = a.inst.next_seq();
    assert_eq!(
        a.push(ms(0), &message(MAX_FRAGS * F + 1)),
        Err(BlastPushError::TooLarge {
            len: MAX_FRAGS * F + 1,
            max: MAX_FRAGS * F
        })
    );
    assert!(a.take().is_empty());
    assert_eq!((a.inst.next_seq(), a.inst.outstanding()), (seq, 2));
}

/// The frames of [`full_width_message_with_holes_in_both_halves`] in each
/// layout: the NACK (fragments 1 and `MAX_FRAGS/2 + 1` missing, a copy of
/// fragment 2's header), then the two retransmissions.
#[cfg(not(any(feature = "blast-mask32", feature = "blast-mask64")))]
const FULL_WIDTH_REPAIR: [&str; 3] = [
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 10 02 00 00 00 fe fe",
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 10 03 00 00 00 00 01",
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 10 03 00 00 00 01 00",
];
#[cfg(feature = "blast-mask32")]
const FULL_WIDTH_REPAIR: [&str; 3] = [
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 20 02 00 ff fe ff fe",
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 20 03 00 00 00 00 01",
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 20 03 00 00 01 00 00",
];
/// 64-bit: fragment 33 is `mask_hi` bit 0 with `mask_lo` 0.
#[cfg(feature = "blast-mask64")]
const FULL_WIDTH_REPAIR: [&str; 3] = [
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 40 02 00 ff ff ff fe ff ff ff fe",
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 40 03 00 00 00 00 00 00 00 00 01",
    "00 00 00 15 00 00 00 07 00 00 05 b4 00 40 03 00 00 00 00 01 00 00 00 00",
];

/// A message of the full mask width (16, 32 or 64 fragments) with the
/// first fragment and the first of the upper half lost: the NACK names
/// both holes at their wire bits, only those two are resent, and the
/// message is reassembled byte for byte.
#[test]
fn full_width_message_with_holes_in_both_halves() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    a.inst.set_next_seq(7);
    let msg = message(MAX_FRAGS * F - 100);
    a.push(ms(0), &msg).unwrap();
    let frames = a.take();
    assert_eq!(frames.len(), MAX_FRAGS);
    assert_eq!(frames[MAX_FRAGS - 1].len(), HEADER_LEN + F - 100);
    let upper = MAX_FRAGS / 2 + 1;
    // The last fragment arrives with holes: one NACK at once.
    carry(&mut b, ms(0), &frames, &[1, upper]);
    assert_eq!(b.take(), vec![hex(FULL_WIDTH_REPAIR[0])]);
    a.recv(ms(1), &hex(FULL_WIDTH_REPAIR[0])).unwrap();
    let resent = a.take();
    assert_eq!(resent.len(), 2, "only the two holes");
    assert_eq!(resent[0][..HEADER_LEN], hex(FULL_WIDTH_REPAIR[1])[..]);
    assert_eq!(resent[1][..HEADER_LEN], hex(FULL_WIDTH_REPAIR[2])[..]);
    assert_eq!(&resent[0][HEADER_LEN..], &msg[..F]);
    assert_eq!(&resent[1][HEADER_LEN..], &msg[(upper - 1) * F..upper * F]);
    carry(&mut b, ms(2), &resent, &[]);
    assert_eq!(b.out.delivered, vec![(PROT, msg)]);
    assert_eq!(b.s.reassemblies(), 0);
}

#[test]
fn b5_reverse_order_and_duplicates() {
    // Reversed, without LAST_FRAG_NACKS: one message, no NACK.
    let cfg = BlastConfig {
        last_frag_nacks: false,
        ..ip_config()
    };
    let (mut a, mut b) = (Host::new(cfg), Host::new(cfg));
    let (msg, mut frames) = push_16k(&mut a, ms(0));
    frames.reverse();
    carry(&mut b, ms(0), &frames, &[]);
    assert!(b.take().is_empty());
    assert_eq!(b.out.delivered, vec![(PROT, msg.clone())]);

    // Reversed, with LAST_FRAG_NACKS: fragment 12 comes first and draws a
    // NACK; the retransmissions arrive after completion and are dropped.
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    let (_, mut frames) = push_16k(&mut a, ms(0));
    frames.reverse();
    carry(&mut b, ms(0), &frames, &[]);
    let nacks = b.take();
    assert_eq!(nacks.len(), 1);
    assert_eq!(header(&nacks[0]).mask, 0x0800);
    assert_eq!(header(&nacks[0]).len, 324, "a copy of fragment 12's header");
    a.recv(ms(1), &nacks[0]).unwrap();
    let resent = a.take();
    assert_eq!(resent.len(), 11);
    for f in &resent {
        assert_eq!(b.recv(ms(1), f), Err(BlastDropReason::RetransmitUnknownSeq));
    }
    assert_eq!(b.out.delivered, vec![(PROT, msg.clone())]);

    // Duplicates: every fragment but 12 twice, fragment 5 first with
    // other bytes (the later copy overwrites it).
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    let (_, frames) = push_16k(&mut a, ms(0));
    let mut bad5 = frames[4].clone();
    bad5[HEADER_LEN] ^= 0xff;
    carry(&mut b, ms(0), &[bad5], &[]);
    for f in &frames[..11] {
        carry(&mut b, ms(0), &[f.clone(), f.clone()], &[]);
    }
    b.tick(ms(120));
    let nacks = b.take();
    assert_eq!(
        header(&nacks[0]).mask,
        0x07ff,
        "mask unchanged by duplicates"
    );
    carry(&mut b, ms(121), &frames[11..], &[]);
    assert_eq!(b.out.delivered, vec![(PROT, msg)]);
    assert_eq!(b.s.stats().fragments_received, 24);
}

#[test]
fn b6_unknown_seq_dropped_without_state_or_reply() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    let retransmit = vector(RETRANSMIT_3);
    let mut frame = retransmit.clone();
    frame.extend(message(F));
    assert_eq!(
        b.recv(ms(0), &frame),
        Err(BlastDropReason::RetransmitUnknownSeq)
    );
    let nack = vector(NACK_3_MISSING);
    assert_eq!(a.recv(ms(0), &nack), Err(BlastDropReason::NackUnknownSeq));
    for h in [&mut a, &mut b] {
        assert!(h.take().is_empty());
        assert_eq!(h.s.poll_at(), None);
        assert_eq!((h.s.reassemblies(), h.s.held_messages()), (0, 0));
    }
    // No session: only a SEND may create one.
    assert_eq!(
        may_open_session(&header(&nack)),
        Err(BlastDropReason::NoSession)
    );
    assert_eq!(
        may_open_session(&header(&frame)),
        Err(BlastDropReason::NoSession)
    );
    let mut send = vector(FRAG1);
    send.extend(message(F));
    assert_eq!(may_open_session(&header(&send)), Ok(()));
}

#[test]
fn b7_late_original_after_timer_nack_doubles_allowance_once_and_for_good() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    // Message 1: fragment 12 late; timer NACK at 120 ms, then the original.
    let (msg, frames) = push_16k(&mut a, ms(0));
    carry(&mut b, ms(0), &frames, &[12]);
    b.tick(ms(120));
    assert_eq!(header(&b.take()[0]).mask, 0x07ff);
    assert_eq!(b.s.per_packet(), Duration::from_millis(10));
    carry(&mut b, ms(130), &frames[11..], &[]);
    assert_eq!(b.out.delivered, vec![(PROT, msg)]);
    assert_eq!(b.s.per_packet(), Duration::from_millis(20));

    // Message 2: allowance 12 × 20 ms; two late originals back off once.
    let msg2 = message(16_384);
    a.push(ms(200), &msg2).unwrap();
    let frames = a.take();
    carry(&mut b, ms(200), &frames, &[11, 12]);
    assert_eq!(b.s.poll_at(), Some(ms(440)));
    b.tick(ms(440));
    assert_eq!(header(&b.take()[0]).mask, 0x03ff);
    carry(&mut b, ms(450), &frames[10..11], &[]);
    assert_eq!(b.s.per_packet(), Duration::from_millis(40));
    carry(&mut b, ms(455), &frames[11..], &[]);
    assert_eq!(b.s.per_packet(), Duration::from_millis(40));
    assert_eq!(b.out.delivered[1], (PROT, msg2));

    // Message 3: the allowance persists (12 × 40 ms).
    a.push(ms(1_000), &message(16_384)).unwrap();
    let frames = a.take();
    carry(&mut b, ms(1_000), &frames, &[12]);
    assert_eq!(b.s.poll_at(), Some(ms(1_480)));

    // A late original after a last-fragment NACK changes nothing: that
    // NACK was about loss, not slowness.
    a.push(ms(2_000), &message(16_384)).unwrap();
    let frames = a.take();
    carry(&mut b, ms(2_000), &frames, &[3]);
    assert_eq!(b.take().len(), 1);
    carry(&mut b, ms(2_010), &frames[2..3], &[]);
    assert_eq!(b.s.per_packet(), Duration::from_millis(40));
    assert_eq!(b.out.delivered.len(), 3);
}

#[test]
fn b8_padded_frames_are_truncated_to_len() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    // A 10-byte short message in a minimum Ethernet payload (46 bytes).
    let msg = message(10);
    let Ok(Pushed::Short(h)) = a.push(ms(0), &msg) else {
        panic!("10 bytes go short");
    };
    let mut frame = h.to_bytes().to_vec();
    frame.extend_from_slice(&msg);
    frame.resize(46, 0xee);
    assert_eq!(b.recv(ms(0), &frame), Ok(Received::Short { len: 10 }));
    // A 4-byte last fragment, padded likewise.
    let msg2 = message(F + 4);
    a.push(ms(0), &msg2).unwrap();
    let mut frames = a.take();
    assert_eq!(frames[1].len(), HEADER_LEN + 4);
    frames[1].resize(46, 0xee);
    carry(&mut b, ms(0), &frames, &[]);
    // A padded NACK.
    a.push(ms(0), &message(2 * F)).unwrap();
    let frames = a.take();
    carry(&mut b, ms(0), &frames, &[1]);
    let mut nack = b.take().remove(0);
    assert_eq!(nack.len(), HEADER_LEN);
    nack.resize(46, 0xee);
    a.recv(ms(1), &nack).unwrap();
    carry(&mut b, ms(1), &a.take(), &[]);
    assert_eq!(
        b.out.delivered,
        vec![(PROT, msg), (PROT, msg2), (PROT, message(2 * F))]
    );
}

#[test]
fn b9_65th_message_waits_for_hold_expiry_or_free_resources() {
    let cfg = ip_config();
    let mut inst = BlastInstance::new();
    // Two sessions of one instance share the 64 slots.
    let mut s1 = BlastSession::new(PROT, cfg);
    let mut s2 = BlastSession::new(PROT, cfg);
    let mut out = Out::default();
    let msg = message(F);
    let mut tickets = Vec::new();
    for k in 0..64 {
        let s = if k % 2 == 0 { &mut s1 } else { &mut s2 };
        let Ok(Pushed::Fragmented(r)) = s.push(&mut inst, ms(k), &msg, &mut out) else {
            panic!("message {k} refused");
        };
        tickets.push(r.ticket);
    }
    assert_eq!(inst.outstanding(), 64);
    let sent = out.frames.len();
    let seq = inst.next_seq();
    assert_eq!(
        s1.push(&mut inst, ms(100), &msg, &mut out),
        Err(BlastPushError::WouldBlock { outstanding: 64 })
    );
    assert_eq!(
        BlastPushError::WouldBlock { outstanding: 64 }.kind(),
        std::io::ErrorKind::WouldBlock
    );
    assert_eq!(
        (out.frames.len(), inst.next_seq()),
        (sent, seq),
        "nothing lost"
    );
    // Short messages are not held and still go.
    assert!(matches!(
        s1.push(&mut inst, ms(100), &msg[..10], &mut out),
        Ok(Pushed::Short(_))
    ));
    // FREERESOURCES releases one slot.
    assert!(s1.free_resources(&mut inst, tickets[0]));
    assert!(!s1.free_resources(&mut inst, tickets[0]));
    assert!(s1.push(&mut inst, ms(100), &msg, &mut out).is_ok());
    assert!(s2.push(&mut inst, ms(100), &msg, &mut out).is_err());
    // HOLD expiry releases the rest: s2's first message was pushed at 1 ms.
    assert_eq!(s2.poll_at(), Some(ms(1) + HOLD));
    s2.on_time(&mut inst, ms(1) + HOLD, &mut out);
    assert_eq!(inst.outstanding(), 63);
    assert!(s2.push(&mut inst, ms(1_001), &msg, &mut out).is_ok());
    s1.close(&mut inst);
    s2.close(&mut inst);
    assert_eq!(inst.outstanding(), 0);
}

#[test]
fn b10_sequence_wraps_to_1() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    a.inst.set_next_seq(0xffff_ffff);
    let msg = message(F + 1);
    let tickets: Vec<u32> = (0..2)
        .map(|_| match a.push(ms(0), &msg) {
            Ok(Pushed::Fragmented(r)) => r.ticket,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(tickets, vec![0xffff_ffff, 1]);
    let frames = a.take();
    assert_eq!(header(&frames[0]).seq, 0xffff_ffff);
    assert_eq!(header(&frames[2]).seq, 1);
    carry(&mut b, ms(0), &frames, &[]);
    assert_eq!(b.out.delivered.len(), 2);
}

#[test]
fn chan_retransmit_reports_active_nack_repair() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    assert!(a.s.chan_retransmit(42), "unknown ticket: yes");
    let (_, frames) = push_16k(&mut a, ms(0));
    assert!(a.s.chan_retransmit(7), "no NACK yet: yes");
    carry(&mut b, ms(0), &frames, &[3]);
    a.recv(ms(1), &b.take()[0]).unwrap();
    assert!(!a.s.chan_retransmit(7), "NACK seen: BLAST is repairing");
    assert!(a.s.chan_retransmit(7), "the query reset the count");
    assert!(a.s.free_resources(&mut a.inst, 7));
    assert!(a.s.chan_retransmit(7));
    // The NACK for a freed message is dropped.
    carry(&mut b, ms(0), &[], &[]);
    b.tick(ms(120));
    let nack = b.take().remove(0);
    assert_eq!(a.recv(ms(120), &nack), Err(BlastDropReason::NackUnknownSeq));
}

#[test]
fn reassembly_bounds_and_malformed_fragments() {
    let cfg = BlastConfig {
        max_reassemblies: 2,
        max_reassembly_bytes: 20 * F,
        ..ip_config()
    };
    let mut b = Host::new(cfg);
    let frag = |seq: u32, n: u16, i: u16, len: usize| {
        let h = BlastHeader {
            prot_id: PROT,
            seq,
            len: len as u32,
            num_frag: n,
            op: BlastOp::Send,
            mask: 1 << (i - 1),
        };
        let mut f = h.to_bytes().to_vec();
        f.extend(message(len));
        f
    };
    assert!(b.recv(ms(0), &frag(1, 16, 1, F)).is_ok());
    // 16·F + 16·F > 20·F: the byte bound refuses a second large message.
    assert_eq!(
        b.recv(ms(0), &frag(2, 16, 1, F)),
        Err(BlastDropReason::ReassemblyFull)
    );
    assert!(b.recv(ms(0), &frag(3, 2, 1, F)).is_ok());
    // Two records: the count bound refuses a third.
    assert_eq!(
        b.recv(ms(0), &frag(4, 2, 1, F)),
        Err(BlastDropReason::ReassemblyFull)
    );
    assert_eq!(
        b.recv(ms(0), &frag(3, 3, 2, 10)),
        Err(BlastDropReason::InconsistentFragment)
    );
    assert_eq!(
        b.recv(ms(0), &frag(3, 2, 2, F + 1)),
        Err(BlastDropReason::FragmentTooLong)
    );
    assert_eq!((b.s.reassemblies(), b.s.reassembly_bytes()), (2, 18 * F));
    // Completing one frees its room.
    assert!(b.recv(ms(0), &frag(3, 2, 2, 5)).is_ok());
    assert_eq!(b.out.delivered.len(), 1);
    assert_eq!(b.out.delivered[0].1.len(), F + 5);
    assert!(b.recv(ms(0), &frag(4, 2, 1, F)).is_ok());
}

#[test]
fn buffers_are_reused_after_warm_up() {
    let (mut a, mut b) = (Host::new(ip_config()), Host::new(ip_config()));
    let msg = message(4 * F);
    a.push(ms(0), &msg).unwrap();
    carry(&mut b, ms(0), &a.take(), &[]);
    a.tick(ms(1_000));
    assert_eq!(a.inst.cached_buffers(), 1, "the freed send copy is kept");
    assert_eq!(b.out.delivered.pop().unwrap().1, msg);
    assert_eq!(b.inst.cached_buffers(), 1, "the delivered record's buffer");
    a.push(ms(1_000), &msg).unwrap();
    assert_eq!(a.inst.cached_buffers(), 0, "the next message took it");
    let frames = a.take();
    carry(&mut b, ms(1_000), &frames[..1], &[]);
    assert_eq!(b.inst.cached_buffers(), 0, "the next record took it");
    carry(&mut b, ms(1_000), &frames[1..], &[]);
    assert_eq!(b.inst.cached_buffers(), 1);
    assert_eq!(b.out.delivered.pop().unwrap().1, msg);
}

/// Drives both hosts until neither has anything left to do: `a` pushes
/// `msg`; the link loses the first `drops[k]` transmissions of fragment
/// `k + 1` and carries each batch reversed if `reverse`.
///
/// The sender holds a message 1 ms longer than the receiver's longest
/// NACK interval. With the x-kernel's constants both are 1 s, and a
/// receiver whose interval reaches the cap (32 or more fragments: it
/// starts at `num_frag × 10 ms`) NACKs at the very instant the sender
/// frees the message, so that round cannot repair anything (see
/// `nack_at_the_capped_interval_meets_the_end_of_hold`). With 16 fragments
/// the three intervals stay below 1 s and the margin changes nothing.
fn exchange(msg: &[u8], drops: &[u8], reverse: bool, last_frag_nacks: bool) -> Host {
    let cfg = BlastConfig {
        last_frag_nacks,
        hold: Duration::from_nanos(MAX_WAIT.as_nanos() + 1_000_000),
        ..ip_config()
    };
    let (mut a, mut b) = (Host::new(cfg), Host::new(cfg));
    let mut now = ms(0);
    let mut sent = [0u8; MAX_FRAGS];
    match a.push(now, msg).unwrap() {
        Pushed::Short(h) => {
            let mut frame = h.to_bytes().to_vec();
            frame.extend_from_slice(msg);
            b.recv(now, &frame).unwrap();
        }
        Pushed::Fragmented(_) => {}
    }
    for _ in 0..1_000 {
        let mut frames = a.take();
        let mut busy = !frames.is_empty();
        if reverse {
            frames.reverse();
        }
        for f in frames {
            let k = header(&f).fragment().unwrap() - 1;
            sent[k] += 1;
            if sent[k] > drops[k] {
                match b.recv(now, &f) {
                    Ok(_) | Err(BlastDropReason::RetransmitUnknownSeq) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
        for n in b.take() {
            busy = true;
            a.recv(now, &n).unwrap();
        }
        if busy {
            continue;
        }
        match [a.s.poll_at(), b.s.poll_at()].into_iter().flatten().min() {
            None => return b,
            Some(t) => {
                now = t;
                a.tick(now);
                b.tick(now);
            }
        }
    }
    panic!("the exchange did not settle");
}

/// With 32 or more fragments the receiver's NACK interval (first
/// `num_frag × 10 ms`, doubling) reaches its 1 s cap (`MAX_WAIT`) within
/// the three NACKs, and the sender's hold after a NACK is 1 s too
/// (`HOLD`): the NACK at the capped interval arrives as the sender frees
/// the message (later, on a real link), is refused as for an unknown
/// message, and the receiver in the end discards the partial message;
/// CHAN's retransmission is what recovers it (§3.6). With the 16-bit mask
/// the intervals (160, 320, 640 ms) stay below the cap.
#[test]
fn nack_at_the_capped_interval_meets_the_end_of_hold() {
    let cfg = BlastConfig {
        last_frag_nacks: false,
        ..ip_config()
    };
    let (mut a, mut b) = (Host::new(cfg), Host::new(cfg));
    let msg = message(MAX_FRAGS * F);
    a.push(ms(0), &msg).unwrap();
    let frames = a.take();
    // The last fragment and every retransmission of it are lost.
    carry(&mut b, ms(0), &frames, &[MAX_FRAGS]);
    let mut wait = Duration::from_nanos(PER_PACKET.as_nanos() * MAX_FRAGS as u64);
    let mut now = ms(0);
    let mut refused = 0;
    for _ in 0..NACK_LIMIT {
        now = now + wait;
        assert_eq!(b.s.poll_at(), Some(now));
        b.tick(now);
        let nack = b.take().remove(0);
        // The sender's timer runs first: the NACK is on the wire.
        a.tick(now);
        match a.recv(now, &nack) {
            Ok(_) => {
                assert_eq!(a.take().len(), 1, "the lost last fragment again");
                assert!(wait < MAX_WAIT);
            }
            Err(e) => {
                assert_eq!(e, BlastDropReason::NackUnknownSeq);
                assert_eq!(wait, MAX_WAIT, "only at the capped interval");
                assert_eq!(a.inst.outstanding(), 0);
                refused += 1;
            }
        }
        wait = Duration::from_nanos(wait.as_nanos() * 2).min(MAX_WAIT);
    }
    b.tick(now + wait);
    assert_eq!(b.s.reassemblies(), 0);
    assert!(b.out.delivered.is_empty());
    // 16 fragments: 160, 480, 1120 ms, each within the hold. 32: the third
    // NACK (1960 ms) meets the hold set by the second. 64: the second
    // (1640 ms) meets the hold set by the first; the third finds nothing.
    let expected = match MAX_FRAGS {
        16 => 0,
        32 => 1,
        _ => 2,
    };
    assert_eq!(refused, expected);
}

proptest! {
    #[test]
    fn any_length_and_repairable_loss_delivers_once(
        len in 0usize..=MAX_FRAGS * F,
        drops in proptest::collection::vec(0u8..=3, MAX_FRAGS),
        keep in 0usize..MAX_FRAGS,
        reverse in any::<bool>(),
        last_frag_nacks in any::<bool>(),
    ) {
        let mut drops = drops;
        // At least one original fragment arrives, or BLAST never learns of
        // the message (§3.6: loss of all fragments is the upper layer's).
        let n = len.div_ceil(F).max(1);
        drops[keep % n] = 0;
        let msg = message(len);
        let b = exchange(&msg, &drops, reverse, last_frag_nacks);
        prop_assert_eq!(&b.out.delivered, &vec![(PROT, msg)]);
        prop_assert_eq!(b.s.reassemblies(), 0);
    }

    #[test]
    fn arbitrary_packets_never_panic_or_exceed_the_bound(
        packets in proptest::collection::vec(
            (
                1u32..6,
                0u16..MAX_FRAGS as u16 + 2,
                0u8..5,
                prop_oneof![
                    any::<Mask>(),
                    (0..Mask::BITS).prop_map(|b| (1 as Mask) << b)
                ],
                prop_oneof![0usize..32, (F - 2)..(F + 3)],
                0u64..400,
                proptest::collection::vec(any::<u8>(), 0..24),
            ),
            1..40,
        ),
    ) {
        let cfg = BlastConfig {
            max_reassemblies: 3,
            max_reassembly_bytes: 20 * F,
            ..ip_config()
        };
        let mut b = Host::new(cfg);
        let mut now = ms(0);
        for (seq, num_frag, op, mask, len, advance, raw) in packets {
            let mut f = vec![0; HEADER_LEN];
            f[0..4].copy_from_slice(&PROT.to_be_bytes());
            f[4..8].copy_from_slice(&seq.to_be_bytes());
            f[8..12].copy_from_slice(&(len as u32).to_be_bytes());
            f[12..14].copy_from_slice(&num_frag.to_be_bytes());
            f[14] = op;
            f[field::MASK].copy_from_slice(&mask.to_be_bytes());
            f.resize(HEADER_LEN + len, 0x5a);
            let _ = b.recv(now, &f);
            let _ = b.recv(now, &raw);
            now = now + Duration::from_millis(advance);
            b.tick(now);
            prop_assert!(b.s.reassemblies() <= cfg.max_reassemblies);
            prop_assert!(b.s.reassembly_bytes() <= cfg.max_reassembly_bytes);
            if let Some(t) = b.s.poll_at() {
                prop_assert!(t > now);
            }
        }
    }
}

#[test]
fn fragments_shorter_than_the_receivers_f_are_joined_in_order() {
    // A sender on a smaller MTU (F = 1000) to a receiver with F = 1460:
    // the fragments sit 1460 apart in the record and move together on
    // completion. Delivered in a mixed order with a duplicate.
    let mut a = Host::new(BlastConfig::for_lower_mtu(1020));
    let mut b = Host::new(ip_config());
    let msg = message(3_500);
    a.push(ms(0), &msg).unwrap();
    let frames = a.take();
    assert_eq!(frames.len(), 4);
    let order = [&frames[2], &frames[0], &frames[3], &frames[0], &frames[1]];
    for f in order {
        assert_eq!(b.recv(ms(0), f), Ok(Received::Absorbed));
    }
    assert_eq!(b.out.delivered, vec![(PROT, msg)]);
    // The other way round a fragment longer than the receiver's F is
    // refused: no sender on the receiver's link makes one.
    let mut c = Host::new(BlastConfig::for_lower_mtu(1020));
    b.take(); // the NACK fragment 4 drew, arriving before fragment 2
    b.push(ms(0), &message(2 * F)).unwrap();
    assert_eq!(
        c.recv(ms(0), &b.take()[0]),
        Err(BlastDropReason::FragmentTooLong)
    );
}

#[test]
fn untrimmed_payload_counts_only_len_bytes() {
    let mut b = Host::new(ip_config());
    let h = BlastHeader::short(PROT, 3);
    let padded = [1u8, 2, 3, 0, 0, 0];
    let mut out = Out::default();
    assert_eq!(
        b.s.receive(&mut b.inst, ms(0), &h, &padded, &mut out),
        Ok(Received::Short { len: 3 })
    );
    assert_eq!(
        b.s.receive(&mut b.inst, ms(0), &h, &padded[..2], &mut out),
        Err(BlastDropReason::BadLength)
    );
    let frag = BlastHeader {
        prot_id: PROT,
        seq: 9,
        len: 3,
        num_frag: 1,
        op: BlastOp::Send,
        mask: 1,
    };
    b.s.receive(&mut b.inst, ms(0), &frag, &padded, &mut out)
        .unwrap();
    assert_eq!(out.delivered, vec![(PROT, vec![1, 2, 3])]);
}
