//! A bounded generational slab: the one slot table under the stack's
//! path table, the facade's UDP and TCP socket tables, the RPC call
//! table and the RPC crate's handle tables.
//!
//! Each of those hands out a name for an entry that outlives the entry
//! (a [`PathId`](crate::PathId) held by a timer or a classifier entry, a
//! socket handle an application keeps after `close`, a call's 16-bit
//! tag coming back from below, a channel handle cached on a path). A
//! [`SlabKey`] is that name: the entry's slot and the slot's generation,
//! which changes every time the slot is filled again, so a stale key
//! misses instead of reaching a newer entry in the same slot (Scout's
//! path ids are unique over the life of a stack, thesis §3.3).
//!
//! Why not the `slotmap` crate: the tables need two things it does not
//! do. They are bounded — a slab refuses past its capacity with
//! [`SlabFull`], which each table maps to its own typed error
//! (`PathError::TableFull`, no free call slot) — where a `SlotMap` grows
//! without limit; and the keys live on as plain `(slot, generation)`
//! pairs in public handles and wire tags (a call's slot is its 16-bit
//! tag), where a `slotmap` key is opaque and reaches its parts only
//! through a 64-bit packing that forces odd versions. What is left is
//! fifty lines; the lookup is one bounds check and one compare, as the
//! hand-written tables had it (the path table is looked up once per
//! trip).

/// The name of a slab entry: its slot and the slot's generation when
/// the entry was put there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlabKey {
    /// The slot (stable while the entry lives; reused after).
    pub slot: u32,
    /// The slot's generation for this entry.
    pub generation: u32,
}

/// A slab refused an entry: it holds its capacity already.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the table is full ({capacity} entries)")]
pub struct SlabFull {
    /// The slab's capacity.
    pub capacity: usize,
}

#[derive(Debug)]
struct Slot<T> {
    /// Bumped each time the slot is filled.
    generation: u32,
    value: Option<T>,
}

/// Up to `capacity` values, each reached by the [`SlabKey`] its insertion
/// returned. Slots are reused through a free list, so once the slab has
/// held its most entries at once, inserting and removing allocate
/// nothing.
#[derive(Debug)]
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    /// Empty slots, reused first (most recently freed first).
    free: Vec<u32>,
    capacity: usize,
}

impl<T> Slab<T> {
    /// An empty slab that holds at most `capacity` values (at most
    /// `u32::MAX`: a `u32` names the slots).
    pub fn new(capacity: usize) -> Self {
        Slab {
            slots: Vec::new(),
            free: Vec::new(),
            capacity: capacity.min(u32::MAX as usize),
        }
    }

    /// The most values it holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Puts `value` in a free slot; its key, or [`SlabFull`] (and the
    /// value dropped) when the slab holds its capacity.
    pub fn insert(&mut self, value: T) -> Result<SlabKey, SlabFull> {
        let slot = match self.free.pop() {
            Some(i) => i,
            None if self.slots.len() < self.capacity => {
                self.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                (self.slots.len() - 1) as u32
            }
            None => {
                return Err(SlabFull {
                    capacity: self.capacity,
                })
            }
        };
        let s = &mut self.slots[slot as usize];
        // Bumped on filling, so a slot's first key has generation 1 and a
        // zero generation (a table of generations filled with zeros, as
        // the demux keeps) names no entry until it wraps.
        s.generation = s.generation.wrapping_add(1);
        s.value = Some(value);
        Ok(SlabKey {
            slot,
            generation: s.generation,
        })
    }

    /// The value `key` names, if it is still there.
    #[inline]
    pub fn get(&self, key: SlabKey) -> Option<&T> {
        match self.slots.get(key.slot as usize) {
            Some(s) if s.generation == key.generation => s.value.as_ref(),
            _ => None,
        }
    }

    /// The value `key` names, writable.
    #[inline]
    pub fn get_mut(&mut self, key: SlabKey) -> Option<&mut T> {
        match self.slots.get_mut(key.slot as usize) {
            Some(s) if s.generation == key.generation => s.value.as_mut(),
            _ => None,
        }
    }

    /// Takes the value `key` names out; its slot is free again and `key`
    /// (every copy) misses from now on.
    pub fn remove(&mut self, key: SlabKey) -> Option<T> {
        let s = self.slots.get_mut(key.slot as usize)?;
        if s.generation != key.generation {
            return None;
        }
        let value = s.value.take()?;
        self.free.push(key.slot);
        Some(value)
    }

    /// The key of the value in `slot`, whatever its generation: for a
    /// name that carries only the slot (a call's tag coming back).
    #[inline]
    pub fn key_at(&self, slot: u32) -> Option<SlabKey> {
        let s = self.slots.get(slot as usize)?;
        s.value.as_ref().map(|_| SlabKey {
            slot,
            generation: s.generation,
        })
    }

    /// The values with their keys, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (SlabKey, &T)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.value.as_ref().map(|v| {
                (
                    SlabKey {
                        slot: i as u32,
                        generation: s.generation,
                    },
                    v,
                )
            })
        })
    }

    /// The values, writable, with their keys, in slot order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (SlabKey, &mut T)> + '_ {
        self.slots.iter_mut().enumerate().filter_map(|(i, s)| {
            let generation = s.generation;
            s.value.as_mut().map(|v| {
                (
                    SlabKey {
                        slot: i as u32,
                        generation,
                    },
                    v,
                )
            })
        })
    }

    /// Keeps the values `keep` says to keep; the others are removed (their
    /// keys miss from now on).
    pub fn retain(&mut self, mut keep: impl FnMut(SlabKey, &mut T) -> bool) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            let key = SlabKey {
                slot: i as u32,
                generation: s.generation,
            };
            if s.value.as_mut().is_some_and(|v| !keep(key, v)) {
                s.value = None;
                self.free.push(i as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_stale_key_misses_and_the_slab_is_bounded() {
        let mut s = Slab::new(2);
        let a = s.insert("a").unwrap();
        let b = s.insert("b").unwrap();
        assert_eq!(s.insert("c"), Err(SlabFull { capacity: 2 }));
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None);
        let c = s.insert("c").unwrap();
        assert_eq!(c.slot, a.slot, "the freed slot is reused");
        assert_ne!(c.generation, a.generation);
        assert_eq!(s.get(a), None);
        assert_eq!(s.get(c), Some(&"c"));
        assert_eq!(s.key_at(c.slot), Some(c));
        assert_eq!(
            s.iter().map(|(k, v)| (k, *v)).collect::<Vec<_>>(),
            [(c, "c"), (b, "b")]
        );
        s.retain(|k, _| k == b);
        assert_eq!(s.get(c), None);
        assert_eq!((s.len(), s.key_at(c.slot)), (1, None));
        assert_ne!(a.generation, 0, "no live key has generation 0");
    }

    proptest! {
        /// Against a model: every key ever handed out reaches its value
        /// while it is held and nothing after; the slab never holds more
        /// than its capacity, nor more slots.
        #[test]
        fn keys_reach_exactly_their_own_values(
            ops in proptest::collection::vec((any::<bool>(), 0usize..16), 0..200),
            cap in 1usize..8,
        ) {
            let mut s = Slab::new(cap);
            let mut keys: Vec<(SlabKey, usize, bool)> = Vec::new();
            for (n, (insert, pick)) in ops.into_iter().enumerate() {
                if insert {
                    match s.insert(n) {
                        Ok(k) => keys.push((k, n, true)),
                        Err(e) => prop_assert_eq!((e.capacity, s.len()), (cap, cap)),
                    }
                } else if !keys.is_empty() {
                    let i = pick % keys.len();
                    let (k, v, live) = keys[i];
                    prop_assert_eq!(s.remove(k), live.then_some(v));
                    keys[i].2 = false;
                }
                for &(k, v, live) in &keys {
                    prop_assert_eq!(s.get(k).copied(), live.then_some(v));
                }
                prop_assert!(s.len() <= cap && s.slots.len() <= cap);
            }
        }
    }
}
