//! The RPC family's per-message annotations: which call or channel a
//! message belongs to, how it ended, and its peer.
//!
//! The RPC stack shares the core's annotation area with the Internet
//! family (see `pathstack_inet::anno`). It uses:
//!
//! | word | slot | set by | read by |
//! |---|---|---|---|
//! | 3 | [`RpcTag`]: call slot or channel, status, notice | RPC, VCHAN, CHAN, BIDCTL | the stage below or above |
//! | 2 | procedure id of a call (down) or request (up) | RPC (down), MSELECT (up) | MSELECT (down, then cleared), RPC (up) |
//! | 0 / 4–5 | the peer: IPv4 address over IP, MAC address over Ethernet | IP / ETH (up), RPC (down) | every RPC stage |
//!
//! Both words are shared with the Internet family (each key reads back
//! only its own value; see `pathstack_core::anno`). Word 3 is its peer
//! *port*, which no path through the RPC stack carries. Word 2 holds IP's
//! outgoing time to live and next hop: no RPC path sets a time to live,
//! and the procedure id lives only above IP — on the way down MSELECT
//! clears it as soon as it has read it, above BLAST and IP, before IP
//! writes the next hop; on the way up IP writes no next hop, and the one
//! a message may bring along (the in-memory wire hands the sender's
//! message over whole) is read by no stage above IP.

use crate::{Peer, PeerAddr};
use pathstack_core::anno::AnnoKey;
use pathstack_core::Anno;
use pathstack_inet::{InetAnno, MacAddr};

const TAG: AnnoKey<u32> = AnnoKey::sharing(3, 2);
const PROCEDURE: AnnoKey<u32> = AnnoKey::sharing(2, 3);

/// How a call ended, as the stages tell the layers above (carried in
/// [`RpcTag::status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CallStatus {
    /// A reply (or a request, on the server) travels with the message.
    Ok = 0,
    /// MSELECT answered `SEL_FAIL`: no procedure with the id.
    NoSuchProcedure = 1,
    /// The peer rebooted while the call was in progress (BIDCTL's
    /// `PEER_REBOOTED`): the procedure ran zero times or once.
    PeerRebooted = 2,
    /// The call's deadline passed without a reply.
    TimedOut = 3,
    /// The request is longer than the path carries (16 BLAST fragments).
    TooLarge = 4,
    /// Every channel to the peer is busy and the waiting line is full.
    Busy = 5,
    /// The channel the call would use was disabled by an earlier reboot
    /// of the peer, or the stack ran out of buffers for the call.
    Failed = 6,
}

impl CallStatus {
    fn from_u8(v: u8) -> CallStatus {
        match v {
            0 => CallStatus::Ok,
            1 => CallStatus::NoSuchProcedure,
            2 => CallStatus::PeerRebooted,
            3 => CallStatus::TimedOut,
            4 => CallStatus::TooLarge,
            5 => CallStatus::Busy,
            _ => CallStatus::Failed,
        }
    }
}

/// A notice from BIDCTL to a registered CHAN stage, delivered as an empty
/// message (x-kernel's control call on each registrant, §5.5 of the
/// specification).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BootNotice {
    /// Not a notice: a protocol message.
    None = 0,
    /// `FIRST_CONTACT`: the peer's boot id is now known.
    FirstContact = 1,
    /// `PEER_REBOOTED`: the peer restarted with a new boot id.
    PeerRebooted = 2,
}

/// Word 3 of the annotations: which call (between RPC and VCHAN) or which
/// channel (between VCHAN and CHAN) a message belongs to, the status of a
/// finished call, and BIDCTL's notices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpcTag {
    /// The call slot (above VCHAN) or the channel number (below it).
    pub slot: u16,
    /// How the call ended.
    pub status: CallStatus,
    /// A BIDCTL notice, or [`BootNotice::None`].
    pub notice: BootNotice,
}

impl RpcTag {
    /// A tag for `slot` with status `Ok` and no notice.
    pub const fn slot(slot: u16) -> RpcTag {
        RpcTag {
            slot,
            status: CallStatus::Ok,
            notice: BootNotice::None,
        }
    }

    fn pack(self) -> u32 {
        u32::from(self.slot) | (self.status as u32) << 16 | (self.notice as u32) << 24
    }

    fn unpack(w: u32) -> RpcTag {
        RpcTag {
            slot: w as u16,
            status: CallStatus::from_u8((w >> 16) as u8),
            notice: match (w >> 24) as u8 {
                1 => BootNotice::FirstContact,
                2 => BootNotice::PeerRebooted,
                _ => BootNotice::None,
            },
        }
    }
}

/// Typed access to the RPC annotations of a message.
pub trait RpcAnno {
    /// The message's [`RpcTag`], if a stage set one.
    fn rpc_tag(&self) -> Option<RpcTag>;
    /// Sets [`rpc_tag`](Self::rpc_tag).
    fn set_rpc_tag(&mut self, tag: RpcTag);
    /// The procedure id of a call or request.
    fn procedure(&self) -> Option<u32>;
    /// Sets [`procedure`](Self::procedure).
    fn set_procedure(&mut self, id: u32);
    /// Clears [`procedure`](Self::procedure) (MSELECT, before IP could
    /// read the word as a time to live).
    fn clear_procedure(&mut self);
    /// The peer of the message: its IPv4 source/destination when IP set
    /// one, else its Ethernet source/destination.
    fn rpc_peer(&self) -> Option<Peer>;
    /// Sets the peer a message goes to.
    fn set_rpc_peer(&mut self, peer: Peer);
    /// The [`RpcTag`]'s slot and whether its status is
    /// [`CallStatus::Ok`], as `rpc_tag()` would tell, without decoding
    /// the rest (the fast forms' send reads no more of it).
    fn rpc_slot_ok(&self) -> Option<(u16, bool)>;
    /// Whether the message's [`RpcTag`] carries a BIDCTL notice (as
    /// `rpc_tag()` would tell, without decoding the rest of the tag: the
    /// fast forms ask it of every frame).
    fn has_notice(&self) -> bool;
}

impl RpcAnno for Anno {
    #[inline]
    fn rpc_tag(&self) -> Option<RpcTag> {
        self.get(TAG).map(RpcTag::unpack)
    }
    #[inline]
    fn set_rpc_tag(&mut self, tag: RpcTag) {
        self.set(TAG, tag.pack());
    }
    #[inline]
    fn procedure(&self) -> Option<u32> {
        self.get(PROCEDURE)
    }
    #[inline]
    fn set_procedure(&mut self, id: u32) {
        self.set(PROCEDURE, id);
    }
    #[inline]
    fn clear_procedure(&mut self) {
        self.clear(PROCEDURE);
    }
    #[inline]
    fn rpc_peer(&self) -> Option<Peer> {
        match self.peer_ip() {
            Some(ip) => Some(Peer::ipv4(ip)),
            None => self.link_dst().map(|m| Peer::mac(MacAddr(m))),
        }
    }
    #[inline]
    fn rpc_slot_ok(&self) -> Option<(u16, bool)> {
        // `CallStatus::from_u8`: only 0 is `Ok`.
        self.get(TAG).map(|w| (w as u16, (w >> 16) as u8 == 0))
    }
    #[inline]
    fn has_notice(&self) -> bool {
        // `RpcTag::unpack`'s notices: 1 and 2; anything else is none.
        self.get(TAG).is_some_and(|w| matches!(w >> 24, 1 | 2))
    }
    #[inline]
    fn set_rpc_peer(&mut self, peer: Peer) {
        match peer.addr() {
            PeerAddr::Ipv4(ip) => self.set_peer_ip(ip),
            PeerAddr::Mac(m) => self.set_link_dst(m.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_round_trips_every_status_and_notice() {
        for status in [
            CallStatus::Ok,
            CallStatus::NoSuchProcedure,
            CallStatus::PeerRebooted,
            CallStatus::TimedOut,
            CallStatus::TooLarge,
            CallStatus::Busy,
            CallStatus::Failed,
        ] {
            for notice in [
                BootNotice::None,
                BootNotice::FirstContact,
                BootNotice::PeerRebooted,
            ] {
                let t = RpcTag {
                    slot: 0xBEEF,
                    status,
                    notice,
                };
                let mut a = Anno::default();
                a.set_rpc_tag(t);
                assert_eq!(a.rpc_tag(), Some(t));
            }
        }
    }

    #[test]
    fn partial_tag_reads_tell_what_the_tag_tells() {
        let mut a = Anno::default();
        assert!(!a.has_notice());
        for notice in [
            BootNotice::None,
            BootNotice::FirstContact,
            BootNotice::PeerRebooted,
        ] {
            a.set_rpc_tag(RpcTag {
                slot: 7,
                status: CallStatus::TimedOut,
                notice,
            });
            assert_eq!(a.has_notice(), notice != BootNotice::None);
        }
        assert_eq!(a.rpc_slot_ok(), Some((7, false)));
        a.set_rpc_tag(RpcTag::slot(9));
        assert_eq!(a.rpc_slot_ok(), Some((9, true)));
        // A word whose notice byte names no notice unpacks to none.
        a.set(TAG, 3 << 24 | 5);
        assert_eq!(a.rpc_tag().map(|t| t.notice), Some(BootNotice::None));
        assert!(!a.has_notice());
    }

    #[test]
    fn peer_prefers_ip_over_link_address() {
        let mut a = Anno::default();
        assert_eq!(a.rpc_peer(), None);
        let mac = MacAddr([2, 0, 0, 0, 0, 9]);
        a.set_rpc_peer(Peer::mac(mac));
        assert_eq!(a.rpc_peer(), Some(Peer::mac(mac)));
        a.set_rpc_peer(Peer::ipv4("10.0.0.9".parse().unwrap()));
        assert_eq!(a.rpc_peer(), Some(Peer::ipv4("10.0.0.9".parse().unwrap())));
    }

    #[test]
    fn procedure_is_cleared() {
        let mut a = Anno::default();
        a.set_procedure(1002);
        assert_eq!(a.procedure(), Some(1002));
        a.clear_procedure();
        assert_eq!(a.procedure(), None);
    }
}
