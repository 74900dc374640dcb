//! `cargo bench --bench path_exec`: the synthetic 5-stage path
//! (ECHO/HDR/HDR/LINK/DRIVER, each HDR pushing/popping a checksummed header)
//! run modular (STD: one virtual call per stage) and path-inlined (PIN),
//! under the per-message scheduler and under LDLP, with bursts of 1, 8 and
//! 32 messages.
//!
//! One "message" is one round trip between two stacks over the in-memory
//! wire: four path traversals (client down, server up, server down after
//! ECHO turns it around, client up), i.e. 20 stage calls, two wire
//! crossings and two classifications. Variants are measured in alternation
//! (A/B/A/B…) within one run and the median of the repetitions is
//! reported, because shared virtual machines are noisy.
//!
//! Writes `target/pathstack-bench/path_exec.json`.
//!
//! For instruction counts, run one variant under cachegrind:
//! `cargo bench --bench path_exec -- --only std/per-message/1 --rounds N`.

use pathstack_core::synthetic::EchoPair;
use pathstack_core::SchedKind;
use std::time::Instant;

struct Variant {
    pin: bool,
    sched: SchedKind,
    burst: usize,
}

impl Variant {
    fn name(&self) -> String {
        format!("{}/{}/{}", self.variant(), self.sched_name(), self.burst)
    }
    fn variant(&self) -> &'static str {
        if self.pin {
            "pin"
        } else {
            "std"
        }
    }
    fn sched_name(&self) -> &'static str {
        match self.sched {
            SchedKind::PerMessage => "per-message",
            SchedKind::Ldlp { .. } => "ldlp",
        }
    }
}

fn run(pair: &mut EchoPair, burst: usize, rounds: usize) -> usize {
    let payload = [0x42u8; 32];
    let mut n = 0;
    for _ in 0..rounds {
        n += pair.round_trip(&payload, burst, |r| {
            std::hint::black_box(r);
        });
    }
    n
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let rounds_arg: Option<usize> = args
        .iter()
        .position(|a| a == "--rounds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok());

    let mut variants = Vec::new();
    for burst in [1usize, 8, 32] {
        for pin in [false, true] {
            for sched in [SchedKind::PerMessage, SchedKind::Ldlp { batch: burst }] {
                variants.push(Variant { pin, sched, burst });
            }
        }
    }
    if let Some(o) = &only {
        variants.retain(|v| &v.name() == o);
        if variants.is_empty() {
            eprintln!("no variant named {o} (e.g. std/per-message/1, pin/ldlp/8)");
            std::process::exit(2);
        }
        // Instruction counting: one variant, a fixed number of rounds.
        let v = &variants[0];
        let mut pair = EchoPair::new(v.sched, v.pin).expect("pair");
        let rounds = rounds_arg.unwrap_or(10_000);
        let n = run(&mut pair, v.burst, rounds);
        println!("{}: {} messages", v.name(), n);
        return;
    }

    // Messages per measurement: roughly equal work per variant.
    let msgs_per_rep = rounds_arg.unwrap_or(40_000);
    let reps = 7;
    let mut pairs: Vec<EchoPair> = variants
        .iter()
        .map(|v| {
            let mut p = EchoPair::new(v.sched, v.pin).expect("pair");
            run(&mut p, v.burst, 2_000 / v.burst + 1);
            p
        })
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..reps {
        for (i, v) in variants.iter().enumerate() {
            let rounds = msgs_per_rep / v.burst;
            let t0 = Instant::now();
            let n = run(&mut pairs[i], v.burst, rounds);
            let ns = t0.elapsed().as_nanos() as f64;
            assert_eq!(n, rounds * v.burst, "{}: replies missing", v.name());
            samples[i].push(ns / n as f64);
        }
    }
    let mut json = Vec::new();
    println!("{:<24} {:>12} {:>10}", "variant", "ns/message", "vs std");
    let median = |s: &mut Vec<f64>| {
        s.sort_by(|a, b| a.total_cmp(b));
        s[s.len() / 2]
    };
    let medians: Vec<f64> = samples.iter_mut().map(median).collect();
    for (i, v) in variants.iter().enumerate() {
        let std_idx = variants
            .iter()
            .position(|w| !w.pin && w.sched == v.sched && w.burst == v.burst)
            .unwrap_or(i);
        println!(
            "{:<24} {:>12.1} {:>9.2}x",
            v.name(),
            medians[i],
            medians[i] / medians[std_idx]
        );
        json.push(format!(
            "{{\"variant\": \"{}\", \"sched\": \"{}\", \"batch\": {}, \"ns_per_msg\": {:.1}}}",
            v.variant(),
            v.sched_name(),
            v.burst,
            medians[i]
        ));
    }
    let dir = std::env::var("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
        .join("pathstack-bench");
    std::fs::create_dir_all(&dir).expect("create bench dir");
    let path = dir.join("path_exec.json");
    std::fs::write(&path, format!("[\n  {}\n]\n", json.join(",\n  "))).expect("write json");
    println!("wrote {}", path.display());
}
