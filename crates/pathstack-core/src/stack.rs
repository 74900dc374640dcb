//! The stack: one per core, owning the module graph, the paths, the
//! classifier, the devices (inside their driver modules), the timers and the
//! scheduler. Single-threaded and non-preemptive, like Scout on a
//! uniprocessor; `Send`, so it can be moved to the thread that runs it.
//!
//! Time is passed in: [`Stack::poll`] takes `now`, so tests run on virtual
//! time and are deterministic.

use crate::attrs::{keys, Attrs};
use crate::demux::{Demux, DemuxKey, KeyMode};
use crate::device::Device;
use crate::error::{ModuleError, PathError, StackError};
use crate::exec::{entry, step, DynExec, Fate};
use crate::graph::spec::{ModuleSpec, SpecRegistry};
use crate::graph::ModuleGraph;
use crate::ids::{Dir, DropCounts, DropReason, ModuleId, PathId};
use crate::module::{parse_param, CreateCx, EndRoute, ModCx, Module, ModuleSlot, Route, RouteCx};
use crate::msg::{Msg, MsgPool, PoolConfig};
use crate::path::{Path, PathQueue, PathStats, QueueKind, SchedParams};
use crate::rules::{Rule, RuleTarget, RuleView};
use crate::sched::{RunQueue, SchedKind};
use crate::stage::{push_follow_up, Cx, Env, EstablishCx, FollowUp, Shared, Stage, TimerOwner};
use crate::time::{Duration, Instant};
use crate::timer::TimerWheel;
use std::collections::{BTreeMap, VecDeque};
use std::hash::{Hash, Hasher};

/// Limits and choices of a stack. Every queue and table is bounded by one
/// of these.
#[derive(Clone, Debug)]
pub struct StackConfig {
    /// The message pool.
    pub pool: PoolConfig,
    /// The scheduler to start with.
    pub sched: SchedKind,
    /// Most paths alive at once.
    pub max_paths: usize,
    /// Capacity of each path queue unless the path's `QUEUE_LEN` says otherwise.
    pub queue_len: usize,
    /// Most stages in one path (a longer route is a routing loop).
    pub max_stages: usize,
    /// Most follow-up messages (turned around or emitted) pending at once.
    pub follow_up_cap: usize,
    /// Most received frames waiting for classification.
    pub rx_cap: usize,
    /// Most timers armed at once.
    pub max_timers: usize,
    /// Resolution of the timer wheel.
    pub timer_tick: Duration,
    /// Measure processing time per path ([`PathStats::cpu_ns`](crate::path::PathStats::cpu_ns)).
    /// Off by default: the two clock reads per scheduling round cost more
    /// than a short path's whole processing (≈ 300 instructions per
    /// message on Linux, measured with cachegrind).
    pub account_time: bool,
}

impl Default for StackConfig {
    fn default() -> Self {
        StackConfig {
            pool: PoolConfig::default(),
            sched: SchedKind::PerMessage,
            max_paths: 1 << 20,
            queue_len: 64,
            max_stages: 32,
            follow_up_cap: 1024,
            rx_cap: 1024,
            max_timers: 1 << 16,
            timer_tick: Duration::from_micros(100),
            account_time: false,
        }
    }
}

/// What a module factory sees: the instance's name and parameters, and the
/// devices given to the stack.
pub struct ModuleSetup<'a> {
    instance: &'a str,
    params: &'a BTreeMap<String, String>,
    devices: &'a mut Vec<Option<Box<dyn Device>>>,
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
    map: BTreeMap<&'static str, (&'static ModuleSpec, ModuleFactory)>,
}

impl ModuleTypes {
    /// No module types.
    pub fn new() -> Self {
        Self::default()
    }
    /// The module types of the core: the synthetic modules.
    pub fn core() -> Self {
        let mut t = Self::new();
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

/// Builds a [`Stack`] from a checked module graph.
pub struct StackBuilder {
    graph: ModuleGraph,
    types: ModuleTypes,
    devices: Vec<Option<Box<dyn Device>>>,
    config: StackConfig,
    rules: Vec<Rule>,
}

impl StackBuilder {
    /// A builder for `graph`, whose module types come from `types`.
    pub fn new(graph: ModuleGraph, types: ModuleTypes) -> Self {
        StackBuilder {
            graph,
            types,
            devices: Vec::new(),
            config: StackConfig::default(),
            rules: Vec::new(),
        }
    }
    /// Gives the stack a device; driver modules name it by its index
    /// (`device=N`), in the order devices are added.
    pub fn device(mut self, d: impl Device + 'static) -> Self {
        self.devices.push(Some(Box::new(d)));
        self
    }
    /// Gives the stack a boxed device.
    pub fn boxed_device(mut self, d: Box<dyn Device>) -> Self {
        self.devices.push(Some(d));
        self
    }
    /// Sets the limits and choices.
    pub fn config(mut self, c: StackConfig) -> Self {
        self.config = c;
        self
    }
    /// Sets the scheduler.
    pub fn sched(mut self, s: SchedKind) -> Self {
        self.config.sched = s;
        self
    }
    /// Adds a transformation rule for `path_optimize`.
    pub fn rule(mut self, r: Rule) -> Self {
        self.rules.push(r);
        self
    }

    /// Creates the modules, links them as the graph says, and initializes
    /// them in an order honouring the `<` markers (thesis §3.2.3.2).
    pub fn build(mut self) -> Result<Stack, StackError> {
        let c = &self.config;
        let shared = Shared {
            pool: MsgPool::new(c.pool.clone()),
            timers: TimerWheel::new(c.timer_tick, 1024, c.max_timers),
            follow_ups: Vec::with_capacity(c.follow_up_cap),
            follow_up_cap: c.follow_up_cap,
            follow_up_drops: 0,
            rx: VecDeque::with_capacity(c.rx_cap),
            rx_cap: c.rx_cap,
            rx_drops: 0,
        };
        let mut modules = Vec::new();
        for inst in self.graph.instances() {
            let (_, factory) = self
                .types
                .map
                .get(inst.spec.name)
                .ok_or_else(|| ModuleError::UnknownType(inst.spec.name.to_string()))?;
            let mut setup = ModuleSetup {
                instance: &inst.name,
                params: &inst.params,
                devices: &mut self.devices,
            };
            let module = factory(&mut setup)?;
            modules.push(ModuleSlot {
                name: inst.name.clone(),
                spec: inst.spec,
                params: inst.params.clone(),
                module,
                links: inst.links.clone(),
                drops: DropCounts::default(),
            });
        }
        let mut demux = Demux::new();
        for (i, slot) in modules.iter().enumerate() {
            if let Some(p) = slot.module.partial_classifier() {
                demux
                    .set_partial_classifier(ModuleId(i as u32), p)
                    .map_err(|e| ModuleError::Init {
                        instance: slot.name.clone(),
                        reason: e.to_string(),
                    })?;
            }
        }
        let polled = (0..modules.len())
            .filter(|&i| modules[i].module.polls())
            .collect();
        let mut stack = Stack {
            modules,
            paths: Vec::new(),
            free: Vec::new(),
            live_paths: 0,
            shared,
            demux,
            runq: RunQueue::with_capacity(1024),
            sched: self.config.sched,
            rules: std::mem::take(&mut self.rules),
            now: Instant::ZERO,
            batch: Vec::with_capacity(batch_bound(self.config.sched)),
            work: VecDeque::with_capacity(self.config.follow_up_cap),
            fired: Vec::with_capacity(256),
            polled,
            config: self.config,
            graph: self.graph,
        };
        let order: Vec<ModuleId> = stack
            .graph
            .init_order()
            .iter()
            .map(|i| ModuleId(i.0))
            .collect();
        for m in order {
            stack.init_module(m)?;
        }
        Ok(stack)
    }
}

fn batch_bound(s: SchedKind) -> usize {
    match s {
        SchedKind::PerMessage => 1,
        SchedKind::Ldlp { batch } => batch.max(1),
    }
}

/// Stages made while routing a path: module, entry service, stage.
type Made = Vec<(ModuleId, Option<usize>, Box<dyn Stage>)>;

struct PathSlot {
    generation: u32,
    path: Option<Path>,
}

/// One message of an LDLP batch.
struct Slot {
    path: PathId,
    msg: Msg,
    alive: bool,
}

/// Which end of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `end[0]`: the stage created first.
    Zero,
    /// `end[1]`: the stage created last.
    One,
}

/// Stack-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StackStats {
    /// Paths alive.
    pub paths: usize,
    /// Demux nodes in the classifier.
    pub demux_nodes: usize,
    /// Received frames dropped because the receive queue was full.
    pub rx_drops: u64,
    /// Follow-up messages dropped because their list was full.
    pub follow_up_drops: u64,
    /// Timers armed.
    pub timers: usize,
}

/// A protocol stack: modules, paths, classifier, timers and scheduler.
pub struct Stack {
    modules: Vec<ModuleSlot>,
    paths: Vec<PathSlot>,
    free: Vec<u32>,
    live_paths: usize,
    shared: Shared,
    demux: Demux,
    runq: RunQueue,
    sched: SchedKind,
    rules: Vec<Rule>,
    now: Instant,
    batch: Vec<Slot>,
    work: VecDeque<FollowUp>,
    fired: Vec<TimerOwner>,
    /// Indices of the modules whose [`Module::polls`] said yes.
    polled: Vec<usize>,
    config: StackConfig,
    graph: ModuleGraph,
}

fn _assert_send() {
    fn is_send<T: Send>() {}
    is_send::<Stack>();
}

impl Stack {
    /// A builder for a stack over `graph`.
    pub fn builder(graph: ModuleGraph, types: ModuleTypes) -> StackBuilder {
        StackBuilder::new(graph, types)
    }

    // ----- modules -------------------------------------------------------

    fn init_module(&mut self, m: ModuleId) -> Result<(), StackError> {
        let (result, path_error) = self.run_module(m, |module, cx| module.init(cx));
        result?;
        match path_error {
            Some(e) => Err(ModuleError::InitPath {
                instance: self.modules[m.0 as usize].name.clone(),
                source: e,
            }
            .into()),
            None => Ok(()),
        }
    }

    /// Runs `f` on module `m` with its context, then creates the paths it
    /// asked for with [`ModCx::request_path`] and reports each result to
    /// [`Module::path_created`]. Returns `f`'s result and the first path
    /// creation error, if any. The one place a `ModCx` is made, so that
    /// every module call (init, timer, poll) keeps the same contract.
    fn run_module<R>(
        &mut self,
        m: ModuleId,
        f: impl FnOnce(&mut dyn Module, &mut ModCx<'_>) -> R,
    ) -> (R, Option<PathError>) {
        let mut requests = Vec::new();
        let r = {
            let slot = &mut self.modules[m.0 as usize];
            let mut cx = ModCx {
                now: self.now,
                module_id: m,
                instance: &slot.name,
                params: &slot.params,
                shared: &mut self.shared,
                drops: &mut slot.drops,
                path_requests: &mut requests,
            };
            f(slot.module.as_mut(), &mut cx)
        };
        if requests.is_empty() {
            // The common case, on every poll: nothing to create or drop.
            return (r, None);
        }
        let mut first_error = None;
        for (attrs, tag) in requests {
            let result = self.path_create(m, attrs);
            self.modules[m.0 as usize]
                .module
                .path_created(tag, result.as_ref().copied());
            if let Err(e) = result {
                first_error.get_or_insert(e);
            }
        }
        (r, first_error)
    }

    /// The module instance called `name`.
    pub fn module_id(&self, name: &str) -> Option<ModuleId> {
        self.modules
            .iter()
            .position(|s| s.name == name)
            .map(|i| ModuleId(i as u32))
    }

    /// The instance name of a module.
    pub fn module_name(&self, m: ModuleId) -> Option<&str> {
        self.modules.get(m.0 as usize).map(|s| s.name.as_str())
    }

    /// A module, if it is a `T`.
    pub fn module<T: Module>(&self, m: ModuleId) -> Option<&T> {
        let slot = self.modules.get(m.0 as usize)?;
        (&*slot.module as &dyn std::any::Any).downcast_ref::<T>()
    }

    /// A module, writable, if it is a `T`.
    pub fn module_mut<T: Module>(&mut self, m: ModuleId) -> Option<&mut T> {
        let slot = self.modules.get_mut(m.0 as usize)?;
        (&mut *slot.module as &mut dyn std::any::Any).downcast_mut::<T>()
    }

    /// Drops a module counted outside any path, by reason.
    pub fn module_drops(&self, m: ModuleId) -> Option<&DropCounts> {
        self.modules.get(m.0 as usize).map(|s| &s.drops)
    }

    /// A module's statistics lines ([`Module::stats`]).
    pub fn module_stats(&self, m: ModuleId) -> Option<Vec<(String, u64)>> {
        self.modules.get(m.0 as usize).map(|s| s.module.stats())
    }

    /// The module graph the stack was built from.
    pub fn graph(&self) -> &ModuleGraph {
        &self.graph
    }

    /// The message pool.
    pub fn pool(&self) -> &MsgPool {
        &self.shared.pool
    }

    /// Current stack time (the `now` of the last poll).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The classifier.
    pub fn demux(&self) -> &Demux {
        &self.demux
    }

    /// Stack-wide counters.
    pub fn stats(&self) -> StackStats {
        StackStats {
            paths: self.live_paths,
            demux_nodes: self.demux.node_count(),
            rx_drops: self.shared.rx_drops,
            follow_up_drops: self.shared.follow_up_drops,
            timers: self.shared.timers.len(),
        }
    }

    /// The scheduler in use.
    pub fn scheduler(&self) -> SchedKind {
        self.sched
    }

    /// Switches the scheduler (takes effect at the next scheduling round).
    pub fn set_scheduler(&mut self, s: SchedKind) {
        self.sched = s;
        let want = batch_bound(s);
        if self.batch.capacity() < want {
            self.batch.reserve(want - self.batch.len());
        }
    }

    // ----- paths ---------------------------------------------------------

    /// A path by id.
    pub fn path(&self, id: PathId) -> Option<&Path> {
        self.paths
            .get(id.index as usize)
            .filter(|s| s.generation == id.generation)
            .and_then(|s| s.path.as_ref())
    }

    fn path_mut(&mut self, id: PathId) -> Option<&mut Path> {
        live_mut(&mut self.paths, id)
    }

    /// Ids of all live paths.
    pub fn path_ids(&self) -> impl Iterator<Item = PathId> + '_ {
        self.paths.iter().enumerate().filter_map(|(i, s)| {
            s.path.as_ref().map(|_| PathId {
                index: i as u32,
                generation: s.generation,
            })
        })
    }

    fn alloc_path_id(&mut self) -> Result<PathId, PathError> {
        if self.live_paths >= self.config.max_paths {
            return Err(PathError::TableFull(self.config.max_paths));
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.paths.push(PathSlot {
                    generation: 0,
                    path: None,
                });
                (self.paths.len() - 1) as u32
            }
        };
        let slot = &mut self.paths[index as usize];
        slot.generation = slot.generation.wrapping_add(1);
        Ok(PathId {
            index,
            generation: slot.generation,
        })
    }

    /// Creates stages from module `start` on, following the routing
    /// decisions of the modules (and `PATHNAME`), until a module makes none.
    /// Returns the stages in creation order with their module and entry
    /// service. On error, the stages made so far are destroyed.
    fn route_stages(
        &mut self,
        start: ModuleId,
        entry_service: Option<usize>,
        attrs: &mut Attrs,
        growth: Dir,
        first_decision: Option<Route>,
        budget: usize,
    ) -> Result<Made, PathError> {
        let mut made: Made = Vec::new();
        let mut pathname: VecDeque<String> = attrs
            .get(&keys::PATHNAME)
            .map(|v| v.iter().cloned().collect())
            .unwrap_or_default();
        let mut cur = start;
        let mut entry = entry_service;
        let mut decision = first_decision;
        loop {
            let route = match decision.take() {
                Some(r) => r,
                None => {
                    if made.len() >= budget {
                        return Err(PathError::TooLong {
                            limit: self.config.max_stages,
                            module: self.modules[cur.0 as usize].name.clone(),
                        });
                    }
                    let slot = &mut self.modules[cur.0 as usize];
                    attrs.retain_understood(slot.spec.understands);
                    let mut cx = CreateCx {
                        module_id: cur,
                        instance: &slot.name,
                        params: &slot.params,
                        links: &slot.links,
                        growth,
                        pool: &self.shared.pool,
                    };
                    match slot.module.create_stage(entry, attrs, &mut cx) {
                        Ok(created) => {
                            made.push((cur, entry, created.stage));
                            created.route
                        }
                        Err(e) => {
                            self.destroy_loose(made);
                            return Err(e);
                        }
                    }
                }
            };
            match self.resolve_route(cur, route, &mut pathname) {
                Ok(Some((next, svc))) => {
                    cur = next;
                    entry = Some(svc);
                }
                Ok(None) => return Ok(made),
                Err(e) => {
                    self.destroy_loose(made);
                    return Err(e);
                }
            }
        }
    }

    /// Turns a module's routing decision into the next (module, service),
    /// consulting `PATHNAME` (whose next name, if any, must be the next
    /// module and is consumed).
    fn resolve_route(
        &self,
        cur: ModuleId,
        route: Route,
        pathname: &mut VecDeque<String>,
    ) -> Result<Option<(ModuleId, usize)>, PathError> {
        let slot = &self.modules[cur.0 as usize];
        let by_name = |name: &str, services: &mut dyn Iterator<Item = usize>| {
            services
                .flat_map(|s| slot.links.get(s).into_iter().flatten())
                .find(|l| self.graph.instances()[l.instance.0 as usize].name == name)
                .map(|l| (ModuleId(l.instance.0), l.service))
        };
        if let Some(wanted) = pathname.front().cloned() {
            // PATHNAME forces the route: among the decided service's links if
            // the module decided a service, else among all its links.
            let found = match route {
                Route::Service(s) | Route::Link { service: s, .. } => {
                    by_name(&wanted, &mut std::iter::once(s))
                }
                Route::End => by_name(&wanted, &mut (0..slot.links.len())),
            };
            return match found {
                Some(hop) => {
                    pathname.pop_front();
                    Ok(Some(hop))
                }
                None => Err(PathError::PathnameUnreachable {
                    module: slot.name.clone(),
                    wanted,
                }),
            };
        }
        let service_name = |s: usize| {
            slot.spec
                .services
                .get(s)
                .map_or_else(|| format!("#{s}"), |x| x.name.to_string())
        };
        match route {
            Route::End => Ok(None),
            Route::Service(s) => match slot.links.get(s).map(Vec::as_slice) {
                Some([only]) => Ok(Some((ModuleId(only.instance.0), only.service))),
                Some([]) | None => Err(PathError::NotConnected {
                    module: slot.name.clone(),
                    service: service_name(s),
                }),
                // Several connections and no PATHNAME: no unique decision,
                // so the path ends here (a short path).
                Some(_) => Ok(None),
            },
            Route::Link { service, link } => {
                match slot.links.get(service).and_then(|l| l.get(link)) {
                    Some(l) => Ok(Some((ModuleId(l.instance.0), l.service))),
                    None => Err(PathError::NotConnected {
                        module: slot.name.clone(),
                        service: format!("{}[{link}]", service_name(service)),
                    }),
                }
            }
        }
    }

    /// Destroys stages that never became a path (creation failed).
    fn destroy_loose(&mut self, made: Made) {
        let mut attrs = Attrs::new();
        let mut sched = SchedParams::default();
        for (m, _, mut stage) in made {
            let mods = [m];
            let ids = [0u32];
            let mut env = Env {
                now: self.now,
                path: PathId {
                    index: u32::MAX,
                    generation: 0,
                },
                modules: &mut self.modules,
                shared: &mut self.shared,
                attrs: &mut attrs,
                sched: &mut sched,
                stage_modules: &mods,
                stage_ids: &ids,
                origin: 0,
            };
            let mut cx = Cx {
                env: &mut env,
                pos: 0,
            };
            stage.destroy(&mut cx);
        }
    }

    /// Creates a path starting at `module` with invariants `attrs`
    /// (thesis §3.3.6): each module creates its stage and routes the path
    /// on until a leaf or a module that cannot decide; then the stages are
    /// established in creation order and the demux keys registered.
    pub fn path_create(&mut self, module: ModuleId, attrs: Attrs) -> Result<PathId, PathError> {
        if module.0 as usize >= self.modules.len() {
            return Err(PathError::NoSuchModule(module));
        }
        let id = self.alloc_path_id()?;
        let mut attrs = attrs;
        let made = match self.route_stages(
            module,
            None,
            &mut attrs,
            Dir::Forward,
            None,
            self.config.max_stages,
        ) {
            Ok(m) => m,
            Err(e) => {
                self.free.push(id.index);
                return Err(e);
            }
        };
        let qlen = attrs
            .get(&keys::QUEUE_LEN)
            .copied()
            .unwrap_or(self.config.queue_len);
        let mut sched = SchedParams::default();
        if let Some(&rt) = attrs.get(&keys::REALTIME) {
            sched.realtime = rt;
        }
        if let Some(&p) = attrs.get(&keys::PRIORITY) {
            sched.priority = p;
        }
        attrs.insert(&keys::CREATED_AT, self.now);
        let n = made.len();
        let mut stage_modules = Vec::with_capacity(n);
        let mut entries = Vec::with_capacity(n);
        let mut stages = Vec::with_capacity(n);
        for (m, e, s) in made {
            stage_modules.push(m);
            entries.push(e);
            stages.push(s);
        }
        let path = Path {
            id,
            exec: Box::new(DynExec { stages }),
            seq_key: seq_key(&stage_modules),
            stage_ids: (0..n as u32).collect(),
            next_stage_id: n as u32,
            stage_modules,
            entries,
            queues: std::array::from_fn(|_| PathQueue::new(qlen)),
            attrs,
            sched,
            stats: PathStats::default(),
            queued: [false; 2],
            stamp: 0,
        };
        self.paths[id.index as usize].path = Some(path);
        self.live_paths += 1;
        if let Err(e) = self.establish(id, None) {
            self.delete_inner(id);
            return Err(e);
        }
        Ok(id)
    }

    /// Runs the establish chain over the stages with creation number at
    /// least `from_stage` (all when `None`), then (re-)registers the demux
    /// keys.
    fn establish(&mut self, id: PathId, from_stage: Option<u32>) -> Result<(), PathError> {
        let Some(slot) = self.paths.get_mut(id.index as usize) else {
            return Err(PathError::NoSuchPath(id));
        };
        let Some(path) = slot.path.as_mut() else {
            return Err(PathError::NoSuchPath(id));
        };
        let mut order: Vec<usize> = (0..path.len())
            .filter(|&p| from_stage.is_none_or(|f| path.stage_ids[p] >= f))
            .collect();
        order.sort_by_key(|&p| path.stage_ids[p]);
        let mut aux = Attrs::new();
        let len = path.len();
        for pos in order {
            let m = path.stage_modules[pos];
            let mslot = &mut self.modules[m.0 as usize];
            let mut cx = EstablishCx {
                path: id,
                position: pos,
                len,
                module_id: m,
                module: &mut *mslot.module,
            };
            if let Some(stage) = path.exec.stage_mut(pos) {
                stage.establish(&mut aux, &mut cx).map_err(|e| match e {
                    PathError::Establish { .. } => e,
                    other => PathError::Establish {
                        module: mslot.name.clone(),
                        reason: other.to_string(),
                    },
                })?;
            }
        }
        // Demux keys, from the receiving end (end[1]) inwards.
        let mode = if path.attrs.get(&keys::PASSIVE_OPEN) == Some(&true) {
            KeyMode::Passive
        } else {
            KeyMode::Active
        };
        let mut levels = Vec::with_capacity(len);
        let mut demux_aux = Attrs::new();
        for pos in (0..len).rev() {
            let Some(stage) = path.exec.stage(pos) else {
                break;
            };
            match stage.demux_key(mode, &demux_aux) {
                DemuxKey::Pass => levels.push((path.stage_modules[pos], None)),
                DemuxKey::Key(k) => levels.push((path.stage_modules[pos], Some(k))),
                DemuxKey::Stop(k) => {
                    levels.push((path.stage_modules[pos], k));
                    break;
                }
            }
        }
        self.demux.remove(id);
        self.demux.register(id, mode, &levels, &mut demux_aux)?;
        Ok(())
    }

    /// Grows path `id` at `end` with invariants `attrs` (thesis §3.3.7).
    /// The end's module makes the first routing decision
    /// ([`Module::extend_route`]), or `PATHNAME` forces it. If extension
    /// fails the whole path is deleted (fate sharing).
    pub fn path_extend(&mut self, id: PathId, end: End, attrs: Attrs) -> Result<(), PathError> {
        let path = self.path(id).ok_or(PathError::NoSuchPath(id))?;
        let pos = match end {
            End::Zero => 0,
            End::One => path.len() - 1,
        };
        let m = path.stage_modules[pos];
        let entry_svc = path.entries[pos];
        let growth = match end {
            End::Zero => Dir::Backward,
            End::One => Dir::Forward,
        };
        let mut attrs = attrs;
        let route = self.modules[m.0 as usize]
            .module
            .extend_route(entry_svc, growth, &attrs);
        let has_pathname = attrs.get(&keys::PATHNAME).is_some_and(|p| !p.is_empty());
        if route == Route::End && !has_pathname {
            let module = self.modules[m.0 as usize].name.clone();
            self.delete_inner(id);
            return Err(PathError::CannotExtend {
                path: id,
                end: growth,
                module,
            });
        }
        let budget = self
            .config
            .max_stages
            .saturating_sub(self.path(id).map_or(0, Path::len));
        // `route_stages` starts with the end module's decision and creates
        // stages from the next module on.
        let made = match self.route_stages(m, entry_svc, &mut attrs, growth, Some(route), budget) {
            Ok(made) => made,
            Err(e) => {
                self.delete_inner(id);
                return Err(e);
            }
        };
        let Some(path) = self.path_mut(id) else {
            return Err(PathError::NoSuchPath(id));
        };
        let first_new = path.next_stage_id;
        // Splice the new stages in at that end, de-inlining first.
        let exec = std::mem::replace(&mut path.exec, Box::new(DynExec { stages: Vec::new() }));
        let mut stages = exec.into_stages();
        for (m, e, s) in made {
            let sid = path.next_stage_id;
            path.next_stage_id += 1;
            match end {
                End::One => {
                    stages.push(s);
                    path.stage_modules.push(m);
                    path.entries.push(e);
                    path.stage_ids.push(sid);
                }
                End::Zero => {
                    stages.insert(0, s);
                    path.stage_modules.insert(0, m);
                    path.entries.insert(0, e);
                    path.stage_ids.insert(0, sid);
                }
            }
        }
        path.exec = Box::new(DynExec { stages });
        path.seq_key = seq_key(&path.stage_modules);
        if let Err(e) = self.establish(id, Some(first_new)) {
            self.delete_inner(id);
            return Err(e);
        }
        Ok(())
    }

    /// Deletes a path: its stages' `destroy` run in creation order, its
    /// demux keys are removed and its queued messages freed (thesis §3.3.9).
    pub fn path_delete(&mut self, id: PathId) -> Result<(), PathError> {
        if self.path(id).is_none() {
            return Err(PathError::NoSuchPath(id));
        }
        self.delete_inner(id);
        Ok(())
    }

    fn delete_inner(&mut self, id: PathId) {
        let Some(slot) = self.paths.get_mut(id.index as usize) else {
            return;
        };
        if slot.generation != id.generation {
            return;
        }
        let Some(mut path) = slot.path.take() else {
            return;
        };
        self.demux.remove(id);
        let mut order: Vec<usize> = (0..path.len()).collect();
        order.sort_by_key(|&p| path.stage_ids[p]);
        let (exec, mut env, _) = path.split(self.now, &mut self.modules, &mut self.shared, 0);
        for pos in order {
            if let Some(stage) = exec.stage_mut(pos) {
                let mut cx = Cx { env: &mut env, pos };
                stage.destroy(&mut cx);
            }
        }
        self.free.push(id.index);
        self.live_paths -= 1;
    }

    /// Applies the stack's transformation rules to a path until no guard
    /// holds (at most 16 applications, against rules that never turn their
    /// guard false). Returns the names of the rules applied.
    pub fn path_optimize(&mut self, id: PathId) -> Result<Vec<String>, PathError> {
        let mut applied = Vec::new();
        for _ in 0..16 {
            let path = self.path(id).ok_or(PathError::NoSuchPath(id))?;
            let types: Vec<&'static str> = path
                .stage_modules
                .iter()
                .map(|m| self.modules[m.0 as usize].spec.name)
                .collect();
            let view = RuleView {
                path,
                module_types: &types,
            };
            let Some(i) = self.rules.iter().position(|r| r.guard(&view)) else {
                break;
            };
            let Some(slot) = self.paths.get_mut(id.index as usize) else {
                break;
            };
            let Some(path) = slot.path.as_mut() else {
                break;
            };
            let mut target = RuleTarget { path };
            self.rules[i].apply(&mut target)?;
            applied.push(self.rules[i].name().to_string());
        }
        Ok(applied)
    }

    /// Adds a transformation rule.
    pub fn add_rule(&mut self, r: Rule) {
        self.rules.push(r);
    }

    /// Changes a path's scheduling parameters under the thesis §3.5.1 rule
    /// (a pending path's deadline may only be tightened).
    pub fn set_sched(&mut self, id: PathId, params: SchedParams) -> Result<(), PathError> {
        let now = self.now;
        let path = self.path_mut(id).ok_or(PathError::NoSuchPath(id))?;
        let pending = path.is_pending();
        path.sched.update(params, now, pending)?;
        // A pending path gets a fresh run-queue entry ranked by the new
        // parameters; the old one is now stale.
        path.stamp = path.stamp.wrapping_add(1);
        let (sk, st, s) = (path.seq_key, path.stamp, path.sched);
        let queued = path.queued;
        for dir in [Dir::Forward, Dir::Backward] {
            if queued[dir.index()] {
                self.runq
                    .push(id, dir, sk, st, s.realtime, s.deadline, s.priority);
            }
        }
        Ok(())
    }

    // ----- messages in and out -------------------------------------------

    /// Puts `msg` on path `id`'s source queue for direction `dir`: it will
    /// enter at `end[0]` (forward) or `end[1]` (backward). Gives the
    /// message back if the path does not exist or the queue is full.
    pub fn send(&mut self, id: PathId, dir: Dir, msg: Msg) -> Result<(), Msg> {
        let Some(path) = live_mut(&mut self.paths, id) else {
            return Err(msg);
        };
        enqueue(path, &mut self.runq, dir, msg).inspect_err(|_| {
            path.count_drop(DropReason::SOURCE_FULL);
        })
    }

    /// Takes the next message that left path `id` travelling in `dir`
    /// (from its sink queue).
    pub fn recv(&mut self, id: PathId, dir: Dir) -> Option<Msg> {
        self.path_mut(id)?.queues[QueueKind::sink(dir) as usize].pop()
    }

    // ----- running ---------------------------------------------------------

    /// Does all work that is ready at `now`: fires timers, polls modules
    /// (device drivers receive), classifies received frames onto paths and
    /// runs the scheduler until no path is pending. Returns the number of
    /// messages and events handled.
    pub fn poll(&mut self, now: Instant) -> usize {
        if now > self.now {
            self.now = now;
        }
        let mut work = self.fire_timers();
        work += self.poll_modules();
        // Module timers and polls may have sent messages (ARP requests).
        self.drain_follow_ups();
        work += self.classify_rx();
        work += self.run_pending();
        work
    }

    /// Hands `frame` to the stack as if driver module `module` had received
    /// it: it is classified from `module` on the next [`Stack::poll`].
    /// For applications that run their own driver loop, and for tests.
    /// Returns `false` (and counts a drop) when the bounded receive queue is
    /// full or `module` does not exist.
    pub fn inject(&mut self, module: ModuleId, frame: Msg) -> bool {
        let Some(slot) = self.modules.get_mut(module.0 as usize) else {
            return false;
        };
        if self.shared.rx.len() >= self.shared.rx_cap {
            self.shared.rx_drops += 1;
            slot.drops.add(DropReason::RX_FULL);
            return false;
        }
        self.shared.rx.push_back((module, frame));
        true
    }

    /// The earliest time at which [`Stack::poll`] has timed work to do, if any.
    pub fn poll_at(&self) -> Option<Instant> {
        let t = self.shared.timers.next_deadline();
        let m = self.modules.iter().filter_map(|s| s.module.poll_at()).min();
        match (t, m) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn fire_timers(&mut self) -> usize {
        let mut fired = std::mem::take(&mut self.fired);
        fired.clear();
        self.shared.timers.expire(self.now, &mut |o| fired.push(o));
        let n = fired.len();
        for owner in fired.drain(..) {
            match owner {
                TimerOwner::Module { module, token } => {
                    if (module.0 as usize) < self.modules.len() {
                        // Path creation errors went to `path_created`.
                        let _ = self.run_module(module, |m, cx| m.on_timer(token, cx));
                    }
                }
                TimerOwner::Stage { path, stage, token } => {
                    self.stage_timer(path, stage, token);
                    self.drain_follow_ups();
                }
            }
        }
        self.fired = fired;
        n
    }

    fn stage_timer(&mut self, id: PathId, stage: u32, token: u64) {
        let Some(slot) = self.paths.get_mut(id.index as usize) else {
            return;
        };
        if slot.generation != id.generation {
            return;
        }
        let Some(path) = slot.path.as_mut() else {
            return;
        };
        let Some(pos) = path.stage_ids.iter().position(|&s| s == stage) else {
            return;
        };
        let (exec, mut env, _) = path.split(self.now, &mut self.modules, &mut self.shared, 0);
        if let Some(s) = exec.stage_mut(pos) {
            let mut cx = Cx { env: &mut env, pos };
            s.on_timer(token, &mut cx);
        }
    }

    fn poll_modules(&mut self) -> usize {
        let mut work = 0;
        for k in 0..self.polled.len() {
            let m = ModuleId(self.polled[k] as u32);
            // Path creation errors went to `path_created`.
            work += self.run_module(m, |module, cx| module.poll(cx)).0;
        }
        work
    }

    fn classify_rx(&mut self) -> usize {
        let mut n = 0;
        while let Some((m, msg)) = self.shared.rx.pop_front() {
            n += 1;
            match self.demux.classify(m, msg.as_slice()) {
                Some((id, dir)) => {
                    let Some(path) = self
                        .paths
                        .get_mut(id.index as usize)
                        .filter(|s| s.generation == id.generation)
                        .and_then(|s| s.path.as_mut())
                    else {
                        self.modules[m.0 as usize].drops.add(DropReason::NO_PATH);
                        continue;
                    };
                    if enqueue(path, &mut self.runq, dir, msg).is_err() {
                        path.count_drop(DropReason::SOURCE_FULL);
                    }
                }
                None => self.modules[m.0 as usize].drops.add(DropReason::NO_PATH),
            }
        }
        n
    }

    /// Runs pending paths until none is left. Returns messages processed.
    pub fn run_pending(&mut self) -> usize {
        let mut n = 0;
        while let Some(p) = self.runq.pop() {
            let Some(path) = self
                .paths
                .get_mut(p.path.index as usize)
                .filter(|s| s.generation == p.path.generation)
                .and_then(|s| s.path.as_mut())
            else {
                continue;
            };
            if p.stamp != path.stamp || !path.queued[p.dir.index()] {
                continue;
            }
            path.queued[p.dir.index()] = false;
            n += match self.sched {
                SchedKind::PerMessage => self.run_one(p.path, p.dir),
                SchedKind::Ldlp { batch } => self.run_batch(p.path, p.dir, p.seq_key, batch),
            };
        }
        n
    }

    /// Per-message: one message of path `id` through the whole path, then
    /// its follow-ups.
    fn run_one(&mut self, id: PathId, dir: Dir) -> usize {
        let t0 = self.config.account_time.then(std::time::Instant::now);
        let Some(path) = self.paths[id.index as usize].path.as_mut() else {
            return 0;
        };
        let Some(mut msg) = path.queues[QueueKind::source(dir) as usize].pop() else {
            return 0;
        };
        path.stats.msgs_in[dir.index()] += 1;
        path.stats.bytes_in[dir.index()] += msg.len() as u64;
        let fate = {
            let (exec, mut env, _) = path.split(self.now, &mut self.modules, &mut self.shared, 0);
            let start = entry(dir, exec.len());
            exec.run(start, dir, &mut msg, &mut env)
        };
        // More input waiting: back in the run queue behind its peers.
        if !path.queues[QueueKind::source(dir) as usize].is_empty() {
            requeue(path, &mut self.runq, dir);
        }
        self.settle(id, fate, msg, 0);
        self.drain_follow_ups();
        if let Some(t0) = t0 {
            if let Some(p) = self.paths[id.index as usize].path.as_mut() {
                p.stats.cpu_ns += t0.elapsed().as_nanos() as u64;
            }
        }
        1
    }

    /// LDLP: a batch of messages from `first` and the other pending paths
    /// with the same module sequence and direction, run stage-major.
    fn run_batch(&mut self, first: PathId, dir: Dir, seq_key: u64, bound: usize) -> usize {
        let t0 = self.config.account_time.then(std::time::Instant::now);
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let bound = bound.max(1);
        self.take_input(first, dir, bound, &mut batch);
        if batch.len() < bound {
            let mut others: Vec<PathId> = Vec::new();
            let paths = &self.paths;
            self.runq.take_matching(seq_key, dir, |p| {
                let live = paths
                    .get(p.path.index as usize)
                    .filter(|s| s.generation == p.path.generation)
                    .and_then(|s| s.path.as_ref())
                    .is_some_and(|path| path.stamp == p.stamp && path.queued[dir.index()]);
                if live && !others.contains(&p.path) {
                    others.push(p.path);
                }
                others.len() + 1 < bound
            });
            for id in others {
                if let Some(path) = self.path_mut(id) {
                    path.queued[dir.index()] = false;
                }
                let room = bound - batch.len();
                if room == 0 {
                    // Could not take it after all: put it back.
                    if let Some(path) = live_mut(&mut self.paths, id) {
                        requeue(path, &mut self.runq, dir);
                    }
                    continue;
                }
                self.take_input(id, dir, room, &mut batch);
            }
        }
        let n = batch.len();
        let Some(len) = batch.first().and_then(|s| self.path(s.path)).map(Path::len) else {
            self.batch = batch;
            return 0;
        };
        let mut pos = entry(dir, len);
        loop {
            let mut any = false;
            for (k, slot) in batch.iter_mut().enumerate() {
                if !slot.alive {
                    continue;
                }
                let Some(path) = self.paths[slot.path.index as usize].path.as_mut() else {
                    slot.alive = false;
                    continue;
                };
                let (exec, mut env, stats) =
                    path.split(self.now, &mut self.modules, &mut self.shared, k as u32);
                match exec.process_at(pos, dir, &mut slot.msg, &mut env) {
                    crate::stage::Verdict::Next => any = true,
                    crate::stage::Verdict::Back => {
                        slot.alive = false;
                        let f = FollowUp {
                            path: slot.path,
                            from: pos,
                            dir: dir.reverse(),
                            msg: std::mem::take(&mut slot.msg),
                            origin: k as u32,
                        };
                        if push_follow_up(env.shared, f).is_err() {
                            stats.drops.add(DropReason::FOLLOW_UP_OVERFLOW);
                        }
                    }
                    crate::stage::Verdict::Consumed => {
                        slot.alive = false;
                        stats.consumed += 1;
                    }
                    crate::stage::Verdict::Drop(r) => {
                        slot.alive = false;
                        stats.drops.add(r);
                    }
                }
            }
            if !any {
                break;
            }
            match step(pos, dir, len) {
                Some(p) => pos = p,
                None => {
                    for (k, slot) in batch.iter_mut().enumerate() {
                        if slot.alive {
                            slot.alive = false;
                            let msg = std::mem::take(&mut slot.msg);
                            self.settle(slot.path, Fate::Out(dir), msg, k as u32);
                        }
                    }
                    break;
                }
            }
        }
        self.drain_follow_ups();
        if let Some(t0) = t0 {
            // Processing time is shared out evenly over the batch's messages.
            let per = t0.elapsed().as_nanos() as u64 / n.max(1) as u64;
            for slot in &batch {
                if let Some(p) = self.paths[slot.path.index as usize].path.as_mut() {
                    p.stats.cpu_ns += per;
                }
            }
        }
        batch.clear();
        self.batch = batch;
        n
    }

    /// Moves up to `room` messages of path `id`'s source queue for `dir`
    /// into the batch; requeues the path if it has more.
    fn take_input(&mut self, id: PathId, dir: Dir, room: usize, batch: &mut Vec<Slot>) {
        let Some(path) = live_mut(&mut self.paths, id) else {
            return;
        };
        let q = QueueKind::source(dir) as usize;
        let mut taken = 0;
        while taken < room {
            let Some(msg) = path.queues[q].pop() else {
                break;
            };
            path.stats.msgs_in[dir.index()] += 1;
            path.stats.bytes_in[dir.index()] += msg.len() as u64;
            batch.push(Slot {
                path: id,
                msg,
                alive: true,
            });
            taken += 1;
        }
        if !path.queues[q].is_empty() {
            requeue(path, &mut self.runq, dir);
        }
    }

    /// Deals with how a message's trip ended.
    fn settle(&mut self, id: PathId, fate: Fate, msg: Msg, origin: u32) {
        match fate {
            Fate::Out(dir) => self.leave(id, dir, msg),
            Fate::Consumed => {
                if let Some(p) = self.path_mut(id) {
                    p.stats.consumed += 1;
                }
            }
            Fate::Dropped(r) => {
                if let Some(p) = self.path_mut(id) {
                    p.count_drop(r);
                }
            }
            Fate::Turned { from, dir } => {
                let f = FollowUp {
                    path: id,
                    from,
                    dir,
                    msg,
                    origin,
                };
                if push_follow_up(&mut self.shared, f).is_err() {
                    if let Some(p) = self.path_mut(id) {
                        p.count_drop(DropReason::FOLLOW_UP_OVERFLOW);
                    }
                }
            }
        }
    }

    /// A message went past the last stage of path `id` in `dir`: the end
    /// module may route it onto another path (dynamic routing at a short
    /// path's end); otherwise it goes to the sink queue.
    fn leave(&mut self, id: PathId, dir: Dir, mut msg: Msg) {
        let Some(path) = self.paths[id.index as usize].path.as_mut() else {
            return;
        };
        path.stats.msgs_out[dir.index()] += 1;
        path.stats.bytes_out[dir.index()] += msg.len() as u64;
        let end_pos = match dir {
            Dir::Forward => path.len() - 1,
            Dir::Backward => 0,
        };
        let m = path.stage_modules[end_pos];
        let mut rcx = RouteCx {
            now: self.now,
            path: id,
            module_id: m,
            demux: &self.demux,
            shared: &mut self.shared,
        };
        let next = self.modules[m.0 as usize]
            .module
            .route_end(dir, &mut msg, &mut rcx);
        match next {
            EndRoute::Continue(next_id, next_dir) if next_id != id => {
                if let Some(np) = live_mut(&mut self.paths, next_id) {
                    // Already processed up to module `m`: continue right
                    // after `m`'s stage on the new path if it has one.
                    let at = match next_dir {
                        Dir::Backward => np.stage_modules.iter().rposition(|&x| x == m),
                        Dir::Forward => np.stage_modules.iter().position(|&x| x == m),
                    };
                    match at {
                        Some(from) => {
                            if self
                                .shared
                                .send_on(next_id, from, next_dir, msg, 0)
                                .is_err()
                            {
                                np.count_drop(DropReason::FOLLOW_UP_OVERFLOW);
                            }
                        }
                        None => {
                            if enqueue(np, &mut self.runq, next_dir, msg).is_err() {
                                np.count_drop(DropReason::SOURCE_FULL);
                            }
                        }
                    }
                    return;
                }
            }
            EndRoute::Drop(reason) => {
                self.modules[m.0 as usize].drops.add(reason);
                return;
            }
            EndRoute::Continue(..) | EndRoute::Sink => {}
        }
        let Some(path) = self.paths[id.index as usize].path.as_mut() else {
            return;
        };
        if path.queues[QueueKind::sink(dir) as usize]
            .push(msg)
            .is_err()
        {
            path.count_drop(DropReason::SINK_FULL);
        }
    }

    /// Processes follow-ups (turned and emitted messages), grouped by the
    /// message of the batch they came from, each group breadth-first. New
    /// follow-ups join the end of their origin's group.
    fn drain_follow_ups(&mut self) {
        if self.shared.follow_ups.is_empty() {
            return;
        }
        let mut work = std::mem::take(&mut self.work);
        // Stable by origin: emission order is kept within a group. (Already
        // sorted after a per-message run, where every origin is 0.)
        if !self.shared.follow_ups.is_sorted_by_key(|f| f.origin) {
            self.shared.follow_ups.sort_by_key(|f| f.origin);
        }
        work.extend(self.shared.follow_ups.drain(..));
        while let Some(f) = work.pop_front() {
            let origin = f.origin;
            self.run_follow_up(f);
            if !self.shared.follow_ups.is_empty() {
                let at = work
                    .iter()
                    .position(|w| w.origin > origin)
                    .unwrap_or(work.len());
                for (i, g) in self.shared.follow_ups.drain(..).enumerate() {
                    work.insert(at + i, g);
                }
            }
        }
        self.work = work;
    }

    fn run_follow_up(&mut self, f: FollowUp) {
        let FollowUp {
            path: id,
            from,
            dir,
            mut msg,
            origin,
        } = f;
        let Some(path) = self
            .paths
            .get_mut(id.index as usize)
            .filter(|s| s.generation == id.generation)
            .and_then(|s| s.path.as_mut())
        else {
            return;
        };
        let Some(start) = step(from, dir, path.len()) else {
            self.leave(id, dir, msg);
            return;
        };
        let fate = {
            let (exec, mut env, _) =
                path.split(self.now, &mut self.modules, &mut self.shared, origin);
            exec.run(start, dir, &mut msg, &mut env)
        };
        self.settle(id, fate, msg, origin);
    }
}

/// The live path `id` in `paths`, if any (a free function so that callers
/// can borrow other fields of the stack at the same time).
fn live_mut(paths: &mut [PathSlot], id: PathId) -> Option<&mut Path> {
    paths
        .get_mut(id.index as usize)
        .filter(|s| s.generation == id.generation)
        .and_then(|s| s.path.as_mut())
}

/// Puts a message on a path's source queue and makes the path pending.
fn enqueue(path: &mut Path, runq: &mut RunQueue, dir: Dir, msg: Msg) -> Result<(), Msg> {
    path.queues[QueueKind::source(dir) as usize].push(msg)?;
    if !path.queued[dir.index()] {
        requeue(path, runq, dir);
    }
    Ok(())
}

fn requeue(path: &mut Path, runq: &mut RunQueue, dir: Dir) {
    path.queued[dir.index()] = true;
    let s = path.sched;
    runq.push(
        path.id,
        dir,
        path.seq_key,
        path.stamp,
        s.realtime,
        s.deadline,
        s.priority,
    );
}

fn seq_key(mods: &[ModuleId]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    mods.hash(&mut h);
    h.finish()
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("modules", &self.modules.len())
            .field("paths", &self.live_paths)
            .field("sched", &self.sched)
            .finish()
    }
}
