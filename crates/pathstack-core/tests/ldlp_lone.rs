//! LDLP's lone-message rule (`pathstack_core::sched`): under
//! [`SchedKind::Ldlp`] a message entering an idle path while nothing else
//! waits runs straight through it, as per-message scheduling runs it (a
//! batch of one is per-message processing, without the queues), and as
//! soon as a second message is available LDLP batches stage-major.
//!
//! Every stage of the test path logs which message it processed, so the
//! order in which stages and messages met is visible: message-major (each
//! message through all stages) or stage-major (each stage over the batch).

use pathstack_core::attrs::Attrs;
use pathstack_core::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::{ModuleSetup, ModuleTypes};
use pathstack_core::*;
use std::cell::RefCell;

const LOG_SPEC: ModuleSpec = ModuleSpec {
    name: "LOG",
    doc: "test layer: logs (position, message) and passes the message on",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::Any),
    ],
    params: &[],
    understands: &[],
};

thread_local! {
    /// (stage position, first byte of the message), in processing order.
    /// Per thread: the stack runs on the test's own thread.
    static LOG: RefCell<Vec<(usize, u8)>> = const { RefCell::new(Vec::new()) };
}

fn take_log() -> Vec<(usize, u8)> {
    LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

struct Log;
impl Module for Log {
    fn spec(&self) -> &'static ModuleSpec {
        &LOG_SPEC
    }
    fn create_stage(&mut self, _: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let route = if cx.links(1) > 0 {
            Route::Service(1)
        } else {
            Route::End
        };
        Ok(Created {
            stage: Box::new(LogStage),
            route,
        })
    }
}

/// Second byte of a message the last stage keeps.
const KEEP: u8 = 1;

struct LogStage;
impl Stage for LogStage {
    fn process(&mut self, _: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let id = msg.as_slice().first().copied().unwrap_or(0);
        LOG.with(|l| l.borrow_mut().push((cx.position(), id)));
        // A message marked "keep" stops at the last stage, so that no
        // queue of the path (the sink's included) ever holds it.
        if cx.position() == 2 && msg.as_slice().get(1) == Some(&KEEP) {
            Verdict::Consumed
        } else {
            Verdict::Next
        }
    }
}

/// A stack of three LOG layers under `sched`, and one path through them.
fn stack(sched: SchedKind) -> (Stack, PathId) {
    let mut types = ModuleTypes::new();
    types.register(&LOG_SPEC, |_: &mut ModuleSetup<'_>| Ok(Box::new(Log)));
    let text =
        "name=a module=LOG; name=b module=LOG; name=c module=LOG; @ a.down<>b.up; b.down<>c.up;";
    let graph = ModuleGraph::from_text(text, None, &types.specs()).unwrap();
    let mut s = Stack::builder(graph, types)
        .config(StackConfig {
            sched,
            ..StackConfig::default()
        })
        .build()
        .unwrap();
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    take_log();
    (s, p)
}

/// Each message through all three stages before the next.
fn message_major(ids: &[u8]) -> Vec<(usize, u8)> {
    ids.iter()
        .flat_map(|&id| (0..3).map(move |pos| (pos, id)))
        .collect()
}

/// Each stage over all messages before the next stage.
fn stage_major(ids: &[u8]) -> Vec<(usize, u8)> {
    (0..3)
        .flat_map(|pos| ids.iter().map(move |&id| (pos, id)))
        .collect()
}

fn msg(s: &Stack, id: u8) -> Msg {
    s.pool().alloc_copy(&[id, 0, 0, 0]).unwrap()
}

fn delivered(s: &mut Stack, p: PathId) -> Vec<u8> {
    std::iter::from_fn(|| s.recv(p, Dir::Down))
        .map(|m| m.as_slice()[0])
        .collect()
}

#[test]
fn a_lone_send_under_ldlp_runs_at_once_without_the_queues() {
    let (mut s, p) = stack(SchedKind::Ldlp { batch: 8 });
    // Kept by the last stage: no queue of the path ever held a buffer, so
    // none went through the source queue either.
    for id in 1..=3 {
        let mut m = msg(&s, id);
        m.as_mut_slice()[1] = KEEP;
        s.send(p, Dir::Down, m).unwrap();
        assert_eq!(take_log(), message_major(&[id]));
    }
    let st = s.path(p).unwrap().stats();
    assert_eq!(st.consumed, 3);
    assert_eq!(st.peak_held_bytes, 0, "the direct route queues nothing");
    // Delivered to the sink queue, the same way.
    for id in 4..=6 {
        s.send(p, Dir::Down, msg(&s, id)).unwrap();
        // It went through the whole path in the call, before any poll.
        assert_eq!(take_log(), message_major(&[id]));
        assert_eq!(delivered(&mut s, p), [id]);
    }
    assert_eq!(s.poll(Instant::ZERO), 0, "nothing was left to schedule");
}

#[test]
fn a_send_behind_queued_input_joins_the_batch_stage_major() {
    let (mut s, p) = stack(SchedKind::Ldlp { batch: 8 });
    s.enqueue(p, Dir::Down, msg(&s, 1)).unwrap();
    // Input waits: the send queues behind it rather than overtaking it.
    s.send(p, Dir::Down, msg(&s, 2)).unwrap();
    s.send(p, Dir::Down, msg(&s, 3)).unwrap();
    assert!(take_log().is_empty(), "nothing ran before the poll");
    assert!(s.path(p).unwrap().stats().peak_held_bytes > 0);
    assert_eq!(s.poll(Instant::ZERO), 3);
    assert_eq!(take_log(), stage_major(&[1, 2, 3]));
    assert_eq!(delivered(&mut s, p), [1, 2, 3]);
}

#[test]
fn per_message_runs_queued_input_message_major() {
    // The contrast to the test above: the same input, per-message.
    let (mut s, p) = stack(SchedKind::PerMessage);
    s.enqueue(p, Dir::Down, msg(&s, 1)).unwrap();
    s.send(p, Dir::Down, msg(&s, 2)).unwrap();
    s.send(p, Dir::Down, msg(&s, 3)).unwrap();
    s.poll(Instant::ZERO);
    assert_eq!(take_log(), message_major(&[1, 2, 3]));
    assert_eq!(delivered(&mut s, p), [1, 2, 3]);
}
