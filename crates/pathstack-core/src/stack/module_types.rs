//! The module types a stack can instantiate ([`ModuleTypes`]) and what a
//! module factory sees ([`ModuleSetup`]).

use crate::device::Device;
use crate::error::ModuleError;
use crate::graph::spec::{ModuleSpec, SpecRegistry};
use crate::module::{parse_param, Module};
use std::collections::BTreeMap;

/// What a module factory sees: the instance's name and parameters, and the
/// devices given to the stack.
pub struct ModuleSetup<'a> {
    pub(super) instance: &'a str,
    pub(super) params: &'a BTreeMap<String, String>,
    pub(super) devices: &'a mut Vec<Option<Box<dyn Device>>>,
}

impl ModuleSetup<'_> {
    /// The instance name.
    pub fn instance(&self) -> &str {
        self.instance
    }
    /// The instance parameters.
    pub fn params(&self) -> &BTreeMap<String, String> {
        self.params
    }
    /// A parameter parsed as `T`, or `default` when absent.
    pub fn param<T: std::str::FromStr>(&self, key: &str, default: T) -> Result<T, ModuleError>
    where
        T::Err: std::fmt::Display,
    {
        parse_param(self.instance, self.params, key, default)
    }
    /// Takes the device the stack was given at `index` (each device goes to
    /// exactly one driver module).
    pub fn take_device(&mut self, index: usize) -> Result<Box<dyn Device>, ModuleError> {
        let n = self.devices.len();
        match self.devices.get_mut(index) {
            Some(slot) => slot.take().ok_or_else(|| ModuleError::BadParam {
                instance: self.instance.to_string(),
                key: "device".into(),
                reason: format!("device {index} is already used by another module"),
            }),
            None => Err(ModuleError::BadParam {
                instance: self.instance.to_string(),
                key: "device".into(),
                reason: format!("device {index} does not exist (the stack has {n})"),
            }),
        }
    }
}

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
    /// The module types of the core: the `WIRE` driver and the synthetic
    /// modules.
    pub fn core() -> Self {
        let mut t = Self::new();
        t.register(&crate::device::WIRE_SPEC, crate::device::WireModule::create);
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
