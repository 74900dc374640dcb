//! tshark's TCP analysis of a capture ([`assert_tcp_capture_clean`],
//! [`assert_tcp_capture_clean_offloaded`]).

use crate::output::text;
use crate::privilege::has_net_admin;
use crate::tshark::{assert_tshark_clean, have_tshark, tshark_frames};
use std::path::Path;
// tshark

/// tshark's TCP analysis of a capture, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpCaptureStats {
    /// All frames.
    pub frames: usize,
    /// `tcp.analysis.retransmission`.
    pub retransmissions: usize,
    /// `tcp.analysis.fast_retransmission`.
    pub fast_retransmissions: usize,
    /// `tcp.analysis.lost_segment` ("previous segment not captured").
    pub lost_segments: usize,
}

/// Asserts a TCP capture is clean: what [`assert_tshark_clean`] checks
/// (no malformed frame, no bad IP/UDP/ICMP checksum), no bad TCP checksum,
/// and no `tcp.analysis.ack_lost_segment` ("ACKed unseen segment": an ACK
/// for data never sent). Returns tshark's retransmission counts. When
/// tshark is absent: fails under root, otherwise skips with a message and
/// returns None.
///
/// For captures in which every frame carries its final checksum (a TAP, a
/// pathstack pcap). Captures taken on a kernel interface with checksum
/// offload (a veth, a bridge) show partial checksums on the frames the
/// kernel sends: use [`assert_tcp_capture_clean_offloaded`].
pub fn assert_tcp_capture_clean(pcap: &Path) -> Option<TcpCaptureStats> {
    tcp_capture_check(pcap, true)
}

/// [`assert_tcp_capture_clean`] without the TCP checksum check, for
/// captures with checksum offload.
pub fn assert_tcp_capture_clean_offloaded(pcap: &Path) -> Option<TcpCaptureStats> {
    tcp_capture_check(pcap, false)
}

fn tcp_capture_check(pcap: &Path, tcp_checksums: bool) -> Option<TcpCaptureStats> {
    if !have_tshark() {
        if has_net_admin() {
            panic!("tshark is not installed; run scripts/install-deps.sh (we are root, so the check must run)");
        }
        eprintln!(
            "SKIPPED TCP tshark check of {}: tshark not installed and not root",
            pcap.display()
        );
        return None;
    }
    let frames = assert_tshark_clean(pcap)?;
    if tcp_checksums {
        // A field of 0xffff where the sum gives 0x0000 is the same number
        // in one's complement (−0, RFC 1624 §3) and receivers accept it;
        // Linux's software checksum sends it now and then (seen on a
        // kernel ACK), and tshark calls it bad.
        let bad = tcp_frames(
            pcap,
            r#"tcp.checksum.status == "Bad" && tcp.checksum != 0xffff"#,
        );
        assert!(
            bad.is_empty(),
            "bad TCP checksums in {}: frames {bad:?}",
            pcap.display()
        );
    }
    let unseen = tshark_frames(pcap, "tcp.analysis.ack_lost_segment");
    assert!(
        unseen.is_empty(),
        "ACKed unseen segments in {}: frames {unseen:?}",
        pcap.display()
    );
    Some(TcpCaptureStats {
        frames,
        retransmissions: tshark_frames(pcap, "tcp.analysis.retransmission").len(),
        fast_retransmissions: tshark_frames(pcap, "tcp.analysis.fast_retransmission").len(),
        lost_segments: tshark_frames(pcap, "tcp.analysis.lost_segment").len(),
    })
}

/// Like [`tshark_frames`], with TCP checksum validation on.
fn tcp_frames(pcap: &Path, filter: &str) -> Vec<u32> {
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-n", "-o", "tcp.check_checksum:TRUE", "-Y", filter])
        .args(["-T", "fields", "-e", "frame.number"])
        .output()
        .expect("run tshark");
    assert!(
        out.status.success(),
        "tshark -r {} failed:\n{}",
        pcap.display(),
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}
