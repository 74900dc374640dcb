//! What a module type declares about itself: its services, their interface
//! types and connection-count constraints, its instance parameters and the
//! attribute keys it understands (thesis §3.2.2, §3.2.3.1).
//!
//! Specs are `const` data, so a module type writes its spec once next to its
//! code and the graph checker reads it at build time:
//!
//! ```
//! use pathstack_core::graph::spec::*;
//! pub const UDP: ModuleSpec = ModuleSpec {
//!     name: "UDP",
//!     doc: "User Datagram Protocol (RFC 768)",
//!     services: &[
//!         ServiceSpec::new("up", ServiceType::AIO, Count::Any),
//!         ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after(),
//!     ],
//!     params: &[],
//!     understands: &["PARTICIPANTS"],
//! };
//! assert_eq!(UDP.service("down"), Some(1));
//! ```

use std::collections::BTreeMap;

/// An interface type, with single inheritance (thesis §3.3.5): an interface
/// is usable wherever one of its ancestors is expected.
#[derive(Debug, PartialEq, Eq)]
pub struct IfaceType {
    /// Name as written in specs and errors.
    pub name: &'static str,
    /// The interface this one extends, if any.
    pub parent: Option<&'static IfaceType>,
}

impl IfaceType {
    /// Whether `self` is `other` or extends it (transitively).
    pub fn is_subtype_of(&self, other: &IfaceType) -> bool {
        let mut t = Some(self);
        while let Some(cur) = t {
            if std::ptr::eq(cur, other) || cur.name == other.name {
                return true;
            }
            t = cur.parent;
        }
        false
    }
}

/// The plain interface every other one extends.
pub static IFACE: IfaceType = IfaceType {
    name: "iface",
    parent: None,
};
/// Asynchronous message delivery (Scout's `AioIface`): used by almost every
/// networking module.
pub static AIO: IfaceType = IfaceType {
    name: "aio",
    parent: Some(&IFACE),
};
/// A message interface whose user can also adjust flow-control windows
/// (the thesis' `WindowedAioIface` example for TCP).
pub static WINDOWED_AIO: IfaceType = IfaceType {
    name: "windowed_aio",
    parent: Some(&AIO),
};
/// A link-layer device interface: frames to and from a network device.
pub static NETDEV: IfaceType = IfaceType {
    name: "netdev",
    parent: Some(&AIO),
};

/// The type of a service: the interface it provides and the one it expects
/// (`<provides, expects>`; either may be absent for one-way services).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceType {
    /// Interface offered to the connected service.
    pub provides: Option<&'static IfaceType>,
    /// Interface required from the connected service.
    pub expects: Option<&'static IfaceType>,
}

impl ServiceType {
    /// `<aio, aio>`: the usual bidirectional message service.
    pub const AIO: ServiceType = ServiceType {
        provides: Some(&AIO),
        expects: Some(&AIO),
    };
    /// `<netdev, netdev>`: the service between a device driver and a link layer.
    pub const NETDEV: ServiceType = ServiceType {
        provides: Some(&NETDEV),
        expects: Some(&NETDEV),
    };

    /// Whether two services may be connected: each must provide (a subtype
    /// of) what the other expects (thesis §3.2.3.1).
    pub fn compatible_with(&self, other: &ServiceType) -> bool {
        fn satisfies(p: Option<&IfaceType>, e: Option<&IfaceType>) -> bool {
            match (p, e) {
                (_, None) => true,
                (Some(p), Some(e)) => p.is_subtype_of(e),
                (None, Some(_)) => false,
            }
        }
        satisfies(self.provides, other.expects) && satisfies(other.provides, self.expects)
    }
}

impl std::fmt::Display for ServiceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |t: Option<&IfaceType>| t.map_or("-", |t| t.name);
        write!(f, "<{}, {}>", n(self.provides), n(self.expects))
    }
}

/// How many connections a service accepts (thesis §3.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// Zero or one.
    AtMostOne,
    /// Exactly one.
    ExactlyOne,
    /// One or more.
    AtLeastOne,
    /// Any number, including none.
    Any,
}

impl Count {
    /// Whether `n` connections satisfy the constraint.
    pub fn allows(self, n: usize) -> bool {
        match self {
            Count::AtMostOne => n <= 1,
            Count::ExactlyOne => n == 1,
            Count::AtLeastOne => n >= 1,
            Count::Any => true,
        }
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Count::AtMostOne => "at most one",
            Count::ExactlyOne => "exactly one",
            Count::AtLeastOne => "at least one",
            Count::Any => "any number of",
        })
    }
}

/// One service of a module type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceSpec {
    /// Service name, unique within the module.
    pub name: &'static str,
    /// Provided and expected interfaces.
    pub ty: ServiceType,
    /// Connection-count constraint.
    pub count: Count,
    /// Scout's `<` marker: the modules connected through this service are
    /// initialized before this one.
    pub init_after: bool,
}

impl ServiceSpec {
    /// A service without the `<` marker.
    pub const fn new(name: &'static str, ty: ServiceType, count: Count) -> Self {
        ServiceSpec {
            name,
            ty,
            count,
            init_after: false,
        }
    }
    /// The same service with the `<` marker set.
    pub const fn init_after(mut self) -> Self {
        self.init_after = true;
        self
    }
    /// The services of a protocol layered over exactly one lower
    /// protocol (thesis §3.2.1's IP over ETH, ARP over ETH): `up` for
    /// any number of protocols above, `down` for the one below, which is
    /// initialized first (`<`) because this one uses it at start.
    pub const OVER_ONE: &'static [ServiceSpec] = &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after(),
    ];
}

/// An instance parameter a module type accepts (`key=value` in a graph file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    /// Parameter name.
    pub key: &'static str,
    /// What it means and what values it takes.
    pub doc: &'static str,
    /// Whether every instance must set it.
    pub required: bool,
}

impl ParamSpec {
    /// A parameter every instance must set.
    pub const fn required(key: &'static str, doc: &'static str) -> Self {
        ParamSpec {
            key,
            doc,
            required: true,
        }
    }
    /// A parameter an instance may leave out (the module has a default).
    pub const fn optional(key: &'static str, doc: &'static str) -> Self {
        ParamSpec {
            key,
            doc,
            required: false,
        }
    }
}

/// Everything the graph checker knows about a module type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModuleSpec {
    /// Module type name as written after `module=` (e.g. `"IP"`).
    pub name: &'static str,
    /// One line on what the module does.
    pub doc: &'static str,
    /// Services, in index order.
    pub services: &'static [ServiceSpec],
    /// Instance parameters it accepts.
    pub params: &'static [ParamSpec],
    /// Names of the limited-scope attribute keys it understands; other
    /// limited keys are dropped when a path is routed through it.
    pub understands: &'static [&'static str],
}

impl ModuleSpec {
    /// Index of the service called `name`.
    pub fn service(&self, name: &str) -> Option<usize> {
        self.services.iter().position(|s| s.name == name)
    }
    /// The parameter called `key`.
    pub fn param(&self, key: &str) -> Option<&ParamSpec> {
        self.params.iter().find(|p| p.key == key)
    }
}

/// The module types a graph may use, by name.
#[derive(Clone, Debug, Default)]
pub struct SpecRegistry {
    specs: BTreeMap<&'static str, &'static ModuleSpec>,
}

/// Module type names graphs may still use, each with the type's name
/// now: the device driver module was `WIRE` until "wire" was left to the
/// header formats alone (issue 27), and graph files written before then
/// keep working.
pub const FORMER_NAMES: &[(&str, &str)] = &[("WIRE", "DRIVER")];

impl SpecRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a module type (a later one with the same name replaces it).
    pub fn register(&mut self, spec: &'static ModuleSpec) -> &mut Self {
        self.specs.insert(spec.name, spec);
        self
    }
    /// The module type called `name`, or of which `name` is a former
    /// name ([`FORMER_NAMES`]).
    pub fn get(&self, name: &str) -> Option<&'static ModuleSpec> {
        self.specs
            .get(name)
            .or_else(|| {
                let (_, now) = FORMER_NAMES.iter().find(|(old, _)| *old == name)?;
                self.specs.get(now)
            })
            .copied()
    }
    /// All module types, by name.
    pub fn iter(&self) -> impl Iterator<Item = &'static ModuleSpec> + '_ {
        self.specs.values().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtyping_follows_parents() {
        assert!(WINDOWED_AIO.is_subtype_of(&AIO));
        assert!(AIO.is_subtype_of(&IFACE));
        assert!(!AIO.is_subtype_of(&WINDOWED_AIO));
        assert!(!NETDEV.is_subtype_of(&WINDOWED_AIO));
    }

    #[test]
    fn compatibility_is_both_ways() {
        let windowed = ServiceType {
            provides: Some(&WINDOWED_AIO),
            expects: Some(&AIO),
        };
        assert!(windowed.compatible_with(&ServiceType::AIO));
        let wants_windowed = ServiceType {
            provides: Some(&AIO),
            expects: Some(&WINDOWED_AIO),
        };
        assert!(wants_windowed.compatible_with(&windowed));
        assert!(!wants_windowed.compatible_with(&ServiceType::AIO));
        let source = ServiceType {
            provides: Some(&AIO),
            expects: None,
        };
        let sink = ServiceType {
            provides: None,
            expects: Some(&AIO),
        };
        assert!(source.compatible_with(&sink));
        assert!(!sink.compatible_with(&sink));
    }

    #[test]
    fn counts() {
        assert!(Count::AtMostOne.allows(0) && !Count::AtMostOne.allows(2));
        assert!(Count::ExactlyOne.allows(1) && !Count::ExactlyOne.allows(0));
        assert!(Count::AtLeastOne.allows(3) && !Count::AtLeastOne.allows(0));
        assert!(Count::Any.allows(0));
    }
}
