//! The transport below CHAN as both CHAN test rigs model it (`tests`,
//! `at_most_once_tests`): the two hosts' addresses, BLAST's receipts
//! (spec §2, §3.4), and the packets a CHAN engine's pushes put on the
//! wire.

use super::*;
use crate::wire::chan::ChanHeader;
use std::net::Ipv4Addr;

/// The client host, as the server sees it.
pub(super) fn cpeer() -> Peer {
    Ipv4Addr::new(10, 0, 0, 1).into()
}

/// The server host, as the client sees it.
pub(super) fn speer() -> Peer {
    Ipv4Addr::new(10, 0, 0, 2).into()
}

/// A CHAN message this long or longer goes through BLAST fragmentation
/// (F = 1460 over IP, spec §3.3, less the 12-byte BID header), so its
/// receipt says "expensive".
pub(super) const EXPENSIVE_AT: usize = 1460 - 12;

/// BLAST's receipts: a ticket (a new BLAST seq) for each expensive
/// message, the default receipt for a short one.
pub(super) struct Receipts {
    /// The ticket given last.
    pub(super) last_ticket: u32,
}

impl Receipts {
    /// Tickets from `last_ticket + 1` on.
    pub(super) fn after(last_ticket: u32) -> Self {
        Receipts { last_ticket }
    }

    /// What BLAST reports for a CHAN message of `len` bytes.
    pub(super) fn receipt(&mut self, len: usize) -> TransportReceipt {
        if len >= EXPENSIVE_AT {
            self.last_ticket += 1;
            TransportReceipt {
                reliable: false,
                expensive: true,
                ticket: Some(self.last_ticket),
            }
        } else {
            TransportReceipt::default()
        }
    }
}

/// A CHAN engine (client or server table) as its stage sees it when it
/// pushes a message: the saved copy to send, the receipt to report.
pub(super) trait ChanEnd {
    fn saved_copy(&self, key: ChannelKey) -> Option<&[u8]>;
    fn record_receipt(&mut self, key: ChannelKey, receipt: TransportReceipt);
}

impl ChanEnd for ClientTable {
    fn saved_copy(&self, key: ChannelKey) -> Option<&[u8]> {
        ClientTable::saved_copy(self, key)
    }
    fn record_receipt(&mut self, key: ChannelKey, receipt: TransportReceipt) {
        ClientTable::record_receipt(self, key, receipt)
    }
}

impl ChanEnd for ServerTable {
    fn saved_copy(&self, key: ChannelKey) -> Option<&[u8]> {
        ServerTable::saved_copy(self, key)
    }
    fn record_receipt(&mut self, key: ChannelKey, receipt: TransportReceipt) {
        ServerTable::record_receipt(self, key, receipt)
    }
}

/// The packet of a message `end` pushes on `key`: `header` and `data`,
/// a new transport message whose receipt goes back to `end`.
pub(super) fn message(
    end: &mut impl ChanEnd,
    receipts: &mut Receipts,
    key: ChannelKey,
    header: &ChanHeader,
    data: &[u8],
) -> Vec<u8> {
    let packet = [&header.to_bytes()[..], data].concat();
    end.record_receipt(key, receipts.receipt(packet.len()));
    packet
}

/// The packet of [`ChanAction::Send`] `a`: the header alone, or with
/// the channel's saved copy as a new message (see [`Payload`]).
pub(super) fn sent_packet(
    end: &mut impl ChanEnd,
    receipts: &mut Receipts,
    a: ChanAction,
) -> Vec<u8> {
    let ChanAction::Send {
        key,
        header,
        payload,
    } = a
    else {
        panic!("not a send: {a:?}");
    };
    match payload {
        Payload::None => header.to_bytes().to_vec(),
        Payload::SavedCopy => {
            let saved = end.saved_copy(key).unwrap().to_vec();
            message(end, receipts, key, &header, &saved)
        }
    }
}
