//! Channels held by handle (issue 26 item 7): a path's CHAN stage keeps
//! the handle a call or request reached its channel with, and a
//! `ServerCall` carries its channel's. A handle must reach the channel it
//! was resolved for while that channel is open and nothing after it is
//! torn down — in particular not a channel reopened on the same number, a
//! new incarnation's channel, or a freed slot reused by another key.

use super::test_transport::{cpeer, speer};
use super::*;
use crate::wire::chan::{flags, ChanHeader};
use pathstack_core::time::Instant;

fn request(chan: u16, seq: u32, body: &[u8]) -> (ChanHeader, Vec<u8>) {
    let h = ChanHeader {
        chan,
        flags: flags::FROM_CLIENT | flags::USER_MSG,
        prot_id: 20,
        seq,
        len: body.len() as u32,
    };
    (h, body.to_vec())
}

#[test]
fn a_client_handle_goes_stale_when_its_channel_closes_and_the_reopened_channel_is_found_by_key() {
    let mut t = ClientTable::new(ClientConfig::default());
    let key = t.open(speer(), 20).unwrap();
    let (held, h) = t.call_held(None, Instant::ZERO, key, b"a", None).unwrap();
    assert_eq!(h.seq, 2);
    // The reply ends the call; the channel closes (dormant) and reopens
    // on the same number with its seq continuing (C12).
    let reply = ChanHeader {
        flags: flags::USER_MSG,
        ..h
    };
    let mut out = Vec::new();
    t.on_packet_held(
        Some(held),
        Instant::ZERO,
        speer(),
        &reply,
        b"",
        None,
        &mut out,
    )
    .unwrap();
    t.close(key).unwrap();
    // Closed: the handle reaches nothing, and nor does the key.
    assert_eq!(
        t.call_held(Some(held), Instant::ZERO, key, b"b", None),
        Err(CallError::NoChannel)
    );
    assert_eq!(t.open(speer(), 20).unwrap(), key);
    let (again, h) = t
        .call_held(Some(held), Instant::ZERO, key, b"b", None)
        .unwrap();
    assert_ne!(again, held, "a new handle for the reopened channel");
    assert_eq!(h.seq, 3, "the seq continues on the reopened channel");
}

#[test]
fn a_held_client_channel_disabled_by_a_reboot_refuses_calls() {
    let mut t = ClientTable::new(ClientConfig::default());
    let key = t.open(speer(), 20).unwrap();
    let (held, _) = t.call_held(None, Instant::ZERO, key, b"a", None).unwrap();
    let mut out = Vec::new();
    t.peer_rebooted(speer(), &mut out);
    assert!(matches!(
        out.as_slice(),
        [ChanAction::CallFailed {
            error: CallError::PeerRebooted,
            ..
        }]
    ));
    // Still open (DISABLED): the handle reaches it, and it refuses.
    assert_eq!(
        t.call_held(Some(held), Instant::ZERO, key, b"b", None),
        Err(CallError::Disabled)
    );
    // Closed and the number reused for the new incarnation from seq 1:
    // the old handle does not reach the new channel's state by accident.
    t.close(key).unwrap();
    let key2 = t.open(speer(), 20).unwrap();
    assert_eq!(key2, key);
    let (_, h) = t
        .call_held(Some(held), Instant::ZERO, key, b"c", None)
        .unwrap();
    assert_eq!(h.seq, 2, "a fresh channel after the reboot");
}

#[test]
fn a_server_call_from_before_the_clients_reboot_is_stale_on_the_new_incarnations_channel() {
    let mut t = ServerTable::new(ServerConfig::default());
    t.enable(20).unwrap();
    let mut out = Vec::new();
    let (h, body) = request(1, 2, b"old");
    let held = t
        .on_packet_held(None, cpeer(), &h, &body, None, &mut out)
        .unwrap()
        .expect("a channel");
    let key = ChannelKey {
        peer: cpeer(),
        prot_id: 20,
        chan: 1,
    };
    let old = t.executing(Some(held), key).expect("executing");
    // The client reboots while the procedure runs (C10), and its new
    // incarnation's first request arrives on the same channel key.
    t.peer_rebooted(cpeer(), &mut out);
    assert!(t.executing(Some(held), key).is_none());
    out.clear();
    let (h, body) = request(1, 2, b"new");
    let held2 = t
        .on_packet_held(Some(held), cpeer(), &h, &body, None, &mut out)
        .unwrap()
        .expect("a new channel");
    assert_ne!(held2, held);
    let new = t.executing(Some(held), key).expect("the new execution");
    assert_ne!(new, old);
    // The old execution's reply is refused; the new one's is sent.
    assert_eq!(t.reply(Instant::ZERO, old, b"old"), Err(ReplyError::Stale));
    assert!(t.reply(Instant::ZERO, new, b"new").is_ok());
    assert!(t.executing(Some(held2), key).is_none(), "answered");
}
