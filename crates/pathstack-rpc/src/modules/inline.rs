//! Path-inlining rules for the RPC paths (PIN): the client path
//! `RPC / MSELECT / VCHAN / CHAN / BID / BLAST / ETH / driver` and the
//! server path with the same modules, or with `IP / ARP / ETH` in place
//! of `ETH` when the RPC stack runs over IP. A caller names only the
//! driver under ETH.
//!
//! Path-inlining replaces the dynamically dispatched stages of a path
//! whose module sequence matches with one executor monomorphized over the
//! concrete stage types (Mosberger, *Scout: A Path-Based Operating
//! System*, 1997, §4.2.3; the thesis measured it on this RPC stack,
//! Tables 4.2–4.7).
//!
//! **One executor, not an output and an input function.** The thesis'
//! inliner emitted two functions per path, one per direction, because its
//! stages were C functions called through per-direction pointers
//! (`push`/`demux`): splitting was the only way to get straight-line code.
//! Here a stage is one `process(dir, …)` and the inlined executor is one
//! loop over the tuple; a message enters a path in one direction and runs
//! that direction to its end (or is turned around at the top, as the
//! server's request becomes its reply), so each call of the executor
//! already runs only one direction's code of every stage: the `dir`
//! tests are a well-predicted branch per stage, and the server's
//! turn-around (`Verdict::Back` at `RPC`) would need a call from the
//! input function into the output function anyway. The RPC stages keep
//! their per-direction work in separate functions (`send`/`receive`,
//! `call`/`outcome`) behind an inlined `process`, which is what a split
//! would buy. The figures of `scripts/instr.sh` (instructions per
//! zero-byte round trip, STD against PIN) are what this choice rests on;
//! see the crate's measurements in the repository's notes for the
//! numbers of the current build.

use super::blast::{BlastStage, BLAST_SPEC};
use super::bid::{BidStage, BID_SPEC};
use super::chan::{ChanStage, CHAN_SPEC};
use super::mselect::{MselectStage, MSELECT_SPEC};
use super::rpc::{RpcClientStage, RpcServerStage, RPC_SPEC};
use super::vchan::{VchanStage, VCHAN_SPEC};
use super::RpcNet;
use pathstack_core::rules::Rule;
use pathstack_core::Stage;
use pathstack_inet::modules::{ArpStage, EthStage, IpStage, ARP_SPEC, ETH_SPEC, IP_SPEC};

/// The module sequence of an RPC path over `net` ending in `driver_type`.
fn sequence(net: RpcNet, driver_type: &'static str) -> Vec<&'static str> {
    let mut seq = vec![
        RPC_SPEC.name,
        MSELECT_SPEC.name,
        VCHAN_SPEC.name,
        CHAN_SPEC.name,
        BID_SPEC.name,
        BLAST_SPEC.name,
    ];
    if net == RpcNet::Ip {
        seq.extend([IP_SPEC.name, ARP_SPEC.name]);
    }
    seq.extend([ETH_SPEC.name, driver_type]);
    seq
}

/// The rule for the path whose top stage is `Top` (the client's or the
/// server's `RPC` stage).
fn rule<Top: Stage, Driver: Stage>(net: RpcNet, driver_type: &'static str, role: &str) -> Rule {
    let seq = sequence(net, driver_type);
    let name = format!("inline RPC {role} {}", seq.join("/"));
    match net {
        RpcNet::Eth => Rule::inline::<(
            Top,
            MselectStage,
            VchanStage,
            ChanStage,
            BidStage,
            BlastStage,
            EthStage,
            Driver,
        )>(name, &seq),
        RpcNet::Ip => Rule::inline::<(
            Top,
            MselectStage,
            VchanStage,
            ChanStage,
            BidStage,
            BlastStage,
            IpStage,
            ArpStage,
            EthStage,
            Driver,
        )>(name, &seq),
    }
}

/// The path-inlining rule for the RPC client path over `net`, `Driver`
/// being the stage type of the device driver under ETH, whose module
/// type is `driver_type`.
///
/// ```
/// use pathstack_core::device::{WireStage, WIRE_SPEC};
/// use pathstack_rpc::modules::{inline, RpcNet};
/// let rule = inline::client_rule::<WireStage>(RpcNet::Eth, WIRE_SPEC.name);
/// assert_eq!(rule.name(), "inline RPC client RPC/MSELECT/VCHAN/CHAN/BID/BLAST/ETH/WIRE");
/// ```
pub fn client_rule<Driver: Stage>(net: RpcNet, driver_type: &'static str) -> Rule {
    rule::<RpcClientStage, Driver>(net, driver_type, "client")
}

/// The path-inlining rule for the RPC server path over `net` (see
/// [`client_rule`]).
///
/// ```
/// use pathstack_core::device::{WireStage, WIRE_SPEC};
/// use pathstack_rpc::modules::{inline, RpcNet};
/// let rule = inline::server_rule::<WireStage>(RpcNet::Ip, WIRE_SPEC.name);
/// assert_eq!(rule.name(), "inline RPC server RPC/MSELECT/VCHAN/CHAN/BID/BLAST/IP/ARP/ETH/WIRE");
/// ```
pub fn server_rule<Driver: Stage>(net: RpcNet, driver_type: &'static str) -> Rule {
    rule::<RpcServerStage, Driver>(net, driver_type, "server")
}

/// Both rules: add them to a stack and optimize its `RPC` client and
/// server paths.
pub fn rules<Driver: Stage>(net: RpcNet, driver_type: &'static str) -> [Rule; 2] {
    [
        client_rule::<Driver>(net, driver_type),
        server_rule::<Driver>(net, driver_type),
    ]
}
