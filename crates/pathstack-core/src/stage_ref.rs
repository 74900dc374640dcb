//! Typed handles on a path's stages.
//!
//! An application reaches per-path state that lives in a stage (a TCP
//! connection's buffers) with [`Stack::with_stage`](crate::Stack::with_stage),
//! which finds the stage by its type: a scan of the path's stages, each a
//! virtual call and a type comparison, on every socket call. Scout resolves
//! what it can when the path is made and keeps it with the path (thesis
//! §3.3.8; issue 26, "a stage reaches its module through a typed handle
//! resolved when the path is created"): a [`StageRef`] is that resolution
//! done once, for the application's side. A socket keeps it and each call
//! goes straight to the stage's position.
//!
//! It is still checked on every use: the path's generation (a deleted
//! path's id does not reach its successor), the stage's creation number
//! at the position (an extended path may have moved its stages: the
//! handle then finds its stage by that number, which stays with it), and
//! the stage's type. A stale handle finds nothing, never another stage.

use crate::ids::PathId;
use crate::stage::Stage;
use std::marker::PhantomData;

/// The stage of type `T` at a fixed position of one path, resolved once
/// ([`Stack::stage_ref`](crate::Stack::stage_ref)) and checked on use
/// ([`Stack::with_stage_at`](crate::Stack::with_stage_at),
/// [`Stack::stage_at`](crate::Stack::stage_at)).
pub struct StageRef<T: Stage> {
    pub(crate) path: PathId,
    /// Position of the stage on the path (0 is `end[0]`).
    pub(crate) pos: u32,
    /// The stage's creation number on the path, which stays with it when
    /// the path is extended and its position changes.
    pub(crate) id: u32,
    // `fn() -> T`: the handle holds no `T`, so it is `Copy`, `Send` and
    // `Sync` whatever `T` is.
    _stage: PhantomData<fn() -> T>,
}

impl<T: Stage> StageRef<T> {
    pub(crate) fn new(path: PathId, pos: usize, id: u32) -> Self {
        StageRef {
            path,
            pos: pos as u32,
            id,
            _stage: PhantomData,
        }
    }

    /// The stage's position on a path whose stages have the creation
    /// numbers `ids`: where it was, or where it moved to when the path was
    /// extended; `None` when it is not on the path.
    #[inline]
    pub(crate) fn locate(&self, ids: &[u32]) -> Option<usize> {
        let pos = self.pos as usize;
        if ids.get(pos) == Some(&self.id) {
            return Some(pos);
        }
        ids.iter().position(|&s| s == self.id)
    }

    /// The path the stage is on.
    pub fn path(&self) -> PathId {
        self.path
    }

    /// The stage's position on the path when the handle was made.
    pub fn position(&self) -> usize {
        self.pos as usize
    }
}

// Written out: derived, they would ask the same of `T`.
impl<T: Stage> Clone for StageRef<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Stage> Copy for StageRef<T> {}

impl<T: Stage> PartialEq for StageRef<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.path, self.pos, self.id) == (other.path, other.pos, other.id)
    }
}

impl<T: Stage> Eq for StageRef<T> {}

impl<T: Stage> std::fmt::Debug for StageRef<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StageRef")
            .field("stage", &std::any::type_name::<T>())
            .field("path", &self.path)
            .field("pos", &self.pos)
            .field("id", &self.id)
            .finish()
    }
}
