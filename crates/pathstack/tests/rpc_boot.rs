//! Boot-id agreement at path level (spec §11.3 D2, D3): BIDCTL's
//! handshake between two whole RPC hosts over the in-memory wire, with
//! frames lost or injected (`support/rpc_rig.rs`).

#[path = "support/rpc_rig.rs"]
mod rpc_rig;

use pathstack::core::time::Duration;
use pathstack::rpc::{Echo, RpcError, RpcNet};
use rpc_rig::*;

const XRPCTEST: u32 = 1002;

/// BIDCTL frames of `side`, not the boot broadcast: (time, header).
fn handshake(
    frames: &[Frame],
    side: Side,
    net: RpcNet,
) -> Vec<(pathstack::core::time::Instant, Vec<u8>)> {
    frames
        .iter()
        .filter(|f| f.from == side)
        .filter_map(|f| Some((f.at, bidctl_frame(&f.bytes, net)?.to_vec())))
        .filter(|(_, h)| h[..2] != [0, 4])
        .collect()
}

/// D2: the server's answers are lost, so the client's QUERY is repeated
/// with the same tag after 5, 10, 20, 40, 60, 60 s. The call waiting for
/// the handshake fails at its 30 s deadline; once the answers get
/// through, calls work.
fn lost_query(net: RpcNet) {
    let mut r = Rig::new(net);
    r.server()
        .rpc_server()
        .unwrap()
        .register(XRPCTEST, Echo)
        .unwrap();
    // The boot broadcasts first, while the hosts do not know each other
    // (ignored, §5.5): a BCAST reaching a peer in OPEN would repeat its
    // QUERY once more, after a random delay.
    r.run_for(Duration::from_secs(5));
    r.drop_frames(Side::Server, 0, usize::MAX, move |f: &[u8]| {
        bidctl_frame(f, net).is_some_and(|h| h[..2] != [0, 4])
    });
    let t = r.now;
    let err = r.call(XRPCTEST, b"first").unwrap_err();
    assert!(matches!(err, RpcError::TimedOut { .. }), "{err:?}");
    assert_eq!(r.now, t + Duration::from_secs(30));
    r.run_for(Duration::from_secs(200 - 30));
    let frames = r.frames();
    let queries: Vec<_> = handshake(&frames, Side::Client, net)
        .into_iter()
        .filter(|(_, h)| h[1] & 0x01 != 0)
        .collect();
    let secs: Vec<_> = queries
        .iter()
        .map(|(at, _)| (*at - t).as_nanos() / 1_000_000_000)
        .collect();
    assert_eq!(
        secs,
        [0, 5, 15, 35, 75, 135, 195],
        "intervals 5, 10, 20, 40, 60, 60"
    );
    let tag = &queries[0].1[12..16];
    assert_ne!(tag, [0; 4]);
    assert!(
        queries.iter().all(|(_, h)| &h[12..16] == tag),
        "the same tag every time"
    );
    assert!(
        queries.iter().all(|(_, h)| h[8..12] == [0; 4]),
        "peer still unknown"
    );
    // The answers get through from now on: at the next repeat (255 s) the
    // handshake completes, and calls work.
    r.clear_log();
    r.run_for(Duration::from_secs(60));
    assert_eq!(r.call(XRPCTEST, b"later").unwrap(), b"later");
}

#[test]
fn d2_lost_query_is_repeated_with_the_same_tag_and_backs_off_ethernet() {
    lost_query(RpcNet::Eth);
}

#[test]
fn d2_lost_query_is_repeated_with_the_same_tag_and_backs_off_ip() {
    lost_query(RpcNet::Ip);
}

/// D3: a stray packet with a foreign srcBid makes the server's BIDCTL
/// query the client; the client answers with its real boot id (a false
/// alarm): back to NORMAL with no `PEER_REBOOTED`, so a call the server
/// has outstanding to the client is not failed and completes.
#[test]
fn d3_a_stray_boot_id_is_a_false_alarm_without_peer_rebooted() {
    let net = RpcNet::Eth;
    let mut r = Rig::new(net);
    r.server()
        .rpc_server()
        .unwrap()
        .register(XRPCTEST, Echo)
        .unwrap();
    r.client
        .rpc_server()
        .unwrap()
        .register(XRPCTEST, Echo)
        .unwrap();
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
    let template = r
        .frames()
        .iter()
        .find(|f| {
            f.from == Side::Client && rpc_frame(&f.bytes, net).is_some_and(|b| b.chan().is_some())
        })
        .unwrap()
        .bytes
        .clone();
    let (cb, sb) = (boot_id(&r.client), boot_id(r.server()));
    // A call from the server to the client whose reply is lost: it stays
    // outstanding on the server (its client side) for a while.
    r.clear_log();
    r.drop_frames(Side::Client, 0, 1, move |f: &[u8]| {
        rpc_frame(f, net)
            .and_then(|b| b.chan_body())
            .is_some_and(|d| d.ends_with(b"outstanding"))
    });
    let peer = r.client_peer();
    let call = r
        .server()
        .rpc_start(peer, XRPCTEST, b"outstanding")
        .unwrap();
    r.run_for(Duration::from_millis(10));
    assert_eq!(r.server().rpc_poll(&call).unwrap(), None);
    // The stray: the client's request with a foreign srcBid.
    r.clear_log();
    let mut stray = template.clone();
    stray[34..38].copy_from_slice(&(cb ^ 0x0100).to_be_bytes());
    r.inject(Side::Client, &stray);
    r.run_for(Duration::from_millis(10));
    let frames = r.frames();
    let from_server = handshake(&frames, Side::Server, net);
    let from_client = handshake(&frames, Side::Client, net);
    assert_eq!(from_server.len(), 1, "one QUERY: {from_server:?}");
    let q = &from_server[0].1;
    assert_eq!(q[..2], [0, 1]);
    assert_eq!(q[4..12], [sb.to_be_bytes(), cb.to_be_bytes()].concat());
    assert_eq!(from_client.len(), 1, "one RESPONSE: {from_client:?}");
    let a = &from_client[0].1;
    assert_eq!(a[..2], [0, 2]);
    assert_eq!(a[4..8], cb.to_be_bytes(), "the client's real boot id");
    assert_eq!(a[16..20], q[12..16]);
    // No PEER_REBOOTED: the outstanding call is still waiting, and its
    // retransmission (5 s after it started) completes it.
    assert_eq!(r.server().rpc_poll(&call).unwrap(), None);
    let mut reply = None;
    let end = r.now + Duration::from_secs(10);
    r.run_until(end, |r| {
        reply = r.server().rpc_poll(&call).unwrap();
        reply.is_some()
    });
    assert_eq!(
        reply.expect("the call completed").as_slice(),
        b"outstanding"
    );
    // And the client's calls still run on their old channel (seq
    // continues; a disabled channel would have been replaced).
    r.clear_log();
    assert_eq!(r.call(XRPCTEST, b"next").unwrap(), b"next");
    let seq = r
        .frames()
        .iter()
        .filter(|f| f.from == Side::Client)
        .find_map(|f| {
            let b = rpc_frame(&f.bytes, net)?;
            (b.chan_flags()? & 0x03 == 0x03)
                .then(|| b.chan_seq())
                .flatten()
        })
        .unwrap();
    assert_eq!(seq, 3, "channel 1's next call after the warm-up's seq 2");
}

/// D1 at path level: the first call to a peer finds its boot id unknown;
/// BID holds the request back, BIDCTL queries, and on FIRST_CONTACT CHAN
/// resends the request at once (OSF, spec §6.4) rather than after 5 s —
/// as its timer would, with ACK_REQUESTED (`0x07`), which the server
/// acknowledges before it replies.
fn cold_start(net: RpcNet) {
    let mut r = Rig::new(net);
    r.server()
        .rpc_server()
        .unwrap()
        .register(XRPCTEST, Echo)
        .unwrap();
    r.run_for(Duration::from_secs(5));
    r.clear_log();
    let t = r.now;
    assert_eq!(r.call(XRPCTEST, b"first").unwrap(), b"first");
    assert_eq!(r.now, t, "no timer waited");
    let frames = r.frames();
    let seen: Vec<_> = frames
        .iter()
        .filter_map(|f| {
            if let Some(h) = bidctl_frame(&f.bytes, net) {
                return Some((f.from, "bidctl", u16::from_be_bytes([h[0], h[1]])));
            }
            let b = rpc_frame(&f.bytes, net)?;
            Some((f.from, "chan", u16::from(b.chan_flags()?)))
        })
        .collect();
    assert_eq!(
        seen,
        [
            (Side::Client, "bidctl", 0x0001),
            (Side::Server, "bidctl", 0x0003),
            (Side::Client, "bidctl", 0x0002),
            (Side::Client, "chan", 0x07),
            (Side::Server, "chan", 0x00),
            (Side::Server, "chan", 0x02),
        ],
        "QUERY, RESPONSE|QUERY, RESPONSE, request, ACK, reply"
    );
}

#[test]
fn d1_cold_start_resends_the_request_at_first_contact_ethernet() {
    cold_start(RpcNet::Eth);
}

#[test]
fn d1_cold_start_resends_the_request_at_first_contact_ip() {
    cold_start(RpcNet::Ip);
}
