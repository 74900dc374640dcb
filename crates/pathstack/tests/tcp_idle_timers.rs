//! An established idle connection holds no timer (issue 28 item 4): the
//! stage timer armed for the SYN's retransmission (RFC 6298 §2.1, the
//! initial RTO of 1 s) is cancelled when the handshake completes, not
//! left to fire into nothing a second later — a million connections
//! opened in a second would otherwise hold a million timers.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::host::Host;
use pathstack::socket::ready;

#[test]
fn established_idle_connections_hold_no_timers() {
    let (a, b) = memory_pair(MemoryConfig::default());
    let mut client = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
    let mut server = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
    let l = server.tcp().listen(("0.0.0.0", 80), 64).unwrap();
    // Let the hosts' own start-up (ARP announcements) settle, so that
    // what is counted below is the connections' alone.
    for _ in 0..10 {
        client.poll();
        server.poll();
    }
    let (c0, s0) = (client.stack().stats().timers, server.stack().stats().timers);
    let mut conns = Vec::new();
    let mut accepted = Vec::new();
    for _ in 0..20 {
        conns.push(client.tcp().connect(("10.0.0.2", 80)).unwrap());
    }
    for _ in 0..200 {
        client.poll();
        server.poll();
        while let Some((s, _)) = ready(l.accept(&mut server)).unwrap() {
            accepted.push(s);
        }
        if accepted.len() == conns.len() {
            break;
        }
    }
    assert_eq!(accepted.len(), conns.len(), "every connection accepted");
    for _ in 0..5 {
        client.poll();
        server.poll();
    }
    for c in &conns {
        assert!(client.tcp().is_connected(c).unwrap());
    }
    // Well within the SYN's 1 s retransmission timeout: a timer left
    // armed for it would still be counted here.
    assert_eq!(
        client.stack().stats().timers,
        c0,
        "the client's ends hold no timer once established"
    );
    assert_eq!(
        server.stack().stats().timers,
        s0,
        "the server's ends hold no timer once established"
    );
    // Nor any queue storage: run to completion, no path of either host
    // (connections, listener, ARP, TCP's own) queued input for a turn,
    // so none made its boxed source queues (issue 28 item 4).
    for (name, h) in [("client", &client), ("server", &server)] {
        let s = h.stack();
        for id in s.path_ids() {
            let p = s.path(id).unwrap();
            assert!(
                !p.source_queues_made(),
                "{name}'s path {id:?} made its source queues"
            );
        }
    }
}
