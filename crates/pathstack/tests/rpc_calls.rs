//! End-to-end RPC calls between two hosts over the in-memory wire (issue
//! 15, tests): echo calls of every size class over Ethernet and over IP,
//! the size limit, an unknown procedure, many concurrent calls, and a
//! procedure that counts its executions. The hosts run on a hand-set
//! clock (`support/rpc_rig.rs`).

#[path = "support/rpc_rig.rs"]
mod rpc_rig;

use pathstack::core::time::Duration;
use pathstack::rpc::{RpcError, RpcNet};
use rpc_rig::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The bytes MSELECT, CHAN and BID add above BLAST (spec §9).
const ABOVE_BLAST: usize = 36;

/// BLAST's fragment payload on `net` (spec §3.3).
fn fragment_len(net: RpcNet) -> usize {
    match net {
        RpcNet::Eth => 1480,
        RpcNet::Ip => 1460,
    }
}

fn echo_sizes(net: RpcNet) {
    let mut r = Rig::with_echo(net);
    let f = fragment_len(net);
    let max = r.client.rpc().max_request().unwrap();
    assert_eq!(max, 16 * f - ABOVE_BLAST, "16 fragments less the headers");
    let sizes = [
        0,
        1,
        f - ABOVE_BLAST - 1,
        f - ABOVE_BLAST,
        f - ABOVE_BLAST + 1,
        f - 1,
        f,
        f + 1,
        2 * f,
        max,
    ];
    for (i, &len) in sizes.iter().enumerate() {
        r.clear_log();
        let req = pattern(len, i as u32 + 1);
        let reply = r
            .call(XRPCTEST, &req)
            .unwrap_or_else(|e| panic!("{len} bytes: {e}"));
        assert!(reply == req, "{net:?}: the reply to {len} bytes differs");
        // The request's frames: a short message (BLAST seq 0) below F
        // bytes above BLAST, fragments from F on (spec §3.4, B4).
        let frames = r.frames();
        let request: Vec<_> = frames
            .iter()
            .filter(|fr| fr.from == Side::Client)
            .filter_map(|fr| rpc_frame(&fr.bytes, net))
            .filter(|b| b.op() == 1)
            .collect();
        let blast_len = len + ABOVE_BLAST;
        if blast_len < f {
            assert_eq!(request.len(), 1, "{len} bytes: one short frame");
            assert_eq!(request[0].seq(), 0);
        } else {
            let n = blast_len.div_ceil(f);
            assert_eq!(request.len(), n, "{len} bytes: {n} fragments");
            assert!(request
                .iter()
                .all(|b| b.seq() != 0 && b.num_frag() as usize == n));
            let mask = request.iter().fold(0u16, |m, b| m | b.mask());
            assert_eq!(
                u32::from(mask),
                (1u32 << n) - 1,
                "{len} bytes: every fragment once"
            );
        }
    }
    assert_eq!(
        r.server().rpc().server().unwrap().calls(),
        sizes.len() as u64
    );
}

#[test]
fn echo_of_every_size_class_over_ethernet_is_exact() {
    echo_sizes(RpcNet::Eth);
}

#[test]
fn echo_of_every_size_class_over_ip_is_exact() {
    echo_sizes(RpcNet::Ip);
}

#[test]
fn a_request_one_byte_over_the_maximum_is_refused_as_too_large() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        let mut r = Rig::with_echo(net);
        let max = r.client.rpc().max_request().unwrap();
        let peer = r.server_peer();
        let err = r
            .client
            .rpc()
            .start(peer, XRPCTEST, &vec![7u8; max + 1])
            .unwrap_err();
        assert_eq!(err, RpcError::TooLarge { len: max + 1, max });
        assert_eq!(
            std::io::Error::from(err).kind(),
            std::io::ErrorKind::InvalidInput
        );
        r.run_for(Duration::from_secs(1));
        assert!(
            r.frames()
                .iter()
                .all(|f| rpc_frame(&f.bytes, net).is_none()),
            "nothing of the refused call reaches the wire"
        );
        // The stack is still usable.
        assert_eq!(r.call(XRPCTEST, b"after").unwrap(), b"after");
    }
}

#[test]
fn an_unknown_procedure_fails_with_no_chan_retransmission() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        let mut r = Rig::with_echo(net);
        // Boot ids agreed first, so that the request below is a plain one.
        assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
        r.clear_log();
        let err = r.call(1003, b"who?").unwrap_err();
        assert!(
            matches!(err, RpcError::NoSuchProcedure { id: 1003, .. }),
            "{err:?}"
        );
        assert_eq!(
            std::io::Error::from(err).kind(),
            std::io::ErrorKind::NotFound
        );
        // M1: the reply is MSELECT's failure, and CHAN completes the
        // exchange: for a minute, the client never sends the request
        // again (a server probe, answered by the client's explicit ACK,
        // is all that follows).
        r.run_for(Duration::from_secs(60));
        let frames = r.frames();
        let chan: Vec<_> = frames
            .iter()
            .filter_map(|f| Some((f.from, rpc_frame(&f.bytes, net)?)))
            .filter(|(_, b)| b.chan().is_some())
            .collect();
        let requests: Vec<_> = chan
            .iter()
            .filter(|(from, b)| *from == Side::Client && b.chan_flags().unwrap() & 0x02 != 0)
            .collect();
        assert_eq!(requests.len(), 1, "one request, no retransmission");
        assert_eq!(requests[0].1.chan_flags(), Some(0x03));
        let failure: Vec<_> = chan
            .iter()
            .filter(|(from, b)| *from == Side::Server && b.chan_flags() == Some(0x02))
            .collect();
        assert_eq!(failure.len(), 1, "one reply");
        assert_eq!(
            failure[0].1.chan_body().unwrap(),
            [0, 0, 0x03, 0xeb, 0, 0, 0, 2],
            "MSELECT {{1003, SEL_FAIL}} and no data"
        );
        assert_eq!(
            r.server().rpc().server().unwrap().calls(),
            1,
            "only the warm-up ran"
        );
    }
}

/// Executions per request id.
type Counts = Arc<Mutex<HashMap<u32, u32>>>;

/// A procedure that counts its executions per request (the request's
/// first four bytes are its id) and answers with the request reversed.
fn counting_procedure(counts: Counts) -> impl FnMut(&[u8]) -> Vec<u8> + Send {
    move |req: &[u8]| {
        let id = u32::from_be_bytes(req[..4].try_into().unwrap());
        *counts.lock().unwrap().entry(id).or_default() += 1;
        req.iter().rev().copied().collect()
    }
}

/// Both hosts on `net`, the server serving procedure 7 with a
/// [`counting_procedure`] whose counts are returned.
fn counting_rig(net: RpcNet) -> (Rig, Counts) {
    let mut r = Rig::new(net);
    let counts = Counts::default();
    r.server()
        .rpc()
        .server()
        .unwrap()
        .register_fn(7, counting_procedure(counts.clone()))
        .unwrap();
    (r, counts)
}

fn request(id: u32, len: usize) -> Vec<u8> {
    let mut r = id.to_be_bytes().to_vec();
    r.extend(pattern(len, id));
    r
}

#[test]
fn forty_concurrent_calls_on_five_channels_all_complete_exactly() {
    for net in [RpcNet::Eth, RpcNet::Ip] {
        let (mut r, counts) = counting_rig(net);
        let peer = r.server_peer();
        // Sizes from short to several fragments, so that short and
        // BLASTed calls interleave on the channels.
        let calls: Vec<_> = (0..40u32)
            .map(|i| {
                let req = request(i, (i as usize * 997) % 6000);
                let call = r.client.rpc().start(peer, 7, &req).expect("start");
                (i, req, call)
            })
            .collect();
        assert_eq!(r.client.rpc().in_flight(), 40);
        let mut done: HashMap<u32, Vec<u8>> = HashMap::new();
        let end = r.now + Duration::from_secs(60);
        r.run_until(end, |r| {
            for (i, _, call) in &calls {
                if done.contains_key(i) {
                    continue;
                }
                match r.client.rpc().poll(call) {
                    Ok(Some(m)) => {
                        done.insert(*i, m.as_slice().to_vec());
                    }
                    Ok(None) => {}
                    Err(e) => panic!("call {i}: {e}"),
                }
            }
            done.len() == calls.len()
        });
        assert_eq!(done.len(), 40, "{net:?}: every call completed");
        for (i, req, _) in &calls {
            let want: Vec<u8> = req.iter().rev().copied().collect();
            assert!(done[i] == want, "{net:?}: call {i}'s reply");
        }
        let counts = counts.lock().unwrap();
        assert_eq!(counts.len(), 40);
        assert!(
            counts.values().all(|&n| n == 1),
            "each ran once: {counts:?}"
        );
        assert_eq!(r.client.rpc().in_flight(), 0);
        // More than five calls at once, and VCHAN used its five
        // channels: the requests name channels 1 to 5.
        let chans: std::collections::BTreeSet<u16> = r
            .frames()
            .iter()
            .filter(|f| f.from == Side::Client)
            .filter_map(|f| rpc_frame(&f.bytes, net))
            .filter_map(|b| b.chan().map(|c| u16::from_be_bytes([c[0], c[1]])))
            .collect();
        assert_eq!(
            chans,
            (1..=5).collect(),
            "{net:?}: short requests on channels 1-5"
        );
    }
}

#[test]
fn a_counting_procedure_runs_exactly_once_per_call() {
    let (mut r, counts) = counting_rig(RpcNet::Eth);
    for i in 0..100u32 {
        let req = request(i, (i as usize * 389) % 3000);
        let reply = r.call(7, &req).unwrap();
        assert!(reply.iter().eq(req.iter().rev()), "call {i}");
        assert_eq!(
            counts.lock().unwrap().get(&i),
            Some(&1),
            "call {i} ran once"
        );
    }
    // Long after: the last reply's probe and the client's explicit ACK do
    // not run anything again.
    r.run_for(Duration::from_secs(120));
    let counts = counts.lock().unwrap();
    assert_eq!(counts.len(), 100);
    assert!(counts.values().all(|&n| n == 1));
    assert_eq!(r.server().rpc().server().unwrap().calls(), 100);
}

/// E1: the x-kernel's RPC test, 100 echo round trips at each of 1000,
/// 2000, 4000, 8000 and 16000 bytes. Without loss every call costs its
/// request's and its reply's fragments and nothing else (no NACK, no
/// CHAN control packet: each request acknowledges the previous reply);
/// the last reply is acknowledged 8 s later by the server's probe and
/// the client's explicit ACK.
fn xrpctest_lengths(net: RpcNet) {
    let mut r = Rig::with_echo(net);
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
    let f = fragment_len(net);
    for (len, frags) in [(1000, 1), (2000, 2), (4000, 3), (8000, 6), (16000, 11)] {
        assert_eq!((len + ABOVE_BLAST).div_ceil(f), frags);
        r.clear_log();
        let t = r.now;
        for i in 0..100u32 {
            let req = pattern(len, i);
            assert!(
                r.call(XRPCTEST, &req).unwrap() == req,
                "{len} bytes, call {i}"
            );
        }
        assert_eq!(r.now, t, "no timer was needed");
        let frames = r.frames();
        for side in [Side::Client, Side::Server] {
            let mine: Vec<_> = frames
                .iter()
                .filter(|fr| fr.from == side)
                .filter_map(|fr| rpc_frame(&fr.bytes, net))
                .collect();
            assert_eq!(
                mine.len(),
                100 * frags,
                "{len} bytes, {side:?}: data frames only"
            );
            assert!(
                mine.iter().all(|b| b.op() == 1),
                "{len} bytes, {side:?}: no NACK or retransmission"
            );
            if frags == 1 {
                assert!(mine.iter().all(|b| b.seq() == 0), "short messages");
            } else {
                assert!(mine.iter().all(|b| b.seq() != 0), "fragments");
            }
        }
    }
    // 400 fragmented requests in no time: more than BLAST's 64
    // outstanding messages, so held copies were given up early rather
    // than new messages lost.
    let s = r.client.stack();
    let stats = s.module_stats(s.module_id("blast").unwrap()).unwrap();
    let evicted = stats.iter().find(|(k, _)| k == "evicted").unwrap().1;
    assert!(evicted >= 400 - 64, "evicted {evicted}");
    // The last reply (16000 bytes, BLASTed): probed header-only (0x04) 8 s
    // later, acknowledged explicitly (0x01, seq + 1); then quiet.
    r.clear_log();
    let t = r.now;
    r.run_for(Duration::from_secs(60));
    let frames = r.frames();
    let chan: Vec<_> = frames
        .iter()
        .filter_map(|fr| Some((fr.from, fr.at - t, rpc_frame(&fr.bytes, net)?)))
        .map(|(from, at, b)| (from, at, b.chan_flags(), b.chan_seq()))
        .collect();
    let s8 = Duration::from_secs(8);
    // The warm-up was seq 2; 500 calls later the last had seq 502.
    assert_eq!(
        chan,
        [
            (Side::Server, s8, Some(0x04), Some(502)),
            (Side::Client, s8, Some(0x01), Some(503)),
        ]
    );
}

#[test]
fn e1_xrpctest_lengths_cost_only_their_fragments_ethernet() {
    xrpctest_lengths(RpcNet::Eth);
}

#[test]
fn e1_xrpctest_lengths_cost_only_their_fragments_ip() {
    xrpctest_lengths(RpcNet::Ip);
}

#[test]
fn calls_beyond_the_in_flight_bound_are_refused_busy_and_the_rest_complete() {
    let (mut r, counts) = counting_rig(RpcNet::Eth);
    let peer = r.server_peer();
    let mut calls = Vec::new();
    let mut busy = 0;
    for i in 0..1100u32 {
        match r.client.rpc().start(peer, 7, &request(i, 16)) {
            Ok(c) => calls.push((i, c)),
            Err(e) => {
                assert_eq!(e, RpcError::Busy(1024), "call {i}");
                assert_eq!(
                    std::io::Error::from(e).kind(),
                    std::io::ErrorKind::WouldBlock
                );
                busy += 1;
            }
        }
    }
    assert_eq!((calls.len(), busy), (1024, 76), "the call table's bound");
    let mut outcomes: HashMap<u32, Result<Vec<u8>, RpcError>> = HashMap::new();
    let end = r.now + Duration::from_secs(600);
    r.run_until(end, |r| {
        for (i, c) in &calls {
            if !outcomes.contains_key(i) {
                match r.client.rpc().poll(c) {
                    Ok(None) => {}
                    Ok(Some(m)) => {
                        outcomes.insert(*i, Ok(m.as_slice().to_vec()));
                    }
                    Err(e) => {
                        outcomes.insert(*i, Err(e));
                    }
                }
            }
        }
        outcomes.len() == calls.len()
    });
    assert_eq!(outcomes.len(), 1024, "every accepted call ended");
    let failed: Vec<_> = outcomes.iter().filter(|(_, o)| o.is_err()).collect();
    assert!(failed.is_empty(), "failures: {failed:?}");
    for (i, _) in &calls {
        let want: Vec<u8> = request(*i, 16).into_iter().rev().collect();
        assert!(outcomes[i].as_ref().unwrap() == &want, "call {i}");
    }
    let counts = counts.lock().unwrap();
    assert_eq!(counts.len(), 1024);
    assert!(counts.values().all(|&n| n == 1));
    drop(counts);
    // Room again.
    assert_eq!(r.call(7, &request(5000, 3)).unwrap(), {
        let mut v = request(5000, 3);
        v.reverse();
        v
    });
}

#[test]
fn an_abandoned_call_never_hands_its_late_reply_to_another() {
    let mut r = Rig::with_echo(RpcNet::Eth);
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
    // The first reply of the next call is lost: it arrives only with the
    // server's resend, 8 s later.
    r.drop_frames(Side::Server, 0, 1, |f: &[u8]| {
        rpc_frame(f, RpcNet::Eth)
            .and_then(|b| b.chan_body())
            .is_some_and(|d| d.ends_with(b"abandoned"))
    });
    let peer = r.server_peer();
    let a = r.client.rpc().start(peer, XRPCTEST, b"abandoned").unwrap();
    r.run_for(Duration::from_millis(10));
    r.client.rpc().abandon(a);
    assert_eq!(
        r.client.rpc().in_flight(),
        1,
        "its slot waits for the outcome"
    );
    // Calls made meanwhile get their own replies, before and after the
    // abandoned one's reply comes in.
    for i in 0..20u8 {
        let req = [b'b', i];
        assert_eq!(r.call(XRPCTEST, &req).unwrap(), req);
        r.run_for(Duration::from_millis(500));
    }
    assert_eq!(
        r.client.rpc().in_flight(),
        0,
        "the late outcome freed the slot"
    );
    assert_eq!(r.client.rpc().poll(&a).unwrap_err(), RpcError::NoSuchCall);
}
