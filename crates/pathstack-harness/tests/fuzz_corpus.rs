//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) and the
//! built-in seeds through the fuzz targets' code
//! ([`pathstack_harness`]), so that `cargo test` catches a regression on
//! any input the fuzzers once found interesting.
//!
//! The seed files (`seed_*`) must be what the seed generators make;
//! `PATHSTACK_WRITE_SEEDS=1 cargo test -p pathstack-harness --test
//! fuzz_corpus seeds` rewrites them.

use pathstack_harness as harness;
use pathstack_inet::tcp::State;
use std::path::PathBuf;

fn corpus(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../fuzz/corpus/{target}"))
}

/// Every file of the target's corpus, sorted by name.
fn files(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = corpus(target);
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let d = std::fs::read(&p).expect("corpus file");
            (p, d)
        })
        .collect();
    v.sort();
    v
}

fn replay(target: &str, run: fn(&[u8])) {
    let inputs = files(target);
    assert!(!inputs.is_empty(), "{target}: empty corpus");
    for (path, data) in &inputs {
        let r = std::panic::catch_unwind(|| run(data));
        assert!(r.is_ok(), "{target}: {} panics", path.display());
    }
}

#[test]
fn tcp_segment_corpus() {
    replay("tcp_segment", harness::tcp_segment);
}

#[test]
fn host_rx_corpus() {
    replay("host_rx", harness::host_rx);
}

#[test]
fn rpc_rx_corpus() {
    replay("rpc_rx", harness::rpc_rx);
}

/// The `rpc_rx` seeds get where they were written to: past BLAST, BID
/// and CHAN to A's procedure and to A's calls in flight, and through
/// BIDCTL to B's reboot; and B's requests of the setup, replayed, do not
/// run the procedure again (at most once).
#[test]
fn rpc_rx_seeds_reach_chan_and_bidctl() {
    let seeds = harness::rpc_rx_seeds();
    assert_eq!(seeds.len(), 12, "six seeds on each network");
    for (name, d) in seeds {
        let r = harness::rpc_rx_reach(&d);
        let (_, kind) = name.split_once('_').expect("NET_KIND");
        match kind {
            "exchange" => assert_eq!(r.procedure_runs, 0, "{name}: {r:?}"),
            "requests" => assert!(r.procedure_runs >= 1, "{name}: {r:?}"),
            "replies" => assert!(r.replies >= 2, "{name}: {r:?}"),
            "bidctl" => assert!(r.peer_rebooted >= 2, "{name}: {r:?}"),
            _ => {}
        }
    }
}

#[test]
fn seeds_run() {
    for (_, d) in harness::tcp_segment_seeds() {
        harness::tcp_segment(&d);
    }
    for (_, d) in harness::host_rx_seeds() {
        harness::host_rx(&d);
    }
    for (_, d) in harness::rpc_rx_seeds() {
        harness::rpc_rx(&d);
    }
}

#[test]
fn tcp_segment_stages_reach_their_states() {
    let want = [
        State::Listen,
        State::SynSent,
        State::SynReceived,
        State::Established,
        State::Established,
        State::FinWait1,
        State::FinWait2,
        State::CloseWait,
        State::Closing,
        State::LastAck,
        State::TimeWait,
        State::Closed,
    ];
    for (stage, w) in want.iter().enumerate() {
        assert_eq!(harness::tcp_stage_state(stage as u8), *w, "stage {stage}");
        if stage >= 3 {
            assert_eq!(
                harness::tcp_stage_state(stage as u8 | 0x10),
                *w,
                "stage {stage}, server side"
            );
        }
    }
}

/// The committed seeds are the generators' (or, with
/// `PATHSTACK_WRITE_SEEDS=1`, become them).
#[test]
fn seeds_are_the_generators() {
    let write = std::env::var_os("PATHSTACK_WRITE_SEEDS").is_some();
    for (target, seeds) in [
        ("tcp_segment", harness::tcp_segment_seeds()),
        ("host_rx", harness::host_rx_seeds()),
        ("rpc_rx", harness::rpc_rx_seeds()),
    ] {
        let dir = corpus(target);
        for (name, data) in seeds {
            let file = dir.join(format!("seed_{name}"));
            if write {
                std::fs::create_dir_all(&dir).expect("corpus directory");
                std::fs::write(&file, &data).expect("seed file");
            }
            let committed = std::fs::read(&file).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (PATHSTACK_WRITE_SEEDS=1 writes it)",
                    file.display()
                )
            });
            assert_eq!(
                committed,
                data,
                "{} differs from its generator",
                file.display()
            );
        }
    }
}

/// The first crash `tcp_segment` found: `shutdown(Read)` before the
/// handshake (no receive ring yet) divided by zero.
#[test]
fn shutdown_read_before_the_handshake() {
    use pathstack_core::time::Instant;
    use pathstack_inet::tcp::{SeqNumber, Shutdown, Tcb, TcpConfig};
    let cfg = TcpConfig::default();
    let mut c = Tcb::connect(cfg, 40000, 80, SeqNumber(1), 0, Instant::ZERO);
    assert!(c.shutdown(Shutdown::Read).is_ok());
    let mut l = Tcb::listen(cfg, 80, 40000, SeqNumber(1), 0, Instant::ZERO);
    assert!(l.shutdown(Shutdown::Both).is_err());
    l.close();
}

/// The second: `shutdown(Write)` in SYN-RECEIVED went to FIN-WAIT-1 at
/// once, so the ACK of our SYN never completed the handshake's send side
/// and data went out in segments of our MSS, not the peer's.
#[test]
fn shutdown_in_syn_received_keeps_the_peers_mss() {
    use pathstack_core::time::Instant;
    use pathstack_inet::tcp::{SeqNumber, Shutdown, State, Tcb, TcpConfig};
    let now = Instant::from_millis(1);
    let small = TcpConfig {
        mss: 536,
        ..TcpConfig::default()
    };
    let mut c = Tcb::connect(small, 40000, 80, SeqNumber(1), 0, now);
    let mut s = Tcb::listen(TcpConfig::default(), 80, 40000, SeqNumber(9), 0, now);
    let mut segs = Vec::new();
    c.poll_output(now, &mut |o| {
        segs.push(o.repr);
        true
    });
    for r in segs.drain(..) {
        let _ = s.on_segment(now, &r, &[]);
    }
    assert_eq!(s.state(), State::SynReceived);
    assert_eq!(s.send(&[7u8; 4000]).unwrap(), Some(4000));
    s.shutdown(Shutdown::Write).unwrap();
    s.poll_output(now, &mut |o| {
        segs.push(o.repr);
        true
    });
    for r in segs.drain(..) {
        let _ = c.on_segment(now, &r, &[]);
    }
    c.poll_output(now, &mut |o| {
        segs.push(o.repr);
        true
    });
    for r in segs.drain(..) {
        let _ = s.on_segment(now, &r, &[]);
    }
    assert_eq!(s.state(), State::FinWait1);
    let smss = s.smss() as usize;
    assert!(smss <= 536);
    let mut sent = 0;
    s.poll_output(now, &mut |o| {
        assert!(o.payload_len() <= smss, "{} > {smss}", o.payload_len());
        sent += o.payload_len();
        true
    });
    assert!(sent > 0);
}
