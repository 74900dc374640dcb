//! A module instance's name and `key=value` parameters, as every context
//! a module is handed shows them: the factory's [`ModuleSetup`], and the
//! [`CreateCx`] and [`ModCx`] of path creation and background work. One
//! definition, so the three read a parameter the same way (and report a
//! bad one with the same [`ModuleError::BadParam`]).
//!
//! [`ModuleSetup`]: crate::module_setup::ModuleSetup
//! [`CreateCx`]: crate::module::CreateCx
//! [`ModCx`]: crate::module::ModCx

/// Gives each named context (a struct with one lifetime and `instance:
/// &str`, `params: &BTreeMap<String, String>` fields) the accessors
/// `instance()`, `params()` and `param(key, default)`.
macro_rules! param_access {
    ($($cx:ident),*) => {$(
        impl $cx<'_> {
            /// This module's instance name.
            pub fn instance(&self) -> &str {
                self.instance
            }
            /// This instance's `key=value` parameters.
            pub fn params(&self) -> &std::collections::BTreeMap<String, String> {
                self.params
            }
            /// A parameter parsed as `T`, or `default` when absent.
            pub fn param<T: std::str::FromStr>(
                &self,
                key: &str,
                default: T,
            ) -> Result<T, $crate::error::ModuleError>
            where
                T::Err: std::fmt::Display,
            {
                match self.params.get(key) {
                    None => Ok(default),
                    Some(v) => v.parse().map_err(|e: T::Err| $crate::error::ModuleError::BadParam {
                        instance: self.instance.to_string(),
                        key: key.to_string(),
                        reason: format!("`{v}`: {e}"),
                    }),
                }
            }
        }
    )*};
}
pub(crate) use param_access;
