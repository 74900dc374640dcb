//! The BIDCTL state machine of one peer (spec §5.5; X32/OSF
//! `bidctl_state.c` `bidctlTransition`, `bidctl.c` `bidctlTimeout`,
//! `bidctl_timer.c`).
//!
//! [`PeerState::transition`] is the x-kernel's single transition function:
//! the state's reaction to a received header, or (`None`) to a local use
//! of the state, collected into at most one outgoing message per event —
//! a QUERY, a RESPONSE, a null message or a combination, the repeat of
//! our own outstanding QUERY riding along on anything we send while a
//! handshake is under way.

use crate::boot::bidctl_event::{BidctlAction, BootEvent, Registrant};
use crate::boot::BootId;
use crate::boot::{
    IDLE_LIMIT_TICKS, KEEPALIVE_TICKS, MAX_QUERY_TIMEOUT, OPEN_TIMEOUT, QUERY_TIMEOUT,
};
use crate::wire::bidctl::{flags, BidctlDropReason, BidctlHeader};
use crate::Peer;
use pathstack_core::time::{Duration, Instant};

/// Where the agreement with one peer stands (spec §5.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BidctlState {
    /// Just created; left at once by the event that created it, so only
    /// seen inside a transition.
    Init,
    /// First QUERY sent, the peer's BootId not known yet.
    Open,
    /// The peer's BootId is known and not in doubt.
    Normal,
    /// The peer's BootId is known but in doubt (a packet or a caller
    /// named another one); a QUERY is out to settle it.
    Query,
}

/// Which QUERY an outgoing message carries (X32 `BidctlQuery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QuerySend {
    No,
    /// A fresh tag: a new question.
    New,
    /// The outstanding tag again.
    Repeat,
}

/// What a transition needs from the engine.
pub(crate) struct Cx<'a> {
    pub peer: Peer,
    pub local_bid: BootId,
    pub now: Instant,
    /// The tag a new QUERY gets now (spec §5.3), from the engine's clock.
    pub fresh_tag: u32,
    pub out: &'a mut Vec<BidctlAction>,
}

/// One peer's record (X32 `BidctlState`), without the blocking waiters:
/// callers here never block, they ask again or wait for a notification.
#[derive(Clone, Debug)]
pub(crate) struct PeerState {
    pub fsm: BidctlState,
    pub peer_bid: BootId,
    pub req_tag: u32,
    /// The current retransmission interval of the outstanding QUERY.
    pub timeout: Duration,
    /// When the outstanding QUERY is repeated (OPEN and QUERY only).
    pub deadline: Option<Instant>,
    /// Global ticks since the peer was last heard from.
    pub ticks: u32,
    /// Registrants with their registration counts (X32 `hlpMap` + `rcnt`).
    pub registrants: Vec<(Registrant, u32)>,
    /// A boot broadcast waiting out its random delay.
    pub pending_bcast: Option<(Instant, BidctlHeader)>,
    /// Bumped on every PEER_REBOOTED.
    pub epoch: u64,
}

impl PeerState {
    /// A new record in INIT with the open timer armed (X32 `getState`).
    pub fn new(now: Instant) -> Self {
        PeerState {
            fsm: BidctlState::Init,
            peer_bid: BootId::UNKNOWN,
            req_tag: 0,
            timeout: OPEN_TIMEOUT,
            deadline: Some(now + OPEN_TIMEOUT),
            ticks: 0,
            registrants: Vec::new(),
            pending_bcast: None,
            epoch: 0,
        }
    }

    /// Whether anyone is registered.
    pub fn is_registered(&self) -> bool {
        !self.registrants.is_empty()
    }

    /// The state's reaction to the received header `hdr`, or to a local use
    /// of the state (`None`: a lookup or registration, which only moves
    /// INIT on). A boot broadcast arrives here after its delay and only if
    /// its BootId is news (the engine checks). Returns the reason to count
    /// if the packet did not do its job, after queueing any answer.
    pub fn transition(
        &mut self,
        hdr: Option<&BidctlHeader>,
        cx: &mut Cx<'_>,
    ) -> Result<(), BidctlDropReason> {
        let Some(h) = hdr else {
            if self.fsm == BidctlState::Init {
                self.fsm = BidctlState::Open;
                self.output(QuerySend::New, None, cx);
            }
            return Ok(());
        };
        let mut verdict = Ok(());
        let mut send_null = false;
        let mut query = QuerySend::No;
        match self.fsm {
            BidctlState::Init => {
                query = QuerySend::New;
                self.fsm = BidctlState::Open;
            }
            BidctlState::Normal => {
                if h.dst_bid != cx.local_bid && !h.is_query() {
                    // The peer talks to an earlier incarnation of us: a null
                    // message tells it our BootId (spec §5.5, D6).
                    send_null = true;
                    verdict = Err(BidctlDropReason::StaleDstBid);
                }
                if h.src_bid != self.peer_bid {
                    // Not believed until a handshake confirms it: a single
                    // mangled or stray packet never reports a reboot.
                    self.start_query(cx.now);
                    query = QuerySend::New;
                    verdict = verdict.and(Err(BidctlDropReason::UnknownSrcBid));
                }
            }
            BidctlState::Open => {
                if h.is_bcast() {
                    query = QuerySend::Repeat;
                } else if !h.is_response() {
                    if !h.is_query() {
                        verdict = Err(BidctlDropReason::AwaitingResponse);
                    }
                } else if h.rpl_tag != self.req_tag {
                    verdict = Err(BidctlDropReason::WrongTag);
                } else {
                    self.peer_bid = h.src_bid;
                    self.deadline = None;
                    self.fsm = BidctlState::Normal;
                    self.notify(
                        BootEvent::FirstContact {
                            peer: cx.peer,
                            bid: h.src_bid,
                        },
                        cx,
                    );
                }
            }
            BidctlState::Query => {
                if h.is_bcast() {
                    query = QuerySend::New;
                } else if h.is_response() {
                    if h.rpl_tag != self.req_tag {
                        verdict = Err(BidctlDropReason::WrongTag);
                    } else {
                        self.deadline = None;
                        self.fsm = BidctlState::Normal;
                        if h.src_bid != self.peer_bid {
                            self.peer_bid = h.src_bid;
                            self.epoch += 1;
                            self.notify(
                                BootEvent::PeerRebooted {
                                    peer: cx.peer,
                                    new_bid: h.src_bid,
                                },
                                cx,
                            );
                        }
                        // Else a false alarm (D3): back to NORMAL quietly.
                    }
                } else if !h.is_query() {
                    verdict = Err(BidctlDropReason::AwaitingResponse);
                }
            }
        }
        let reply = h.is_query().then_some(h.req_tag);
        if send_null || query != QuerySend::No || reply.is_some() {
            if query == QuerySend::No && matches!(self.fsm, BidctlState::Open | BidctlState::Query)
            {
                // Sending anyway: let a repeat of our query ride along
                // rather than wait for the timeout.
                query = QuerySend::Repeat;
            }
            self.output(query, reply, cx);
        }
        verdict
    }

    /// A caller's lookup with a BootId `hint` it has reason to believe
    /// (X32 `BIDCTL_GET_PEER_BID`): a hint other than the known BootId
    /// starts a query, if none is under way.
    pub fn lookup(&mut self, hint: BootId, cx: &mut Cx<'_>) -> BootId {
        let _ = self.transition(None, cx);
        if hint.is_known() && hint != self.peer_bid && self.fsm == BidctlState::Normal {
            self.start_query(cx.now);
            self.output(QuerySend::New, None, cx);
        }
        self.peer_bid
    }

    /// The retransmission timer (X32 `bidctlTimeout`): repeat the query
    /// with the same tag and back off, ×2 up to 60 s, forever (spec §5.4,
    /// §12 item 11: the code has no retry limit).
    pub fn on_timeout(&mut self, cx: &mut Cx<'_>) {
        match self.fsm {
            BidctlState::Open | BidctlState::Query => {
                self.timeout = Duration::from_nanos(
                    (self.timeout.as_nanos() * 2).min(MAX_QUERY_TIMEOUT.as_nanos()),
                );
                self.deadline = Some(cx.now + self.timeout);
                self.output(QuerySend::Repeat, None, cx);
            }
            BidctlState::Init | BidctlState::Normal => self.deadline = None,
        }
    }

    /// One global tick (X32 `clockTick`): keepalive every
    /// [`KEEPALIVE_TICKS`] silent ticks in NORMAL while registered.
    /// Returns false when an unregistered state has been idle for
    /// [`IDLE_LIMIT_TICKS`] and is to be forgotten.
    pub fn tick(&mut self, cx: &mut Cx<'_>) -> bool {
        self.ticks = self.ticks.saturating_add(1);
        if !self.is_registered() {
            return self.ticks < IDLE_LIMIT_TICKS;
        }
        if self.ticks % KEEPALIVE_TICKS == 0 && self.fsm == BidctlState::Normal {
            self.output(QuerySend::No, None, cx);
        }
        true
    }

    /// NORMAL → QUERY (X32 `bidctlStartQuery`). The interval restarts at
    /// 5 s: X32 keeps whatever an earlier back-off left after the first
    /// retry (spec §12 item 11); pathstack restarts the series so every
    /// query backs off 5, 10, 20, 40, 60 s alike (D2).
    fn start_query(&mut self, now: Instant) {
        self.fsm = BidctlState::Query;
        self.timeout = QUERY_TIMEOUT;
        self.deadline = Some(now + QUERY_TIMEOUT);
    }

    /// Queues one message to the peer (X32 `bidctlOutput`): always
    /// `srcBid = myBid`, `dstBid = peerBid`.
    fn output(&mut self, query: QuerySend, reply_to: Option<u32>, cx: &mut Cx<'_>) {
        let mut f = 0;
        let req_tag = match query {
            QuerySend::No => 0,
            QuerySend::New => {
                // Two queries within 256 µs would share a tag; a tag of 0
                // would match the rplTag of any non-RESPONSE.
                let mut t = cx.fresh_tag;
                if t == self.req_tag {
                    t = t.wrapping_add(1);
                }
                if t == 0 {
                    t = 1;
                }
                self.req_tag = t;
                f |= flags::QUERY;
                t
            }
            QuerySend::Repeat => {
                f |= flags::QUERY;
                self.req_tag
            }
        };
        let rpl_tag = match reply_to {
            Some(t) => {
                f |= flags::RESPONSE;
                t
            }
            None => 0,
        };
        cx.out.push(BidctlAction::Send {
            to: cx.peer,
            header: BidctlHeader {
                flags: f,
                src_bid: cx.local_bid,
                dst_bid: self.peer_bid,
                req_tag,
                rpl_tag,
            },
        });
    }

    fn notify(&self, event: BootEvent, cx: &mut Cx<'_>) {
        for &(registrant, _) in &self.registrants {
            cx.out.push(BidctlAction::Notify { registrant, event });
        }
    }
}
