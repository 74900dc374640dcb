//! The RPC stack (BLAST, BID, BIDCTL, CHAN, VCHAN, MSELECT) over the
//! emulated LANCE (`Nic::Lance`, both descriptor access strategies and
//! the two mixed), two hosts joined by the in-memory wire: calls of
//! several sizes, up to the largest message (16 BLAST fragments through
//! both LANCEs' rings), come back byte for byte, each ran once on the
//! server, and the LANCEs report no error. Over Ethernet and over IP.

use pathstack::core::device::wire::{wire_pair, WireConfig, WireEnd};
use pathstack::core::device::Device;
use pathstack::devices::{Access, LanceModule};
use pathstack::host::{Host, HostConfig};
use pathstack::inet::MacAddr;
use pathstack::nic::Nic;
use pathstack::rpc::{Echo, RpcNet};
use std::time::{Duration, Instant};

/// The echo procedure's id (the x-kernel's XRPCTEST).
const ECHO: u32 = pathstack_rpc::modules::protocol::XRPCTEST_ID;
/// A call that takes longer has lost a frame it should not have: the wire
/// and the LANCE lose nothing, and CHAN would only resend after 5 s.
const CALL_LIMIT: Duration = Duration::from_secs(4);

fn host(addr: &str, nic: Nic, net: RpcNet, dev: WireEnd) -> Host {
    let cfg = HostConfig {
        // The wire end's own MAC: the LANCE takes its station address
        // from the device, and ETH must use the same one.
        mac: dev.caps().mac.map(MacAddr),
        nic,
        rpc: Some(net),
        ..HostConfig::parse(addr).unwrap()
    };
    Host::new(cfg, dev).unwrap_or_else(|e| panic!("host {addr} on {nic}: {e}"))
}

fn lance(h: &Host) -> &LanceModule {
    let id = h.stack().module_id("dev").expect("a module named dev");
    h.stack().module::<LanceModule>(id).expect("the LANCE")
}

fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(salt))
        .collect()
}

fn calls_over_lance(nic_a: Nic, nic_b: Nic, net: RpcNet) {
    let (wa, wb) = wire_pair(WireConfig::default());
    let mut a = host("10.0.0.1/24", nic_a, net, wa);
    let mut b = host("10.0.0.2/24", nic_b, net, wb);
    b.rpc().server().unwrap().register(ECHO, Echo).unwrap();
    a.rpc().server().unwrap().register(ECHO, Echo).unwrap();
    let max = a.rpc().max_request().unwrap();
    let mut sizes = vec![0, 1, 100, 1443, 1445, 5000, 12_000];
    sizes.push(max);
    let mut expected_b = 0;
    let mut expected_a = 0;
    for (i, &n) in sizes.iter().enumerate() {
        // Both ways: A calls B, B calls A.
        for a_calls in [true, false] {
            let req = pattern(n, i as u8 ^ u8::from(a_calls));
            let (c, s) = if a_calls {
                (&mut a, &mut b)
            } else {
                (&mut b, &mut a)
            };
            let peer = s.rpc().peer().unwrap();
            let call = c.rpc().start(peer, ECHO, &req).unwrap();
            let t = Instant::now();
            let reply = loop {
                c.poll();
                s.poll();
                if let Some(m) = c
                    .rpc()
                    .poll(&call)
                    .unwrap_or_else(|e| panic!("{n} bytes: {e}"))
                {
                    break m;
                }
                assert!(
                    t.elapsed() < CALL_LIMIT,
                    "{net:?} {nic_a}/{nic_b}: call of {n} bytes not done\n{}\n{}",
                    c.report(),
                    s.report()
                );
            };
            assert!(
                reply.as_slice() == &req[..],
                "{net:?} {nic_a}/{nic_b}: reply of {} bytes differs from the request of {n}",
                reply.len()
            );
            if a_calls {
                expected_b += 1;
            } else {
                expected_a += 1;
            }
        }
    }
    assert_eq!(b.rpc().server().unwrap().calls(), expected_b);
    assert_eq!(a.rpc().server().unwrap().calls(), expected_a);
    for (h, nic) in [(&a, nic_a), (&b, nic_b)] {
        let l = lance(h);
        if let Nic::Lance(access) = nic {
            assert_eq!(l.access(), access);
        }
        let s = l.driver_stats();
        assert_eq!(
            s.tx_errors + s.rx_errors + s.rx_no_buffer + s.miss + s.babble + s.merr,
            0,
            "LANCE errors on {nic}: {s:?}"
        );
    }
}

const COPY: Nic = Nic::Lance(Access::Copy);
const DIRECT: Nic = Nic::Lance(Access::Direct);

#[test]
fn rpc_over_eth_on_lance_copy() {
    calls_over_lance(COPY, COPY, RpcNet::Eth);
}

#[test]
fn rpc_over_eth_on_lance_direct() {
    calls_over_lance(DIRECT, DIRECT, RpcNet::Eth);
}

#[test]
fn rpc_over_eth_on_lance_mixed() {
    calls_over_lance(COPY, DIRECT, RpcNet::Eth);
}

#[test]
fn rpc_over_ip_on_lance() {
    calls_over_lance(DIRECT, COPY, RpcNet::Ip);
}
