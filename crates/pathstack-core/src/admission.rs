//! Admission control (thesis §5.2.3): budgets for the paths a stack
//! admits — how many, how many buffer bytes they may hold, how much of the
//! CPU they ask for — per stack and per path class.
//!
//! A path *reserves* its share when it is created: its memory budget
//! ([`keys::MEM_BUDGET`](crate::attrs::keys::MEM_BUDGET), else
//! [`Budgets::path_memory`]), its CPU share
//! ([`keys::CPU_SHARE`](crate::attrs::keys::CPU_SHARE), per mille) and one
//! path slot. [`Stack::path_create`](crate::Stack::path_create) refuses
//! with [`AdmissionError`] when a reservation would take its class or the
//! stack past a budget, before any module creates a stage; the
//! reservation is returned when the path is deleted. At run time the path
//! is held to its memory reservation: input arriving while the buffers it
//! holds reach it is discarded at classification
//! ([`CoreDropReason::OverMemoryBudget`](crate::drop_reason::CoreDropReason::OverMemoryBudget))
//! instead of the path growing — the thesis' "let it execute as long as it
//! remains within the memory constraints". The CPU share is checked at
//! admission only; the scheduler does not police it (priorities and
//! deadlines decide who runs).
//!
//! A path's *class* is its [`keys::CLASS`](crate::attrs::keys::CLASS)
//! attribute, else the instance name of the module it was created at (its
//! top: `udp`, `icmp`, `tcp` …), so that "all UDP sockets" is a class
//! without anyone labelling them.

use crate::fast_map::FastMap;
use std::collections::HashMap;
use std::sync::Arc;
use thiserror::Error;

/// Limits for one scope (the whole stack, or one path class). `None` is
/// no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// Most paths alive at once.
    pub paths: Option<usize>,
    /// Most buffer bytes reserved by the paths together.
    pub memory: Option<u64>,
    /// Most CPU share reserved by the paths together, in per mille.
    pub cpu_permille: Option<u32>,
}

/// The budgets of a stack ([`StackConfig::budgets`](crate::StackConfig::budgets)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budgets {
    /// Limits for all paths of the stack together.
    pub stack: Budget,
    /// Limits per path class (see the module documentation); classes not
    /// listed are limited by [`Budgets::stack`] alone.
    pub classes: HashMap<String, Budget>,
    /// Memory budget of a path that does not set
    /// [`keys::MEM_BUDGET`](crate::attrs::keys::MEM_BUDGET); `None`: unlimited
    /// (and nothing reserved).
    pub path_memory: Option<u64>,
}

impl Budgets {
    /// Sets the limits of class `class` (builder style).
    pub fn with_class(mut self, class: impl Into<String>, budget: Budget) -> Self {
        self.classes.insert(class.into(), budget);
        self
    }
}

/// What a path reserves when admitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reservation {
    /// Buffer bytes (0: unlimited, nothing reserved).
    pub memory: u64,
    /// CPU share, per mille.
    pub cpu_permille: u32,
}

/// Reserved resources of one scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Paths admitted.
    pub paths: usize,
    /// Buffer bytes reserved.
    pub memory: u64,
    /// CPU share reserved, per mille.
    pub cpu_permille: u32,
}

/// Which budget a refused path would have exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// The path count.
    Paths,
    /// Reserved buffer bytes.
    Memory,
    /// Reserved CPU share (per mille).
    Cpu,
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Resource::Paths => "path count",
            Resource::Memory => "memory (buffer bytes)",
            Resource::Cpu => "CPU share (per mille)",
        })
    }
}

/// A path refused by admission control.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("admission refused for class `{class}`: {resource} budget of the {scope} is {limit}, {in_use} in use, the path asks for {requested}")]
pub struct AdmissionError {
    /// The path's class.
    pub class: String,
    /// `"stack"` or `"class"`: whose budget it would exceed.
    pub scope: &'static str,
    /// Which budget.
    pub resource: Resource,
    /// What the path asked for.
    pub requested: u64,
    /// What is reserved already in that scope.
    pub in_use: u64,
    /// The budget.
    pub limit: u64,
}

/// The reservations of a stack's live paths, per class and in total.
/// Bounded: one entry per class with live paths.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    total: Usage,
    /// Keyed by the class's one shared name, which every live path of the
    /// class holds too ([`Admission::intern`]).
    classes: FastMap<Arc<str>, Usage>,
}

impl Admission {
    /// Reserved in total.
    pub fn total(&self) -> Usage {
        self.total
    }

    /// Reserved by class `class`.
    pub fn class(&self, class: &str) -> Usage {
        self.classes.get(class).copied().unwrap_or_default()
    }

    /// Whether a path of `class` reserving `r` fits the budgets.
    pub fn check(
        &self,
        budgets: &Budgets,
        class: &str,
        r: Reservation,
    ) -> Result<(), AdmissionError> {
        check_scope(&budgets.stack, self.total, class, "stack", r)?;
        if let Some(b) = budgets.classes.get(class) {
            check_scope(b, self.class(class), class, "class", r)?;
        }
        Ok(())
    }

    /// The shared name of class `class`: the one its live paths hold,
    /// or a new one for a class with none (a million paths of one class
    /// hold one name, not a million copies; issue 28 item 4).
    pub fn intern(&self, class: &str) -> Arc<str> {
        match self.classes.get_key_value(class) {
            Some((name, _)) => Arc::clone(name),
            None => Arc::from(class),
        }
    }

    /// Reserves `r` for a path of `class` (after [`Admission::check`]).
    pub fn charge(&mut self, class: &Arc<str>, r: Reservation) {
        // One lookup for a class with live paths (every open after the
        // first); the entry API would need an owned key on each call.
        let c = match self.classes.get_mut(&**class) {
            Some(c) => c,
            None => self.classes.entry(Arc::clone(class)).or_default(),
        };
        for u in [&mut self.total, c] {
            u.paths += 1;
            u.memory = u.memory.saturating_add(r.memory);
            u.cpu_permille = u.cpu_permille.saturating_add(r.cpu_permille);
        }
    }

    /// Returns what a deleted path of `class` had reserved.
    pub fn release(&mut self, class: &str, r: Reservation) {
        let drop_class = match self.classes.get_mut(class) {
            Some(c) => {
                release(c, r);
                c.paths == 0
            }
            None => false,
        };
        if drop_class {
            self.classes.remove(class);
        }
        release(&mut self.total, r);
    }
}

fn release(u: &mut Usage, r: Reservation) {
    u.paths = u.paths.saturating_sub(1);
    u.memory = u.memory.saturating_sub(r.memory);
    u.cpu_permille = u.cpu_permille.saturating_sub(r.cpu_permille);
}

fn check_scope(
    b: &Budget,
    u: Usage,
    class: &str,
    scope: &'static str,
    r: Reservation,
) -> Result<(), AdmissionError> {
    let refuse = |resource, requested: u64, in_use: u64, limit: u64| AdmissionError {
        class: class.to_string(),
        scope,
        resource,
        requested,
        in_use,
        limit,
    };
    if let Some(limit) = b.paths {
        if u.paths + 1 > limit {
            return Err(refuse(Resource::Paths, 1, u.paths as u64, limit as u64));
        }
    }
    if let Some(limit) = b.memory {
        if u.memory.saturating_add(r.memory) > limit {
            return Err(refuse(Resource::Memory, r.memory, u.memory, limit));
        }
    }
    if let Some(limit) = b.cpu_permille {
        if u.cpu_permille.saturating_add(r.cpu_permille) > limit {
            return Err(refuse(
                Resource::Cpu,
                r.cpu_permille.into(),
                u.cpu_permille.into(),
                limit.into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(memory: u64, cpu: u32) -> Reservation {
        Reservation {
            memory,
            cpu_permille: cpu,
        }
    }

    #[test]
    fn class_budget_refuses_and_release_readmits() {
        let budgets = Budgets::default().with_class(
            "video",
            Budget {
                paths: Some(2),
                memory: Some(1000),
                cpu_permille: Some(500),
            },
        );
        let mut a = Admission::default();
        a.check(&budgets, "video", res(600, 100)).unwrap();
        a.charge(&a.intern("video"), res(600, 100));
        let e = a.check(&budgets, "video", res(600, 100)).unwrap_err();
        assert_eq!(
            (e.resource, e.in_use, e.limit),
            (Resource::Memory, 600, 1000)
        );
        assert_eq!(e.scope, "class");
        let e = a.check(&budgets, "video", res(100, 450)).unwrap_err();
        assert_eq!(e.resource, Resource::Cpu);
        // Another class is not limited by video's budget.
        a.check(&budgets, "icmp", res(600, 900)).unwrap();
        let video = a.intern("video");
        // The live class's one name.
        assert!(Arc::ptr_eq(&video, &a.intern("video")));
        a.charge(&video, res(100, 100));
        let e = a.check(&budgets, "video", res(0, 0)).unwrap_err();
        assert_eq!(e.resource, Resource::Paths);
        a.release("video", res(600, 100));
        a.check(&budgets, "video", res(600, 100)).unwrap();
        assert_eq!(a.class("video").paths, 1);
        a.release("video", res(100, 100));
        assert_eq!(a.total(), Usage::default());
        assert!(a.classes.is_empty(), "a class without paths is forgotten");
    }

    #[test]
    fn stack_budget_counts_all_classes() {
        let budgets = Budgets {
            stack: Budget {
                paths: Some(3),
                ..Budget::default()
            },
            ..Budgets::default()
        };
        let mut a = Admission::default();
        for c in ["a", "b", "c"] {
            a.check(&budgets, c, res(0, 0)).unwrap();
            a.charge(&a.intern(c), res(0, 0));
        }
        let e = a.check(&budgets, "d", res(0, 0)).unwrap_err();
        assert_eq!(
            (e.scope, e.resource, e.limit),
            ("stack", Resource::Paths, 3)
        );
        assert!(e
            .to_string()
            .contains("path count budget of the stack is 3"));
    }
}
