//! Scenarios of the RPC specification (§11) at path level: two whole RPC
//! hosts over the in-memory wire on a hand-set clock, every frame
//! recorded and chosen frames lost (`support/rpc_rig.rs`). The engines'
//! own tests cover each scenario inside one protocol; these check what
//! the stack as a whole puts on the wire: the header bytes of §11.1, the
//! frame sizes of E2, the boot-id handshake (D1), lost requests and
//! replies (C2, C3, C5) and BLAST's selective retransmission (B1).

#[path = "support/rpc_rig.rs"]
mod rpc_rig;

use pathstack::core::time::{Duration, Instant};
use pathstack::rpc::RpcNet;
use rpc_rig::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// MSELECT's header of a request to, and an OK reply from, procedure
/// 1002 (spec §11.1).
const MSELECT_1002_OK: [u8; 8] = [0x00, 0x00, 0x03, 0xea, 0x00, 0x00, 0x00, 0x01];

fn be(x: u32) -> [u8; 4] {
    x.to_be_bytes()
}

/// The Internet checksum of `b` folds to zero when it is right.
fn checksum_ok(b: &[u8]) -> bool {
    let mut sum: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// The frames of the calls from the client host to the server host, as
/// (sender, time, BLAST view): the client's requests (`FROM_CLIENT`)
/// and the server's answers (not), without the calls the other way.
fn forward(frames: &[Frame], net: RpcNet) -> Vec<(Side, Instant, RpcFrame<'_>)> {
    frames
        .iter()
        .filter(|f| !f.dropped)
        .filter_map(|f| Some((f.from, f.at, rpc_frame(&f.bytes, net)?)))
        .filter(|(from, _, b)| match b.chan_flags() {
            Some(fl) => (fl & 0x01 != 0) == (*from == Side::Client),
            // Fragments and NACKs: every fragmented message here is a
            // forward one.
            None => true,
        })
        .collect()
}

/// The server host calls the client host once (echo), so that both know
/// each other's boot id and the client's channel 1 is still fresh.
fn warm_up_backwards(r: &mut Rig) {
    serve_echo(&mut r.client);
    let peer = r.client_peer();
    let call = r.server().rpc().start(peer, XRPCTEST, b"warm").unwrap();
    let got = r.finish_on(Side::Server, &call, Duration::from_secs(10));
    assert_eq!(got.expect("the warm-up call").unwrap(), b"warm");
}

/// §11.1, E2 and D1 on `net`: the boot broadcasts, the handshake, and the
/// first zero-byte call on channel 1 byte for byte.
fn header_vectors(net: RpcNet) {
    let mut r = Rig::with_echo(net);
    let (cb, sb) = (boot_id(&r.client), boot_id(r.server()));
    assert_ne!(cb, sb, "two hosts, two boot ids");
    warm_up_backwards(&mut r);

    // The boot broadcasts (spec §5.4): BCAST, the sender's boot id, the
    // rest zero, to the broadcast address.
    let frames = r.frames();
    for (side, bid) in [(Side::Client, cb), (Side::Server, sb)] {
        let bcasts: Vec<_> = frames
            .iter()
            .filter(|f| f.from == side)
            .filter_map(|f| Some((f, bidctl_frame(&f.bytes, net)?)))
            .filter(|(_, h)| h[..2] == [0, 4])
            .collect();
        assert_eq!(bcasts.len(), 1, "{side:?}: one boot broadcast");
        let (f, h) = bcasts[0];
        assert_eq!(f.bytes[..6], [0xff; 6]);
        assert!(checksum_ok(h), "{side:?}: BCAST checksum {}", hex(h));
        assert_eq!(h[4..8], be(bid));
        assert_eq!(h[8..20], [0; 12]);
    }
    // D1: the server (calling first) queries, the client answers the tag
    // (and asks its own question in the same packet), the server answers
    // that; every packet checksummed.
    let hs: Vec<_> = frames
        .iter()
        .filter_map(|f| Some((f.from, bidctl_frame(&f.bytes, net)?)))
        .filter(|(_, h)| h[..2] != [0, 4])
        .collect();
    assert!(hs.len() >= 2, "a handshake: {hs:?}");
    for (_, h) in &hs {
        assert!(checksum_ok(h), "BIDCTL checksum: {}", hex(h));
    }
    let (from, q) = hs[0];
    assert_eq!(from, Side::Server);
    assert_eq!(q[..2], [0, 1], "QUERY");
    assert_eq!(
        q[4..12],
        [be(sb), [0; 4]].concat(),
        "src = server, dst unknown"
    );
    assert_ne!(q[12..16], [0; 4], "a query tag");
    assert_eq!(q[16..20], [0; 4]);
    let (from, a) = hs[1];
    assert_eq!(from, Side::Client);
    assert_eq!(a[1] & 0x02, 0x02, "RESPONSE");
    // dstBid = the client's idea of the server's boot id: none yet (its
    // state for the server is OPEN until a RESPONSE to its own QUERY).
    assert_eq!(a[4..12], [be(cb), [0; 4]].concat());
    assert_eq!(a[16..20], q[12..16], "answers the server's tag");
    if a[1] & 0x01 != 0 {
        let (from, b) = hs[2];
        assert_eq!(from, Side::Server);
        assert_eq!(b[..2], [0, 2], "RESPONSE");
        assert_eq!(b[4..12], [be(sb), be(cb)].concat());
        assert_eq!(b[16..20], a[12..16], "answers the client's tag");
    }

    // The first call on the client's channel 1, zero bytes (§9, §11.1).
    r.clear_log();
    let t = r.now;
    assert_eq!(r.call(XRPCTEST, b"").unwrap(), b"");
    let frames = r.frames();
    let fw = forward(&frames, net);
    assert_eq!(fw.len(), 2, "request and reply, nothing else");
    let blast_short = [
        0x00, 0x00, 0x00, 0x15, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x24, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x00, 0x00,
    ];
    let (from, _, req) = fw[0];
    assert_eq!(from, Side::Client);
    assert_eq!(req.blast, blast_short, "BLAST short header");
    assert_eq!(req.bid().unwrap(), [be(cb), be(sb), be(13)].concat(), "BID");
    assert_eq!(
        req.chan().unwrap(),
        [
            0x00, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
            0x00, 0x08
        ],
        "CHAN request, channel 1, seq 2"
    );
    assert_eq!(req.chan_body().unwrap(), MSELECT_1002_OK);
    let (from, _, rep) = fw[1];
    assert_eq!(from, Side::Server);
    assert_eq!(rep.blast, blast_short);
    assert_eq!(rep.bid().unwrap(), [be(sb), be(cb), be(13)].concat());
    assert_eq!(
        rep.chan().unwrap(),
        [
            0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
            0x00, 0x08
        ],
        "CHAN reply"
    );
    assert_eq!(rep.chan_body().unwrap(), MSELECT_1002_OK);
    // E2: 70 bytes without IP, 90 with (no padding needed; the FCS is
    // not part of the in-memory frame).
    let size = match net {
        RpcNet::Eth => 70,
        RpcNet::Ip => 90,
    };
    let sizes: Vec<_> = frames
        .iter()
        .filter(|f| rpc_frame(&f.bytes, net).is_some_and(|b| b.chan().is_some()))
        .map(|f| f.bytes.len())
        .collect();
    assert_eq!(sizes, [size, size], "E2 frame sizes");
    if net == RpcNet::Ip {
        let ip = &frames[0].bytes[14..34];
        assert_eq!(ip[0], 0x45);
        assert_eq!(ip[2..4], 76u16.to_be_bytes(), "IP total length");
        assert_eq!(ip[9], 101, "BLAST's IP protocol");
        assert_eq!(ip[12..20], [10, 0, 0, 1, 10, 0, 0, 2]);
        assert!(checksum_ok(ip), "IP header checksum");
    }

    // C1/C2's end: nobody acknowledges the last reply, so the server's
    // timer fires 8 s later with the saved reply (0x06); the client, done
    // with seq 2, answers with the explicit ACK seq 3 (§11.1), and the
    // server lets go of the reply: nothing more for two minutes.
    r.clear_log();
    r.run_for(Duration::from_secs(120));
    let frames = r.frames();
    let fw = forward(&frames, net);
    assert_eq!(fw.len(), 2, "probe and explicit ACK only: {fw:?}");
    let (from, at, probe) = fw[0];
    assert_eq!((from, at), (Side::Server, t + Duration::from_secs(8)));
    assert_eq!(
        probe.chan().unwrap(),
        [
            0x00, 0x01, 0x00, 0x06, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
            0x00, 0x08
        ]
    );
    assert_eq!(probe.chan_body().unwrap(), MSELECT_1002_OK);
    let (from, at, ack) = fw[1];
    assert_eq!((from, at), (Side::Client, t + Duration::from_secs(8)));
    assert_eq!(
        ack.chan().unwrap(),
        [
            0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00,
            0x00, 0x00
        ],
        "explicit client ACK"
    );
    assert_eq!(ack.chan_body().unwrap(), [] as [u8; 0]);
    let ack_size = match net {
        RpcNet::Eth => 62,
        RpcNet::Ip => 82,
    };
    let f = frames
        .iter()
        .find(|f| rpc_frame(&f.bytes, net).is_some_and(|b| b.chan_flags() == Some(0x01)))
        .unwrap();
    assert_eq!(f.bytes.len(), ack_size);
}

#[test]
fn header_vectors_handshake_and_frame_sizes_over_ethernet() {
    header_vectors(RpcNet::Eth);
}

#[test]
fn header_vectors_handshake_and_frame_sizes_over_ip() {
    header_vectors(RpcNet::Ip);
}

/// An echo server that counts its executions.
fn counting_echo(r: &mut Rig) -> Arc<AtomicU32> {
    let n = Arc::new(AtomicU32::new(0));
    let c = n.clone();
    r.server()
        .rpc()
        .server()
        .unwrap()
        .register_fn(XRPCTEST, move |req: &[u8]| {
            c.fetch_add(1, Ordering::Relaxed);
            req.to_vec()
        })
        .unwrap();
    n
}

/// Both hosts on `net`, the server a [`counting_echo`], after one call
/// (boot ids agreed; the warm-up was seq 2 on channel 1), the log
/// cleared.
fn warmed_counting_rig(net: RpcNet) -> (Rig, Arc<AtomicU32>) {
    let mut r = Rig::new(net);
    let runs = counting_echo(&mut r);
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
    r.clear_log();
    (r, runs)
}

/// A first transmission of the fragment `mask` names (BLAST SEND), as a
/// drop-rule predicate.
fn is_fragment(net: RpcNet, mask: u16) -> impl Fn(&[u8]) -> bool {
    move |f: &[u8]| {
        rpc_frame(f, net).is_some_and(|b| b.op() == 1 && b.seq() != 0 && b.mask() == mask)
    }
}

/// A request from the client (CHAN `FROM_CLIENT | USER_MSG`), as a
/// drop-rule predicate.
fn is_short_request(net: RpcNet) -> impl Fn(&[u8]) -> bool {
    move |f: &[u8]| {
        rpc_frame(f, net)
            .and_then(|b| b.chan_flags())
            .is_some_and(|fl| fl & 0x03 == 0x03)
    }
}

/// A reply from the server (CHAN `USER_MSG`, not `FROM_CLIENT`).
fn is_short_reply(net: RpcNet) -> impl Fn(&[u8]) -> bool {
    move |f: &[u8]| {
        rpc_frame(f, net)
            .and_then(|b| b.chan_flags())
            .is_some_and(|fl| fl & 0x03 == 0x02)
    }
}

/// C3: the request is lost; the client's timer resends it 5 s later as
/// `0x07` with the data; the server acknowledges (ACK_REQUESTED),
/// executes once and replies.
fn lost_short_request(net: RpcNet, body: &[u8]) {
    let (mut r, runs) = warmed_counting_rig(net);
    r.drop_frames(Side::Client, 0, 1, is_short_request(net));
    let t = r.now;
    assert_eq!(r.call(XRPCTEST, body).unwrap(), body);
    assert_eq!(
        r.now,
        t + Duration::from_secs(5),
        "answered when the retry came"
    );
    let frames = r.frames();
    let lost = frames.iter().find(|f| f.dropped).expect("the lost request");
    let lost = rpc_frame(&lost.bytes, net).unwrap();
    let fw = forward(&frames, net);
    let flags: Vec<_> = fw
        .iter()
        .map(|(from, at, b)| (*from, *at - t, b.chan_flags().unwrap()))
        .collect();
    let s5 = Duration::from_secs(5);
    assert_eq!(
        flags,
        [
            (Side::Client, s5, 0x07),
            (Side::Server, s5, 0x00),
            (Side::Server, s5, 0x02)
        ],
        "retransmission 0x07, server ACK, reply"
    );
    let (_, _, retry) = fw[0];
    assert_eq!(lost.chan_flags(), Some(0x03));
    assert_eq!(retry.chan_seq(), lost.chan_seq(), "same seq");
    assert_eq!(retry.chan_seq(), Some(3), "the warm-up had seq 2");
    assert_eq!(
        retry.chan().unwrap()[12..],
        (8 + body.len() as u32).to_be_bytes(),
        "len 8 (MSELECT's header) + the request's"
    );
    assert_eq!(retry.chan_body(), lost.chan_body(), "same data");
    let (_, _, ack) = fw[1];
    assert_eq!(
        ack.chan().unwrap()[8..],
        [0, 0, 0, 3, 0, 0, 0, 0],
        "ACK seq 3, len 0"
    );
    assert_eq!(
        runs.load(Ordering::Relaxed),
        2,
        "warm-up and the call, once each"
    );
}

#[test]
fn c3_lost_request_is_resent_after_5s_and_runs_once_ethernet() {
    lost_short_request(RpcNet::Eth, b"lost once");
}

#[test]
fn c3_lost_request_is_resent_after_5s_and_runs_once_ip() {
    lost_short_request(RpcNet::Ip, b"lost once");
}

/// C3 for a zero-byte call, whose kept copy is MSELECT's header alone
/// (CHAN keeps it in place, not in its vector): the retry carries it.
#[test]
fn c3_lost_zero_byte_request_is_resent_whole_ethernet() {
    lost_short_request(RpcNet::Eth, b"");
}

#[test]
fn c3_lost_zero_byte_request_is_resent_whole_ip() {
    lost_short_request(RpcNet::Ip, b"");
}

/// C2: the reply is lost. The client's retry at 5 s (0x07) reaches a
/// server waiting with the reply: dropped, not executed again. The
/// server's timer resends the saved reply at 8 s (0x06); the client
/// takes it and acknowledges explicitly (0x01, seq + 1).
fn lost_short_reply(net: RpcNet) {
    let (mut r, runs) = warmed_counting_rig(net);
    r.drop_frames(Side::Server, 0, 1, is_short_reply(net));
    let t = r.now;
    assert_eq!(r.call(XRPCTEST, b"reply lost").unwrap(), b"reply lost");
    assert_eq!(
        r.now,
        t + Duration::from_secs(8),
        "the server's timer recovered it"
    );
    r.run_for(Duration::from_secs(120));
    let frames = r.frames();
    let fw = forward(&frames, net);
    let flags: Vec<_> = fw
        .iter()
        .map(|(from, at, b)| {
            (
                *from,
                *at - t,
                b.chan_flags().unwrap(),
                b.chan_seq().unwrap(),
            )
        })
        .collect();
    let (s0, s5, s8) = (
        Duration::ZERO,
        Duration::from_secs(5),
        Duration::from_secs(8),
    );
    assert_eq!(
        flags,
        [
            (Side::Client, s0, 0x03, 3),
            (Side::Client, s5, 0x07, 3),
            (Side::Server, s8, 0x06, 3),
            (Side::Client, s8, 0x01, 4),
        ],
        "request, ignored retry, server's resend, explicit ACK; then quiet"
    );
    let (_, _, resent) = fw[2];
    assert_eq!(resent.chan_body().unwrap()[8..], *b"reply lost");
    assert_eq!(runs.load(Ordering::Relaxed), 2, "never executed twice");
}

#[test]
fn c2_lost_reply_is_resent_by_the_server_timer_not_re_executed_ethernet() {
    lost_short_reply(RpcNet::Eth);
}

#[test]
fn c2_lost_reply_is_resent_by_the_server_timer_not_re_executed_ip() {
    lost_short_reply(RpcNet::Ip);
}

/// C5: a large (BLASTed) reply is lost whole. At 8 s the server probes
/// with a header-only `0x04`; the client, still waiting, answers `0x09`;
/// the server resends the whole reply as a new BLAST message. Executed
/// once.
fn lost_large_reply(net: RpcNet) {
    let mut r = Rig::new(net);
    let runs = Arc::new(AtomicU32::new(0));
    let c = runs.clone();
    let big = pattern(4000, 9);
    let reply = big.clone();
    r.server()
        .rpc()
        .server()
        .unwrap()
        .register_fn(XRPCTEST, move |_req: &[u8]| {
            c.fetch_add(1, Ordering::Relaxed);
            reply.clone()
        })
        .unwrap();
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), big);
    r.clear_log();
    // 4000 + 36 bytes: three fragments, all lost.
    r.drop_frames(Side::Server, 0, 3, move |f: &[u8]| {
        rpc_frame(f, net).is_some_and(|b| b.op() == 1 && b.seq() != 0)
    });
    let t = r.now;
    assert_eq!(r.call(XRPCTEST, b"big one").unwrap(), big);
    assert_eq!(r.now, t + Duration::from_secs(8));
    let frames = r.frames();
    let lost: Vec<_> = frames
        .iter()
        .filter(|f| f.dropped)
        .map(|f| rpc_frame(&f.bytes, net).unwrap())
        .collect();
    assert_eq!(lost.len(), 3);
    assert!(lost
        .iter()
        .all(|b| b.num_frag() == 3 && b.seq() == lost[0].seq()));
    let fw = forward(&frames, net);
    let short: Vec<_> = fw
        .iter()
        .filter_map(|(from, at, b)| {
            Some((
                *from,
                *at - t,
                b.chan_flags()?,
                b.chan().unwrap()[12..].to_vec(),
            ))
        })
        .collect();
    let (s0, s5, s8) = (
        Duration::ZERO,
        Duration::from_secs(5),
        Duration::from_secs(8),
    );
    let len = |n: u32| n.to_be_bytes().to_vec();
    assert_eq!(
        short,
        [
            (Side::Client, s0, 0x03, len(15)),
            (Side::Client, s5, 0x07, len(15)),
            (Side::Server, s8, 0x04, len(0)),
            (Side::Client, s8, 0x09, len(0)),
        ],
        "request, retry (dropped by the server), probe 0x04, client NACK 0x09"
    );
    // The resent reply: three new fragments of a new BLAST message.
    let resent: Vec<_> = fw
        .iter()
        .filter(|(from, at, b)| {
            *from == Side::Server && *at == t + s8 && b.op() == 1 && b.seq() != 0
        })
        .map(|(_, _, b)| *b)
        .collect();
    assert_eq!(resent.len(), 3, "the whole reply again");
    assert!(
        resent.iter().all(|b| b.seq() != lost[0].seq()),
        "as a new message"
    );
    assert_eq!(runs.load(Ordering::Relaxed), 2, "executed once per call");
}

#[test]
fn c5_lost_large_reply_probe_nack_and_resend_ethernet() {
    lost_large_reply(RpcNet::Eth);
}

#[test]
fn c5_lost_large_reply_probe_nack_and_resend_ip() {
    lost_large_reply(RpcNet::Ip);
}

/// B1 through the whole stack: a 16,384-byte BLAST message (a request of
/// 16,348 bytes) loses fragment 3; the server NACKs when fragment 12
/// arrives, the client resends only fragment 3, the call runs once.
fn one_fragment_lost(net: RpcNet) {
    let (mut r, runs) = warmed_counting_rig(net);
    r.drop_frames(Side::Client, 0, 1, is_fragment(net, 0x0004));
    let req = pattern(16_384 - 36, 3);
    assert!(r.call(XRPCTEST, &req).unwrap() == req);
    let frames = r.frames();
    let from_client: Vec<_> = frames
        .iter()
        .filter(|f| f.from == Side::Client)
        .filter_map(|f| Some((f, rpc_frame(&f.bytes, net)?)))
        .filter(|(_, b)| b.seq() != 0)
        .collect();
    let (f_len, last_len) = match net {
        RpcNet::Eth => (1480u32, 16_384 - 11 * 1480),
        RpcNet::Ip => (1460u32, 16_384 - 11 * 1460),
    };
    assert_eq!(from_client.len(), 13, "12 fragments and one retransmission");
    let seq = from_client[0].1.seq();
    assert_ne!(seq, 0);
    let header = |len: u32, op: u8, mask: u16| {
        [
            be(21).as_slice(),
            &be(seq),
            &be(len),
            &12u16.to_be_bytes(),
            &[op, 0, 0, 0],
            &mask.to_be_bytes(),
        ]
        .concat()
    };
    for (i, (_, b)) in from_client[..12].iter().enumerate() {
        let len = if i == 11 { last_len } else { f_len };
        assert_eq!(b.blast, header(len, 1, 1 << i), "fragment {}", i + 1);
    }
    let (lost, lost_b) = from_client[2];
    assert!(lost.dropped);
    let (retx, retx_b) = from_client[12];
    assert_eq!(
        retx_b.blast,
        header(f_len, 3, 0x0004),
        "RETRANSMIT of fragment 3 only"
    );
    assert_eq!(retx_b.body, lost_b.body, "the same bytes");
    let nacks: Vec<_> = frames
        .iter()
        .filter(|f| f.from == Side::Server)
        .filter_map(|f| Some((f, rpc_frame(&f.bytes, net)?)))
        .filter(|(_, b)| b.op() == 2)
        .collect();
    assert_eq!(nacks.len(), 1, "one NACK");
    let (nack, nack_b) = nacks[0];
    assert_eq!(
        nack_b.blast,
        header(f_len, 2, 0x0ffb),
        "NACK: all but fragment 3"
    );
    let last = from_client[11].0;
    assert_eq!(
        nack.at, last.at,
        "sent when fragment 12 arrived (LAST_FRAG_NACKS)"
    );
    assert_eq!(retx.at, nack.at);
    assert_eq!(
        runs.load(Ordering::Relaxed),
        2,
        "delivered and executed once"
    );
    // The reply (12 fragments) came through without any NACK.
    assert!(frames
        .iter()
        .filter(|f| f.from == Side::Client)
        .filter_map(|f| rpc_frame(&f.bytes, net))
        .all(|b| b.op() != 2));
}

#[test]
fn b1_one_lost_fragment_is_nacked_and_resent_alone_ethernet() {
    one_fragment_lost(RpcNet::Eth);
}

#[test]
fn b1_one_lost_fragment_is_nacked_and_resent_alone_ip() {
    one_fragment_lost(RpcNet::Ip);
}

/// The client's fragments of fragmented messages: (time, BLAST view).
fn client_fragments(frames: &[Frame], net: RpcNet) -> Vec<(Instant, bool, RpcFrame<'_>)> {
    frames
        .iter()
        .filter(|f| f.from == Side::Client)
        .filter_map(|f| Some((f.at, f.dropped, rpc_frame(&f.bytes, net)?)))
        .filter(|(_, _, b)| b.seq() != 0)
        .collect()
}

/// The server's BLAST NACKs: (time, mask).
fn server_nacks(frames: &[Frame], net: RpcNet) -> Vec<(Instant, u16)> {
    frames
        .iter()
        .filter(|f| f.from == Side::Server)
        .filter_map(|f| Some((f.at, rpc_frame(&f.bytes, net)?)))
        .filter(|(_, b)| b.op() == 2)
        .map(|(at, b)| (at, b.mask()))
        .collect()
}

/// B2 through the whole stack: the last of 12 fragments is lost, so no
/// early NACK; the receive timer (12 × 10 ms) sends one with mask
/// `0x07FF` and only fragment 12 is resent.
fn last_fragment_lost(net: RpcNet) {
    let (mut r, runs) = warmed_counting_rig(net);
    r.drop_frames(Side::Client, 0, 1, is_fragment(net, 0x0800));
    let req = pattern(16_384 - 36, 5);
    assert!(r.call(XRPCTEST, &req).unwrap() == req);
    let frames = r.frames();
    let frags = client_fragments(&frames, net);
    assert_eq!(frags.len(), 13, "12 fragments, one retransmission");
    let first = frags[0].0;
    let ms = Duration::from_millis;
    assert_eq!(server_nacks(&frames, net), [(first + ms(120), 0x07ff)]);
    let (at, dropped, retx) = frags[12];
    assert!(!dropped);
    assert_eq!((at, retx.op(), retx.mask()), (first + ms(120), 3, 0x0800));
    assert_eq!(retx.body, frags[11].2.body, "the same bytes");
    assert_eq!(runs.load(Ordering::Relaxed), 2);
}

#[test]
fn b2_lost_last_fragment_is_nacked_on_the_timer_ethernet() {
    last_fragment_lost(RpcNet::Eth);
}

#[test]
fn b2_lost_last_fragment_is_nacked_on_the_timer_ip() {
    last_fragment_lost(RpcNet::Ip);
}

/// B3 then C4 through the whole stack: fragment 3 and every
/// retransmission of it are lost. The server NACKs when fragment 12
/// arrives and twice on its timer (120 and 360 ms later), then gives the
/// message up. CHAN recovers: the client's timer (5 s) sends a
/// header-only probe `0x05` (the request was BLASTed); the server never
/// saw that seq and answers `0x08`; the client resends the whole request
/// as a new BLAST message, which runs once.
fn fragment_never_arrives(net: RpcNet) {
    let (mut r, runs) = warmed_counting_rig(net);
    r.drop_frames(Side::Client, 0, 1, is_fragment(net, 0x0004));
    r.drop_frames(Side::Client, 0, usize::MAX, move |f: &[u8]| {
        rpc_frame(f, net).is_some_and(|b| b.op() == 3)
    });
    let t = r.now;
    let req = pattern(16_384 - 36, 6);
    assert!(r.call(XRPCTEST, &req).unwrap() == req);
    assert_eq!(
        r.now,
        t + Duration::from_secs(5),
        "recovered by the 5 s probe"
    );
    let frames = r.frames();
    let frags = client_fragments(&frames, net);
    let t12 = frags[11].0;
    let ms = Duration::from_millis;
    assert_eq!(
        server_nacks(&frames, net),
        [
            (t12, 0x0ffb),
            (t12 + ms(120), 0x0ffb),
            (t12 + ms(360), 0x0ffb)
        ],
        "three NACKs, then the partial message is dropped"
    );
    let retx: Vec<_> = frags.iter().filter(|(_, _, b)| b.op() == 3).collect();
    assert_eq!(retx.len(), 3, "fragment 3 resent once per NACK");
    assert!(retx
        .iter()
        .all(|(_, dropped, b)| *dropped && b.mask() == 0x0004));
    // CHAN: probe, server NACK, whole request again.
    let fw = forward(&frames, net);
    let chan: Vec<_> = fw
        .iter()
        .filter_map(|(from, at, b)| Some((*from, *at - t, b.chan_flags()?, b.chan_seq()?)))
        .collect();
    let s5 = Duration::from_secs(5);
    assert_eq!(
        chan[..2],
        [(Side::Client, s5, 0x05, 3), (Side::Server, s5, 0x08, 3)],
        "probe 0x05, server NACK 0x08"
    );
    let resent: Vec<_> = frags
        .iter()
        .filter(|(at, _, b)| *at == t + s5 && b.op() == 1)
        .collect();
    assert_eq!(resent.len(), 12, "the whole request, as a new message");
    let new_seq = resent[0].2.seq();
    assert_ne!(new_seq, frags[0].2.seq());
    assert!(resent
        .iter()
        .all(|(_, dropped, b)| !dropped && b.seq() == new_seq));
    let chan_hdr = &resent[0].2.body[12..28];
    assert_eq!(chan_hdr[3], 0x03, "FROM_CLIENT | USER_MSG");
    assert_eq!(chan_hdr[8..12], be(3));
    assert_eq!(runs.load(Ordering::Relaxed), 2, "executed once");
}

#[test]
fn b3_c4_fragment_never_arrives_blast_gives_up_and_chan_recovers_ethernet() {
    fragment_never_arrives(RpcNet::Eth);
}

#[test]
fn b3_c4_fragment_never_arrives_blast_gives_up_and_chan_recovers_ip() {
    fragment_never_arrives(RpcNet::Ip);
}

/// C8: no answer at all. The client retries at 5 and 15 s (intervals 5,
/// 10) and, at its 30 s deadline (pathstack's `call_timeout`; the
/// x-kernel retried for ever, §12 item 11), fails with `TimedOut`. A
/// server whose replies are all lost resends at 8, 24, 56 and 116 s
/// (intervals 8, 16, 32, 60) and never gives up by itself.
fn no_answer(net: RpcNet) {
    use pathstack::rpc::RpcError;
    let (mut r, runs) = warmed_counting_rig(net);
    r.drop_frames(Side::Server, 0, usize::MAX, is_short_reply(net));
    let t = r.now;
    let err = r.call(XRPCTEST, b"into the void").unwrap_err();
    assert!(matches!(err, RpcError::TimedOut { .. }), "{err:?}");
    assert_eq!(r.now, t + Duration::from_secs(30));
    r.run_for(Duration::from_secs(120 - 30));
    let frames = r.frames();
    let s = Duration::from_secs;
    let client: Vec<_> = frames
        .iter()
        .filter(|f| f.from == Side::Client)
        .filter_map(|f| Some((f.at - t, rpc_frame(&f.bytes, net)?.chan_flags()?)))
        .filter(|(_, fl)| fl & 0x02 != 0)
        .collect();
    assert_eq!(client, [(s(0), 0x03), (s(5), 0x07), (s(15), 0x07)]);
    let server: Vec<_> = frames
        .iter()
        .filter(|f| f.from == Side::Server && f.dropped)
        .filter_map(|f| Some((f.at - t, rpc_frame(&f.bytes, net)?.chan_flags()?)))
        .collect();
    assert_eq!(
        server,
        [
            (s(0), 0x02),
            (s(8), 0x06),
            (s(24), 0x06),
            (s(56), 0x06),
            (s(116), 0x06)
        ]
    );
    assert_eq!(runs.load(Ordering::Relaxed), 2, "executed once");
}

#[test]
fn c8_no_answer_backs_off_and_the_call_times_out_ethernet() {
    no_answer(RpcNet::Eth);
}

#[test]
fn c8_no_answer_backs_off_and_the_call_times_out_ip() {
    no_answer(RpcNet::Ip);
}

/// V1 at path level: six concurrent calls to one server. Five requests
/// leave at once on channels 1–5; the sixth waits for a channel and
/// leaves on the first one freed, after the first reply; a later call
/// takes the most recently freed channel (the pool is a stack).
fn six_concurrent_calls(net: RpcNet) {
    let mut r = Rig::with_echo(net);
    warm_up_backwards(&mut r);
    r.clear_log();
    let peer = r.server_peer();
    let calls: Vec<_> = (0..6u8)
        .map(|i| r.client.rpc().start(peer, XRPCTEST, &[i]).unwrap())
        .collect();
    let mut done = [false; 6];
    let end = r.now + Duration::from_secs(10);
    r.run_until(end, |r| {
        for (i, c) in calls.iter().enumerate() {
            if !done[i] {
                if let Some(m) = r.client.rpc().poll(c).unwrap() {
                    assert_eq!(m.as_slice(), [i as u8]);
                    done[i] = true;
                }
            }
        }
        done.iter().all(|&d| d)
    });
    assert!(done.iter().all(|&d| d), "all six calls completed");
    let frames = r.frames();
    let fw = forward(&frames, net);
    let chan_of =
        |b: &RpcFrame<'_>| u16::from_be_bytes([b.chan().unwrap()[0], b.chan().unwrap()[1]]);
    // (sender, channel, seq, data byte) in wire order.
    let seen: Vec<_> = fw
        .iter()
        .map(|(from, _, b)| {
            (
                *from,
                chan_of(b),
                b.chan_seq().unwrap(),
                b.chan_body().unwrap()[8],
            )
        })
        .collect();
    let requests: Vec<_> = seen.iter().filter(|s| s.0 == Side::Client).collect();
    assert_eq!(requests.len(), 6);
    let first_five: std::collections::BTreeSet<_> = requests[..5].iter().map(|s| s.1).collect();
    assert_eq!(first_five, (1..=5).collect(), "five channels at once");
    assert!(
        requests[..5].iter().all(|s| s.2 == 2),
        "each channel's first call: seq 2"
    );
    let first_reply = seen.iter().position(|s| s.0 == Side::Server).unwrap();
    let sixth = seen
        .iter()
        .position(|s| s.0 == Side::Client && s.3 == 5)
        .unwrap();
    assert!(sixth > first_reply, "the sixth call waited for a reply");
    assert_eq!(
        seen[sixth].1, seen[first_reply].1,
        "on the channel freed first"
    );
    assert_eq!(seen[sixth].2, 3, "its second call");
    // The channel freed last is taken first.
    let last_freed = seen.iter().rev().find(|s| s.0 == Side::Server).unwrap().1;
    r.clear_log();
    assert_eq!(r.call(XRPCTEST, b"7").unwrap(), b"7");
    let frames = r.frames();
    let next = forward(&frames, net)
        .iter()
        .find(|(from, _, _)| *from == Side::Client)
        .map(|(_, _, b)| chan_of(b))
        .unwrap();
    assert_eq!(next, last_freed, "LIFO: the most recently freed channel");
}

#[test]
fn v1_six_concurrent_calls_on_five_channels_ethernet() {
    six_concurrent_calls(RpcNet::Eth);
}

#[test]
fn v1_six_concurrent_calls_on_five_channels_ip() {
    six_concurrent_calls(RpcNet::Ip);
}
