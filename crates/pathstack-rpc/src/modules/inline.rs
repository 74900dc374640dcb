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
//! **An output and an input function, as the thesis did.** The thesis'
//! inliner emitted one function per direction. The first executor here
//! was one loop over the tuple (`match pos` on every step, the direction
//! a run-time value), and it saved nothing on these paths: a zero-byte
//! call round trip (`pingpong --transport rpc --count-only`, per-message,
//! cachegrind) took 10,141 instructions inlined against 10,063 modular.
//! The inlined executor now unrolls the tuple into one straight sequence
//! per direction, each stage called with a constant direction, so that a
//! stage inlined into the sequence loses its other direction's code: the
//! same round trip took 9,699 instructions (the direction made constant
//! in the loop alone: 9,851), and the UDP ping-pong's 6,299 became 6,078.
//! The server's turn-around (`RPC` answers with `Verdict::Back`) ends the
//! input sequence and the run loop enters the output one, as the
//! thesis' input function called the output function. `scripts/instr.sh`
//! prints the current figures; most of a round trip's cost is in the
//! stages' own work (CHAN's channel tables, VCHAN's pools, BID's boot-id
//! lookups), classification and the run loop, which inlining does not
//! remove.
//!
//! **Specialization** ([`fast_rules`]) goes on where inlining stops: the
//! fused fast form of [`super::fast`] runs an established channel's
//! short calls and replies through every stage between `RPC` and the
//! driver in one step, and the stages' per-message work (CHAN's and
//! VCHAN's module accesses, each header parsed and pushed on its own)
//! with it. The zero-byte call round trip over ETH (`pingpong
//! --transport rpc`, per-message, cachegrind, difference method) went
//! from 7,680 instructions inlined to 6,333 specialized, against 8,032
//! modular (`scripts/instr.sh`): 21.2% fewer than STD (the thesis' PIN
//! saved 19.1%); over IP from 8,560 inlined to 6,635, against 9,261
//! modular.

use super::bid::BID_SPEC;
use super::blast::BLAST_SPEC;
use super::chan::CHAN_SPEC;
use super::fast::eth::{RpcEthFast, Stages as EthStages};
use super::fast::ip::{RpcIpFast, Stages as IpStages};
use super::mselect::MSELECT_SPEC;
use super::rpc::{RpcClientStage, RpcServerStage, RPC_SPEC};
use super::vchan::VCHAN_SPEC;
use super::RpcNet;
use pathstack_core::rules::Rule;
use pathstack_core::Stage;
use pathstack_inet::modules::{ARP_SPEC, ETH_SPEC, IP_SPEC};

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
        RpcNet::Eth => Rule::inline::<EthStages<Top, Driver>>(name, &seq),
        RpcNet::Ip => Rule::inline::<IpStages<Top, Driver>>(name, &seq),
    }
}

/// The path-inlining rule for the RPC client path over `net`, `Driver`
/// being the stage type of the device driver under ETH, whose module
/// type is `driver_type`.
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_rpc::modules::{inline, RpcNet};
/// let rule = inline::client_rule::<DriverStage>(RpcNet::Eth, DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "inline RPC client RPC/MSELECT/VCHAN/CHAN/BID/BLAST/ETH/DRIVER");
/// ```
pub fn client_rule<Driver: Stage>(net: RpcNet, driver_type: &'static str) -> Rule {
    rule::<RpcClientStage, Driver>(net, driver_type, "client")
}

/// The path-inlining rule for the RPC server path over `net` (see
/// [`client_rule`]).
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_rpc::modules::{inline, RpcNet};
/// let rule = inline::server_rule::<DriverStage>(RpcNet::Ip, DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "inline RPC server RPC/MSELECT/VCHAN/CHAN/BID/BLAST/IP/ARP/ETH/DRIVER");
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

/// The specialization rule for the path whose top stage is `Top`: the
/// stages inlined, with the fused fast form of every stage between `RPC`
/// and the driver in front of them ([`super::fast`]).
fn fast_rule<Top: Stage, Driver: Stage>(
    net: RpcNet,
    driver_type: &'static str,
    role: &str,
) -> Rule {
    let seq = sequence(net, driver_type);
    let name = format!("specialize RPC {role} {}", seq.join("/"));
    match net {
        RpcNet::Eth => Rule::specialize::<EthStages<Top, Driver>, RpcEthFast>(name, &seq),
        RpcNet::Ip => Rule::specialize::<IpStages<Top, Driver>, RpcIpFast>(name, &seq),
    }
}

/// The specialization rule for the RPC client path over `net` (see
/// [`client_rule`]): the stages are path-inlined and an established
/// channel's short calls and replies run through MSELECT, VCHAN, CHAN,
/// BID, BLAST and the link in one step, all headers written, or checked
/// and stripped, at once by the fused fast form ([`super::fast`]);
/// everything else runs through the inlined stages. Applies to a modular
/// or an inlined path.
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_rpc::modules::{inline, RpcNet};
/// let rule = inline::client_fast_rule::<DriverStage>(RpcNet::Eth, DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "specialize RPC client RPC/MSELECT/VCHAN/CHAN/BID/BLAST/ETH/DRIVER");
/// ```
pub fn client_fast_rule<Driver: Stage>(net: RpcNet, driver_type: &'static str) -> Rule {
    fast_rule::<RpcClientStage, Driver>(net, driver_type, "client")
}

/// The specialization rule for the RPC server path over `net` (see
/// [`client_fast_rule`]).
///
/// ```
/// use pathstack_core::device::{DriverStage, DRIVER_SPEC};
/// use pathstack_rpc::modules::{inline, RpcNet};
/// let rule = inline::server_fast_rule::<DriverStage>(RpcNet::Ip, DRIVER_SPEC.name);
/// assert_eq!(rule.name(), "specialize RPC server RPC/MSELECT/VCHAN/CHAN/BID/BLAST/IP/ARP/ETH/DRIVER");
/// ```
pub fn server_fast_rule<Driver: Stage>(net: RpcNet, driver_type: &'static str) -> Rule {
    fast_rule::<RpcServerStage, Driver>(net, driver_type, "server")
}

/// Both specialization rules: add them to a stack and optimize its `RPC`
/// client and server paths.
pub fn fast_rules<Driver: Stage>(net: RpcNet, driver_type: &'static str) -> [Rule; 2] {
    [
        client_fast_rule::<Driver>(net, driver_type),
        server_fast_rule::<Driver>(net, driver_type),
    ]
}
