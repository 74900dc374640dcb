//! The stack's table of paths: slots indexed by [`PathId::index`], each
//! with a generation so that a stale id (held by a timer, a socket, a
//! classifier entry of a deleted path) never reaches a newer path in the
//! same slot. Every lookup of a path by id goes through [`PathTable::get`]
//! or [`PathTable::get_mut`]: one bounds check and one generation compare.

use crate::error::PathError;
use crate::ids::PathId;
use crate::path::Path;

struct Slot {
    generation: u32,
    path: Option<Path>,
}

/// The paths of one stack, bounded by `max` live paths.
pub(crate) struct PathTable {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
    max: usize,
}

impl PathTable {
    pub(crate) fn new(max: usize) -> Self {
        PathTable {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            max,
        }
    }

    /// The live path `id`.
    #[inline]
    pub(crate) fn get(&self, id: PathId) -> Option<&Path> {
        self.slots
            .get(id.index as usize)
            .filter(|s| s.generation == id.generation)
            .and_then(|s| s.path.as_ref())
    }

    /// The live path `id`, writable.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: PathId) -> Option<&mut Path> {
        self.slots
            .get_mut(id.index as usize)
            .filter(|s| s.generation == id.generation)
            .and_then(|s| s.path.as_mut())
    }

    /// Reserves an id for a path about to be made; give it back with
    /// [`PathTable::release`] if making it fails, or fill it with
    /// [`PathTable::insert`].
    pub(crate) fn alloc(&mut self) -> Result<PathId, PathError> {
        if self.live >= self.max {
            return Err(PathError::TableFull(self.max));
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    path: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        self.live += 1;
        Ok(PathId {
            index,
            generation: slot.generation,
        })
    }

    /// Puts the path made for id `id` (from [`PathTable::alloc`]) in its slot.
    pub(crate) fn insert(&mut self, id: PathId, path: Path) {
        if let Some(slot) = self.slots.get_mut(id.index as usize) {
            if slot.generation == id.generation {
                slot.path = Some(path);
            }
        }
    }

    /// Gives back an id reserved with [`PathTable::alloc`] that never got a
    /// path.
    pub(crate) fn release(&mut self, id: PathId) {
        if let Some(slot) = self.slots.get(id.index as usize) {
            if slot.generation == id.generation && slot.path.is_none() {
                self.free.push(id.index);
                self.live -= 1;
            }
        }
    }

    /// Takes path `id` out of the table; its slot is free again.
    pub(crate) fn remove(&mut self, id: PathId) -> Option<Path> {
        let slot = self.slots.get_mut(id.index as usize)?;
        if slot.generation != id.generation {
            return None;
        }
        let path = slot.path.take()?;
        self.free.push(id.index);
        self.live -= 1;
        Some(path)
    }

    /// Live paths.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// Ids of the live paths, in slot order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = PathId> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.path.as_ref().map(|_| PathId {
                index: i as u32,
                generation: s.generation,
            })
        })
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
