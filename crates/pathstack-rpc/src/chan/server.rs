//! The server side of CHAN: channels created by the first request of a
//! client channel, which execute each call at most once and keep the
//! reply until it is acknowledged (spec §6.5, §6.7; X32 `chan_server.c`).

use super::retransmit::control;
use super::saved::SavedMessage;
use super::{
    ChanAction, ChannelKey, Payload, ServerConfig, TableError, TransportQuery, TransportReceipt,
};
use crate::handle_table::{Handle, HandleTable};
use crate::hash_map::FastMap;
use crate::wire::chan::{flags, ChanDropReason, ChanHeader};
use crate::Peer;
use pathstack_core::time::Instant;

/// The state of a live server channel (spec §6.5). A channel disabled by
/// a peer reboot is removed from the table (as in X32), so it has no
/// state here; a dormant one is only a remembered seq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerState {
    /// No call in progress; the last reply (if any) acknowledged.
    Idle,
    /// The upper protocol is running the current call.
    Execute,
    /// The reply is sent and kept until the client acknowledges it.
    Wait,
}

/// The token of one execution handed out with [`ChanAction::Execute`];
/// [`ServerTable::reply`] accepts a reply only for the channel's current
/// execution, so a reply computed before a reboot or for an older call is
/// never sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ServerCall {
    /// The channel.
    pub key: ChannelKey,
    /// The call's seq.
    pub seq: u32,
    /// Unique per execution in this table.
    exec: u64,
    /// The channel, held so that the reply reaches it without a lookup
    /// by peer (`crate::handle_table`).
    at: ServerHandle,
}

/// A server channel held by a path (or by a [`ServerCall`]): valid while
/// the channel is live (closing it or the client's reboot makes it
/// stale).
pub(crate) type ServerHandle = Handle<ServerChannel>;

#[derive(Debug)]
pub(crate) struct ServerChannel {
    seq: u32,
    state: ServerState,
    /// Of the current execution (meaningful in EXECUTE).
    exec: u64,
    /// The reply, kept for retransmission in WAIT until acknowledged.
    saved: SavedMessage,
}

/// Why [`ServerTable::reply`] did not send a reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The call is no longer current: the client rebooted (the channel
    /// was disabled, C10) or the token is stale. The reply is discarded.
    #[error("reply discarded: the call is no longer current (client rebooted?)")]
    Stale,
    /// The reply exceeds `max_reply`.
    #[error("reply of {len} bytes exceeds the maximum of {max}")]
    TooLarge {
        /// The reply's length.
        len: usize,
        /// The limit.
        max: usize,
    },
}

impl From<ReplyError> for std::io::Error {
    fn from(e: ReplyError) -> Self {
        let kind = match e {
            ReplyError::Stale => std::io::ErrorKind::ConnectionReset,
            ReplyError::TooLarge { .. } => std::io::ErrorKind::InvalidInput,
        };
        std::io::Error::new(kind, e)
    }
}

/// The server channels of one host.
///
/// ```
/// use pathstack_core::time::Instant;
/// use pathstack_rpc::chan::{ChanAction, ServerConfig, ServerTable};
/// use pathstack_rpc::wire::chan::ChanHeader;
/// use pathstack_rpc::Peer;
/// use std::net::Ipv4Addr;
///
/// let mut server = ServerTable::new(ServerConfig::default());
/// server.enable(20).unwrap();
/// let packet = [0, 1, 0, 3, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0, 0, 1, 42];
/// let (header, payload) = ChanHeader::parse(&packet).unwrap();
/// let mut out = Vec::new();
/// let peer = Peer::from(Ipv4Addr::new(10, 0, 0, 1));
/// server.on_packet(peer, &header, payload, None, &mut out).unwrap();
/// let ChanAction::Execute { call, len: 1 } = out[0] else { panic!() };
/// let reply = server.reply(Instant::ZERO, call, &[43]).unwrap();
/// assert_eq!(reply.to_bytes(), [0, 1, 0, 2, 0, 0, 0, 20, 0, 0, 0, 2, 0, 0, 0, 1]);
/// ```
#[derive(Debug)]
pub struct ServerTable {
    config: ServerConfig,
    /// Protocol numbers with an openEnable.
    enabled: Vec<u32>,
    /// Live channels, each reachable by a [`ServerHandle`].
    channels: HandleTable<ChannelKey, ServerChannel>,
    dormant: FastMap<ChannelKey, u32>,
    next_exec: u64,
}

impl ServerTable {
    /// An empty table serving no protocol.
    pub fn new(config: ServerConfig) -> Self {
        ServerTable {
            config,
            enabled: Vec::new(),
            channels: HandleTable::default(),
            dormant: FastMap::default(),
            next_exec: 0,
        }
    }

    /// The table's settings.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Serves requests for upper protocol `prot_id` (openEnable).
    pub fn enable(&mut self, prot_id: u32) -> Result<(), TableError> {
        if self.enabled.contains(&prot_id) {
            return Ok(());
        }
        if self.enabled.len() >= self.config.max_protocols {
            return Err(TableError::TooManyProtocols {
                max: self.config.max_protocols,
            });
        }
        self.enabled.push(prot_id);
        Ok(())
    }

    /// Stops creating channels for `prot_id` (existing ones go on).
    pub fn disable(&mut self, prot_id: u32) {
        self.enabled.retain(|&p| p != prot_id);
    }

    /// The state of a live channel.
    pub fn state(&self, key: ChannelKey) -> Option<ServerState> {
        self.channels.get(&key).map(|c| c.state)
    }

    /// The stored seq of a live channel.
    pub fn seq(&self, key: ChannelKey) -> Option<u32> {
        self.channels.get(&key).map(|c| c.seq)
    }

    /// The seq remembered for a dormant channel.
    pub fn dormant_seq(&self, key: ChannelKey) -> Option<u32> {
        self.dormant.get(&key).copied()
    }

    /// Live and dormant channels (bounded by `max_channels`).
    pub fn len(&self) -> usize {
        self.channels.len() + self.dormant.len()
    }

    /// Whether the table has no channel at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The reply kept on `key` in WAIT, for a [`Payload::SavedCopy`] resend.
    pub fn saved_copy(&self, key: ChannelKey) -> Option<&[u8]> {
        self.channels
            .get(&key)
            .filter(|c| c.state == ServerState::Wait)
            .map(|c| c.saved.copy())
    }

    /// Closes an IDLE channel: only its seq is kept (dormant), revived by
    /// the next request on it.
    pub fn close(&mut self, key: ChannelKey) -> Result<(), TableError> {
        match self.channels.get(&key).map(|c| c.state) {
            None => Err(TableError::NoChannel),
            Some(ServerState::Idle) => {
                if let Some(ch) = self.channels.remove(&key) {
                    self.dormant.insert(key, ch.seq);
                }
                Ok(())
            }
            Some(_) => Err(TableError::Busy),
        }
    }

    /// A packet with `FROM_CLIENT` from `peer` (spec §6.5). `payload` is
    /// what [`ChanHeader::parse`] returned; `query` answers BLAST's
    /// `CHAN_RETRANSMIT` for a forced resend (`None`: "yes").
    pub fn on_packet(
        &mut self,
        peer: Peer,
        header: &ChanHeader,
        payload: &[u8],
        query: Option<&mut dyn TransportQuery>,
        out: &mut Vec<ChanAction>,
    ) -> Result<(), ChanDropReason> {
        self.on_packet_held(None, peer, header, payload, query, out)
            .map(|_| ())
    }

    /// [`ServerTable::on_packet`] reaching the packet's channel through
    /// `held` if that still names it (no lookup by peer); returns the
    /// handle of the channel the packet reached, if it has one, for the
    /// holder to keep.
    pub(crate) fn on_packet_held(
        &mut self,
        held: Option<ServerHandle>,
        peer: Peer,
        header: &ChanHeader,
        payload: &[u8],
        query: Option<&mut dyn TransportQuery>,
        out: &mut Vec<ChanAction>,
    ) -> Result<Option<ServerHandle>, ChanDropReason> {
        if !header.has(flags::FROM_CLIENT) {
            return Err(ChanDropReason::NoChannel);
        }
        let key = ChannelKey::of(peer, header);
        let at = match self.channels.find_mut(held, &key) {
            Some((at, _)) => at,
            None => match self.create(key, header, out)? {
                Some(at) => at,
                None => return Ok(None),
            },
        };
        self.on_channel(at, key, header, payload, query, out)
            .map(|()| Some(at))
    }

    /// A request for a channel that is not live: revives a dormant one or
    /// creates one (`Some`), or answers the packet without one (`None`).
    fn create(
        &mut self,
        key: ChannelKey,
        header: &ChanHeader,
        out: &mut Vec<ChanAction>,
    ) -> Result<Option<ServerHandle>, ChanDropReason> {
        if !self.enabled.contains(&header.prot_id) {
            return Err(ChanDropReason::NoListener);
        }
        // Revive a dormant channel (net zero in the bound) or create
        // one with seq 0: any seq > 0 is new (spec §6.3).
        let seq = match self.dormant.remove(&key) {
            Some(seq) => seq,
            // Only a request earns a new channel; anything else would
            // find nothing to do in a fresh IDLE channel, so stray
            // control packets cannot fill the table.
            None if !header.has(flags::USER_MSG) => {
                if !(header.has(flags::ACK_REQUESTED) && header.seq > 0) {
                    return Err(ChanDropReason::Unsolicited);
                }
                // A probe for a request we never got (C4).
                out.push(ChanAction::Send {
                    key,
                    header: control(key, flags::NEGATIVE_ACK, header.seq),
                    payload: Payload::None,
                });
                return Ok(None);
            }
            None if self.len() >= self.config.max_channels => {
                return Err(ChanDropReason::TableFull)
            }
            None => 0,
        };
        Ok(Some(self.channels.insert(
            key,
            ServerChannel {
                seq,
                state: ServerState::Idle,
                exec: 0,
                saved: SavedMessage::new(),
            },
        )))
    }

    /// The rules of spec §6.5 for a packet on the live channel `at`.
    fn on_channel(
        &mut self,
        at: ServerHandle,
        key: ChannelKey,
        header: &ChanHeader,
        payload: &[u8],
        query: Option<&mut dyn TransportQuery>,
        out: &mut Vec<ChanAction>,
    ) -> Result<(), ChanDropReason> {
        let Some((_, ch)) = self.channels.find_mut(Some(at), &key) else {
            return Err(ChanDropReason::NoChannel);
        };
        if header.seq < ch.seq {
            return Err(ChanDropReason::OldSeq);
        }
        let new = header.seq > ch.seq;
        match ch.state {
            ServerState::Wait if new => {
                // The next request or the explicit ACK (seq + 1)
                // acknowledges the reply: free it, then the packet is
                // processed again in IDLE — unless it was only the ACK.
                ack_reply(ch, out);
                if !header.has(flags::USER_MSG) && !header.has(flags::ACK_REQUESTED) {
                    return Ok(());
                }
            }
            ServerState::Wait if header.has(flags::NEGATIVE_ACK) => {
                out.push(
                    ch.saved
                        .resend(key, ch.seq, 0, true, self.config.opt_packet, query),
                );
                return Ok(());
            }
            ServerState::Wait => {
                if self.config.resend_reply_on_duplicate && header.has(flags::USER_MSG) {
                    // §12 item 12 (off by default): answer the duplicate
                    // as the timer would, without backing off.
                    let opt = self.config.opt_packet;
                    out.push(
                        ch.saved
                            .resend(key, ch.seq, flags::ACK_REQUESTED, false, opt, None),
                    );
                    return Ok(());
                }
                // The server's own timer recovers a lost reply (C2).
                return Err(ChanDropReason::Duplicate);
            }
            ServerState::Execute if new => return Err(ChanDropReason::Busy),
            ServerState::Execute if header.has(flags::ACK_REQUESTED) => {
                out.push(ChanAction::Send {
                    key,
                    header: control(key, 0, ch.seq),
                    payload: Payload::None,
                });
                return Ok(());
            }
            ServerState::Execute => return Err(ChanDropReason::Duplicate),
            ServerState::Idle => {}
        }
        // IDLE.
        if !new {
            return Err(ChanDropReason::Duplicate);
        }
        if header.has(flags::USER_MSG) {
            // At-most-once (spec §6.7): the seq is stored before the call,
            // so every copy of this request is "current" from now on.
            ch.seq = header.seq;
            if header.has(flags::ACK_REQUESTED) {
                out.push(ChanAction::Send {
                    key,
                    header: control(key, 0, ch.seq),
                    payload: Payload::None,
                });
            }
            self.next_exec += 1;
            ch.exec = self.next_exec;
            ch.state = ServerState::Execute;
            out.push(ChanAction::Execute {
                call: ServerCall {
                    key,
                    seq: ch.seq,
                    exec: ch.exec,
                    at,
                },
                len: payload.len(),
            });
            Ok(())
        } else if header.has(flags::ACK_REQUESTED) {
            // A probe for a request we never got (C4).
            out.push(ChanAction::Send {
                key,
                header: control(key, flags::NEGATIVE_ACK, header.seq),
                payload: Payload::None,
            });
            Ok(())
        } else {
            // An explicit ACK (already processed above when in WAIT), or
            // one for a reply freed already.
            Err(ChanDropReason::Unsolicited)
        }
    }

    /// The execution in progress on `key`'s channel (reached through
    /// `held` if that still names it), whose reply is due: what the
    /// server path's CHAN stage answers when the reply comes back down.
    /// `None` once it was answered or the client rebooted (C10).
    pub(crate) fn executing(
        &mut self,
        held: Option<ServerHandle>,
        key: ChannelKey,
    ) -> Option<ServerCall> {
        let (at, ch) = self.channels.find_mut(held, &key)?;
        (ch.state == ServerState::Execute).then_some(ServerCall {
            key,
            seq: ch.seq,
            exec: ch.exec,
            at,
        })
    }

    /// The upper protocol's reply to `call` (spec §6.5 IDLE row, second
    /// half): unless the call is no longer current (reboot, C10), the
    /// reply is copied into the channel's buffer, the timer armed
    /// (`initial_timeout`) and the channel goes to WAIT; returns the
    /// header (`USER_MSG`) to push on the reply. Report the transport's
    /// receipt afterwards with [`ServerTable::record_receipt`].
    pub fn reply(
        &mut self,
        now: Instant,
        call: ServerCall,
        reply: &[u8],
    ) -> Result<ChanHeader, ReplyError> {
        let initial = self.config.initial_timeout;
        let max = self.config.max_reply;
        let len = u32::try_from(reply.len())
            .ok()
            .filter(|_| reply.len() <= max)
            .ok_or(ReplyError::TooLarge {
                len: reply.len(),
                max,
            })?;
        let ch = self
            .channels
            .find_mut(Some(call.at), &call.key)
            .map(|(_, c)| c)
            .filter(|c| c.state == ServerState::Execute && c.exec == call.exec)
            .ok_or(ReplyError::Stale)?;
        Ok(send_reply(ch, call.key, now, initial, [reply, &[]], len))
    }

    /// Fast form, down: [`ServerTable::reply`] to the execution in
    /// progress on the channel `held` names, when it is still `key`'s (its
    /// current execution is the one the reply answers, as
    /// [`ServerTable::executing`] finds it) and the reply fits (`None`,
    /// nothing changed, otherwise). The reply comes in two parts (the
    /// header of the protocol above, its payload), kept as one.
    #[inline(always)]
    pub(crate) fn fast_reply(
        &mut self,
        held: ServerHandle,
        now: Instant,
        key: ChannelKey,
        reply: [&[u8]; 2],
    ) -> Option<ChanHeader> {
        let (initial, max) = (self.config.initial_timeout, self.config.max_reply);
        let n = reply[0].len() + reply[1].len();
        let len = u32::try_from(n).ok().filter(|_| n <= max)?;
        let ch = self.channels.held_mut(held, &key)?;
        (ch.state == ServerState::Execute).then(|| send_reply(ch, key, now, initial, reply, len))
    }

    /// Fast form, up: [`ServerTable::on_packet_held`] for the next
    /// request on the channel `held` names, when that is all the packet
    /// is: flags `FROM_CLIENT|USER_MSG` alone (no `ACK_REQUESTED`, which
    /// asks for an explicit ACK), the channel still `key`'s, a new seq,
    /// and the channel IDLE or in WAIT with no fragmented reply to free
    /// (the request acknowledges the reply, spec §6.5). The execution
    /// starts as there (its only action, the `Execute` the stage takes,
    /// is not queued); `false`, nothing changed, otherwise.
    #[inline(always)]
    pub(crate) fn fast_request(
        &mut self,
        held: ServerHandle,
        key: ChannelKey,
        header: &ChanHeader,
    ) -> bool {
        let Some(ch) = self.channels.held_mut(held, &key) else {
            return false;
        };
        let only_request = header.flags == flags::FROM_CLIENT | flags::USER_MSG
            && header.seq > ch.seq
            && match ch.state {
                ServerState::Idle => true,
                ServerState::Wait => !ch.saved.fragmented(),
                ServerState::Execute => false,
            };
        if !only_request {
            return false;
        }
        if ch.state == ServerState::Wait {
            // No ticket: `ack_reply` has nothing to ask of the transport.
            let mut none = Vec::new();
            ack_reply(ch, &mut none);
        }
        // At-most-once (spec §6.7), as `on_channel`.
        ch.seq = header.seq;
        self.next_exec += 1;
        ch.exec = self.next_exec;
        ch.state = ServerState::Execute;
        true
    }

    /// Records what the transport said about the last message pushed for
    /// `key` (the reply or a whole resend); a reliable transport cancels
    /// the timer.
    pub fn record_receipt(&mut self, key: ChannelKey, receipt: TransportReceipt) {
        if let Some(ch) = self.channels.get_mut(&key) {
            if ch.state == ServerState::Wait {
                ch.saved.record(receipt);
            }
        }
    }

    /// Handles the retransmission timers due at `now`: the reply resent
    /// with `ACK_REQUESTED` (`0x06` + data) or a `0x04` probe (§6.6), then
    /// wait := min(2·wait, max) (C5, C8).
    pub fn on_time(&mut self, now: Instant, out: &mut Vec<ChanAction>) {
        let max = self.config.max_timeout;
        let opt = self.config.opt_packet;
        for (&key, ch) in self.channels.iter_mut() {
            if ch.state == ServerState::Wait && ch.saved.timer.due(now) {
                out.push(
                    ch.saved
                        .resend(key, ch.seq, flags::ACK_REQUESTED, false, opt, None),
                );
                ch.saved.timer.back_off(now, max);
            }
        }
    }

    /// The earliest instant [`ServerTable::on_time`] has work.
    pub fn poll_at(&self) -> Option<Instant> {
        self.channels
            .values()
            .filter(|c| c.state == ServerState::Wait)
            .filter_map(|c| c.saved.timer.at)
            .min()
    }

    /// BIDCTL reported that client `peer` rebooted (spec §6.5 "any", C10):
    /// every channel to it is disabled and removed — a call executing is
    /// orphaned (its reply will be refused as [`ReplyError::Stale`]), a
    /// kept reply is dropped (the transport told to free it) — and its
    /// dormant seqs are deleted, so the new incarnation starts afresh.
    pub fn peer_rebooted(&mut self, peer: Peer, out: &mut Vec<ChanAction>) {
        self.channels.retain(|k, ch| {
            if k.peer != peer {
                return true;
            }
            if ch.state == ServerState::Wait {
                ch.saved.release(out);
            }
            false
        });
        self.dormant.retain(|k, _| k.peer != peer);
    }
}

/// Sends `reply` (`len` bytes, in two parts) for the execution on `ch`:
/// the copy kept, the timer armed, WAIT. Returns the reply's header.
#[inline(always)]
fn send_reply(
    ch: &mut ServerChannel,
    key: ChannelKey,
    now: Instant,
    initial: pathstack_core::time::Duration,
    reply: [&[u8]; 2],
    len: u32,
) -> ChanHeader {
    ch.saved.keep(now, initial, reply);
    ch.state = ServerState::Wait;
    ChanHeader {
        chan: key.chan,
        flags: flags::USER_MSG,
        prot_id: key.prot_id,
        seq: ch.seq,
        len,
    }
}

/// WAIT → IDLE on an implicit or explicit ACK: the reply copy is dropped
/// and the transport may free it. Inlined, as the client's `end_call`:
/// the fast form's next request acknowledges the reply with it.
#[inline(always)]
fn ack_reply(ch: &mut ServerChannel, out: &mut Vec<ChanAction>) {
    ch.saved.release(out);
    ch.state = ServerState::Idle;
}
