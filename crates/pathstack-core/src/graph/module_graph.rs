//! The checked, runtime representation of a module graph (thesis §3.2.3.2):
//! instances addressed by integer ids, and for each instance the thesis'
//! `links[service][connection]` table, so a module can reach every
//! connection of a service with a plain loop.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use super::error::Location;
use super::spec::ModuleSpec;

/// The index of an instance in its [`ModuleGraph`], in declaration order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstanceId(pub u32);

impl InstanceId {
    /// The id as a vector index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One end of a connection, seen from the other end: the thesis'
/// `struct ModuleLink { Module module; int service; }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    /// The connected instance.
    pub instance: InstanceId,
    /// The index of its service (into its spec's `services`).
    pub service: usize,
}

/// A module instance in a checked graph.
#[derive(Clone, Debug)]
pub struct Instance {
    /// Instance name, unique in the graph.
    pub name: String,
    /// Its module type.
    pub spec: &'static ModuleSpec,
    /// Its `key=value` parameters, checked against `spec.params`.
    pub params: BTreeMap<String, String>,
    /// `links[service][n]`: the n-th connection of each service, in the
    /// order the connections were declared.
    pub links: Vec<Vec<Link>>,
    /// Where it was declared, if known.
    pub location: Option<Location>,
}

impl Instance {
    /// The value of parameter `key`, if set.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params.get(key).map(String::as_str)
    }
    /// The connections of the service called `name` (`None` if the module
    /// type has no such service).
    pub fn service_links(&self, name: &str) -> Option<&[Link]> {
        self.spec.service(name).map(|i| self.links[i].as_slice())
    }
    /// How many connections each service has: the `c[]` array the thesis
    /// passes to a module's create function.
    pub fn connection_counts(&self) -> Vec<usize> {
        self.links.iter().map(Vec::len).collect()
    }
}

/// One declared connection `a.s<>b.t`, as resolved.
#[derive(Clone, Debug)]
pub struct Connection {
    /// The two ends, in the order written.
    pub ends: [Link; 2],
    /// Whether a `<` was written (or given to the builder) on each end.
    pub marked: [bool; 2],
    /// Whether each end's instance is initialized after the other end's:
    /// an explicit `<` or the service's spec-level `init_after`.
    pub init_after: [bool; 2],
    /// Where it was declared, if known.
    pub location: Option<Location>,
}

/// A checked module graph: every instance's type, parameters and
/// connections are valid, and the `<` markers admit an initialization order.
#[derive(Clone, Debug)]
pub struct ModuleGraph {
    pub(super) file: Option<String>,
    pub(super) instances: Vec<Instance>,
    pub(super) connections: Vec<Connection>,
    pub(super) init_order: Vec<InstanceId>,
    pub(super) by_name: HashMap<String, InstanceId>,
}

impl ModuleGraph {
    /// The file the graph came from, if any.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }
    /// All instances, in declaration order (indexed by [`InstanceId`]).
    pub fn instances(&self) -> &[Instance] {
        &self.instances
    }
    /// The instance with id `id`.
    ///
    /// # Panics
    /// If `id` is not from this graph.
    pub fn instance(&self, id: InstanceId) -> &Instance {
        &self.instances[id.index()]
    }
    /// The id of the instance called `name`.
    pub fn instance_by_name(&self, name: &str) -> Option<InstanceId> {
        self.by_name.get(name).copied()
    }
    /// Ids of all instances, in declaration order.
    pub fn ids(&self) -> impl Iterator<Item = InstanceId> + '_ {
        (0..self.instances.len() as u32).map(InstanceId)
    }
    /// The connections, in declaration order.
    pub fn connections(&self) -> &[Connection] {
        &self.connections
    }
    /// An initialization order honouring every `<` marker: each instance
    /// comes after all instances it must be initialized after. Ties are
    /// broken by declaration order, so the order is deterministic.
    pub fn init_order(&self) -> &[InstanceId] {
        &self.init_order
    }

    /// `instance.service` for a link, for messages and output.
    pub fn link_name(&self, link: Link) -> String {
        let inst = self.instance(link.instance);
        format!("{}.{}", inst.name, inst.spec.services[link.service].name)
    }

    /// Brings the graph to life the way Scout boots (thesis §3.2.3.2):
    /// `create` is called for every instance in declaration order (it can
    /// read the instance's `links` and connection counts), then `init` is
    /// called for every instance in [`init_order`](Self::init_order), with
    /// all created modules so it can use already-initialized neighbours.
    /// Stops at the first error.
    pub fn instantiate<M, E>(
        &self,
        mut create: impl FnMut(InstanceId, &Instance) -> Result<M, E>,
        mut init: impl FnMut(InstanceId, &mut [M]) -> Result<(), E>,
    ) -> Result<Vec<M>, E> {
        let mut modules = Vec::with_capacity(self.instances.len());
        for id in self.ids() {
            modules.push(create(id, self.instance(id))?);
        }
        for &id in &self.init_order {
            init(id, &mut modules)?;
        }
        Ok(modules)
    }

    /// A human-readable summary: instances with types and parameters,
    /// connections (with `<` where an end is initialized after the other)
    /// and the initialization order.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "module graph{}: {} instances, {} connections",
            self.file
                .as_deref()
                .map(|f| format!(" {f}"))
                .unwrap_or_default(),
            self.instances.len(),
            self.connections.len()
        );
        let width = self
            .instances
            .iter()
            .map(|i| i.name.len())
            .max()
            .unwrap_or(0);
        let _ = writeln!(s, "instances:");
        for inst in &self.instances {
            let _ = write!(s, "  {:width$}  {}", inst.name, inst.spec.name);
            for (k, v) in &inst.params {
                let _ = write!(s, " {k}={v}");
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "connections:");
        for c in &self.connections {
            let end = |i: usize| {
                let marker = if c.init_after[i] { "<" } else { "" };
                let inst = self.instance(c.ends[i].instance);
                format!(
                    "{}.{marker}{}",
                    inst.name, inst.spec.services[c.ends[i].service].name
                )
            };
            let _ = writeln!(s, "  {} <> {}", end(0), end(1));
        }
        let order: Vec<&str> = self
            .init_order
            .iter()
            .map(|&id| self.instance(id).name.as_str())
            .collect();
        let _ = writeln!(s, "init order: {}", order.join(", "));
        s
    }
}

/// Structural equality: the same instances (name, module type, parameters,
/// links), the same connections with the same markers and the same
/// initialization order. Source locations and file names are ignored, so a
/// graph built in Rust equals the same graph read from text.
impl PartialEq for ModuleGraph {
    fn eq(&self, other: &Self) -> bool {
        self.instances.len() == other.instances.len()
            && self.instances.iter().zip(&other.instances).all(|(a, b)| {
                a.name == b.name
                    && a.spec.name == b.spec.name
                    && a.params == b.params
                    && a.links == b.links
            })
            && self.connections.len() == other.connections.len()
            && self
                .connections
                .iter()
                .zip(&other.connections)
                .all(|(a, b)| {
                    a.ends == b.ends && a.marked == b.marked && a.init_after == b.init_after
                })
            && self.init_order == other.init_order
    }
}

impl Eq for ModuleGraph {}
