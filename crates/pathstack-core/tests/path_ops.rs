//! Path operations (thesis §3.3): creation with routing decisions, PATHNAME,
//! short paths, extension at either end with fate sharing, the establish
//! chain, deletion, queues, attributes, scheduling parameters, accounting,
//! dynamic routing at path ends.

mod common;
use common::*;
use pathstack_core::attrs::{keys, Attrs};
use pathstack_core::sched::SchedError;
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

#[test]
fn create_follows_routing_decisions_and_establishes_in_creation_order() {
    clear_log();
    let mut s = stack(CHAIN);
    let a = s.module_id("a").unwrap();
    let p = s.path_create(a, Attrs::new()).unwrap();
    let path = s.path(p).unwrap();
    let names: Vec<_> = path
        .modules()
        .iter()
        .map(|m| s.module_name(*m).unwrap())
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    let l = log();
    assert_eq!(
        l,
        [
            "create a entry=None",
            "create b entry=Some(0)",
            "create c entry=Some(0)",
            "establish a after []",
            "establish b after [\"a\"]",
            "establish c after [\"a\", \"b\"]",
        ]
    );
}

#[test]
fn short_path_when_no_unique_decision_and_pathname_forces_route() {
    // m has two connections below: without PATHNAME it cannot decide.
    let text = "
        name=m module=PROBE route=down;
        name=x module=PROBE; name=y module=PROBE;
        @ m.down<>x.up; m.down<>y.up;";
    let mut s = stack(text);
    let m = s.module_id("m").unwrap();
    let short = s.path_create(m, Attrs::new()).unwrap();
    assert_eq!(s.path(short).unwrap().len(), 1, "short path ends at m");

    let forced = s
        .path_create(m, Attrs::new().with(&keys::PATHNAME, vec!["y".to_string()]))
        .unwrap();
    let path = s.path(forced).unwrap();
    assert_eq!(s.module_name(path.modules()[1]), Some("y"));

    let err = s
        .path_create(
            m,
            Attrs::new().with(&keys::PATHNAME, vec!["nowhere".to_string()]),
        )
        .unwrap_err();
    assert!(
        matches!(err, PathError::PathnameUnreachable { .. }),
        "{err}"
    );
}

#[test]
fn pathname_forces_a_route_where_the_module_made_none() {
    let text = "name=top module=PROBE; name=bot module=PROBE; @ top.down<>bot.up;";
    let mut s = stack(text);
    let top = s.module_id("top").unwrap();
    let short = s.path_create(top, Attrs::new()).unwrap();
    assert_eq!(s.path(short).unwrap().len(), 1);
    let p = s
        .path_create(top, Attrs::new().with(&keys::PATHNAME, vec!["bot".into()]))
        .unwrap();
    assert_eq!(s.path(p).unwrap().len(), 2);
}

#[test]
fn create_failure_destroys_the_stages_made() {
    clear_log();
    let text = "name=a module=PROBE route=down; name=b module=PROBE fail=create; @ a.down<>b.up;";
    let mut s = stack(text);
    let err = s
        .path_create(s.module_id("a").unwrap(), Attrs::new())
        .unwrap_err();
    assert!(err.to_string().contains("told to fail"), "{err}");
    assert!(log().contains(&"destroy a".to_string()));
    assert_eq!(s.stats().paths, 0);
}

#[test]
fn establish_failure_deletes_the_path() {
    let text =
        "name=a module=PROBE route=down; name=b module=PROBE fail=establish; @ a.down<>b.up;";
    let mut s = stack(text);
    let err = s
        .path_create(s.module_id("a").unwrap(), Attrs::new())
        .unwrap_err();
    assert!(matches!(err, PathError::Establish { .. }), "{err}");
    assert_eq!(s.stats().paths, 0);
}

#[test]
fn routing_loop_is_bounded() {
    let text = "name=a module=PROBE route=down; name=b module=PROBE route=up; @ a.down<>b.up;";
    // a routes down to b, b routes up to a, forever.
    let mut s = stack(text);
    let err = s
        .path_create(s.module_id("a").unwrap(), Attrs::new())
        .unwrap_err();
    assert!(matches!(err, PathError::TooLong { .. }), "{err}");
}

#[test]
fn extend_at_either_end_and_fate_sharing() {
    clear_log();
    let text = "
        name=top module=PROBE route=end;
        name=mid module=PROBE route=end extend=down;
        name=bot module=PROBE;
        @ top.down<>mid.up; mid.down<>bot.up;";
    let mut s = stack(text);
    let mid = s.module_id("mid").unwrap();
    let p = s.path_create(mid, Attrs::new()).unwrap();
    assert_eq!(s.path(p).unwrap().len(), 1);
    // end[1]: mid decides `down` when extended.
    s.path_extend(p, End::One, Attrs::new()).unwrap();
    // end[0]: mid makes no decision, PATHNAME forces `top`.
    s.path_extend(
        p,
        End::Zero,
        Attrs::new().with(&keys::PATHNAME, vec!["top".into()]),
    )
    .unwrap();
    let names: Vec<_> = s
        .path(p)
        .unwrap()
        .modules()
        .iter()
        .map(|m| s.module_name(*m).unwrap().to_string())
        .collect();
    assert_eq!(names, ["top", "mid", "bot"]);
    // Establish ran for the new stages only, in creation order.
    let est: Vec<_> = log()
        .into_iter()
        .filter(|l| l.starts_with("establish"))
        .collect();
    assert_eq!(
        est,
        [
            "establish mid after []",
            "establish bot after []",
            "establish top after []"
        ]
    );

    // Fate sharing: extending an end whose module makes no decision fails
    // and deletes the whole path.
    let err = s.path_extend(p, End::Zero, Attrs::new()).unwrap_err();
    assert!(matches!(err, PathError::CannotExtend { .. }), "{err}");
    assert!(s.path(p).is_none());
}

#[test]
fn delete_runs_destroy_in_creation_order_and_ids_are_not_reused() {
    clear_log();
    let mut s = stack(CHAIN);
    let p = s
        .path_create(s.module_id("a").unwrap(), Attrs::new())
        .unwrap();
    s.path_delete(p).unwrap();
    let d: Vec<_> = log()
        .into_iter()
        .filter(|l| l.starts_with("destroy"))
        .collect();
    assert_eq!(d, ["destroy a", "destroy b", "destroy c"]);
    assert!(matches!(s.path_delete(p), Err(PathError::NoSuchPath(_))));
    let q = s
        .path_create(s.module_id("a").unwrap(), Attrs::new())
        .unwrap();
    assert_ne!(p, q, "a new path never gets a deleted path's id");
    assert_eq!(p.index(), q.index(), "the slot is reused");
}

#[test]
fn limited_attrs_dropped_pervasive_kept() {
    // PROBE understands PROBE_NOTE, HDR does not: a note set for a path
    // that crosses HDR does not reach the PROBE below it.
    let text = "
        name=top module=PROBE route=down;
        name=h module=HDR;
        name=bot module=PROBE;
        @ top.down<>h.up; h.down<>bot.up;";
    let mut s = stack(text);
    let top = s.module_id("top").unwrap();
    let attrs = Attrs::new()
        .with(&PROBE_NOTE, "hello".into())
        .with(&keys::PRIORITY, 3);
    let p = s.path_create(top, attrs).unwrap();
    let bot = s.module_id("bot").unwrap();
    assert_eq!(s.module::<Probe>(top).unwrap().seen_note, [true]);
    assert_eq!(s.module::<Probe>(bot).unwrap().seen_note, [false]);
    // Pervasive PRIORITY crossed HDR and set the path's priority.
    assert_eq!(s.path(p).unwrap().sched().priority, 3);
    assert_eq!(s.path(p).unwrap().attrs().get(&keys::PRIORITY), Some(&3));
}

#[test]
fn queues_are_bounded_and_counted() {
    let mut s = stack(CHAIN);
    let p = s
        .path_create(
            s.module_id("a").unwrap(),
            Attrs::new().with(&keys::QUEUE_LEN, 2),
        )
        .unwrap();
    let pool = s.pool().clone();
    for _ in 0..2 {
        s.enqueue(p, Dir::Down, pool.alloc_copy(b"x").unwrap())
            .unwrap();
    }
    assert!(s
        .send(p, Dir::Down, pool.alloc_copy(b"y").unwrap())
        .is_err());
    let path = s.path(p).unwrap();
    let q = path.queue(QueueKind::SourceDown);
    assert_eq!((q.len(), q.capacity(), q.dropped()), (2, 2, 1));
    assert_eq!(path.stats().drops.get(CoreDropReason::SourceFull), 1);
    assert!(path.is_pending());
    s.poll(Instant::ZERO);
    let path = s.path(p).unwrap();
    assert_eq!(path.queue(QueueKind::SinkDown).len(), 2);
    assert_eq!(path.stats().msgs_in[0], 2);
    assert_eq!(path.stats().msgs_out[0], 2);
    assert_eq!(path.stats().bytes_out[0], 2);
    assert!(!path.is_pending());
    assert_eq!(s.recv(p, Dir::Down).unwrap().as_slice(), b"x");
}

#[test]
fn deadline_may_only_be_tightened_while_pending() {
    let mut s = stack(CHAIN);
    let p = s
        .path_create(s.module_id("a").unwrap(), Attrs::new())
        .unwrap();
    let rt = |ms| SchedParams {
        realtime: true,
        deadline: Some(Instant::from_millis(ms)),
        ..SchedParams::default()
    };
    s.set_sched(p, rt(10)).unwrap();
    // Not pending: anything goes.
    s.set_sched(p, rt(20)).unwrap();
    let m = s.pool().alloc(1).unwrap();
    s.enqueue(p, Dir::Down, m).unwrap();
    // Pending: earlier is fine, later is refused, best-effort is refused.
    s.set_sched(p, rt(15)).unwrap();
    assert!(matches!(
        s.set_sched(p, rt(30)),
        Err(PathError::Sched(SchedError::DeadlineLoosened { .. }))
    ));
    assert!(matches!(
        s.set_sched(p, SchedParams::default()),
        Err(PathError::Sched(SchedError::RealtimeDropped(_)))
    ));
    // Once the deadline has passed, it may be replaced by anything.
    s.poll(Instant::from_millis(16));
    let m = s.pool().alloc(1).unwrap();
    s.enqueue(p, Dir::Down, m).unwrap();
    s.set_sched(p, rt(100)).unwrap();
}

#[test]
fn realtime_runs_before_best_effort_and_priority_orders() {
    let text = "name=a module=PROBE; name=b module=PROBE; name=c module=PROBE; @";
    clear_log();
    let mut s = stack(text);
    let mut ids = Vec::new();
    for n in ["a", "b", "c"] {
        let m = s.module_id(n).unwrap();
        ids.push(s.path_create(m, Attrs::new()).unwrap());
    }
    s.set_sched(
        ids[0],
        SchedParams {
            priority: 1,
            ..Default::default()
        },
    )
    .unwrap();
    s.set_sched(
        ids[1],
        SchedParams {
            priority: 5,
            ..Default::default()
        },
    )
    .unwrap();
    s.set_sched(
        ids[2],
        SchedParams {
            realtime: true,
            deadline: Some(Instant::from_millis(1)),
            ..Default::default()
        },
    )
    .unwrap();
    clear_log();
    for &p in &ids {
        let m = s.pool().alloc(1).unwrap();
        s.enqueue(p, Dir::Down, m).unwrap();
    }
    s.poll(Instant::ZERO);
    let order: Vec<_> = log()
        .into_iter()
        .filter(|l| l.starts_with("process"))
        .collect();
    assert_eq!(
        order,
        ["process c Down", "process b Down", "process a Down"]
    );
}

#[test]
fn dynamic_routing_at_a_short_path_end() {
    // Thesis Fig. 2.5/3.6: a message climbing the short path bot→ip falls
    // off at ip, which classifies it again onto a path starting at ip.
    let text = "
        name=u module=PROBE route=down key=0;
        name=ip module=PROBE key=9 reroute=1;
        name=bot module=PROBE;
        @ u.down<>ip.up; ip.down<>bot.up;";
    let mut s = stack(text);
    let (u, ip) = (s.module_id("u").unwrap(), s.module_id("ip").unwrap());
    let short = s
        .path_create(ip, Attrs::new().with(&keys::PATHNAME, vec!["bot".into()]))
        .unwrap();
    let p1 = s.path_create(u, Attrs::new().with(&PROBE_KEY, 1)).unwrap();
    let p2 = s.path_create(u, Attrs::new().with(&PROBE_KEY, 2)).unwrap();
    assert_eq!(
        s.path(p1).unwrap().len(),
        2,
        "u → ip, short: ip makes no decision"
    );
    for (key, path) in [(2u8, p2), (1, p1)] {
        let m = s.pool().alloc_copy(&[9, key, b'!']).unwrap();
        s.send(short, Dir::Up, m).unwrap();
        s.poll(Instant::ZERO);
        let got = s.recv(path, Dir::Up).expect("rerouted onto the upper path");
        assert_eq!(got.as_slice(), b"!");
    }
    assert!(s.recv(short, Dir::Up).is_none());
    // No upper path for key 3: the message stays in the short path's sink.
    let m = s.pool().alloc_copy(&[9, 3, b'?']).unwrap();
    s.send(short, Dir::Up, m).unwrap();
    s.poll(Instant::ZERO);
    assert_eq!(s.recv(short, Dir::Up).unwrap().as_slice(), &[9, 3, b'?']);
}
