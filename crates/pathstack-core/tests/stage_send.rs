//! A stage's own send ([`Stack::send_from_stage`]) against the send lane
//! it stands in for ([`Stack::with_stage_at`] and an emission): the
//! message a stage puts in its slot runs down the path at once, as the
//! lane's first emission would, behind whatever the call emitted through
//! its context; an empty slot sends nothing; a handle whose path is gone
//! reaches nothing.

mod common;
use common::*;
use pathstack_core::attrs::Attrs;
use pathstack_core::*;

/// a over b over c, each routing down; c is a leaf.
const CHAIN: &str = "
name=a module=PROBE route=down;
name=b module=PROBE route=down;
name=c module=PROBE;
@
a.down<>b.up;
b.down<>c.up;
";

fn msg(s: &Stack, bytes: &[u8]) -> Msg {
    let mut m = s.pool().alloc_empty(bytes.len()).unwrap();
    m.extend_from_slice(bytes).unwrap();
    m
}

/// What left path `p` downwards, in order.
fn sunk(s: &mut Stack, p: PathId) -> Vec<Vec<u8>> {
    std::iter::from_fn(|| s.recv(p, Dir::Down))
        .map(|m| m.as_slice().to_vec())
        .collect()
}

fn processed(l: &[String]) -> Vec<String> {
    l.iter()
        .filter(|l| l.starts_with("process"))
        .cloned()
        .collect()
}

/// Runs `emits` messages through the context and then one more, either
/// emitted too (the lane, `lane = true`) or put in the slot, and returns
/// what left the path and what the stages processed.
fn run(sched: SchedKind, lane: bool, emits: &[&[u8]], last: &[u8]) -> (Vec<Vec<u8>>, Vec<String>) {
    clear_log();
    let mut s = stack(CHAIN);
    s.set_scheduler(sched);
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    let at = s.stage_ref::<ProbeStage>(p).unwrap();
    let before: Vec<Msg> = emits.iter().map(|b| msg(&s, b)).collect();
    let last = msg(&s, last);
    clear_log();
    let r = if lane {
        s.with_stage_at(at, |_, cx| {
            for m in before {
                cx.emit(Dir::Down, m).unwrap();
            }
            cx.emit(Dir::Down, last).unwrap();
            9
        })
    } else {
        s.send_from_stage(at, |_, cx, out| {
            for m in before {
                cx.emit(Dir::Down, m).unwrap();
            }
            assert!(processed(&log()).is_empty(), "nothing ran inside the call");
            *out = last;
            9
        })
    };
    assert_eq!(r, Some(9));
    assert_eq!(s.stats().follow_up_drops, 0);
    (sunk(&mut s, p), processed(&log()))
}

#[test]
fn the_slot_runs_as_the_lane_would() {
    for sched in [SchedKind::PerMessage, SchedKind::Ldlp { batch: 8 }] {
        for emits in [&[][..], &[&b"1"[..]][..], &[&b"1"[..], &b"2"[..]][..]] {
            let by_lane = run(sched, true, emits, b"x");
            let by_slot = run(sched, false, emits, b"x");
            assert_eq!(
                by_slot,
                by_lane,
                "{sched:?}, {} emitted before",
                emits.len()
            );
            // And the slot's message came last, after those emitted.
            assert_eq!(by_slot.0.last().map(Vec::as_slice), Some(&b"x"[..]));
            assert_eq!(by_slot.0.len(), emits.len() + 1);
        }
    }
}

#[test]
fn an_empty_slot_sends_nothing_and_a_gone_path_is_not_reached() {
    let mut s = stack(CHAIN);
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    let at = s.stage_ref::<ProbeStage>(p).unwrap();
    clear_log();
    assert_eq!(s.send_from_stage(at, |_, _, _| 3), Some(3));
    assert!(sunk(&mut s, p).is_empty());
    assert!(processed(&log()).is_empty());
    // What the context emitted still runs.
    let m = msg(&s, b"e");
    s.send_from_stage(at, |_, cx, _| cx.emit(Dir::Down, m).unwrap())
        .unwrap();
    assert_eq!(sunk(&mut s, p), [b"e".to_vec()]);
    s.path_delete(p).unwrap();
    let m = msg(&s, b"z");
    let mut m = Some(m);
    assert!(s
        .send_from_stage(at, |_, _, out| *out = m.take().unwrap())
        .is_none());
    assert!(m.is_some(), "the call did not reach the stage");
}
