//! The module types a stack can instantiate ([`ModuleTypes`]): a spec and
//! a factory, which gets a [`ModuleSetup`], by name.

use crate::error::ModuleError;
use crate::graph::spec::{ModuleSpec, SpecRegistry};
use crate::module::Module;
use crate::module_setup::ModuleSetup;
use std::collections::BTreeMap;

/// Makes a module instance.
pub type ModuleFactory = fn(&mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError>;

/// The module types a stack can instantiate: spec and factory by name.
#[derive(Clone, Default)]
pub struct ModuleTypes {
    pub(super) map: BTreeMap<&'static str, (&'static ModuleSpec, ModuleFactory)>,
}

impl ModuleTypes {
    /// No module types.
    pub fn new() -> Self {
        Self::default()
    }
    /// The module types of the core: the `DRIVER` module and the synthetic
    /// modules.
    pub fn core() -> Self {
        let mut t = Self::new();
        t.register(
            &crate::device::DRIVER_SPEC,
            crate::device::DriverModule::create,
        );
        crate::synthetic::register(&mut t);
        t
    }
    /// Adds a module type.
    pub fn register(&mut self, spec: &'static ModuleSpec, factory: ModuleFactory) -> &mut Self {
        self.map.insert(spec.name, (spec, factory));
        self
    }
    /// Adds every type of `other`.
    pub fn extend(&mut self, other: &ModuleTypes) -> &mut Self {
        self.map.extend(other.map.iter().map(|(k, v)| (*k, *v)));
        self
    }
    /// The specs, for checking graphs.
    pub fn specs(&self) -> SpecRegistry {
        let mut r = SpecRegistry::new();
        for (spec, _) in self.map.values() {
            r.register(spec);
        }
        r
    }
}

/// The type names: the factories are functions, which say nothing useful.
impl std::fmt::Debug for ModuleTypes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.map.keys()).finish()
    }
}

/// Two registries are equal when they hold the same specs under the same
/// names (a spec is `'static` data, compared by value); factories are not
/// compared, since function addresses are not stable across codegen units.
impl PartialEq for ModuleTypes {
    fn eq(&self, other: &Self) -> bool {
        self.map.len() == other.map.len()
            && self
                .map
                .iter()
                .zip(&other.map)
                .all(|((a, (sa, _)), (b, (sb, _)))| a == b && sa == sb)
    }
}

impl Eq for ModuleTypes {}
