//! Recovery sequences of Linux's packetdrill corpus (issue 28 item 2,
//! `docs/packetdrill.md`) replayed on one [`Tcb`] with the shim's Linux
//! configuration (CUBIC, RACK-TLP, RFC 6298 with a 200 ms G), so that the
//! engine's own suite keeps what the scripts found (packetdrill is not in
//! CI).

use super::script::*;
use super::*;
use crate::tcp::congestion::CongestionKind;
use crate::tcp::RtoConfig;

/// The shim's `linux_defaults::tcp_config` as far as recovery goes, with a
/// segmenting device (Linux's tun sends super-segments).
fn linux() -> TcpConfig {
    TcpConfig {
        prr_safe_ack: true,
        rack: true,
        sack: true,
        congestion: CongestionKind::Cubic,
        rto: RtoConfig {
            granularity: std::time::Duration::from_millis(200),
            ..RtoConfig::linux()
        },
        ..tso_config()
    }
}

/// `fast_recovery/prr-ss-ack-below-snd_una-cubic.pkt`: a peer with a
/// 1000-octet MSS and no timestamps; ten segments out at 10 ms, 1:1001,
/// 3001:8001 lost (three SACKs at 20 ms, the fast retransmission of
/// 1:1001), then at 32 ms an ACK of 4001 with 8001:9001 SACKed.
fn after_fast_retransmit() -> Script {
    after_fast_retransmit_with(linux())
}

fn after_fast_retransmit_with(cfg: TcpConfig) -> Script {
    let mut s = Script::passive(cfg);
    s.inject(In::syn().mss(1000).sack_perm().ws(8).win(32792));
    s.expect(Out::synack());
    s.at(10).inject(In::ack(1, 1).win(320));
    s.expect_none();
    s.write(10_000);
    // The window as two super-segments of half cwnd each (`tso_len`;
    // packetdrill joins them into the script's `1:10001(10000)`).
    s.expect(Out::data(1, 5_000));
    s.expect(Out::data(5_001, 5_000));
    s.expect_none();
    s.at(20);
    s.inject(In::ack(1, 1).win(320).sack(&[(1001, 2001)]));
    s.inject(In::ack(1, 1).win(320).sack(&[(1001, 3001)]));
    s.inject(In::ack(1, 1).win(320).sack(&[(1001, 3001), (8001, 9001)]));
    s.expect(Out::data(1, 1000));
    s.expect_none();
    s
}

/// RFC 6937bis SafeACK (`prr.rs`): the third duplicate ACK enters
/// recovery having found losses (RFC 6675 IsLost for 1:1001, RACK for
/// 3001:8001), so PRR's conservative bound lets out only what it
/// delivered (one segment): the fast retransmission alone, as Linux.
/// PRR-SSRB on every ACK also sent 3001:4001 at 20 ms, which packetdrill
/// reported at the next ACK as a segment below SND.UNA.
#[test]
fn entering_ack_sends_the_fast_retransmission_alone() {
    let s = after_fast_retransmit();
    assert_eq!(s.tcb.stats().retrans_segs, 1);
}

/// The ACK of 4001 (two segments newly delivered, SND.UNA advanced):
/// PRR-SSRB lets out 2 + 1 segments from SND.UNA, 4001:7001, what Linux
/// sends, and as Linux as one 3000-octet super-segment (lost segments
/// retransmitted together, `Tcb::retransmission_len`; they went one at a
/// time before).
#[test]
fn partial_ack_retransmits_from_snd_una() {
    let mut s = after_fast_retransmit();
    s.at(32)
        .inject(In::ack(1, 4001).win(320).sack(&[(8001, 9001)]));
    s.expect(Out::data(4001, 3000));
    s.expect_none();
}

/// The script's last ACK, reordered: it acknowledges 3001, below SND.UNA
/// (4001), and SACKs 5001:7001, two segments newly delivered. With
/// Linux's PRR (`TcpConfig::prr_safe_ack`, RFC 6937bis: SND.UNA did not
/// advance, so no SafeACK) it lets out exactly those two segments
/// (PRR-CRB); with RFC 6937's SSRB on every ACK (pathstack's default),
/// three. Linux sends 7001:8001 and new data 10001:11001; pathstack's
/// second is 9001:10001, which its RACK deems lost
/// (`partial_ack_retransmits_from_snd_una`).
#[test]
fn sack_below_snd_una_is_no_safe_ack() {
    for (safe_ack_only, sent) in [(true, 2), (false, 3)] {
        let mut s = after_fast_retransmit_with(TcpConfig {
            prr_safe_ack: safe_ack_only,
            ..linux()
        });
        s.at(32)
            .inject(In::ack(1, 4001).win(320).sack(&[(8001, 9001)]));
        s.expect(Out::data(4001, 3000));
        s.write(10_000);
        s.expect_none();
        s.at(34)
            .inject(In::ack(1, 3001).win(320).sack(&[(5001, 7001)]));
        let len = s.out.front().expect("a segment").payload.len();
        let first = s.expect(Out::data(7001, len));
        assert_eq!(first.at, ms(34));
        // Segments on the wire (a super-segment counts as what the device
        // cuts it into).
        let mut n = len.div_ceil(1000);
        while let Some(e) = s.out.pop_front() {
            n += e.payload.len().div_ceil(1000);
        }
        assert_eq!(n, sent, "prr_safe_ack {safe_ack_only}");
    }
}

/// `fast_retransmit/fr-4pkt-fack-last-byte.pkt` up to the timeout's
/// retransmission: 4000 octets at 200 ms, the last byte SACKed at 300 ms,
/// the tail-loss probe of 3001:4001, then the timeout's 1:1001.
fn after_timeout_retransmission(cfg: TcpConfig) -> Script {
    let mut s = Script::passive(cfg);
    s.at(100)
        .inject(In::syn().mss(1000).sack_perm().ws(7).win(32792));
    s.expect(Out::synack());
    s.at(200).inject(In::ack(1, 1).win(320));
    s.write(4000);
    s.expect(Out::data(1, 4000));
    s.expect_none();
    s.at(300)
        .inject(In::ack(1, 1).win(320).sack(&[(4000, 4001)]));
    s.advance_until_output(ms(2_000)).expect("the probe");
    let e = s.expect(Out::data(3001, 1000));
    assert!(e.at >= ms(400) && e.at <= ms(405), "probe at {:?}", e.at);
    s.advance_until_output(ms(2_000)).expect("the timeout");
    let e = s.expect(Out::data(1, 1000));
    assert!(e.at >= ms(700) && e.at <= ms(710), "timeout at {:?}", e.at);
    s
}

/// Linux's `TCP_CA_Loss` (`probe_after_timeout` off, as the shim): no
/// probe after the timeout's retransmission, and at the ACK of 1001 the
/// slow start's two segments, 1001:3001, go as one super-segment (Linux
/// retransmits a multi-segment buffer whole: `> . 1001:3001(2000)`),
/// without PSH (3001:4001 ends the write).
#[test]
fn timeout_recovery_retransmits_a_super_segment_and_no_probe() {
    let mut s = after_timeout_retransmission(TcpConfig {
        probe_after_timeout: false,
        ..linux()
    });
    s.expect_none_until(1_200);
    s.at(1_200)
        .inject(In::ack(1, 1001).win(320).sack(&[(4000, 4001)]));
    let e = s.expect(Out::data(1001, 2000));
    assert_eq!(e.at, ms(1_200));
    assert!(!e.repr.flags.contains(TcpFlags::PSH));
    s.expect_none();
    // Two wire segments retransmitted (counted as the device cuts them),
    // besides the probe and the timeout's.
    assert_eq!(s.tcb.stats().retrans_segs, 4);
    s.at(1_300)
        .inject(In::ack(1, 3001).win(320).sack(&[(4000, 4001)]));
    let e = s.expect(Out::data(3001, 1000));
    assert!(e.repr.flags.contains(TcpFlags::PSH), "it ends the write");
}

/// pathstack's default (`probe_after_timeout` on): the probe also goes
/// in timeout recovery when the ACK clock stops (about 2·SRTT after the
/// retransmission), which the loss study measured faster.
#[test]
fn timeout_recovery_probes_by_default() {
    let mut s = after_timeout_retransmission(linux());
    s.advance_until_output(ms(1_150)).expect("a probe");
    let e = s.expect(Out::data(3001, 1000));
    assert!(e.at < ms(1_000), "probe at {:?}", e.at);
}

/// Without segmentation offload the same retransmissions go one segment
/// at a time.
#[test]
fn without_offload_timeout_retransmissions_are_single_segments() {
    let mut s = after_timeout_retransmission_plain();
    s.at(1_200)
        .inject(In::ack(1, 1001).win(320).sack(&[(4000, 4001)]));
    s.expect(Out::data(1001, 1000));
    s.expect(Out::data(2001, 1000));
    s.expect_none();
}

fn after_timeout_retransmission_plain() -> Script {
    let mut s = Script::passive(TcpConfig {
        probe_after_timeout: false,
        offload: TcpConfig::default().offload,
        ..linux()
    });
    s.at(100)
        .inject(In::syn().mss(1000).sack_perm().ws(7).win(32792));
    s.expect(Out::synack());
    s.at(200).inject(In::ack(1, 1).win(320));
    s.write(4000);
    for i in 0..4u32 {
        s.expect(Out::data(1 + i * 1000, 1000));
    }
    s.at(300)
        .inject(In::ack(1, 1).win(320).sack(&[(4000, 4001)]));
    s.advance_until_output(ms(2_000)).expect("the probe");
    s.expect(Out::data(3001, 1000));
    s.advance_until_output(ms(2_000)).expect("the timeout");
    s.expect(Out::data(1, 1000));
    s.expect_none_until(1_200);
    s
}
