//! A module that polls only when due ([`Module::polls_when_due`]: ARP's
//! retries, IP's reassembly timeout) is asked for its deadline only after
//! it was reached writably — by its own calls, its stages' `Cx::module`,
//! or `Stack::module_mut` — so an idle poll asks it nothing (issue 26
//! item 6); and a deadline set in any of those ways is still met exactly.

use pathstack_core::attrs::Attrs;
use pathstack_core::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::{ModuleSetup, ModuleTypes};
use pathstack_core::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// Times the stack asked `poll_at` (a static: `poll_at` takes `&self`, and
/// a module factory is a plain function; this file's only test counts).
static ASKED: AtomicU32 = AtomicU32::new(0);

const DUE_SPEC: ModuleSpec = ModuleSpec {
    name: "DUE",
    doc: "test: a module with one deadline, which its stages set",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::Any)],
    params: &[],
    understands: &[],
};

struct Due {
    deadline: Option<Instant>,
    /// When `poll` ran.
    polled: Vec<Instant>,
}

impl Module for Due {
    fn spec(&self) -> &'static ModuleSpec {
        &DUE_SPEC
    }
    fn create_stage(&mut self, _: &mut Attrs, _: &mut CreateCx<'_>) -> Creation {
        Ok(Created::new(DueStage, Route::End))
    }
    fn polls_when_due(&self) -> bool {
        true
    }
    fn poll_at(&self) -> Option<Instant> {
        ASKED.fetch_add(1, Ordering::Relaxed);
        self.deadline
    }
    fn poll(&mut self, cx: &mut ModCx<'_>) -> usize {
        self.polled.push(cx.now());
        self.deadline = None;
        1
    }
}

/// Sets its module's deadline 5 ms after each message, as ARP's stage
/// queues a packet and starts a resolution on a cache miss.
struct DueStage;

impl Stage for DueStage {
    fn process(&mut self, _dir: Dir, _msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let at = cx.now() + Duration::from_millis(5);
        if let Some(m) = cx.module::<Due>() {
            m.deadline = Some(at);
        }
        Verdict::Consumed
    }
}

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

#[test]
fn idle_polls_do_not_ask_and_deadlines_set_anywhere_are_met() {
    let asked = &ASKED;
    let mut types = ModuleTypes::new();
    types.register(&DUE_SPEC, |_: &mut ModuleSetup<'_>| {
        Ok(Box::new(Due {
            deadline: None,
            polled: Vec::new(),
        }))
    });
    let graph = ModuleGraph::from_text("name=d module=DUE; @", None, &types.specs()).unwrap();
    let mut s = Stack::builder(graph, types).build().unwrap();
    let d = s.module_id("d").unwrap();
    let p = s.path_create(d, Attrs::new()).unwrap();

    // The first poll asks (creating the path reached the module); idle
    // polls after it ask nothing.
    s.poll(ms(1));
    let first = asked.load(Ordering::Relaxed);
    assert!(first >= 1);
    for t in 2..10 {
        s.poll(ms(t));
    }
    assert_eq!(asked.load(Ordering::Relaxed), first, "idle polls asked");

    // A stage sets the deadline through `Cx::module`: the next poll asks
    // once, and the module runs at 15 ms, not before.
    let m = s.pool().alloc(1).unwrap();
    s.set_now(ms(10));
    s.send(p, Dir::Down, m).unwrap();
    for t in 10..15 {
        s.poll(ms(t));
    }
    assert_eq!(asked.load(Ordering::Relaxed), first + 1);
    assert!(s.module::<Due>(d).unwrap().polled.is_empty());
    s.poll(ms(15));
    assert_eq!(s.module::<Due>(d).unwrap().polled, [ms(15)]);

    // Reading the module (`&self`) does not make the stack ask again;
    // writing it from outside (`Stack::module_mut`) does, and its new
    // deadline is met.
    s.poll(ms(16));
    let before = asked.load(Ordering::Relaxed);
    let _ = s.module::<Due>(d).unwrap().deadline;
    s.poll(ms(17));
    assert_eq!(asked.load(Ordering::Relaxed), before);
    s.module_mut::<Due>(d).unwrap().deadline = Some(ms(20));
    s.poll(ms(19));
    assert_eq!(asked.load(Ordering::Relaxed), before + 1);
    s.poll(ms(20));
    assert_eq!(s.module::<Due>(d).unwrap().polled, [ms(15), ms(20)]);
}
