//! Boot-id agreement at path level (spec §11.3 D1–D5): BIDCTL's
//! handshake, keepalives and boot broadcasts between two whole RPC hosts
//! over the in-memory wire, with frames lost or injected
//! (`support/rpc_rig.rs`).

#[path = "support/rpc_rig.rs"]
mod rpc_rig;

use pathstack::core::time::{Duration, Instant};
use pathstack::host::Host;
use pathstack::rpc::{RpcError, RpcNet};
use rpc_rig::*;

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
    let mut r = Rig::with_echo(net);
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
    let mut r = Rig::with_echo(net);
    serve_echo(&mut r.client);
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
        .rpc()
        .start(peer, XRPCTEST, b"outstanding")
        .unwrap();
    r.run_for(Duration::from_millis(10));
    assert_eq!(r.server().rpc().poll(&call).unwrap(), None);
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
    assert_eq!(r.server().rpc().poll(&call).unwrap(), None);
    let reply = r.finish_on(Side::Server, &call, Duration::from_secs(10));
    assert_eq!(reply.expect("the call completed").unwrap(), b"outstanding");
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
    let mut r = Rig::with_echo(net);
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

/// How many messages `h` dropped for `reason`, on its paths (a stage's
/// verdict) and outside them (a module's demux).
fn drops(h: &Host, reason: &str) -> u64 {
    let s = h.stack();
    let on_paths = s
        .path_ids()
        .filter_map(|id| s.path(id))
        .flat_map(|p| p.stats().drops.iter().collect::<Vec<_>>());
    let in_modules = s
        .graph()
        .instances()
        .iter()
        .filter_map(|i| s.module_id(&i.name))
        .filter_map(|m| s.module_drops(m))
        .flat_map(|d| d.iter().collect::<Vec<_>>());
    on_paths
        .chain(in_modules)
        .filter(|(r, _)| r.as_str() == reason)
        .map(|(_, n)| n)
        .sum()
}

/// A BIDCTL header (spec §5.2) with its checksum filled in.
fn bidctl_header(flags: u16, src: u32, dst: u32, req_tag: u32, rpl_tag: u32) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[..2].copy_from_slice(&flags.to_be_bytes());
    h[4..8].copy_from_slice(&src.to_be_bytes());
    h[8..12].copy_from_slice(&dst.to_be_bytes());
    h[12..16].copy_from_slice(&req_tag.to_be_bytes());
    h[16..20].copy_from_slice(&rpl_tag.to_be_bytes());
    seal_bidctl(&mut h);
    h
}

/// A third host on the Ethernet, which only ever speaks BIDCTL.
const OTHER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x0c];

/// An Ethernet BIDCTL frame (EtherType 0x3006) from [`OTHER_MAC`] to `dst`.
fn from_other(dst: [u8; 6], header: [u8; 20]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&OTHER_MAC);
    f.extend_from_slice(&[0x30, 0x06]);
    f.extend_from_slice(&header);
    f
}

/// D4: two peers that registered for each other (their CHAN channels)
/// and then fall silent each send a keepalive every 5 ticks (300 s): flags
/// 0, both boot ids, no tags. Each keepalive resets the other's silence
/// count, so neither forgets the other, and a call after 20 minutes of
/// silence needs no handshake.
#[test]
fn d4_silent_registered_peers_send_keepalives_five_ticks_apart() {
    let net = RpcNet::Eth;
    let mut r = Rig::with_echo(net);
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
    // The server's probe at +8 s and the client's explicit ACK are the
    // last traffic.
    r.run_for(Duration::from_secs(10));
    let last = r.frames().last().expect("the warm-up's frames").at;
    let (cb, sb) = (boot_id(&r.client), boot_id(r.server()));
    r.clear_log();
    r.run_for(Duration::from_secs(20 * 60));
    let frames = r.frames();
    for (side, own, peer) in [(Side::Client, cb, sb), (Side::Server, sb, cb)] {
        let sent: Vec<(Instant, Vec<u8>)> = frames
            .iter()
            .filter(|f| f.from == side)
            .map(|f| {
                (
                    f.at,
                    bidctl_frame(&f.bytes, net).expect("only BIDCTL").to_vec(),
                )
            })
            .collect();
        assert_eq!(sent.len(), 4, "{side:?}: one keepalive per 5 minutes");
        for (_, h) in &sent {
            assert_eq!(h[..2], [0, 0], "flags 0");
            assert_eq!(h[4..12], [own.to_be_bytes(), peer.to_be_bytes()].concat());
            assert_eq!(h[12..20], [0; 8], "no tags");
            assert_eq!(ones_sum(h), 0xffff, "checksum: {}", hex(h));
        }
        let first = sent[0].0 - last;
        assert!(
            first > Duration::from_secs(240) && first <= Duration::from_secs(300),
            "{side:?}: first keepalive {first} after the last traffic (5 ticks of 60 s)"
        );
        for w in sent.windows(2) {
            assert_eq!(w[1].0 - w[0].0, Duration::from_secs(300), "{side:?}");
        }
    }
    assert_eq!(module_stat(&r.client, "bidctl", "peers"), 1);
    assert_eq!(module_stat(r.server(), "bidctl", "peers"), 1);
    r.clear_log();
    assert_eq!(r.call(XRPCTEST, b"later").unwrap(), b"later");
    assert!(
        r.frames()
            .iter()
            .all(|f| bidctl_frame(&f.bytes, net).is_none()),
        "the boot ids are still agreed: no handshake"
    );
}

/// D4 and D5 for a host nobody registered for: a third host queries the
/// server and answers its query back, so the server keeps unregistered
/// state for it (NORMAL); it sends
/// that host no keepalives and forgets it after 10 silent ticks. A boot
/// broadcast from it is then from an unknown host: ignored and counted.
#[test]
fn d4_d5_an_unregistered_peer_is_forgotten_after_ten_ticks_then_its_broadcast_is_ignored() {
    let net = RpcNet::Eth;
    let mut r = Rig::with_echo(net);
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
    let server_mac: [u8; 6] = r
        .frames()
        .iter()
        .find(|f| f.from == Side::Client)
        .expect("the client's frames")
        .bytes[..6]
        .try_into()
        .unwrap();
    let sb = boot_id(r.server());
    let (other_bid, tag) = (0x5eed_0001u32, 0x0bad_cafe_u32);
    r.clear_log();
    r.inject(
        Side::Client,
        &from_other(server_mac, bidctl_header(0x0001, other_bid, 0, tag, 0)),
    );
    r.run_for(Duration::from_millis(1));
    let to_other = |r: &Rig| -> Vec<Vec<u8>> {
        r.frames()
            .iter()
            .filter(|f| f.from == Side::Server && f.bytes[..6] == OTHER_MAC)
            .filter_map(|f| bidctl_frame(&f.bytes, net).map(<[u8]>::to_vec))
            .collect()
    };
    let answer = to_other(&r);
    // The host is new to the server: it answers and asks back (§5.5).
    assert_eq!(answer.len(), 1, "a RESPONSE with a QUERY");
    assert_eq!(answer[0][..2], [0, 3]);
    assert_eq!(
        answer[0][4..12],
        [sb.to_be_bytes(), [0; 4]].concat(),
        "its boot id not confirmed yet"
    );
    assert_eq!(answer[0][16..20], tag.to_be_bytes());
    let server_tag = u32::from_be_bytes(answer[0][12..16].try_into().unwrap());
    r.inject(
        Side::Client,
        &from_other(
            server_mac,
            bidctl_header(0x0002, other_bid, sb, 0, server_tag),
        ),
    );
    let t = r.now;
    r.run_for(Duration::from_millis(1));
    assert_eq!(module_stat(r.server(), "bidctl", "peers"), 2);
    // Forgotten after 10 silent ticks of 60 s: between 540 and 600 s.
    let mut forgotten = None;
    while r.now < t + Duration::from_secs(700) {
        r.run_for(Duration::from_secs(1));
        if module_stat(r.server(), "bidctl", "peers") == 1 {
            forgotten = Some(r.now - t);
            break;
        }
    }
    let forgotten = forgotten.expect("the unregistered state is forgotten");
    assert!(
        forgotten > Duration::from_secs(540) && forgotten <= Duration::from_secs(600),
        "forgotten {forgotten} after its last packet"
    );
    assert_eq!(
        to_other(&r).len(),
        1,
        "no keepalive to an unregistered peer"
    );
    // Its boot broadcast, with a new boot id, now comes from an unknown
    // host: nothing is sent, however long we wait, and the drop is counted.
    let before = drops(r.server(), "bidctl.bcast_from_unknown");
    r.inject(
        Side::Client,
        &from_other([0xff; 6], bidctl_header(0x0004, other_bid + 1, 0, 0, 0)),
    );
    r.run_for(Duration::from_secs(5));
    assert_eq!(to_other(&r).len(), 1, "the broadcast is ignored");
    assert_eq!(drops(r.server(), "bidctl.bcast_from_unknown"), before + 1);
    assert_eq!(module_stat(r.server(), "bidctl", "peers"), 1);
}

/// D5 between two whole hosts: the server reboots while the client has
/// no call in flight. Its boot broadcast reaches the client, which after
/// a random delay of 30 ms to 3 s (in 30 ms steps) queries the boot id it
/// knew; the answer carries the new one: `PEER_REBOOTED`. The client's
/// channels are disabled, so its next call opens a new channel (seq 2,
/// addressed to the new boot id) with no handshake and no failure, and
/// the disabled channels are closed rather than kept (five reboots leave
/// the client five open channels, one pool).
fn boot_broadcast_of_a_known_peer(net: RpcNet) {
    let mut r = Rig::with_echo(net);
    assert_eq!(r.call(XRPCTEST, b"warm").unwrap(), b"warm");
    let cb = boot_id(&r.client);
    for reboot in 0..5 {
        let old = boot_id(r.server());
        r.run_for(Duration::from_secs(10));
        r.server_down();
        r.clear_log();
        let t = r.now;
        serve_echo(r.server_up());
        let new = boot_id(r.server());
        r.run_for(Duration::from_secs(5));
        let ctl: Vec<_> = r
            .frames()
            .iter()
            .filter_map(|f| Some((f.from, f.at - t, bidctl_frame(&f.bytes, net)?.to_vec())))
            .collect();
        assert!(ctl.len() >= 3, "reboot {reboot}: {ctl:?}");
        let (from, at, b) = &ctl[0];
        assert_eq!((*from, *at), (Side::Server, Duration::ZERO));
        assert_eq!(b[..2], [0, 4], "BCAST");
        assert_eq!(b[4..12], [new.to_be_bytes(), [0; 4]].concat());
        let (from, delay, q) = &ctl[1];
        assert_eq!(*from, Side::Client);
        assert_eq!(q[..2], [0, 1], "QUERY");
        assert_eq!(q[4..12], [cb.to_be_bytes(), old.to_be_bytes()].concat());
        assert!(
            *delay >= Duration::from_millis(30) && *delay <= Duration::from_secs(3),
            "delay {delay}"
        );
        assert_eq!(delay.as_nanos() % Duration::from_millis(30).as_nanos(), 0);
        let (from, _, a) = &ctl[2];
        assert_eq!(*from, Side::Server);
        assert_eq!(a[1] & 0x02, 0x02, "RESPONSE");
        assert_eq!(a[4..8], new.to_be_bytes());
        assert_eq!(a[16..20], q[12..16]);

        r.clear_log();
        let m = [b'r', reboot];
        assert_eq!(r.call(XRPCTEST, &m).unwrap(), m, "reboot {reboot}");
        let frames = r.frames();
        assert!(
            frames.iter().all(|f| bidctl_frame(&f.bytes, net).is_none()),
            "reboot {reboot}: no handshake"
        );
        let req = rpc_frame(&frames[0].bytes, net).expect("the request first");
        assert_eq!(frames[0].from, Side::Client);
        assert_eq!(req.chan_seq(), Some(2), "a new channel");
        assert_eq!(req.bid().unwrap()[4..8], new.to_be_bytes());
    }
    assert_eq!(module_stat(&r.client, "chan", "client_channels"), 5);
}

#[test]
fn d5_a_known_peers_boot_broadcast_reports_its_reboot_and_the_next_call_works_ethernet() {
    boot_broadcast_of_a_known_peer(RpcNet::Eth);
}

#[test]
fn d5_a_known_peers_boot_broadcast_reports_its_reboot_and_the_next_call_works_ip() {
    boot_broadcast_of_a_known_peer(RpcNet::Ip);
}
