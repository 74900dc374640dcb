//! The state an established RPC path holds (issue 26 item 7): the client
//! path's CHAN stage holds its channels by handle, VCHAN's stage its
//! peer's pool, BID's stage the peer's boot id, each checked against its
//! module's table or generation rather than looked up by peer. A peer
//! that reboots while nothing tells the client (its boot broadcast is
//! lost) must still be met as the specification says (spec §4.3, §6.4,
//! §11.4 C9): the next call, made on the held channel with the held boot
//! id, reaches the new incarnation, whose BID drops it; the BIDCTL
//! handshake reports the reboot; that call fails with `PeerRebooted`
//! (not executed), and the calls after it run exactly once on a new
//! pool's channel from seq 2, addressed to the new boot id.

#[path = "support/rpc_rig.rs"]
mod rpc_rig;

use pathstack::core::time::Duration;
use pathstack::rpc::{RpcError, RpcNet};
use rpc_rig::*;

/// The client's requests in the log: (CHAN seq, destination boot id).
fn requests(r: &Rig) -> Vec<(u32, [u8; 4])> {
    r.frames()
        .iter()
        .filter(|f| f.from == Side::Client)
        .filter_map(|f| {
            let b = rpc_frame(&f.bytes, r.net)?;
            Some((b.chan_seq()?, b.bid()?.get(4..8)?.try_into().ok()?))
        })
        .collect()
}

fn silent_server_reboot(net: RpcNet) {
    let mut r = Rig::new(net);
    let old_runs = counting_echo(r.server());
    // Established: every stage of the client path holds its state.
    for i in 0..5u8 {
        let m = [b'o', i];
        assert_eq!(r.call(XRPCTEST, &m).unwrap(), m);
        assert_eq!(count(&old_runs, &m), 1);
    }
    let old = boot_id(r.server());

    r.server_down();
    r.clear_log();
    // The new incarnation's boot broadcast is lost: the client learns of
    // the reboot only through its next call.
    r.drop_frames(Side::Server, 0, 1, move |f| {
        bidctl_frame(f, net).is_some_and(|h| h[..2] == [0, 4])
    });
    let new_runs = counting_echo(r.server_up());
    let new = boot_id(r.server());
    assert_ne!(new, old);
    r.run_for(Duration::from_secs(5));
    assert!(
        r.frames()
            .iter()
            .any(|f| f.dropped && bidctl_frame(&f.bytes, net).is_some()),
        "the boot broadcast was sent and lost"
    );

    // The held channel, pool and boot id are used as they are: the
    // request goes to the old incarnation's boot id and is not run.
    let err = r.call(XRPCTEST, b"stale").unwrap_err();
    assert!(
        matches!(err, RpcError::PeerRebooted { id: XRPCTEST, .. }),
        "{err:?}"
    );
    assert_eq!(count(&new_runs, b"stale"), 0, "not executed");
    let stale = requests(&r);
    assert!(!stale.is_empty(), "the request was sent");
    assert!(
        stale.iter().all(|&(_, bid)| bid == old.to_be_bytes()),
        "addressed to the incarnation the path held: {stale:?}"
    );

    // What the path held was let go: a new pool, a new channel from seq
    // 2, the new boot id; each call runs exactly once.
    r.clear_log();
    assert_eq!(r.call(XRPCTEST, b"fresh").unwrap(), b"fresh");
    assert_eq!(count(&new_runs, b"fresh"), 1);
    assert_eq!(requests(&r), [(2, new.to_be_bytes())]);
    for i in 0..10u8 {
        let m = [b'n', i];
        assert_eq!(r.call(XRPCTEST, &m).unwrap(), m);
        assert_eq!(count(&new_runs, &m), 1);
    }
    assert_eq!(count(&old_runs, b"stale"), 0);
    // The disabled channels were closed, not kept: one pool's five.
    assert_eq!(module_stat(&r.client, "chan", "client_channels"), 5);
}

#[test]
fn a_call_on_a_held_channel_after_a_silent_server_reboot_fails_then_calls_run_once_ethernet() {
    silent_server_reboot(RpcNet::Eth);
}

#[test]
fn a_call_on_a_held_channel_after_a_silent_server_reboot_fails_then_calls_run_once_ip() {
    silent_server_reboot(RpcNet::Ip);
}
