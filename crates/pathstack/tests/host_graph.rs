//! The host's graph: protocols found by their type (a graph file that
//! names its instances differently gives a working host), and module types
//! of the user's wired above UDP through `HostConfig`.

use pathstack::core::attrs::keys::{AddrPart, Participants, PARTICIPANTS, PASSIVE_OPEN};
use pathstack::core::attrs::Attrs;
use pathstack::core::graph::spec::ModuleSpec;
use pathstack::core::synthetic::{EchoModule, ECHO_SPEC};
use pathstack::core::SchedKind;
use pathstack::host::{Below, Host, HostConfig, UpperModule};
use pathstack::inet::MacAddr;
use pathstack::memory_pair;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, SocketAddr};

/// `graphs/host.graph` with TCP, every instance renamed.
const RENAMED: &str = "
name=pinger module=ICMP;
name=datagrams module=UDP;
name=streams module=TCP;
name=inet module=IP addr=10.0.0.1/24 mtu=1500;
name=resolver module=ARP ip=10.0.0.1 mac=02:00:00:00:00:01;
name=link module=ETH mac=02:00:00:00:00:01;
name=nic module=DRIVER device=0;
@
pinger.down<>inet.up;
datagrams.down<>inet.up;
streams.down<>inet.up;
inet.down<>resolver.up;
resolver.down<>link.up;
link.down<>nic.up;
";

/// Polls both hosts a few rounds.
fn run(a: &mut Host, b: &mut Host) {
    for _ in 0..20 {
        a.poll();
        b.poll();
    }
}

/// Receives one datagram from `s`, polling both hosts until it is there.
fn recv(
    s: &pathstack::socket::UdpSocket,
    on: &mut Host,
    other: &mut Host,
) -> (Vec<u8>, SocketAddr) {
    let mut buf = [0u8; 64];
    for _ in 0..50 {
        match s.recv_from(on, &mut buf) {
            Ok((n, from)) => return (buf[..n].to_vec(), from),
            Err(e) if e.kind() == ErrorKind::WouldBlock => run(on, other),
            Err(e) => panic!("recv_from: {e}"),
        }
    }
    panic!("no datagram");
}

#[test]
fn a_graph_file_with_renamed_instances_gives_a_working_host() {
    let (a, b) = memory_pair(Default::default());
    let mut h1 = Host::from_graph(RENAMED, "renamed.graph", SchedKind::PerMessage, a).unwrap();
    let mut h2 = Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap();
    // IP and ETH found by type: the address and the MAC are the file's.
    assert_eq!(h1.addr(), Some(Ipv4Addr::new(10, 0, 0, 1)));
    assert_eq!(h1.mac(), Some(MacAddr([2, 0, 0, 0, 0, 1])));
    // ARP found by type.
    h1.add_neighbor("10.0.0.9".parse().unwrap(), MacAddr([2, 0, 0, 0, 0, 9]))
        .unwrap();
    // ICMP found by type: a ping is answered.
    h1.ping("10.0.0.2".parse().unwrap(), 1, b"hi").unwrap();
    run(&mut h1, &mut h2);
    assert_eq!(h1.echo_replies().len(), 1);
    // UDP found by type: a datagram each way.
    let s1 = h1.udp().bind("0.0.0.0:7").unwrap();
    let s2 = h2.udp().bind("0.0.0.0:9").unwrap();
    s2.send_to(&mut h2, b"there", "10.0.0.1:7").unwrap();
    let (data, from) = recv(&s1, &mut h1, &mut h2);
    assert_eq!(
        (data.as_slice(), from),
        (&b"there"[..], "10.0.0.2:9".parse().unwrap())
    );
    s1.send_to(&mut h1, b"back", from).unwrap();
    let (data, _) = recv(&s2, &mut h2, &mut h1);
    assert_eq!(data, b"back");
    // TCP found by type: a connection is established.
    let l = h1.tcp().listen("0.0.0.0:80", 4).unwrap();
    let c = h2
        .tcp()
        .connect_with("0.0.0.0:40000", "10.0.0.1:80", Default::default())
        .unwrap();
    run(&mut h1, &mut h2);
    let (_, peer) = l.accept(&mut h1).unwrap();
    assert_eq!(peer, "10.0.0.2:40000".parse().unwrap());
    assert_eq!(
        h2.tcp().state(&c).unwrap(),
        pathstack::inet::tcp::State::Established
    );
}

/// A module type of the user's: ECHO's code under another name, so the
/// host can only know it from `HostConfig::module_types`.
static MY_ECHO: ModuleSpec = ModuleSpec {
    name: "MYECHO",
    ..ECHO_SPEC
};

#[test]
fn a_host_takes_a_module_type_of_the_users_above_udp() {
    let (a, b) = memory_pair(Default::default());
    let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
    cfg.upper
        .push(UpperModule::new("app", "MYECHO").over("down", Below::Udp));
    // Without the type, the graph does not check.
    assert!(Host::new(cfg.clone(), memory_pair(Default::default()).0).is_err());
    cfg.module_types.register(&MY_ECHO, EchoModule::create);
    let mut h1 = Host::new(cfg, a).unwrap();
    let mut h2 = Host::new(HostConfig::parse("10.0.0.2/24").unwrap(), b).unwrap();
    // A path bound to port 7 at the user's module echoes what arrives.
    let (app, _) = h1.stack().module_of::<EchoModule>().unwrap();
    assert_eq!(h1.stack().module_name(app), Some("app"));
    h1.stack_mut()
        .path_create(
            app,
            Attrs::new().with(&PASSIVE_OPEN, true).with(
                &PARTICIPANTS,
                Participants {
                    local: vec![AddrPart::Port(7)],
                    remote: vec![],
                },
            ),
        )
        .unwrap();
    let s2 = h2.udp().bind("0.0.0.0:9").unwrap();
    s2.send_to(&mut h2, b"echo me", "10.0.0.1:7").unwrap();
    let (data, from) = recv(&s2, &mut h2, &mut h1);
    assert_eq!(data, b"echo me");
    assert_eq!(from, "10.0.0.1:7".parse().unwrap());
}
