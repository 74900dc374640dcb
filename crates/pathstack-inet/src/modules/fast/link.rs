//! The IPv4-over-Ethernet part of the fast forms: a datagram's next hop
//! and link address found as the `IP` and `ARP` stages find them, its IP
//! and Ethernet headers written from a template of the peer, and a
//! received frame's two headers checked and stripped in one step.
//!
//! Public for the fast forms of protocol families above IP in other
//! crates (the RPC stack's over IP, `pathstack_rpc::modules::fast`).

use crate::anno::InetAnno;
use crate::modules::{ArpStage, EthStage, IpStage};
use crate::wire::eth::{self, MacAddr, MIN_FRAME_LEN};
use crate::wire::ipv4::{self, Ipv4Template, MIN_HEADER_LEN};
use pathstack_core::fused::FastCx;
use pathstack_core::{Instant, Msg};
use std::net::Ipv4Addr;

/// Bytes of the Ethernet and IPv4 headers.
pub const LINK_HEADERS: usize = eth::HEADER_LEN + MIN_HEADER_LEN;
/// Where the IP header starts in a frame.
pub const IP_AT: usize = eth::HEADER_LEN;

/// Where the `IP` and `ARP` stages sit on the path (their modules are
/// reached through their positions).
#[derive(Clone, Copy)]
pub struct LinkPositions {
    /// The `IP` stage's position.
    pub ip: usize,
    /// The `ARP` stage's position.
    pub arp: usize,
}

/// Where datagrams to one destination go, found as `IP` and `ARP` find
/// it, and what that answer depends on: it holds while the routing table
/// and the neighbour cache keep their generations
/// ([`pathstack_core::generation`]) and the link address has not expired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The datagram's destination.
    pub dst: Ipv4Addr,
    /// Where IP sends it (the destination itself on the link).
    pub next_hop: Ipv4Addr,
    /// The next hop's link address.
    pub mac: MacAddr,
    /// When the neighbour entry expires (`None`: a static one).
    until: Option<Instant>,
    /// The routing table's and the neighbour cache's generations.
    routes: u64,
    neighbours: u64,
}

impl Hop {
    /// Whether this is still the answer for `dst` at `now`.
    #[inline(always)]
    fn holds(&self, dst: Ipv4Addr, now: Instant, routes: u64, neighbours: u64) -> bool {
        self.dst == dst
            && self.routes == routes
            && self.neighbours == neighbours
            && self.until.is_none_or(|t| now < t)
    }
}

/// The hop of a datagram to `dst` whose transport part is `transport`
/// bytes: `kept` (the hop a template was made for) while it holds, else
/// looked up as `IP` and `ARP` look it up; `None` (decline) where they
/// would do anything but send it whole to a cached link address.
#[inline(always)]
pub fn hop(
    stages: (&IpStage, &ArpStage),
    dst: Ipv4Addr,
    transport: usize,
    msg: &Msg,
    cx: &mut FastCx,
    at: LinkPositions,
    kept: Option<&Hop>,
) -> Option<Hop> {
    match next(stages, dst, transport, msg, cx, at, kept)? {
        Next::Kept => kept.copied(),
        Next::Found(h) => Some(h),
    }
}

/// Where a datagram goes, as [`next`] finds it.
pub enum Next {
    /// Along the kept hop, which still holds: the template made for it
    /// serves as it is.
    Kept,
    /// Along this hop, looked up anew.
    Found(Hop),
}

/// [`hop`] without copying a kept hop that holds — the common case of an
/// established path, which then needs nothing from the answer but that.
#[inline(always)]
pub fn next(
    (ip, arp): (&IpStage, &ArpStage),
    dst: Ipv4Addr,
    transport: usize,
    msg: &Msg,
    cx: &mut FastCx,
    at: LinkPositions,
    kept: Option<&Hop>,
) -> Option<Next> {
    if !ip.fast_sendable(transport, msg.anno()) {
        return None;
    }
    let now = cx.now();
    let (routes, neighbours) = (ip.fast_generation(), arp.fast_generation());
    if kept.is_some_and(|h| h.holds(dst, now, routes, neighbours)) {
        return Some(Next::Kept);
    }
    let next_hop = ip.fast_route(dst, &mut cx.stage(at.ip))?;
    let (mac, until) = arp.fast_resolve(next_hop, &mut cx.stage(at.arp))?;
    Some(Next::Found(Hop {
        dst,
        next_hop,
        mac,
        until,
        routes,
        neighbours,
    }))
}

/// The zero bytes a frame needs appended to reach the minimum, when `msg`
/// has room for `headers` more bytes in front and those after; `None`
/// (decline) otherwise. Checked before anything is taken (the
/// identification) or written.
#[inline(always)]
pub fn room(msg: &Msg, headers: usize) -> Option<usize> {
    let pad = MIN_FRAME_LEN.saturating_sub(msg.len() + headers);
    (msg.headroom() >= headers && msg.tailroom() >= pad).then_some(pad)
}

/// The IP and Ethernet headers of datagrams to one peer, made once.
pub struct LinkTemplate {
    hop: Hop,
    eth: [u8; eth::HEADER_LEN],
    ip: Ipv4Template,
}

impl LinkTemplate {
    /// The template for datagrams along `hop`; `None` on a path without a
    /// protocol above IP.
    pub fn new(ip: &IpStage, eth: &EthStage, hop: Hop) -> Option<Self> {
        let mut h = [0u8; eth::HEADER_LEN];
        // Always room: the array is the header's length.
        let _ = eth.fast_header(hop.mac).emit(&mut h);
        Some(LinkTemplate {
            hop,
            eth: h,
            ip: ip.fast_template(hop.dst)?,
        })
    }

    /// The hop the template was made for (or last confirmed).
    #[inline(always)]
    pub fn hop(&self) -> &Hop {
        &self.hop
    }

    /// Takes `hop` on as this template's if the headers stay the same
    /// (same destination and link address); `false` if a new template is
    /// needed.
    #[inline(always)]
    pub fn confirm(&mut self, hop: &Hop) -> bool {
        let same = self.hop.dst == hop.dst && self.hop.mac == hop.mac;
        if same {
            self.hop = *hop;
        }
        same
    }

    /// Writes both headers of a datagram of `total` bytes into `h`.
    #[inline(always)]
    pub fn write(&self, h: &mut [u8], total: usize, ident: u16, ttl: u8) {
        h[..IP_AT].copy_from_slice(&self.eth);
        self.ip.write(&mut h[IP_AT..], total as u16, ident, ttl);
    }
}

/// The identification and TTL of the next datagram, taken as `IP` takes
/// them: the last step before writing, once nothing can decline.
#[inline(always)]
pub fn ident_ttl(ip: &IpStage, msg: &Msg) -> (u16, u8) {
    let ident = ip.fast_ident();
    (ident, msg.anno().ttl().unwrap_or(ipv4::DEFAULT_TTL))
}

/// Pads the frame with `pad` zero bytes and writes the annotations `IP`
/// and `ARP` would have written.
#[inline(always)]
pub fn finish(msg: &mut Msg, hop: &Hop, pad: usize) -> bool {
    if !pad_frame(msg, pad) {
        return false;
    }
    let a = msg.anno_mut();
    a.set_next_hop(hop.next_hop);
    a.set_link_dst(hop.mac.0);
    true
}

/// Appends the `pad` zero bytes [`room`] asked for (false only when the
/// room it checked is not there): the frame is complete, so that is what
/// [`eth::pad_to_minimum`] adds.
#[inline(always)]
pub fn pad_frame(msg: &mut Msg, pad: usize) -> bool {
    debug_assert_eq!(
        pad,
        crate::wire::eth::MIN_FRAME_LEN.saturating_sub(msg.len())
    );
    pad == 0 || crate::wire::eth::pad_to_minimum(msg).is_ok()
}

/// A received frame's link facts, once its Ethernet and IP headers passed.
pub struct Arrived {
    /// The datagram's source.
    pub src: Ipv4Addr,
    /// The datagram's destination (this host).
    pub dst: Ipv4Addr,
    /// The IP datagram's total length.
    pub total: usize,
    /// The running sum of the two addresses: the IP part of a
    /// transport's pseudo header (`IpStage::fast_accept`).
    pub addr_sum: u64,
    link_src: [u8; 6],
}

/// Checks the Ethernet and IP headers of frame `f` as `ETH` and `IP` would
/// pass it to this path's protocol, whole; `None` (decline) otherwise.
#[inline(always)]
pub fn arrived(eth: &EthStage, ip: &IpStage, f: &[u8]) -> Option<Arrived> {
    let e = f.first_chunk::<{ eth::HEADER_LEN }>()?;
    if !eth.fast_accepts_matched(e) {
        return None;
    }
    let (src, dst, total, addr_sum) = ip.fast_accept(&f[IP_AT..])?;
    let mut link_src = [0u8; 6];
    link_src.copy_from_slice(&e[6..12]);
    Some(Arrived {
        src,
        dst,
        total,
        addr_sum,
        link_src,
    })
}

/// Strips `headers` bytes (the link headers and `headers -
/// LINK_HEADERS` of the transport's) and cuts the message to `keep`
/// bytes, with the annotations `ETH` and `IP` would have written.
#[inline(always)]
pub fn strip(msg: &mut Msg, a: &Arrived, headers: usize, keep: usize) -> bool {
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
