//! The client side of CHAN: channels that make calls, and the per-peer
//! table that numbers them (spec §6.4; X32 `chan_client.c`, OSF
//! `chan_client.c`).

use super::retransmit::control;
use super::saved::SavedMessage;
use super::{
    CallError, ChanAction, ChannelKey, ClientConfig, Payload, TableError, TransportQuery,
    TransportReceipt,
};
use crate::handle_table::{Handle, HandleTable};
use crate::hash_map::FastMap;
use crate::wire::chan::{flags, ChanDropReason, ChanHeader};
use crate::Peer;
use pathstack_core::time::Instant;
use std::collections::BTreeMap;

/// X32 `START_SEQ`: a fresh channel's seq; incremented before each call,
/// so the first request carries 2 (spec §6.3).
const START_SEQ: u32 = 1;
/// X32 `FIRST_CHAN`.
const FIRST_CHAN: u16 = 1;

/// The state of an open client channel (spec §6.4). Dormant channels are
/// not open: they exist only as a remembered seq in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientState {
    /// No call outstanding.
    Free,
    /// A call outstanding, waiting for the reply.
    Wait,
    /// Disabled by a peer reboot: calls fail, packets are dropped.
    Disabled,
}

#[derive(Debug)]
pub(crate) struct ClientChannel {
    seq: u32,
    state: ClientState,
    /// The request of the outstanding call, kept for retransmission
    /// until the call ends.
    saved: SavedMessage,
    deadline: Option<Instant>,
}

/// Channel numbers of one (peer, protocol number).
#[derive(Debug, Default)]
struct Numbering {
    /// Next never-used number (X32's per-(peer, prot_id) counter).
    next: u32,
    /// Closed channels and their seq: reused first, seq continuing (C12).
    dormant: BTreeMap<u16, u32>,
    /// Numbers with no seq history at the peer's current incarnation
    /// (channels disabled by a reboot, then closed): safe to start at
    /// seq 1 again.
    free: Vec<u16>,
    /// Open channels (any state).
    open: usize,
}

/// A client channel held by a path: valid while the channel is open (a
/// close, or a reopen of its number, makes it stale).
pub(crate) type ClientHandle = Handle<ClientChannel>;

/// The client channels of one host, keyed by [`ChannelKey`].
///
/// ```
/// use pathstack_core::time::Instant;
/// use pathstack_rpc::chan::{ClientConfig, ClientTable};
/// use pathstack_rpc::Peer;
/// use std::net::Ipv4Addr;
///
/// let mut client = ClientTable::new(ClientConfig::default());
/// let key = client.open(Peer::from(Ipv4Addr::new(10, 0, 0, 2)), 20).unwrap();
/// let header = client.call(Instant::ZERO, key, b"8 bytes!", None).unwrap();
/// assert_eq!(header.to_bytes(), [0, 1, 0, 3, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0, 0, 8]);
/// ```
#[derive(Debug)]
pub struct ClientTable {
    config: ClientConfig,
    /// Open channels, each reachable by a [`ClientHandle`] that the
    /// client path's CHAN stage holds (`crate::handle_table`).
    channels: HandleTable<ChannelKey, ClientChannel>,
    numbering: FastMap<(Peer, u32), Numbering>,
    /// How many peer reboots were reported ([`ClientTable::reboots`]).
    reboots: u64,
}

impl ClientTable {
    /// An empty table.
    pub fn new(config: ClientConfig) -> Self {
        ClientTable {
            config,
            channels: HandleTable::default(),
            numbering: FastMap::default(),
            reboots: 0,
        }
    }

    /// The table's settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Opens a channel to `peer` for upper protocol `prot_id`: a dormant
    /// one first (lowest number, its seq continuing, C12), else a number
    /// freed by a reboot, else the next number from 1 (spec §6.4 "Open").
    /// The stage registers with BIDCTL for the peer on its first channel.
    pub fn open(&mut self, peer: Peer, prot_id: u32) -> Result<ChannelKey, TableError> {
        let max_peers = self.config.max_peers;
        let peers = self.numbering.len();
        let max = self.config.max_channels_per_peer;
        let n = match self.numbering.entry((peer, prot_id)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                if peers >= max_peers {
                    return Err(TableError::TooManyPeers { max: max_peers });
                }
                e.insert(Numbering {
                    next: u32::from(FIRST_CHAN),
                    ..Numbering::default()
                })
            }
        };
        let (chan, seq) = if let Some((chan, seq)) = n.dormant.pop_first() {
            (chan, seq)
        } else if let Some(chan) = n.free.pop() {
            (chan, START_SEQ)
        } else if n.open < max && n.next <= u32::from(u16::MAX) {
            let chan = n.next as u16;
            n.next += 1;
            (chan, START_SEQ)
        } else {
            return Err(TableError::TooManyChannels { peer, prot_id, max });
        };
        n.open += 1;
        let key = ChannelKey {
            peer,
            prot_id,
            chan,
        };
        self.channels.insert(
            key,
            ClientChannel {
                seq,
                state: ClientState::Free,
                saved: SavedMessage::new(),
                deadline: None,
            },
        );
        Ok(key)
    }

    /// Closes a channel: a FREE one becomes dormant (its seq remembered
    /// so the number is reused with the seq continuing); a DISABLED one is
    /// forgotten. A channel with a call outstanding cannot be closed.
    pub fn close(&mut self, key: ChannelKey) -> Result<(), TableError> {
        let ch = self.channels.get(&key).ok_or(TableError::NoChannel)?;
        if ch.state == ClientState::Wait {
            return Err(TableError::Busy);
        }
        let ch = self.channels.remove(&key).ok_or(TableError::NoChannel)?;
        if let Some(n) = self.numbering.get_mut(&(key.peer, key.prot_id)) {
            n.open -= 1;
            match ch.state {
                // X32 keeps only seq > 1; keeping every closed number
                // lets it be reused without leaking it (same effect).
                ClientState::Free => {
                    n.dormant.insert(key.chan, ch.seq);
                }
                _ => n.free.push(key.chan),
            }
            if n.open == 0 && n.dormant.is_empty() {
                // No number has a seq history at the peer's current
                // incarnation: forget the peer (the counter may restart).
                self.numbering.remove(&(key.peer, key.prot_id));
            }
        }
        Ok(())
    }

    /// Open channels (free, waiting or disabled; dormant ones are only
    /// numbers).
    pub fn len(&self) -> usize {
        self.channels.len()
    }

    /// Whether no channel is open.
    pub fn is_empty(&self) -> bool {
        self.channels.is_empty()
    }

    /// How many peer reboots [`ClientTable::peer_rebooted`] was told of: a
    /// holder of channels that saw this number change checks whether its
    /// channels were disabled, without a lookup per call while nothing
    /// reboots. (On paths, VCHAN's stage reads the same count from a cell
    /// it holds, `ChanModule::reboot_generation`, without reaching CHAN.)
    pub fn reboots(&self) -> u64 {
        self.reboots
    }

    /// The state of an open channel.
    pub fn state(&self, key: ChannelKey) -> Option<ClientState> {
        self.channels.get(&key).map(|c| c.state)
    }

    /// The seq of an open channel (of its outstanding or last call).
    pub fn seq(&self, key: ChannelKey) -> Option<u32> {
        self.channels.get(&key).map(|c| c.seq)
    }

    /// The seq remembered for a dormant channel.
    pub fn dormant_seq(&self, key: ChannelKey) -> Option<u32> {
        self.numbering
            .get(&(key.peer, key.prot_id))
            .and_then(|n| n.dormant.get(&key.chan).copied())
    }

    /// The saved request of the call outstanding on `key`, for a
    /// [`Payload::SavedCopy`] resend.
    pub fn saved_copy(&self, key: ChannelKey) -> Option<&[u8]> {
        self.channels
            .get(&key)
            .filter(|c| c.state == ClientState::Wait)
            .map(|c| c.saved.copy())
    }

    /// Starts a call on a FREE channel (spec §6.4): seq += 1, the request
    /// copied into the channel's buffer, the retransmission timer armed
    /// (`initial_timeout`), and `deadline` (if any) set: when it passes
    /// the call fails with [`CallError::TimedOut`]. Returns the header
    /// (`FROM_CLIENT|USER_MSG`) to push on the request. Report the
    /// transport's receipt afterwards with [`ClientTable::record_receipt`].
    pub fn call(
        &mut self,
        now: Instant,
        key: ChannelKey,
        request: &[u8],
        deadline: Option<Instant>,
    ) -> Result<ChanHeader, CallError> {
        self.call_held(None, now, key, request, deadline)
            .map(|(_, h)| h)
    }

    /// [`ClientTable::call`] on the channel `held` names if it is still
    /// `key`'s (no lookup by peer), else on `key`'s; also returns the
    /// handle that reached the channel, for the holder to keep.
    pub(crate) fn call_held(
        &mut self,
        held: Option<ClientHandle>,
        now: Instant,
        key: ChannelKey,
        request: &[u8],
        deadline: Option<Instant>,
    ) -> Result<(ClientHandle, ChanHeader), CallError> {
        let max = self.config.max_request;
        let initial = self.config.initial_timeout;
        let (at, ch) = self
            .channels
            .find_mut(held, &key)
            .ok_or(CallError::NoChannel)?;
        let len = callable(ch, request.len(), max)?;
        Ok((
            at,
            start_call(ch, key, now, initial, [request, &[]], len, deadline),
        ))
    }

    /// Fast form, down: [`ClientTable::call_held`] on the channel `held`
    /// names, when it is still `key`'s and the call starts (`None`,
    /// nothing changed, otherwise: a stale handle, a channel not FREE, a
    /// request too long, seqs used up). The request comes in two parts
    /// (the header of the protocol above, its payload), kept as one.
    #[inline(always)]
    pub(crate) fn fast_call(
        &mut self,
        held: ClientHandle,
        now: Instant,
        key: ChannelKey,
        request: [&[u8]; 2],
        deadline: Option<Instant>,
    ) -> Option<ChanHeader> {
        let (max, initial) = (self.config.max_request, self.config.initial_timeout);
        let ch = self.channels.held_mut(held, &key)?;
        let len = callable(ch, request[0].len() + request[1].len(), max).ok()?;
        Some(start_call(ch, key, now, initial, request, len, deadline))
    }

    /// Fast form, up: [`ClientTable::on_packet_held`] for the reply to
    /// the call outstanding on the channel `held` names, when that is all
    /// the packet is: flags `USER_MSG` alone (no `ACK_REQUESTED`, which
    /// asks for an explicit ACK), the channel still `key`'s, in WAIT,
    /// the call's seq, and no fragmented request to free. The call ends
    /// as there (its only action, the `Reply` the stage takes, is not
    /// queued); `false`, nothing changed, otherwise.
    #[inline(always)]
    pub(crate) fn fast_reply(
        &mut self,
        held: ClientHandle,
        key: ChannelKey,
        header: &ChanHeader,
    ) -> bool {
        let Some(ch) = self.channels.held_mut(held, &key) else {
            return false;
        };
        let only_reply = header.flags == flags::USER_MSG
            && ch.state == ClientState::Wait
            && header.seq == ch.seq
            && !ch.saved.fragmented();
        if only_reply {
            // No ticket: `end_call` has nothing to ask of the transport.
            let mut none = Vec::new();
            end_call(ch, &mut none);
        }
        only_reply
    }

    /// Records what the transport said about the last message pushed for
    /// `key` (the request, or a whole resend). A reliable transport
    /// cancels the retransmission timer (spec §6.4).
    pub fn record_receipt(&mut self, key: ChannelKey, receipt: TransportReceipt) {
        if let Some(ch) = self.channels.get_mut(&key) {
            if ch.state == ClientState::Wait {
                ch.saved.record(receipt);
            }
        }
    }

    /// Aborts the call outstanding on `key` (`CHAN_ABORT_CALL`): it fails
    /// with [`CallError::Aborted`], the channel is FREE, its seq kept.
    pub fn abort(&mut self, key: ChannelKey, out: &mut Vec<ChanAction>) -> Result<(), CallError> {
        let ch = self.channels.get_mut(&key).ok_or(CallError::NoChannel)?;
        if ch.state != ClientState::Wait {
            return Err(CallError::NoChannel);
        }
        end_call(ch, out);
        out.push(ChanAction::CallFailed {
            key,
            error: CallError::Aborted,
        });
        Ok(())
    }

    /// A packet without `FROM_CLIENT` from `peer` (spec §6.4). `payload`
    /// is what [`ChanHeader::parse`] returned. `query` answers BLAST's
    /// `CHAN_RETRANSMIT` for a forced resend (`None`: "yes").
    pub fn on_packet(
        &mut self,
        now: Instant,
        peer: Peer,
        header: &ChanHeader,
        payload: &[u8],
        query: Option<&mut dyn TransportQuery>,
        out: &mut Vec<ChanAction>,
    ) -> Result<(), ChanDropReason> {
        self.on_packet_held(None, now, peer, header, payload, query, out)
    }

    /// [`ClientTable::on_packet`] reaching the packet's channel through
    /// `held` if that still names it (no lookup by peer).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_packet_held(
        &mut self,
        held: Option<ClientHandle>,
        now: Instant,
        peer: Peer,
        header: &ChanHeader,
        payload: &[u8],
        query: Option<&mut dyn TransportQuery>,
        out: &mut Vec<ChanAction>,
    ) -> Result<(), ChanDropReason> {
        if header.has(flags::FROM_CLIENT) {
            // A request belongs to the server table (X32 demux).
            return Err(ChanDropReason::NoChannel);
        }
        let key = ChannelKey::of(peer, header);
        let Some((_, ch)) = self.channels.find_mut(held, &key) else {
            // Dormant: the FREE rules with the remembered seq.
            let seq = self
                .numbering
                .get(&(peer, header.prot_id))
                .and_then(|n| n.dormant.get(&header.chan).copied())
                .ok_or(ChanDropReason::NoChannel)?;
            return free_rule(key, seq, header, out);
        };
        match ch.state {
            ClientState::Disabled => Err(ChanDropReason::Disabled),
            ClientState::Free => free_rule(key, ch.seq, header, out),
            ClientState::Wait => {
                if header.seq < ch.seq {
                    return Err(ChanDropReason::OldSeq);
                }
                if header.seq > ch.seq {
                    return Err(ChanDropReason::FutureSeq);
                }
                if header.has(flags::USER_MSG) {
                    // The reply: the call completes, then the FREE rule
                    // applies to the same packet (an ACK_REQUESTED reply
                    // gets its explicit ACK at once).
                    end_call(ch, out);
                    out.push(ChanAction::Reply {
                        key,
                        len: payload.len(),
                    });
                    let seq = ch.seq;
                    let _ = free_rule(key, seq, header, out);
                    Ok(())
                } else if header.has(flags::NEGATIVE_ACK) {
                    // The server never got the request: resend it whole
                    // (forced, §6.6), timer re-armed at the current wait.
                    out.push(ch.saved.resend(
                        key,
                        ch.seq,
                        flags::FROM_CLIENT,
                        true,
                        self.config.opt_packet,
                        query,
                    ));
                    ch.saved.timer.rearm(now);
                    Ok(())
                } else if header.has(flags::ACK_REQUESTED) {
                    // "Reply sent, did you get it?" — no: ask for it.
                    ch.saved.timer.cancel();
                    out.push(ChanAction::Send {
                        key,
                        header: control(key, flags::FROM_CLIENT | flags::NEGATIVE_ACK, ch.seq),
                        payload: Payload::None,
                    });
                    Ok(())
                } else {
                    // Plain ACK: the server has the request and now owns
                    // recovery; wait without a timer (C6).
                    ch.saved.timer.cancel();
                    Ok(())
                }
            }
        }
    }

    /// Handles every expiry due at `now`: call deadlines (the call fails
    /// with [`CallError::TimedOut`]) and retransmission timers (a probe or
    /// a whole resend with `ACK_REQUESTED`, then wait := min(2·wait, max),
    /// spec §6.4, §6.6). Neither side gives up by itself (C8).
    pub fn on_time(&mut self, now: Instant, out: &mut Vec<ChanAction>) {
        let max = self.config.max_timeout;
        let opt = self.config.opt_packet;
        for (&key, ch) in self.channels.iter_mut() {
            if ch.state != ClientState::Wait {
                continue;
            }
            if ch.deadline.is_some_and(|d| d <= now) {
                end_call(ch, out);
                out.push(ChanAction::CallFailed {
                    key,
                    error: CallError::TimedOut,
                });
                continue;
            }
            if ch.saved.timer.due(now) {
                out.push(timer_resend(key, ch, opt));
                ch.saved.timer.back_off(now, max);
            }
        }
    }

    /// The earliest instant [`ClientTable::on_time`] has work.
    pub fn poll_at(&self) -> Option<Instant> {
        self.channels
            .values()
            .filter(|c| c.state == ClientState::Wait)
            .flat_map(|c| [c.saved.timer.at, c.deadline])
            .flatten()
            .min()
    }

    /// BIDCTL reported that `peer` rebooted (spec §6.4 "any"): every
    /// outstanding call to it fails with [`CallError::PeerRebooted`],
    /// every channel to it is DISABLED (later calls fail; close and
    /// reopen), and its dormant seqs are deleted.
    pub fn peer_rebooted(&mut self, peer: Peer, out: &mut Vec<ChanAction>) {
        self.reboots += 1;
        for (&key, ch) in self.channels.iter_mut().filter(|(k, _)| k.peer == peer) {
            if ch.state == ClientState::Wait {
                end_call(ch, out);
                out.push(ChanAction::CallFailed {
                    key,
                    error: CallError::PeerRebooted,
                });
            }
            ch.state = ClientState::Disabled;
            ch.saved.forget();
        }
        for ((p, _), n) in self.numbering.iter_mut() {
            if *p == peer {
                let dormant = std::mem::take(&mut n.dormant);
                n.free.extend(dormant.into_keys());
            }
        }
    }

    /// BIDCTL reported first contact with `peer` (OSF, spec §6.4, D1):
    /// every call waiting on a timer to that peer is resent at once, as
    /// its timer would, so a request a not-yet-active BID dropped does not
    /// wait 5 s. The back-off is not doubled (not a loss signal).
    pub fn first_contact(&mut self, now: Instant, peer: Peer, out: &mut Vec<ChanAction>) {
        let opt = self.config.opt_packet;
        for (&key, ch) in self.channels.iter_mut().filter(|(k, _)| k.peer == peer) {
            if ch.state == ClientState::Wait && ch.saved.timer.at.is_some() {
                out.push(timer_resend(key, ch, opt));
                ch.saved.timer.rearm(now);
            }
        }
    }
}

/// The FREE/dormant rules (spec §6.4): old or future seq → drop; current
/// seq with ACK_REQUESTED → explicit ACK (seq + 1, C2, C13).
fn free_rule(
    key: ChannelKey,
    seq: u32,
    header: &ChanHeader,
    out: &mut Vec<ChanAction>,
) -> Result<(), ChanDropReason> {
    if header.seq < seq {
        return Err(ChanDropReason::OldSeq);
    }
    if header.seq > seq {
        return Err(ChanDropReason::FutureSeq);
    }
    if !header.has(flags::ACK_REQUESTED) {
        return Err(ChanDropReason::Duplicate);
    }
    out.push(ChanAction::Send {
        key,
        header: control(key, flags::FROM_CLIENT, seq.wrapping_add(1)),
        payload: Payload::None,
    });
    Ok(())
}

/// The timer's retransmission: `FROM_CLIENT|ACK_REQUESTED`, unforced.
fn timer_resend(key: ChannelKey, ch: &ClientChannel, opt: Option<usize>) -> ChanAction {
    let f = flags::FROM_CLIENT | flags::ACK_REQUESTED;
    ch.saved.resend(key, ch.seq, f, false, opt, None)
}

/// Whether a call of `len` bytes may start on `ch` (FREE, within `max`,
/// a seq left): the request's length for the header.
#[inline(always)]
fn callable(ch: &ClientChannel, len: usize, max: usize) -> Result<u32, CallError> {
    match ch.state {
        ClientState::Free => {}
        ClientState::Wait => return Err(CallError::Busy),
        ClientState::Disabled => return Err(CallError::Disabled),
    }
    let len = u32::try_from(len)
        .ok()
        .filter(|_| len <= max)
        .ok_or(CallError::TooLarge { len, max })?;
    // No wrap handling in CHAN (§12 item 13): a channel that used up
    // its seqs is as good as disabled.
    if ch.seq == u32::MAX {
        return Err(CallError::Disabled);
    }
    Ok(len)
}

/// Starts a call of `len` bytes on `ch`, which [`callable`] allowed:
/// seq += 1, the request (its two parts, one after the other) copied,
/// the timer armed, WAIT. Returns the request's header.
#[inline(always)]
fn start_call(
    ch: &mut ClientChannel,
    key: ChannelKey,
    now: Instant,
    initial: pathstack_core::time::Duration,
    request: [&[u8]; 2],
    len: u32,
    deadline: Option<Instant>,
) -> ChanHeader {
    ch.seq += 1;
    ch.saved.keep(now, initial, request);
    ch.deadline = deadline;
    ch.state = ClientState::Wait;
    ChanHeader {
        chan: key.chan,
        flags: flags::FROM_CLIENT | flags::USER_MSG,
        prot_id: key.prot_id,
        seq: ch.seq,
        len,
    }
}

/// Ends the outstanding call (reply, failure or abort): timer and
/// deadline cancelled, copy dropped (capacity kept), the transport told
/// it may free a fragmented request → FREE, seq kept. Inlined: a few
/// stores, which out of line cost a call per round trip in the fast
/// form's reply (`fast_reply`).
#[inline(always)]
fn end_call(ch: &mut ClientChannel, out: &mut Vec<ChanAction>) {
    ch.saved.release(out);
    ch.deadline = None;
    ch.state = ClientState::Free;
}
