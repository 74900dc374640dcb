//! CHAN scenarios C1–C13 of spec §11.4 (and the CHAN parts of V1, M1,
//! E1, E2 of §11.5), two engines driven against each other through an
//! in-test wire on a simulated clock, with exact bytes and timings.

use super::test_transport::{cpeer, message, sent_packet, speer, Receipts};
use super::*;
use crate::mselect::{MselectClient, MselectError, MselectServer, Selection};
use crate::vchan::{Acquired, VchanConfig, VchanPool};
use crate::wire::chan::{flags, ChanDropReason, ChanHeader, HEADER_LEN};
use pathstack_core::time::{Duration, Instant};
use std::collections::VecDeque;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn secs(s: u64) -> Instant {
    Instant::ZERO + Duration::from_secs(s)
}

/// A client and a server CHAN joined by a wire the test controls.
struct Rig {
    now: Instant,
    client: ClientTable,
    server: ServerTable,
    to_server: VecDeque<Vec<u8>>,
    to_client: VecDeque<Vec<u8>>,
    /// Everything each side sent, with the time.
    client_sent: Vec<(Instant, Vec<u8>)>,
    server_sent: Vec<(Instant, Vec<u8>)>,
    replies: Vec<(ChannelKey, Vec<u8>)>,
    failures: Vec<(ChannelKey, CallError)>,
    /// Requests handed to the procedure, and those not answered yet.
    executed: Vec<(ServerCall, Vec<u8>)>,
    pending: VecDeque<ServerCall>,
    /// Answer executions at once (echo) instead of leaving them pending.
    auto_reply: bool,
    /// Reply length for auto replies (None: echo the request).
    reply_len: Option<usize>,
    freed: Vec<u32>,
    receipts: Receipts,
    /// BLAST's answer to CHAN_RETRANSMIT, and the tickets asked about.
    blast_says: bool,
    queries: Vec<u32>,
}

impl Rig {
    fn new() -> Self {
        Self::with(ClientConfig::default(), ServerConfig::default())
    }

    fn with(cc: ClientConfig, sc: ServerConfig) -> Self {
        let mut server = ServerTable::new(sc);
        server.enable(20).unwrap();
        Rig {
            now: Instant::ZERO,
            client: ClientTable::new(cc),
            server,
            to_server: VecDeque::new(),
            to_client: VecDeque::new(),
            client_sent: Vec::new(),
            server_sent: Vec::new(),
            replies: Vec::new(),
            failures: Vec::new(),
            executed: Vec::new(),
            pending: VecDeque::new(),
            auto_reply: true,
            reply_len: None,
            freed: Vec::new(),
            receipts: Receipts::after(100),
            blast_says: true,
            queries: Vec::new(),
        }
    }

    fn open(&mut self) -> ChannelKey {
        self.client.open(speer(), 20).unwrap()
    }

    fn call(&mut self, key: ChannelKey, req: &[u8]) -> ChanHeader {
        self.call_until(key, req, None)
    }

    fn call_until(&mut self, key: ChannelKey, req: &[u8], deadline: Option<Instant>) -> ChanHeader {
        let h = self.client.call(self.now, key, req, deadline).unwrap();
        let packet = message(&mut self.client, &mut self.receipts, key, &h, req);
        self.client_sends(packet);
        h
    }

    fn reply(&mut self, call: ServerCall, data: &[u8]) {
        let h = self.server.reply(self.now, call, data).unwrap();
        let packet = message(&mut self.server, &mut self.receipts, call.key, &h, data);
        self.server_sends(packet);
    }

    /// The client puts `packet` on the wire (and in its log).
    fn client_sends(&mut self, packet: Vec<u8>) {
        self.client_sent.push((self.now, packet.clone()));
        self.to_server.push_back(packet);
    }

    /// The server puts `packet` on the wire (and in its log).
    fn server_sends(&mut self, packet: Vec<u8>) {
        self.server_sent.push((self.now, packet.clone()));
        self.to_client.push_back(packet);
    }

    /// The server (`on_server`) or the client carries out `Send` action
    /// `a`.
    fn send_action(&mut self, on_server: bool, a: ChanAction) {
        if on_server {
            let packet = sent_packet(&mut self.server, &mut self.receipts, a);
            self.server_sends(packet);
        } else {
            let packet = sent_packet(&mut self.client, &mut self.receipts, a);
            self.client_sends(packet);
        }
    }

    fn client_actions(&mut self, out: Vec<ChanAction>, payload: &[u8]) {
        for a in out {
            match a {
                a @ ChanAction::Send { .. } => self.send_action(false, a),
                ChanAction::Reply { key, len } => self.replies.push((key, payload[..len].to_vec())),
                ChanAction::CallFailed { key, error } => self.failures.push((key, error)),
                ChanAction::FreeResources { ticket } => self.freed.push(ticket),
                ChanAction::Execute { .. } => panic!("client executed"),
            }
        }
    }

    fn server_actions(&mut self, out: Vec<ChanAction>, payload: &[u8]) {
        for a in out {
            match a {
                a @ ChanAction::Send { .. } => self.send_action(true, a),
                ChanAction::Execute { call, len } => {
                    let req = payload[..len].to_vec();
                    self.executed.push((call, req.clone()));
                    if self.auto_reply {
                        let rep = match self.reply_len {
                            Some(n) => vec![0x5A; n],
                            None => req,
                        };
                        self.reply(call, &rep);
                    } else {
                        self.pending.push_back(call);
                    }
                }
                ChanAction::FreeResources { ticket } => self.freed.push(ticket),
                other => panic!("server action {other:?}"),
            }
        }
    }

    /// Delivers `packet` to the server.
    fn inject_server(&mut self, packet: &[u8]) -> Result<(), ChanDropReason> {
        self.inject(true, packet)
    }

    fn inject_client(&mut self, packet: &[u8]) -> Result<(), ChanDropReason> {
        self.inject(false, packet)
    }

    /// Delivers `packet` to the server (`to_server`) or the client; BLAST
    /// answers every `CHAN_RETRANSMIT` with `blast_says`.
    fn inject(&mut self, to_server: bool, packet: &[u8]) -> Result<(), ChanDropReason> {
        let (h, payload) = ChanHeader::parse(packet)?;
        let mut out = Vec::new();
        let says = self.blast_says;
        let queries = &mut self.queries;
        let mut q = |t: u32| {
            queries.push(t);
            says
        };
        let r = if to_server {
            self.server
                .on_packet(cpeer(), &h, payload, Some(&mut q), &mut out)
        } else {
            self.client
                .on_packet(self.now, speer(), &h, payload, Some(&mut q), &mut out)
        };
        if to_server {
            self.server_actions(out, payload);
        } else {
            self.client_actions(out, payload);
        }
        r
    }

    fn step_server(&mut self) -> Result<(), ChanDropReason> {
        let p = self.to_server.pop_front();
        self.inject_server(&p.expect("nothing in flight to the server"))
    }

    fn step_client(&mut self) -> Result<(), ChanDropReason> {
        let p = self.to_client.pop_front();
        self.inject_client(&p.expect("nothing in flight to the client"))
    }

    fn lose_to_server(&mut self) -> Vec<u8> {
        self.to_server.pop_front().expect("nothing to lose")
    }

    fn lose_to_client(&mut self) -> Vec<u8> {
        self.to_client.pop_front().expect("nothing to lose")
    }

    /// Delivers everything in flight, in order, until the wire is quiet.
    fn run(&mut self) {
        while !self.to_server.is_empty() || !self.to_client.is_empty() {
            if !self.to_server.is_empty() {
                let _ = self.step_server();
            }
            if !self.to_client.is_empty() {
                let _ = self.step_client();
            }
        }
    }

    fn advance(&mut self, to: Instant) {
        assert!(to >= self.now);
        self.now = to;
        let mut out = Vec::new();
        self.client.on_time(to, &mut out);
        self.client_actions(out, &[]);
        let mut out = Vec::new();
        self.server.on_time(to, &mut out);
        self.server_actions(out, &[]);
    }

    fn next_deadline(&self) -> Option<Instant> {
        [self.client.poll_at(), self.server.poll_at()]
            .into_iter()
            .flatten()
            .min()
    }
}

fn flags_of(packet: &[u8]) -> u8 {
    packet[3]
}

const REQ8: &[u8] = b"8 bytes!";

#[test]
fn c1_basic_call_reply_and_next_call_frees_reply_copy() {
    let mut r = Rig::new();
    let key = r.open();
    assert_eq!(key.chan, 1);
    r.call(key, REQ8);
    assert_eq!(
        r.client_sent[0].1[..HEADER_LEN],
        hex("00 01 00 03 00 00 00 14 00 00 00 02 00 00 00 08")[..]
    );
    r.step_server().unwrap();
    assert_eq!(r.executed.len(), 1);
    assert_eq!(r.executed[0].1, REQ8);
    assert_eq!(
        r.server_sent[0].1,
        [
            &hex("00 01 00 02 00 00 00 14 00 00 00 02 00 00 00 08")[..],
            REQ8
        ]
        .concat()
    );
    assert_eq!(r.server.state(r.executed[0].0.key), Some(ServerState::Wait));
    assert_eq!(r.server.saved_copy(r.executed[0].0.key), Some(REQ8));
    r.step_client().unwrap();
    assert_eq!(r.replies, vec![(key, REQ8.to_vec())]);
    assert_eq!(r.client.state(key), Some(ClientState::Free));
    assert_eq!(r.client.poll_at(), None);

    // The next call (seq 3) is the implicit ACK: the copy goes, the
    // procedure runs once for it.
    let h = r.call(key, b"second");
    assert_eq!(h.seq, 3);
    r.step_server().unwrap();
    assert_eq!(r.executed.len(), 2);
    assert_eq!(r.executed[1].0.seq, 3);
    assert_eq!(
        r.server.saved_copy(key_at_server(key)),
        Some(&b"second"[..])
    );
    r.step_client().unwrap();
    assert_eq!(r.replies.len(), 2);
    // Only data packets crossed: no control packet without loss.
    assert!(r
        .client_sent
        .iter()
        .chain(&r.server_sent)
        .all(|(_, p)| p[3] & flags::USER_MSG != 0));
}

/// The server's name for the client's channel.
fn key_at_server(key: ChannelKey) -> ChannelKey {
    ChannelKey {
        peer: cpeer(),
        ..key
    }
}

#[test]
fn c2_duplicate_request_after_reply_is_not_executed_and_timer_resends_reply() {
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    let request = r.client_sent[0].1.clone();
    r.step_server().unwrap();
    r.step_client().unwrap();
    assert_eq!(r.replies.len(), 1);

    // A duplicate of the request arrives while the server is in WAIT.
    assert_eq!(r.inject_server(&request), Err(ChanDropReason::Duplicate));
    assert_eq!(r.executed.len(), 1, "procedure ran again");
    assert!(
        r.to_client.is_empty(),
        "duplicate answered by default (§12 item 12)"
    );

    // Server timer at 8 s: the reply again, flags 0x06.
    assert_eq!(r.next_deadline(), Some(secs(8)));
    r.advance(secs(8));
    let resent = r.server_sent.last().unwrap().1.clone();
    assert_eq!(
        resent,
        [
            &hex("00 01 00 06 00 00 00 14 00 00 00 02 00 00 00 08")[..],
            REQ8
        ]
        .concat()
    );
    // The client, which has the reply, answers with an explicit ACK seq 3.
    r.step_client().unwrap();
    assert_eq!(r.replies.len(), 1, "reply delivered twice");
    assert_eq!(
        r.client_sent.last().unwrap().1,
        hex("00 01 00 01 00 00 00 14 00 00 00 03 00 00 00 00")
    );
    r.step_server().unwrap();
    assert_eq!(r.server.state(key_at_server(key)), Some(ServerState::Idle));
    assert_eq!(r.server.saved_copy(key_at_server(key)), None);
    assert_eq!(r.server.poll_at(), None);
    assert_eq!(r.executed.len(), 1);
}

#[test]
fn c2_option_resends_cached_reply_on_duplicate_request() {
    let mut r = Rig::with(
        ClientConfig::default(),
        ServerConfig {
            resend_reply_on_duplicate: true,
            ..ServerConfig::default()
        },
    );
    let key = r.open();
    r.call(key, REQ8);
    r.step_server().unwrap();
    r.lose_to_client();
    r.advance(secs(5)); // client retransmits 0x07
    assert_eq!(flags_of(&r.client_sent.last().unwrap().1), 0x07);
    r.step_server().unwrap();
    assert_eq!(r.executed.len(), 1);
    assert_eq!(
        r.server_sent.last().unwrap().1,
        [
            &hex("00 01 00 06 00 00 00 14 00 00 00 02 00 00 00 08")[..],
            REQ8
        ]
        .concat()
    );
    r.step_client().unwrap();
    assert_eq!(r.replies, vec![(key, REQ8.to_vec())]);
}

#[test]
fn c3_lost_short_request_resent_whole_at_5s_executed_once() {
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    r.lose_to_server();
    assert_eq!(r.next_deadline(), Some(secs(5)));
    r.advance(secs(5));
    assert_eq!(r.client_sent.len(), 2);
    assert_eq!(r.client_sent[1].0, secs(5));
    assert_eq!(
        r.client_sent[1].1,
        [
            &hex("00 01 00 07 00 00 00 14 00 00 00 02 00 00 00 08")[..],
            REQ8
        ]
        .concat()
    );
    r.step_server().unwrap();
    // ACK_REQUESTED → ACK (flags 0) before the reply.
    assert_eq!(
        r.server_sent[0].1,
        hex("00 01 00 00 00 00 00 14 00 00 00 02 00 00 00 00")
    );
    r.run();
    assert_eq!(r.executed.len(), 1);
    assert_eq!(r.replies, vec![(key, REQ8.to_vec())]);
}

#[test]
fn c4_lost_blasted_request_probe_nack_full_resend_executed_once() {
    let mut r = Rig::new();
    let key = r.open();
    let big = vec![7u8; 4000];
    r.call(key, &big);
    r.lose_to_server(); // all fragments lost
    r.advance(secs(5));
    // Probe: header only, 0x05.
    assert_eq!(
        r.client_sent[1].1,
        hex("00 01 00 05 00 00 00 14 00 00 00 02 00 00 00 00")
    );
    r.step_server().unwrap();
    // Server IDLE never got it: NEGATIVE_ACK 0x08.
    assert_eq!(
        r.server_sent[0].1,
        hex("00 01 00 08 00 00 00 14 00 00 00 02 00 00 00 00")
    );
    assert!(r.executed.is_empty());
    r.step_client().unwrap();
    // Forced: BLAST asked about the first push's ticket, then the whole
    // request again (0x03) as a new BLAST message.
    assert_eq!(r.queries, vec![101]);
    let resent = &r.client_sent[2].1;
    assert_eq!(
        resent[..HEADER_LEN],
        hex("00 01 00 03 00 00 00 14 00 00 00 02 00 00 0f a0")[..]
    );
    assert_eq!(&resent[HEADER_LEN..], &big[..]);
    r.run();
    assert_eq!(r.executed.len(), 1);
    assert_eq!(r.replies.len(), 1);
    // The resend's ticket (102) is freed when the reply arrives.
    assert!(r.freed.contains(&102));
}

#[test]
fn c5_lost_large_reply_probe_nack_full_reply_resent() {
    let mut r = Rig::new();
    r.reply_len = Some(3000);
    let key = r.open();
    r.call(key, REQ8);
    r.step_server().unwrap();
    r.lose_to_client(); // the BLASTed reply is lost
    r.advance(secs(5)); // client's short-request retransmission
    assert_eq!(r.step_server(), Err(ChanDropReason::Duplicate));
    r.advance(secs(8));
    // Server probe 0x04, header only.
    assert_eq!(
        r.server_sent.last().unwrap().1,
        hex("00 01 00 04 00 00 00 14 00 00 00 02 00 00 00 00")
    );
    r.step_client().unwrap();
    // Client NEGATIVE_ACK 0x09; its timer is cancelled.
    assert_eq!(
        r.client_sent.last().unwrap().1,
        hex("00 01 00 09 00 00 00 14 00 00 00 02 00 00 00 00")
    );
    assert_eq!(r.client.poll_at(), None);
    r.step_server().unwrap();
    let resent = r.server_sent.last().unwrap().1.clone();
    assert_eq!(
        resent[..HEADER_LEN],
        hex("00 01 00 02 00 00 00 14 00 00 00 02 00 00 0b b8")[..]
    );
    assert_eq!(resent.len(), HEADER_LEN + 3000);
    r.step_client().unwrap();
    assert_eq!(r.replies.len(), 1);
    assert_eq!(r.replies[0].1, vec![0x5A; 3000]);
    assert_eq!(r.executed.len(), 1);
}

#[test]
fn c5_blast_still_repairing_reply_gets_header_only() {
    let mut r = Rig::new();
    r.reply_len = Some(3000);
    let key = r.open();
    r.call(key, REQ8);
    r.step_server().unwrap();
    r.lose_to_client();
    r.advance(secs(8));
    r.lose_to_server(); // the client's 5 s retransmission
    r.step_client().unwrap(); // 0x09
    r.blast_says = false;
    let ticket = r.receipts.last_ticket; // the reply's
    r.step_server().unwrap();
    assert_eq!(r.queries, vec![ticket]);
    assert_eq!(
        r.server_sent.last().unwrap().1,
        hex("00 01 00 00 00 00 00 14 00 00 00 02 00 00 00 00")
    );
    assert_eq!(r.client.state(key), Some(ClientState::Wait));
}

#[test]
fn c6_duplicate_while_executing_with_ack_requested_gets_ack_and_client_stops_timer() {
    let mut r = Rig::new();
    r.auto_reply = false;
    let key = r.open();
    r.call(key, REQ8);
    r.step_server().unwrap();
    assert_eq!(
        r.server.state(key_at_server(key)),
        Some(ServerState::Execute)
    );
    r.advance(secs(5));
    r.step_server().unwrap();
    assert_eq!(r.executed.len(), 1);
    assert_eq!(
        r.server_sent[0].1,
        hex("00 01 00 00 00 00 00 14 00 00 00 02 00 00 00 00")
    );
    r.step_client().unwrap();
    assert_eq!(
        r.client.poll_at(),
        None,
        "client kept its timer after the ACK"
    );
    assert_eq!(r.client.state(key), Some(ClientState::Wait));
    // A duplicate without ACK_REQUESTED while executing: dropped.
    let original = r.client_sent[0].1.clone();
    assert_eq!(r.inject_server(&original), Err(ChanDropReason::Duplicate));
    let call = r.pending.pop_front().unwrap();
    r.reply(call, b"done");
    r.step_client().unwrap();
    assert_eq!(r.replies, vec![(key, b"done".to_vec())]);
}

#[test]
fn c7_old_seq_dropped_in_every_state_and_length_rule() {
    let mut r = Rig::new();
    r.auto_reply = false;
    let key = r.open();
    r.call(key, REQ8);
    let old = r.client_sent[0].1.clone();
    r.step_server().unwrap();
    let call = r.pending.pop_front().unwrap();
    r.reply(call, b"r2");
    let old_reply = r.to_client.back().unwrap().clone();
    r.step_client().unwrap();
    r.call(key, b"seq3");
    r.step_server().unwrap(); // WAIT → IDLE → EXECUTE seq 3
    let ks = key_at_server(key);
    assert_eq!(r.server.state(ks), Some(ServerState::Execute));
    assert_eq!(r.inject_server(&old), Err(ChanDropReason::OldSeq));
    let call = r.pending.pop_front().unwrap();
    r.reply(call, b"r3");
    assert_eq!(r.server.state(ks), Some(ServerState::Wait));
    assert_eq!(r.inject_server(&old), Err(ChanDropReason::OldSeq));
    // Client WAIT? No: FREE after the reply below; old reply dropped
    // while waiting first.
    assert_eq!(r.inject_client(&old_reply), Err(ChanDropReason::OldSeq));
    r.step_client().unwrap();
    assert_eq!(r.inject_client(&old_reply), Err(ChanDropReason::OldSeq));
    // Explicit ACK moves the server to IDLE; old seq still dropped.
    let mut ack = ChanHeader {
        chan: 1,
        flags: flags::FROM_CLIENT,
        prot_id: 20,
        seq: 4,
        len: 0,
    }
    .to_bytes()
    .to_vec();
    r.inject_server(&ack).unwrap(); // the explicit ACK
    assert_eq!(r.server.state(ks), Some(ServerState::Idle));
    assert_eq!(r.inject_server(&old), Err(ChanDropReason::OldSeq));
    assert_eq!(r.executed.len(), 2);

    // len larger than the payload → dropped; smaller → truncated.
    ack[15] = 1; // len 1, no byte follows
    assert_eq!(r.inject_server(&ack), Err(ChanDropReason::BadLength));
    r.call(key, REQ8);
    r.lose_to_server();
    r.advance(r.now); // nothing due
    let mut padded = ChanHeader {
        chan: 1,
        flags: flags::USER_MSG,
        prot_id: 20,
        seq: 4,
        len: 2,
    }
    .to_bytes()
    .to_vec();
    padded.extend([0xAA, 0xBB, 0, 0, 0, 0]);
    r.inject_client(&padded).unwrap();
    assert_eq!(r.replies.last().unwrap().1, vec![0xAA, 0xBB]);
}

#[test]
fn c8_retransmission_intervals_and_no_give_up() {
    // Client: nothing ever answers.
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    r.lose_to_server();
    for _ in 0..7 {
        let t = r.next_deadline().unwrap();
        r.advance(t);
        r.lose_to_server();
    }
    let times: Vec<u64> = r
        .client_sent
        .iter()
        .map(|(t, _)| t.as_nanos() / 1_000_000_000)
        .collect();
    let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, vec![5, 10, 20, 40, 60, 60, 60]);
    assert!(r.client_sent[1..].iter().all(|(_, p)| flags_of(p) == 0x07));
    assert_eq!(r.client.state(key), Some(ClientState::Wait));
    assert!(r.failures.is_empty());

    // Server: the reply is always lost and the client's copies too.
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    r.step_server().unwrap();
    r.lose_to_client();
    let mut server_times = vec![0];
    for _ in 0..12 {
        let t = r.next_deadline().unwrap();
        let before = r.server_sent.len();
        r.advance(t);
        if r.server_sent.len() > before {
            server_times.push(t.as_nanos() / 1_000_000_000);
            r.lose_to_client();
        }
        r.to_server.clear();
    }
    let gaps: Vec<u64> = server_times.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps[..5], [8, 16, 32, 60, 60]);
    assert_eq!(r.server.state(key_at_server(key)), Some(ServerState::Wait));
}

#[test]
fn c9_server_reboot_fails_call_disables_channels_new_channel_starts_at_seq_2() {
    let mut r = Rig::new();
    let key = r.open();
    let spare = r.open();
    // spare makes 3 calls then goes dormant with seq 4.
    for _ in 0..3 {
        r.call(spare, REQ8);
        r.run();
    }
    r.client.close(spare).unwrap();
    assert_eq!(r.client.dormant_seq(spare), Some(4));
    r.call(key, REQ8);
    r.lose_to_server();
    // BID filters the old-incarnation traffic; BIDCTL confirms the reboot.
    r.server = ServerTable::new(ServerConfig::default());
    r.server.enable(20).unwrap();
    let mut out = Vec::new();
    r.client.peer_rebooted(speer(), &mut out);
    assert_eq!(
        out,
        vec![ChanAction::CallFailed {
            key,
            error: CallError::PeerRebooted
        }]
    );
    assert_eq!(r.client.state(key), Some(ClientState::Disabled));
    assert_eq!(
        r.client.call(r.now, key, REQ8, None),
        Err(CallError::Disabled)
    );
    assert_eq!(r.client.dormant_seq(spare), None);
    assert_eq!(r.client.poll_at(), None);
    // A channel opened afterwards works, starting at seq 2.
    let fresh = r.open();
    assert_eq!(r.call(fresh, REQ8).seq, 2);
    r.run();
    assert_eq!(r.replies.last().unwrap().0, fresh);
    // Closing the disabled channel forgets it.
    r.client.close(key).unwrap();
    assert_eq!(r.client.state(key), None);
}

#[test]
fn c10_client_reboot_while_executing_discards_reply_new_seq_2_accepted() {
    let mut r = Rig::new();
    r.auto_reply = false;
    let key = r.open();
    for _ in 0..2 {
        r.call(key, REQ8);
        r.step_server().unwrap();
        let c = r.pending.pop_front().unwrap();
        r.reply(c, b"ok");
        r.step_client().unwrap();
    }
    r.call(key, REQ8); // seq 4, executing
    r.step_server().unwrap();
    let orphan = r.pending.pop_front().unwrap();
    assert_eq!(orphan.seq, 4);
    // The client reboots.
    r.client = ClientTable::new(ClientConfig::default());
    let mut out = Vec::new();
    r.server.peer_rebooted(cpeer(), &mut out);
    assert!(out.is_empty());
    assert_eq!(r.server.state(key_at_server(key)), None);
    assert_eq!(
        r.server.reply(r.now, orphan, b"late"),
        Err(ReplyError::Stale)
    );
    // The new incarnation's channel 1, seq 2, is accepted.
    let key = r.open();
    assert_eq!(r.call(key, REQ8).seq, 2);
    r.step_server().unwrap();
    let c = r.pending.pop_front().unwrap();
    assert_eq!(c.seq, 2);
    // The orphan's token stays stale even though the (chan, seq) space
    // restarted.
    assert_eq!(
        r.server.reply(r.now, orphan, b"late"),
        Err(ReplyError::Stale)
    );
    r.reply(c, b"new");
    r.step_client().unwrap();
    assert_eq!(r.replies.last().unwrap().1, b"new");
}

#[test]
fn c11_second_call_on_busy_channel_fails_at_once() {
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    assert_eq!(r.client.call(r.now, key, REQ8, None), Err(CallError::Busy));
    assert_eq!(CallError::Busy.kind(), std::io::ErrorKind::ResourceBusy);
    assert_eq!(r.client.close(key), Err(TableError::Busy));
}

#[test]
fn c12_close_and_reopen_same_channel_seq_continues() {
    let mut r = Rig::new();
    let key = r.open();
    for _ in 0..4 {
        r.call(key, REQ8);
        r.run();
    }
    assert_eq!(r.client.seq(key), Some(5));
    r.client.close(key).unwrap();
    let again = r.open();
    assert_eq!(again, key);
    assert_eq!(r.call(again, REQ8).seq, 6);
    r.run();
    assert_eq!(r.executed.len(), 5);
}

#[test]
fn c13_reply_with_ack_requested_for_dormant_channel_gets_explicit_ack() {
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    r.run();
    r.client.close(key).unwrap();
    r.advance(secs(8));
    assert_eq!(flags_of(&r.server_sent.last().unwrap().1), 0x06);
    r.step_client().unwrap();
    assert_eq!(
        r.client_sent.last().unwrap().1,
        hex("00 01 00 01 00 00 00 14 00 00 00 03 00 00 00 00")
    );
    r.step_server().unwrap();
    assert_eq!(r.server.state(key_at_server(key)), Some(ServerState::Idle));
    // A second copy of the ACK finds nothing to acknowledge.
    let ack = r.client_sent.last().unwrap().1.clone();
    assert_eq!(r.inject_server(&ack), Err(ChanDropReason::Unsolicited));
}

#[test]
fn first_contact_resends_pending_request_at_once() {
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    r.lose_to_server(); // BID not active yet
    r.now = secs(1);
    let mut out = Vec::new();
    r.client.first_contact(r.now, speer(), &mut out);
    r.client_actions(out, &[]);
    assert_eq!(r.client_sent[1].0, secs(1));
    assert_eq!(flags_of(&r.client_sent[1].1), 0x07);
    assert_eq!(r.client.poll_at(), Some(secs(6)));
    r.run();
    assert_eq!(r.replies.len(), 1);
}

#[test]
fn deadline_fails_call_keeps_seq_maybe_executed_never_twice() {
    let mut r = Rig::new();
    let key = r.open();
    r.call_until(key, REQ8, Some(secs(12)));
    let delayed = r.lose_to_server();
    r.advance(secs(5));
    r.lose_to_server();
    assert_eq!(r.next_deadline(), Some(secs(12)));
    r.advance(secs(12));
    assert_eq!(r.failures, vec![(key, CallError::TimedOut)]);
    assert_eq!(r.client.state(key), Some(ClientState::Free));
    assert_eq!(r.client.poll_at(), None);
    // The request shows up late: it runs ("maybe executed")...
    r.inject_server(&delayed).unwrap();
    assert_eq!(r.executed.len(), 1);
    // ...its reply is stale for the client...
    assert_eq!(r.step_client(), Err(ChanDropReason::Duplicate));
    // ...and the next call uses a new seq, run once.
    assert_eq!(r.call(key, b"next").seq, 3);
    r.inject_server(&delayed).unwrap_err();
    r.run();
    assert_eq!(r.executed.len(), 2);
    assert_eq!(r.replies, vec![(key, b"next".to_vec())]);
}

#[test]
fn server_table_bounds_listeners_and_dormant_revival() {
    let mut r = Rig::with(
        ClientConfig::default(),
        ServerConfig {
            max_channels: 1,
            ..ServerConfig::default()
        },
    );
    let a = r.open();
    let b = r.open();
    r.call(a, REQ8);
    r.run();
    r.call(b, REQ8);
    assert_eq!(r.step_server(), Err(ChanDropReason::TableFull));
    // Unknown protocol number.
    let stray = ChanHeader {
        chan: 9,
        flags: 0x03,
        prot_id: 99,
        seq: 2,
        len: 0,
    }
    .to_bytes();
    assert_eq!(r.inject_server(&stray), Err(ChanDropReason::NoListener));
    // Control packets for unknown channels create none.
    let ack = ChanHeader {
        chan: 7,
        flags: flags::FROM_CLIENT,
        prot_id: 20,
        seq: 3,
        len: 0,
    };
    assert_eq!(
        r.inject_server(&ack.to_bytes()),
        Err(ChanDropReason::Unsolicited)
    );
    let probe = ChanHeader {
        flags: flags::FROM_CLIENT | flags::ACK_REQUESTED,
        ..ack
    };
    r.inject_server(&probe.to_bytes()).unwrap();
    assert_eq!(
        flags_of(&r.to_client.pop_back().unwrap()),
        flags::NEGATIVE_ACK
    );
    assert_eq!(r.server.len(), 1);
    // Dormant server channel: seq kept, revived by the next request.
    let ka = key_at_server(a);
    r.call(a, REQ8); // b's call is stuck; a's is seq 3 (implicit ACK of 2)
    r.step_server().unwrap();
    r.step_client().unwrap();
    r.inject_server(
        &ChanHeader {
            chan: 1,
            flags: flags::FROM_CLIENT,
            prot_id: 20,
            seq: 4,
            len: 0,
        }
        .to_bytes(),
    )
    .unwrap();
    r.server.close(ka).unwrap();
    assert_eq!(r.server.dormant_seq(ka), Some(3));
    let old = r.client_sent[0].1.clone();
    assert_eq!(r.inject_server(&old), Err(ChanDropReason::OldSeq));
    r.call(a, REQ8);
    r.step_server().unwrap();
    assert_eq!(r.executed.last().unwrap().0.seq, 4);
    assert_eq!(r.server.len(), 1);
}

#[test]
fn client_table_bounds_channel_numbers() {
    let mut c = ClientTable::new(ClientConfig {
        max_channels_per_peer: 2,
        max_peers: 1,
        ..ClientConfig::default()
    });
    let a = c.open(speer(), 20).unwrap();
    c.open(speer(), 20).unwrap();
    assert!(matches!(
        c.open(speer(), 20),
        Err(TableError::TooManyChannels { max: 2, .. })
    ));
    assert!(matches!(
        c.open(cpeer(), 20),
        Err(TableError::TooManyPeers { max: 1 })
    ));
    c.close(a).unwrap();
    assert_eq!(c.open(speer(), 20).unwrap(), a);
    let mut small = ClientTable::new(ClientConfig {
        max_request: 4,
        ..ClientConfig::default()
    });
    let k = small.open(speer(), 20).unwrap();
    assert_eq!(
        small.call(Instant::ZERO, k, b"12345", None),
        Err(CallError::TooLarge { len: 5, max: 4 })
    );
    assert_eq!(small.seq(k), Some(1), "a refused call used a seq");
}

#[test]
fn client_forgets_a_peer_whose_channels_have_no_seq_history() {
    let mut c = ClientTable::new(ClientConfig {
        max_peers: 1,
        ..ClientConfig::default()
    });
    let a = c.open(speer(), 20).unwrap();
    c.call(Instant::ZERO, a, REQ8, None).unwrap();
    c.peer_rebooted(speer(), &mut Vec::new());
    c.close(a).unwrap();
    // The slot is free for another peer; the old one restarts at 1.
    let b = c.open(cpeer(), 20).unwrap();
    assert_eq!(b.chan, 1);
    c.close(b).unwrap(); // dormant: cpeer stays known
    assert!(matches!(
        c.open(speer(), 20),
        Err(TableError::TooManyPeers { max: 1 })
    ));
}

#[test]
fn abort_fails_call_and_frees_channel_keeping_seq() {
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    let mut out = Vec::new();
    r.client.abort(key, &mut out).unwrap();
    assert_eq!(
        out,
        vec![ChanAction::CallFailed {
            key,
            error: CallError::Aborted
        }]
    );
    assert_eq!(r.client.state(key), Some(ClientState::Free));
    assert_eq!(r.client.poll_at(), None);
    assert_eq!(r.call(key, REQ8).seq, 3);
}

#[test]
fn reliable_transport_arms_no_timer() {
    let mut r = Rig::new();
    let key = r.open();
    r.call(key, REQ8);
    r.client.record_receipt(
        key,
        TransportReceipt {
            reliable: true,
            ..Default::default()
        },
    );
    assert_eq!(r.client.poll_at(), None);
    r.step_server().unwrap();
    let ks = key_at_server(key);
    r.server.record_receipt(
        ks,
        TransportReceipt {
            reliable: true,
            ..Default::default()
        },
    );
    assert_eq!(r.server.poll_at(), None);
}

#[test]
fn osf_copy_above_optimal_packet_is_only_probed_on_timer() {
    let mut r = Rig::with(
        ClientConfig {
            opt_packet: Some(100),
            ..ClientConfig::default()
        },
        ServerConfig::default(),
    );
    let key = r.open();
    r.call(key, &[1u8; 200]);
    r.lose_to_server();
    r.advance(secs(5));
    assert_eq!(
        r.client_sent[1].1,
        hex("00 01 00 05 00 00 00 14 00 00 00 02 00 00 00 00")
    );
}

#[test]
fn v1_six_calls_five_channels_sixth_waits_lifo_reuse() {
    let mut r = Rig::new();
    r.auto_reply = false;
    let mut pool = VchanPool::new(&mut r.client, speer(), 20, VchanConfig::default()).unwrap();
    let mut keys = Vec::new();
    for i in 0..5u8 {
        let Acquired::Channel(k) = pool.acquire().unwrap() else {
            panic!("queued")
        };
        r.call(k, &[i]);
        keys.push(k);
    }
    let mut chans: Vec<u16> = keys.iter().map(|k| k.chan).collect();
    chans.sort();
    assert_eq!(chans, vec![1, 2, 3, 4, 5]);
    let Acquired::Queued(ticket) = pool.acquire().unwrap() else {
        panic!("sixth ran")
    };
    for _ in 0..5 {
        r.step_server().unwrap();
    }
    // The call on channel 3 completes: the sixth call gets channel 3.
    let c3 = r.pending.iter().position(|c| c.key.chan == 3).unwrap();
    let c3 = r.pending.remove(c3).unwrap();
    r.reply(c3, b"x");
    r.step_client().unwrap();
    let (done, _) = r.replies[0].clone();
    assert_eq!(pool.release(done).unwrap(), Some((ticket, done)));
    assert_eq!(r.call(done, b"sixth").seq, 3);
    // Two more complete (2 then 4): the most recently freed (4) is next.
    for chan in [2, 4] {
        let i = r.pending.iter().position(|c| c.key.chan == chan).unwrap();
        let c = r.pending.remove(i).unwrap();
        r.reply(c, b"y");
        r.step_client().unwrap();
        assert_eq!(pool.release(r.replies.last().unwrap().0).unwrap(), None);
    }
    assert_eq!(pool.acquire().unwrap(), Acquired::Channel(keys[3]));
    assert_eq!(keys[3].chan, 4);
}

#[test]
fn v1_waiting_queue_is_bounded_and_fifo() {
    let mut c = ClientTable::new(ClientConfig::default());
    let cfg = VchanConfig {
        concurrency: 1,
        max_waiting: 2,
        ..VchanConfig::default()
    };
    let mut pool = VchanPool::new(&mut c, speer(), 20, cfg).unwrap();
    let Acquired::Channel(k) = pool.acquire().unwrap() else {
        panic!()
    };
    let Acquired::Queued(t1) = pool.acquire().unwrap() else {
        panic!()
    };
    let Acquired::Queued(t2) = pool.acquire().unwrap() else {
        panic!()
    };
    assert!(matches!(
        pool.acquire(),
        Err(crate::vchan::VchanError::QueueFull { max: 2 })
    ));
    assert_eq!(pool.release(k).unwrap(), Some((t1, k)));
    assert_eq!(pool.release(k).unwrap(), Some((t2, k)));
    assert_eq!(pool.release(k).unwrap(), None);
    assert!(pool.release(k).is_err());
}

#[test]
fn v2_inc_and_dec_concurrency() {
    let mut c = ClientTable::new(ClientConfig::default());
    let mut pool = VchanPool::new(&mut c, speer(), 20, VchanConfig::default()).unwrap();
    assert!(pool.inc_concurrency(&mut c, 2).unwrap().is_empty());
    let mut chans: Vec<u16> = pool.channels().map(|k| k.chan).collect();
    chans.sort();
    assert_eq!(chans, vec![1, 2, 3, 4, 5, 6, 7]);
    // One busy, then park three: the idle ones go at once.
    let Acquired::Channel(busy) = pool.acquire().unwrap() else {
        panic!()
    };
    pool.dec_concurrency(3).unwrap();
    assert_eq!((pool.active(), pool.parked()), (4, 3));
    pool.dec_concurrency(3).unwrap(); // two idle + the busy one later
    assert_eq!((pool.active(), pool.parked()), (1, 6));
    assert_eq!(pool.release(busy).unwrap(), None);
    assert_eq!((pool.active(), pool.parked()), (1, 6));
    assert!(pool.dec_concurrency(2).is_err());
    // INC re-enables parked channels before opening new ones.
    pool.inc_concurrency(&mut c, 2).unwrap();
    assert_eq!((pool.active(), pool.parked()), (3, 4));
    assert_eq!(pool.channels().count(), 7);
}

#[test]
fn m1_unknown_procedure_fails_call_without_chan_retransmission() {
    let mut r = Rig::new();
    r.auto_reply = false;
    let sel = MselectServer::default(); // nothing registered
    let client = MselectClient::new(1002);
    let key = r.open();
    let req = client.request_header().to_bytes();
    r.call(key, &req);
    r.step_server().unwrap();
    let (call, request) = r.executed[0].clone();
    let Selection::Unknown { reply } = sel.on_request(&request).unwrap() else {
        panic!("selected")
    };
    assert_eq!(reply.to_bytes(), hex("00 00 03 ea 00 00 00 02")[..]);
    r.reply(call, &reply.to_bytes());
    r.step_client().unwrap();
    let (_, got) = r.replies[0].clone();
    assert_eq!(
        client.on_reply(&got),
        Err(MselectError::Failed { id: 1002 })
    );
    // CHAN completed the exchange: the client has no timer, sent nothing more.
    assert_eq!(r.client.poll_at(), None);
    assert_eq!(r.client_sent.len(), 1);
}

#[test]
fn e1_echo_lengths_cost_only_data_packets_last_reply_acked_by_probe() {
    let mut r = Rig::new();
    let key = r.open();
    let mut calls = 0;
    for len in [1000usize, 2000, 4000, 8000, 16000] {
        for trip in 0..100u32 {
            let req: Vec<u8> = (0..len).map(|i| (i as u32 ^ trip) as u8).collect();
            r.call(key, &req);
            r.run();
            calls += 1;
            let (k, got) = r.replies.last().unwrap();
            assert_eq!((*k, got.len()), (key, len));
            assert_eq!(got, &req);
        }
    }
    assert_eq!(r.executed.len(), calls);
    // No control packet, no loss: one request and one reply per call.
    assert_eq!(r.client_sent.len(), calls);
    assert_eq!(r.server_sent.len(), calls);
    // The last (BLASTed) reply: at 8 s a probe 0x04, the explicit ACK.
    r.advance(secs(8));
    assert_eq!(r.server_sent.last().unwrap().1[3], 0x04);
    r.run();
    assert_eq!(r.client_sent.last().unwrap().1[3], 0x01);
    assert_eq!(r.server.state(key_at_server(key)), Some(ServerState::Idle));
    assert_eq!(r.next_deadline(), None);
}

#[test]
fn e2_zero_byte_call_is_24_bytes_of_mselect_and_chan() {
    let mut r = Rig::new();
    r.auto_reply = false;
    let key = r.open();
    let client = MselectClient::new(1002);
    let mut sel = MselectServer::default();
    sel.register(1002).unwrap();
    r.call(key, &client.request_header().to_bytes());
    assert_eq!(r.client_sent[0].1.len(), 24);
    r.step_server().unwrap();
    let (call, request) = r.executed[0].clone();
    let Selection::Procedure { id, payload } = sel.on_request(&request).unwrap() else {
        panic!("not selected")
    };
    assert!(payload.is_empty());
    r.reply(call, &MselectServer::reply_header(id, true).to_bytes());
    assert_eq!(r.server_sent[0].1.len(), 24);
    r.step_client().unwrap();
    assert_eq!(client.on_reply(&r.replies[0].1), Ok(&[][..]));
    // + BID 12 + BLAST 20 + ETH 14 = 70 B frames (90 B with IP, §12 item 3).
    assert_eq!(24 + 12 + 20 + 14, 70);
}

/// The fast form's release by channel number leaves a pool exactly as
/// `release` does when no call waits: the channel back on top of the
/// idle stack (LIFO reuse), or parked while a DECCONCURRENCY is pending;
/// a channel not lent is refused by both.
#[test]
fn v2_release_idle_is_release_without_waiters() {
    let mut c = ClientTable::new(ClientConfig::default());
    let mut d = ClientTable::new(ClientConfig::default());
    let mut slow = VchanPool::new(&mut c, speer(), 20, VchanConfig::default()).unwrap();
    let mut fast = VchanPool::new(&mut d, speer(), 20, VchanConfig::default()).unwrap();
    let mut lent = Vec::new();
    for _ in 0..3 {
        let (Acquired::Channel(a), Acquired::Channel(b)) =
            (slow.acquire().unwrap(), fast.acquire().unwrap())
        else {
            panic!("queued")
        };
        assert_eq!(a.chan, b.chan);
        lent.push(a);
    }
    // Park one of the busy channels when it comes back: all idle ones
    // go first, so ask for one more than are idle.
    let idle = slow.active() - lent.len();
    slow.dec_concurrency(idle + 1).unwrap();
    fast.dec_concurrency(idle + 1).unwrap();
    for k in [lent[1], lent[0], lent[2]] {
        assert_eq!(slow.release(k).unwrap(), None);
        assert!(fast.release_idle(k.chan));
        assert_eq!(
            (slow.active(), slow.parked(), slow.waiting()),
            (fast.active(), fast.parked(), fast.waiting())
        );
    }
    assert!(slow.release(lent[0]).is_err());
    assert!(!fast.release_idle(lent[0].chan));
    let order = |p: &mut VchanPool| -> Vec<u16> {
        std::iter::from_fn(|| match p.acquire() {
            Ok(Acquired::Channel(k)) => Some(k.chan),
            _ => None,
        })
        .collect()
    };
    let (a, b) = (order(&mut slow), order(&mut fast));
    assert_eq!(a, b);
    assert_eq!(a.len(), 2, "two of the three came back idle, one parked");
}
