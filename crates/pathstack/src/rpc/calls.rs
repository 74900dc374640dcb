//! The client's table of calls in flight: a slot per call, named by the
//! 16-bit tag that travels with the call down the client path and comes
//! back with its outcome, and a generation so that a stale handle never
//! reads a later call's reply.

use pathstack_core::Msg;
use pathstack_rpc::anno::CallStatus;
use pathstack_rpc::Peer;

/// A call in flight, as [`host.rpc().start`](crate::rpc::Rpc::start) made
/// it; read its outcome with [`host.rpc().poll`](crate::rpc::Rpc::poll).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RpcCall {
    pub(crate) slot: u16,
    pub(crate) generation: u32,
    pub(crate) host: crate::host_id::HostId,
}

impl RpcCall {
    /// The call's tag on the client path (for tracing).
    pub fn tag(&self) -> u16 {
        self.slot
    }
}

/// One slot of the table.
enum Slot {
    Free,
    Pending {
        peer: Peer,
        id: u32,
    },
    /// The outcome arrived; waiting for the application.
    Done {
        peer: Peer,
        id: u32,
        outcome: Result<Msg, CallStatus>,
    },
    /// The application gave up on the call; its outcome is thrown away
    /// when it comes (the channel below stays busy until then).
    Abandoned,
}

/// The calls of one host, bounded by the `RPC` module's `max_calls`.
pub(crate) struct CallTable {
    slots: Vec<(u32, Slot)>,
    free: Vec<u16>,
    max: usize,
}

/// What [`CallTable::take`] found.
pub(crate) enum Taken {
    Pending,
    Done {
        peer: Peer,
        id: u32,
        outcome: Result<Msg, CallStatus>,
    },
    Unknown,
}

impl CallTable {
    pub(crate) fn new(max: usize) -> Self {
        CallTable {
            slots: Vec::new(),
            free: Vec::new(),
            max: max.clamp(1, usize::from(u16::MAX) + 1),
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A slot for a new call to `peer`, procedure `id`.
    pub(crate) fn open(&mut self, peer: Peer, id: u32) -> Option<(u16, u32)> {
        let slot = match self.free.pop() {
            Some(s) => s,
            None if self.slots.len() < self.max => {
                self.slots.push((0, Slot::Free));
                (self.slots.len() - 1) as u16
            }
            None => return None,
        };
        let e = &mut self.slots[usize::from(slot)];
        e.0 = e.0.wrapping_add(1);
        e.1 = Slot::Pending { peer, id };
        Some((slot, e.0))
    }

    /// Gives a slot back when its request never left.
    pub(crate) fn cancel(&mut self, slot: u16) {
        if let Some(e) = self.slots.get_mut(usize::from(slot)) {
            e.1 = Slot::Free;
            self.free.push(slot);
        }
    }

    /// Records the outcome that came up for `slot`.
    pub(crate) fn complete(&mut self, slot: u16, outcome: Result<Msg, CallStatus>) {
        let Some(e) = self.slots.get_mut(usize::from(slot)) else {
            return;
        };
        match std::mem::replace(&mut e.1, Slot::Free) {
            Slot::Pending { peer, id } => e.1 = Slot::Done { peer, id, outcome },
            Slot::Abandoned => self.free.push(slot),
            // An outcome for a free or finished slot: a duplicate from
            // below; keep what was there.
            other => e.1 = other,
        }
    }

    /// The outcome of call (`slot`, `generation`), freeing the slot when
    /// there is one.
    pub(crate) fn take(&mut self, slot: u16, generation: u32) -> Taken {
        let Some(e) = self.slots.get_mut(usize::from(slot)) else {
            return Taken::Unknown;
        };
        if e.0 != generation {
            return Taken::Unknown;
        }
        match std::mem::replace(&mut e.1, Slot::Free) {
            Slot::Done { peer, id, outcome } => {
                self.free.push(slot);
                Taken::Done { peer, id, outcome }
            }
            p @ Slot::Pending { .. } => {
                e.1 = p;
                Taken::Pending
            }
            other => {
                e.1 = other;
                Taken::Unknown
            }
        }
    }

    /// Whether call (`slot`, `generation`) has its outcome (or is no call
    /// of this table: reading it then fails at once).
    pub(crate) fn is_done(&self, slot: u16, generation: u32) -> bool {
        match self.slots.get(usize::from(slot)) {
            Some((g, Slot::Pending { .. })) => *g != generation,
            _ => true,
        }
    }

    /// Gives up on call (`slot`, `generation`).
    pub(crate) fn abandon(&mut self, slot: u16, generation: u32) {
        if let Some(e) = self.slots.get_mut(usize::from(slot)) {
            if e.0 == generation {
                match e.1 {
                    Slot::Pending { .. } => e.1 = Slot::Abandoned,
                    Slot::Done { .. } => {
                        e.1 = Slot::Free;
                        self.free.push(slot);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Calls in flight or waiting to be read.
    pub(crate) fn in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> Peer {
        Peer::Ipv4("10.0.0.2".parse().unwrap())
    }

    #[test]
    fn a_stale_handle_never_reads_a_later_call() {
        let mut t = CallTable::new(1);
        let (s, g) = t.open(peer(), 1).unwrap();
        assert!(t.open(peer(), 1).is_none(), "bounded at one call");
        t.complete(s, Err(CallStatus::TimedOut));
        assert!(matches!(
            t.take(s, g),
            Taken::Done {
                outcome: Err(CallStatus::TimedOut),
                ..
            }
        ));
        let (s2, g2) = t.open(peer(), 2).unwrap();
        assert_eq!(s2, s);
        assert_ne!(g2, g);
        assert!(matches!(t.take(s, g), Taken::Unknown));
        assert!(matches!(t.take(s2, g2), Taken::Pending));
    }

    #[test]
    fn an_abandoned_call_frees_its_slot_when_its_outcome_comes() {
        let mut t = CallTable::new(1);
        let (s, g) = t.open(peer(), 1).unwrap();
        t.abandon(s, g);
        assert!(t.open(peer(), 1).is_none());
        t.complete(s, Err(CallStatus::TimedOut));
        assert_eq!(t.in_use(), 0);
        assert!(t.open(peer(), 1).is_some());
    }
}
