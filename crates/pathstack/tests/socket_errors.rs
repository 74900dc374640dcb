//! Errors reach the socket (RFC 1122 §3.2.2.1, §4.1.3.3): no route fails
//! the send with `NetworkUnreachable`; ARP giving up and ICMP destination
//! unreachable become a connected socket's pending error, reported once by
//! its next call; a bound (unconnected) socket stays silent, as Linux's
//! without `IP_RECVERR`.

use pathstack::core::device::wire::{wire_pair, WireConfig, WireEnd};
use pathstack::core::Instant;
use pathstack::host::{Host, HostConfig};
use pathstack::socket::ready;
use pathstack::socket::{SocketError, UdpSocket};
use std::io::{self, ErrorKind};
use std::net::Ipv4Addr;

fn kind(e: impl Into<io::Error>) -> ErrorKind {
    e.into().kind()
}

fn pair() -> (Host, Host) {
    let (a, b) = wire_pair(WireConfig::default());
    (
        Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap(),
        Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap(),
    )
}

/// A host whose wire leads nowhere: the other end exists but nobody
/// answers ARP on it.
fn lonely() -> (Host, WireEnd) {
    let (a, b) = wire_pair(WireConfig::default());
    (
        Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap(),
        b,
    )
}

/// Runs `h`'s stack on a fake clock, a second per step, past ARP's three
/// requests one second apart (RFC 1122 §2.3.2.1), without sleeping.
fn past_arp_retries(h: &mut Host) {
    for s in 1..=6 {
        h.stack_mut().poll(Instant::from_millis(s * 1000));
    }
}

/// A socket connected to an address nobody answers ARP for, after one
/// send and ARP's retries.
fn arp_failed_connected() -> (Host, WireEnd, UdpSocket) {
    let (mut a, nobody) = lonely();
    let s = a.udp().bind_connected("0.0.0.0:0", "10.0.0.9:9").unwrap();
    a.udp().send(&s, b"into the void").unwrap();
    past_arp_retries(&mut a);
    (a, nobody, s)
}

#[test]
fn send_to_off_subnet_without_gateway_is_network_unreachable() {
    let (mut a, _b) = pair();
    let s = a.udp().bind("0.0.0.0:0").unwrap();
    let e = a.udp().send_to(&s, b"x", "192.0.2.1:9").unwrap_err();
    assert!(
        matches!(e, SocketError::NetworkUnreachable(ip) if ip == Ipv4Addr::new(192, 0, 2, 1)),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "network unreachable: no route to 192.0.2.1");
    assert_eq!(kind(e), ErrorKind::NetworkUnreachable);
    // Connecting there fails the same way (Linux: ENETUNREACH).
    let e = a
        .udp()
        .bind_connected("0.0.0.0:0", "192.0.2.1:9")
        .unwrap_err();
    assert_eq!(kind(e), ErrorKind::NetworkUnreachable);
}

#[test]
fn arp_failure_is_host_unreachable_on_a_connected_socket_once() {
    let (mut a, _nobody, s) = arp_failed_connected();
    assert!(a.report().contains("gave_up=1"), "{}", a.report());
    let e = a.udp().send(&s, b"again").unwrap_err();
    let msg = e.to_string();
    assert_eq!(kind(e), ErrorKind::HostUnreachable, "{msg}");
    assert_eq!(
        msg,
        "host unreachable: 10.0.0.9 cannot be reached (arp.resolution_failed)"
    );
    // Reported once (SO_ERROR is cleared by reading it).
    assert!(a.udp().take_error(&s).unwrap().is_none());
    let mut buf = [0u8; 8];
    assert!(ready(s.recv(&mut a, &mut buf)).unwrap().is_none());
}

#[test]
fn arp_failure_reaches_a_receiving_connected_socket() {
    let (mut a, _nobody, s) = arp_failed_connected();
    let mut buf = [0u8; 8];
    // A peek reports the error and leaves it pending.
    let e = s.peek_from(&a, &mut buf).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::HostUnreachable, "{e}");
    let e = ready(s.recv(&mut a, &mut buf)).unwrap_err();
    assert_eq!(kind(e), ErrorKind::HostUnreachable);
}

#[test]
fn arp_failure_is_silent_on_a_bound_socket() {
    let (mut a, _nobody) = lonely();
    let s = a.udp().bind("0.0.0.0:0").unwrap();
    a.udp().send_to(&s, b"x", "10.0.0.9:9").unwrap();
    past_arp_retries(&mut a);
    assert!(a.report().contains("gave_up=1"), "{}", a.report());
    // Linux without IP_RECVERR: nothing reaches an unconnected socket.
    assert!(a.udp().take_error(&s).unwrap().is_none());
    a.udp().send_to(&s, b"y", "10.0.0.9:9").unwrap();
}

#[test]
fn port_unreachable_is_connection_refused_on_a_connected_socket() {
    let (mut a, mut b) = pair();
    let s = a.udp().bind_connected("0.0.0.0:0", "10.0.0.2:9").unwrap(); // nobody on 9
    a.udp().send(&s, b"anyone?").unwrap();
    let mut buf = [0u8; 8];
    let mut got = None;
    for _ in 0..20 {
        a.poll();
        b.poll();
        if let Err(e) = ready(s.recv(&mut a, &mut buf)) {
            got = Some(e);
            break;
        }
    }
    let e = got.expect("no error reached the socket");
    assert_eq!(
        e.to_string(),
        "connection refused: nothing listens on 10.0.0.2:9 (icmp.port_unreachable)"
    );
    assert_eq!(kind(e), ErrorKind::ConnectionRefused);
    // Once; the ICMP message itself stays where ping reads it.
    assert!(a.udp().take_error(&s).unwrap().is_none());
    assert_eq!(a.echo_replies().len(), 1);
}

#[test]
fn port_unreachable_is_silent_on_a_bound_socket() {
    let (mut a, mut b) = pair();
    let s = a.udp().bind("0.0.0.0:0").unwrap();
    a.udp().send_to(&s, b"anyone?", "10.0.0.2:9").unwrap();
    for _ in 0..20 {
        a.poll();
        b.poll();
    }
    assert_eq!(a.echo_replies().len(), 1, "{}", a.report());
    assert!(a.udp().take_error(&s).unwrap().is_none());
    let mut buf = [0u8; 8];
    assert!(ready(s.recv_from(&mut a, &mut buf)).unwrap().is_none());
}

#[test]
fn another_connected_socket_is_not_blamed() {
    let (mut a, mut b) = pair();
    let srv = b.udp().bind("0.0.0.0:7").unwrap();
    let good = a.udp().bind_connected("0.0.0.0:0", "10.0.0.2:7").unwrap();
    let bad = a.udp().bind_connected("0.0.0.0:0", "10.0.0.2:9").unwrap();
    a.udp().send(&bad, b"x").unwrap();
    a.udp().send(&good, b"y").unwrap();
    for _ in 0..20 {
        a.poll();
        b.poll();
    }
    let mut buf = [0u8; 8];
    assert!(ready(srv.recv_from(&mut b, &mut buf)).unwrap().is_some());
    assert!(a.udp().take_error(&good).unwrap().is_none());
    let e = a.udp().take_error(&bad).unwrap().expect("bad's error");
    assert_eq!(kind(e), ErrorKind::ConnectionRefused);
}

#[test]
fn ping_off_subnet_without_gateway_is_no_route() {
    use pathstack::host::HostError;
    let (mut a, _b) = pair();
    let dst = Ipv4Addr::new(192, 0, 2, 1);
    let e = a.ping(dst, 1, b"x").unwrap_err();
    assert!(matches!(e, HostError::NoRoute(ip) if ip == dst), "{e:?}");
    assert!(
        e.to_string().starts_with("no route to 192.0.2.1"),
        "says why, not a queue: {e}"
    );
    // The host still pings its own network afterwards.
    a.ping(Ipv4Addr::new(10, 0, 0, 2), 2, b"x").unwrap();
}

/// The ICMP error reaches the socket's path as ICMP classifies it: the
/// stack's own poll delivers it (no host-level scan of ICMP's queue), to
/// the path of the datagram it quotes, counted by ICMP.
#[test]
fn the_error_reaches_the_socket_path_in_the_stack_poll() {
    let (mut a, mut b) = pair();
    let s = a.udp().bind_connected("0.0.0.0:0", "10.0.0.2:9").unwrap(); // nobody on 9
    let other = a.udp().bind_connected("0.0.0.0:0", "10.0.0.2:10").unwrap();
    a.udp().send(&s, b"anyone?").unwrap();
    for _ in 0..20 {
        let now = a.now();
        a.stack_mut().poll(now);
        b.poll();
    }
    let icmp = a.stack().module_id("icmp").unwrap();
    let stats = a.stack().module_stats(icmp).unwrap();
    let delivered = stats.iter().find(|(k, _)| k == "errors_delivered");
    assert_eq!(delivered.map(|(_, v)| *v), Some(1), "{stats:?}");
    let e = a.udp().take_error(&s).unwrap().expect("the socket's error");
    assert_eq!(kind(e), ErrorKind::ConnectionRefused);
    assert!(a.udp().take_error(&other).unwrap().is_none());
}

/// When every ephemeral port (RFC 6335 §6: 49152–65535) is taken, the
/// next socket that needs one is refused as Linux refuses it
/// (`EADDRNOTAVAIL`), and so is a TCP connect; freeing one lets the next
/// bind succeed.
#[test]
fn exhausted_ephemeral_ports_are_addr_not_available() {
    let (mut h, _wire) = lonely();
    let socks: Vec<UdpSocket> = (49152..=65535u32)
        .map(|_| h.udp().bind("0.0.0.0:0").unwrap())
        .collect();
    assert_eq!(socks.len(), 16_384);
    let e = h.udp().bind("0.0.0.0:0").unwrap_err();
    assert_eq!(kind(e), ErrorKind::AddrNotAvailable);
    // TCP has its own ports: fill them by binding listeners.
    let _listeners: Vec<_> = (49152..=65535u16)
        .map(|p| h.tcp().listen((Ipv4Addr::UNSPECIFIED, p), 1).unwrap())
        .collect();
    let e = h.tcp().connect("10.0.0.2:80").unwrap_err();
    assert_eq!(io::Error::from(e).kind(), ErrorKind::AddrNotAvailable);
    h.udp().close(socks[7]).unwrap();
    assert!(h.udp().bind("0.0.0.0:0").is_ok());
}

/// A TCP connect to an on-link address nobody answers ARP for ends with
/// `HostUnreachable` once ARP gives up (about 3 s, as Linux's `connect`
/// with `EHOSTUNREACH`), not after two minutes of SYN retransmissions
/// (issue 27, problem 1); the connection is closed and says so after.
#[test]
fn a_tcp_connect_to_an_absent_neighbour_is_host_unreachable_when_arp_gives_up() {
    let (mut a, _nobody) = lonely();
    let c = a.tcp().connect("10.0.0.9:80").unwrap();
    let mut failed_at = None;
    for ms in (100..=10_000).step_by(100) {
        a.stack_mut().poll(Instant::from_millis(ms));
        match a.tcp().is_connected(&c) {
            Ok(false) => continue,
            Ok(true) => panic!("connected to nobody"),
            Err(e) => {
                assert_eq!(io::Error::from(e).kind(), ErrorKind::HostUnreachable);
                failed_at = Some(ms);
                break;
            }
        }
    }
    let at = failed_at.expect("the connect never failed");
    // ARP's three requests one second apart (RFC 1122 §2.3.2.1).
    assert!((2_000..=4_000).contains(&at), "failed after {at} ms");
    assert_eq!(
        a.tcp().state(&c).unwrap(),
        pathstack::inet::tcp::State::Closed
    );
    let e = ready(c.write(&mut a, b"x")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::HostUnreachable);
}

/// The wire, whose transmit fails as a deleted interface's does once the
/// flag is set.
struct GoneOnCue {
    end: WireEnd,
    gone: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl pathstack::core::Device for GoneOnCue {
    fn transmit(
        &mut self,
        frame: pathstack::core::Msg,
        now: Instant,
    ) -> Result<(), pathstack::core::DeviceError> {
        if self.gone.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(pathstack::core::DeviceError::Gone("deleted on cue".into()));
        }
        self.end.transmit(frame, now)
    }
    fn receive(
        &mut self,
        pool: &pathstack::core::MsgPool,
        now: Instant,
    ) -> Result<Option<pathstack::core::Msg>, pathstack::core::DeviceError> {
        self.end.receive(pool, now)
    }
    fn caps(&self) -> pathstack::core::device::DeviceCaps {
        self.end.caps()
    }
    fn stats(&self) -> pathstack::core::device::DeviceStats {
        self.end.stats()
    }
}

/// Sends after the device is gone fail with `NetworkDown` (Linux's
/// `ENETDOWN`), not as a counted driver drop with `Other` (issue 27,
/// problem 8); the first send that met the failure is the last to try.
#[test]
fn sends_after_the_device_is_gone_are_network_down() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (a, _b) = wire_pair(WireConfig::default());
    let gone = std::sync::Arc::new(AtomicBool::new(false));
    let dev = GoneOnCue {
        end: a,
        gone: std::sync::Arc::clone(&gone),
    };
    let mut h = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), dev).unwrap();
    h.add_neighbor(
        Ipv4Addr::new(10, 0, 0, 2),
        pathstack::inet::MacAddr([2, 0, 0, 0, 0, 2]),
    )
    .unwrap();
    let s = h.udp().bind_connected("0.0.0.0:0", "10.0.0.2:9").unwrap();
    h.udp().send(&s, b"before").unwrap();
    gone.store(true, Ordering::Relaxed);
    // This one meets the failure in the driver (sent by the stack after
    // the call accepted it, as a datagram into a NIC that vanished).
    let _ = h.udp().send(&s, b"meets it");
    assert!(h.device_failure().is_some());
    let e = h.udp().send(&s, b"after").unwrap_err();
    assert_eq!(kind(e), ErrorKind::NetworkDown);
    let c = h.tcp().connect("10.0.0.2:80").unwrap();
    let e = ready(c.write(&mut h, b"x")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NetworkDown);
}
