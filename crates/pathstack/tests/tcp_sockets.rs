//! TCP through whole hosts on the in-memory wire: refused connects,
//! transfers both ways with every close path, many connections at once,
//! SYN cookies, and a property test of byte-exact transfer over an
//! impaired wire (loss up to 10%, duplication, reordering, delay) with
//! both congestion controllers and each extension on and off.
//!
//! The hosts run on a simulated clock (`Stack::poll(now)`), so timeouts
//! cost no wall time.

use pathstack::core::device::impair::{ImpairConfig, Impaired};
use pathstack::core::device::memory::{memory_pair, MemoryConfig};
use pathstack::core::{Device, Duration, Instant};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::modules::TcpModule;
use pathstack::inet::tcp::{CongestionKind, Shutdown, State, TcpConfig};
use pathstack::socket::ready;
use pathstack::socket::Tcp;
use pathstack::socket::{TcpListener, TcpStream};
use proptest::prelude::*;
use std::io::ErrorKind;

const A: &str = "10.0.0.1/24";
const B: &str = "10.0.0.2/24";

fn hosts(da: impl Device + 'static, db: impl Device + 'static) -> (Host, Host) {
    (
        Host::new(HostConfig::parse(A).unwrap(), da).unwrap(),
        Host::new(HostConfig::parse(B).unwrap(), db).unwrap(),
    )
}

fn plain() -> (Host, Host) {
    let (a, b) = memory_pair(MemoryConfig::default());
    hosts(a, b)
}

/// [`plain`] with modular socket paths (`HostConfig::specialize` off), for
/// the tests that transform them themselves.
fn modular() -> (Host, Host) {
    let (da, db) = memory_pair(MemoryConfig::default());
    let host = |cidr: &str, d| {
        let mut c = HostConfig::parse(cidr).unwrap();
        c.specialize = false;
        Host::new(c, d).unwrap()
    };
    (host(A, da), host(B, db))
}

/// Both hosts on a simulated clock.
struct Sim {
    a: Host,
    b: Host,
    now: Instant,
}

impl Sim {
    fn new((a, b): (Host, Host)) -> Sim {
        Sim {
            a,
            b,
            now: Instant::ZERO + Duration::from_millis(1),
        }
    }

    /// One step: both stacks run at `now`, then time moves on by `step`,
    /// or to the next timer when both are idle.
    fn step(&mut self) {
        let wa = self.a.stack_mut().poll(self.now);
        let wb = self.b.stack_mut().poll(self.now);
        let mut next = self.now + Duration::from_micros(100);
        if wa + wb == 0 {
            for h in [&self.a, &self.b] {
                if let Some(t) = h.stack().poll_at() {
                    if t > self.now && t > next {
                        next = next.max(t.min(self.now + Duration::from_millis(50)));
                    }
                }
            }
        }
        self.now = next;
    }

    fn module(h: &Host) -> &TcpModule {
        let id = h.stack().module_id("tcp").unwrap();
        h.stack().module::<TcpModule>(id).unwrap()
    }
}

fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 11) as u8
}

/// One side of a transfer: sends `total` pattern bytes, then
/// shutdown(Write); reads until EOF.
struct End {
    s: TcpStream,
    total: usize,
    sent: usize,
    shut: bool,
    got: Vec<u8>,
    eof: bool,
}

impl End {
    fn new(s: TcpStream, total: usize) -> End {
        End {
            s,
            total,
            sent: 0,
            shut: false,
            got: Vec::new(),
            eof: false,
        }
    }

    fn pump(&mut self, h: &mut Host) {
        let mut chunk = [0u8; 4096];
        while self.sent < self.total {
            let k = (self.total - self.sent).min(chunk.len());
            for (j, c) in chunk[..k].iter_mut().enumerate() {
                *c = pattern(self.sent + j);
            }
            match ready(self.s.write(h, &chunk[..k])).expect("send") {
                Some(n) => self.sent += n,
                None => break,
            }
        }
        if self.sent == self.total && !self.shut {
            h.tcp()
                .shutdown(&self.s, Shutdown::Write)
                .expect("shutdown");
            self.shut = true;
        }
        let mut buf = [0u8; 8192];
        while !self.eof {
            match ready(self.s.read(h, &mut buf)).expect("recv") {
                Some(0) => self.eof = true,
                Some(n) => self.got.extend_from_slice(&buf[..n]),
                None => break,
            }
        }
    }

    fn check(&self, expected: usize) {
        assert_eq!(self.got.len(), expected, "bytes received");
        assert!(
            self.got.iter().enumerate().all(|(i, &c)| c == pattern(i)),
            "content"
        );
    }
}

/// Connects a → b:7 with `cfg` on both ends; returns both streams.
fn connect(sim: &mut Sim, cfg: TcpConfig) -> (TcpListener, TcpStream, TcpStream) {
    let l = sim.b.tcp().listen_with("0.0.0.0:7", 16, cfg).unwrap();
    let c = sim
        .a
        .tcp()
        .connect_with("0.0.0.0:0", "10.0.0.2:7", cfg)
        .unwrap();
    for _ in 0..200_000 {
        sim.step();
        if let Some((s, peer)) = ready(l.accept(&mut sim.b)).unwrap() {
            assert_eq!(peer, sim.a.tcp().local_addr(&c).unwrap());
            return (l, c, s);
        }
    }
    panic!("no connection accepted");
}

/// Transfers `n` bytes a → b and `m` bytes b → a; both shut down writing.
fn transfer(
    sim: &mut Sim,
    cfg: TcpConfig,
    n: usize,
    m: usize,
    limit: Duration,
) -> (TcpStream, TcpStream) {
    transfer_with(sim, cfg, n, m, limit, |_, _, _| {})
}

/// [`transfer`], with `connected` called on the two streams (client on
/// a, server on b) once the connection is accepted.
fn transfer_with(
    sim: &mut Sim,
    cfg: TcpConfig,
    n: usize,
    m: usize,
    limit: Duration,
    connected: impl FnOnce(&mut Sim, &TcpStream, &TcpStream),
) -> (TcpStream, TcpStream) {
    let (_l, c, s) = connect(sim, cfg);
    connected(sim, &c, &s);
    let (mut ea, mut eb) = (End::new(c, n), End::new(s, m));
    let end = sim.now + limit;
    let mut last = (State::Closed, State::Closed);
    while sim.now < end && !(ea.eof && eb.eof && ea.shut && eb.shut) {
        ea.pump(&mut sim.a);
        eb.pump(&mut sim.b);
        sim.step();
        if std::env::var("TCP_DEBUG").is_ok() {
            let st = (
                sim.a.tcp().state(&c).unwrap(),
                sim.b.tcp().state(&s).unwrap(),
            );
            if st != last {
                eprintln!("{:?}: {} / {}", sim.now, st.0, st.1);
                last = st;
            }
        }
    }
    ea.check(m);
    eb.check(n);
    // The last ACKs of the close handshake.
    let settle = sim.now + Duration::from_secs(1);
    let mut last = (State::Closed, State::Closed);
    while sim.now < settle {
        sim.step();
        if std::env::var("TCP_DEBUG").is_ok() {
            let st = (
                sim.a.tcp().state(&c).unwrap(),
                sim.b.tcp().state(&s).unwrap(),
            );
            if st != last {
                eprintln!("{:?}: {} / {}", sim.now, st.0, st.1);
                last = st;
            }
        }
    }
    (c, s)
}

/// A host specializes its connections by default (`HostConfig::specialize`):
/// the connecting end's path and the accepted one's run the fused fast form
/// of the links under TCP, and a transfer goes through it.
#[test]
fn a_host_specializes_its_connections_by_default() {
    let mut sim = Sim::new(plain());
    assert!(sim.a.specializes() && sim.b.specializes());
    let mut paths = Vec::new();
    let (c, s) = transfer_with(
        &mut sim,
        TcpConfig::default(),
        200_000,
        50_000,
        Duration::from_secs(60),
        |sim, c, s| {
            for (h, st) in [(&sim.a, c), (&sim.b, s)] {
                let path = Tcp::of(h).path_id(st).unwrap();
                assert!(h.stack().path(path).unwrap().is_specialized());
                paths.push(path);
            }
        },
    );
    for (h, path, st) in [(&sim.a, paths[0], &c), (&sim.b, paths[1], &s)] {
        let [down, up] = h.stack().path(path).unwrap().fast_hits().unwrap();
        let stats = Tcp::of(h).stats(st).unwrap();
        // Nearly every segment after the handshake, both ways.
        assert!(
            down + 4 >= stats.segs_out && down > 0,
            "{down} of {stats:?}"
        );
        assert!(up + 4 >= stats.segs_in && up > 0, "{up} of {stats:?}");
    }
}

#[test]
fn connect_to_a_closed_port_is_refused() {
    let mut sim = Sim::new(plain());
    let c = sim.a.tcp().connect("10.0.0.2:9").unwrap();
    let mut result = Ok(false);
    for _ in 0..1000 {
        sim.step();
        result = sim.a.tcp().is_connected(&c);
        if result.is_err() {
            break;
        }
    }
    let e = std::io::Error::from(result.unwrap_err());
    assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
    assert!(Sim::module(&sim.b).counters().resets_sent >= 1);
}

#[test]
fn transfer_both_ways_then_every_path_goes_after_time_wait() {
    let mut sim = Sim::new(plain());
    let cfg = TcpConfig {
        time_wait: std::time::Duration::from_secs(2),
        ..TcpConfig::default()
    };
    let paths_before = sim.a.stack().path_ids().count();
    let (c, s) = transfer(&mut sim, cfg, 1_000_000, 300_000, Duration::from_secs(60));
    // Both sides sent their FIN and read the other's.
    let sa = sim.a.tcp().state(&c).unwrap();
    let sb = sim.b.tcp().state(&s).unwrap();
    assert!(
        matches!(
            (sa, sb),
            (State::TimeWait, State::Closed)
                | (State::Closed, State::TimeWait)
                | (State::TimeWait, State::TimeWait)
        ),
        "{sa} / {sb}"
    );
    sim.a.tcp().close(c).unwrap();
    sim.b.tcp().close(s).unwrap();
    let until = sim.now + Duration::from_secs(3);
    while sim.now < until {
        sim.step();
    }
    assert_eq!(
        sim.a.stack().path_ids().count(),
        paths_before,
        "a's connection path is gone"
    );
    assert_eq!(Sim::module(&sim.a).paths_in_use(), 0);
    assert_eq!(
        Sim::module(&sim.b).paths_in_use(),
        1,
        "only b's listener is left"
    );
}

#[test]
fn a_reset_reaches_the_peer_as_connection_reset() {
    let mut sim = Sim::new(plain());
    let (_l, c, s) = connect(&mut sim, TcpConfig::default());
    sim.b.tcp().abort(s).unwrap();
    let mut buf = [0u8; 16];
    let mut err = None;
    for _ in 0..1000 {
        sim.step();
        if let Err(e) = ready(c.read(&mut sim.a, &mut buf)) {
            err = Some(e.kind());
            break;
        }
    }
    assert_eq!(err, Some(ErrorKind::ConnectionReset));
    let e = ready(c.write(&mut sim.a, b"x")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BrokenPipe);
}

/// A read that would block is answered from the flag the connection's
/// stage keeps, without entering the path (issue 26); the flag must never
/// hide what came after it was set: data, the peer's FIN, a write's
/// output, each between reads that found nothing.
#[test]
fn reads_that_would_block_still_see_what_comes_next() {
    let mut sim = Sim::new(plain());
    let (_l, c, s) = connect(&mut sim, TcpConfig::default());
    let mut buf = [0u8; 16];
    let mut read = |sim: &mut Sim, want: &[u8]| {
        let mut got = Vec::new();
        for _ in 0..1000 {
            // Every round reads until it would block: the last read of
            // each is the one the flag answers.
            while let Some(n) = ready(c.read(&mut sim.a, &mut buf)).unwrap() {
                if n == 0 {
                    return got;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(ready(c.read(&mut sim.a, &mut buf)).unwrap(), None);
            if got.len() >= want.len() {
                break;
            }
            sim.step();
        }
        got
    };
    assert_eq!(read(&mut sim, b""), b"");
    for round in 0..20u8 {
        // The reader writes too (its output goes out though its reads
        // skip the path), the writer answers.
        assert_eq!(ready(c.write(&mut sim.a, &[round])).unwrap(), Some(1));
        let mut echo = [0u8; 1];
        let mut got = None;
        for _ in 0..1000 {
            sim.step();
            if let Some(n) = ready(s.read(&mut sim.b, &mut echo)).unwrap() {
                got = Some(n);
                break;
            }
        }
        assert_eq!((got, echo[0]), (Some(1), round));
        let data = [round, round.wrapping_add(1)];
        assert_eq!(ready(s.write(&mut sim.b, &data)).unwrap(), Some(2));
        assert_eq!(read(&mut sim, &data), data);
    }
    sim.b.tcp().shutdown(&s, Shutdown::Write).unwrap();
    let mut end = None;
    for _ in 0..1000 {
        sim.step();
        if let Some(n) = ready(c.read(&mut sim.a, &mut buf)).unwrap() {
            end = Some(n);
            break;
        }
    }
    assert_eq!(end, Some(0), "the FIN after reads that would block");
}

/// A read that opens a closed receive window makes the window update due
/// (RFC 9293 §3.8.6.2.2): it leaves within the read itself. (A read
/// whose flush has nothing to send does not enter the connection's path;
/// this one must.)
#[test]
fn a_read_that_opens_the_window_sends_the_update_at_once() {
    let mut sim = Sim::new(plain());
    let cfg = TcpConfig {
        recv_buffer: 8192,
        ..TcpConfig::default()
    };
    let (_l, c, s) = connect(&mut sim, cfg);
    let data = [7u8; 4096];
    for _ in 0..2000 {
        let _ = ready(c.write(&mut sim.a, &data)).unwrap();
        sim.step();
        if sim.b.tcp().recv_queue(&s).unwrap() >= 8192 {
            break;
        }
    }
    assert_eq!(
        sim.b.tcp().recv_queue(&s).unwrap(),
        8192,
        "the window closed"
    );
    for _ in 0..10 {
        sim.step();
    }
    let before = sim.b.tcp().stats(&s).unwrap().segs_out;
    let mut buf = [0u8; 16384];
    assert_eq!(ready(s.read(&mut sim.b, &mut buf)).unwrap(), Some(8192));
    let after = sim.b.tcp().stats(&s).unwrap().segs_out;
    assert_eq!(after, before + 1, "the window update left with the read");
    // And the sender goes on into the open window.
    for _ in 0..100 {
        let _ = ready(c.write(&mut sim.a, &data)).unwrap();
        sim.step();
    }
    assert!(
        sim.b.tcp().recv_queue(&s).unwrap() > 0,
        "data after the update"
    );
}

#[test]
fn a_hundred_connections_at_once() {
    let mut sim = Sim::new(plain());
    let l = sim.b.tcp().listen("0.0.0.0:7", 128).unwrap();
    let clients: Vec<TcpStream> = (0..100)
        .map(|_| sim.a.tcp().connect("10.0.0.2:7").unwrap())
        .collect();
    let mut servers = Vec::new();
    let mut ends: Vec<End> = clients.iter().map(|&c| End::new(c, 1000)).collect();
    let mut echo: Vec<(TcpStream, Vec<u8>, bool)> = Vec::new();
    for _ in 0..200_000 {
        sim.step();
        while let Some((s, _)) = ready(l.accept(&mut sim.b)).unwrap() {
            servers.push(s);
            echo.push((s, Vec::new(), false));
        }
        for e in &mut ends {
            e.pump(&mut sim.a);
        }
        // Echo: what arrives goes back; EOF closes.
        for (s, pending, done) in &mut echo {
            let mut buf = [0u8; 4096];
            while let Ok(Some(n)) = ready(s.read(&mut sim.b, &mut buf)) {
                if n == 0 {
                    *done = true;
                    break;
                }
                pending.extend_from_slice(&buf[..n]);
            }
            while !pending.is_empty() {
                match ready(s.write(&mut sim.b, pending)).unwrap() {
                    Some(n) => {
                        pending.drain(..n);
                    }
                    None => break,
                }
            }
            if *done && pending.is_empty() {
                let _ = sim.b.tcp().shutdown(s, Shutdown::Write);
            }
        }
        if ends.iter().all(|e| e.eof) {
            break;
        }
    }
    assert_eq!(servers.len(), 100);
    for e in &ends {
        e.check(1000);
    }
}

#[test]
fn syn_cookies_when_the_syn_queue_is_full() {
    let mut sim = Sim::new(plain());
    let l = sim.b.tcp().listen("0.0.0.0:7", 2).unwrap();
    // Each client speaks first (as an HTTP client does): when its
    // cookie's ACK finds the accept queue full and is dropped, the data's
    // retransmission completes the handshake later.
    let clients: Vec<TcpStream> = (0..8)
        .map(|_| {
            let c = sim.a.tcp().connect("10.0.0.2:7").unwrap();
            assert_eq!(ready(c.write(&mut sim.a, b"hi")).unwrap(), Some(2));
            c
        })
        .collect();
    let mut accepted = 0;
    let mut buf = [0u8; 8];
    for _ in 0..200_000 {
        sim.step();
        while let Some((s, _)) = ready(l.accept(&mut sim.b)).unwrap() {
            accepted += 1;
            // The data arrives with or after the handshake.
            let mut got = None;
            for _ in 0..100_000 {
                if let Some(n) = ready(s.read(&mut sim.b, &mut buf)).unwrap() {
                    got = Some(n);
                    break;
                }
                sim.step();
            }
            assert_eq!(got.map(|n| &buf[..n]), Some(&b"hi"[..]));
            sim.b.tcp().close(s).unwrap();
        }
        if accepted == clients.len() {
            break;
        }
    }
    let m = Sim::module(&sim.b);
    let listener = m.listener(7).unwrap();
    let states: Vec<_> = clients
        .iter()
        .map(|c| sim.a.tcp().state(c).unwrap())
        .collect();
    assert_eq!(
        accepted,
        clients.len(),
        "{listener:?} clients {states:?} counters {:?} paths {:?}",
        m.counters(),
        sim.b
            .stack()
            .path_ids()
            .map(|p| sim.b.stack().path(p).unwrap().stats().drops.clone())
            .collect::<Vec<_>>()
    );
    let listener = m.listener(7).unwrap();
    assert!(listener.cookies_sent > 0, "the SYN queue of 2 overflowed");
    assert!(
        listener.cookies_accepted > 0,
        "cookie ACKs opened connections"
    );
    for c in &clients {
        assert!(sim.a.tcp().is_connected(c).unwrap());
    }
}

fn impaired_pair(seed: u64, loss: f64, dup: f64, reorder: f64, jitter_us: u64) -> (Host, Host) {
    let (a, b) = memory_pair(MemoryConfig::default());
    let imp = |s: u64| ImpairConfig {
        seed: s,
        loss,
        duplicate: dup,
        reorder,
        delay: Duration::from_micros(200),
        jitter: Duration::from_micros(jitter_us),
        ..ImpairConfig::default()
    };
    hosts(
        Impaired::new(a, imp(seed)).unwrap(),
        Impaired::new(b, imp(seed ^ 0x9e37_79b9)).unwrap(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    /// Byte-exact both ways over an impaired wire, whatever the options.
    #[test]
    fn byte_exact_over_an_impaired_wire(
        seed in any::<u64>(),
        loss in 0.0f64..0.10,
        dup in 0.0f64..0.05,
        reorder in 0.0f64..0.05,
        jitter in 0u64..500,
        n in 0usize..100_000,
        m in 0usize..40_000,
        newreno in any::<bool>(),
        sack in any::<bool>(),
        ts in any::<bool>(),
        ws in any::<bool>(),
        rack in any::<bool>(),
        nodelay in any::<bool>(),
    ) {
        let cfg = TcpConfig {
            congestion: if newreno { CongestionKind::NewReno } else { CongestionKind::Cubic },
            sack,
            timestamps: ts,
            window_scaling: ws,
            rack,
            nodelay,
            ..TcpConfig::default()
        };
        let mut sim = Sim::new(impaired_pair(seed, loss, dup, reorder, jitter));
        transfer(&mut sim, cfg, n, m, Duration::from_secs(600));
    }
}

/// A request/response exchange sends one segment per message each way:
/// the ACK of a request rides on its answer (RFC 9293 §3.8.6.3 delayed
/// ACK), never a pure ACK before it.
#[test]
fn ping_pong_acks_ride_on_the_answers() {
    let mut sim = Sim::new(plain());
    let cfg = TcpConfig {
        nodelay: true,
        ..TcpConfig::default()
    };
    let (_l, c, s) = connect(&mut sim, cfg);
    let segs_out = |sim: &Sim| {
        (
            Tcp::of(&sim.a).stats(&c).unwrap().segs_out,
            Tcp::of(&sim.b).stats(&s).unwrap().segs_out,
        )
    };
    // The first read opens the window past the handshake's unscaled
    // 65,535 (a window update, as Linux sends): counted from round 1 on.
    let rounds = 20;
    let mut before = segs_out(&sim);
    let mut buf = [0u8; 16];
    for r in 0..=rounds {
        if r == 1 {
            before = segs_out(&sim);
        }
        assert_eq!(ready(c.write(&mut sim.a, &[r as u8])).unwrap(), Some(1));
        let got = loop {
            sim.step();
            if let Some(n) = ready(s.read(&mut sim.b, &mut buf)).unwrap() {
                break n;
            }
        };
        assert_eq!(got, 1);
        assert_eq!(ready(s.write(&mut sim.b, &buf[..1])).unwrap(), Some(1));
        loop {
            sim.step();
            if let Some(n) = ready(c.read(&mut sim.a, &mut buf)).unwrap() {
                assert_eq!((n, buf[0]), (1, r as u8));
                break;
            }
        }
    }
    let after = segs_out(&sim);
    assert_eq!(after.1 - before.1, rounds, "server segments");
    assert_eq!(after.0 - before.0, rounds, "client segments");
}

/// Path-inlining a connection's path (`inline::tcp_rule`) or specializing
/// it (`inline::tcp_fast_rule`, the PIN form: inlined, with the fused
/// fast form of the links under TCP) changes how its stages are called,
/// not what they do: the same transfers on the same simulated clock, with
/// both connection paths transformed once accepted, deliver the same
/// bytes and leave both ends with the same counters as the modular
/// paths, and the specialized paths carry nearly every segment in the
/// fast form. (Over an impaired wire two modular runs already differ: the
/// order in which a poll emits frames decides which ones the impairment
/// drops, so the comparison is made on a clean wire, bulk both ways and
/// request/response.)
#[test]
fn inlined_connection_paths_behave_as_the_modular_ones() {
    use pathstack::core::device::{DriverStage, DRIVER_SPEC};
    use pathstack::inet::modules::inline;

    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Form {
        Std,
        Inlined,
        Specialized,
    }
    let run = |form: Form, nodelay: bool, n: usize, m: usize| {
        let mut sim = Sim::new(modular());
        let cfg = TcpConfig {
            nodelay,
            ..TcpConfig::default()
        };
        let mut paths = Vec::new();
        let (c, s) = transfer_with(
            &mut sim,
            cfg,
            n,
            m,
            Duration::from_secs(600),
            |sim, c, s| {
                let rule = || match form {
                    Form::Std => None,
                    Form::Inlined => Some(inline::tcp_rule::<DriverStage>(DRIVER_SPEC.name)),
                    Form::Specialized => {
                        Some(inline::tcp_fast_rule::<DriverStage>(DRIVER_SPEC.name))
                    }
                };
                let name = match form {
                    Form::Std => return,
                    Form::Inlined => "inline TCP/IP/ARP/ETH/DRIVER",
                    Form::Specialized => "specialize TCP/IP/ARP/ETH/DRIVER",
                };
                for (h, st) in [(&mut sim.a, c), (&mut sim.b, s)] {
                    let path = h.tcp().path_id(st).unwrap();
                    h.stack_mut().add_rule(rule().unwrap());
                    let applied = h.stack_mut().path_optimize(path).unwrap();
                    assert_eq!(applied, [name]);
                    let p = h.stack().path(path).unwrap();
                    assert!(p.is_inlined());
                    assert_eq!(p.is_specialized(), form == Form::Specialized);
                    paths.push(path);
                }
            },
        );
        if form == Form::Specialized {
            // Every segment after the handshake, both ways, but those a
            // timer or the stages' general code sent (none here).
            for (h, path, st) in [(&sim.a, paths[0], &c), (&sim.b, paths[1], &s)] {
                let hits = h.stack().path(path).unwrap().fast_hits().unwrap();
                let stats = Tcp::of(h).stats(st).unwrap();
                assert!(
                    hits[0] + 3 >= stats.segs_out && hits[1] + 3 >= stats.segs_in,
                    "{form:?}: fast form {hits:?} of {} out, {} in",
                    stats.segs_out,
                    stats.segs_in
                );
            }
        }
        (
            Tcp::of(&sim.a).stats(&c).unwrap(),
            Tcp::of(&sim.b).stats(&s).unwrap(),
        )
    };
    for (nodelay, n, m) in [(false, 300_000, 70_000), (true, 1, 1), (true, 5_000, 900)] {
        let std = run(Form::Std, nodelay, n, m);
        assert!(std.0.segs_out > 2, "the client sent its data");
        for form in [Form::Inlined, Form::Specialized] {
            let other = run(form, nodelay, n, m);
            assert_eq!(
                std, other,
                "{form:?}, nodelay {nodelay}, {n} and {m} bytes: counters"
            );
        }
    }
}

/// An ICMP "fragmentation needed" quoting a segment in flight reaches the
/// connection's path as ICMP classifies it and lowers its MSS (RFC 1191
/// §6.3, checked as RFC 5927 §4.1 advises); one quoting a sequence number
/// outside the flight, or another connection's ports, changes nothing.
#[test]
fn fragmentation_needed_lowers_the_mss_of_the_connection_it_quotes() {
    use pathstack::inet::modules::TcpConnStage;
    let mut sim = Sim::new(plain());
    let (_l, c, _s) = connect(&mut sim, TcpConfig::default());
    // Data in flight: sent, not yet acknowledged (b has not run).
    assert!(ready(c.write(&mut sim.a, &[7u8; 3000])).unwrap().is_some());
    sim.a.stack_mut().poll(sim.now);
    let path = sim.a.tcp().path_id(&c).unwrap();
    let (ports, una, smss) = sim
        .a
        .stack_mut()
        .with_stage::<TcpConnStage, _>(path, |t, _| {
            (t.tcb().ports(), t.tcb().snd_una().0, t.tcb().smss())
        })
        .unwrap();
    let mac = sim.a.mac().unwrap().0;
    let frag_needed = |seq: u32, sport: u16| -> Vec<u8> {
        // The quoted segment: IP header from a to b, TCP ports and seq.
        let mut quote = vec![0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0];
        quote.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        quote.extend_from_slice(&sport.to_be_bytes());
        quote.extend_from_slice(&ports.1.to_be_bytes());
        quote.extend_from_slice(&seq.to_be_bytes());
        // ICMP type 3 code 4, next-hop MTU 1000 (RFC 1191 §4).
        let mut icmp = vec![3, 4, 0, 0, 0, 0, 0x03, 0xe8];
        icmp.extend_from_slice(&quote);
        let c = checksum(&icmp);
        icmp[2..4].copy_from_slice(&c.to_be_bytes());
        let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0, 0, 64, 1, 0, 0];
        ip.extend_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        let total = (20 + icmp.len()) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let mut f = mac.to_vec();
        f.extend_from_slice(&[2, 0, 0, 0, 0, 0x99, 8, 0]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&icmp);
        f
    };
    let inject = |sim: &mut Sim, f: Vec<u8>| {
        let dev = sim.a.stack().module_id("dev").unwrap();
        let m = sim.a.stack().pool().alloc_copy(&f).unwrap();
        assert!(sim.a.stack_mut().inject(dev, m));
        sim.a.stack_mut().poll(sim.now);
    };
    let mss = |sim: &mut Sim| {
        sim.a
            .stack_mut()
            .with_stage::<TcpConnStage, _>(path, |t, _| t.tcb().smss())
            .unwrap()
    };
    // Outside the flight, and another connection's port: ignored.
    inject(&mut sim, frag_needed(una.wrapping_sub(1000), ports.0));
    inject(&mut sim, frag_needed(una, ports.0.wrapping_add(1)));
    assert_eq!(mss(&mut sim), smss);
    inject(&mut sim, frag_needed(una, ports.0));
    // 1000 - 40 bytes of headers - 12 of timestamps.
    assert_eq!(mss(&mut sim), 1000 - 40 - 12);
    assert_eq!(Tcp::of(&sim.a).stats(&c).unwrap().pmtu_reductions, 1);
}

/// The Internet checksum (RFC 1071) of `b`.
fn checksum(b: &[u8]) -> u16 {
    let mut sum = 0u32;
    for w in b.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// `SO_SNDBUF`/`SO_RCVBUF` on a live connection
/// (`Tcp::set_send_buffer_size`/`set_recv_buffer_size`): a larger send
/// buffer takes a larger write at once; the receive buffer's new size is
/// reported, and a smaller one never moves the offered window's right
/// edge back (the size set stays at least what is already offered).
#[test]
fn buffer_sizes_change_on_a_live_connection() {
    let mut sim = Sim::new(plain());
    let cfg = TcpConfig {
        send_buffer: 16 * 1024,
        recv_buffer: 64 * 1024,
        ..TcpConfig::default()
    };
    let (_l, c, s) = connect(&mut sim, cfg);
    let data = vec![7u8; 100_000];
    assert_eq!(ready(c.write(&mut sim.a, &data)).unwrap(), Some(16 * 1024));
    assert_eq!(
        sim.a.tcp().set_send_buffer_size(&c, 200_000).unwrap(),
        200_000
    );
    assert_eq!(sim.a.tcp().send_buffer_size(&c).unwrap(), 200_000);
    let more = ready(c.write(&mut sim.a, &data)).unwrap().unwrap();
    assert!(more >= 100_000 - 16 * 1024, "took {more} after growing");
    // Receive side: grows, and shrinking keeps the offered edge.
    assert_eq!(
        sim.b.tcp().set_recv_buffer_size(&s, 128 * 1024).unwrap(),
        128 * 1024
    );
    let shrunk = sim.b.tcp().set_recv_buffer_size(&s, 4096).unwrap();
    assert!(shrunk >= 4096);
    assert_eq!(sim.b.tcp().recv_buffer_size(&s).unwrap(), shrunk);
}

/// `TCP_MAXSEG` on a listening socket (`Tcp::set_listener_mss`): the
/// connections it accepts afterwards offer that MSS, so the peer sends
/// segments no larger; Linux's `setsockopt(TCP_MAXSEG)` after `listen`
/// (packetdrill `mss-setsockopt-tcp_maxseg-server`).
#[test]
fn a_listeners_mss_changes_after_listen() {
    let mut sim = Sim::new(plain());
    let l = sim
        .b
        .tcp()
        .listen_with("0.0.0.0:7", 16, TcpConfig::default())
        .unwrap();
    assert_eq!(
        sim.b.tcp().listener_mss(&l).unwrap(),
        TcpConfig::default().mss
    );
    sim.b.tcp().set_listener_mss(&l, 1100).unwrap();
    assert_eq!(sim.b.tcp().listener_mss(&l).unwrap(), 1100);
    let c = sim
        .a
        .tcp()
        .connect_with("0.0.0.0:0", "10.0.0.2:7", TcpConfig::default())
        .unwrap();
    let mut s = None;
    for _ in 0..200_000 {
        sim.step();
        if let Some((st, _)) = ready(l.accept(&mut sim.b)).unwrap() {
            s = Some(st);
            break;
        }
    }
    let s = s.expect("no connection accepted");
    // Both ends send with the listener's MSS (less the timestamp option).
    assert_eq!(sim.a.tcp().mss(&c).unwrap(), 1100 - 12);
    assert_eq!(sim.b.tcp().mss(&s).unwrap(), 1100 - 12);
}
