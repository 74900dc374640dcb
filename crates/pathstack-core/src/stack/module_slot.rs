//! A module instance as the stack holds it: the module beside its name,
//! parameters, links and drop tally, and whether it was reached writably
//! since its deadline was last asked (issue 26 item 6's idle poll). The
//! stack owns the slots; a path run lends them to its stages' contexts
//! ([`Env`](crate::runtime::Env)), which is why the slot, not the module
//! trait, knows how a module is reached.

use crate::device::{DeviceRef, DriverModule, RxLane};
use crate::drop_reason::DropTally;
use crate::error::ModuleError;
use crate::graph::spec::ModuleSpec;
use crate::graph::Link;
use crate::module::Module;
use std::any::Any;
use std::collections::BTreeMap;

/// How a slot holds its module: the core's own `DRIVER` by its type, so
/// that the stack reaches a driver's device and burst on every frame
/// without a virtual call into the module (`Module::rx_lane`,
/// `Module::device_mut`: issue 26 item 1, the type known where the stack
/// knows it); every other module behind its trait.
enum Held {
    Driver(Box<DriverModule>),
    Other(Box<dyn Module>),
}

impl Held {
    /// `module`, by its type when it is a `DriverModule`.
    fn of(name: &str, module: Box<dyn Module>) -> Result<Held, ModuleError> {
        if !(module.as_ref() as &dyn Any).is::<DriverModule>() {
            return Ok(Held::Other(module));
        }
        let any: Box<dyn Any + Send> = module;
        // It is one (just asked): the error cannot come, but is an error,
        // not a panic.
        any.downcast::<DriverModule>()
            .map(Held::Driver)
            .map_err(|_| ModuleError::Init {
                instance: name.to_string(),
                reason: "a DRIVER module changed its type".into(),
            })
    }

    #[inline(always)]
    fn get(&self) -> &dyn Module {
        match self {
            Held::Driver(d) => &**d,
            Held::Other(m) => &**m,
        }
    }

    #[inline(always)]
    fn get_mut(&mut self) -> &mut dyn Module {
        match self {
            Held::Driver(d) => &mut **d,
            Held::Other(m) => &mut **m,
        }
    }
}

/// A module instance in a stack.
pub(crate) struct ModuleSlot {
    pub name: String,
    pub spec: &'static ModuleSpec,
    pub params: BTreeMap<String, String>,
    /// Private: every writable reach goes through [`ModuleSlot::get_mut`]
    /// or [`ModuleSlot::parts_mut`], which mark the slot `touched`, so the
    /// compiler finds any way in that would not.
    module: Held,
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
    ) -> Result<Self, ModuleError> {
        let module = Held::of(&name, module)?;
        Ok(ModuleSlot {
            name,
            spec,
            params,
            module,
            links,
            drops: DropTally::default(),
            touched: true,
        })
    }

    /// The module's receive lane ([`Module::rx_lane`]), marking it
    /// `touched` as [`ModuleSlot::get_mut`] does: the core's `DRIVER`'s
    /// by its type (inlined, no virtual call into the module per frame),
    /// any other module's through its trait.
    #[inline(always)]
    pub fn rx_lane(&mut self) -> Option<RxLane<'_>> {
        self.touched = true;
        match &mut self.module {
            Held::Driver(d) => Some(d.lane()),
            Held::Other(m) => m.rx_lane(),
        }
    }

    /// The module's device ([`Module::device_mut`]), marking it `touched`:
    /// the core's `DRIVER`'s by its type, as for [`ModuleSlot::rx_lane`],
    /// and its device by its type where the core knows it
    /// (`device::held`).
    #[inline(always)]
    pub fn device_mut(&mut self) -> Option<DeviceRef<'_>> {
        self.touched = true;
        match &mut self.module {
            Held::Driver(d) => Some(d.lend_device()),
            Held::Other(m) => m.device_mut().map(DeviceRef::from),
        }
    }

    /// The module, to read (`&self` cannot change its deadline).
    #[inline]
    pub fn get(&self) -> &dyn Module {
        self.module.get()
    }

    /// The module, writable: marks it `touched`.
    #[inline]
    pub fn get_mut(&mut self) -> &mut dyn Module {
        self.touched = true;
        self.module.get_mut()
    }

    /// The module, writable, *not* marked `touched`: for a fast form that
    /// marks it itself ([`ModuleSlot::touch`]) whenever its work may have
    /// moved the module's deadline earlier. A deadline that moved later
    /// unmarked is harmless (the stack polls the module early, and it finds
    /// nothing due); one that moved earlier unmarked would be missed.
    #[inline]
    pub fn get_mut_quiet(&mut self) -> &mut dyn Module {
        self.module.get_mut()
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
        (self.module.get_mut(), parts)
    }
}

/// The rest of a [`ModuleSlot`] while its module is lent out.
pub(crate) struct SlotParts<'a> {
    pub name: &'a str,
    pub params: &'a BTreeMap<String, String>,
    pub links: &'a [Vec<Link>],
    pub drops: &'a mut DropTally,
}
