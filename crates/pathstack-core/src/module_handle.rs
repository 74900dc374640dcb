//! Typed handles to modules: how a stage reaches its own module, or one
//! linked to it, on every message without walking the graph again.
//!
//! A stage's context finds its module through the path's list of stage
//! modules, and a linked module through its module's connections, on
//! every call ([`Cx::module`](crate::stage::Cx::module),
//! [`Cx::linked_module`](crate::stage::Cx::linked_module)). What that
//! walk finds is fixed when the path is made (thesis §2.2: decide at path
//! creation what can be decided then), so the stage resolves it once, in
//! [`Module::create_stage`](crate::module::Module::create_stage), into a
//! [`ModuleHandle`] — the module's index in the stack's table, typed —
//! and reaches the module by index afterwards
//! ([`Cx::module_by_quiet`](crate::stage::Cx::module_by_quiet)).
//!
//! The handle does not remove the type check (issue 26 item 6 asks for no
//! `Any` downcast per message). The stack holds its modules as `Box<dyn
//! Module>`, of types it learns from the graph at run time; safe Rust
//! turns a trait object back into its concrete type only through `Any`'s
//! checked downcast (a `TypeId` comparison), and a check made once at
//! path creation cannot vouch for later reaches without an unchecked
//! cast (`unsafe`), which the core does not use. A per-type arena would
//! itself be found through a type-erased table, and the core, which
//! knows no protocol, cannot name a closed set of module types. What
//! removes the downcast is state the stage reads per message held on the
//! path itself (item 7); see `docs/design.md`, "Reaching a module".

use crate::ids::ModuleId;
use std::fmt;
use std::marker::PhantomData;

/// A module of type `M`, by its index in the stack's module table:
/// resolved when a stage is created ([`CreateCx::own_handle`]), used by
/// index on every message. Its type is checked at each reach (a reach
/// through a handle of the wrong type finds nothing).
///
/// [`CreateCx::own_handle`]: crate::module::CreateCx::own_handle
pub struct ModuleHandle<M> {
    id: ModuleId,
    _of: PhantomData<fn() -> M>,
}

impl<M> ModuleHandle<M> {
    /// The handle of module `id`, taken to be an `M`.
    pub(crate) fn new(id: ModuleId) -> Self {
        ModuleHandle {
            id,
            _of: PhantomData,
        }
    }

    /// The module's id.
    #[inline]
    pub fn id(&self) -> ModuleId {
        self.id
    }

    /// The module's index in the stack's table.
    #[inline(always)]
    pub(crate) fn index(&self) -> usize {
        self.id.0 as usize
    }
}

impl<M> Clone for ModuleHandle<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for ModuleHandle<M> {}

impl<M> PartialEq for ModuleHandle<M> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<M> Eq for ModuleHandle<M> {}

impl<M> fmt::Debug for ModuleHandle<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ModuleHandle({})", self.id.0)
    }
}
