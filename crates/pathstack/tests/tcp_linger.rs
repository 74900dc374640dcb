//! `SO_LINGER` on the synchronous API (issue 27, problem 10): what
//! `close` does with data the peer has not acknowledged — by default
//! a graceful close (the peer reads the data and the end), with linger
//! zero a reset that drops the data, with a linger time a graceful close
//! that is reset if the data is still unacknowledged when the time has
//! passed.

use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::host::Host;
use pathstack::inet::tcp::State;
use pathstack::socket::ready;
use pathstack::socket::{SocketError, TcpStream};
use std::io::ErrorKind;
use std::time::Duration;

/// Two hosts and a connection between them: (client, server, the
/// client's stream, the server's).
fn connected(port: u16) -> (Host, Host, TcpStream, TcpStream) {
    let (a, b) = memory_pair(MemoryConfig::default());
    let mut client = Host::new("10.0.0.1/24".parse().unwrap(), a).unwrap();
    let mut server = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();
    let l = server.tcp().listen(("0.0.0.0", port), 4).unwrap();
    let c = client.tcp().connect(("10.0.0.2", port)).unwrap();
    for _ in 0..100 {
        client.poll();
        server.poll();
        if let Some((s, _)) = ready(l.accept(&mut server)).unwrap() {
            client.poll();
            assert!(client.tcp().is_connected(&c).unwrap());
            return (client, server, c, s);
        }
    }
    panic!("no connection");
}

/// What the server reads until the end or an error (the octets, the
/// error), and its connection's state then: CLOSE-WAIT after the
/// client's FIN, CLOSED after its reset.
fn read_all(
    client: &mut Host,
    server: &mut Host,
    s: &TcpStream,
) -> (usize, Option<ErrorKind>, State) {
    let (mut got, mut buf) = (0, [0u8; 4096]);
    for _ in 0..200 {
        client.poll();
        server.poll();
        let err = match ready(s.read(server, &mut buf)) {
            Ok(Some(0)) => None,
            Ok(Some(n)) => {
                got += n;
                continue;
            }
            Ok(None) => continue,
            Err(e) => Some(e.kind()),
        };
        return (got, err, server.tcp().state(s).unwrap());
    }
    panic!("neither the end nor an error after {got} octets");
}

/// The client writes, the server is not polled (nothing is acknowledged),
/// the client closes with `linger`, then `wait` passes before the server
/// runs again.
fn close_unacknowledged(
    linger: Option<Duration>,
    wait: Duration,
) -> (usize, Option<ErrorKind>, State) {
    let (mut client, mut server, c, s) = connected(80);
    client.tcp().set_linger(&c, linger).unwrap();
    assert_eq!(client.tcp().linger(&c).unwrap(), linger);
    assert_eq!(
        ready(c.write(&mut client, &[7u8; 3000])).unwrap(),
        Some(3000)
    );
    client.tcp().close(c).unwrap();
    assert!(matches!(client.tcp().linger(&c), Err(SocketError::Closed)));
    client.poll();
    std::thread::sleep(wait);
    client.poll();
    read_all(&mut client, &mut server, &s)
}

#[test]
fn the_default_close_is_graceful() {
    assert_eq!(
        close_unacknowledged(None, Duration::ZERO),
        (3000, None, State::CloseWait)
    );
}

#[test]
fn linger_zero_resets_and_drops_the_data() {
    // (The data had left already; a reset follows it, no FIN.)
    let (_, err, state) = close_unacknowledged(Some(Duration::ZERO), Duration::ZERO);
    assert_eq!(
        (err, state),
        (Some(ErrorKind::ConnectionReset), State::Closed)
    );
}

#[test]
fn a_linger_time_that_runs_out_resets_the_connection() {
    // The FIN and then the reset reach the server: it reads the data and
    // the end, and the reset closes its connection (a graceful close
    // leaves it in CLOSE-WAIT, waiting for its own close).
    let (got, _, state) =
        close_unacknowledged(Some(Duration::from_millis(50)), Duration::from_millis(80));
    assert_eq!((got, state), (3000, State::Closed));
}

#[test]
fn a_linger_time_that_does_not_run_out_closes_gracefully() {
    let linger = Some(Duration::from_secs(30));
    assert_eq!(
        close_unacknowledged(linger, Duration::ZERO),
        (3000, None, State::CloseWait)
    );
}

#[test]
fn the_host_wakes_for_a_lingering_close() {
    let (mut client, _server, c, _s) = connected(81);
    client
        .tcp()
        .set_linger(&c, Some(Duration::from_millis(10)))
        .unwrap();
    ready(c.write(&mut client, b"unacknowledged")).unwrap();
    client.tcp().close(c).unwrap();
    // The retransmission timer (200 ms or more) is later than the linger
    // time: the host's next deadline is the linger's.
    let until = client.until_timer().expect("a deadline");
    assert!(until <= Duration::from_millis(10), "{until:?}");
}
