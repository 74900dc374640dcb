//! The stack's table of paths: slots indexed by [`PathId::index`], each
//! with a generation so that a stale id (held by a timer, a socket, a
//! classifier entry of a deleted path) never reaches a newer path in the
//! same slot. Every lookup of a path by id goes through [`PathTable::get`]
//! or [`PathTable::get_mut`]: one bounds check and one generation compare
//! (the stack's [`Slab`](crate::slab::Slab), which the facade's socket and
//! call tables use too).

use crate::error::PathError;
use crate::ids::PathId;
use crate::path::Path;
use crate::slab::{Slab, SlabKey};

/// The paths of one stack, bounded by `max` live paths. A slot holds
/// `None` between [`PathTable::alloc`] and [`PathTable::insert`]: a path's
/// stages are made knowing its id.
pub(crate) struct PathTable {
    slots: Slab<Option<Path>>,
}

#[inline]
fn key(id: PathId) -> SlabKey {
    SlabKey {
        slot: id.index,
        generation: id.generation,
    }
}

#[inline]
fn id(key: SlabKey) -> PathId {
    PathId {
        index: key.slot,
        generation: key.generation,
    }
}

impl PathTable {
    pub(crate) fn new(max: usize) -> Self {
        PathTable {
            slots: Slab::new(max),
        }
    }

    /// The live path `id`.
    #[inline]
    pub(crate) fn get(&self, id: PathId) -> Option<&Path> {
        self.slots.get(key(id)).and_then(Option::as_ref)
    }

    /// The live path `id`, writable.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: PathId) -> Option<&mut Path> {
        self.slots.get_mut(key(id)).and_then(Option::as_mut)
    }

    /// Reserves an id for a path about to be made; give it back with
    /// [`PathTable::release`] if making it fails, or fill it with
    /// [`PathTable::insert`].
    pub(crate) fn alloc(&mut self) -> Result<PathId, PathError> {
        self.slots
            .insert(None)
            .map(id)
            .map_err(|full| PathError::TableFull(full.capacity))
    }

    /// Puts the path made for id `id` (from [`PathTable::alloc`]) in its slot.
    pub(crate) fn insert(&mut self, id: PathId, path: Path) {
        if let Some(slot) = self.slots.get_mut(key(id)) {
            *slot = Some(path);
        }
    }

    /// Gives back an id reserved with [`PathTable::alloc`] that never got a
    /// path.
    pub(crate) fn release(&mut self, id: PathId) {
        if matches!(self.slots.get(key(id)), Some(None)) {
            self.slots.remove(key(id));
        }
    }

    /// Takes path `id` out of the table; its slot is free again.
    pub(crate) fn remove(&mut self, id: PathId) -> Option<Path> {
        self.get(id)?;
        self.slots.remove(key(id)).flatten()
    }

    /// Live paths.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Ids of the live paths, in slot order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = PathId> + '_ {
        self.slots
            .iter()
            .filter_map(|(k, p)| p.as_ref().map(|_| id(k)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_ids_miss_and_slots_are_bounded() {
        let mut t = PathTable::new(2);
        let a = t.alloc().unwrap();
        let b = t.alloc().unwrap();
        assert!(matches!(t.alloc(), Err(PathError::TableFull(2))));
        t.release(a);
        let c = t.alloc().unwrap();
        assert_eq!(c.index, a.index);
        assert_ne!(c.generation, a.generation);
        assert!(t.get(a).is_none());
        t.release(b);
        t.release(c);
        assert_eq!(t.len(), 0);
    }
}
