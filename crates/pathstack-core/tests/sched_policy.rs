//! Per-path resource management (thesis §5.2): a driver's burst is
//! classified onto the paths' queues first and run by rank — priority,
//! round robin with a bounded quantum, EDF with given or computed
//! deadlines — early discard at classification, per-path accounting and
//! admission control.
//!
//! The stack under test is the synthetic `ECHO / HDR / HDR / LINK / DRIVER`
//! path in echo mode, one path per LINK channel; the test holds the other
//! end of the in-memory wire, writes a burst of frames into it and reads
//! the echoes back in the order the stack processed them.

use pathstack_core::admission::{Budget, Budgets, Resource};
use pathstack_core::attrs::keys::{self, AddrPart, Participants};
use pathstack_core::attrs::Attrs;
use pathstack_core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack_core::graph::ModuleGraph;
use pathstack_core::path::PathStats;
use pathstack_core::synthetic::PAIR_GRAPH;
use pathstack_core::*;

/// Offset of the LINK channel in a frame on the wire (the DRIVER module
/// adds no header of its own).
const CHANNEL_AT: usize = 0;

fn stack_on(mode: &str, dev: MemoryEnd, config: StackConfig) -> Stack {
    let types = ModuleTypes::core();
    let text = PAIR_GRAPH.replace("{mode}", mode);
    let graph = ModuleGraph::from_text(&text, Some("pair.graph"), &types.specs()).unwrap();
    Stack::builder(graph, types)
        .device(dev)
        .config(config)
        .build()
        .unwrap()
}

fn channel_attrs(ch: u32) -> Attrs {
    on_channel(ch, Attrs::new())
}

fn on_channel(ch: u32, attrs: Attrs) -> Attrs {
    attrs.with(
        &keys::PARTICIPANTS,
        Participants {
            local: vec![AddrPart::Id(ch)],
            remote: vec![],
        },
    )
}

/// A stack in `mode` on one end of a wire, the other end for the test,
/// and one frame per channel 1..=`channels` as the stack's peer would send
/// it (made by a client stack, so every header is right).
struct Bench {
    stack: Stack,
    raw: MemoryEnd,
    frames: Vec<Msg>,
    now: Instant,
}

impl Bench {
    fn new(mode: &str, channels: u32, config: StackConfig) -> Bench {
        let (ca, mut craw) = memory_pair(MemoryConfig::default());
        let mut client = stack_on("sink", ca, StackConfig::default());
        let echo = client.module_id("echo").unwrap();
        let mut frames = Vec::new();
        for ch in 1..=channels {
            let p = client.path_create(echo, channel_attrs(ch)).unwrap();
            let m = client.pool().alloc_copy(&[ch as u8; 3]).unwrap();
            client.send(p, Dir::Down, m).unwrap();
            let f = craw.receive(client.pool(), Instant::ZERO).unwrap().unwrap();
            assert_eq!(channel_of(&f), ch, "the channel leads the frame");
            frames.push(f);
        }
        let (sa, raw) = memory_pair(MemoryConfig::default());
        Bench {
            stack: stack_on(mode, sa, config),
            raw,
            frames,
            now: Instant::ZERO,
        }
    }

    fn open(&mut self, ch: u32, attrs: Attrs) -> PathId {
        let echo = self.stack.module_id("echo").unwrap();
        self.stack.path_create(echo, on_channel(ch, attrs)).unwrap()
    }

    /// Writes one frame per entry of `channels` into the wire, then polls
    /// once: the driver hands the stack the whole burst.
    fn burst(&mut self, channels: &[u32]) {
        for &ch in channels {
            let f = self.frames[ch as usize - 1].try_clone().unwrap();
            self.raw.transmit(f, self.now).unwrap();
        }
        self.now = self.now + Duration::from_millis(1);
        self.stack.poll(self.now);
    }

    /// The channels of the frames the stack sent back, in order.
    fn echoes(&mut self) -> Vec<u32> {
        let pool = self.stack.pool().clone();
        let mut out = Vec::new();
        while let Some(f) = self.raw.receive(&pool, self.now).unwrap() {
            out.push(channel_of(&f));
        }
        out
    }

    fn stats(&self, p: PathId) -> &PathStats {
        self.stack.path(p).unwrap().stats()
    }
}

fn channel_of(f: &Msg) -> u32 {
    let b = f.as_slice();
    u16::from_be_bytes([b[CHANNEL_AT], b[CHANNEL_AT + 1]]).into()
}

fn prio(p: u32) -> Attrs {
    Attrs::new().with(&keys::PRIORITY, p)
}

#[test]
fn a_burst_runs_by_priority_not_arrival() {
    let mut b = Bench::new("echo", 3, StackConfig::default());
    b.open(1, prio(0));
    b.open(2, prio(5));
    b.open(3, prio(1));
    b.burst(&[1, 1, 3, 1, 2, 3, 2, 1, 2]);
    assert_eq!(b.echoes(), [2, 2, 2, 3, 3, 1, 1, 1, 1]);
}

#[test]
fn without_ranked_paths_a_burst_runs_in_arrival_order() {
    let mut b = Bench::new("echo", 3, StackConfig::default());
    for ch in 1..=3 {
        b.open(ch, Attrs::new());
    }
    let order = [1, 1, 3, 1, 2, 3, 2, 1, 2];
    b.burst(&order);
    assert_eq!(b.echoes(), order);
}

#[test]
fn one_priority_round_robins_with_the_quantum() {
    let config = StackConfig {
        quantum: 2,
        ..StackConfig::default()
    };
    let mut b = Bench::new("echo", 3, config);
    for ch in 1..=3 {
        b.open(ch, prio(1));
    }
    // Channel 1 floods first; 2 and 3 still get their turns.
    let mut burst = vec![1; 12];
    burst.extend([2, 2, 2, 2, 3, 3]);
    b.burst(&burst);
    assert_eq!(
        b.echoes(),
        [1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]
    );
}

#[test]
fn realtime_runs_earliest_deadline_first_above_every_priority() {
    let mut b = Bench::new("echo", 4, StackConfig::default());
    let rt = |ms| {
        Attrs::new()
            .with(&keys::REALTIME, true)
            .with(&keys::DEADLINE, Duration::from_millis(ms))
    };
    b.open(1, rt(30));
    b.open(2, rt(10));
    b.open(3, rt(20));
    b.open(4, prio(100));
    b.burst(&[4, 1, 2, 3, 4, 1, 2, 3]);
    assert_eq!(b.echoes(), [2, 2, 3, 3, 1, 1, 4, 4]);
}

#[test]
fn a_computed_deadline_follows_the_queue_state() {
    let mut b = Bench::new("echo", 2, StackConfig::default());
    let rt = Attrs::new()
        .with(&keys::REALTIME, true)
        .with(&keys::QUEUE_LEN, 8);
    let p = b.open(1, rt.clone());
    // Nothing observed yet: due now.
    let now = Instant::from_millis(5);
    assert_eq!(b.stack.path(p).unwrap().deadline(Dir::Up, now), Some(now));
    for k in 0..3 {
        b.stack.set_now(Instant::from_millis(10 * k));
        b.stack
            .enqueue(p, Dir::Up, b.frames[0].try_clone().unwrap())
            .unwrap();
    }
    let path = b.stack.path(p).unwrap();
    assert_eq!(
        path.arrival_rate().interval(),
        Some(Duration::from_millis(10))
    );
    // 3 of 8 slots taken: the 5th arrival after the last (20 ms), at
    // 10 ms apart, finds the queue full.
    assert_eq!(
        path.deadline(Dir::Up, b.stack.now()),
        Some(Instant::from_millis(70))
    );
    // A given deadline wins over the computed one.
    let given = SchedParams {
        realtime: true,
        deadline: Some(Instant::from_millis(40)),
        ..SchedParams::default()
    };
    b.stack.set_sched(p, given).unwrap();
    assert_eq!(
        b.stack.path(p).unwrap().deadline(Dir::Up, b.stack.now()),
        Some(Instant::from_millis(40))
    );
}

#[test]
fn the_path_whose_queue_fills_sooner_runs_first() {
    // Two realtime paths, no given deadlines: channel 2's input arrives
    // ten times as fast, so its queue would overflow sooner.
    let mut b = Bench::new("echo", 2, StackConfig::default());
    let rt = Attrs::new()
        .with(&keys::REALTIME, true)
        .with(&keys::QUEUE_LEN, 16);
    let slow = b.open(1, rt.clone());
    let fast = b.open(2, rt);
    // Teach the paths their rates (each input runs at the next poll).
    for k in 0..10u64 {
        b.stack.set_now(Instant::from_millis(100 * k));
        b.stack
            .enqueue(slow, Dir::Up, b.frames[0].try_clone().unwrap())
            .unwrap();
        for j in 0..10 {
            b.stack.set_now(Instant::from_millis(100 * k + 10 * j));
            b.stack
                .enqueue(fast, Dir::Up, b.frames[1].try_clone().unwrap())
                .unwrap();
            b.stack.run_pending();
        }
    }
    b.echoes();
    b.now = Instant::from_millis(1000);
    // The slow path's frame arrives first in the burst.
    b.burst(&[1, 2]);
    assert_eq!(b.echoes(), [2, 1]);
}

#[test]
fn a_single_ranked_path_echoes_what_an_unranked_one_does() {
    let order = [1, 1, 1, 1, 1];
    let mut outs = Vec::new();
    for p in [0, 7] {
        let mut b = Bench::new("echo", 1, StackConfig::default());
        b.open(1, prio(p));
        b.burst(&order);
        let pool = b.stack.pool().clone();
        let mut frames = Vec::new();
        while let Some(f) = b.raw.receive(&pool, b.now).unwrap() {
            frames.push(f.as_slice().to_vec());
        }
        outs.push(frames);
    }
    assert_eq!(outs[0].len(), 5);
    assert_eq!(outs[0], outs[1]);
}

#[test]
fn a_full_input_queue_discards_at_classification() {
    let mut b = Bench::new("echo", 2, StackConfig::default());
    let p = b.open(1, prio(1).with(&keys::QUEUE_LEN, 2));
    b.burst(&[1, 1, 1, 1, 1]);
    assert_eq!(b.echoes(), [1, 1]);
    let s = b.stats(p);
    assert_eq!(s.drops.get(CoreDropReason::SourceFull), 3);
    // No stage saw the discarded frames.
    assert_eq!(s.msgs_in[Dir::Up.index()], 2);
    assert_eq!(s.held_bytes, 0, "nothing left queued");
    assert!(s.peak_held_bytes > 0);
    // Longer at run time.
    b.stack.set_queue_len(p, 4).unwrap();
    assert_eq!(
        b.stack
            .path(p)
            .unwrap()
            .queue(QueueKind::SourceUp)
            .capacity(),
        4
    );
    b.burst(&[1, 1, 1, 1, 1]);
    assert_eq!(b.echoes(), [1, 1, 1, 1]);
    assert_eq!(b.stats(p).drops.get(CoreDropReason::SourceFull), 4);
    b.stack.path_delete(p).unwrap();
    assert!(matches!(
        b.stack.set_queue_len(p, 1),
        Err(PathError::NoSuchPath(_))
    ));
}

#[test]
fn buffers_held_are_charged_and_a_path_over_its_budget_discards_early() {
    // Sink mode: what arrives stays in the path's sink queue until read.
    let mut b = Bench::new("sink", 1, StackConfig::default());
    let probe = b.open(1, Attrs::new());
    b.burst(&[1]);
    let one = b.stats(probe).held_bytes;
    assert!(one > 0, "a queued message holds its buffer");
    assert_eq!(b.stack.recv(probe, Dir::Up).map(|m| m.len()), Some(3));
    assert_eq!(b.stats(probe).held_bytes, 0, "returned when taken");
    b.stack.path_delete(probe).unwrap();

    let p = b.open(1, Attrs::new().with(&keys::MEM_BUDGET, 2 * one));
    assert_eq!(b.stack.path(p).unwrap().memory_budget(), Some(2 * one));
    b.burst(&[1, 1, 1, 1]);
    let s = b.stats(p);
    assert_eq!(s.held_bytes, 2 * one);
    assert_eq!(s.drops.get(CoreDropReason::OverMemoryBudget), 2);
    assert_eq!(s.msgs_in[Dir::Up.index()], 2, "no stage work for the rest");
    // Reading frees room for the next one.
    b.stack.recv(p, Dir::Up).unwrap();
    b.burst(&[1]);
    assert_eq!(b.stats(p).held_bytes, 2 * one);
    assert_eq!(b.stats(p).msgs_in[Dir::Up.index()], 3);
}

#[test]
fn processing_time_is_charged_per_path_when_accounted() {
    let config = StackConfig {
        account_time: true,
        ..StackConfig::default()
    };
    let mut b = Bench::new("echo", 2, config);
    let p1 = b.open(1, prio(1));
    let p2 = b.open(2, Attrs::new());
    b.burst(&[1, 1, 2]);
    // The direct run of a lone frame is charged too.
    b.burst(&[2]);
    assert!(b.stats(p1).cpu_ns > 0);
    assert!(b.stats(p2).cpu_ns > 0);
    // Two frames in; their echoes end in the device (kept by the DRIVER
    // stage, not leaving through the path's end).
    let s = b.stats(p1);
    assert_eq!((s.msgs_in[Dir::Up.index()], s.consumed), (2, 2));
    assert_eq!(s.bytes_in[Dir::Up.index()], 2 * 23);
    let mut b = Bench::new("echo", 1, StackConfig::default());
    let p = b.open(1, Attrs::new());
    b.burst(&[1]);
    assert_eq!(b.stats(p).cpu_ns, 0, "not measured unless asked");
}

fn admission_stack(budgets: Budgets) -> Bench {
    Bench::new(
        "echo",
        1,
        StackConfig {
            budgets,
            ..StackConfig::default()
        },
    )
}

fn try_open(b: &mut Bench, ch: u32, extra: Attrs) -> Result<PathId, PathError> {
    let echo = b.stack.module_id("echo").unwrap();
    b.stack.path_create(echo, on_channel(ch, extra))
}

#[test]
fn admission_refuses_past_the_class_path_count() {
    // The class of a path created at `echo` is `echo` unless CLASS says.
    let budgets = Budgets::default().with_class(
        "echo",
        Budget {
            paths: Some(2),
            ..Budget::default()
        },
    );
    let mut b = admission_stack(budgets);
    let p1 = try_open(&mut b, 1, Attrs::new()).unwrap();
    assert_eq!(b.stack.path(p1).unwrap().class(), "echo");
    try_open(&mut b, 2, Attrs::new()).unwrap();
    let e = try_open(&mut b, 3, Attrs::new()).unwrap_err();
    let PathError::Admission(a) = &e else {
        panic!("{e}")
    };
    assert_eq!(
        (a.resource, a.scope, a.limit),
        (Resource::Paths, "class", 2)
    );
    assert_eq!(b.stack.stats().paths, 2, "no path was made");
    // Another class is not counted against `echo`.
    try_open(&mut b, 3, Attrs::new().with(&keys::CLASS, "bulk".into())).unwrap();
    // Deleting gives the slot back.
    b.stack.path_delete(p1).unwrap();
    try_open(&mut b, 4, Attrs::new()).unwrap();
}

#[test]
fn admission_refuses_past_the_memory_and_cpu_budgets() {
    let budgets = Budgets {
        stack: Budget {
            memory: Some(10_000),
            cpu_permille: Some(800),
            ..Budget::default()
        },
        path_memory: Some(4_000),
        ..Budgets::default()
    };
    let mut b = admission_stack(budgets);
    // Two paths reserve the default 4,000 bytes each; a third does not fit.
    try_open(&mut b, 1, Attrs::new()).unwrap();
    try_open(&mut b, 2, Attrs::new()).unwrap();
    let e = try_open(&mut b, 3, Attrs::new()).unwrap_err();
    let PathError::Admission(a) = &e else {
        panic!("{e}")
    };
    assert_eq!(
        (a.resource, a.requested, a.in_use, a.limit),
        (Resource::Memory, 4_000, 8_000, 10_000)
    );
    // A smaller reservation fits.
    let small = try_open(&mut b, 3, Attrs::new().with(&keys::MEM_BUDGET, 2_000)).unwrap();
    assert_eq!(b.stack.path(small).unwrap().memory_budget(), Some(2_000));
    // CPU: 500 + 400 > 800.
    b.stack.path_delete(small).unwrap();
    try_open(
        &mut b,
        4,
        Attrs::new()
            .with(&keys::MEM_BUDGET, 0)
            .with(&keys::CPU_SHARE, 500),
    )
    .unwrap();
    let e = try_open(
        &mut b,
        5,
        Attrs::new()
            .with(&keys::MEM_BUDGET, 0)
            .with(&keys::CPU_SHARE, 400),
    )
    .unwrap_err();
    assert!(
        matches!(&e, PathError::Admission(a) if a.resource == Resource::Cpu),
        "{e}"
    );
    assert!(e.to_string().contains("CPU share"), "{e}");
    let (total, class) = b.stack.admission_usage("echo");
    assert_eq!(
        (total.paths, total.memory, total.cpu_permille),
        (3, 8_000, 500)
    );
    assert_eq!(class, total);
}

#[test]
fn admission_refuses_past_the_stack_path_count() {
    let budgets = Budgets {
        stack: Budget {
            paths: Some(1),
            ..Budget::default()
        },
        ..Budgets::default()
    };
    let mut b = admission_stack(budgets);
    try_open(&mut b, 1, Attrs::new()).unwrap();
    let e = try_open(&mut b, 2, Attrs::new().with(&keys::CLASS, "x".into())).unwrap_err();
    assert!(
        matches!(&e, PathError::Admission(a) if a.scope == "stack" && a.resource == Resource::Paths),
        "{e}"
    );
}

#[test]
fn under_ldlp_a_lone_frame_runs_at_once_and_a_burst_is_batched() {
    let ldlp = StackConfig {
        sched: SchedKind::Ldlp { batch: 8 },
        ..StackConfig::default()
    };
    let mut b = Bench::new("echo", 2, ldlp);
    let p = b.open(1, Attrs::new());
    let q = b.open(2, Attrs::new());
    // One frame per poll: straight through its path, as per-message runs
    // it; no queue of the path ever holds it (the echo leaves by the wire).
    for _ in 0..3 {
        b.burst(&[1]);
        assert_eq!(b.echoes(), [1]);
    }
    assert_eq!(b.stats(p).peak_held_bytes, 0, "a lone frame is not queued");
    // A burst is classified onto the queues first and runs as one batch
    // of the two like paths: path 1's input, then path 2's, each echo in
    // the order of its frame in the batch.
    b.burst(&[1, 2, 1, 2]);
    assert_eq!(b.echoes(), [1, 1, 2, 2]);
    assert!(b.stats(p).peak_held_bytes > 0 && b.stats(q).peak_held_bytes > 0);
    assert_eq!(b.stats(p).held_bytes, 0, "nothing left queued");
}

#[test]
fn a_path_that_keeps_refusing_has_its_frames_discarded_in_the_device() {
    use pathstack_core::device::{DriverModule, FrameMatch};
    let config = StackConfig {
        device_discard_after: 4,
        device_discard_hold: Duration::from_millis(5),
        ..StackConfig::default()
    };
    let mut b = Bench::new("echo", 2, config);
    let low = b.open(1, Attrs::new().with(&keys::QUEUE_LEN, 2));
    let high = b.open(2, prio(1));
    let channel_1 = FrameMatch::new().with_u16(CHANNEL_AT as u16, 1);
    b.stack.set_device_discard(low, Some(channel_1)).unwrap();
    let wire = b.stack.module_id("wire").unwrap();
    let device_dropped = |b: &Bench| {
        b.stack
            .module::<DriverModule>(wire)
            .unwrap()
            .device_stats()
            .dropped_discard
    };

    // Two of channel 1's frames fit its queue; the next four are refused
    // in a row, and the fourth moves the discard into the device.
    b.burst(&[1, 1, 1, 1, 1, 1, 2]);
    assert_eq!(b.echoes(), [2, 1, 1], "the important path first");
    assert!(b.stack.device_discarding(low));
    assert!(!b.stack.device_discarding(high));
    assert_eq!(b.stats(low).device_discards, 1);
    assert_eq!(b.stats(low).drops.get(CoreDropReason::SourceFull), 4);
    assert_eq!(device_dropped(&b), 0);
    let ends = b.now + Duration::from_millis(5);
    assert!(
        b.stack.poll_at().is_some_and(|t| t <= ends),
        "the end is timed"
    );

    // While it lasts, the device drops channel 1 before the stack sees it,
    // and channel 2 still gets through.
    b.burst(&[1, 1, 2, 1]);
    assert_eq!(b.echoes(), [2]);
    assert_eq!(device_dropped(&b), 3);
    assert_eq!(b.stats(low).drops.get(CoreDropReason::SourceFull), 4);
    assert_eq!(b.stats(low).msgs_in[Dir::Up.index()], 2);

    // After the hold the frames come in again.
    b.now = b.now + Duration::from_millis(5);
    b.stack.poll(b.now);
    assert!(!b.stack.device_discarding(low));
    b.burst(&[1, 2]);
    assert_eq!(b.echoes(), [2, 1]);
    assert_eq!(device_dropped(&b), 3);

    // Taking the match away ends a discard in progress.
    b.burst(&[1, 1, 1, 1, 1, 1]);
    assert!(b.stack.device_discarding(low));
    b.stack.set_device_discard(low, None).unwrap();
    assert!(!b.stack.device_discarding(low));
    b.echoes();
    b.burst(&[1]);
    assert_eq!(b.echoes(), [1]);
}
