//! Two Internet hosts joined by the in-memory wire, driven by a simulated
//! clock.
#![allow(dead_code)]

use pathstack_core::device::memory::{memory_pair, MemoryConfig};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::{ModuleTypes, Stack};
use pathstack_core::{Device, Dir, DropTally, Instant, Msg, PathId};
use pathstack_inet::modules::{self, HostGraph, IcmpModule};
use pathstack_inet::MacAddr;
use std::net::Ipv4Addr;

pub const A_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const B_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
pub const A_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);
pub const B_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 2]);

pub fn types() -> ModuleTypes {
    let mut t = ModuleTypes::core();
    modules::register(&mut t);
    t
}

pub struct Host {
    pub stack: Stack,
    pub icmp: PathId,
}

impl Host {
    pub fn new(g: &HostGraph, dev: impl Device + 'static) -> Host {
        let types = types();
        let graph = ModuleGraph::from_text(&g.to_text(), Some("host.graph"), &types.specs())
            .unwrap_or_else(|e| panic!("{e}"));
        let stack = Stack::builder(graph, types)
            .device(dev)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let id = stack.module_id("icmp").unwrap();
        let icmp = stack.module::<IcmpModule>(id).unwrap().path().unwrap();
        Host { stack, icmp }
    }

    pub fn ping(&mut self, dst: Ipv4Addr, seq: u16, data: &[u8]) {
        let m = IcmpModule::echo_request(self.stack.pool(), dst, 0x77, seq, data).unwrap();
        self.stack.send(self.icmp, Dir::Down, m).unwrap();
    }

    pub fn replies(&mut self) -> Vec<Msg> {
        let mut v = Vec::new();
        while let Some(m) = self.stack.recv(self.icmp, Dir::Up) {
            v.push(m);
        }
        v
    }

    /// Drops by the reason's qualified name (`"ipv4.no_route"`, the name
    /// statistics key on), summed over every path and module.
    pub fn drops(&self, reason: &str) -> u64 {
        let s = &self.stack;
        let named = |t: &DropTally| -> u64 {
            t.iter()
                .filter(|(r, _)| r.as_str() == reason)
                .map(|(_, n)| n)
                .sum()
        };
        let on_paths: u64 = s
            .path_ids()
            .filter_map(|p| s.path(p))
            .map(|p| named(&p.stats().drops))
            .sum();
        let in_modules: u64 = s
            .graph()
            .instances()
            .iter()
            .filter_map(|i| s.module_id(&i.name))
            .filter_map(|m| s.module_drops(m))
            .map(named)
            .sum();
        on_paths + in_modules
    }
}

impl Host {
    /// Every non-zero drop and module counter, for failure messages.
    pub fn report(&self) -> String {
        let s = &self.stack;
        let mut out = String::new();
        for p in s.path_ids() {
            let path = s.path(p).unwrap();
            for (r, n) in path.stats().drops.iter() {
                out += &format!("path {p:?} drop {} = {n}\n", r.as_str());
            }
        }
        for i in s.graph().instances() {
            let m = s.module_id(&i.name).unwrap();
            for (r, n) in s.module_drops(m).unwrap().iter() {
                out += &format!("{} drop {} = {n}\n", i.name, r.as_str());
            }
            for (k, n) in s.module_stats(m).unwrap_or_default() {
                if n > 0 {
                    out += &format!("{} {k} = {n}\n", i.name);
                }
            }
        }
        out
    }
}

pub struct Net {
    pub a: Host,
    pub b: Host,
    pub now: Instant,
}

impl Net {
    pub fn with_mtu(mtu: u16) -> Net {
        Net::new(mtu, &[])
    }

    /// Two hosts with `upper` modules (line, connection) above IP.
    pub fn new(mtu: u16, upper: &[(&str, &str)]) -> Net {
        let (da, db) = memory_pair(MemoryConfig::default());
        let upper: Vec<(String, String)> = upper
            .iter()
            .map(|(l, c)| (l.to_string(), c.to_string()))
            .collect();
        let mut ga = HostGraph::new(A_IP, 24, A_MAC);
        ga.mtu = mtu;
        ga.upper = upper.clone();
        let mut gb = HostGraph::new(B_IP, 24, B_MAC);
        gb.mtu = mtu;
        gb.upper = upper;
        Net {
            a: Host::new(&ga, da),
            b: Host::new(&gb, db),
            now: Instant::ZERO,
        }
    }

    /// Polls both stacks `rounds` times, 100 µs of simulated time apart.
    pub fn run(&mut self, rounds: usize) {
        for _ in 0..rounds {
            self.now = Instant::from_nanos(self.now.as_nanos() + 100_000);
            self.a.stack.poll(self.now);
            self.b.stack.poll(self.now);
        }
    }
}
