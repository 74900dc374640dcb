//! The module graph of an RPC host: declared on a
//! [`GraphBuilder`] ([`RpcGraph::declare`]), or as text for graph files
//! ([`RpcGraph::to_text`]).

use super::chan::DEFAULT_CALL_TIMEOUT;
use super::RpcNet;
use pathstack_core::graph::GraphBuilder;
use pathstack_inet::modules::HostGraph;
use std::time::Duration;

/// An Internet host with the RPC stack on top: the specification's
/// recommended graph (`rpc → mselect → vchan → chan → (bid, bidctl)`,
/// `bid → (blast, bidctl)`), with BLAST and BIDCTL directly on ETH or on
/// IP.
///
/// ```
/// use pathstack_inet::modules::HostGraph;
/// use pathstack_rpc::modules::{RpcGraph, RpcNet};
/// let host = HostGraph::new("10.0.0.1".parse().unwrap(), 24, "02:00:00:00:00:01".parse().unwrap());
/// let text = RpcGraph::new(host, RpcNet::Eth).to_text();
/// assert!(text.contains("blast.down<>eth.up;"));
/// assert!(text.contains("chan.ctl<>bidctl.up;"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcGraph {
    /// The host below the RPC stack.
    pub host: HostGraph,
    /// Whether BLAST and BIDCTL run on ETH or on IP.
    pub net: RpcNet,
    /// How long CHAN retransmits a call before it fails (its
    /// `call_timeout`; [`DEFAULT_CALL_TIMEOUT`] unless set, zero: never).
    pub call_timeout: Duration,
}

impl RpcGraph {
    /// The RPC stack on `host`, over `net`.
    pub fn new(host: HostGraph, net: RpcNet) -> Self {
        RpcGraph {
            host,
            net,
            call_timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// The graph text.
    pub fn to_text(&self) -> String {
        let mut host = self.host.clone();
        host.upper
            .extend(Self::upper(self.net, self.host.mtu, self.call_timeout));
        host.to_text()
    }

    /// Declares the RPC modules on `b` and connects them: BLAST and BIDCTL
    /// on `net`, to the instance `below` (the host's `ETH` or `IP`
    /// instance, whatever its name), BLAST's fragments sized for `mtu`,
    /// CHAN's call deadline `call_timeout` (whole seconds, rounded up; set
    /// only when it is not the default). The same graph as
    /// [`RpcGraph::upper`]'s lines, with no text in between.
    pub fn declare(
        b: &mut GraphBuilder<'_>,
        net: RpcNet,
        below: &str,
        mtu: u16,
        call_timeout: Duration,
    ) {
        use super::bid::BID_SPEC;
        use super::bidctl::BIDCTL_SPEC;
        use super::blast::BLAST_SPEC;
        use super::chan::CHAN_SPEC;
        use super::mselect::MSELECT_SPEC;
        use super::rpc::RPC_SPEC;
        use super::vchan::VCHAN_SPEC;
        let net_name = match net {
            RpcNet::Eth => "eth",
            RpcNet::Ip => "ip",
        };
        b.instance("rpc", RPC_SPEC.name);
        b.instance("mselect", MSELECT_SPEC.name);
        b.instance("vchan", VCHAN_SPEC.name);
        let chan = b.instance("chan", CHAN_SPEC.name);
        if call_timeout != DEFAULT_CALL_TIMEOUT {
            chan.param("call_timeout", whole_seconds(call_timeout));
        }
        b.instance("bid", BID_SPEC.name);
        b.instance("bidctl", BIDCTL_SPEC.name)
            .param("net", net_name);
        b.instance("blast", BLAST_SPEC.name)
            .param("net", net_name)
            .param("mtu", mtu);
        b.connect(("rpc", "down"), ("mselect", "up"));
        b.connect(("mselect", "down"), ("vchan", "up"));
        b.connect(("vchan", "down"), ("chan", "up"));
        b.connect(("chan", "down"), ("bid", "up"));
        b.connect(("chan", "ctl"), ("bidctl", "up"));
        b.connect(("bid", "down"), ("blast", "up"));
        b.connect(("bid", "ctl"), ("bidctl", "up"));
        b.connect(("bidctl", "down"), (below, "up"));
        b.connect(("blast", "down"), (below, "up"));
    }

    /// The RPC modules' lines and connections for
    /// [`HostGraph::upper`]: BLAST and BIDCTL on `net`, BLAST's fragments
    /// sized for `mtu`, CHAN's call deadline `call_timeout` (whole
    /// seconds, rounded up; the parameter is written only when it is not
    /// the default).
    pub fn upper(net: RpcNet, mtu: u16, call_timeout: Duration) -> Vec<(String, String)> {
        let lower = match net {
            RpcNet::Eth => "eth",
            RpcNet::Ip => "ip",
        };
        let chan = if call_timeout == DEFAULT_CALL_TIMEOUT {
            "name=chan module=CHAN;".to_string()
        } else {
            format!(
                "name=chan module=CHAN call_timeout={};",
                whole_seconds(call_timeout)
            )
        };
        vec![
            (
                "name=rpc module=RPC;".into(),
                "rpc.down<>mselect.up;".into(),
            ),
            (
                "name=mselect module=MSELECT;".into(),
                "mselect.down<>vchan.up;".into(),
            ),
            (
                "name=vchan module=VCHAN;".into(),
                "vchan.down<>chan.up;".into(),
            ),
            (chan, "chan.down<>bid.up;\nchan.ctl<>bidctl.up;".into()),
            (
                "name=bid module=BID;".into(),
                "bid.down<>blast.up;\nbid.ctl<>bidctl.up;".into(),
            ),
            (
                format!("name=bidctl module=BIDCTL net={lower};"),
                format!("bidctl.down<>{lower}.up;"),
            ),
            (
                format!("name=blast module=BLAST net={lower} mtu={mtu};"),
                format!("blast.down<>{lower}.up;"),
            ),
        ]
    }
}

/// CHAN's `call_timeout` parameter: whole seconds, rounded up, so that a
/// deadline is never earlier than asked.
fn whole_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}
