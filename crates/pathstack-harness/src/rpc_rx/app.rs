//! The application on host A as the `rpc_rx` input drives it.

use super::rig::Rig;
use super::{ECHO, MAX_CALLS};
use crate::input::{pattern, Input};
use pathstack::rpc::Echo;
use pathstack_inet::MacAddr;
use pathstack_rpc::modules::RpcNet;
use pathstack_rpc::Peer;
use std::net::Ipv4Addr;

/// The application on A: calls, their outcomes, procedures.
pub(crate) fn app(rig: &mut Rig, op: u8, inp: &mut Input<'_>) {
    let which = inp.u8();
    match which % 6 {
        0 | 1 => {
            if rig.calls.len() < MAX_CALLS {
                let n = usize::from(inp.u16()) % (rig.max_request + 2);
                let id = if which & 0x80 == 0 { ECHO } else { inp.u32() };
                // B, or a peer nobody answers for.
                let peer = if which & 0x40 == 0 {
                    rig.b_peer
                } else if rig.net == RpcNet::Eth {
                    Peer::mac(MacAddr([2, 0, 0, 0, 0, inp.u8()]))
                } else {
                    Peer::ipv4(Ipv4Addr::new(10, 0, 0, inp.u8()))
                };
                if let Ok(c) = rig.wire.a.rpc().start(peer, id, &pattern(n, op)) {
                    rig.calls.push(c);
                }
            }
        }
        2 => {
            let mut i = 0;
            while i < rig.calls.len() {
                let c = rig.calls[i];
                if rig.outcome(&c) {
                    rig.calls.swap_remove(i);
                } else {
                    i += 1;
                }
            }
        }
        3 => {
            if !rig.calls.is_empty() {
                let i = usize::from(inp.u8()) % rig.calls.len();
                let c = rig.calls.swap_remove(i);
                rig.wire.a.rpc().abandon(c);
            }
        }
        4 => {
            if let Ok(mut s) = rig.wire.a.rpc().server() {
                let _ = s.unregister(ECHO);
            }
        }
        _ => {
            if let Ok(mut s) = rig.wire.a.rpc().server() {
                let _ = s.register(ECHO, Echo);
                let _ = s.calls();
            }
            let _ = rig.wire.a.report();
            let _ = rig.wire.a.rpc().in_flight();
        }
    }
}
