//! The module graph of an RPC host, as text for
//! [`ModuleGraph::from_text`](pathstack_core::graph::ModuleGraph::from_text).

use super::chan::DEFAULT_CALL_TIMEOUT;
use super::RpcNet;
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
            let secs = call_timeout.as_secs() + u64::from(call_timeout.subsec_nanos() > 0);
            format!("name=chan module=CHAN call_timeout={secs};")
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
