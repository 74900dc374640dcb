//! Reboots at path level (spec §11.4 C9, C10): a host is dropped and a
//! new one, with a new boot id, is built on the same wire end
//! (`support/rpc_rig.rs`), while a call is in progress.

#[path = "support/rpc_rig.rs"]
mod rpc_rig;

use pathstack::core::time::Duration;
use pathstack::rpc::{RpcError, RpcNet};
use rpc_rig::*;

/// C9: the server reboots while a call is on the wire. The request
/// reaches the new incarnation with the old boot id; its BID drops it
/// and the two BIDCTLs confirm the new boot id; the call fails with
/// `PeerRebooted`. Later calls run on new channels from seq 2.
fn server_reboot(net: RpcNet) {
    let mut r = Rig::new(net);
    let old_runs = counting_echo(r.server());
    assert_eq!(r.call(XRPCTEST, b"before").unwrap(), b"before");
    let (client_bid, old_bid) = (boot_id(&r.client), boot_id(r.server()));

    let peer = r.server_peer();
    let call = r.client.rpc().start(peer, XRPCTEST, b"mid-call").unwrap();
    r.client.poll();
    assert!(
        r.frames().iter().any(|f| f.from == Side::Client
            && rpc_frame(&f.bytes, net)
                .and_then(|b| b.chan_body())
                .is_some_and(|b| b.ends_with(b"mid-call"))),
        "the request is on the wire"
    );
    r.server_down();
    r.clear_log();
    let t = r.now;
    let new_runs = counting_echo(r.server_up());
    let new_bid = boot_id(r.server());
    assert_ne!(new_bid, old_bid);

    let out = r
        .finish(&call, Duration::from_secs(60))
        .expect("an outcome");
    let err = out.unwrap_err();
    assert!(
        matches!(err, RpcError::PeerRebooted { id: XRPCTEST, .. }),
        "{err:?}"
    );
    assert_eq!(
        std::io::Error::from(err).kind(),
        std::io::ErrorKind::ConnectionReset
    );
    assert!(
        r.now < t + Duration::from_secs(5),
        "detected before the client's first retransmission ({} after the reboot)",
        r.now - t
    );
    let frames = r.frames();
    // The new incarnation does not know the client: its BID session is
    // inactive and drops the stale request (spec §4.3; no empty BID
    // answer, which §4.3 gives only an active session), and asks BIDCTL,
    // which queries the client with the request's boot id as the hint.
    assert!(
        frames
            .iter()
            .filter(|f| f.from == Side::Server)
            .all(|f| rpc_frame(&f.bytes, net).is_none()),
        "the new server sends nothing for the stale request"
    );
    let ctl: Vec<_> = frames
        .iter()
        .filter_map(|f| Some((f.from, bidctl_frame(&f.bytes, net)?)))
        .filter(|(_, h)| h[..2] != [0, 4])
        .collect();
    assert!(ctl.len() >= 3, "a handshake: {ctl:?}");
    let (from, q) = ctl[0];
    assert_eq!(from, Side::Server);
    assert_eq!(q[..2], [0, 1], "QUERY");
    assert_eq!(q[4..12], [new_bid.to_be_bytes(), [0; 4]].concat());
    // The client answers it and, seeing a new srcBid for a peer in
    // NORMAL, asks its own question (§5.5: NORMAL, srcBid ≠ peerBid →
    // QUERY), piggy-backed; still addressed to the boot id it knew.
    let (from, a) = ctl[1];
    assert_eq!(from, Side::Client);
    assert_eq!(a[..2], [0, 3], "RESPONSE | QUERY");
    assert_eq!(
        a[4..12],
        [client_bid.to_be_bytes(), old_bid.to_be_bytes()].concat()
    );
    assert_eq!(a[16..20], q[12..16]);
    // The new server's RESPONSE confirms the new boot id: PEER_REBOOTED.
    let (from, b) = ctl[2];
    assert_eq!(from, Side::Server);
    assert_eq!(b[..2], [0, 2], "RESPONSE");
    assert_eq!(
        b[4..12],
        [new_bid.to_be_bytes(), client_bid.to_be_bytes()].concat()
    );
    assert_eq!(b[16..20], a[12..16]);
    assert_eq!(
        count(&old_runs, b"mid-call"),
        0,
        "the old server never saw it"
    );
    assert_eq!(
        count(&new_runs, b"mid-call"),
        0,
        "nor did the new one run it"
    );

    // Later calls succeed, on a fresh channel from seq 2.
    r.clear_log();
    assert_eq!(r.call(XRPCTEST, b"after").unwrap(), b"after");
    assert_eq!(count(&new_runs, b"after"), 1);
    let req = r
        .frames()
        .iter()
        .filter(|f| f.from == Side::Client)
        .filter_map(|f| {
            rpc_frame(&f.bytes, net).and_then(|b| Some((b.chan_seq()?, b.bid()?.to_vec())))
        })
        .next()
        .expect("the request");
    assert_eq!(req.0, 2, "a new channel starts at seq 2");
    assert_eq!(
        req.1[4..8],
        new_bid.to_be_bytes(),
        "addressed to the new incarnation"
    );
    for i in 0..10u8 {
        let m = [b'n', i];
        assert_eq!(r.call(XRPCTEST, &m).unwrap(), m);
        assert_eq!(count(&new_runs, &m), 1);
    }
    // The disabled channels were closed, not kept: one pool's five.
    assert_eq!(module_stat(&r.client, "chan", "client_channels"), 5);
}

#[test]
fn c9_server_reboot_mid_call_fails_the_call_and_later_calls_succeed_ethernet() {
    server_reboot(RpcNet::Eth);
}

#[test]
fn c9_server_reboot_mid_call_fails_the_call_and_later_calls_succeed_ip() {
    server_reboot(RpcNet::Ip);
}

/// C10 as far as it can be seen from outside: a procedure runs to its
/// end within one poll, so the client cannot reboot *during* it; it
/// reboots after the server executed the call and before the reply
/// arrived (the reply is lost). The server holds that reply for seq 2 of
/// channel 1; the new client's first call is seq 2 of channel 1 again.
/// It must be executed (not taken for a duplicate of the old call), the
/// old call must not run again, and the old reply must never be sent to
/// the new incarnation.
fn client_reboot(net: RpcNet) {
    let mut r = Rig::new(net);
    let runs = counting_echo(r.server());
    r.drop_frames(Side::Server, 0, 1, move |f: &[u8]| {
        rpc_frame(f, net)
            .and_then(|b| b.chan_body())
            .is_some_and(|b| b.ends_with(b"old call"))
    });
    let peer = r.server_peer();
    let call = r.client.rpc().start(peer, XRPCTEST, b"old call").unwrap();
    r.run_for(Duration::from_millis(100));
    assert_eq!(count(&runs, b"old call"), 1, "executed, reply lost");
    assert_eq!(r.client.rpc().poll(&call).unwrap(), None);
    let old_bid = boot_id(&r.client);
    r.reboot_client();
    let new_bid = boot_id(&r.client);
    assert_ne!(old_bid, new_bid);
    r.clear_log();

    assert_eq!(r.call(XRPCTEST, b"new call").unwrap(), b"new call");
    r.run_for(Duration::from_secs(120));
    assert_eq!(
        count(&runs, b"new call"),
        1,
        "the new incarnation's seq 2 ran once"
    );
    assert_eq!(count(&runs, b"old call"), 1, "the old call never ran again");
    let frames = r.frames();
    let first = frames
        .iter()
        .filter(|f| f.from == Side::Client)
        .filter_map(|f| rpc_frame(&f.bytes, net))
        .find(|b| b.chan_body().is_some_and(|d| d.ends_with(b"new call")))
        .expect("the new request");
    assert_eq!(first.chan().unwrap()[..2], [0, 1], "channel 1 again");
    assert_eq!(first.chan_seq(), Some(2), "seq 2 again");
    assert!(
        frames
            .iter()
            .filter(|f| f.from == Side::Server)
            .filter_map(|f| rpc_frame(&f.bytes, net))
            .all(|b| !b.chan_body().is_some_and(|d| d.ends_with(b"old call"))),
        "the old reply is never resent to the new incarnation"
    );
}

#[test]
fn c10_client_reboot_with_a_reply_outstanding_ethernet() {
    client_reboot(RpcNet::Eth);
}

#[test]
fn c10_client_reboot_with_a_reply_outstanding_ip() {
    client_reboot(RpcNet::Ip);
}
