//! Two control blocks talking through a lossy in-memory link: handshake,
//! transfer both ways under loss, the close handshake.

use super::script::tso_config;
use super::*;
use crate::tcp::congestion::CongestionKind;
use pathstack_core::time::Duration;
use std::collections::VecDeque;

type Seg = (TcpRepr, Vec<u8>);

/// What `t` sends now, super-segments (segmentation offload) cut into
/// wire segments the way a device does (see [`device_segments`]).
fn outputs(t: &mut Tcb, now: Instant) -> Vec<Seg> {
    let mut v = Vec::new();
    t.poll_output(now, &mut |s| {
        let mut p = s.payload.to_vec();
        p.extend_from_slice(s.payload2);
        v.extend(device_segments(s.repr, &p, s.gso_size));
        true
    });
    v
}

/// A super-segment cut into segments of `gso_size` data octets, as a TSO
/// device (or the kernel's GSO) does: the header copied, the sequence
/// number advanced, FIN and PSH only on the last piece. An ordinary
/// segment (`gso_size` 0) as it is.
fn device_segments(repr: TcpRepr, payload: &[u8], gso_size: u16) -> Vec<Seg> {
    if gso_size == 0 || payload.len() <= usize::from(gso_size) {
        return vec![(repr, payload.to_vec())];
    }
    let pieces: Vec<&[u8]> = payload.chunks(usize::from(gso_size)).collect();
    let last = pieces.len() - 1;
    let mut seq = repr.seq;
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let mut r = repr;
            r.seq = seq;
            seq = seq.wrapping_add(p.len() as u32);
            if i != last {
                r.flags.remove(TcpFlags::FIN | TcpFlags::PSH);
            }
            (r, p.to_vec())
        })
        .collect()
}

/// A deterministic link: delay, and loss by a xorshift generator.
struct Link {
    q: [VecDeque<(Instant, Seg)>; 2],
    delay: Duration,
    loss_per_mille: u32,
    rng: u64,
    lost: u64,
}

impl Link {
    fn new(delay_us: u64, loss_per_mille: u32, seed: u64) -> Link {
        Link {
            q: [VecDeque::new(), VecDeque::new()],
            delay: Duration::from_micros(delay_us),
            loss_per_mille,
            rng: seed | 1,
            lost: 0,
        }
    }
    fn lose(&mut self) -> bool {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % 1000) < u64::from(self.loss_per_mille)
    }
}

/// Runs both ends until `done` or the time limit; returns the end time.
fn run(
    a: &mut Tcb,
    b: &mut Tcb,
    link: &mut Link,
    mut now: Instant,
    limit: Duration,
    mut step: impl FnMut(&mut Tcb, &mut Tcb, Instant) -> bool,
) -> Instant {
    let end = now + limit;
    while now < end {
        if step(a, b, now) {
            return now;
        }
        for (i, t) in [&mut *a, &mut *b].into_iter().enumerate() {
            t.on_tick(now);
            for s in outputs(t, now) {
                if !link.lose() {
                    link.q[i].push_back((now + link.delay, s));
                } else {
                    link.lost += 1;
                }
            }
        }
        for (i, t) in [&mut *b, &mut *a].into_iter().enumerate() {
            while link.q[i].front().is_some_and(|(at, _)| *at <= now) {
                let (_, (r, p)) = link.q[i].pop_front().unwrap();
                let _ = t.on_segment(now, &r, &p);
            }
        }
        // Next event: a delivery, a timer, or a small step.
        let mut next = now + Duration::from_micros(50);
        for q in &link.q {
            if let Some((at, _)) = q.front() {
                if *at < next {
                    next = *at;
                }
            }
        }
        if !(a.wants_output() || b.wants_output()) {
            for t in [&*a, &*b] {
                if let Some(at) = t.poll_at() {
                    if at > now && at < next {
                        next = at;
                    }
                }
            }
        }
        now = next.max(now + Duration::from_nanos(1));
    }
    now
}

fn pair(cfg: TcpConfig) -> (Tcb, Tcb) {
    let t0 = Instant::ZERO;
    let a = Tcb::connect(cfg, 40000, 80, SeqNumber(0xffff_f000), 7, t0);
    let b = Tcb::listen(cfg, 80, 40000, SeqNumber(1000), 9, t0);
    (a, b)
}

/// A pair of `cfg` whose handshake has run over a clean link; returns
/// both ends and the time they were both established.
pub(super) fn established(cfg: TcpConfig) -> (Tcb, Tcb, Instant) {
    let (mut a, mut b) = pair(cfg);
    let mut link = Link::new(100, 0, 1);
    let t = run(
        &mut a,
        &mut b,
        &mut link,
        Instant::ZERO,
        Duration::from_secs(1),
        |a, b, _| a.state() == State::Established && b.state() == State::Established,
    );
    (a, b, t)
}

fn byte(i: usize) -> u8 {
    (i.wrapping_mul(2654435761) >> 13) as u8
}

/// Sends `n` bytes a → b and `m` bytes b → a, then closes both; checks
/// every byte and that both reach a final state.
fn transfer(cfg: TcpConfig, n: usize, m: usize, loss: u32, seed: u64) -> u64 {
    let (mut a, mut b) = pair(cfg);
    let mut link = Link::new(500, loss, seed);
    let (mut sa, mut sb) = (0usize, 0usize);
    let (mut ra, mut rb) = (Vec::new(), Vec::new());
    let mut chunk = vec![0u8; 3000];
    let mut buf = vec![0u8; 4096];
    let (mut closed_a, mut closed_b) = (false, false);
    let end = run(
        &mut a,
        &mut b,
        &mut link,
        Instant::ZERO,
        Duration::from_secs(600),
        |a, b, now| {
            let _ = now;
            for (t, sent, total, closed) in [
                (&mut *a, &mut sa, n, &mut closed_a),
                (&mut *b, &mut sb, m, &mut closed_b),
            ] {
                if !t.state().is_synchronized() {
                    continue;
                }
                while *sent < total {
                    let k = (total - *sent).min(chunk.len());
                    for (j, c) in chunk[..k].iter_mut().enumerate() {
                        *c = byte(*sent + j);
                    }
                    match t.send(&chunk[..k]).unwrap() {
                        Some(w) => *sent += w,
                        None => break,
                    }
                }
                if *sent == total && !*closed {
                    t.shutdown(Shutdown::Write).unwrap();
                    *closed = true;
                }
            }
            for (t, r) in [(&mut *a, &mut ra), (&mut *b, &mut rb)] {
                while let Ok(Some(k)) = t.recv(&mut buf) {
                    if k == 0 {
                        break;
                    }
                    r.extend_from_slice(&buf[..k]);
                }
            }
            closed_a
                && closed_b
                && ra.len() == m
                && rb.len() == n
                && matches!(a.state(), State::TimeWait | State::Closed)
                && matches!(b.state(), State::TimeWait | State::Closed)
        },
    );
    assert_eq!(
        rb.len(),
        n,
        "a→b bytes (end {end:?}, a {} {:?} {:?}, b {} {:?} {:?})",
        a.state(),
        a.error(),
        a.stats(),
        b.state(),
        b.error(),
        b.stats()
    );
    assert_eq!(ra.len(), m, "b→a bytes");
    assert!(
        rb.iter().enumerate().all(|(i, &c)| c == byte(i)),
        "a→b content"
    );
    assert!(
        ra.iter().enumerate().all(|(i, &c)| c == byte(i)),
        "b→a content"
    );
    assert!(
        matches!(a.state(), State::TimeWait | State::Closed),
        "a ends in {}",
        a.state()
    );
    assert!(
        matches!(b.state(), State::TimeWait | State::Closed),
        "b ends in {}",
        b.state()
    );
    a.stats().retrans_segs + b.stats().retrans_segs
}

#[test]
fn handshake_negotiates_every_extension() {
    let (a, b, _) = established(TcpConfig::default());
    assert_eq!(a.state(), State::Established);
    assert_eq!(b.state(), State::Established);
    assert_eq!(a.extensions(), (true, true, true));
    assert_eq!(b.extensions(), (true, true, true));
    assert_eq!(a.smss(), 1448);
}

#[test]
fn clean_transfer_both_ways() {
    let r = transfer(TcpConfig::default(), 1_000_000, 300_000, 0, 1);
    assert_eq!(r, 0);
}

#[test]
fn lossy_transfer_both_ways_each_congestion_control() {
    for cc in [CongestionKind::Cubic, CongestionKind::NewReno] {
        let cfg = TcpConfig {
            congestion: cc,
            ..TcpConfig::default()
        };
        let r = transfer(cfg, 500_000, 200_000, 50, 7);
        assert!(r > 0);
    }
}

#[test]
fn lossy_transfer_without_extensions() {
    let cfg = TcpConfig {
        sack: false,
        timestamps: false,
        window_scaling: false,
        rack: false,
        ..TcpConfig::default()
    };
    transfer(cfg, 300_000, 100_000, 30, 3);
}

#[test]
fn frag_needed_lowers_the_mss_only_for_a_sequence_in_flight() {
    let (mut a, mut b, t) = established(TcpConfig::default());
    a.send(&[7u8; 20_000]).unwrap();
    let segs = outputs(&mut a, t);
    assert!(segs.iter().all(|(_, p)| p.len() <= 1448));
    let before = a.smss();
    // Outside what is in flight (RFC 5927 §4.1): ignored.
    assert!(!a.on_frag_needed(1280, a.snd_nxt() + 10));
    assert!(!a.on_frag_needed(1280, a.snd_una() - 1));
    assert_eq!(a.smss(), before);
    // In flight: taken; new segments obey it.
    assert!(a.on_frag_needed(1280, a.snd_una()));
    assert_eq!(a.smss(), 1280 - 40 - 12);
    // A larger MTU never raises it again.
    assert!(!a.on_frag_needed(1500, a.snd_una()));
    // The peer acknowledges the first flight; new data goes in the
    // smaller segments.
    for (r, p) in &segs {
        let _ = b.on_segment(t, r, p);
    }
    // The ACK at the end of the burst: a quick ACK (the first data), due
    // by the next poll (`quick_ack::ANSWER_GRACE`).
    b.on_tick(t + crate::tcp::quick_ack::ANSWER_GRACE);
    for (r, p) in outputs(&mut b, t) {
        let _ = a.on_segment(t, &r, &p);
    }
    let old_nxt = a.snd_nxt();
    a.send(&[8u8; 20_000]).unwrap();
    let new: Vec<usize> = outputs(&mut a, t)
        .into_iter()
        .filter(|(r, p)| SeqNumber(r.seq).ge(old_nxt) && !p.is_empty())
        .map(|(_, p)| p.len())
        .collect();
    assert!(!new.is_empty());
    assert!(new.iter().all(|&n| n <= 1280 - 40 - 12), "{new:?}");
}

#[test]
fn tso_sends_whole_mss_super_segments_within_the_congestion_window() {
    let (mut a, _b, _) = established(tso_config());
    let now = Instant::from_nanos(2_000_000_000);
    let data = vec![7u8; 100_000];
    assert_eq!(a.send(&data).unwrap(), Some(100_000));
    let mut segs = Vec::new();
    a.poll_output(now, &mut |s| {
        segs.push((s.payload_len(), s.gso_size));
        true
    });
    let smss = a.smss() as usize;
    // RFC 5681 §3.1: the initial window (10 segments, as Linux) goes as
    // super-segments of whole segments, no more; each at most half of it
    // (Linux's `tcp_cwnd_test` quota, `Tcb::tso_len`), so two.
    let cwnd = a.cwnd() as usize;
    let half = cwnd / smss / 2 * smss;
    assert_eq!(cwnd / smss, 10);
    assert_eq!(
        segs,
        vec![(half, smss as u16), (half, smss as u16)],
        "{segs:?}"
    );
}

/// A super-segment is at most half the congestion window, whatever the
/// device takes: with cwnd at 20 segments, a window's worth of new data
/// goes as two super-segments of 10 (packetdrill
/// `slow-start-after-idle`: `> P. 10001:20001(10000)` then the rest).
/// Without the quota it went as one, and a TAP that does not cut it
/// lost the whole window with one frame.
#[test]
fn tso_super_segments_are_at_most_half_the_congestion_window() {
    let (mut a, mut b, _) = established(tso_config());
    let now = Instant::from_nanos(2_000_000_000);
    let smss = a.smss() as usize;
    assert_eq!(a.send(&vec![7u8; 100_000]).unwrap(), Some(100_000));
    // The first flight (cwnd 10), acknowledged: slow start doubles cwnd.
    let first = outputs(&mut a, now);
    let now = now + Duration::from_millis(10);
    for (r, p) in &first {
        let _ = b.on_segment(now, r, p);
    }
    b.on_tick(now + crate::tcp::quick_ack::ANSWER_GRACE);
    for (r, p) in outputs(&mut b, now) {
        let _ = a.on_segment(now, &r, &p);
    }
    let cwnd_segs = a.cwnd() as usize / smss;
    assert!(cwnd_segs >= 16, "slow start grew cwnd: {cwnd_segs}");
    let mut segs = Vec::new();
    a.poll_output(now, &mut |s| {
        segs.push(s.payload_len());
        true
    });
    assert!(segs.len() >= 2, "{segs:?}");
    assert!(
        segs.iter().all(|&n| n <= cwnd_segs / 2 * smss),
        "cwnd {cwnd_segs} segments: {segs:?}"
    );
    assert_eq!(segs[0], cwnd_segs / 2 * smss, "{segs:?}");
}

/// With TSO, one write of some whole segments and a tail leaves at once
/// as one super-segment and the tail (Minshall's rule: no small segment
/// was unacknowledged); a second small write waits for the tail's ACK.
#[test]
fn tso_sends_the_tail_of_a_write_behind_its_super_segment() {
    let (mut a, _b, _) = established(tso_config());
    let now = Instant::from_nanos(2_000_000_000);
    let smss = a.smss() as usize;
    let len = 3 * smss + 100;
    assert_eq!(a.send(&vec![7u8; len]).unwrap(), Some(len));
    let mut segs = Vec::new();
    a.poll_output(now, &mut |s| {
        segs.push((s.payload_len(), s.gso_size));
        true
    });
    assert_eq!(segs, vec![(3 * smss, smss as u16), (100, 0)], "{segs:?}");
    assert_eq!(a.send(&[1u8; 10]).unwrap(), Some(10));
    let mut more = 0;
    a.poll_output(now, &mut |_| {
        more += 1;
        true
    });
    assert_eq!(
        more, 0,
        "a small write behind an unacknowledged small segment waits"
    );
}

#[test]
fn clean_transfer_both_ways_with_tso() {
    assert_eq!(transfer(tso_config(), 1_000_000, 300_000, 0, 1), 0);
}

#[test]
fn lossy_transfer_both_ways_with_tso() {
    // Loss hits single wire segments of super-segments: SACK and RACK
    // must repair them segment by segment.
    for seed in [7, 8] {
        assert!(transfer(tso_config(), 500_000, 200_000, 50, seed) > 0);
    }
}

#[test]
fn super_segments_larger_than_the_mss_are_taken_whole() {
    // A GRO-merged super-segment reaches the receiver uncut.
    let (mut a, mut b, _) = established(tso_config());
    let now = Instant::from_nanos(2_000_000_000);
    let data: Vec<u8> = (0..20_000).map(byte).collect();
    a.send(&data).unwrap();
    let mut whole = Vec::new();
    a.poll_output(now, &mut |s| {
        let mut p = s.payload.to_vec();
        p.extend_from_slice(s.payload2);
        whole.push((s.repr, p));
        true
    });
    assert!(whole[0].1.len() > a.smss() as usize, "a super-segment");
    for (r, p) in &whole {
        b.on_segment(now, r, p).unwrap();
    }
    let mut got = vec![0u8; 30_000];
    let n = b.recv(&mut got).unwrap().unwrap();
    assert_eq!(&got[..n], &data[..n]);
    assert_eq!(n, whole.iter().map(|(_, p)| p.len()).sum::<usize>());
}

/// RFC 6298 §5.3 with the lazy timer bound (`tcp::timers`): an ACK of
/// part of the flight restarts the retransmission timer, which leaves
/// the wake-up at the old deadline. Woken there, the control block runs
/// nothing and sends nothing; it asks to be woken at the new deadline,
/// and the retransmission goes exactly then (§5.4), not a nanosecond
/// before.
#[test]
fn retransmission_fires_at_the_deadline_the_ack_moved() {
    let cfg = TcpConfig {
        rack: false,
        nodelay: true,
        delayed_ack: std::time::Duration::from_millis(1),
        ..TcpConfig::default()
    };
    let (mut a, mut b, t0) = established(cfg);
    let ms = Duration::from_millis;
    // Two segments, 5 ms apart: the timer starts with the first
    // (§5.1) and is not restarted by the second.
    a.send(b"x").unwrap();
    let s1 = outputs(&mut a, t0);
    assert_eq!(s1.len(), 1);
    let first_deadline = a.poll_at().expect("the retransmission timer runs");
    assert_eq!(first_deadline, t0 + a.rto.rto());
    a.send(b"y").unwrap();
    let s2 = outputs(&mut a, t0 + ms(5));
    assert_eq!(s2.len(), 1);
    assert_eq!(a.poll_at(), Some(first_deadline));
    // b acknowledges the first segment alone.
    let tb = t0 + ms(10);
    b.on_segment(tb, &s1[0].0, &s1[0].1).unwrap();
    b.on_tick(tb + ms(1));
    let acks = outputs(&mut b, tb + ms(1));
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].0.ack, s2[0].0.seq);
    // The ACK restarts the timer (§5.3): the deadline moves later, the
    // wake-up stays.
    let ta = t0 + ms(20);
    a.on_segment(ta, &acks[0].0, &acks[0].1).unwrap();
    assert!(outputs(&mut a, ta).is_empty());
    let deadline = ta + a.rto.rto();
    assert_eq!(a.poll_at(), Some(deadline));
    assert_eq!(a.wake_at(), Some(first_deadline));
    assert!(first_deadline < deadline);
    // Woken early: nothing runs, nothing goes, the wake-up moves to the
    // deadline.
    a.on_tick(first_deadline);
    assert!(outputs(&mut a, first_deadline).is_empty());
    assert_eq!(a.stats().timeouts, 0);
    assert_eq!(a.wake_at(), Some(deadline));
    let just_before = Instant::from_nanos(deadline.as_nanos() - 1);
    a.on_tick(just_before);
    assert!(outputs(&mut a, just_before).is_empty());
    assert_eq!(a.stats().timeouts, 0);
    // At the deadline: the second segment again.
    a.on_tick(deadline);
    let rtx = outputs(&mut a, deadline);
    assert_eq!(a.stats().timeouts, 1);
    assert_eq!(rtx.len(), 1);
    assert_eq!(rtx[0].0.seq, s2[0].0.seq);
    assert_eq!(rtx[0].1, b"y");
}

/// Connections made with one `Arc<TcpConfig>` share it until one of
/// them changes an option; setting an option to the value it has copies
/// nothing (issue 28 item 4: the configuration is 208 octets, a million
/// idle connections hold one).
#[test]
fn configuration_is_shared_until_changed() {
    let cfg = std::sync::Arc::new(TcpConfig::default());
    let mut a = Tcb::connect(cfg.clone(), 1, 2, SeqNumber(7), 0, Instant::ZERO);
    let b = Tcb::listen(cfg.clone(), 2, 1, SeqNumber(9), 0, Instant::ZERO);
    assert!(std::sync::Arc::ptr_eq(
        &a.shared_config(),
        &b.shared_config()
    ));
    a.set_nodelay(cfg.nodelay);
    assert!(std::sync::Arc::ptr_eq(&a.shared_config(), &cfg));
    a.set_nodelay(!cfg.nodelay);
    assert!(!std::sync::Arc::ptr_eq(&a.shared_config(), &cfg));
    assert_eq!(a.config().nodelay, !cfg.nodelay);
    assert_eq!(b.config().nodelay, cfg.nodelay, "the other's unchanged");
}
