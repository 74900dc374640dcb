//! The flow probe: a receiving module's one gather of flows, compiled.
//!
//! On a host every established path arriving at a module usually lies in
//! the same windows of a message — a host's TCP connections and connected
//! UDP sockets all key on the EtherType, the protocol, the addresses and
//! the ports at the same offsets — so the module's flows are in one
//! gather. The general lookup ([`FlowTable::lookup`](crate::flow)) still
//! goes over the table's list of gathers, chooses the key's window count
//! and the stored word count at run time, screens, and finds the entry's
//! chain to check its guards and header length: about 236 instructions a
//! frame in the ping-pong (issue 26), mostly moving the gather's fields
//! between memory and registers.
//!
//! A [`FlowProbe`] is kept per receiving module (directly indexed, like the
//! partial classifiers) and says what a lookup there must do: nothing
//! (`Empty`: no flows, a miss), the general lookup (`General`: flows in
//! several gathers, a shadowed gather, keys stored in more than one word,
//! more guards than fit), or its compiled gather ([`Compiled`]): one
//! length check for every load, a fixed sequence of loads of the windows,
//! each XORed with the bits every flow has alike and ANDed with them
//! (already masked to the window) and its varying bytes rotated into the
//! one stored word, one hash (none when no byte varies: the home is
//! computed when the probe is), one probe of the slots, one compare, and
//! the guards and header length of the gather's main chain held inline.
//! It answers exactly as the general lookup does (the same key, hash,
//! slots and acceptance; a message too short for every load takes the
//! general lookup, which reads past its end as zeros), and it is rebuilt
//! whenever the module's gathers change: a flow filed or removed, a fold
//! widened, the table cleared.

use crate::flow_slots::{Entry, FlowSlots};
use crate::hash::EdgeHasher;
use crate::header_len::HeaderLen;
use crate::limits::WORDS;

/// Most guard windows a compiled chain holds inline: IPv4's three guard
/// bytes are one window, BLAST's seven two (`flow.rs`, `FlowChain::guards`).
pub(crate) const MAX_PROBE_GUARDS: usize = 4;

/// What a lookup at one receiving module does: its kind and, for
/// [`ProbeKind::One`], the compiled gather. A struct rather than an enum
/// holding the gather so that the kind is one byte compared, not a niche
/// decoded, on every frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FlowProbe {
    pub(crate) kind: ProbeKind,
    pub(crate) compiled: Compiled,
    /// The gather probed after the first's miss when the module has
    /// exactly two (a listener's or a bound socket's beside the
    /// connections'): `One` when compiled, else `General`.
    pub(crate) second_kind: ProbeKind,
    pub(crate) second: Compiled,
    /// Whether the compiled first gather's main chain is the module's
    /// only active chain with flows: then whether the active walk fails
    /// for a message ([`FlowTable::active_walk_fails`](crate::flow)) is
    /// that chain's check alone, its guards held here inline — what a
    /// listener's or a bound socket's shadowed hit asks on every message
    /// (a scan of the table's chains cost about 100 instructions a
    /// message, issue 26's passive lookup).
    pub(crate) first_alone: bool,
}

/// See [`FlowProbe`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ProbeKind {
    /// No flows at the module: every message misses.
    Empty,
    /// The general lookup over the table's gathers.
    #[default]
    General,
    /// The module's first gather with flows, compiled.
    One,
}

impl FlowProbe {
    pub(crate) fn of(kind: ProbeKind) -> Self {
        FlowProbe {
            kind,
            compiled: Compiled::default(),
            second_kind: ProbeKind::General,
            second: Compiled::default(),
            first_alone: false,
        }
    }
}

/// The outcome of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probed {
    /// The path of the flow found.
    Hit(u32),
    /// No flow takes the message: the tree walks.
    Miss,
    /// The probe cannot say: the general lookup must run.
    General,
    /// The module's first gather (this one) has no flow for the message;
    /// its other gathers must be probed, then the tree walked.
    Rest(u32),
}

/// What a compiled gather finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The path of the flow.
    Path(u32),
    /// No flow of the gather.
    Missed,
    /// The message is too short for every load: the general lookup must
    /// run.
    Short,
}

/// One window of a compiled gather.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProbeWindow {
    /// Offset in the message (16 bits: `at + 8` cannot overflow, so the
    /// load's check is one compare).
    pub(crate) at: u16,
    /// The bits every flow has alike, within the window's mask.
    pub(crate) common_sel: u64,
    /// Their value.
    pub(crate) common: u64,
    /// The varying bits (within the mask) and their left rotation into
    /// the stored word.
    pub(crate) vary: u64,
    pub(crate) rot: u32,
}

/// How long the last level's header is (the chain's `last_len`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum LastLen {
    /// Fixed: every message the guards admit has it.
    #[default]
    Fixed,
    /// A 4-bit word count in the byte at `at` (from the message's start),
    /// shifted up by `shift`, at least `min` bytes, the header starting at
    /// `start`.
    Words {
        at: usize,
        shift: u8,
        min: usize,
        start: usize,
    },
}

impl LastLen {
    pub(crate) fn new(start: usize, header: HeaderLen) -> Self {
        match header {
            HeaderLen::Fixed(_) => LastLen::Fixed,
            HeaderLen::Words { at, shift, min } => LastLen::Words {
                at: start + usize::from(at),
                shift,
                min: usize::from(min),
                start,
            },
        }
    }
}

/// A receiving module's one gather, compiled (module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Compiled {
    /// The gather (its slots) in the table's list.
    pub(crate) gather: u32,
    /// Whether the module has flows in other gathers, probed after this
    /// one's miss.
    pub(crate) rest: bool,
    /// Whether its flows are shadowed passive paths: a hit stands only
    /// when the active walk finds nothing (`FlowTable::active_walk_fails`).
    pub(crate) shadowed: bool,
    /// For the module's second gather: whether its main chain is its
    /// only chain with flows and has the guards and last header length
    /// of the first gather's main chain (a listener's beside its
    /// connections': the same IPv4 and TCP headers), so that any hit,
    /// which its guards admitted, is one the first's chain admits too.
    pub(crate) guards_of_first: bool,
    /// The chain whose guards are held here; entries of the gather's other
    /// chains are checked by their own.
    pub(crate) chain: u32,
    /// Bytes every load and guard reads lie within: a shorter message
    /// takes the general lookup.
    pub(crate) reach: usize,
    pub(crate) windows: [ProbeWindow; WORDS],
    pub(crate) window_count: usize,
    /// Stored key words: 0 or 1.
    pub(crate) stored: usize,
    /// The hash of the key when no byte varies (`stored` 0).
    pub(crate) home_hash: u64,
    /// The chain's guard windows: `(offset, mask, value)`.
    pub(crate) guards: [(u16, u64, u64); MAX_PROBE_GUARDS],
    pub(crate) guard_count: usize,
    pub(crate) last: LastLen,
}

/// Eight bytes of `fixed` from `at`, little-endian; `at + 8` is within
/// `fixed` by construction (`reach`), so the zero is never taken.
#[inline(always)]
fn word(fixed: &[u8], at: u16) -> u64 {
    let at = usize::from(at);
    fixed
        .get(at..at + 8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes)
}

impl Compiled {
    /// The flow of `msg` in `slots` (the gather's), an entry of another
    /// chain accepted by `other`: what the general lookup's probe of this
    /// gather finds.
    #[inline(always)]
    pub(crate) fn find(
        &self,
        msg: &[u8],
        hasher: &EdgeHasher,
        slots: &FlowSlots,
        other: impl Fn(Entry) -> bool,
    ) -> Found {
        let Some(fixed) = msg.get(..self.reach) else {
            return Found::Short;
        };
        let (key, diff) = self.folded(fixed);
        if diff != 0 {
            return Found::Missed;
        }
        // The compiled chain's layouts checked once, before the slots:
        // inline, where a check per compared entry was a call.
        let admitted = match self.guard_count {
            0 => self.admits::<0>(fixed, msg),
            1 => self.admits::<1>(fixed, msg),
            2 => self.admits::<2>(fixed, msg),
            3 => self.admits::<3>(fixed, msg),
            _ => self.admits::<MAX_PROBE_GUARDS>(fixed, msg),
        };
        let accept = |e: Entry| {
            if e.chain == self.chain {
                admitted
            } else {
                other(e)
            }
        };
        let hash = self.key_hash(key, hasher);
        let found = if self.stored == 0 {
            slots.find_k::<0>(hash, &[], accept)
        } else {
            slots.find_k(hash, &[key], accept)
        };
        match found {
            Some(e) => Found::Path(e.path),
            None => Found::Missed,
        }
    }

    /// The hash [`find`](Self::find) probes the slots with for `msg`, or
    /// `None` where it probes none (too short, or bits no flow has).
    #[inline(always)]
    pub(crate) fn hash(&self, msg: &[u8], hasher: &EdgeHasher) -> Option<u64> {
        let fixed = msg.get(..self.reach)?;
        let (key, diff) = self.folded(fixed);
        if diff != 0 {
            return None;
        }
        Some(self.key_hash(key, hasher))
    }

    /// The stored word and the difference word of `fixed`
    /// ([`fold`](Self::fold)), the window count made a constant so that
    /// the loads are straight-line.
    #[inline(always)]
    fn folded(&self, fixed: &[u8]) -> (u64, u64) {
        match self.window_count {
            1 => self.fold::<1>(fixed),
            2 => self.fold::<2>(fixed),
            3 => self.fold::<3>(fixed),
            4 => self.fold::<4>(fixed),
            5 => self.fold::<5>(fixed),
            _ => self.fold::<WORDS>(fixed),
        }
    }

    /// The slot hash of a stored word `key` (the home hash when no word
    /// is stored).
    #[inline(always)]
    fn key_hash(&self, key: u64, hasher: &EdgeHasher) -> u64 {
        if self.stored == 0 {
            return self.home_hash;
        }
        let mut words = [0u64; WORDS];
        words[0] = key;
        hasher.flow(&words, 1)
    }

    /// Whether the main chain's layouts apply to `msg` (`FlowChain::
    /// admits`), or `None` when it is too short for every load.
    #[inline(always)]
    pub(crate) fn admits_msg(&self, msg: &[u8]) -> Option<bool> {
        let fixed = msg.get(..self.reach)?;
        Some(match self.guard_count {
            0 => self.admits::<0>(fixed, msg),
            1 => self.admits::<1>(fixed, msg),
            2 => self.admits::<2>(fixed, msg),
            3 => self.admits::<3>(fixed, msg),
            _ => self.admits::<MAX_PROBE_GUARDS>(fixed, msg),
        })
    }

    /// The stored word of `fixed`'s key over `N` windows, and its
    /// difference from the common bits (non-zero: no flow has it).
    #[inline(always)]
    fn fold<const N: usize>(&self, fixed: &[u8]) -> (u64, u64) {
        let Some(windows) = self.windows.first_chunk::<N>() else {
            return (0, u64::MAX);
        };
        let (mut key, mut diff) = (0u64, 0u64);
        for w in windows {
            let x = word(fixed, w.at);
            diff |= (x ^ w.common) & w.common_sel;
            key |= (x & w.vary).rotate_left(w.rot);
        }
        (key, diff)
    }

    /// Whether the chain's layouts apply: its `G` guards hold and its last
    /// header is all there (`FlowChain::admits`).
    #[inline(always)]
    fn admits<const G: usize>(&self, fixed: &[u8], msg: &[u8]) -> bool {
        let Some(guards) = self.guards.first_chunk::<G>() else {
            return false;
        };
        let mut held = true;
        for &(at, mask, value) in guards {
            held &= word(fixed, at) & mask == value;
        }
        held && match self.last {
            LastLen::Fixed => true,
            LastLen::Words {
                at,
                shift,
                min,
                start,
            } => {
                let n = fixed
                    .get(at)
                    .map_or(0, |b| usize::from((b >> shift) & 0xf) * 4);
                n >= min && start + n <= msg.len()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{FlowLayout, FlowMode, FlowTable};
    use crate::{Key, ModuleId};
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A header of a variable length (a word count in byte 4, at least 8
    /// bytes), a guard byte 0x45 at 5, the active key in bytes 0–3 and the
    /// passive one in 0–1: guards, a last length and three gathers (active,
    /// passive, shadowed) at one module.
    const ACTIVE: FlowLayout = FlowLayout::new(HeaderLen::Words {
        at: 4,
        shift: 4,
        min: 8,
    })
    .guard(5, 0xff, 0x45)
    .key(0, 2)
    .key(2, 2);
    const PASSIVE: FlowLayout = FlowLayout::new(HeaderLen::Words {
        at: 4,
        shift: 4,
        min: 8,
    })
    .guard(5, 0xff, 0x45)
    .key(0, 2);

    const M: ModuleId = ModuleId(3);

    /// The classifier's use of the probes (`Classifier::classify`).
    fn probed(t: &FlowTable, msg: &[u8], h: &EdgeHasher) -> Option<u32> {
        let general = |skip| t.lookup_after(M, msg, h, skip).0.map(|(p, _)| p);
        match t.probe(M, msg, h) {
            Probed::Hit(p) => Some(p),
            Probed::Miss => None,
            Probed::General => general(u32::MAX),
            Probed::Rest(first) => match t.probe_second(M, msg, h) {
                Probed::Hit(p) => Some(p),
                Probed::Miss => None,
                Probed::General | Probed::Rest(_) => general(first),
            },
        }
    }

    fn mode_of(m: u8) -> FlowMode {
        match m % 3 {
            0 => FlowMode::Active,
            1 => FlowMode::Passive,
            _ => FlowMode::Shadowed,
        }
    }

    /// The probes do answer (the property below would also hold were
    /// every module left to the general lookup): an active flow is the
    /// first gather's hit, a passive one the second's after the first's
    /// miss, a third gather sends the rest to the general lookup, and the
    /// last flow's removal empties the module.
    #[test]
    fn the_probes_answer_themselves() {
        let h = EdgeHasher::default();
        let mut t = FlowTable::default();
        let active = vec![(M, Key::from_array([1, 2, 3, 4]))];
        let passive = vec![(M, Key::from_array([1, 2]))];
        assert!(t.insert(7, &active, FlowMode::Active, |_| Some(ACTIVE), &h));
        let mut msg = [1, 2, 3, 4, 0x20, 0x45, 0, 0];
        assert_eq!(t.probe(M, &msg, &h), Probed::Hit(7));
        msg[5] = 0x44;
        assert_eq!(t.probe(M, &msg, &h), Probed::Miss, "a failed guard");
        assert_eq!(t.probe(M, &msg[..7], &h), Probed::General, "too short");
        assert!(t.insert(8, &passive, FlowMode::Passive, |_| Some(PASSIVE), &h));
        let other = [1, 2, 9, 9, 0x20, 0x45, 0, 0];
        let Probed::Rest(first) = t.probe(M, &other, &h) else {
            panic!("the active gather first, then the rest");
        };
        assert_eq!(t.probe_second(M, &other, &h), Probed::Hit(8));
        assert_eq!(probed(&t, &other, &h), Some(8));
        assert!(t.insert(9, &passive, FlowMode::Shadowed, |_| Some(PASSIVE), &h));
        assert_eq!(
            t.probe_second(M, &other, &h),
            Probed::General,
            "three gathers"
        );
        assert_eq!(
            t.lookup_after(M, &other, &h, first).0.map(|(p, _)| p),
            Some(8)
        );
        for (p, levels, mode) in [
            (7, &active, FlowMode::Active),
            (8, &passive, FlowMode::Passive),
            (9, &passive, FlowMode::Shadowed),
        ] {
            assert!(t.remove(p, levels, mode, &h));
        }
        assert_eq!(t.probe(M, &other, &h), Probed::Miss, "no flows left");
    }

    proptest! {
        /// Flows filed, removed and filed again in the three modes, and
        /// messages near them (short ones, failed guards, short headers):
        /// the compiled probes answer as the general lookup does.
        #[test]
        fn probes_answer_as_the_general_lookup(
            ops in proptest::collection::vec((0u8..40, 0u8..3, proptest::array::uniform4(0u8..3)), 1..60),
            msgs in proptest::collection::vec(
                (proptest::array::uniform4(0u8..3), prop_oneof![Just(0x20u8), Just(0x30), Just(0x10), Just(0xf0)],
                 prop_oneof![Just(0x45u8), Just(0x44)], 0usize..24),
                1..40,
            ),
        ) {
            let h = EdgeHasher::default();
            let mut t = FlowTable::default();
            let mut filed: HashMap<u32, (FlowMode, Vec<(ModuleId, Key)>)> = HashMap::new();
            for (path, m, k) in ops {
                let path = u32::from(path);
                let mode = mode_of(m);
                let key = if mode.passive() { Key::new(&k[..2]) } else { Key::new(&k) };
                let Some(key) = key else { continue };
                let levels = vec![(M, key)];
                if let Some((mode, levels)) = filed.remove(&path) {
                    prop_assert!(t.remove(path, &levels, mode, &h));
                    continue;
                }
                // One path per key and mode, as the tree's ambiguity check
                // keeps it.
                if filed.values().any(|(fm, l)| *fm == mode && *l == levels) {
                    continue;
                }
                let layout = |_| Some(if mode.passive() { PASSIVE } else { ACTIVE });
                if t.insert(path, &levels, mode, layout, &h) {
                    filed.insert(path, (mode, levels));
                }
                for &(k, len, guard, n) in &msgs {
                    let mut msg = vec![k[0], k[1], k[2], k[3], len, guard, 0, 0];
                    msg.resize(24, 0xee);
                    msg.truncate(n);
                    let want = t.lookup(M, &msg, &h).0.map(|(p, _)| p);
                    prop_assert_eq!(probed(&t, &msg, &h), want, "msg {:?}", msg);
                }
            }
        }
    }
}
