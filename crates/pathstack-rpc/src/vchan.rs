//! VCHAN: a pool of CHAN client channels to one server, so that several
//! calls run at once, one per channel (spec §7; X32 `vchan.c`).
//!
//! Sans-IO like CHAN: the pool only decides which channel a call uses.
//! [`VchanPool::acquire`] hands out an idle channel — the most recently
//! freed first (a LIFO stack, as X32) — or queues the caller in a bounded
//! first-come-first-served queue when all are busy; [`VchanPool::release`]
//! gives a channel back after its call ended and, if someone waits, hands
//! it straight to the longest waiter. The stage keeps each waiting call's
//! message and makes the CHAN call once it has a channel. VCHAN has no
//! header and never sees server traffic (spec §7).

use crate::chan::{ChannelKey, ClientTable, TableError};
use crate::Peer;
use std::collections::VecDeque;

/// Channels a pool opens at first (X32 `DEFAULT_NUM_SESSNS`, spec §7).
pub const DEFAULT_CONCURRENCY: usize = 5;
/// Default bound on calls waiting for a channel.
pub const DEFAULT_MAX_WAITING: usize = 1024;
/// Default bound on the channels of one pool (after INCCONCURRENCY).
pub const DEFAULT_MAX_CONCURRENCY: usize = 64;

/// Settings of a [`VchanPool`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VchanConfig {
    /// Channels opened at creation (`VCHAN_CONCURRENCY`).
    pub concurrency: usize,
    /// Channels the pool may hold at most (active and parked).
    pub max_concurrency: usize,
    /// Calls that may wait for a channel.
    pub max_waiting: usize,
}

impl Default for VchanConfig {
    fn default() -> Self {
        VchanConfig {
            concurrency: DEFAULT_CONCURRENCY,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            max_waiting: DEFAULT_MAX_WAITING,
        }
    }
}

/// A place in the queue of calls waiting for a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WaitTicket(u64);

/// The answer to [`VchanPool::acquire`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// Call through this channel now.
    Channel(ChannelKey),
    /// All channels are busy: the call waits; [`VchanPool::release`] will
    /// return this ticket with a channel.
    Queued(WaitTicket),
}

/// Why the pool refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VchanError {
    /// All channels busy and the waiting queue full.
    #[error("all channels busy and {max} calls already waiting")]
    QueueFull {
        /// The bound.
        max: usize,
    },
    /// INCCONCURRENCY beyond `max_concurrency`.
    #[error("pool would exceed {max} channels")]
    TooManyChannels {
        /// The bound.
        max: usize,
    },
    /// DECCONCURRENCY of more channels than the pool has active.
    #[error("cannot park {asked} channels, only {active} active")]
    NotEnoughChannels {
        /// Channels asked to park.
        asked: usize,
        /// Channels active.
        active: usize,
    },
    /// A channel given back that is not out of this pool.
    #[error("channel not lent by this pool")]
    NotLent,
    /// CHAN refused to open a channel.
    #[error(transparent)]
    Chan(#[from] TableError),
}

impl From<VchanError> for std::io::Error {
    fn from(e: VchanError) -> Self {
        let kind = match e {
            VchanError::QueueFull { .. } => std::io::ErrorKind::WouldBlock,
            VchanError::Chan(t) => return t.into(),
            _ => std::io::ErrorKind::InvalidInput,
        };
        std::io::Error::new(kind, e)
    }
}

/// The channel pool of one (peer, upper protocol).
///
/// ```
/// use pathstack_rpc::chan::{ClientConfig, ClientTable};
/// use pathstack_rpc::vchan::{Acquired, VchanConfig, VchanPool};
/// use pathstack_rpc::Peer;
/// use std::net::Ipv4Addr;
///
/// let mut chan = ClientTable::new(ClientConfig::default());
/// let peer = Peer::from(Ipv4Addr::new(10, 0, 0, 2));
/// let mut pool = VchanPool::new(&mut chan, peer, 20, VchanConfig::default()).unwrap();
/// let Acquired::Channel(key) = pool.acquire().unwrap() else { unreachable!() };
/// assert_eq!(key.chan, 1);
/// assert_eq!(pool.release(key).unwrap(), None); // nobody waiting
/// ```
#[derive(Debug)]
pub struct VchanPool {
    peer: Peer,
    prot_id: u32,
    config: VchanConfig,
    /// Idle channels; the top is the most recently freed.
    idle: Vec<ChannelKey>,
    /// Channels lent to calls.
    busy: Vec<ChannelKey>,
    /// Channels taken out of use by DECCONCURRENCY.
    parked: Vec<ChannelKey>,
    /// Busy channels to park when they come back.
    park_pending: usize,
    waiting: VecDeque<WaitTicket>,
    next_ticket: u64,
}

impl VchanPool {
    /// Opens `config.concurrency` channels to `peer` for `prot_id` in
    /// `chan` (spec §7: each CHAN open yields a distinct channel).
    pub fn new(
        chan: &mut ClientTable,
        peer: Peer,
        prot_id: u32,
        config: VchanConfig,
    ) -> Result<Self, VchanError> {
        let mut pool = VchanPool {
            peer,
            prot_id,
            config,
            idle: Vec::new(),
            busy: Vec::new(),
            parked: Vec::new(),
            park_pending: 0,
            waiting: VecDeque::new(),
            next_ticket: 0,
        };
        pool.inc_concurrency(chan, config.concurrency)?;
        Ok(pool)
    }

    /// The peer.
    pub fn peer(&self) -> Peer {
        self.peer
    }

    /// Channels in use or idle (not parked).
    pub fn active(&self) -> usize {
        self.idle.len() + self.busy.len() - self.park_pending
    }

    /// Channels parked by DECCONCURRENCY (including those to be parked
    /// when their call ends).
    pub fn parked(&self) -> usize {
        self.parked.len() + self.park_pending
    }

    /// Calls waiting for a channel.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Every channel of the pool (idle, busy, parked).
    pub fn channels(&self) -> impl Iterator<Item = ChannelKey> + '_ {
        self.idle
            .iter()
            .chain(&self.busy)
            .chain(&self.parked)
            .copied()
    }

    /// A channel for a call: the most recently freed idle one, else a
    /// place in the waiting queue (fair: first come, first served).
    pub fn acquire(&mut self) -> Result<Acquired, VchanError> {
        if let Some(key) = self.idle.pop() {
            self.busy.push(key);
            return Ok(Acquired::Channel(key));
        }
        if self.waiting.len() >= self.config.max_waiting {
            return Err(VchanError::QueueFull {
                max: self.config.max_waiting,
            });
        }
        let t = WaitTicket(self.next_ticket);
        self.next_ticket += 1;
        self.waiting.push_back(t);
        Ok(Acquired::Queued(t))
    }

    /// The channel [`VchanPool::acquire`] would lend now, if one is idle
    /// (the top of the idle stack).
    #[inline(always)]
    pub(crate) fn next_idle(&self) -> Option<ChannelKey> {
        self.idle.last().copied()
    }

    /// Fast form: lends the channel [`VchanPool::next_idle`] named, as
    /// [`VchanPool::acquire`] lends it when one is idle (the top of the
    /// idle stack becomes busy), without building its answer: the caller
    /// already holds the key. `false` if none is idle.
    #[inline(always)]
    pub(crate) fn lend_idle(&mut self) -> bool {
        let Some(key) = self.idle.pop() else {
            return false;
        };
        self.busy.push(key);
        true
    }

    /// Gives back a channel whose call ended. If a call waits, the channel
    /// goes straight to the longest waiter, returned here; else it is
    /// parked (pending DECCONCURRENCY) or becomes the top of the idle
    /// stack.
    pub fn release(
        &mut self,
        key: ChannelKey,
    ) -> Result<Option<(WaitTicket, ChannelKey)>, VchanError> {
        let i = self
            .busy
            .iter()
            .position(|&k| k == key)
            .ok_or(VchanError::NotLent)?;
        if self.park_pending > 0 {
            self.busy.swap_remove(i);
            self.park_pending -= 1;
            self.parked.push(key);
            return Ok(None);
        }
        if let Some(t) = self.waiting.pop_front() {
            return Ok(Some((t, key)));
        }
        self.busy.swap_remove(i);
        self.idle.push(key);
        Ok(None)
    }

    /// Fast form: [`VchanPool::release`] of this pool's channel number
    /// `chan` when no call waits (the caller checked), found by its
    /// number alone (every channel of a pool has the pool's peer and
    /// protocol, so the number names it) and the channel parked or made
    /// the top of the idle stack as there; `false` if it is not lent.
    #[inline(always)]
    pub(crate) fn release_idle(&mut self, chan: u16) -> bool {
        let Some(i) = self.busy.iter().position(|k| k.chan == chan) else {
            return false;
        };
        let key = self.busy.swap_remove(i);
        if self.park_pending > 0 {
            self.park_pending -= 1;
            self.parked.push(key);
        } else {
            self.idle.push(key);
        }
        true
    }

    /// Withdraws a waiting call (its caller gave up). `false` if it no
    /// longer waits.
    pub fn cancel(&mut self, ticket: WaitTicket) -> bool {
        let before = self.waiting.len();
        self.waiting.retain(|&t| t != ticket);
        self.waiting.len() != before
    }

    /// `VCHAN_INCCONCURRENCY n`: first cancels pending parks and re-enables
    /// parked channels, then opens new ones (V2). Channels that become
    /// usable go to waiting calls first; those hand-overs are returned.
    pub fn inc_concurrency(
        &mut self,
        chan: &mut ClientTable,
        n: usize,
    ) -> Result<Vec<(WaitTicket, ChannelKey)>, VchanError> {
        let total = self.idle.len() + self.busy.len() + self.parked.len();
        let fresh = n.saturating_sub(self.park_pending + self.parked.len());
        if total + fresh > self.config.max_concurrency {
            return Err(VchanError::TooManyChannels {
                max: self.config.max_concurrency,
            });
        }
        let mut left = n;
        let unpend = left.min(self.park_pending);
        self.park_pending -= unpend;
        left -= unpend;
        let mut usable = Vec::new();
        while left > 0 {
            let Some(key) = self.parked.pop() else { break };
            usable.push(key);
            left -= 1;
        }
        for _ in 0..left {
            usable.push(chan.open(self.peer, self.prot_id)?);
        }
        let mut handed = Vec::new();
        let mut spare = Vec::new();
        for key in usable {
            match self.waiting.pop_front() {
                Some(t) => {
                    self.busy.push(key);
                    handed.push((t, key));
                }
                None => spare.push(key),
            }
        }
        // Lowest number on top, so a fresh pool lends channel 1 first.
        self.idle.extend(spare.into_iter().rev());
        Ok(handed)
    }

    /// `VCHAN_DECCONCURRENCY n`: parks `n` channels, idle ones at once and
    /// busy ones when their call ends (X32 waits for them to become idle).
    /// Fails if `n` exceeds the active channels.
    pub fn dec_concurrency(&mut self, n: usize) -> Result<(), VchanError> {
        let active = self.active();
        if n > active {
            return Err(VchanError::NotEnoughChannels { asked: n, active });
        }
        let mut left = n;
        while left > 0 && !self.idle.is_empty() {
            // Park the least recently used first: the bottom of the stack.
            let key = self.idle.remove(0);
            self.parked.push(key);
            left -= 1;
        }
        self.park_pending += left;
        Ok(())
    }
}
