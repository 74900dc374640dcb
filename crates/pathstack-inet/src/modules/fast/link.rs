//! The IPv4-over-Ethernet part of the fast forms: a datagram's next hop
//! and link address found as the `IP` and `ARP` stages find them, its IP
//! and Ethernet headers written from a template of the peer, and a
//! received frame's two headers checked and stripped in one step.

use crate::anno::InetAnno;
use crate::modules::{ArpStage, EthStage, IpStage};
use crate::wire::eth::{self, MacAddr, MIN_FRAME_LEN};
use crate::wire::ipv4::{self, Ipv4Template, MIN_HEADER_LEN};
use pathstack_core::fused::FastCx;
use pathstack_core::Msg;
use std::net::Ipv4Addr;

/// Bytes of the Ethernet and IPv4 headers.
pub(super) const LINK_HEADERS: usize = eth::HEADER_LEN + MIN_HEADER_LEN;
/// Where the IP header starts in a frame.
pub(super) const IP_AT: usize = eth::HEADER_LEN;

/// Where the `IP` and `ARP` stages sit on the path (their modules are
/// reached through their positions).
#[derive(Clone, Copy)]
pub(super) struct LinkPositions {
    pub ip: usize,
    pub arp: usize,
}

/// Where a datagram goes: found as the stages find it, before anything
/// is written.
pub(super) struct Hop {
    pub next_hop: Ipv4Addr,
    pub mac: MacAddr,
    /// Zero bytes to append up to the minimum frame.
    pub pad: usize,
}

/// The hop of a datagram to `dst` whose transport part is `transport`
/// bytes, `extra` of them still to be pushed in front of `msg`: `None`
/// (decline) where `IP` or `ARP` would do anything but send it whole to a
/// cached link address, or where the message lacks room.
#[inline(always)]
pub(super) fn hop(
    (ip, arp): (&IpStage, &ArpStage),
    dst: Ipv4Addr,
    transport: usize,
    extra: usize,
    msg: &Msg,
    cx: &mut FastCx,
    at: LinkPositions,
) -> Option<Hop> {
    let next_hop = ip.fast_next_hop(dst, transport, msg.anno(), &mut cx.stage(at.ip))?;
    let mac = arp.fast_resolve(next_hop, &mut cx.stage(at.arp))?;
    // Room for the headers and the minimum-frame padding, checked before
    // anything is taken (the identification) or written.
    let pad = MIN_FRAME_LEN.saturating_sub(msg.len() + extra + LINK_HEADERS);
    (msg.headroom() >= LINK_HEADERS + extra && msg.tailroom() >= pad).then_some(Hop {
        next_hop,
        mac,
        pad,
    })
}

/// The IP and Ethernet headers of datagrams to one peer, made once.
pub(super) struct LinkTemplate {
    dst: Ipv4Addr,
    mac: MacAddr,
    eth: [u8; eth::HEADER_LEN],
    ip: Ipv4Template,
}

impl LinkTemplate {
    /// The template for datagrams to `dst` through `mac`; `None` on a
    /// path without a protocol above IP.
    pub(super) fn new(ip: &IpStage, eth: &EthStage, dst: Ipv4Addr, mac: MacAddr) -> Option<Self> {
        let mut h = [0u8; eth::HEADER_LEN];
        // Always room: the array is the header's length.
        let _ = eth.fast_header(mac).emit(&mut h);
        Some(LinkTemplate {
            dst,
            mac,
            eth: h,
            ip: ip.fast_template(dst)?,
        })
    }

    /// Whether this template is the one for `dst` through `mac`.
    #[inline(always)]
    pub(super) fn fits(&self, dst: Ipv4Addr, mac: MacAddr) -> bool {
        self.dst == dst && self.mac == mac
    }

    /// Writes both headers of a datagram of `total` bytes into `h`.
    #[inline(always)]
    pub(super) fn write(&self, h: &mut [u8], total: usize, ident: u16, ttl: u8) {
        h[..IP_AT].copy_from_slice(&self.eth);
        self.ip.write(&mut h[IP_AT..], total as u16, ident, ttl);
    }
}

/// The identification and TTL of the next datagram, taken as `IP` takes
/// them: the last step before writing, once nothing can decline.
#[inline(always)]
pub(super) fn ident_ttl(
    ip: &IpStage,
    msg: &Msg,
    cx: &mut FastCx,
    at: LinkPositions,
) -> Option<(u16, u8)> {
    let ident = ip.fast_ident(&mut cx.stage(at.ip))?;
    Some((ident, msg.anno().ttl().unwrap_or(ipv4::DEFAULT_TTL)))
}

/// Pads the frame to the minimum and writes the annotations `IP` and
/// `ARP` would have written.
#[inline(always)]
pub(super) fn finish(msg: &mut Msg, hop: &Hop) -> bool {
    if hop.pad > 0 {
        match msg.append(hop.pad) {
            Ok(tail) => tail.fill(0),
            // Checked by `hop`.
            Err(_) => return false,
        }
    }
    let a = msg.anno_mut();
    a.set_next_hop(hop.next_hop);
    a.set_link_dst(hop.mac.0);
    true
}

/// A received frame's link facts, once its Ethernet and IP headers passed.
pub(super) struct Arrived {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    /// The IP datagram's total length.
    pub total: usize,
    link_src: [u8; 6],
}

/// Checks the Ethernet and IP headers of frame `f` as `ETH` and `IP` would
/// pass it to this path's protocol, whole; `None` (decline) otherwise.
#[inline(always)]
pub(super) fn arrived(eth: &EthStage, ip: &IpStage, f: &[u8]) -> Option<Arrived> {
    let e = f.first_chunk::<{ eth::HEADER_LEN }>()?;
    if !eth.fast_accepts(e) {
        return None;
    }
    let (src, dst, total) = ip.fast_accept(&f[IP_AT..])?;
    let mut link_src = [0u8; 6];
    link_src.copy_from_slice(&e[6..12]);
    Some(Arrived {
        src,
        dst,
        total,
        link_src,
    })
}

/// Strips `headers` bytes (the link headers and `headers -
/// LINK_HEADERS` of the transport's) and cuts the message to `keep`
/// bytes, with the annotations `ETH` and `IP` would have written.
#[inline(always)]
pub(super) fn strip(msg: &mut Msg, a: &Arrived, headers: usize, keep: usize) -> bool {
    if msg.pop(headers).is_err() {
        return false;
    }
    msg.truncate(keep);
    let anno = msg.anno_mut();
    // `arrived` took only a unicast frame for us.
    anno.set_link_broadcast(false);
    anno.set_link_dst(a.link_src);
    anno.set_peer_ip(a.src);
    anno.set_local_ip(a.dst);
    true
}
