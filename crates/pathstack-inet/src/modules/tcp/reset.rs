//! The stage of TCP's own path: segments no connection or listener took
//! are answered with a reset (RFC 9293 §3.10.7.1, "If the state is
//! CLOSED").

use super::TcpModule;
use crate::anno::InetAnno;
use crate::modules::ip::LOCAL_IPV4;
use crate::tcp::conn_drop_reason::ConnDropReason;
use crate::wire::tcp::{TcpPacket, TcpRepr};
use pathstack_core::stage::{Cx, Stage, Verdict};
use pathstack_core::{Dir, Msg};
use std::net::Ipv4Addr;

/// The stage of TCP's own (catch-all) path; the resets it sends are
/// counted in the module ([`TcpCounters::resets_sent`](super::TcpCounters)).
pub struct TcpResetStage;

impl Stage for TcpResetStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        if dir == Dir::Down {
            return Verdict::Next;
        }
        // An ICMP error about a segment no connection owns (an RST we
        // sent): nothing to act on, and never a segment to answer.
        if msg.anno().icmp_error() {
            return Verdict::Consumed;
        }
        let Some((dst, src)) = segment_ends(msg, cx) else {
            return Verdict::Drop(ConnDropReason::Closed.into());
        };
        let (repr, len) = match TcpPacket::new_received(
            msg.as_slice(),
            src,
            dst,
            msg.anno().offload().rx_csum_verified,
        )
        .and_then(|p| TcpRepr::parse(&p).map(|r| (r, p.payload_len())))
        {
            Ok(x) => x,
            Err(e) => return Verdict::Drop(e.into()),
        };
        let Some(rst) = crate::tcp::reset_for(&repr, len) else {
            return Verdict::Drop(ConnDropReason::Closed.into());
        };
        let v = turn_around(msg, &rst, dst, src);
        if matches!(v, Verdict::Back) {
            if let Some(m) = cx.module::<TcpModule>() {
                m.counters.resets_sent += 1;
            }
        }
        v
    }
}

/// The ends of a received segment, `(local, peer)`: the peer's address
/// from the annotation, ours from it or else the IP module's
/// [`LOCAL_IPV4`]; `None` when either is unknown (nothing to answer to).
pub(super) fn segment_ends(msg: &Msg, cx: &Cx<'_, '_>) -> Option<(Ipv4Addr, Ipv4Addr)> {
    let a = msg.anno();
    let local = a.local_ip().or(cx.attrs().get(&LOCAL_IPV4).copied())?;
    Some((local, a.peer_ip()?))
}

/// Turns `msg` around into the answer `r` from `local` back to `peer`
/// (a SYN-ACK, a challenge ACK or a reset): built in place over the
/// received segment, so an answer needs no buffer of its own.
pub(super) fn turn_around(msg: &mut Msg, r: &TcpRepr, local: Ipv4Addr, peer: Ipv4Addr) -> Verdict {
    msg.truncate(0);
    if r.push_onto(msg, local, peer).is_err() {
        return Verdict::Drop(ConnDropReason::Closed.into());
    }
    msg.anno_mut().set_peer_ip(peer);
    Verdict::Back
}
