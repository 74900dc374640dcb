//! Building a module graph in Rust, and every build-time check.
//!
//! The text parser makes the same calls (with source locations), so a graph
//! from a file and a graph from code are checked by the same code.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use super::error::{GraphError, GraphErrorKind, GraphErrors, Location};
use super::init_order;
use super::module_graph::{Connection, Instance, InstanceId, Link, ModuleGraph};
use super::spec::SpecRegistry;

/// One end of a connection as declared: an instance's service, optionally
/// with Scout's `<` marker, meaning "this instance is initialized after the
/// instance at the other end" (thesis §3.2.2, §3.2.3.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceRef {
    /// Instance name.
    pub instance: String,
    /// Service name.
    pub service: String,
    /// Whether this end carries the `<` marker.
    pub init_after: bool,
}

impl ServiceRef {
    /// `instance.service`, without a marker.
    pub fn new(instance: impl Into<String>, service: impl Into<String>) -> Self {
        ServiceRef {
            instance: instance.into(),
            service: service.into(),
            init_after: false,
        }
    }
    /// The same end with the `<` marker.
    pub fn init_after(mut self) -> Self {
        self.init_after = true;
        self
    }
}

impl fmt::Display for ServiceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let marker = if self.init_after { "<" } else { "" };
        write!(f, "{}.{marker}{}", self.instance, self.service)
    }
}

#[derive(Clone, Debug)]
struct InstanceDecl {
    name: String,
    module: String,
    params: Vec<(String, String)>,
    location: Option<Location>,
}

#[derive(Clone, Debug)]
struct ConnectionDecl {
    ends: [ServiceRef; 2],
    location: Option<Location>,
}

/// Collects instance and connection declarations; [`build`](Self::build)
/// checks them all and reports every error.
///
/// ```
/// use pathstack_core::graph::spec::*;
/// use pathstack_core::graph::GraphBuilder;
/// static APP: ModuleSpec = ModuleSpec {
///     name: "APP", doc: "an application", params: &[], understands: &[],
///     services: &[ServiceSpec::new("down", ServiceType::AIO, Count::ExactlyOne).init_after()],
/// };
/// static NET: ModuleSpec = ModuleSpec {
///     name: "NET", doc: "a network", understands: &[],
///     services: &[ServiceSpec::new("up", ServiceType::AIO, Count::Any)],
///     params: &[ParamSpec::optional("mtu", "bytes")],
/// };
/// let mut specs = SpecRegistry::new();
/// specs.register(&APP).register(&NET);
/// let mut b = GraphBuilder::new(&specs);
/// b.instance("app", "APP");
/// b.instance("net", "NET").param("mtu", 1500);
/// b.connect(("app", "down"), ("net", "up"));
/// let g = b.build().unwrap();
/// let order: Vec<_> = g.init_order().iter().map(|&i| g.instance(i).name.as_str()).collect();
/// assert_eq!(order, ["net", "app"]);
/// ```
#[derive(Clone, Debug)]
pub struct GraphBuilder<'r> {
    specs: &'r SpecRegistry,
    instances: Vec<InstanceDecl>,
    connections: Vec<ConnectionDecl>,
}

/// Adds parameters and a location to an instance just declared with
/// [`GraphBuilder::instance`].
#[derive(Debug)]
pub struct InstanceBuilder<'b> {
    decl: &'b mut InstanceDecl,
}

impl InstanceBuilder<'_> {
    /// Sets parameter `key` (checked against the module type's params).
    pub fn param(self, key: impl Into<String>, value: impl ToString) -> Self {
        self.decl.params.push((key.into(), value.to_string()));
        self
    }
    /// Records where the instance was declared, for error messages.
    pub fn at(self, location: Location) -> Self {
        self.decl.location = Some(location);
        self
    }
}

impl<'r> GraphBuilder<'r> {
    /// An empty graph over the module types in `specs`.
    pub fn new(specs: &'r SpecRegistry) -> Self {
        GraphBuilder {
            specs,
            instances: Vec::new(),
            connections: Vec::new(),
        }
    }

    /// Declares instance `name` of type `module` (`name=… module=…;`).
    pub fn instance(
        &mut self,
        name: impl Into<String>,
        module: impl Into<String>,
    ) -> InstanceBuilder<'_> {
        self.instances.push(InstanceDecl {
            name: name.into(),
            module: module.into(),
            params: Vec::new(),
            location: None,
        });
        let decl = self.instances.last_mut().expect("just pushed");
        InstanceBuilder { decl }
    }

    /// Connects `a.0`'s service `a.1` to `b.0`'s service `b.1`
    /// (`a.s<>b.t;`).
    pub fn connect(&mut self, a: (&str, &str), b: (&str, &str)) -> &mut Self {
        self.connection(ServiceRef::new(a.0, a.1), ServiceRef::new(b.0, b.1), None)
    }

    /// Like [`connect`](Self::connect) with the `<` marker on `a`'s side
    /// (`a.<s<>b.t;`): instance `a.0` is initialized after `b.0`.
    pub fn connect_ordered(&mut self, a: (&str, &str), b: (&str, &str)) -> &mut Self {
        self.connection(
            ServiceRef::new(a.0, a.1).init_after(),
            ServiceRef::new(b.0, b.1),
            None,
        )
    }

    /// The general form: a connection between two ends, each possibly
    /// marked with `<`, declared at `location`.
    pub fn connection(
        &mut self,
        a: ServiceRef,
        b: ServiceRef,
        location: Option<Location>,
    ) -> &mut Self {
        self.connections.push(ConnectionDecl {
            ends: [a, b],
            location,
        });
        self
    }

    /// Checks everything and returns the graph, or every error found,
    /// in source order.
    pub fn build(&self) -> Result<ModuleGraph, GraphErrors> {
        let mut errors = Vec::new();
        let mut err = |location: &Option<Location>, kind| {
            errors.push(GraphError {
                location: location.clone(),
                kind,
            })
        };

        // Instances: names, types, parameters.
        let mut instances: Vec<Instance> = Vec::new();
        let mut by_name: HashMap<String, InstanceId> = HashMap::new();
        // Declared names whose declaration was faulty: connections to them
        // are not checked, so one mistake gives one error.
        let mut broken: HashMap<&str, Option<u32>> = HashMap::new();
        for decl in &self.instances {
            let first_line = by_name
                .get(&decl.name)
                .map(|id| instances[id.index()].location.as_ref().map(|l| l.line))
                .or_else(|| broken.get(decl.name.as_str()).copied());
            if let Some(first_line) = first_line {
                err(
                    &decl.location,
                    GraphErrorKind::DuplicateInstance {
                        name: decl.name.clone(),
                        first_line,
                    },
                );
                continue;
            }
            let line = decl.location.as_ref().map(|l| l.line);
            if !is_valid_name(&decl.name) {
                err(
                    &decl.location,
                    GraphErrorKind::InvalidName {
                        name: decl.name.clone(),
                    },
                );
                broken.insert(&decl.name, line);
                continue;
            }
            let Some(spec) = self.specs.get(&decl.module) else {
                err(
                    &decl.location,
                    GraphErrorKind::UnknownModuleType {
                        instance: decl.name.clone(),
                        module: decl.module.clone(),
                        known: self.specs.iter().map(|s| s.name.to_owned()).collect(),
                    },
                );
                broken.insert(&decl.name, line);
                continue;
            };
            let mut params = BTreeMap::new();
            for (key, value) in &decl.params {
                if spec.param(key).is_none() {
                    err(
                        &decl.location,
                        GraphErrorKind::UnknownParam {
                            instance: decl.name.clone(),
                            module: spec.name.to_owned(),
                            key: key.clone(),
                            accepted: spec.params.iter().map(|p| p.key.to_owned()).collect(),
                        },
                    );
                } else if params.insert(key.clone(), value.clone()).is_some() {
                    err(
                        &decl.location,
                        GraphErrorKind::DuplicateParam {
                            instance: decl.name.clone(),
                            key: key.clone(),
                        },
                    );
                }
            }
            for p in spec.params.iter().filter(|p| p.required) {
                if !params.contains_key(p.key) {
                    err(
                        &decl.location,
                        GraphErrorKind::MissingParam {
                            instance: decl.name.clone(),
                            module: spec.name.to_owned(),
                            key: p.key.to_owned(),
                            doc: p.doc.to_owned(),
                        },
                    );
                }
            }
            // Even with parameter errors the instance is real and
            // well-typed: keep it so its connections are still checked.
            by_name.insert(decl.name.clone(), InstanceId(instances.len() as u32));
            instances.push(Instance {
                name: decl.name.clone(),
                spec,
                params,
                links: vec![Vec::new(); spec.services.len()],
                location: decl.location.clone(),
            });
        }

        // Connections: resolve both ends, check compatibility, link.
        let mut connections = Vec::new();
        // Services whose count cannot be judged because a connection meant
        // for them failed to resolve.
        let mut uncounted: HashSet<(InstanceId, Option<usize>)> = HashSet::new();
        let mut link_lines: HashMap<(InstanceId, usize), Vec<u32>> = HashMap::new();
        for decl in &self.connections {
            let written = || format!("{}<>{}", decl.ends[0], decl.ends[1]);
            let mut resolved = [None, None];
            for (slot, end) in resolved.iter_mut().zip(&decl.ends) {
                let Some(&id) = by_name.get(&end.instance) else {
                    if !broken.contains_key(end.instance.as_str()) {
                        err(
                            &decl.location,
                            GraphErrorKind::UnknownInstance {
                                name: end.instance.clone(),
                                connection: written(),
                            },
                        );
                    }
                    continue;
                };
                let spec = instances[id.index()].spec;
                match spec.service(&end.service) {
                    Some(svc) => *slot = Some((id, svc)),
                    None => {
                        err(
                            &decl.location,
                            GraphErrorKind::UnknownService {
                                instance: end.instance.clone(),
                                module: spec.name.to_owned(),
                                service: end.service.clone(),
                                available: spec
                                    .services
                                    .iter()
                                    .map(|s| s.name.to_owned())
                                    .collect(),
                            },
                        );
                        // The misspelt service is probably one of this
                        // instance's real ones: don't count any of them.
                        uncounted.insert((id, None));
                    }
                }
            }
            let [Some(a), Some(b)] = resolved else {
                for (id, svc) in resolved.into_iter().flatten() {
                    uncounted.insert((id, Some(svc)));
                }
                continue;
            };
            let sa = &instances[a.0.index()].spec.services[a.1];
            let sb = &instances[b.0.index()].spec.services[b.1];
            if !sa.ty.compatible_with(&sb.ty) {
                err(
                    &decl.location,
                    GraphErrorKind::IncompatibleServices {
                        a: format!("{}.{}", decl.ends[0].instance, sa.name),
                        a_type: sa.ty,
                        b: format!("{}.{}", decl.ends[1].instance, sb.name),
                        b_type: sb.ty,
                    },
                );
                // Still linked, so the connection counts stay truthful.
            }
            instances[a.0.index()].links[a.1].push(Link {
                instance: b.0,
                service: b.1,
            });
            instances[b.0.index()].links[b.1].push(Link {
                instance: a.0,
                service: a.1,
            });
            if let Some(line) = decl.location.as_ref().map(|l| l.line) {
                link_lines.entry(a).or_default().push(line);
                if a != b {
                    link_lines.entry(b).or_default().push(line);
                }
            }
            let marked = [decl.ends[0].init_after, decl.ends[1].init_after];
            connections.push(Connection {
                ends: [
                    Link {
                        instance: a.0,
                        service: a.1,
                    },
                    Link {
                        instance: b.0,
                        service: b.1,
                    },
                ],
                marked,
                init_after: [marked[0] || sa.init_after, marked[1] || sb.init_after],
                location: decl.location.clone(),
            });
        }

        // Connection counts (thesis §3.2.3: at most one, exactly one, at
        // least one, any), declared per service.
        for (i, inst) in instances.iter().enumerate() {
            let id = InstanceId(i as u32);
            if uncounted.contains(&(id, None)) {
                continue;
            }
            for (s, svc) in inst.spec.services.iter().enumerate() {
                let actual = inst.links[s].len();
                if svc.count.allows(actual) || uncounted.contains(&(id, Some(s))) {
                    continue;
                }
                err(
                    &inst.location,
                    GraphErrorKind::ConnectionCount {
                        service: format!("{}.{}", inst.name, svc.name),
                        module: inst.spec.name.to_owned(),
                        constraint: svc.count,
                        actual,
                        lines: link_lines.remove(&(id, s)).unwrap_or_default(),
                    },
                );
            }
        }

        // Initialization order from the `<` markers (thesis §3.2.3.2).
        let init_order = match init_order::compute(&instances, &connections) {
            Ok(order) => order,
            Err(cycles) => {
                for cycle in cycles {
                    err(
                        &cycle.location,
                        GraphErrorKind::InitCycle {
                            instances: cycle
                                .instances
                                .iter()
                                .map(|id| instances[id.index()].name.clone())
                                .collect(),
                            lines: cycle.lines,
                        },
                    );
                }
                Vec::new()
            }
        };

        if !errors.is_empty() {
            // Source order; errors without a location (builder use) last,
            // each group in the order the checks found them.
            errors.sort_by_key(|e| e.location.as_ref().map_or(u32::MAX, |l| l.line));
            return Err(GraphErrors(errors));
        }
        Ok(ModuleGraph {
            file: None,
            instances,
            connections,
            init_order,
            by_name,
        })
    }
}

/// Whether `name` can be written in a connection: letters, digits, `_`, `-`.
pub(super) fn is_valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_name_char)
}

/// The characters of instance, service and parameter names.
pub(super) fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}
