//! Partial classifiers for Ethernet II, IPv4, TCP and UDP, as the protocol
//! modules would supply them (thesis Figure 3.10: IP classifies on protocol,
//! local and remote address; TCP/UDP on local and remote port; passive keys
//! keep only protocol and local port).
//!
//! Hand-written rather than built on etherparse: a partial classifier reads
//! only its demux fields, at fixed offsets; validating the whole header is
//! the job of the module's stage, done once on the path. The test
//! `inet_matches_etherparse` checks these offsets against etherparse.

use crate::{Classifier, FlowLayout, HeaderLen, Key, KeyMode, ModuleId, PartialClassifier};

/// Ethernet II.
pub const ETH: ModuleId = ModuleId(1);
/// IPv4.
pub const IPV4: ModuleId = ModuleId(2);
/// TCP.
pub const TCP: ModuleId = ModuleId(3);
/// UDP.
pub const UDP: ModuleId = ModuleId(4);
/// ARP (a path end right after Ethernet; does not demultiplex).
pub const ARP: ModuleId = ModuleId(5);
/// A pass-through module (a byte counter between IP and UDP, §3.4.3.2).
pub const COUNT: ModuleId = ModuleId(6);
/// A toy module for raw filters whose key and header length both depend
/// on the mode ([`MixClassifier`]). Id 7 is left to a module nobody knows.
pub const MIX: ModuleId = ModuleId(8);

/// Ethertypes and IP protocol numbers used by the tests.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// ARP ethertype.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// ICMP protocol number.
pub const PROTO_ICMP: u8 = 1;
/// TCP protocol number.
pub const PROTO_TCP: u8 = 6;
/// UDP protocol number.
pub const PROTO_UDP: u8 = 17;

/// Ethernet partial classifier: the ethertype, same in both modes.
#[derive(Clone, Copy, Debug, Default)]
pub struct EthClassifier;

impl PartialClassifier for EthClassifier {
    #[inline]
    fn extract(&self, msg: &[u8], _mode: KeyMode) -> Option<(Key, usize)> {
        let h = msg.get(..14)?;
        Some((Key::from_array([h[12], h[13]]), 14))
    }

    fn flow_layout(&self) -> Option<FlowLayout> {
        Some(FlowLayout::new(HeaderLen::Fixed(14)).key(12, 2))
    }

    fn passive_flow_layout(&self) -> Option<FlowLayout> {
        self.flow_layout()
    }
}

/// IPv4 partial classifier. Active key: protocol, local (destination) and
/// remote (source) address; passive key: protocol only. A fragment carries
/// no complete transport header, so it consumes the whole datagram: the
/// walk then ends at IP and finds the path to reassembly (thesis §3.4.2,
/// Figure 3.6, path p2).
#[derive(Clone, Copy, Debug, Default)]
pub struct Ipv4Classifier;

impl PartialClassifier for Ipv4Classifier {
    #[inline]
    fn extract(&self, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
        let h = msg.get(..20)?;
        if h[0] >> 4 != 4 {
            return None;
        }
        let ihl = usize::from(h[0] & 0x0f) * 4;
        if ihl < 20 || msg.len() < ihl {
            return None;
        }
        let fragment = (h[6] & 0x20) != 0 || (u16::from_be_bytes([h[6], h[7]]) & 0x1fff) != 0;
        let used = if fragment { msg.len() } else { ihl };
        let key = match mode {
            KeyMode::Active => {
                Key::from_array([h[9], h[16], h[17], h[18], h[19], h[12], h[13], h[14], h[15]])
            }
            KeyMode::Passive => Key::from_array([h[9]]),
        };
        Some((key, used))
    }

    /// Version 4 with a 20-byte header (no options), not a fragment (MF
    /// clear, offset 0; RFC 791 §3.1): then the header is 20 bytes.
    fn flow_layout(&self) -> Option<FlowLayout> {
        Some(
            FlowLayout::new(HeaderLen::Fixed(20))
                .guard(0, 0xff, 0x45)
                .guard(6, 0x3f, 0)
                .guard(7, 0xff, 0)
                .key(9, 1)
                .key(16, 4)
                .key(12, 4),
        )
    }

    /// The same datagrams, keyed on the protocol alone.
    fn passive_flow_layout(&self) -> Option<FlowLayout> {
        Some(
            FlowLayout::new(HeaderLen::Fixed(20))
                .guard(0, 0xff, 0x45)
                .guard(6, 0x3f, 0)
                .guard(7, 0xff, 0)
                .key(9, 1),
        )
    }
}

/// TCP or UDP partial classifier: local (destination) and remote (source)
/// port when active, local port when passive.
#[derive(Clone, Copy, Debug)]
pub struct PortClassifier {
    /// Header length: 8 for UDP; `None` for TCP (read the data offset).
    pub fixed_len: Option<usize>,
}

impl PartialClassifier for PortClassifier {
    #[inline]
    fn extract(&self, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
        let h = msg.get(..self.fixed_len.unwrap_or(20))?;
        let used = match self.fixed_len {
            Some(n) => n,
            None => {
                let doff = usize::from(h[12] >> 4) * 4;
                if doff < 20 || msg.len() < doff {
                    return None;
                }
                doff
            }
        };
        let key = match mode {
            KeyMode::Active => Key::from_array([h[2], h[3], h[0], h[1]]),
            KeyMode::Passive => Key::from_array([h[2], h[3]]),
        };
        Some((key, used))
    }

    fn flow_layout(&self) -> Option<FlowLayout> {
        let header = match self.fixed_len {
            Some(n) => HeaderLen::Fixed(n as u8),
            None => HeaderLen::Words {
                at: 12,
                shift: 4,
                min: 20,
            },
        };
        Some(FlowLayout::new(header).key(2, 2).key(0, 2))
    }

    fn passive_flow_layout(&self) -> Option<FlowLayout> {
        let active = self.flow_layout()?;
        Some(FlowLayout::new(active.header()).key(2, 2))
    }
}

/// The [`MIX`] classifier: active key the first byte, one byte long;
/// passive key the second byte, two bytes long. Registering the same key in
/// both modes gives twin nodes that the passive walk must not take on trust
/// (a message's two keys usually differ), and a passive trace whose offsets
/// differ from the active walk's.
#[derive(Clone, Copy, Debug, Default)]
pub struct MixClassifier;

impl PartialClassifier for MixClassifier {
    #[inline]
    fn extract(&self, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
        match mode {
            KeyMode::Active => Some((Key::from_array([*msg.first()?]), 1)),
            KeyMode::Passive => Some((Key::from_array([*msg.get(1)?]), 2)),
        }
    }

    fn flow_layout(&self) -> Option<FlowLayout> {
        Some(FlowLayout::new(HeaderLen::Fixed(1)).key(0, 1))
    }

    /// Not the active layout: a passive path from MIX is never a flow (its
    /// key depends on the mode at the receiving module).
    fn passive_flow_layout(&self) -> Option<FlowLayout> {
        Some(FlowLayout::new(HeaderLen::Fixed(2)).key(1, 1))
    }
}

/// The TCP classifier.
pub const TCP_CLASSIFIER: PortClassifier = PortClassifier { fixed_len: None };
/// The UDP classifier.
pub const UDP_CLASSIFIER: PortClassifier = PortClassifier { fixed_len: Some(8) };

/// Installs the Ethernet, IPv4, TCP, UDP and MIX classifiers (ARP and
/// COUNT stay pass-through).
pub fn install(c: &mut Classifier) {
    let all: [(ModuleId, Box<dyn PartialClassifier>); 5] = [
        (ETH, Box::new(EthClassifier)),
        (IPV4, Box::new(Ipv4Classifier)),
        (TCP, Box::new(TCP_CLASSIFIER)),
        (UDP, Box::new(UDP_CLASSIFIER)),
        (MIX, Box::new(MixClassifier)),
    ];
    for (m, pc) in all {
        // The ids are small constants, far below the registry bound.
        c.set_partial_classifier(m, pc)
            .expect("inet module ids fit the registry");
    }
}

/// A partial classifier without its flow layout: paths through it take
/// the tree walk only (for tests of the walk itself).
#[derive(Clone, Copy, Debug)]
pub struct TreeOnly<P>(pub P);

impl<P: PartialClassifier> PartialClassifier for TreeOnly<P> {
    #[inline]
    fn extract(&self, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
        self.0.extract(msg, mode)
    }
}

/// [`install`] without the flow layouts: every lookup walks the tree.
pub fn install_tree_only(c: &mut Classifier) {
    let all: [(ModuleId, Box<dyn PartialClassifier>); 5] = [
        (ETH, Box::new(TreeOnly(EthClassifier))),
        (IPV4, Box::new(TreeOnly(Ipv4Classifier))),
        (TCP, Box::new(TreeOnly(TCP_CLASSIFIER))),
        (UDP, Box::new(TreeOnly(UDP_CLASSIFIER))),
        (MIX, Box::new(TreeOnly(MixClassifier))),
    ];
    for (m, pc) in all {
        c.set_partial_classifier(m, pc)
            .expect("inet module ids fit the registry");
    }
}

/// The same classifiers as one function, for
/// [`Classifier::classify_with`] and the reference.
#[inline]
pub fn extract(module: ModuleId, msg: &[u8], mode: KeyMode) -> Option<(Key, usize)> {
    match module {
        ETH => EthClassifier.extract(msg, mode),
        IPV4 => Ipv4Classifier.extract(msg, mode),
        TCP => TCP_CLASSIFIER.extract(msg, mode),
        UDP => UDP_CLASSIFIER.extract(msg, mode),
        MIX => MixClassifier.extract(msg, mode),
        _ => Some((Key::EMPTY, 0)),
    }
}
