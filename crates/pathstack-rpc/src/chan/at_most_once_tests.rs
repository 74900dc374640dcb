//! At-most-once, as a property (spec §6.1, §6.7): a VCHAN pool of CHAN
//! client channels and a CHAN server joined by a simulated link that
//! loses, duplicates and reorders packets, with more concurrent calls
//! than channels, slow procedures, BLAST-style receipts for large
//! messages, and optionally a server or client reboot mid-run (BID's
//! filtering of the old incarnation modelled by epochs on each packet,
//! BIDCTL's report by `peer_rebooted` on the surviving side).
//!
//! Checked: every call ends exactly once, with the right reply or a
//! typed failure; no call and no (incarnations, channel, seq) is ever
//! executed twice; a successful call was executed exactly once.

use super::test_transport::{cpeer, message, sent_packet, speer, Receipts};
use super::*;
use crate::vchan::{Acquired, VchanConfig, VchanPool, WaitTicket};
use crate::wire::chan::ChanHeader;
use pathstack_core::time::{Duration, Instant};
use proptest::prelude::*;
use std::collections::HashMap;

const PROT: u32 = 20;
/// Every call's deadline, from when it is issued.
const CALL_DEADLINE: Duration = Duration::from_secs(180);

/// splitmix64: the simulation's own randomness, seeded by proptest.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn percent(&mut self, p: u32) -> bool {
        self.below(100) < u64::from(p)
    }
}

#[derive(Clone, Copy, Debug)]
enum Reboot {
    None,
    Server(u64),
    Client(u64),
}

#[derive(Clone, Debug)]
struct Params {
    seed: u64,
    calls: usize,
    pool: usize,
    loss: u32,
    dup: u32,
    max_delay_ms: u64,
    max_exec_ms: u64,
    max_len: usize,
    blast_yes: u32,
    resend_on_dup: bool,
    reboot: Reboot,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Fail {
    Chan(CallError),
    /// The calling client itself rebooted: its callers are gone.
    ClientRebooted,
}

struct Packet {
    at: Instant,
    order: u64,
    to_server: bool,
    bytes: Vec<u8>,
    /// Incarnations of client and server when sent (BID's BootIds).
    epochs: (u32, u32),
}

struct Sim {
    p: Params,
    rng: Rng,
    now: Instant,
    client: ClientTable,
    pool: VchanPool,
    server: ServerTable,
    epochs: (u32, u32),
    flight: Vec<Packet>,
    order: u64,
    requests: Vec<Vec<u8>>,
    issue_at: Vec<Instant>,
    issued: usize,
    outcome: Vec<Option<Result<(), Fail>>>,
    on_channel: HashMap<ChannelKey, usize>,
    waiting: HashMap<WaitTicket, usize>,
    executions: Vec<u32>,
    by_seq: HashMap<((u32, u32), ChannelKey, u32), u32>,
    running: Vec<(Instant, u32, ServerCall, Vec<u8>)>,
    violations: Vec<String>,
    reboot_done: bool,
    receipts: Receipts,
}

fn expected_reply(req: &[u8]) -> Vec<u8> {
    let mut r: Vec<u8> = req.iter().rev().copied().collect();
    r.push(b'!');
    r
}

impl Sim {
    fn new(p: Params) -> Sim {
        let mut rng = Rng(p.seed);
        let mut client = ClientTable::new(ClientConfig::default());
        let pool = Self::new_pool(&mut client, p.pool);
        let server = Self::new_server(p.resend_on_dup);
        let mut requests = Vec::new();
        let mut issue_at = Vec::new();
        for id in 0..p.calls {
            let len = rng.below(p.max_len as u64 + 1) as usize;
            let mut req = (id as u32).to_be_bytes().to_vec();
            req.extend((0..len).map(|_| rng.next() as u8));
            requests.push(req);
            issue_at.push(Instant::from_millis(rng.below(2000)));
        }
        issue_at.sort();
        let calls = p.calls;
        Sim {
            p,
            rng,
            now: Instant::ZERO,
            client,
            pool,
            server,
            epochs: (0, 0),
            flight: Vec::new(),
            order: 0,
            requests,
            issue_at,
            issued: 0,
            outcome: vec![None; calls],
            on_channel: HashMap::new(),
            waiting: HashMap::new(),
            executions: vec![0; calls],
            by_seq: HashMap::new(),
            running: Vec::new(),
            violations: Vec::new(),
            reboot_done: false,
            receipts: Receipts::after(0),
        }
    }

    fn new_pool(client: &mut ClientTable, n: usize) -> VchanPool {
        let cfg = VchanConfig {
            concurrency: n,
            ..VchanConfig::default()
        };
        VchanPool::new(client, speer(), PROT, cfg).unwrap()
    }

    fn new_server(resend_on_dup: bool) -> ServerTable {
        let mut s = ServerTable::new(ServerConfig {
            resend_reply_on_duplicate: resend_on_dup,
            ..ServerConfig::default()
        });
        s.enable(PROT).unwrap();
        s
    }

    fn transmit(&mut self, to_server: bool, bytes: Vec<u8>) {
        if self.rng.percent(self.p.loss) {
            return;
        }
        let copies = if self.rng.percent(self.p.dup) { 2 } else { 1 };
        for _ in 0..copies {
            let at = self.now + Duration::from_millis(self.rng.below(self.p.max_delay_ms + 1));
            self.order += 1;
            self.flight.push(Packet {
                at,
                order: self.order,
                to_server,
                bytes: bytes.clone(),
                epochs: self.epochs,
            });
        }
    }

    fn finish(&mut self, id: usize, r: Result<(), Fail>) {
        if let Some(prev) = &self.outcome[id] {
            self.violations
                .push(format!("call {id} ended twice: {prev:?} then {r:?}"));
        }
        self.outcome[id] = Some(r);
    }

    /// Starts call `id` on `key`, or ends it if CHAN refuses.
    fn start(&mut self, id: usize, key: ChannelKey) {
        let deadline = self.issue_at[id] + CALL_DEADLINE;
        match self
            .client
            .call(self.now, key, &self.requests[id], Some(deadline))
        {
            Ok(h) => {
                let packet = message(
                    &mut self.client,
                    &mut self.receipts,
                    key,
                    &h,
                    &self.requests[id],
                );
                self.on_channel.insert(key, id);
                self.transmit(true, packet);
            }
            Err(e) => {
                self.finish(id, Err(Fail::Chan(e)));
                self.release(key);
            }
        }
    }

    fn release(&mut self, key: ChannelKey) {
        match self.pool.release(key) {
            Ok(Some((ticket, key))) => {
                let id = self.waiting.remove(&ticket).expect("unknown ticket");
                self.start(id, key);
            }
            Ok(None) => {}
            Err(e) => self.violations.push(format!("release {key:?}: {e}")),
        }
    }

    fn acquire(&mut self, id: usize) {
        match self.pool.acquire() {
            Ok(Acquired::Channel(key)) => self.start(id, key),
            Ok(Acquired::Queued(t)) => {
                self.waiting.insert(t, id);
            }
            Err(e) => self.violations.push(format!("acquire: {e}")),
        }
    }

    /// The server (`on_server`) or the client carries out `Send` action
    /// `a`: its packet goes on the wire to the other.
    fn send_action(&mut self, on_server: bool, a: ChanAction) {
        let packet = if on_server {
            sent_packet(&mut self.server, &mut self.receipts, a)
        } else {
            sent_packet(&mut self.client, &mut self.receipts, a)
        };
        self.transmit(!on_server, packet);
    }

    fn client_actions(&mut self, out: Vec<ChanAction>, payload: &[u8], release: bool) {
        for a in out {
            match a {
                a @ ChanAction::Send { .. } => self.send_action(false, a),
                ChanAction::Reply { key, len } => {
                    let Some(id) = self.on_channel.remove(&key) else {
                        self.violations.push(format!("reply on idle {key:?}"));
                        continue;
                    };
                    if payload[..len] != expected_reply(&self.requests[id])[..] {
                        self.violations.push(format!("call {id}: wrong reply"));
                    }
                    self.finish(id, Ok(()));
                    self.release(key);
                }
                ChanAction::CallFailed { key, error } => {
                    let Some(id) = self.on_channel.remove(&key) else {
                        self.violations.push(format!("failure on idle {key:?}"));
                        continue;
                    };
                    self.finish(id, Err(Fail::Chan(error)));
                    if release {
                        self.release(key);
                    }
                }
                ChanAction::FreeResources { .. } => {}
                ChanAction::Execute { .. } => self.violations.push("client executed".into()),
            }
        }
    }

    fn server_actions(&mut self, out: Vec<ChanAction>, payload: &[u8]) {
        for a in out {
            match a {
                a @ ChanAction::Send { .. } => self.send_action(true, a),
                ChanAction::Execute { call, len } => {
                    let req = &payload[..len];
                    let id = u32::from_be_bytes([req[0], req[1], req[2], req[3]]) as usize;
                    self.executions[id] += 1;
                    *self
                        .by_seq
                        .entry((self.epochs, call.key, call.seq))
                        .or_insert(0) += 1;
                    let done =
                        self.now + Duration::from_millis(self.rng.below(self.p.max_exec_ms + 1));
                    self.running
                        .push((done, self.epochs.1, call, expected_reply(req)));
                }
                ChanAction::FreeResources { .. } => {}
                other => self.violations.push(format!("server action {other:?}")),
            }
        }
    }

    fn deliver(&mut self, pkt: Packet) {
        if pkt.epochs != self.epochs {
            return; // BID: a stale incarnation's packet
        }
        let Ok((h, payload)) = ChanHeader::parse(&pkt.bytes) else {
            self.violations.push("unparsable packet".into());
            return;
        };
        let mut out = Vec::new();
        let yes = self.p.blast_yes;
        let rng = &mut self.rng;
        let mut q = |_t: u32| rng.percent(yes);
        if pkt.to_server {
            let _ = self
                .server
                .on_packet(cpeer(), &h, payload, Some(&mut q), &mut out);
            self.server_actions(out, payload);
        } else {
            let _ = self
                .client
                .on_packet(self.now, speer(), &h, payload, Some(&mut q), &mut out);
            self.client_actions(out, payload, true);
        }
    }

    fn reboot_server(&mut self) {
        self.server = Self::new_server(self.p.resend_on_dup);
        self.epochs.1 += 1;
        self.running.clear();
        let mut out = Vec::new();
        self.client.peer_rebooted(speer(), &mut out);
        // Failed calls' channels are disabled: not given back to the pool.
        self.client_actions(out, &[], false);
        // VCHAN does not replace disabled channels (§12 item 14): the
        // stage builds a new pool and moves the waiting calls over, in
        // their order.
        let mut queued: Vec<(WaitTicket, usize)> = self.waiting.drain().collect();
        queued.sort();
        let old: Vec<ChannelKey> = self.pool.channels().collect();
        for k in old {
            if let Err(e) = self.client.close(k) {
                self.violations.push(format!("close {k:?}: {e}"));
            }
        }
        self.pool = Self::new_pool(&mut self.client, self.p.pool);
        for (_, id) in queued {
            self.acquire(id);
        }
    }

    fn reboot_client(&mut self) {
        let lost: Vec<usize> = self
            .on_channel
            .drain()
            .map(|(_, id)| id)
            .chain(self.waiting.drain().map(|(_, id)| id))
            .collect();
        for id in lost {
            self.finish(id, Err(Fail::ClientRebooted));
        }
        self.client = ClientTable::new(ClientConfig::default());
        self.pool = Self::new_pool(&mut self.client, self.p.pool);
        self.epochs.0 += 1;
        let mut out = Vec::new();
        self.server.peer_rebooted(cpeer(), &mut out);
        self.server_actions(out, &[]);
    }

    fn run(&mut self) {
        let reboot_at = match self.p.reboot {
            Reboot::None => None,
            Reboot::Server(ms) | Reboot::Client(ms) => Some(Instant::from_millis(ms)),
        };
        for _ in 0..1_000_000 {
            if self.issued == self.requests.len() && self.outcome.iter().all(Option::is_some) {
                return;
            }
            let mut next: Vec<(Instant, u8)> = Vec::new();
            if let (Some(t), false) = (reboot_at, self.reboot_done) {
                next.push((t, 0));
            }
            if let Some(&t) = self.issue_at.get(self.issued) {
                next.push((t, 1));
            }
            if let Some(p) = self.flight.iter().min_by_key(|p| (p.at, p.order)) {
                next.push((p.at, 2));
            }
            if let Some(r) = self.running.iter().map(|r| r.0).min() {
                next.push((r, 3));
            }
            if let Some(t) = self
                .waiting
                .values()
                .map(|&id| self.issue_at[id] + CALL_DEADLINE)
                .min()
            {
                next.push((t, 4));
            }
            if let Some(t) = [self.client.poll_at(), self.server.poll_at()]
                .into_iter()
                .flatten()
                .min()
            {
                next.push((t, 5));
            }
            let Some(&(t, what)) = next.iter().min() else {
                self.violations
                    .push("stalled with calls outstanding".into());
                return;
            };
            self.now = self.now.max(t);
            match what {
                0 => {
                    self.reboot_done = true;
                    match self.p.reboot {
                        Reboot::Server(_) => self.reboot_server(),
                        Reboot::Client(_) => self.reboot_client(),
                        Reboot::None => {}
                    }
                }
                1 => {
                    let id = self.issued;
                    self.issued += 1;
                    self.acquire(id);
                }
                2 => {
                    let i = (0..self.flight.len())
                        .min_by_key(|&i| (self.flight[i].at, self.flight[i].order))
                        .unwrap();
                    let pkt = self.flight.swap_remove(i);
                    self.deliver(pkt);
                }
                3 => {
                    let i = (0..self.running.len())
                        .min_by_key(|&i| self.running[i].0)
                        .unwrap();
                    let (_, epoch, call, reply) = self.running.swap_remove(i);
                    if epoch != self.epochs.1 {
                        continue;
                    }
                    match self.server.reply(self.now, call, &reply) {
                        Ok(h) => {
                            let packet =
                                message(&mut self.server, &mut self.receipts, call.key, &h, &reply);
                            self.transmit(false, packet);
                        }
                        // Only an orphan of a client reboot may be stale.
                        Err(ReplyError::Stale) if self.epochs.0 > 0 => {}
                        Err(e) => self.violations.push(format!("reply refused: {e}")),
                    }
                }
                4 => {
                    let expired: Vec<WaitTicket> = self
                        .waiting
                        .iter()
                        .filter(|(_, &id)| self.issue_at[id] + CALL_DEADLINE <= self.now)
                        .map(|(&t, _)| t)
                        .collect();
                    for t in expired {
                        let id = self.waiting.remove(&t).unwrap();
                        self.pool.cancel(t);
                        self.finish(id, Err(Fail::Chan(CallError::TimedOut)));
                    }
                }
                _ => {
                    let mut out = Vec::new();
                    self.client.on_time(self.now, &mut out);
                    self.client_actions(out, &[], true);
                    let mut out = Vec::new();
                    self.server.on_time(self.now, &mut out);
                    self.server_actions(out, &[]);
                }
            }
        }
        self.violations.push("did not finish in 1e6 events".into());
    }
}

fn params() -> impl Strategy<Value = Params> {
    (
        any::<u64>(),
        4usize..24,
        1usize..5,
        0u32..40,
        0u32..30,
        0u64..3000,
        prop_oneof![Just(0u64), 0u64..12_000],
        prop_oneof![Just(64usize), Just(4000usize)],
        30u32..100,
        any::<bool>(),
        prop_oneof![
            2 => Just(Reboot::None),
            1 => (0u64..60_000).prop_map(Reboot::Server),
            1 => (0u64..60_000).prop_map(Reboot::Client),
        ],
    )
        .prop_map(
            |(
                seed,
                calls,
                pool,
                loss,
                dup,
                max_delay_ms,
                max_exec_ms,
                max_len,
                blast_yes,
                resend_on_dup,
                reboot,
            )| {
                Params {
                    seed,
                    calls,
                    pool,
                    loss,
                    dup,
                    max_delay_ms,
                    max_exec_ms,
                    max_len,
                    blast_yes,
                    resend_on_dup,
                    reboot,
                }
            },
        )
}

fn check(p: Params) -> Result<(), TestCaseError> {
    let mut sim = Sim::new(p.clone());
    sim.run();
    prop_assert!(sim.violations.is_empty(), "{:?}", sim.violations);
    if std::env::var_os("AMO_STATS").is_some() {
        let ok = sim.outcome.iter().filter(|o| o == &&Some(Ok(()))).count();
        eprintln!(
            "{:?}: ok {ok}/{} execs {} end {} failures {:?}",
            p.reboot,
            p.calls,
            sim.executions.iter().sum::<u32>(),
            sim.now,
            sim.outcome
                .iter()
                .filter_map(|o| o.clone().and_then(|r| r.err()))
                .collect::<Vec<_>>()
        );
    }
    for (id, outcome) in sim.outcome.iter().enumerate() {
        let outcome = outcome.as_ref();
        prop_assert!(outcome.is_some(), "call {id} never ended");
        prop_assert!(
            sim.executions[id] <= 1,
            "call {id} executed {} times",
            sim.executions[id]
        );
        match outcome.unwrap() {
            Ok(()) => prop_assert_eq!(sim.executions[id], 1, "call {} succeeded unexecuted", id),
            Err(Fail::Chan(CallError::TimedOut | CallError::PeerRebooted)) => {}
            Err(Fail::ClientRebooted) => {}
            Err(other) => prop_assert!(false, "call {id} failed with {other:?}"),
        }
    }
    for (k, n) in &sim.by_seq {
        prop_assert_eq!(*n, 1, "{:?} executed {} times", k, n);
    }
    if matches!(p.reboot, Reboot::None) && p.loss == 0 && p.dup == 0 {
        prop_assert!(sim.outcome.iter().all(|o| o == &Some(Ok(()))));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn at_most_once_over_lossy_duplicating_reordering_link(p in params()) {
        check(p)?;
    }
}

#[test]
fn at_most_once_heavy_loss_with_server_reboot() {
    for seed in 0..8 {
        check(Params {
            seed,
            calls: 20,
            pool: 3,
            loss: 35,
            dup: 25,
            max_delay_ms: 2500,
            max_exec_ms: 9000,
            max_len: 4000,
            blast_yes: 60,
            resend_on_dup: seed % 2 == 0,
            reboot: Reboot::Server(20_000),
        })
        .unwrap();
    }
}

#[test]
fn moderate_loss_every_call_succeeds() {
    // Liveness: with 10 % loss and duplication, CHAN's retransmissions
    // complete every call long before the 180 s deadline.
    for seed in 0..16 {
        let p = Params {
            seed,
            calls: 20,
            pool: 3,
            loss: 10,
            dup: 10,
            max_delay_ms: 500,
            max_exec_ms: 6000,
            max_len: 4000,
            blast_yes: 100,
            resend_on_dup: false,
            reboot: Reboot::None,
        };
        let mut sim = Sim::new(p);
        sim.run();
        assert!(sim.violations.is_empty(), "{:?}", sim.violations);
        assert!(
            sim.outcome.iter().all(|o| o == &Some(Ok(()))),
            "seed {seed}: {:?}",
            sim.outcome
        );
        assert_eq!(sim.executions, vec![1; 20]);
    }
}
