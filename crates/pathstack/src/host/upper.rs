//! Module instances a host's configuration adds above its protocols
//! ([`UpperModule`]), and what each connects to ([`Below`]).

use pathstack_core::graph::InstanceParams;

/// The host protocol (or other instance) an extra module connects to, at
/// its `up` service. The host's own protocols are named by what they are,
/// not by instance name, so the configuration does not depend on how the
/// host names its instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Below {
    /// The host's `UDP`.
    Udp,
    /// The host's `TCP`.
    Tcp,
    /// The host's `IP`.
    Ip,
    /// The host's `ETH`.
    Eth,
    /// Another extra module, by its instance name (one declared earlier
    /// in [`HostConfig::upper`](super::HostConfig::upper)).
    Instance(String),
}

/// One module instance a host adds above its protocols
/// ([`HostConfig::upper`](super::HostConfig::upper)): its type, its
/// parameters, and which of its services connect to which protocol.
///
/// ```
/// use pathstack::host::{Below, Host, HostConfig, UpperModule};
/// use pathstack::memory_pair;
/// let mut cfg = HostConfig::parse("10.0.0.1/24").unwrap();
/// // ECHO answers every datagram its path carries.
/// cfg.upper.push(UpperModule::new("app", "ECHO").param("mode", "echo").over("down", Below::Udp));
/// let (a, _b) = memory_pair(Default::default());
/// let h = Host::new(cfg, a).unwrap();
/// assert!(h.stack().module_id("app").is_some());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpperModule {
    /// Instance name.
    pub name: String,
    /// Module type (its spec's name).
    pub module: String,
    /// Parameters, each in the text form the type's factory parses.
    pub params: Vec<(String, String)>,
    /// Each service of this instance and what it connects to.
    pub over: Vec<(String, Below)>,
}

impl UpperModule {
    /// Instance `name` of module type `module`, with no parameters and no
    /// connections yet.
    pub fn new(name: impl Into<String>, module: impl Into<String>) -> Self {
        UpperModule {
            name: name.into(),
            module: module.into(),
            params: Vec::new(),
            over: Vec::new(),
        }
    }

    /// Instance `name` of the type `params` configure, with those
    /// parameters (a module type's typed parameters,
    /// [`InstanceParams`]).
    pub fn typed(name: impl Into<String>, params: &dyn InstanceParams) -> Self {
        let mut m = Self::new(name, params.spec().name);
        m.params = params
            .params()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        m
    }

    /// Sets parameter `key` to `value` (written the way the type's
    /// factory reads it back: `value`'s `Display`).
    pub fn param(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.params.push((key.into(), value.to_string()));
        self
    }

    /// Connects this instance's `service` to `below`'s `up`.
    pub fn over(mut self, service: impl Into<String>, below: Below) -> Self {
        self.over.push((service.into(), below));
        self
    }
}
