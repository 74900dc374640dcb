//! Crafted frames into a running RPC server (spec §11.1 BIDCTL, §11.2
//! B6, §11.3 D6, §11.4 C7), over Ethernet on the in-memory wire: each
//! frame is a real request the client sent, changed in one place, and
//! put on the wire as the client's (`support/rpc_rig.rs`). What the
//! server does is read from the frames it sends back and from a
//! procedure that records every request it runs.

#[path = "support/rpc_rig.rs"]
mod rpc_rig;

use pathstack::core::time::Duration;
use pathstack::rpc::RpcNet;
use rpc_rig::*;
use std::sync::{Arc, Mutex};

const XRPCTEST: u32 = 1002;
const NET: RpcNet = RpcNet::Eth;
/// Offsets in an Ethernet RPC frame: BLAST, BID, CHAN, MSELECT, data.
const BLAST: usize = 14;
const BID: usize = 34;
const CHAN: usize = 46;
const DATA: usize = 70;

struct Setup {
    r: Rig,
    /// Every request the procedure ran, in order.
    ran: Arc<Mutex<Vec<Vec<u8>>>>,
    /// The client's request frame of the warm-up call (chan 1, seq 2).
    template: Vec<u8>,
    client_bid: u32,
    server_bid: u32,
}

fn setup() -> Setup {
    let mut r = Rig::new(NET);
    let ran: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let log = ran.clone();
    r.server()
        .rpc()
        .server()
        .unwrap()
        .register_fn(XRPCTEST, move |req: &[u8]| {
            log.lock().unwrap().push(req.to_vec());
            req.to_vec()
        })
        .unwrap();
    assert_eq!(r.call(XRPCTEST, b"template").unwrap(), b"template");
    // Let the server's probe and the client's explicit ACK pass, so that
    // nothing of the warm-up is pending.
    r.run_for(Duration::from_secs(10));
    let template = r
        .frames()
        .iter()
        .find(|f| {
            f.from == Side::Client
                && rpc_frame(&f.bytes, NET)
                    .is_some_and(|b| b.chan_flags().is_some_and(|fl| fl & 0x02 != 0))
        })
        .expect("the warm-up request")
        .bytes
        .clone();
    assert_eq!(template.len(), DATA + 8);
    let (client_bid, server_bid) = (boot_id(&r.client), boot_id(r.server()));
    r.clear_log();
    ran.lock().unwrap().clear();
    Setup {
        r,
        ran,
        template,
        client_bid,
        server_bid,
    }
}

/// A request on channel `chan` with `seq`, CHAN `len` and `data` (BLAST's
/// `len` fits the bytes sent), from the template.
fn request(s: &Setup, chan: u16, seq: u32, chan_len: u32, data: &[u8]) -> Vec<u8> {
    let mut f = s.template[..DATA].to_vec();
    f.extend_from_slice(data);
    let blast_len = (f.len() - BID) as u32;
    f[BLAST + 8..BLAST + 12].copy_from_slice(&blast_len.to_be_bytes());
    f[CHAN..CHAN + 2].copy_from_slice(&chan.to_be_bytes());
    f[CHAN + 3] = 0x03;
    f[CHAN + 8..CHAN + 12].copy_from_slice(&seq.to_be_bytes());
    f[CHAN + 12..CHAN + 16].copy_from_slice(&chan_len.to_be_bytes());
    f
}

/// Injects `frame` from the client and lets both hosts run for a second.
fn inject(s: &mut Setup, frame: &[u8]) {
    s.r.clear_log();
    s.r.inject(Side::Client, frame);
    s.r.run_for(Duration::from_secs(1));
}

fn server_frames(s: &Setup) -> Vec<Vec<u8>> {
    s.r.frames()
        .into_iter()
        .filter(|f| f.from == Side::Server)
        .map(|f| f.bytes)
        .collect()
}

fn ran(s: &Setup) -> Vec<Vec<u8>> {
    std::mem::take(&mut *s.ran.lock().unwrap())
}

#[test]
fn injected_requests_prove_the_template_runs() {
    // The control for every test below: the unchanged form of a crafted
    // request (a new channel, seq 2, exact length) runs and is answered.
    let mut s = setup();
    let f = request(&s, 9, 2, 8 + 5, b"hello");
    inject(&mut s, &f);
    assert_eq!(ran(&s), [b"hello".to_vec()]);
    let replies: Vec<_> = server_frames(&s)
        .iter()
        .filter_map(|b| {
            let r = rpc_frame(b, NET)?;
            Some((r.chan()?.to_vec(), r.chan_body()?.to_vec()))
        })
        .collect();
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].0[..4], [0, 9, 0, 0x02], "reply on channel 9");
    assert_eq!(replies[0].1[8..], *b"hello");
}

#[test]
fn c7_old_and_current_seqs_are_dropped_without_running() {
    let mut s = setup();
    let f = request(&s, 9, 5, 8 + 3, b"new");
    inject(&mut s, &f);
    assert_eq!(ran(&s), [b"new".to_vec()]);
    // Older than the channel's seq: dropped in every state.
    for seq in [1, 2, 4] {
        let f = request(&s, 9, seq, 8 + 3, b"old");
        inject(&mut s, &f);
        assert!(ran(&s).is_empty(), "seq {seq} ran");
        assert!(server_frames(&s).is_empty(), "seq {seq} answered");
    }
    // The current seq again (the reply is waiting for its ACK): dropped.
    inject(&mut s, &f);
    assert!(ran(&s).is_empty());
    assert!(server_frames(&s).is_empty());
}

#[test]
fn c7_a_length_beyond_the_bytes_is_dropped_a_shorter_one_truncates() {
    let mut s = setup();
    let f = request(&s, 9, 2, 8 + 6, b"hello");
    inject(&mut s, &f);
    assert!(ran(&s).is_empty(), "len larger than the payload: dropped");
    assert!(server_frames(&s).is_empty());
    let f = request(&s, 9, 2, 8 + 3, b"hello");
    inject(&mut s, &f);
    assert_eq!(ran(&s), [b"hel".to_vec()], "len smaller: truncated");
}

#[test]
fn d6_a_stale_destination_boot_id_is_dropped_and_answered_with_an_empty_bid_message() {
    let mut s = setup();
    let mut f = request(&s, 9, 2, 8 + 5, b"stale");
    f[BID + 4..BID + 8].copy_from_slice(&(s.server_bid ^ 0x0100).to_be_bytes());
    inject(&mut s, &f);
    assert!(ran(&s).is_empty(), "not for this incarnation: never runs");
    let answers: Vec<_> = server_frames(&s)
        .iter()
        .filter_map(|b| rpc_frame(b, NET).map(|r| r.body.to_vec()))
        .collect();
    assert_eq!(answers.len(), 1, "one empty BID message");
    assert_eq!(answers[0].len(), 12, "header only");
    assert_eq!(
        answers[0][..4],
        s.server_bid.to_be_bytes(),
        "the new srcBid"
    );
    assert_eq!(answers[0][4..8], s.client_bid.to_be_bytes());
}

/// A BIDCTL frame from the client, from `header` (checksum filled in).
fn bidctl(s: &Setup, mut header: [u8; 20]) -> Vec<u8> {
    seal_bidctl(&mut header);
    let mut f = s.template[..14].to_vec();
    f[12..14].copy_from_slice(&[0x30, 0x06]);
    f.extend_from_slice(&header);
    f
}

fn query(s: &Setup, tag: u32) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[1] = 0x01;
    h[4..8].copy_from_slice(&s.client_bid.to_be_bytes());
    h[8..12].copy_from_slice(&s.server_bid.to_be_bytes());
    h[12..16].copy_from_slice(&tag.to_be_bytes());
    h
}

fn bidctl_answers(s: &Setup) -> Vec<Vec<u8>> {
    server_frames(s)
        .iter()
        .filter_map(|b| bidctl_frame(b, NET).map(<[u8]>::to_vec))
        .collect()
}

#[test]
fn bidctl_answers_a_query_and_drops_it_with_any_bit_flipped() {
    let mut s = setup();
    let tag = 0x2f5e_0abc;
    let good = bidctl(&s, query(&s, tag));
    inject(&mut s, &good);
    let a = bidctl_answers(&s);
    assert_eq!(a.len(), 1, "a RESPONSE");
    assert_eq!(a[0][..2], [0, 2]);
    assert_eq!(a[0][4..8], s.server_bid.to_be_bytes());
    assert_eq!(a[0][8..12], s.client_bid.to_be_bytes());
    assert_eq!(a[0][16..20], tag.to_be_bytes());
    // §11.1: flipping any bit must make the receiver drop the packet.
    for bit in 0..160 {
        let mut f = good.clone();
        f[14 + bit / 8] ^= 0x80 >> (bit % 8);
        inject(&mut s, &f);
        assert!(
            bidctl_answers(&s).is_empty(),
            "bit {bit} flipped, still answered"
        );
    }
    // And the peer is still known: calls work.
    s.r.clear_log();
    assert_eq!(s.r.call(XRPCTEST, b"still").unwrap(), b"still");
}

#[test]
fn d6_bidctl_answers_a_stale_destination_with_a_null_message() {
    let mut s = setup();
    let mut h = [0u8; 20];
    h[4..8].copy_from_slice(&s.client_bid.to_be_bytes());
    h[8..12].copy_from_slice(&(s.server_bid ^ 0x0100).to_be_bytes());
    let f = bidctl(&s, h);
    inject(&mut s, &f);
    let a = bidctl_answers(&s);
    assert_eq!(a.len(), 1, "a null message");
    assert_eq!(a[0][..2], [0, 0], "flags 0");
    assert_eq!(a[0][4..8], s.server_bid.to_be_bytes());
    assert_eq!(a[0][8..12], s.client_bid.to_be_bytes());
    assert_eq!(a[0][12..20], [0; 8]);
}

#[test]
fn b6_nack_or_retransmit_for_an_unknown_message_is_dropped_silently() {
    let mut s = setup();
    for op in [2u8, 3] {
        let mut f = s.template[..BID].to_vec();
        f[BLAST + 4..BLAST + 8].copy_from_slice(&999u32.to_be_bytes());
        f[BLAST + 8..BLAST + 12].copy_from_slice(&1480u32.to_be_bytes());
        f[BLAST + 12..BLAST + 14].copy_from_slice(&2u16.to_be_bytes());
        f[BLAST + 14] = op;
        f[BLAST + 18..BLAST + 20].copy_from_slice(&1u16.to_be_bytes());
        if op == 3 {
            f.extend(pattern(1480, 1));
        }
        inject(&mut s, &f);
        assert!(server_frames(&s).is_empty(), "op {op}: no answer");
        assert!(ran(&s).is_empty());
    }
    // Nothing was left behind that changes what a call does.
    assert_eq!(s.r.call(XRPCTEST, b"after").unwrap(), b"after");
    assert_eq!(ran(&s), [b"after".to_vec()]);
}

#[test]
fn b8_padding_after_blast_len_is_cut_off() {
    let mut s = setup();
    let mut f = request(&s, 9, 2, 8 + 5, b"hello");
    f.extend_from_slice(&[0xee; 20]);
    inject(&mut s, &f);
    assert_eq!(
        ran(&s),
        [b"hello".to_vec()],
        "the request without the padding"
    );
}

#[test]
fn b5_fragments_in_reverse_order_and_duplicated_make_one_message() {
    let mut s = setup();
    // The client's next call, 5000 bytes (4 fragments): its fragments
    // never reach the server on their own ...
    s.r.clear_log();
    s.r.drop_frames(Side::Client, 0, 4, |f: &[u8]| {
        rpc_frame(f, NET).is_some_and(|b| b.op() == 1 && b.seq() != 0)
    });
    let req = pattern(5000, 4);
    let peer = s.r.server_peer();
    let call = s.r.client.rpc().start(peer, XRPCTEST, &req).unwrap();
    s.r.run_for(Duration::from_millis(1));
    let frags: Vec<Vec<u8>> =
        s.r.frames()
            .iter()
            .filter(|f| f.dropped)
            .map(|f| f.bytes.clone())
            .collect();
    assert_eq!(frags.len(), 4);
    assert!(ran(&s).is_empty());
    // ... but in reverse order, the third one twice.
    s.r.clear_log();
    for f in [&frags[3], &frags[2], &frags[2], &frags[1], &frags[0]] {
        s.r.inject(Side::Client, f);
    }
    let out =
        s.r.finish(&call, Duration::from_secs(1))
            .expect("the reply");
    assert!(out.unwrap() == req);
    assert_eq!(ran(&s), std::slice::from_ref(&req), "one message, run once");
    s.r.run_for(Duration::from_secs(1));
    // The last fragment came first, with holes behind it: one immediate
    // NACK (LAST_FRAG_NACKS, §3.5) saying only fragment 4 is there; the
    // client's answer to it found the message already whole.
    let nacks: Vec<u16> = server_frames(&s)
        .iter()
        .filter_map(|b| rpc_frame(b, NET))
        .filter(|b| b.op() == 2)
        .map(|b| b.mask())
        .collect();
    assert_eq!(nacks, [0x0008]);
    assert!(ran(&s).is_empty(), "the retransmissions ran nothing again");
}
