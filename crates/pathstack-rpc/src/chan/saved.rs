//! The message a CHAN channel keeps until its peer acknowledges it: the
//! half the two sides share. A client channel in WAIT keeps its request
//! (spec §6.4), a server channel in WAIT its reply (§6.5); each keeps
//! with it what the transport said when it was pushed (reliable?
//! fragmented, under which ticket?) and the retransmission timer that
//! resends it (§6.6). Both sides keep, resend and release it by the same
//! rules; only the flags they resend with differ (`FROM_CLIENT` or not).

use super::retransmit::{resend, Backoff};
use super::{ChanAction, ChannelKey, TransportQuery, TransportReceipt};
use pathstack_core::time::{Duration, Instant};

/// Bytes of a message kept in place rather than in the vector: an upper
/// header alone, such as MSELECT's 8 on a zero-byte call or reply.
const SHORT: usize = 8;

/// A channel's unacknowledged message, its transport receipt and its
/// retransmission timer.
#[derive(Debug)]
pub(crate) struct SavedMessage {
    /// The message, kept for retransmission; cleared (capacity kept)
    /// when it is acknowledged, so a channel in steady state does not
    /// allocate.
    copy: Vec<u8>,
    /// The message when it is exactly an upper header of [`SHORT`] bytes
    /// and no payload (the zero-byte call's common case): kept in place,
    /// one fixed-size copy instead of the vector's (`short` says which
    /// holds it).
    head: [u8; SHORT],
    short: bool,
    receipt: TransportReceipt,
    pub(super) timer: Backoff,
}

impl SavedMessage {
    /// Nothing kept, the timer idle.
    pub(super) const fn new() -> Self {
        SavedMessage {
            copy: Vec::new(),
            head: [0; SHORT],
            short: false,
            receipt: TransportReceipt {
                reliable: false,
                expensive: false,
                ticket: None,
            },
            timer: Backoff::idle(),
        }
    }

    /// Keeps the message just pushed (its two parts, one after the
    /// other) and arms the timer with `initial`; the transport's receipt
    /// comes with [`SavedMessage::record`].
    #[inline(always)]
    pub(super) fn keep(&mut self, now: Instant, initial: Duration, parts: [&[u8]; 2]) {
        match (<&[u8; SHORT]>::try_from(parts[0]), parts[1].is_empty()) {
            (Ok(head), true) => {
                self.head = *head;
                self.short = true;
            }
            _ => {
                self.short = false;
                self.copy.clear();
                // The upper header, then the payload only if there is one.
                self.copy.extend_from_slice(parts[0]);
                if !parts[1].is_empty() {
                    self.copy.extend_from_slice(parts[1]);
                }
            }
        }
        self.receipt = TransportReceipt::default();
        self.timer.start(now, initial);
    }

    /// The peer has the message (acknowledged, answered, or given up
    /// on): the timer cancelled, the copy dropped, the transport told it
    /// may free a fragmented message.
    #[inline(always)]
    pub(super) fn release(&mut self, out: &mut Vec<ChanAction>) {
        self.timer.cancel();
        self.copy.clear();
        self.short = false;
        if let Some(ticket) = self.receipt.ticket {
            out.push(ChanAction::FreeResources { ticket });
        }
        self.receipt = TransportReceipt::default();
    }

    /// Records what the transport said about the message (or a whole
    /// resend of it); a reliable transport makes the timer needless
    /// (spec §6.6 rule 1).
    pub(super) fn record(&mut self, receipt: TransportReceipt) {
        self.receipt = receipt;
        if receipt.reliable {
            self.timer.cancel();
        }
    }

    /// The kept message, for a [`Payload::SavedCopy`](super::Payload)
    /// resend.
    pub(super) fn copy(&self) -> &[u8] {
        if self.short {
            &self.head
        } else {
            &self.copy
        }
    }

    /// Whether the transport fragmented the message (it then holds it
    /// under a ticket until told to free it).
    #[inline(always)]
    pub(super) fn fragmented(&self) -> bool {
        self.receipt.ticket.is_some()
    }

    /// Gives the copy's memory back (a channel disabled for good).
    pub(super) fn forget(&mut self) {
        self.copy = Vec::new();
        self.short = false;
    }

    /// The packet that resends the message on `key` at `seq` with base
    /// flags `f` (spec §6.6); `force` for an answer to `NEGATIVE_ACK`.
    pub(super) fn resend(
        &self,
        key: ChannelKey,
        seq: u32,
        f: u8,
        force: bool,
        opt_packet: Option<usize>,
        query: Option<&mut dyn TransportQuery>,
    ) -> ChanAction {
        let (header, payload) = resend(
            key,
            seq,
            f,
            self.copy().len(),
            self.receipt,
            force,
            opt_packet,
            query,
        );
        ChanAction::Send {
            key,
            header,
            payload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(parts: [&[u8]; 2]) -> SavedMessage {
        let mut s = SavedMessage::new();
        s.keep(Instant::ZERO, Duration::from_secs(1), parts);
        s
    }

    #[test]
    fn a_header_alone_is_kept_in_place_and_read_back_whole() {
        let s = kept([b"12345678", b""]);
        assert!(s.short);
        assert_eq!(s.copy(), b"12345678");
    }

    #[test]
    fn anything_else_is_kept_in_the_vector_header_first() {
        for (parts, whole) in [
            ([&b"12345678"[..], &b"data"[..]], &b"12345678data"[..]),
            ([&b"1234"[..], &b""[..]], &b"1234"[..]),
            ([&b""[..], &b"12345678"[..]], &b"12345678"[..]),
            ([&b"123456789"[..], &b""[..]], &b"123456789"[..]),
        ] {
            let s = kept(parts);
            assert!(!s.short, "{parts:?}");
            assert_eq!(s.copy(), whole);
        }
    }

    #[test]
    fn a_long_message_after_a_short_one_and_back_reads_the_latest() {
        let mut s = kept([b"12345678", b""]);
        s.keep(Instant::ZERO, Duration::from_secs(1), [b"abcdefgh", b"xyz"]);
        assert_eq!(s.copy(), b"abcdefghxyz");
        s.keep(Instant::ZERO, Duration::from_secs(1), [b"ABCDEFGH", b""]);
        assert_eq!(s.copy(), b"ABCDEFGH");
    }

    #[test]
    fn a_released_or_forgotten_message_is_gone() {
        let mut s = kept([b"12345678", b""]);
        s.release(&mut Vec::new());
        assert_eq!(s.copy(), b"");
        let mut s = kept([b"12345678", b""]);
        s.forget();
        assert_eq!(s.copy(), b"");
    }

    #[test]
    fn a_short_message_is_resent_with_its_length() {
        let s = kept([b"12345678", b""]);
        let key = ChannelKey {
            peer: crate::Peer::mac(pathstack_inet::MacAddr([2, 0, 0, 0, 0, 1])),
            prot_id: 20,
            chan: 1,
        };
        let ChanAction::Send { header, .. } = s.resend(key, 3, 0, false, None, None) else {
            panic!("a resend is a send");
        };
        assert_eq!(header.len, 8);
    }
}
