//! The send lane and typed stage handles: what an application's call into
//! a stage ([`Stack::with_stage`], [`Stack::with_stage_at`]) emits runs
//! when the call returns, in emission order, the first message through
//! the lane and the rest through the follow-up list; a [`StageRef`] finds
//! its stage without a search, follows it when the path is extended, and
//! finds nothing once the path is gone.

mod common;
use common::*;
use pathstack_core::attrs::{keys, Attrs};
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

#[test]
fn emitted_messages_run_when_the_call_returns_in_emission_order() {
    for sched in [SchedKind::PerMessage, SchedKind::Ldlp { batch: 8 }] {
        clear_log();
        let mut s = stack(CHAIN);
        s.set_scheduler(sched);
        let a = s.module_id("a").unwrap();
        let p = s.path_create(a, Attrs::new()).unwrap();
        let (one, two, three) = (msg(&s, b"1"), msg(&s, b"2"), msg(&s, b"3"));
        clear_log();
        let r = s.with_stage::<ProbeStage, _>(p, |_, cx| {
            // The first goes through the lane, the others through the
            // list behind it; none runs before the call returns.
            assert!(cx.emit(Dir::Down, one).is_ok());
            assert!(cx.emit(Dir::Down, two).is_ok());
            assert!(cx.emit(Dir::Down, three).is_ok());
            assert!(processed(&log()).is_empty(), "nothing ran inside the call");
            7
        });
        assert_eq!(r, Some(7));
        assert_eq!(
            sunk(&mut s, p),
            [b"1".to_vec(), b"2".to_vec(), b"3".to_vec()],
            "{sched:?}"
        );
        assert_eq!(
            processed(&log()),
            [
                "process b Down",
                "process c Down",
                "process b Down",
                "process c Down",
                "process b Down",
                "process c Down"
            ],
            "{sched:?}: each message runs to its end before the next"
        );
        assert_eq!(s.stats().follow_up_drops, 0);
    }
}

#[test]
fn a_message_sent_on_another_path_first_keeps_its_place() {
    clear_log();
    let mut s = stack(CHAIN);
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    // A second path, through b and c only.
    let b = s.module_id("b").unwrap();
    let q = s.path_create(b, Attrs::new()).unwrap();
    let (first, second) = (msg(&s, b"q"), msg(&s, b"p"));
    clear_log();
    s.with_stage::<ProbeStage, _>(p, |_, cx| {
        // On q, from its top stage (b): it starts at c.
        assert!(cx.send_on(q, 0, Dir::Down, first).is_ok());
        assert!(cx.emit(Dir::Down, second).is_ok());
    })
    .unwrap();
    assert_eq!(sunk(&mut s, q), [b"q".to_vec()]);
    assert_eq!(sunk(&mut s, p), [b"p".to_vec()]);
    assert_eq!(
        processed(&log()),
        ["process c Down", "process b Down", "process c Down"],
        "q's message, emitted first, ran first"
    );
}

#[test]
fn a_call_that_emits_nothing_leaves_nothing_behind() {
    let mut s = stack(CHAIN);
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    assert_eq!(s.with_stage::<ProbeStage, _>(p, |_, _| 1), Some(1));
    assert!(sunk(&mut s, p).is_empty());
    // A message emitted by a later call is the first of its own call.
    let m = msg(&s, b"x");
    s.with_stage::<ProbeStage, _>(p, |_, cx| cx.emit(Dir::Down, m).unwrap())
        .unwrap();
    assert_eq!(sunk(&mut s, p), [b"x".to_vec()]);
    // Messages that run outside any application call (a send) do not
    // use the lane: the stack's ordinary send still works after it.
    let m = msg(&s, b"y");
    s.send(p, Dir::Down, m).unwrap();
    assert_eq!(sunk(&mut s, p), [b"y".to_vec()]);
}

#[test]
fn a_stage_ref_reaches_its_stage_until_the_path_goes() {
    let mut s = stack(CHAIN);
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    let at = s.stage_ref::<ProbeStage>(p).unwrap();
    assert_eq!((at.path(), at.position()), (p, 0));
    assert!(s.stage_at(at).is_some());
    let m = msg(&s, b"z");
    let r = s.with_stage_at(at, |_, cx| {
        assert_eq!(cx.position(), 0);
        cx.emit(Dir::Down, m).unwrap();
        cx.path()
    });
    assert_eq!(r, Some(p));
    assert_eq!(sunk(&mut s, p), [b"z".to_vec()]);
    // Without a context, the same stage.
    let by_mut = s.stage_at_mut(at).map(|st| st as *mut ProbeStage as usize);
    let by_ref = s.stage_at(at).map(|st| st as *const ProbeStage as usize);
    assert!(by_mut.is_some());
    assert_eq!(by_mut, by_ref);
    s.path_delete(p).unwrap();
    assert!(s.stage_at(at).is_none());
    assert!(s.stage_at_mut(at).is_none());
    assert!(s.with_stage_at(at, |_, _| ()).is_none());
    // The slot is reused by a new path: the old handle does not reach it.
    let q = s.path_create(a, Attrs::new()).unwrap();
    assert_eq!(q.index(), p.index());
    assert!(s.with_stage_at(at, |_, _| ()).is_none());
    assert!(s.stage_at_mut(at).is_none());
    assert!(s.stage_ref::<ProbeStage>(q).is_some());
}

#[test]
fn a_stage_ref_follows_its_stage_when_the_path_is_extended() {
    let text = "
        name=top module=PROBE route=end;
        name=mid module=PROBE route=end extend=down;
        name=bot module=PROBE;
        @ top.down<>mid.up; mid.down<>bot.up;";
    let mut s = stack(text);
    let mid = s.module_id("mid").unwrap();
    let p = s.path_create(mid, Attrs::new()).unwrap();
    let at = s.stage_ref::<ProbeStage>(p).unwrap();
    assert_eq!(at.position(), 0);
    // A stage at end[0]: mid's stage moves to position 1.
    s.path_extend(
        p,
        End::Zero,
        Attrs::new().with(&keys::PATHNAME, vec!["top".into()]),
    )
    .unwrap();
    let pos = s.with_stage_at(at, |_, cx| cx.position());
    assert_eq!(pos, Some(1), "the handle found mid's stage where it moved");
    // A new search by type finds the first probe stage, top's.
    let top = s.stage_ref::<ProbeStage>(p).unwrap();
    assert_eq!(top.position(), 0);
    // Without a context too, the handle reaches mid's stage, not top's.
    let mid_stage = s.stage_at_mut(at).map(|st| st as *mut ProbeStage as usize);
    let top_stage = s.stage_at(top).map(|st| st as *const ProbeStage as usize);
    assert!(mid_stage.is_some() && top_stage.is_some());
    assert_ne!(mid_stage, top_stage);
}

#[test]
fn a_stage_ref_of_another_type_finds_nothing() {
    let mut s = stack(CHAIN);
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    struct Other;
    impl Stage for Other {
        fn process(&mut self, _: Dir, _: &mut Msg, _: &mut Cx<'_, '_>) -> Verdict {
            Verdict::Next
        }
    }
    assert!(s.stage_ref::<Other>(p).is_none());
    assert!(s.with_stage::<Other, _>(p, |_, _| ()).is_none());
}
