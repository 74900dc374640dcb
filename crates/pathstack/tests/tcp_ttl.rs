//! The IP time to live of a TCP connection's segments (issue 27, problem
//! 10; `IP_TTL`, `std::net::TcpStream::set_ttl`): set on the stream, it
//! is in the header of every segment sent after, whether the connection's
//! path runs modular or specialized (its fast form writes the header from
//! a template).

use pathstack::core::device::record::{Recorder, Recording};
use pathstack::core::device::wire::{wire_pair, WireConfig};
use pathstack::host::{Host, HostConfig};
use pathstack::socket::{SocketError, TcpStream};

/// The TTLs of the TCP segments with a payload among `frames`.
fn data_ttls(frames: &[Vec<u8>]) -> Vec<u8> {
    frames
        .iter()
        .filter(|f| f.len() > 54 && f[12..14] == [0x08, 0x00] && f[23] == 6)
        .filter(|f| {
            let ihl = usize::from(f[14] & 0x0f) * 4;
            let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
            let doff = usize::from(f[14 + ihl + 12] >> 4) * 4;
            total > ihl + doff
        })
        .map(|f| f[22])
        .collect()
}

/// A client (recording what it sends) connected to a server.
fn connected(specialize: bool) -> (Host, Host, TcpStream, TcpStream, Recording) {
    let (a, b) = wire_pair(WireConfig::default());
    let (a, sent) = Recorder::new(a, 4096);
    let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
    cfg.specialize = specialize;
    let mut client = Host::new(cfg, a).unwrap();
    let mut server = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
    let l = server.tcp().listen("0.0.0.0:80", 4).unwrap();
    let c = client.tcp().connect("10.0.0.2:80").unwrap();
    for _ in 0..100 {
        client.poll();
        server.poll();
        if let Ok((s, _)) = l.accept(&mut server) {
            client.poll();
            return (client, server, c, s, sent);
        }
    }
    panic!("no connection");
}

#[test]
fn the_ttl_set_on_a_stream_is_in_its_segments() {
    for specialize in [false, true] {
        let (mut client, mut server, c, s, sent) = connected(specialize);
        assert_eq!(client.tcp().ttl(&c).unwrap(), 64);
        c.write(&mut client, b"default").unwrap();
        client.poll();
        client.tcp().set_ttl(&c, 7).unwrap();
        assert_eq!(client.tcp().ttl(&c).unwrap(), 7);
        let fast_before = fast_sends(&client, &c);
        c.write(&mut client, b"seven").unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        for _ in 0..50 {
            client.poll();
            server.poll();
            if let Ok(n) = s.read(&mut server, &mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
        }
        assert_eq!(got, b"defaultseven", "specialize {specialize}");
        assert_eq!(
            data_ttls(&sent.frames()),
            [64, 7],
            "specialize {specialize}"
        );
        // The specialized path sent it through its fast form.
        if specialize {
            assert!(
                fast_sends(&client, &c) > fast_before,
                "not through the fast form"
            );
        }
    }
}

/// Messages the connection's fast form took down.
fn fast_sends(h: &Host, s: &TcpStream) -> u64 {
    let p = pathstack::socket::Tcp::of(h).path_id(s).unwrap();
    h.stack()
        .path(p)
        .and_then(|p| p.fast_hits())
        .map_or(0, |h| h[0])
}

#[test]
fn a_ttl_out_of_range_is_refused() {
    let (mut client, _server, c, _s, _) = connected(false);
    for bad in [0, 256] {
        assert!(matches!(
            client.tcp().set_ttl(&c, bad),
            Err(SocketError::BadTtl(b)) if b == bad
        ));
    }
    assert_eq!(client.tcp().ttl(&c).unwrap(), 64);
}
