//! Instance parameters given as typed values ([`InstanceParams`]).
//!
//! A module type that takes parameters can offer a struct of them beside
//! its spec, so that code building a graph ([`GraphBuilder::typed`]) hands
//! over an address, a MAC or a size rather than formatting text: the
//! struct, written in the module's own crate next to the factory that
//! reads the parameters back, is the one place that knows each key and the
//! form its value takes. The graph itself keeps parameters as text, the
//! form graph files, `dot` output, error messages and the factories share
//! (thesis §3.2.3: an instance is configured by its `key=value` pairs).

use super::builder::{GraphBuilder, InstanceBuilder};
use super::spec::ModuleSpec;

/// A module type's instance parameters as typed values.
pub trait InstanceParams {
    /// The module type they configure.
    fn spec(&self) -> &'static ModuleSpec;
    /// The parameters as the module's factory reads them: each key of the
    /// spec that is set, with its value in the factory's text form. Keys
    /// left at the module's default are left out, so a graph built from
    /// typed values equals the one a file with the same lines gives.
    fn params(&self) -> Vec<(&'static str, String)>;
}

impl GraphBuilder<'_> {
    /// Declares instance `name` of the module type `params` configure,
    /// with those parameters (checked like any others at
    /// [`build`](GraphBuilder::build)).
    pub fn typed(
        &mut self,
        name: impl Into<String>,
        params: &dyn InstanceParams,
    ) -> InstanceBuilder<'_> {
        let mut b = self.instance(name, params.spec().name);
        for (key, value) in params.params() {
            b = b.param(key, value);
        }
        b
    }
}
