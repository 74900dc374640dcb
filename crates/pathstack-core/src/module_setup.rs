//! What a module factory sees while the stack builds a module instance:
//! the instance's name and parameters and the devices given to the stack.
//! It stands beside the module trait, not in the stack, because the
//! factories that take it live with the modules (the `DRIVER` module here,
//! the protocol crates' modules); the stack only makes one per instance.

use crate::device::Device;
use crate::error::ModuleError;
use std::collections::BTreeMap;

/// What a module factory sees: the instance's name and parameters, and the
/// devices given to the stack.
pub struct ModuleSetup<'a> {
    pub(crate) instance: &'a str,
    pub(crate) params: &'a BTreeMap<String, String>,
    pub(crate) devices: &'a mut Vec<Option<Box<dyn Device>>>,
}

impl ModuleSetup<'_> {
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

crate::param_access::param_access!(ModuleSetup);
