//! Tables whose entries a path may hold a typed handle to: the state the
//! thesis' PIN version cached on the path (CHAN's channel, VCHAN's pool;
//! Mosberger's thesis §4.2.2), held here as an index that is checked
//! instead of a key that is hashed.
//!
//! A [`HandleTable`] keeps its entries in the stack's generational
//! [`Slab`] beside the usual index by key. [`HandleTable::handle`]
//! resolves a key once; afterwards [`HandleTable::find_mut`] given that
//! [`Handle`] reaches the entry with one bounds check and two comparisons
//! (the slot's generation and its key) and no hashing. A handle never
//! dangles: refilling a slot bumps its generation, so a handle to
//! a channel torn down (closed, disabled by a peer's reboot and
//! forgotten, a retired pool) no longer matches, and the lookup falls back
//! to the key — which finds the new entry, if there is one, or nothing.
//! The key is compared too, so even a generation that wrapped cannot make
//! a handle name another key's entry.
//!
//! The slab grows only when no slot is free, so it holds at most as many
//! slots as the table ever held entries at once: the table's own bound
//! (CHAN's channel limits, VCHAN's `max_peers`) bounds it too.

use crate::hash_map::FastMap;
use pathstack_core::slab::{Slab, SlabKey};
use std::hash::Hash;
use std::marker::PhantomData;

/// A typed reference to an entry of a [`HandleTable`] of `V`s: valid
/// while that entry stays in its table.
pub(crate) struct Handle<V> {
    index: u32,
    generation: u32,
    _of: PhantomData<fn() -> V>,
}

// Derives would ask the same of `V`; a handle is two numbers.
impl<V> Clone for Handle<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Handle<V> {}
impl<V> PartialEq for Handle<V> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index && self.generation == other.generation
    }
}
impl<V> Eq for Handle<V> {}
impl<V> Hash for Handle<V> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.index.hash(state);
        self.generation.hash(state);
    }
}
impl<V> std::fmt::Debug for Handle<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Handle({}@{})", self.index, self.generation)
    }
}

impl<V> Handle<V> {
    fn key(self) -> SlabKey {
        SlabKey {
            slot: self.index,
            generation: self.generation,
        }
    }

    fn of(key: SlabKey) -> Self {
        Handle {
            index: key.slot,
            generation: key.generation,
            _of: PhantomData,
        }
    }
}

/// A map from `K` to `V` whose entries can also be reached by [`Handle`].
pub(crate) struct HandleTable<K, V> {
    /// The entries, each with its key (a handle's entry must still be
    /// its key's). Unbounded here: the table's own bound bounds it.
    slab: Slab<(K, V)>,
    index: FastMap<K, u32>,
}

impl<K, V> Default for HandleTable<K, V> {
    fn default() -> Self {
        HandleTable {
            slab: Slab::new(usize::MAX),
            index: FastMap::default(),
        }
    }
}

impl<K: Copy + Eq + Hash + std::fmt::Debug, V: std::fmt::Debug> std::fmt::Debug
    for HandleTable<K, V>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Copy + Eq + Hash, V> HandleTable<K, V> {
    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether there is no entry.
    pub(crate) fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The handle of `key`'s entry: the one lookup by key a holder makes.
    /// Out of line: the held case of [`HandleTable::find_mut`] is the
    /// one to inline.
    #[inline(never)]
    pub(crate) fn handle(&self, key: &K) -> Option<Handle<V>> {
        let &index = self.index.get(key)?;
        self.slab.key_at(index).map(Handle::of)
    }

    /// Inserts `value` under `key`, replacing an entry of the same key
    /// (whose handles then stop matching); returns the new entry's handle.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Handle<V> {
        self.remove(&key);
        // Never full: the slab's capacity is the `u32` of slots.
        let Ok(k) = self.slab.insert((key, value)) else {
            unreachable!("a table of fewer than 2^32 entries")
        };
        self.index.insert(key, k.slot);
        Handle::of(k)
    }

    /// Removes `key`'s entry; every handle to it stops matching.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let index = self.index.remove(key)?;
        let k = self.slab.key_at(index)?;
        self.slab.remove(k).map(|(_, v)| v)
    }

    /// `key`'s entry.
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        let h = self.handle(key)?;
        self.slab.get(h.key()).map(|(_, v)| v)
    }

    /// `key`'s entry, writable.
    pub(crate) fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let h = self.handle(key)?;
        self.slab.get_mut(h.key()).map(|(_, v)| v)
    }

    /// The entry `hint` names if it is still `key`'s (no hashing), else
    /// `key`'s entry found by key; with the handle that reaches it.
    #[inline(always)]
    pub(crate) fn find_mut(
        &mut self,
        hint: Option<Handle<V>>,
        key: &K,
    ) -> Option<(Handle<V>, &mut V)> {
        let h = match hint {
            Some(h) if self.holds(h, key) => h,
            _ => self.handle(key)?,
        };
        self.slab.get_mut(h.key()).map(|(_, v)| (h, v))
    }

    /// The entry `h` names if it is still there; `None` otherwise,
    /// without a lookup by key (a fast form's established case). `h`
    /// must have been resolved for `key` — [`HandleTable::insert`],
    /// [`HandleTable::handle`] or [`HandleTable::find_mut`] gave it for
    /// `key`, as a [`HandleCache`] holds it beside its key: an entry's
    /// key never changes and its slot's generation moves on when it goes,
    /// so a handle whose generation matches names `key`'s entry, and the
    /// key is not compared again (the cache compared it; two comparisons
    /// of a channel's key per message were a fifth of CHAN's fast work).
    #[inline(always)]
    pub(crate) fn held_mut(&mut self, h: Handle<V>, key: &K) -> Option<&mut V> {
        let (k, v) = self.slab.get_mut(h.key())?;
        debug_assert!(k == key, "a handle held for another key");
        let _ = (k, key);
        Some(v)
    }

    /// Whether `h` names `key`'s current entry.
    #[inline(always)]
    fn holds(&self, h: Handle<V>, key: &K) -> bool {
        self.slab.get(h.key()).is_some_and(|(k, _)| k == key)
    }

    /// The entries.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> + '_ {
        self.slab.iter().map(|(_, (k, v))| (k, v))
    }

    /// The entries, values writable.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (&K, &mut V)> + '_ {
        self.slab.iter_mut().map(|(_, (k, v))| (&*k, v))
    }

    /// The values.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// Keeps the entries `keep` says to keep; the others' handles stop
    /// matching.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&K, &mut V) -> bool) {
        let index = &mut self.index;
        self.slab.retain(|_, (k, v)| {
            let kept = keep(k, v);
            if !kept {
                index.remove(k);
            }
            kept
        });
    }
}

/// The handles a stage holds, resolved when its path first used them: a
/// small direct-mapped array, `N` entries, each the key it was resolved
/// for and its handle. The stage picks the entry (`at`, e.g. a channel
/// number modulo `N`); a miss, or a handle whose entry has gone, costs
/// the one lookup by key that resolves it again. Fixed size: holding
/// handles never allocates and is bounded whatever the peers do.
pub(crate) struct HandleCache<K, V, const N: usize> {
    entries: [Option<(K, Handle<V>)>; N],
}

impl<K: Copy + Eq, V, const N: usize> Default for HandleCache<K, V, N> {
    fn default() -> Self {
        HandleCache { entries: [None; N] }
    }
}

impl<K: Copy + Eq, V, const N: usize> HandleCache<K, V, N> {
    /// The handle held for `key` in entry `at % N`, if any.
    #[inline(always)]
    pub(crate) fn get(&self, at: usize, key: &K) -> Option<Handle<V>> {
        match self.entries[at % N] {
            Some((k, h)) if k == *key => Some(h),
            _ => None,
        }
    }

    /// Holds `h` for `key` in entry `at % N` (replacing what it held).
    #[inline]
    pub(crate) fn put(&mut self, at: usize, key: K, h: Handle<V>) {
        self.entries[at % N] = Some((key, h));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_reaches_its_entry_without_the_key_index() {
        let mut t: HandleTable<u32, &str> = HandleTable::default();
        let a = t.insert(1, "one");
        t.insert(2, "two");
        assert_eq!(
            t.find_mut(Some(a), &1).map(|(h, v)| (h, *v)),
            Some((a, "one"))
        );
        assert_eq!(t.handle(&1), Some(a));
    }

    #[test]
    fn a_removed_entry_s_handle_no_longer_matches() {
        let mut t: HandleTable<u32, &str> = HandleTable::default();
        let a = t.insert(1, "one");
        t.remove(&1);
        assert!(t.find_mut(Some(a), &1).is_none());
        // The slot is reused by another key: the old handle does not
        // reach it, for either key.
        let b = t.insert(2, "two");
        assert_ne!(a, b);
        assert!(t.find_mut(Some(a), &1).is_none());
        // A stale hint for a key that has an entry finds it by key.
        let (h, v) = t.find_mut(Some(a), &2).unwrap();
        assert_eq!((h, *v), (b, "two"));
    }

    #[test]
    fn a_held_handle_reaches_its_entry_until_it_goes() {
        let mut t: HandleTable<u32, &str> = HandleTable::default();
        let a = t.insert(1, "one");
        assert_eq!(t.held_mut(a, &1).map(|v| *v), Some("one"));
        t.remove(&1);
        assert!(t.held_mut(a, &1).is_none());
        // The slot refilled for another key: the generation, not the
        // key, tells the old handle apart.
        let b = t.insert(2, "two");
        assert!(t.held_mut(a, &1).is_none());
        assert_eq!(t.held_mut(b, &2).map(|v| *v), Some("two"));
        // Replaced under the same key: the old handle has gone too.
        let c = t.insert(2, "deux");
        assert!(t.held_mut(b, &2).is_none());
        assert_eq!(t.held_mut(c, &2).map(|v| *v), Some("deux"));
    }

    #[test]
    fn a_replaced_entry_gets_a_new_handle() {
        let mut t: HandleTable<u32, u8> = HandleTable::default();
        let a = t.insert(7, 1);
        let b = t.insert(7, 2);
        assert_ne!(a, b);
        assert_eq!(t.len(), 1);
        let (h, v) = t.find_mut(Some(a), &7).unwrap();
        assert_eq!((h, *v), (b, 2));
    }

    #[test]
    fn retain_invalidates_what_it_drops_and_the_slab_stays_bounded() {
        let mut t: HandleTable<u32, u32> = HandleTable::default();
        for round in 0..100 {
            let hs: Vec<_> = (0..8).map(|k| t.insert(k, round)).collect();
            assert!(hs.iter().all(|h| h.index < 8), "freed slots are reused");
            t.retain(|k, _| k % 2 == 0);
            assert!(t.find_mut(Some(hs[1]), &1).is_none());
            assert!(t.find_mut(Some(hs[2]), &2).is_some());
            t.retain(|_, _| false);
            assert!(t.is_empty());
        }
    }

    #[test]
    fn the_cache_holds_one_handle_per_entry() {
        let mut t: HandleTable<u32, ()> = HandleTable::default();
        let mut c: HandleCache<u32, (), 4> = HandleCache::default();
        let a = t.insert(1, ());
        let b = t.insert(5, ());
        c.put(1, 1, a);
        assert_eq!(c.get(1, &1), Some(a));
        assert_eq!(c.get(1, &5), None);
        c.put(5, 5, b);
        assert_eq!(c.get(1, &1), None);
        assert_eq!(c.get(5, &5), Some(b));
    }
}
