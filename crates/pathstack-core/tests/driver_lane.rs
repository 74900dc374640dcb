//! The driver's fast lane (issue 26): a driver writes each received frame
//! into the slot the stack runs it in, says when it is the last one ready
//! (`Received::Last`), and bounds its own burst. These tests hold the
//! burst bound and the order of frames under both schedulers and with
//! ranked paths, on the synthetic `ECHO / HDR / HDR / LINK / DRIVER` path in
//! echo mode; the test holds the other end of the in-memory wire.

use pathstack_core::attrs::keys::{self, AddrPart, Participants};
use pathstack_core::attrs::Attrs;
use pathstack_core::device::memory::{memory_pair, MemoryConfig, MemoryEnd};
use pathstack_core::graph::spec::ModuleSpec;
use pathstack_core::graph::ModuleGraph;
use pathstack_core::stack::ModuleSetup;
use pathstack_core::synthetic::PAIR_GRAPH;
use pathstack_core::*;

/// `DRIVER` behind a module of another type that forwards to it: the
/// stack holds the core's own `DRIVER` by its type and reaches its lane
/// and device without a call into the module (`stack/module_slot.rs`);
/// this one it must reach through `Module::rx_lane` and
/// `Module::device_mut`, as any other driver offering them.
struct Forwarding(Box<dyn Module>);

static FORWARDING_SPEC: ModuleSpec = ModuleSpec {
    name: "FWDDRIVER",
    ..device::DRIVER_SPEC
};

impl Forwarding {
    fn create(setup: &mut ModuleSetup<'_>) -> Result<Box<dyn Module>, ModuleError> {
        Ok(Box::new(Forwarding(device::DriverModule::create(setup)?)))
    }
}

impl Module for Forwarding {
    fn spec(&self) -> &'static ModuleSpec {
        &FORWARDING_SPEC
    }
    fn create_stage(&mut self, attrs: &mut Attrs, cx: &mut CreateCx<'_>) -> Creation {
        self.0.create_stage(attrs, cx)
    }
    fn receives(&self) -> bool {
        self.0.receives()
    }
    fn receive(&mut self, cx: &mut ModCx<'_>, frame: &mut Msg) -> device::Received {
        self.0.receive(cx, frame)
    }
    fn rx_lane(&mut self) -> Option<device::RxLane<'_>> {
        self.0.rx_lane()
    }
    fn rx_failed(&mut self, e: DeviceError, cx: &mut ModCx<'_>) {
        self.0.rx_failed(e, cx)
    }
    fn device_mut(&mut self) -> Option<&mut dyn Device> {
        self.0.device_mut()
    }
    fn stats(&self) -> Vec<(String, u64)> {
        self.0.stats()
    }
}

fn stack_on(mode: &str, rx_burst: Option<usize>, dev: MemoryEnd, sched: SchedKind) -> Stack {
    stack_over(mode, rx_burst, dev, sched, false)
}

fn stack_over(
    mode: &str,
    rx_burst: Option<usize>,
    dev: MemoryEnd,
    sched: SchedKind,
    forwarding: bool,
) -> Stack {
    let mut types = ModuleTypes::core();
    types.register(&FORWARDING_SPEC, Forwarding::create);
    let mut text = PAIR_GRAPH.replace("{mode}", mode);
    if let Some(n) = rx_burst {
        text = text.replace(
            "module=DRIVER device=0",
            &format!("module=DRIVER device=0 rx_burst={n}"),
        );
    }
    if forwarding {
        text = text.replace("module=DRIVER", "module=FWDDRIVER");
    }
    let graph = ModuleGraph::from_text(&text, Some("pair.graph"), &types.specs()).unwrap();
    let config = StackConfig {
        sched,
        ..StackConfig::default()
    };
    Stack::builder(graph, types)
        .device(dev)
        .config(config)
        .build()
        .unwrap()
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

/// A stack echoing on channels 1..=`channels` behind a wire whose other
/// end the test holds, and one frame per channel as its peer would send it.
struct Bench {
    stack: Stack,
    raw: MemoryEnd,
    frames: Vec<Msg>,
    now: Instant,
}

impl Bench {
    fn new(sched: SchedKind, rx_burst: Option<usize>, channels: u32, priority: bool) -> Bench {
        Bench::over(sched, rx_burst, channels, priority, false)
    }

    /// As [`Bench::new`], the echoing stack's driver behind a
    /// [`Forwarding`] module when `forwarding`.
    fn over(
        sched: SchedKind,
        rx_burst: Option<usize>,
        channels: u32,
        priority: bool,
        forwarding: bool,
    ) -> Bench {
        let (ca, mut craw) = memory_pair(MemoryConfig::default());
        let mut client = stack_on("sink", None, ca, SchedKind::PerMessage);
        let echo = client.module_id("echo").unwrap();
        let mut frames = Vec::new();
        for ch in 1..=channels {
            let p = client
                .path_create(echo, on_channel(ch, Attrs::new()))
                .unwrap();
            let m = client.pool().alloc_copy(&[ch as u8; 3]).unwrap();
            client.send(p, Dir::Down, m).unwrap();
            frames.push(craw.receive(client.pool(), Instant::ZERO).unwrap().unwrap());
        }
        let (sa, raw) = memory_pair(MemoryConfig::default());
        let mut stack = stack_over("echo", rx_burst, sa, sched, forwarding);
        let echo = stack.module_id("echo").unwrap();
        for ch in 1..=channels {
            // A priority other than 0 makes the path ranked: the burst is
            // classified first and run by rank.
            let attrs = if priority {
                Attrs::new().with(&keys::PRIORITY, ch)
            } else {
                Attrs::new()
            };
            stack.path_create(echo, on_channel(ch, attrs)).unwrap();
        }
        Bench {
            stack,
            raw,
            frames,
            now: Instant::ZERO,
        }
    }

    fn write(&mut self, channels: &[u32]) {
        for &ch in channels {
            let f = self.frames[ch as usize - 1].try_clone().unwrap();
            self.raw.transmit(f, self.now).unwrap();
        }
    }

    fn poll(&mut self) {
        self.now = self.now + Duration::from_millis(1);
        self.stack.poll(self.now);
    }

    /// The channels of the frames the stack sent back, in order.
    fn echoes(&mut self) -> Vec<u32> {
        let pool = self.stack.pool().clone();
        let mut out = Vec::new();
        while let Some(f) = self.raw.receive(&pool, self.now).unwrap() {
            let b = f.as_slice();
            out.push(u16::from_be_bytes([b[0], b[1]]).into());
        }
        out
    }
}

const SCHEDS: [SchedKind; 2] = [SchedKind::PerMessage, SchedKind::Ldlp { batch: 8 }];

#[test]
fn a_poll_takes_at_most_the_drivers_burst_and_the_next_poll_the_rest() {
    for sched in SCHEDS {
        for priority in [false, true] {
            let mut b = Bench::new(sched, Some(2), 5, priority);
            b.write(&[1, 2, 3, 4, 5]);
            let mut seen = Vec::new();
            for (poll, want) in [2, 2, 1, 0].into_iter().enumerate() {
                b.poll();
                let got = b.echoes();
                assert_eq!(
                    got.len(),
                    want,
                    "{sched}, ranked {priority}: poll {poll} echoed {got:?}"
                );
                seen.extend(got);
            }
            seen.sort_unstable();
            assert_eq!(seen, [1, 2, 3, 4, 5], "{sched}, ranked {priority}");
        }
    }
}

#[test]
fn without_a_bound_one_poll_takes_everything_ready() {
    for sched in SCHEDS {
        let mut b = Bench::new(sched, None, 4, false);
        b.write(&[3, 1, 4, 2, 1]);
        b.poll();
        let mut got = b.echoes();
        if sched == SchedKind::PerMessage {
            // Run to completion, in arrival order.
            assert_eq!(got, [3, 1, 4, 2, 1]);
        } else {
            // LDLP batches the burst by path (`crate::sched`).
            got.sort_unstable();
            assert_eq!(got, [1, 1, 2, 3, 4], "{sched}");
        }
        assert_eq!(b.raw.rx_pending(), 0);
        // A lone frame: the driver says it is the last one, and it runs.
        b.write(&[2]);
        b.poll();
        assert_eq!(b.echoes(), [2], "{sched}");
    }
}

#[test]
fn a_frame_that_arrives_after_the_last_waits_for_the_next_poll() {
    // The wire says `Last` when its ring is empty after the pop; a frame
    // written between two polls is the next poll's first.
    let mut b = Bench::new(SchedKind::PerMessage, None, 2, false);
    b.write(&[1]);
    b.poll();
    b.write(&[2]);
    assert_eq!(b.echoes(), [1]);
    b.poll();
    assert_eq!(b.echoes(), [2]);
    let wire = b.stack.module_id("wire").unwrap();
    let stats = b.stack.module_stats(wire).unwrap();
    let rx = stats.iter().find(|(k, _)| k == "rx_frames").unwrap().1;
    assert_eq!(rx, 2, "{stats:?}");
}

/// A driver the stack does not hold by type (another module type offering
/// `rx_lane` and `device_mut`) takes the same lane: the same bursts per
/// poll, the same frames echoed in the same order, the device's counters
/// the same, under both schedulers.
#[test]
fn a_driver_of_another_type_takes_the_same_lane() {
    for sched in SCHEDS {
        let mut runs = Vec::new();
        for forwarding in [false, true] {
            let mut b = Bench::over(sched, Some(2), 4, false, forwarding);
            b.write(&[3, 1, 4, 2, 1]);
            let mut polls = Vec::new();
            for _ in 0..4 {
                b.poll();
                polls.push(b.echoes());
            }
            let wire = b.stack.module_id("wire").unwrap();
            let stats = b.stack.module_stats(wire).unwrap();
            runs.push((polls, stats));
        }
        assert_eq!(runs[0], runs[1], "{sched}");
        let echoed: usize = runs[1].0.iter().map(Vec::len).sum();
        assert_eq!(echoed, 5, "{sched}: {:?}", runs[1].0);
        assert!(
            runs[1].0.iter().all(|p| p.len() <= 2),
            "{sched}: {:?}",
            runs[1].0
        );
    }
}
