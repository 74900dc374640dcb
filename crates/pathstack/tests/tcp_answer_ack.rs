//! A request's answer carries its ACK (issue 28's connection rate): the
//! quick ACK of a connection's first data is due just after the instant
//! the data arrived (`quick_ack::ANSWER_GRACE`), so an application that
//! answers in its turn after the poll sends one segment, the answer with
//! the ACK, not a bare ACK and then the answer. With no answer the ACK
//! still goes at the next poll.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::device::record::{Recorder, Recording};
use pathstack::host::Host;
use pathstack::inet::tcp::TcpConfig;
use pathstack::socket::{ready, TcpStream};

/// The TCP segments in `frames` (Ethernet, IPv4 without options): each
/// one's flags and payload length.
fn segments(frames: &[Vec<u8>]) -> Vec<(u8, usize)> {
    frames
        .iter()
        .filter(|f| f.len() >= 54 && f[12..14] == [0x08, 0x00] && f[23] == 6)
        .map(|f| {
            let ip_len = usize::from(u16::from_be_bytes([f[16], f[17]]));
            let doff = usize::from(f[14 + 20 + 12] >> 4) * 4;
            (f[14 + 20 + 13], ip_len - 20 - doff)
        })
        .collect()
}

/// A client and a server connected: (client, server, recording of what
/// the server sends, client stream, server stream).
fn connected() -> (Host, Host, Recording, TcpStream, TcpStream) {
    let (a, b) = memory_pair(MemoryConfig::default());
    let (b, sent) = Recorder::new(b, 1024);
    let mut client = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
    let mut server = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
    let cfg = TcpConfig {
        nodelay: true,
        ..TcpConfig::default()
    };
    let l = server.tcp().listen_with(("0.0.0.0", 7), 8, cfg).unwrap();
    let c = client.tcp().connect(("10.0.0.2", 7)).unwrap();
    let mut s = None;
    for _ in 0..100 {
        client.poll();
        server.poll();
        if let Some((x, _)) = ready(l.accept(&mut server)).unwrap() {
            s = Some(x);
        }
        if s.is_some() && client.tcp().is_connected(&c).unwrap() {
            break;
        }
    }
    (client, server, sent, c, s.expect("accepted"))
}

/// After the handshake has settled: the client writes one octet, both
/// poll once, and the server reads it in its turn, as an echo server's
/// loop does (poll, then read). Returns how many frames the server had
/// sent before the request.
fn request_read(
    client: &mut Host,
    server: &mut Host,
    sent: &Recording,
    c: TcpStream,
    s: TcpStream,
) -> usize {
    for _ in 0..5 {
        client.poll();
        server.poll();
    }
    let before = sent.len();
    assert_eq!(ready(c.write(client, b"x")).unwrap(), Some(1));
    client.poll();
    server.poll();
    let mut b = [0u8; 8];
    assert_eq!(ready(s.read(server, &mut b)).unwrap(), Some(1));
    before
}

#[test]
fn the_answer_carries_the_ack_of_the_request() {
    let (mut client, mut server, sent, c, s) = connected();
    let before = request_read(&mut client, &mut server, &sent, c, s);
    // The answer, in the same turn.
    let mut b = [b'x'; 8];
    assert_eq!(ready(s.write(&mut server, &b[..1])).unwrap(), Some(1));
    for _ in 0..5 {
        server.poll();
        client.poll();
    }
    assert_eq!(ready(c.read(&mut client, &mut b)).unwrap(), Some(1));
    let out = segments(&sent.frames()[before..]);
    assert_eq!(
        out,
        vec![(0x18, 1)],
        "one segment, PSH|ACK with the answer, no bare ACK before it"
    );
}

#[test]
fn without_an_answer_the_quick_ack_goes_at_the_next_poll() {
    let (mut client, mut server, sent, c, s) = connected();
    let before = request_read(&mut client, &mut server, &sent, c, s);
    // The application does not answer: its next poll sends the ACK (the
    // host's clock has moved on by more than the grace).
    std::thread::sleep(std::time::Duration::from_micros(10));
    server.poll();
    assert_eq!(
        segments(&sent.frames()[before..]),
        vec![(0x10, 0)],
        "a bare ACK"
    );
}
