//! A module instance as the stack holds it: the module beside its name,
//! parameters, links and drop tally, and whether it was reached writably
//! since its deadline was last asked (issue 26 item 6's idle poll). The
//! stack owns the slots; a path run lends them to its stages' contexts
//! ([`Env`](crate::runtime::Env)), which is why the slot, not the module
//! trait, knows how a module is reached.

use crate::drop_reason::DropTally;
use crate::graph::spec::ModuleSpec;
use crate::graph::Link;
use crate::module::Module;
use std::collections::BTreeMap;

/// A module instance in a stack.
pub(crate) struct ModuleSlot {
    pub name: String,
    pub spec: &'static ModuleSpec,
    pub params: BTreeMap<String, String>,
    /// Private: every writable reach goes through [`ModuleSlot::get_mut`]
    /// or [`ModuleSlot::parts_mut`], which mark the slot `touched`, so the
    /// compiler finds any way in that would not.
    module: Box<dyn Module>,
    pub links: Vec<Vec<Link>>,
    pub drops: DropTally,
    /// The module was reached writably (a callback, a stage's
    /// `cx.module()`, `Stack::module_mut`) since the stack last asked its
    /// [`Module::poll_at`]. A module's deadline is its own state, so it can
    /// only change while someone holds it `&mut`: the stack re-asks a
    /// [`Module::polls_when_due`] module only when this is set (the idle
    /// poll of issue 26 item 6).
    pub touched: bool,
}

impl ModuleSlot {
    /// A slot for `module`, to be asked its deadline before its first poll.
    pub fn new(
        name: String,
        spec: &'static ModuleSpec,
        params: BTreeMap<String, String>,
        module: Box<dyn Module>,
        links: Vec<Vec<Link>>,
    ) -> Self {
        ModuleSlot {
            name,
            spec,
            params,
            module,
            links,
            drops: DropTally::default(),
            touched: true,
        }
    }

    /// The module, to read (`&self` cannot change its deadline).
    #[inline]
    pub fn get(&self) -> &dyn Module {
        &*self.module
    }

    /// The module, writable: marks it `touched`.
    #[inline]
    pub fn get_mut(&mut self) -> &mut dyn Module {
        self.touched = true;
        &mut *self.module
    }

    /// The module, writable, *not* marked `touched`: for a fast form that
    /// marks it itself ([`ModuleSlot::touch`]) whenever its work may have
    /// moved the module's deadline earlier. A deadline that moved later
    /// unmarked is harmless (the stack polls the module early, and it finds
    /// nothing due); one that moved earlier unmarked would be missed.
    #[inline]
    pub fn get_mut_quiet(&mut self) -> &mut dyn Module {
        &mut *self.module
    }

    /// Marks the module `touched`: the next poll asks its deadline again.
    #[inline]
    pub fn touch(&mut self) {
        self.touched = true;
    }

    /// The module, writable (marked `touched`), beside the parts of its
    /// slot a context borrows at the same time.
    #[inline]
    pub fn parts_mut(&mut self) -> (&mut dyn Module, SlotParts<'_>) {
        self.touched = true;
        let parts = SlotParts {
            name: &self.name,
            params: &self.params,
            links: &self.links,
            drops: &mut self.drops,
        };
        (&mut *self.module, parts)
    }
}

/// The rest of a [`ModuleSlot`] while its module is lent out.
pub(crate) struct SlotParts<'a> {
    pub name: &'a str,
    pub params: &'a BTreeMap<String, String>,
    pub links: &'a [Vec<Link>],
    pub drops: &'a mut DropTally,
}
