//! The BID filter (spec §4.3): what the BID stage does with one message,
//! given the local BootId and the peer's BootId as BIDCTL knows it.
//!
//! X32 keeps the peer's BootId in every BID session and updates it on
//! BIDCTL's `FIRST_CONTACT`/`PEER_REBOOTED`; BIDCTL's own per-peer value
//! changes at the same moments, so the stage may equally read it from
//! [`Bidctl::peer_view`](crate::boot::Bidctl::peer_view) per message. An
//! unknown peer BootId ([`BootId::UNKNOWN`]) is X32's *inactive* session:
//! it neither sends nor receives.

use crate::boot::BootId;
use crate::wire::bid::{BidDropReason, BidHeader};

/// What to do with a received BID message (spec §4.3 "Receive").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BidRxVerdict {
    /// Both BootIds match: pop the header and deliver the payload.
    Deliver,
    /// The message was meant for an earlier incarnation of this host: drop
    /// it ([`BidDropReason::StaleDstBid`]) and send the peer this header
    /// alone (an *empty* BID message), whose `srcBid` makes the peer's BID
    /// consult its BIDCTL.
    DropAndAnswerEmpty(BidHeader),
    /// The sender's BootId is not the one we know: drop it
    /// ([`BidDropReason::UnknownSrcBid`]) and pass the new BootId to
    /// [`Bidctl::peer_bid`](crate::boot::Bidctl::peer_bid) as the hint,
    /// which starts a query if BIDCTL is idle with that peer.
    DropAndHint(BootId),
    /// The peer's BootId is not known yet: drop it
    /// ([`BidDropReason::Inactive`]).
    DropInactive,
}

impl BidRxVerdict {
    /// The reason to count when this verdict drops the message.
    pub fn drop_reason(&self) -> Option<BidDropReason> {
        match self {
            BidRxVerdict::Deliver => None,
            BidRxVerdict::DropAndAnswerEmpty(_) => Some(BidDropReason::StaleDstBid),
            BidRxVerdict::DropAndHint(_) => Some(BidDropReason::UnknownSrcBid),
            BidRxVerdict::DropInactive => Some(BidDropReason::Inactive),
        }
    }
}

/// The BID filter of one host: its BootId and the upper protocol number
/// it stamps (spec §4.3). Pure: it holds no per-peer state, the caller
/// passes the peer's BootId in.
///
/// ```
/// use pathstack_rpc::boot::{BidFilter, BidRxVerdict, BootId};
/// use pathstack_rpc::wire::bid::HLP_CHAN;
///
/// let me = BidFilter::new(BootId(0x2F5E_1000), HLP_CHAN);
/// let peer = BootId(0x2F5E_2000);
/// let out = me.send_header(peer).unwrap();
/// assert_eq!(out.to_bytes(), [0x2f, 0x5e, 0x10, 0x00, 0x2f, 0x5e, 0x20, 0x00, 0, 0, 0, 0x0d]);
///
/// let them = BidFilter::new(peer, HLP_CHAN);
/// assert_eq!(them.receive(BootId(0x2F5E_1000), &out), BidRxVerdict::Deliver);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BidFilter {
    local_bid: BootId,
    hlp_num: u32,
}

impl BidFilter {
    /// The filter of a host with BootId `local_bid`, for upper protocol
    /// number `hlp_num` (CHAN: [`crate::wire::bid::HLP_CHAN`]).
    pub const fn new(local_bid: BootId, hlp_num: u32) -> Self {
        BidFilter { local_bid, hlp_num }
    }

    /// The local BootId.
    pub const fn local_bid(&self) -> BootId {
        self.local_bid
    }

    /// The header to push on a message to a peer whose BootId is `peer_bid`
    /// (spec §4.3 "Send": `{myBid, peerBid, hlpNum}`), or
    /// [`BidDropReason::InactiveSend`] while the peer's BootId is unknown
    /// (X32's inactive session has no push; CHAN's timer, or its immediate
    /// retry on `FIRST_CONTACT`, sends the message again).
    pub fn send_header(&self, peer_bid: BootId) -> Result<BidHeader, BidDropReason> {
        if !peer_bid.is_known() {
            return Err(BidDropReason::InactiveSend);
        }
        Ok(BidHeader {
            src_bid: self.local_bid,
            dst_bid: peer_bid,
            hlp_num: self.hlp_num,
        })
    }

    /// The verdict on a received header `h` from a peer whose BootId is
    /// `peer_bid` (spec §4.3 "Receive", in X32's order: our own BootId is
    /// checked first, then the peer's).
    pub fn receive(&self, peer_bid: BootId, h: &BidHeader) -> BidRxVerdict {
        if !peer_bid.is_known() {
            return BidRxVerdict::DropInactive;
        }
        if h.dst_bid != self.local_bid {
            // X32 `bidPop`: an empty message through the session, i.e.
            // with the session's header for that upper protocol.
            return BidRxVerdict::DropAndAnswerEmpty(BidHeader {
                src_bid: self.local_bid,
                dst_bid: peer_bid,
                hlp_num: h.hlp_num,
            });
        }
        if h.src_bid != peer_bid {
            return BidRxVerdict::DropAndHint(h.src_bid);
        }
        BidRxVerdict::Deliver
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::bid::HLP_CHAN;

    const A: BootId = BootId(0x2F5E_1000);
    const B: BootId = BootId(0x2F5E_2000);

    #[test]
    fn matching_bootids_deliver() {
        let b = BidFilter::new(B, HLP_CHAN);
        let h = BidFilter::new(A, HLP_CHAN).send_header(B).unwrap();
        assert_eq!(b.receive(A, &h), BidRxVerdict::Deliver);
        assert_eq!(b.receive(A, &h).drop_reason(), None);
    }

    #[test]
    fn unknown_peer_bootid_is_inactive_both_ways() {
        let f = BidFilter::new(A, HLP_CHAN);
        assert_eq!(
            f.send_header(BootId::UNKNOWN),
            Err(BidDropReason::InactiveSend)
        );
        let h = BidHeader {
            src_bid: B,
            dst_bid: A,
            hlp_num: HLP_CHAN,
        };
        let v = f.receive(BootId::UNKNOWN, &h);
        assert_eq!(v, BidRxVerdict::DropInactive);
        assert_eq!(v.drop_reason(), Some(BidDropReason::Inactive));
    }

    /// D6: dstBid ≠ local BootId → drop and answer with an empty message
    /// carrying our BootId.
    #[test]
    fn d6_stale_dst_bid_answers_empty_message() {
        let rebooted = BidFilter::new(BootId(0x2F5E_3000), HLP_CHAN);
        let h = BidHeader {
            src_bid: A,
            dst_bid: B,
            hlp_num: HLP_CHAN,
        };
        let v = rebooted.receive(A, &h);
        assert_eq!(
            v,
            BidRxVerdict::DropAndAnswerEmpty(BidHeader {
                src_bid: BootId(0x2F5E_3000),
                dst_bid: A,
                hlp_num: HLP_CHAN
            })
        );
        assert_eq!(v.drop_reason(), Some(BidDropReason::StaleDstBid));
    }

    #[test]
    fn foreign_src_bid_drops_with_hint() {
        let f = BidFilter::new(A, HLP_CHAN);
        let h = BidHeader {
            src_bid: BootId(0x2F5E_4000),
            dst_bid: A,
            hlp_num: HLP_CHAN,
        };
        let v = f.receive(B, &h);
        assert_eq!(v, BidRxVerdict::DropAndHint(BootId(0x2F5E_4000)));
        assert_eq!(v.drop_reason(), Some(BidDropReason::UnknownSrcBid));
    }

    #[test]
    fn dst_check_comes_before_src_check() {
        let f = BidFilter::new(A, HLP_CHAN);
        let h = BidHeader {
            src_bid: BootId(9),
            dst_bid: BootId(8),
            hlp_num: 77,
        };
        assert!(matches!(
            f.receive(B, &h),
            BidRxVerdict::DropAndAnswerEmpty(BidHeader { hlp_num: 77, .. })
        ));
    }
}
