//! The stage of a listener's path: a SYN opens the connection's own path
//! (Scout's passive open) while the SYN queue has room, and is answered
//! with a SYN cookie when it has not (RFC 4987 §3.6); the ACK of a valid
//! cookie opens the path then.

use super::conn::cookie_open;
use super::reset::{segment_ends, turn_around};
use super::{four_tuple, PassiveOpen, TcpModule, TCP_CONFIG, TCP_OPEN, TCP_TTL};
use crate::anno::InetAnno;
use crate::tcp::conn_drop_reason::ConnDropReason;
use crate::tcp::syn_cookie::{encode_timestamp, CookieOptions};
use crate::tcp::{SeqNumber, TcpConfig};
use crate::wire::tcp::{self as wire, TcpFlags, TcpOptions, TcpPacket, TcpRepr};
use pathstack_core::attrs::keys::{AddrPart, Participants, PARTICIPANTS};
use pathstack_core::attrs::Attrs;
use pathstack_core::demux::{DemuxKey, KeyMode};
use pathstack_core::error::PathError;
use pathstack_core::stage::{Cx, EstablishCx, Stage, Verdict};
use pathstack_core::{Dir, Msg};
use std::net::Ipv4Addr;

/// The stage of one listener.
pub struct TcpListenStage {
    port: u16,
    cfg: TcpConfig,
    /// The IP time to live of its connections' segments and of its own
    /// cookie SYN-ACKs ([`TCP_TTL`]; `None`: IP's default). Linux's
    /// accepted sockets inherit the listener's `IP_TTL`, so the SYN-ACK
    /// already carries it.
    ttl: Option<u8>,
}

impl TcpListenStage {
    pub(super) fn new(port: u16, cfg: TcpConfig, ttl: Option<u8>) -> Self {
        TcpListenStage { port, cfg, ttl }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The options its future connections get.
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    /// Changes the options its future connections get.
    pub fn set_config(&mut self, cfg: TcpConfig) {
        self.cfg = cfg;
    }

    /// The attributes of a connection's path opened for `peer`, whose
    /// SYN came to our address `local` (the connection's own address, as
    /// the SYN named it: on a host with several, or for 127.0.0.0/8, the
    /// one the peer connected to).
    fn conn_attrs(&self, local: Ipv4Addr, peer: Ipv4Addr, rport: u16, open: PassiveOpen) -> Attrs {
        let attrs = Attrs::new()
            .with(
                &PARTICIPANTS,
                Participants {
                    local: vec![AddrPart::Ipv4(local.octets()), AddrPart::Port(self.port)],
                    remote: vec![AddrPart::Ipv4(peer.octets()), AddrPart::Port(rport)],
                },
            )
            .with(&TCP_CONFIG, self.cfg)
            .with(&TCP_OPEN, open);
        match self.ttl {
            Some(ttl) => attrs.with(&TCP_TTL, ttl),
            None => attrs,
        }
    }

    /// A SYN-ACK carrying a cookie (RFC 4987 §3.6), with the options
    /// carried in the timestamp as Linux does.
    fn cookie_syn_ack(&self, syn: &TcpRepr, iss: SeqNumber, mss: u16, now_ms: u32) -> TcpRepr {
        let mut o = TcpOptions::default();
        o.mss = Some(mss);
        if let Some((tsval, _)) = syn.options.timestamps.filter(|_| self.cfg.timestamps) {
            let ws = syn.options.window_scale.filter(|_| self.cfg.window_scaling);
            let sack = syn.options.sack_permitted && self.cfg.sack;
            o.timestamps = Some((
                encode_timestamp(
                    now_ms,
                    CookieOptions {
                        wscale: ws,
                        sack_permitted: sack,
                    },
                ),
                tsval,
            ));
            if ws.is_some() {
                o.window_scale = Some(self.cfg.window_shift());
            }
            o.sack_permitted = sack;
        }
        TcpRepr {
            src_port: syn.dst_port,
            dst_port: syn.src_port,
            seq: iss.0,
            ack: syn.seq.wrapping_add(1),
            flags: TcpFlags::SYN | TcpFlags::ACK,
            window: self.cfg.recv_buffer.min(65535) as u16,
            urgent: 0,
            options: o,
        }
    }
}

impl Stage for TcpListenStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            return Verdict::Next;
        }
        // An ICMP error quoting a segment of this port (a SYN-ACK to an
        // unreachable peer): nothing for a listener to act on; the
        // half-open connection times out as it would have.
        if msg.anno().icmp_error() {
            return Verdict::Consumed;
        }
        let Some((lip, rip)) = segment_ends(msg, cx) else {
            return Verdict::Drop(ConnDropReason::Closed.into());
        };
        let a = msg.anno();
        let (repr, len) =
            match TcpPacket::new_received(msg.as_slice(), rip, lip, a.offload().rx_csum_verified)
                .and_then(|p| TcpRepr::parse(&p).map(|r| (r, p.payload_len())))
            {
                Ok(x) => x,
                Err(e) => return Verdict::Drop(e.into()),
            };
        let f = repr.flags;
        if f.contains(TcpFlags::RST) {
            return Verdict::Drop(ConnDropReason::NotSyn.into());
        }
        let now = cx.now();
        let port = self.port;
        let tuple = four_tuple(lip, port, rip, repr.src_port);
        if f.contains(TcpFlags::ACK) {
            // The third segment of a cookie handshake, or a stray.
            let Some(m) = cx.module::<TcpModule>() else {
                return Verdict::Drop(ConnDropReason::OpenFailed.into());
            };
            let checked = m
                .cookies()
                .map(|c| c.check_ack(&tuple, SeqNumber(repr.seq), SeqNumber(repr.ack), now));
            return match checked {
                Some(Ok(mss)) => {
                    if let Some(l) = m.listener_mut(port) {
                        if l.accept_queue.len() >= l.backlog {
                            // As for a SYN-queue connection: the ACK
                            // waits for room.
                            return Verdict::Drop(ConnDropReason::ListenQueueFull.into());
                        }
                        l.cookies_accepted += 1;
                    }
                    let open = PassiveOpen::Cookie(cookie_open(
                        mss,
                        repr.options.timestamps.map(|(_, ecr)| ecr),
                    ));
                    let attrs = self.conn_attrs(lip, rip, repr.src_port, open);
                    match cx.open_path(attrs, 0, Some(std::mem::take(msg))) {
                        Ok(()) => Verdict::Consumed,
                        Err(r) => Verdict::Drop(r),
                    }
                }
                Some(Err(_)) => {
                    // A bad cookie: counted, and answered with a reset all
                    // the same.
                    if let Some(rst) = crate::tcp::reset_for(&repr, len) {
                        turn_around(msg, &rst, lip, rip);
                        let _ = cx.emit(Dir::Down, std::mem::take(msg));
                    }
                    Verdict::Drop(ConnDropReason::BadCookie.into())
                }
                None => match crate::tcp::reset_for(&repr, len) {
                    Some(rst) => turn_around(msg, &rst, lip, rip),
                    None => Verdict::Drop(ConnDropReason::NotSyn.into()),
                },
            };
        }
        if !f.contains(TcpFlags::SYN) || f.contains(TcpFlags::FIN) {
            return Verdict::Drop(ConnDropReason::NotSyn.into());
        }
        let Some(m) = cx.module::<TcpModule>() else {
            return Verdict::Drop(ConnDropReason::OpenFailed.into());
        };
        let Some(l) = m.listener_mut(port) else {
            return Verdict::Drop(ConnDropReason::OpenFailed.into());
        };
        if l.accept_queue.len() >= l.backlog {
            // Linux drops SYNs while the accept queue is full: the
            // application is not keeping up, and the peer retries.
            l.overflows += 1;
            return Verdict::Drop(ConnDropReason::ListenQueueFull.into());
        }
        if l.syn_queue < l.backlog {
            l.syn_queue += 1;
            let attrs = self.conn_attrs(lip, rip, repr.src_port, PassiveOpen::Syn);
            return match cx.open_path(attrs, 0, Some(std::mem::take(msg))) {
                Ok(()) => Verdict::Consumed,
                Err(r) => {
                    if let Some(l) = cx.module::<TcpModule>().and_then(|m| m.listener_mut(port)) {
                        l.syn_queue = l.syn_queue.saturating_sub(1);
                    }
                    Verdict::Drop(r)
                }
            };
        }
        // SYN queue full: a cookie, no state (RFC 4987 §3.6).
        let Some(cookies) = m.cookies() else {
            if let Some(l) = m.listener_mut(port) {
                l.overflows += 1;
            }
            return Verdict::Drop(ConnDropReason::ListenQueueFull.into());
        };
        let peer_mss = repr.options.mss.unwrap_or(536).min(self.cfg.mss);
        let (iss, mss) = cookies.syn_ack_iss(&tuple, SeqNumber(repr.seq), peer_mss, now);
        if let Some(l) = m.listener_mut(port) {
            l.cookies_sent += 1;
        }
        let now_ms = (now.as_nanos() / 1_000_000) as u32;
        let r = self.cookie_syn_ack(&repr, iss, mss, now_ms);
        let v = turn_around(msg, &r, lip, rip);
        if let Some(ttl) = self.ttl {
            msg.anno_mut().set_ttl(ttl);
        }
        v
    }

    fn establish(&mut self, _aux: &mut Attrs, cx: &mut EstablishCx<'_>) -> Result<(), PathError> {
        let (port, path) = (self.port, cx.path());
        if let Some(l) = cx.module::<TcpModule>().and_then(|m| m.listener_mut(port)) {
            l.path = Some(path);
        }
        Ok(())
    }

    fn destroy(&mut self, cx: &mut Cx<'_, '_>) {
        let port = self.port;
        if let Some(m) = cx.module::<TcpModule>() {
            // Connections still waiting to be accepted are orphans now;
            // their stages abort when they next run (`account`).
            m.release_listener(port);
        }
    }

    fn demux_key(&self, mode: KeyMode) -> DemuxKey {
        DemuxKey::Key(wire::path_demux_key(mode, self.port, None))
    }
}
