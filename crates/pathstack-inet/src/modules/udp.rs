//! `UDP` (RFC 768): a path per socket. A *connected* socket's path is
//! active (key: both addresses and both ports); a *bound* one is passive
//! (key: the local port) and learns each datagram's peer from the message
//! annotations, so an answer turned around on the path goes back to it.
//! The checksum is computed on send and verified on receive (RFC 1122
//! §4.1.3.4), except for a datagram the device vouched for (checksum
//! offload: `rx_csum_verified`, see `pathstack_core::device::offload`).
//! On send UDP always computes the full checksum, offload or not: its
//! datagrams are small next to TCP's 64 KB super-segments, and a complete
//! checksum keeps them right on any device. Datagrams for ports without a path reach IP's own path, which
//! answers ICMP port unreachable (RFC 1122 §4.1.3.1).
//!
//! Paths are made at `UDP` by the application (sockets), or at an
//! application module above it (the thesis' TCPTEST, for the lowest
//! latency), with `PARTICIPANTS`: local `[.., Ipv4?, Port]`, remote
//! `[.., Ipv4, Port]` for a connected socket. Local port 0 picks an
//! ephemeral port (RFC 6335 §6: 49152–65535).

use super::ephemeral::{ephemeral_after, ephemeral_order, EPHEMERAL};
use super::ip::LOCAL_IPV4;
use super::params::transport_ends;
use crate::anno::InetAnno;
use crate::wire::checksum;
use crate::wire::icmp::{types, QuotedUdp, UnreachableReason};
use crate::wire::udp::{self as wire, UdpDropReason, UdpPacket, UdpRepr, HEADER_LEN};
use pathstack_core::attrs::keys;
use pathstack_core::attrs::Attrs;
use pathstack_core::demux::{DemuxKey, KeyMode, PartialClassifier};
use pathstack_core::error::ModuleError;
use pathstack_core::graph::spec::{ModuleSpec, ParamSpec, ServiceSpec};
use pathstack_core::module::{CreateCx, Created, Creation, Module, Route};
use pathstack_core::stack::ModuleSetup;
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg, PathFault};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Spec of `UDP`.
pub const UDP_SPEC: ModuleSpec = ModuleSpec {
    name: "UDP",
    doc: "UDP (RFC 768): a path per socket, checksums, ephemeral ports",
    services: ServiceSpec::OVER_ONE,
    params: &[ParamSpec::optional(
        "max_ports",
        "most ports in use at once (default 65536)",
    )],
    understands: &[],
};

/// Why `UDP` refused to make a path: the source of the
/// [`PathError::Refused`] it returns, for callers to downcast
/// ([`PathError::cause`]); the socket layer reports
/// [`UdpRefusal::PortInUse`] as "address in use".
///
/// [`PathError::Refused`]: pathstack_core::error::PathError::Refused
/// [`PathError::cause`]: pathstack_core::error::PathError::cause
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UdpRefusal {
    /// A connected path without a remote address and port.
    #[error("a connected UDP path needs a remote address and port in PARTICIPANTS (or PASSIVE_OPEN for a bound one)")]
    NoRemote,
    /// A bound (passive) path that names a remote port.
    #[error("a bound (passive) UDP path takes no remote port")]
    BoundWithRemote,
    /// Every ephemeral port (RFC 6335 §6) is in use.
    #[error("no ephemeral port left")]
    NoEphemeralPort,
    /// Another bound path holds the port.
    #[error("port {0} is already bound")]
    PortInUse(u16),
    /// The port table is at its `max_ports` bound.
    #[error("port table full ({0} ports)")]
    PortTableFull(usize),
}

/// The `UDP` module: the port table.
pub struct UdpModule {
    /// Paths per local port (bound sockets hold a port alone; connected
    /// ones may share a port with other connected ones, the classifier
    /// tells them apart by the remote end).
    ports: HashMap<u16, PortUse>,
    max_ports: usize,
    next_ephemeral: u16,
}

#[derive(Clone, Copy, Debug, Default)]
struct PortUse {
    bound: bool,
    connected: u32,
}

impl UdpModule {
    /// Factory: parameter `max_ports`.
    pub fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(UdpModule {
            ports: HashMap::new(),
            max_ports: setup.param("max_ports", 65_536usize)?,
            next_ephemeral: *EPHEMERAL.start(),
        }))
    }

    /// Ports in use.
    pub fn ports_in_use(&self) -> usize {
        self.ports.len()
    }

    fn ephemeral(&mut self) -> Option<u16> {
        let p = ephemeral_order(self.next_ephemeral).find(|p| !self.ports.contains_key(p))?;
        self.next_ephemeral = ephemeral_after(p);
        Some(p)
    }

    fn release(&mut self, port: u16, bound: bool) {
        if let Some(u) = self.ports.get_mut(&port) {
            if bound {
                u.bound = false;
            } else {
                u.connected = u.connected.saturating_sub(1);
            }
            if !u.bound && u.connected == 0 {
                self.ports.remove(&port);
            }
        }
    }
}

pathstack_core::header_demux!(
    /// The UDP partial classifier; the key is the header's
    /// ([`wire::packet_demux_key`]). Passive: the destination port, so a
    /// bound socket's datagrams are found with one probe while no active
    /// path shares their EtherType (`flow.rs` of the classifier, point 3).
    UdpDemux,
    crate::wire::udp,
    PASSIVE_FLOW_LAYOUT
);

impl Module for UdpModule {
    fn spec(&self) -> &'static ModuleSpec {
        &UDP_SPEC
    }

    /// `route_end` is the default: a datagram past the socket's end goes
    /// to the path's sink queue.
    fn ends_in_sink(&self) -> bool {
        true
    }

    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let passive = attrs.get(&keys::PASSIVE_OPEN) == Some(&true);
        let (local, remote, remote_ip) = transport_ends(attrs);
        if !passive && (remote.is_none() || remote_ip.is_none()) {
            return Err(cx.refuse(UdpRefusal::NoRemote));
        }
        if passive && remote.is_some() {
            return Err(cx.refuse(UdpRefusal::BoundWithRemote));
        }
        let port = match local.filter(|&p| p != 0) {
            Some(p) => p,
            None => self
                .ephemeral()
                .ok_or_else(|| cx.refuse(UdpRefusal::NoEphemeralPort))?,
        };
        let in_use = self.ports.get(&port).copied().unwrap_or_default();
        if passive && in_use.bound {
            return Err(cx.refuse(UdpRefusal::PortInUse(port)));
        }
        if !self.ports.contains_key(&port) && self.ports.len() >= self.max_ports {
            return Err(cx.refuse(UdpRefusal::PortTableFull(self.max_ports)));
        }
        let u = self.ports.entry(port).or_default();
        if passive {
            u.bound = true;
        } else {
            u.connected += 1;
        }
        attrs.insert(&keys::PROT_ID, u32::from(crate::wire::ipv4::protocol::UDP));
        Ok(Created::new(
            UdpStage {
                local_port: port,
                remote_port: remote,
                remote_ip,
                local_ip: None,
            },
            Route::Service(1),
        ))
    }

    fn partial_classifier(&self) -> Option<Box<dyn PartialClassifier>> {
        Some(Box::new(UdpDemux))
    }

    fn stats(&self) -> Vec<(String, u64)> {
        vec![("ports_in_use".into(), self.ports.len() as u64)]
    }
}

/// The `UDP` stage of one socket's path.
pub struct UdpStage {
    local_port: u16,
    remote_port: Option<u16>,
    /// The fixed peer of a connected path.
    remote_ip: Option<Ipv4Addr>,
    /// Our address on this path, read once from the path's `LOCAL_IPV4`.
    local_ip: Option<Ipv4Addr>,
}

impl UdpStage {
    /// The local port.
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

    fn local_ip(&mut self, cx: &Cx<'_, '_>) -> Option<Ipv4Addr> {
        if self.local_ip.is_none() {
            self.learn_local_ip(cx);
        }
        self.local_ip
    }

    /// First-packet work: the path's local address from its attributes.
    // OUT (feature `outline`): taken once per path, so it moves out of
    // line (Mosberger et al., §2.2); STD inlines it as before.
    #[cfg_attr(feature = "outline", cold, inline(never))]
    #[cfg_attr(not(feature = "outline"), inline(always))]
    fn learn_local_ip(&mut self, cx: &Cx<'_, '_>) {
        self.local_ip = cx.attrs().get(&LOCAL_IPV4).copied();
    }
}

impl UdpStage {
    /// An ICMP error about one of this path's datagrams (handed over by
    /// ICMP): a connected socket's path records it as the fault its next
    /// call reports, as Linux's `__udp4_lib_err` does (`ConnectionRefused`
    /// for port unreachable, RFC 1122 §4.1.3.3); a bound socket's stays
    /// silent, as Linux's does without `IP_RECVERR` (it talks to many
    /// peers, and an error about one must not fail a call about another).
    // Rare (an error about a datagram we sent): kept out of line.
    #[cold]
    #[inline(never)]
    fn icmp_error(&mut self, msg: &Msg, cx: &mut Cx<'_, '_>) {
        let Some(q) = QuotedUdp::parse(msg.as_slice()) else {
            return;
        };
        let connected = self.remote_port == Some(q.dst_port)
            && self.remote_ip == Some(q.dst)
            && q.src_port == self.local_port;
        if !connected || q.icmp_type != types::DEST_UNREACHABLE {
            return;
        }
        if let Some((reason, kind)) = UnreachableReason::of_code(q.code) {
            let path = cx.path();
            cx.set_fault(path, PathFault::new(kind, reason));
        }
    }
}

/// Where a datagram leaves to, as [`UdpStage`]'s `process` would address
/// it: what the fused fast form (`fast::udp`) needs of the UDP stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UdpEnds {
    /// Our address (the pseudo header's source).
    pub src: Ipv4Addr,
    /// The destination address.
    pub dst: Ipv4Addr,
    /// Our port.
    pub src_port: u16,
    /// The destination port.
    pub dst_port: u16,
}

impl UdpStage {
    /// Fast form, down: the ends of a datagram with annotations `anno`,
    /// as `process` would take them (learning the path's local address
    /// on its first datagram, as `process` does); `None` (decline) when
    /// the path has no local address or the destination is unknown
    /// (`process` drops those).
    #[inline(always)]
    pub(crate) fn fast_ends(
        &mut self,
        anno: &pathstack_core::Anno,
        cx: &Cx<'_, '_>,
    ) -> Option<UdpEnds> {
        Some(UdpEnds {
            src: self.local_ip(cx)?,
            dst: self.remote_ip.or(anno.peer_ip())?,
            src_port: self.local_port,
            dst_port: self.remote_port.or(anno.peer_port())?,
        })
    }

    /// Fast form, down: the destination address and port of a datagram
    /// with annotations `anno`, as `process` takes them; `None` (decline)
    /// when either is unknown (`process` drops those). What a datagram
    /// along a kept template needs of the stage: our address and port
    /// are the template's ([`UdpStage::fast_ends`] when one is made).
    #[inline(always)]
    pub(crate) fn fast_peer(&self, anno: &pathstack_core::Anno) -> Option<(Ipv4Addr, u16)> {
        Some((
            self.remote_ip.or(anno.peer_ip())?,
            self.remote_port.or(anno.peer_port())?,
        ))
    }

    /// Fast form, up: the source port and length of the datagram `udp`,
    /// in a frame the classifier matched to this path, whose pseudo
    /// header's addresses sum to `addr_sum` (their running sum,
    /// [`checksum::partial`], as IP's fast form keeps it), when `process`
    /// would accept it (a length within the datagram, a checksum that
    /// verifies unless `verified`); `None` (decline) otherwise, or for a
    /// datagram without a checksum, left to `process` (RFC 768 allows it;
    /// rare). The ports are not compared: they are the path's demux key,
    /// which the match proved, and `process` skips them for a classified
    /// frame too (parse once, issue 26 item 3).
    #[inline(always)]
    pub(crate) fn fast_accept(
        &self,
        udp: &[u8],
        addr_sum: u64,
        verified: bool,
    ) -> Option<(u16, usize)> {
        let h: &[u8; HEADER_LEN] = udp.first_chunk()?;
        let sport = u16::from_be_bytes([h[0], h[1]]);
        let ulen = usize::from(u16::from_be_bytes([h[4], h[5]]));
        if ulen < HEADER_LEN || ulen > udp.len() || h[6..8] == [0, 0] {
            return None;
        }
        let sum_ok = verified || {
            // RFC 768's pseudo header: the addresses, the zero byte and
            // the protocol, and the UDP length — the header's own length
            // field, as it lies in native order.
            let rest = u64::from(u16::from_ne_bytes([0, crate::wire::ipv4::protocol::UDP]))
                + u64::from(u16::from_ne_bytes([h[4], h[5]]));
            // The header is the eight bytes already in hand, one word of
            // the sum (RFC 1071 §2(C)); the data follow at an even offset.
            let data = udp.get(HEADER_LEN..ulen).unwrap_or_default();
            checksum::verifies(addr_sum + rest + checksum::partial(h) + checksum::partial(data))
        };
        sum_ok.then_some((sport, ulen))
    }
}

impl Stage for UdpStage {
    #[inline(always)]
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            let Some(src) = self.local_ip(cx) else {
                return Verdict::Drop(UdpDropReason::NoLocalAddress.into());
            };
            let a = msg.anno();
            let (Some(dst), Some(dst_port)) = (
                self.remote_ip.or(a.peer_ip()),
                self.remote_port.or(a.peer_port()),
            ) else {
                return Verdict::Drop(UdpDropReason::NoDestination.into());
            };
            let repr = UdpRepr {
                src_port: self.local_port,
                dst_port,
            };
            match repr.push_onto(msg, src, dst) {
                Ok(()) => Verdict::Next,
                Err(_) => Verdict::Drop(UdpDropReason::TooLong.into()),
            }
        } else {
            if msg.anno().icmp_error() {
                self.icmp_error(msg, cx);
                return Verdict::Consumed;
            }
            let a = msg.anno();
            let (Some(src), Some(dst)) = (a.peer_ip(), a.local_ip()) else {
                return Verdict::Drop(UdpDropReason::NoLocalAddress.into());
            };
            let (sport, dport, len) = match UdpPacket::new_received(
                msg.as_slice(),
                src,
                dst,
                msg.anno().offload().rx_csum_verified,
            ) {
                Ok(p) => (p.src_port(), p.dst_port(), p.len()),
                Err(e) => return Verdict::Drop(e.into()),
            };
            // The classifier keyed this path on the ports (parse once).
            if !msg.anno().classified()
                && (dport != self.local_port || self.remote_port.is_some_and(|r| r != sport))
            {
                return Verdict::Drop(UdpDropReason::WrongPort.into());
            }
            msg.truncate(len);
            if msg.pop(HEADER_LEN).is_err() {
                return Verdict::Drop(UdpDropReason::WrongPort.into());
            }
            msg.anno_mut().set_peer_port(sport);
            Verdict::Next
        }
    }

    fn destroy(&mut self, cx: &mut Cx<'_, '_>) {
        let (port, bound) = (self.local_port, self.remote_port.is_none());
        if let Some(m) = cx.module::<UdpModule>() {
            m.release(port, bound);
        }
    }

    fn demux_key(&self, mode: KeyMode) -> DemuxKey {
        DemuxKey::Key(wire::path_demux_key(
            mode,
            self.local_port,
            self.remote_port,
        ))
    }
}
