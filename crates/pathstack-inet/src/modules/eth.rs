//! `ETH`: Ethernet II on a path — EtherType demultiplexing, destination
//! filtering (own unicast and broadcast), the source address of the device,
//! padding to the minimum frame. On the way up it annotates the frame's
//! source as its link-layer peer ([`InetAnno::link_dst`]).

use super::params::required;
use crate::anno::InetAnno;
use crate::wire::eth::{self as wire, EthDropReason, EthHeader, MacAddr};
use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::demux::{DemuxKey, KeyMode, PartialClassifier};
use pathstack_core::error::ModuleError;
use pathstack_core::graph::spec::{Count, ModuleSpec, ParamSpec, ServiceSpec, ServiceType};
use pathstack_core::module::{CreateCx, Created, Creation, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg};

/// Spec of `ETH`.
pub const ETH_SPEC: ModuleSpec = ModuleSpec {
    name: "ETH",
    doc: "Ethernet II: EtherType demultiplexing, destination filter, minimum-frame padding",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::NETDEV, Count::ExactlyOne).init_after(),
    ],
    params: &[ParamSpec::required(
        "mac",
        "the interface's MAC address (source of every frame), e.g. 02:00:00:00:00:01",
    )],
    understands: &[],
};

/// The `ETH` module: the interface's address.
pub struct EthModule {
    mac: MacAddr,
}

impl EthModule {
    /// Factory: parameter `mac`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        let mac = required(setup, "mac", str::parse::<MacAddr>)?;
        Ok(Box::new(EthModule { mac }))
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> MacAddr {
        self.mac
    }
}

pathstack_core::header_demux!(
    /// The Ethernet partial classifier; the key is the header's
    /// ([`wire::packet_demux_key`]). The EtherType in both modes: a passive
    /// path from ETH (RPC's, which serve every peer) can be a flow.
    EthDemux,
    crate::wire::eth
);

impl Module for EthModule {
    fn spec(&self) -> &'static ModuleSpec {
        &ETH_SPEC
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        // The module above names its protocol (x-kernel's protocol number
        // handshake): that is the EtherType of this path.
        let ethertype = attrs
            .get(&keys::PROT_ID)
            .and_then(|&p| u16::try_from(p).ok())
            .filter(|&t| t >= 0x0600)
            .ok_or_else(|| {
                cx.refuse("a path through ETH needs PROT_ID = its EtherType (≥ 0x0600)")
            })?;
        Ok(Created::new(
            EthStage {
                ethertype,
                mac: self.mac,
            },
            Route::Service(1),
        ))
    }

    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        Some(Box::new(EthDemux))
    }
}

/// The `ETH` stage of one path: its EtherType.
pub struct EthStage {
    ethertype: u16,
    mac: MacAddr,
}

impl EthStage {
    /// Fast form, down: our address and the path's EtherType.
    #[inline(always)]
    pub fn fast_header(&self, dst: MacAddr) -> EthHeader {
        EthHeader {
            dst,
            src: self.mac,
            ethertype: wire::EtherType(self.ethertype),
        }
    }

    /// Fast form, up: whether `process` would take a frame with header
    /// `h`, which the classifier matched to this path, as a unicast frame
    /// for us from an individual (not group) source address (a broadcast
    /// is left to `process`). The EtherType is not compared: it is the
    /// path's demux key, which the match proved, and `process` skips it
    /// for a classified frame too (parse once, issue 26 item 3). Only for
    /// a frame whose `Anno::classified` is set.
    #[inline(always)]
    pub fn fast_accepts_matched(&self, h: &[u8; wire::HEADER_LEN]) -> bool {
        // IEEE 802 §8.2: the I/G bit, the first octet's lowest.
        let individual_source = h[6] & 1 == 0;
        h[0..6] == self.mac.0 && individual_source
    }
}

impl Stage for EthStage {
    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, _cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            let Some(dst) = msg.anno().link_dst() else {
                return Verdict::Drop(EthDropReason::NoLinkDestination.into());
            };
            let h = EthHeader {
                dst: MacAddr(dst),
                src: self.mac,
                ethertype: wire::EtherType(self.ethertype),
            };
            if h.push_onto(msg).is_err() || wire::pad_to_minimum(msg).is_err() {
                return Verdict::Drop(EthDropReason::NoHeadroom.into());
            }
            Verdict::Next
        } else {
            let h = match EthHeader::pop_from(msg) {
                Ok(h) => h,
                Err(e) => return Verdict::Drop(e.into()),
            };
            if let Err(e) = wire::filter_destination(h.dst, self.mac) {
                return Verdict::Drop(e.into());
            }
            // The classifier keyed this path on the EtherType (parse once).
            if !msg.anno().classified() && h.ethertype.0 != self.ethertype {
                return Verdict::Drop(EthDropReason::UnknownEtherType.into());
            }
            // The sender is where an answer turned around on this path
            // goes: protocols directly over Ethernet (the RPC family's
            // BLAST and BIDCTL) know their peer by it.
            let a = msg.anno_mut();
            a.set_link_broadcast(!h.dst.is_unicast());
            a.set_link_dst(h.src.0);
            Verdict::Next
        }
    }

    fn demux_key(&self, _mode: KeyMode) -> DemuxKey {
        DemuxKey::Key(wire::path_demux_key(self.ethertype))
    }
}
