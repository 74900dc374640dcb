//! What the `host_rx` harness knows of the established connection, read
//! from the frames on the wire: the fuzzer speaks of sequence numbers and
//! timestamps relative to it, since the TCP module's ISN secret is random
//! per host.

use crate::frames::{A_IP, B_IP};
use pathstack_inet::wire::tcp::{TcpPacket, TcpRepr};
use std::net::Ipv4Addr;

/// The listener's port on A.
pub(crate) const LISTEN_PORT: u16 = 80;

/// What the harness knows of the established connection, from the frames
/// on the wire: the next sequence numbers and last timestamps each way.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ConnTrack {
    pub(crate) b_port: u16,
    /// Next sequence number of B (the fuzzer's side).
    pub(crate) b_nxt: u32,
    /// Next sequence number of A (the fuzzed host).
    pub(crate) a_nxt: u32,
    pub(crate) b_tsval: u32,
    pub(crate) a_tsval: u32,
}

/// What the harness reads of a TCP segment in an Ethernet frame.
pub(crate) struct Seen {
    pub(crate) src: Ipv4Addr,
    pub(crate) sport: u16,
    pub(crate) dport: u16,
    pub(crate) seq: u32,
    /// SEG.LEN: data, SYN and FIN.
    pub(crate) len: u32,
    pub(crate) tsval: Option<u32>,
}

/// The TCP segment in an Ethernet frame, if it holds a valid one.
pub(crate) fn parse_tcp_frame(f: &[u8]) -> Option<Seen> {
    if f.len() < 14 + 20 + 20 || f[12..14] != [0x08, 0x00] {
        return None;
    }
    let ip = &f[14..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip[9] != 6 || ihl < 20 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]])).min(ip.len());
    let seg = ip.get(ihl..total)?;
    let src = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let p = TcpPacket::new_checked(seg, src, dst).ok()?;
    let r = TcpRepr::parse(&p).ok()?;
    Some(Seen {
        src,
        sport: r.src_port,
        dport: r.dst_port,
        seq: r.seq,
        len: p.segment_len() as u32,
        tsval: r.options.timestamps.map(|t| t.0),
    })
}

impl ConnTrack {
    /// Moves the next sequence numbers and timestamps on by what `f`
    /// carried of the connection.
    pub(crate) fn see(&mut self, f: &[u8]) {
        let Some(Seen {
            src,
            sport: sp,
            dport: dp,
            seq,
            len,
            tsval: ts,
        }) = parse_tcp_frame(f)
        else {
            return;
        };
        if src == A_IP && sp == LISTEN_PORT && dp == self.b_port {
            let end = seq.wrapping_add(len);
            if (end.wrapping_sub(self.a_nxt) as i32) > 0 {
                self.a_nxt = end;
            }
            if let Some(v) = ts {
                self.a_tsval = v;
            }
        } else if src == B_IP && dp == LISTEN_PORT && sp == self.b_port {
            let end = seq.wrapping_add(len);
            if (end.wrapping_sub(self.b_nxt) as i32) > 0 {
                self.b_nxt = end;
            }
            if let Some(v) = ts {
                self.b_tsval = v;
            }
        }
    }
}
