//! The per-message and LDLP schedulers produce identical outputs in
//! identical per-path order, for random inputs over several paths with the
//! same module sequence, with stages that pass, drop, keep, turn around and
//! emit messages.

use pathstack_core::attrs::Attrs;
use pathstack_core::graph::spec::{Count, ModuleSpec, ServiceSpec, ServiceType};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::{ModuleSetup, ModuleTypes};
use pathstack_core::*;
use proptest::prelude::*;

const MIX_SPEC: ModuleSpec = ModuleSpec {
    name: "MIX",
    doc: "test layer: verdict chosen by message content",
    services: &[
        ServiceSpec::new("up", ServiceType::AIO, Count::Any),
        ServiceSpec::new("down", ServiceType::AIO, Count::Any),
    ],
    params: &[],
    understands: &[],
};

struct Mix;
impl Module for Mix {
    fn spec(&self) -> &'static ModuleSpec {
        &MIX_SPEC
    }
    fn create_stage(&mut self, _: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        let route = if cx.links(1) > 0 {
            Route::Service(1)
        } else {
            Route::End
        };
        Ok(Created {
            stage: Box::new(MixStage { seen: [0, 0] }),
            route,
        })
    }
}

/// Per-direction state only (LDLP's premise, Blackwell §3.2).
struct MixStage {
    seen: [u64; 2],
}

pathstack_core::drop_reasons! {
    /// Why a mix stage dropped a message.
    enum MixDropReason in "mix" {
        /// No room to stamp the message.
        Full => "full",
        /// The message's key chose a drop.
        Chosen => "drop",
    }
}

impl Stage for MixStage {
    fn process(&mut self, dir: Dir, msg: &mut Msg, cx: &mut Cx<'_, '_>) -> Verdict {
        let d = dir.index();
        self.seen[d] += 1;
        let pos = cx.position() as u8;
        // Stamp the per-direction sequence number of this stage into the message.
        if msg.extend_from_slice(&[pos, self.seen[d] as u8]).is_err() {
            return Verdict::Drop(MixDropReason::Full.into());
        }
        let key = msg
            .as_slice()
            .first()
            .copied()
            .unwrap_or(0)
            .wrapping_add(pos * 31);
        // Turning around and emitting happen on the way forward only: the
        // guarantee covers messages answered once (echoes, ACKs); a message
        // bounced again is ordered per batch, not per message (sched.rs).
        let forward = dir == Dir::Down;
        match key % 16 {
            0 => Verdict::Drop(MixDropReason::Chosen.into()),
            1 => Verdict::Consumed,
            2 | 3 if forward => Verdict::Back,
            4 if forward => {
                if let Ok(mut copy) = msg.try_clone() {
                    copy.as_mut_slice()[0] ^= 0x80;
                    let _ = cx.emit(dir.reverse(), copy);
                }
                Verdict::Next
            }
            _ => Verdict::Next,
        }
    }
}

fn build(sched: SchedKind, paths: usize) -> (Stack, Vec<PathId>) {
    let mut types = ModuleTypes::new();
    types.register(&MIX_SPEC, |_: &mut ModuleSetup<'_>| Ok(Box::new(Mix)));
    let text = "name=a module=MIX; name=b module=MIX; name=c module=MIX; name=d module=MIX; @ a.down<>b.up; b.down<>c.up; c.down<>d.up;";
    let graph = ModuleGraph::from_text(text, None, &types.specs()).unwrap();
    let mut s = Stack::builder(graph, types)
        .config(StackConfig {
            sched,
            queue_len: 256,
            ..StackConfig::default()
        })
        .build()
        .unwrap();
    let a = s.module_id("a").unwrap();
    let ids = (0..paths)
        .map(|_| s.path_create(a, Attrs::new()).unwrap())
        .collect();
    (s, ids)
}

type Outputs = Vec<(Vec<Vec<u8>>, Vec<Vec<u8>>, u64, u64)>;

/// How the input is handed to the stack.
#[derive(Clone, Copy, Debug)]
enum Via {
    /// [`Stack::send`]: under LDLP a message sent while nothing waits runs
    /// at once, as per-message runs it (the lone-message rule); one sent
    /// behind waiting input queues and is batched.
    Send,
    /// [`Stack::enqueue`]: every message waits for the poll, so LDLP
    /// batches everything between two polls.
    Enqueue,
}

/// Each path's input arrives in one direction (path `i` forward when bit
/// `i` of `directions` is set): LDLP batches per direction, so for a path
/// fed from both ends at once it interleaves the two directions per batch
/// rather than per message (see the `sched` module docs).
fn run(
    sched: SchedKind,
    paths: usize,
    directions: u8,
    via: Via,
    input: &[(usize, Vec<u8>, bool)],
) -> Outputs {
    let (mut s, ids) = build(sched, paths);
    for (p, bytes, poll_after) in input {
        let p = p % paths;
        let dir = if directions >> p & 1 == 1 {
            Dir::Down
        } else {
            Dir::Up
        };
        let m = s.pool().alloc_copy(bytes).unwrap();
        // A message a stage drops is reported to the sender when it ran
        // at once (per-message), and counted on the path either way.
        match via {
            Via::Send => match s.send(ids[p], dir, m) {
                Ok(()) | Err(SendError::Dropped(_)) => {}
                Err(e) => panic!("send: {e}"),
            },
            Via::Enqueue => {
                if s.enqueue(ids[p], dir, m).is_err() {
                    panic!("enqueue: the queue is full");
                }
            }
        }
        if *poll_after {
            s.poll(Instant::ZERO);
        }
    }
    s.poll(Instant::ZERO);
    ids.iter()
        .map(|&id| {
            let mut f = Vec::new();
            while let Some(m) = s.recv(id, Dir::Down) {
                f.push(m.as_slice().to_vec());
            }
            let mut b = Vec::new();
            while let Some(m) = s.recv(id, Dir::Up) {
                b.push(m.as_slice().to_vec());
            }
            let st = s.path(id).unwrap().stats();
            (f, b, st.drops.total(), st.consumed)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn per_message_and_ldlp_agree(
        paths in 1usize..4,
        batch in 1usize..10,
        directions in any::<u8>(),
        input in proptest::collection::vec(
            (0usize..4, proptest::collection::vec(any::<u8>(), 1..24), proptest::bool::weighted(0.2)),
            0..60),
    ) {
        for via in [Via::Send, Via::Enqueue] {
            let per_message = run(SchedKind::PerMessage, paths, directions, via, &input);
            let ldlp = run(SchedKind::Ldlp { batch }, paths, directions, via, &input);
            prop_assert_eq!(per_message, ldlp, "{:?}", via);
        }
    }
}

#[test]
fn ldlp_batches_across_paths_keep_per_path_order() {
    // Four paths of the same module sequence, eight messages each, all
    // passing straight through (first byte 8 makes every stage say Next):
    // each path gets its own eight, in order, stamped by its own stages.
    // Enqueued, so that they form one batch.
    let input: Vec<_> = (0..32).map(|i| (i % 4, vec![8, i as u8], false)).collect();
    let out = run(SchedKind::Ldlp { batch: 32 }, 4, 0xff, Via::Enqueue, &input);
    for (p, (fwd, back, drops, kept)) in out.iter().enumerate() {
        assert!(back.is_empty() && *drops == 0 && *kept == 0);
        let seq: Vec<u8> = fwd.iter().map(|m| m[1]).collect();
        let want: Vec<u8> = (0..8).map(|k| (p + 4 * k) as u8).collect();
        assert_eq!(seq, want, "path {p}");
        for (k, m) in fwd.iter().enumerate() {
            // Stage 0 saw this message as its (k+1)-th.
            assert_eq!(&m[2..4], &[0, k as u8 + 1]);
        }
    }
}
