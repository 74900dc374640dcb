//! Building a [`Stack`]: module instances from their factories, the
//! classifier's partial classifiers, initialization in graph order.

use super::module_slot::ModuleSlot;
use super::{ModuleSetup, ModuleTypes, Polled, Stack, StackConfig};
use crate::demux::Demux;
use crate::device::Device;
use crate::error::{ModuleError, StackError};
use crate::graph::ModuleGraph;
use crate::ids::ModuleId;
use crate::msg::MsgPool;
use crate::path_table::PathTable;
use crate::rules::Rule;
use crate::runtime::Shared;
use crate::sched::{RunQueue, SchedKind};
use crate::time::Instant;
use crate::timer::TimerWheel;
use std::collections::VecDeque;

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
            faults: Default::default(),
            path_ops: Vec::new(),
            device_failure: None,
            lane: Default::default(),
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
            modules.push(ModuleSlot::new(
                inst.name.clone(),
                inst.spec,
                inst.params.clone(),
                module,
                inst.links.clone(),
            )?);
        }
        let mut demux = Demux::new();
        for (i, slot) in modules.iter().enumerate() {
            if let Some(p) = slot.get().partial_classifier() {
                demux
                    .set_partial_classifier(ModuleId(i as u32), p)
                    .map_err(|e| ModuleError::Init {
                        instance: slot.name.clone(),
                        reason: e.to_string(),
                    })?;
            }
        }
        let polled = (0..modules.len())
            .filter(|&i| modules[i].get().polls() || modules[i].get().receives())
            .map(|i| Polled {
                index: i,
                polls: modules[i].get().polls(),
                receives: modules[i].get().receives(),
                when_due: modules[i].get().polls_when_due(),
                due: None,
            })
            .collect::<Vec<_>>();
        let polling = super::polling::Polling::of(&polled);
        let mut stack = Stack {
            modules,
            paths: PathTable::new(self.config.max_paths),
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
            polling,
            config: self.config,
            graph: self.graph,
            admission: crate::admission::Admission::default(),
            ranked: 0,
            lane_open: false,
            discards: Default::default(),
        };
        stack.reopen_lane();
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

/// Room an LDLP batch needs under scheduler `s`.
pub(super) fn batch_bound(s: SchedKind) -> usize {
    match s {
        SchedKind::PerMessage => 1,
        SchedKind::Ldlp { batch } => batch.max(1),
    }
}
