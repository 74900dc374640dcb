//! `tcp_million` on a few thousand connections: every one comes up, and
//! an idle connection end costs a few kilobytes, not its rings (issue 28
//! items 3 and 4: with the 256 KiB rings allocated at connect an end held
//! more than 512 KiB; grown on demand, an idle one holds none).

use std::process::Command;

#[test]
fn a_few_thousand_idle_connections_cost_no_rings() {
    let out = Command::new(env!("CARGO_BIN_EXE_tcp_million"))
        .args(["--conns", "3000", "--busy-mb", "2"])
        .output()
        .expect("tcp_million runs");
    assert!(
        out.status.success(),
        "tcp_million failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let r: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    assert_eq!(r["conns"], 3000);
    assert_eq!(r["listeners"], 1);
    let per_end = r["heap_bytes_per_end"].as_f64().unwrap();
    // The control block, the path and its stages, the table entries:
    // about 3 KB; one ring of the smallest size alone would be 2 KiB more.
    assert!(
        per_end > 1000.0 && per_end < 5000.0,
        "{per_end} heap octets per idle connection end"
    );
    assert!(r["busy_among_gbps"].as_f64().unwrap() > 0.0);
    // An established idle end holds no timer (the SYN's retransmission
    // timer goes at the handshake's end): right after the last open only
    // the last batches' handshakes (256 at a time) may hold one, not
    // every connection opened in the last simulated second.
    let timers = r["timers_after_open"].as_u64().unwrap();
    assert!(timers < 2000, "{timers} timers held after opening 3000");
}
