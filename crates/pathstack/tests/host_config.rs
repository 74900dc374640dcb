//! What a new user meets first (issue 27, problems 4–6): the library's
//! constructors work with `?` in a function returning `std::io::Result`,
//! a configuration no host can use is refused with a message that says
//! why, and a port conflict names the protocol it is about.

use pathstack::host::{ConfigError, Host, HostConfig};
use pathstack::socket::{SocketError, Transport};
use pathstack::{wire_pair, TapDevice, TapOptions, WireConfig};
use std::io::{self, ErrorKind};

/// A host made the way a `std::io` program makes one: every constructor
/// with `?`.
fn make(cidr: &str, gateway: Option<&str>) -> io::Result<Host> {
    let mut cfg = HostConfig::parse(cidr)?;
    cfg.gateway = gateway
        .map(str::parse)
        .transpose()
        .map_err(|e| io::Error::new(ErrorKind::InvalidInput, e))?;
    let (a, _b) = wire_pair(WireConfig::default());
    Ok(Host::new(cfg, a)?)
}

#[test]
fn constructors_convert_into_io_errors() {
    assert!(make("10.0.0.1/24", Some("10.0.0.254")).is_ok());
    let e = make("10.0.0.1", None).err().expect("no prefix");
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // A TAP error converts too: a bad name is refused before any system
    // call, so this runs without privileges.
    let tap = || -> io::Result<TapDevice> { Ok(TapDevice::open("a/b", TapOptions::new())?) };
    let e = tap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.to_string().contains("a/b"), "{e}");
}

#[test]
fn unusable_addresses_are_refused_when_parsed_and_when_the_host_is_made() {
    for (cidr, gw, says) in [
        ("0.0.0.0/24", None, "this host"),
        ("10.0.0.0/24", None, "network's own address"),
        ("10.0.0.255/24", None, "broadcast address"),
        ("224.0.0.1/24", None, "multicast"),
        ("127.0.0.1/8", None, "loopback"),
        ("10.0.0.1/0", None, "prefix length 0"),
        ("10.0.0.1/24", Some("10.0.0.1"), "own address"),
        (
            "10.0.0.1/24",
            Some("192.168.0.1"),
            "not on the attached network",
        ),
    ] {
        let e = make(cidr, gw)
            .err()
            .unwrap_or_else(|| panic!("{cidr} via {gw:?} accepted"));
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{cidr}: {e}");
        assert!(e.to_string().contains(says), "{cidr} via {gw:?}: {e}");
    }
    // A configuration changed field by field is checked by `Host::new`.
    let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
    cfg.addr = "10.0.0.255".parse().unwrap();
    let (a, _b) = wire_pair(WireConfig::default());
    let e = Host::new(cfg, a).err().expect("broadcast address accepted");
    assert!(matches!(
        e,
        pathstack::HostError::Config(ConfigError::SubnetBroadcast { .. })
    ));
}

#[test]
fn a_port_conflict_names_its_protocol() {
    let mut h = make("10.0.0.1/24", None).unwrap();
    let _l = h.tcp().listen("0.0.0.0:80", 8).unwrap();
    let e = h.tcp().listen("0.0.0.0:80", 8).unwrap_err();
    assert!(
        matches!(
            e,
            SocketError::PortInUse {
                transport: Transport::Tcp,
                port: 80
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "TCP port 80 is already bound");
    assert_eq!(io::Error::from(e).kind(), ErrorKind::AddrInUse);
    // Ports are per protocol: UDP's 80 is free.
    let _u = h.udp().bind("0.0.0.0:80").unwrap();
    let e = h.udp().bind("0.0.0.0:80").unwrap_err();
    assert_eq!(e.to_string(), "UDP port 80 is already bound");
}

/// A host-wide TCP configuration reaches the connections that give none
/// (issue 27, problem 7), and a std `Duration` goes into TCP's options.
#[test]
fn the_hosts_tcp_configuration_is_every_connections_default() {
    let tcp = pathstack::inet::tcp::TcpConfig {
        nodelay: true,
        keepalive: Some(pathstack::inet::tcp::Keepalive::after(
            std::time::Duration::from_secs(60),
        )),
        ..Default::default()
    };
    let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
    cfg.tcp_config = Some(tcp);
    let (a, _b) = wire_pair(WireConfig::default());
    let mut h = Host::new(cfg, a).unwrap();
    let c = h.tcp().connect("10.0.0.2:80").unwrap();
    assert!(h.tcp().nodelay(&c).unwrap());
    let (a, _b) = wire_pair(WireConfig::default());
    let mut plain = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
    let c = plain.tcp().connect("10.0.0.2:80").unwrap();
    assert!(!plain.tcp().nodelay(&c).unwrap());
}

/// `TcpConfig`'s times are `std::time::Duration`s (issue 27, problem 7):
/// a program sets them without the stack's own `Duration`, and they take
/// effect — a 100 ms TIME-WAIT lets the actively closed connection go
/// within a few hundred milliseconds, not the default 60 s.
#[test]
fn the_tcp_configurations_times_are_std_durations() {
    use pathstack::inet::modules::tcp::TcpModule;
    use pathstack::inet::tcp::{Keepalive, TcpConfig};
    use std::time::{Duration, Instant};
    let cfg = TcpConfig {
        time_wait: Duration::from_millis(100),
        delayed_ack: Duration::from_millis(10),
        keepalive: Some(Keepalive {
            idle: Duration::from_secs(30),
            interval: Duration::from_secs(5),
            probes: 3,
        }),
        ..TcpConfig::default()
    };
    let (a, b) = wire_pair(WireConfig::default());
    let mut client = Host::new(HostConfig::parse("10.0.0.1/24").unwrap(), a).unwrap();
    let mut server = Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap();
    let l = server.tcp().listen("0.0.0.0:80", 4).unwrap();
    let c = client
        .tcp()
        .connect_with("0.0.0.0:0", "10.0.0.2:80", cfg)
        .unwrap();
    let s = loop {
        client.poll();
        server.poll();
        if let Ok((s, _)) = l.accept(&mut server) {
            break s;
        }
    };
    let connections = |h: &Host| {
        let tcp = h.stack().module_id("tcp").unwrap();
        h.stack().module::<TcpModule>(tcp).unwrap().paths_in_use()
    };
    // The client closes first: its connection waits in TIME-WAIT.
    client.tcp().close(c).unwrap();
    for _ in 0..10 {
        client.poll();
        server.poll();
    }
    server.tcp().close(s).unwrap();
    let started = Instant::now();
    while connections(&client) > 0 && started.elapsed() < Duration::from_secs(5) {
        client.poll();
        server.poll();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(connections(&client), 0, "still in TIME-WAIT");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
