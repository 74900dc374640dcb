//! BID/BIDCTL scenarios (spec §11.3 D1–D6) with two engines on a simulated
//! clock, exchanging the bytes their headers encode to through an in-test
//! link that can lose packets.

use super::*;
use crate::wire::bid::{BidDropReason, BidHeader, HLP_CHAN};
use crate::wire::bidctl::{flags, BidctlDropReason, BidctlHeader};
use crate::Peer;
use pathstack_core::time::{Duration, Instant};
use proptest::prelude::*;
use std::collections::VecDeque;
use std::net::Ipv4Addr;

const A_BID: BootId = BootId(0x2F5E_1000);
const B_BID: BootId = BootId(0x2F5E_2000);
const B_REBOOTED: BootId = BootId(0x2F5E_3000);
const TAG_0ABC: u32 = 0x2F5E_0ABC;

/// Spec §11.1 BIDCTL vectors.
const QUERY_VECTOR: [u8; 20] = [
    0x00, 0x01, 0x86, 0x86, 0x2f, 0x5e, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2f, 0x5e, 0x0a, 0xbc,
    0x00, 0x00, 0x00, 0x00,
];
const RESPONSE_VECTOR: [u8; 20] = [
    0x00, 0x02, 0x37, 0x27, 0x2f, 0x5e, 0x20, 0x00, 0x2f, 0x5e, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x2f, 0x5e, 0x0a, 0xbc,
];
const BCAST_VECTOR: [u8; 20] = [
    0x00, 0x04, 0xa0, 0x9d, 0x2f, 0x5e, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00,
];

fn a() -> Peer {
    Peer::from(Ipv4Addr::new(10, 0, 0, 1))
}
fn b() -> Peer {
    Peer::from(Ipv4Addr::new(10, 0, 0, 2))
}
fn c() -> Peer {
    Peer::from(Ipv4Addr::new(10, 0, 0, 3))
}

fn at(secs: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(secs)
}

/// Wall-clock time whose query tag is 0x2F5E0ABC (spec §11.1).
fn wall_tag_0abc() -> std::time::Duration {
    std::time::Duration::new(0x2F5E, 0x0ABC * 256 * 1000)
}

const R1: Registrant = Registrant(1);

struct Host {
    addr: Peer,
    bidctl: Bidctl,
    notes: Vec<(Instant, Registrant, BootEvent)>,
    drops: Vec<BidctlDropReason>,
}

impl Host {
    fn new(addr: Peer, bid: BootId, wall: std::time::Duration, now: Instant) -> Host {
        let cfg = BidctlConfig {
            local_peers: vec![addr],
            ..BidctlConfig::default()
        };
        Host {
            addr,
            bidctl: Bidctl::new(cfg, bid, wall, now),
            notes: Vec::new(),
            drops: Vec::new(),
        }
    }

    fn reboots(&self) -> usize {
        self.notes
            .iter()
            .filter(|(_, _, e)| matches!(e, BootEvent::PeerRebooted { .. }))
            .count()
    }
}

#[derive(Clone, Debug)]
struct Sent {
    at: Instant,
    from: Peer,
    to: Peer,
    bytes: [u8; 20],
    delivered: bool,
}

impl Sent {
    fn header(&self) -> BidctlHeader {
        BidctlHeader::parse(&self.bytes).unwrap().0
    }
}

type LossRule = Box<dyn FnMut(&Sent) -> bool>;

/// Two (or more) hosts on a zero-latency link that loses what `lose` says.
struct World {
    now: Instant,
    hosts: Vec<Host>,
    log: Vec<Sent>,
    /// Every BID verdict: (from, to, verdict).
    bid_log: Vec<(Peer, Peer, BidRxVerdict)>,
    lose: LossRule,
}

impl World {
    /// Host A (0x2F5E1000, tags from 0x2F5E0ABC) and host B (0x2F5E2000).
    fn new() -> World {
        World {
            now: Instant::ZERO,
            hosts: vec![
                Host::new(a(), A_BID, wall_tag_0abc(), Instant::ZERO),
                Host::new(
                    b(),
                    B_BID,
                    std::time::Duration::from_secs(0x2F5E_2000),
                    Instant::ZERO,
                ),
            ],
            log: Vec::new(),
            bid_log: Vec::new(),
            lose: Box::new(|_| false),
        }
    }

    fn host(&mut self, p: Peer) -> &mut Host {
        self.hosts.iter_mut().find(|h| h.addr == p).unwrap()
    }

    fn sent_by(&self, p: Peer) -> Vec<Sent> {
        self.log.iter().filter(|s| s.from == p).cloned().collect()
    }

    /// Routes `actions` produced by `src`, and what they provoke, until
    /// the link is quiet.
    fn dispatch(&mut self, src: Peer, actions: Vec<BidctlAction>) {
        let mut queue: VecDeque<(Peer, BidctlAction)> =
            actions.into_iter().map(|a| (src, a)).collect();
        while let Some((src, action)) = queue.pop_front() {
            match action {
                BidctlAction::Notify { registrant, event } => {
                    let now = self.now;
                    self.host(src).notes.push((now, registrant, event));
                }
                BidctlAction::Send { to, header } => {
                    let mut s = Sent {
                        at: self.now,
                        from: src,
                        to,
                        bytes: header.to_bytes(),
                        delivered: true,
                    };
                    s.delivered = !(self.lose)(&s);
                    self.log.push(s.clone());
                    if !s.delivered || !self.hosts.iter().any(|h| h.addr == to) {
                        continue;
                    }
                    let out = self.receive(src, to, &s.bytes);
                    queue.extend(out.into_iter().map(|a| (to, a)));
                }
            }
        }
    }

    fn receive(&mut self, from: Peer, to: Peer, bytes: &[u8]) -> Vec<BidctlAction> {
        let now = self.now;
        let h = self.host(to);
        let mut out = Vec::new();
        let r = BidctlHeader::parse(bytes)
            .and_then(|(hdr, _)| h.bidctl.on_packet(now, from, &hdr, &mut out));
        if let Err(r) = r {
            h.drops.push(r);
        }
        out
    }

    /// Delivers raw bytes from `from` to `to` now, and routes the answers.
    fn inject(&mut self, from: Peer, to: Peer, bytes: &[u8]) {
        let out = self.receive(from, to, bytes);
        self.dispatch(to, out);
    }

    /// Calls into one host's engine now and routes what it sends.
    fn call<R>(
        &mut self,
        p: Peer,
        f: impl FnOnce(&mut Bidctl, Instant, &mut Vec<BidctlAction>) -> R,
    ) -> R {
        let now = self.now;
        let mut out = Vec::new();
        let r = f(&mut self.host(p).bidctl, now, &mut out);
        self.dispatch(p, out);
        r
    }

    /// Runs every engine's timers up to `t`.
    fn run_until(&mut self, t: Instant) {
        loop {
            let next = self.hosts.iter().filter_map(|h| h.bidctl.poll_at()).min();
            match next {
                Some(n) if n <= t => {
                    assert!(n >= self.now, "poll_at went back in time");
                    self.now = n;
                    for i in 0..self.hosts.len() {
                        let addr = self.hosts[i].addr;
                        let mut out = Vec::new();
                        self.hosts[i].bidctl.on_time(n, &mut out);
                        self.dispatch(addr, out);
                    }
                }
                _ => break,
            }
        }
        self.now = t;
    }

    /// A registers R1 for B and both run the first handshake.
    fn established() -> World {
        let mut w = World::new();
        w.call(a(), |e, now, out| e.register(b(), R1, now, out))
            .unwrap();
        assert_eq!(w.host(a()).bidctl.peer_view(b()).unwrap().bid, B_BID);
        assert_eq!(w.host(b()).bidctl.peer_view(a()).unwrap().bid, A_BID);
        w.log.clear();
        w.host(a()).notes.clear();
        w
    }

    /// One BID message from `from` to `to`, the way the BID stages handle
    /// it: the sender's filter with BIDCTL's view of the peer, the
    /// receiver's verdict and its consequences (an empty answer, a hint to
    /// BIDCTL, or a passive session's registration). Returns the verdict.
    fn send_bid(&mut self, from: Peer, to: Peer) -> Result<BidRxVerdict, BidDropReason> {
        let sender = self.host(from);
        let peer_bid = sender
            .bidctl
            .peer_view(to)
            .map_or(BootId::UNKNOWN, |v| v.bid);
        let hdr = BidFilter::new(sender.bidctl.local_bid(), HLP_CHAN).send_header(peer_bid)?;
        let bytes = hdr.to_bytes();
        Ok(self.receive_bid(from, to, &bytes))
    }

    fn receive_bid(&mut self, from: Peer, to: Peer, bytes: &[u8]) -> BidRxVerdict {
        let (hdr, _) = BidHeader::parse(bytes).unwrap();
        let recv = self.host(to);
        let peer_bid = recv
            .bidctl
            .peer_view(from)
            .map_or(BootId::UNKNOWN, |v| v.bid);
        let verdict = BidFilter::new(recv.bidctl.local_bid(), HLP_CHAN).receive(peer_bid, &hdr);
        self.bid_log.push((from, to, verdict));
        match verdict {
            BidRxVerdict::Deliver => {}
            BidRxVerdict::DropAndAnswerEmpty(empty) => {
                // Header only, back through BLAST to the sender's BID.
                let _ = self.receive_bid(to, from, &empty.to_bytes());
            }
            BidRxVerdict::DropAndHint(hint) => {
                self.call(to, |e, now, out| e.peer_bid(from, hint, now, out))
                    .unwrap();
            }
            BidRxVerdict::DropInactive => {
                // The passive BID session registers with BIDCTL for the peer.
                self.call(to, |e, now, out| e.register(from, Registrant(99), now, out))
                    .unwrap();
            }
        }
        verdict
    }

    /// Host `p` restarts with BootId `bid` (a new engine, no state).
    fn reboot(&mut self, p: Peer, bid: BootId) {
        let now = self.now;
        let h = self.host(p);
        *h = Host::new(
            p,
            bid,
            std::time::Duration::from_secs(u64::from(bid.0)),
            now,
        );
    }
}

/// D1: the first use of a peer sends the §11.1 QUERY; the cold peer
/// answers with a RESPONSE carrying its own QUERY; the RESPONSE with the
/// tag gives FIRST_CONTACT and both sides reach NORMAL.
#[test]
fn d1_cold_start_query_response_first_contact() {
    let mut w = World::new();
    w.call(a(), |e, now, out| e.register(b(), R1, now, out))
        .unwrap();
    let log = w.log.clone();
    assert_eq!(log.len(), 3, "{log:#?}");
    assert_eq!((log[0].from, log[0].to), (a(), b()));
    assert_eq!(log[0].bytes, QUERY_VECTOR);
    // B is cold too: RESPONSE to A's tag, and its own QUERY riding along.
    let r = log[1].header();
    assert_eq!(log[1].from, b());
    assert_eq!(r.flags, flags::QUERY | flags::RESPONSE);
    assert_eq!(
        (r.src_bid, r.dst_bid, r.rpl_tag),
        (B_BID, BootId::UNKNOWN, TAG_0ABC)
    );
    let b_tag = query_tag(std::time::Duration::from_secs(0x2F5E_2000));
    assert_eq!(r.req_tag, b_tag);
    // A answers B's query, now knowing B.
    let r2 = log[2].header();
    assert_eq!(log[2].from, a());
    assert_eq!(
        r2,
        BidctlHeader {
            flags: flags::RESPONSE,
            src_bid: A_BID,
            dst_bid: B_BID,
            req_tag: 0,
            rpl_tag: b_tag
        }
    );
    let host_a = w.host(a());
    assert_eq!(
        host_a.notes,
        vec![(
            Instant::ZERO,
            R1,
            BootEvent::FirstContact {
                peer: b(),
                bid: B_BID
            }
        )]
    );
    let va = host_a.bidctl.peer_view(b()).unwrap();
    assert_eq!(
        va,
        PeerView {
            bid: B_BID,
            epoch: 0,
            active: true,
            state: BidctlState::Normal
        }
    );
    let vb = w.host(b()).bidctl.peer_view(a()).unwrap();
    assert_eq!((vb.bid, vb.state), (A_BID, BidctlState::Normal));
    // Nothing left to repeat: the next deadline is the global tick.
    assert_eq!(w.host(a()).bidctl.poll_at(), Some(at(60)));
    assert!(w.host(a()).drops.is_empty() && w.host(b()).drops.is_empty());
}

/// D1 with BID: an inactive BID session can neither send nor receive
/// until FIRST_CONTACT; afterwards messages pass both ways.
#[test]
fn d1_bid_sessions_activate_on_first_contact() {
    let mut w = World::new();
    w.lose = Box::new(|_| true);
    w.call(a(), |e, now, out| e.register(b(), R1, now, out))
        .unwrap();
    assert_eq!(w.send_bid(a(), b()), Err(BidDropReason::InactiveSend));
    w.lose = Box::new(|_| false);
    w.run_until(at(5));
    assert_eq!(w.host(a()).notes.len(), 1);
    assert_eq!(w.send_bid(a(), b()), Ok(BidRxVerdict::Deliver));
    assert_eq!(w.send_bid(b(), a()), Ok(BidRxVerdict::Deliver));
}

/// The §11.1 RESPONSE is what a peer that knows the querier answers: A's
/// BIDCTL forgot B (a new engine with the same BootId), B did not.
#[test]
fn spec_vectors_query_and_response_from_the_engines() {
    let mut w = World::established();
    w.hosts[0] = Host::new(a(), A_BID, wall_tag_0abc(), w.now);
    w.call(a(), |e, now, out| e.register(b(), R1, now, out))
        .unwrap();
    assert_eq!(w.log.len(), 2, "{:#?}", w.log);
    assert_eq!(w.log[0].bytes, QUERY_VECTOR);
    assert_eq!(w.log[1].bytes, RESPONSE_VECTOR);
    let now = w.now;
    assert_eq!(
        w.host(a()).notes,
        vec![(
            now,
            R1,
            BootEvent::FirstContact {
                peer: b(),
                bid: B_BID
            }
        )]
    );
    let rebooted = Host::new(c(), B_REBOOTED, wall_tag_0abc(), Instant::ZERO);
    assert_eq!(rebooted.bidctl.boot_broadcast().to_bytes(), BCAST_VECTOR);
}

/// D2: a lost opening QUERY is repeated with the same tag after 5, 10,
/// 20, 40, 60, 60, … s, forever.
#[test]
fn d2_lost_query_repeated_same_tag_5_10_20_40_60_60() {
    let mut w = World::new();
    w.lose = Box::new(|_| true);
    w.call(a(), |e, now, out| e.register(b(), R1, now, out))
        .unwrap();
    w.run_until(at(500));
    let sent = w.sent_by(a());
    let times: Vec<u64> = sent
        .iter()
        .map(|s| s.at.as_nanos() / 1_000_000_000)
        .collect();
    assert_eq!(
        times,
        vec![0, 5, 15, 35, 75, 135, 195, 255, 315, 375, 435, 495]
    );
    assert!(sent.iter().all(|s| s.bytes == QUERY_VECTOR));
    assert_eq!(
        w.host(a()).bidctl.peer_view(b()).unwrap().state,
        BidctlState::Open
    );
    // Once the link heals, the next repeat completes the handshake.
    w.lose = Box::new(|_| false);
    w.run_until(at(555));
    assert_eq!(w.host(a()).bidctl.peer_view(b()).unwrap().bid, B_BID);
    assert_eq!(w.host(a()).notes.len(), 1);
}

/// D2 for a query about a known peer: a new tag, then the same tag after
/// 5, 10, 20, 40, 60, 60 s (the series restarts at 5 s, spec §12 item 11).
#[test]
fn d2_lost_query_in_query_state_backs_off_the_same_way() {
    let mut w = World::established();
    w.run_until(at(1000));
    w.log.clear();
    w.lose = Box::new(|_| true);
    let t0 = w.now;
    let bid = w.call(a(), |e, now, out| {
        e.peer_bid(b(), BootId(0x1234_5678), now, out)
    });
    assert_eq!(
        bid,
        Ok(B_BID),
        "the known BootId until a handshake says otherwise"
    );
    w.run_until(t0 + Duration::from_secs(300));
    let sent: Vec<Sent> = w
        .sent_by(a())
        .into_iter()
        .filter(|s| s.header().is_query())
        .collect();
    let offsets: Vec<u64> = sent
        .iter()
        .map(|s| (s.at - t0).as_nanos() / 1_000_000_000)
        .collect();
    assert_eq!(offsets, vec![0, 5, 15, 35, 75, 135, 195, 255]);
    let tag = sent[0].header().req_tag;
    assert_eq!(
        tag,
        query_tag(wall_tag_0abc() + std::time::Duration::from_secs(1000))
    );
    assert!(sent
        .iter()
        .all(|s| s.header().req_tag == tag && s.header().dst_bid == B_BID));
}

/// D3: a packet with a foreign srcBid is not believed: QUERY; the
/// RESPONSE with the old BootId returns to NORMAL without PEER_REBOOTED.
#[test]
fn d3_stray_foreign_src_bid_queries_then_no_peer_rebooted() {
    let mut w = World::established();
    let stray = BidctlHeader {
        flags: 0,
        src_bid: BootId(0xDEAD_0000),
        dst_bid: A_BID,
        req_tag: 0,
        rpl_tag: 0,
    };
    w.inject(b(), a(), &stray.to_bytes());
    assert_eq!(w.host(a()).drops, vec![BidctlDropReason::UnknownSrcBid]);
    let q = w.log[0].header();
    assert_eq!((q.flags, q.dst_bid), (flags::QUERY, B_BID));
    let r = w.log[1].header();
    assert_eq!(
        (r.flags, r.src_bid, r.rpl_tag),
        (flags::RESPONSE, B_BID, q.req_tag)
    );
    assert_eq!(w.log.len(), 2);
    let v = w.host(a()).bidctl.peer_view(b()).unwrap();
    assert_eq!(
        v,
        PeerView {
            bid: B_BID,
            epoch: 0,
            active: true,
            state: BidctlState::Normal
        }
    );
    assert!(w.host(a()).notes.is_empty());
    // Nothing more to repeat.
    w.run_until(at(59));
    assert_eq!(w.log.len(), 2);
}

/// D3 through BID: the foreign srcBid in a BID message becomes BIDCTL's
/// hint; same outcome.
#[test]
fn d3_bid_hint_from_foreign_src_bid_is_a_false_alarm() {
    let mut w = World::established();
    let stray = BidHeader {
        src_bid: BootId(0xDEAD_0000),
        dst_bid: A_BID,
        hlp_num: HLP_CHAN,
    };
    let v = w.receive_bid(b(), a(), &stray.to_bytes());
    assert_eq!(v, BidRxVerdict::DropAndHint(BootId(0xDEAD_0000)));
    assert_eq!(w.log.len(), 2);
    assert_eq!(
        w.host(a()).bidctl.peer_view(b()).unwrap().state,
        BidctlState::Normal
    );
    assert!(w.host(a()).notes.is_empty());
    assert_eq!(w.send_bid(b(), a()), Ok(BidRxVerdict::Deliver));
}

/// D4: a silent registered peer gets a keepalive every 5 ticks; an
/// unregistered state is forgotten after 10 silent ticks.
#[test]
fn d4_keepalive_after_5_ticks_and_unregistered_removed_after_10() {
    let mut w = World::established();
    // B never registered for A; B is silent, A's keepalives are lost.
    w.lose = Box::new(|s| s.from == a());
    w.run_until(at(599));
    assert!(w.host(b()).bidctl.peer_view(a()).is_some());
    w.run_until(at(600));
    assert_eq!(
        w.host(b()).bidctl.peer_view(a()),
        None,
        "forgotten at tick 10"
    );
    assert!(w.host(b()).bidctl.is_empty());
    w.run_until(at(1000));
    let sent = w.sent_by(a());
    let times: Vec<u64> = sent
        .iter()
        .map(|s| s.at.as_nanos() / 1_000_000_000)
        .collect();
    assert_eq!(times, vec![300, 600, 900]);
    let keepalive = BidctlHeader {
        flags: 0,
        src_bid: A_BID,
        dst_bid: B_BID,
        req_tag: 0,
        rpl_tag: 0,
    };
    assert!(sent.iter().all(|s| s.bytes == keepalive.to_bytes()));
    assert!(w.sent_by(b()).is_empty());
    // A keeps its registered state however long B is silent.
    w.run_until(at(100_000));
    assert_eq!(w.host(a()).bidctl.peer_view(b()).unwrap().bid, B_BID);
}

/// D4: traffic from the peer resets the silence count, so a peer that
/// answers keepalives is never forgotten and keepalives stay 5 ticks apart.
#[test]
fn d4_received_packets_reset_the_tick_count() {
    let mut w = World::established();
    w.run_until(at(3600));
    // A's keepalive every 5 ticks; B holds A's state since each keepalive
    // resets B's count before it reaches 10.
    let times: Vec<u64> = w
        .sent_by(a())
        .iter()
        .map(|s| s.at.as_nanos() / 1_000_000_000)
        .collect();
    assert_eq!(times, (1..=12).map(|k| 300 * k).collect::<Vec<_>>());
    assert!(w.host(b()).bidctl.peer_view(a()).is_some());
    assert!(w.sent_by(b()).is_empty(), "keepalives need no answer");
}

/// D5: a boot broadcast from an unknown host is ignored.
#[test]
fn d5_bcast_from_unknown_host_ignored() {
    let mut w = World::established();
    w.inject(c(), a(), &BCAST_VECTOR);
    assert_eq!(w.host(a()).drops, vec![BidctlDropReason::BcastFromUnknown]);
    assert_eq!(w.host(a()).bidctl.peer_view(c()), None);
    w.run_until(at(10));
    assert!(w.log.is_empty());
}

/// D5: a boot broadcast from a known host with a new BootId → after the
/// random delay (30 ms – 3 s) QUERY → RESPONSE → PEER_REBOOTED, once.
#[test]
fn d5_bcast_from_known_host_with_new_bootid_after_delay_reports_reboot() {
    let mut w = World::established();
    w.run_until(at(10));
    w.reboot(b(), B_REBOOTED);
    let bcast = w.host(b()).bidctl.boot_broadcast();
    w.inject(b(), a(), &bcast.to_bytes());
    assert!(w.log.is_empty(), "nothing before the delay");
    let due = w.host(a()).bidctl.poll_at().unwrap();
    let delay = due - at(10);
    assert!(delay >= Duration::from_millis(30) && delay <= Duration::from_millis(3000));
    assert_eq!(delay.as_nanos() % Duration::from_millis(30).as_nanos(), 0);
    w.run_until(at(20));
    assert_eq!(w.log[0].at, due);
    let q = w.log[0].header();
    assert_eq!(
        (q.flags, q.src_bid, q.dst_bid),
        (flags::QUERY, A_BID, B_BID)
    );
    let host_a = w.host(a());
    assert_eq!(
        host_a.notes,
        vec![(
            due,
            R1,
            BootEvent::PeerRebooted {
                peer: b(),
                new_bid: B_REBOOTED
            }
        )]
    );
    let v = host_a.bidctl.peer_view(b()).unwrap();
    assert_eq!(
        (v.bid, v.epoch, v.state),
        (B_REBOOTED, 1, BidctlState::Normal)
    );
    assert_eq!(w.host(b()).bidctl.peer_view(a()).unwrap().bid, A_BID);
}

/// D5: a boot broadcast with the BootId already confirmed is ignored
/// entirely after its delay; in OPEN it repeats the query, same tag.
#[test]
fn d5_bcast_with_known_bootid_ignored_and_in_open_repeats_query() {
    let mut w = World::established();
    let bcast = w.host(b()).bidctl.boot_broadcast();
    w.inject(b(), a(), &bcast.to_bytes());
    w.run_until(at(5));
    assert!(w.log.is_empty());
    assert!(w.host(a()).drops.is_empty());

    let mut w = World::new();
    w.lose = Box::new(|_| true);
    w.call(a(), |e, now, out| e.register(b(), R1, now, out))
        .unwrap();
    w.run_until(at(1));
    w.inject(
        b(),
        a(),
        &BidctlHeader {
            flags: flags::BCAST,
            src_bid: B_BID,
            dst_bid: BootId(0),
            req_tag: 0,
            rpl_tag: 0,
        }
        .to_bytes(),
    );
    w.run_until(at(4));
    let sent = w.sent_by(a());
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|s| s.bytes == QUERY_VECTOR));
}

/// D6: a BIDCTL packet for an earlier incarnation (dstBid ≠ ours) is
/// answered with a null message; the BID filter answers an empty BID
/// message.
#[test]
fn d6_stale_dst_bid_answered_with_null_message() {
    let mut w = World::established();
    let stale = BidctlHeader {
        flags: 0,
        src_bid: A_BID,
        dst_bid: BootId(0x1111_0000),
        req_tag: 0,
        rpl_tag: 0,
    };
    w.inject(a(), b(), &stale.to_bytes());
    assert_eq!(w.host(b()).drops, vec![BidctlDropReason::StaleDstBid]);
    assert_eq!(w.log.len(), 1);
    assert_eq!(
        w.log[0].header(),
        BidctlHeader {
            flags: 0,
            src_bid: B_BID,
            dst_bid: A_BID,
            req_tag: 0,
            rpl_tag: 0
        }
    );
    assert!(
        w.host(a()).drops.is_empty(),
        "the null message is in order at A"
    );

    let stale_bid = BidHeader {
        src_bid: A_BID,
        dst_bid: BootId(0x1111_0000),
        hlp_num: HLP_CHAN,
    };
    let v = w.receive_bid(a(), b(), &stale_bid.to_bytes());
    assert_eq!(
        v,
        BidRxVerdict::DropAndAnswerEmpty(BidHeader {
            src_bid: B_BID,
            dst_bid: A_BID,
            hlp_num: HLP_CHAN
        })
    );
}

/// A peer that restarts with a new BootId (no broadcast): the old
/// incarnation's traffic is refused with an empty BID answer, the
/// handshake confirms the new BootId, exactly one PEER_REBOOTED, one
/// epoch bump, and traffic flows again.
#[test]
fn reboot_sequence_yields_exactly_one_peer_rebooted_and_one_epoch_bump() {
    let mut w = World::established();
    assert_eq!(w.send_bid(a(), b()), Ok(BidRxVerdict::Deliver));
    w.run_until(at(100));
    w.reboot(b(), B_REBOOTED);
    let epoch0 = w.host(a()).bidctl.peer_view(b()).unwrap().epoch;
    // A's message for the old B: the new B's BID session is inactive and
    // registers, which starts B's handshake; A sees the new srcBid.
    assert_eq!(w.send_bid(a(), b()), Ok(BidRxVerdict::DropInactive));
    assert_eq!(w.host(a()).reboots(), 1);
    assert_eq!(w.host(a()).bidctl.peer_view(b()).unwrap().epoch, epoch0 + 1);
    assert_eq!(w.host(a()).bidctl.peer_view(b()).unwrap().bid, B_REBOOTED);
    assert_eq!(w.send_bid(a(), b()), Ok(BidRxVerdict::Deliver));
    assert_eq!(w.send_bid(b(), a()), Ok(BidRxVerdict::Deliver));
    // More traffic, keepalives, an hour of time: still one report.
    for _ in 0..10 {
        assert_eq!(w.send_bid(a(), b()), Ok(BidRxVerdict::Deliver));
    }
    w.run_until(at(3700));
    assert_eq!(w.host(a()).reboots(), 1);
    assert_eq!(w.host(a()).bidctl.peer_view(b()).unwrap().epoch, epoch0 + 1);
}

/// D6 after a reboot: a message of the old exchange reaches the new
/// incarnation, which answers with an empty BID message; at the sender
/// that answer's new srcBid is a hint for BIDCTL, whose handshake alone
/// reports the reboot (once).
#[test]
fn stale_message_after_reboot_answered_empty_and_reboot_confirmed_by_handshake() {
    let mut w = World::established();
    w.reboot(b(), B_REBOOTED);
    // The new B registers for A and learns A's BootId; its RESPONSE that
    // would confirm the new BootId to A is lost.
    w.lose = Box::new(|s| s.from == b() && s.header().flags == flags::RESPONSE);
    w.call(b(), |e, now, out| e.register(a(), R1, now, out))
        .unwrap();
    assert_eq!(w.host(b()).bidctl.peer_view(a()).unwrap().bid, A_BID);
    let v = w.host(a()).bidctl.peer_view(b()).unwrap();
    assert_eq!((v.bid, v.state), (B_BID, BidctlState::Query));
    assert_eq!(w.host(a()).reboots(), 0);
    // A's next message still names the old B.
    w.lose = Box::new(|_| false);
    assert_eq!(
        w.send_bid(a(), b()),
        Ok(BidRxVerdict::DropAndAnswerEmpty(BidHeader {
            src_bid: B_REBOOTED,
            dst_bid: A_BID,
            hlp_num: HLP_CHAN
        }))
    );
    assert_eq!(
        w.bid_log.last().unwrap(),
        &(b(), a(), BidRxVerdict::DropAndHint(B_REBOOTED))
    );
    assert_eq!(w.host(a()).reboots(), 0, "a hint is no confirmation");
    // A's query is repeated at its timeout and answered this time.
    w.run_until(w.now + Duration::from_secs(5));
    assert_eq!(w.host(a()).reboots(), 1);
    assert_eq!(w.send_bid(a(), b()), Ok(BidRxVerdict::Deliver));
    w.run_until(at(3600));
    assert_eq!(w.host(a()).reboots(), 1);
    assert_eq!(w.host(a()).bidctl.peer_view(b()).unwrap().epoch, 1);
}

/// A single corrupted packet never changes anything: every one-bit
/// corruption of a valid message that would report a reboot fails the
/// checksum.
#[test]
fn single_corrupted_packet_never_reports_reboot() {
    let mut w = World::established();
    // The RESPONSE a rebooted B would send to A's query…
    let genuine = BidctlHeader {
        flags: flags::QUERY | flags::RESPONSE,
        src_bid: B_REBOOTED,
        dst_bid: A_BID,
        req_tag: 7,
        rpl_tag: 7,
    }
    .to_bytes();
    for bit in 0..160 {
        let mut bytes = genuine;
        bytes[bit / 8] ^= 0x80 >> (bit % 8);
        w.inject(b(), a(), &bytes);
    }
    let host_a = w.host(a());
    assert_eq!(host_a.drops.len(), 160);
    assert!(host_a
        .drops
        .iter()
        .all(|r| *r == BidctlDropReason::BadChecksum));
    assert!(host_a.notes.is_empty());
    let v = host_a.bidctl.peer_view(b()).unwrap();
    assert_eq!((v.bid, v.epoch, v.state), (B_BID, 0, BidctlState::Normal));
    assert!(w.log.is_empty());
}

/// A RESPONSE with a foreign BootId but the wrong tag is no confirmation.
#[test]
fn response_with_wrong_tag_is_dropped_in_query_state() {
    let mut w = World::established();
    w.lose = Box::new(|_| true);
    w.call(a(), |e, now, out| e.peer_bid(b(), B_REBOOTED, now, out))
        .unwrap();
    let tag = w.log[0].header().req_tag;
    let forged = BidctlHeader {
        flags: flags::RESPONSE,
        src_bid: B_REBOOTED,
        dst_bid: A_BID,
        req_tag: 0,
        rpl_tag: tag.wrapping_add(1),
    };
    w.inject(b(), a(), &forged.to_bytes());
    assert_eq!(w.host(a()).drops, vec![BidctlDropReason::WrongTag]);
    assert!(w.host(a()).notes.is_empty());
    assert_eq!(
        w.host(a()).bidctl.peer_view(b()).unwrap().state,
        BidctlState::Query
    );
    // A keepalive while waiting is not the answer either.
    let keepalive = BidctlHeader {
        flags: 0,
        src_bid: B_BID,
        dst_bid: A_BID,
        req_tag: 0,
        rpl_tag: 0,
    };
    w.inject(b(), a(), &keepalive.to_bytes());
    assert_eq!(w.host(a()).drops[1], BidctlDropReason::AwaitingResponse);
}

/// A hint equal to the known BootId, or a lookup of ourselves, starts
/// nothing.
#[test]
fn lookups_without_news_send_nothing() {
    let mut w = World::established();
    assert_eq!(
        w.call(a(), |e, now, out| e.peer_bid(b(), B_BID, now, out)),
        Ok(B_BID)
    );
    assert_eq!(
        w.call(a(), |e, now, out| e.peer_bid(
            b(),
            BootId::UNKNOWN,
            now,
            out
        )),
        Ok(B_BID)
    );
    assert_eq!(
        w.call(a(), |e, now, out| e.peer_bid(a(), BootId(5), now, out)),
        Ok(A_BID)
    );
    assert_eq!(
        w.call(a(), |e, now, out| e.register(a(), R1, now, out)),
        Ok(())
    );
    assert!(w.log.is_empty());
    let v = w.host(a()).bidctl.peer_view(a()).unwrap();
    assert_eq!((v.bid, v.active), (A_BID, true));
    let header = BidctlHeader {
        flags: 0,
        src_bid: A_BID,
        dst_bid: A_BID,
        req_tag: 0,
        rpl_tag: 0,
    };
    w.inject(a(), a(), &header.to_bytes());
    assert_eq!(w.host(a()).drops, vec![BidctlDropReason::FromLocalHost]);
}

#[test]
fn registration_counts_and_errors() {
    let cfg = BidctlConfig {
        max_peers: 2,
        max_registrants_per_peer: 2,
        ..BidctlConfig::default()
    };
    let mut e = Bidctl::new(cfg, A_BID, wall_tag_0abc(), Instant::ZERO);
    let mut out = Vec::new();
    let now = Instant::ZERO;
    e.register(b(), Registrant(1), now, &mut out).unwrap();
    e.register(b(), Registrant(1), now, &mut out).unwrap();
    e.register(b(), Registrant(2), now, &mut out).unwrap();
    assert_eq!(
        e.register(b(), Registrant(3), now, &mut out),
        Err(BidctlError::TooManyRegistrants { peer: b(), max: 2 })
    );
    assert_eq!(out.len(), 1, "one QUERY for the first use only");
    let mut regs: Vec<_> = e.registrants(b()).collect();
    regs.sort();
    assert_eq!(regs, vec![Registrant(1), Registrant(2)]);
    e.deregister(b(), Registrant(1)).unwrap();
    e.deregister(b(), Registrant(1)).unwrap();
    assert_eq!(
        e.deregister(b(), Registrant(1)),
        Err(BidctlError::NotRegistered {
            peer: b(),
            registrant: Registrant(1)
        })
    );
    assert_eq!(e.registrants(b()).collect::<Vec<_>>(), vec![Registrant(2)]);
    let err: std::io::Error = BidctlError::TableFull { peer: b(), max: 2 }.into();
    assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
}

/// A full table refuses a new peer with a typed error when every peer has
/// registrants, and otherwise forgets an unregistered one.
#[test]
fn full_table_evicts_unregistered_or_refuses() {
    let cfg = BidctlConfig {
        max_peers: 2,
        ..BidctlConfig::default()
    };
    let mut e = Bidctl::new(cfg, A_BID, wall_tag_0abc(), Instant::ZERO);
    let mut out = Vec::new();
    let now = Instant::ZERO;
    e.register(b(), R1, now, &mut out).unwrap();
    assert_eq!(
        e.peer_bid(c(), BootId::UNKNOWN, now, &mut out),
        Ok(BootId::UNKNOWN)
    );
    let d = Peer::from(Ipv4Addr::new(10, 0, 0, 4));
    // c is unregistered: it makes room for d.
    e.register(d, R1, now, &mut out).unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!(e.peer_view(c()), None);
    let f = Peer::from(Ipv4Addr::new(10, 0, 0, 5));
    assert_eq!(
        e.register(f, R1, now, &mut out),
        Err(BidctlError::TableFull { peer: f, max: 2 })
    );
    let keepalive = BidctlHeader {
        flags: 0,
        src_bid: BootId(9),
        dst_bid: A_BID,
        req_tag: 0,
        rpl_tag: 0,
    };
    assert_eq!(
        e.on_packet(now, f, &keepalive, &mut out),
        Err(BidctlDropReason::TableFull)
    );
    assert_eq!(e.len(), 2);
}

/// A long sleep runs a bounded number of catch-up ticks and schedules the
/// next tick from the present.
#[test]
fn long_sleep_catches_up_without_running_every_tick() {
    let mut w = World::established();
    w.host(a()).bidctl.deregister(b(), R1).unwrap();
    // A year later in one step: both forget each other, no storm.
    let year = at(365 * 24 * 3600);
    let mut out = Vec::new();
    w.host(a()).bidctl.on_time(year, &mut out);
    assert!(w.host(a()).bidctl.is_empty());
    assert_eq!(w.host(a()).bidctl.poll_at(), Some(year + TIMER_INTERVAL));
}

#[derive(Clone, Debug)]
enum Op {
    Packet {
        from: u8,
        flags: u16,
        src: u32,
        dst: u32,
        req: u32,
        rpl: u32,
    },
    Raw {
        from: u8,
        bytes: Vec<u8>,
    },
    Register {
        peer: u8,
        reg: u8,
    },
    Deregister {
        peer: u8,
        reg: u8,
    },
    Lookup {
        peer: u8,
        hint: u32,
    },
    Advance {
        ms: u32,
    },
}

fn op() -> impl Strategy<Value = Op> {
    // Small BootId/tag spaces make matches (and so transitions) likely.
    let small = || prop_oneof![0u32..4, any::<u32>()];
    prop_oneof![
        (any::<u8>(), 0u16..8, small(), small(), small(), small()).prop_map(
            |(from, flags, src, dst, req, rpl)| Op::Packet {
                from,
                flags,
                src,
                dst,
                req,
                rpl
            }
        ),
        (any::<u8>(), proptest::collection::vec(any::<u8>(), 0..24))
            .prop_map(|(from, bytes)| Op::Raw { from, bytes }),
        (any::<u8>(), 0u8..4).prop_map(|(peer, reg)| Op::Register { peer, reg }),
        (any::<u8>(), 0u8..4).prop_map(|(peer, reg)| Op::Deregister { peer, reg }),
        (any::<u8>(), small()).prop_map(|(peer, hint)| Op::Lookup { peer, hint }),
        (0u32..200_000).prop_map(|ms| Op::Advance { ms }),
    ]
}

proptest! {
    /// Arbitrary packets, calls and time never panic, never grow the table
    /// past its bound, and poll_at never names a past deadline.
    #[test]
    fn arbitrary_input_never_panics_and_table_stays_bounded(ops in proptest::collection::vec(op(), 1..200)) {
        const MAX: usize = 8;
        let cfg = BidctlConfig { max_peers: MAX, max_registrants_per_peer: 2, ..BidctlConfig::default() };
        let mut e = Bidctl::new(cfg, BootId(1), wall_tag_0abc(), Instant::ZERO);
        let mut now = Instant::ZERO;
        let mut out = Vec::new();
        let peer = |n: u8| Peer::from(Ipv4Addr::new(10, 1, 0, n % 16));
        for op in ops {
            out.clear();
            match op {
                Op::Packet { from, flags, src, dst, req, rpl } => {
                    let h = BidctlHeader { flags, src_bid: BootId(src), dst_bid: BootId(dst), req_tag: req, rpl_tag: rpl };
                    let bytes = h.to_bytes();
                    let (parsed, _) = BidctlHeader::parse(&bytes).unwrap();
                    let _ = e.on_packet(now, peer(from), &parsed, &mut out);
                }
                Op::Raw { from, bytes } => {
                    if let Ok((h, _)) = BidctlHeader::parse(&bytes) {
                        let _ = e.on_packet(now, peer(from), &h, &mut out);
                    }
                }
                Op::Register { peer: p, reg } => {
                    let _ = e.register(peer(p), Registrant(reg.into()), now, &mut out);
                }
                Op::Deregister { peer: p, reg } => {
                    let _ = e.deregister(peer(p), Registrant(reg.into()));
                }
                Op::Lookup { peer: p, hint } => {
                    let _ = e.peer_bid(peer(p), BootId(hint), now, &mut out);
                }
                Op::Advance { ms } => {
                    now = now + Duration::from_millis(ms.into());
                    while let Some(t) = e.poll_at().filter(|&t| t <= now) {
                        e.on_time(t, &mut out);
                        prop_assert!(e.poll_at().unwrap() > t, "on_time left a deadline due");
                    }
                }
            }
            prop_assert!(e.len() <= MAX);
            for a in &out {
                if let BidctlAction::Send { header, .. } = a {
                    prop_assert_eq!(header.src_bid, BootId(1));
                }
            }
        }
    }
}
