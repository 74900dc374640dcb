//! Former names that must keep working: graph files saved before issue 27
//! renamed the device driver module `WIRE` to `DRIVER` still build a host
//! (the core maps the name, `pathstack::core::graph::spec::FORMER_NAMES`),
//! and that host carries traffic as one built from today's names does.
//! (The facade's own former names — `wire_pair`, `WireConfig`, `WireEnd`,
//! `rpc_stack` and the hosts' socket methods — were kept one release and
//! are gone.)

use pathstack::core::graph::spec::FORMER_NAMES;
use pathstack::core::SchedKind;
use pathstack::socket::ready;
use pathstack::{memory_pair, Host, MemoryConfig};

/// `graphs/host.graph` as a file saved before the rename has it.
fn graph_with_the_former_driver_name() -> String {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../graphs/host.graph");
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains("module=DRIVER"), "the graph names its driver");
    text.replace("module=DRIVER", "module=WIRE")
}

#[test]
fn wire_is_still_the_driver_modules_former_name() {
    assert!(FORMER_NAMES.contains(&("WIRE", "DRIVER")));
}

#[test]
fn a_graph_file_naming_wire_builds_a_host_that_carries_udp() {
    let (a, b) = memory_pair(MemoryConfig::default());
    let text = graph_with_the_former_driver_name();
    let mut old = Host::from_graph(&text, "host.graph (WIRE)", SchedKind::PerMessage, a).unwrap();
    let mut new = Host::new("10.0.0.2/24".parse().unwrap(), b).unwrap();

    let echo = old.udp().bind("0.0.0.0:7").unwrap();
    let sock = new.udp().bind("0.0.0.0:0").unwrap();
    sock.send_to(&mut new, b"saved graph", "10.0.0.1:7")
        .unwrap();
    let mut buf = [0u8; 64];
    let mut reply = None;
    for _ in 0..1000 {
        old.poll();
        new.poll();
        if let Some((n, from)) = ready(echo.recv_from(&mut old, &mut buf)).unwrap() {
            echo.send_to(&mut old, &buf[..n], from).unwrap();
        }
        if let Some(got) = ready(sock.recv_from(&mut new, &mut buf)).unwrap() {
            reply = Some(got);
            break;
        }
    }
    let (n, from) = reply.expect("the echo came back through the WIRE-named driver");
    assert_eq!(&buf[..n], b"saved graph");
    assert_eq!(from.to_string(), "10.0.0.1:7");
}
