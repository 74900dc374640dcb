//! The client's table of calls in flight: a slot per call, named by the
//! 16-bit tag that travels with the call down the client path and comes
//! back with its outcome, and a generation so that a stale handle never
//! reads a later call's reply.

use pathstack_core::slab::{Slab, SlabKey};
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

/// A call of the table.
enum Call {
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

/// The calls of one host, bounded by the `RPC` module's `max_calls`
/// (at most 2^16: a call's slot is its 16-bit tag).
pub(crate) struct CallTable {
    calls: Slab<Call>,
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

fn key(slot: u16, generation: u32) -> SlabKey {
    SlabKey {
        slot: u32::from(slot),
        generation,
    }
}

impl CallTable {
    pub(crate) fn new(max: usize) -> Self {
        CallTable {
            calls: Slab::new(max.clamp(1, usize::from(u16::MAX) + 1)),
        }
    }

    pub(crate) fn max(&self) -> usize {
        self.calls.capacity()
    }

    /// A slot for a new call to `peer`, procedure `id`.
    pub(crate) fn open(&mut self, peer: Peer, id: u32) -> Option<(u16, u32)> {
        let k = self.calls.insert(Call::Pending { peer, id }).ok()?;
        // The capacity keeps every slot below 2^16.
        Some((k.slot as u16, k.generation))
    }

    /// Gives a slot back when its request never left.
    pub(crate) fn cancel(&mut self, slot: u16) {
        if let Some(k) = self.calls.key_at(u32::from(slot)) {
            self.calls.remove(k);
        }
    }

    /// Records the outcome that came up for `slot`.
    pub(crate) fn complete(&mut self, slot: u16, outcome: Result<Msg, CallStatus>) {
        let Some(k) = self.calls.key_at(u32::from(slot)) else {
            return;
        };
        match self.calls.get_mut(k) {
            Some(call @ Call::Pending { .. }) => {
                if let Call::Pending { peer, id } = *call {
                    *call = Call::Done { peer, id, outcome };
                }
            }
            Some(Call::Abandoned) => {
                self.calls.remove(k);
            }
            // An outcome for a free or finished slot: a duplicate from
            // below; keep what was there.
            _ => {}
        }
    }

    /// The outcome of call (`slot`, `generation`), freeing the slot when
    /// there is one.
    pub(crate) fn take(&mut self, slot: u16, generation: u32) -> Taken {
        let k = key(slot, generation);
        match self.calls.get(k) {
            Some(Call::Done { .. }) => match self.calls.remove(k) {
                Some(Call::Done { peer, id, outcome }) => Taken::Done { peer, id, outcome },
                _ => Taken::Unknown,
            },
            Some(Call::Pending { .. }) => Taken::Pending,
            _ => Taken::Unknown,
        }
    }

    /// Whether call (`slot`, `generation`) has its outcome (or is no call
    /// of this table: reading it then fails at once).
    pub(crate) fn is_done(&self, slot: u16, generation: u32) -> bool {
        !matches!(
            self.calls.get(key(slot, generation)),
            Some(Call::Pending { .. })
        )
    }

    /// Gives up on call (`slot`, `generation`).
    pub(crate) fn abandon(&mut self, slot: u16, generation: u32) {
        let k = key(slot, generation);
        match self.calls.get_mut(k) {
            Some(call @ Call::Pending { .. }) => *call = Call::Abandoned,
            Some(Call::Done { .. }) => {
                self.calls.remove(k);
            }
            _ => {}
        }
    }

    /// Calls in flight or waiting to be read.
    pub(crate) fn in_use(&self) -> usize {
        self.calls.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> Peer {
        Peer::ipv4("10.0.0.2".parse().unwrap())
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
