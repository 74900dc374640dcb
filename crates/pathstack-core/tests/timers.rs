//! Spontaneous work: a stage arms a timer on the stack's timer wheel and,
//! when it fires, emits a new message from its own position; a module reads
//! and writes its shared state from its stages through `Cx::module`.

use pathstack_core::attrs::Attrs;
use pathstack_core::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::{ModuleSetup, ModuleTypes};
use pathstack_core::*;

const TICK_SPEC: ModuleSpec = ModuleSpec {
    name: "TICK",
    doc: "test: a stage that sends a message every time its timer fires",
    services: &[ServiceSpec::new("down", ServiceType::AIO, Count::Any)],
    params: &[],
    understands: &[],
};

/// Shared state of the module: how many ticks all its stages sent.
struct Tick {
    sent: u64,
}

impl Module for Tick {
    fn spec(&self) -> &'static ModuleSpec {
        &TICK_SPEC
    }
    fn create_stage(&mut self, _: &mut Attrs, _: &mut CreateCx<'_>) -> Creation {
        Ok(Created::new(TickStage { armed: false }, Route::End))
    }
}

struct TickStage {
    armed: bool,
}

impl Stage for TickStage {
    fn process(&mut self, _dir: Dir, _msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        // The first message starts the clock: a tick every 10 ms.
        if !self.armed {
            self.armed = cx.arm_timer(Duration::from_millis(10), 1).is_ok();
        }
        Verdict::Consumed
    }
    fn on_timer(&mut self, token: u64, cx: &mut Cx<'_, '_>) {
        let n = {
            let m = cx.module::<Tick>().expect("stage of TICK");
            m.sent += 1;
            m.sent
        };
        if let Ok(msg) = cx.pool().alloc_copy(&n.to_be_bytes()) {
            // From the only stage, forward: straight out of end[1].
            let _ = cx.emit(Dir::Down, msg);
        }
        if n < 3 {
            let _ = cx.arm_timer(Duration::from_millis(10), token);
        }
    }
}

#[test]
fn stage_timers_send_spontaneous_messages() {
    let mut types = ModuleTypes::new();
    types.register(&TICK_SPEC, |_: &mut ModuleSetup<'_>| {
        Ok(Box::new(Tick { sent: 0 }))
    });
    let graph = ModuleGraph::from_text("name=t module=TICK; @", None, &types.specs()).unwrap();
    let mut s = Stack::builder(graph, types).build().unwrap();
    let t = s.module_id("t").unwrap();
    let p = s.path_create(t, Attrs::new()).unwrap();
    let start = s.pool().alloc(1).unwrap();
    s.send(p, Dir::Down, start).unwrap();
    s.poll(Instant::ZERO);
    assert_eq!(s.stats().timers, 1);
    assert_eq!(s.poll_at(), Some(Instant::from_millis(10)));
    // Nothing before the deadline.
    s.poll(Instant::from_millis(9));
    assert!(s.recv(p, Dir::Down).is_none());
    let mut got = Vec::new();
    for ms in [10, 20, 30, 40, 50] {
        s.poll(Instant::from_millis(ms));
        while let Some(m) = s.recv(p, Dir::Down) {
            got.push(u64::from_be_bytes(m.as_slice().try_into().unwrap()));
        }
    }
    assert_eq!(got, [1, 2, 3]);
    assert_eq!(s.module::<Tick>(t).unwrap().sent, 3);
    assert_eq!(s.stats().timers, 0);
    // A deleted path's timers never reach a new path.
    let p2 = s.path_create(t, Attrs::new()).unwrap();
    // A send runs at the time of the last poll: 60 ms, so its timer is
    // due at 70 ms, after the path is gone.
    s.poll(Instant::from_millis(60));
    let m = s.pool().alloc(1).unwrap();
    s.send(p2, Dir::Down, m).unwrap();
    s.poll(Instant::from_millis(60));
    s.path_delete(p2).unwrap();
    let p3 = s.path_create(t, Attrs::new()).unwrap();
    s.poll(Instant::from_millis(100));
    assert!(s.recv(p3, Dir::Down).is_none());
    assert_eq!(s.module::<Tick>(t).unwrap().sent, 3);
}
