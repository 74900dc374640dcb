//! The life of a path (thesis §3.3.6–§3.3.9): creation by routing from
//! module to module, establishment and demux registration, extension at
//! either end, optimization by transformation rules, deletion.

use super::pending::requeue;
use super::{End, Stack};
use crate::admission::{Reservation, Usage};
use crate::attrs::{keys, Attrs};
use crate::demux::{DemuxKey, KeyMode, MAX_LEVELS};
use crate::error::PathError;
use crate::exec::DynExec;
use crate::ids::{Dir, ModuleId, PathId};
use crate::module::{CreateCx, Route};
use crate::ops::Ops;
use crate::path::{Path, PathStats};
use crate::path_deadline::PathDeadline;
use crate::path_queues::PathQueues;
use crate::rules::{Rule, RuleTarget, RuleView};
use crate::runtime::Env;
use crate::sched::SchedParams;
use crate::stage::{Cx, EstablishCx, Stage};
use crate::stage_view::StageView;
use crate::vacant_exec::VacantExec;
use std::collections::VecDeque;

/// Stages a path is routed through, as `route_stages` reserves them.
const ROUTE_STAGES: usize = 8;

/// Module types `apply_rules` lists on the stack (the default
/// `max_stages`).
const ROUTED_TYPES: usize = 32;

/// Stages made while routing a path: module, entry service, stage.
type Made = Vec<(ModuleId, Option<usize>, Box<dyn Stage>)>;

/// A stage's entry service as its path keeps it: a module has a handful
/// of services, and 8 octets a stage instead of 16 is 40 less a path of
/// five (issue 28 item 4).
fn entry(service: Option<usize>) -> Option<u32> {
    service.and_then(|s| u32::try_from(s).ok())
}

impl Stack {
    /// A path by id.
    pub fn path(&self, id: PathId) -> Option<&Path> {
        self.paths.get(id)
    }

    /// Ids of all live paths.
    pub fn path_ids(&self) -> impl Iterator<Item = PathId> + '_ {
        self.paths.ids()
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
        // Room for a connection's stages (socket, TCP, IP, ARP, ETH,
        // driver) at once: grown from empty, the list cost an allocation
        // and a reallocation per path made (issue 28 item 4).
        let mut made: Made = Vec::with_capacity(ROUTE_STAGES);
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
                    let (module, slot) = slot.parts_mut();
                    let mut cx = CreateCx {
                        ops: Ops::new(self.now, &mut self.shared),
                        module_id: cur,
                        instance: slot.name,
                        params: slot.params,
                        links: slot.links,
                        entry,
                        growth,
                    };
                    match module.create_stage(attrs, &mut cx) {
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
        // One stage at a time, as if alone on a path that has no id.
        let mut view = StageView {
            id: PathId {
                index: u32::MAX,
                generation: 0,
            },
            stage_modules: vec![ModuleId(0)],
            stage_ids: vec![0],
            attrs: Attrs::new(),
            sched: SchedParams::default(),
        };
        for (m, _, mut stage) in made {
            view.stage_modules[0] = m;
            let mut env = Env {
                ops: Ops::new(self.now, &mut self.shared),
                modules: &mut self.modules,
                view: &mut view,
                turn_in_place: false,
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
    ///
    /// `module` is the path's top (`end[0]`): the path is routed
    /// downwards from it, so [`Dir::Down`] on the new path leads towards the
    /// device and [`Dir::Up`] towards `module`.
    pub fn path_create(&mut self, module: ModuleId, attrs: Attrs) -> Result<PathId, PathError> {
        if module.0 as usize >= self.modules.len() {
            return Err(PathError::NoSuchModule(module));
        }
        // Admission (thesis §5.2.3) before any module creates a stage: the
        // path's class and reservation come from the invariants it is
        // created with.
        let class = self.admission.intern(
            attrs
                .get(&keys::CLASS)
                .map_or(self.modules[module.0 as usize].name.as_str(), |c| c),
        );
        let mem_limit = attrs
            .get(&keys::MEM_BUDGET)
            .copied()
            .or(self.config.budgets.path_memory);
        let reservation = Reservation {
            memory: mem_limit.unwrap_or(0),
            cpu_permille: attrs.get(&keys::CPU_SHARE).copied().unwrap_or(0),
        };
        self.admission
            .check(&self.config.budgets, &class, reservation)?;
        let id = self.paths.alloc()?;
        let mut attrs = attrs;
        let made = match self.route_stages(
            module,
            None,
            &mut attrs,
            Dir::Down,
            None,
            self.config.max_stages,
        ) {
            Ok(m) => m,
            Err(e) => {
                self.paths.release(id);
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
        let deadline = PathDeadline::from_attrs(
            attrs.get(&keys::DEADLINE).copied(),
            attrs.get(&keys::DEADLINE_QUEUE).copied(),
        );
        attrs.insert(&keys::CREATED_AT, self.now);
        let n = made.len();
        let mut stage_modules = Vec::with_capacity(n);
        let mut entries = Vec::with_capacity(n);
        let mut stages = Vec::with_capacity(n);
        for (m, e, s) in made {
            stage_modules.push(m);
            entries.push(entry(e));
            stages.push(s);
        }
        let path = Path {
            exec: Box::new(DynExec::new(stages)),
            seq_key: seq_key(&stage_modules),
            next_stage_id: n as u32,
            view: StageView {
                id,
                stage_ids: (0..n as u32).collect(),
                stage_modules,
                attrs,
                sched,
            },
            entries,
            queues: PathQueues::new(qlen),
            stats: PathStats::default(),
            queued: [false; 2],
            stamp: 0,
            mem_limit: mem_limit.unwrap_or(u64::MAX),
            class,
            reservation,
            deadline,
            device_match: None,
            refused_in_row: 0,
            sink_ends: [false; 2],
        };
        self.admission.charge(&path.class, reservation);
        if ranked(&path.view.sched) {
            self.ranked += 1;
        }
        self.paths.insert(id, path);
        if let Err(e) = self.establish(id, None) {
            self.delete_inner(id);
            return Err(e);
        }
        // The attributes are set now (the stages added theirs while
        // established) and then mostly only read: no room kept for more.
        if let Some(p) = self.paths.get_mut(id) {
            p.view.attrs.shrink_to_fit();
        }
        Ok(id)
    }

    /// Runs the establish chain over the stages with creation number at
    /// least `from_stage` (all when `None`), then (re-)registers the demux
    /// keys.
    fn establish(&mut self, id: PathId, from_stage: Option<u32>) -> Result<(), PathError> {
        let Some(path) = self.paths.get_mut(id) else {
            return Err(PathError::NoSuchPath(id));
        };
        let mut aux = Attrs::new();
        let len = path.len();
        // Its ends are fixed until it is extended (which establishes the
        // new stages again): whether each leaves into the sink queue.
        path.sink_ends = [Dir::Down, Dir::Up].map(|dir| {
            let end = match dir {
                Dir::Down => len.checked_sub(1),
                Dir::Up => Some(0),
            };
            end.and_then(|pos| path.view.stage_modules.get(pos))
                .and_then(|m| self.modules.get(m.0 as usize))
                .is_some_and(|slot| slot.get().ends_in_sink())
        });
        // In creation order: stage ids are unique and below
        // `next_stage_id`, and a path has a handful of stages, so a scan
        // per id costs less than sorting into a new list.
        let first = from_stage.unwrap_or(0);
        let order = (first..path.next_stage_id)
            .filter_map(|sid| path.view.stage_ids.iter().position(|&s| s == sid));
        for pos in order {
            let m = path.view.stage_modules[pos];
            let (module, mslot) = self.modules[m.0 as usize].parts_mut();
            let mut cx = EstablishCx {
                ops: Ops::new(self.now, &mut self.shared),
                path: id,
                position: pos,
                len,
                module_id: m,
                module,
            };
            if let Some(stage) = path.exec.stage_mut(pos) {
                stage.establish(&mut aux, &mut cx).map_err(|e| match e {
                    PathError::Establish { .. } => e,
                    other => PathError::Establish {
                        module: mslot.name.to_string(),
                        source: Box::new(other),
                    },
                })?;
            }
        }
        // Demux keys, from the receiving end (end[1]) inwards.
        let mode = if path.view.attrs.get(&keys::PASSIVE_OPEN) == Some(&true) {
            KeyMode::Passive
        } else {
            KeyMode::Active
        };
        // On the stack: path creation allocates only what the path keeps.
        let mut levels = [(ModuleId(0), None); MAX_LEVELS];
        let mut n = 0;
        for pos in (0..len).rev() {
            let Some(stage) = path.exec.stage(pos) else {
                break;
            };
            let (level, last) = match stage.demux_key(mode) {
                DemuxKey::Pass => (None, false),
                DemuxKey::Key(k) => (Some(k), false),
                DemuxKey::Stop(k) => (k, true),
            };
            let Some(slot) = levels.get_mut(n) else {
                return Err(PathError::Demux(format!(
                    "more than {MAX_LEVELS} demultiplexing levels"
                )));
            };
            *slot = (path.view.stage_modules[pos], level);
            n += 1;
            if last {
                break;
            }
        }
        // Only an extended path has keys to take out first: a path being
        // made has registered none (its slot's previous path took its own
        // out when deleted), and asking the classifier to remove what it
        // does not hold cost every open a walk of its tree (issue 28
        // item 4).
        if from_stage.is_some() {
            self.demux.remove(id);
        }
        self.shared.faults.take(id);
        self.demux.register(id, mode, &levels[..n])?;
        Ok(())
    }

    /// Grows path `id` at `end` with invariants `attrs` (thesis §3.3.7).
    /// The end's module makes the first routing decision
    /// ([`Module::extend_route`](crate::module::Module::extend_route)), or `PATHNAME` forces it. If extension
    /// fails the whole path is deleted (fate sharing).
    pub fn path_extend(&mut self, id: PathId, end: End, attrs: Attrs) -> Result<(), PathError> {
        let path = self.path(id).ok_or(PathError::NoSuchPath(id))?;
        let pos = match end {
            End::Zero => 0,
            End::One => path.len() - 1,
        };
        let m = path.view.stage_modules[pos];
        let entry_svc = path.entries[pos].map(|s| s as usize);
        let growth = match end {
            End::Zero => Dir::Up,
            End::One => Dir::Down,
        };
        let mut attrs = attrs;
        let route = self.modules[m.0 as usize]
            .get_mut()
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
        let Some(path) = self.paths.get_mut(id) else {
            return Err(PathError::NoSuchPath(id));
        };
        let first_new = path.next_stage_id;
        // Splice the new stages in at that end, de-inlining first.
        let exec = std::mem::replace(&mut path.exec, Box::new(VacantExec));
        let mut stages = exec.into_stages();
        for (m, e, s) in made {
            let sid = path.next_stage_id;
            path.next_stage_id += 1;
            match end {
                End::One => {
                    stages.push(s);
                    path.view.stage_modules.push(m);
                    path.entries.push(entry(e));
                    path.view.stage_ids.push(sid);
                }
                End::Zero => {
                    stages.insert(0, s);
                    path.view.stage_modules.insert(0, m);
                    path.entries.insert(0, entry(e));
                    path.view.stage_ids.insert(0, sid);
                }
            }
        }
        path.exec = Box::new(DynExec::new(stages));
        path.seq_key = seq_key(&path.view.stage_modules);
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
        let Some(mut path) = self.paths.remove(id) else {
            return;
        };
        self.admission.release(&path.class, path.reservation);
        if ranked(&path.view.sched) {
            self.ranked -= 1;
        }
        self.demux.remove(id);
        let mut order: Vec<usize> = (0..path.len()).collect();
        order.sort_by_key(|&p| path.view.stage_ids[p]);
        let (exec, mut env, _) = path.split(self.now, &mut self.modules, &mut self.shared, 0);
        for pos in order {
            if let Some(stage) = exec.stage_mut(pos) {
                let mut cx = Cx { env: &mut env, pos };
                stage.destroy(&mut cx);
            }
        }
    }

    /// Applies the stack's transformation rules to a path until no guard
    /// holds (at most 16 applications, against rules that never turn their
    /// guard false). Returns the names of the rules applied.
    pub fn path_optimize(&mut self, id: PathId) -> Result<Vec<String>, PathError> {
        let mut applied = Vec::new();
        self.apply_rules(id, |name| applied.push(name.to_string()))?;
        Ok(applied)
    }

    /// [`Stack::path_optimize`] without naming the rules applied: how
    /// many. What a host runs on every connection it makes, so it
    /// allocates nothing of its own (issue 28 item 4: the names, their
    /// list and the module types' list were allocations per path).
    pub fn path_optimize_count(&mut self, id: PathId) -> Result<usize, PathError> {
        let mut n = 0;
        self.apply_rules(id, |_| n += 1)?;
        Ok(n)
    }

    fn apply_rules(&mut self, id: PathId, mut applied: impl FnMut(&str)) -> Result<(), PathError> {
        for _ in 0..16 {
            let path = self.path(id).ok_or(PathError::NoSuchPath(id))?;
            // The module types on the stack for a path of up to
            // `ROUTED_TYPES` stages (every path of the default
            // `max_stages`), collected only for a longer one.
            let mods = &path.view.stage_modules;
            let mut buf = [""; ROUTED_TYPES];
            let long: Vec<&'static str>;
            let types: &[&'static str] = if mods.len() <= ROUTED_TYPES {
                for (t, m) in buf.iter_mut().zip(mods) {
                    *t = self.modules[m.0 as usize].spec.name;
                }
                &buf[..mods.len()]
            } else {
                long = mods
                    .iter()
                    .map(|m| self.modules[m.0 as usize].spec.name)
                    .collect();
                &long
            };
            let view = RuleView {
                path,
                module_types: types,
            };
            let Some(i) = self.rules.iter().position(|r| r.guard(&view)) else {
                break;
            };
            let Some(path) = self.paths.get_mut(id) else {
                break;
            };
            let mut target = RuleTarget { path };
            self.rules[i].apply(&mut target)?;
            applied(self.rules[i].name());
        }
        Ok(())
    }

    /// Adds a transformation rule.
    pub fn add_rule(&mut self, r: Rule) {
        self.rules.push(r);
    }

    /// Changes a path's scheduling parameters under the thesis §3.5.1 rule
    /// (a pending path's deadline may only be tightened).
    pub fn set_sched(&mut self, id: PathId, params: SchedParams) -> Result<(), PathError> {
        let now = self.now;
        let path = self.paths.get_mut(id).ok_or(PathError::NoSuchPath(id))?;
        let pending = path.is_pending();
        let was_ranked = ranked(&path.view.sched);
        path.view.sched.update(params, now, pending)?;
        let is_ranked = ranked(&path.view.sched);
        // A pending path gets a fresh run-queue entry ranked by the new
        // parameters; the old one is now stale.
        path.stamp = path.stamp.wrapping_add(1);
        for dir in [Dir::Down, Dir::Up] {
            if path.queued[dir.index()] {
                requeue(path, &mut self.runq, dir, now);
            }
        }
        match (was_ranked, is_ranked) {
            (false, true) => self.ranked += 1,
            (true, false) => self.ranked -= 1,
            _ => {}
        }
        Ok(())
    }

    /// Sets the capacity of path `id`'s four queues to `len` messages at
    /// run time (what `QUEUE_LEN` sets at creation; see
    /// [`queue_len_for`](crate::queue_sizing::queue_len_for) for the
    /// thesis §5.2.1 rule). Messages already queued beyond a smaller
    /// capacity stay; new ones are refused until the queue is below it.
    pub fn set_queue_len(&mut self, id: PathId, len: usize) -> Result<(), PathError> {
        let path = self.paths.get_mut(id).ok_or(PathError::NoSuchPath(id))?;
        path.queues.set_capacity(len);
        Ok(())
    }

    /// What the live paths have reserved under admission control: in
    /// total, and for class `class` ([`crate::admission`]).
    pub fn admission_usage(&self, class: &str) -> (Usage, Usage) {
        (self.admission.total(), self.admission.class(class))
    }
}

/// Whether scheduling parameters differ from the default (best effort at
/// priority 0): such paths make the stack classify bursts before running.
fn ranked(s: &SchedParams) -> bool {
    s.realtime || s.priority != 0
}

/// Hash of a module sequence: LDLP batches paths with equal keys.
/// foldhash with a fixed seed, not SipHash: computed twice for every path
/// made (creation and establishment), where SipHash over the stage list
/// cost some 1,100 instructions of an open (issue 28 item 4); the
/// sequence is the stack's own module graph, not the wire's.
fn seq_key(mods: &[ModuleId]) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0).hash_one(mods)
}
